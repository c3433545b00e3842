// The implementation_attrs payload of a tosa.CUSTOM node that carries a Vulkan compute shader
// (the "Vulkan shader in TOSA custom operation attributes" JSON schema): a strict validator and a
// canonical writer, and the base64 codec they use (base64.h). docs/custom-ops-contract.md has the
// rules with examples.
//
// Unknown keys. A key is "known" when it is one of the schema's top-level keys (entry_point,
// workgroup_sizes, shader_language, shader_code, push_constants), one of Weft's top-level
// extensions (weft_push_constant_data, weft_dispatch), or a well-formed `input_<i>_<property>` /
// `output_<i>_<property>` key with a property Weft knows (vkformat, vkdescriptortype, type,
// binding, descriptorset, weft_filter, weft_address_mode). Any other well-formed key is unknown:
// with ParseOptions::Unknown::kKeep (the default) it is kept verbatim in Payload::unknown (its
// value as compact JSON text), listed in the warnings and written back unchanged by
// write_payload(); with kReject it is an error. A key that starts with `input_` / `output_` but
// breaks the naming rule (no index, a leading zero, no property) is always an error, and so is a
// key that appears twice in one JSON object.
#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <limits>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "custom/base64.h"
#include "weft/custom.h"

namespace weft::custom {

using nlohmann::json;

// ---- base64 -----------------------------------------------------------------------------------

namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

std::string printable(char c) {
  unsigned char u = static_cast<unsigned char>(c);
  if (u >= 0x21 && u < 0x7f) return std::string("'") + c + "'";
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%02X", u);
  return buf;
}

}  // namespace

std::string base64_encode(std::span<const uint8_t> bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    uint32_t v = (uint32_t{bytes[i]} << 16) | (uint32_t{bytes[i + 1]} << 8) | bytes[i + 2];
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  size_t rest = bytes.size() - i;
  if (rest == 1) {
    uint32_t v = uint32_t{bytes[i]} << 16;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += "==";
  } else if (rest == 2) {
    uint32_t v = (uint32_t{bytes[i]} << 16) | (uint32_t{bytes[i + 1]} << 8);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

std::vector<uint8_t> base64_decode(std::string_view text, std::string_view what) {
  auto fail = [&](const std::string& why) -> void {
    throw Error(ErrorCode::kInvalidArgument, std::string(what) + " is not valid base64 (RFC 4648): " + why);
  };
  if (text.size() % 4 != 0)
    fail("its length " + std::to_string(text.size()) +
         " is not a multiple of 4 (padding with '=' is required)");
  size_t pad = 0;
  if (!text.empty() && text.back() == '=') pad = (text.size() >= 2 && text[text.size() - 2] == '=') ? 2 : 1;
  std::vector<uint8_t> out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    uint32_t v = 0;
    bool last = i + 4 == text.size();
    size_t data_chars = last ? 4 - pad : 4;
    for (size_t k = 0; k < 4; ++k) {
      char c = text[i + k];
      if (k >= data_chars) {  // padding positions, known to be '='
        v <<= 6;
        continue;
      }
      int d = base64_value(c);
      if (d < 0) {
        if (c == '=')
          fail("'=' at offset " + std::to_string(i + k) + " (padding may only end the text)");
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
          fail("whitespace " + printable(c) + " at offset " + std::to_string(i + k) + " (not allowed)");
        fail("character " + printable(c) + " at offset " + std::to_string(i + k) +
             " is outside the alphabet A-Z a-z 0-9 + /");
      }
      v = (v << 6) | static_cast<uint32_t>(d);
    }
    out.push_back(static_cast<uint8_t>(v >> 16));
    if (data_chars >= 3) out.push_back(static_cast<uint8_t>(v >> 8));
    if (data_chars == 4) out.push_back(static_cast<uint8_t>(v));
    if (data_chars == 2 && (v & 0xFFFF) != 0)
      fail("non-zero unused bits in character " + std::to_string(i + 1) + " before the padding (not canonical)");
    if (data_chars == 3 && (v & 0xFF) != 0)
      fail("non-zero unused bits in character " + std::to_string(i + 2) + " before the padding (not canonical)");
  }
  return out;
}

// ---- names --------------------------------------------------------------------------------------

const char* language_name(ShaderLanguage l) {
  switch (l) {
    case ShaderLanguage::kUnspecified: return "";
    case ShaderLanguage::kSpirv: return "SPIR-V";
    case ShaderLanguage::kGlsl: return "GLSL";
    case ShaderLanguage::kHlsl: return "HLSL";
  }
  return "";
}

std::string Resource::key(std::string_view property) const {
  std::string k = output ? "output_" : "input_";
  k += std::to_string(index);
  k += '_';
  k += property;
  return k;
}

namespace {
const Resource* find_resource(const std::vector<Resource>& list, uint32_t index) {
  for (const Resource& r : list)
    if (r.index == index) return &r;
  return nullptr;
}
}  // namespace

const Resource* Payload::input(uint32_t index) const { return find_resource(inputs, index); }
const Resource* Payload::output(uint32_t index) const { return find_resource(outputs, index); }

// ---- parse_payload --------------------------------------------------------------------------------

namespace {

constexpr uint32_t kMaxResourceIndex = 65535;
// Arrays and objects nested deeper than this are rejected before they are built: the schema's
// values are flat, and deeper unknown values would only cost stack (dump() recurses).
constexpr int kMaxNesting = 64;
constexpr const char* kFilters[] = {"nearest", "linear"};
constexpr const char* kAddressModes[] = {"clamp_to_edge", "repeat", "mirrored_repeat", "clamp_to_border"};

// A short rendering of a JSON value for messages: `"glsl"`, `8.0`, `true`, `an object`.
std::string describe(const json& v) {
  if (v.is_object()) return "an object";
  if (v.is_array()) return "an array of " + std::to_string(v.size()) + " elements";
  if (v.is_null()) return "null";
  std::string s = v.dump();
  if (v.is_number_float() && s.find_first_of(".eE") == std::string::npos) s += ".0";
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\n' || s[b] == '\r')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\n' || s[e - 1] == '\r')) --e;
  return std::string(s.substr(b, e - b));
}

