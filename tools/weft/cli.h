// Shared pieces of the `weft` tool's commands: exit codes, the tool's own error, argument scanning.
#pragma once

#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "weft/runtime.h"

namespace weft::cli {

// The project version, from project(weft VERSION ...) in the top-level CMakeLists.txt.
constexpr const char* kVersion = WEFT_VERSION;

constexpr int kExitOk = 0;
constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

// An error of the tool itself (not of the library): a message and the exit code to use.
struct CliError {
  int exit_code;
  std::string message;
};

[[noreturn]] inline void usage_error(const std::string& msg) { throw CliError{kExitUsage, msg}; }
[[noreturn]] inline void model_error(const std::string& msg) { throw CliError{kExitError, msg}; }

// ---- Argument scanning ---------------------------------------------------------------------------

// Walks argv, splitting "--flag=value" and handing out values of flags that take one.
class Args {
 public:
  Args(std::string command, std::vector<std::string> args)
      : command_(std::move(command)), args_(std::move(args)) {}

  bool done() const { return i_ >= args_.size(); }
  // The next raw argument; `flag` receives the flag name ("" for positionals) and `inline_value`
  // the part after '=' for "--flag=value".
  void next(std::string* flag, std::optional<std::string>* inline_value, std::string* positional) {
    const std::string& a = args_[i_++];
    flag->clear();
    inline_value->reset();
    positional->clear();
    if (after_dashdash_ || a.size() < 2 || a[0] != '-') {
      *positional = a;
      return;
    }
    if (a == "--") {
      after_dashdash_ = true;
      if (!done()) next(flag, inline_value, positional);
      return;
    }
    size_t eq = a.find('=');
    if (a.rfind("--", 0) == 0 && eq != std::string::npos) {
      *flag = a.substr(0, eq);
      *inline_value = a.substr(eq + 1);
    } else {
      *flag = a;
    }
  }
  // The value of `flag`: its inline "=value" or the next argument.
  std::string value(const std::string& flag, const std::optional<std::string>& inline_value) {
    if (inline_value) return *inline_value;
    if (done()) usage_error("option " + flag + " needs a value (see `weft " + command_ + " --help`)");
    return args_[i_++];
  }
  const std::string& command() const { return command_; }
  // The arguments not consumed yet, as the arguments of sub-command `command` ("spirv dis").
  Args rest(std::string command) const {
    return Args(std::move(command), std::vector<std::string>(args_.begin() + static_cast<long>(i_), args_.end()));
  }

 private:
  std::string command_;
  std::vector<std::string> args_;
  size_t i_ = 0;
  bool after_dashdash_ = false;
};

[[noreturn]] inline void unknown_option(const Args& args, const std::string& flag) {
  usage_error("unknown option '" + flag + "' for `weft " + args.command() + "` (see `weft " + args.command() +
              " --help`)");
}

// LoadOptions whose warnings go to stderr as "weft: warning: ...".
inline LoadOptions cli_load_options() {
  LoadOptions o;
  o.on_warning = [](const std::string& w) { std::cerr << "weft: warning: " << w << "\n"; };
  return o;
}

inline void no_inline_value(const Args& args, const std::string& flag, const std::optional<std::string>& v) {
  if (v) usage_error("option " + flag + " takes no value (see `weft " + args.command() + " --help`)");
}

// `--shape NAME=1x3x224x224`: a static shape for an ONNX input with dynamic dimensions.
void add_shape_option(LoadOptions& options, const std::string& value);
// --max-fold-bytes N: the ONNX importer's constant-folding budget.
void add_max_fold_option(LoadOptions& options, const std::string& value);
// --bind NAME=FILE.npy: a graph input bound to a value at compile time (OnnxImportOptions::bindings).
void add_bind_option(LoadOptions& options, const std::string& value);
// The ONNX import options every command that reads models takes: --shape, --bind and
// --narrow-float64. Returns false when `flag` is none of them.
bool onnx_import_option(Args& args, const std::string& flag, const std::optional<std::string>& v, LoadOptions& options);
constexpr const char* kShapeHelp =
    "  --shape NAME=DIMS            Static shape of an ONNX input with dynamic dimensions, e.g.\n"
    "                               --shape input=1x3x224x224 (repeatable)\n";

// --backend LIST: comma-separated backend names in priority order (checked when the model loads).
void add_backend_option(LoadOptions& options, const std::string& value);
constexpr const char* kBackendHelp =
    "  --backend LIST               Backends in priority order, e.g. vulkan,reference: each takes what\n"
    "                               it can, in that order (default: every available backend, fastest\n"
    "                               first, with tiny operators left to the reference loops; the\n"
    "                               reference backend is always the last resort). cpu: the CPU backends\n"
    "                               with the default rules. See `weft ops --backends`.\n";

// --custom-ops FILE: registers the custom operators of a declarative ops file (docs/custom-ops.md)
// before the model is read, so that matching ONNX nodes / .weft CUSTOM nodes get their shaders.
void add_custom_ops_option(const std::string& path);
// The whole content of a file (binary-safe). Throws weft::Error(kIo) naming the file.
std::string read_file(const std::string& path);

// Commands defined outside main.cpp.
int cmd_devices(Args& args);
extern const char* const kDevicesHelp;
// cmd_iospec.cpp: `weft iospec` (an IOSpec for a model) and `weft stream` (a streaming session).
int cmd_iospec(Args& args);
int cmd_stream(Args& args);
extern const char* const kIospecHelp;
extern const char* const kStreamHelp;
int cmd_spirv(Args& args);
int cmd_compile(Args& args);
extern const char* const kSpirvHelp;
extern const char* const kCompileHelp;
// cmd_vgf.cpp: `weft dump` and the VGF output of `weft compile`.
int cmd_dump(Args& args);
int cmd_scenario(Args& args);
int compile_vgf(const Module& m, const std::string& out);
// cmd_conformance.cpp: `weft conformance DIR...` (TOSA conformance tests).
int cmd_conformance(Args& args);
extern const char* const kConformanceHelp;
// cmd_import.cpp: `weft import MODEL.onnx -o OUT.weft`.
int cmd_import(Args& args);
extern const char* const kImportHelp;
extern const char* const kDumpHelp;
extern const char* const kScenarioHelp;

}  // namespace weft::cli
