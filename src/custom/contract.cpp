// The resource contract between a CUSTOM node's tensors and its shader's Vulkan resources
// (docs/custom-ops-contract.md).
//
// - Every input and output tensor of the node has exactly one `input_<i>_*` / `output_<i>_*`
//   group, and every group describes a tensor of the node; each group gives vkdescriptortype,
//   vkformat, binding and descriptorset.
// - Tensor/buffer resources (STORAGE_BUFFER; UNIFORM_BUFFER for inputs only; TENSOR_ARM, also
//   spelled STORAGE_TENSOR_EXT): a scalar (1-component) element format matching the tensor's
//   element type; channels stay in the shape, any shape and channel count (C = 3 too) is fine.
// - Image resources (STORAGE_IMAGE; COMBINED_IMAGE_SAMPLER and SAMPLED_IMAGE for inputs only):
//   an fp32 tensor of shape [H, W, C] or [1, H, W, C], C packed into R32_SFLOAT (C = 1),
//   R32G32_SFLOAT (C = 2) or R32G32B32A32_SFLOAT (C = 4). C = 3 is rejected (no implicit 3 -> 4
//   promotion): pad to 4 channels before the node, or use a tensor/buffer resource.
// - `_type`, when given, agrees with the descriptor type: "Image" for image descriptors,
//   "Tensor" or "Buffer" for the others.
//
// Aliasing rule. Two resources may share a (descriptor set, binding) only when they are the same
// tensor seen twice: both are inputs (an output never shares its binding), and they have the same
// descriptor type, the same format and the same TensorType (dtype and shape). Such aliases are
// returned next to each other (the lower input index first) and bind one descriptor. A tensor
// view and an image view of the same data are two different descriptors: they use different
// bindings, and each is checked against its own rules (which makes both describe the same data:
// the image packs exactly the channels the tensor view keeps in its shape).
#include <algorithm>
#include <cctype>
#include <limits>

#include "weft/custom.h"
#include "weft/dtype.h"

namespace weft::custom {

namespace {

constexpr uint32_t kUniformBuffer = 6, kStorageBuffer = 7, kStorageImage = 3, kCombinedImageSampler = 1,
                   kSampledImage = 2, kTensorArm = 1000460000;
constexpr uint32_t kR32Sfloat = 100, kR32G32Sfloat = 103, kR32G32B32A32Sfloat = 109;

// Formats a tensor/buffer view of each element type may use; the first is the canonical one.
std::vector<uint32_t> scalar_formats(DType t) {
  switch (t) {
    case DType::kFp32: return {kR32Sfloat};
    case DType::kFp16: return {76};                     // R16_SFLOAT
    case DType::kBf16: return {1000460001};             // R16_SFLOAT_FPENCODING_BFLOAT16_ARM
    case DType::kFp8E4M3: return {1000460002};          // R8_SFLOAT_FPENCODING_FLOAT8E4M3_ARM
    case DType::kFp8E5M2: return {1000460003};          // R8_SFLOAT_FPENCODING_FLOAT8E5M2_ARM
    case DType::kInt32: return {99, 98};                // R32_SINT, R32_UINT
    case DType::kInt16: return {75, 74};                // R16_SINT, R16_UINT
    case DType::kInt8: return {14, 13};                 // R8_SINT, R8_UINT
    case DType::kBool: return {1000460000, 13};         // R8_BOOL_ARM, R8_UINT
    default: return {};                                 // int4, int48, shape: no Vulkan element format
  }
}

class Checker {
 public:
  Checker(const Location& where) : where_(where) {
    if (!where.node.empty()) prefix_ = "custom node '" + where.node + "': ";
  }

  [[noreturn]] void fail(const std::string& operand, const std::string& message) const {
    Location l = where_;
    l.operand = operand;
    throw Error(ErrorCode::kVerify, prefix_ + message, l);
  }

  BoundResource bind(const Resource& r, const TensorType& t) const;

 private:
  void check_buffer(const Resource& r, const BoundResource& b) const;
  void check_image(const Resource& r, BoundResource& b) const;

