// The .weft parser. Two phases: a syntax pass builds a small tree of tokens for the whole file
// (so graph references may point forward and every error carries its token's line:column), then a
// build pass resolves names, converts attribute values to the types the operator table asks for,
// infers omitted output types and produces the Module.
#include <algorithm>
#include <filesystem>
#include <optional>
#include <unordered_map>
#include <vector>

#include "text/lexer.h"
#include "weft/npy.h"
#include "weft/text.h"
#include "weft/verify.h"

namespace weft {
namespace text {
namespace {

// ---- Syntax tree ----

struct AttrAst {
  enum class Kind { kWord, kNumber, kString, kGraph, kList, kFile };
  Token name;
  Kind kind = Kind::kWord;
  Token value;               // the word/number/string/graph token; '[' of a list; 'file' of file(...)
  Token path;                // file(...): the string token
  std::vector<Token> elems;  // list elements (numbers and words)
};

struct OutAst {
  Token name;
  std::optional<TensorType> type;
};

struct NodeAst {
  std::vector<OutAst> outs;
  Token op_tok;
  Op op = Op::CONST;
  std::vector<Token> ins;
  std::vector<AttrAst> attrs;
  std::string label;
};

struct GraphAst {
  Token graph_tok;
  Token name_tok;
  std::string name;
  std::vector<std::pair<Token, TensorType>> inputs;
  std::vector<Token> outputs;
  std::vector<NodeAst> nodes;
  Token return_tok;
  std::vector<Token> returns;
};

struct ModuleAst {
  std::optional<ProfileSet> profiles;
  std::optional<Token> entry;
  std::vector<GraphAst> graphs;
  Token eof;
};

Location loc_of(const std::string& file, const Token& t) {
  return Location{.file = file, .line = t.line, .column = t.column};
}

[[noreturn]] void fail(const std::string& file, const Token& t, const std::string& message) {
  throw Error(ErrorCode::kParse, message, loc_of(file, t));
}

std::string at_str(const Token& t) { return std::to_string(t.line) + ":" + std::to_string(t.column); }

// ---- Syntax pass ----

class SyntaxParser {
 public:
  SyntaxParser(std::string_view text, const std::string& file) : lex_(text, file), file_(file) { bump(); }

  ModuleAst parse_module() {
    ModuleAst m;
    if (is_word("profiles")) {
      bump();
      expect(TokKind::kLBracket, "after 'profiles'");
      ProfileSet set = 0;
      if (cur_.kind != TokKind::kRBracket) {
        for (;;) {
          Token p = expect(TokKind::kIdent, "in the profile list");
          auto bit = parse_profile(p.text);
          if (!bit) {
            fail(file_, p,
                 "unknown profile '" + std::string(p.text) + "' (expected names such as " +
                     profile_set_str(kAllProfiles) + ", separated by ',')");
          }
          set |= *bit;
          if (cur_.kind != TokKind::kComma) break;
          bump();
        }
      }
      expect(TokKind::kRBracket, "to end the profile list");
      m.profiles = set;
    }
    if (is_word("entry")) {
      bump();
      m.entry = expect(TokKind::kGraph, "after 'entry'");
    }
    while (is_word("graph")) m.graphs.push_back(parse_graph());
    if (cur_.kind != TokKind::kEof || m.graphs.empty()) {
      fail(file_, cur_, "expected 'graph', found " + describe(cur_));
    }
    m.eof = cur_;
    return m;
  }

 private:
  void bump() { cur_ = lex_.next(); }
  bool is_word(std::string_view w) const { return cur_.kind == TokKind::kIdent && cur_.text == w; }

  Token expect(TokKind k, const std::string& context) {
    if (cur_.kind != k)
      fail(file_, cur_,
           std::string("expected ") + kind_name(k) + " " + context + ", found " + describe(cur_));
    Token t = cur_;
    bump();
    return t;
  }

