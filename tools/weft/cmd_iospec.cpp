// `weft iospec` (a model's IOSpec: generate, write, cross-check) and `weft stream` (a StreamSession
// driven by a script of transactions).
//
// The stream script, one transaction per line ('#' starts a comment, blank lines are ignored):
//   write NAME = VALUE    VALUE: a number (every element), [v1, v2, ...] (exactly `length` numbers)
//                         or @FILE.npy (relative to the script's folder; the cwd for stdin)
//   read NAME             prints "read NAME = <values>"
// A failing line prints "error: line N: <message>" to stderr; the script goes on (the session is
// unchanged by a failed transaction) and the exit status is 1.
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <istream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli.h"
#include "weft/io.h"
#include "weft/error.h"
#include "weft/iospec.h"
#include "weft/npy.h"
#include "weft/runtime.h"

namespace weft::cli {

const char* const kIospecHelp =
    R"(Usage: weft iospec MODEL.vgf|MODEL.weft|MODEL.onnx [--latched NAME]... [--target FILE] [-o OUT.yaml]
       weft iospec MODEL --check FILE.yaml [--target FILE]

Prints the IOSpec of MODEL's entry graph in YAML: each input and output (length, padded length,
64-bit words, precision, quantization, core, pc / mailbox id) and the sequences in which a
streaming target exchanges them (main_seq: the inputs every output needs, in the model's order;
one sequence per latched input). With --check, reads FILE.yaml instead and cross-checks it against
the model: prints "FILE: matches MODEL" (exit 0) or the first mismatch (exit 1).

Options:
  --latched NAME          Make input NAME latched: written only now and then, kept between runs
                          (repeatable; NAME,NAME... also works)
  --target FILE           The target's transport (YAML: word_bits, granule_words, core_id), which
                          sets the padding and the core id (default: 64-bit words, 4-word granules)
  -o, --output OUT.yaml   Write the IOSpec to OUT instead of printing it
  --check FILE.yaml       Cross-check an existing IOSpec against MODEL
  --custom-ops FILE       Register the custom operators of FILE before reading MODEL
  --shape NAME=DIMS       Static shape of an ONNX input with dynamic dimensions (repeatable)
  -h, --help              Show this help
)";

const char* const kStreamHelp =
    R"(Usage: weft stream MODEL --iospec FILE.yaml [--script FILE|-] [--target FILE] [--backend LIST] [--verbose]

Runs MODEL the way a streaming target does: inputs are written one at a time in the IOSpec's
sequence order, the model runs when the last input of the main sequence arrives, and outputs are
read one at a time in order. Latched inputs start at zero, keep their value until rewritten and
may be written only while the main sequence is idle.

The script (default: stdin) has one transaction per line; '#' starts a comment:
  write NAME = 1.5              every element of input NAME
  write NAME = [1, 2, 3]        exactly `length` values
  write NAME = @data.npy        from a .npy file (relative to the script's folder)
  read NAME                     prints "read NAME = <values>"
Values are real numbers: an integer input with a quantization gets round(x / scale) + zero_pt
(half to even, clamped); outputs are printed dequantized, (q - zero_pt) * scale. A .npy file whose
type is the input's integer type holds the quantized values themselves and is written as is.
A transaction that breaks the sequence order (or is malformed) prints "error: line N: ..." to
stderr and changes nothing; the script goes on, and the exit status is 1.

Options:
  --iospec FILE.yaml      The IOSpec (checked against MODEL first)
  --script FILE|-         The transactions (default: - = stdin)
  --target FILE           The target's transport (as for `weft iospec`)
  --verbose               Echo every write on stdout too (the output is then a replayable script)
  --custom-ops FILE       Register the custom operators of FILE before loading MODEL
  --shape NAME=DIMS       Static shape of an ONNX input with dynamic dimensions (repeatable)
  --backend LIST          Backends in priority order, e.g. onednn,reference (default: every
                          available backend, fastest first; cpu: the CPU backends, default rules)
  -h, --help              Show this help
)";

