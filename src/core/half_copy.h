// Bulk conversions between fp32 and fp16 (IEEE binary16) arrays for host-side transfers: the
// Vulkan device layer converts a region's fp32 inputs to the fp16 its kernels read, and its fp16
// results back, while it copies them into and out of staging memory (device/vulkan/program.cpp).
// Element for element the same as float_to_fp16 / fp16_to_float (weft/dtype.h): round to nearest,
// ties to even, overflow to infinity, subnormals kept; fp16 -> fp32 is exact. A NaN stays a NaN
// (its payload is not promised). F16C's vector conversions where the CPU has them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace weft {

void fp32_to_fp16_array(const float* src, uint16_t* dst, size_t n);
void fp16_to_fp32_array(const uint16_t* src, float* dst, size_t n);

}  // namespace weft
