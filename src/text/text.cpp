// PENDING: placeholder, replaced by the text form parser and printer.
#include "weft/text.h"

namespace weft {
Module parse_weft(std::string_view, const std::string& filename, const std::string&) {
  throw Error(ErrorCode::kUnsupported, "text parser pending", {.file = filename});
}
Module load_weft(const std::string& path) { throw Error(ErrorCode::kUnsupported, "text parser pending", {.file = path}); }
std::string print_weft(const Module&, const PrintOptions&) { return ""; }
void save_weft(const Module&, const std::string&, const PrintOptions&) {}
}  // namespace weft
