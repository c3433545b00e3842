#include "backends/onednn/elementwise_loop.h"

#include <cstring>
#include <limits>

#include "backends/onednn/gemm.h"
#include "backends/onednn/lanes.h"

// The file is built with -ffp-contract=off (CMakeLists.txt): a MUL then an ADD stay two roundings,
// as the operators are.

namespace weft::backend::cpu {
namespace {

// Elements per block: every step's block of values stays in L1 (kMaxLoopSlots * 256 bytes).
constexpr int64_t kBlock = 64;

// One binary or unary step over n values (a, b, y may not overlap except a == y or b == y).
template <int W>
WEFT_CPU_BODY void apply_body(const LoopStep& s, const float* a, const float* b, float* y, int64_t n) {
  const float qnan = std::numeric_limits<float>::quiet_NaN();
  int64_t j = 0;
  switch (s.kind) {
    case LoopStep::Kind::kAdd:
      for (; j + W <= n; j += W) store_vec<W>(y + j, load_vec<W>(a + j) + load_vec<W>(b + j));
      for (; j < n; ++j) y[j] = a[j] + b[j];
      return;
    case LoopStep::Kind::kSub:
      for (; j + W <= n; j += W) store_vec<W>(y + j, load_vec<W>(a + j) - load_vec<W>(b + j));
      for (; j < n; ++j) y[j] = a[j] - b[j];
      return;
    case LoopStep::Kind::kMul:
      for (; j + W <= n; j += W) store_vec<W>(y + j, load_vec<W>(a + j) * load_vec<W>(b + j));
      for (; j < n; ++j) y[j] = a[j] * b[j];
      return;
    case LoopStep::Kind::kMax:
    case LoopStep::Kind::kMin: {
      const bool max = s.kind == LoopStep::Kind::kMax;
      const VecF<W> nan = VecF<W>{} + qnan;
      for (; j + W <= n; j += W) {
        const VecF<W> x = load_vec<W>(a + j), w = load_vec<W>(b + j);
        VecF<W> r = max ? (x >= w ? x : w) : (x < w ? x : w);
        const VecI<W> xn = x != x, wn = w != w;
        r = s.propagate ? ((xn | wn) != 0 ? nan : r) : (xn != 0 ? w : (wn != 0 ? x : r));
        store_vec<W>(y + j, r);
      }
      for (; j < n; ++j) {
        const float x = a[j], w = b[j];
        float r = max ? (x >= w ? x : w) : (x < w ? x : w);
        if (x != x || w != w) r = s.propagate ? qnan : (x != x ? w : x);
        y[j] = r;
      }
      return;
    }
    case LoopStep::Kind::kClamp: {
      // max(x, lo) then min(., hi): a NaN gives NaN (propagate) or lo (ignore); lo <= hi, neither NaN.
      const VecF<W> lo = VecF<W>{} + s.lo, hi = VecF<W>{} + s.hi, nan = VecF<W>{} + qnan;
      for (; j + W <= n; j += W) {
        const VecF<W> x = load_vec<W>(a + j);
        VecF<W> r = x >= lo ? x : lo;
        r = r < hi ? r : hi;
        if (s.propagate) r = x != x ? nan : r;
        store_vec<W>(y + j, r);
      }
      for (; j < n; ++j) {
        const float x = a[j];
        float r = x >= s.lo ? x : s.lo;
        r = r < s.hi ? r : s.hi;
        y[j] = s.propagate && x != x ? qnan : r;
      }
      return;
    }
    case LoopStep::Kind::kAbs:
    case LoopStep::Kind::kNegate: {
      // the sign bit cleared (ABS) or flipped (NEGATE): exact, NaN and -0 included
      const bool negate = s.kind == LoopStep::Kind::kNegate;
      const VecI<W> mask = VecI<W>{} + (negate ? int32_t(0x80000000u) : 0x7fffffff);
      for (; j + W <= n; j += W) {
        VecI<W> bits;
        const VecF<W> x = load_vec<W>(a + j);
        std::memcpy(&bits, &x, sizeof bits);
        bits = negate ? bits ^ mask : bits & mask;
        VecF<W> r;
        std::memcpy(&r, &bits, sizeof r);
        store_vec<W>(y + j, r);
      }
      for (; j < n; ++j) {
        uint32_t bits;
        std::memcpy(&bits, a + j, sizeof bits);
        bits = negate ? bits ^ 0x80000000u : bits & 0x7fffffffu;
        std::memcpy(y + j, &bits, sizeof bits);
      }
      return;
    }
    case LoopStep::Kind::kReciprocal: {
      const VecF<W> one = VecF<W>{} + 1.0f;
      for (; j + W <= n; j += W) store_vec<W>(y + j, one / load_vec<W>(a + j));
      for (; j < n; ++j) y[j] = 1.0f / a[j];
      return;
    }
    case LoopStep::Kind::kSigmoid:
    case LoopStep::Kind::kTanh:
    case LoopStep::Kind::kExp:
    case LoopStep::Kind::kLog: {
      using E = EpilogueOp::Kind;
      const E e = s.kind == LoopStep::Kind::kSigmoid ? E::kSigmoid
                  : s.kind == LoopStep::Kind::kTanh  ? E::kTanh
                  : s.kind == LoopStep::Kind::kExp   ? E::kExp
                                                     : E::kLog;
      if (y != a) std::memcpy(y, a, static_cast<size_t>(n) * sizeof(float));
      if constexpr (W == 16) activation_avx512(e, y, n);  // (the same bits, twice the lanes)
      else activation_avx2(e, y, n);
      return;
    }
  }
}
WEFT_CPU_DISPATCH(apply, (const LoopStep& s, const float* a, const float* b, float* y, int64_t n), (s, a, b, y, n))

}  // namespace

void plan_loop(LoopProgram& p) {
  const int steps = static_cast<int>(p.steps.size());
  p.extras.clear();
  auto slot = [&](const LoopOperand& o) {
    if (o.from == LoopOperand::From::kStep) return o.index;
    if (o.from == LoopOperand::From::kFull) return -1;
    for (size_t i = 0; i < p.extras.size(); ++i)
      if (p.extras[i].index == o.index && p.extras[i].from == o.from) return steps + static_cast<int>(i);
    p.extras.push_back(o);
    return steps + static_cast<int>(p.extras.size()) - 1;
  };
  p.slot_a.assign(static_cast<size_t>(steps), 0);
  p.slot_b.assign(static_cast<size_t>(steps), 0);
  p.out_of.assign(static_cast<size_t>(steps), -1);
  for (int s = 0; s < steps; ++s) {
    const LoopStep& st = p.steps[static_cast<size_t>(s)];
    p.slot_a[static_cast<size_t>(s)] = slot(st.a);
    if (is_binary(st.kind)) p.slot_b[static_cast<size_t>(s)] = slot(st.b);
  }
  for (size_t k = 0; k < p.outputs.size(); ++k) p.out_of[static_cast<size_t>(p.outputs[k])] = static_cast<int>(k);
}

void run_loop(const LoopProgram& p, const float* const* in, float* const* out, int64_t e0, int64_t e1) {
  const int steps = static_cast<int>(p.steps.size());
  alignas(64) float tmp[kMaxLoopSlots * kBlock];
  // Single values fill their slot once.
  for (size_t i = 0; i < p.extras.size(); ++i)
    if (p.extras[i].from == LoopOperand::From::kOne)
      for (int64_t j = 0; j < kBlock; ++j) tmp[(steps + static_cast<int>(i)) * kBlock + j] = in[p.extras[i].index][0];

  const float* where[kMaxLoopSlots];
  for (int64_t b0 = e0; b0 < e1; b0 += kBlock) {
    const int64_t n = std::min(kBlock, e1 - b0);
    // Column operands for this block: value (b0 + j) mod columns.
    for (size_t i = 0; i < p.extras.size(); ++i) {
      if (p.extras[i].from != LoopOperand::From::kColumn) continue;
      const float* col = in[p.extras[i].index];
      float* dst = tmp + (steps + static_cast<int>(i)) * kBlock;
      int64_t c = b0 % p.columns;
      for (int64_t j = 0; j < n; ++j) {
        dst[j] = col[c];
        if (++c == p.columns) c = 0;
      }
    }
    for (int s = 0; s < steps; ++s) {
      const LoopStep& st = p.steps[static_cast<size_t>(s)];
      const size_t si = static_cast<size_t>(s);
      float* y = p.out_of[si] >= 0 ? out[p.out_of[si]] + b0 : tmp + s * kBlock;
      auto operand = [&](const LoopOperand& o, int slot) -> const float* {
        if (slot < 0) return in[o.index] + b0;
        if (slot < steps) return where[slot];
        return tmp + slot * kBlock;
      };
      const float* a = operand(st.a, p.slot_a[si]);
      const float* b = is_binary(st.kind) ? operand(st.b, p.slot_b[si]) : nullptr;
      apply(st, a, b, y, n);
      where[s] = y;
    }
  }
}

}  // namespace weft::backend::cpu
