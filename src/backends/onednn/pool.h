// MAX_POOL2D over NHWC fp32 on Weft's own vector loop (docs/backends.md, "Max pooling"): oneDNN
// 2.6's AVX2 pooling ran 4-6x slower than ONNX Runtime's on an Intel Xeon presented with AVX2 only.
#pragma once

#include <cstdint>
#include <string>

namespace weft::backend::cpu {

// One MAX_POOL2D: input [N, IH, IW, C], output [N, OH, OW, C], both NHWC and contiguous. `pad_top`
// and `pad_left` are the window's offset before the first row and column; taps outside the input
// are skipped (TOSA's padding, and a fused PAD by -inf), and every window must reach the input.
struct MaxPoolShape {
  int64_t N, IH, IW, C, OH, OW, KY, KX, SY, SX, pad_top, pad_left;
};

// The vector width of a loop: 16 floats (AVX-512F), 8 (AVX2), 4 (the x86-64 baseline, SSE2).
enum class PoolIsa { kAvx512, kAvx2, kBaseline };

// The widest this CPU runs, and its name for profiles ("avx512", "avx2", "sse2").
PoolIsa pool_isa();
const char* pool_isa_name(PoolIsa isa);

// Output rows [r0, r1) of the N * OH rows. The result is TOSA's apply_max_s over the window in its
// row-major order, bit for bit on every `isa`: of equal values the first is kept (-0 before +0);
// with `propagate_nan` any NaN makes the output NaN, without it NaN taps are skipped (NaN only
// where every tap is NaN). `isa` must be one this CPU runs.
void max_pool_rows(const MaxPoolShape& s, bool propagate_nan, const float* in, int64_t r0, int64_t r1, float* out,
                   PoolIsa isa);

}  // namespace weft::backend::cpu