  TensorType parse_type(const std::string& context) {
    Token d = expect(TokKind::kIdent, "(an element type) " + context);
    auto dt = parse_dtype(d.text);
    if (!dt) {
      fail(file_, d,
           "unknown element type '" + std::string(d.text) +
               "' (expected bool, i4, i8, i16, i32, i48, f8e4m3, f8e5m2, f16, bf16, f32 or shape)");
    }
    TensorType t{*dt, {}};
    expect(TokKind::kLBracket, "after element type '" + std::string(d.text) + "'");
    if (cur_.kind != TokKind::kRBracket) {
      for (;;) {
        t.shape.push_back(parse_int(cur_, 0, INT64_MAX, file_, "a dimension"));
        bump();
        if (cur_.kind != TokKind::kComma) break;
        bump();
      }
    }
    expect(TokKind::kRBracket, "to end the shape of a " + std::string(d.text) + " type");
    return t;
  }

  GraphAst parse_graph() {
    GraphAst g;
    g.graph_tok = cur_;
    bump();
    g.name_tok = expect(TokKind::kGraph, "after 'graph'");
    g.name = token_name(g.name_tok, file_);
    const std::string gname = format_name('@', g.name);
    expect(TokKind::kLParen, "after the graph name " + gname);
    if (cur_.kind != TokKind::kRParen) {
      for (;;) {
        Token v = expect(TokKind::kValue, "in the input list of " + gname);
        expect(TokKind::kColon, "after input " + std::string(v.text));
        g.inputs.emplace_back(v, parse_type("for input " + std::string(v.text)));
        if (cur_.kind != TokKind::kComma) break;
        bump();
      }
    }
    expect(TokKind::kRParen, "after the inputs of " + gname);
    expect(TokKind::kArrow, "after the inputs of " + gname);
    expect(TokKind::kLParen, "to start the output list of " + gname);
    if (cur_.kind != TokKind::kRParen) {
      for (;;) {
        g.outputs.push_back(expect(TokKind::kValue, "in the output list of " + gname));
        if (cur_.kind != TokKind::kComma) break;
        bump();
      }
    }
    expect(TokKind::kRParen, "after the outputs of " + gname);
    Token open = expect(TokKind::kLBrace, "to start the body of " + gname);
    for (;;) {
      if (cur_.kind == TokKind::kEof) {
        fail(file_, cur_,
             "graph " + gname + " opened at " + at_str(open) +
                 " is not closed: expected 'return' and '}', found end of input");
      }
      if (cur_.kind == TokKind::kRBrace) {
        fail(file_, cur_, "expected 'return' before '}' at the end of graph " + gname);
      }
      if (is_word("return")) {
        g.return_tok = cur_;
        bump();
        if (cur_.kind == TokKind::kValue) {
          for (;;) {
            g.returns.push_back(expect(TokKind::kValue, "in the return list of " + gname));
            if (cur_.kind != TokKind::kComma) break;
            bump();
          }
        }
        if (cur_.kind == TokKind::kEof) {
          fail(file_, cur_,
               "graph " + gname + " opened at " + at_str(open) +
                   " is not closed: expected '}', found end of input");
        }
        expect(TokKind::kRBrace, "after the return values of " + gname);
        break;
      }
      g.nodes.push_back(parse_node());
    }
    return g;
  }

