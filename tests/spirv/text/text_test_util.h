// Helpers shared by the text-form tests: a word-level module builder (independent of the
// assembler) and a small graph module written the way Weft's encoder writes one.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <sstream>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "spirv/binary.h"
#include "spirv/grammar.h"
#include "weft/error.h"

namespace weft::spirv::testing {

// One operand of ModuleBuilder::op: a word or a literal string.
using Operand = std::variant<uint32_t, std::string>;

class ModuleBuilder {
 public:
  ModuleBuilder& op(uint16_t opcode, std::initializer_list<Operand> operands) {
    InstructionWriter w(body_, opcode);
    for (const Operand& o : operands) {
      if (const auto* s = std::get_if<std::string>(&o)) {
        w.string(*s);
      } else {
        w.word(std::get<uint32_t>(o));
      }
    }
    w.finish();
    return *this;
  }
  std::vector<uint32_t> words(uint32_t bound, uint32_t version = kVersion16, uint32_t generator = 0) const {
    std::vector<uint32_t> w{kMagic, version, generator, bound, 0};
    w.insert(w.end(), body_.begin(), body_.end());
    return w;
  }

 private:
  std::vector<uint32_t> body_;
};

// Ids of the example module, in order of first appearance (as the encoder numbers them).
enum ExampleId : uint32_t {
  kTosa = 1, kMain, kMainX, kMainY, kX, kY, kFloat, kUint, kUint4, kArr, kUint1, kUint8, kUint3, kShape,
  kTensor, kPtr, kGraphType, kFloat0, kFloat6, kUint0, kExampleBound
};

// A one-node graph (CLAMP) as Weft's encoder writes it.
inline std::vector<uint32_t> example_module() {
  ModuleBuilder b;
  b.op(kOpCapability, {kCapShader})
      .op(kOpCapability, {kCapVulkanMemoryModel})
      .op(kOpCapability, {kCapTensorsARM})
      .op(kOpCapability, {kCapGraphARM})
      .op(kOpExtension, {std::string("SPV_ARM_graph")})
      .op(kOpExtension, {std::string("SPV_ARM_tensors")})
      .op(kOpExtInstImport, {kTosa, std::string("TOSA.001000.1")})
      .op(kOpMemoryModel, {kAddressingLogical, kMemoryModelVulkan})
      .op(kOpName, {kMain, std::string("main")})
      .op(kOpName, {kMainX, std::string("main.x")})
      .op(kOpName, {kMainY, std::string("main.y")})
      .op(kOpName, {kX, std::string("x")})
      .op(kOpName, {kY, std::string("y")})
      .op(kOpDecorate, {kMainX, kDecorationDescriptorSet, 0u})
      .op(kOpDecorate, {kMainX, kDecorationBinding, 0u})
      .op(kOpDecorate, {kMainY, kDecorationDescriptorSet, 0u})
      .op(kOpDecorate, {kMainY, kDecorationBinding, 1u})
      .op(kOpTypeFloat, {kFloat, 32u})
      .op(kOpTypeInt, {kUint, 32u, 0u})
      .op(kOpConstant, {kUint, kUint4, 4u})
      .op(kOpTypeArray, {kArr, kUint, kUint4})
      .op(kOpConstant, {kUint, kUint1, 1u})
      .op(kOpConstant, {kUint, kUint8, 8u})
      .op(kOpConstant, {kUint, kUint3, 3u})
      .op(kOpConstantComposite, {kArr, kShape, kUint1, kUint8, kUint8, kUint3})
      .op(kOpTypeTensorARM, {kTensor, kFloat, kUint4, kShape})
      .op(kOpTypePointer, {kPtr, kStorageUniformConstant, kTensor})
      .op(kOpVariable, {kPtr, kMainX, kStorageUniformConstant})
      .op(kOpVariable, {kPtr, kMainY, kStorageUniformConstant})
      .op(kOpTypeGraphARM, {kGraphType, 1u, kTensor, kTensor})
      .op(kOpConstant, {kFloat, kFloat0, 0u})
      .op(kOpConstant, {kFloat, kFloat6, 0x40c00000u})
      .op(kOpConstant, {kUint, kUint0, 0u})
      .op(kOpGraphEntryPointARM, {kMain, std::string("main"), kMainX, kMainY})
      .op(kOpGraphARM, {kGraphType, kMain})
      .op(kOpGraphInputARM, {kTensor, kX, kUint0})
      .op(kOpExtInst, {kTensor, kY, kTosa, 10u /* CLAMP */, kFloat0, kFloat6, kUint1, kX})
      .op(kOpGraphSetOutputARM, {kY, kUint0})
      .op(kOpGraphEndARM, {});
  return b.words(kExampleBound);
}

// Its disassembly with friendly names (the default options).
inline const char* const kExampleText = R"(; SPIR-V
; Version: 1.6
; Generator: Khronos; 0
; Bound: 21
; Schema: 0
               OpCapability Shader
               OpCapability VulkanMemoryModel
               OpCapability TensorsARM
               OpCapability GraphARM
               OpExtension "SPV_ARM_graph"
               OpExtension "SPV_ARM_tensors"
       %tosa = OpExtInstImport "TOSA.001000.1"
               OpMemoryModel Logical Vulkan
               OpName %main "main"
               OpName %main_x "main.x"
               OpName %main_y "main.y"
               OpName %x "x"
               OpName %y "y"
               OpDecorate %main_x DescriptorSet 0
               OpDecorate %main_x Binding 0
               OpDecorate %main_y DescriptorSet 0
               OpDecorate %main_y Binding 1
      %float = OpTypeFloat 32
       %uint = OpTypeInt 32 0
     %uint_4 = OpConstant %uint 4
%_arr_uint_uint_4 = OpTypeArray %uint %uint_4
     %uint_1 = OpConstant %uint 1
     %uint_8 = OpConstant %uint 8
     %uint_3 = OpConstant %uint 3
         %14 = OpConstantComposite %_arr_uint_uint_4 %uint_1 %uint_8 %uint_8 %uint_3
%tensor_float_1x8x8x3 = OpTypeTensorARM %float %uint_4 %14
%_ptr_UniformConstant_tensor_float_1x8x8x3 = OpTypePointer UniformConstant %tensor_float_1x8x8x3
     %main_x = OpVariable %_ptr_UniformConstant_tensor_float_1x8x8x3 UniformConstant
     %main_y = OpVariable %_ptr_UniformConstant_tensor_float_1x8x8x3 UniformConstant
 %graph_type = OpTypeGraphARM 1 %tensor_float_1x8x8x3 %tensor_float_1x8x8x3
    %float_0 = OpConstant %float 0
    %float_6 = OpConstant %float 6
     %uint_0 = OpConstant %uint 0
               OpGraphEntryPointARM %main "main" %main_x %main_y
       %main = OpGraphARM %graph_type
          %x = OpGraphInputARM %tensor_float_1x8x8x3 %uint_0
          %y = OpExtInst %tensor_float_1x8x8x3 %tosa CLAMP %float_0 %float_6 %uint_1 %x
               OpGraphSetOutputARM %y %uint_0
               OpGraphEndARM
)";

