// Fused element-wise loops for the CPU backend (Composite::Region::kElementwise): a group of fp32
// element-wise operators over one shape runs as one pass over the elements, a block at a time, the
// values used only inside the group kept in a small buffer and never written. An unrolled LSTM
// cell (TANH, MUL, MUL, ADD, TANH, MUL) or GRU update is one kernel instead of six to twelve, each
// of which cost the runtime's per-kernel work and a pass over memory.
#pragma once

#include <cstdint>
#include <vector>

namespace weft::backend::cpu {

// Where an operand of a step comes from.
struct LoopOperand {
  enum class From : uint8_t {
    kStep,    // the result of an earlier step (`index`)
    kFull,    // input `index`, of the loop's shape
    kOne,     // input `index`, one value for every element
    kColumn,  // input `index`, one value per index of the last axis (`columns` values)
  };
  From from = From::kStep;
  int index = 0;
};

// One operator of the loop. Every step rounds to fp32 as the operator it comes from does: ADD, SUB,
// MUL and RECIPROCAL are one IEEE operation; MAXIMUM, MINIMUM and CLAMP follow TOSA's nan_mode
// (`propagate`: a NaN operand gives NaN; otherwise the other operand, CLAMP's lower bound); ABS
// clears the sign and NEGATE flips it; SIGMOID and TANH are gemm.h's activation_avx2 (within 4e-7
// relative), EXP and LOG its Cephes polynomials (within 2 ulp; EXP is 0 below -87.34).
struct LoopStep {
  enum class Kind : uint8_t { kAdd, kSub, kMul, kMax, kMin, kClamp, kAbs, kNegate, kReciprocal, kSigmoid, kTanh,
                              kExp, kLog };
  Kind kind = Kind::kAdd;
  LoopOperand a, b;  // b: binary steps only
  float lo = 0, hi = 0;  // kClamp
  bool propagate = true;  // kMax, kMin, kClamp
};

inline bool is_binary(LoopStep::Kind k) {
  return k == LoopStep::Kind::kAdd || k == LoopStep::Kind::kSub || k == LoopStep::Kind::kMul || k == LoopStep::Kind::kMax ||
         k == LoopStep::Kind::kMin;
}

struct LoopProgram {
  std::vector<LoopStep> steps;
  std::vector<int> outputs;  // per result written out: the step that computes it
  int64_t elements = 0;
  int64_t columns = 1;       // the size of the last axis (kColumn operands)

  // Filled by plan_loop: where each step's operands and result live in a block. Slots [0, steps)
  // are the steps' results, the ones after them the broadcast operands (`extras`, one per input
  // and form); -1 is a full input read in place. `out_of[s]`: the result step s writes (-1: none).
  std::vector<int> slot_a, slot_b, out_of;
  std::vector<LoopOperand> extras;
  int slots() const { return static_cast<int>(steps.size() + extras.size()); }
};

// The most steps plus broadcast operands a program may have (the loop holds a block of each).
inline constexpr int kMaxLoopSlots = 96;

// Lays out `p`'s slots (once, when the kernel is prepared); check p.slots() <= kMaxLoopSlots after.
void plan_loop(LoopProgram& p);

// Runs elements [e0, e1) of planned `p`: `in[i]` is input i's data (null where no step reads it), `out[k]`
// result k's. Results never share storage with inputs.
void run_loop(const LoopProgram& p, const float* const* in, float* const* out, int64_t e0, int64_t e1);

}  // namespace weft::backend::cpu
