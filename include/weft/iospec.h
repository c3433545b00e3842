// IOSpec: a model's input/output contract for targets that stream data in and out (sensor
// pipelines, accelerators fed word by word): what each input and output is (type, length, padded
// length, words, precision, quantization, core, pc / mailbox id) and in which order they are
// exchanged (sequences, latched inputs). docs/iospec.md; the format: the IOSpec specification.
//
//   weft::iospec::IoSpec s = weft::iospec::generate(module, {.latched = {"C"}});
//   std::string yaml = weft::iospec::to_yaml(s);
//   weft::iospec::IoSpec r = weft::iospec::parse_yaml(yaml, "m.iospec.yaml");   // strict
//   weft::iospec::check_against(r, module, "m.iospec.yaml");                      // names the field
//   weft::StreamSession session(model, r);                                         // enforces it
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "weft/graph.h"
#include "weft/tensor.h"

namespace weft {
class Model;
}

namespace weft::iospec {

// ---- The target: how vectors are padded and carried ----------------------------------------------

// A small YAML file (`weft compile --target FILE`); every key optional:
//   word_bits: 64        # the transport word
//   granule_words: 4     # a vector's padded size is a whole number of granules of this many words
//   core_id: 0           # the core every variable is received on
// The rule: padded_length = ceil(length * precision / G) * G / precision elements, with
// G = word_bits * granule_words bits; length_64b_words = padded_length * precision / 64.
// With the defaults (G = 256 bits) the specification's example comes out exactly: length 60,
// precision 16 -> 960 bits -> 1024 bits -> padded_length 64, length_64b_words 16.
struct Target {
  int word_bits = 64;
  int granule_words = 4;
  int core_id = 0;
};
// Reads a target file; errors (kParse / kInvalidArgument) name the file, the key and the rule
// (word_bits a positive multiple of 8, granule_words >= 1, core_id >= 0, unknown keys rejected).
Target read_target(const std::string& path);
Target parse_target(std::string_view yaml, const std::string& source);

// ---- The IOSpec ----------------------------------------------------------------------------------------

struct Quantization {
  double scale = 1.0;
  double zero_pt = 0.0;
  bool operator==(const Quantization&) const = default;
};

struct Variable {
  std::string key;      // the entry's name in `inputs:` / `outputs:`
  bool input = true;    // type: input | output
  std::string varname;  // the model's input / output name
  int64_t length = 0;   // elements in the model
  int64_t padded_length = 0;
  int64_t length_64b_words = 0;
  int precision = 0;    // bits per element
  Quantization quantization;
  int core_id = 0;
  int64_t pc = 0;          // inputs: pc; outputs: mailbox_id
  bool latched = false;    // comments: latched
  bool operator==(const Variable&) const = default;
};

struct Sequence {
  std::string name;
  std::vector<std::string> outputs;  // variable keys, in exchange order
  std::vector<std::string> inputs;
  bool operator==(const Sequence&) const = default;
};

struct IoSpec {
  std::vector<Variable> inputs;   // in the model's input order
  std::vector<Variable> outputs;  // in the model's output order
  std::vector<Sequence> simple_sequences;  // sequence id = position
  // complex_sequences is always empty (not supported, as in the specification's firmware).
  bool operator==(const IoSpec&) const = default;

