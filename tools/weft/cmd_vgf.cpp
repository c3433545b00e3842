// `weft dump FILE.vgf` (the container as JSON) and the VGF path of `weft compile` (-o X.vgf).
#include <fstream>
#include <iostream>
#include <string>

#include "cli.h"
#include "weft/error.h"
#include "weft/text.h"
#include "weft/verify.h"
#include "weft/vgf.h"

namespace weft::cli {

const char* const kDumpHelp = R"(Usage: weft dump FILE.vgf [--disassemble] [--no-validate] [-o OUT.json]

Reads a VGF container (checking every offset, size and table; see docs/vgf.md) and prints it as
JSON: the header and section places, the modules, the resource table, the model sequence and
the constants with their sizes and FNV-1a hashes. Keys come in a fixed order, so the dumps of
two builds can be diffed.

Options:
  -d, --disassemble   Include each SPIR-V module's disassembly (and GLSL/HLSL sources)
  --no-validate       Do not run the SPIR-V validator on GRAPH modules
  -o, --output FILE   Write the JSON to FILE instead of stdout
  -h, --help          Show this help
)";

int cmd_dump(Args& args) {
  std::string in, out;
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
  std::string json = vgf::to_json(c, dump);
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
