// Round trips of the .weft text form: print(parse(print(m))) == print(m) byte for byte for every
// operator and element type, and the parsed module equals the printed one structurally.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>

#include "common/module_compare.h"
#include "weft/graph.h"
#include "weft/text.h"

namespace weft {
namespace {

using test::expect_same_module;

// Prints, parses, prints again; both texts must be equal and the parsed module equal to `m`.
std::string round_trip(const Module& m) {
  std::string first = print_weft(m);
  Module parsed;
  try {
    parsed = parse_weft(first, "<roundtrip>");
  } catch (const Error& e) {
    ADD_FAILURE() << e.what() << "\n" << first;
    return first;
  }
  std::string second = print_weft(parsed);
  EXPECT_EQ(first, second);
  expect_same_module(m, parsed);
  return first;
}

// ---- A small module for each operator ----

constexpr DType kCycle[] = {DType::kFp32, DType::kInt8,    DType::kFp16,  DType::kInt32,
                            DType::kBf16, DType::kInt16,   DType::kInt48, DType::kFp8E4M3,
                            DType::kInt4, DType::kFp8E5M2, DType::kBool};

Tensor sample_tensor(TensorType t, int seed) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.num_elements(); ++i) v.push_back((static_cast<double>(i + seed) - 3.0) * 0.75);
  return Tensor::from_doubles(t, v);
}

Graph pass_through_graph(const std::string& name, int n) {
  Graph g(name);
  for (int i = 0; i < n; ++i) {
    ValueId in = g.add_input("x" + std::to_string(i), TensorType{DType::kFp32, {2}});
    ValueId out = g.add_value("y" + std::to_string(i), TensorType{DType::kFp32, {2}});
    Node n2;
    n2.op = Op::IDENTITY;
    n2.inputs = {in};
    n2.outputs = {out};
    g.add_node(std::move(n2));
    g.add_output(out);
  }
  return g;
}

Module module_for_op(Op op) {
  const OpDef& d = op_def(op);
  const auto index = static_cast<size_t>(op);
  const DType dt = kCycle[index % std::size(kCycle)];
  const DType out_dt = kCycle[(index + 3) % std::size(kCycle)];
  Module m;
  Graph g("main");
  Node n;
  n.op = op;
  int counter = 0;
  for (const ArgDef& a : d.inputs) {
    if (a.kind == ArgKind::kShape) {
      ValueId s = g.add_value("shape" + std::to_string(counter++), TensorType{DType::kShape, {2}});
      Node c;
      c.op = Op::CONST_SHAPE;
      c.attrs = {std::vector<int64_t>{1, -2}};
      c.outputs = {s};
      g.add_node(std::move(c));
      n.inputs.push_back(s);
    } else if (a.kind == ArgKind::kTensorList) {
      for (int k = 0; k < 2; ++k) {
        n.inputs.push_back(g.add_input("list" + std::to_string(k), TensorType{dt, {2, 3}}));
      }
    } else {
      n.inputs.push_back(g.add_input(std::string(a.name), TensorType{dt, {2, 3}}));
    }
  }
  std::vector<TensorType> out_types;
  for (const ArgDef& a : d.outputs) {
    if (a.kind == ArgKind::kShape) {
      out_types.push_back(TensorType{DType::kShape, {3}});
    } else if (a.kind == ArgKind::kTensorList) {
      out_types.push_back(TensorType{out_dt, {4}});
      out_types.push_back(TensorType{DType::kBool, {}});
    } else {
      out_types.push_back(TensorType{out_dt, {2, 3}});
    }
  }
  for (size_t i = 0; i < d.attrs.size(); ++i) {
    const AttrDef& a = d.attrs[i];
    switch (a.kind) {
      case AttrKind::kInt: n.attrs.emplace_back(int64_t{-3}); break;
      case AttrKind::kBool: n.attrs.emplace_back(true); break;
      case AttrKind::kIntList:
        n.attrs.emplace_back(op == Op::VARIABLE ? std::vector<int64_t>{2, 3}
                                                : std::vector<int64_t>{1, 0, -7, 2147483647});
        break;
      case AttrKind::kAccType:
      case AttrKind::kNanMode:
      case AttrKind::kResizeMode:
      case AttrKind::kRoundingMode:
      case AttrKind::kVarType: n.attrs.emplace_back(int64_t{2}); break;
      case AttrKind::kScalar:
        n.attrs.emplace_back(Tensor::from_doubles(TensorType{dt, {}}, std::vector<double>{-1.5}));
        break;
      case AttrKind::kTensor:
        if (op == Op::VARIABLE) {
          n.attrs.emplace_back(sample_tensor(TensorType{var_type_dtype(VarType::kInt8), {2, 3}}, 1));
        } else {
          n.attrs.emplace_back(sample_tensor(out_types.at(0), 2));
        }
        break;
      case AttrKind::kShapeValues: n.attrs.emplace_back(std::vector<int64_t>{4, 0, -1}); break;
      case AttrKind::kString:
        n.attrs.emplace_back(std::string("op \"q\"\\ \n\t\x01 \xc3\xbc ") + a.name);
        break;
      case AttrKind::kGraph: {
        std::string name = std::string(a.name) + ".sub";
        n.attrs.emplace_back(name);
        m.add_graph(pass_through_graph(name, static_cast<int>(i) + 1));
        break;
      }
    }
  }
  for (size_t k = 0; k < out_types.size(); ++k) {
    ValueId v = g.add_value("out" + std::to_string(k), out_types[k]);
    n.outputs.push_back(v);
  }
  if (index % 2) n.name = std::string("label of ") + d.name;
  g.add_node(std::move(n));
  for (ValueId v : g.nodes().back().outputs) g.add_output(v);
  // The entry graph first, sub-graphs after it (references are forward).
  Module result(std::move(g));
  for (Graph& sub : m.graphs()) result.add_graph(std::move(sub));
  return result;
}

