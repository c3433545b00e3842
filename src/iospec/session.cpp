// weft::StreamSession: runs a model the way a streaming target does, enforcing an IOSpec's sequences.
//
// State: the main sequence (the one with outputs; none when no sequence has outputs) is
//   idle -> inputs 1..k written in order -> (the k-th write runs the model) -> outputs read in order
//   -> idle;
// latched sequences (no outputs) may be written only while the main sequence is idle, their inputs
// in order; a latched sequence with several inputs, once started, must be completed before anything
// else. Latched inputs start at zero and keep their value until rewritten.
//
// Every check happens before anything changes, so a failed call (a sequence error, a wrong length
// or type, an unknown name, a failing run) leaves the session exactly as it was. In particular the
// write that completes the main sequence runs the model first and commits only when the run
// succeeds: when it throws, that write is undone (the inputs written before it in this round stay
// written) and the caller may retry it.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "weft/error.h"
#include "weft/iospec.h"
#include "weft/runtime.h"

namespace weft {

namespace {

[[noreturn]] void sequence_error(const std::string& what) {
  throw Error(ErrorCode::kRuntime, "sequence error: " + what);
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

}  // namespace

struct StreamSession::Impl {
  struct In {
    size_t model_index = 0;
    TensorType type;  // the model's input type
    int seq = -1;     // sequence index
    size_t pos = 0;   // position in the sequence's inputs
    Tensor value;     // the last value written (zeros until written), the model's type
    Tensor padded;    // the same, padded: padded_length elements, zeros after the data
  };
  struct Out {
    size_t model_index = 0;
    TensorType type;
    int seq = -1;
    size_t pos = 0;
  };

  std::shared_ptr<const Model> model;
  iospec::IoSpec spec;
  std::unique_ptr<Context> ctx;
  std::vector<In> ins;    // parallel to spec.inputs
  std::vector<Out> outs;  // parallel to spec.outputs
  std::vector<size_t> in_of_model;  // model input index -> ins index
  int main = -1;                    // the main sequence, -1 when none
  bool has_latched = false;         // a sequence without outputs exists

  // ---- State ----
  size_t written = 0;         // inputs of the main sequence written in this round
  bool pending = false;       // the outputs of the last run are being read
  std::vector<Tensor> results;  // in the main sequence's output order
  size_t next_out = 0;
  int latched = -1;           // a started, incomplete latched sequence
  size_t latched_pos = 0;     // its next input

  const iospec::Sequence& seq(int i) const { return spec.simple_sequences[static_cast<size_t>(i)]; }
  const iospec::Sequence& main_seq() const { return seq(main); }

  std::string input_list() const {
    std::string r;
    for (const auto& v : spec.inputs) r += (r.empty() ? "" : ", ") + v.key;
    return r.empty() ? "(none)" : r;
  }
  std::string output_list() const {
    std::string r;
    for (const auto& v : spec.outputs) r += (r.empty() ? "" : ", ") + v.key;
    return r.empty() ? "(none)" : r;
  }

  size_t input_index(std::string_view key) const {
    for (size_t i = 0; i < spec.inputs.size(); ++i)
      if (spec.inputs[i].key == key) return i;
    // The model's own name also works (the IOSpec key may differ: `latchedC` with varname `C`).
    for (size_t i = 0; i < spec.inputs.size(); ++i)
      if (spec.inputs[i].varname == key) return i;
    for (const auto& v : spec.outputs)
      if (v.key == key)
        throw Error(ErrorCode::kInvalidArgument,
                    "'" + std::string(key) + "' is an output of the IOSpec, not an input; its inputs are: " + input_list());
    throw Error(ErrorCode::kNotFound,
                "the IOSpec has no input named '" + std::string(key) + "'; its inputs are: " + input_list());
  }
  size_t output_index(std::string_view key) const {
    for (size_t i = 0; i < spec.outputs.size(); ++i)
      if (spec.outputs[i].key == key) return i;
    for (size_t i = 0; i < spec.outputs.size(); ++i)
      if (spec.outputs[i].varname == key) return i;
    for (const auto& v : spec.inputs)
      if (v.key == key)
        throw Error(ErrorCode::kInvalidArgument,
                    "'" + std::string(key) + "' is an input of the IOSpec, not an output; its outputs are: " + output_list());
    throw Error(ErrorCode::kNotFound,
                "the IOSpec has no output named '" + std::string(key) + "'; its outputs are: " + output_list());
  }

