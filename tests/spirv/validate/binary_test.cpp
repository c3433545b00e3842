// The validator on raw words (no assembler): malformed streams give one clear binary.* error,
// hostile modules (cycles, huge shapes, huge counts, many instructions) give a diagnostic quickly
// and without large allocations, and random mutations never crash.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "spirv/binary.h"
#include "spirv/grammar.h"
#include "weft/spirv.h"

namespace weft::spirv {
namespace {

// Builds a module word by word.
class Builder {
 public:
  uint32_t id() { return next_id_++; }
  Builder& op(uint16_t opcode, std::vector<uint32_t> operands) {
    body_.push_back(static_cast<uint32_t>(operands.size() + 1) << 16 | opcode);
    body_.insert(body_.end(), operands.begin(), operands.end());
    return *this;
  }
  // An instruction with a string operand after `before` and ids after it.
  Builder& op_str(uint16_t opcode, std::vector<uint32_t> before, std::string_view s, std::vector<uint32_t> after = {}) {
    std::vector<uint32_t> operands = before;
    append_string(operands, s);
    operands.insert(operands.end(), after.begin(), after.end());
    return op(opcode, operands);
  }
  std::vector<uint32_t> words() const {
    std::vector<uint32_t> w = {kMagic, kVersion16, 0, next_id_, 0};
    w.insert(w.end(), body_.begin(), body_.end());
    return w;
  }

