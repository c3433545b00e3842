#version 450
// Direct convolution: one invocation per output element, taps in the reference's order, taps
// outside the input skipped (exactly the reference's loop, also for inf/NaN weights). Runs CONV2D,
// CONV3D, TRANSPOSE_CONV2D (MODE 1) and DEPTHWISE_CONV2D (MODE 2; the dedicated depthwise kernel:
// neighbouring invocations read neighbouring channels of the input and weights) for every type row:
//   ACC 0: fp32 accumulation; 1: fp16 accumulation (each product and sum rounded to fp16);
//   2: int32; 3: int64 (int48 results): integer operands minus their zero points.
// The output is out = round(round(acc) + bias) (integers: acc + bias), then the fused post-ops
// (tc_epilogue.glsl, float results only). A PAD folded in front reads its fill value where the
// virtual input (VD, VH, VW) lies outside the source tensor (SH, SW at offset PT, PL).
//
// GROUPS > 1 (MODE 0, CONV2D): a grouped convolution, the partitioner's Region::kGroupedConv (TOSA
// has no group attribute: SLICEs of the channels, a CONV2D per group, a CONCAT). Output channel oc
// belongs to group g = oc / (OC / GROUPS) and sums input channels [g * ICG, (g + 1) * ICG) of the
// whole source (IC = GROUPS * ICG channels). The groups' weights come stacked and reordered to
// [KD][KH][KW][ICG][OC] (neighbouring invocations, neighbouring output channels, read neighbouring
// weights), the biases stacked [OC].
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 64) in;

layout(constant_id = 0) const int T_IN = DT_F32;
layout(constant_id = 1) const int T_W = DT_F32;
layout(constant_id = 2) const int T_BIAS = DT_F32;
layout(constant_id = 3) const int T_RES = DT_F32;
layout(constant_id = 4) const int T_OUT = DT_F32;
layout(constant_id = 5) const int ACC = 0;
layout(constant_id = 6) const int MODE = 0;  // 0 convolution, 1 transposed, 2 depthwise
layout(constant_id = 7) const int IC = 1;    // input channels
layout(constant_id = 8) const int OC = 1;    // output channels (depthwise: IC * MULT)
layout(constant_id = 9) const int MULT = 1;  // depthwise channel multiplier
layout(constant_id = 10) const int KD = 1;
layout(constant_id = 11) const int KH = 1;
layout(constant_id = 12) const int KW = 1;
layout(constant_id = 13) const int OD = 1;
layout(constant_id = 14) const int OH = 1;
layout(constant_id = 15) const int OW = 1;
layout(constant_id = 16) const int VD = 1;
layout(constant_id = 17) const int VH = 1;
layout(constant_id = 18) const int VW = 1;
layout(constant_id = 19) const int SH = 1;
layout(constant_id = 20) const int SW = 1;
layout(constant_id = 21) const int PT = 0;
layout(constant_id = 22) const int PL = 0;
layout(constant_id = 23) const int STR_D = 1;
layout(constant_id = 24) const int STR_Y = 1;
layout(constant_id = 25) const int STR_X = 1;
layout(constant_id = 26) const int DIL_D = 1;
layout(constant_id = 27) const int DIL_Y = 1;
layout(constant_id = 28) const int DIL_X = 1;
layout(constant_id = 29) const int PAD_D = 0;  // leading padding (transposed: out_pad top / left)
layout(constant_id = 30) const int PAD_Y = 0;
layout(constant_id = 31) const int PAD_X = 0;
layout(constant_id = 32) const int FILL = 0;  // folded PAD value (float bits for float inputs)
layout(constant_id = 33) const int IZP = 0;
layout(constant_id = 34) const int WZP = 0;
layout(constant_id = 35) const int BIAS_BCAST = 0;
layout(constant_id = 36) const int TOTAL = 0;  // invocations: output elements (XB = 1)
layout(constant_id = 37) const int GROUPS = 1;  // MODE 0: groups of a grouped convolution
// MODE 2 with float accumulation, stride 1 and dilation 1 along x: XB > 1 consecutive outputs along
// x per invocation (TOTAL then counts invocations: N * OD * OH * ceil(OW / XB) * OC). Each input row
// segment is loaded once for all XB outputs and every weight once per tap, instead of once per
// output and tap (ConvNeXt's 7 x 7 depthwise convolutions); each output still sums its taps in the
// reference's order.
layout(constant_id = 38) const int XB = 1;

TENSOR_RO(0, x, T_IN)
TENSOR_RO(1, w, T_W)
TENSOR_RO(2, bias, T_BIAS)
TENSOR_RO(3, res, T_RES)
TENSOR(4, outp, T_OUT)

#include "tc_epilogue.glsl"