// Random modules driven by the grammar tables: every instruction kind, every operand kind,
// quantifiers, enumerant parameters, literals of assorted widths and encodings (random bits,
// so NaNs, infinities, subnormals and non-canonical high bits), strings needing escapes.
// Ids are numbered in order of first appearance, result types are defined earlier: the
// friendly-name disassembly reassembles exactly, like a module Weft writes.
class RandomModule {
 public:
  explicit RandomModule(uint32_t seed) : rng_(seed) {}

  std::vector<uint32_t> build(int instructions) {
    // Some scalar types first, so that result types have something to refer to.
    emit_type_int(32, 0);
    emit_type_float(32, std::nullopt);
    for (int i = 0; i < instructions; ++i) {
      std::span<const InstDef> all = core_instructions();
      instruction(all[pick(all.size())]);
    }
    return finish();
  }

 private:
  std::vector<uint32_t> finish() const {
    std::vector<uint32_t> w{kMagic, kVersion16, 0, next_id_, 0};
    w.insert(w.end(), body_.begin(), body_.end());
    return w;
  }
  size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }
  bool coin() { return pick(2) == 0; }
  uint32_t fresh() { return next_id_++; }

  void emit_type_int(uint32_t width, uint32_t signedness) {
    uint32_t id = result_id();
    InstructionWriter(body_, kOpTypeInt).word(id).word(width).word(signedness).finish();
    defined_.push_back(id);
    widths_[id] = width;
  }
  void emit_type_float(uint32_t width, std::optional<uint32_t> encoding) {
    uint32_t id = result_id();
    InstructionWriter w(body_, kOpTypeFloat);
    w.word(id).word(width);
    if (encoding) w.word(*encoding);
    w.finish();
    defined_.push_back(id);
    widths_[id] = width;
  }
  uint32_t result_id() {
    if (!forward_.empty() && coin()) {
      uint32_t id = forward_.back();
      forward_.pop_back();
      return id;
    }
    return fresh();
  }
  uint32_t literal_width() {
    static constexpr uint32_t kWidths[] = {8, 16, 32, 64, 1, 48, 0, 100};
    return kWidths[pick(std::size(kWidths))];
  }
  uint32_t random_word() {
    switch (pick(4)) {
      case 0: return static_cast<uint32_t>(pick(16));
      case 1: return 0xffffffffu - static_cast<uint32_t>(pick(4));
      default: return static_cast<uint32_t>(rng_());
    }
  }
  std::string random_string() {
    static const std::string kChars[] = {"a", "Z", "0", "_", ".", " ", "\\", "\"", ";", "%", "=", "\n", "\xc3\xa9", "OpX"};
    std::string s;
    size_t n = pick(10);
    for (size_t i = 0; i < n; ++i) s += kChars[pick(std::size(kChars))];
    return s;
  }

  void instruction(const InstDef& def) {
    if (def.opcode == kOpTypeInt) {
      emit_type_int(literal_width(), coin() ? 1u : 0u);
      return;
    }
    if (def.opcode == kOpTypeFloat) {
      static constexpr uint32_t kWidths[] = {16, 32, 64, 8, 16, 12};
      std::optional<uint32_t> encoding;
      if (coin()) encoding = enumerants(OperandKind::kFPEncoding)[pick(enumerants(OperandKind::kFPEncoding).size())].value;
      emit_type_float(kWidths[pick(std::size(kWidths))], encoding);
      return;
    }
    Inst inst{def.opcode, {}};
    operands(inst, def.operands);
    InstructionWriter(body_, def.opcode).words(inst.words).finish();
  }

  struct Inst {
    uint16_t opcode;
    std::vector<uint32_t> words;
    uint32_t result = 0;
    uint32_t literal_words = 1;
  };

  void operands(Inst& inst, std::span<const OperandDef> defs) {
    bool skipped = false;  // optional operands are positional: none after a skipped one
    for (const OperandDef& d : defs) {
      size_t count = 1;
      if (d.quantifier == Quantifier::kOptional) count = skipped || coin() ? 0 : 1;
      if (d.quantifier == Quantifier::kMany) count = pick(4);
      if (count == 0) skipped = true;
      for (size_t i = 0; i < count; ++i) operand(inst, d);
    }
  }

  void operand(Inst& inst, const OperandDef& d) {
    switch (d.kind) {
      case OperandKind::kIdResultType: {
        uint32_t t = defined_[pick(defined_.size())];
        auto w = widths_.find(t);
        uint32_t width = w == widths_.end() ? 0 : w->second;
        inst.literal_words = width > 32 ? (width + 31) / 32 : 1;
        inst.words.push_back(t);
        return;
      }
      case OperandKind::kIdResult:
        inst.result = result_id();
        inst.words.push_back(inst.result);
        defined_.push_back(inst.result);
        return;
      case OperandKind::kIdRef:
        if (inst.opcode == kOpExtInst && tosa_ && inst.words.size() == 2 && coin()) {
          inst.words.push_back(tosa_);
        } else {
          id_ref(inst);
        }
        return;
      case OperandKind::kLiteralInteger: inst.words.push_back(random_word()); return;
      case OperandKind::kLiteralString: {
        std::string s = inst.opcode == kOpExtInstImport && coin() ? std::string(kTosaSetName) : random_string();
        if (inst.opcode == kOpExtInstImport && s == kTosaSetName) tosa_ = inst.result;
        append_string(inst.words, s);
        return;
      }
      case OperandKind::kLiteralContextDependentNumber:
        for (uint32_t i = 0; i < inst.literal_words; ++i) inst.words.push_back(random_word());
        return;
      case OperandKind::kLiteralExtInstInteger: inst.words.push_back(static_cast<uint32_t>(pick(90))); return;
      case OperandKind::kLiteralSpecConstantOpInteger:  // IAdd %a %b
        inst.words.push_back(kOpIAdd);
        id_ref(inst);
        id_ref(inst);
        return;
      default: break;
    }
    const KindDef& k = kind_def(d.kind);
    switch (k.category) {
      case KindCategory::kId: id_ref(inst); return;
      case KindCategory::kLiteral: inst.words.push_back(random_word()); return;
      case KindCategory::kComposite:
        for (OperandKind base : k.bases) operand(inst, OperandDef{base, Quantifier::kOne, ""});
        return;
      case KindCategory::kValueEnum: {
        const EnumDef& e = k.enumerants[pick(k.enumerants.size())];
        inst.words.push_back(e.value);
        operands(inst, e.params);
        return;
      }
      case KindCategory::kBitEnum: {  // up to two flags, their parameters in bit order
        uint32_t mask = 0;
        for (int i = static_cast<int>(pick(3)); i > 0; --i) mask |= k.enumerants[pick(k.enumerants.size())].value;
        inst.words.push_back(mask);
        for (const EnumDef& e : k.enumerants) {
          if (e.value != 0 && (e.value & (e.value - 1)) == 0 && (mask & e.value)) operands(inst, e.params);
        }
        return;
      }
    }
  }

  void id_ref(Inst& inst) {
    if (pick(4) == 0) {
      uint32_t id = fresh();
      forward_.push_back(id);
      inst.words.push_back(id);
    } else {
      inst.words.push_back(1 + static_cast<uint32_t>(pick(next_id_ - 1)));
    }
  }

  std::mt19937 rng_;
  std::vector<uint32_t> body_;
  uint32_t next_id_ = 1;
  uint32_t tosa_ = 0;
  std::vector<uint32_t> defined_;  // result ids defined so far
  std::vector<uint32_t> forward_;  // referenced before their definition, not defined yet
  std::unordered_map<uint32_t, uint32_t> widths_;  // OpTypeInt / OpTypeFloat result -> width
};

// Words as "0x........" lines, for readable failure messages.
inline std::string dump(const std::vector<uint32_t>& words) {
  std::ostringstream s;
  for (size_t i = 0; i < words.size(); ++i) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%4zu: 0x%08x\n", i, words[i]);
    s << buf;
  }
  return s.str();
}

// Expects equal word streams, reporting the first difference.
inline void expect_same_words(const std::vector<uint32_t>& actual, const std::vector<uint32_t>& expected) {
  if (actual == expected) return;
  size_t i = 0;
  while (i < actual.size() && i < expected.size() && actual[i] == expected[i]) ++i;
  ADD_FAILURE() << "words differ at index " << i << " (sizes " << actual.size() << " vs " << expected.size()
                << ")\nactual:\n" << dump(actual) << "expected:\n" << dump(expected);
}

}  // namespace weft::spirv::testing
