// Registration of custom operators: OpSpec validation, the declarative ops file (JSON) and the
// process-wide registry (docs/custom-ops.md).
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <mutex>
#include <set>

#include <nlohmann/json.hpp>

#include "custom/registry_internal.h"
#include "weft/io.h"

namespace weft::custom {

namespace detail {

std::string op_label(const OpSpec& spec) {
  return "custom operator " + spec.domain_name + "::" + spec.operator_name;
}

std::string FieldNames::field(const std::string& api_name, const std::string& file_name) const {
  if (file) return prefix.empty() ? file_name : prefix + "." + file_name;
  return prefix.empty() ? api_name : prefix + ": " + api_name;
}

std::optional<ShaderLanguage> parse_language(std::string_view name) {
  if (name == "GLSL") return ShaderLanguage::kGlsl;
  if (name == "HLSL") return ShaderLanguage::kHlsl;
  if (name == "SPIR-V") return ShaderLanguage::kSpirv;
  return std::nullopt;
}

std::optional<DType> parse_dtype_name(std::string_view name) {
  if (name.empty() || name == "shape" || name == "shape_t") return std::nullopt;
  if (auto t = parse_dtype(name)) return t;
  return parse_dtype(std::string(name) + "_t");  // "fp32" -> "fp32_t"
}

bool is_compiled(const OpSpec& spec) { return spec.language == "SPIR-V" && !spec.spirv.empty(); }

}  // namespace detail

namespace {

using detail::FieldNames;
using detail::op_label;

[[noreturn]] void fail(const std::string& origin, const std::string& path, const std::string& rule) {
  throw Error(ErrorCode::kInvalidArgument, path.empty() ? rule : path + ": " + rule, Location{.file = origin});
}

std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

std::string sizes_str(const std::array<uint32_t, 3>& a) {
  return "[" + std::to_string(a[0]) + ", " + std::to_string(a[1]) + ", " + std::to_string(a[2]) + "]";
}

std::string idx(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

std::string onnx_label(const OpSpec& s) {
  return "ONNX operator " + (s.onnx_domain.empty() ? s.onnx_op_type : s.onnx_domain + "::" + s.onnx_op_type);
}

void check_syntax(const std::string& expr, const std::string& what, const std::string& origin) {
  try {
    detail::check_expr_syntax(expr, what);
  } catch (const Error& e) {
    throw e.with_context(Location{.file = origin});
  }
}

const std::vector<std::string> kTypes{"Buffer", "Tensor", "Image"};
const std::vector<std::string> kFilters{"nearest", "linear"};
const std::vector<std::string> kAddressModes{"clamp_to_edge", "repeat", "mirrored_repeat", "clamp_to_border"};

bool one_of(const std::string& s, const std::vector<std::string>& v) {
  for (const std::string& x : v)
    if (s == x) return true;
  return false;
}

void validate_resource(const ResourceSpec& r, bool output, size_t i, const std::string& origin, const FieldNames& n) {
  const std::string base = idx(output ? "outputs" : "inputs", i);
  auto F = [&](const char* key) { return n.field(base + "." + key, base + "." + key); };
  if (!one_of(r.type, kTypes)) fail(origin, F("type"), "unknown type '" + r.type + "' (known: " + join(kTypes) + ")");
  if (!r.descriptor_type.empty() && !descriptor_type_value(r.descriptor_type))
    fail(origin, F("descriptor_type"),
         "unknown descriptor type '" + r.descriptor_type + "' (a VK_DESCRIPTOR_TYPE_* name, e.g. "
         "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER)");
  if (!r.vkformat.empty() && !find_format(r.vkformat))
    fail(origin, F("vkformat"), "unknown format '" + r.vkformat + "' (a VK_FORMAT_* name, e.g. VK_FORMAT_R32_SFLOAT)");
  if (r.binding < -1) fail(origin, F("binding"), "must be >= 0 (got " + std::to_string(r.binding) + ")");
  if (r.descriptor_set < 0)
    fail(origin, F("descriptor_set"), "must be >= 0 (got " + std::to_string(r.descriptor_set) + ")");
  if (!r.layout.empty() && r.layout != "NHWC")
    fail(origin, F("layout"), "must be \"\" or \"NHWC\" (got '" + r.layout + "')");
  if (!r.filter.empty() && !one_of(r.filter, kFilters))
    fail(origin, F("filter"), "unknown filter '" + r.filter + "' (known: " + join(kFilters) + ")");
  if (!r.address_mode.empty() && !one_of(r.address_mode, kAddressModes))
    fail(origin, F("address_mode"), "unknown address mode '" + r.address_mode + "' (known: " + join(kAddressModes) + ")");
  if ((!r.filter.empty() || !r.address_mode.empty()) && r.type != "Image")
    fail(origin, F(r.filter.empty() ? "address_mode" : "filter"),
         "applies to sampled images (type Image) only, this resource is a " + r.type);
  if (!output) {
    if (!r.shape.empty()) fail(origin, F("shape"), "applies to outputs only (an input's shape is the node's)");
    if (!r.dtype.empty()) fail(origin, F("dtype"), "applies to outputs only (an input's type is the node's)");
    return;
  }
  if (r.shape.empty())
    fail(origin, F("shape"), "is required for an output: one expression per dimension, e.g. [\"in0[0]\", \"in0[1]\"]");
  if (r.layout == "NHWC" && r.shape.size() != 4)
    fail(origin, F("shape"), "has " + std::to_string(r.shape.size()) + " dimensions; an NHWC output has 4");
  for (size_t d = 0; d < r.shape.size(); ++d) check_syntax(r.shape[d], idx(F("shape"), d), origin);
  if (!r.dtype.empty() && !detail::parse_dtype_name(r.dtype))
    fail(origin, F("dtype"),
         "unknown element type '" + r.dtype + "' (known: fp32, fp16, bf16, fp8e4m3, fp8e5m2, i32, i16, i8, i4, i48, bool)");
}

std::string read_all(const std::filesystem::path& p, bool binary, bool& ok, std::string& why) {
  (void)binary;
  try {
    std::string s = read_file_bytes(p.string(), kMaxConfigBytes, "a shader file");
    ok = true;
    return s;
  } catch (const Error& e) {
    ok = false;
    why = e.message();  // "cannot open a shader file: <why>": the caller names the file already
    for (const char* prefix : {"cannot open a shader file: ", "cannot read a shader file: "})
      if (why.rfind(prefix, 0) == 0) why.erase(0, std::strlen(prefix));
    return {};
  }
}

}  // namespace

namespace detail {

void validate_spec(const OpSpec& spec, const std::string& origin, const FieldNames& n) {
  if (spec.operator_name.empty()) fail(origin, n.field("operator_name", "operator_name"), "must not be empty");
  if (spec.domain_name.empty()) fail(origin, n.field("domain_name", "domain_name"), "must not be empty");
  if (spec.onnx_op_type.empty() && !spec.onnx_domain.empty())
    fail(origin, n.field("onnx_op_type", "replaces.onnx_op_type"),
         "must not be empty when onnx_domain is set ('" + spec.onnx_domain + "')");

  const std::optional<ShaderLanguage> lang = parse_language(spec.language);
  if (!lang)
    fail(origin, n.field("language", "shader.language"),
         "unknown shader language '" + spec.language + "' (known: GLSL, HLSL, SPIR-V)");
  if (*lang == ShaderLanguage::kSpirv) {
    if (spec.spirv.empty() && spec.source_file.empty())
      fail(origin, n.field("spirv", "shader.spirv_file"),
           "a SPIR-V shader needs its words (spirv) or a .spv file (source_file)" +
               std::string(spec.source.empty() ? "" : "; source holds GLSL/HLSL text"));
  } else {
    if (!spec.spirv.empty())
      fail(origin, n.field("spirv", "shader.spirv_file"), "SPIR-V words given but the language is " + spec.language);
    if (!spec.source.empty() && !spec.source_file.empty())
      fail(origin, n.field("source", "shader"), "give either source or source_file, not both");
    if (spec.source.empty() && spec.source_file.empty())
      fail(origin, n.field("source", "shader"), "a " + spec.language + " shader needs source text or a source_file");
  }
  if (spec.entry_point.empty()) fail(origin, n.field("entry_point", "shader.entry_point"), "must not be empty");
  for (uint32_t s : spec.workgroup_size)
    if (s < 1)
      fail(origin, n.field("workgroup_size", "workgroup_size"),
           "each size must be >= 1 (got " + sizes_str(spec.workgroup_size) + ")");

  for (size_t i = 0; i < spec.inputs.size(); ++i) validate_resource(spec.inputs[i], false, i, origin, n);
  if (spec.outputs.empty()) fail(origin, n.field("outputs", "outputs"), "at least one output is required");
  for (size_t i = 0; i < spec.outputs.size(); ++i) validate_resource(spec.outputs[i], true, i, origin, n);

  std::set<std::string> names;
  for (size_t i = 0; i < spec.push_constants.size(); ++i) {
    const OpSpec::Push& p = spec.push_constants[i];
    const std::string base = idx("push_constants", i);
    if (!is_identifier(p.name))
      fail(origin, n.field(base + ".name", base + ".name"),
           "'" + p.name + "' is not a name (letters, digits and '_', not starting with a digit)");
    if (!names.insert(p.name).second)
      fail(origin, n.field(base + ".name", base + ".name"), "push constant '" + p.name + "' is defined twice");
    if (p.size != 4)
      fail(origin, n.field(base + ".size", base + ".size"),
           "must be 4 (a 32-bit int, uint or float; got " + std::to_string(p.size) + ")");
    if (p.value.empty()) fail(origin, n.field(base + ".value", base + ".value"), "must not be empty");
    check_syntax(p.value, n.field(base + ".value", base + ".value"), origin);
  }
  for (size_t i = 0; i < 3; ++i) {
    const std::string f = n.field(idx("invocations", i), idx("invocations", i));
    if (spec.invocations[i].empty()) fail(origin, f, "must not be empty");
    check_syntax(spec.invocations[i], f, origin);
  }
  for (const auto& [name, values] : spec.allowed_attrs) {
    const std::string f = n.field("allowed_attrs", "attributes");
    if (name.empty()) fail(origin, f, "an attribute name is empty");
    if (values.empty()) fail(origin, f + "." + name, "lists no allowed value");
  }
}

void compile_spec(OpSpec& spec, const std::string& origin, const std::string& base_dir, const FieldNames& n) {
  const ShaderLanguage lang = *parse_language(spec.language);
  std::string code;
  std::vector<uint32_t> words = spec.spirv;
  std::string field;
  std::string name = spec.operator_name;
  if (is_compiled(spec)) {
    field = n.field("spirv", "shader.spirv_file");
    if (!spec.source_file.empty()) name = spec.source_file;
  } else if (!spec.source_file.empty()) {
    field = n.field("source_file", lang == ShaderLanguage::kSpirv ? "shader.spirv_file" : "shader.file");
    std::filesystem::path p(spec.source_file);
    if (p.is_relative() && !base_dir.empty()) p = std::filesystem::path(base_dir) / p;
    bool ok = false;
    std::string why;
    std::string bytes = read_all(p, lang == ShaderLanguage::kSpirv, ok, why);
    if (!ok) fail(origin, field, "cannot read '" + p.string() + "': " + why);
    spec.source_file = p.string();
    name = p.string();
    if (lang == ShaderLanguage::kSpirv) {
      if (bytes.size() % 4 != 0 || bytes.empty())
        fail(origin, field, "'" + p.string() + "' is not SPIR-V: its size (" + std::to_string(bytes.size()) +
                                " bytes) is not a non-zero multiple of 4");
      words.resize(bytes.size() / 4);
      for (size_t i = 0; i < words.size(); ++i) {
        const auto* b = reinterpret_cast<const unsigned char*>(bytes.data() + 4 * i);
        words[i] = uint32_t{b[0]} | uint32_t{b[1]} << 8 | uint32_t{b[2]} << 16 | uint32_t{b[3]} << 24;
      }
    } else {
      code = std::move(bytes);
    }
  } else {
    field = n.field("source", "shader.source");
    code = spec.source;
  }
  CompiledShader compiled;
  try {
    compiled = compile_shader(lang, code, words, spec.entry_point, name);
  } catch (const Error& e) {
    fail(origin, field, e.message());
  }
  const auto& ls = compiled.local_size;
  if (ls[0] && ls[1] && ls[2] && ls != spec.workgroup_size)
    fail(origin, n.field("workgroup_size", "workgroup_size"),
         "is " + sizes_str(spec.workgroup_size) + " but the shader declares local_size " + sizes_str(ls));
  spec.language = "SPIR-V";
  spec.spirv = std::move(compiled.spirv);
}

}  // namespace detail

// ---- The registry ---------------------------------------------------------------------------------

namespace {

struct Entry {
  OpSpec spec;
  std::string origin;
};
using Key = std::pair<std::string, std::string>;  // (domain_name, operator_name)
using Registry = std::map<Key, Entry>;

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
Registry& registry() {
  static Registry r;
  return r;
}

std::string normalize_onnx_domain(std::string_view d) { return d == "ai.onnx" ? "" : std::string(d); }

// Adds `spec` to `r`, replacing the one with the same (domain_name, operator_name); an ONNX
// (domain, op_type) held by another operator is an error.
void insert(Registry& r, const OpSpec& spec, const std::string& origin, const std::string& path) {
  const Key key{spec.domain_name, spec.operator_name};
  if (!spec.onnx_op_type.empty()) {
    for (const auto& [k, e] : r) {
      if (k == key || e.spec.onnx_op_type != spec.onnx_op_type || e.spec.onnx_domain != spec.onnx_domain) continue;
      fail(origin, path,
           onnx_label(spec) + " is already replaced by " + op_label(e.spec) +
               (e.origin.empty() ? "" : " (registered from " + e.origin + ")") +
               "; unregister that one first");
    }
  }
  r[key] = Entry{spec, origin};
}

// ---- The ops file (JSON) ----

using Json = nlohmann::json;

struct FileReader {
  std::string file;

