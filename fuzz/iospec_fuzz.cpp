// libFuzzer target for the IOSpec reader: text -> iospec::parse_yaml() (yaml-cpp and the strict
// field checks) and the target-file reader parse_target(). An IOSpec that parses must write back
// (to_yaml) and parse again to an equal IoSpec; every failure must be a weft::Error (yaml-cpp's
// exceptions included: the parser turns them into weft::Error). Anything else (a crash, a
// sanitizer report, another exception type, a hang, a round trip that changes the IOSpec) is a bug.
//
// Built by scripts/fuzz.sh iospec with clang (-DWEFT_FUZZ=ON); see docs/iospec.md.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "weft/error.h"
#include "weft/iospec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    (void)weft::iospec::parse_target(text, "fuzz");
  } catch (const weft::Error&) {
  }
  weft::iospec::IoSpec s;
  try {
    s = weft::iospec::parse_yaml(text, "fuzz");
  } catch (const weft::Error&) {
    return 0;
  }
  // What was read writes back, and reads back to the same IOSpec.
  const std::string again = weft::iospec::to_yaml(s);
  const weft::iospec::IoSpec s2 = weft::iospec::parse_yaml(again, "fuzz rewrite");
  if (!(s == s2)) std::abort();
  if (weft::iospec::to_yaml(s2) != again) std::abort();  // writing is deterministic
  return 0;
}
