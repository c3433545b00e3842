#version 450
// Tiled GEMM / implicit-GEMM convolution: 128x128 output tile, 8x8 per invocation, K steps of 8
// (ACC_FLOAT). The body and its specialization constants are in tc_gemm.glsl.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#define TM 8
#define TN 8
#define BK 8
#define ACC_FLOAT
#include "tc_gemm.glsl"
