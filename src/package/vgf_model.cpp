// weft::Module <-> VGF container: one GRAPH module and segment for the entry graph (models with
// custom operators: vgf_custom.cpp).
#include <algorithm>
#include <map>

#include "package/internal.h"
#include "weft/vgf.h"

namespace weft::vgf {

namespace {

uint32_t add_resource(Container& c, ResourceCategory category, uint32_t descriptor_type, const TensorType& t,
                      const std::string& what) {
  std::optional<uint32_t> f = format_of(t.dtype);
  if (!f)
    throw Error(ErrorCode::kUnsupported,
                what + ": element type " + dtype_name(t.dtype) + " has no VkFormat, so it cannot be a VGF resource");
  Resource r;
  r.vk_descriptor_type = descriptor_type;
  r.vk_format = *f;
  r.category = category;
  r.shape = t.shape;
  r.strides = packed_strides(t.shape, *element_size(*f));
  c.resources.push_back(std::move(r));
  return static_cast<uint32_t>(c.resources.size() - 1);
}

}  // namespace

Container from_module(const weft::Module& module, const BuildOptions& options) {
  if (detail::has_custom_nodes(module)) return detail::build_segmented(module, options);
  spirv::Binary bin = spirv::encode(module, options.encode);
  const Graph& g = module.main();
  detail::GraphModuleFacts f = detail::scan_graph_module(bin.words);
  const size_t ni = g.inputs().size(), no = g.outputs().size();
  if (!f.has_entry_point || f.interface.size() != ni + no)
    throw Error(ErrorCode::kUnsupported,
                "graph '" + g.name() + "': its entry point has " + std::to_string(f.interface.size()) +
                    " interface variables for " + std::to_string(ni) + " inputs and " + std::to_string(no) +
                    " outputs; tensor-array interfaces cannot be placed in a VGF yet",
                {.graph = g.name()});

  Container c;
  c.header.vk_header_version = kVkHeaderVersion;
  c.modules.push_back({ModuleType::kGraph, g.name(), f.entry_name, CodeType::kSpirv, std::move(bin.words), {}});

  Segment seg;
  seg.type = ModuleType::kGraph;
  seg.name = g.name();
  seg.module_index = 0;
  seg.dispatch_shape = {0, 0, 0};
  std::map<uint32_t, std::vector<BindingSlot>> sets;
  for (size_t i = 0; i < ni + no; ++i) {
    const bool input = i < ni;
    const Value& v = g.value(input ? g.inputs()[i] : g.outputs()[i - ni]);
    const detail::InterfaceVariable& var = detail::bound_variable(f, i);
    uint32_t r = add_resource(c, input ? ResourceCategory::kInput : ResourceCategory::kOutput, kDescriptorTypeTensorARM,
                              v.type, std::string(input ? "input" : "output") + " '" + v.name + "'");
    BindingSlot slot{*var.binding, r};
    sets[*var.set].push_back(slot);
    (input ? seg.inputs : seg.outputs).push_back(slot);
    (input ? c.sequence.inputs : c.sequence.outputs).push_back(slot);
    (input ? c.sequence.input_names : c.sequence.output_names).push_back(v.name);
  }
  seg.set_infos = detail::set_infos_of(std::move(sets));

  // GraphConstantID i is constant i of the constant section (the SDK's convention).
  detail::check_constant_ids(bin.constants);
  for (size_t i = 0; i < bin.constants.size(); ++i) {
    const spirv::GraphConstant& gc = bin.constants[i];
    uint32_t r = add_resource(c, ResourceCategory::kConstant, kNoDescriptorType, gc.tensor.type(),
                              "constant '" + gc.name + "'");
    c.constants.push_back({r, -1, gc.tensor.buffer()});
    seg.constants.push_back(static_cast<uint32_t>(i));
  }
  c.sequence.segments.push_back(std::move(seg));
  return c;
}

std::vector<spirv::GraphConstant> graph_constants(const Container& c, size_t segment) {
  if (segment >= c.sequence.segments.size())
    throw Error(ErrorCode::kNotFound, "segment " + std::to_string(segment) + " does not exist (the sequence has " +
                                          std::to_string(c.sequence.segments.size()) + ")");
  const Segment& s = c.sequence.segments[segment];
  std::vector<spirv::GraphConstant> out;
  out.reserve(s.constants.size());
  for (uint32_t k : s.constants) {
    if (k >= c.constants.size()) throw Error(ErrorCode::kVerify, "segment constant " + std::to_string(k) + " does not exist");
    const Constant& cst = c.constants.at(k);
    const Resource& r = c.resources.at(cst.mrt_index);
    std::optional<TensorType> t = tensor_type(r);
    if (!t)
      throw Error(ErrorCode::kUnsupported, "constant " + std::to_string(k) + ": resource " +
                                               std::to_string(cst.mrt_index) + " (" + format_name(r.vk_format) +
                                               ") is not a tensor type Weft knows");
    out.push_back({k, "", Tensor(*t, cst.data)});
  }
  return out;
}

weft::Module to_module(const Container& c, size_t segment, std::string_view source_name) {
  std::vector<spirv::GraphConstant> constants = graph_constants(c, segment);
  const Segment& s = c.sequence.segments[segment];
  if (s.type != ModuleType::kGraph)
    throw Error(ErrorCode::kUnsupported, "segment " + std::to_string(segment) + " '" + s.name +
                                             "' is a COMPUTE segment; only GRAPH segments decode to a module",
                {.file = std::string(source_name)});
  const Module& m = c.modules.at(s.module_index);
  if (is_placeholder(m))
    throw Error(ErrorCode::kUnsupported,
                "segment " + std::to_string(segment) + " '" + s.name + "': module " + std::to_string(s.module_index) +
                    " '" + m.name + "' is a placeholder (" +
                    (m.spirv.empty() ? std::string("no code") : std::to_string(m.spirv.size()) + " words without a SPIR-V header") +
                    "; the application is meant to supply the module when it loads the model): there is no graph to run",
                {.file = std::string(source_name)});
  return spirv::decode(m.spirv, constants, source_name);
}

void detail::name_interface(const Container& c, weft::Module& m, std::string_view source_name) {
  const Sequence& q = c.sequence;
  if (q.segments.size() != 1 || (q.input_names.empty() && q.output_names.empty())) return;
  const Module& mod = c.modules.at(q.segments[0].module_index);
  detail::GraphModuleFacts f = detail::scan_graph_module(mod.spirv);
  Graph& g = m.main();
  // Interface variables: the graph's inputs, then its outputs (tensor arrays are left as they are).
  if (f.interface.size() != g.inputs().size() + g.outputs().size()) return;
  auto rename = [&](const std::vector<BindingSlot>& slots, const std::vector<std::string>& names, size_t first,
                    const std::vector<ValueId>& values) {
    for (size_t i = 0; i < slots.size() && i < names.size(); ++i) {
      if (names[i].empty()) continue;
      for (size_t k = 0; k < values.size(); ++k) {
        const detail::InterfaceVariable& v = f.interface[first + k];
        if (v.binding != slots[i].binding || (v.set && *v.set != 0)) continue;
        if (g.value(values[k]).name != names[i] && !g.find_value(names[i])) g.rename_value(values[k], names[i]);
      }
    }
  };
  rename(q.inputs, q.input_names, 0, g.inputs());
  rename(q.outputs, q.output_names, g.inputs().size(), g.outputs());
  (void)source_name;
}

}  // namespace weft::vgf
