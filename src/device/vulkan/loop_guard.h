// Noticing when lavapipe cuts a shader's loops short.
//
// llvmpipe (lavapipe's compiler) guards against runaway shaders with a loop limiter: every shader
// invocation group it runs as one SIMD bundle (a subgroup: 8 invocations on AVX2) counts the loop
// iterations of all its loops together, and when the count reaches 65535 the loop it is in ends
// early, silently; later loops run on. A custom shader that loops more than that (a long reduction,
// a search) then returns wrong results with no error.
//
// add_loop_guard() rewrites a compute shader so that it reports this, whatever llvmpipe counts: an
// invocation that goes on to a loop's next pass (branches to the loop's continue target, or back
// to its header) and then arrives at the loop's merge block without passing the header again was
// cut off. Such a branch sets a per-invocation word in workgroup memory, every loop header
// clears it, and a merge block that finds it set marks the invocation cut (and clears it); every
// return of the entry point of a cut invocation writes a nonzero flag to a small storage buffer.
// The words are accessed volatile: kept in private variables, the compiler proves the check false
// (in the program's semantics loops are never cut) and drops it. Cost on lavapipe: two scattered
// stores per loop pass; a loop whose body is one load and one multiply-add takes 2.7x as long. The runtime binds the flag buffer, reads
// it after the run and turns it into an error (Program, vulkan/program.cpp). Only on
// llvmpipe: other drivers have no such limit.
//
// Measured on lavapipe (Mesa 22.3, LLVM 15; tests/vulkan/loop_guard_test.cpp): one loop of 65535
// iterations completes and 65536 stops at 65535; 255 x 256 nested iterations stop at 65026 (the
// inner loop's 257 passes per outer pass, plus the outer passes, reach 65535); loops that no lane
// of the subgroup enters still count a pass (llvmpipe runs masked-off code), so no count kept by
// the shader itself could match llvmpipe's.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace weft::vk::detail {

// llvmpipe's loop limit: loop passes per subgroup (SIMD bundle) per run of the shader.
inline constexpr uint32_t kLavapipeLoopLimit = 65535;

// Whether the module has a structured loop (OpLoopMerge). false for malformed modules.
bool has_loops(std::span<const uint32_t> spirv);

struct GuardedShader {
  std::vector<uint32_t> spirv;
  uint32_t set = 0, binding = 0;  // where the flag buffer (one uint32) is bound
};

// The module with the guard added, its flag buffer at set 0 and the binding after the highest one
// the module declares in set 0, at least `min_binding` (past the bindings the dispatch binds).
// `max_invocations` sizes the workgroup array when the entry point's LocalSize is not a literal
// (maxComputeWorkGroupInvocations). Raises the module's version to 1.3 where it is lower (the
// StorageBuffer storage class). nullopt when the module cannot be rewritten
// (malformed, no GLCompute entry point of that name, a missing Shader capability): it is then left
// to the dispatch's own validation to report.
std::optional<GuardedShader> add_loop_guard(std::span<const uint32_t> spirv, std::string_view entry_point,
                                            uint32_t max_invocations, uint32_t min_binding = 0);

}  // namespace weft::vk::detail
