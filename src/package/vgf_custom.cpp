// Models with custom operators in a VGF container (docs/vgf.md, "Custom operators: COMPUTE
// segments"): the segmented from_module, Weft's per-segment record of a CUSTOM node and its
// cross-check against the tables, and the whole-sequence to_module.
#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "package/internal.h"
#include "spirv/binary.h"
#include "weft/custom.h"
#include "weft/verify.h"
#include "weft/vgf.h"

namespace weft::vgf {

namespace {

using Json = nlohmann::ordered_json;
using detail::fail;

// A record's data starts with exactly these bytes (the first key of an ordered JSON object).
constexpr std::string_view kRecordPrefix = "{\"weft_custom_op\":";
constexpr int kRecordVersion = 1;
constexpr uint16_t kOpGraphConstantARM = 4181;

bool is_constant_op(Op op) { return op == Op::CONST || op == Op::CONST_SHAPE; }

std::string shape_text(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}
std::string u32_list(const std::vector<uint32_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

// VkFilter / VkSamplerAddressMode of the payload's `*_weft_filter` / `*_weft_address_mode`.
uint32_t vk_filter(const std::string& f) { return f == "nearest" ? 0 : 1; }  // NEAREST 0, LINEAR 1
uint32_t vk_address_mode(const std::string& m) {
  if (m == "repeat") return 0;           // VK_SAMPLER_ADDRESS_MODE_REPEAT
  if (m == "mirrored_repeat") return 1;  // MIRRORED_REPEAT
  if (m == "clamp_to_border") return 3;  // CLAMP_TO_BORDER
  return 2;                              // CLAMP_TO_EDGE
}

bool is_image(const custom::BoundResource& b) {
  return b.kind == custom::ResourceKind::kStorageImage || b.kind == custom::ResourceKind::kSampledImage;
}

// How a segment sees a tensor: the resource row's descriptor type, format and sampler.
struct View {
  uint32_t descriptor_type = kDescriptorTypeTensorARM;
  uint32_t format = format::kUndefined;
  std::optional<SamplerConfig> sampler;
  bool image = false;

  auto key() const {
    SamplerConfig s = sampler.value_or(SamplerConfig{});
    return std::make_tuple(descriptor_type, format, sampler.has_value(), s.min_filter, s.mag_filter,
                           s.address_mode_u, s.address_mode_v, s.border_color);
  }
};

View compute_view(const custom::BoundResource& b) {
  View v;
  v.descriptor_type = b.descriptor_type;
  v.format = b.format->value;
  v.image = is_image(b);
  if (b.descriptor_type == kDescriptorTypeCombinedImageSampler) {
    uint32_t f = vk_filter(b.filter), a = vk_address_mode(b.address_mode);
    v.sampler = SamplerConfig{f, f, a, a, 0};  // border: VK_BORDER_COLOR_FLOAT_TRANSPARENT_BLACK
  }
  return v;
}

std::optional<TensorType> parse_type_text(const std::string& s) {
  size_t open = s.find('[');
  if (open == std::string::npos || s.back() != ']') return std::nullopt;
  std::optional<DType> d = parse_dtype(std::string_view(s).substr(0, open));
  if (!d) return std::nullopt;
  TensorType t;
  t.dtype = *d;
  std::string dims = s.substr(open + 1, s.size() - open - 2);
  size_t i = 0;
  while (i < dims.size()) {
    size_t j = dims.find(',', i);
    if (j == std::string::npos) j = dims.size();
    std::string part = dims.substr(i, j - i);
    if (part.empty() || part.size() > 18 || part.find_first_not_of("0123456789") != std::string::npos)
      return std::nullopt;
    t.shape.push_back(std::stoll(part));
    i = j + 1;
    if (j == dims.size() - 1) return std::nullopt;  // trailing comma
  }
  return t;
}

// Rewrites the GraphConstantID of every OpGraphConstantARM by `base`: spirv::encode numbers a
// module's graph constants 0, 1, 2, ... and the VGF ties GraphConstantID to the constant's index
// in the file's constant section.
void rebase_graph_constants(std::vector<uint32_t>& words, uint32_t base) {
  if (base == 0) return;
  spirv::Stream st = spirv::split_instructions(words);
  for (const spirv::Instruction& inst : st.instructions)
    if (inst.opcode() == kOpGraphConstantARM && inst.size() >= 4) words[inst.offset + 3] += base;
}

uint32_t format_for(const TensorType& t, const std::string& what) {
  std::optional<uint32_t> f = format_of(t.dtype);
  if (!f)
    throw Error(ErrorCode::kUnsupported,
                what + ": element type " + dtype_name(t.dtype) + " has no VkFormat, so it cannot be a VGF resource");
  return *f;
}

Buffer bytes_buffer(const std::string& s) {
  Buffer b = Buffer::allocate(s.size());
  if (!s.empty()) std::memcpy(b.mutable_data(), s.data(), s.size());
  return b;
}

// ---- from_module: the segmented container ----------------------------------------------------

class SegmentedBuilder {
 public:
  SegmentedBuilder(const weft::Module& m, const BuildOptions& o) : module_(m), g_(m.main()), options_(o) {}
  Container build();

 private:
  struct CustomNode {
    custom::Payload payload;
    std::vector<custom::BoundResource> bound;
  };
  struct Part {
    bool compute = false;
    std::vector<int> nodes;
  };

  // The node's label without the value sigil: its name, else its first output's name.
  std::string label(int node) const {
    const Node& n = g_.node(node);
    if (!n.name.empty()) return n.name;
    if (!n.outputs.empty()) return g_.value(n.outputs[0]).name;
    return "#" + std::to_string(node);
  }
  Location where(int node) const { return {.graph = g_.name(), .node = label(node)}; }
  bool constant_value(ValueId v) const {
    const Value& x = g_.value(v);
    return x.producer >= 0 && is_constant_op(g_.node(x.producer).op);
  }
  void check_custom(int node);
  void schedule();
  View graph_view(ValueId v) const;
  ResourceCategory category(ValueId v) const;
  uint32_t row(ValueId v, const View& view);
  void graph_segment(const Part& part, size_t part_index);
  void compute_segment(int node);

  const weft::Module& module_;
  const Graph& g_;
  const BuildOptions& options_;
  Container c_;
  std::map<int, CustomNode> customs_;
  std::vector<Part> parts_;
  std::vector<int> part_of_;  // node -> index in parts_ (-1: constant node)
  std::set<ValueId> model_inputs_, model_outputs_;
  std::map<std::pair<ValueId, decltype(View().key())>, uint32_t> rows_;
  std::map<ValueId, std::vector<uint32_t>> value_rows_;  // rows of each tensor, in creation order
  std::map<ValueId, int> last_reader_;                   // tensor -> the last part that reads it
  std::map<std::pair<ValueId, decltype(View().key())>, uint32_t> bound_constants_;  // -> constant index
  size_t graph_parts_ = 0;
};

void SegmentedBuilder::check_custom(int i) {
  const Node& n = g_.node(i);
  const Location w = where(i);
  const std::string head = "custom node '" + w.node + "' (operator '" + n.attr_str("operator_name") + "')";
  const char* fix = "compile the shader first (weft compile --custom-ops)";
  const std::string& attrs = n.attr_str("implementation_attrs");
  const size_t first = attrs.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || attrs[first] != '{')
    throw Error(ErrorCode::kUnsupported,
                head + " of domain '" + n.attr_str("domain_name") +
                    "' carries no shader payload: a VGF holds custom operators only as shaders (COMPUTE "
                    "segments, domain com.arm.VulkanCustomShader or a registered operator) and as "
                    "Arm.ExperimentalMLOperations CALL nodes; keep the model as .tosa or .weft, or register the "
                    "operator's shader (weft compile --custom-ops)",
                w);
  CustomNode cn;
  cn.payload = custom::parse_payload(attrs, w);
  const custom::Payload& p = cn.payload;
  if (p.language != custom::ShaderLanguage::kSpirv) {
    std::string what = p.language == custom::ShaderLanguage::kUnspecified
                           ? std::string("has no compiled shader (shader_language is not \"SPIR-V\")")
                           : std::string("carries ") + custom::language_name(p.language) + " source";
    throw Error(ErrorCode::kUnsupported,
                head + " " + what + "; a VGF COMPUTE segment needs SPIR-V and a dispatch shape: " + fix, w);
  }
  if (p.spirv.empty())
    throw Error(ErrorCode::kUnsupported, head + " has shader_language \"SPIR-V\" but no shader_code: " + fix, w);
  if (!p.dispatch)
    throw Error(ErrorCode::kUnsupported,
                head + " has no weft_dispatch (the workgroup counts of its COMPUTE segment): " + fix, w);
  if (p.push_constant_data.size() % 4 != 0)
    throw Error(ErrorCode::kVerify,
                head + ": its push constant block is " + std::to_string(p.push_constant_data.size()) +
                    " bytes; a Vulkan push constant range is a multiple of 4 bytes",
                {.graph = w.graph, .node = w.node, .operand = "push_constants"});
  std::vector<TensorType> ins, outs;
  for (ValueId v : n.inputs) ins.push_back(g_.value(v).type);
  for (ValueId v : n.outputs) outs.push_back(g_.value(v).type);
  cn.bound = custom::check_contract(p, ins, outs, w);
  // A shared (set, binding) binds one resource: the contract allows it for one tensor seen twice.
  std::map<std::pair<uint32_t, uint32_t>, ValueId> at;
  for (const custom::BoundResource& b : cn.bound) {
    ValueId v = (b.output ? n.outputs : n.inputs)[b.index];
    auto [it, fresh] = at.emplace(std::make_pair(b.set, b.binding), v);
    if (!fresh && it->second != v)
      throw Error(ErrorCode::kUnsupported,
                  head + ": input_" + std::to_string(b.index) + " shares descriptor set " + std::to_string(b.set) +
                      ", binding " + std::to_string(b.binding) + " with another input that is a different tensor ('" +
                      g_.value(it->second).name + "' and '" + g_.value(v).name + "'); one binding holds one tensor",
                  w);
  }
  customs_.emplace(i, std::move(cn));
}

// A topological order that takes every ready CUSTOM node (each its own segment), then every
// ready other node and those they make ready (one GRAPH segment), and repeats; among ready nodes
// the lowest index first. Running a CUSTOM node as early as possible only makes more graph nodes
// ready, so no order has fewer GRAPH segments.
void SegmentedBuilder::schedule() {
  const int nn = static_cast<int>(g_.nodes().size());
  std::vector<int> pending(nn, 0);
  std::vector<std::vector<int>> users(nn);
  std::set<int> ready_graph, ready_custom;
  for (int i = 0; i < nn; ++i) {
    const Node& n = g_.node(i);
    if (is_constant_op(n.op)) continue;
    std::set<int> producers;
    for (ValueId v : n.inputs) {
      int p = g_.value(v).producer;
      if (p >= 0 && !is_constant_op(g_.node(p).op)) producers.insert(p);
    }
    pending[i] = static_cast<int>(producers.size());
    for (int p : producers) users[p].push_back(i);
    if (producers.empty()) (n.op == Op::CUSTOM ? ready_custom : ready_graph).insert(i);
  }
  part_of_.assign(nn, -1);
  auto release = [&](int i) {
    for (int u : users[i])
      if (--pending[u] == 0) (g_.node(u).op == Op::CUSTOM ? ready_custom : ready_graph).insert(u);
  };
  while (!ready_graph.empty() || !ready_custom.empty()) {
    while (!ready_custom.empty()) {
      int i = *ready_custom.begin();
      ready_custom.erase(ready_custom.begin());
      part_of_[i] = static_cast<int>(parts_.size());
      parts_.push_back({true, {i}});
      release(i);
    }
    if (ready_graph.empty()) continue;
    Part p;
    while (!ready_graph.empty()) {
      int i = *ready_graph.begin();
      ready_graph.erase(ready_graph.begin());
      part_of_[i] = static_cast<int>(parts_.size());
      p.nodes.push_back(i);
      release(i);
    }
    parts_.push_back(std::move(p));
  }
}

View SegmentedBuilder::graph_view(ValueId v) const {
  const Value& x = g_.value(v);
  View view;
  try {
    view.format = format_for(x.type, "tensor '" + x.name + "'");
  } catch (const Error& e) {
    throw e.with_context({.graph = g_.name()});
  }
  return view;
}

ResourceCategory SegmentedBuilder::category(ValueId v) const {
  if (model_inputs_.count(v)) return ResourceCategory::kInput;
  if (model_outputs_.count(v)) return ResourceCategory::kOutput;
  if (constant_value(v)) return ResourceCategory::kConstant;
  return ResourceCategory::kIntermediate;
}

// The row of tensor `v` seen through `view`, created on first use.
uint32_t SegmentedBuilder::row(ValueId v, const View& view) {
  auto key = std::make_pair(v, view.key());
  auto it = rows_.find(key);
  if (it != rows_.end()) return it->second;
  const TensorType& t = g_.value(v).type;
  Resource r;
  r.vk_descriptor_type = view.descriptor_type;
  r.vk_format = view.format;
  r.category = category(v);
  r.shape = t.shape;
  // Images have no byte layout of their own (Vulkan lays them out); tensors and buffers are the
  // packed row-major bytes of the tensor.
  if (!view.image) {
    std::optional<size_t> es = element_size(view.format);
    r.strides = packed_strides(t.shape, es ? *es : storage_size(t.dtype));
  }
  r.sampler = view.sampler;
  c_.resources.push_back(std::move(r));
  uint32_t index = static_cast<uint32_t>(c_.resources.size() - 1);
  rows_.emplace(key, index);
  value_rows_[v].push_back(index);
  return index;
}

void SegmentedBuilder::graph_segment(const Part& part, size_t part_index) {
  const std::set<int> members(part.nodes.begin(), part.nodes.end());
  std::set<int> constants;
  std::vector<ValueId> inputs, outputs;
  std::set<ValueId> seen;
  for (int i : part.nodes) {
    for (ValueId v : g_.node(i).inputs) {
      int p = g_.value(v).producer;
      if (p >= 0 && is_constant_op(g_.node(p).op)) constants.insert(p);
      else if ((p < 0 || !members.count(p)) && seen.insert(v).second) inputs.push_back(v);
    }
  }
  for (int i : part.nodes) {
    for (ValueId v : g_.node(i).outputs) {
      auto last = last_reader_.find(v);
      if (model_outputs_.count(v) || (last != last_reader_.end() && last->second > static_cast<int>(part_index)))
        outputs.push_back(v);
    }
  }

  // A run of operators nothing reads computes nothing observable: it gets no segment (as SPIR-V
  // drops what no graph output uses).
  if (outputs.empty()) return;

  // The sub-graph: its inputs are what it reads from outside, its outputs what later segments and
  // the model read; constants it reads are copied in. Names are the model's.
  const std::string name = g_.name() + "_part" + std::to_string(graph_parts_++);
  Graph sub(name);
  std::map<ValueId, ValueId> to_sub;
  for (ValueId v : inputs) to_sub[v] = sub.add_input(g_.value(v).name, g_.value(v).type);
  auto copy = [&](int i) {
    Node n = g_.node(i);
    for (ValueId& v : n.inputs) v = to_sub.at(v);
    for (ValueId& v : n.outputs) v = to_sub[v] = sub.add_value(g_.value(v).name, g_.value(v).type);
    sub.add_node(std::move(n));
  };
  for (int i : constants) copy(i);
  for (int i : part.nodes) copy(i);
  for (ValueId v : outputs) sub.add_output(to_sub.at(v));
  weft::Module sm(std::move(sub));
  sm.set_profiles(module_.profiles());

  spirv::Binary bin = spirv::encode(sm, options_.encode);
  const uint32_t base = static_cast<uint32_t>(c_.constants.size());
  rebase_graph_constants(bin.words, base);
  detail::GraphModuleFacts f = detail::scan_graph_module(bin.words);
  const size_t ni = inputs.size(), no = outputs.size();
  if (!f.has_entry_point || f.interface.size() != ni + no)
    throw Error(ErrorCode::kUnsupported,
                "graph '" + name + "': its entry point has " + std::to_string(f.interface.size()) +
                    " interface variables for " + std::to_string(ni) + " inputs and " + std::to_string(no) +
                    " outputs; tensor-array interfaces cannot be placed in a VGF yet",
                {.graph = g_.name()});

  Segment seg;
  seg.type = ModuleType::kGraph;
  seg.name = name;
  seg.module_index = static_cast<uint32_t>(c_.modules.size());
  seg.dispatch_shape = {0, 0, 0};
  c_.modules.push_back({ModuleType::kGraph, name, f.entry_name, CodeType::kSpirv, std::move(bin.words), {}});
  std::map<uint32_t, std::vector<BindingSlot>> sets;
  for (size_t i = 0; i < ni + no; ++i) {
    const bool input = i < ni;
    ValueId v = input ? inputs[i] : outputs[i - ni];
    const detail::InterfaceVariable& var = detail::bound_variable(f, i);
    BindingSlot slot{*var.binding, row(v, graph_view(v))};
    sets[*var.set].push_back(slot);
    (input ? seg.inputs : seg.outputs).push_back(slot);
  }
  seg.set_infos = detail::set_infos_of(std::move(sets));
  detail::check_constant_ids(bin.constants);
  for (size_t i = 0; i < bin.constants.size(); ++i) {
    const spirv::GraphConstant& gc = bin.constants[i];
    const TensorType& t = gc.tensor.type();
    Resource r;
    r.vk_descriptor_type = kNoDescriptorType;
    r.vk_format = format_for(t, "constant '" + gc.name + "'");
    r.category = ResourceCategory::kConstant;
    r.shape = t.shape;
    r.strides = packed_strides(t.shape, *element_size(r.vk_format));
    c_.resources.push_back(std::move(r));
    c_.constants.push_back({static_cast<uint32_t>(c_.resources.size() - 1), -1, gc.tensor.buffer()});
    seg.constants.push_back(base + static_cast<uint32_t>(i));
  }
  c_.sequence.segments.push_back(std::move(seg));
}


void SegmentedBuilder::compute_segment(int i) {
  const Node& n = g_.node(i);
  const CustomNode& cn = customs_.at(i);
  const custom::Payload& p = cn.payload;
  const Location w = where(i);
  Segment seg;
  seg.type = ModuleType::kCompute;
  seg.name = w.node;
  seg.module_index = static_cast<uint32_t>(c_.modules.size());
  c_.modules.push_back({ModuleType::kCompute, n.attr_str("operator_name"), p.entry_point, CodeType::kSpirv, p.spirv, {}});
  seg.inputs.resize(n.inputs.size());
  seg.outputs.resize(n.outputs.size());
  std::map<uint32_t, std::map<uint32_t, uint32_t>> sets;  // set -> binding -> resource
  for (const custom::BoundResource& b : cn.bound) {
    const ValueId v = (b.output ? n.outputs : n.inputs)[b.index];
    const View view = compute_view(b);
    uint32_t r;
    if (constant_value(v)) {
      // A constant the shader reads: a CONSTANT resource holding its data, bound directly.
      const std::string what = "custom node '" + w.node + "': input_" + std::to_string(b.index) + " reads constant '" +
                               g_.value(v).name + "'";
      std::optional<size_t> es = element_size(view.format);
      if (view.image || !es)
        throw Error(ErrorCode::kUnsupported,
                    what + " as " + descriptor_type_name(view.descriptor_type) +
                        "; a constant bound to a COMPUTE segment is a CONSTANT resource holding the tensor's bytes, "
                        "which only a tensor or buffer view describes (feed it through a graph operator instead)",
                    w);
      auto key = std::make_pair(v, view.key());
      auto it = bound_constants_.find(key);
      if (it == bound_constants_.end()) {
        const TensorType& t = g_.value(v).type;
        Resource res;
        res.vk_descriptor_type = view.descriptor_type;
        res.vk_format = view.format;
        res.category = ResourceCategory::kConstant;
        res.shape = t.shape;
        res.strides = packed_strides(t.shape, *es);
        c_.resources.push_back(std::move(res));
        const Tensor& data = g_.node(g_.value(v).producer).attr_tensor("values");
        c_.constants.push_back({static_cast<uint32_t>(c_.resources.size() - 1), -1, data.buffer()});
        it = bound_constants_.emplace(key, static_cast<uint32_t>(c_.constants.size() - 1)).first;
      }
      r = c_.constants[it->second].mrt_index;
      if (std::find(seg.constants.begin(), seg.constants.end(), it->second) == seg.constants.end())
        seg.constants.push_back(it->second);
    } else {
      r = row(v, view);
    }
    sets[b.set][b.binding] = r;
    (b.output ? seg.outputs : seg.inputs)[b.index] = {b.binding, r};
  }
  for (const auto& [set, bindings] : sets) {
    DescriptorSetInfo d;
    d.set_index = set;
    for (const auto& [binding, r] : bindings) d.bindings.push_back({binding, r});
    seg.set_infos.push_back(std::move(d));
  }
  seg.dispatch_shape = {(*p.dispatch)[0], (*p.dispatch)[1], (*p.dispatch)[2]};
  if (!p.push_constant_data.empty())
    seg.push_constant_ranges.push_back({kShaderStageCompute, 0, static_cast<uint32_t>(p.push_constant_data.size())});

  // Weft's record: the node as written, so that reading the container back is exact.
  Json j;
  j["weft_custom_op"] = kRecordVersion;
  j["graph"] = g_.name();
  j["profiles"] = module_.profiles();
  j["node"] = n.name;
  j["operator_name"] = n.attr_str("operator_name");
  j["domain_name"] = n.attr_str("domain_name");
  j["implementation_attrs"] = n.attr_str("implementation_attrs");
  auto operands = [&](const std::vector<ValueId>& ids) {
    Json a = Json::array();
    for (ValueId v : ids) a.push_back(Json{{"name", g_.value(v).name}, {"type", g_.value(v).type.str()}});
    return a;
  };
  j["inputs"] = operands(n.inputs);
  j["outputs"] = operands(n.outputs);
  std::string text;
  try {
    text = j.dump();
  } catch (const nlohmann::json::exception&) {
    throw Error(ErrorCode::kUnsupported,
                "custom node '" + w.node + "': its names or attributes are not UTF-8 text, which Weft's record of "
                "the node (JSON) needs",
                w);
  }
  Resource rec;
  rec.vk_descriptor_type = kNoDescriptorType;
  rec.vk_format = format::kR8Uint;
  rec.category = ResourceCategory::kConstant;
  rec.shape = {static_cast<int64_t>(text.size())};
  rec.strides = {1};
  c_.resources.push_back(std::move(rec));
  c_.constants.push_back({static_cast<uint32_t>(c_.resources.size() - 1), -1, bytes_buffer(text)});
  seg.constants.push_back(static_cast<uint32_t>(c_.constants.size() - 1));
  c_.sequence.segments.push_back(std::move(seg));
}

Container SegmentedBuilder::build() {
  verify_or_throw(module_);  // as spirv::encode does for a single graph: the split assumes a valid graph
  if (module_.graphs().size() != 1)
    throw Error(ErrorCode::kUnsupported,
                "the module has " + std::to_string(module_.graphs().size()) +
                    " graphs; a model with custom operators is placed in a VGF from its entry graph alone",
                {.graph = g_.name()});
  for (int i = 0; i < static_cast<int>(g_.nodes().size()); ++i)
    if (g_.node(i).op == Op::CUSTOM) check_custom(i);
  model_inputs_.insert(g_.inputs().begin(), g_.inputs().end());
  for (ValueId v : g_.outputs()) {
    const std::string what = "output '" + g_.value(v).name + "'";
    if (!model_outputs_.insert(v).second)
      throw Error(ErrorCode::kUnsupported, what + " is returned twice; with custom operators each output is one tensor",
                  {.graph = g_.name()});
    if (model_inputs_.count(v) || constant_value(v))
      throw Error(ErrorCode::kUnsupported,
                  what + " is " + (model_inputs_.count(v) ? "an input" : "a constant") +
                      " of the graph; with custom operators every output must be computed by a segment",
                  {.graph = g_.name()});
  }
  schedule();
  for (int i = 0; i < static_cast<int>(g_.nodes().size()); ++i) {
    if (part_of_[i] < 0) continue;
    for (ValueId v : g_.node(i).inputs) {
      int& last = last_reader_.try_emplace(v, -1).first->second;
      last = std::max(last, part_of_[i]);
    }
  }

  c_.header.vk_header_version = kVkHeaderVersion;
  // The model's inputs and outputs first, as tensors (what an application binds), then each
  // segment's rows in sequence order.
  for (ValueId v : g_.inputs()) row(v, graph_view(v));
  for (ValueId v : g_.outputs()) row(v, graph_view(v));
  for (size_t k = 0; k < parts_.size(); ++k) {
    if (parts_[k].compute) compute_segment(parts_[k].nodes[0]);
    else graph_segment(parts_[k], k);
  }

  // Rows of one tensor seen through several views share an alias group, numbered in the order
  // of the tensors' first rows.
  std::vector<std::pair<uint32_t, ValueId>> firsts;
  for (const auto& [v, rows] : value_rows_)
    if (rows.size() > 1) firsts.push_back({rows.front(), v});
  std::sort(firsts.begin(), firsts.end());
  uint32_t group = 0;
  for (const auto& [first, v] : firsts) {
    for (uint32_t r : value_rows_[v]) c_.resources[r].alias_group_id = group;
    ++group;
  }

  // The model's slots are numbered as a single-graph model of the same signature numbers them:
  // inputs 0..n-1, then outputs.
  const uint32_t ni = static_cast<uint32_t>(g_.inputs().size());
  for (uint32_t i = 0; i < ni; ++i) {
    ValueId v = g_.inputs()[i];
    c_.sequence.inputs.push_back({i, row(v, graph_view(v))});
    c_.sequence.input_names.push_back(g_.value(v).name);
  }
  for (uint32_t j = 0; j < g_.outputs().size(); ++j) {
    ValueId v = g_.outputs()[j];
    c_.sequence.outputs.push_back({ni + j, row(v, graph_view(v))});
    c_.sequence.output_names.push_back(g_.value(v).name);
  }
  return std::move(c_);
}

// ---- The record ----------------------------------------------------------------------------------

[[noreturn]] void bad(std::string_view source, std::string msg) { fail(ErrorCode::kVerify, source, std::move(msg)); }

std::string segment_label(size_t i, const Segment& s) { return "segment " + std::to_string(i) + " '" + s.name + "'"; }

bool is_record(const Container& c, uint32_t k) {
  if (k >= c.constants.size()) return false;
  const Constant& cst = c.constants[k];
  if (cst.mrt_index >= c.resources.size()) return false;
  const Resource& r = c.resources[cst.mrt_index];
  return r.category == ResourceCategory::kConstant && r.vk_descriptor_type == kNoDescriptorType &&
         r.vk_format == format::kR8Uint && r.shape.size() == 1 && cst.data.size() >= kRecordPrefix.size() &&
         std::memcmp(cst.data.data(), kRecordPrefix.data(), kRecordPrefix.size()) == 0;
}

CustomOpRecord parse_record(const Container& c, uint32_t k, std::string_view source, const std::string& seg) {
  const Buffer& data = c.constants[k].data;
  const std::string where = seg + ": its Weft record (constant " + std::to_string(k) + ")";
  Json j = Json::parse(data.data(), data.data() + data.size(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) bad(source, where + " is not a JSON object");
  const Json& version = j["weft_custom_op"];
  if (!version.is_number_integer())
    bad(source, where + ": weft_custom_op is not an integer version");
  if (version.get<int64_t>() != kRecordVersion)
    fail(ErrorCode::kUnsupported, source,
         where + " has version " + version.dump() + "; this build reads version " + std::to_string(kRecordVersion));
  auto str = [&](const char* key) -> std::string {
    auto it = j.find(key);
    if (it == j.end() || !it->is_string()) bad(source, where + ": '" + key + "' is missing or not a string");
    return it->get<std::string>();
  };
  CustomOpRecord r;
  r.constant = k;
  r.graph = str("graph");
  r.node = str("node");
  r.operator_name = str("operator_name");
  r.domain_name = str("domain_name");
  r.implementation_attrs = str("implementation_attrs");
  auto pro = j.find("profiles");
  if (pro == j.end() || !pro->is_number_unsigned() || pro->get<uint64_t>() > kAllProfiles)
    bad(source, where + ": 'profiles' is missing or not a set of TOSA profiles");
  r.profiles = static_cast<ProfileSet>(pro->get<uint64_t>());
  auto operands = [&](const char* key, std::vector<CustomOpRecord::Operand>& out) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_array()) bad(source, where + ": '" + key + "' is missing or not an array");
    for (size_t i = 0; i < it->size(); ++i) {
      const Json& o = (*it)[i];
      const std::string at = where + ": " + key + "[" + std::to_string(i) + "]";
      if (!o.is_object() || !o.contains("name") || !o["name"].is_string() || !o.contains("type") ||
          !o["type"].is_string())
        bad(source, at + " is not {\"name\": string, \"type\": string}");
      std::optional<TensorType> t = parse_type_text(o["type"].get<std::string>());
      if (!t) bad(source, at + ": type '" + o["type"].get<std::string>() + "' is not a tensor type such as f32[1,4]");
      out.push_back({o["name"].get<std::string>(), *t});
    }
  };
  operands("inputs", r.inputs);
  operands("outputs", r.outputs);
  return r;
}

}  // namespace

