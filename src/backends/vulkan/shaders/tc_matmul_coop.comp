#version 450
// MATMUL and the convolutions as implicit GEMM on fp16 inputs with cooperative matrices: a 64 x 64
// output tile per workgroup of four 32-wide subgroups, 16 x 16 x 16 fp16 products accumulated in
// fp32, K steps of 32 staged in shared memory (every shape: edges are zero-filled). The body and its
// specialization constants are in tc_gemm.glsl (COOP).
//
// Needs --target-env=vulkan1.3 (the build compiles *_coop.comp so) and a device with
// VK_NV_cooperative_matrix (a subgroup-scope 16x16x16 fp16 x fp16 + fp32 shape) and a subgroup size
// of 32: Caps::coop_matrix_f16. Written with GL_NV_cooperative_matrix because Debian's glslang 12
// does not know GL_KHR_cooperative_matrix.
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#define COOP
#define BK 32
shared float Cs[4 * 256];  // per subgroup: one 16 x 16 fp32 result on its way to the epilogue
#include "tc_gemm.glsl"