bool is_identifier(std::string_view s) {
  if (s.empty()) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(s[0])) return false;
  for (char c : s)
    if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
  return true;
}

// A JSON integer (not a float, not a bool) in [lo, hi].
bool json_int_in(const json& v, int64_t lo, uint64_t hi, uint64_t* out) {
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (lo > 0 && u < static_cast<uint64_t>(lo)) return false;
    if (u > hi) return false;
    *out = u;
    return true;
  }
  if (v.is_number_integer()) {
    int64_t s = v.get<int64_t>();
    if (s < lo || s < 0 || static_cast<uint64_t>(s) > hi) return false;
    *out = static_cast<uint64_t>(s);
    return true;
  }
  return false;
}

class Parser {
 public:
  Parser(const Location& where, const ParseOptions& options, std::vector<std::string>* warnings)
      : where_(where), options_(options), warnings_(warnings) {}

  Payload run(std::string_view text);

 private:
  [[noreturn]] void fail(const std::string& key, const std::string& message) const {
    Location l = where_;
    l.operand = key;
    throw Error(ErrorCode::kVerify, message, l);
  }

  std::array<uint32_t, 3> three_sizes(const std::string& key, const json& v) const;
  void parse_push_constants(const std::string& key, const std::string& text, Payload& p) const;
  void indexed_key(const std::string& key, const json& v, bool output, size_t prefix_len);
  void unknown_key(const std::string& key, const json& v, const char* what);
  std::string string_value(const std::string& key, const json& v, const char* rule) const;

  const Location& where_;
  const ParseOptions& options_;
  std::vector<std::string>* warnings_;
  Payload p_;
  std::map<uint32_t, Resource> inputs_, outputs_;
};

