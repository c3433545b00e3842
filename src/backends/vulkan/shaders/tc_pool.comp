#version 450
// MAX_POOL2D and AVG_POOL2D, one invocation per output element (channels fastest), every type row,
// exactly the reference's arithmetic:
//   - window taps outside the pooling's input are skipped (the pooling's own padding never counts);
//   - a PAD folded in front makes a virtual input (VH, VW) around the source (SH, SW at offset PT,
//     PL) whose border holds the PAD's value: those taps are real elements (they count);
//   - MAX, float: apply_max_s in tap order with nan_mode (PROPAGATE: any NaN gives NaN; IGNORE: NaNs
//     are skipped, all-NaN gives NaN), ties keep the earlier value (+0 / -0);
//   - AVG, float: sum in acc_t (fp16: rounded after each addition), divided by the count rounded to
//     the input type, quotient rounded to acc_t then to the output type;
//   - AVG, integer: int32 sum of (x - input_zp), times reciprocal_scale(count) by apply_scale_32,
//     plus output_zp, clamped to the type.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 64) in;

layout(constant_id = 0) const int T_IO = DT_F32;
layout(constant_id = 1) const int AVG = 0;         // 0: MAX_POOL2D, 1: AVG_POOL2D
layout(constant_id = 2) const int ACC16 = 0;       // AVG float: fp16 accumulation
layout(constant_id = 3) const int NAN_IGNORE = 0;  // MAX float: nan_mode IGNORE
layout(constant_id = 4) const int C = 1;
layout(constant_id = 5) const int OH = 1;
layout(constant_id = 6) const int OW = 1;
layout(constant_id = 7) const int VH = 1;
layout(constant_id = 8) const int VW = 1;
layout(constant_id = 9) const int SH = 1;
layout(constant_id = 10) const int SW = 1;
layout(constant_id = 11) const int PT = 0;
layout(constant_id = 12) const int PL = 0;
layout(constant_id = 13) const int KY = 1;
layout(constant_id = 14) const int KX = 1;
layout(constant_id = 15) const int STR_Y = 1;
layout(constant_id = 16) const int STR_X = 1;
layout(constant_id = 17) const int PAD_T = 0;  // the pooling's own leading padding
layout(constant_id = 18) const int PAD_L = 0;
layout(constant_id = 19) const int FILL = 0;  // folded PAD value (float bits for float types)
layout(constant_id = 20) const int IZP = 0;
layout(constant_id = 21) const int OZP = 0;
layout(constant_id = 22) const int TOTAL = 0;
layout(constant_id = 23) const int INT_MIN_T = -128;  // integer type range
layout(constant_id = 24) const int INT_MAX_T = 127;

TENSOR_RO(0, x, T_IO)
TENSOR(1, outp, T_IO)

float r16(float v) { return rte16(v); }

void main() {
  const uint o = flat_id();
  if (o >= uint(TOTAL)) return;
  const int c = int(o % uint(C));
  int t = int(o / uint(C));
  const int ox = t % OW;
  t /= OW;
  const int oy = t % OH;
  const int n = t / OH;
  const bool is_float = T_IO == DT_F32 || T_IO == DT_F16;
  const int y0 = oy * STR_Y - PAD_T, x0 = ox * STR_X - PAD_L;

  // MAX float starts at -inf (PROPAGATE) or NaN (IGNORE: the first non-NaN value replaces it).
  float facc = AVG != 0 ? 0.0 : (NAN_IGNORE != 0 ? uintBitsToFloat(0x7fc00000u) : uintBitsToFloat(0xff800000u));
  int iacc = AVG != 0 ? 0 : INT_MIN_T;
  int count = 0;
  for (int ky = 0; ky < KY; ++ky) {
    const int y = y0 + ky;
    if (y < 0 || y >= VH) continue;
    for (int kx = 0; kx < KX; ++kx) {
      const int xx = x0 + kx;
      if (xx < 0 || xx >= VW) continue;
      ++count;
      const int sy = y - PT, sx = xx - PL;
      const bool in_source = sy >= 0 && sy < SH && sx >= 0 && sx < SW;
      const uint i = uint(((n * SH + sy) * SW + sx) * C + c);
      if (is_float) {
        const float v = in_source ? x_ldf(i) : intBitsToFloat(FILL);
        if (AVG != 0) {
          facc = ACC16 != 0 ? r16(facc + v) : facc + v;
        } else if (isnan(facc) || isnan(v)) {
          if (NAN_IGNORE == 0) facc = uintBitsToFloat(0x7fc00000u);
          else if (isnan(facc)) facc = v;
        } else {
          facc = facc >= v ? facc : v;
        }
      } else {
        const int v = in_source ? x_ldi(i) : FILL;
        iacc = AVG != 0 ? iacc + (v - IZP) : max(iacc, v);
      }
    }
  }

  if (AVG == 0) {
    if (is_float) outp_stf(o, facc);
    else outp_sti(o, iacc);
    return;
  }
  if (is_float) {
    // output_val = acc / static_cast<in_out_t>(count), in acc_t, then as in_out_t.
    const float divisor = T_IO == DT_F16 ? r16(float(count)) : float(count);
    float q = facc / divisor;
    // One correction step gives the correctly rounded quotient; an infinite or NaN quotient stays
    // as it is (inf - inf in the step would make it NaN: found by the TOSA conformance suite).
    if (!isinf(q) && !isnan(q)) q = q + fma(-q, divisor, facc) / divisor;
    if (ACC16 != 0) q = r16(q);
    outp_stf(o, q);
  } else {
    // reciprocal_scale(count): k = 32 - clz(count - 1), multiplier = ((1 << 30) + 1) << k / count,
    // shift = 30 + k; apply_scale_32: (value * multiplier + (1 << (shift - 1))) >> shift.
    const int k = count > 1 ? findMSB(count - 1) + 1 : 0;
    const int64_t multiplier = ((int64_t(1) << 30) + 1) << k;
    const int64_t m = multiplier / int64_t(count);
    const int shift = 30 + k;
    int64_t v = (int64_t(iacc) * m + (int64_t(1) << (shift - 1))) >> shift;
    v += int64_t(OZP);
    v = clamp(v, int64_t(INT_MIN_T), int64_t(INT_MAX_T));
    outp_sti(o, int(v));
  }
}
