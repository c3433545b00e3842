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
  return spirv::decode(m.spirv, constants, source_name);
}

}  // namespace weft::vgf
