// `weft dump FILE.vgf` (the container as JSON) and the VGF path of `weft compile` (-o X.vgf).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "cli.h"
#include "weft/error.h"
#include "weft/text.h"
#include "weft/verify.h"
#include "weft/vgf.h"

namespace weft::cli {

const char* const kDumpHelp = R"(Usage: weft dump FILE.vgf [--format weft|vgf_dump] [--disassemble] [--no-validate] [-o OUT.json]

Reads a VGF container (checking every offset, size and table; see docs/vgf.md) and prints it as
JSON: the header and section places, the modules, the resource table, the model sequence and
the constants with their sizes and FNV-1a hashes. Keys come in a fixed order, so the dumps of
two builds can be diffed. With --format vgf_dump, prints what Arm's `vgf_dump -i FILE` prints
(same keys and layout), for tools that read that.

Options:
  --format F          weft (default) or vgf_dump
  -d, --disassemble   Include each SPIR-V module's disassembly (and GLSL/HLSL sources)
  --no-validate       Do not run the SPIR-V validator on GRAPH modules
  -o, --output FILE   Write the JSON to FILE instead of stdout
  -h, --help          Show this help
)";

const char* const kScenarioHelp = R"(Usage: weft scenario MODEL.vgf [-o SCENARIO.json] [--input NAME=FILE.npy]... [--output NAME=FILE.npy]...
                     [--boundaries]

Writes a scenario for Arm's ML SDK Scenario Runner that runs the container: the VGF as a graph
resource, a tensor (or buffer) resource per model input and output reading or writing .npy files,
one dispatch_graph command binding them, and for custom-operator (COMPUTE) segments with push
constants their bytes as .npy files beside the scenario. Paths in the scenario are relative to it.

Options:
  -o, --output-file F  Write the scenario to F (default: stdout; push constant files need -o)
  --input NAME=FILE    The .npy file of model input NAME (default: NAME.npy)
  --output NAME=FILE   The .npy file the runner writes model output NAME to (default: NAME.npy)
  --boundaries         Add mark_boundary commands around the dispatch (frame capture tools)
  -h, --help           Show this help
)";

int cmd_scenario(Args& args) {
  std::string in, out;
  std::vector<std::pair<std::string, std::string>> ins, outs;
  vgf::ScenarioOptions options;
  auto pair = [&](const std::string& flag, const std::string& v) {
    size_t eq = v.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == v.size()) usage_error(flag + " takes NAME=FILE.npy, got '" + v + "'");
    return std::make_pair(v.substr(0, eq), v.substr(eq + 1));
  };
  while (!args.done()) {
    std::string flag, positional;
    std::optional<std::string> v;
    args.next(&flag, &v, &positional);
    if (flag.empty()) {
      if (!in.empty()) usage_error("`weft scenario` takes one file, got '" + in + "' and '" + positional + "'");
      in = positional;
    } else if (flag == "-h" || flag == "--help") {
      std::cout << kScenarioHelp;
      return kExitOk;
    } else if (flag == "-o" || flag == "--output-file") {
      out = args.value(flag, v);
    } else if (flag == "--input") {
      ins.push_back(pair(flag, args.value(flag, v)));
    } else if (flag == "--output") {
      outs.push_back(pair(flag, args.value(flag, v)));
    } else if (flag == "--boundaries") {
      no_inline_value(args, flag, v);
      options.boundaries = true;
    } else {
      unknown_option(args, flag);
    }
  }
  if (in.empty()) usage_error("`weft scenario` needs a .vgf file (see `weft scenario --help`)");
  vgf::Container c = vgf::load(in);
  for (const std::string& w : c.warnings) std::cerr << "weft: warning: " << in << ": " << w << "\n";
  const std::filesystem::path base = out.empty() ? std::filesystem::current_path() : std::filesystem::absolute(out).parent_path();
  options.vgf_path = std::filesystem::absolute(in).lexically_relative(base).string();
  // Paths by model name, in the container's order.
  auto by_name = [&](const std::vector<std::pair<std::string, std::string>>& given, const std::vector<std::string>& names,
                     size_t count, const char* what) {
    std::vector<std::string> paths;
    for (const auto& [name, path] : given) {
      if (std::find(names.begin(), names.end(), name) == names.end()) {
        std::string list;
        for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
        usage_error(std::string("--") + what + " " + name + ": the model has no " + what + " of that name (" +
                    (list.empty() ? std::string("it names none") : list) + ")");
      }
    }
    for (size_t i = 0; i < count; ++i) {
      std::string p = i < names.size() ? names[i] + ".npy" : std::string(what) + "_" + std::to_string(i) + ".npy";
      for (const auto& [name, path] : given)
        if (i < names.size() && name == names[i]) p = path;
      paths.push_back(p);
    }
    return paths;
  };
  options.inputs = by_name(ins, c.sequence.input_names, c.sequence.inputs.size(), "input");
  options.outputs = by_name(outs, c.sequence.output_names, c.sequence.outputs.size(), "output");
  vgf::Scenario sc = vgf::to_scenario(c, options);
  if (out.empty()) {
    if (!sc.files.empty())
      usage_error("this model's scenario reads " + std::to_string(sc.files.size()) +
                  " push constant file(s) written beside it: give -o SCENARIO.json");
    std::cout << sc.json;
    return kExitOk;
  }
  auto write = [](const std::string& path, const void* data, size_t size) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    if (!f || !f.write(static_cast<const char*>(data), static_cast<std::streamsize>(size)) || !f.flush())
      throw Error(ErrorCode::kIo, "cannot write file", {.file = path});
  };
  write(out, sc.json.data(), sc.json.size());
  for (const auto& [name, bytes] : sc.files) write((base / name).string(), bytes.data(), bytes.size());
  std::cout << out << ": scenario for " << in << " (" << c.sequence.inputs.size() << " inputs, "
            << c.sequence.outputs.size() << " outputs" << (sc.files.empty() ? "" : ", " + std::to_string(sc.files.size()) + " push constant files")
            << ")\n";
  return kExitOk;
}

