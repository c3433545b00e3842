// What the encoder rejects (each error names the graph and node), the decoder's errors for
// missing or mis-typed graph constants and for constructs Weft does not read, and the decoder's
// robustness: truncated and mutated modules give a weft::Error, never a crash.
#include <cstdlib>
#include <random>

#include "codec_test_util.h"
#include "spirv/binary.h"
#include "spirv/codec.h"
#include "spirv/grammar.h"

namespace weft {
namespace {

using namespace codec_test;
using spirv::Binary;
using spirv::EncodeOptions;

// Runs `f`, which must throw a weft::Error with `code` whose what() contains every needle.
template <class F>
void expect_error(F&& f, ErrorCode code, std::initializer_list<std::string> needles) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const std::string& n : needles)
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << n << " not in: " << e.what();
  }
}

void expect_encode_error(const Module& m, std::initializer_list<std::string> needles) {
  std::vector<Error> errors = verify_module(m);
  ASSERT_TRUE(errors.empty()) << "test module does not verify:\n" << errors_str(errors);
  expect_error([&] { spirv::encode(m); }, ErrorCode::kUnsupported, needles);
}

Graph abs_graph(const std::string& name, TensorType t) {
  GraphBuilder b(name);
  b.output(b.op(Op::ABS, {b.input("x", t)}, {}, "y"));
  return b.finish();
}

TEST(SpirvEncodeErrors, OperatorsWithoutAnInstruction) {
  const TensorType f2{DType::kFp32, {2}};
  {
    GraphBuilder b("g");
    ValueId x = b.input("x", f2);
    b.output(b.op_multi(Op::CUSTOM, {x},
                        {{"operator_name", std::string("my_op")},
                         {"domain_name", std::string("acme")},
                         {"implementation_attrs", std::string("")}},
                        {"c"}, {f2})[0]);
    Module m(b.finish());
    m.set_entry("g");
    expect_encode_error(m, {"CUSTOM has no TOSA.001000.1 instruction", "graph 'g'", "node '%c'"});
  }
  {
    Module m;
    m.add_graph(abs_graph("then", f2));
    m.add_graph(abs_graph("else", f2));
    GraphBuilder b("main");
    b.set_module(&m);
    ValueId cond = b.input("cond", TensorType{DType::kBool, {1}});
    ValueId x = b.input("x", f2);
    b.output(
        b.op(Op::COND_IF, {cond, x}, {{"then_graph", std::string("then")}, {"else_graph", std::string("else")}}, "r"));
    m.add_graph(b.finish());
    expect_encode_error(m, {"COND_IF has no TOSA.001000.1 instruction", "graph 'main'", "node '%r'"});
  }
  {
    Module m;
    const TensorType i1{DType::kInt32, {1}};
    GraphBuilder c("cond");
    ValueId cx = c.input("x", i1);
    ValueId limit = c.constant("limit", Tensor::from_ints(i1, std::vector<int64_t>{10}));
    c.output(c.op(Op::GREATER, {limit, cx}, {}, "more"));
    m.add_graph(c.finish());
    GraphBuilder body("body");
    ValueId bx = body.input("x", i1);
    ValueId one = body.constant("one", Tensor::from_ints(i1, std::vector<int64_t>{1}));
    body.output(body.op(Op::ADD, {bx, one}, {}, "next"));
    m.add_graph(body.finish());
    GraphBuilder b("main");
    b.set_module(&m);
    ValueId x = b.input("x", i1);
    b.output(
        b.op(Op::WHILE_LOOP, {x}, {{"cond_graph", std::string("cond")}, {"body_graph", std::string("body")}}, "w"));
    m.add_graph(b.finish());
    expect_encode_error(m, {"WHILE_LOOP has no TOSA.001000.1 instruction", "node '%w'"});
  }
  {
    // VARIABLE, VARIABLE_WRITE and VARIABLE_READ: the declaration is the first node rejected.
    Graph g("main");
    Node var;
    var.op = Op::VARIABLE;
    var.name = "state";
    var.attrs = make_attrs(Op::VARIABLE, {{"name", std::string("v")},
                                          {"var_shape", std::vector<int64_t>{2}},
                                          {"type", static_cast<int64_t>(VarType::kFp32)},
                                          {"initial_value", Tensor()}});
    g.add_node(var);
    ValueId x = g.add_input("x", f2);
    Node write;
    write.op = Op::VARIABLE_WRITE;
    write.inputs = {x};
    write.attrs = make_attrs(Op::VARIABLE_WRITE, {{"name", std::string("v")}});
    g.add_node(write);
    Node read;
    read.op = Op::VARIABLE_READ;
    read.attrs = make_attrs(Op::VARIABLE_READ, {{"name", std::string("v")}});
    read.outputs = {g.add_value("r", f2)};
    g.add_node(read);
    g.add_output(g.nodes().back().outputs[0]);
    expect_encode_error(Module(std::move(g)), {"VARIABLE has no TOSA.001000.1 instruction", "graph 'main'", "'state'"});
  }
}

