// The element-wise operators' codes (vkb's kEwOps in ops_elementwise.cpp) and their float
// arithmetic, shared by ew.comp (one operator per dispatch) and ew_loop.comp (a group of them in one
// pass), so that a value computed either way is the same. Floats compute in fp32; the caller rounds.

// Operator codes (vkb::EwOp in ops_elementwise.cpp).
#define OP_ABS 1
#define OP_BITWISE_NOT 2
#define OP_CEIL 3
#define OP_CLZ 4
#define OP_COS 5
#define OP_EXP 6
#define OP_FLOOR 7
#define OP_LOG 8
#define OP_LOGICAL_NOT 9
#define OP_NEGATE 10
#define OP_RECIPROCAL 11
#define OP_RSQRT 12
#define OP_SIN 13
#define OP_ERF 14
#define OP_SIGMOID 15
#define OP_TANH 16
#define OP_CLAMP 17
#define OP_CAST 18
#define OP_ADD 30
#define OP_SUB 31
#define OP_MUL 32
#define OP_INTDIV 33
#define OP_ARITHMETIC_RIGHT_SHIFT 34
#define OP_BITWISE_AND 35
#define OP_BITWISE_OR 36
#define OP_BITWISE_XOR 37
#define OP_LOGICAL_AND 38
#define OP_LOGICAL_OR 39
#define OP_LOGICAL_XOR 40
#define OP_LOGICAL_LEFT_SHIFT 41
#define OP_LOGICAL_RIGHT_SHIFT 42
#define OP_MAXIMUM 43
#define OP_MINIMUM 44
#define OP_POW 45
#define OP_EQUAL 46
#define OP_GREATER 47
#define OP_GREATER_EQUAL 48
#define OP_SELECT 60

// erf(x): below |x| = 0.5 its Maclaurin series (relative error < 1e-10), since 1 - erfc(x) there
// cancels to a few correct bits; above, 1 - erfc(x) with the complementary-error-function rational
// approximation of Numerical Recipes (erfc's fractional error < 1.2e-7). Checked against the TOSA
// conformance suite's ERF tests (5 ULP).
float erf_f(float x) {
  float z = abs(x);
  if (z < 0.5) {
    float x2 = x * x;
    // 2/sqrt(pi) * x * sum_n (-x^2)^n / (n! (2n + 1)), n = 0..7
    float s = 1.0 / 15.0;
    s = 1.0 / 13.0 - x2 * s / 7.0;
    s = 1.0 / 11.0 - x2 * s / 6.0;
    s = 1.0 / 9.0 - x2 * s / 5.0;
    s = 1.0 / 7.0 - x2 * s / 4.0;
    s = 1.0 / 5.0 - x2 * s / 3.0;
    s = 1.0 / 3.0 - x2 * s / 2.0;
    s = 1.0 - x2 * s;
    return 1.1283791670955126 * x * s;
  }
  float t = 1.0 / (1.0 + 0.5 * z);
  float r = t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
            t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 +
            t * (-0.82215223 + t * 0.17087277)))))))));
  return x >= 0.0 ? 1.0 - r : r - 1.0;
}

// tanh(x) = (1 - e^-2|x|) / (1 + e^-2|x|) with the sign of x: no inf/inf for large |x|. For
// 2|x| < 1 the numerator is -expm1(-2|x|) by its series, as 1 - e^-2|x| would cancel there.
float tanh_f(float x) {
  float q = 2.0 * abs(x);
  float e = exp(-q), num;
  if (q < 1.0) {
    // -expm1(-q) = q - q^2/2! + q^3/3! - ... (12 terms; the next is below 1e-9 of the sum)
    float term = q, sum = q;
    for (int k = 2; k <= 12; ++k) {
      term *= -q / float(k);
      sum += term;
    }
    num = sum;
  } else {
    num = 1.0 - e;
  }
  float r = num / (1.0 + e);
  return x < 0.0 ? -r : r;
}

float fmax_s(float x, float y, bool propagate) {
  if (isnan(x) || isnan(y)) return propagate ? uintBitsToFloat(0x7fc00000u) : (isnan(x) ? y : x);
  return x >= y ? x : y;
}
float fmin_s(float x, float y, bool propagate) {
  if (isnan(x) || isnan(y)) return propagate ? uintBitsToFloat(0x7fc00000u) : (isnan(x) ? y : x);
  return x < y ? x : y;
}

// A float unary operator (OP_ABS .. OP_CLAMP): CLAMP's bounds are float bits in p0 / p1 and p2 says
// whether a NaN propagates.
float ew_unary_f(int op, float x, int p0, int p1, int p2) {
  switch (op) {
    case OP_ABS: return abs(x);
    case OP_CEIL: return ceil(x);
    case OP_FLOOR: return floor(x);
    case OP_COS: return cos(x);
    case OP_SIN: return sin(x);
    case OP_EXP: return exp(x);
    case OP_LOG: return log(x);
    case OP_NEGATE: return -x;
    case OP_RECIPROCAL: return 1.0 / x;
    case OP_RSQRT: return inversesqrt(x);
    case OP_ERF: return erf_f(x);
    case OP_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case OP_TANH: return tanh_f(x);
    case OP_CLAMP: return fmin_s(fmax_s(x, intBitsToFloat(p0), p2 != 0), intBitsToFloat(p1), p2 != 0);
    default: return x;
  }
}

// A float binary operator with a float result (ADD, SUB, MUL, MAXIMUM, MINIMUM, POW): p0 says
// whether MAXIMUM / MINIMUM propagate a NaN.
float ew_binary_f(int op, float x, float z, int p0) {
  // precise: in ew_loop.comp a product must not fuse with the next step's sum
  precise float y;
  switch (op) {
    case OP_ADD: y = x + z; return y;
    case OP_SUB: y = x - z; return y;
    case OP_MUL: y = x * z; return y;
    case OP_MAXIMUM: return fmax_s(x, z, p0 != 0);
    case OP_MINIMUM: return fmin_s(x, z, p0 != 0);
    case OP_POW: return pow(x, z);
    default: return x;
  }
}