  NodeAst parse_node() {
    NodeAst n;
    if (cur_.kind == TokKind::kValue) {
      for (;;) {
        OutAst o;
        o.name = expect(TokKind::kValue, "in the output list of a node");
        if (cur_.kind == TokKind::kColon) {
          bump();
          o.type = parse_type("for " + std::string(o.name.text));
        }
        n.outs.push_back(std::move(o));
        if (cur_.kind != TokKind::kComma) break;
        bump();
      }
      expect(TokKind::kEqual, "after the outputs of a node");
    } else if (cur_.kind != TokKind::kIdent) {
      fail(file_, cur_, "expected a node (outputs '=' OPERATOR(...)) or 'return', found " + describe(cur_));
    }
    n.op_tok = expect(TokKind::kIdent, "(an operator name)");
    auto op = op_from_name(n.op_tok.text);
    if (!op) fail(file_, n.op_tok, "unknown operator '" + std::string(n.op_tok.text) + "'");
    n.op = *op;
    const std::string oname = op_name(n.op);
    expect(TokKind::kLParen, "after " + oname);
    if (cur_.kind != TokKind::kRParen) {
      for (;;) {
        n.ins.push_back(expect(TokKind::kValue, "as an input of " + oname));
        if (cur_.kind != TokKind::kComma) break;
        bump();
      }
    }
    expect(TokKind::kRParen, "after the inputs of " + oname);
    if (cur_.kind == TokKind::kLBrace) {
      Token open = cur_;
      bump();
      if (cur_.kind != TokKind::kRBrace) {
        for (;;) {
          AttrAst a;
          a.name = expect(TokKind::kIdent, "(an attribute name) in the attributes of " + oname);
          expect(TokKind::kEqual, "after attribute '" + std::string(a.name.text) + "'");
          parse_attr_value(a, oname);
          n.attrs.push_back(std::move(a));
          if (cur_.kind != TokKind::kComma) break;
          bump();
        }
      }
      if (cur_.kind == TokKind::kEof) {
        fail(file_, cur_,
             "attributes of " + oname + " opened at " + at_str(open) +
                 " are not closed: expected '}', found end of input");
      }
      expect(TokKind::kRBrace, "after the attributes of " + oname);
    }
    if (is_word("loc")) {
      bump();
      expect(TokKind::kLParen, "after 'loc'");
      n.label = decode_string(expect(TokKind::kString, "in loc(...)"), file_);
      expect(TokKind::kRParen, "after the loc label");
    }
    return n;
  }

  void parse_attr_value(AttrAst& a, const std::string& oname) {
    a.value = cur_;
    switch (cur_.kind) {
      case TokKind::kNumber:
        a.kind = AttrAst::Kind::kNumber;
        bump();
        return;
      case TokKind::kString:
        a.kind = AttrAst::Kind::kString;
        bump();
        return;
      case TokKind::kGraph:
        a.kind = AttrAst::Kind::kGraph;
        bump();
        return;
      case TokKind::kIdent:
        if (cur_.text == "file") {
          a.kind = AttrAst::Kind::kFile;
          bump();
          expect(TokKind::kLParen, "after 'file'");
          a.path = expect(TokKind::kString, "(the .npy path) in file(...)");
          expect(TokKind::kRParen, "after the path in file(...)");
        } else {
          a.kind = AttrAst::Kind::kWord;
          bump();
        }
        return;
      case TokKind::kLBracket: {
        a.kind = AttrAst::Kind::kList;
        bump();
        if (cur_.kind != TokKind::kRBracket) {
          for (;;) {
            if (cur_.kind != TokKind::kNumber && cur_.kind != TokKind::kIdent) {
              if (cur_.kind == TokKind::kEof) {
                fail(
                    file_, cur_,
                    "list opened at " + at_str(a.value) + " is not closed: expected ']', found end of input");
              }
              fail(file_, cur_,
                   "expected a list element (a number, true or false) in attribute '" +
                       std::string(a.name.text) + "', found " + describe(cur_));
            }
            a.elems.push_back(cur_);
            bump();
            if (cur_.kind != TokKind::kComma) break;
            bump();
          }
        }
        if (cur_.kind == TokKind::kEof) {
          fail(file_, cur_,
               "list opened at " + at_str(a.value) + " is not closed: expected ']', found end of input");
        }
        expect(TokKind::kRBracket, "or ',' in the list of attribute '" + std::string(a.name.text) + "'");
        return;
      }
      default:
        fail(file_, cur_,
             "expected a value for attribute '" + std::string(a.name.text) + "' of " + oname + ", found " +
                 describe(cur_));
    }
  }