TEST(SpirvEncodeErrors, Int4Tensors) {
  GraphBuilder b;
  b.constant("w4", Tensor::from_ints(TensorType{DType::kInt4, {2}}, std::vector<int64_t>{-8, 7}));
  b.output(b.op(Op::ABS, {b.input("x", TensorType{DType::kFp32, {2}})}, {}, "y"));
  expect_encode_error(Module(b.finish()), {"i4", "graph 'main'", "node '%w4'"});
  GraphBuilder in;
  ValueId x = in.input("x4", TensorType{DType::kInt4, {2}});
  in.output(in.op(Op::IDENTITY, {x}, {}, "y"));
  expect_encode_error(Module(in.finish()), {"graph input '%x4' is an i4 tensor"});
}

TEST(SpirvEncodeErrors, ShapeValuesOutsideInt32) {
  GraphBuilder b;
  ValueId x = b.input("x", TensorType{DType::kFp32, {2}});
  b.constant_shape("huge", {int64_t{1} << 40, 1});  // unused, still checked
  b.output(b.op(Op::ABS, {x}, {}, "y"));
  expect_encode_error(Module(b.finish()),
                      {"CONST_SHAPE attribute 'values' holds 1099511627776, outside the int32 range", "node '%huge'"});
}

TEST(SpirvEncodeErrors, ModulesThatDoNotVerify) {
  Graph g("main");
  ValueId x = g.add_input("x", TensorType{DType::kFp32, {2}});
  Node n;
  n.op = Op::ABS;
  n.inputs = {x};
  n.outputs = {g.add_value("y", TensorType{DType::kFp32, {3}})};  // wrong shape
  g.add_node(std::move(n));
  g.add_output(g.nodes().back().outputs[0]);
  expect_error([&] { spirv::encode(Module(std::move(g))); }, ErrorCode::kVerify, {"ABS"});
}

// ---- Decoder errors ----

Module conv_module() { return op_module(Op::CONV2D, op_def(Op::CONV2D).types.back()); }

TEST(SpirvDecodeErrors, MissingGraphConstant) {
  Binary b = spirv::encode(conv_module(), EncodeOptions{.inline_constant_max_elements = 0});
  ASSERT_EQ(b.constants.size(), 2u);
  expect_error([&] { spirv::decode(b.words, {}, "model.spv"); }, ErrorCode::kNotFound,
               {"model.spv", "GraphConstantID 0", "input_zp", "word "});
  std::vector<spirv::GraphConstant> one = {b.constants[0]};
  expect_error([&] { spirv::decode(b.words, one, "model.spv"); }, ErrorCode::kNotFound,
               {"GraphConstantID 1", "weight_zp"});
}

TEST(SpirvDecodeErrors, MistypedGraphConstant) {
  Binary b = spirv::encode(conv_module(), EncodeOptions{.inline_constant_max_elements = 0});
  std::vector<spirv::GraphConstant> wrong = b.constants;
  wrong[1].tensor = Tensor::zeros(TensorType{DType::kFp16, {1}});
  expect_error([&] { spirv::decode(b.words, wrong, "m.spv"); }, ErrorCode::kVerify,
               {"m.spv", "GraphConstantID 1", "f16[1]", "declared f32[1]"});
  wrong[1].tensor = Tensor::zeros(TensorType{DType::kFp32, {2}});
  expect_error([&] { spirv::decode(b.words, wrong, "m.spv"); }, ErrorCode::kVerify, {"f32[2]"});
}

// Re-emits a module instruction by instruction; `edit` may rewrite an instruction's words.
template <class F>
std::vector<uint32_t> rewrite(const std::vector<uint32_t>& words, F&& edit) {
  spirv::Stream s = spirv::split_instructions(words);
  std::vector<uint32_t> out(words.begin(), words.begin() + 5);
  for (const spirv::Instruction& i : s.instructions) {
    std::vector<uint32_t> w(i.words.begin(), i.words.end());
    edit(w);
    if (w.empty()) continue;
    w[0] = static_cast<uint32_t>(w.size()) << 16 | (w[0] & 0xffff);
    out.insert(out.end(), w.begin(), w.end());
  }
  return out;
}

