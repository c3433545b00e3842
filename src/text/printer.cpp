#include "text/printer.h"

#include <algorithm>
#include <variant>

#include "text/lexer.h"

namespace weft {
namespace text {
namespace {

bool is_enum(AttrKind k) {
  return k == AttrKind::kAccType || k == AttrKind::kNanMode || k == AttrKind::kResizeMode ||
         k == AttrKind::kRoundingMode || k == AttrKind::kVarType;
}

void append_ints(std::string& out, const std::vector<int64_t>& v) {
  out += '[';
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(v[i]);
  }
  out += ']';
}

void append_tensor_list(std::string& out, const Tensor& t) {
  out += '[';
  const DType dt = t.dtype();
  const size_t size = storage_size(dt);
  // A tensor without bytes (default-constructed) prints as an empty list; the parser then reports
  // the element count mismatch instead of the printer reading through a null pointer.
  if (t.bytes() && t.byte_size() == t.type().byte_size()) {
    const auto n = static_cast<size_t>(t.num_elements());
    out.reserve(out.size() + n * 4);
    for (size_t i = 0; i < n; ++i) {
      if (i) out += ", ";
      append_element(out, dt, t.bytes() + i * size);
    }
  }
  out += ']';
}

class Printer {
 public:
  Printer(const Module& m, const PrintOptions& o, const FileRefs& files) : m_(m), opt_(o), files_(files) {}

  std::string run() {
    if (m_.profiles() != kAllProfiles) {
      out_ += "profiles [";
      bool first = true;
      for (int bit = 0; bit < 32; ++bit) {
        ProfileSet p = 1u << bit;
        if (!(m_.profiles() & p & kAllProfiles)) continue;
        if (!first) out_ += ", ";
        first = false;
        out_ += profile_set_str(p);
      }
      out_ += "]\n";
    }
    if (m_.entry() != "main") out_ += "entry " + format_name('@', m_.entry()) + "\n";
    bool header = !out_.empty();
    for (size_t gi = 0; gi < m_.graphs().size(); ++gi) {
      if (gi > 0 || header) out_ += '\n';
      graph(gi);
    }
    return std::move(out_);
  }

 private:
  void value_ref(const Graph& g, ValueId id) { out_ += format_name('%', g.value(id).name); }

  void graph(size_t gi) {
    const Graph& g = m_.graphs()[gi];
    out_ += "graph " + format_name('@', g.name()) + "(";
    for (size_t i = 0; i < g.inputs().size(); ++i) {
      if (i) out_ += ", ";
      value_ref(g, g.inputs()[i]);
      out_ += ": " + g.value(g.inputs()[i]).type.str();
    }
    out_ += ") -> (";
    for (size_t i = 0; i < g.outputs().size(); ++i) {
      if (i) out_ += ", ";
      value_ref(g, g.outputs()[i]);
    }
    out_ += ") {\n";
    for (size_t ni = 0; ni < g.nodes().size(); ++ni) node(gi, g, ni);
    out_ += "  return";
    for (size_t i = 0; i < g.outputs().size(); ++i) {
      out_ += i ? ", " : " ";
      value_ref(g, g.outputs()[i]);
    }
    out_ += "\n}\n";
  }

  void node(size_t gi, const Graph& g, size_t ni) {
    const Node& n = g.nodes()[ni];
    const OpDef& d = op_def(n.op);
    out_ += "  ";
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      if (i) out_ += ", ";
      value_ref(g, n.outputs[i]);
      out_ += ": " + g.value(n.outputs[i]).type.str();
    }
    if (!n.outputs.empty()) out_ += " = ";
    out_ += d.name;
    out_ += '(';
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (i) out_ += ", ";
      value_ref(g, n.inputs[i]);
    }
    out_ += ')';
    const size_t nattrs = std::min(d.attrs.size(), n.attrs.size());
    if (nattrs > 0) {
      out_ += " {";
      for (size_t i = 0; i < nattrs; ++i) {
        if (i) out_ += ", ";
        out_ += d.attrs[i].name;
        out_ += " = ";
        attr(gi, ni, n, d.attrs[i], n.attrs[i]);
      }
      out_ += '}';
    }
    if (!n.name.empty()) out_ += " loc(" + quote_string(n.name) + ")";
    out_ += '\n';
  }

  void attr(size_t gi, size_t ni, const Node& n, const AttrDef& ad, const AttrValue& v) {
    if (const bool* b = std::get_if<bool>(&v)) {
      out_ += *b ? "true" : "false";
    } else if (const int64_t* i = std::get_if<int64_t>(&v)) {
      const char* name = is_enum(ad.kind) ? enum_value_name(ad.kind, *i) : nullptr;
      out_ += name ? std::string(name) : std::to_string(*i);
    } else if (const auto* list = std::get_if<std::vector<int64_t>>(&v)) {
      append_ints(out_, *list);
    } else if (const std::string* s = std::get_if<std::string>(&v)) {
      out_ += ad.kind == AttrKind::kGraph ? format_name('@', *s) : quote_string(*s);
    } else if (const Tensor* t = std::get_if<Tensor>(&v)) {
      if (ad.kind == AttrKind::kScalar) {
        if (t->bytes() && t->byte_size() >= storage_size(t->dtype()) && t->num_elements() >= 1) {
          append_element(out_, t->dtype(), t->bytes());
        } else {
          append_tensor_list(out_, *t);
        }
        return;
      }
      auto f = files_.find({gi, ni});
      if (f != files_.end()) {
        out_ += "file(" + quote_string(f->second) + ")";
      } else if (!n.data_file.empty() && t->bytes() &&
                 static_cast<size_t>(t->num_elements()) > opt_.inline_limit) {
        out_ += "file(" + quote_string(n.data_file) + ")";
      } else {
        append_tensor_list(out_, *t);
      }
    }
  }

  const Module& m_;
  const PrintOptions& opt_;
  const FileRefs& files_;
  std::string out_;
};

}  // namespace

std::string print_module(const Module& module, const PrintOptions& options, const FileRefs& files) {
  return Printer(module, options, files).run();
}

}  // namespace text

std::string print_weft(const Module& module, const PrintOptions& options) {
  return text::print_module(module, options, {});
}

}  // namespace weft