  const Location& where_;
  std::string prefix_;
};

std::string group_name(const Resource& r) { return (r.output ? "output_" : "input_") + std::to_string(r.index); }

std::string what(const Resource& r) {
  return std::string(r.output ? "output " : "input ") + std::to_string(r.index);
}

BoundResource Checker::bind(const Resource& r, const TensorType& t) const {
  const char* runnable = "a runnable resource needs vkdescriptortype, vkformat, binding and descriptorset";
  if (!r.descriptor_type) fail(r.key("vkdescriptortype"), r.key("vkdescriptortype") + " is missing: " + runnable);
  if (!r.vkformat) fail(r.key("vkformat"), r.key("vkformat") + " is missing: " + runnable);
  if (!r.binding) fail(r.key("binding"), r.key("binding") + " is missing: " + runnable);
  if (!r.descriptor_set) fail(r.key("descriptorset"), r.key("descriptorset") + " is missing: " + runnable);

  BoundResource b;
  b.output = r.output;
  b.index = r.index;
  b.tensor = t;

  const std::string dt_key = r.key("vkdescriptortype");
  std::optional<uint32_t> dt = descriptor_type_value(*r.descriptor_type);
  const char* supported =
      "supported: VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER (inputs), "
      "VK_DESCRIPTOR_TYPE_TENSOR_ARM (or STORAGE_TENSOR_EXT), VK_DESCRIPTOR_TYPE_STORAGE_IMAGE, "
      "VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER and VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE (inputs)";
  if (!dt) fail(dt_key, dt_key + " " + *r.descriptor_type + " is not a descriptor type Weft knows (" + supported + ")");
  b.descriptor_type = *dt;
  switch (*dt) {
    case kStorageBuffer: b.kind = ResourceKind::kBuffer; break;
    case kUniformBuffer:
      if (r.output)
        fail(dt_key, dt_key + ": uniform buffers are read-only; an output needs VK_DESCRIPTOR_TYPE_STORAGE_BUFFER "
                              "or VK_DESCRIPTOR_TYPE_TENSOR_ARM");
      b.kind = ResourceKind::kBuffer;
      break;
    case kTensorArm: b.kind = ResourceKind::kTensorArm; break;
    case kStorageImage: b.kind = ResourceKind::kStorageImage; break;
    case kCombinedImageSampler:
    case kSampledImage:
      if (r.output)
        fail(dt_key, dt_key + ": output images must be writable: " + *r.descriptor_type +
                         " is read-only, use VK_DESCRIPTOR_TYPE_STORAGE_IMAGE");
      b.kind = ResourceKind::kSampledImage;
      break;
    default: fail(dt_key, dt_key + " " + *r.descriptor_type + " cannot carry a tensor (" + supported + ")");
  }
  bool image = b.kind == ResourceKind::kStorageImage || b.kind == ResourceKind::kSampledImage;

  b.format = find_format(*r.vkformat);
  if (!b.format) fail(r.key("vkformat"), r.key("vkformat") + " " + *r.vkformat + " is not a VkFormat Weft knows");

  if (r.type) {
    // Case-insensitive: the schema writes "Tensor", ExecuTorch's tests "TENSOR".
    std::string ty = *r.type;
    for (char& ch : ty) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (!ty.empty()) ty[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(ty[0])));
    if (ty != "Tensor" && ty != "Buffer" && ty != "Image")
      fail(r.key("type"), r.key("type") + " \"" + ty + "\" is not a resource type Weft knows (Tensor, Buffer, Image)");
    if ((ty == "Image") != image)
      fail(r.key("type"), r.key("type") + " \"" + ty + "\" disagrees with " + dt_key + " " + *r.descriptor_type +
                              (image ? " (an image descriptor: _type \"Image\")"
                                     : " (not an image descriptor: _type \"Tensor\" or \"Buffer\")"));
  }

