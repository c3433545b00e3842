// VGF names, VkFormat <-> element type mapping, container equality and the GRAPH module scan.
#include <cstring>
#include <unordered_map>

#include "package/internal.h"
#include "spirv/binary.h"
#include "weft/vgf.h"

namespace weft::vgf {

const char* module_type_name(ModuleType t) {
  switch (t) {
    case ModuleType::kCompute: return "COMPUTE";
    case ModuleType::kGraph: return "GRAPH";
  }
  return "?";
}

const char* code_type_name(CodeType t) {
  switch (t) {
    case CodeType::kNone: return "NONE";
    case CodeType::kSpirv: return "SPIRV";
    case CodeType::kGlsl: return "GLSL";
    case CodeType::kHlsl: return "HLSL";
  }
  return "?";
}

const char* category_name(ResourceCategory c) {
  switch (c) {
    case ResourceCategory::kInput: return "INPUT";
    case ResourceCategory::kOutput: return "OUTPUT";
    case ResourceCategory::kIntermediate: return "INTERMEDIATE";
    case ResourceCategory::kConstant: return "CONSTANT";
  }
  return "?";
}

std::string descriptor_type_name(uint32_t t) {
  switch (t) {
    case 0: return "VK_DESCRIPTOR_TYPE_SAMPLER";
    case 1: return "VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER";
    case 2: return "VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE";
    case 3: return "VK_DESCRIPTOR_TYPE_STORAGE_IMAGE";
    case 6: return "VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER";
    case kDescriptorTypeStorageBuffer: return "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER";
    case kDescriptorTypeTensorARM: return "VK_DESCRIPTOR_TYPE_TENSOR_ARM";
    case kNoDescriptorType: return "none";
    default: return std::to_string(t);
  }
}

namespace {

struct FormatInfo {
  uint32_t format;
  const char* name;
  size_t size;
  DType dtype;
};

constexpr FormatInfo kFormats[] = {
    {format::kR8Uint, "VK_FORMAT_R8_UINT", 1, DType::kInt8},
    {format::kR8Sint, "VK_FORMAT_R8_SINT", 1, DType::kInt8},
    {format::kR16Uint, "VK_FORMAT_R16_UINT", 2, DType::kInt16},
    {format::kR16Sint, "VK_FORMAT_R16_SINT", 2, DType::kInt16},
    {format::kR16Sfloat, "VK_FORMAT_R16_SFLOAT", 2, DType::kFp16},
    {format::kR32Uint, "VK_FORMAT_R32_UINT", 4, DType::kInt32},
    {format::kR32Sint, "VK_FORMAT_R32_SINT", 4, DType::kInt32},
    {format::kR32Sfloat, "VK_FORMAT_R32_SFLOAT", 4, DType::kFp32},
    {format::kR64Uint, "VK_FORMAT_R64_UINT", 8, DType::kInt48},
    {format::kR64Sint, "VK_FORMAT_R64_SINT", 8, DType::kInt48},
    {format::kR8BoolARM, "VK_FORMAT_R8_BOOL_ARM", 1, DType::kBool},
    {format::kR16SfloatBfloat16ARM, "VK_FORMAT_R16_SFLOAT_FPENCODING_BFLOAT16_ARM", 2, DType::kBf16},
    {format::kR8SfloatFloat8E4M3ARM, "VK_FORMAT_R8_SFLOAT_FPENCODING_FLOAT8E4M3_ARM", 1, DType::kFp8E4M3},
    {format::kR8SfloatFloat8E5M2ARM, "VK_FORMAT_R8_SFLOAT_FPENCODING_FLOAT8E5M2_ARM", 1, DType::kFp8E5M2},
};

const FormatInfo* find_format(uint32_t f) {
  for (const FormatInfo& i : kFormats) {
    if (i.format == f) return &i;
  }
  return nullptr;
}

}  // namespace

namespace {

struct VkName {
  uint32_t value;
  const char* name;
};
#include "package/vk_names.inc"

template <size_t N>
const char* lookup(const VkName (&table)[N], uint32_t v) {
  for (const VkName& n : table)
    if (n.value == v) return n.name;
  return nullptr;
}

}  // namespace

std::string vk_name(VkEnum kind, uint32_t v) {
  const char* name = nullptr;
  switch (kind) {
    case VkEnum::kFormat:
      if (const FormatInfo* i = find_format(v)) return i->name;  // VK_ARM_tensors' formats are newer than the header
      name = lookup(kVkFormatNames, v);
      break;
    case VkEnum::kDescriptorType:
      if (v == kNoDescriptorType) return "none";
      if (v == kDescriptorTypeTensorARM) return "VK_DESCRIPTOR_TYPE_TENSOR_ARM";
      name = lookup(kVkDescriptorTypeNames, v);
      break;
    case VkEnum::kFilter: name = lookup(kVkFilterNames, v); break;
    case VkEnum::kSamplerAddressMode: name = lookup(kVkSamplerAddressModeNames, v); break;
    case VkEnum::kBorderColor: name = lookup(kVkBorderColorNames, v); break;
  }
  return name ? std::string(name) : "Unknown(" + std::to_string(v) + ")";
}

std::string format_name(uint32_t f) {
  if (f == format::kUndefined) return "VK_FORMAT_UNDEFINED";
  if (const FormatInfo* i = find_format(f)) return i->name;
  return std::to_string(f);
}

std::optional<uint32_t> format_of(DType t) {
  switch (t) {
    case DType::kBool: return format::kR8BoolARM;
    case DType::kInt8: return format::kR8Sint;
    case DType::kInt16: return format::kR16Sint;
    case DType::kInt32: return format::kR32Sint;
    case DType::kInt48: return format::kR64Sint;
    case DType::kFp16: return format::kR16Sfloat;
    case DType::kBf16: return format::kR16SfloatBfloat16ARM;
    case DType::kFp32: return format::kR32Sfloat;
    case DType::kFp8E4M3: return format::kR8SfloatFloat8E4M3ARM;
    case DType::kFp8E5M2: return format::kR8SfloatFloat8E5M2ARM;
    case DType::kInt4:
    case DType::kShape: return std::nullopt;
  }
  return std::nullopt;
}

std::optional<DType> dtype_of(uint32_t f) {
  if (const FormatInfo* i = find_format(f)) return i->dtype;
  return std::nullopt;
}

std::optional<size_t> element_size(uint32_t f) {
  if (const FormatInfo* i = find_format(f)) return i->size;
  return std::nullopt;
}

std::vector<int64_t> packed_strides(const std::vector<int64_t>& shape, size_t element_bytes) {
  std::vector<int64_t> s(shape.size());
  int64_t stride = static_cast<int64_t>(element_bytes);
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = stride;
    int64_t next;
    if (__builtin_mul_overflow(stride, shape[i] > 0 ? shape[i] : int64_t{1}, &next)) next = INT64_MAX;
    stride = next;
  }
  return s;
}

