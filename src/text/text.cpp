// File-level entry points of the text form: load_weft reads a file and resolves file("...")
// constants beside it; save_weft writes the text and the .npy files of large constants.
#include "weft/text.h"
#include "weft/io.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "text/lexer.h"
#include "text/printer.h"
#include "weft/npy.h"

namespace weft {
namespace {

namespace fs = std::filesystem;

std::string dir_of(const std::string& path) {
  fs::path dir = fs::path(path).parent_path();
  return dir.empty() ? std::string(".") : dir.string();
}

// Keeps names readable in file names while staying portable: letters, digits, '_', '-', '.'.
std::string sanitize(std::string_view name) {
  std::string s;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
              c == '-' || c == '.';
    s += ok ? c : '_';
  }
  if (s.empty() || s.find_first_not_of('.') == std::string::npos) s = "const" + s;
  return s;
}

// True when `path` already holds exactly `t` (same type and bytes), so it need not be written.
bool file_holds(const fs::path& path, const Tensor& t) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;
  try {
    Tensor on_disk = read_npy(path.string(), t.dtype());
    return on_disk.type() == t.type() && on_disk.byte_size() == t.byte_size() &&
           (t.byte_size() == 0 || std::memcmp(on_disk.bytes(), t.bytes(), t.byte_size()) == 0);
  } catch (const std::exception&) {
    return false;
  }
}

// Writes through a temporary file and a rename: the old file may be memory-mapped by the very
// tensor being saved (or by other loaded modules), and truncating it in place would pull the
// pages out from under them.
void write_npy_replacing(const fs::path& path, const Tensor& t) {
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  fs::path tmp = path;
  tmp += ".tmp";
  write_npy(tmp.string(), t);
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw Error(ErrorCode::kIo, "cannot replace " + path.string() + ": " + ec.message(),
                {.file = path.string()});
  }
}

// The name a constant's .npy file is derived from: its output value, or a VARIABLE's name.
std::string constant_label(const Graph& g, const Node& n) {
  if (!n.outputs.empty()) return g.value(n.outputs[0]).name;
  const OpDef& d = op_def(n.op);
  int i = d.attr_index("name");
  if (i >= 0 && static_cast<size_t>(i) < n.attrs.size()) {
    if (const auto* s = std::get_if<std::string>(&n.attrs[static_cast<size_t>(i)])) return *s;
  }
  return "const";
}

}  // namespace

Module load_weft(const std::string& path) {
  return parse_weft(read_file_bytes(path, kMaxTextModelBytes, "a .weft model"), path, dir_of(path));
}

void save_weft(const Module& module, const std::string& path, const PrintOptions& options) {
  const fs::path dir = dir_of(path);
  const std::string stem = fs::path(path).stem().string();

  // Large tensors of every node (CONST values, VARIABLE initial_value) go to .npy files.
  struct Pending {
    size_t gi, ni;
    const Tensor* t;
  };
  std::vector<Pending> large;
  std::set<std::string> taken;  // file names referenced by the text, so new ones do not collide
  for (size_t gi = 0; gi < module.graphs().size(); ++gi) {
    const Graph& g = module.graphs()[gi];
    for (size_t ni = 0; ni < g.nodes().size(); ++ni) {
      const Node& n = g.nodes()[ni];
      const OpDef& d = op_def(n.op);
      for (size_t i = 0; i < d.attrs.size() && i < n.attrs.size(); ++i) {
        if (d.attrs[i].kind != AttrKind::kTensor) continue;
        const Tensor* t = std::get_if<Tensor>(&n.attrs[i]);
        if (!t || !t->bytes() || static_cast<size_t>(t->num_elements()) <= options.inline_limit) continue;
        large.push_back({gi, ni, t});
        if (!n.data_file.empty()) taken.insert(n.data_file);
      }
    }
  }
  text::FileRefs files;
  for (const Pending& p : large) {
    const Graph& g = module.graphs()[p.gi];
    const Node& n = g.nodes()[p.ni];
    std::string rel = n.data_file;
    if (rel.empty()) {
      const std::string base = stem + "." + sanitize(constant_label(g, n));
      rel = base + ".npy";
      for (int k = 1; taken.count(rel); ++k) rel = base + "_" + std::to_string(k) + ".npy";
      taken.insert(rel);
    }
    const fs::path target = dir / rel;
    // A constant loaded from this very file (same directory, unchanged) is not rewritten.
    if (!file_holds(target, *p.t)) write_npy_replacing(target, *p.t);
    files[{p.gi, p.ni}] = rel;
  }

  const std::string text = text::print_module(module, options, files);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    throw Error(ErrorCode::kIo, "cannot create file: " + std::string(std::strerror(errno)), {.file = path});
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) throw Error(ErrorCode::kIo, "cannot write file", {.file = path});
}

}  // namespace weft
