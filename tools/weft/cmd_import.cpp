// `weft import MODEL.onnx -o OUT.weft`: the ONNX frontend's result in Weft's text form, and the
// `--shape` option shared by every command that reads a model.
#include <iostream>

#include "cli.h"
#include "weft/npy.h"
#include "weft/error.h"
#include "weft/onnx.h"
#include "weft/tosa_file.h"
#include "weft/text.h"

namespace weft::cli {

const char* const kImportHelp = R"(Usage: weft import MODEL.onnx -o OUT.weft [--shape NAME=DIMS]...
       weft import MODEL.tosa -o OUT.weft
       weft import --list-ops

Imports an ONNX model: resolves its shapes (give dynamic dimensions with --shape), folds its
constant sub-graphs, lowers every node to TOSA 1.0 operators with NCHW carried as NHWC inside the
graph, verifies the result and writes it in Weft's text form. Constants larger than 16 elements
are written as OUT.<value>.npy files beside OUT.weft, so the text stays readable. A TOSA 1.0 file
(.tosa) is read and verified as it is (docs/tosa-file.md) and written the same way.

Options:
  -o, --output OUT.weft   Output path ("-" prints the text form to stdout, constants inline)
  --shape NAME=DIMS       Static shape of an input with dynamic dimensions, e.g.
                          --shape input=1x3x224x224 (repeatable)
  --bind NAME=FILE.npy    Bind graph input NAME to a value at compile time: it becomes a constant,
                          so that an input feeding shapes, axes, pads, scales or k folds (repeatable)
  --narrow-float64        Carry float64 tensors as float32 (TOSA has no float64; the model then
                          computes in float32, and --explain says so)
  --max-fold-bytes N      Constant-folding budget per folded result (default 268435456); larger
                          results stay run-time nodes, or are refused where TOSA needs them constant
  --list-ops              Print the ONNX operators the frontend lowers and exit
  -h, --help              Show this help
)";

void add_shape_option(LoadOptions& options, const std::string& value) {
  const size_t eq = value.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == value.size())
    usage_error("--shape expects NAME=DIMS such as input=1x3x224x224, got '" + value + "'");
  const std::string name = value.substr(0, eq);
  Shape shape;
  size_t pos = eq + 1;
  while (pos <= value.size()) {
    size_t x = value.find('x', pos);
    if (x == std::string::npos) x = value.size();
    const std::string d = value.substr(pos, x - pos);
    if (d.empty() || d.size() > 12 || d.find_first_not_of("0123456789") != std::string::npos || std::stoll(d) < 1)
      usage_error("--shape " + value + ": dimension '" + d + "' is not a positive integer");
    shape.push_back(std::stoll(d));
    pos = x + 1;
  }
  if (options.onnx.input_shapes.count(name)) usage_error("--shape gives input '" + name + "' twice");
  options.onnx.input_shapes[name] = shape;
}

void add_bind_option(LoadOptions& options, const std::string& value) {
  const size_t eq = value.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == value.size())
    usage_error("--bind expects NAME=FILE.npy (a graph input and its value), got '" + value + "'");
  const std::string name = value.substr(0, eq);
  if (options.onnx.bindings.count(name)) usage_error("--bind gives input '" + name + "' twice");
  options.onnx.bindings[name] = read_npy(value.substr(eq + 1));
}

bool onnx_import_option(Args& args, const std::string& flag, const std::optional<std::string>& v, LoadOptions& options) {
  if (flag == "--shape") {
    add_shape_option(options, args.value(flag, v));
  } else if (flag == "--bind") {
    add_bind_option(options, args.value(flag, v));
  } else if (flag == "--narrow-float64") {
    no_inline_value(args, flag, v);
    options.onnx.narrow_float64 = true;
  } else {
    return false;
  }
  return true;
}

void add_max_fold_option(LoadOptions& options, const std::string& value) {
  if (value.empty() || value.size() > 18 || value.find_first_not_of("0123456789") != std::string::npos)
    usage_error("--max-fold-bytes expects a number of bytes, got '" + value + "'");
  options.onnx.max_folded_bytes = std::stoll(value);
}

void add_backend_option(LoadOptions& options, const std::string& value) {
  if (!options.backend.backends.empty()) usage_error("--backend is given twice; list every backend in one --backend");
  size_t pos = 0;
  while (pos <= value.size()) {
    size_t comma = value.find(',', pos);
    if (comma == std::string::npos) comma = value.size();
    std::string name = value.substr(pos, comma - pos);
    if (name.empty()) usage_error("--backend expects names separated by commas, e.g. onednn,reference; got '" + value + "'");
    options.backend.backends.push_back(name);
    pos = comma + 1;
  }
}

int cmd_import(Args& args) {
  std::string model, out;
  LoadOptions load = cli_load_options();
  bool list = false;
  while (!args.done()) {
    std::string flag, positional;
    std::optional<std::string> v;
    args.next(&flag, &v, &positional);
    if (flag.empty()) {
      if (!model.empty()) usage_error("`weft import` takes one model, got '" + model + "' and '" + positional + "'");
      model = positional;
    } else if (flag == "-o" || flag == "--output") {
      out = args.value(flag, v);
    } else if (onnx_import_option(args, flag, v, load)) {
    } else if (flag == "--max-fold-bytes") {
      add_max_fold_option(load, args.value(flag, v));
    } else if (flag == "--list-ops") {
      no_inline_value(args, flag, v);
      list = true;
    } else if (flag == "--custom-ops") {
      add_custom_ops_option(args.value(flag, v));
    } else if (flag == "--keep-permutes") {
      no_inline_value(args, flag, v);
      load.onnx.cancel_layout_pairs = false;
    } else if (flag == "-h" || flag == "--help") {
      std::cout << kImportHelp;
      return kExitOk;
    } else {
      unknown_option(args, flag);
    }
  }
  if (list) {
    for (const std::string& op : onnx_supported_ops()) std::cout << op << "\n";
    return kExitOk;
  }
  if (model.empty()) usage_error("`weft import` needs an ONNX or TOSA model (see `weft import --help`)");
  if (out.empty()) usage_error("`weft import` needs -o OUT.weft (or -o - for stdout)");
  const bool tosa = model.size() > 5 && model.substr(model.size() - 5) == ".tosa";
  Module m = tosa ? tosa_file::read(model) : import_onnx(model, load.onnx);
  if (out == "-") {
    std::cout << print_weft(m);
  } else {
    save_weft(m, out);
  }
  return kExitOk;
}

}  // namespace weft::cli