std::array<uint32_t, 3> Parser::three_sizes(const std::string& key, const json& v) const {
  const std::string rule = key + " must be an array of exactly 3 integers >= 1";
  if (!v.is_array()) fail(key, rule + " (got " + describe(v) + ")");
  if (v.size() != 3) fail(key, rule + " (got " + std::to_string(v.size()) + " elements)");
  std::array<uint32_t, 3> out{};
  for (size_t i = 0; i < 3; ++i) {
    uint64_t u = 0;
    if (!json_int_in(v[i], 1, std::numeric_limits<uint32_t>::max(), &u)) {
      std::string why = "element " + std::to_string(i) + " is " + describe(v[i]);
      if (v[i].is_number_integer() && !v[i].is_number_unsigned() && v[i].get<int64_t>() >= 1)
        why += ", above 4294967295";
      else if (v[i].is_number_unsigned() && v[i].get<uint64_t>() >= 1)
        why += ", above 4294967295";
      fail(key, rule + " (" + why + ")");
    }
    out[i] = static_cast<uint32_t>(u);
  }
  return out;
}

std::string Parser::string_value(const std::string& key, const json& v, const char* rule) const {
  if (!v.is_string()) fail(key, key + " must be " + rule + " (got " + describe(v) + ")");
  return v.get<std::string>();
}