  [[noreturn]] void fail(const std::string& path, const std::string& rule) const { custom::fail(file, path, rule); }

  static size_t distance(const std::string& a, const std::string& b) {
    std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      cur[0] = i;
      for (size_t j = 1; j <= b.size(); ++j)
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      std::swap(prev, cur);
    }
    return prev[b.size()];
  }

  void keys(const Json& o, const std::string& path, const std::vector<std::string>& known,
            const std::vector<std::string>& required = {}) const {
    if (!o.is_object()) fail(path, std::string("must be an object (got ") + o.type_name() + ")");
    for (const auto& [k, v] : o.items()) {
      if (one_of(k, known)) continue;
      std::string near;
      for (const std::string& c : known)
        if (distance(k, c) <= 2 && (near.empty() || distance(k, c) < distance(k, near))) near = c;
      fail(path, "unknown key '" + k + "' (known: " + join(known) + ")" +
                     (near.empty() ? "" : "; did you mean '" + near + "'?"));
    }
    for (const std::string& r : required)
      if (!o.contains(r)) fail(path, "missing required key '" + r + "'");
  }

  std::string string(const Json& v, const std::string& path) const {
    if (!v.is_string()) fail(path, std::string("must be a string (got ") + v.type_name() + ")");
    return v.get<std::string>();
  }
  int64_t integer(const Json& v, const std::string& path, int64_t lo, int64_t hi) const {
    if (!v.is_number_integer()) fail(path, std::string("must be an integer (got ") + v.dump() + ")");
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi))
      fail(path, "must be <= " + std::to_string(hi) + " (got " + v.dump() + ")");
    const int64_t x = v.get<int64_t>();
    if (x < lo) fail(path, "must be >= " + std::to_string(lo) + " (got " + v.dump() + ")");
    if (x > hi) fail(path, "must be <= " + std::to_string(hi) + " (got " + v.dump() + ")");
    return x;
  }
  // An expression: a string, or a number written as one.
  std::string expression(const Json& v, const std::string& path) const {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number()) return v.dump();
    fail(path, std::string("must be an expression: a string or a number (got ") + v.type_name() + ")");
  }
  const Json& array(const Json& v, const std::string& path) const {
    if (!v.is_array()) fail(path, std::string("must be an array (got ") + v.type_name() + ")");
    return v;
  }

  ResourceSpec resource(const Json& o, const std::string& path, bool output) const {
    std::vector<std::string> known{"type",   "descriptor_type", "vkformat", "binding",
                                   "descriptor_set", "layout", "filter", "address_mode"};
    if (output) {
      known.push_back("shape");
      known.push_back("dtype");
    } else if (o.is_object() && (o.contains("shape") || o.contains("dtype"))) {
      fail(path + (o.contains("shape") ? ".shape" : ".dtype"), "applies to outputs only (an input's is the node's)");
    }
    keys(o, path, known, output ? std::vector<std::string>{"shape"} : std::vector<std::string>{});
    ResourceSpec r;
    if (o.contains("type")) r.type = string(o["type"], path + ".type");
    if (o.contains("descriptor_type")) r.descriptor_type = string(o["descriptor_type"], path + ".descriptor_type");
    if (o.contains("vkformat")) r.vkformat = string(o["vkformat"], path + ".vkformat");
    if (o.contains("binding")) r.binding = integer(o["binding"], path + ".binding", 0, INT32_MAX);
    if (o.contains("descriptor_set"))
      r.descriptor_set = integer(o["descriptor_set"], path + ".descriptor_set", 0, INT32_MAX);
    if (o.contains("layout")) r.layout = string(o["layout"], path + ".layout");
    if (o.contains("filter")) r.filter = string(o["filter"], path + ".filter");
    if (o.contains("address_mode")) r.address_mode = string(o["address_mode"], path + ".address_mode");
    if (output) {
      const Json& s = array(o["shape"], path + ".shape");
      if (s.empty()) fail(path + ".shape", "must list one expression per dimension (got [])");
      for (size_t d = 0; d < s.size(); ++d) r.shape.push_back(expression(s[d], idx(path + ".shape", d)));
      if (o.contains("dtype")) {
        r.dtype = string(o["dtype"], path + ".dtype");
        if (r.dtype.empty()) fail(path + ".dtype", "must not be empty (leave it out for the first input's type)");
      }
    }
    return r;
  }

  OpSpec entry(const Json& e, const std::string& p) const {
    keys(e, p,
         {"replaces", "operator_name", "domain_name", "shader", "workgroup_size", "inputs", "outputs", "push_constants",
          "invocations", "attributes"},
         {"operator_name", "domain_name", "shader", "workgroup_size", "inputs", "outputs", "invocations"});
    OpSpec s;
    if (e.contains("replaces")) {
      const Json& r = e["replaces"];
      keys(r, p + ".replaces", {"onnx_domain", "onnx_op_type"}, {"onnx_op_type"});
      if (r.contains("onnx_domain"))
        s.onnx_domain = normalize_onnx_domain(string(r["onnx_domain"], p + ".replaces.onnx_domain"));
      s.onnx_op_type = string(r["onnx_op_type"], p + ".replaces.onnx_op_type");
      if (s.onnx_op_type.empty()) fail(p + ".replaces.onnx_op_type", "must not be empty");
    }
    s.operator_name = string(e["operator_name"], p + ".operator_name");
    s.domain_name = string(e["domain_name"], p + ".domain_name");

    const std::string sp = p + ".shader";
    const Json& sh = e["shader"];
    keys(sh, sp, {"language", "source", "file", "spirv_file", "entry_point"});
    std::vector<std::string> given;
    for (const char* k : {"source", "file", "spirv_file"})
      if (sh.contains(k)) given.push_back(std::string("'") + k + "'");
    if (given.size() != 1)
      fail(sp, "give exactly one of 'source', 'file' and 'spirv_file' (got " +
                   (given.empty() ? std::string("none") : join(given, " and ")) + ")");
    const bool spirv = sh.contains("spirv_file");
    std::string language = spirv ? "SPIR-V" : "GLSL";
    if (sh.contains("language")) {
      language = string(sh["language"], sp + ".language");
      if (!detail::parse_language(language))
        fail(sp + ".language", "unknown shader language '" + language + "' (known: GLSL, HLSL, SPIR-V)");
      if (spirv && language != "SPIR-V")
        fail(sp + ".language", "is " + language + " but spirv_file holds SPIR-V (language \"SPIR-V\")");
      if (!spirv && language == "SPIR-V")
        fail(sp + ".language", "SPIR-V is binary: give it as spirv_file (source and file hold GLSL/HLSL text)");
    }
    s.language = language;
    if (sh.contains("source")) {
      s.source = string(sh["source"], sp + ".source");
      if (s.source.empty()) fail(sp + ".source", "must not be empty");
    }
    for (const char* k : {"file", "spirv_file"}) {
      if (!sh.contains(k)) continue;
      s.source_file = string(sh[k], sp + "." + k);
      if (s.source_file.empty()) fail(sp + "." + k, "must not be empty");
    }
    if (sh.contains("entry_point")) s.entry_point = string(sh["entry_point"], sp + ".entry_point");

    const Json& wg = array(e["workgroup_size"], p + ".workgroup_size");
    if (wg.size() != 3) fail(p + ".workgroup_size", "must be 3 integers >= 1 (got " + wg.dump() + ")");
    for (size_t i = 0; i < 3; ++i) {
      if (!wg[i].is_number_integer() || (wg[i].is_number_unsigned() && wg[i].get<uint64_t>() > UINT32_MAX) ||
          wg[i].get<int64_t>() < 1)
        fail(p + ".workgroup_size", "must be 3 integers >= 1 (got " + wg.dump() + ")");
      s.workgroup_size[i] = static_cast<uint32_t>(wg[i].get<int64_t>());
    }

    const Json& ins = array(e["inputs"], p + ".inputs");
    for (size_t i = 0; i < ins.size(); ++i) s.inputs.push_back(resource(ins[i], idx(p + ".inputs", i), false));
    const Json& outs = array(e["outputs"], p + ".outputs");
    for (size_t i = 0; i < outs.size(); ++i) s.outputs.push_back(resource(outs[i], idx(p + ".outputs", i), true));

    if (e.contains("push_constants")) {
      const Json& pcs = array(e["push_constants"], p + ".push_constants");
      for (size_t i = 0; i < pcs.size(); ++i) {
        const std::string q = idx(p + ".push_constants", i);
        keys(pcs[i], q, {"name", "size", "value"}, {"name", "value"});
        OpSpec::Push push;
        push.name = string(pcs[i]["name"], q + ".name");
        if (pcs[i].contains("size")) push.size = static_cast<uint32_t>(integer(pcs[i]["size"], q + ".size", 0, 1 << 16));
        push.value = expression(pcs[i]["value"], q + ".value");
        s.push_constants.push_back(std::move(push));
      }
    }

    const Json& inv = array(e["invocations"], p + ".invocations");
    if (inv.empty() || inv.size() > 3)
      fail(p + ".invocations", "must list 1 to 3 expressions (x, y, z; missing ones are 1), got " +
                                   std::to_string(inv.size()));
    for (size_t i = 0; i < inv.size(); ++i) s.invocations[i] = expression(inv[i], idx(p + ".invocations", i));

    if (e.contains("attributes")) {
      const Json& a = e["attributes"];
      if (!a.is_object()) fail(p + ".attributes", std::string("must be an object (got ") + a.type_name() + ")");
      for (const auto& [name, values] : a.items()) {
        const std::string q = p + ".attributes." + name;
        if (!values.is_array() || values.empty())
          fail(q, "must be a non-empty array of the allowed string values (got " + values.dump() + ")");
        std::vector<std::string> allowed;
        for (size_t i = 0; i < values.size(); ++i) allowed.push_back(string(values[i], idx(q, i)));
        s.allowed_attrs[name] = std::move(allowed);
      }
    }
    return s;
  }
};

