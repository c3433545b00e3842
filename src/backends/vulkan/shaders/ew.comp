#version 450
// The element-wise operators: unary, binary and ternary operators, comparisons, CLAMP, the float
// activations and CAST, with TOSA's broadcasting (rank <= 6, dimensions padded in front with 1s).
// The operator, the element types, the shape, the operands' strides (0 along broadcast dimensions)
// and the operator's parameters are specialization constants; ops_elementwise.cpp fills them.
// Floats compute in fp32 and round once on store; integers compute in 32 bits (64 for MUL with a
// shift) and wrap to the output type on store; TOSA's REQUIRE conditions on the data (overflow,
// division by zero, shift range) are not checked here: the result is unpredictable in TOSA.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x = 64) in;

#include "ew_ops.glsl"

layout(constant_id = 0) const int OP = 0;
layout(constant_id = 1) const int TA = DT_F32;
layout(constant_id = 2) const int TB = DT_F32;
layout(constant_id = 3) const int TC = DT_F32;
layout(constant_id = 4) const int TO = DT_F32;
layout(constant_id = 5) const int N = 1;
layout(constant_id = 6) const int FLAT = 1;  // every operand has the output's shape: no index math
layout(constant_id = 7) const int D0 = 1;
layout(constant_id = 8) const int D1 = 1;
layout(constant_id = 9) const int D2 = 1;
layout(constant_id = 10) const int D3 = 1;
layout(constant_id = 11) const int D4 = 1;
layout(constant_id = 12) const int D5 = 1;
layout(constant_id = 13) const int SA0 = 0;
layout(constant_id = 14) const int SA1 = 0;
layout(constant_id = 15) const int SA2 = 0;
layout(constant_id = 16) const int SA3 = 0;
layout(constant_id = 17) const int SA4 = 0;
layout(constant_id = 18) const int SA5 = 0;
layout(constant_id = 19) const int SB0 = 0;
layout(constant_id = 20) const int SB1 = 0;
layout(constant_id = 21) const int SB2 = 0;
layout(constant_id = 22) const int SB3 = 0;
layout(constant_id = 23) const int SB4 = 0;
layout(constant_id = 24) const int SB5 = 0;
layout(constant_id = 25) const int SC0 = 0;
layout(constant_id = 26) const int SC1 = 0;
layout(constant_id = 27) const int SC2 = 0;
layout(constant_id = 28) const int SC3 = 0;
layout(constant_id = 29) const int SC4 = 0;
layout(constant_id = 30) const int SC5 = 0;
// Parameters: CLAMP min/max (float bits for floats) and nan propagation; MUL shift; NEGATE zero
// points; ARITHMETIC_RIGHT_SHIFT round; MAXIMUM/MINIMUM nan propagation; CAST output range.
layout(constant_id = 31) const int P0 = 0;
layout(constant_id = 32) const int P1 = 0;
layout(constant_id = 33) const int P2 = 0;
// Width in bits of the operands' integer type (shifts, BITWISE_NOT wrap on store).
layout(constant_id = 34) const int BITS = 32;

TENSOR_RO(0, a, TA)
TENSOR_RO(1, b, TB)
TENSOR_RO(2, c, TC)
// The output is always binding 3; operands a unary or binary operator lacks are bound to `a` again
// (every binding a shader declares must be in the pipeline layout).
TENSOR(3, o, TO)
#define ostf o_stf
#define osti o_sti

bool is_float_t(int t) { return t == DT_F32 || t == DT_F16; }

// The integer value zero-extended from the operand type's width.
uint zext(int v) { return BITS >= 32 ? uint(v) : (uint(v) & ((1u << BITS) - 1u)); }

// Raw element copy (SELECT copies stored bits, so NaN payloads and -0 survive).
void copy_from_b(uint i, uint j) {
  if (TO == DT_F32 || TO == DT_I32) o_i32[i] = b_i32[j];
  else if (TO == DT_F16 || TO == DT_I16) o_i16[i] = b_i16[j];
  else if (TO == DT_I48) o_i64[i] = b_i64[j];
  else o_i8[i] = b_i8[j];
}
void copy_from_c(uint i, uint j) {
  if (TO == DT_F32 || TO == DT_I32) o_i32[i] = c_i32[j];
  else if (TO == DT_F16 || TO == DT_I16) o_i16[i] = c_i16[j];
  else if (TO == DT_I48) o_i64[i] = c_i64[j];
  else o_i8[i] = c_i8[j];
}