TEST(TextRoundTrip, EveryOperator) {
  ASSERT_EQ(kNumOps, 75);
  for (const OpDef& d : all_op_defs()) {
    SCOPED_TRACE(d.name);
    Module m = module_for_op(d.op);
    std::string text = round_trip(m);
    EXPECT_NE(text.find(std::string(" ") + d.name + "("), std::string::npos) << text;
  }
}

TEST(TextRoundTrip, CanonicalLayout) {
  GraphBuilder b;
  ValueId x = b.input("image", TensorType{DType::kFp32, {1, 4}});
  ValueId s = b.constant_shape("shape", {2, 2});
  Tensor lo = Tensor::from_doubles(TensorType{DType::kFp32, {}}, std::vector<double>{0});
  Tensor hi = Tensor::from_doubles(TensorType{DType::kFp32, {}}, std::vector<double>{INFINITY});
  auto c = b.op_multi(Op::CLAMP, {x}, {{"min_val", lo}, {"max_val", hi}}, {"relu"},
                      {TensorType{DType::kFp32, {1, 4}}});
  auto r = b.op_multi(Op::RESHAPE, {c[0], s}, {}, {"out"}, {TensorType{DType::kFp32, {2, 2}}});
  b.output(r[0]);
  Module m(b.finish());
  m.set_profiles(kProInt | kProFp);
  const std::string expected =
      "profiles [PRO-INT, PRO-FP]\n"
      "\n"
      "graph @main(%image: f32[1,4]) -> (%out) {\n"
      "  %shape: shape[2] = CONST_SHAPE() {values = [2, 2]}\n"
      "  %relu: f32[1,4] = CLAMP(%image) {min_val = 0, max_val = inf, nan_mode = PROPAGATE}\n"
      "  %out: f32[2,2] = RESHAPE(%relu, %shape)\n"
      "  return %out\n"
      "}\n";
  EXPECT_EQ(round_trip(m), expected);
}

TEST(TextRoundTrip, SeveralGraphsEntryAndQuotedNames) {
  Module m(pass_through_graph("body with space", 2));
  m.add_graph(pass_through_graph("cond", 1));
  m.graphs()[0].rename_value(m.graphs()[0].inputs()[0], "weird name \"1\"");
  m.graphs()[0].rename_value(m.graphs()[0].outputs()[1], "ends:");
  m.set_entry("cond");
  m.set_profiles(0);
  std::string text = round_trip(m);
  EXPECT_NE(text.find("entry @cond\n"), std::string::npos) << text;
  EXPECT_NE(text.find("profiles []\n"), std::string::npos) << text;
  EXPECT_NE(text.find("graph @\"body with space\"("), std::string::npos) << text;
  EXPECT_NE(text.find("%\"weird name \\\"1\\\"\""), std::string::npos) << text;
  EXPECT_NE(text.find("%\"ends:\""), std::string::npos) << text;
}

