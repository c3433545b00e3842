#version 450
// Tiled GEMM / implicit-GEMM convolution: 32x32 output tile, 2x2 per invocation, K steps of 16
// (ACC_FLOAT). The body and its specialization constants are in tc_gemm.glsl.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#define TM 2
#define TN 2
#define BK 16
#define ACC_FLOAT
#include "tc_gemm.glsl"
