// A Scenario Runner scenario for a container (vgf.h: to_scenario). The runner's format: a JSON
// object of "resources" (graph, tensor, buffer, shader, raw_data, ...) and "commands"
// (dispatch_graph, mark_boundary, ...); a VGF's model inputs and outputs are bound by their
// binding numbers; the runner allocates intermediates itself (docs/vgf.md, "Arm's Scenario Runner").
#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

#include "weft/custom.h"
#include "weft/vgf.h"

namespace weft::vgf {
namespace {

using Json = nlohmann::json;

// A .npy file of raw bytes (dtype |u1, one dimension).
std::vector<uint8_t> npy_bytes(const std::vector<uint8_t>& data) {
  std::string header = "{'descr': '|u1', 'fortran_order': False, 'shape': (" + std::to_string(data.size()) + ",), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  out.push_back(static_cast<uint8_t>(header.size() & 0xff));
  out.push_back(static_cast<uint8_t>(header.size() >> 8));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

std::string file_name_of(const std::string& name, const std::string& fallback) {
  if (name.empty()) return fallback;
  std::string s;
  for (char ch : name) s += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.') ? ch : '_';
  return s + ".npy";
}

}  // namespace

Scenario to_scenario(const Container& c, const ScenarioOptions& options) {
  const Sequence& q = c.sequence;
  Scenario out;
  Json resources = Json::array();
  Json graph{{"uid", "vgf_graph_ref"}, {"src", options.vgf_path}};
  Json bindings = Json::array();
  Json io_refs = Json::array();
  auto io = [&](bool input, size_t i) {
    const BindingSlot& slot = (input ? q.inputs : q.outputs)[i];
    const std::string kind = input ? "input" : "output";
    const std::vector<std::string>& names = input ? q.input_names : q.output_names;
    const std::vector<std::string>& paths = input ? options.inputs : options.outputs;
    const std::string what = "model " + kind + " " + std::to_string(i) + (i < names.size() ? " '" + names[i] + "'" : "");
    if (slot.mrt_index >= c.resources.size())
      throw Error(ErrorCode::kVerify, what + ": mrt_index " + std::to_string(slot.mrt_index) + " names no resource");
    const Resource& r = c.resources[slot.mrt_index];
    const std::string uid = kind + "_" + std::to_string(i) + "_ref";
    const std::string path = i < paths.size() ? paths[i]
                                              : file_name_of(i < names.size() ? names[i] : "",
                                                             kind + "_" + std::to_string(i) + ".npy");
    Json res{{"uid", uid}, {"shader_access", input ? "readonly" : "writeonly"}, {input ? "src" : "dst", path}};
    if (r.vk_descriptor_type == kDescriptorTypeTensorARM) {
      std::vector<int64_t> dims = r.shape;
      for (int64_t& d : dims) d = d < 0 ? -1 : d;
      res["dims"] = dims;
      res["format"] = vk_name(VkEnum::kFormat, r.vk_format);
      resources.push_back(Json{{"tensor", res}});
    } else if (r.vk_descriptor_type == kDescriptorTypeStorageBuffer || r.vk_descriptor_type == 6) {
      // Bytes: elements x element size (the runner checks the .npy's size against it).
      std::optional<size_t> elem = element_size(r.vk_format);
      if (!elem)
        throw Error(ErrorCode::kUnsupported, what + ": a buffer of format " + vk_name(VkEnum::kFormat, r.vk_format) +
                                                 " has no element size Weft knows");
      int64_t n = 1;
      for (int64_t d : r.shape) n *= std::max<int64_t>(d, 0);
      res["size"] = static_cast<uint64_t>(n) * *elem;
      resources.push_back(Json{{"buffer", res}});
    } else {
      throw Error(ErrorCode::kUnsupported,
                  what + " is a " + vk_name(VkEnum::kDescriptorType, r.vk_descriptor_type) +
                      " resource: the Scenario Runner binds model inputs and outputs from .npy only as tensors or "
                      "buffers");
    }
    bindings.push_back(Json{{"id", slot.binding}, {"resource_ref", uid}, {"set", 0}});
    io_refs.push_back(uid);
  };
  for (size_t i = 0; i < q.inputs.size(); ++i) io(true, i);
  for (size_t i = 0; i < q.outputs.size(); ++i) io(false, i);

  Json substitutions = Json::array();
  Json push_constants = Json::array();
  uint32_t push_size = 0;
  for (size_t si = 0; si < q.segments.size(); ++si) {
    const Segment& s = q.segments[si];
    if (s.module_index >= c.modules.size()) continue;
    const Module& m = c.modules[s.module_index];
    if (is_placeholder(m)) {
      // The runner takes the module's code from a shader resource named for it.
      const std::string uid = "shader_" + std::to_string(s.module_index) + "_ref";
      resources.push_back(Json{{"shader", Json{{"uid", uid},
                                               {"src", m.name + ".spv"},
                                               {"type", "SPIR-V"},
                                               {"entry", m.entry_point.empty() ? "main" : m.entry_point}}}});
      substitutions.push_back(Json{{"shader_ref", uid}, {"target", m.name}});
    }
    if (s.type != ModuleType::kCompute || s.push_constant_ranges.empty()) continue;
    std::optional<CustomOpRecord> rec = custom_op_record(c, si);
    std::vector<uint8_t> data;
    if (rec) data = custom::parse_payload(rec->implementation_attrs).push_constant_data;
    if (data.empty())
      throw Error(ErrorCode::kUnsupported, "segment " + std::to_string(si) + " '" + s.name +
                                               "' has push constants but no record of their values (Weft writes them "
                                               "in its record of a custom operator)");
    const std::string uid = "push_constants_" + std::to_string(si) + "_ref";
    std::string path = (m.name.empty() ? "segment_" + std::to_string(si) : m.name) + ".push_constants.npy";
    for (int k = 1; std::any_of(out.files.begin(), out.files.end(), [&](const auto& f) { return f.first == path; }); ++k)
      path = m.name + "_" + std::to_string(k) + ".push_constants.npy";
    resources.push_back(Json{{"raw_data", Json{{"uid", uid}, {"src", path}}}});
    push_constants.push_back(Json{{"push_data_ref", uid}, {"shader_target", m.name}});
    push_size = std::max<uint32_t>(push_size, static_cast<uint32_t>(data.size()));
    out.files.emplace_back(path, npy_bytes(data));
  }
  if (push_size) graph["push_constants_size"] = push_size;
  resources.insert(resources.begin(), Json{{"graph", graph}});

  Json dispatch{{"graph_ref", "vgf_graph_ref"}, {"bindings", bindings}, {"shader_substitutions", substitutions}};
  if (!push_constants.empty()) dispatch["push_constants"] = push_constants;
  Json commands = Json::array();
  if (options.boundaries) commands.push_back(Json{{"mark_boundary", Json{{"resources", Json::array()}}}});
  commands.push_back(Json{{"dispatch_graph", dispatch}});
  if (options.boundaries) commands.push_back(Json{{"mark_boundary", Json{{"resources", io_refs}}}});
  out.json = Json{{"resources", resources}, {"commands", commands}}.dump(4) + "\n";
  return out;
}

}  // namespace weft::vgf
