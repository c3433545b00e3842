// Weft's own fp32 GEMM for the CPU backend on machines whose best instruction set is AVX2 + FMA
// (no AVX-512). There oneDNN 2.6's matmul has no brgemm kernel and falls back to `gemm:jit`, which
// ran the BERT encoder's 128 x 1024 x 256 feed-forward GEMMs at about half of AVX2's FMA rate and
// applied fused GELU and residual adds slowly or not at all (docs/backends.md). The matmuls this
// serves have constant weights (Linear layers), packed once at preparation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace weft::backend::cpu {

// B [batches][K][N] repacked for gemm_avx2: per batch, column panels of kPanel floats, each
// [K][kPanel], the columns past N zero.
struct PackedB {
  static constexpr int64_t kPanel = 16;
  std::vector<float> data;
  int64_t batches = 1, k = 0, n = 0;
  int64_t panels() const { return (n + kPanel - 1) / kPanel; }
  const float* panel(int64_t batch, int64_t p) const { return data.data() + ((batch * panels() + p) * k) * kPanel; }
};

// Packs B, element (batch, k, n) at b[batch * sb + k * sk + n * sn].
PackedB pack_b(const float* b, int64_t batches, int64_t k, int64_t n, int64_t sb, int64_t sk, int64_t sn);

// Whether this CPU runs gemm_avx2 (AVX2 and FMA).
bool gemm_avx2_supported();

// An operation applied to each result while it is still in registers, in order: y += v[j] or
// y *= v[j] (per output column j), y += v[i * ld + j] (a residual of the result's shape), CLAMP to
// [lo, hi] (NaN stays NaN), GELU, or an activation through a vectorised exp (within 2 ulp):
// sigmoid 1 / (1 + e^-y), tanh 2 sigmoid(2y) - 1 (within 3e-7 absolute; below |y| = 0.625 Cephes'
// odd polynomial, within a few ulp of tanh itself), swish y sigmoid(y),
// hard-swish y min(max(y / 6 + 1/2, 0), 1), GELU's tanh form; e^y and ln y (Cephes' expf and logf
// polynomials, within 2 ulp; e^y is 0 below -87.34 rather than subnormal).
struct EpilogueOp {
  enum class Kind : uint8_t { kAddColumns, kMulColumns, kAddMatrix, kClamp, kGeluErf, kSigmoid, kTanh, kSwish,
                              kHardSwish, kGeluTanh, kExp, kLog };
  Kind kind = Kind::kAddColumns;
  const float* v = nullptr;
  int64_t ld = 0;
  float lo = 0, hi = 0;
};

// C[i][j] = sum_k A[i * lda + k] * B[batch][k][j] for rows [m0, m1) and the columns of panels
// [p0, p1) (C row stride ldc), then ops[0, nops) (their row index i counts from A's and C's row 0). Each output sums its products in ascending k in one fp32
// accumulator (with fused multiply-adds), so a result does not depend on the block or thread that
// computes it.
// With `accumulate`, the products are added to what C holds (ops still apply after the last k).
void gemm_avx2(const float* a, int64_t lda, int64_t m0, int64_t m1, const PackedB& b, int64_t batch, int64_t p0,
               int64_t p1, float* c, int64_t ldc, const EpilogueOp* ops = nullptr, int nops = 0,
               bool accumulate = false);

// The epilogue's activation `kind` (kGeluErf and the exp-based ones) in place over n floats, as
// gemm_avx2 applies it (AVX2 + FMA). GELU's erf comes from a rational approximation within 4e-7
// of the exact value.
void activation_avx2(EpilogueOp::Kind kind, float* y, int64_t n);
// The same for AVX-512F CPUs: SIGMOID, TANH, EXP and LOG 16 floats at a time, with the same bits
// as activation_avx2 (the functions are written once, activation_math.inc); other kinds go to
// activation_avx2. Call it only where the CPU has AVX-512F (cpu_level() in lanes.h).
void activation_avx512(EpilogueOp::Kind kind, float* y, int64_t n);

// A grouped convolution with 4 input and 4 output channels per group (ResNeXt's first stage: 32
// groups of 4 at 56 x 56), fp32, NHWC [n][h][w][c] -> [n][oh][ow][c], c a multiple of 8. oneDNN
// 2.6's AVX2 convolutions need 8 channels per group and ran it as im2col + GEMM (`gemm:jit`,
// 7.6 ms where this takes ~1). TOSA padding: taps outside the input are skipped.
struct GroupedConv4 {
  int64_t n = 1, h = 0, w = 0, c = 0, oh = 0, ow = 0, kh = 1, kw = 1, sy = 1, sx = 1, dy = 1, dx = 1, pt = 0, pl = 0;
};
// The weights [c][kh][kw][4] (each output channel's taps over its group's 4 inputs) as
// grouped_conv4_avx2 reads them.
std::vector<float> pack_grouped_conv4(const float* w, int64_t c, int64_t kh, int64_t kw);
// Output rows [r0, r1) of the n * oh rows, then ops[0, nops) per output (row index: the output
// pixel, column: the channel). Each output is computed by one call, so the result does not depend
// on how rows are split between threads.
void grouped_conv4_avx2(const GroupedConv4& s, const float* x, const float* packed, float* y, int64_t r0, int64_t r1,
                        const EpilogueOp* ops, int nops);

