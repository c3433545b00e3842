// libFuzzer target for the ONNX frontend: bytes -> import_onnx_bytes() (protobuf parsing by
// Debian's libonnx, initializer sizes checked against their data, shape inference, constant
// folding within its budget, lowering of every node, the TOSA verifier). A model that imports must
// print to Weft's text form and read back. External data is refused here (no base folder), as for
// any model given as bytes. Every failure must be a weft::Error; anything else (a crash, a
// sanitizer report, another exception type, a hang, an allocation past libFuzzer's -rss_limit_mb)
// is a bug.
//
// The folding budget is lowered to 1 MiB so that a model whose folded constants would be large
// fails fast instead of hitting the RSS limit: the budget itself is what is being tested.
//
// Built by scripts/fuzz.sh onnx with clang (-DWEFT_FUZZ=ON); see docs/onnx.md.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "weft/error.h"
#include "weft/onnx.h"
#include "weft/text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  weft::OnnxImportOptions options;
  options.max_folded_bytes = int64_t{1} << 20;
  weft::Module m;
  try {
    m = weft::import_onnx_bytes(std::string_view(reinterpret_cast<const char*>(data), size), "<fuzz>.onnx", options);
  } catch (const weft::Error&) {
    return 0;
  }
  // What imported is a verified module: it prints, and the text reads back.
  const std::string text = weft::print_weft(m);
  (void)weft::parse_weft(text, "<fuzz>.weft");
  return 0;
}
