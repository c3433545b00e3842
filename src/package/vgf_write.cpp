// VGF writer: format 0.4.3, sections 8-byte aligned, the raw CONST00 constant section. The
// FlatBuffers tables are built in memory (they are small); constant payloads are streamed from
// their buffers straight to the output.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "package/internal.h"
#include "package/vgf_generated.h"
#include "weft/vgf.h"

namespace weft::vgf {

namespace {

namespace fb = flatbuffers;

fb::Offset<fb::Vector<fb::Offset<VGF::BindingSlot>>> slots(fb::FlatBufferBuilder& b,
                                                          const std::vector<BindingSlot>& v) {
  std::vector<fb::Offset<VGF::BindingSlot>> o;
  o.reserve(v.size());
  for (const BindingSlot& s : v) o.push_back(VGF::CreateBindingSlot(b, s.binding, s.mrt_index));
  return b.CreateVector(o);
}

void build_modules(fb::FlatBufferBuilder& b, const Container& c) {
  std::vector<fb::Offset<VGF::Module>> mods;
  for (const Module& m : c.modules) {
    auto name = b.CreateString(m.name);
    auto entry = b.CreateString(m.entry_point);
    VGF::ModuleCode type = VGF::ModuleCode_NONE;
    fb::Offset<void> code;
    switch (m.code_type) {
      case CodeType::kNone: break;
      case CodeType::kSpirv:
        type = VGF::ModuleCode_SPIRV;
        code = VGF::CreateSPIRV(b, b.CreateVector(m.spirv)).Union();
        break;
      case CodeType::kGlsl:
        type = VGF::ModuleCode_GLSL;
        code = VGF::CreateGLSL(b, b.CreateString(m.source)).Union();
        break;
      case CodeType::kHlsl:
        type = VGF::ModuleCode_HLSL;
        code = VGF::CreateHLSL(b, b.CreateString(m.source)).Union();
        break;
    }
    mods.push_back(VGF::CreateModule(b, static_cast<VGF::ModuleType>(m.type), name, entry, type, code));
  }
  b.Finish(VGF::CreateModuleTable(b, b.CreateVector(mods)));
}

void build_resources(fb::FlatBufferBuilder& b, const Container& c) {
  std::vector<fb::Offset<VGF::ModelResourceTableEntry>> rows;
  for (const Resource& r : c.resources) {
    auto desc = VGF::CreateDescription(b, b.CreateVector(r.shape), b.CreateVector(r.strides));
    VGF::ExtraConfig extra_type = VGF::ExtraConfig_NONE;
    fb::Offset<void> extra;
    if (r.sampler) {
      const SamplerConfig& s = *r.sampler;
      extra_type = VGF::ExtraConfig_SamplerConfig;
      extra = VGF::CreateSamplerConfig(b, s.min_filter, s.mag_filter, s.address_mode_u, s.address_mode_v,
                                       s.border_color)
                  .Union();
    }
    rows.push_back(VGF::CreateModelResourceTableEntry(b, r.vk_descriptor_type, r.vk_format,
                                                      static_cast<VGF::ResourceCategory>(r.category), desc,
                                                      extra_type, extra, r.alias_group_id));
  }
  b.Finish(VGF::CreateModelResourceTable(b, b.CreateVector(rows)));
}

void build_sequence(fb::FlatBufferBuilder& b, const Container& c) {
  const Sequence& q = c.sequence;
  std::vector<fb::Offset<VGF::SegmentInfo>> segs;
  for (const Segment& s : q.segments) {
    auto name = b.CreateString(s.name);
    std::vector<fb::Offset<VGF::DescriptorSetInfo>> sets;
    for (const DescriptorSetInfo& d : s.set_infos)
      sets.push_back(VGF::CreateDescriptorSetInfo(b, slots(b, d.bindings), d.set_index));
    auto set_infos = b.CreateVector(sets);
    auto inputs = slots(b, s.inputs);
    auto outputs = slots(b, s.outputs);
    auto constants = b.CreateVector(s.constants);
    // No dispatch shape is written as an absent field: readers require 3 entries when present.
    fb::Offset<fb::Vector<uint32_t>> dispatch;
    if (!s.dispatch_shape.empty()) dispatch = b.CreateVector(s.dispatch_shape);
    std::vector<fb::Offset<VGF::PushConstantRange>> pcr;
    for (const PushConstantRange& p : s.push_constant_ranges)
      pcr.push_back(VGF::CreatePushConstantRange(b, p.stage_flags, p.offset, p.size));
    auto ranges = b.CreateVector(pcr);
    segs.push_back(VGF::CreateSegmentInfo(b, static_cast<VGF::ModuleType>(s.type), name, s.module_index, set_infos,
                                          inputs, outputs, constants, dispatch, ranges));
  }
  auto segments = b.CreateVector(segs);
  auto inputs = slots(b, q.inputs);
  auto outputs = slots(b, q.outputs);
  auto in_names = b.CreateVectorOfStrings(q.input_names);
  auto out_names = b.CreateVectorOfStrings(q.output_names);
  b.Finish(VGF::CreateModelSequenceTable(b, segments, inputs, outputs, in_names, out_names));
}

void put_u16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }
void put_u32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }
void put_u64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, 8); }

