// IOSpec YAML: the writer (the specification's layout) and the strict parser.
#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "iospec/internal.h"
#include "iospec/yaml_util.h"

namespace weft::iospec {

namespace {

// ---- Writer ------------------------------------------------------------------------------------------------

// Plain when it reads back as the same string in YAML 1.1 and 1.2 (PyYAML included); else
// double-quoted.
std::string yaml_name(const std::string& s) {
  // [A-Za-z_][A-Za-z0-9_.\-/]*, matched by hand (std::regex overflows the stack on long names).
  auto letter = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
  static const char* const kReserved[] = {"null", "true", "false", "yes", "no", "on", "off", "y", "n"};
  bool plain = !s.empty() && letter(s[0]) && std::all_of(s.begin(), s.end(), [&](char c) {
    return letter(c) || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '/';
  });
  if (plain) {
    std::string lower;
    for (char c : s) lower += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    for (const char* r : kReserved) {
      if (lower == r) plain = false;
    }
  }
  if (plain) return s;
  std::string r = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': r += "\\\""; break;
      case '\\': r += "\\\\"; break;
      case '\n': r += "\\n"; break;
      case '\t': r += "\\t"; break;
      case '\r': r += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          static const char* const kHex = "0123456789abcdef";
          r += "\\x";
          r += kHex[c >> 4];
          r += kHex[c & 15];
        } else {
          r += static_cast<char>(c);
        }
    }
  }
  return r + "\"";
}

// Shortest round-trip, always with a '.' so that YAML 1.1 readers see a float: 1.0, 0.05, 1.0e-05.
std::string yaml_float(double v) {
  if (std::isnan(v)) return ".nan";
  if (std::isinf(v)) return v > 0 ? ".inf" : "-.inf";
  if (v == 0) return "0.0";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, r.ptr);
  if (s.find('.') == std::string::npos) {
    const size_t e = s.find('e');
    if (e == std::string::npos) s += ".0";
    else s.insert(e, ".0");
  }
  return s;
}

void write_list(std::ostringstream& o, const char* key, const std::vector<std::string>& names) {
  if (names.empty()) {
    o << "    " << key << ": []\n";
    return;
  }
  o << "    " << key << ":\n";
  for (const std::string& n : names) o << "    - " << yaml_name(n) << "\n";
}

void write_section(std::ostringstream& o, const char* name, const std::vector<Variable>& vars, bool inputs) {
  if (vars.empty()) {
    o << name << ": {}\n";
    return;
  }
  o << name << ":\n";
  for (size_t i = 0; i < vars.size(); ++i) {
    const Variable& v = vars[i];
    if (i) o << "\n";
    o << "  " << yaml_name(v.key) << ":\n";
    o << "    type: " << (inputs ? "input" : "output") << "\n";
    o << "    varname: " << yaml_name(v.varname) << "\n";
    o << "    length: " << v.length << "\n";
    o << "    padded_length: " << v.padded_length << "\n";
    o << "    length_64b_words: " << v.length_64b_words << "\n";
    o << "    precision: " << v.precision << "\n";
    o << "    quantization:\n";
    o << "      scale: " << yaml_float(v.quantization.scale) << "\n";
    o << "      zero_pt: " << yaml_float(v.quantization.zero_pt) << "\n";
    o << "    core_id: " << v.core_id << "\n";
    o << "    " << (inputs ? "pc" : "mailbox_id") << ": " << v.pc << "\n";
    o << "    comments:\n";
    o << "      latched: " << (v.latched ? "true" : "false") << "\n";
  }
}

}  // namespace

std::string to_yaml(const IoSpec& spec) {
  std::ostringstream o;
  write_section(o, "inputs", spec.inputs, true);
  o << "\n";
  write_section(o, "outputs", spec.outputs, false);
  o << "\n";
  if (spec.simple_sequences.empty()) {
    o << "simple_sequences: {}\n";
  } else {
    o << "simple_sequences:\n";
    for (size_t i = 0; i < spec.simple_sequences.size(); ++i) {
      const Sequence& s = spec.simple_sequences[i];
      if (i) o << "\n";
      o << "  " << yaml_name(s.name) << ":\n";
      o << "    type: simple_sequence\n";
      write_list(o, "outputs", s.outputs);
      write_list(o, "inputs", s.inputs);
    }
  }
  o << "\n";
  o << "complex_sequences: {}\n";
  return o.str();
}

void save_yaml(const IoSpec& spec, const std::string& path) {
  const std::string text = to_yaml(spec);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw Error(ErrorCode::kIo, "cannot open the IOSpec for writing", {.file = path});
  f << text;
  f.flush();
  if (!f) throw Error(ErrorCode::kIo, "cannot write the IOSpec", {.file = path});
}

