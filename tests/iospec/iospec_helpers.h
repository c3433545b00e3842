// Shared by the IOSpec tests: the specification's example model and its IOSpec text, and a helper
// that captures a weft::Error.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "weft/graph.h"
#include "weft/iospec.h"

namespace weft::iospec::test {

inline TensorType f16(int64_t n) { return TensorType{DType::kFp16, {n}}; }

// The specification's first example: A = B + C over 60 16-bit elements.
inline Module add_module(TensorType t = f16(60)) {
  GraphBuilder b;
  ValueId B = b.input("B", t);
  ValueId C = b.input("C", t);
  b.output(b.op(Op::ADD, {B, C}, {}, "A"));
  return Module(b.finish());
}

// What Weft writes for it (the specification's first example, every field filled in).
inline const char* const kAddYaml = R"(inputs:
  B:
    type: input
    varname: B
    length: 60
    padded_length: 64
    length_64b_words: 16
    precision: 16
    quantization:
      scale: 1.0
      zero_pt: 0.0
    core_id: 0
    pc: 0
    comments:
      latched: false

  C:
    type: input
    varname: C
    length: 60
    padded_length: 64
    length_64b_words: 16
    precision: 16
    quantization:
      scale: 1.0
      zero_pt: 0.0
    core_id: 0
    pc: 1
    comments:
      latched: false

outputs:
  A:
    type: output
    varname: A
    length: 60
    padded_length: 64
    length_64b_words: 16
    precision: 16
    quantization:
      scale: 1.0
      zero_pt: 0.0
    core_id: 0
    mailbox_id: 0
    comments:
      latched: false

simple_sequences:
  main_seq:
    type: simple_sequence
    outputs:
    - A
    inputs:
    - B
    - C

complex_sequences: {}
)";

// The error `f` throws (a failure if it throws none or something else).
inline std::optional<Error> error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a weft::Error: " << e.what();
    return std::nullopt;
  }
  ADD_FAILURE() << "no error thrown";
  return std::nullopt;
}

// `text` with the first occurrence of `from` replaced by `to` (a failure if absent).
inline std::string replace_once(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "'" << from << "' not in the text";
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

}  // namespace weft::iospec::test
