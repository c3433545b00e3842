#version 450
// Tiled GEMM / implicit-GEMM convolution: 64x64 output tile, 4x4 per invocation, K steps of 16
// (ACC_I32). The body and its specialization constants are in tc_gemm.glsl.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#define TM 4
#define TN 4
#define BK 16
#define ACC_I32
#include "tc_gemm.glsl"
