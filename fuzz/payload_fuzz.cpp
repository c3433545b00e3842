// libFuzzer target for the implementation_attrs payload of a tosa.CUSTOM node (the "Vulkan shader
// in TOSA custom operation attributes" JSON): text -> custom::parse_payload(). A payload that
// parses must write back (write_payload) and parse again to an equal Payload; every failure must
// be a weft::Error. Anything else (a crash, a sanitizer report, another exception type, a hang, a
// round trip that changes the payload) is a bug.
//
// Built by scripts/fuzz.sh payload with clang (-DWEFT_FUZZ=ON); see docs/custom-ops-contract.md.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "weft/custom.h"
#include "weft/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  using Unknown = weft::custom::ParseOptions::Unknown;
  for (const Unknown unknown : {Unknown::kKeep, Unknown::kReject}) {
    weft::custom::Payload p;
    std::vector<std::string> warnings;
    try {
      p = weft::custom::parse_payload(text, {.node = "fuzz"}, {.unknown_keys = unknown}, &warnings);
    } catch (const weft::Error&) {
      continue;
    }
    // What was read writes back, and reads back to the same payload.
    const std::string again = weft::custom::write_payload(p);
    const weft::custom::Payload p2 =
        weft::custom::parse_payload(again, {.node = "fuzz rewrite"}, {.unknown_keys = unknown});
    if (!(p == p2)) std::abort();
    if (weft::custom::write_payload(p2) != again) std::abort();  // writing is deterministic
  }
  return 0;
}
