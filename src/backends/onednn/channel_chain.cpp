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

}  // namespace

WEFT_CPU_CLONES
void channel_chain_rows(const std::vector<const float*>& pieces, const std::vector<int64_t>& widths, int64_t channels,
                        const std::vector<ChannelStep>& steps, int64_t r0, int64_t r1, float* out) {
  for (int64_t r = r0; r < r1; ++r) {
    float* dst = out + r * channels;
    int64_t off = 0;
    for (size_t j = 0; j < pieces.size(); ++j) {
      const int64_t w = widths[j];
      const float* src = pieces[j] + r * w;
      int64_t c = 0;
      for (; c + 16 <= w; c += 16) {
        Lanes x = load_lanes(src + c);
        for (const ChannelStep& s : steps) {
          if (s.kind == ChannelStep::Kind::kClamp) {
            const Lanes lo = Lanes{} + s.lo, hi = Lanes{} + s.hi;
            x = x < lo ? lo : x;  // a NaN compares false both times and stays
            x = x > hi ? hi : x;
          } else {
            const Lanes v = load_lanes(s.v.data() + off + c);
            x = s.kind == ChannelStep::Kind::kMul ? x * v : s.kind == ChannelStep::Kind::kAdd ? x + v : x - v;
          }
        }
        store_lanes(dst + off + c, x);
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

}  // namespace weft::backend::cpu
