// `weft spirv dis|as|val` (SPIR-V graph modules as text and their validation) and
// `weft compile MODEL --emit spirv` (the portable artifact, until the VGF container carries it).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "cli.h"
#include "weft/custom.h"
#include "weft/error.h"
#include "weft/iospec.h"
#include "weft/npy.h"
#include "weft/spirv.h"
#include "compiler/narrow.h"
#include "weft/tosa_file.h"
#include "weft/text.h"
#include "weft/verify.h"

namespace weft::cli {

const char* const kSpirvHelp = R"(Usage: weft spirv <dis|as|val> ...

SPIR-V graph modules (SPV_ARM_graph, SPV_ARM_tensors, TOSA.001000.1):

  weft spirv dis FILE.spv [-o OUT.spvasm] [--raw-id] [--no-header] [--offsets]
      Disassemble to text (friendly %names from OpName unless --raw-id).
  weft spirv as FILE.spvasm -o FILE.spv [--target-env ENV]
      Assemble text (what `dis` prints) into a binary module. The SPIR-V version is the text's
      "; Version:" line, else the highest ENV takes (default universal1.6: 1.6).
  weft spirv val FILE.spv|FILE.spvasm [--target-env ENV] [--strict] [--rules]
      Validate; exit status 0 when valid, 1 with one diagnostic per rule broken otherwise.
      --target-env  universal1.0-1.6 (default universal1.6), spv1.0-1.6 or vulkan1.0-1.4, as
                    spirv-val takes it: bounds the SPIR-V version, enables the Vulkan-only rules
      --strict      also Weft's rules beyond the specifications (TOSA level limits, every graph
                    output set; marked "strict" by --rules)
      --rules       lists every rule the validator checks.
)";

const char* const kCompileHelp = R"(Usage: weft compile MODEL -o FILE.vgf [--shape NAME=DIMS]... [--custom-ops FILE]...
                    [--iospec FILE.yaml [--latched NAME]... [--target FILE]]
       weft compile MODEL --emit spirv -o FILE.spv
       weft compile MODEL -o FILE.tosa
MODEL: .weft, .onnx, .tosa or .vgf.

Verifies MODEL (an ONNX model is imported and lowered to TOSA first) and writes it as a VGF
container (--emit vgf, the default for an output ending in .vgf): a GRAPH module and segment per
run of TOSA operators, a COMPUTE module and segment per custom shader node, a resource per input,
output, intermediate and graph constant, and the constants' data (docs/vgf.md). With --emit spirv, writes the bare SPIR-V graph module instead;
with --emit tosa (the default for an output ending in .tosa), a TOSA 1.0 FlatBuffer (docs/tosa-file.md).
Constants larger than 16 elements become graph constants (OpGraphConstantARM) whose data stays
out of the module: with --emit spirv they are written as FILE.constants/<GraphConstantID>.npy.

Options:
  --emit vgf|spirv|tosa  Output kind (default: from the output's extension, .vgf or .tosa)
  --type-narrowing MODE  fp32 -> fp16, as Arm's model converter's option of the same name: none
                      (default), full, partial (conv/pool accumulators stay fp32) or full_preserve_io
                      (fp32 inputs and outputs, CASTs at the boundary); docs/tosa-file.md
  -o, --output FILE   Output path
  --shape NAME=DIMS   Static shape of an ONNX input with dynamic dimensions (repeatable)
  --explain           Also print how the runtime on this machine partitions the model: which
                      backend runs each node or fused group, and why a node is not offloaded
  --backend LIST      Backend priority for --explain, e.g. vulkan,onednn,reference (the artifact
                      itself is portable and does not depend on it)
  --device SEL        Vulkan device for --explain (see `weft devices`)
  --custom-ops FILE   Register the custom operators of an ops file (JSON, docs/custom-ops.md):
                      matching ONNX nodes and .weft CUSTOM nodes become shader nodes, their GLSL
                      is compiled here and each becomes a COMPUTE segment of the VGF (repeatable)
  --keep-permutes     Keep every NCHW<->NHWC permute around custom shader nodes, also the pairs
                      that cancel between adjacent shader nodes
  --iospec FILE.yaml  Also write the model's IOSpec (docs/iospec.md): every input and output with
                      its length, padding, precision and quantization, and the sequences
  --latched NAME      An input that keeps its value until rewritten (its own sequence; repeatable)
  --target FILE       The IOSpec target description (word size, padding granule, core id)
  -h, --help          Show this help
)";