  Lexer lex_;
  const std::string& file_;
  Token cur_;
};

// ---- Build pass ----

const char* expected_form(AttrKind k) {
  switch (k) {
    case AttrKind::kInt: return "an integer";
    case AttrKind::kBool: return "true or false";
    case AttrKind::kIntList: return "a list of integers";
    case AttrKind::kAccType:
    case AttrKind::kNanMode:
    case AttrKind::kResizeMode:
    case AttrKind::kRoundingMode:
    case AttrKind::kVarType: return "an enumeration name";
    case AttrKind::kScalar: return "a number";
    case AttrKind::kTensor: return "a list of values or file(\"...\")";
    case AttrKind::kShapeValues: return "a list of integers";
    case AttrKind::kString: return "a string";
    case AttrKind::kGraph: return "a graph name (@name)";
  }
  return "a value";
}

std::string enum_choices(AttrKind k) {
  std::string s;
  for (int64_t v = 1;; ++v) {
    const char* n = enum_value_name(k, v);
    if (!n) break;
    if (!s.empty()) s += ", ";
    s += n;
  }
  return s;
}

class Builder {
 public:
  Builder(const ModuleAst& ast, const std::string& file, const std::string& base_dir)
      : ast_(ast), file_(file), base_dir_(base_dir) {}

  Module build() {
    for (size_t i = 0; i < ast_.graphs.size(); ++i) {
      const GraphAst& g = ast_.graphs[i];
      auto [it, fresh] = index_.emplace(g.name, i);
      if (!fresh) {
        fail(file_, g.name_tok,
             "graph " + format_name('@', g.name) + " is already defined at " +
                 at_str(ast_.graphs[it->second].name_tok));
      }
    }
    std::string entry = "main";
    if (ast_.entry) {
      entry = token_name(*ast_.entry, file_);
      if (!index_.count(entry))
        fail(file_, *ast_.entry, "entry graph " + format_name('@', entry) + " is not defined");
    } else if (!index_.count("main")) {
      fail(file_, ast_.graphs[0].name_tok,
           "module has no graph @main; name its entry graph with 'entry @name' before the first graph");
    }
    state_.assign(ast_.graphs.size(), State::kNone);
    for (size_t i = 0; i < ast_.graphs.size(); ++i) {
      if (state_[i] == State::kNone) build_graph(i);
    }
    // Graphs were built in dependency order (for inference); the module keeps the file's order.
    Module m;
    std::vector<bool> moved(work_.graphs().size(), false);
    for (const GraphAst& ga : ast_.graphs) {
      for (size_t k = 0; k < work_.graphs().size(); ++k) {
        if (!moved[k] && work_.graphs()[k].name() == ga.name) {
          m.add_graph(std::move(work_.graphs()[k]));
          moved[k] = true;
          break;
        }
      }
    }
    m.set_entry(entry);
    if (ast_.profiles) m.set_profiles(*ast_.profiles);
    return m;
  }

 private:
  enum class State { kNone, kBuilding, kDone };

  std::string value_name(const Token& t) const { return token_name(t, file_); }

  void build_graph(size_t gi) {
    state_[gi] = State::kBuilding;
    const GraphAst& ga = ast_.graphs[gi];
    Graph g(ga.name);
    // Every definition in the graph, so that a name used too early is told apart from one that is
    // never defined.
    std::unordered_map<std::string, const Token*> defs;
    for (const auto& [tok, type] : ga.inputs) defs.emplace(value_name(tok), &tok);
    for (const NodeAst& n : ga.nodes) {
      for (const OutAst& o : n.outs) defs.emplace(value_name(o.name), &o.name);
    }
    auto define = [&](const Token& tok) -> std::string {
      std::string name = value_name(tok);
      if (name.empty()) fail(file_, tok, "value names must not be empty");
      if (g.find_value(name)) {
        const Token* first = defs.at(name);
        fail(file_, tok, "value " + format_name('%', name) + " is already defined at " + at_str(*first));
      }
      return name;
    };
    for (const auto& [tok, type] : ga.inputs) g.add_input(define(tok), type);
    for (const NodeAst& n : ga.nodes) build_node(g, n, defs, define);

    std::vector<ValueId> outs;
    for (const Token& t : ga.outputs) {
      auto id = g.find_value(value_name(t));
      if (!id) {
        fail(file_, t,
             "graph output " + std::string(t.text) + " of " + format_name('@', ga.name) +
                 " is not defined in its body");
      }
      outs.push_back(*id);
    }
    for (size_t i = 0; i < std::max(ga.outputs.size(), ga.returns.size()); ++i) {
      if (i >= ga.returns.size()) {
        fail(file_, ga.return_tok,
             "return of " + format_name('@', ga.name) + " lists " + std::to_string(ga.returns.size()) +
                 " values, but the graph header lists " + std::to_string(ga.outputs.size()) + " outputs");
      }
      if (i >= ga.outputs.size()) {
        fail(file_, ga.returns[i],
             "return of " + format_name('@', ga.name) + " lists more values than the " +
                 std::to_string(ga.outputs.size()) + " outputs of its header");
      }
      if (value_name(ga.returns[i]) != value_name(ga.outputs[i])) {
        fail(file_, ga.returns[i],
             "return values must match the outputs of " + format_name('@', ga.name) + ": expected " +
                 std::string(ga.outputs[i].text) + ", found " + std::string(ga.returns[i].text));
      }
    }
    g.set_outputs(std::move(outs));
    work_.add_graph(std::move(g));
    state_[gi] = State::kDone;
  }