namespace {

// ---- weft iospec ----------------------------------------------------------------------------------------

void add_latched(std::vector<std::string>& latched, const std::string& value) {
  size_t pos = 0;
  while (pos <= value.size()) {
    size_t comma = value.find(',', pos);
    if (comma == std::string::npos) comma = value.size();
    std::string name = value.substr(pos, comma - pos);
    if (!name.empty() && name[0] == '%') name.erase(0, 1);  // the text form's sigil
    if (name.empty()) usage_error("--latched expects input names, got '" + value + "'");
    for (const std::string& l : latched)
      if (l == name) usage_error("--latched gives input '" + name + "' twice");
    latched.push_back(name);
    pos = comma + 1;
  }
}

// ---- weft stream: the script --------------------------------------------------------------------------

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

bool has_space(const std::string& s) {
  for (char c : s)
    if (std::isspace(static_cast<unsigned char>(c))) return true;
  return false;
}

[[noreturn]] void script_error(const std::string& msg) { throw Error(ErrorCode::kParse, msg); }

double parse_number(const std::string& text) {
  if (text.empty()) script_error("expected a number, got nothing");
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || std::isspace(static_cast<unsigned char>(text[0])))
    script_error("'" + text + "' is not a number");
  return v;
}

// "[1, 2, 3]" -> {1, 2, 3}; "[]" -> {}.
std::vector<double> parse_list(const std::string& text) {
  if (text.back() != ']') script_error("a list of values ends with ']': '" + text + "'");
  const std::string inner = trim(std::string_view(text).substr(1, text.size() - 2));
  std::vector<double> r;
  if (inner.empty()) return r;
  size_t pos = 0;
  while (pos <= inner.size()) {
    size_t comma = inner.find(',', pos);
    if (comma == std::string::npos) comma = inner.size();
    const std::string item = trim(std::string_view(inner).substr(pos, comma - pos));
    if (item.empty()) script_error("empty item " + std::to_string(r.size() + 1) + " in list '" + text + "'");
    r.push_back(parse_number(item));
    pos = comma + 1;
  }
  return r;
}

