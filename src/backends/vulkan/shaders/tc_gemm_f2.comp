#version 450
// Tiled GEMM / implicit-GEMM convolution: 32x32 output tile, 2x2 per invocation, K steps of 32
// (ACC_FLOAT). The body and its specialization constants are in tc_gemm.glsl. The small tile serves
// the small grids of batch-1 layers, whose time goes to the latency of each K step: steps of 32
// instead of 16 took an H100's device time for the BERT encoder from 0.375 to 0.353 ms, MobileNetV2
// 0.522 to 0.493, ResNet-50 1.418 to 1.300 (batch 1; the same for the 64 x 64 tile at batch 32 was
// 0.5 to 1.4% slower).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#define TM 2
#define TN 2
#define BK 32
#define ACC_FLOAT
#include "tc_gemm.glsl"