// ---- Parser ------------------------------------------------------------------------------------------------

namespace {

using namespace detail;

const std::vector<std::string> kVariableFields = {"type", "varname", "length", "padded_length", "length_64b_words",
                                                  "precision", "quantization", "core_id", "pc", "comments"};

struct Parsed {
  Variable var;
  int line = 0;          // the key's line
  int varname_line = 0;  // the varname's
};

Parsed parse_variable(const YamlContext& ctx, const MapEntry& e, bool input) {
  const std::string section = input ? "inputs" : "outputs";
  const std::string path = section + "." + e.key;
  const char* what = input ? "an input" : "an output";
  MapReader m(ctx, e.value, e.line, path, what);
  const std::string id_field = input ? "pc" : "mailbox_id";
  std::vector<std::string> fields = kVariableFields;
  fields[8] = id_field;
  // Fields, in the specification's order; the other section's id field gets its own message.
  for (const MapEntry& f : m.entries()) {
    if (!input && f.key == "pc")
      fail_at(ctx, f.line, path + ".pc", "pc is the inputs' field; outputs use mailbox_id");
    if (input && f.key == "mailbox_id")
      fail_at(ctx, f.line, path + ".mailbox_id", "mailbox_id is the outputs' field; inputs use pc");
    if (std::find(fields.begin(), fields.end(), f.key) == fields.end())
      fail_at(ctx, f.line, path + "." + f.key,
              "unknown key '" + f.key + "' in " + what + " (expected: " + [&] {
                std::string l;
                for (const std::string& k : fields) l += (l.empty() ? "" : ", ") + k;
                return l;
              }() + ")");
  }
  Parsed p;
  p.line = e.line;
  Variable& v = p.var;
  v.key = e.key;
  v.input = input;
  auto field = [&](const char* key) { return path + "." + key; };

  const MapEntry& type = m.require("type");
  const std::string t = as_name(ctx, type.value, type.line, field("type"), "type");
  if (t != "input" && t != "output")
    fail_at(ctx, type.value, type.line, field("type"), "type must be input or output, got '" + t + "'");
  if ((t == "input") != input)
    fail_at(ctx, type.value, type.line, field("type"),
            "type: " + t + ", but '" + e.key + "' is under " + section + " (type: " + (input ? "input" : "output") +
                " expected)");

  const MapEntry& varname = m.require("varname");
  v.varname = as_name(ctx, varname.value, varname.line, field("varname"), "varname");
  p.varname_line = line_of(varname.value, varname.line);

  const MapEntry& length = m.require("length");
  v.length = as_int(ctx, length.value, length.line, field("length"));
  if (v.length < 1)
    fail_at(ctx, length.value, length.line, field("length"), "length must be >= 1, got " + std::to_string(v.length));

  const MapEntry& padded = m.require("padded_length");
  v.padded_length = as_int(ctx, padded.value, padded.line, field("padded_length"));
  if (v.padded_length < v.length)
    fail_at(ctx, padded.value, padded.line, field("padded_length"),
            "padded_length " + std::to_string(v.padded_length) + " is less than length " + std::to_string(v.length));

  const MapEntry& words = m.require("length_64b_words");
  v.length_64b_words = as_int(ctx, words.value, words.line, field("length_64b_words"));

  const MapEntry& precision = m.require("precision");
  const int64_t prec = as_int(ctx, precision.value, precision.line, field("precision"));
  if (!valid_precision(prec))
    fail_at(ctx, precision.value, precision.line, field("precision"),
            "precision must be one of 1, 2, 4, 8, 16, 32, 64 (bits per element, a whole number of elements per "
            "64-bit word), got " +
                std::to_string(prec));
  v.precision = static_cast<int>(prec);

  const __int128 bits = static_cast<__int128>(v.padded_length) * v.precision;
  if (bits % 64 != 0)
    fail_at(ctx, padded.value, padded.line, field("padded_length"),
            "padded_length " + std::to_string(v.padded_length) + " of " + std::to_string(v.precision) + "-bit elements is " +
                std::to_string(static_cast<int64_t>(bits)) + " bits, not a whole number of 64-bit words");
  if (v.length_64b_words != static_cast<int64_t>(bits / 64))
    fail_at(ctx, words.value, words.line, field("length_64b_words"),
            "length_64b_words must be padded_length * precision / 64 = " + std::to_string(v.padded_length) + " * " +
                std::to_string(v.precision) + " / 64 = " + std::to_string(static_cast<int64_t>(bits / 64)) + ", got " +
                std::to_string(v.length_64b_words));

  const MapEntry& quant = m.require("quantization");
  MapReader q(ctx, quant.value, quant.line, field("quantization"), "quantization",
              std::vector<std::string>{"scale", "zero_pt"});
  const MapEntry& scale = q.require("scale");
  v.quantization.scale = as_float(ctx, scale.value, scale.line, field("quantization.scale"));
  if (!std::isfinite(v.quantization.scale) || v.quantization.scale <= 0)
    fail_at(ctx, scale.value, scale.line, field("quantization.scale"),
            "scale must be a finite number > 0, got " + scale.value.Scalar());
  const MapEntry& zp = q.require("zero_pt");
  v.quantization.zero_pt = as_float(ctx, zp.value, zp.line, field("quantization.zero_pt"));
  if (!std::isfinite(v.quantization.zero_pt))
    fail_at(ctx, zp.value, zp.line, field("quantization.zero_pt"), "zero_pt must be finite, got " + zp.value.Scalar());

  const MapEntry& core = m.require("core_id");
  const int64_t core_id = as_int(ctx, core.value, core.line, field("core_id"));
  if (core_id < 0 || core_id > INT_MAX)
    fail_at(ctx, core.value, core.line, field("core_id"), "core_id must be >= 0, got " + std::to_string(core_id));
  v.core_id = static_cast<int>(core_id);

  const MapEntry& id = m.require(id_field);
  v.pc = as_int(ctx, id.value, id.line, field(id_field.c_str()));
  if (v.pc < 0)
    fail_at(ctx, id.value, id.line, field(id_field.c_str()), id_field + " must be >= 0, got " + std::to_string(v.pc));

  const MapEntry& comments = m.require("comments");
  MapReader c(ctx, comments.value, comments.line, field("comments"), "comments", std::vector<std::string>{"latched"});
  const MapEntry& latched = c.require("latched");
  v.latched = as_bool(ctx, latched.value, latched.line, field("comments.latched"));
  if (!input && v.latched)
    fail_at(ctx, latched.value, latched.line, field("comments.latched"),
            "latched: true, but only inputs can be latched");
  return p;
}

// A sequence's `outputs:` / `inputs:` list.
std::vector<std::pair<std::string, int>> parse_list(const YamlContext& ctx, const MapEntry& e, const std::string& path,
                                                    const char* what) {
  const YAML::Node& n = e.value;
  if (!n.IsDefined() || !n.IsSequence())
    fail_at(ctx, n, e.line, path, std::string("expected a list of ") + what + " keys ([] for none), got " + show(n));
  std::vector<std::pair<std::string, int>> r;
  for (const YAML::Node& item : n) {
    const int line = line_of(item, e.line);
    r.emplace_back(as_name(ctx, item, line, path, (std::string("an entry of ") + what).c_str()), line);
  }
  return r;
}

}  // namespace