void depthwise_rows() {
  const uint o = flat_id();
  if (o >= uint(TOTAL)) return;
  const int OWB = (OW + XB - 1) / XB;
  const int oc = int(o % uint(OC));
  int t = int(o / uint(OC));
  const int ox0 = (t % OWB) * XB;
  t /= OWB;
  const int oy = t % OH;
  t /= OH;
  const int od = t % OD, n = t / OD;
  const int c0 = oc / MULT;
  precise float acc[XB];
  [[unroll]] for (int j = 0; j < XB; ++j) acc[j] = 0.0;
  for (int kd = 0; kd < KD; ++kd) {
    const int d = od * STR_D - PAD_D + kd * DIL_D;
    if (d < 0 || d >= VD) continue;
    for (int ky = 0; ky < KH; ++ky) {
      const int y = oy * STR_Y - PAD_Y + ky * DIL_Y;
      if (y < 0 || y >= VH) continue;
      const int sy = y - PT;
      // The row segment every output of this invocation reads: columns ox0 - PAD_X + i.
      float xv[XB + KW - 1];
      bool ok[XB + KW - 1];
      [[unroll]] for (int i = 0; i < XB + KW - 1; ++i) {
        const int xx = ox0 - PAD_X + i, sx = xx - PL;
        ok[i] = xx >= 0 && xx < VW;
        const bool in_source = ok[i] && sy >= 0 && sy < SH && sx >= 0 && sx < SW;
        xv[i] = in_source ? x_ldf(uint((((n * VD + d) * SH + sy) * SW + sx) * IC + c0)) : intBitsToFloat(FILL);
      }
      const int wb = oc + ((kd * KH + ky) * KW) * OC;
      [[unroll]] for (int kx = 0; kx < KW; ++kx) {
        const float wv = w_ldf(uint(wb + kx * OC));
        [[unroll]] for (int j = 0; j < XB; ++j) {
          if (!ok[j + kx]) continue;  // a skipped tap
          if (ACC == 1)
            acc[j] = r16(acc[j] + r16(xv[j + kx] * wv));
          else
            acc[j] = acc[j] + xv[j + kx] * wv;
        }
      }
    }
  }
  const float bb = bias_ldf(BIAS_BCAST != 0 ? 0u : uint(oc));
  [[unroll]] for (int j = 0; j < XB; ++j) {
    if (ox0 + j >= OW) break;
    const uint oj = uint((((n * OD + od) * OH + oy) * OW + ox0 + j) * OC + oc);
    const float v = T_OUT == DT_F16 ? r16(r16(acc[j]) + bb) : acc[j] + bb;
    outp_stf(oj, epilogue(v, oj, uint(oc)));
  }
}

void main() {
  if (MODE == 2 && XB > 1) {
    depthwise_rows();
    return;
  }
  const uint o = flat_id();
  if (o >= uint(TOTAL)) return;
  const int oc = int(o % uint(OC));
  int t = int(o / uint(OC));
  const int ox = t % OW;
  t /= OW;
  const int oy = t % OH;
  t /= OH;
  const int od = t % OD, n = t / OD;

  const bool is_float = ACC <= 1;
  precise float facc = 0.0;  // no fused multiply-add: the reference rounds the product
  int iacc = 0;
  int64_t lacc = 0;

  // Input channels summed and where this output's weights start.
  const bool grouped = MODE == 0 && GROUPS > 1;
  const int ICG = IC / GROUPS, OCG = OC / GROUPS;  // channels per group (IC, OC when not grouped)
  const int channels = MODE == 2 ? 1 : ICG;
  const int c0 = MODE == 2 ? oc / MULT : grouped ? (oc / OCG) * ICG : 0;
  const int wbase = MODE == 2 || grouped ? oc : oc * KD * KH * KW * IC;
  const int wtap = MODE == 2 ? OC : grouped ? ICG * OC : IC;  // weight elements per tap
  const int wch = MODE == 2 ? 0 : grouped ? OC : 1;           // weight elements per input channel

  for (int kd = 0; kd < KD; ++kd) {
    for (int ky = 0; ky < KH; ++ky) {
      for (int kx = 0; kx < KW; ++kx) {
        int d, y, xx;
        if (MODE == 1) {
          // TRANSPOSE_CONV2D: output oy receives input y when oy = y * stride + out_pad_top + ky.
          d = 0;
          const int yy = oy - PAD_Y - ky, xs = ox - PAD_X - kx;
          if (yy < 0 || xs < 0 || yy % STR_Y != 0 || xs % STR_X != 0) continue;
          y = yy / STR_Y;
          xx = xs / STR_X;
        } else {
          d = od * STR_D - PAD_D + kd * DIL_D;
          y = oy * STR_Y - PAD_Y + ky * DIL_Y;
          xx = ox * STR_X - PAD_X + kx * DIL_X;
        }
        if (d < 0 || d >= VD || y < 0 || y >= VH || xx < 0 || xx >= VW) continue;  // skipped tap
        const int sy = y - PT, sx = xx - PL;
        const bool in_source = sy >= 0 && sy < SH && sx >= 0 && sx < SW;
        const int xbase = (((n * VD + d) * SH + sy) * SW + sx) * IC + c0;
        const int wb = wbase + ((kd * KH + ky) * KW + kx) * wtap;
        for (int c = 0; c < channels; ++c) {
          const uint wi = uint(wb + c * wch);
          if (is_float) {
            const float xv = in_source ? x_ldf(uint(xbase + c)) : intBitsToFloat(FILL);
            const float wv = w_ldf(wi);
            if (ACC == 1)
              facc = r16(facc + r16(xv * wv));
            else
              facc = facc + xv * wv;
          } else {
            const int xv = (in_source ? x_ldi(uint(xbase + c)) : FILL) - IZP;
            const int wv = w_ldi(wi) - WZP;
            if (ACC == 2)
              iacc += xv * wv;
            else
              lacc += int64_t(xv * wv);
          }
        }
      }
    }
  }

  const uint bi = BIAS_BCAST != 0 ? 0u : uint(oc);
  if (is_float) {
    // out = static_cast<out_t>(acc); out = apply_add_s<out_t>(out, bias)
    float v = T_OUT == DT_F16 ? r16(r16(facc) + bias_ldf(bi)) : facc + bias_ldf(bi);
    outp_stf(o, epilogue(v, o, uint(oc)));
  } else {
    outp_stl(o, (ACC == 2 ? int64_t(iacc) : lacc) + bias_ldl(bi));
  }
}
