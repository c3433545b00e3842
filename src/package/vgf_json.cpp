// `weft dump`: a VGF container as JSON (keys in a fixed order, so two builds diff cleanly).
#include <cstdio>

#include <nlohmann/json.hpp>

#include "weft/spirv.h"
#include "weft/vgf.h"

namespace weft::vgf {

namespace {

using Json = nlohmann::ordered_json;

Json section(const Section& s) { return Json{{"offset", s.offset}, {"size", s.size}}; }

Json slots(const std::vector<BindingSlot>& v) {
  Json a = Json::array();
  for (const BindingSlot& s : v) a.push_back(Json{{"binding", s.binding}, {"mrt_index", s.mrt_index}});
  return a;
}

std::string fnv1a64(const Buffer& b) {
  uint64_t h = 0xcbf29ce484222325ull;
  const uint8_t* p = b.data();
  for (size_t i = 0; i < b.size(); ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace

std::string to_json(const Container& c, const DumpOptions& options) {
  Json j;
  const Header& h = c.header;
  j["header"] = Json{{"magic", h.old_magic ? "0xF0E1D2C3" : "VGF1"},
                     {"vk_header_version", h.vk_header_version},
                     {"version", h.version.str()},
                     {"sections",
                      Json{{"modules", section(h.modules)},
                           {"sequence", section(h.sequence)},
                           {"resources", section(h.resources)},
                           {"constants", section(h.constants)}}}};

  Json mods = Json::array();
  for (size_t i = 0; i < c.modules.size(); ++i) {
    const Module& m = c.modules[i];
    Json o{{"index", i},
           {"type", module_type_name(m.type)},
           {"name", m.name},
           {"entry_point", m.entry_point},
           {"code_type", code_type_name(m.code_type)}};
    if (m.code_type == CodeType::kSpirv) {
      o["spirv_words"] = m.spirv.size();
      if (options.disassemble) {
        try {
          o["disassembly"] = spirv::disassemble(m.spirv);
        } catch (const Error& e) {
          o["disassembly_error"] = e.what();
        }
      }
    } else if (m.code_type != CodeType::kNone) {
      o["source_bytes"] = m.source.size();
      if (options.disassemble) o["source"] = m.source;
    }
    mods.push_back(std::move(o));
  }
  j["modules"] = std::move(mods);

  Json res = Json::array();
  for (size_t i = 0; i < c.resources.size(); ++i) {
    const Resource& r = c.resources[i];
    Json o{{"index", i},
           {"category", category_name(r.category)},
           {"vk_descriptor_type", descriptor_type_name(r.vk_descriptor_type)},
           {"vk_format", format_name(r.vk_format)},
           {"shape", r.shape},
           {"strides", r.strides}};
    if (r.sampler) {
      const SamplerConfig& s = *r.sampler;
      o["sampler"] = Json{{"min_filter", s.min_filter},
                          {"mag_filter", s.mag_filter},
                          {"address_mode_u", s.address_mode_u},
                          {"address_mode_v", s.address_mode_v},
                          {"border_color", s.border_color}};
    }
    if (r.alias_group_id != kNoAliasGroup) o["alias_group_id"] = r.alias_group_id;
    res.push_back(std::move(o));
  }
  j["resources"] = std::move(res);

  Json segs = Json::array();
  for (size_t i = 0; i < c.sequence.segments.size(); ++i) {
    const Segment& s = c.sequence.segments[i];
    Json sets = Json::array();
    for (size_t d = 0; d < s.set_infos.size(); ++d) {
      sets.push_back(Json{{"set", s.set_number(d)},
                          {"set_index", s.set_infos[d].set_index == kSetIndexUnset
                                            ? Json(nullptr)
                                            : Json(s.set_infos[d].set_index)},
                          {"bindings", slots(s.set_infos[d].bindings)}});
    }
    Json pcr = Json::array();
    for (const PushConstantRange& p : s.push_constant_ranges)
      pcr.push_back(Json{{"stage_flags", p.stage_flags}, {"offset", p.offset}, {"size", p.size}});
    Json seg{{"index", i},
             {"type", module_type_name(s.type)},
             {"name", s.name},
             {"module_index", s.module_index},
             {"set_infos", std::move(sets)},
             {"inputs", slots(s.inputs)},
             {"outputs", slots(s.outputs)},
             {"constants", s.constants},
             {"dispatch_shape", s.dispatch_shape},
             {"push_constant_ranges", std::move(pcr)}};
    if (s.type == ModuleType::kCompute) {
      // Weft's record of the custom operator the segment runs (the payload stays in the record).
      try {
        if (std::optional<CustomOpRecord> r = custom_op_record(c, i)) {
          auto operands = [](const std::vector<CustomOpRecord::Operand>& v) {
            Json a = Json::array();
            for (const CustomOpRecord::Operand& o : v) a.push_back(Json{{"name", o.name}, {"type", o.type.str()}});
            return a;
          };
          seg["custom_op"] = Json{{"record_constant", r->constant},
                                  {"operator_name", r->operator_name},
                                  {"domain_name", r->domain_name},
                                  {"node", r->node},
                                  {"inputs", operands(r->inputs)},
                                  {"outputs", operands(r->outputs)}};
        }
      } catch (const Error& e) {
        seg["custom_op_error"] = e.what();
      }
    }
    segs.push_back(std::move(seg));
  }
  j["sequence"] = Json{{"segments", std::move(segs)},
                       {"inputs", slots(c.sequence.inputs)},
                       {"outputs", slots(c.sequence.outputs)},
                       {"input_names", c.sequence.input_names},
                       {"output_names", c.sequence.output_names}};

  Json ks = Json::array();
  uint64_t total = 0;
  for (size_t i = 0; i < c.constants.size(); ++i) {
    const Constant& k = c.constants[i];
    total += k.data.size();
    ks.push_back(Json{{"index", i},
                      {"mrt_index", k.mrt_index},
                      {"sparsity_dimension", k.sparsity_dimension},
                      {"size", k.data.size()},
                      {"fnv1a64", fnv1a64(k.data)}});
  }
  j["constants"] = Json{{"encoding", c.constant_encoding == ConstantEncoding::kRaw ? "CONST00" : "legacy FlatBuffers"},
                        {"count", c.constants.size()},
                        {"total_size", total},
                        {"entries", std::move(ks)}};
  // Strings from the file (names, disassembly of OpName/OpString) need not be UTF-8: replace
  // what is not rather than throw.
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace weft::vgf

// ---- The JSON of Arm's vgf_dump -------------------------------------------------------------------

namespace weft::vgf {
namespace {

// vgf_dump's key order is alphabetical (an std::map object), as nlohmann::json's default is.
using SortedJson = nlohmann::json;

SortedJson dump_slots(const std::vector<BindingSlot>& v) {
  SortedJson a = SortedJson::array();
  for (size_t i = 0; i < v.size(); ++i)
    a.push_back(SortedJson{{"binding", v[i].binding}, {"index", i}, {"mrt_index", v[i].mrt_index}});
  return a;
}

// Model inputs/outputs with their names: "" when the name list does not have one per slot.
SortedJson dump_model_slots(const std::vector<BindingSlot>& v, const std::vector<std::string>& names) {
  SortedJson a = dump_slots(v);
  for (size_t i = 0; i < v.size(); ++i) a[i]["name"] = names.size() == v.size() ? names[i] : std::string();
  return a;
}

std::string shader_type(const Module& m) {
  switch (m.code_type) {
    case CodeType::kSpirv: return "SPIR-V";
    case CodeType::kGlsl: return "GLSL";
    case CodeType::kHlsl: return "HLSL";
    default: return "None";
  }
}

}  // namespace

std::string to_vgf_dump_json(const Container& c) {
  SortedJson j;
  SortedJson constants = SortedJson::array();
  for (size_t i = 0; i < c.constants.size(); ++i)
    constants.push_back(SortedJson{{"index", i},
                                   {"mrt_index", c.constants[i].mrt_index},
                                   {"sparsity_dimension", c.constants[i].sparsity_dimension}});
  j["constants"] = constants;
  j["header"] = SortedJson{{"major", c.header.version.major}, {"minor", c.header.version.minor},
                           {"patch", c.header.version.patch}};
  SortedJson segments = SortedJson::array();
  for (size_t i = 0; i < c.sequence.segments.size(); ++i) {
    const Segment& s = c.sequence.segments[i];
    SortedJson sets = SortedJson::array();
    for (size_t k = 0; k < s.set_infos.size(); ++k)
      sets.push_back(SortedJson{{"bindings", dump_slots(s.set_infos[k].bindings)}, {"set_index", s.set_number(k)}});
    SortedJson ranges = SortedJson::array();
    for (size_t k = 0; k < s.push_constant_ranges.size(); ++k) {
      const PushConstantRange& r = s.push_constant_ranges[k];
      ranges.push_back(SortedJson{{"index", k}, {"offset", r.offset}, {"size", r.size}, {"stage_flags", r.stage_flags}});
    }
    segments.push_back(SortedJson{{"constants", s.constants},
                                  {"descriptor_set_infos", sets},
                                  {"dispatch_shape", s.dispatch_shape},
                                  {"index", i},
                                  {"inputs", dump_slots(s.inputs)},
                                  {"module_index", s.module_index},
                                  {"name", s.name},
                                  {"outputs", dump_slots(s.outputs)},
                                  {"push_constant_ranges", ranges},
                                  {"type", module_type_name(s.type)}});
  }
  j["model_sequence"] = SortedJson{{"inputs", dump_model_slots(c.sequence.inputs, c.sequence.input_names)},
                                   {"outputs", dump_model_slots(c.sequence.outputs, c.sequence.output_names)},
                                   {"segments", segments}};
  SortedJson modules = SortedJson::array();
  for (size_t i = 0; i < c.modules.size(); ++i) {
    const Module& m = c.modules[i];
    const bool code = m.code_type == CodeType::kSpirv ? !m.spirv.empty()
                      : m.code_type == CodeType::kNone ? false
                                                       : true;
    modules.push_back(SortedJson{{"entry_point", m.entry_point},
                                 {"index", i},
                                 {"name", m.name},
                                 {"shader_code_available", code},
                                 {"shader_type", shader_type(m)},
                                 {"type", module_type_name(m.type)}});
  }
  j["modules"] = modules;
  SortedJson resources = SortedJson::array();
  for (size_t i = 0; i < c.resources.size(); ++i) {
    const Resource& r = c.resources[i];
    SortedJson row{{"category", category_name(r.category)},
                   {"index", i},
                   {"shape", r.shape},
                   {"stride", r.strides},
                   {"vk_descriptor_type", vk_name(VkEnum::kDescriptorType, r.vk_descriptor_type)},
                   {"vk_format", vk_name(VkEnum::kFormat, r.vk_format)}};
    if (r.sampler) {
      row["sampler_config"] = SortedJson{{"address_mode_u", vk_name(VkEnum::kSamplerAddressMode, r.sampler->address_mode_u)},
                                         {"address_mode_v", vk_name(VkEnum::kSamplerAddressMode, r.sampler->address_mode_v)},
                                         {"border_color", vk_name(VkEnum::kBorderColor, r.sampler->border_color)},
                                         {"mag_filter", vk_name(VkEnum::kFilter, r.sampler->mag_filter)},
                                         {"min_filter", vk_name(VkEnum::kFilter, r.sampler->min_filter)}};
    }
    if (r.alias_group_id != kNoAliasGroup) row["alias_group_id"] = r.alias_group_id;
    resources.push_back(row);
  }
  j["resources"] = resources;
  return j.dump(4);
}

}  // namespace weft::vgf