  template <class Define>
  void build_node(Graph& g, const NodeAst& na, const std::unordered_map<std::string, const Token*>& defs,
                  Define& define) {
    const OpDef& d = op_def(na.op);
    const std::string oname = d.name;
    Node n;
    n.op = na.op;
    n.name = na.label;

    // Inputs.
    for (const Token& t : na.ins) {
      std::string name = value_name(t);
      if (auto id = g.find_value(name)) {
        n.inputs.push_back(*id);
        continue;
      }
      auto it = defs.find(name);
      if (it != defs.end()) {
        fail(file_, t,
             "value " + std::string(t.text) + " is used before its definition at " + at_str(*it->second));
      }
      fail(file_, t, "undefined value " + std::string(t.text));
    }
    const size_t fixed_in = d.inputs.size() - (d.has_list_input() ? 1 : 0);
    if (d.has_list_input() ? na.ins.size() < fixed_in : na.ins.size() != fixed_in) {
      fail(file_, na.op_tok,
           oname + " takes " + (d.has_list_input() ? "at least " : "") + std::to_string(fixed_in) + " input" +
               (fixed_in == 1 ? "" : "s") + ", found " + std::to_string(na.ins.size()));
    }
    const size_t fixed_out = d.outputs.size() - (d.has_list_output() ? 1 : 0);
    if (d.has_list_output() ? na.outs.size() < fixed_out : na.outs.size() != fixed_out) {
      fail(file_, na.op_tok,
           oname + " produces " + (d.has_list_output() ? "at least " : "") + std::to_string(fixed_out) +
               " output" + (fixed_out == 1 ? "" : "s") + ", found " + std::to_string(na.outs.size()));
    }

    // Attributes: plain kinds first; tensors and scalars take their type from operands or from
    // other attributes (VARIABLE's var_shape and type).
    std::vector<const AttrAst*> given(d.attrs.size(), nullptr);
    for (const AttrAst& a : na.attrs) {
      int i = d.attr_index(a.name.text);
      if (i < 0) {
        std::string names;
        for (const AttrDef& ad : d.attrs) names += (names.empty() ? "" : ", ") + std::string(ad.name);
        fail(file_, a.name,
             oname + " has no attribute '" + std::string(a.name.text) + "'" +
                 (names.empty() ? " (it takes none)" : " (attributes: " + names + ")"));
      }
      if (given[static_cast<size_t>(i)]) {
        fail(file_, a.name,
             "attribute '" + std::string(a.name.text) + "' is given twice (first at " +
                 at_str(given[static_cast<size_t>(i)]->name) + ")");
      }
      given[static_cast<size_t>(i)] = &a;
    }
    n.attrs.resize(d.attrs.size());
    for (size_t i = 0; i < d.attrs.size(); ++i) {
      const AttrDef& ad = d.attrs[i];
      if (ad.kind == AttrKind::kTensor || ad.kind == AttrKind::kScalar) continue;
      if (given[i]) {
        n.attrs[i] = convert_plain(*given[i], ad, oname);
        continue;
      }
      switch (ad.kind) {
        case AttrKind::kNanMode: n.attrs[i] = static_cast<int64_t>(NanMode::kPropagate); break;
        case AttrKind::kRoundingMode: n.attrs[i] = static_cast<int64_t>(RoundingMode::kSingle); break;
        case AttrKind::kBool: n.attrs[i] = false; break;
        default: fail(file_, na.op_tok, oname + " requires attribute '" + std::string(ad.name) + "'");
      }
    }
    for (size_t i = 0; i < d.attrs.size(); ++i) {
      const AttrDef& ad = d.attrs[i];
      if (ad.kind != AttrKind::kTensor && ad.kind != AttrKind::kScalar) continue;
      if (!given[i]) fail(file_, na.op_tok, oname + " requires attribute '" + std::string(ad.name) + "'");
      n.attrs[i] = ad.kind == AttrKind::kScalar ? convert_scalar(g, na, n, *given[i], ad)
                                                : convert_tensor(na, n, *given[i], ad);
    }

    // Output types: as written, or inferred when any is omitted.
    std::vector<TensorType> types(na.outs.size());
    bool all_typed = true;
    for (size_t k = 0; k < na.outs.size(); ++k) {
      if (na.outs[k].type) {
        types[k] = *na.outs[k].type;
      } else {
        all_typed = false;
      }
    }
    if (!all_typed) {
      const Token* untyped = nullptr;
      for (const OutAst& o : na.outs) {
        if (!o.type && !untyped) untyped = &o.name;
      }
      if (na.op == Op::CONST) {
        fail(file_, *untyped,
             "CONST needs an output type (" + std::string(untyped->text) +
                 ": <type>): it gives the element type and shape of its values");
      }
      std::vector<TensorType> inferred;
      if (na.op == Op::CONST_SHAPE) {
        const auto& vals = std::get<std::vector<int64_t>>(n.attrs[0]);
        inferred = {TensorType{DType::kShape, {static_cast<int64_t>(vals.size())}}};
      } else {
        inferred = infer_types(g, na, n, *untyped);
      }
      if (inferred.size() != na.outs.size()) {
        fail(file_, na.op_tok,
             oname + " produces " + std::to_string(inferred.size()) + " output" +
                 (inferred.size() == 1 ? "" : "s") + " here, found " + std::to_string(na.outs.size()) +
                 " names");
      }
      for (size_t k = 0; k < na.outs.size(); ++k) {
        if (!na.outs[k].type) types[k] = inferred[k];
      }
    }
    for (size_t k = 0; k < na.outs.size(); ++k) {
      n.outputs.push_back(g.add_value(define(na.outs[k].name), types[k]));
    }
    g.add_node(std::move(n));
  }