void main() {
  uint i = flat_id();
  if (i >= uint(N)) return;
  uint ia = i, ib = i, ic = i;
  if (FLAT == 0) {
    uint r = i;
    uint c5 = r % uint(D5); r /= uint(D5);
    uint c4 = r % uint(D4); r /= uint(D4);
    uint c3 = r % uint(D3); r /= uint(D3);
    uint c2 = r % uint(D2); r /= uint(D2);
    uint c1 = r % uint(D1); r /= uint(D1);
    uint c0 = r;
    ia = c0 * uint(SA0) + c1 * uint(SA1) + c2 * uint(SA2) + c3 * uint(SA3) + c4 * uint(SA4) + c5 * uint(SA5);
    ib = c0 * uint(SB0) + c1 * uint(SB1) + c2 * uint(SB2) + c3 * uint(SB3) + c4 * uint(SB4) + c5 * uint(SB5);
    ic = c0 * uint(SC0) + c1 * uint(SC1) + c2 * uint(SC2) + c3 * uint(SC3) + c4 * uint(SC4) + c5 * uint(SC5);
  }

  if (OP == OP_SELECT) {
    if (a_ldi(ia) != 0) copy_from_b(i, ib); else copy_from_c(i, ic);
    return;
  }

  if (OP == OP_CAST) {
    if (TO == DT_BOOL) {
      osti(i, is_float_t(TA) ? int(a_ldf(ia) != 0.0) : int(a_ldi(ia) != 0));
    } else if (is_float_t(TO)) {
      ostf(i, is_float_t(TA) ? a_ldf(ia) : float(a_ldi(ia)));
    } else if (is_float_t(TA)) {
      // Round to nearest even, saturate to the output type [P0, P1]; NaN gives 0 (as the reference).
      float v = a_ldf(ia);
      int r = 0;
      if (!isnan(v)) {
        float q = roundEven(v);
        r = q <= float(P0) ? P0 : (q >= float(P1) ? P1 : int(q));
      }
      osti(i, r);
    } else {
      osti(i, a_ldi(ia));  // wraps to the output width (sign extension when widening)
    }
    return;
  }

  if (OP < OP_ADD) {
    // Unary.
    if (is_float_t(TA)) {
      const float y = ew_unary_f(OP, a_ldf(ia), P0, P1, P2);
      ostf(i, y);
    } else {
      int x = a_ldi(ia), y = 0;
      switch (OP) {
        case OP_ABS: y = x < 0 ? -x : x; break;
        case OP_BITWISE_NOT: y = ~x; break;
        case OP_CLZ: y = x == 0 ? 32 : 31 - findMSB(uint(x)); break;
        case OP_LOGICAL_NOT: y = x != 0 ? 0 : 1; break;
        case OP_NEGATE: {
          // (0 - (x - input_zp)) + output_zp, saturated to the type's range [LO, HI] = BITS.
          int acc = -(x - P0) + P1;
          int hi = BITS >= 32 ? 0x7fffffff : (1 << (BITS - 1)) - 1;
          int lo = -hi - 1;
          y = acc < lo ? lo : (acc > hi ? hi : acc);
          break;
        }
        case OP_CLAMP: y = x < P0 ? P0 : (x > P1 ? P1 : x); break;
        default: y = x; break;
      }
      osti(i, y);
    }
    return;
  }

  // Binary.
  if (is_float_t(TA)) {
    float x = a_ldf(ia), z = b_ldf(ib);
    switch (OP) {
      case OP_EQUAL: osti(i, int(x == z)); break;
      case OP_GREATER: osti(i, int(x > z)); break;
      case OP_GREATER_EQUAL: osti(i, int(x >= z)); break;
      default: ostf(i, ew_binary_f(OP, x, z, P0)); break;
    }
    return;
  }
  int x = a_ldi(ia), z = b_ldi(ib);
  int y = 0;
  switch (OP) {
    case OP_ADD: y = x + z; break;
    case OP_SUB: y = x - z; break;
    case OP_MUL:
      if (P0 == 0) {
        y = x * z;  // the low 32 bits (i8/i16 products are exact)
      } else {
        // Rounded shift: (product >> shift) + bit shift-1 of the product.
        int64_t p = int64_t(x) * int64_t(z);
        y = int((p >> P0) + ((p >> (P0 - 1)) & int64_t(1)));
      }
      break;
    case OP_INTDIV: y = z == 0 ? 0 : x / z; break;  // truncates toward zero
    case OP_ARITHMETIC_RIGHT_SHIFT:
      y = x >> z;
      if (P0 != 0 && z > 0 && ((x >> (z - 1)) & 1) != 0) y += 1;
      break;
    case OP_BITWISE_AND: y = x & z; break;
    case OP_BITWISE_OR: y = x | z; break;
    case OP_BITWISE_XOR: y = x ^ z; break;
    case OP_LOGICAL_AND: y = int(x != 0 && z != 0); break;
    case OP_LOGICAL_OR: y = int(x != 0 || z != 0); break;
    case OP_LOGICAL_XOR: y = int((x != 0) != (z != 0)); break;
    case OP_LOGICAL_LEFT_SHIFT: y = int(zext(x) << uint(z)); break;
    case OP_LOGICAL_RIGHT_SHIFT: y = int(zext(x) >> uint(z)); break;
    case OP_MAXIMUM: y = max(x, z); break;
    case OP_MINIMUM: y = min(x, z); break;
    case OP_EQUAL: y = int(x == z); break;
    case OP_GREATER: y = int(x > z); break;
    case OP_GREATER_EQUAL: y = int(x >= z); break;
    default: break;
  }
  osti(i, y);
}
