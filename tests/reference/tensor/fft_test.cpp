// FFT2D and RFFT2D: hand-computed transforms, a direct evaluation of the pseudocode's double sum (in
// double precision) as the oracle, exact zeros where the pseudocode skips sin terms, and failures.
#include <cmath>
#include <numbers>

#include "reference/tensor/tensor_test_util.h"

namespace weft::testing {
namespace {

// The FFT2D pseudocode's sums, evaluated in double: for every (oy, ox), over all (iy, ix).
void oracle_dft(const Tensor& re, const Tensor* im, bool inverse, int64_t out_w, std::vector<double>& out_re,
                std::vector<double>& out_im, double& scale) {
  const int64_t N = re.shape()[0], H = re.shape()[1], W = re.shape()[2];
  const double sign = inverse ? -1.0 : 1.0;
  scale = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oy = 0; oy < H; ++oy)
      for (int64_t ox = 0; ox < out_w; ++ox) {
        double sr = 0, si = 0;
        for (int64_t iy = 0; iy < H; ++iy)
          for (int64_t ix = 0; ix < W; ++ix) {
            const int64_t idx = (n * H + iy) * W + ix;
            const double vr = re.at_double(idx), vi = im ? im->at_double(idx) : 0.0;
            const int64_t ay = (iy * oy) % H, ax = (ix * ox) % W;
            const double a =
                sign * 2 * std::numbers::pi * (static_cast<double>(ay) / H + static_cast<double>(ax) / W);
            sr += vr * std::cos(a) + vi * std::sin(a);
            si += -vr * std::sin(a) + vi * std::cos(a);
            if (n == 0 && oy == 0 && ox == 0) scale += std::abs(vr) + std::abs(vi);
          }
        out_re.push_back(sr);
        out_im.push_back(si);
      }
}

Attrs fft_attrs(bool inverse) { return {{"inverse", inverse}}; }

TEST(Fft2d, HandComputedImpulseAndConstant) {
  // An impulse at (0,0) transforms to all ones; a constant 1 over 2x4 to 8 at (0,0) and 0 elsewhere.
  Tensor imp_r = F32({1, 2, 4}, {1, 0, 0, 0, 0, 0, 0, 0});
  Tensor zero = F32({1, 2, 4}, std::vector<double>(8, 0.0));
  auto out = run_threads(Op::FFT2D, {imp_r, zero}, fft_attrs(false),
                         {{DType::kFp32, {1, 2, 4}}, {DType::kFp32, {1, 2, 4}}}, 1);
  expect_tensor_eq(out[0], F32({1, 2, 4}, std::vector<double>(8, 1.0)));
  expect_tensor_eq(out[1], zero);
  Tensor ones = F32({1, 2, 4}, std::vector<double>(8, 1.0));
  out = run_threads(Op::FFT2D, {ones, zero}, fft_attrs(false),
                    {{DType::kFp32, {1, 2, 4}}, {DType::kFp32, {1, 2, 4}}}, 1);
  expect_tensor_eq(out[0], F32({1, 2, 4}, {8, 0, 0, 0, 0, 0, 0, 0}), 1e-6);
  expect_tensor_eq(out[1], zero, 1e-6);
}

TEST(Fft2d, HandComputedSingleFrequencyAndInverseSign) {
  // x[ix] = exp(2*pi*i*ix/4) over 1x1x4: the forward transform puts 4 at ox = 1; the inverse
  // (sign -1) puts 4 at ox = 3.
  Tensor re = F32({1, 1, 4}, {1, 0, -1, 0});
  Tensor im = F32({1, 1, 4}, {0, 1, 0, -1});
  std::vector<TensorType> types = {{DType::kFp32, {1, 1, 4}}, {DType::kFp32, {1, 1, 4}}};
  auto fwd = run_threads(Op::FFT2D, {re, im}, fft_attrs(false), types, 1);
  expect_tensor_eq(fwd[0], F32({1, 1, 4}, {0, 4, 0, 0}), 1e-6);
  expect_tensor_eq(fwd[1], F32({1, 1, 4}, {0, 0, 0, 0}), 1e-6);
  auto inv = run_threads(Op::FFT2D, {re, im}, fft_attrs(true), types, 1);
  expect_tensor_eq(inv[0], F32({1, 1, 4}, {0, 0, 0, 4}), 1e-6);
  expect_tensor_eq(inv[1], F32({1, 1, 4}, {0, 0, 0, 0}), 1e-6);
}

TEST(Fft2d, RandomMatchesDirectSum) {
  std::mt19937 rng(51);
  for (auto [N, H, W] :
       std::vector<std::tuple<int64_t, int64_t, int64_t>>{{1, 1, 1}, {2, 4, 8}, {1, 16, 2}, {3, 8, 32}}) {
    for (bool inverse : {false, true}) {
      SCOPED_TRACE(std::to_string(H) + "x" + std::to_string(W) + (inverse ? " inverse" : ""));
      Tensor re = random_tensor(rng, DType::kFp32, {N, H, W});
      Tensor im = random_tensor(rng, DType::kFp32, {N, H, W});
      std::vector<double> wr, wi;
      double scale;
      oracle_dft(re, &im, inverse, W, wr, wi, scale);
      std::vector<TensorType> types = {{DType::kFp32, {N, H, W}}, {DType::kFp32, {N, H, W}}};
      auto got = run_threads(Op::FFT2D, {re, im}, fft_attrs(inverse), types, 3);
      const double tol = 1e-6 * (2.0 * H * W);  // |inputs| <= 2: fp32 rounding of sums of H*W terms
      expect_tensor_eq(got[0], F32({N, H, W}, wr), tol);
      expect_tensor_eq(got[1], F32({N, H, W}, wi), tol);
    }
  }
}

TEST(Rfft2d, HandComputed) {
  // 1x2x4 real input [[1,2,3,4],[0,0,0,0]]: out[oy][ox] = sum_ix x[0][ix] e^{-2*pi*i*ix*ox/4}
  // (row 1 is zero, and the oy factor is 1 for row 0): ox0 = 10, ox1 = 1*1 + 2*(-i) + 3*(-1) + 4*(i)
  // = -2 + 2i, ox2 = 1 - 2 + 3 - 4 = -2. Both output rows are equal.
  Tensor x = F32({1, 2, 4}, {1, 2, 3, 4, 0, 0, 0, 0});
  std::vector<TensorType> types = {{DType::kFp32, {1, 2, 3}}, {DType::kFp32, {1, 2, 3}}};
  auto out = run_threads(Op::RFFT2D, {x}, {}, types, 1);
  expect_tensor_eq(out[0], F32({1, 2, 3}, {10, -2, -2, 10, -2, -2}), 1e-6);
  expect_tensor_eq(out[1], F32({1, 2, 3}, {0, 2, 0, 0, 2, 0}), 1e-6);
}

TEST(Rfft2d, SkippedSineTermsGiveExactZeros) {
  // Where (ay % (H/2)) and (ax % (W/2)) are all 0 the pseudocode adds no sin terms: the imaginary
  // output at (0,0), (0,W/2), (H/2,0), (H/2,W/2) is exactly +0.
  std::mt19937 rng(52);
  Tensor x = random_tensor(rng, DType::kFp32, {2, 4, 8});
  std::vector<TensorType> types = {{DType::kFp32, {2, 4, 5}}, {DType::kFp32, {2, 4, 5}}};
  auto out = run_threads(Op::RFFT2D, {x}, {}, types, 1);
  for (int64_t n = 0; n < 2; ++n) {
    for (int64_t oy : {0, 2}) {
      for (int64_t ox : {0, 4}) {
        const double v = out[1].at_double((n * 4 + oy) * 5 + ox);
        EXPECT_EQ(v, 0.0);
        EXPECT_FALSE(std::signbit(v));
      }
    }
  }
}

TEST(Rfft2d, RandomMatchesDirectSum) {
  std::mt19937 rng(53);
  for (auto [N, H, W] :
       std::vector<std::tuple<int64_t, int64_t, int64_t>>{{1, 1, 1}, {1, 1, 2}, {2, 8, 4}, {1, 2, 32}}) {
    SCOPED_TRACE(std::to_string(H) + "x" + std::to_string(W));
    Tensor x = random_tensor(rng, DType::kFp32, {N, H, W});
    std::vector<double> wr, wi;
    double scale;
    oracle_dft(x, nullptr, false, W / 2 + 1, wr, wi, scale);
    std::vector<TensorType> types = {{DType::kFp32, {N, H, W / 2 + 1}}, {DType::kFp32, {N, H, W / 2 + 1}}};
    auto got = run_threads(Op::RFFT2D, {x}, {}, types, 2);
    const double tol = 1e-6 * (2.0 * H * W);
    expect_tensor_eq(got[0], F32({N, H, W / 2 + 1}, wr), tol);
    expect_tensor_eq(got[1], F32({N, H, W / 2 + 1}, wi), tol);
  }
}

TEST(Fft2d, Rejects) {
  Tensor x = F32({1, 3, 4}, std::vector<double>(12, 0.0));
  std::vector<TensorType> t34 = {{DType::kFp32, {1, 3, 4}}, {DType::kFp32, {1, 3, 4}}};
  EXPECT_THROW(run_threads(Op::FFT2D, {x, x}, fft_attrs(false), t34, 1), Error);  // H not a power of two
  Tensor y = F32({1, 2, 4}, std::vector<double>(8, 0.0));
  EXPECT_THROW(run_threads(Op::FFT2D, {y, y}, fft_attrs(false),
                           {{DType::kFp32, {1, 2, 4}}, {DType::kFp32, {1, 2, 3}}}, 1),
               Error);
  EXPECT_THROW(run_threads(Op::RFFT2D, {y}, {}, {{DType::kFp32, {1, 2, 4}}, {DType::kFp32, {1, 2, 4}}}, 1),
               Error);
  Tensor h = T(DType::kFp16, {1, 2, 4}, std::vector<double>(8, 0.0));
  EXPECT_THROW(run_threads(Op::RFFT2D, {h}, {}, {{DType::kFp16, {1, 2, 3}}, {DType::kFp16, {1, 2, 3}}}, 1),
               Error);
}

}  // namespace
}  // namespace weft::testing