namespace {

std::vector<uint32_t> load_module(const std::string& path) {
  // .spvasm (or anything that is not a binary module) is assembled; binaries are read as words.
  std::string bytes = read_file(path);
  bool text = path.size() > 7 && path.substr(path.size() - 7) == ".spvasm";
  if (text) return spirv::assemble(bytes, path);
  return spirv::words_from_bytes(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), path);
}

void write_text(const std::string& path, const std::string& text) {
  if (path.empty() || path == "-") {
    std::cout << text;
    return;
  }
  std::ofstream f(path, std::ios::binary);
  if (!f || !(f << text) || !f.flush()) throw Error(ErrorCode::kIo, "cannot write file", {.file = path});
}

int spirv_dis(Args& args) {
  std::string in, out;
  spirv::DisassembleOptions opt;
  while (!args.done()) {
    std::string flag, positional;
    std::optional<std::string> v;
    args.next(&flag, &v, &positional);
    if (flag.empty()) {
      if (!in.empty()) usage_error("`weft spirv dis` takes one module, got '" + in + "' and '" + positional + "'");
      in = positional;
    } else if (flag == "-o" || flag == "--output") {
      out = args.value(flag, v);
    } else if (flag == "--raw-id") {
      no_inline_value(args, flag, v);
      opt.friendly_names = false;
    } else if (flag == "--no-header") {
      no_inline_value(args, flag, v);
      opt.header = false;
    } else if (flag == "--offsets") {
      no_inline_value(args, flag, v);
      opt.offsets = true;
    } else {
      unknown_option(args, flag);
    }
  }
  if (in.empty()) usage_error("`weft spirv dis` needs a .spv file (see `weft spirv --help`)");
  std::vector<uint32_t> words = load_module(in);
  std::string text;
  try {
    text = spirv::disassemble(words, opt);
  } catch (const Error& e) {
    throw e.with_context({.file = in});  // the stream's errors name the word offset; add the file
  }
  write_text(out, text);
  return kExitOk;
}

// --target-env's value, checked against the environments the validator knows.
std::string target_env_value(Args& args, const std::string& flag, const std::optional<std::string>& v) {
  std::string env = args.value(flag, v);
  if (!spirv::target_environment_version(env)) {
    std::string names;
    for (const char* e : spirv::target_environments()) names += (names.empty() ? "" : ", ") + std::string(e);
    usage_error("--target-env: unknown environment '" + env + "' (one of " + names + ")");
  }
  return env;
}

int spirv_as(Args& args) {
  std::string in, out, env = "universal1.6";
  while (!args.done()) {
    std::string flag, positional;
    std::optional<std::string> v;
    args.next(&flag, &v, &positional);
    if (flag.empty()) {
      if (!in.empty()) usage_error("`weft spirv as` takes one file, got '" + in + "' and '" + positional + "'");
      in = positional;
    } else if (flag == "-o" || flag == "--output") {
      out = args.value(flag, v);
    } else if (flag == "--target-env") {
      env = target_env_value(args, flag, v);
    } else {
      unknown_option(args, flag);
    }
  }
  if (in.empty()) usage_error("`weft spirv as` needs a .spvasm file (see `weft spirv --help`)");
  if (out.empty()) usage_error("`weft spirv as` needs -o FILE.spv");
  std::vector<uint32_t> words = spirv::assemble(read_file(in), in, *spirv::target_environment_version(env));
  spirv::write_file(out, words);
  return kExitOk;
}