namespace detail {

bool has_custom_nodes(const weft::Module& module) {
  const Graph& g = module.main();
  return std::any_of(g.nodes().begin(), g.nodes().end(), [](const Node& n) { return n.op == Op::CUSTOM; });
}

Container build_segmented(const weft::Module& module, const BuildOptions& options) {
  return SegmentedBuilder(module, options).build();
}

uint64_t storage_of(const Container& c, uint32_t row) {
  uint32_t group = c.resources.at(row).alias_group_id;
  return group == kNoAliasGroup ? row : (uint64_t{1} << 32) | group;
}

}  // namespace detail

std::optional<CustomOpRecord> custom_op_record(const Container& c, size_t segment, std::string_view source) {
  if (segment >= c.sequence.segments.size())
    throw Error(ErrorCode::kNotFound, "segment " + std::to_string(segment) + " does not exist (the sequence has " +
                                          std::to_string(c.sequence.segments.size()) + ")",
                {.file = std::string(source)});
  const Segment& s = c.sequence.segments[segment];
  if (s.type != ModuleType::kCompute) return std::nullopt;
  const std::string seg = segment_label(segment, s);
  std::optional<uint32_t> found;
  for (uint32_t k : s.constants) {
    if (!is_record(c, k)) continue;
    if (found && *found != k)
      bad(source, seg + ": constants " + std::to_string(*found) + " and " + std::to_string(k) +
                      " are both Weft records of a custom operator; a segment has one");
    found = k;
  }
  if (!found) return std::nullopt;
  CustomOpRecord rec = parse_record(c, *found, source, seg);

  // The payload, and the tables it must agree with.
  const std::string label = rec.node.empty() && !rec.outputs.empty() ? rec.outputs[0].name : rec.node;
  custom::Payload p;
  try {
    p = custom::parse_payload(rec.implementation_attrs, {.graph = rec.graph, .node = label});
  } catch (const Error& e) {
    bad(source, seg + ": the implementation_attrs of its Weft record: " + e.message());
  }
  if (p.language != custom::ShaderLanguage::kSpirv || p.spirv.empty() || !p.dispatch)
    bad(source, seg + ": the implementation_attrs of its Weft record has no compiled shader (shader_language "
                      "\"SPIR-V\", shader_code and weft_dispatch)");
  if (s.module_index >= c.modules.size())
    bad(source, seg + ": module_index " + std::to_string(s.module_index) + " names no module");
  const Module& m = c.modules[s.module_index];
  const std::string mod = seg + ": module " + std::to_string(s.module_index) + " '" + m.name + "'";
  if (m.type != ModuleType::kCompute) bad(source, mod + " is not a COMPUTE module");
  if (m.code_type != CodeType::kSpirv || m.spirv != p.spirv)
    bad(source, mod + ": its code is not the SPIR-V of the record's shader_code (" +
                    std::to_string(p.spirv.size()) + " words)");
  if (m.entry_point != p.entry_point)
    bad(source, mod + ": entry_point '" + m.entry_point + "' is not the record's entry_point '" + p.entry_point + "'");
  if (m.name != rec.operator_name)
    bad(source, mod + ": name '" + m.name + "' is not the record's operator_name '" + rec.operator_name + "'");
  const std::vector<uint32_t> dispatch{(*p.dispatch)[0], (*p.dispatch)[1], (*p.dispatch)[2]};
  if (s.dispatch_shape != dispatch)
    bad(source, seg + ": dispatch_shape " + u32_list(s.dispatch_shape) + " is not the record's weft_dispatch " +
                    u32_list(dispatch));
  std::vector<PushConstantRange> ranges;
  if (!p.push_constant_data.empty())
    ranges.push_back({kShaderStageCompute, 0, static_cast<uint32_t>(p.push_constant_data.size())});
  if (s.push_constant_ranges != ranges)
    bad(source, seg + ": push_constant_ranges do not describe the record's " +
                    std::to_string(p.push_constant_data.size()) + "-byte push constant block (" +
                    (ranges.empty() ? std::string("expected none")
                                    : "expected one range: stage_flags 0x20, offset 0, size " +
                                          std::to_string(ranges[0].size)) +
                    ")");

  std::vector<TensorType> ins, outs;
  for (const auto& o : rec.inputs) ins.push_back(o.type);
  for (const auto& o : rec.outputs) outs.push_back(o.type);
  std::vector<custom::BoundResource> bound;
  try {
    bound = custom::check_contract(p, ins, outs, {.graph = rec.graph, .node = label});
  } catch (const Error& e) {
    bad(source, seg + ": its Weft record: " + e.message());
  }
  if (s.inputs.size() != rec.inputs.size() || s.outputs.size() != rec.outputs.size())
    bad(source, seg + ": " + std::to_string(s.inputs.size()) + " inputs and " + std::to_string(s.outputs.size()) +
                    " outputs for the record's " + std::to_string(rec.inputs.size()) + " and " +
                    std::to_string(rec.outputs.size()));
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> slots;
  for (size_t d = 0; d < s.set_infos.size(); ++d)
    for (const BindingSlot& b : s.set_infos[d].bindings) slots[{s.set_number(d), b.binding}] = b.mrt_index;
  std::set<std::pair<uint32_t, uint32_t>> used;
  for (const custom::BoundResource& b : bound) {
    const std::string key = (b.output ? "output_" : "input_") + std::to_string(b.index);
    const std::string list = std::string(b.output ? "outputs[" : "inputs[") + std::to_string(b.index) + "]";
    const BindingSlot& slot = (b.output ? s.outputs : s.inputs)[b.index];
    const std::string at = "set " + std::to_string(b.set) + ", binding " + std::to_string(b.binding);
    if (slot.binding != b.binding)
      bad(source, seg + ": " + list + " has binding " + std::to_string(slot.binding) + "; the record's " + key +
                      "_binding is " + std::to_string(b.binding));
    auto it = slots.find({b.set, b.binding});
    if (it == slots.end())
      bad(source, seg + ": set_infos have no slot for " + at + " (the record's " + key + ")");
    if (it->second != slot.mrt_index)
      bad(source, seg + ": " + at + " is bound to resource " + std::to_string(it->second) + " but " + list +
                      " names resource " + std::to_string(slot.mrt_index));
    used.insert({b.set, b.binding});
    if (slot.mrt_index >= c.resources.size())
      bad(source, seg + ": " + list + ": mrt_index " + std::to_string(slot.mrt_index) + " names no resource");
    const Resource& r = c.resources[slot.mrt_index];
    const View v = compute_view(b);
    const std::string res = seg + ": resource " + std::to_string(slot.mrt_index) + " (" + at + ")";
    if (r.vk_descriptor_type != v.descriptor_type)
      bad(source, res + ": vk_descriptor_type " + descriptor_type_name(r.vk_descriptor_type) + " is not the record's " +
                      key + "_vkdescriptortype " + descriptor_type_name(v.descriptor_type));
    if (r.vk_format != v.format)
      bad(source, res + ": vk_format " + format_name(r.vk_format) + " is not the record's " + key + "_vkformat " +
                      format_name(v.format));
    if (r.shape != b.tensor.shape)
      bad(source, res + ": shape " + shape_text(r.shape) + " is not the shape of the record's " + key + " " +
                      b.tensor.str());
    if (r.sampler != v.sampler)
      bad(source, res + ": its sampler is not the one the record's " + key + " describes (" +
                      (v.sampler ? "filter " + b.filter + ", address mode " + b.address_mode : std::string("none")) +
                      ")");
  }
  for (const auto& [at, r] : slots)
    if (!used.count(at))
      bad(source, seg + ": set_infos bind set " + std::to_string(at.first) + ", binding " + std::to_string(at.second) +
                      " (resource " + std::to_string(r) + "), which the record's payload does not describe");
  return rec;
}

