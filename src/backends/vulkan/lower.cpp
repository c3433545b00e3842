// The lowering table and the Lowering helpers shared by every operator family.
#include "backends/vulkan/lower.h"

#include <algorithm>
#include <limits>
#include <set>

namespace weft::vkb {

const std::map<std::string, std::vector<uint32_t>, std::less<>>& embedded_shaders();  // generated

std::optional<ShaderType> shader_type(DType t) {
  switch (t) {
    case DType::kBool: return ShaderType::kBool;
    case DType::kInt8: return ShaderType::kI8;
    case DType::kInt16: return ShaderType::kI16;
    case DType::kInt32: return ShaderType::kI32;
    case DType::kInt48: return ShaderType::kI48;
    case DType::kFp16: return ShaderType::kF16;
    case DType::kFp32: return ShaderType::kF32;
    default: return std::nullopt;
  }
}

const std::vector<uint32_t>& shader_spirv(std::string_view name) {
  const auto& all = embedded_shaders();
  auto it = all.find(name);
  if (it == all.end())
    throw Error(ErrorCode::kInternal, "no embedded Vulkan shader '" + std::string(name) + "'");
  return it->second;
}

const std::map<Op, OpLowering>& ops_table() {
  static const std::map<Op, OpLowering> table = [] {
    std::map<Op, OpLowering> t;
    register_elementwise(t);
    register_layout(t);
    register_tensor(t);
    register_misc(t);
    return t;
  }();
  return table;
}

uint32_t most_shader_buffers() {
  static const uint32_t most = [] {
    constexpr uint32_t kOpDecorate = 71, kBinding = 33;
    size_t m = 0;
    for (const auto& [name, words] : embedded_shaders()) {
      std::set<uint32_t> bindings;
      for (size_t i = 5; i < words.size();) {
        const uint32_t count = words[i] >> 16, opcode = words[i] & 0xffff;
        if (count == 0 || i + count > words.size()) break;  // (the build made these modules)
        if (opcode == kOpDecorate && count >= 4 && words[i + 2] == kBinding) bindings.insert(words[i + 3]);
        i += count;
      }
      m = std::max(m, bindings.size());
    }
    return static_cast<uint32_t>(m);
  }();
  return most;
}

std::string check_storage_buffers(const Graph& g, const backend::Composite& c, const Caps& caps) {
  if (caps.max_storage_buffers >= most_shader_buffers()) return {};
  Lowering l(g, caps);
  l.node = c.anchor;
  try {
    ops_table().at(g.node(c.anchor).op).lower(l, c);
  } catch (const Error& e) {
    return e.message();
  }
  for (const Dispatch& d : l.dispatches)
    if (d.args.size() > caps.max_storage_buffers)
      return "kernel " + d.shader + " binds " + std::to_string(d.args.size()) +
             " storage buffers, above maxPerStageDescriptorStorageBuffers = " +
             std::to_string(caps.max_storage_buffers) + " of Vulkan device '" + caps.device + "'";
  return {};
}

const Tensor* const_tensor(const Graph& g, ValueId v) {
  const int p = g.value(v).producer;
  return p >= 0 && g.node(p).op == Op::CONST ? &g.node(p).attr_tensor("values") : nullptr;
}

std::optional<int64_t> const_int(const Graph& g, ValueId v) {
  const Tensor* t = const_tensor(g, v);
  if (!t || t->num_elements() != 1) return std::nullopt;
  return t->at_int(0);
}

std::optional<double> const_scalar(const Graph& g, ValueId v) {
  const Tensor* t = const_tensor(g, v);
  if (!t || t->num_elements() != 1) return std::nullopt;
  return t->at_double(0);
}

std::optional<std::vector<int64_t>> const_shape(const Graph& g, ValueId v) {
  const int p = g.value(v).producer;
  if (p < 0 || g.node(p).op != Op::CONST_SHAPE) return std::nullopt;
  return g.node(p).attr_ints("values");
}

const Tensor* Lowering::constant(ValueId v) const { return const_tensor(graph, v); }

Arg Lowering::scratch(size_t bytes, bool write) {
  scratch_bytes.push_back(bytes);
  return {Arg::Kind::kScratch, kNoValue, static_cast<uint32_t>(scratch_bytes.size() - 1), write};
}

Arg Lowering::data(std::vector<uint8_t> bytes) {
  data_blobs.push_back(std::move(bytes));
  return {Arg::Kind::kData, kNoValue, static_cast<uint32_t>(data_blobs.size() - 1), false};
}

void Lowering::dispatch(std::string shader, std::vector<int32_t> spec, std::vector<Arg> args,
                        std::array<uint32_t, 3> groups, std::vector<uint8_t> push) {
  Dispatch d;
  d.shader = std::move(shader);
  d.spec = std::move(spec);
  d.args = std::move(args);
  d.groups = groups;
  d.push = std::move(push);
  d.label = node >= 0 ? graph.node_label(node) : std::string();
  dispatches.push_back(std::move(d));
}

std::array<uint32_t, 3> Lowering::grid(uint64_t invocations, uint32_t local) const {
  const uint64_t groups = (invocations + local - 1) / local;
  if (groups == 0) return {0, 1, 1};
  const uint64_t max_x = caps.max_groups[0];
  if (groups <= max_x) return {static_cast<uint32_t>(groups), 1, 1};
  const uint64_t y = (groups + max_x - 1) / max_x;
  if (y > caps.max_groups[1])
    fail("needs " + std::to_string(groups) + " workgroups, more than the device's " + std::to_string(max_x) + " x " +
         std::to_string(caps.max_groups[1]));
  return {static_cast<uint32_t>(max_x), static_cast<uint32_t>(y), 1};
}

void Lowering::fail(const std::string& why) const {
  throw Error(ErrorCode::kUnsupported, why,
              Location{.graph = graph.name(), .node = node >= 0 ? graph.node_label(node) : std::string()});
}

std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int i = static_cast<int>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

bool fits_int32(const TensorType& t) {
  // Element indices and byte offsets of the widest view (int64) stay below 2^31.
  const int64_t limit = std::numeric_limits<int32_t>::max() / 8;
  int64_t n = 1;
  for (int64_t d : t.shape) {
    if (d > limit) return false;
    n *= std::max<int64_t>(d, 1);
    if (n > limit) return false;
  }
  return true;
}

std::string check_tensors(const Graph& g, int node) {
  const Node& n = g.node(node);
  auto one = [&](ValueId v) -> std::string {
    const TensorType& t = g.value(v).type;
    if (t.dtype == DType::kShape) return {};
    if (!shader_type(t.dtype)) return std::string("no Vulkan shader handles ") + dtype_name(t.dtype) + " tensors";
    if (!fits_int32(t)) return "tensor " + t.str() + " is too large for 32-bit shader indexing";
    if (t.shape.size() > 6) return "tensor " + t.str() + " has rank > 6";
    return {};
  };
  for (ValueId v : n.inputs)
    if (std::string w = one(v); !w.empty()) return w;
  for (ValueId v : n.outputs)
    if (std::string w = one(v); !w.empty()) return w;
  return {};
}

}  // namespace weft::vkb
