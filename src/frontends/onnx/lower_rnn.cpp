// Recurrent operators: RNN, GRU and LSTM (opsets 7-14), unrolled over their static sequence length.
//
// TOSA 1.0 has no recurrent operator. With the sequence length known at compile time, each step is
// a handful of TOSA operators: the input projections of every step are one MATMUL up front
// ([S*B, I] x [I, G*H]), then per step a MATMUL of the hidden state by R^T, the gate activations and
// the state update, in the order the ONNX specification writes them (gates i, o, f, c for LSTM and
// z, r, h for GRU). Directions forward, reverse and bidirectional; initial states; LSTM peepholes and
// input_forget; GRU linear_before_reset; clip; every activation ONNX lists for these operators but
// the ones TOSA cannot express; layout 0 and 1. sequence_lens must be a constant: steps past a
// batch entry's length leave its state unchanged and write zeros to Y, as the specification says
// (forward direction; in reverse, every length must be the full sequence).
#include <cmath>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "frontends/onnx/importer.h"
#include "frontends/onnx/lower.h"

namespace weft::onnxfe {
namespace {

enum class Cell { kRnn, kGru, kLstm };

// One activation function as ONNX names it, with its alpha and beta.
struct Activation {
  std::string name;
  float alpha = 0, beta = 0;
};

TVal splat(Importer& imp, const TVal& like, double v) { return imp.scalar(like.dtype(), v, like.rank()); }

TVal apply(Importer& imp, const Activation& a, const TVal& v) {
  const std::string& f = a.name;
  if (f == "Sigmoid") return imp.emit(Op::SIGMOID, {v});
  if (f == "Tanh") return imp.emit(Op::TANH, {v});
  if (f == "Relu") return imp.clamp(v, 0, INFINITY);
  if (f == "HardSigmoid") return imp.clamp(imp.add(imp.mul(v, splat(imp, v, a.alpha)), splat(imp, v, a.beta)), 0, 1);
  if (f == "LeakyRelu")
    return imp.emit(Op::SELECT, {imp.emit(Op::GREATER_EQUAL, {v, splat(imp, v, 0)}), v, imp.mul(v, splat(imp, v, a.alpha))});
  if (f == "ThresholdedRelu")
    return imp.emit(Op::SELECT, {imp.emit(Op::GREATER, {v, splat(imp, v, a.alpha)}), v, splat(imp, v, 0)});
  if (f == "Affine") return imp.add(imp.mul(v, splat(imp, v, a.alpha)), splat(imp, v, a.beta));
  if (f == "ScaledTanh") return imp.mul(imp.emit(Op::TANH, {imp.mul(v, splat(imp, v, a.beta))}), splat(imp, v, a.alpha));
  if (f == "Elu") {
    TVal neg = imp.mul(imp.sub(imp.emit(Op::EXP, {v}), splat(imp, v, 1)), splat(imp, v, a.alpha));
    return imp.emit(Op::SELECT, {imp.emit(Op::GREATER, {v, splat(imp, v, 0)}), v, neg});
  }
  if (f == "Softsign") return imp.mul(v, imp.emit(Op::RECIPROCAL, {imp.add(imp.emit(Op::ABS, {v}), splat(imp, v, 1))}));
  if (f == "Softplus") {
    TVal zero = imp.scalar(v.dtype(), 0, 1);
    TVal e = imp.emit(Op::EXP, {imp.emit(Op::NEGATE, {imp.emit(Op::ABS, {v}), zero, zero})});
    return imp.add(imp.clamp(v, 0, INFINITY), imp.emit(Op::LOG, {imp.add(e, splat(imp, v, 1))}));
  }
  imp.fail("activation '" + f + "' is not one of those ONNX defines for recurrent operators", ErrorCode::kInvalidArgument);
}

// [1, M, K] x [1, K, N] (rank-3 operands, as TOSA's MATMUL takes them).
TVal matmul(Importer& imp, const TVal& a, const TVal& b) {
  TVal zp = imp.scalar(a.dtype(), 0, 1);
  return imp.emit(Op::MATMUL, {a, b, zp, zp});
}

void recurrent(Importer& imp, Cell cell) {
  const char* what = cell == Cell::kLstm ? "LSTM" : cell == Cell::kGru ? "GRU" : "RNN";
  const int gates = cell == Cell::kLstm ? 4 : cell == Cell::kGru ? 3 : 1;
  const OVal& xo = imp.in(0);
  if (!is_float(xo.v.dtype())) imp.fail(std::string(what) + " needs a floating-point input", ErrorCode::kInvalidArgument);
  const DType dt = xo.v.dtype();
  if (xo.shape.size() != 3) imp.fail("X must be 3-D", ErrorCode::kInvalidArgument);
  const int64_t layout = imp.attr_int("layout", 0);
  if (layout != 0 && layout != 1) imp.fail("layout must be 0 or 1", ErrorCode::kInvalidArgument);
  TVal x = imp.plain(xo);
  if (layout == 1) x = imp.transpose(x, {1, 0, 2});  // [B, S, I] -> [S, B, I]
  const int64_t S = x.shape()[0], B = x.shape()[1], I = x.shape()[2];
  const std::string direction = imp.attr_str("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    imp.fail("direction '" + direction + "' is not one of forward, reverse, bidirectional", ErrorCode::kInvalidArgument);
  const int64_t dirs = direction == "bidirectional" ? 2 : 1;
  const int64_t H = imp.attr_int("hidden_size", 0);
  const OVal& wo = imp.in(1);
  const OVal& ro = imp.in(2);
  if (wo.shape != Shape{dirs, gates * H, I} || ro.shape != Shape{dirs, gates * H, H})
    imp.fail("W must be [" + std::to_string(dirs) + ", " + std::to_string(gates * H) + ", " + std::to_string(I) + "] and R [" +
                 std::to_string(dirs) + ", " + std::to_string(gates * H) + ", " + std::to_string(H) + "] (hidden_size " +
                 std::to_string(H) + "); got " + shape_str(wo.shape) + " and " + shape_str(ro.shape),
             ErrorCode::kInvalidArgument);
  TVal W = imp.plain(wo), R = imp.plain(ro);
  std::optional<TVal> Bias, H0, C0, P;
  if (imp.has_input(3)) Bias = imp.plain(imp.in(3));
  if (imp.has_input(5)) H0 = imp.plain(imp.in(5));
  if (cell == Cell::kLstm && imp.has_input(6)) C0 = imp.plain(imp.in(6));
  if (cell == Cell::kLstm && imp.has_input(7)) P = imp.plain(imp.in(7));
  if (H0 && imp.in(5).shape != Shape{dirs, B, H}) imp.fail("initial_h must be [num_directions, batch, hidden]", ErrorCode::kInvalidArgument);
  if (C0 && imp.in(6).shape != Shape{dirs, B, H}) imp.fail("initial_c must be [num_directions, batch, hidden]", ErrorCode::kInvalidArgument);
  if (layout == 1) {
    if (H0) H0 = imp.transpose(*H0, {1, 0, 2});  // given as [B, dirs, H]
    if (C0) C0 = imp.transpose(*C0, {1, 0, 2});
  }

  // Steps that count per batch entry (sequence_lens): a constant.
  std::vector<int64_t> lens(static_cast<size_t>(B), S);
  if (imp.has_input(4)) {
    lens = imp.const_ints(4, "sequence_lens");
    if (static_cast<int64_t>(lens.size()) != B) imp.fail("sequence_lens must have one value per batch entry", ErrorCode::kInvalidArgument);
    for (int64_t l : lens)
      if (l < 0 || l > S) imp.fail("sequence_lens value " + std::to_string(l) + " is outside [0, " + std::to_string(S) + "]", ErrorCode::kInvalidArgument);
  }
  bool full = true;
  for (int64_t l : lens) full &= l == S;
  if (!full && direction != "forward")
    imp.fail("sequence_lens shorter than the sequence are supported in the forward direction only");

  // Activations: per direction, `per_dir` functions.
  const int per_dir = cell == Cell::kRnn ? 1 : cell == Cell::kGru ? 2 : 3;
  std::vector<Activation> acts;
  {
    std::vector<std::string> names;
    if (const auto* a = imp.attr("activations"))
      for (const auto& s : a->strings()) names.push_back(s);
    if (names.empty()) {
      if (cell == Cell::kRnn) names = {"Tanh"};
      else if (cell == Cell::kGru) names = {"Sigmoid", "Tanh"};
      else names = {"Sigmoid", "Tanh", "Tanh"};
      if (dirs == 2) {
        const std::vector<std::string> one = names;
        names.insert(names.end(), one.begin(), one.end());
      }
    }
    if (static_cast<int64_t>(names.size()) != per_dir * dirs)
      imp.fail("activations lists " + std::to_string(names.size()) + " functions; " + what + " takes " +
                   std::to_string(per_dir) + " per direction",
               ErrorCode::kInvalidArgument);
    std::vector<float> alpha = imp.attr_floats("activation_alpha").value_or(std::vector<float>{});
    std::vector<float> beta = imp.attr_floats("activation_beta").value_or(std::vector<float>{});
    size_t ia = 0, ib = 0;
    for (const std::string& n : names) {
      Activation a{n};
      // Defaults as the ONNX operator of the same name; listed values are consumed in order by
      // the functions that take them.
      const bool takes_alpha = n == "LeakyRelu" || n == "ThresholdedRelu" || n == "Affine" || n == "ScaledTanh" ||
                               n == "HardSigmoid" || n == "Elu";
      const bool takes_beta = n == "Affine" || n == "ScaledTanh" || n == "HardSigmoid";
      a.alpha = n == "LeakyRelu" ? 0.01f : n == "HardSigmoid" ? 0.2f : 1.0f;
      a.beta = n == "HardSigmoid" ? 0.5f : 0.0f;
      if (takes_alpha && ia < alpha.size()) a.alpha = alpha[ia++];
      if (takes_beta && ib < beta.size()) a.beta = beta[ib++];
      acts.push_back(a);
    }
  }
  const bool has_clip = imp.attr("clip") != nullptr;
  const double clip = imp.attr_float("clip", 0);
  auto clipped = [&](const TVal& v) { return has_clip ? imp.clamp(v, -clip, clip) : v; };
  const bool input_forget = imp.attr_int("input_forget", 0) != 0;
  const bool linear_before_reset = imp.attr_int("linear_before_reset", 0) != 0;

  // All steps' input projections at once: [1, S*B, I] x [1, I, G*H] per direction.
  TVal xs = imp.reshape(x, {1, S * B, I});
  std::vector<TVal> y_steps(static_cast<size_t>(S * dirs));  // [1, 1, B, H] per (t, d)
  std::vector<TVal> h_last, c_last;
  for (int64_t d = 0; d < dirs; ++d) {
    const bool reverse = direction == "reverse" || d == 1;
    TVal Wd = imp.reshape(imp.slice(W, {d, 0, 0}, {1, gates * H, I}), {1, gates * H, I});
    TVal Rd = imp.reshape(imp.slice(R, {d, 0, 0}, {1, gates * H, H}), {1, gates * H, H});
    TVal Wt = imp.transpose(Wd, {0, 2, 1});  // [1, I, G*H]
    TVal Rt = imp.transpose(Rd, {0, 2, 1});  // [1, H, G*H]
    TVal xw = matmul(imp, xs, Wt);           // [1, S*B, G*H]
    std::optional<TVal> wb, rb;
    if (Bias) {
      wb = imp.reshape(imp.slice(*Bias, {d, 0}, {1, gates * H}), {1, 1, gates * H});
      rb = imp.reshape(imp.slice(*Bias, {d, gates * H}, {1, gates * H}), {1, 1, gates * H});
      // GRU's h gate with linear_before_reset adds Rbh inside the reset product: keep it apart.
      if (cell == Cell::kGru && linear_before_reset) {
        // Rbz and Rbr join the input side; Rbh stays for the reset product (rbh below).
        std::vector<double> keep(static_cast<size_t>(gates * H), 1.0);
        for (int64_t k = 2 * H; k < gates * H; ++k) keep[static_cast<size_t>(k)] = 0.0;
        TVal rb_zr = imp.mul(*rb, imp.const_tensor(Tensor::from_doubles({dt, {1, 1, gates * H}}, keep)));
        xw = imp.add(xw, imp.add(*wb, rb_zr));
      } else {
        xw = imp.add(xw, imp.add(*wb, *rb));
      }
    }
    auto gate = [&](const TVal& v, int k) {  // gate k of [1, B, G*H] -> [1, B, H]
      return imp.slice(v, {0, 0, k * H}, {1, B, H});
    };
    const Activation* f = &acts[static_cast<size_t>(d * per_dir)];
    TVal h = H0 ? imp.reshape(imp.slice(*H0, {d, 0, 0}, {1, B, H}), {1, B, H}) : imp.const_tensor(Tensor::zeros({dt, {1, B, H}}));
    TVal c = C0 ? imp.reshape(imp.slice(*C0, {d, 0, 0}, {1, B, H}), {1, B, H}) : imp.const_tensor(Tensor::zeros({dt, {1, B, H}}));
    std::optional<TVal> pi, po, pf;
    if (P) {
      pi = imp.reshape(imp.slice(*P, {d, 0}, {1, H}), {1, 1, H});
      po = imp.reshape(imp.slice(*P, {d, H}, {1, H}), {1, 1, H});
      pf = imp.reshape(imp.slice(*P, {d, 2 * H}, {1, H}), {1, 1, H});
    }
    std::optional<TVal> rbh;
    if (cell == Cell::kGru && linear_before_reset && rb) rbh = imp.slice(*rb, {0, 0, 2 * H}, {1, 1, H});
    for (int64_t step = 0; step < S; ++step) {
      const int64_t t = reverse ? S - 1 - step : step;
      TVal xt = imp.slice(xw, {0, t * B, 0}, {1, B, gates * H});
      TVal hr = matmul(imp, h, Rt);  // [1, B, G*H]
      TVal h_new, c_new;
      if (cell == Cell::kRnn) {
        h_new = apply(imp, f[0], clipped(imp.add(xt, hr)));
      } else if (cell == Cell::kLstm) {
        TVal pre = imp.add(xt, hr);
        TVal pi_ = gate(pre, 0), po_ = gate(pre, 1), pf_ = gate(pre, 2), pc_ = gate(pre, 3);
        if (pi) pi_ = imp.add(pi_, imp.mul(*pi, c));
        if (pf) pf_ = imp.add(pf_, imp.mul(*pf, c));
        TVal it = apply(imp, f[0], clipped(pi_));
        TVal ft = input_forget ? imp.sub(splat(imp, it, 1), it) : apply(imp, f[0], clipped(pf_));
        TVal ct = apply(imp, f[1], clipped(pc_));
        c_new = imp.add(imp.mul(ft, c), imp.mul(it, ct));
        if (po) po_ = imp.add(po_, imp.mul(*po, c_new));
        TVal ot = apply(imp, f[0], clipped(po_));
        h_new = imp.mul(ot, apply(imp, f[2], c_new));
      } else {
        TVal zt = apply(imp, f[0], clipped(imp.add(gate(xt, 0), gate(hr, 0))));
        TVal rt = apply(imp, f[0], clipped(imp.add(gate(xt, 1), gate(hr, 1))));
        TVal hh;
        if (linear_before_reset) {
          TVal rh = gate(hr, 2);
          if (rbh) rh = imp.add(rh, *rbh);
          hh = imp.add(gate(xt, 2), imp.mul(rt, rh));
        } else {
          TVal Rh = imp.slice(Rt, {0, 0, 2 * H}, {1, H, H});
          hh = imp.add(gate(xt, 2), matmul(imp, imp.mul(rt, h), Rh));
        }
        TVal ht = apply(imp, f[1], clipped(hh));
        h_new = imp.add(imp.mul(imp.sub(splat(imp, zt, 1), zt), ht), imp.mul(zt, h));
      }
      TVal y = h_new;
      if (!full) {
        // Batch entries whose sequence has ended keep their state and output zeros.
        std::vector<int64_t> live(static_cast<size_t>(B));
        for (int64_t b = 0; b < B; ++b) live[static_cast<size_t>(b)] = t < lens[static_cast<size_t>(b)] ? 1 : 0;
        Tensor m = Tensor::zeros({DType::kBool, {1, B, 1}});
        for (int64_t b = 0; b < B; ++b) m.mutable_bytes()[b] = static_cast<uint8_t>(live[static_cast<size_t>(b)]);
        TVal mask = imp.const_tensor(m);
        y = imp.emit(Op::SELECT, {mask, h_new, imp.const_tensor(Tensor::zeros({dt, {1, B, H}}))});
        h_new = imp.emit(Op::SELECT, {mask, h_new, h});
        if (cell == Cell::kLstm) c_new = imp.emit(Op::SELECT, {mask, c_new, c});
      }
      h = h_new;
      if (cell == Cell::kLstm) c = c_new;
      y_steps[static_cast<size_t>(t * dirs + d)] = imp.reshape(y, {1, 1, B, H});
    }
    h_last.push_back(h);
    c_last.push_back(c);
  }

  // Y [S, dirs, B, H] (layout 0) or [B, S, dirs, H] (layout 1); Y_h, Y_c [dirs, B, H] or [B, dirs, H].
  if (imp.wants_output(0)) {
    std::vector<TVal> rows;
    for (int64_t t = 0; t < S; ++t) {
      std::vector<TVal> ds(y_steps.begin() + t * dirs, y_steps.begin() + (t + 1) * dirs);
      rows.push_back(ds.size() == 1 ? ds[0] : imp.emit(Op::CONCAT, ds, {{"axis", int64_t{1}}}));
    }
    TVal y = rows.size() == 1 ? rows[0] : imp.emit(Op::CONCAT, rows, {{"axis", int64_t{0}}});
    if (layout == 1) y = imp.transpose(y, {2, 0, 1, 3});
    imp.set_out(0, y, {}, xo.onnx_type);
  }
  auto states = [&](const std::vector<TVal>& v) {
    TVal s = v.size() == 1 ? v[0] : imp.emit(Op::CONCAT, v, {{"axis", int64_t{0}}});  // [dirs, B, H]
    return layout == 1 ? imp.transpose(s, {1, 0, 2}) : s;
  };
  if (imp.wants_output(1)) imp.set_out(1, states(h_last), {}, xo.onnx_type);
  if (cell == Cell::kLstm && imp.wants_output(2)) imp.set_out(2, states(c_last), {}, xo.onnx_type);
}

}  // namespace

void lower_RNN(Importer& imp, const onnx::NodeProto&) { recurrent(imp, Cell::kRnn); }
void lower_GRU(Importer& imp, const onnx::NodeProto&) { recurrent(imp, Cell::kGru); }
void lower_LSTM(Importer& imp, const onnx::NodeProto&) { recurrent(imp, Cell::kLstm); }

}  // namespace weft::onnxfe