// ---- COMPUTE segments as Arm's tools write them ------------------------------------------------------

namespace {

std::string base64(const std::vector<uint32_t>& words) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<uint8_t> b(words.size() * 4);
  for (size_t i = 0; i < words.size(); ++i)
    for (int k = 0; k < 4; ++k) b[4 * i + static_cast<size_t>(k)] = static_cast<uint8_t>(words[i] >> (8 * k));
  std::string out;
  for (size_t i = 0; i < b.size(); i += 3) {
    uint32_t v = uint32_t{b[i]} << 16 | (i + 1 < b.size() ? uint32_t{b[i + 1]} << 8 : 0) | (i + 2 < b.size() ? b[i + 2] : 0);
    out += kAlphabet[v >> 18 & 63];
    out += kAlphabet[v >> 12 & 63];
    out += i + 1 < b.size() ? kAlphabet[v >> 6 & 63] : '=';
    out += i + 2 < b.size() ? kAlphabet[v & 63] : '=';
  }
  return out;
}

// The tensor a resource row carries: its shape, and the element type of its format (a tensor
// element format, or the component type of a packed image format: the shader reads raw bytes).
std::optional<TensorType> operand_type(const Resource& r) {
  if (std::optional<TensorType> t = tensor_type(r)) return t;
  const custom::FormatInfo* f = custom::find_format(r.vk_format);
  if (!f || std::any_of(r.shape.begin(), r.shape.end(), [](int64_t d) { return d < 0; })) return std::nullopt;
  DType dt;
  switch (f->component_bytes * (f->kind == 'f' ? 1 : -1)) {
    case 4: dt = DType::kFp32; break;
    case 2: dt = DType::kFp16; break;
    case -1: dt = DType::kInt8; break;
    case -2: dt = DType::kInt16; break;
    case -4: dt = DType::kInt32; break;
    default: return std::nullopt;
  }
  return TensorType{dt, r.shape};
}

}  // namespace

