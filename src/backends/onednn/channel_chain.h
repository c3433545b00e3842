// Per-channel element-wise chains for the CPU backend, reading a concatenation's pieces in place:
// DenseNet's pre-activation BN + ReLU (MUL by a scale per channel, ADD a shift, CLAMP) over the
// features each layer concatenates. The chain reads every piece once and writes its result once;
// the concatenation itself is never written (DenseNet-121: 58 CONCATs of up to 1024 channels).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace weft::backend::cpu {

// One operation of a chain, applied to every element: x * v[c], x + v[c], x - v[c] (v holds one
// value per channel c of the result), or x clamped to [lo, hi] (NaN stays NaN).
struct ChannelStep {
  enum class Kind { kMul, kAdd, kSub, kClamp };
  Kind kind;
  std::vector<float> v;
  float lo = 0, hi = 0;
};

// Rows [r0, r1) of out[rows][channels] = steps applied in order to the concatenation of `pieces`
// along the last axis: piece j is [rows][widths[j]], rows contiguous, and the widths sum to
// `channels`. Every operation rounds to fp32 as the operator it came from does (no contraction).
void channel_chain_rows(const std::vector<const float*>& pieces, const std::vector<int64_t>& widths, int64_t channels,
                        const std::vector<ChannelStep>& steps, int64_t r0, int64_t r1, float* out);

}  // namespace weft::backend::cpu