// Parses JSON text; duplicate keys in an object are errors (a hand-written file).
Json parse_json(std::string_view text, const std::string& file) {
  struct Frame {
    bool array = false;
    size_t index = 0;  // elements seen so far (arrays)
    std::string key;
    std::set<std::string> keys;
  };
  std::vector<Frame> stack;
  auto path = [&] {
    std::string p;
    for (size_t i = 0; i + 1 < stack.size(); ++i) {
      const Frame& f = stack[i];
      if (f.array) p += "[" + std::to_string(f.index - 1) + "]";
      else p += (p.empty() ? "" : ".") + f.key;
    }
    return p;
  };
  auto element = [&] {
    if (!stack.empty() && stack.back().array) ++stack.back().index;
  };
  Json::parser_callback_t cb = [&](int, Json::parse_event_t ev, Json& parsed) {
    switch (ev) {
      case Json::parse_event_t::object_start:
      case Json::parse_event_t::array_start:
        element();
        stack.push_back(Frame{.array = ev == Json::parse_event_t::array_start});
        break;
      case Json::parse_event_t::key: {
        Frame& f = stack.back();
        f.key = parsed.get<std::string>();
        if (!f.keys.insert(f.key).second) {
          const std::string p = path();
          fail(file, p.empty() ? "(top level)" : p, "duplicate key '" + f.key + "'");
        }
        break;
      }
      case Json::parse_event_t::value: element(); break;
      case Json::parse_event_t::object_end:
      case Json::parse_event_t::array_end: stack.pop_back(); break;
    }
    return true;
  };
  try {
    return Json::parse(text, cb);
  } catch (const Json::parse_error& e) {
    Location loc{.file = file};
    if (e.byte > 0) {
      const size_t at = std::min(e.byte - 1, text.size());  // 0-based offset of the last character read
      loc.line = 1;
      size_t line_start = 0;
      for (size_t i = 0; i < at; ++i)
        if (text[i] == '\n') {
          ++loc.line;
          line_start = i + 1;
        }
      loc.column = static_cast<int>(at - line_start) + 1;
    }
    std::string m = e.what();
    const size_t pe = m.find("parse error");
    const size_t colon = pe == std::string::npos ? std::string::npos : m.find(": ", pe);
    if (colon != std::string::npos) m = m.substr(colon + 2);
    throw Error(ErrorCode::kParse, "invalid JSON: " + m, loc);
  }
}

}  // namespace