// Shortest text that reads back as the same value of type T; integers without ".0".
template <class T>
std::string shortest(T v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

// The text of an error without the trailing " [code]" of Error::what().
std::string describe(const Error& e) {
  std::string s = e.what();
  const std::string suffix = std::string(" [") + error_code_name(e.code()) + "]";
  if (s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0)
    s.resize(s.size() - suffix.size());
  return s;
}

class ScriptRunner {
 public:
  ScriptRunner(const Model& model, StreamSession& session, std::filesystem::path base, bool verbose)
      : model_(model), session_(session), base_(std::move(base)), verbose_(verbose) {}

  // Runs every line of `in`; returns whether all succeeded.
  bool run(std::istream& in) {
    std::string line;
    int n = 0;
    bool ok = true;
    while (std::getline(in, line)) {
      ++n;
      const size_t hash = line.find('#');
      if (hash != std::string::npos) line.resize(hash);
      const std::string t = trim(line);
      if (t.empty()) continue;
      try {
        transaction(t);
      } catch (const Error& e) {
        ok = false;
        std::cout.flush();
        std::cerr << "error: line " << n << ": " << describe(e) << "\n";
      }
    }
    return ok;
  }

 private:
  void transaction(const std::string& t) {
    size_t sp = 0;
    while (sp < t.size() && !std::isspace(static_cast<unsigned char>(t[sp])) && t[sp] != '=') ++sp;
    const std::string verb = t.substr(0, sp);
    const std::string rest = trim(std::string_view(t).substr(sp));
    if (verb == "write") {
      const size_t eq = rest.find('=');
      if (eq == std::string::npos) script_error("expected 'write NAME = VALUE', got '" + t + "'");
      const std::string name = trim(std::string_view(rest).substr(0, eq));
      const std::string value = trim(std::string_view(rest).substr(eq + 1));
      if (name.empty() || has_space(name)) script_error("expected 'write NAME = VALUE', got '" + t + "'");
      if (value.empty()) script_error("'write " + name + " =' needs a value");
      write(name, value);
      if (verbose_) std::cout << "write " << name << " = " << value << "\n";
    } else if (verb == "read") {
      if (rest.empty() || has_space(rest) || rest.find('=') != std::string::npos)
        script_error("expected 'read NAME', got '" + t + "'");
      read(rest);
    } else {
      script_error("unknown transaction '" + verb + "' (expected 'write NAME = VALUE' or 'read NAME')");
    }
  }

  void write(const std::string& name, const std::string& value) {
    const iospec::Variable* var = session_.spec().find_input(name);
    if (value[0] == '@') {
      std::filesystem::path file = trim(std::string_view(value).substr(1));
      if (file.empty()) script_error("'@' needs a .npy file name");
      if (file.is_relative()) file = base_ / file;
      Tensor t = read_npy(file.string());
      if (var) {
        const DType d = model_.inputs()[model_.input_index(var->varname)].type.dtype;
        if (t.dtype() == d && is_integer(d)) {
          session_.write(name, t);  // already quantized
          return;
        }
      }
      session_.write_values(name, t.to_doubles());
    } else if (value[0] == '[') {
      session_.write_values(name, parse_list(value));
    } else {
      const double x = parse_number(value);
      // An unknown name: the session says so (and lists the inputs).
      session_.write_values(name, std::vector<double>(var ? static_cast<size_t>(var->length) : 1, x));
    }
  }

  void read(const std::string& name) {
    std::vector<double> values = session_.read_values(name);  // throws for an unknown name
    const iospec::Variable* var = session_.spec().find_output(name);
    const DType d = model_.outputs()[model_.output_index(var->varname)].type.dtype;
    const bool plain_int = d == DType::kBool || (is_integer(d) && var->quantization == iospec::Quantization{});
    auto fmt = [&](double v) {
      if (plain_int) return std::to_string(static_cast<int64_t>(v));
      if (is_float(d)) return shortest(static_cast<float>(v));
      return shortest(v);
    };
    std::string text;
    if (values.size() == 1) {
      text = fmt(values[0]);
    } else {
      text = "[";
      for (size_t i = 0; i < values.size(); ++i) text += (i ? ", " : "") + fmt(values[i]);
      text += "]";
    }
    std::cout << "read " << name << " = " << text << "\n";
  }

  const Model& model_;
  StreamSession& session_;
  std::filesystem::path base_;
  bool verbose_;
};

}  // namespace

