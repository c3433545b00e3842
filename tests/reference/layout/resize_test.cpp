// RESIZE: integer bilinear/nearest (bit exact), float, offsets, borders and the ERROR_IF checks.
// Expected values are worked out from the RESIZE pseudocode; see the comments per case.
#include <cmath>

#include "reference/ref_test_util.h"

namespace weft::testing {
namespace {

Attrs mode(ResizeMode m) { return {{"mode", static_cast<int64_t>(m)}}; }

Tensor resize(const Tensor& in, std::vector<int64_t> scale, std::vector<int64_t> offset,
              std::vector<int64_t> border, ResizeMode m, TensorType out) {
  return run1(Op::RESIZE,
              {Operand::input(in), Operand::shape(std::move(scale)), Operand::shape(std::move(offset)),
               Operand::shape(std::move(border))},
              mode(m), std::move(out));
}

// 2x2 -> 3x3 with scale 2/1 (OH = (2-1)*2/1 + 1 = 3). Integer bilinear weights are (2 - d) and d
// with d in {0, 1}, so results are 4x a linear interpolation of [[10,20],[30,40]]:
// [[10,15,20],[20,25,30],[30,35,40]] * 4.
TEST(Resize, Int8BilinearUpscale) {
  Tensor in = I(DType::kInt8, {1, 2, 2, 1}, {10, 20, 30, 40});
  Tensor got = resize(in, {2, 1, 2, 1}, {0, 0}, {0, 0}, ResizeMode::kBilinear, {DType::kInt32, {1, 3, 3, 1}});
  expect_tensor_eq(got, I(DType::kInt32, {1, 3, 3, 1}, {40, 60, 80, 80, 100, 120, 120, 140, 160}));
}

// Width only: IW = 3, scale_x = 4/3, offset_x = -1, border_x = 3 -> OW = ((3-1)*4 + 1 + 3)/3 + 1 = 5.
// Height: 1 -> 1 with scale 1/1 (dy = 0, iy0 = iy1 = 0, unit_y = 1).
// x = 3*ox - 1: ox=0: x=-1, ix=floor(-1/4)=-1, rx=3, ix0=ix1=0          -> bilinear 10*1 + 10*3 = 40
//               ox=1: x=2,  ix=0, rx=2, ix0=0, ix1=1                      -> 10*2 + 20*2 = 60
//               ox=2: x=5,  ix=1, rx=1, ix0=1, ix1=2                      -> 20*3 + -30*1 = 30
//               ox=3: x=8,  ix=2, rx=0, ix0=ix1=2                         -> -30*4 = -120
//               ox=4: x=11, ix=2, rx=3, ix0=ix1=2                         -> -30*1 + -30*3 = -120
// Nearest takes ix1 when 2*rx >= 4: ox=0 -> 0, ox=1 -> 1, ox=2 -> 1, ox=3 -> 2, ox=4 -> 2.
TEST(Resize, Int8OffsetAndBorder) {
  Tensor in = I(DType::kInt8, {1, 1, 3, 1}, {10, 20, -30});
  expect_tensor_eq(
      resize(in, {1, 1, 4, 3}, {0, -1}, {0, 3}, ResizeMode::kBilinear, {DType::kInt32, {1, 1, 5, 1}}),
      I(DType::kInt32, {1, 1, 5, 1}, {40, 60, 30, -120, -120}));
  expect_tensor_eq(
      resize(in, {1, 1, 4, 3}, {0, -1}, {0, 3}, ResizeMode::kNearest, {DType::kInt8, {1, 1, 5, 1}}),
      I(DType::kInt8, {1, 1, 5, 1}, {10, 20, 20, -30, -30}));
}

// int16 -> int48: scale 2048/1024 on 2x2 gives 3x3; weights (2048 - d) and d with d in {0, 1024}.
// The corners are v * 2048 * 2048, beyond int32: 32767 * 4194304 = 137434759168.
TEST(Resize, Int16BilinearInt48) {
  Tensor in = I(DType::kInt16, {1, 2, 2, 1}, {32767, -32768, 0, 1000});
  Tensor got = resize(in, {2048, 1024, 2048, 1024}, {0, 0}, {0, 0}, ResizeMode::kBilinear,
                      {DType::kInt48, {1, 3, 3, 1}});
  expect_tensor_eq(got, I(DType::kInt48, {1, 3, 3, 1},
                          {137434759168,                  // 32767 * 2048 * 2048
                           -2097152,                      // (32767 - 32768) * 2048 * 1024
                           -137438953472,                 // -32768 * 2048 * 2048
                           68717379584,                   // (32767 + 0) * 1024 * 2048
                           1047527424,                    // (32767 - 32768 + 0 + 1000) * 1024 * 1024
                           -66622324736,                  // (-32768 + 1000) * 1024 * 2048
                           0, 2097152000, 4194304000}));  // 0, 1000 * 2048 * 1024, 1000 * 2048 * 2048
  // Nearest at d = 1024 = scale_n / 2 rounds up to index 1.
  Tensor near = resize(in, {2048, 1024, 2048, 1024}, {0, 0}, {0, 0}, ResizeMode::kNearest,
                       {DType::kInt16, {1, 3, 3, 1}});
  expect_tensor_eq(near,
                   I(DType::kInt16, {1, 3, 3, 1}, {32767, -32768, -32768, 0, 1000, 1000, 0, 1000, 1000}));
}

// Downscale 4 -> 2 with scale 1/2 (OW = (3*1)/2 + 1 needs 3 % 2 == 0: use border -1: (3 - 1)/2 + 1 = 2).
// x = 2*ox: ox=0 -> ix=0, ox=1 -> ix=2, rx = 0 always.
TEST(Resize, Int8DownscaleNegativeBorder) {
  Tensor in = I(DType::kInt8, {1, 1, 4, 2}, {1, -1, 2, -2, 3, -3, 4, -4});
  expect_tensor_eq(
      resize(in, {1, 1, 1, 2}, {0, 0}, {0, -1}, ResizeMode::kNearest, {DType::kInt8, {1, 1, 2, 2}}),
      I(DType::kInt8, {1, 1, 2, 2}, {1, -1, 3, -3}));
  // Bilinear with unit 1 (scale_n = 1): weights 1 and 0.
  expect_tensor_eq(
      resize(in, {1, 1, 1, 2}, {0, 0}, {0, -1}, ResizeMode::kBilinear, {DType::kInt32, {1, 1, 2, 2}}),
      I(DType::kInt32, {1, 1, 2, 2}, {1, -1, 3, -3}));
}

TEST(Resize, FloatTypes) {
  for (DType t : {DType::kFp16, DType::kBf16, DType::kFp32}) {
    SCOPED_TRACE(dtype_name(t));
    Tensor in = T(t, {1, 2, 2, 1}, {1, 2, 3, 4});
    // dy, dx in {0, 0.5}: plain linear interpolation.
    expect_tensor_eq(resize(in, {2, 1, 2, 1}, {0, 0}, {0, 0}, ResizeMode::kBilinear, {t, {1, 3, 3, 1}}),
                     T(t, {1, 3, 3, 1}, {1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4}));
    // Nearest: d = 0.5 >= 0.5 picks the next index.
    expect_tensor_eq(resize(in, {2, 1, 2, 1}, {0, 0}, {0, 0}, ResizeMode::kNearest, {t, {1, 3, 3, 1}}),
                     T(t, {1, 3, 3, 1}, {1, 2, 2, 3, 4, 4, 3, 4, 4}));
    // Quarter steps: scale 4/1 in x on [0, 8]: OW = 4 + 1 = 5, values 0, 2, 4, 6, 8.
    expect_tensor_eq(resize(T(t, {1, 1, 2, 1}, {0, 8}), {1, 1, 4, 1}, {0, 0}, {0, 0}, ResizeMode::kBilinear,
                            {t, {1, 1, 5, 1}}),
                     T(t, {1, 1, 5, 1}, {0, 2, 4, 6, 8}));
  }
}

TEST(Resize, ErrorIfChecks) {
  Tensor in = I(DType::kInt8, {1, 2, 2, 1}, {1, 2, 3, 4});
  // Output size not matching the scale.
  EXPECT_THROW(resize(in, {2, 1, 2, 1}, {0, 0}, {0, 0}, ResizeMode::kBilinear, {DType::kInt32, {1, 4, 3, 1}}),
               Error);
  // Zero scale.
  EXPECT_THROW(resize(in, {0, 1, 2, 1}, {0, 0}, {0, 0}, ResizeMode::kBilinear, {DType::kInt32, {1, 3, 3, 1}}),
               Error);
  // Offset below -scale_n.
  EXPECT_THROW(resize(in, {2, 1, 2, 1}, {-3, 0}, {0, 0}, ResizeMode::kNearest, {DType::kInt8, {1, 4, 3, 1}}),
               Error);
  // Wrong output type for the mode.
  EXPECT_THROW(resize(in, {2, 1, 2, 1}, {0, 0}, {0, 0}, ResizeMode::kBilinear, {DType::kInt8, {1, 3, 3, 1}}),
               Error);
}

}  // namespace
}  // namespace weft::testing
