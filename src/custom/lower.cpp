// lower(): the payload of one node of a registered custom operator (docs/custom-ops.md).
#include <cmath>
#include <cstring>
#include <limits>

#include "custom/registry_internal.h"

namespace weft::custom {

namespace {

using detail::ExactValue;

const char* scalar_format(DType t) {
  switch (t) {
    case DType::kFp32: return "VK_FORMAT_R32_SFLOAT";
    case DType::kFp16: return "VK_FORMAT_R16_SFLOAT";
    case DType::kBf16: return "VK_FORMAT_R16_SFLOAT_FPENCODING_BFLOAT16_ARM";
    case DType::kFp8E4M3: return "VK_FORMAT_R8_SFLOAT_FPENCODING_FLOAT8E4M3_ARM";
    case DType::kFp8E5M2: return "VK_FORMAT_R8_SFLOAT_FPENCODING_FLOAT8E5M2_ARM";
    case DType::kInt32: return "VK_FORMAT_R32_SINT";
    case DType::kInt16: return "VK_FORMAT_R16_SINT";
    case DType::kInt8: return "VK_FORMAT_R8_SINT";
    case DType::kBool: return "VK_FORMAT_R8_BOOL_ARM";
    default: return nullptr;  // int4, int48, shape: no VkFormat
  }
}

const char* image_format(int64_t channels) {
  switch (channels) {
    case 1: return "VK_FORMAT_R32_SFLOAT";
    case 2: return "VK_FORMAT_R32G32_SFLOAT";
    case 3: return "VK_FORMAT_R32G32B32_SFLOAT";  // check_contract explains why C = 3 is refused
    case 4: return "VK_FORMAT_R32G32B32A32_SFLOAT";
    default: return nullptr;
  }
}

struct Lowering {
  const OpSpec& spec;
  const Location& where;
  std::string label;

  [[noreturn]] void fail(const std::string& message) const {
    throw Error(ErrorCode::kInvalidArgument, message, where);
  }

  ExactValue eval(const std::string& expr, const ExprEnv& env, const std::string& what) const {
    try {
      return detail::eval_exact(expr, env, label + ": " + what);
    } catch (const Error& e) {
      throw e.with_context(where);
    }
  }
  int64_t eval_int(const std::string& expr, const ExprEnv& env, const std::string& what) const {
    const ExactValue v = eval(expr, env, what);
    if (v.is_float) fail(label + ": " + what + ": " + expr + " is a float (" + std::to_string(v.f) + "); it must be an integer");
    return v.i;
  }

  Resource resource(const ResourceSpec& r, bool output, uint32_t index, uint32_t position, const TensorType& t) const {
    const std::string name = std::string(output ? "output " : "input ") + std::to_string(index);
    Resource res;
    res.output = output;
    res.index = index;
    res.type = r.type;
    std::string dt = r.descriptor_type;
    if (dt.empty())
      dt = r.type != "Image" ? "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER"
           : output          ? "VK_DESCRIPTOR_TYPE_STORAGE_IMAGE"
                             : "VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER";
    res.descriptor_type = dt;
    std::string format = r.vkformat;
    if (format.empty()) {
      if (r.type == "Image") {
        const char* f = t.rank() > 0 ? image_format(t.shape.back()) : nullptr;
        if (!f)
          fail(label + ": " + name + " is an Image of shape " + shape_str(t.shape) +
               ": its last dimension (channels) must be 1, 2 or 4");
        format = f;
      } else {
        const char* f = scalar_format(t.dtype);
        if (!f)
          fail(label + ": " + name + " has element type " + dtype_name(t.dtype) +
               ", which has no VkFormat (a custom operator's tensors are bool, int8/16/32 or float)");
        format = f;
      }
    }
    res.vkformat = format;
    res.binding = r.binding >= 0 ? r.binding : position;
    res.descriptor_set = r.descriptor_set;
    if (dt == "VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER") {
      res.filter = r.filter.empty() ? "linear" : r.filter;
      res.address_mode = r.address_mode.empty() ? "clamp_to_edge" : r.address_mode;
    } else {
      if (!r.filter.empty()) res.filter = r.filter;
      if (!r.address_mode.empty()) res.address_mode = r.address_mode;
    }
    return res;
  }
};

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

}  // namespace

Lowered lower(const OpSpec& spec_in, const std::vector<TensorType>& inputs, const ExprEnv& attrs,
              const Location& where) {
  Lowering L{spec_in, where, detail::op_label(spec_in)};
  // The spec as registered is valid already; a spec built by hand is checked (and compiled) here.
  OpSpec compiled;
  const OpSpec* spec = &spec_in;
  {
    const detail::FieldNames names{.prefix = L.label};
    try {
      detail::validate_spec(spec_in, "", names);
      if (!detail::is_compiled(spec_in)) {
        compiled = spec_in;
        detail::compile_spec(compiled, "", "", names);
        spec = &compiled;
      }
    } catch (const Error& e) {
      throw e.with_context(where);
    }
  }

  if (inputs.size() != spec->inputs.size())
    L.fail(L.label + " takes " + std::to_string(spec->inputs.size()) + " input" +
           (spec->inputs.size() == 1 ? "" : "s") + ", but the node has " + std::to_string(inputs.size()));
  for (const auto& [name, allowed] : spec->allowed_attrs) {
    auto it = attrs.string_attrs.find(name);
    if (it == attrs.string_attrs.end()) continue;
    bool ok = false;
    std::string list;
    for (const std::string& a : allowed) {
      ok = ok || a == it->second;
      list += (list.empty() ? "'" : ", '") + a + "'";
    }
    if (!ok)
      L.fail("attribute '" + name + "' is '" + it->second + "', which " + L.label + " does not support (allowed: " +
             list + ")");
  }

  ExprEnv env = attrs;
  env.inputs.clear();
  env.outputs.clear();
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (spec->inputs[i].layout == "NHWC" && inputs[i].rank() != 4)
      L.fail(L.label + ": input " + std::to_string(i) + " is NHWC but has shape " + shape_str(inputs[i].shape) +
             " (NHWC resources are 4-D)");
    env.inputs.push_back(inputs[i].shape);
  }