IoSpec parse_yaml(std::string_view yaml, const std::string& source) {
  YamlContext ctx{source, ErrorCode::kVerify};
  YAML::Node doc = load_document(yaml, ctx);
  if (!doc.IsDefined() || doc.IsNull())
    fail_at(ctx, 1, "", "empty IOSpec: expected inputs, outputs, simple_sequences and complex_sequences");
  MapReader root(ctx, doc, 1, "", "an IOSpec",
                 std::vector<std::string>{"inputs", "outputs", "simple_sequences", "complex_sequences"});
  const MapEntry& ins = root.require("inputs");
  const MapEntry& outs = root.require("outputs");
  const MapEntry& seqs = root.require("simple_sequences");
  const MapEntry& complex = root.require("complex_sequences");

  IoSpec spec;
  std::map<std::string, int> var_line;  // key -> line
  std::map<std::string, std::string> varname_owner;
  for (const bool input : {true, false}) {
    const MapEntry& section = input ? ins : outs;
    MapReader m(ctx, section.value, section.line, section.key, input ? "the inputs" : "the outputs");
    for (const MapEntry& e : m.entries()) {
      const std::string path = section.key + "." + e.key;
      if (!input && var_line.count(e.key))
        fail_at(ctx, e.line, path,
                "key '" + e.key + "' is also an input's (line " + std::to_string(var_line[e.key]) +
                    "); keys must be unique across inputs and outputs");
      Parsed p = parse_variable(ctx, e, input);
      auto owner = varname_owner.find(p.var.varname);
      if (owner != varname_owner.end())
        fail_at(ctx, p.varname_line, path + ".varname",
                "varname '" + p.var.varname + "' is also the varname of " + owner->second +
                    "; each model input and output has one entry");
      varname_owner[p.var.varname] = path;
      var_line[e.key] = p.line;
      (input ? spec.inputs : spec.outputs).push_back(std::move(p.var));
    }
  }

  // Sequences.
  MapReader sm(ctx, seqs.value, seqs.line, "simple_sequences", "the simple sequences");
  std::map<std::string, std::string> member_of;  // variable key -> sequence name
  std::vector<int> seq_lines;
  const Sequence* main_seq = nullptr;
  for (const MapEntry& e : sm.entries()) {
    const std::string path = "simple_sequences." + e.key;
    MapReader m(ctx, e.value, e.line, path, "a simple sequence", std::vector<std::string>{"type", "outputs", "inputs"});
    const MapEntry& type = m.require("type");
    const std::string t = as_name(ctx, type.value, type.line, path + ".type", "type");
    if (t != "simple_sequence")
      fail_at(ctx, type.value, type.line, path + ".type", "type must be simple_sequence, got '" + t + "'");
    Sequence s;
    s.name = e.key;
    for (const bool input : {false, true}) {
      const MapEntry& list = m.require(input ? "inputs" : "outputs");
      const std::string lpath = path + "." + list.key;
      for (const auto& [key, line] : parse_list(ctx, list, lpath, input ? "input" : "output")) {
        const bool is_in = spec.find_input(key) != nullptr, is_out = spec.find_output(key) != nullptr;
        if (input ? !is_in : !is_out) {
          if (is_in || is_out)
            fail_at(ctx, line, lpath,
                    "'" + key + "' is an " + (is_in ? "input" : "output") + "; " + list.key + " lists " +
                        (input ? "input" : "output") + " keys");
          fail_at(ctx, line, lpath, std::string("no ") + (input ? "input" : "output") + " named '" + key + "'");
        }
        auto prev = member_of.find(key);
        if (prev != member_of.end())
          fail_at(ctx, line, lpath,
                  "'" + key + "' is already in " +
                      (prev->second == s.name ? std::string("this sequence") : "sequence '" + prev->second + "'") +
                      "; every input and output is in exactly one sequence");
        member_of[key] = s.name;
        (input ? s.inputs : s.outputs).push_back(key);
      }
    }
    if (s.inputs.empty())
      fail_at(ctx, m.require("inputs").value, m.require("inputs").line, path + ".inputs",
              "a sequence needs at least one input");
    spec.simple_sequences.push_back(std::move(s));
    seq_lines.push_back(e.line);
  }
  for (size_t i = 0; i < spec.simple_sequences.size(); ++i) {
    const Sequence& s = spec.simple_sequences[i];
    if (s.outputs.empty()) continue;
    if (main_seq)
      fail_at(ctx, seq_lines[i], "simple_sequences." + s.name + ".outputs",
              "only one sequence with outputs is supported ('" + main_seq->name +
                  "' has outputs already); other sequences may only hold latched inputs");
    main_seq = &s;
  }
  for (const auto* vars : {&spec.inputs, &spec.outputs}) {
    for (const Variable& v : *vars) {
      if (!member_of.count(v.key))
        fail_at(ctx, var_line[v.key], (v.input ? "inputs." : "outputs.") + v.key,
                std::string(v.input ? "input" : "output") + " '" + v.key +
                    "' is in no sequence; every input and output is in exactly one sequence");
    }
  }

  // Latched inputs: exactly those of sequences without outputs.
  for (const Sequence& s : spec.simple_sequences) {
    for (const std::string& key : s.inputs) {
      const Variable* v = spec.find_input(key);
      if (v->latched != s.outputs.empty())
        fail_at(ctx, var_line[key], "inputs." + key + ".comments.latched",
                v->latched ? "latched: true, but '" + key + "' is in sequence '" + s.name +
                                 "', which has outputs; a latched input belongs to a sequence without outputs"
                           : "latched: false, but '" + key + "' is in sequence '" + s.name +
                                 "', which has no outputs (a latched sequence); set latched: true");
    }
  }
  if (!complex.value.IsDefined() || !complex.value.IsMap())
    fail_at(ctx, complex.value, complex.line, "complex_sequences",
            "complex_sequences must be {} (complex sequences are not supported), got " + show(complex.value));
  MapReader cm(ctx, complex.value, complex.line, "complex_sequences", "the complex sequences");
  if (!cm.entries().empty())
    fail_at(ctx, cm.entries()[0].line, "complex_sequences." + cm.entries()[0].key,
            "complex sequences are not supported; complex_sequences must be {}");
  return spec;
}

IoSpec load_yaml(const std::string& path) { return parse_yaml(detail::read_text_file(path, "IOSpec"), path); }

}  // namespace weft::iospec
