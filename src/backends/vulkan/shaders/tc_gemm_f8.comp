#version 450
// Tiled GEMM / implicit-GEMM convolution: 128x128 output tile, 8x8 per invocation, K steps of 8
// (ACC_FLOAT). The body and its specialization constants are in tc_gemm.glsl.
// WARP_TILES: each subgroup owns a 32 x 64 block of the tile, so that it reads 96 floats per k from
// shared memory rather than 144. fp32 TFLOP/s on an H200 (`bench/vulkan_models.py`-style sweep,
// device time; the 16 x 16 arrangement before): 4096^3 31.1 -> 33.0, 2048^3 29.9 -> 31.5,
// 4096 x 3072 x 768 29.5 -> 31.1, 4096 x 256 x 1024 21.5 -> 22.8 (cuBLAS 49.3, 45.1, 42.1, 26.4).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#define TM 8
#define TN 8
#define BK 8
#define WARP_TILES
#define ACC_FLOAT
#include "tc_gemm.glsl"