 private:
  uint32_t next_id_ = 1;
  std::vector<uint32_t> body_;
};

// The preamble every module needs; returns the TOSA import id.
uint32_t preamble(Builder& b) {
  for (uint32_t cap : {kCapShader, kCapVulkanMemoryModel, kCapTensorsARM, kCapGraphARM}) b.op(kOpCapability, {cap});
  b.op_str(kOpExtension, {}, "SPV_ARM_graph");
  b.op_str(kOpExtension, {}, "SPV_ARM_tensors");
  uint32_t tosa = b.id();
  b.op_str(kOpExtInstImport, {tosa}, kTosaSetName);
  b.op(kOpMemoryModel, {kAddressingLogical, kMemoryModelVulkan});
  return tosa;
}

struct Shape {
  uint32_t float_t, uint_t, tensor;
};

// A tensor type f32[dims...] (dims as 32-bit constants).
Shape tensor_type(Builder& b, std::vector<uint32_t> dims) {
  Shape s{};
  s.float_t = b.id();
  b.op(kOpTypeFloat, {s.float_t, 32});
  s.uint_t = b.id();
  b.op(kOpTypeInt, {s.uint_t, 32, 0});
  uint32_t rank = b.id();
  b.op(kOpConstant, {s.uint_t, rank, static_cast<uint32_t>(dims.size())});
  uint32_t arr = b.id();
  b.op(kOpTypeArray, {arr, s.uint_t, rank});
  std::vector<uint32_t> dim_ids;
  for (uint32_t d : dims) {
    uint32_t c = b.id();
    b.op(kOpConstant, {s.uint_t, c, d});
    dim_ids.push_back(c);
  }
  uint32_t shape = b.id();
  std::vector<uint32_t> composite = {arr, shape};
  composite.insert(composite.end(), dim_ids.begin(), dim_ids.end());
  b.op(kOpConstantComposite, composite);
  s.tensor = b.id();
  b.op(kOpTypeTensorARM, {s.tensor, s.float_t, rank, shape});
  return s;
}

// One graph: sum = ADD(a, b) over `dims`.
std::vector<uint32_t> add_module(std::vector<uint32_t> dims = {2, 3}) {
  Builder b;
  uint32_t tosa = preamble(b);
  Shape s = tensor_type(b, dims);
  uint32_t ptr = b.id();
  b.op(kOpTypePointer, {ptr, kStorageUniformConstant, s.tensor});
  uint32_t va = b.id(), vb = b.id(), vs = b.id();
  for (uint32_t v : {va, vb, vs}) b.op(kOpVariable, {ptr, v, kStorageUniformConstant});
  uint32_t gt = b.id();
  b.op(kOpTypeGraphARM, {gt, 2, s.tensor, s.tensor, s.tensor});
  uint32_t c0 = b.id(), c1 = b.id();
  b.op(kOpConstant, {s.uint_t, c0, 0});
  b.op(kOpConstant, {s.uint_t, c1, 1});
  uint32_t g = b.id();
  b.op_str(kOpGraphEntryPointARM, {g}, "main", {va, vb, vs});
  b.op(kOpGraphARM, {gt, g});
  uint32_t a = b.id(), bb = b.id(), sum = b.id();
  b.op(kOpGraphInputARM, {s.tensor, a, c0});
  b.op(kOpGraphInputARM, {s.tensor, bb, c1});
  b.op(kOpExtInst, {s.tensor, sum, tosa, 14 /* ADD */, a, bb});
  b.op(kOpGraphSetOutputARM, {sum, c0});
  b.op(kOpGraphEndARM, {});
  return b.words();
}

std::string all_str(const std::vector<Diagnostic>& diags) {
  std::string s;
  for (const Diagnostic& d : diags) s += d.str() + "\n";
  return s;
}

bool has_rule(const std::vector<Diagnostic>& diags, const std::string& rule) {
  for (const Diagnostic& d : diags) {
    if (d.rule == rule) return true;
  }
  return false;
}

bool listed(const std::string& rule) {
  for (const RuleInfo& r : validation_rules()) {
    if (rule == r.id) return true;
  }
  return false;
}

// Offset of the first instruction with `opcode` (0 if none).
size_t find_op(const std::vector<uint32_t>& w, uint16_t opcode) {
  for (size_t i = 5; i < w.size() && (w[i] >> 16) != 0; i += w[i] >> 16) {
    if ((w[i] & 0xffff) == opcode) return i;
  }
  return 0;
}

TEST(ValidateBinary, RawModuleIsValid) {
  auto diags = validate(add_module());
  EXPECT_TRUE(diags.empty()) << all_str(diags);
}

TEST(ValidateBinary, TruncatedAtEveryLength) {
  std::vector<uint32_t> w = add_module();
  for (size_t n = 0; n < w.size(); ++n) {
    SCOPED_TRACE(n);
    std::vector<uint32_t> t(w.begin(), w.begin() + static_cast<ptrdiff_t>(n));
    auto diags = validate(t);
    ASSERT_FALSE(diags.empty());
    if (n < 5) {
      ASSERT_EQ(diags.size(), 1u);
      EXPECT_EQ(diags[0].rule, "binary.header");
    }
    for (const Diagnostic& d : diags) EXPECT_TRUE(listed(d.rule)) << d.str();
  }
}

TEST(ValidateBinary, ByteSwappedAndWrongMagic) {
  std::vector<uint32_t> w = add_module();
  for (uint32_t& x : w) x = (x >> 24) | ((x >> 8) & 0xff00u) | ((x << 8) & 0xff0000u) | (x << 24);
  auto diags = validate(w);
  ASSERT_EQ(diags.size(), 1u) << all_str(diags);
  EXPECT_EQ(diags[0].rule, "binary.header");
  EXPECT_NE(diags[0].message.find("byte-swapped"), std::string::npos) << diags[0].message;

  w = add_module();
  w[0] = 0xdeadbeef;
  diags = validate(w);
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_NE(diags[0].message.find("wrong magic"), std::string::npos) << diags[0].message;
}

TEST(ValidateBinary, WordCounts) {
  std::vector<uint32_t> w = add_module();
  size_t at = find_op(w, kOpMemoryModel);
  w[at] &= 0xffff;  // count 0
  auto diags = validate(w);
  ASSERT_EQ(diags.size(), 1u) << all_str(diags);
  EXPECT_EQ(diags[0].rule, "binary.word-count");
  EXPECT_EQ(diags[0].offset, at);

  w = add_module();
  w.back() = 0xffffu << 16 | kOpGraphEndARM;  // runs past the end
  diags = validate(w);
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_EQ(diags[0].rule, "binary.word-count");
  EXPECT_NE(diags[0].message.find("past the end"), std::string::npos);
}

TEST(ValidateBinary, IdBoundUnknownOpcodeAndString) {
  std::vector<uint32_t> w = add_module();
  w[3] = 5;  // bound below the ids in use
  auto diags = validate(w);
  ASSERT_EQ(diags.size(), 1u) << all_str(diags);
  EXPECT_EQ(diags[0].rule, "binary.id-bound");
  EXPECT_FALSE(diags[0].instruction.empty());

  w = add_module();
  size_t at = find_op(w, kOpExtInstImport);
  w[at + 1] = 0;  // id 0
  diags = validate(w);
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_EQ(diags[0].rule, "binary.id-bound");

  w = add_module();
  at = find_op(w, kOpMemoryModel);
  w[at] = (w[at] & 0xffff0000u) | 0x7777;  // unknown opcode
  diags = validate(w);
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_EQ(diags[0].rule, "binary.opcode");
  EXPECT_EQ(diags[0].offset, at);

  w = add_module();
  at = find_op(w, kOpExtension);        // "SPV_ARM_graph": 4 words, the last holds "ph\0\0"
  w[at + (w[at] >> 16) - 1] = 0x68706870;  // "phph": no terminator left
  diags = validate(w);
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_EQ(diags[0].rule, "binary.string");

  w = add_module();
  at = find_op(w, kOpMemoryModel);
  w[at] = (4u << 16) | kOpMemoryModel;  // one word more than the grammar allows
  w.insert(w.begin() + static_cast<ptrdiff_t>(at) + 3, 0);
  diags = validate(w);
  ASSERT_EQ(diags.size(), 1u) << all_str(diags);
  EXPECT_EQ(diags[0].rule, "binary.operands");
}

TEST(ValidateBinary, SelfReferencingAndCyclicTypes) {
  Builder b;
  preamble(b);
  uint32_t uint_t = b.id();
  b.op(kOpTypeInt, {uint_t, 32, 0});
  uint32_t arr = b.id(), len = b.id();
  b.op(kOpTypeArray, {arr, arr, len});  // element type is itself; length defined later
  b.op(kOpConstant, {uint_t, len, 2});
  uint32_t t1 = b.id(), t2 = b.id();
  b.op(kOpTypeTensorARM, {t1, t2});  // cycle through a forward reference
  b.op(kOpTypeTensorARM, {t2, t1});
  auto diags = validate(b.words());
  EXPECT_TRUE(has_rule(diags, "id.defined-before-use")) << all_str(diags);
  for (const Diagnostic& d : diags) EXPECT_TRUE(listed(d.rule)) << d.str();
}

TEST(ValidateBinary, HugeShapeIsAnErrorWithoutAllocation) {
  // TOSA level 8K limits are strict rules: upstream spirv-val takes such types.
  ValidateOptions strict{.strict = true};
  auto diags = validate(add_module({0x80000000u, 0x80000000u}), strict);  // 2^31 x 2^31
  EXPECT_TRUE(has_rule(diags, "type.tensor.size")) << all_str(diags);
  diags = validate(add_module({65536, 65536}), strict);  // 2^32 elements
  EXPECT_TRUE(has_rule(diags, "type.tensor.size")) << all_str(diags);
  diags = validate(add_module({0xffffffffu}), strict);  // one huge dimension
  EXPECT_TRUE(has_rule(diags, "type.tensor.size")) << all_str(diags);
  diags = validate(add_module({1, 2, 3, 4, 5, 6, 7}), strict);  // rank 7
  EXPECT_TRUE(has_rule(diags, "type.tensor.max-rank")) << all_str(diags);
  // Without --strict the type itself is fine; the TOSA operator still rejects rank 7.
  diags = validate(add_module({1, 2, 3, 4, 5, 6, 7}));
  EXPECT_FALSE(has_rule(diags, "type.tensor.max-rank")) << all_str(diags);
  EXPECT_TRUE(has_rule(diags, "tosa.rank")) << all_str(diags);
}

TEST(ValidateBinary, HugeDeclaredArrayLength) {
  Builder b;
  preamble(b);
  uint32_t uint_t = b.id(), len = b.id(), arr = b.id(), one = b.id(), comp = b.id();
  b.op(kOpTypeInt, {uint_t, 32, 0});
  b.op(kOpConstant, {uint_t, len, 0xffffffffu});
  b.op(kOpTypeArray, {arr, uint_t, len});
  b.op(kOpConstant, {uint_t, one, 1});
  b.op(kOpConstantComposite, {arr, comp, one, one});
  auto diags = validate(b.words());
  EXPECT_TRUE(has_rule(diags, "constant.composite")) << all_str(diags);
}

TEST(ValidateBinary, ManyInstructionsAreLinear) {
  Builder b;
  preamble(b);
  uint32_t uint_t = b.id();
  b.op(kOpTypeInt, {uint_t, 32, 0});
  // The cost is measured by bench/spirv_bench (BM_ValidateConstants), not timed here.
  for (uint32_t k = 0; k < 200000; ++k) b.op(kOpConstant, {uint_t, b.id(), k});
  auto diags = validate(b.words());
  EXPECT_TRUE(has_rule(diags, "graph.entry-point-required")) << all_str(diags);
}

// Many graph definitions of one graph type with very many outputs: the cost must follow the
// module's size, not (definitions x outputs).
TEST(ValidateBinary, ManyGraphsOfAWideTypeAreLinear) {
  Builder b;
  preamble(b);
  Shape s = tensor_type(b, {2});
  uint32_t c0 = b.id();
  b.op(kOpConstant, {s.uint_t, c0, 0});
  uint32_t gt = b.id();
  std::vector<uint32_t> type = {gt, 0};
  type.insert(type.end(), 60000, s.tensor);
  b.op(kOpTypeGraphARM, type);
  uint32_t value = b.id();
  b.op(kOpGraphConstantARM, {s.tensor, value, 0});
  for (int k = 0; k < 20000; ++k) {
    b.op(kOpGraphARM, {gt, b.id()});
    b.op(kOpGraphSetOutputARM, {value, c0});
    b.op(kOpGraphEndARM, {});
  }
  // The cost is measured by bench/spirv_bench (BM_ValidateWideGraphs), not timed here.
  auto diags = validate(b.words(), ValidateOptions{.strict = true});
  ASSERT_TRUE(has_rule(diags, "graph.all-outputs-set")) << all_str(diags);
  for (const Diagnostic& d : diags) {
    if (d.rule == "graph.all-outputs-set") {
      EXPECT_NE(d.message.find("59999 in all"), std::string::npos) << d.message;
      break;
    }
  }
}

TEST(ValidateBinary, HugeBoundIsTheUniversalLimitsError) {
  // A bound above 4,194,303 breaks the specification's universal limit (spirv-val: "The id bound is
  // larger than the max id bound"); it costs the validator nothing (nothing is sized by it).
  std::vector<uint32_t> w = add_module();
  w[3] = 0xffffffffu;
  auto diags = validate(w);
  ASSERT_EQ(diags.size(), 1u) << all_str(diags);
  EXPECT_EQ(diags[0].rule, "limits.id-bound");
  w[3] = 0x3FFFFF;
  EXPECT_TRUE(validate(w).empty());
}

TEST(ValidateBinary, RandomMutationsNeverCrash) {
  std::mt19937 rng(1234);
  const std::vector<uint32_t> base = add_module();
  const uint32_t interesting[] = {0, 1, 2, 3, 4, 5, 6, 0xffffffffu, 0x80000000u, 0x7fffffffu, 0x10000u, 0xffffu};
  for (int iter = 0; iter < 4000; ++iter) {
    std::vector<uint32_t> w = base;
    int mutations = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < mutations; ++k) {
      size_t at = rng() % w.size();
      switch (rng() % 5) {
        case 0: w[at] = rng(); break;
        case 1: w[at] ^= 1u << (rng() % 32); break;
        case 2: w[at] = interesting[rng() % std::size(interesting)]; break;
        case 3: w.erase(w.begin() + static_cast<ptrdiff_t>(at)); break;
        default: w.insert(w.begin() + static_cast<ptrdiff_t>(at), interesting[rng() % std::size(interesting)]); break;
      }
      if (w.empty()) w.push_back(0);
    }
    std::vector<Diagnostic> diags = validate(w);  // must not throw or crash
    for (const Diagnostic& d : diags) {
      ASSERT_TRUE(listed(d.rule)) << "iteration " << iter << ": " << d.str();
    }
  }
}

}  // namespace
}  // namespace weft::spirv