void Parser::parse_push_constants(const std::string& key, const std::string& text, Payload& p) const {
  const std::string rule = "push_constants must be comma-separated \"name: size\" pairs (a C identifier, "
                           "a positive decimal size in bytes)";
  if (trim(text).empty()) return;
  std::set<std::string> seen;
  size_t start = 0;
  int item = 0;
  while (true) {
    size_t comma = text.find(',', start);
    std::string_view part = std::string_view(text).substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    ++item;
    std::string entry = trim(part);
    if (entry.empty()) fail(key, rule + " (pair " + std::to_string(item) + " is empty)");
    size_t colon = entry.find(':');
    if (colon == std::string::npos)
      fail(key, rule + " (pair " + std::to_string(item) + " \"" + entry + "\" has no ':')");
    std::string name = trim(std::string_view(entry).substr(0, colon));
    std::string size = trim(std::string_view(entry).substr(colon + 1));
    if (!is_identifier(name))
      fail(key, rule + " (pair " + std::to_string(item) + ": \"" + name + "\" is not a C identifier)");
    bool digits = !size.empty() && std::all_of(size.begin(), size.end(), [](char c) { return c >= '0' && c <= '9'; });
    uint64_t value = 0;
    if (digits && size.size() <= 10) {
      std::from_chars(size.data(), size.data() + size.size(), value);
    }
    if (!digits || size[0] == '0' || size.size() > 10 || value > std::numeric_limits<uint32_t>::max())
      fail(key, rule + " (pair " + std::to_string(item) + ": size \"" + size +
                    "\" of '" + name + "' is not a positive integer without sign or leading zeros)");
    if (!seen.insert(name).second) fail(key, "push_constants names '" + name + "' twice");
    p.push_constants.push_back({name, static_cast<uint32_t>(value)});
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
}

void Parser::unknown_key(const std::string& key, const json& v, const char* what) {
  if (options_.unknown_keys == ParseOptions::Unknown::kReject)
    fail(key, "unknown key '" + key + "' (" + what + "; unknown keys are rejected in strict mode)");
  p_.unknown.emplace_back(key, v.dump());
  if (warnings_)
    warnings_->push_back("unknown key '" + key + "' kept verbatim and ignored (" + what + ")");
}

void Parser::indexed_key(const std::string& key, const json& v, bool output, size_t prefix_len) {
  const std::string naming =
      " breaks the resource key naming rule input_<index>_<property> / output_<index>_<property> "
      "(index: a non-negative decimal integer without leading zeros; property: non-empty)";
  std::string_view rest = std::string_view(key).substr(prefix_len);
  size_t digits = 0;
  while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') ++digits;
  if (digits == 0) fail(key, "'" + key + "'" + naming + ": no index");
  std::string index_text(rest.substr(0, digits));
  if (digits > 1 && rest[0] == '0') fail(key, "'" + key + "'" + naming + ": index '" + index_text + "' has a leading zero");
  if (digits > 5 || std::stoul(index_text) > kMaxResourceIndex)
    fail(key, "'" + key + "': resource index " + index_text + " is above " + std::to_string(kMaxResourceIndex));
  if (digits == rest.size() || rest[digits] != '_')
    fail(key, "'" + key + "'" + naming + ": the index must be followed by '_<property>'");
  std::string property(rest.substr(digits + 1));
  if (property.empty()) fail(key, "'" + key + "'" + naming + ": empty property");
  uint32_t index = static_cast<uint32_t>(std::stoul(index_text));

  auto group = [&]() -> Resource& {
    auto& m = output ? outputs_ : inputs_;
    Resource& r = m[index];
    r.output = output;
    r.index = index;
    return r;
  };
  if (property == "vkformat") {
    std::string s = string_value(key, v, "a VkFormat name string");
    if (!find_format(s))
      fail(key, key + " must be a VkFormat name Weft knows (a 1-4 component 8/16/32/64-bit UINT/SINT/SFLOAT "
                      "format or an Arm tensor element format; got \"" + s + "\")");
    group().vkformat = s;
  } else if (property == "vkdescriptortype") {
    std::string s = string_value(key, v, "a string matching VK_DESCRIPTOR_TYPE_[A-Z0-9_]+");
    constexpr std::string_view prefix = "VK_DESCRIPTOR_TYPE_";
    bool ok = s.size() > prefix.size() && s.compare(0, prefix.size(), prefix) == 0 &&
              std::all_of(s.begin() + prefix.size(), s.end(),
                          [](char c) { return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; });
    if (!ok) fail(key, key + " must match VK_DESCRIPTOR_TYPE_[A-Z0-9_]+ (got \"" + s + "\")");
    group().descriptor_type = s;
  } else if (property == "type") {
    std::string s = string_value(key, v, "a non-empty string (\"Tensor\", \"Buffer\" or \"Image\")");
    if (s.empty()) fail(key, key + " must be a non-empty string (\"Tensor\", \"Buffer\" or \"Image\"; got \"\")");
    group().type = s;
  } else if (property == "binding" || property == "descriptorset") {
    uint64_t u = 0;
    if (!json_int_in(v, 0, std::numeric_limits<uint32_t>::max(), &u))
      fail(key, key + " must be an integer >= 0 (at most 4294967295; got " + describe(v) + ")");
    (property == "binding" ? group().binding : group().descriptor_set) = static_cast<int64_t>(u);
  } else if (property == "weft_filter" || property == "weft_address_mode") {
    bool filter = property == "weft_filter";
    const char* allowed = filter ? "\"nearest\" or \"linear\""
                                 : "\"clamp_to_edge\", \"repeat\", \"mirrored_repeat\" or \"clamp_to_border\"";
    if (!v.is_string()) fail(key, key + " must be one of " + allowed + " (got " + describe(v) + ")");
    std::string s = v.get<std::string>();
    bool ok = false;
    if (filter) {
      for (const char* a : kFilters) ok = ok || s == a;
    } else {
      for (const char* a : kAddressModes) ok = ok || s == a;
    }
    if (!ok) fail(key, key + " must be one of " + allowed + " (got \"" + s + "\")");
    (filter ? group().filter : group().address_mode) = s;
  } else {
    unknown_key(key, v, ("not a resource property Weft knows: '" + property + "'").c_str());
  }
}

Payload Parser::run(std::string_view text) {
  // Parse, rejecting a key repeated in one object (nlohmann would keep the last one silently).
  std::vector<std::set<std::string>> open;
  json doc;
  try {
    doc = json::parse(text, [&](int depth, json::parse_event_t event, json& parsed) {
      if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
          depth >= kMaxNesting)
        throw Error(ErrorCode::kVerify,
                    "implementation_attrs nests arrays and objects more than " + std::to_string(kMaxNesting) +
                        " levels deep",
                    where_);
      switch (event) {
        case json::parse_event_t::object_start: open.emplace_back(); break;
        case json::parse_event_t::object_end: open.pop_back(); break;
        case json::parse_event_t::key: {
          std::string k = parsed.get<std::string>();
          if (!open.empty() && !open.back().insert(k).second)
            fail(k, "duplicate key '" + k + "' (every key may appear once)");
          break;
        }
        default: break;
      }
      return true;
    });
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number beyond double ("1e400")
    Location l = where_;
    throw Error(ErrorCode::kVerify, std::string("implementation_attrs is not valid JSON: ") + e.what(), l);
  }
  if (!doc.is_object())
    throw Error(ErrorCode::kVerify, "implementation_attrs must be a JSON object (got " + describe(doc) + ")", where_);

  if (!doc.contains("entry_point"))
    fail("entry_point", "entry_point is required (a non-empty string naming the shader's entry point)");
  if (!doc.contains("workgroup_sizes"))
    fail("workgroup_sizes", "workgroup_sizes is required (an array of exactly 3 integers >= 1)");

  for (const auto& [key, v] : doc.items()) {
    if (key == "entry_point") {
      if (!v.is_string() || v.get<std::string>().empty())
        fail(key, "entry_point must be a non-empty string (got " + describe(v) + ")");
      p_.entry_point = v.get<std::string>();
    } else if (key == "workgroup_sizes") {
      p_.workgroup_sizes = three_sizes(key, v);
    } else if (key == "shader_language") {
      const std::string rule = "shader_language must be one of \"\", \"SPIR-V\", \"GLSL\", \"HLSL\" (exact case)";
      if (!v.is_string()) fail(key, rule + " (got " + describe(v) + ")");
      std::string s = v.get<std::string>();
      if (s == "") p_.language = ShaderLanguage::kUnspecified;
      else if (s == "SPIR-V") p_.language = ShaderLanguage::kSpirv;
      else if (s == "GLSL") p_.language = ShaderLanguage::kGlsl;
      else if (s == "HLSL") p_.language = ShaderLanguage::kHlsl;
      else fail(key, rule + " (got \"" + s + "\")");
    } else if (key == "shader_code") {
      p_.shader_code = string_value(key, v, "a string (source text, or base64 SPIR-V)");
    } else if (key == "push_constants") {
      p_.push_constants_text = string_value(key, v, "a string of comma-separated \"name: size\" pairs");
      parse_push_constants(key, *p_.push_constants_text, p_);
    } else if (key == "weft_push_constant_data") {
      std::string s = string_value(key, v, "a base64 string (the push constant block)");
      try {
        p_.push_constant_data = base64_decode(s, key);
      } catch (const Error& e) {
        fail(key, e.message());
      }
    } else if (key == "weft_dispatch") {
      p_.dispatch = three_sizes(key, v);
    } else if (key == "weft_dispatch_rule") {
      p_.dispatch_rule = string_value(key, v, "a string (how Weft decided the dispatch)");
    } else if (key == "is_vkshader") {
      if (!v.is_boolean()) fail(key, "is_vkshader must be true or false (got " + describe(v) + ")");
      p_.is_vkshader = v.get<bool>();
    } else if (key.rfind("input_", 0) == 0) {
      indexed_key(key, v, false, 6);
    } else if (key.rfind("output_", 0) == 0) {
      indexed_key(key, v, true, 7);
    } else {
      unknown_key(key, v, "not a key of the schema or of Weft's extensions");
    }
  }

  // Rules across keys.
  if (p_.language == ShaderLanguage::kSpirv && p_.shader_code) {
    std::vector<uint8_t> bytes;
    try {
      bytes = base64_decode(*p_.shader_code, "shader_code (SPIR-V)");
    } catch (const Error& e) {
      fail("shader_code", e.message());
    }
    if (bytes.size() % 4 != 0)
      fail("shader_code", "shader_code (SPIR-V) must decode to whole 32-bit words (got " +
                              std::to_string(bytes.size()) + " bytes)");
    if (bytes.size() < 20)
      fail("shader_code", "shader_code (SPIR-V) must decode to at least the 5-word module header (got " +
                              std::to_string(bytes.size()) + " bytes)");
    p_.spirv.resize(bytes.size() / 4);
    for (size_t i = 0; i < p_.spirv.size(); ++i)
      p_.spirv[i] = uint32_t{bytes[4 * i]} | (uint32_t{bytes[4 * i + 1]} << 8) |
                    (uint32_t{bytes[4 * i + 2]} << 16) | (uint32_t{bytes[4 * i + 3]} << 24);
    if (p_.spirv[0] != 0x07230203u) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "0x%08X", p_.spirv[0]);
      std::string why = std::string("got ") + buf;
      if (p_.spirv[0] == 0x03022307u) why += ": a big-endian module, which is not accepted";
      fail("shader_code", "shader_code (SPIR-V) must start with the SPIR-V magic number 0x07230203 as a "
                          "little-endian word (" + why + ")");
    }
  }
  if (doc.contains("weft_push_constant_data")) {
    uint64_t total = 0;
    for (const PushConstant& pc : p_.push_constants) total += pc.size;
    if (p_.push_constant_data.size() != total)
      fail("weft_push_constant_data", "weft_push_constant_data must be the push constant block, whose size is the "
                                      "sum of the push_constants sizes (" + std::to_string(total) + " bytes; got " +
                                      std::to_string(p_.push_constant_data.size()) + " bytes)");
  }
  for (auto& [i, r] : inputs_) p_.inputs.push_back(std::move(r));
  for (auto& [i, r] : outputs_) p_.outputs.push_back(std::move(r));
  return std::move(p_);
}

}  // namespace