// A convolution as one GEMM per kernel tap (no im2col): fp32 NHWC [n][h][w][ic] -> [n][oh][ow][oc],
// taps[ky * kw + kx] the packed [ic][oc] weights of that tap. For each output row the taps inside
// the input (TOSA skips the others) are added in (ky, kx) order, each over the output columns it
// reaches: a GEMM of those columns' input pixels (rows of ic floats, sx * ic apart) by the tap's
// weights. Where oneDNN 2.6 capped at AVX2 has no direct kernel (padding wider than the kernel:
// DeepLabV3's atrous convolutions) it runs im2col + GEMM over every tap, padding included.
struct TapConv {
  int64_t n = 1, h = 0, w = 0, ic = 0, oh = 0, ow = 0, oc = 0, kh = 1, kw = 1, sy = 1, sx = 1, dy = 1, dx = 1, pt = 0,
          pl = 0;
};
// Output rows [r0, r1) of the n * oh rows, then ops[0, nops) per output (row: the output pixel,
// column: the channel). Each output is summed in one accumulator in (ky, kx, ic) order, as the
// reference does, by one call.
void tap_conv_avx2(const TapConv& s, const float* x, const PackedB* taps, float* y, int64_t r0, int64_t r1,
                   const EpilogueOp* ops, int nops);

// A 3 x 3 convolution of stride 1 by Winograd's minimal filtering F(2 x 2, 3 x 3) (Lavin and Gray,
// "Fast Algorithms for Convolutional Neural Networks", 2016), fp32 NHWC [n][h][w][ic] ->
// [n][oh][ow][oc]: each 2 x 2 block of outputs (a tile) comes from its 4 x 4 input patch d as
// A^T [(G g G^T) . (B^T d B)] A, so the 36 multiplies per output channel and input channel of the
// direct sum become 16 per tile, 2.25x fewer. For a block of tiles, B^T d B of every tile makes 16
// matrices [tiles][ic], each multiplied by its transformed weights [ic][oc] with gemm_avx2, and
// A^T m A of the 16 products gives the outputs, the epilogue applied in registers. With dilation
// d a tile's outputs are d apart and its patch reads every d-th input; taps outside the input read
// zeros (TOSA's padding). The transforms' coefficients are 0, +-1 and +-1/2, exact in fp32; the
// result differs from the direct sum only by the roundings of the transformed terms (checked
// against the reference backend within the accumulating operators' tolerance).
struct WinogradConv {
  int64_t n = 1, h = 0, w = 0, ic = 0, oh = 0, ow = 0, oc = 0, dy = 1, dx = 1, pt = 0, pl = 0;
  std::vector<int64_t> rows, cols;  // the tiles' first output row and column (winograd_plan)
  int64_t block = 0;                // tiles per block (winograd_plan)
  int64_t tiles() const { return n * static_cast<int64_t>(rows.size() * cols.size()); }
  int64_t ic_padded() const { return (ic + 7) / 8 * 8; }  // a transformed input row: whole ymm vectors
};
// Fills the tile origins (per residue of the dilation, outputs 2 d apart) and the block size.
void winograd_plan(WinogradConv& s);
// The weights [oc][3][3][ic] as 16 matrices [ic][oc] (batch 4 i + j: (G g G^T)[i][j] of each
// output and input channel's 3 x 3 kernel g), packed for gemm_avx2.
PackedB pack_winograd_weights(const float* w, int64_t oc, int64_t ic);
// Tiles [t0, t1) of s.tiles() (tile t: image t / (rows * cols), then row-major over the origins),
// output channels [16 p0, 16 p1) (u's panels [p0, p1)), then ops[0, nops) per output (row index:
// the output pixel, column: the channel). Each output is computed the same way whatever block,
// panel range or thread it falls in, so the result does not depend on the thread count.
// `scratch`: winograd_scratch_floats(s) floats of working memory (one per thread).
void winograd_conv_avx2(const WinogradConv& s, const float* x, const PackedB& u, float* y, int64_t t0, int64_t t1,
                        int64_t p0, int64_t p1, const EpilogueOp* ops, int nops, float* scratch);
// A block's transformed input and products: 16 * block * (ic rounded up to 8 + oc) floats.
int64_t winograd_scratch_floats(const WinogradConv& s);

// Whether this CPU runs swish_avx512 (AVX-512F).
bool swish_avx512_supported();

// y = y sigmoid(y) in place over n floats with AVX-512F (gemm.cpp's swish16: e^-y by range
// reduction, a polynomial and scalef; the reciprocal from an estimate refined once): within 4e-7
// relative. The oneDNN backend runs it after a convolution instead of oneDNN's swish post-op, which
// took 0.35 ms where this takes about a third (EfficientNet-B0's first expansion, docs/backends.md).
void swish_avx512(float* y, int64_t n);

}  // namespace weft::backend::cpu