std::vector<OpSpec> read_ops_text(std::string_view text, const std::string& origin, const std::string& base_dir) {
  const Json doc = parse_json(text, origin);
  FileReader r{origin};
  r.keys(doc, "", {"custom_ops"}, {"custom_ops"});
  const Json& list = r.array(doc["custom_ops"], "custom_ops");

  std::vector<OpSpec> specs;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string p = idx("custom_ops", i);
    OpSpec s = r.entry(list[i], p);
    const FieldNames names{.prefix = p, .file = true};
    detail::validate_spec(s, origin, names);
    for (size_t j = 0; j < specs.size(); ++j) {
      if (specs[j].domain_name == s.domain_name && specs[j].operator_name == s.operator_name)
        fail(origin, p, op_label(s) + " is already defined by " + idx("custom_ops", j));
      if (!s.onnx_op_type.empty() && specs[j].onnx_domain == s.onnx_domain && specs[j].onnx_op_type == s.onnx_op_type)
        fail(origin, p + ".replaces", onnx_label(s) + " is already replaced by " + idx("custom_ops", j));
    }
    detail::compile_spec(s, origin, base_dir, names);
    specs.push_back(std::move(s));
  }
  return specs;
}

std::vector<OpSpec> read_ops_file(const std::string& path) {
  const std::string text = read_file_bytes(path, kMaxConfigBytes, "an ops file");
  return read_ops_text(text, path, std::filesystem::path(path).parent_path().string());
}