// A COMPUTE segment without Weft's record, as Arm's model converter writes one from a
// com.arm.VulkanCustomShader operator: the record (and the payload the converter was given) rebuilt
// from the tables: the module's code and entry point, dispatch_shape as the dispatch count (the
// converter copies the payload's workgroup_sizes there and every runtime dispatches it), each slot's
// binding, set, descriptor type, format and sampler. Push constant values are not in a container
// (the Scenario Runner takes them from its scenario), so a segment with a range cannot run here.
CustomOpRecord arm_compute_record(const Container& c, size_t si, std::string_view source) {
  const Segment& s = c.sequence.segments.at(si);
  const std::string seg = segment_label(si, s);
  const Location file{.file = std::string(source)};
  if (s.module_index >= c.modules.size())
    throw Error(ErrorCode::kVerify, seg + ": module_index " + std::to_string(s.module_index) + " names no module", file);
  const Module& m = c.modules[s.module_index];
  if (is_placeholder(m))
    throw Error(ErrorCode::kUnsupported,
                seg + ": module " + std::to_string(s.module_index) + " '" + m.name +
                    "' is a placeholder without code (the application supplies the shader when it loads the model; "
                    "Arm's Scenario Runner takes it from shader_substitutions): there is no shader to run",
                file);
  if (!s.push_constant_ranges.empty())
    throw Error(ErrorCode::kUnsupported,
                seg + ": it has a push constant range of " + std::to_string(s.push_constant_ranges[0].size) +
                    " bytes but the container does not hold the values (Arm's Scenario Runner takes them from its "
                    "scenario); Weft runs such segments only from its own record (weft compile --custom-ops)",
                file);
  if (s.dispatch_shape.size() != 3)
    throw Error(ErrorCode::kVerify, seg + ": a COMPUTE segment needs a 3-entry dispatch_shape", file);
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> set_of;  // (binding, mrt_index) -> set number
  for (size_t d = 0; d < s.set_infos.size(); ++d)
    for (const BindingSlot& b : s.set_infos[d].bindings) set_of.emplace(std::pair{b.binding, b.mrt_index}, s.set_number(d));
  Json payload;
  payload["entry_point"] = m.entry_point.empty() ? "main" : m.entry_point;
  payload["workgroup_sizes"] = s.dispatch_shape;
  payload["weft_dispatch"] = s.dispatch_shape;
  payload["weft_dispatch_rule"] = "the container's dispatch_shape (workgroup counts)";
  switch (m.code_type) {
    case CodeType::kSpirv:
      payload["shader_language"] = "SPIR-V";
      payload["shader_code"] = base64(m.spirv);
      break;
    case CodeType::kGlsl: payload["shader_language"] = "GLSL"; payload["shader_code"] = m.source; break;
    case CodeType::kHlsl: payload["shader_language"] = "HLSL"; payload["shader_code"] = m.source; break;
    default: break;
  }
  CustomOpRecord rec;
  rec.operator_name = m.name.empty() ? s.name : m.name;
  rec.domain_name = "com.arm.VulkanCustomShader";
  rec.node = s.name;
  auto operands = [&](const std::vector<BindingSlot>& slots, bool output) {
    std::vector<CustomOpRecord::Operand> out;
    for (size_t i = 0; i < slots.size(); ++i) {
      const std::string key = std::string(output ? "output_" : "input_") + std::to_string(i) + "_";
      const std::string what = seg + ": " + (output ? "outputs[" : "inputs[") + std::to_string(i) + "]";
      if (slots[i].mrt_index >= c.resources.size())
        throw Error(ErrorCode::kVerify, what + ": mrt_index " + std::to_string(slots[i].mrt_index) + " names no resource", file);
      const Resource& r = c.resources[slots[i].mrt_index];
      std::optional<TensorType> t = operand_type(r);
      if (!t)
        throw Error(ErrorCode::kUnsupported,
                    what + ": resource " + std::to_string(slots[i].mrt_index) + " (" + vk_name(VkEnum::kFormat, r.vk_format) +
                        " " + shape_text(r.shape) + ") is not a tensor, buffer or image format Weft's shaders take",
                    file);
      auto set = set_of.find({slots[i].binding, slots[i].mrt_index});
      payload[key + "binding"] = slots[i].binding;
      payload[key + "descriptorset"] = set == set_of.end() ? 0u : set->second;
      payload[key + "vkdescriptortype"] = vk_name(VkEnum::kDescriptorType, r.vk_descriptor_type);
      payload[key + "vkformat"] = vk_name(VkEnum::kFormat, r.vk_format);
      if (r.sampler) {
        payload[key + "weft_filter"] = r.sampler->min_filter == 1 ? "linear" : "nearest";
        static const char* kModes[] = {"repeat", "mirrored_repeat", "clamp_to_edge", "clamp_to_border"};
        payload[key + "weft_address_mode"] = r.sampler->address_mode_u < 4 ? kModes[r.sampler->address_mode_u] : "clamp_to_edge";
      }
      out.push_back({s.name + (output ? "_out" : "_in") + std::to_string(i), *t});
    }
    return out;
  };
  rec.inputs = operands(s.inputs, false);
  rec.outputs = operands(s.outputs, true);
  rec.implementation_attrs = payload.dump();
  return rec;
}