std::optional<TensorType> tensor_type(const Resource& r) {
  std::optional<DType> d = dtype_of(r.vk_format);
  if (!d) return std::nullopt;
  for (int64_t dim : r.shape) {
    if (dim < 0) return std::nullopt;
  }
  if (!detail::tensor_bytes(r.shape, storage_size(*d))) return std::nullopt;
  return TensorType{*d, r.shape};
}

std::string Version::str() const {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

uint32_t Segment::set_number(size_t i) const {
  uint32_t s = set_infos.at(i).set_index;
  return s == kSetIndexUnset ? static_cast<uint32_t>(i) : s;
}

bool equal_tables(const Container& a, const Container& b) {
  if (a.modules != b.modules || a.resources != b.resources || !(a.sequence == b.sequence)) return false;
  if (a.constants.size() != b.constants.size()) return false;
  for (size_t i = 0; i < a.constants.size(); ++i) {
    const Constant& x = a.constants[i];
    const Constant& y = b.constants[i];
    if (x.mrt_index != y.mrt_index || x.sparsity_dimension != y.sparsity_dimension) return false;
    if (x.data.size() != y.data.size()) return false;
    if (x.data.size() && std::memcmp(x.data.data(), y.data.data(), x.data.size()) != 0) return false;
  }
  return true;
}

namespace detail {

std::optional<uint64_t> tensor_bytes(const std::vector<int64_t>& shape, uint64_t element_bytes) {
  uint64_t n = element_bytes;
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    std::optional<uint64_t> m = mul(n, static_cast<uint64_t>(d));
    if (!m || *m > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    n = *m;
  }
  return n;
}

GraphModuleFacts scan_graph_module(std::span<const uint32_t> words) {
  constexpr uint16_t kOpDecorate = 71;
  constexpr uint16_t kOpGraphConstantARM = 4181;
  constexpr uint16_t kOpGraphEntryPointARM = 4182;
  constexpr uint32_t kDecorationBinding = 33;
  constexpr uint32_t kDecorationDescriptorSet = 34;

  spirv::Stream stream = spirv::split_instructions(words);
  GraphModuleFacts f;
  for (const spirv::Instruction& inst : stream.instructions) {
    switch (inst.opcode()) {
      case kOpGraphEntryPointARM:
        if (!f.has_entry_point && inst.size() >= 3) {
          size_t next = 0;
          f.entry_name = spirv::read_string(inst, 2, &next);
          for (size_t i = next; i < inst.size(); ++i) f.interface.push_back({inst.word(i), {}, {}});
          f.has_entry_point = true;
        }
        break;
      case kOpGraphConstantARM:
        if (inst.size() >= 4) f.graph_constant_ids.push_back(inst.word(3));
        break;
      default: break;
    }
  }
  // Decorations precede the entry point's position in the stream only by convention, so look
  // them up once the interface is known.
  std::unordered_map<uint32_t, std::vector<size_t>> by_id;
  for (size_t i = 0; i < f.interface.size(); ++i) by_id[f.interface[i].id].push_back(i);
  for (const spirv::Instruction& inst : stream.instructions) {
    if (inst.opcode() != kOpDecorate || inst.size() < 4) continue;
    auto it = by_id.find(inst.word(1));
    if (it == by_id.end()) continue;
    for (size_t i : it->second) {
      if (inst.word(2) == kDecorationBinding) f.interface[i].binding = inst.word(3);
      if (inst.word(2) == kDecorationDescriptorSet) f.interface[i].set = inst.word(3);
    }
  }
  return f;
}

}  // namespace detail
}  // namespace weft::vgf