TEST(SpirvDecodeErrors, UnshapedTensorsAndRuntimeArrays) {
  Module m(abs_graph("main", TensorType{DType::kFp32, {2}}));
  Binary b = spirv::encode(m);
  std::vector<uint32_t> unshaped = rewrite(b.words, [](std::vector<uint32_t>& w) {
    if ((w[0] & 0xffff) == spirv::kOpTypeTensorARM && w.size() == 5) w.pop_back();
  });
  expect_error([&] { spirv::decode(unshaped, {}, "u.spv"); }, ErrorCode::kUnsupported, {"u.spv", "without a shape"});
  std::vector<uint32_t> runtime = rewrite(b.words, [](std::vector<uint32_t>& w) {
    if ((w[0] & 0xffff) == spirv::kOpTypeArray) w = {spirv::kOpTypeRuntimeArray, w[1], w[2]};
  });
  // The shape array type becomes a runtime array: the tensor type's shape no longer fits.
  expect_error([&] { spirv::decode(runtime, {}, "r.spv"); }, ErrorCode::kVerify, {"r.spv"});
}

TEST(SpirvDecodeErrors, VerificationErrorsNameTheInstruction) {
  // CLAMP with min_val and max_val swapped.
  GraphBuilder gb;
  ValueId x = gb.input("x", TensorType{DType::kFp32, {2}});
  gb.output(gb.op(
      Op::CLAMP, {x},
      {{"min_val", filled(TensorType{DType::kFp32, {}}, -1)}, {"max_val", filled(TensorType{DType::kFp32, {}}, 1)}},
      "y"));
  Binary b = spirv::encode(Module(gb.finish()));
  std::vector<uint32_t> swapped = rewrite(b.words, [](std::vector<uint32_t>& w) {
    if ((w[0] & 0xffff) == spirv::kOpExtInst) std::swap(w[5], w[6]);
  });
  expect_error([&] { spirv::decode(swapped, {}, "c.spv"); }, ErrorCode::kVerify,
               {"c.spv", "word ", "CLAMP", "max_val", "graph 'main'"});
}

TEST(SpirvDecodeErrors, DecoderChecksWithoutTheValidator) {
  Module m(abs_graph("main", TensorType{DType::kFp32, {2}}));
  Binary b = spirv::encode(m);
  uint32_t graph_id = 0;
  for (const spirv::Instruction& i : spirv::split_instructions(b.words).instructions)
    if (i.opcode() == spirv::kOpGraphARM) graph_id = i.word(2);
  auto with_operand = [&](uint32_t id) {
    return rewrite(b.words, [&](std::vector<uint32_t>& w) {
      if ((w[0] & 0xffff) == spirv::kOpExtInst) w[5] = id;
    });
  };
  expect_error([&] { spirv::decode_unvalidated(with_operand(graph_id), {}, "d.spv"); }, ErrorCode::kVerify,
               {"d.spv", "word 128", "is not a value of this graph"});
  expect_error([&] { spirv::decode_unvalidated(with_operand(0x7fffffff), {}, "d.spv"); }, ErrorCode::kVerify,
               {"word 128", "outside the id bound"});
  std::vector<uint32_t> unknown = rewrite(b.words, [&](std::vector<uint32_t>& w) {
    if ((w[0] & 0xffff) == spirv::kOpExtInst) w[4] = 66;
  });
  expect_error([&] { spirv::decode_unvalidated(unknown, {}, "d.spv"); }, ErrorCode::kVerify,
               {"unknown TOSA.001000.1 instruction 66"});
  std::vector<uint32_t> no_end = rewrite(b.words, [&](std::vector<uint32_t>& w) {
    if ((w[0] & 0xffff) == spirv::kOpGraphEndARM) w.clear();
  });
  expect_error([&] { spirv::decode_unvalidated(no_end, {}, "d.spv"); }, ErrorCode::kVerify, {"no OpGraphEndARM"});
}