int spirv_val(Args& args) {
  std::string in;
  bool rules = false;
  spirv::ValidateOptions options;
  while (!args.done()) {
    std::string flag, positional;
    std::optional<std::string> v;
    args.next(&flag, &v, &positional);
    if (flag.empty()) {
      if (!in.empty()) usage_error("`weft spirv val` takes one module, got '" + in + "' and '" + positional + "'");
      in = positional;
    } else if (flag == "--target-env") {
      options.target_env = target_env_value(args, flag, v);
    } else if (flag == "--strict") {
      no_inline_value(args, flag, v);
      options.strict = true;
    } else if (flag == "--rules") {
      no_inline_value(args, flag, v);
      rules = true;
    } else {
      unknown_option(args, flag);
    }
  }
  if (rules) {
    for (const spirv::RuleInfo& r : spirv::validation_rules())
      std::cout << r.id << "  " << (r.strict ? "(strict) " : "") << r.description << "\n";
    if (in.empty()) return kExitOk;
  }
  if (in.empty()) usage_error("`weft spirv val` needs a module (see `weft spirv --help`)");
  std::vector<uint32_t> words = load_module(in);
  std::vector<spirv::Diagnostic> diags = spirv::validate(words, options);
  for (const spirv::Diagnostic& d : diags) std::cerr << in << ": " << d.str() << "\n";
  if (!diags.empty()) {
    std::cerr << in << ": " << diags.size() << " error" << (diags.size() == 1 ? "" : "s") << "\n";
    return kExitError;
  }
  std::cout << in << ": valid\n";
  return kExitOk;
}

}  // namespace

int cmd_spirv(Args& args) {
  if (args.done()) usage_error("`weft spirv` needs a subcommand: dis, as or val (see `weft spirv --help`)");
  std::string flag, sub;
  std::optional<std::string> v;
  args.next(&flag, &v, &sub);
  if (flag == "-h" || flag == "--help") {
    std::cout << kSpirvHelp;
    return kExitOk;
  }
  if (!flag.empty()) usage_error("`weft spirv` needs a subcommand before options: dis, as or val");
  Args rest = args.rest("spirv " + sub);
  if (sub == "dis") return spirv_dis(rest);
  if (sub == "as") return spirv_as(rest);
  if (sub == "val") return spirv_val(rest);
  usage_error("unknown subcommand '" + sub + "' of `weft spirv` (dis, as, val)");
}