  std::vector<TensorType> infer_types(const Graph& g, const NodeAst& na, const Node& n,
                                      const Token& untyped) {
    const OpDef& d = op_def(na.op);
    // Sub-graphs must exist for COND_IF / WHILE_LOOP inference; build them first when they come
    // later in the file.
    for (size_t i = 0; i < d.attrs.size(); ++i) {
      if (d.attrs[i].kind != AttrKind::kGraph) continue;
      size_t gi = index_.at(std::get<std::string>(n.attrs[i]));
      if (state_[gi] == State::kBuilding) {
        fail(file_, untyped,
             "cannot infer the output types of " + std::string(d.name) + ": graph " +
                 format_name('@', ast_.graphs[gi].name) +
                 " refers back to the graph being defined; write the output types");
      }
      if (state_[gi] == State::kNone) build_graph(gi);
    }
    std::string why;
    try {
      return infer_output_types(g, n, &work_);
    } catch (const Error& e) {
      why = e.message();
    } catch (const std::exception& e) {
      why = e.what();
    }
    fail(file_, untyped,
         "output type of " + std::string(untyped.text) + " is omitted and cannot be inferred (" + why +
             "); write it as " + std::string(untyped.text) + ": <type>");
  }

  [[noreturn]] void wrong_kind(const AttrAst& a, const AttrDef& ad, const std::string& oname) {
    std::string expected = expected_form(ad.kind);
    std::string choices = enum_choices(ad.kind);
    if (!choices.empty()) expected = "one of " + choices;
    fail(file_, a.value,
         "attribute '" + std::string(ad.name) + "' of " + oname + " takes " + expected + ", found " +
             describe(a.value));
  }