  // "(main_seq, input 2 of 2)"
  std::string in_place(int s, size_t pos) const {
    return "(" + seq(s).name + ", input " + std::to_string(pos + 1) + " of " + std::to_string(seq(s).inputs.size()) + ")";
  }
  std::string out_place(size_t pos) const {
    return "(" + main_seq().name + ", output " + std::to_string(pos + 1) + " of " +
           std::to_string(main_seq().outputs.size()) + ")";
  }

  // Throws the sequence error when input `i` may not be written now.
  void check_write_order(size_t i) const {
    const In& in = ins[i];
    const std::string& key = spec.inputs[i].key;
    if (in.seq < 0) sequence_error("input " + quoted(key) + " belongs to no sequence of the IOSpec");
    const bool is_main = in.seq == main;
    if (latched >= 0) {
      if (in.seq == latched && in.pos == latched_pos) return;
      const std::string& want = seq(latched).inputs[latched_pos];
      sequence_error("expected input " + quoted(want) + " " + in_place(latched, latched_pos) + ", got " + quoted(key) +
                     " (a started sequence must be completed first)");
    }
    if (pending) {
      const std::string& unread = main_seq().outputs[next_out];
      if (is_main) sequence_error("input " + quoted(key) + " written again before output " + quoted(unread) + " was read");
      sequence_error("latched input " + quoted(key) + " written before output " + quoted(unread) +
                     " was read (latched inputs may be written only while " + main_seq().name + " is idle)");
    }
    if (main >= 0 && written > 0) {
      if (is_main && in.pos == written) return;
      const std::string& want = main_seq().inputs[written];
      sequence_error("expected input " + quoted(want) + " " + in_place(main, written) + ", got " + quoted(key) +
                     (is_main ? "" : " (latched inputs may be written only while " + main_seq().name + " is idle)"));
    }
    // Idle: the main sequence's first input or a latched sequence's first input.
    if (in.pos == 0) return;
    std::string want;
    if (main >= 0 && !main_seq().inputs.empty()) want = "input " + quoted(main_seq().inputs[0]) + " " + in_place(main, 0);
    if (has_latched) want += want.empty() ? "the first input of a latched sequence" : " or a latched input";
    // A latched sequence's later input: say where it stands, the first input of its sequence is due.
    sequence_error("expected " + want + ", got " + quoted(key) + (is_main ? "" : " " + in_place(in.seq, in.pos)));
  }

  // The value of input `i` as the model's input type, from `value` (exactly `length` elements).
  Tensor to_model_tensor(size_t i, const Tensor& value) const {
    const In& in = ins[i];
    const iospec::Variable& v = spec.inputs[i];
    if (value.dtype() != in.type.dtype)
      throw Error(ErrorCode::kInvalidArgument, "input '" + v.key + "' takes " + dtype_name(in.type.dtype) +
                                                   " elements, got " + value.type().str());
    if (value.num_elements() != v.length)
      throw Error(ErrorCode::kInvalidArgument, "input '" + v.key + "' takes " + std::to_string(v.length) +
                                                   " elements, got " + std::to_string(value.num_elements()) + " (" +
                                                   value.type().str() + ")");
    Tensor copy = value.clone();
    return Tensor(in.type, copy.buffer());
  }