int cmd_dump(Args& args) {
  std::string in, out, format = "weft";
  vgf::DumpOptions dump;
  vgf::ReadOptions read;
  while (!args.done()) {
    std::string flag, positional;
    std::optional<std::string> v;
    args.next(&flag, &v, &positional);
    if (flag.empty()) {
      if (!in.empty()) usage_error("`weft dump` takes one file, got '" + in + "' and '" + positional + "'");
      in = positional;
    } else if (flag == "-h" || flag == "--help") {
      std::cout << kDumpHelp;
      return kExitOk;
    } else if (flag == "-d" || flag == "--disassemble") {
      no_inline_value(args, flag, v);
      dump.disassemble = true;
    } else if (flag == "--format") {
      format = args.value(flag, v);
      if (format != "weft" && format != "vgf_dump") usage_error("--format: weft or vgf_dump, got '" + format + "'");
    } else if (flag == "--no-validate") {
      no_inline_value(args, flag, v);
      read.validate_modules = false;
    } else if (flag == "-o" || flag == "--output") {
      out = args.value(flag, v);
    } else {
      unknown_option(args, flag);
    }
  }
  if (in.empty()) usage_error("`weft dump` needs a .vgf file (see `weft dump --help`)");
  vgf::Container c = vgf::load(in, read);
  for (const std::string& w : c.warnings) std::cerr << "weft: warning: " << in << ": " << w << "\n";
  if (format == "vgf_dump" && dump.disassemble)
    usage_error("--disassemble is not part of vgf_dump's output (--format weft has it)");
  std::string json = format == "vgf_dump" ? vgf::to_vgf_dump_json(c) : vgf::to_json(c, dump);
  if (out.empty() || out == "-") {
    std::cout << json;
  } else {
    std::ofstream f(out, std::ios::binary);
    if (!f || !(f << json) || !f.flush()) throw Error(ErrorCode::kIo, "cannot write file", {.file = out});
  }
  return kExitOk;
}

int compile_vgf(const Module& m, const std::string& out) {
  vgf::Container c = vgf::from_module(m);
  vgf::save(c, out);
  size_t const_bytes = 0;
  for (const vgf::Constant& k : c.constants) const_bytes += k.data.size();
  size_t spirv_bytes = 0, compute = 0;
  for (const vgf::Module& mod : c.modules) {
    spirv_bytes += mod.spirv.size() * 4;
    compute += mod.type == vgf::ModuleType::kCompute;
  }
  std::cout << out << ": VGF " << c.header.version.str() << ", " << c.modules.size() << " module"
            << (c.modules.size() == 1 ? "" : "s")
            << (compute ? " (" + std::to_string(c.modules.size() - compute) + " GRAPH, " + std::to_string(compute) + " COMPUTE)"
                        : std::string())
            << ", " << spirv_bytes << " bytes of SPIR-V, "
            << c.resources.size() << " resources, " << c.constants.size() << " constants (" << const_bytes
            << " bytes)\n";
  return kExitOk;
}

}  // namespace weft::cli
