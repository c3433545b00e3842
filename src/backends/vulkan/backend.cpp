// The Vulkan backend: runs tosa.CUSTOM nodes that carry a compiled Vulkan compute shader
// (implementation_attrs with SPIR-V, resources, push constants and a dispatch shape) on a Vulkan
// device through runtime/vulkan. Each node is one kernel: its inputs are uploaded, the shader is
// dispatched and its outputs are downloaded, so that CPU-run neighbours read ordinary host memory.
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

class VulkanKernel final : public Kernel {
 public:
  VulkanKernel(std::shared_ptr<vk::Device> device, vk::DispatchDesc desc)
      : kernel_(std::move(device), std::move(desc)) {}
  void execute(ExecArgs& a) const override {
    std::vector<const void*> in;
    std::vector<void*> out;
    for (const Tensor* t : a.in) in.push_back(t->bytes());
    for (Tensor& t : a.out) out.push_back(t.mutable_bytes());
    // Contexts of one model share the prepared kernel (its staging memory): one run at a time.
    std::lock_guard<std::mutex> lock(mu_);
    kernel_.run(in, out);
  }

 private:
  mutable std::mutex mu_;
  mutable vk::ComputeKernel kernel_;
};

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
    Checked checked = check_node(g, c.anchor);
    vk::DispatchDesc d;
    d.name = g.node_label(c.anchor);
    d.spirv = std::move(checked.payload.spirv);
    d.entry_point = checked.payload.entry_point;
    d.resources = std::move(checked.resources);
    d.push_constants = std::move(checked.payload.push_constant_data);
    d.groups = *checked.payload.dispatch;
    try {
      return std::make_unique<VulkanKernel>(vk::open_device(options.device), std::move(d));
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