  Tensor quantize(size_t i, const std::vector<double>& values) const {
    const In& in = ins[i];
    const iospec::Variable& v = spec.inputs[i];
    if (static_cast<int64_t>(values.size()) != v.length)
      throw Error(ErrorCode::kInvalidArgument, "input '" + v.key + "' takes " + std::to_string(v.length) +
                                                   " values, got " + std::to_string(values.size()));
    if (!is_integer(in.type.dtype)) return Tensor::from_doubles(in.type, values);
    const double scale = v.quantization.scale, zp = v.quantization.zero_pt;
    const double lo = static_cast<double>(int_min(in.type.dtype)), hi = static_cast<double>(int_max(in.type.dtype));
    std::vector<int64_t> q(values.size());
    for (size_t k = 0; k < values.size(); ++k) {
      if (std::isnan(values[k]))
        throw Error(ErrorCode::kInvalidArgument, "input '" + v.key + "': value " + std::to_string(k) +
                                                     " is NaN, which cannot be quantized to " + dtype_name(in.type.dtype));
      double r = std::nearbyint(values[k] / scale) + zp;  // round half to even (the default rounding mode)
      r = std::nearbyint(r);                                // a fractional zero point
      q[k] = static_cast<int64_t>(std::clamp(r, lo, hi));
    }
    return Tensor::from_ints(in.type, q);
  }

  Tensor padded_of(size_t i, const Tensor& data) const {
    Tensor p = Tensor::zeros({ins[i].type.dtype, {spec.inputs[i].padded_length}});
    std::memcpy(p.mutable_bytes(), data.bytes(), data.byte_size());
    return p;
  }

  // Runs the model with every input's current value, input `override_in` (if any) taking `data`;
  // returns the main sequence's outputs in order. Changes no state of the session.
  std::vector<Tensor> run(std::optional<size_t> override_in, const Tensor* data) {
    for (size_t j = 0; j < in_of_model.size(); ++j) {
      const size_t k = in_of_model[j];
      ctx->set_input(j, override_in && *override_in == k ? *data : ins[k].value);
    }
    ctx->run();
    std::vector<Tensor> r;
    for (const std::string& key : main_seq().outputs) r.push_back(ctx->output(outs[output_index(key)].model_index).clone());
    return r;
  }