  AttrValue convert_plain(const AttrAst& a, const AttrDef& ad, const std::string& oname) {
    using K = AttrAst::Kind;
    const std::string what = "a value of attribute '" + std::string(ad.name) + "'";
    switch (ad.kind) {
      case AttrKind::kInt:
        if (a.kind != K::kNumber) wrong_kind(a, ad, oname);
        return parse_int(a.value, INT32_MIN, INT32_MAX, file_, what.c_str());
      case AttrKind::kBool:
        if (a.kind != K::kWord || (a.value.text != "true" && a.value.text != "false"))
          wrong_kind(a, ad, oname);
        return a.value.text == "true";
      case AttrKind::kIntList:
      case AttrKind::kShapeValues: {
        if (a.kind != K::kList) wrong_kind(a, ad, oname);
        const bool i32 = ad.kind == AttrKind::kIntList;
        std::vector<int64_t> v;
        v.reserve(a.elems.size());
        for (const Token& t : a.elems) {
          v.push_back(parse_int(t, i32 ? INT32_MIN : INT64_MIN, i32 ? INT32_MAX : INT64_MAX, file_,
                                i32 ? "an i32 list element" : "a shape value"));
        }
        return v;
      }
      case AttrKind::kAccType:
      case AttrKind::kNanMode:
      case AttrKind::kResizeMode:
      case AttrKind::kRoundingMode:
      case AttrKind::kVarType: {
        // Values outside the enumeration print as integers, so integers parse too.
        if (a.kind == K::kNumber) return parse_int(a.value, INT64_MIN, INT64_MAX, file_, what.c_str());
        if (a.kind != K::kWord) wrong_kind(a, ad, oname);
        auto v = parse_enum_value(ad.kind, a.value.text);
        if (!v) wrong_kind(a, ad, oname);
        return *v;
      }
      case AttrKind::kString:
        if (a.kind != K::kString) wrong_kind(a, ad, oname);
        return decode_string(a.value, file_);
      case AttrKind::kGraph: {
        if (a.kind != K::kGraph) wrong_kind(a, ad, oname);
        std::string name = token_name(a.value, file_);
        if (!index_.count(name)) fail(file_, a.value, "undefined graph " + format_name('@', name));
        return name;
      }
      case AttrKind::kScalar:
      case AttrKind::kTensor: break;
    }
    fail(file_, a.value, "internal: attribute kind not handled");
  }

  // The value whose element type gives a kScalar / kTensor attribute its type: the first operand
  // declared with the attribute's type variable.
  std::optional<TensorType> operand_type(const Graph& g, const NodeAst& na, const Node& n,
                                         const AttrDef& ad) {
    const OpDef& d = op_def(na.op);
    for (size_t i = 0; i < d.inputs.size() && i < n.inputs.size(); ++i) {
      if (std::string_view(d.inputs[i].elem) == ad.elem) return g.value(n.inputs[i]).type;
    }
    for (size_t i = 0; i < d.outputs.size() && i < na.outs.size(); ++i) {
      if (std::string_view(d.outputs[i].elem) == ad.elem) return na.outs[i].type;
    }
    return std::nullopt;
  }

  AttrValue convert_scalar(const Graph& g, const NodeAst& na, const Node& n, const AttrAst& a,
                           const AttrDef& ad) {
    const std::string oname = op_name(na.op);
    if (a.kind != AttrAst::Kind::kNumber && a.kind != AttrAst::Kind::kWord) wrong_kind(a, ad, oname);
    auto type = operand_type(g, na, n, ad);
    if (!type) {
      fail(file_, a.value,
           "cannot tell the element type of attribute '" + std::string(ad.name) + "' of " + oname);
    }
    Tensor t = Tensor::zeros(TensorType{type->dtype, {}});
    parse_element(a.value, type->dtype, t.mutable_bytes(), file_);
    return t;
  }