Payload parse_payload(std::string_view json_text, const Location& where, const ParseOptions& options,
                      std::vector<std::string>* warnings) {
  Parser parser(where, options, warnings);
  return parser.run(json_text);
}

// ---- write_payload --------------------------------------------------------------------------------

std::string write_payload(const Payload& p) {
  json j = json::object();
  j["entry_point"] = p.entry_point;
  j["workgroup_sizes"] = json::array({p.workgroup_sizes[0], p.workgroup_sizes[1], p.workgroup_sizes[2]});
  if (p.language != ShaderLanguage::kUnspecified) j["shader_language"] = language_name(p.language);
  if (p.language == ShaderLanguage::kSpirv && !p.spirv.empty()) {
    std::vector<uint8_t> bytes(p.spirv.size() * 4);
    for (size_t i = 0; i < p.spirv.size(); ++i)
      for (int b = 0; b < 4; ++b) bytes[4 * i + b] = static_cast<uint8_t>(p.spirv[i] >> (8 * b));
    j["shader_code"] = base64_encode(bytes);
  } else if (p.shader_code) {
    j["shader_code"] = *p.shader_code;
  }
  if (p.push_constants_text) {
    j["push_constants"] = *p.push_constants_text;
  } else if (!p.push_constants.empty()) {
    std::string s;
    for (const PushConstant& pc : p.push_constants) {
      if (!s.empty()) s += ", ";
      s += pc.name + ": " + std::to_string(pc.size);
    }
    j["push_constants"] = s;
  }
  if (!p.push_constant_data.empty()) j["weft_push_constant_data"] = base64_encode(p.push_constant_data);
  if (p.dispatch) j["weft_dispatch"] = json::array({(*p.dispatch)[0], (*p.dispatch)[1], (*p.dispatch)[2]});
  if (p.dispatch_rule) j["weft_dispatch_rule"] = *p.dispatch_rule;
  if (p.is_vkshader) j["is_vkshader"] = *p.is_vkshader;
  auto resources = [&](const std::vector<Resource>& list) {
    for (const Resource& r : list) {
      if (r.vkformat) j[r.key("vkformat")] = *r.vkformat;
      if (r.descriptor_type) j[r.key("vkdescriptortype")] = *r.descriptor_type;
      if (r.type) j[r.key("type")] = *r.type;
      if (r.binding) j[r.key("binding")] = *r.binding;
      if (r.descriptor_set) j[r.key("descriptorset")] = *r.descriptor_set;
      if (r.filter) j[r.key("weft_filter")] = *r.filter;
      if (r.address_mode) j[r.key("weft_address_mode")] = *r.address_mode;
    }
  };
  resources(p.inputs);
  resources(p.outputs);
  for (const auto& [key, text] : p.unknown) {
    if (j.contains(key))
      throw Error(ErrorCode::kInvalidArgument, "write_payload: unknown key '" + key + "' is also a key Weft writes");
    json v = json::parse(text, nullptr, false);
    if (v.is_discarded())
      throw Error(ErrorCode::kInvalidArgument, "write_payload: the value of unknown key '" + key + "' is not JSON text");
    j[key] = std::move(v);
  }
  return j.dump();
}

}  // namespace weft::custom