TEST(SpirvDecodeErrors, OperandsThatAreNotValues) {
  Module m(abs_graph("main", TensorType{DType::kFp32, {2}}));
  Binary b = spirv::encode(m);
  // The ABS input replaced by the graph's own id, then by an id beyond the bound.
  uint32_t graph_id = 0;
  for (const spirv::Instruction& i : spirv::split_instructions(b.words).instructions)
    if (i.opcode() == spirv::kOpGraphARM) graph_id = i.word(2);
  std::vector<uint32_t> bad = rewrite(b.words, [&](std::vector<uint32_t>& w) {
    if ((w[0] & 0xffff) == spirv::kOpExtInst) w[5] = graph_id;
  });
  // The validator or the decoder rejects it, naming the instruction's offset.
  expect_error([&] { spirv::decode(bad, {}); }, ErrorCode::kVerify, {"128"});
  bad = rewrite(b.words, [&](std::vector<uint32_t>& w) {
    if ((w[0] & 0xffff) == spirv::kOpExtInst) w[5] = 0x7fffffff;
  });
  expect_error([&] { spirv::decode(bad, {}); }, ErrorCode::kVerify, {"128", "2147483647"});
}

// ---- Robustness ----

// decode() of arbitrary words, with and without the validator in front: a weft::Error naming the
// source, or a module that encodes again; nothing else.
void decode_must_not_crash(const std::vector<uint32_t>& words, const std::vector<spirv::GraphConstant>& constants) {
  for (bool validated : {true, false}) {
    try {
      Module m =
          validated ? spirv::decode(words, constants, "<fuzz>") : spirv::decode_unvalidated(words, constants, "<fuzz>");
      try {
        (void)spirv::encode(m);
      } catch (const Error& e) {
        ADD_FAILURE() << "a decoded module does not encode: " << e.what();
      }
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("<fuzz>"), std::string::npos) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not a weft::Error: " << e.what();
    }
  }
}

std::vector<Binary> corpus() {
  std::vector<Binary> r;
  for (Op op : {Op::CONV2D, Op::FFT2D, Op::RESIZE, Op::CONCAT, Op::CLAMP, Op::PAD, Op::RESCALE}) {
    const OpDef& d = op_def(op);
    r.push_back(spirv::encode(op_module(op, d.types[d.types.size() / 2])));
    r.push_back(spirv::encode(op_module(op, d.types[0]), EncodeOptions{.inline_constant_max_elements = 0}));
  }
  Module arrays(abs_graph("main", TensorType{DType::kFp32, {2}}));
  arrays.main().rename_value(arrays.main().inputs()[0], "x[0]");
  arrays.add_graph(abs_graph("other", TensorType{DType::kBf16, {1, 2, 3}}));
  r.push_back(spirv::encode(arrays));
  return r;
}

TEST(SpirvDecodeFuzz, TruncatedAtEveryWord) {
  for (const Binary& b : corpus()) {
    for (size_t n = 0; n < b.words.size(); ++n) {
      std::vector<uint32_t> cut(b.words.begin(), b.words.begin() + static_cast<ptrdiff_t>(n));
      decode_must_not_crash(cut, b.constants);
    }
  }
}

TEST(SpirvDecodeFuzz, MutatedWords) {
  const std::vector<Binary> inputs = corpus();
  std::mt19937 rng(11);
  const uint32_t interesting[] = {0, 1, 2, 3, 4, 5, 0xffff, 0x10000, 0x7fffffff, 0xffffffff, 0x80000000, 4163, 4184};
  // WEFT_SPIRV_FUZZ_ITERATIONS runs a longer campaign (e.g. under the sanitizers).
  const char* env = std::getenv("WEFT_SPIRV_FUZZ_ITERATIONS");
  const int iterations = env ? std::atoi(env) : 20000;
  for (int iteration = 0; iteration < iterations; ++iteration) {
    const Binary& b = inputs[rng() % inputs.size()];
    std::vector<uint32_t> w = b.words;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < edits; ++k) {
      const size_t pos = 5 + rng() % (w.size() - 5);
      switch (rng() % 4) {
        case 0:
          w[pos] = interesting[rng() % std::size(interesting)];
          break;
        case 1:
          w[pos] ^= 1u << (rng() % 32);
          break;
        case 2:
          w[pos] = (w[pos] & 0xffff0000u) | (rng() % 4200);
          break;  // another opcode
        default:
          w[pos] = w[5 + rng() % (w.size() - 5)];
          break;
      }
    }
    decode_must_not_crash(w, b.constants);
  }
}

}  // namespace
}  // namespace weft