  // Output types, in order (an output's shape may use the earlier outputs).
  Lowered result;
  for (size_t j = 0; j < spec->outputs.size(); ++j) {
    const ResourceSpec& r = spec->outputs[j];
    TensorType t;
    if (!r.dtype.empty()) {
      t.dtype = *detail::parse_dtype_name(r.dtype);
    } else {
      if (inputs.empty())
        L.fail(L.label + ": output " + std::to_string(j) + " has no dtype and the operator has no input to take it from");
      t.dtype = inputs[0].dtype;
    }
    for (size_t d = 0; d < r.shape.size(); ++d) {
      const std::string what = "output " + std::to_string(j) + " shape[" + std::to_string(d) + "]";
      const int64_t v = L.eval_int(r.shape[d], env, what);
      if (v < 1) L.fail(L.label + ": " + what + ": " + r.shape[d] + " = " + std::to_string(v) + "; dimensions must be >= 1");
      t.shape.push_back(v);
    }
    if (r.layout == "NHWC" && t.rank() != 4)
      L.fail(L.label + ": output " + std::to_string(j) + " is NHWC but its shape has rank " + std::to_string(t.rank()));
    env.outputs.push_back(t.shape);
    result.outputs.push_back(std::move(t));
  }

  Payload& p = result.payload;
  p.entry_point = spec->entry_point;
  p.workgroup_sizes = spec->workgroup_size;
  p.language = ShaderLanguage::kSpirv;
  p.spirv = spec->spirv;
  const uint32_t n_in = static_cast<uint32_t>(inputs.size());
  for (uint32_t i = 0; i < n_in; ++i) p.inputs.push_back(L.resource(spec->inputs[i], false, i, i, inputs[i]));
  for (uint32_t j = 0; j < result.outputs.size(); ++j)
    p.outputs.push_back(L.resource(spec->outputs[j], true, j, n_in + j, result.outputs[j]));

  // Push constants: each a 32-bit value, little-endian, in block order.
  std::string text;
  for (const OpSpec::Push& pc : spec->push_constants) {
    const std::string what = "push constant '" + pc.name + "'";
    const ExactValue v = L.eval(pc.value, env, what);
    if (v.is_float) {
      if (std::isfinite(v.f) && std::fabs(v.f) > std::numeric_limits<float>::max())
        L.fail(L.label + ": " + what + ": " + pc.value + " = " + std::to_string(v.f) + " is out of the float32 range");
      const float f = static_cast<float>(v.f);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      put_u32(p.push_constant_data, bits);
    } else {
      if (v.i < std::numeric_limits<int32_t>::min() || v.i > int64_t{std::numeric_limits<uint32_t>::max()})
        L.fail(L.label + ": " + what + ": " + pc.value + " = " + std::to_string(v.i) +
               " does not fit 32 bits (int32 or uint32)");
      put_u32(p.push_constant_data, static_cast<uint32_t>(v.i));
    }
    p.push_constants.push_back(PushConstant{pc.name, pc.size});
    text += (text.empty() ? "" : ", ") + pc.name + ": " + std::to_string(pc.size);
  }
  if (!text.empty()) p.push_constants_text = text;

  // Dispatch: ceil(invocations / workgroup size) per axis.
  std::array<uint32_t, 3> dispatch{};
  static const char* const kAxes[3] = {"x", "y", "z"};
  for (size_t a = 0; a < 3; ++a) {
    const std::string what = std::string("invocations along ") + kAxes[a];
    const int64_t n = L.eval_int(spec->invocations[a], env, what);
    if (n < 1) L.fail(L.label + ": " + what + ": " + spec->invocations[a] + " = " + std::to_string(n) + "; it must be >= 1");
    const int64_t wg = spec->workgroup_size[a];
    const int64_t groups = n / wg + (n % wg != 0 ? 1 : 0);
    if (groups > int64_t{std::numeric_limits<uint32_t>::max()})
      L.fail(L.label + ": " + what + ": " + std::to_string(groups) + " workgroups do not fit 32 bits");
    dispatch[a] = static_cast<uint32_t>(groups);
  }
  p.dispatch = dispatch;

  check_contract(p, inputs, result.outputs, where);
  return result;
}

}  // namespace weft::custom
