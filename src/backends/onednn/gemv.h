// Matrix-vector products for the CPU backend's batch-1 matmuls (classifier heads, VGG's and
// AlexNet's fully connected layers): y = W x with the rows of W contiguous. At batch 1 such a layer
// streams its weights once and is bound by memory bandwidth; oneDNN 2.6's brgemm matmul reaches
// about half of it there (VGG-11's 411 MB layer: 17-39 ms against 9.8 ms here on one Zen 4 core).
#pragma once

#include <cstdint>
#include <string>

namespace weft::backend::cpu {

// y[n] = sum_k w[n * ldw + k] * x[k] for n in [n0, n1). The sum runs in 16 lanes over k and is
// then added up, so results do not depend on n0, n1 or the thread that computes them.
void gemv_rows(const float* w, int64_t ldw, const float* x, int64_t k, int64_t n0, int64_t n1, float* y);

// The same product with the weights transposed: wt[k * ldn + n], ldn a multiple of 16 and the
// columns past the last zero, for n in [n0, n1) (n0 a multiple of 16). Each result sums its
// products in ascending k in one accumulator: no horizontal sums, which dominate gemv_rows when k
// is small (an unrolled LSTM's [1, 48] x [48, 192] steps). Results do not depend on n0, n1.
void gemv_cols(const float* wt, int64_t ldn, const float* x, int64_t k, int64_t n0, int64_t n1, float* y);

// The same product with the weights packed in panels of 16 columns, each [k][16] and contiguous
// (wp[(p * k + i) * 16 + j] = w of column 16 p + j at i; columns past n zero), for the panels
// [p0, p1): every panel is one sequential stream. Each result sums its products in ascending k in
// one accumulator, as gemv_cols does.
void gemv_panels(const float* wp, const float* x, int64_t k, int64_t p0, int64_t p1, int64_t n, float* y);

}  // namespace weft::backend::cpu