// Everything but the constant payloads, laid out.
struct Prepared {
  fb::FlatBufferBuilder modules, sequence, resources;
  uint8_t header[kHeaderSize] = {};
  std::vector<uint8_t> const_head;  // "CONST00\0", count, records
  Section sections[4];              // modules, sequence, resources, constants
  uint64_t total = 0;
};

void prepare(const Container& c, const WriteOptions& options, Prepared& p) {
  if (options.check) check(c, "<vgf writer>", ReadOptions{.validate_modules = false});
  build_modules(p.modules, c);
  build_sequence(p.sequence, c);
  build_resources(p.resources, c);

  const uint64_t count = c.constants.size();
  p.const_head.assign(16 + 24 * count, 0);
  std::memcpy(p.const_head.data(), "CONST00", 8);
  put_u64(p.const_head.data() + 8, count);
  uint64_t payload = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const Constant& k = c.constants[i];
    uint8_t* rec = p.const_head.data() + 16 + 24 * i;
    put_u32(rec, k.mrt_index);
    put_u32(rec + 4, static_cast<uint32_t>(static_cast<int32_t>(k.sparsity_dimension)));
    put_u64(rec + 8, k.data.size());
    put_u64(rec + 16, payload);
    payload += detail::align_up(k.data.size(), kSectionAlignment);
  }

  const uint64_t sizes[4] = {p.modules.GetSize(), p.sequence.GetSize(), p.resources.GetSize(),
                             p.const_head.size() + payload};
  uint64_t at = kHeaderSize;
  for (int i = 0; i < 4; ++i) {
    at = detail::align_up(at, kSectionAlignment);
    p.sections[i] = {at, sizes[i]};
    at += sizes[i];
  }
  p.total = at;

  uint8_t* h = p.header;
  std::memcpy(h, "VGF1", 4);
  put_u16(h + 4, c.header.vk_header_version);
  h[8] = 0;
  h[9] = 4;
  h[10] = 3;
  for (int i = 0; i < 4; ++i) {
    put_u64(h + 16 + 16 * i, p.sections[i].offset);
    put_u64(h + 24 + 16 * i, p.sections[i].size);
  }
}

// Emits the file through `sink(const void*, size_t)`.
template <class Sink>
void emit(const Container& c, const Prepared& p, Sink&& sink) {
  static const uint8_t zeros[kSectionAlignment] = {};
  uint64_t at = 0;
  auto put = [&](const void* d, uint64_t n) {
    if (n) sink(d, static_cast<size_t>(n));
    at += n;
  };
  auto pad_to = [&](uint64_t offset) { put(zeros, offset - at); };
  put(p.header, kHeaderSize);
  const uint8_t* tables[3] = {p.modules.GetBufferPointer(), p.sequence.GetBufferPointer(),
                              p.resources.GetBufferPointer()};
  for (int i = 0; i < 3; ++i) {
    pad_to(p.sections[i].offset);
    put(tables[i], p.sections[i].size);
  }
  pad_to(p.sections[3].offset);
  put(p.const_head.data(), p.const_head.size());
  for (const Constant& k : c.constants) {
    put(k.data.data(), k.data.size());
    put(zeros, detail::align_up(k.data.size(), kSectionAlignment) - k.data.size());
  }
}

}  // namespace

std::vector<uint8_t> serialize(const Container& c, const WriteOptions& options) {
  Prepared p;
  prepare(c, options, p);
  std::vector<uint8_t> out;
  out.resize(static_cast<size_t>(p.total));
  size_t at = 0;
  emit(c, p, [&](const void* d, size_t n) {
    // Into the presized vector (GCC 12 reports a false -Wstringop-overflow for vector::insert here).
    if (n > out.size() - at) throw Error(ErrorCode::kInternal, "VGF writer: the file outgrew its computed size");
    std::memcpy(out.data() + at, d, n);
    at += n;
  });
  if (at != out.size()) throw Error(ErrorCode::kInternal, "VGF writer: the file is smaller than its computed size");
  return out;
}

void save(const Container& c, const std::string& path, const WriteOptions& options) {
  Prepared p;
  prepare(c, options, p);
  // Written beside the target and renamed over it, so that a container still mapping the old
  // file (load() then save() to the same path) keeps reading intact bytes.
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw Error(ErrorCode::kIo, "cannot create file", {.file = tmp});
    emit(c, p, [&](const void* d, size_t n) { f.write(static_cast<const char*>(d), static_cast<std::streamsize>(n)); });
    f.flush();
    if (!f) {
      std::remove(tmp.c_str());
      throw Error(ErrorCode::kIo, "cannot write file", {.file = tmp});
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    throw Error(ErrorCode::kIo, "cannot replace file: " + ec.message(), {.file = path});
  }
}

}  // namespace weft::vgf
