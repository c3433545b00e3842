#version 450
// Tiled GEMM / implicit-GEMM convolution: 64x64 output tile, 4x4 per invocation, K steps of 16
// (ACC_FLOAT). The body and its specialization constants are in tc_gemm.glsl.
// EPI_DIRECT: each invocation finishes its 16 outputs from its registers (16 copies of the
// epilogue), without the 4 passes through shared memory and their 8 barriers. fp32 TFLOP/s on an
// H200 (device time, staged before): 4096 x 1024 x 256 24.4 -> 25.6, 4096 x 768 x 256 23.7 -> 24.4,
// 2048^3 27.8 -> 29.2.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#define TM 4
#define TN 4
#define BK 16
#define EPI_DIRECT
#define ACC_FLOAT
#include "tc_gemm.glsl"