// One CONST of type `t` holding `bits` (raw storage bytes), printed inline.
Module const_module(DType t, const std::vector<uint64_t>& bits) {
  const size_t size = storage_size(t);
  Tensor v = Tensor::zeros(TensorType{t, {static_cast<int64_t>(bits.size())}});
  for (size_t i = 0; i < bits.size(); ++i) std::memcpy(v.mutable_bytes() + i * size, &bits[i], size);
  GraphBuilder b;
  ValueId c = b.constant("c", v);
  b.output(c);
  return Module(b.finish());
}

TEST(TextRoundTrip, EveryBitPatternOfNarrowFloats) {
  for (DType t : {DType::kFp16, DType::kBf16, DType::kFp8E4M3, DType::kFp8E5M2}) {
    SCOPED_TRACE(dtype_name(t));
    std::vector<uint64_t> bits(size_t{1} << (8 * storage_size(t)));
    for (size_t i = 0; i < bits.size(); ++i) bits[i] = i;
    round_trip(const_module(t, bits));  // identical() compares the bits, NaN payloads included
  }
}

TEST(TextRoundTrip, Fp32SpecialsAndRandomBits) {
  std::vector<uint64_t> bits = {0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000,
                                0x7fc00001, 0x7f800001, 0xffffffff, 0x00000001, 0x80000001, 0x007fffff,
                                0x00800000, 0x7f7fffff, 0xff7fffff, 0x3f800000, 0x3dcccccd, 0x4b800001};
  std::mt19937_64 rng(42);
  for (int i = 0; i < 20000; ++i) bits.push_back(rng() & 0xffffffffu);
  std::string text = round_trip(const_module(DType::kFp32, bits));
  EXPECT_NE(
      text.find("[0, -0, inf, -inf, nan, 0xffc00000, 0x7fc00001, 0x7f800001, 0xffffffff, 1e-45, -1e-45, "),
      std::string::npos);
  EXPECT_NE(text.find(", 1, 0.1, "), std::string::npos);
}

TEST(TextRoundTrip, ShortestDecimalsForNarrowFloats) {
  Tensor v = Tensor::from_doubles(TensorType{DType::kFp16, {4}}, std::vector<double>{0.1, -2.5, 65504, 1e-7});
  GraphBuilder b;
  b.output(b.constant("c", v));
  std::string text = round_trip(Module(b.finish()));
  EXPECT_NE(text.find("values = [0.1, -2.5, 65500, 1e-07]"), std::string::npos) << text;
}

TEST(TextRoundTrip, IntegersBoolsAndShapes) {
  std::vector<std::pair<DType, std::vector<int64_t>>> cases = {
      {DType::kBool, {0, 1, 1, 0}},
      {DType::kInt4, {-8, 7, 0, -1}},
      {DType::kInt8, {-128, 127, 0, 5}},
      {DType::kInt16, {-32768, 32767}},
      {DType::kInt32, {INT32_MIN, INT32_MAX}},
      {DType::kInt48, {-(int64_t{1} << 47), (int64_t{1} << 47) - 1, 0}},
  };
  for (const auto& [t, values] : cases) {
    SCOPED_TRACE(dtype_name(t));
    GraphBuilder b;
    b.output(
        b.constant("c", Tensor::from_ints(TensorType{t, {static_cast<int64_t>(values.size())}}, values)));
    round_trip(Module(b.finish()));
  }
  GraphBuilder b;
  b.output(
      b.constant("scalar", Tensor::from_doubles(TensorType{DType::kFp32, {}}, std::vector<double>{2.5})));
  b.output(b.constant("empty", Tensor::zeros(TensorType{DType::kInt8, {0, 3}})));
  b.output(b.constant_shape("noshape", {}));
  b.output(b.constant_shape("big", {INT64_MIN, INT64_MAX}));
  std::string text = round_trip(Module(b.finish()));
  EXPECT_NE(text.find("%scalar: f32[] = CONST() {values = [2.5]}"), std::string::npos) << text;
  EXPECT_NE(text.find("%empty: i8[0,3] = CONST() {values = []}"), std::string::npos) << text;
  EXPECT_NE(text.find("%noshape: shape[0] = CONST_SHAPE() {values = []}"), std::string::npos) << text;
}

