// libFuzzer target for the VGF reader: bytes -> vgf::parse() (header and section bounds, the
// FlatBuffers verifier, the CONST00 and legacy constant sections, the cross-table checks and the
// validation of GRAPH modules). A container that parses must dump to JSON, give its graph
// constants, decode to IR (the whole sequence, vgf::to_module: GRAPH segments through
// spirv::decode, COMPUTE segments through Weft's record of the custom operator and its
// implementation_attrs payload), serialize, and parse again to the same tables; every failure must
// be a weft::Error. Anything else (a crash, a sanitizer report, another exception type, a hang) is
// a bug.
//
// Built by scripts/fuzz.sh vgf with clang (-DWEFT_FUZZ=ON); see docs/vgf.md.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "weft/error.h"
#include "weft/vgf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A heap copy at a 64-byte aligned address, like a file mapping (page aligned).
  weft::Buffer bytes = weft::Buffer::allocate(size);
  if (size) std::memcpy(bytes.mutable_data(), data, size);
  weft::vgf::Container c;
  try {
    c = weft::vgf::parse(bytes, "<fuzz>");
  } catch (const weft::Error&) {
    return 0;
  }
  (void)weft::vgf::to_json(c, {.disassemble = true});
  for (size_t s = 0; s < c.sequence.segments.size(); ++s) {
    try {
      (void)weft::vgf::graph_constants(c, s);
    } catch (const weft::Error&) {
    }
  }
  // The whole sequence decodes to one module, or says why not.
  try {
    (void)weft::vgf::to_module(c, "fuzz");
  } catch (const weft::Error&) {
  }
  // What was read writes back, and reads back to the same tables.
  std::vector<uint8_t> again = weft::vgf::serialize(c);
  weft::Buffer b2 = weft::Buffer::allocate(again.size());
  std::memcpy(b2.mutable_data(), again.data(), again.size());
  weft::vgf::Container c2 = weft::vgf::parse(b2, "<fuzz rewrite>");
  if (!weft::vgf::equal_tables(c, c2)) std::abort();
  return 0;
}
