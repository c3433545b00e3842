// The rules that tie a VGF container's tables together (docs/vgf.md, "Checks").
#include <map>
#include <set>
#include <utility>

#include "package/internal.h"
#include "weft/spirv.h"
#include "weft/vgf.h"

namespace weft::vgf {

using detail::fail;

namespace {

[[noreturn]] void bad(std::string_view source, std::string msg) { fail(ErrorCode::kVerify, source, std::move(msg)); }

std::string shape_string(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

std::string list_string(const std::vector<uint32_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

std::string segment_label(size_t i, const Segment& s) { return "segment " + std::to_string(i) + " '" + s.name + "'"; }

void check_slot(const Container& c, std::string_view source, const std::string& where, const BindingSlot& s) {
  if (s.mrt_index >= c.resources.size())
    bad(source, where + ": mrt_index " + std::to_string(s.mrt_index) + " names no resource (the resource table has " +
                    std::to_string(c.resources.size()) + ")");
}

void check_slots(const Container& c, std::string_view source, const std::string& where,
                 const std::vector<BindingSlot>& slots) {
  for (size_t i = 0; i < slots.size(); ++i) check_slot(c, source, where + "[" + std::to_string(i) + "]", slots[i]);
}

void check_resources(const Container& c, std::string_view source) {
  for (size_t i = 0; i < c.resources.size(); ++i) {
    const Resource& r = c.resources[i];
    const std::string where = "resource " + std::to_string(i) + " (" + category_name(r.category) + ")";
    if (static_cast<uint8_t>(r.category) > static_cast<uint8_t>(ResourceCategory::kConstant))
      bad(source, "resource " + std::to_string(i) + ": category " + std::to_string(static_cast<int>(r.category)) +
                      " is not INPUT, OUTPUT, INTERMEDIATE or CONSTANT");
    for (size_t d = 0; d < r.shape.size(); ++d) {
      if (r.shape[d] < -1)
        bad(source, where + ": shape[" + std::to_string(d) + "] is " + std::to_string(r.shape[d]) +
                        "; a dimension is >= 0, or -1 when unknown");
    }
    if (!r.strides.empty() && r.strides.size() != r.shape.size())
      bad(source, where + ": " + std::to_string(r.strides.size()) + " strides for a rank-" +
                      std::to_string(r.shape.size()) + " shape (give one per dimension, or none for packed)");
    if (r.category != ResourceCategory::kConstant) continue;
    if (r.alias_group_id != kNoAliasGroup)
      bad(source, where + ": alias_group_id " + std::to_string(r.alias_group_id) +
                      ": a constant has storage of its own and never shares it (only INPUT, OUTPUT and INTERMEDIATE "
                      "rows alias)");
    std::optional<size_t> es = element_size(r.vk_format);
    if (!es)
      bad(source, where + ": vk_format " + format_name(r.vk_format) +
                      " is not a tensor element format Weft knows, so the constant's size cannot be checked");
    for (size_t d = 0; d < r.shape.size(); ++d) {
      if (r.shape[d] < 0)
        bad(source, where + ": shape[" + std::to_string(d) + "] is unknown (-1); a constant needs a static shape");
    }
    if (!detail::tensor_bytes(r.shape, *es))
      bad(source, where + ": shape " + shape_string(r.shape) + " is too large");
    if (!r.strides.empty() && r.strides != packed_strides(r.shape, *es))
      bad(source, where + ": strides " + shape_string(r.strides) + " are not the packed strides " +
                      shape_string(packed_strides(r.shape, *es)) + " of its data");
  }
}

void check_constants(const Container& c, std::string_view source) {
  for (size_t i = 0; i < c.constants.size(); ++i) {
    const Constant& k = c.constants[i];
    const std::string where = "constant " + std::to_string(i);
    if (k.mrt_index >= c.resources.size())
      bad(source, where + ": mrt_index " + std::to_string(k.mrt_index) +
                      " names no resource (the resource table has " + std::to_string(c.resources.size()) + ")");
    const Resource& r = c.resources[k.mrt_index];
    if (r.category != ResourceCategory::kConstant)
      bad(source, where + ": its resource " + std::to_string(k.mrt_index) + " is " + category_name(r.category) +
                      ", not CONSTANT");
    // check_resources() ran: the format is known and the shape static.
    uint64_t expected = *detail::tensor_bytes(r.shape, *element_size(r.vk_format));
    if (k.data.size() != expected)
      bad(source, where + ": " + std::to_string(k.data.size()) + " bytes of data, but its resource " +
                      std::to_string(k.mrt_index) + " (" + format_name(r.vk_format) + " " + shape_string(r.shape) +
                      ") needs " + std::to_string(expected));
    if (k.sparsity_dimension < -1 || k.sparsity_dimension >= static_cast<int64_t>(r.shape.size()))
      bad(source, where + ": sparsity_dimension " + std::to_string(k.sparsity_dimension) +
                      " is neither -1 (dense) nor a dimension of its rank-" + std::to_string(r.shape.size()) +
                      " resource");
  }
}

void check_modules(const Container& c, std::string_view source, const ReadOptions& options,
                   std::vector<std::string>& warnings) {
  for (size_t i = 0; i < c.modules.size(); ++i) {
    const Module& m = c.modules[i];
    const std::string where = "module " + std::to_string(i) + " '" + m.name + "'";
    if (m.type != ModuleType::kCompute && m.type != ModuleType::kGraph)
      bad(source, where + ": type " + std::to_string(static_cast<int>(m.type)) + " is neither COMPUTE nor GRAPH");
    if (m.type == ModuleType::kGraph && m.code_type != CodeType::kSpirv && m.code_type != CodeType::kNone)
      bad(source, where + ": a GRAPH module's code must be SPIR-V, not " + code_type_name(m.code_type));
    if (is_placeholder(m)) {
      // Arm's encoder writes modules without code ("the application provisions the SPIR-V when
      // the model is loaded"), the SDK's test files a single word: readable, not runnable.
      warnings.push_back(where + ": " +
                         (m.code_type == CodeType::kSpirv && !m.spirv.empty()
                              ? "its code is not a SPIR-V stream (" + std::to_string(m.spirv.size()) +
                                    " words, no header): a placeholder"
                              : std::string("a placeholder without code")) +
                         "; the container can be inspected but not run until the shader is supplied");
      continue;
    }
    if (m.type == ModuleType::kGraph && options.validate_modules) {
      std::vector<spirv::Diagnostic> diags = spirv::validate(m.spirv);
      if (!diags.empty())
        bad(source, where + ": the SPIR-V module fails validation (" + std::to_string(diags.size()) +
                        " diagnostic" + (diags.size() == 1 ? "" : "s") + "); first: " + diags.front().str());
    }
  }
}

// A GRAPH segment's module: every interface variable has a (set, binding) present in the
// segment's descriptor sets, tied to a resource that is not a constant; every GraphConstantID
// names a constant the segment lists.
void check_graph_interface(const Container& c, std::string_view source, size_t si, const Segment& s,
                           const std::map<std::pair<uint32_t, uint32_t>, uint32_t>& bound,
                           std::vector<std::string>& warnings) {
  const Module& m = c.modules[s.module_index];
  if (is_placeholder(m)) return;  // check_modules warned
  detail::GraphModuleFacts f;
  try {
    f = detail::scan_graph_module(m.spirv);
  } catch (const Error& e) {
    bad(source, segment_label(si, s) + ": its module " + std::to_string(s.module_index) +
                    " is not a readable SPIR-V stream: " + e.message());
  }
  if (!f.has_entry_point)
    bad(source, segment_label(si, s) + ": its module " + std::to_string(s.module_index) +
                    " has no OpGraphEntryPointARM");
  if (!m.entry_point.empty() && m.entry_point != f.entry_name)
    warnings.push_back("module " + std::to_string(s.module_index) + " '" + m.name + "': entry_point '" +
                       m.entry_point + "' is not the name of its OpGraphEntryPointARM ('" + f.entry_name +
                       "'); the graph is found by the OpGraphEntryPointARM");
  for (const detail::InterfaceVariable& v : f.interface) {
    const std::string var = "interface variable %" + std::to_string(v.id);
    if (!v.binding || !v.set)
      bad(source, segment_label(si, s) + ": " + var + " of its module has no " +
                      (!v.set ? "DescriptorSet" : "Binding") + " decoration");
    auto it = bound.find({*v.set, *v.binding});
    if (it == bound.end())
      bad(source, segment_label(si, s) + ": " + var + " (set " + std::to_string(*v.set) + ", binding " +
                      std::to_string(*v.binding) + ") has no binding slot in the segment's descriptor sets");
    if (c.resources[it->second].category == ResourceCategory::kConstant)
      bad(source, segment_label(si, s) + ": " + var + " (set " + std::to_string(*v.set) + ", binding " +
                      std::to_string(*v.binding) + ") is bound to resource " + std::to_string(it->second) +
                      ", a CONSTANT");
  }
  std::set<uint32_t> listed(s.constants.begin(), s.constants.end());
  for (uint32_t id : f.graph_constant_ids) {
    if (!listed.count(id))
      bad(source, segment_label(si, s) + ": its module uses GraphConstantID " + std::to_string(id) +
                      ", which is not among the segment's constants (GraphConstantID = index in the constant section)");
  }
}

// Every INTERMEDIATE storage (a row, or the rows of one alias group when none of them is a model
// INPUT or OUTPUT) is written by exactly one segment (one that lists it among its outputs), and
// read (listed among inputs) only by later segments.
void check_intermediates(const Container& c, std::string_view source) {
  std::map<uint64_t, bool> internal;  // storage -> every row of it is INTERMEDIATE
  for (uint32_t r = 0; r < c.resources.size(); ++r) {
    const ResourceCategory cat = c.resources[r].category;
    if (cat == ResourceCategory::kConstant) continue;
    auto [it, fresh] = internal.emplace(detail::storage_of(c, r), cat == ResourceCategory::kIntermediate);
    if (!fresh) it->second = it->second && cat == ResourceCategory::kIntermediate;
  }
  auto label = [&](uint32_t r) {
    const uint32_t g = c.resources[r].alias_group_id;
    return "resource " + std::to_string(r) + " (INTERMEDIATE" +
           (g == kNoAliasGroup ? std::string() : ", alias group " + std::to_string(g)) + ")";
  };
  std::map<uint64_t, size_t> writer;
  const std::vector<Segment>& segs = c.sequence.segments;
  for (size_t si = 0; si < segs.size(); ++si) {
    const Segment& s = segs[si];
    for (size_t k = 0; k < s.outputs.size(); ++k) {
      const uint32_t r = s.outputs[k].mrt_index;
      auto in = internal.find(detail::storage_of(c, r));
      if (in == internal.end() || !in->second) continue;
      auto [w, fresh] = writer.emplace(in->first, si);
      if (!fresh && w->second != si)
        bad(source, segment_label(si, s) + ": outputs[" + std::to_string(k) + "] writes " + label(r) + ", which " +
                        segment_label(w->second, segs[w->second]) +
                        " writes already; an intermediate is written by exactly one segment");
    }
  }
  for (size_t si = 0; si < segs.size(); ++si) {
    const Segment& s = segs[si];
    for (size_t k = 0; k < s.inputs.size(); ++k) {
      const uint32_t r = s.inputs[k].mrt_index;
      auto in = internal.find(detail::storage_of(c, r));
      if (in == internal.end() || !in->second) continue;
      auto w = writer.find(in->first);
      if (w == writer.end())
        bad(source, segment_label(si, s) + ": inputs[" + std::to_string(k) + "] reads " + label(r) +
                        ", which no segment writes");
      if (w->second >= si)
        bad(source, segment_label(si, s) + ": inputs[" + std::to_string(k) + "] reads " + label(r) +
                        " before it is written (by " + segment_label(w->second, segs[w->second]) +
                        "); segments run in sequence order");
    }
  }
}

void check_sequence(const Container& c, std::string_view source, std::vector<std::string>& warnings) {
  const Sequence& q = c.sequence;
  for (size_t si = 0; si < q.segments.size(); ++si) {
    const Segment& s = q.segments[si];
    const std::string where = segment_label(si, s);
    if (s.module_index >= c.modules.size())
      bad(source, where + ": module_index " + std::to_string(s.module_index) + " names no module (the module table has " +
                      std::to_string(c.modules.size()) + ")");
    const Module& m = c.modules[s.module_index];
    if (m.type != s.type)
      bad(source, where + ": a " + module_type_name(s.type) + " segment runs module " + std::to_string(s.module_index) +
                      " '" + m.name + "', a " + module_type_name(m.type) + " module");
    std::map<std::pair<uint32_t, uint32_t>, uint32_t> bound;
    for (size_t d = 0; d < s.set_infos.size(); ++d) {
      const std::string sw = where + ": set_infos[" + std::to_string(d) + "].bindings";
      check_slots(c, source, sw, s.set_infos[d].bindings);
      for (const BindingSlot& b : s.set_infos[d].bindings) {
        if (!bound.emplace(std::make_pair(s.set_number(d), b.binding), b.mrt_index).second)
          bad(source, sw + ": binding " + std::to_string(b.binding) + " of set " + std::to_string(s.set_number(d)) +
                          " appears twice");
      }
    }
    check_slots(c, source, where + ": inputs", s.inputs);
    check_slots(c, source, where + ": outputs", s.outputs);
    for (size_t k = 0; k < s.constants.size(); ++k) {
      if (s.constants[k] >= c.constants.size())
        bad(source, where + ": constants[" + std::to_string(k) + "] is " + std::to_string(s.constants[k]) +
                        ", but the constant section has " + std::to_string(c.constants.size()) + " constants");
    }
    if (!s.dispatch_shape.empty() && s.dispatch_shape.size() != 3)
      bad(source, where + ": dispatch_shape has " + std::to_string(s.dispatch_shape.size()) +
                      " entries; it has 3 (x, y, z) or none");
    for (size_t k = 0; k < s.push_constant_ranges.size(); ++k) {
      const PushConstantRange& p = s.push_constant_ranges[k];
      const std::string pw = where + ": push_constant_ranges[" + std::to_string(k) + "] (offset " +
                             std::to_string(p.offset) + ", size " + std::to_string(p.size) + ")";
      if (uint64_t{p.offset} + p.size > UINT32_MAX) bad(source, pw + ": offset + size does not fit 32 bits");
      if (p.size == 0 || p.size % 4 != 0 || p.offset % 4 != 0)
        bad(source, pw + ": a push constant range has an offset and a size that are multiples of 4, size > 0");
    }
    if (s.type == ModuleType::kGraph && m.type == ModuleType::kGraph) check_graph_interface(c, source, si, s, bound, warnings);
    if (s.type == ModuleType::kCompute) {
      if (s.dispatch_shape.size() != 3 || s.dispatch_shape[0] == 0 || s.dispatch_shape[1] == 0 ||
          s.dispatch_shape[2] == 0)
        bad(source, where + ": dispatch_shape " + list_string(s.dispatch_shape) +
                        ": a COMPUTE segment dispatches 3 workgroup counts (x, y, z), each >= 1");
      custom_op_record(c, si, source);  // Weft's record, when there is one, agrees with the tables
    }
  }
  check_intermediates(c, source);
  check_slots(c, source, "model sequence: inputs", q.inputs);
  check_slots(c, source, "model sequence: outputs", q.outputs);
  if (!q.input_names.empty() && q.input_names.size() != q.inputs.size())
    bad(source, "model sequence: " + std::to_string(q.input_names.size()) + " input_names for " +
                    std::to_string(q.inputs.size()) + " inputs");
  if (!q.output_names.empty() && q.output_names.size() != q.outputs.size())
    bad(source, "model sequence: " + std::to_string(q.output_names.size()) + " output_names for " +
                    std::to_string(q.outputs.size()) + " outputs");
}

}  // namespace

std::vector<std::string> check(const Container& c, std::string_view source, const ReadOptions& options) {
  std::vector<std::string> warnings;
  check_resources(c, source);
  check_constants(c, source);
  check_modules(c, source, options, warnings);
  check_sequence(c, source, warnings);
  return warnings;
}

bool is_placeholder(const Module& m) {
  switch (m.code_type) {
    case CodeType::kNone: return true;
    case CodeType::kSpirv: return m.spirv.size() < 5 || m.spirv[0] != 0x07230203;
    default: return m.source.empty();
  }
}

}  // namespace weft::vgf
