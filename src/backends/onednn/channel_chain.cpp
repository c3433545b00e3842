#include "backends/onednn/channel_chain.h"

#include "backends/onednn/lanes.h"

// The file is built with -ffp-contract=off (CMakeLists.txt): x * s + b stays two roundings, as MUL
// and ADD are.

namespace weft::backend::cpu {
namespace {

__attribute__((always_inline)) inline float apply(const ChannelStep& s, float x, int64_t c) {
  switch (s.kind) {
    case ChannelStep::Kind::kMul: return x * s.v[static_cast<size_t>(c)];
    case ChannelStep::Kind::kAdd: return x + s.v[static_cast<size_t>(c)];
    case ChannelStep::Kind::kSub: return x - s.v[static_cast<size_t>(c)];
    case ChannelStep::Kind::kClamp: return x < s.lo ? s.lo : (x > s.hi ? s.hi : x);
  }
  return x;
}

// One step on W values (v: the step's per-channel values at their channels).
template <int W>
__attribute__((always_inline)) inline VecF<W> step_vec(const ChannelStep& s, VecF<W> x, const float* v) {
  if (s.kind == ChannelStep::Kind::kClamp) {
    const VecF<W> lo = VecF<W>{} + s.lo, hi = VecF<W>{} + s.hi;
    x = x < lo ? lo : x;  // a NaN compares false both times and stays
    return x > hi ? hi : x;
  }
  const VecF<W> c = load_vec<W>(v);
  return s.kind == ChannelStep::Kind::kMul ? x * c : s.kind == ChannelStep::Kind::kAdd ? x + c : x - c;
}

}  // namespace

template <int W>
WEFT_CPU_BODY void channel_chain_rows_body(const std::vector<const float*>& pieces, const std::vector<int64_t>& widths,
                                           int64_t channels, const std::vector<ChannelStep>& steps, int64_t r0,
                                           int64_t r1, float* out) {
  constexpr int kParts = 16 / W;  // sixteen channels a pass at every width: one walk of the steps per 16
  for (int64_t r = r0; r < r1; ++r) {
    float* dst = out + r * channels;
    int64_t off = 0;
    for (size_t j = 0; j < pieces.size(); ++j) {
      const int64_t w = widths[j];
      const float* src = pieces[j] + r * w;
      int64_t c = 0;
      for (; c + 16 <= w; c += 16) {
        VecF<W> x[kParts];
        for (int q = 0; q < kParts; ++q) x[q] = load_vec<W>(src + c + q * W);
        for (const ChannelStep& s : steps)
          for (int q = 0; q < kParts; ++q) x[q] = step_vec<W>(s, x[q], s.v.data() + off + c + q * W);
        for (int q = 0; q < kParts; ++q) store_vec<W>(dst + off + c + q * W, x[q]);
      }
      for (; c + W <= w; c += W) {
        VecF<W> x = load_vec<W>(src + c);
        for (const ChannelStep& s : steps) x = step_vec<W>(s, x, s.v.data() + off + c);
        store_vec<W>(dst + off + c, x);
      }
      for (; c < w; ++c) {
        float x = src[c];
        for (const ChannelStep& s : steps) x = apply(s, x, off + c);
        dst[off + c] = x;
      }
      off += w;
    }
  }
}
WEFT_CPU_DISPATCH(channel_chain_rows,
                  (const std::vector<const float*>& pieces, const std::vector<int64_t>& widths, int64_t channels,
                   const std::vector<ChannelStep>& steps, int64_t r0, int64_t r1, float* out),
                  (pieces, widths, channels, steps, r0, r1, out))

}  // namespace weft::backend::cpu