  constexpr int64_t kMax = std::numeric_limits<uint32_t>::max();
  if (*r.binding < 0 || *r.binding > kMax)
    fail(r.key("binding"), r.key("binding") + " must be an integer in [0, 4294967295] (got " +
                               std::to_string(*r.binding) + ")");
  if (*r.descriptor_set < 0 || *r.descriptor_set > kMax)
    fail(r.key("descriptorset"), r.key("descriptorset") + " must be an integer in [0, 4294967295] (got " +
                                     std::to_string(*r.descriptor_set) + ")");
  b.binding = static_cast<uint32_t>(*r.binding);
  b.set = static_cast<uint32_t>(*r.descriptor_set);

  if (r.filter) {
    if (*r.filter != "nearest" && *r.filter != "linear")
      fail(r.key("weft_filter"), r.key("weft_filter") + " must be \"nearest\" or \"linear\" (got \"" + *r.filter + "\")");
    b.filter = *r.filter;
  }
  if (r.address_mode) {
    const std::string& m = *r.address_mode;
    if (m != "clamp_to_edge" && m != "repeat" && m != "mirrored_repeat" && m != "clamp_to_border")
      fail(r.key("weft_address_mode"), r.key("weft_address_mode") +
                                           " must be \"clamp_to_edge\", \"repeat\", \"mirrored_repeat\" or "
                                           "\"clamp_to_border\" (got \"" + m + "\")");
    b.address_mode = m;
  }

  if (image) check_image(r, b);
  else check_buffer(r, b);
  return b;
}

void Checker::check_buffer(const Resource& r, const BoundResource& b) const {
  const std::string key = r.key("vkformat");
  if (b.format->components != 1) {
    std::vector<uint32_t> f = scalar_formats(b.tensor.dtype);
    std::string hint = f.empty() ? "" : std::string(", e.g. ") + find_format(f[0])->name;
    fail(key, key + " " + b.format->name + " is a packed " + std::to_string(b.format->components) +
                  "-component format: tensor/buffer resources use a scalar element format and channels stay in "
                  "the shape (" + what(r) + " is " + b.tensor.str() + hint + ")");
  }
  std::vector<uint32_t> ok = scalar_formats(b.tensor.dtype);
  if (ok.empty())
    fail(key, what(r) + " has element type " + dtype_name(b.tensor.dtype) +
                  ", which no Vulkan tensor/buffer element format describes");
  if (std::find(ok.begin(), ok.end(), b.format->value) == ok.end()) {
    std::string expected;
    for (uint32_t v : ok) expected += std::string(expected.empty() ? "" : " or ") + find_format(v)->name;
    fail(key, key + " " + b.format->name + " does not match the element type " + dtype_name(b.tensor.dtype) + " of " +
                  what(r) + " (" + b.tensor.str() + "): expected " + expected);
  }
}

void Checker::check_image(const Resource& r, BoundResource& b) const {
  const std::string key = r.key("vkformat");
  const std::string dt_key = r.key("vkdescriptortype");
  const TensorType& t = b.tensor;
  if (t.dtype != DType::kFp32)
    fail(dt_key, "image resources hold fp32 tensors: " + what(r) + " is " + t.str() +
                     " (use a tensor/buffer resource for other element types)");
  if (t.rank() != 3 && t.rank() != 4)
    fail(dt_key, "image resources need a tensor of shape [H,W,C] or [1,H,W,C]: " + what(r) + " is " + t.str());
  if (t.rank() == 4 && t.shape[0] != 1)
    fail(dt_key, "image resources need a tensor of shape [H,W,C] or [1,H,W,C] (a rank-4 batch must be 1): " +
                     what(r) + " is " + t.str());
  size_t o = t.rank() == 4 ? 1 : 0;
  int64_t h = t.shape[o], w = t.shape[o + 1], c = t.shape[o + 2];
  if (h < 1 || w < 1 || h > std::numeric_limits<uint32_t>::max() || w > std::numeric_limits<uint32_t>::max())
    fail(dt_key, "image resources need a known extent >= 1: " + what(r) + " is " + t.str());
  if (c == 3)
    fail(key, what(r) + " " + t.str() + " has 3 channels, which no image format of the contract packs "
                  "(exactly 1, 2 or 4 channels; no implicit 3->4 promotion): pad the tensor to 4 channels "
                  "explicitly before the custom node (and use VK_FORMAT_R32G32B32A32_SFLOAT), or use a "
                  "tensor/buffer resource (VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, VK_FORMAT_R32_SFLOAT, channels in "
                  "the shape)");
  uint32_t v = b.format->value;
  if (v != kR32Sfloat && v != kR32G32Sfloat && v != kR32G32B32A32Sfloat)
    fail(key, key + " " + b.format->name + " is not an image format of the contract: images use "
                  "VK_FORMAT_R32_SFLOAT (C=1), VK_FORMAT_R32G32_SFLOAT (C=2) or VK_FORMAT_R32G32B32A32_SFLOAT (C=4)");
  if (c != b.format->components)
    fail(key, key + " " + b.format->name + " packs " + std::to_string(b.format->components) + " channels but " +
                  what(r) + " " + t.str() + " has C=" + std::to_string(c) +
                  ": the channel count must match the format's component count exactly");
  b.height = static_cast<uint32_t>(h);
  b.width = static_cast<uint32_t>(w);
  b.channels = static_cast<uint32_t>(c);
}

}  // namespace

