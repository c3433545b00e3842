// libFuzzer target for TOSA 1.0 model files (.tosa): bytes -> tosa_file::from_bytes (FlatBuffers
// verifier, table cross-checks, IR verifier) -> to_bytes. Every failure must be a weft::Error;
// anything else (a crash, a sanitizer report, another exception type, a hang) is a bug.
//
// Built by scripts/fuzz.sh with clang (-DWEFT_FUZZ=ON); see docs/tosa-file.md.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "weft/error.h"
#include "weft/tosa_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  weft::Buffer bytes = weft::Buffer::allocate(size);
  if (size) std::memcpy(bytes.mutable_data(), data, size);
  try {
    weft::Module m = weft::tosa_file::from_bytes(bytes, "<fuzz>.tosa");
    (void)weft::tosa_file::to_bytes(m);
  } catch (const weft::Error&) {
  }
  return 0;
}
