// MAX_POOL2D and AVG_POOL2D over NHWC fp32 on Weft's own vector loops (docs/backends.md, "Max
// pooling"): oneDNN 2.6's AVX2 max pooling ran 4-6x slower than ONNX Runtime's on an Intel Xeon
// presented with AVX2 only, and its average pooling does not scale past one thread.
#pragma once

#include <cstdint>

#include "backends/onednn/lanes.h"

namespace weft::backend::cpu {

// One MAX_POOL2D: input [N, IH, IW, C], output [N, OH, OW, C], both NHWC and contiguous. `pad_top`
// and `pad_left` are the window's offset before the first row and column; taps outside the input
// are skipped (TOSA's padding, and a fused PAD by -inf), and every window must reach the input.
struct MaxPoolShape {
  int64_t N, IH, IW, C, OH, OW, KY, KX, SY, SX, pad_top, pad_left;
};

// The loops' copy is lanes.h's CpuLevel (16 floats a vector on AVX-512, 8 on AVX2, 4 on the
// baseline), passed in so that a test can run every copy this CPU has; cpu_level() is the widest.

// Output rows [r0, r1) of the N * OH rows. The result is TOSA's apply_max_s over the window in its
// row-major order, bit for bit on every `isa`: of equal values the first is kept (-0 before +0);
// with `propagate_nan` any NaN makes the output NaN, without it NaN taps are skipped (NaN only
// where every tap is NaN). `isa` must be one this CPU runs.
void max_pool_rows(const MaxPoolShape& s, bool propagate_nan, const float* in, int64_t r0, int64_t r1, float* out,
                   CpuLevel isa);

// One AVG_POOL2D with fp32 input, output and accumulator, in the same layout. A window starts at
// source row oy * SY - pad_top and column ox * SX - pad_left (the pool's own padding plus a fused
// PAD's). Taps inside the source are summed; the fused PAD's zeros, rows [-extra_top, 0) and
// [IH, IH + extra_bottom) and likewise for columns, count without being added (adding +0 to a sum
// that starts at +0 changes no bit); the pool's own padding neither counts nor adds.
struct AvgPoolShape {
  int64_t N, IH, IW, C, OH, OW, KY, KX, SY, SX, pad_top, pad_left;
  int64_t extra_top, extra_bottom, extra_left, extra_right;
};

// Output rows [r0, r1) of the N * OH rows: each output is the fp32 sum of its taps in the window's
// row-major order divided by the count, TOSA's AVG_POOL2D (the reference's bits) on every `isa`.
// Every window must count at least one tap.
void avg_pool_rows(const AvgPoolShape& s, const float* in, int64_t r0, int64_t r1, float* out, CpuLevel isa);

}  // namespace weft::backend::cpu
