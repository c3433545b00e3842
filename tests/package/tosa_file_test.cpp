// TOSA 1.0 model files (.tosa): IR -> .tosa -> IR round trips for every operator and type row,
// every element type, control flow, variables and data outside the FlatBuffer; clear errors for
// malformed files; and, where ../shared has them, the TOSA reference model running what Weft
// writes (same results as Weft's interpreter) and Weft reading the conformance suite's files.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>

#include "common/module_compare.h"
#include "common/temp_dir.h"
#include "package/tosa_generated.h"
#include "spirv/codec/codec_test_util.h"
#include "weft/interpreter.h"
#include "weft/npy.h"
#include "weft/tosa_file.h"
#include "weft/verify.h"

namespace weft {
namespace {

namespace fs = std::filesystem;
namespace fb = weft::tosafb;

const fs::path kShared = fs::path(WEFT_SOURCE_DIR) / "../shared";
const fs::path kReferenceModel = kShared / "tools/tosa/tosa_reference_model";
const fs::path kConformance = kShared / "tosa-conformance/operators";

Buffer buffer_of(const std::vector<uint8_t>& bytes) {
  Buffer b = Buffer::allocate(bytes.size());
  if (!bytes.empty()) std::memcpy(b.mutable_data(), bytes.data(), bytes.size());
  return b;
}

Module read_bytes(const std::vector<uint8_t>& bytes, const tosa_file::ReadOptions& options = {}) {
  return tosa_file::from_bytes(buffer_of(bytes), "<memory>.tosa", options);
}

// IR -> .tosa -> IR gives the module back (node labels included), and writing it again gives the
// same bytes.
void round_trip(const Module& m, const tosa_file::WriteOptions& options = {}) {
  std::vector<uint8_t> first;
  try {
    first = tosa_file::to_bytes(m, options);
  } catch (const Error& e) {
    ADD_FAILURE() << "write: " << e.what();
    return;
  }
  Module back;
  try {
    back = read_bytes(first);
  } catch (const Error& e) {
    ADD_FAILURE() << "read: " << e.what();
    return;
  }
  EXPECT_EQ(back.profiles(), kAllProfiles);  // the file does not say which profiles it needs
  back.set_profiles(m.profiles());
  test::expect_same_module(m, back, {.all_labels = true, .data_files = false});
  EXPECT_EQ(tosa_file::to_bytes(back, options), first);
}

TEST(TosaFile, EveryOperatorAndTypeCombination) {
  size_t combinations = 0;
  for (const OpDef& d : all_op_defs()) {
    if (d.spirv_opcode < 0) continue;  // CONST, control flow, variables: below
    for (const TypeSupport& row : d.types) {
      SCOPED_TRACE(std::string(d.name) + " " + row.mode);
      Module m = codec_test::op_module(d.op, row);
      m.main().mutable_node(static_cast<int>(m.main().nodes().size()) - 1).name = std::string("loc of ") + d.name;
      std::vector<Error> errors = verify_module(m);
      ASSERT_TRUE(errors.empty()) << codec_test::errors_str(errors);
      round_trip(m);
      ++combinations;
    }
  }
  EXPECT_GT(combinations, 280u);
}

// A constant of each kind: the one of codec_test::const_module, and a shape value.
Module const_module(DType t, const Shape& shape, const std::vector<uint64_t>& bits) {
  Module m = codec_test::const_module(t, shape, bits);
  GraphBuilder b;
  std::swap(b.graph(), m.main());
  b.output(b.constant_shape("s", {3, 0, -1, int64_t{1} << 40}));
  return Module(b.finish());
}

TEST(TosaFile, EveryElementTypeAndOddCounts) {
  const std::vector<std::pair<DType, std::vector<uint64_t>>> cases = {
      {DType::kBool, {0, 1, 1, 0, 1}},
      {DType::kInt4, {0xf8, 0x07, 0, 0xff, 1}},  // -8, 7, 0, -1, 1: packed two per byte
      {DType::kInt8, {0x80, 0x7f, 0, 0xff, 5}},
      {DType::kInt16, {0x8000, 0x7fff, 0, 0xffff, 1}},
      {DType::kInt32, {0x80000000, 0x7fffffff, 0, 0xffffffff, 1}},
      {DType::kInt48, {0xffff800000000000, 0x00007fffffffffff, 0, 0xffffffffffffffff, 0x0000123456789abc}},
      {DType::kFp8E4M3, {0x7f, 0xff, 0x80, 0, 0x01}},
      {DType::kFp8E5M2, {0x7c, 0xfc, 0x7f, 0x80, 0x01}},
      {DType::kFp16, {0x7c00, 0xfc00, 0x7e01, 0x8000, 0x0001}},
      {DType::kBf16, {0x7f80, 0xff80, 0x7fc1, 0x8000, 0x0001}},
      {DType::kFp32, {0x7f800000, 0xff800000, 0x7fc00001, 0x80000000, 0x00000001}},
  };
  for (const auto& [t, bits] : cases) {
    SCOPED_TRACE(dtype_name(t));
    round_trip(const_module(t, {5}, bits));
    round_trip(const_module(t, {}, {bits[1]}));  // rank 0
    // Data after the FlatBuffer (tensor offset/size), as files over 2 GB need.
    round_trip(const_module(t, {5}, bits), {.inline_data_limit = 0});
  }
  // int4 as the file holds it: -8 and 7 in one byte, low nibble first.
  const std::vector<uint8_t> bytes = tosa_file::to_bytes(const_module(DType::kInt4, {2}, {0xf8, 0x07}));
  const fb::TosaGraph* g = fb::GetTosaGraph(bytes.data());
  const fb::TosaTensor* c = g->regions()->Get(0)->blocks()->Get(0)->tensors()->Get(0);
  ASSERT_NE(c->data(), nullptr);
  EXPECT_EQ(c->data()->Get(0), 0x78);
}

TEST(TosaFile, ControlFlowVariablesAndSeveralGraphs) {
  const TensorType s{DType::kInt32, {1}};
  auto add_one = [&](const std::string& name) {
    GraphBuilder b(name);
    ValueId x = b.input("x", s);
    b.output(b.op(Op::ADD, {x, b.constant("one", Tensor::from_ints(s, std::vector<int64_t>{1}))}, {}, "y"));
    return b.finish();
  };
  GraphBuilder cond("cond");
  ValueId ci = cond.input("i", s);
  cond.output(cond.op(Op::GREATER, {cond.constant("ten", Tensor::from_ints(s, std::vector<int64_t>{10})), ci}, {}, "c"));
  Module m;
  {
    Module subs;
    subs.add_graph(add_one("then"));
    subs.add_graph(add_one("body"));
    subs.add_graph(cond.finish());
    GraphBuilder mb("main");
    mb.set_module(&subs);
    ValueId flag = mb.input("flag", TensorType{DType::kBool, {1}});
    ValueId x = mb.input("x", s);
    ValueId a = mb.op_multi(Op::COND_IF, {flag, x}, {{"then_graph", std::string("then")}, {"else_graph", std::string("then")}},
                            {"a"}, {s})[0];
    ValueId w = mb.op_multi(Op::WHILE_LOOP, {a}, {{"cond_graph", std::string("cond")}, {"body_graph", std::string("body")}},
                            {"w"}, {s})[0];
    const TensorType f{DType::kFp32, {2}};
    mb.graph().add_node(Node{Op::VARIABLE, "state", {}, make_attrs(Op::VARIABLE, {{"name", std::string("acc")},
                                                                                  {"var_shape", std::vector<int64_t>{2}},
                                                                                  {"type", int64_t{7}},
                                                                                  {"initial_value", Tensor::from_doubles(f, std::vector<double>{1.5, -2})}}),
                             {}, ""});
    std::vector<ValueId> r = mb.op_multi(Op::VARIABLE_READ, {}, {{"name", std::string("acc")}}, {"acc_now"}, {f});
    ValueId doubled = mb.op(Op::ADD, {r[0], r[0]}, {}, "doubled");
    mb.graph().add_node(Node{Op::VARIABLE_WRITE, "", {doubled}, make_attrs(Op::VARIABLE_WRITE, {{"name", std::string("acc")}}), {}, ""});
    mb.output(w);
    mb.output(doubled);
    m = Module(mb.finish());
    for (const Graph& g : subs.graphs()) m.add_graph(g);
  }
  ASSERT_TRUE(verify_module(m).empty()) << codec_test::errors_str(verify_module(m));
  round_trip(m);
  // Sub-graphs are regions named after their graphs; the entry graph comes first.
  const std::vector<uint8_t> bytes = tosa_file::to_bytes(m);
  const fb::TosaGraph* g = fb::GetTosaGraph(bytes.data());
  ASSERT_EQ(g->regions()->size(), 4u);
  EXPECT_EQ(g->regions()->Get(0)->name()->str(), "main");
  EXPECT_FALSE(g->version()->_draft());
  EXPECT_EQ(g->version()->_major(), 1);
  // The same results before and after.
  Module back = read_bytes(bytes);
  const std::vector<Tensor> in = {Tensor::from_ints(TensorType{DType::kBool, {1}}, std::vector<int64_t>{1}),
                                  Tensor::from_ints(s, std::vector<int64_t>{3})};
  Interpreter a(m), b(back);
  std::vector<Tensor> ra = a.run(in), rb = b.run(in);
  ASSERT_EQ(ra.size(), rb.size());
  for (size_t i = 0; i < ra.size(); ++i) EXPECT_TRUE(ra[i].identical(rb[i])) << i;
}

// ---- Malformed files ------------------------------------------------------------------------------

// A one-ADD file (y = x + k, k a CONST of `const_bytes` bytes) written with the generated builders.
std::vector<uint8_t> add_file(int major, int minor, const std::string& second_input, size_t const_bytes) {
  flatbuffers::FlatBufferBuilder b;
  const std::vector<int32_t> shape = {2};
  const std::vector<uint8_t> data(const_bytes, 0);
  std::vector<flatbuffers::Offset<fb::TosaTensor>> tensors = {
      fb::CreateTosaTensorDirect(b, "x", &shape, fb::DType_FP32),
      fb::CreateTosaTensorDirect(b, "k", &shape, fb::DType_FP32, &data),
      fb::CreateTosaTensorDirect(b, "y", &shape, fb::DType_FP32)};
  std::vector<flatbuffers::Offset<fb::TosaOperator>> ops;
  {
    std::vector<flatbuffers::Offset<flatbuffers::String>> none;
    std::vector<flatbuffers::Offset<flatbuffers::String>> out = {b.CreateString("k")};
    ops.push_back(fb::CreateTosaOperator(b, fb::Op_CONST, fb::Attribute_ConstAttribute,
                                         fb::CreateConstAttribute(b).Union(), b.CreateVector(none), b.CreateVector(out)));
  }
  {
    std::vector<flatbuffers::Offset<flatbuffers::String>> in = {b.CreateString("x"), b.CreateString(second_input)};
    std::vector<flatbuffers::Offset<flatbuffers::String>> out = {b.CreateString("y")};
    ops.push_back(fb::CreateTosaOperator(b, fb::Op_ADD, fb::Attribute_AddAttribute, fb::CreateAddAttribute(b).Union(),
                                         b.CreateVector(in), b.CreateVector(out),
                                         fb::CreateOpLocation(b, b.CreateString("the_add"))));
  }
  std::vector<flatbuffers::Offset<flatbuffers::String>> bin = {b.CreateString("x")}, bout = {b.CreateString("y")};
  auto block = fb::CreateTosaBasicBlock(b, b.CreateString("main"), b.CreateVector(ops), b.CreateVector(tensors),
                                        b.CreateVector(bin), b.CreateVector(bout));
  std::vector<flatbuffers::Offset<fb::TosaBasicBlock>> blocks = {block};
  std::vector<flatbuffers::Offset<fb::TosaRegion>> regions = {
      fb::CreateTosaRegion(b, b.CreateString("main"), b.CreateVector(blocks))};
  fb::FinishTosaGraphBuffer(b, fb::CreateTosaGraph(b, fb::CreateVersion(b, major, minor, 0, true), b.CreateVector(regions)));
  return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
}

std::string error_of(const std::vector<uint8_t>& bytes, ErrorCode code) {
  try {
    read_bytes(bytes);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

#define EXPECT_HAS(text, needle) EXPECT_NE((text).find(needle), std::string::npos) << "missing '" << (needle) << "' in: " << (text)

TEST(TosaFile, MalformedFilesAreClearErrors) {
  // The well-formed file reads, its operator's location as the node's name (a 1.0 draft file).
  Module ok = read_bytes(add_file(1, 0, "k", 8));
  EXPECT_EQ(ok.main().nodes().back().name, "the_add");

  EXPECT_HAS(error_of(add_file(0, 80, "k", 8), ErrorCode::kUnsupported), "TOSA version 0.80.0 is not supported");
  EXPECT_HAS(error_of(add_file(1, 0, "nothing", 8), ErrorCode::kVerify),
             "input 'nothing' is neither a block input nor the output of an earlier operator");
  EXPECT_HAS(error_of(add_file(1, 0, "k", 4), ErrorCode::kVerify), "tensor 'k' (f32[2]) has 4 bytes of data, needs 8");

  std::vector<uint8_t> good = add_file(1, 0, "k", 8);
  std::vector<uint8_t> wrong_id = good;
  wrong_id[4] = 'X';
  EXPECT_HAS(error_of(wrong_id, ErrorCode::kParse), "file identifier 'TOSA' is missing");
  // Every truncation is refused by the FlatBuffers verifier, never read past.
  for (size_t n = 8; n < good.size(); n += 7) {
    std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
    try {
      read_bytes(cut);
      ADD_FAILURE() << "a file cut to " << n << " bytes was read";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kParse) << e.what();
    }
  }
  test::TempDir dir("weft_tosa");
  try {
    tosa_file::read(dir.path());
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_HAS(std::string(e.what()), "not a regular file");
  }
}

// Variables as the MLIR serializer writes them: no VARIABLE operator, only a tensor marked
// `variable` (its data the initial value), read and written by IDENTITY operators that carry the
// variable attributes.
TEST(TosaFile, VariablesAsTheMlirSerializerWritesThem) {
  flatbuffers::FlatBufferBuilder b;
  const std::vector<int32_t> shape = {2};
  std::vector<uint8_t> init(8);
  const float values[2] = {1.5f, -2.0f};
  std::memcpy(init.data(), values, 8);
  std::vector<flatbuffers::Offset<fb::TosaTensor>> tensors = {
      fb::CreateTosaTensorDirect(b, "Variable_0", &shape, fb::DType_FP32, &init, true, false, "lstm/state"),
      fb::CreateTosaTensorDirect(b, "x", &shape, fb::DType_FP32),
      fb::CreateTosaTensorDirect(b, "now", &shape, fb::DType_FP32),
      fb::CreateTosaTensorDirect(b, "y", &shape, fb::DType_FP32)};
  auto names = [&](std::initializer_list<const char*> list) {
    std::vector<flatbuffers::Offset<flatbuffers::String>> v;
    for (const char* n : list) v.push_back(b.CreateString(n));
    return b.CreateVector(v);
  };
  std::vector<flatbuffers::Offset<fb::TosaOperator>> ops = {
      fb::CreateTosaOperator(b, fb::Op_IDENTITY, fb::Attribute_VariableReadAttribute,
                             fb::CreateVariableReadAttribute(b).Union(), names({"Variable_0"}), names({"now"})),
      fb::CreateTosaOperator(b, fb::Op_ADD, fb::Attribute_AddAttribute, fb::CreateAddAttribute(b).Union(),
                             names({"now", "x"}), names({"y"})),
      fb::CreateTosaOperator(b, fb::Op_IDENTITY, fb::Attribute_VariableWriteAttribute,
                             fb::CreateVariableWriteAttribute(b).Union(), names({"y"}), names({"Variable_0"}))};
  auto block = fb::CreateTosaBasicBlock(b, b.CreateString("main"), b.CreateVector(ops), b.CreateVector(tensors),
                                        names({"x"}), names({"y"}));
  std::vector<flatbuffers::Offset<fb::TosaBasicBlock>> blocks = {block};
  std::vector<flatbuffers::Offset<fb::TosaRegion>> regions = {
      fb::CreateTosaRegion(b, b.CreateString("main"), b.CreateVector(blocks))};
  fb::FinishTosaGraphBuffer(b, fb::CreateTosaGraph(b, fb::CreateVersion(b, 1, 0, 0, false), b.CreateVector(regions)));
  Module m = read_bytes(std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize()));
  const Graph& g = m.main();
  ASSERT_EQ(g.nodes().size(), 4u);
  EXPECT_EQ(g.node(0).op, Op::VARIABLE);
  EXPECT_EQ(g.node(0).attr_str("name"), "lstm/state");
  EXPECT_EQ(g.node(1).op, Op::VARIABLE_READ);
  EXPECT_EQ(g.node(3).op, Op::VARIABLE_WRITE);
  // The state carries over between runs: y = state + x, then state = y.
  Interpreter interp(m);
  const Tensor x = Tensor::from_doubles(TensorType{DType::kFp32, {2}}, std::vector<double>{1, 1});
  interp.run({x});
  const std::vector<Tensor> second = interp.run({x});
  EXPECT_TRUE(second[0].identical(Tensor::from_doubles(TensorType{DType::kFp32, {2}}, std::vector<double>{3.5, 0})));
}

// ---- Against the TOSA reference model --------------------------------------------------------------

Tensor random_tensor(const TensorType& t, std::mt19937& rng) {
  Tensor out = Tensor::zeros(t);
  const size_t n = static_cast<size_t>(t.num_elements());
  for (size_t i = 0; i < n; ++i) {
    double v = 0;
    if (t.dtype == DType::kBool) v = rng() % 2;
    else if (is_float(t.dtype)) v = std::uniform_real_distribution<double>(-2.0, 2.0)(rng);
    else v = static_cast<double>(rng() % 3 + 1);  // small and nonzero: divisors, shifts and indices stay valid
    store_from_double(t.dtype, out.mutable_bytes() + i * storage_size(t.dtype), v);
  }
  return out;
}

bool close(const Tensor& a, const Tensor& b, std::string* why) {
  if (a.type() != b.type()) {
    *why = a.type().str() + " vs " + b.type().str();
    return false;
  }
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    const double x = load_as_double(a.dtype(), a.buffer().data() + i * storage_size(a.dtype()));
    const double y = load_as_double(b.dtype(), b.buffer().data() + i * storage_size(b.dtype()));
    if (std::isnan(x) && std::isnan(y)) continue;
    // fp32: 1e-5 relative; fp16: one unit in the last place (an accumulation rounded once more).
    const double rel = a.dtype() == DType::kFp16 ? std::ldexp(1.0, -10) : 1e-5;
    const double tol = is_float(a.dtype()) ? rel * std::max(1.0, std::fabs(x)) : 0;
    if (!(std::fabs(x - y) <= tol)) {
      *why = "element " + std::to_string(i) + ": " + std::to_string(x) + " vs " + std::to_string(y);
      return false;
    }
  }
  return true;
}

TEST(TosaFile, ReferenceModelRunsWhatWeftWrites) {
  if (!fs::exists(kReferenceModel)) GTEST_SKIP() << "no TOSA reference model at " << kReferenceModel << " (../shared)";
  std::mt19937 rng(7);
  size_t compared = 0, refused = 0;
  std::string refused_list;
  for (const OpDef& d : all_op_defs()) {
    if (d.spirv_opcode < 0) continue;
    for (const TypeSupport& row : d.types) {
      const bool simple = std::all_of(std::begin(row.types), std::end(row.types), [](DType t) {
        return t == DType::kFp32 || t == DType::kFp16 || t == DType::kInt8 || t == DType::kInt16 ||
               t == DType::kInt32 || t == DType::kBool;
      });
      if (!simple || !(row.any_of[0] & (kProInt | kProFp))) continue;
      SCOPED_TRACE(std::string(d.name) + " " + row.mode);
      Module m = codec_test::op_module(d.op, row);
      test::TempDir dir("weft_tosa_ref");
      tosa_file::save(m, dir.file("test.tosa"));
      std::vector<Tensor> inputs;
      std::string ifm_name, ifm_file, ofm_name, ofm_file;
      for (ValueId v : m.main().inputs()) {
        const Value& val = m.main().value(v);
        inputs.push_back(random_tensor(val.type, rng));
        write_npy(dir.file(val.name + ".npy"), inputs.back());
        ifm_name += (ifm_name.empty() ? "\"" : ", \"") + val.name + "\"";
        ifm_file += (ifm_file.empty() ? "\"" : ", \"") + val.name + ".npy\"";
      }
      for (ValueId v : m.main().outputs()) {
        const Value& val = m.main().value(v);
        ofm_name += (ofm_name.empty() ? "\"" : ", \"") + val.name + "\"";
        ofm_file += (ofm_file.empty() ? "\"" : ", \"") + val.name + "_ref.npy\"";
      }
      dir.write("desc.json", "{\"tosa_file\": \"test.tosa\", \"ifm_name\": [" + ifm_name + "], \"ifm_file\": [" +
                                 ifm_file + "], \"ofm_name\": [" + ofm_name + "], \"ofm_file\": [" + ofm_file +
                                 "], \"expected_failure\": false}");
      std::vector<Tensor> ours;
      std::string our_error;
      try {
        Interpreter interp(m);
        ours = interp.run(inputs);
      } catch (const Error& e) {
        our_error = e.what();
      }
      const std::string cmd = "'" + kReferenceModel.string() + "' --test_desc='" + dir.file("desc.json") +
                              "' > '" + dir.file("log.txt") + "' 2>&1";
      const int rc = std::system(cmd.c_str());
      if (rc != 0 || !our_error.empty()) {
        // Both refuse (a REQUIRE these random inputs break), or neither.
        EXPECT_TRUE(rc != 0 && !our_error.empty()) << "reference model rc " << rc << ", Weft: " << our_error;
        ++refused;
        refused_list += std::string(" ") + d.name;
        continue;
      }
      for (size_t k = 0; k < ours.size(); ++k) {
        const Value& val = m.main().value(m.main().outputs()[k]);
        Tensor ref = read_npy(dir.file(val.name + "_ref.npy"));
        std::string why;
        EXPECT_TRUE(close(ours[k], ref, &why)) << val.name << ": " << why;
      }
      ++compared;
    }
  }
  RecordProperty("compared", std::to_string(compared));
  RecordProperty("refused_by_both", refused_list);
  std::cout << "reference model: " << compared << " operator/type rows compared, " << refused
            << " refused by both:" << refused_list << "\n";
  EXPECT_GT(compared, 100u) << "refused by both:" << refused_list;
}

// A file written by Arm's serialization library (tests/package/data/README.md): read, verified, run,
// and written back to a file the reference model runs with the same results.
TEST(TosaFile, ReadsAFileArmsToolsWrote) {
  const std::string path = std::string(WEFT_SOURCE_DIR) + "/tests/package/data/simple_maxpool2d.tosa";
  Module m = tosa_file::read(path);
  const Graph& g = m.main();
  ASSERT_EQ(g.nodes().size(), 1u);
  EXPECT_EQ(g.node(0).op, Op::MAX_POOL2D);
  EXPECT_EQ(g.node(0).name, "loc(unknown)");
  EXPECT_EQ(g.node(0).attr_ints("kernel"), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(g.value(g.inputs()[0]).type, (TensorType{DType::kInt8, {1, 16, 16, 16}}));
  EXPECT_EQ(g.value(g.outputs()[0]).type, (TensorType{DType::kInt8, {1, 8, 8, 16}}));
  round_trip(m);
  std::mt19937 rng(3);
  Tensor x = Tensor::zeros(g.value(g.inputs()[0]).type);
  for (int64_t i = 0; i < x.num_elements(); ++i) x.mutable_bytes()[i] = static_cast<uint8_t>(rng());
  Interpreter interp(m);
  const Tensor ours = interp.run({x})[0];
  // 2x2 maximum of int8 values, by hand.
  for (int64_t oy = 0; oy < 8; ++oy)
    for (int64_t ox = 0; ox < 8; ++ox)
      for (int64_t c = 0; c < 16; ++c) {
        int8_t best = -128;
        for (int64_t dy = 0; dy < 2; ++dy)
          for (int64_t dx = 0; dx < 2; ++dx)
            best = std::max(best, static_cast<int8_t>(x.buffer().data()[((2 * oy + dy) * 16 + 2 * ox + dx) * 16 + c]));
        ASSERT_EQ(static_cast<int8_t>(ours.buffer().data()[(oy * 8 + ox) * 16 + c]), best);
      }
  if (!fs::exists(kReferenceModel)) return;
  test::TempDir dir("weft_tosa_arm");
  fs::copy_file(path, dir.file("test.tosa"));
  write_npy(dir.file("x.npy"), x);
  const std::string in = g.value(g.inputs()[0]).name, out = g.value(g.outputs()[0]).name;
  dir.write("desc.json", "{\"tosa_file\": \"test.tosa\", \"ifm_name\": [\"" + in + "\"], \"ifm_file\": [\"x.npy\"], "
                         "\"ofm_name\": [\"" + out + "\"], \"ofm_file\": [\"y.npy\"], \"expected_failure\": false}");
  ASSERT_EQ(std::system(("'" + kReferenceModel.string() + "' --test_desc='" + dir.file("desc.json") + "' > /dev/null 2>&1").c_str()), 0);
  EXPECT_TRUE(read_npy(dir.file("y.npy")).identical(ours));
}

// ---- The conformance suite's files ----------------------------------------------------------------

TEST(TosaFile, ReadsTheConformanceSuitesFiles) {
  if (!fs::exists(kConformance)) GTEST_SKIP() << "no TOSA conformance tests at " << kConformance << " (../shared)";
  size_t read = 0, with_shapes = 0;
  // One test of every operator folder; constants the tests feed as inputs stay graph inputs, and the
  // shape operands some folders store as .npy are given as data.
  for (const auto& group : fs::directory_iterator(kConformance)) {
    if (!group.is_directory()) continue;
    for (const auto& op : fs::directory_iterator(group.path())) {
      std::vector<fs::path> tests;
      for (const auto& t : fs::directory_iterator(op.path())) tests.push_back(t.path());
      std::sort(tests.begin(), tests.end());
      if (tests.empty()) continue;
      const fs::path dir = tests.front();
      SCOPED_TRACE(dir.string());
      tosa_file::ReadOptions options;
      options.constant_data = [&](const std::string& name, const TensorType&) -> std::optional<Tensor> {
        const fs::path npy = dir / (name + ".npy");
        if (!fs::exists(npy)) return std::nullopt;
        ++with_shapes;
        Tensor t = read_npy(npy.string());
        const TensorType shape{DType::kShape, {t.num_elements()}};
        Buffer b = Buffer::allocate(shape.byte_size());
        for (int64_t i = 0; i < t.num_elements(); ++i) {
          const int64_t v = static_cast<int64_t>(load_as_double(t.dtype(), t.buffer().data() + i * storage_size(t.dtype())));
          std::memcpy(b.mutable_data() + 8 * i, &v, 8);
        }
        return Tensor(shape, b);
      };
      try {
        Module m = tosa_file::read((dir / "test.tosa").string(), options);
        EXPECT_FALSE(m.main().nodes().empty() && m.main().inputs().empty());
        ++read;
      } catch (const Error& e) {
        ADD_FAILURE() << e.what();
      }
    }
  }
  EXPECT_GT(read, 90u);
  EXPECT_GT(with_shapes, 0u);
}

}  // namespace
}  // namespace weft