int cmd_iospec(Args& args) {
  std::string model_path, out, check, target_file;
  std::vector<std::string> latched;
  LoadOptions load = cli_load_options();
  while (!args.done()) {
    std::string flag, positional;
    std::optional<std::string> v;
    args.next(&flag, &v, &positional);
    if (flag.empty()) {
      if (!model_path.empty())
        usage_error("`weft iospec` takes one model, got '" + model_path + "' and '" + positional + "'");
      model_path = positional;
    } else if (flag == "--latched") {
      add_latched(latched, args.value(flag, v));
    } else if (flag == "--target") {
      if (!target_file.empty()) usage_error("--target is given twice");
      target_file = args.value(flag, v);
    } else if (flag == "-o" || flag == "--output") {
      if (!out.empty()) usage_error("-o is given twice");
      out = args.value(flag, v);
    } else if (flag == "--check") {
      if (!check.empty()) usage_error("--check is given twice");
      check = args.value(flag, v);
    } else if (flag == "--custom-ops") {
      add_custom_ops_option(args.value(flag, v));
    } else if (onnx_import_option(args, flag, v, load)) {
    } else if (flag == "-h" || flag == "--help") {
      std::cout << kIospecHelp;
      return kExitOk;
    } else {
      unknown_option(args, flag);
    }
  }
  if (model_path.empty()) usage_error("`weft iospec` needs a model file (see `weft iospec --help`)");
  if (!check.empty() && !out.empty()) usage_error("--check reads an IOSpec and -o writes one; give only one of them");
  if (!check.empty() && !latched.empty())
    usage_error("--latched does not apply with --check: the IOSpec's sequences say which inputs are latched");

  const iospec::Target target = target_file.empty() ? iospec::Target{} : iospec::read_target(target_file);
  const Module module = read_model(model_path, load);
  if (!check.empty()) {
    const iospec::IoSpec spec = iospec::load_yaml(check);
    iospec::check_against(spec, module, check, target);
    std::cout << check << ": matches " << model_path << "\n";
    return kExitOk;
  }
  iospec::GenerateOptions options;
  options.target = target;
  options.latched = latched;
  const iospec::IoSpec spec = iospec::generate(module, options);
  if (out.empty() || out == "-") {
    std::cout << iospec::to_yaml(spec);
  } else {
    iospec::save_yaml(spec, out);
  }
  return kExitOk;
}

int cmd_stream(Args& args) {
  std::string model_path, iospec_path, script, target_file;
  bool verbose = false;
  LoadOptions load = cli_load_options();
  while (!args.done()) {
    std::string flag, positional;
    std::optional<std::string> v;
    args.next(&flag, &v, &positional);
    if (flag.empty()) {
      if (!model_path.empty())
        usage_error("`weft stream` takes one model, got '" + model_path + "' and '" + positional + "'");
      model_path = positional;
    } else if (flag == "--iospec") {
      if (!iospec_path.empty()) usage_error("--iospec is given twice");
      iospec_path = args.value(flag, v);
    } else if (flag == "--script") {
      if (!script.empty()) usage_error("--script is given twice");
      script = args.value(flag, v);
      if (script.empty()) usage_error("--script expects a file name or '-'");
    } else if (flag == "--target") {
      if (!target_file.empty()) usage_error("--target is given twice");
      target_file = args.value(flag, v);
    } else if (flag == "--backend") {
      add_backend_option(load, args.value(flag, v));
    } else if (flag == "--custom-ops") {
      add_custom_ops_option(args.value(flag, v));
    } else if (onnx_import_option(args, flag, v, load)) {
    } else if (flag == "--verbose" || flag == "-v") {
      no_inline_value(args, flag, v);
      verbose = true;
    } else if (flag == "-h" || flag == "--help") {
      std::cout << kStreamHelp;
      return kExitOk;
    } else {
      unknown_option(args, flag);
    }
  }
  if (model_path.empty()) usage_error("`weft stream` needs a model file (see `weft stream --help`)");
  if (iospec_path.empty()) usage_error("`weft stream` needs --iospec FILE.yaml (make one with `weft iospec MODEL -o FILE.yaml`)");

  const iospec::Target target = target_file.empty() ? iospec::Target{} : iospec::read_target(target_file);
  std::shared_ptr<const Model> model = Model::load(model_path, load);
  iospec::IoSpec spec = iospec::load_yaml(iospec_path);
  iospec::check_against(spec, model->module(), iospec_path, target);  // errors name the file
  StreamSession session(model, std::move(spec), target);

  std::istringstream file;
  std::filesystem::path base = ".";
  const bool from_file = !script.empty() && script != "-";
  if (from_file) {
    file.str(read_file_bytes(script, kMaxConfigBytes, "a stream script"));
    base = std::filesystem::path(script).parent_path();
    if (base.empty()) base = ".";
  }
  ScriptRunner runner(*model, session, base, verbose);
  const bool ok = runner.run(from_file ? static_cast<std::istream&>(file) : std::cin);
  return ok ? kExitOk : kExitError;
}

}  // namespace weft::cli