std::vector<BoundResource> check_contract(const Payload& p, const std::vector<TensorType>& inputs,
                                          const std::vector<TensorType>& outputs, const Location& where) {
  Checker c(where);
  std::vector<BoundResource> out;
  auto side = [&](const std::vector<Resource>& list, const std::vector<TensorType>& types, bool output) {
    const char* name = output ? "output" : "input";
    for (const Resource& r : list) {
      if (r.index >= types.size())
        c.fail(group_name(r), group_name(r) + "_* describes " + name + " " + std::to_string(r.index) +
                                  " but the node has " + std::to_string(types.size()) + " " + name + "s");
      out.push_back(c.bind(r, types[r.index]));
    }
    for (size_t i = 0; i < types.size(); ++i) {
      bool found = false;
      for (const Resource& r : list) found = found || r.index == i;
      if (!found) {
        std::string g = std::string(name) + "_" + std::to_string(i);
        c.fail(g, std::string(name) + " " + std::to_string(i) + " (" + types[i].str() + ") has no " + g +
                      "_* resource: every tensor of a runnable custom node needs one");
      }
    }
  };
  side(p.inputs, inputs, false);
  side(p.outputs, outputs, true);

  std::stable_sort(out.begin(), out.end(), [](const BoundResource& a, const BoundResource& b) {
    if (a.set != b.set) return a.set < b.set;
    if (a.binding != b.binding) return a.binding < b.binding;
    if (a.output != b.output) return !a.output;
    return a.index < b.index;
  });

  // Aliases: resources sharing (set, binding) must be one input tensor seen twice.
  for (size_t i = 1; i < out.size(); ++i) {
    const BoundResource& first = out[i - 1];
    const BoundResource& b = out[i];
    if (first.set != b.set || first.binding != b.binding) continue;
    auto label = [](const BoundResource& x) {
      return std::string(x.output ? "output_" : "input_") + std::to_string(x.index);
    };
    std::string operand = label(b) + "_binding";
    std::string head = label(b) + " and " + label(first) + " share descriptor set " + std::to_string(b.set) +
                       ", binding " + std::to_string(b.binding) + ": ";
    if (first.output || b.output)
      c.fail(operand, head + "an output never shares its binding (only two views of the same input tensor may)");
    if (first.descriptor_type != b.descriptor_type || first.format != b.format || !(first.tensor == b.tensor))
      c.fail(operand, head + "resources may share a binding only when they alias the same input tensor with the "
                             "same descriptor type, format and tensor type (" + first.tensor.str() + " " +
                             descriptor_type_name(first.descriptor_type) + " " + first.format->name + " vs " +
                             b.tensor.str() + " " + descriptor_type_name(b.descriptor_type) + " " + b.format->name +
                             "); a tensor view and an image view of the same data use different bindings");
  }
  return out;
}

}  // namespace weft::custom
