// Running the TOSA 1.0 conformance tests: folders with `desc.json` and `test.tosa`, as Arm's
// conformance generator writes them. Inputs are made from the test's `meta.data_gen` by the TOSA
// reference model's data-generation library, the expected results by the reference model itself
// (precise mode), and each output of Weft (the interpreter, and each backend for the nodes it takes)
// is judged by the test's compliance mode: by the reference model's verify library where it is
// there, and by Weft's own implementation of the compliance rules (the two must agree). The reference
// tools are public programs Weft runs, never links: `Tools::dir` holds `tosa_reference_model`,
// `libtosa_reference_generate_lib.so` and `libtosa_reference_verify_lib.so`. See
// docs/conformance.md.
#pragma once

#include <map>
#include <span>
#include <string>
#include <vector>

#include "weft/tensor.h"

namespace weft::conformance {

struct Options {
  std::string tools_dir;                           // the reference model and its two libraries
  std::vector<std::string> backends = {"reference"};  // "reference" is Weft's interpreter
  std::string work_dir;                            // scratch space ("" = a temporary folder)
  // Skip tests with an input of more elements than this (0: no limit): a quick run leaves out the
  // suite's few very large tests (1080x720 convolutions, 8192-wide kernels).
  int64_t max_input_elements = 0;
};

enum class Status { kPass, kFail, kNotTaken, kError };
const char* status_name(Status s);  // "pass", "fail", "not taken", "error"

struct BackendResult {
  std::string backend;
  Status status = Status::kError;
  std::string detail;        // why it failed, or which node the backend did not take
  bool checker_agrees = true;  // Weft's compliance rules gave the verify library's verdict
  bool checked_by_weft = false;  // Weft's own rules judged it too
};

struct TestResult {
  std::string dir, name, op;          // op: the test's operator ("ADD")
  std::vector<std::string> profiles;  // test_requirements.profiles_supported: "tosa-pro-int", ...
  std::vector<std::string> modes;      // compliance mode per output
  std::string error;                   // a failure before any backend ran (reading, generation)
  std::string skipped;                 // why the test did not run (Options::max_input_elements)
  std::vector<BackendResult> backends;
};

// Every folder under `roots` (recursively) that holds a desc.json, sorted.
std::vector<std::string> find_tests(const std::vector<std::string>& roots);

// Runs one test. Throws only for a broken tool setup (Error kUnsupported naming the missing file).
TestResult run_test(const std::string& dir, const Options& options);

// ---- Weft's own compliance rules -------------------------------------------------------------------

// The verdict of the test's compliance entry for one output (`compliance`: the JSON text of
// meta.compliance.tensors.<name>), `imp` Weft's result, `ref` the reference model's precise result
// and `bounds` its bounds result (FP_SPECIAL and DOT_PRODUCT need them; ABS_ERROR uses them where
// given), as doubles. Every mode of the specification: EXACT, ULP, ABS_ERROR, RELATIVE,
// REDUCE_PRODUCT, FP_SPECIAL, DOT_PRODUCT; `handled` is false for another mode, or for a mode that
// needs bounds when none are given.
struct Verdict {
  bool handled = false;
  bool pass = false;
  std::string why;  // the first element (or the statistic) that broke the rule
};
Verdict check(const std::string& compliance, const Tensor& imp, std::span<const double> ref,
              std::span<const double> bounds = {});

}  // namespace weft::conformance
