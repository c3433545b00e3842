// libFuzzer target for the untrusted-input side of SPIR-V graph modules: bytes -> words ->
// validate() -> decode() -> disassemble(), and the lavapipe loop guard's rewrite of compute
// shaders (device/vulkan/loop_guard.h), which must refuse or rewrite any module without crashing. Every failure must be a weft::Error; anything else
// (a crash, a sanitizer report, another exception type, a hang) is a bug.
//
// Built by scripts/fuzz.sh with clang (-DWEFT_FUZZ=ON); see docs/spirv.md.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "device/vulkan/loop_guard.h"
#include "weft/error.h"
#include "weft/spirv.h"
#include "weft/verify.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint32_t> words;
  try {
    words = weft::spirv::words_from_bytes(std::span<const uint8_t>(data, size), "<fuzz>");
  } catch (const weft::Error&) {
    return 0;
  }
  (void)weft::vk::detail::has_loops(words);
  (void)weft::vk::detail::add_loop_guard(words, "main", 1024, 0);
  std::vector<weft::spirv::Diagnostic> diags = weft::spirv::validate(words);
  for (const auto& d : diags) (void)d.str();
  try {
    (void)weft::spirv::disassemble(words);
  } catch (const weft::Error&) {
  }
  if (!diags.empty()) return 0;
  try {
    weft::Module m = weft::spirv::decode(words, {}, "<fuzz>");
    // A module that decodes must encode again.
    (void)weft::spirv::encode(m);
  } catch (const weft::Error&) {
  }
  return 0;
}