  AttrValue convert_tensor(const NodeAst& na, Node& n, const AttrAst& a, const AttrDef& ad) {
    const std::string oname = op_name(na.op);
    if (a.kind != AttrAst::Kind::kList && a.kind != AttrAst::Kind::kFile) wrong_kind(a, ad, oname);
    TensorType type;
    std::string owner;  // what the values belong to, for messages
    if (na.op == Op::VARIABLE) {
      // VARIABLE has no operands: its values take var_shape and type.
      const OpDef& d = op_def(na.op);
      const auto& shape =
          std::get<std::vector<int64_t>>(n.attrs[static_cast<size_t>(d.attr_index("var_shape"))]);
      int64_t vt = std::get<int64_t>(n.attrs[static_cast<size_t>(d.attr_index("type"))]);
      if (!enum_value_name(AttrKind::kVarType, vt)) {
        fail(file_, a.value, "VARIABLE type " + std::to_string(vt) + " is not a var_t value");
      }
      for (int64_t dim : shape) {
        if (dim < 0)
          fail(file_, a.value, "VARIABLE var_shape " + shape_str(shape) + " has a negative dimension");
      }
      type = TensorType{var_type_dtype(static_cast<VarType>(vt)), shape};
      owner = "VARIABLE " + quote_string(std::get<std::string>(n.attrs[0]));
    } else {
      std::optional<TensorType> t;
      const OpDef& d = op_def(na.op);
      for (size_t i = 0; i < d.outputs.size() && i < na.outs.size(); ++i) {
        if (std::string_view(d.outputs[i].elem) == ad.elem) {
          if (!na.outs[i].type) {
            fail(file_, na.outs[i].name,
                 oname + " needs an output type (" + std::string(na.outs[i].name.text) +
                     ": <type>): it gives the element type and shape of its values");
          }
          t = na.outs[i].type;
          owner = std::string(na.outs[i].name.text);
          break;
        }
      }
      if (!t)
        fail(file_, a.value, "cannot tell the type of attribute '" + std::string(ad.name) + "' of " + oname);
      type = *t;
    }
    int64_t count;
    try {
      count = type.num_elements();
    } catch (const Error& e) {
      fail(file_, a.value, "values of " + owner + ": " + e.message());
    }
    if (a.kind == AttrAst::Kind::kList) {
      if (static_cast<uint64_t>(count) != a.elems.size()) {
        fail(file_, a.value,
             "values of " + owner + ": " + type.str() + " needs " + std::to_string(count) + " element" +
                 (count == 1 ? "" : "s") + ", found " + std::to_string(a.elems.size()));
      }
      Tensor t = Tensor::zeros(type);
      const size_t size = storage_size(type.dtype);
      uint8_t* p = t.mutable_bytes();
      for (size_t i = 0; i < a.elems.size(); ++i) parse_element(a.elems[i], type.dtype, p + i * size, file_);
      return t;
    }
    const std::string rel = decode_string(a.path, file_);
    const std::string path = (std::filesystem::path(base_dir_) / rel).string();
    Tensor t;
    try {
      t = read_npy(path, type.dtype);
    } catch (const Error& e) {
      std::string inner =
          e.location().file.empty() || e.location().file == path ? "" : e.location().file + ": ";
      throw Error(e.code(),
                  "cannot read values of " + owner + " from file(" + quote_string(rel) + ") (" + path +
                      "): " + inner + e.message(),
                  loc_of(file_, a.value));
    } catch (const std::exception& e) {
      throw Error(ErrorCode::kIo,
                  "cannot read values of " + owner + " from file(" + quote_string(rel) + ") (" + path +
                      "): " + e.what(),
                  loc_of(file_, a.value));
    }
    if (t.type() != type) {
      fail(file_, a.value,
           "file(" + quote_string(rel) + ") holds " + t.type().str() + " but " + owner + " is " + type.str());
    }
    n.data_file = rel;
    return t;
  }

  const ModuleAst& ast_;
  const std::string& file_;
  const std::string& base_dir_;
  std::unordered_map<std::string, size_t> index_;
  std::vector<State> state_;
  Module work_;  // graphs built so far, for inference of COND_IF / WHILE_LOOP
};

}  // namespace
}  // namespace text

Module parse_weft(std::string_view source, const std::string& filename, const std::string& base_dir) {
  text::ModuleAst ast = text::SyntaxParser(source, filename).parse_module();
  return text::Builder(ast, filename, base_dir).build();
}

}  // namespace weft
