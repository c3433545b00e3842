// The Vulkan backend: runs tosa.CUSTOM nodes that carry a compiled Vulkan compute shader
// (implementation_attrs with SPIR-V, resources, push constants and a dispatch shape) on a Vulkan
// device through runtime/vulkan. The backend takes whole regions (Grouping::kRegions): every run of
// consecutive shader nodes is one vk::Program, one submission per run, whose intermediates stay on
// the device; the region's inputs are uploaded and its outputs downloaded, so that CPU-run
// neighbours read ordinary host memory.
#include <algorithm>
#include <map>
#include <mutex>

#include "backends/backend.h"
#include "runtime/vulkan/vulkan.h"
#include "weft/custom.h"

namespace weft::backend {
namespace {

struct Checked {
  custom::Payload payload;
  std::vector<custom::BoundResource> resources;
};

// The payload of CUSTOM node `node`, validated, with its resources bound by the contract.
Checked check_node(const Graph& g, int node) {
  const Node& n = g.node(node);
  const Location where{.graph = g.name(), .node = g.node_label(node), .operand = "implementation_attrs"};
  Checked c;
  c.payload = custom::parse_payload(n.attr_str("implementation_attrs"), where);
  if (c.payload.language != custom::ShaderLanguage::kSpirv || c.payload.spirv.empty())
    throw Error(ErrorCode::kUnsupported,
                "the shader is not compiled (shader_language \"" + std::string(custom::language_name(c.payload.language)) +
                    "\"); weft compile turns GLSL/HLSL into SPIR-V",
                where);
  if (!c.payload.dispatch) throw Error(ErrorCode::kUnsupported, "the payload has no dispatch shape (weft_dispatch)", where);
  std::vector<TensorType> ins, outs;
  for (ValueId v : n.inputs) ins.push_back(g.value(v).type);
  for (ValueId v : n.outputs) outs.push_back(g.value(v).type);
  c.resources = custom::check_contract(c.payload, ins, outs, where);
  return c;
}

// A composite's dispatches as one vk::Program: composite inputs are external-input slots (one per
// distinct value), composite outputs external-output slots, every other value an internal slot that
// stays on the device. An output that later members also read is read there from its slot.
class VulkanKernel final : public Kernel {
 public:
  VulkanKernel(std::shared_ptr<vk::Device> device, vk::ProgramDesc desc, std::vector<size_t> input_args)
      : program_(std::move(device), std::move(desc)), input_args_(std::move(input_args)) {}
  void execute(ExecArgs& a) const override {
    std::vector<const void*> in;
    std::vector<void*> out;
    for (size_t i : input_args_) in.push_back(a.in[i]->bytes());
    for (Tensor& t : a.out) out.push_back(t.mutable_bytes());
    // Contexts of one model share the prepared program (its staging memory): one run at a time.
    std::lock_guard<std::mutex> lock(mu_);
    program_.run(in, out);
  }

 private:
  mutable std::mutex mu_;
  mutable vk::Program program_;
  std::vector<size_t> input_args_;  // per external-input slot: its index in Composite::inputs
};

vk::ProgramDesc program_of(const Graph& g, const Composite& c) {
  vk::ProgramDesc p;
  p.name = c.single() ? g.node_label(c.anchor) : g.node_label(c.nodes.front()) + ".." + g.node_label(c.nodes.back());
  std::map<ValueId, uint32_t> slot_of;
  auto add_slot = [&](ValueId v, vk::ProgramSlot::Role role) {
    auto [it, added] = slot_of.emplace(v, static_cast<uint32_t>(p.slots.size()));
    if (added) p.slots.push_back({role, g.value(v).type.byte_size(), g.value(v).name});
    return it->second;
  };
  for (ValueId v : c.inputs)
    if (!slot_of.count(v)) add_slot(v, vk::ProgramSlot::Role::kInput);
  for (ValueId v : c.outputs) add_slot(v, vk::ProgramSlot::Role::kOutput);
  for (int ni : c.nodes) {
    const Node& n = g.node(ni);
    if (n.op != Op::CUSTOM)
      throw Error(ErrorCode::kUnsupported, "the Vulkan backend runs only shader nodes (CUSTOM), not " +
                                               std::string(op_name(n.op)),
                  Location{.graph = g.name(), .node = g.node_label(ni)});
    Checked checked = check_node(g, ni);
    vk::ProgramDispatch d;
    d.desc.name = g.node_label(ni);
    d.desc.spirv = std::move(checked.payload.spirv);
    d.desc.entry_point = checked.payload.entry_point;
    d.desc.resources = std::move(checked.resources);
    d.desc.push_constants = std::move(checked.payload.push_constant_data);
    d.desc.groups = *checked.payload.dispatch;
    for (const custom::BoundResource& r : d.desc.resources) {
      const std::vector<ValueId>& vals = r.output ? n.outputs : n.inputs;
      d.slot_of_resource.push_back(add_slot(vals.at(r.index), vk::ProgramSlot::Role::kInternal));
    }
    p.dispatches.push_back(std::move(d));
  }
  return p;
}

class VulkanBackend final : public Backend {
 public:
  std::string_view name() const override { return "vulkan"; }
  std::string_view description() const override {
    return "Vulkan compute: custom operators carried as shaders (tosa.CUSTOM), on any Vulkan 1.1 device";
  }
  std::string unavailable_reason() const override {
    std::call_once(once_, [this] {
      try {
        if (vk::list_devices().empty()) reason_ = "no Vulkan device found";
      } catch (const Error& e) {
        reason_ = e.message();
      }
    });
    return reason_;
  }
  Grouping grouping() const override { return Grouping::kRegions; }
  bool runs_row(const OpDef& def, const TypeSupport&) const override { return def.op == Op::CUSTOM; }
  Support supports(const Module&, const Graph& g, const Composite& c) const override {
    if (!c.single() || g.node(c.anchor).op != Op::CUSTOM)
      return Support::no("");  // not a shader node: nothing to explain
    std::string why = unavailable_reason();
    if (!why.empty()) return Support::no(why);
    try {
      check_node(g, c.anchor);
    } catch (const Error& e) {
      return Support::no(e.message());
    }
    return Support::yes();
  }
  std::unique_ptr<Kernel> prepare(const Module&, const Graph& g, const Composite& c,
                                  const PrepareOptions& options) const override {
    vk::ProgramDesc p = program_of(g, c);
    // The external-input slots in order, each with the position of its value in Composite::inputs.
    std::vector<size_t> input_args;
    {
      std::vector<ValueId> seen;
      for (size_t i = 0; i < c.inputs.size(); ++i)
        if (std::find(seen.begin(), seen.end(), c.inputs[i]) == seen.end()) {
          seen.push_back(c.inputs[i]);
          input_args.push_back(i);
        }
    }
    try {
      return std::make_unique<VulkanKernel>(vk::open_device(options.device), std::move(p), std::move(input_args));
    } catch (const Error& e) {
      throw e.with_context({.graph = g.name(), .node = g.node_label(c.anchor)});
    }
  }

 private:
  mutable std::once_flag once_;
  mutable std::string reason_;
};

}  // namespace

const Backend& vulkan_backend() {
  static const VulkanBackend b;
  return b;
}

}  // namespace weft::backend