// ---- The whole sequence back to one module ---------------------------------------------------------

weft::Module to_module(const Container& c, std::string_view source) {
  const Sequence& q = c.sequence;
  if (q.segments.size() == 1 && q.segments[0].type == ModuleType::kGraph) {
    // The model's inputs and outputs take the container's names (Arm's converter writes them in
    // input_names / output_names; the SPIR-V names only its interface variables).
    weft::Module m = to_module(c, 0, source);
    detail::name_interface(c, m, source);
    return m;
  }
  const Location file{.file = std::string(source)};
  if (q.segments.empty()) throw Error(ErrorCode::kVerify, "the model sequence has no segments", file);

  std::vector<std::optional<CustomOpRecord>> records(q.segments.size());
  std::optional<std::string> graph_name;
  std::optional<ProfileSet> profiles;
  for (size_t si = 0; si < q.segments.size(); ++si) {
    if (q.segments[si].type != ModuleType::kCompute) continue;
    records[si] = custom_op_record(c, si, source);
    if (!records[si]) records[si] = arm_compute_record(c, si, source);  // as Arm's tools write them
    if (!graph_name && !records[si]->graph.empty()) {  // Weft's record names the model's graph
      graph_name = records[si]->graph;
      profiles = records[si]->profiles;
    }
  }

  auto row_at = [&](uint32_t row, const std::string& what) -> const Resource& {
    if (row >= c.resources.size())
      throw Error(ErrorCode::kVerify, what + ": mrt_index " + std::to_string(row) + " names no resource", file);
    return c.resources[row];
  };
  auto storage = [&](uint32_t row, const std::string& what) {
    row_at(row, what);
    return detail::storage_of(c, row);
  };

  Graph g(graph_name.value_or("main"));
  std::map<uint64_t, ValueId> value_of;
  for (size_t i = 0; i < q.inputs.size(); ++i) {
    const std::string what = "model sequence: inputs[" + std::to_string(i) + "]";
    const Resource& r = row_at(q.inputs[i].mrt_index, what);
    std::optional<TensorType> t = tensor_type(r);
    if (!t)
      throw Error(ErrorCode::kUnsupported,
                  what + ": resource " + std::to_string(q.inputs[i].mrt_index) + " (" + format_name(r.vk_format) +
                      " " + shape_text(r.shape) + ") is not a tensor type Weft knows",
                  file);
    std::string name = i < q.input_names.size() ? q.input_names[i] : "input" + std::to_string(i);
    value_of[storage(q.inputs[i].mrt_index, what)] = g.add_input(name, *t);
  }

  // A constant node of `src` whose name `g` already has, as the same constant: reuse it.
  auto same_constant = [&](const Node& n, const std::string& name) -> std::optional<ValueId> {
    std::optional<ValueId> id = g.find_value(name);
    if (!id || g.value(*id).producer < 0) return std::nullopt;
    const Node& e = g.node(g.value(*id).producer);
    if (e.op != n.op || e.attrs.size() != n.attrs.size()) return std::nullopt;
    for (size_t k = 0; k < e.attrs.size(); ++k)
      if (!same_attr(e.attrs[k], n.attrs[k])) return std::nullopt;
    return id;
  };
  auto fresh_name = [&](const std::string& name) { return g.find_value(name) ? g.unique_name(name) : name; };

  for (size_t si = 0; si < q.segments.size(); ++si) {
    const Segment& s = q.segments[si];
    const std::string seg = segment_label(si, s);
    if (s.type == ModuleType::kGraph) {
      weft::Module sub = to_module(c, si, source);
      if (!profiles) profiles = sub.profiles();
      if (!graph_name) {
        graph_name = sub.main().name();
        g.set_name(*graph_name);
      }
      const Graph& sg = sub.main();
      detail::GraphModuleFacts f = detail::scan_graph_module(c.modules.at(s.module_index).spirv);
      const size_t ni = sg.inputs().size(), no = sg.outputs().size();
      if (f.interface.size() != ni + no)
        throw Error(ErrorCode::kUnsupported,
                    seg + ": its entry point has " + std::to_string(f.interface.size()) + " interface variables for " +
                        std::to_string(ni) + " inputs and " + std::to_string(no) +
                        " outputs; tensor-array interfaces are not decoded across segments",
                    file);
      std::map<std::pair<uint32_t, uint32_t>, uint32_t> slots;
      for (size_t d = 0; d < s.set_infos.size(); ++d)
        for (const BindingSlot& b : s.set_infos[d].bindings) slots[{s.set_number(d), b.binding}] = b.mrt_index;
      auto resource_of = [&](size_t k) {
        const detail::InterfaceVariable& var = f.interface[k];
        auto it = slots.find({var.set.value_or(0), var.binding.value_or(0)});
        if (!var.set || !var.binding || it == slots.end())
          throw Error(ErrorCode::kVerify,
                      seg + ": interface variable %" + std::to_string(var.id) + " has no binding slot", file);
        return it->second;
      };
      std::map<ValueId, ValueId> map;
      for (size_t k = 0; k < ni; ++k) {
        const uint32_t r = resource_of(k);
        const Value& in = sg.value(sg.inputs()[k]);
        auto it = value_of.find(storage(r, seg));
        if (it == value_of.end())
          throw Error(ErrorCode::kVerify,
                      seg + ": input " + std::to_string(k) + " ('" + in.name + "') reads resource " +
                          std::to_string(r) + ", which is no model input and no earlier segment writes",
                      file);
        if (g.value(it->second).type != in.type)
          throw Error(ErrorCode::kVerify,
                      seg + ": input " + std::to_string(k) + " ('" + in.name + "') is " + in.type.str() +
                          " but resource " + std::to_string(r) + " holds " + g.value(it->second).type.str(),
                      file);
        map[sg.inputs()[k]] = it->second;
      }
      for (const Node& sn : sg.nodes()) {
        if (is_constant_op(sn.op) && sn.outputs.size() == 1) {
          if (std::optional<ValueId> id = same_constant(sn, sg.value(sn.outputs[0]).name)) {
            map[sn.outputs[0]] = *id;
            continue;
          }
        }
        Node n = sn;
        for (ValueId& v : n.inputs) v = map.at(v);
        for (ValueId& v : n.outputs) v = map[v] = g.add_value(fresh_name(sg.value(v).name), sg.value(v).type);
        g.add_node(std::move(n));
      }
      for (size_t k = 0; k < no; ++k) {
        const uint32_t r = resource_of(ni + k);
        if (!value_of.emplace(storage(r, seg), map.at(sg.outputs()[k])).second)
          throw Error(ErrorCode::kVerify,
                      seg + ": output " + std::to_string(k) + " writes resource " + std::to_string(r) +
                          ", which holds a tensor already",
                      file);
      }
      continue;
    }

    const CustomOpRecord& rec = *records[si];
    Node n;
    n.op = Op::CUSTOM;
    n.name = rec.node;
    n.attrs = make_attrs(Op::CUSTOM, {{"operator_name", rec.operator_name},
                                      {"domain_name", rec.domain_name},
                                      {"implementation_attrs", rec.implementation_attrs}});
    for (size_t i = 0; i < rec.inputs.size(); ++i) {
      const uint32_t r = s.inputs[i].mrt_index;
      const CustomOpRecord::Operand& o = rec.inputs[i];
      const std::string what = seg + ": inputs[" + std::to_string(i) + "] ('" + o.name + "')";
      const uint64_t st = storage(r, what);
      auto it = value_of.find(st);
      if (it == value_of.end() && c.resources[r].category == ResourceCategory::kConstant) {
        // A constant the shader reads: its data is the constant of that resource.
        const Constant* k = nullptr;
        for (const Constant& x : c.constants)
          if (x.mrt_index == r) k = k ? k : &x;
        if (!k || k->data.size() != o.type.byte_size())
          throw Error(ErrorCode::kVerify,
                      what + ": resource " + std::to_string(r) + " is a CONSTANT without " + o.type.str() + " data",
                      file);
        Node cn;
        cn.op = Op::CONST;
        cn.attrs = make_attrs(Op::CONST, {{"values", Tensor(o.type, k->data)}});
        std::optional<ValueId> id = same_constant(cn, o.name);
        if (!id) {
          cn.outputs = {g.add_value(fresh_name(o.name), o.type)};
          g.add_node(cn);
          id = cn.outputs[0];
        }
        it = value_of.emplace(st, *id).first;
      }
      if (it == value_of.end())
        throw Error(ErrorCode::kVerify,
                    what + " reads resource " + std::to_string(r) + ", which is no model input and no earlier segment "
                    "writes",
                    file);
      if (g.value(it->second).type != o.type)
        throw Error(ErrorCode::kVerify,
                    what + " is " + o.type.str() + " in the record but resource " + std::to_string(r) + " holds " +
                        g.value(it->second).type.str(),
                    file);
      n.inputs.push_back(it->second);
    }
    for (size_t j = 0; j < rec.outputs.size(); ++j) {
      const CustomOpRecord::Operand& o = rec.outputs[j];
      ValueId id = g.add_value(fresh_name(o.name), o.type);
      n.outputs.push_back(id);
      const uint32_t r = s.outputs[j].mrt_index;
      if (!value_of.emplace(storage(r, seg), id).second)
        throw Error(ErrorCode::kVerify,
                    seg + ": outputs[" + std::to_string(j) + "] writes resource " + std::to_string(r) +
                        ", which holds a tensor already",
                    file);
    }
    g.add_node(std::move(n));
  }

  for (size_t j = 0; j < q.outputs.size(); ++j) {
    const std::string what = "model sequence: outputs[" + std::to_string(j) + "]";
    auto it = value_of.find(storage(q.outputs[j].mrt_index, what));
    if (it == value_of.end())
      throw Error(ErrorCode::kVerify,
                  what + ": resource " + std::to_string(q.outputs[j].mrt_index) + " is written by no segment", file);
    if (j < q.output_names.size() && g.value(it->second).name != q.output_names[j] &&
        !g.find_value(q.output_names[j]))
      g.rename_value(it->second, q.output_names[j]);
    g.add_output(it->second);
  }
  weft::Module m(std::move(g));
  if (profiles) m.set_profiles(*profiles);
  std::vector<Error> errors = verify_module(m);
  if (!errors.empty())
    throw Error(ErrorCode::kVerify, std::string("the decoded model does not verify: ") + errors.front().what(), file);
  return m;
}

}  // namespace weft::vgf