  const Variable* find_input(std::string_view key) const;
  const Variable* find_output(std::string_view key) const;
};

// ---- Generation ------------------------------------------------------------------------------------------

struct GenerateOptions {
  Target target;
  std::vector<std::string> latched;  // input names
};

// The IOSpec of the module's entry graph.
//   - Variables: key = varname = the graph's input/output name; length = element count; precision
//     = element bits; padding per the target; quantization from the model where it has one (an
//     integer input dequantized by CAST -> [SUB zero point] -> MUL scale, or read by a per-tensor
//     RESCALE; an integer output made by a quantize chain or a per-tensor RESCALE), else 1.0 / 0.0;
//     core_id from the target; pc / mailbox_id = position.
//   - Sequences: for each output, the non-latched inputs it depends on (through every path of the
//     graph). All outputs must share one input set: they form "main_seq", its inputs in the model's
//     input order and its outputs in the model's output order. Each latched input gets its own
//     sequence without outputs ("latched_seq" when there is one latched input, else
//     "latched_seq_<input>"), in the order of --latched.
// Errors (kUnsupported / kInvalidArgument) say what conflicts: outputs whose input sets differ (each
// output with its inputs), an output that depends on no (non-latched) input, a non-latched input no
// output depends on, a latched name that is not an input, a type without a precision (shape values).
IoSpec generate(const Module& module, const GenerateOptions& options = {});

// ---- YAML ------------------------------------------------------------------------------------------------

// The specification's layout: inputs, outputs (each entry with every field, comments: latched),
// simple_sequences (type: simple_sequence, outputs, inputs), complex_sequences: {}. Deterministic.
std::string to_yaml(const IoSpec& spec);
void save_yaml(const IoSpec& spec, const std::string& path);

// Parses and validates every field (yaml-cpp): required keys, types and ranges (lengths >= 1,
// padded_length >= length, length_64b_words = padded_length * precision / 64, precision one of
// 1..64 dividing into words, scale > 0 and finite, ids >= 0, type input/output matching the section,
// comments.latched a boolean), sequences (type simple_sequence; names of existing variables; every
// input and output in exactly one sequence; a sequence without outputs holds only latched inputs and
// a latched input only such a sequence), complex_sequences empty, unknown keys rejected. Errors
// (kParse / kVerify) carry the file, the line and, as the operand, the field path
// ("inputs.B.padded_length").
IoSpec parse_yaml(std::string_view yaml, const std::string& source);
IoSpec load_yaml(const std::string& path);

// Cross-checks an IOSpec against a module (and target): the same inputs and outputs, lengths and
// precisions matching the types, padding per the target, sequences equal to those generate() derives
// with the IOSpec's latched inputs. The first mismatch is an Error(kVerify) whose operand is the
// field path and whose message gives both values.
void check_against(const IoSpec& spec, const Module& module, const std::string& source, const Target& target = {});

}  // namespace weft::iospec

namespace weft {

// ---- Streaming session ----------------------------------------------------------------------------------

// Runs a model the way a streaming target does, enforcing an IOSpec: inputs are written one at a time
// in sequence order, the model runs when the last input of the main sequence arrives, outputs are
// read one at a time in sequence order. Latched inputs start at zero and keep their value until
// rewritten; they may be written whenever the main sequence is idle (no input of it written and no
// output unread).
//
// Breaking the order is an Error(kRuntime) whose message starts with "sequence error:" and says what
// was expected ("expected input 'C' (main_seq, input 2 of 2), got 'B'"; "output 'A' is not available:
// main_seq still needs input 'C'"; "input 'B' written again before output 'A' was read"). A failed
// call leaves the session exactly as it was.
class StreamSession {
 public:
  // Throws Error(kVerify) when `spec` does not match the model (iospec::check_against).
  StreamSession(std::shared_ptr<const Model> model, iospec::IoSpec spec, const iospec::Target& target = {});
  ~StreamSession();
  StreamSession(const StreamSession&) = delete;
  StreamSession& operator=(const StreamSession&) = delete;

  const iospec::IoSpec& spec() const;

  // Writes input `key`: exactly `length` elements of the input's element type (the padding is added
  // here, as the target would receive it: padded_length elements, zeros after the data).
  void write(std::string_view key, const Tensor& value);
  // Writes input `key` from real values: for an integer input with a quantization, each value is
  // quantized, q = clamp(round_half_even(x / scale) + zero_pt); for a float input the values are
  // converted. Exactly `length` values.
  void write_values(std::string_view key, const std::vector<double>& values);
  // Reads the next output, which must be `key`: `length` elements (the padding stripped), shaped as
  // the model's output.
  Tensor read(std::string_view key);
  // The same, dequantized for a quantized integer output: (q - zero_pt) * scale.
  std::vector<double> read_values(std::string_view key);

  // What the session expects next, for messages and tools: e.g. "input 'C' of main_seq",
  // "output 'A' of main_seq", or "input 'B' of main_seq (or a latched input)".
  std::string expected() const;
  // The padded vector last written to input `key` (padded_length elements), as the target sees it.
  const Tensor& padded_input(std::string_view key) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace weft