std::vector<std::string> register_ops_text(std::string_view text, const std::string& origin,
                                           const std::string& base_dir) {
  std::vector<OpSpec> specs = read_ops_text(text, origin, base_dir);
  std::vector<std::string> names;
  std::lock_guard<std::mutex> lock(registry_mutex());
  Registry next = registry();
  for (size_t i = 0; i < specs.size(); ++i) {
    insert(next, specs[i], origin, idx("custom_ops", i));
    names.push_back(specs[i].operator_name);
  }
  registry() = std::move(next);
  return names;
}

std::vector<std::string> register_ops_file(const std::string& path) {
  const std::string text = read_file_bytes(path, kMaxConfigBytes, "an ops file");
  return register_ops_text(text, path, std::filesystem::path(path).parent_path().string());
}

void register_op(OpSpec spec, const std::string& origin, const std::string& base_dir) {
  spec.onnx_domain = normalize_onnx_domain(spec.onnx_domain);
  const FieldNames names{.prefix = spec.operator_name.empty() || spec.domain_name.empty() ? "custom operator" : op_label(spec)};
  detail::validate_spec(spec, origin, names);
  detail::compile_spec(spec, origin, base_dir, names);
  std::lock_guard<std::mutex> lock(registry_mutex());
  insert(registry(), spec, origin, op_label(spec));
}

bool unregister_op(const std::string& domain_name, const std::string& operator_name) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  return registry().erase(Key{domain_name, operator_name}) > 0;
}

void clear_ops() {
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry().clear();
}

std::optional<OpSpec> find_onnx_op(std::string_view domain, std::string_view op_type) {
  const std::string d = normalize_onnx_domain(domain);
  std::lock_guard<std::mutex> lock(registry_mutex());
  for (const auto& [k, e] : registry())
    if (!e.spec.onnx_op_type.empty() && e.spec.onnx_op_type == op_type && e.spec.onnx_domain == d) return e.spec;
  return std::nullopt;
}

std::optional<OpSpec> find_op(std::string_view domain_name, std::string_view operator_name) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  auto it = registry().find(Key{std::string(domain_name), std::string(operator_name)});
  if (it == registry().end()) return std::nullopt;
  return it->second.spec;
}

}  // namespace weft::custom
