#version 450
// tc_gemm128_coop with 64 x 64 tiles, for grids that 128 x 128 tiles would leave too small (batch-1
// layers): four 32-wide subgroups, each a 32 x 32 part (2 x 2 fragments).
//
// For shapes whose operands move in whole vectors (the lowering checks, see ops_tensor.cpp
// plan_conv / plan_matmul): both operands fp16; MATMUL with K, N, A's row / batch strides and offsets, B's k /
// batch strides and offset multiples of 8, B's n contiguous (or k, B_NK); convolutions (not transposed) with
// IC and OC multiples of 8 and weights [K][OC]. Needs Vulkan 1.3, VK_NV_cooperative_matrix with a
// 16x16x16 fp16 x fp16 + fp32 shape, subgroups of 32, 256 invocations and 46080 bytes of shared
// memory per workgroup (this one: 128 invocations and 23552 bytes, 24576 with B_NK).
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#define COOP_WIDE
#define BM 64
#define BN 64
#define BK 32
#define SGM 2  // subgroups along m and n
#define SGN 2
shared float Cs[4 * 256];  // per subgroup: one 16 x 16 fp32 result on its way to the epilogue
layout(std430, set = 0, binding = 0) restrict readonly buffer AVec { uvec4 a_v[]; };
layout(std430, set = 0, binding = 1) restrict readonly buffer BVec { uvec4 b_v[]; };
#include "tc_gemm.glsl"