TEST(TextRoundTrip, LargeConstantsPrintInlineWithoutAFile) {
  std::vector<double> v(1000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i) / 7;
  GraphBuilder b;
  b.output(b.constant("w", Tensor::from_doubles(TensorType{DType::kFp32, {10, 100}}, v)));
  std::string text = round_trip(Module(b.finish()));
  EXPECT_EQ(text.find("file("), std::string::npos);
}

TEST(TextRoundTrip, EnumValuesOutsideTheTablePrintAsIntegers) {
  Module m = module_for_op(Op::MAX_POOL2D);
  m.main().mutable_node(0).attrs[3] = int64_t{9};  // nan_mode
  std::string text = round_trip(m);
  EXPECT_NE(text.find("nan_mode = 9"), std::string::npos) << text;
}

// ---- Robustness: truncated and mutated canonical text gives an Error, never a crash ----

void parse_must_not_crash(const std::string& text) {
  try {
    Module m = parse_weft(text, "<fuzz>");
    (void)print_weft(m);
  } catch (const Error& e) {
    EXPECT_EQ(e.location().file, "<fuzz>") << e.what();
    EXPECT_GT(e.location().line, 0) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a weft::Error: " << e.what() << "\n" << text;
  }
}

TEST(TextFuzz, TruncatedAtEveryByte) {
  std::vector<std::string> texts;
  for (const OpDef& d : all_op_defs()) texts.push_back(print_weft(module_for_op(d.op)));
  texts.push_back(
      "# header\nprofiles [PRO-INT]\nentry @m\ngraph @m(%a: f16[2]) -> (%b) {\n"
      "  %b = CLAMP(%a) {min_val = -inf, max_val = 0x7bff} loc(\"\\x41\")\n  return %b\n}\n");
  size_t errors = 0, parsed = 0;
  for (const std::string& t : texts) {
    for (size_t len = 0; len < t.size(); ++len) {
      std::string cut = t.substr(0, len);
      try {
        parse_weft(cut, "<fuzz>");
        ++parsed;
      } catch (const Error& e) {
        ++errors;
        EXPECT_EQ(e.location().file, "<fuzz>") << e.what();
        EXPECT_GT(e.location().line, 0) << e.what();
      } catch (const std::exception& e) {
        ADD_FAILURE() << "not a weft::Error at length " << len << ": " << e.what() << "\n" << cut;
      }
    }
  }
  EXPECT_GT(errors, 1000u);
  // Only cuts inside the trailing newline or comment can parse.
  EXPECT_LE(parsed, texts.size() * 2);
}

TEST(TextFuzz, MutatedBytes) {
  std::vector<std::string> texts;
  for (const OpDef& d : all_op_defs()) texts.push_back(print_weft(module_for_op(d.op)));
  texts.push_back(
      "profiles [PRO-INT, EXT-BF16]\nentry @\"a b\"\n\ngraph @\"a b\"(%\"x:\": bf16[2]) -> (%y) {\n"
      "  %y = CLAMP(%\"x:\") {min_val = -3, max_val = 0x4040} # c\n  return %y\n}\n");
  texts.push_back(
      "graph @main() -> (%c) {\n  %c: f32[3] = CONST() {values = [1e-45, -nan, .5]} loc(\"\\t\")\n"
      "  return %c\n}\n");
  for (size_t i = texts.size() - 2; i < texts.size(); ++i) EXPECT_NO_THROW(parse_weft(texts[i])) << texts[i];
  // WEFT_TEXT_FUZZ_ITERATIONS runs a longer campaign (e.g. under the sanitizers).
  const char* env = std::getenv("WEFT_TEXT_FUZZ_ITERATIONS");
  const int iterations = env ? std::atoi(env) : 20000;
  const std::string alphabet = "%@[](){},:=\"\\#-+.0123456789aefnx \n\t\x80\xff";
  std::mt19937 rng(7);
  for (int i = 0; i < iterations; ++i) {
    std::string t = texts[rng() % texts.size()];
    int edits = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < edits; ++k) {
      size_t pos = rng() % t.size();
      switch (rng() % 3) {
        case 0: t[pos] = alphabet[rng() % alphabet.size()]; break;
        case 1: t.erase(pos, 1 + rng() % 4); break;
        default: t.insert(pos, 1, alphabet[rng() % alphabet.size()]); break;
      }
      if (t.empty()) t = "x";
    }
    parse_must_not_crash(t);
  }
}

}  // namespace
}  // namespace weft