  void commit_write(size_t i, Tensor data) {
    Tensor padded = padded_of(i, data);
    In& in = ins[i];
    if (in.seq == main) {
      if (in.pos + 1 == main_seq().inputs.size()) {
        std::vector<Tensor> r = run(i, &data);  // may throw: nothing has changed yet
        results = std::move(r);
        pending = true;
        next_out = 0;
        written = 0;
      } else {
        written = in.pos + 1;
      }
    } else {
      const bool complete = in.pos + 1 == seq(in.seq).inputs.size();
      latched = complete ? -1 : in.seq;
      latched_pos = complete ? 0 : in.pos + 1;
    }
    in.value = std::move(data);
    in.padded = std::move(padded);
  }
};

StreamSession::StreamSession(std::shared_ptr<const Model> model, iospec::IoSpec spec, const iospec::Target& target)
    : impl_(std::make_unique<Impl>()) {
  if (!model) throw Error(ErrorCode::kInvalidArgument, "StreamSession needs a model");
  iospec::check_against(spec, model->module(), "IOSpec", target);
  Impl& s = *impl_;
  s.model = std::move(model);
  s.spec = std::move(spec);
  const auto verify_error = [](const std::string& field, const std::string& msg) {
    throw Error(ErrorCode::kVerify, msg, {.file = "IOSpec", .operand = field});
  };

  // Variables <-> the model's inputs and outputs, by varname.
  const auto& model_ins = s.model->inputs();
  const auto& model_outs = s.model->outputs();
  s.in_of_model.assign(model_ins.size(), SIZE_MAX);
  for (size_t i = 0; i < s.spec.inputs.size(); ++i) {
    const iospec::Variable& v = s.spec.inputs[i];
    Impl::In in;
    auto it = std::find_if(model_ins.begin(), model_ins.end(), [&](const IoInfo& io) { return io.name == v.varname; });
    if (it == model_ins.end()) verify_error("inputs." + v.key + ".varname", "the model has no input named '" + v.varname + "'");
    in.model_index = static_cast<size_t>(it - model_ins.begin());
    if (s.in_of_model[in.model_index] != SIZE_MAX)
      verify_error("inputs." + v.key + ".varname", "model input '" + v.varname + "' is named by two IOSpec inputs");
    s.in_of_model[in.model_index] = i;
    in.type = it->type;
    if (in.type.num_elements() != v.length || v.padded_length < v.length)
      verify_error("inputs." + v.key + ".length", "the IOSpec's length " + std::to_string(v.length) + " (padded " +
                                                      std::to_string(v.padded_length) + ") does not fit model input " +
                                                      in.type.str());
    in.value = Tensor::zeros(in.type);
    in.padded = Tensor::zeros({in.type.dtype, {v.padded_length}});
    s.ins.push_back(std::move(in));
  }
  for (size_t j = 0; j < model_ins.size(); ++j)
    if (s.in_of_model[j] == SIZE_MAX) verify_error("inputs", "model input '" + model_ins[j].name + "' is not in the IOSpec");
  for (const iospec::Variable& v : s.spec.outputs) {
    Impl::Out out;
    auto it = std::find_if(model_outs.begin(), model_outs.end(), [&](const IoInfo& io) { return io.name == v.varname; });
    if (it == model_outs.end())
      verify_error("outputs." + v.key + ".varname", "the model has no output named '" + v.varname + "'");
    out.model_index = static_cast<size_t>(it - model_outs.begin());
    out.type = it->type;
    s.outs.push_back(out);
  }

  // Sequences: each variable in exactly one; at most one sequence with outputs (the main one).
  for (size_t q = 0; q < s.spec.simple_sequences.size(); ++q) {
    const iospec::Sequence& sq = s.spec.simple_sequences[q];
    const int qi = static_cast<int>(q);
    if (!sq.outputs.empty()) {
      if (s.main >= 0)
        throw Error(ErrorCode::kUnsupported, "sequences '" + s.seq(s.main).name + "' and '" + sq.name +
                                                 "' both have outputs; only one main sequence (plus latched ones) is supported",
                    {.file = "IOSpec", .operand = "simple_sequences." + sq.name});
      s.main = qi;
    } else {
      s.has_latched = true;
    }
    for (size_t p = 0; p < sq.inputs.size(); ++p) {
      auto it = std::find_if(s.spec.inputs.begin(), s.spec.inputs.end(),
                             [&](const iospec::Variable& v) { return v.key == sq.inputs[p]; });
      if (it == s.spec.inputs.end())
        verify_error("simple_sequences." + sq.name + ".inputs", "no input named '" + sq.inputs[p] + "'");
      Impl::In& in = s.ins[static_cast<size_t>(it - s.spec.inputs.begin())];
      if (in.seq >= 0) verify_error("simple_sequences." + sq.name + ".inputs", "input '" + sq.inputs[p] + "' is in two sequences");
      in.seq = qi;
      in.pos = p;
    }
    for (size_t p = 0; p < sq.outputs.size(); ++p) {
      auto it = std::find_if(s.spec.outputs.begin(), s.spec.outputs.end(),
                             [&](const iospec::Variable& v) { return v.key == sq.outputs[p]; });
      if (it == s.spec.outputs.end())
        verify_error("simple_sequences." + sq.name + ".outputs", "no output named '" + sq.outputs[p] + "'");
      Impl::Out& out = s.outs[static_cast<size_t>(it - s.spec.outputs.begin())];
      if (out.seq >= 0) verify_error("simple_sequences." + sq.name + ".outputs", "output '" + sq.outputs[p] + "' is in two sequences");
      out.seq = qi;
      out.pos = p;
    }
  }
  for (size_t i = 0; i < s.outs.size(); ++i)
    if (s.outs[i].seq < 0) verify_error("outputs." + s.spec.outputs[i].key, "the output is in no sequence");

  s.ctx = std::make_unique<Context>(s.model);
}

StreamSession::~StreamSession() = default;

const iospec::IoSpec& StreamSession::spec() const { return impl_->spec; }

void StreamSession::write(std::string_view key, const Tensor& value) {
  Impl& s = *impl_;
  const size_t i = s.input_index(key);
  s.check_write_order(i);
  s.commit_write(i, s.to_model_tensor(i, value));
}

void StreamSession::write_values(std::string_view key, const std::vector<double>& values) {
  Impl& s = *impl_;
  const size_t i = s.input_index(key);
  s.check_write_order(i);
  s.commit_write(i, s.quantize(i, values));
}

Tensor StreamSession::read(std::string_view key) {
  Impl& s = *impl_;
  s.output_index(key);  // an unknown name or an input: kNotFound / kInvalidArgument
  const std::string k(key);
  if (s.latched >= 0)
    sequence_error("output " + quoted(k) + " is not available: " + s.seq(s.latched).name + " still needs input " +
                   quoted(s.seq(s.latched).inputs[s.latched_pos]));
  bool ran = false;
  if (!s.pending) {
    if (s.main_seq().inputs.empty()) {
      // A main sequence without inputs (every input latched): each read round runs the model.
      s.results = s.run(std::nullopt, nullptr);
      s.pending = true;
      s.next_out = 0;
      ran = true;
    } else {
      sequence_error("output " + quoted(k) + " is not available: " + s.main_seq().name + " still needs input " +
                     quoted(s.main_seq().inputs[s.written]));
    }
  }
  const std::string& want = s.main_seq().outputs[s.next_out];
  if (want != key) {
    if (ran) {  // undo the run above: nothing was read
      s.pending = false;
      s.results.clear();
    }
    sequence_error("expected output " + quoted(want) + " " + s.out_place(s.next_out) + ", got " + quoted(k));
  }
  Tensor r = std::move(s.results[s.next_out]);
  if (++s.next_out == s.results.size()) {
    s.pending = false;
    s.results.clear();
    s.next_out = 0;
  }
  return r;
}

std::vector<double> StreamSession::read_values(std::string_view key) {
  const size_t o = impl_->output_index(key);
  Tensor t = read(key);
  const iospec::Variable& v = impl_->spec.outputs[o];
  std::vector<double> r = t.to_doubles();
  if (is_integer(t.dtype()))
    for (double& x : r) x = (x - v.quantization.zero_pt) * v.quantization.scale;
  return r;
}

std::string StreamSession::expected() const {
  const Impl& s = *impl_;
  if (s.latched >= 0) return "input '" + s.seq(s.latched).inputs[s.latched_pos] + "' of " + s.seq(s.latched).name;
  if (s.pending) return "output '" + s.main_seq().outputs[s.next_out] + "' of " + s.main_seq().name;
  if (s.main >= 0 && s.written > 0) return "input '" + s.main_seq().inputs[s.written] + "' of " + s.main_seq().name;
  std::string r;
  if (s.main >= 0) {
    r = s.main_seq().inputs.empty() ? "output '" + s.main_seq().outputs[0] + "' of " + s.main_seq().name
                                    : "input '" + s.main_seq().inputs[0] + "' of " + s.main_seq().name;
  }
  if (s.has_latched) r = r.empty() ? "a latched input" : r + " (or a latched input)";
  return r.empty() ? "nothing (the IOSpec has no sequence)" : r;
}

const Tensor& StreamSession::padded_input(std::string_view key) const {
  return impl_->ins[impl_->input_index(key)].padded;
}

}  // namespace weft
