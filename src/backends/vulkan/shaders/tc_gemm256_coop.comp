#version 450
// fp16 MATMUL and implicit-GEMM convolutions on cooperative matrices with a 256 x 128 output tile
// per workgroup of eight 32-wide subgroups, each a 64 x 64 part (4 x 4 fragments: twice the products
// per fragment read from shared memory of tc_gemm128_coop's 64 x 32), K steps of 32 in one
// shared-memory stage (tc_gemm_wide.glsl, NSTAGE 1). Same operand rules as tc_gemm128_coop; 37376
// bytes of shared memory per workgroup (38912 with B_NK).
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#define COOP_WIDE
#define BM 256
#define BN 128
#define BK 32
#define SGM 4  // subgroups along m and n
#define SGN 2
#define NSTAGE 1
shared float Cs[8 * 256];  // per subgroup: one 16 x 16 fp32 result on its way to the epilogue
layout(std430, set = 0, binding = 0) restrict readonly buffer AVec { uvec4 a_v[]; };
layout(std430, set = 0, binding = 1) restrict readonly buffer BVec { uvec4 b_v[]; };
#include "tc_gemm.glsl"