int cmd_compile(Args& args) {
  std::string model, out, emit, iospec_out, target_file;
  compiler::Narrowing narrowing = compiler::Narrowing::kNone;
  std::vector<std::string> latched;
  LoadOptions load = cli_load_options();
  bool explain = false;
  while (!args.done()) {
    std::string flag, positional;
    std::optional<std::string> v;
    args.next(&flag, &v, &positional);
    if (flag.empty()) {
      if (!model.empty()) usage_error("`weft compile` takes one model, got '" + model + "' and '" + positional + "'");
      model = positional;
    } else if (flag == "-o" || flag == "--output") {
      out = args.value(flag, v);
    } else if (flag == "--emit") {
      emit = args.value(flag, v);
    } else if (onnx_import_option(args, flag, v, load)) {
    } else if (flag == "--backend") {
      add_backend_option(load, args.value(flag, v));
    } else if (flag == "--explain") {
      no_inline_value(args, flag, v);
      explain = true;
    } else if (flag == "--custom-ops") {
      add_custom_ops_option(args.value(flag, v));
    } else if (flag == "--keep-permutes") {
      no_inline_value(args, flag, v);
      load.onnx.cancel_layout_pairs = false;
    } else if (flag == "--device") {
      load.backend.device = args.value(flag, v);
    } else if (flag == "--iospec") {
      iospec_out = args.value(flag, v);
    } else if (flag == "--latched") {
      latched.push_back(args.value(flag, v));
    } else if (flag == "--target") {
      target_file = args.value(flag, v);
    } else if (flag == "--type-narrowing") {
      const std::string mode = args.value(flag, v);
      const std::optional<compiler::Narrowing> n = compiler::parse_narrowing(mode);
      if (!n) usage_error("--type-narrowing expects none, full, partial or full_preserve_io, got '" + mode + "'");
      narrowing = *n;
    } else if (flag == "-h" || flag == "--help") {
      std::cout << kCompileHelp;
      return kExitOk;
    } else {
      unknown_option(args, flag);
    }
  }
  if (model.empty()) usage_error("`weft compile` needs a model file (see `weft compile --help`)");
  if (emit.empty() && out.size() > 4 && out.substr(out.size() - 4) == ".vgf") emit = "vgf";
  if (emit.empty() && out.size() > 5 && out.substr(out.size() - 5) == ".tosa") emit = "tosa";
  if (emit.empty()) usage_error("`weft compile` needs -o FILE.vgf|FILE.tosa or --emit vgf|spirv|tosa");
  if (emit != "spirv" && emit != "vgf" && emit != "tosa")
    usage_error("--emit expects 'vgf', 'spirv' or 'tosa', got '" + emit + "'");
  if (!load.backend.backends.empty() && !explain) usage_error("--backend only matters with --explain for `weft compile`");
  if (out.empty()) usage_error("`weft compile` needs -o FILE." + std::string(emit == "spirv" ? "spv" : emit));
  if (iospec_out.empty() && (!latched.empty() || !target_file.empty()))
    usage_error("--latched and --target describe the IOSpec: give --iospec FILE.yaml too");
  Module m = read_model(model, load);
  if (narrowing != compiler::Narrowing::kNone) {
    try {
      const compiler::NarrowStats st = compiler::narrow_fp32_to_fp16(m, narrowing);
      std::cout << model << ": narrowed to fp16 (" << compiler::narrowing_name(narrowing)
                << "): " << compiler::narrow_summary(st) << "\n";
    } catch (const Error& e) {
      throw e.with_context({.file = model});
    }
  }
  // Custom shader nodes: registered payloads filled in, GLSL/HLSL compiled to SPIR-V and validated,
  // payloads and resource contracts checked. A failure stops compilation.
  try {
    custom::prepare_module(m, model);
  } catch (const Error& e) {
    throw e.with_context({.file = model});
  }
  verify_or_throw(m);
  if (explain) std::cout << Model::from_module(m, load.backend)->explain();
  // The model's input/output contract, from the same module the artifact holds: derived (and its
  // errors reported) before anything is written, saved after the artifact.
  std::optional<iospec::IoSpec> spec;
  if (!iospec_out.empty()) {
    iospec::GenerateOptions gen;
    if (!target_file.empty()) gen.target = iospec::read_target(target_file);
    gen.latched = latched;
    try {
      spec = iospec::generate(m, gen);
    } catch (const Error& e) {
      throw e.with_context({.file = model});
    }
  }
  auto write_spec = [&] {
    if (!spec) return;
    iospec::save_yaml(*spec, iospec_out);
    std::cout << iospec_out << ": IOSpec, " << spec->inputs.size() << " inputs, " << spec->outputs.size()
              << " outputs, " << spec->simple_sequences.size() << " sequence"
              << (spec->simple_sequences.size() == 1 ? "" : "s") << "\n";
  };
  if (emit == "vgf") {
    int rc = 0;
    try {
      rc = compile_vgf(m, out);
    } catch (const Error& e) {
      throw e.with_context({.file = model});
    }
    write_spec();
    return rc;
  }
  if (emit == "tosa") {
    const std::vector<uint8_t> bytes = tosa_file::to_bytes(m);
    std::ofstream f(out, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!f) throw Error(ErrorCode::kIo, "cannot write the file", {.file = out});
    std::cout << out << ": TOSA 1.0 FlatBuffer, " << bytes.size() << " bytes, " << m.graphs().size() << " graph"
              << (m.graphs().size() == 1 ? "" : "s") << "\n";
    write_spec();
    return kExitOk;
  }

  spirv::Binary bin = spirv::encode(m);
  spirv::write_file(out, bin.words);
  size_t const_bytes = 0;
  if (!bin.constants.empty()) {
    std::filesystem::path dir = out + ".constants";
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw Error(ErrorCode::kIo, "cannot create directory: " + ec.message(), {.file = dir.string()});
    for (const spirv::GraphConstant& c : bin.constants) {
      write_npy((dir / (std::to_string(c.id) + ".npy")).string(), c.tensor);
      const_bytes += c.tensor.byte_size();
    }
  }
  std::cout << out << ": " << bin.words.size() * 4 << " bytes";
  if (!bin.constants.empty()) {
    std::cout << ", " << bin.constants.size() << " graph constants (" << const_bytes << " bytes) in " << out
              << ".constants/";
  }
  std::cout << "\n";
  write_spec();
  return kExitOk;
}

}  // namespace weft::cli
