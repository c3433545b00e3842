// VGF reader: header and section bounds, the FlatBuffers sections (each through the verifier),
// the raw CONST00 and legacy FlatBuffers constant sections. Constant payloads are never copied:
// each Constant's Buffer points into the caller's bytes (the file's mapping for load()).
#include <cstring>
#include <filesystem>
#include <memory>
#include <system_error>

#include "package/internal.h"
#include "package/vgf_generated.h"
#include "weft/vgf.h"

namespace weft::vgf {

using detail::fail;

namespace {

constexpr char kConst00[8] = {'C', 'O', 'N', 'S', 'T', '0', '0', '\0'};
constexpr uint64_t kConstHeaderSize = 16;
constexpr uint64_t kConstRecordSize = 24;
// FlatBuffers offsets are 32-bit: a buffer must stay below 2 GiB.
constexpr uint64_t kMaxFlatbufferSize = FLATBUFFERS_MAX_BUFFER_SIZE;

template <class T>
T load_le(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);  // the format is little-endian, as is every host Weft supports
  return v;
}

std::string range_str(uint64_t offset, uint64_t size) {
  return "[" + std::to_string(offset) + ", +" + std::to_string(size) + ")";
}

// A FlatBuffers section, verified. Sections at offsets that are not 8-aligned (files before
// 0.4.3) are verified and read from an aligned copy, `scratch`; map_back() turns a pointer into
// that copy into the same byte of the original (for constant payloads, which are never copied).
class FlatSection {
 public:
  FlatSection(const uint8_t* data, uint64_t size, const char* what, std::string_view source)
      : orig_(data), size_(size), what_(what), source_(source) {
    if (size >= kMaxFlatbufferSize)
      fail(ErrorCode::kParse, source,
           std::string(what) + ": " + std::to_string(size) + " bytes, more than a FlatBuffers buffer can hold (2 GiB)");
    if (size < 2 * sizeof(flatbuffers::uoffset_t))
      fail(ErrorCode::kParse, source,
           std::string(what) + ": " + std::to_string(size) + " bytes, too small to hold a FlatBuffers root table");
    data_ = data;
    if (reinterpret_cast<uintptr_t>(data) % 8 != 0) {
      scratch_.resize(static_cast<size_t>((size + 7) / 8));
      std::memcpy(scratch_.data(), data, static_cast<size_t>(size));
      data_ = reinterpret_cast<const uint8_t*>(scratch_.data());
    }
  }

  template <class T>
  const T* root(const char* table) {
    flatbuffers::Verifier verifier(data_, static_cast<size_t>(size_), /*max_depth=*/64, /*max_tables=*/1000000);
    if (!verifier.VerifyBuffer<T>(nullptr))
      fail(ErrorCode::kParse, source_,
           std::string(what_) + ": not a valid FlatBuffers " + table + " (the FlatBuffers verifier rejected it)");
    return flatbuffers::GetRoot<T>(data_);
  }

  const uint8_t* map_back(const uint8_t* p) const { return orig_ + (p - data_); }

 private:
  const uint8_t* orig_;
  const uint8_t* data_;
  uint64_t size_;
  const char* what_;
  std::string_view source_;
  std::vector<uint64_t> scratch_;
};

std::string str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

// The verifier checks a vector's length word for 4-byte alignment only, so a vector of 8-byte
// elements may sit at an address that is 4 mod 8: copy the elements bytewise, never load them
// through a T*.
template <class T>
std::vector<T> vec(const flatbuffers::Vector<T>* v) {
  if (!v || v->size() == 0) return {};
  std::vector<T> r(v->size());
  std::memcpy(r.data(), v->Data(), v->size() * sizeof(T));
  return r;
}

ModuleType module_type(VGF::ModuleType t, std::string_view source, const std::string& where) {
  switch (t) {
    case VGF::ModuleType_COMPUTE: return ModuleType::kCompute;
    case VGF::ModuleType_GRAPH: return ModuleType::kGraph;
  }
  fail(ErrorCode::kParse, source,
       where + ": type " + std::to_string(static_cast<int>(t)) + " is neither COMPUTE (0) nor GRAPH (1)");
}

std::vector<BindingSlot> slots(const flatbuffers::Vector<flatbuffers::Offset<VGF::BindingSlot>>* v) {
  std::vector<BindingSlot> r;
  if (!v) return r;
  r.reserve(v->size());
  for (const VGF::BindingSlot* s : *v) r.push_back({s->binding(), s->mrt_index()});
  return r;
}

void read_modules(const VGF::ModuleTable* t, Container& c, std::string_view source) {
  if (!t->modules()) return;
  c.modules.reserve(t->modules()->size());
  for (flatbuffers::uoffset_t i = 0; i < t->modules()->size(); ++i) {
    const VGF::Module* m = t->modules()->Get(i);
    std::string where = "module section: module " + std::to_string(i);
    Module out;
    out.type = module_type(m->type(), source, where);
    out.name = str(m->name());
    out.entry_point = str(m->entry_point());
    switch (m->code_type()) {
      case VGF::ModuleCode_NONE: out.code_type = CodeType::kNone; break;
      case VGF::ModuleCode_SPIRV:
        out.code_type = CodeType::kSpirv;
        if (m->code_as_SPIRV()) out.spirv = vec(m->code_as_SPIRV()->words());
        break;
      case VGF::ModuleCode_GLSL:
        out.code_type = CodeType::kGlsl;
        if (m->code_as_GLSL()) out.source = str(m->code_as_GLSL()->code());
        break;
      case VGF::ModuleCode_HLSL:
        out.code_type = CodeType::kHlsl;
        if (m->code_as_HLSL()) out.source = str(m->code_as_HLSL()->code());
        break;
      default:
        fail(ErrorCode::kParse, source,
             where + " '" + out.name + "': code type " + std::to_string(static_cast<int>(m->code_type())) +
                 " is not SPIRV (1), GLSL (2) or HLSL (3)");
    }
    c.modules.push_back(std::move(out));
  }
}

void read_resources(const VGF::ModelResourceTable* t, Container& c, std::string_view source) {
  if (!t->mrt_entry()) return;
  c.resources.reserve(t->mrt_entry()->size());
  for (flatbuffers::uoffset_t i = 0; i < t->mrt_entry()->size(); ++i) {
    const VGF::ModelResourceTableEntry* e = t->mrt_entry()->Get(i);
    std::string where = "model resource section: resource " + std::to_string(i);
    Resource r;
    r.vk_descriptor_type = e->vk_descriptor_type();
    r.vk_format = e->vk_format();
    auto cat = static_cast<uint8_t>(e->category());
    if (cat > static_cast<uint8_t>(ResourceCategory::kConstant))
      fail(ErrorCode::kParse, source,
           where + ": category " + std::to_string(cat) +
               " is not INPUT (0), OUTPUT (1), INTERMEDIATE (2) or CONSTANT (3)");
    r.category = static_cast<ResourceCategory>(cat);
    if (const VGF::Description* d = e->description()) {
      r.shape = vec(d->shape());
      r.strides = vec(d->strides());
    }
    switch (e->extra_config_type()) {
      case VGF::ExtraConfig_NONE: break;
      case VGF::ExtraConfig_SamplerConfig:
        if (const VGF::SamplerConfig* s = e->extra_config_as_SamplerConfig()) {
          r.sampler = SamplerConfig{s->min_filter(), s->mag_filter(), s->address_mode_u(), s->address_mode_v(),
                                    s->border_color()};
        }
        break;
      default:
        fail(ErrorCode::kParse, source,
             where + ": extra_config type " + std::to_string(static_cast<int>(e->extra_config_type())) +
                 " is not SamplerConfig (1)");
    }
    r.alias_group_id = e->alias_group_id();
    c.resources.push_back(std::move(r));
  }
}

void read_sequence(const VGF::ModelSequenceTable* t, Container& c, std::string_view source) {
  Sequence& s = c.sequence;
  if (t->segments()) {
    s.segments.reserve(t->segments()->size());
    for (flatbuffers::uoffset_t i = 0; i < t->segments()->size(); ++i) {
      const VGF::SegmentInfo* g = t->segments()->Get(i);
      Segment out;
      out.type = module_type(g->type(), source, "model sequence section: segment " + std::to_string(i));
      out.name = str(g->name());
      out.module_index = g->module_index();
      if (g->set_infos()) {
        for (const VGF::DescriptorSetInfo* d : *g->set_infos()) out.set_infos.push_back({slots(d->bindings()), d->set_index()});
      }
      out.inputs = slots(g->inputs());
      out.outputs = slots(g->outputs());
      out.constants = vec(g->constants());
      out.dispatch_shape = vec(g->dispatch_shape());
      if (g->push_constant_ranges()) {
        for (const VGF::PushConstantRange* p : *g->push_constant_ranges())
          out.push_constant_ranges.push_back({p->stage_flags(), p->offset(), p->size()});
      }
      s.segments.push_back(std::move(out));
    }
  }
  s.inputs = slots(t->inputs());
  s.outputs = slots(t->outputs());
  if (t->input_names()) {
    for (const flatbuffers::String* n : *t->input_names()) s.input_names.push_back(str(n));
  }
  if (t->output_names()) {
    for (const flatbuffers::String* n : *t->output_names()) s.output_names.push_back(str(n));
  }
}

// Every constant's Buffer is a slice of `bytes` (the mapped file), which it keeps alive.
void read_constants(const Buffer& bytes, const Section& sec, Container& c, std::string_view source) {
  const uint8_t* p = bytes.data() + sec.offset;
  const uint64_t size = sec.size;
  if (size == 0) return;
  auto view = [&](const uint8_t* data, uint64_t n) {
    return bytes.slice(static_cast<size_t>(data - bytes.data()), static_cast<size_t>(n));
  };

  if (size >= 8 && std::memcmp(p, kConst00, 8) == 0) {
    c.constant_encoding = ConstantEncoding::kRaw;
    if (size < kConstHeaderSize)
      fail(ErrorCode::kParse, source,
           "constant section: " + std::to_string(size) + " bytes, too small for the 16-byte CONST00 header");
    const uint64_t count = load_le<uint64_t>(p + 8);
    std::optional<uint64_t> meta = detail::mul(count, kConstRecordSize);
    std::optional<uint64_t> payload_start = meta ? detail::add(kConstHeaderSize, *meta) : std::nullopt;
    if (!payload_start || *payload_start > size)
      fail(ErrorCode::kParse, source,
           "constant section: count " + std::to_string(count) + " needs " +
               (meta ? std::to_string(*meta) : std::string("more than 2^64")) +
               " bytes of metadata records, but the section has " + std::to_string(size - kConstHeaderSize) +
               " bytes after its header");
    const uint64_t payload_size = size - *payload_start;
    const uint8_t* payload = p + *payload_start;
    c.constants.reserve(static_cast<size_t>(count));
    for (uint64_t i = 0; i < count; ++i) {
      const uint8_t* rec = p + kConstHeaderSize + i * kConstRecordSize;
      Constant k;
      k.mrt_index = load_le<uint32_t>(rec);
      k.sparsity_dimension = load_le<int32_t>(rec + 4);
      const uint64_t n = load_le<uint64_t>(rec + 8);
      const uint64_t off = load_le<uint64_t>(rec + 16);
      if (k.sparsity_dimension < -1)
        fail(ErrorCode::kParse, source,
             "constant section: constant " + std::to_string(i) + ": sparsity_dimension " +
                 std::to_string(k.sparsity_dimension) + " is invalid (-1: dense, >= 0: a dimension)");
      if (off > payload_size || n > payload_size - off)
        fail(ErrorCode::kParse, source,
             "constant section: constant " + std::to_string(i) + ": payload range " + range_str(off, n) +
                 " runs past the end of the " + std::to_string(payload_size) + "-byte payload");
      k.data = view(payload + off, n);
      c.constants.push_back(std::move(k));
    }
    return;
  }
  if (size >= 8 && std::memcmp(p, "CONST", 5) == 0) {
    fail(ErrorCode::kUnsupported, source,
         "constant section: layout version '" + std::string(reinterpret_cast<const char*>(p), 7) +
             "' is not CONST00, the one Weft reads");
  }

  // Older files: a FlatBuffers ConstantSection.
  c.constant_encoding = ConstantEncoding::kLegacyFlatbuffers;
  FlatSection fs(p, size, "constant section (legacy FlatBuffers layout)", source);
  const VGF::ConstantSection* t = fs.root<VGF::ConstantSection>("ConstantSection");
  if (!t->data()) return;
  c.constants.reserve(t->data()->size());
  for (flatbuffers::uoffset_t i = 0; i < t->data()->size(); ++i) {
    const VGF::ConstantData* d = t->data()->Get(i);
    Constant k;
    k.mrt_index = d->mrt_index();
    k.sparsity_dimension = d->sparsity_dimension();
    if (k.sparsity_dimension < -1)
      fail(ErrorCode::kParse, source,
           "constant section: constant " + std::to_string(i) + ": sparsity_dimension " +
               std::to_string(k.sparsity_dimension) + " is invalid (-1: dense, >= 0: a dimension)");
    if (d->raw() && d->raw()->size() > 0) {
      k.data = view(fs.map_back(d->raw()->data()), d->raw()->size());
    } else {
      k.data = view(p, 0);
    }
    c.constants.push_back(std::move(k));
  }
}

}  // namespace

Container parse(const Buffer& bytes, std::string_view source, const ReadOptions& options) {
  const uint8_t* d = bytes.data();
  const uint64_t n = bytes.size();
  if (n < kHeaderSize || d == nullptr)
    fail(ErrorCode::kParse, source,
         "header: the file is " + std::to_string(n) + " bytes, shorter than the 128-byte VGF header");

  Container c;
  Header& h = c.header;
  if (std::memcmp(d, "VGF1", 4) == 0) {
    h.old_magic = false;
  } else if (load_le<uint32_t>(d) == kOldMagic) {
    h.old_magic = true;
  } else {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%02x %02x %02x %02x", d[0], d[1], d[2], d[3]);
    fail(ErrorCode::kParse, source,
         std::string("header: magic: expected the bytes 'VGF1' (or the old value 0xF0E1D2C3), found ") + buf);
  }
  h.vk_header_version = load_le<uint16_t>(d + 4);
  h.version = {d[8], d[9], d[10]};
  if (h.version.major != 0 || h.version.minor > 4)
    fail(ErrorCode::kUnsupported, source,
         "header: format version " + h.version.str() + " is newer than 0.4.x, the newest Weft reads");

  struct Named {
    const char* name;
    Section* sec;
  };
  Named sections[] = {{"module section", &h.modules},
                      {"model sequence section", &h.sequence},
                      {"model resource section", &h.resources},
                      {"constant section", &h.constants}};
  for (size_t i = 0; i < 4; ++i) {
    *sections[i].sec = {load_le<uint64_t>(d + 16 + 16 * i), load_le<uint64_t>(d + 24 + 16 * i)};
    const Section& s = *sections[i].sec;
    if (s.offset > n || s.size > n - s.offset)
      fail(ErrorCode::kParse, source,
           std::string(sections[i].name) + ": " + range_str(s.offset, s.size) + " runs past the end of the " +
               std::to_string(n) + "-byte file");
    if (s.size > 0 && s.offset < kHeaderSize)
      fail(ErrorCode::kParse, source,
           std::string(sections[i].name) + ": " + range_str(s.offset, s.size) +
               " overlaps the 128-byte header");
  }
  for (size_t i = 0; i < 4; ++i) {
    for (size_t j = i + 1; j < 4; ++j) {
      const Section& a = *sections[i].sec;
      const Section& b = *sections[j].sec;
      if (a.size == 0 || b.size == 0) continue;
      if (a.offset < b.offset + b.size && b.offset < a.offset + a.size)  // no overflow: both end <= n
        fail(ErrorCode::kParse, source,
             std::string(sections[i].name) + " " + range_str(a.offset, a.size) + " and " + sections[j].name + " " +
                 range_str(b.offset, b.size) + " overlap");
    }
  }

  if (h.modules.size) {
    FlatSection fs(d + h.modules.offset, h.modules.size, "module section", source);
    read_modules(fs.root<VGF::ModuleTable>("ModuleTable"), c, source);
  }
  if (h.sequence.size) {
    FlatSection fs(d + h.sequence.offset, h.sequence.size, "model sequence section", source);
    read_sequence(fs.root<VGF::ModelSequenceTable>("ModelSequenceTable"), c, source);
  }
  if (h.resources.size) {
    FlatSection fs(d + h.resources.offset, h.resources.size, "model resource section", source);
    read_resources(fs.root<VGF::ModelResourceTable>("ModelResourceTable"), c, source);
  }
  read_constants(bytes, h.constants, c, source);

  c.warnings = check(c, source, options);
  return c;
}

Container load(const std::string& path, const ReadOptions& options) {
  std::error_code ec;
  auto size = std::filesystem::file_size(path, ec);
  if (ec) throw Error(ErrorCode::kIo, "cannot read: " + ec.message(), {.file = path});
  Buffer bytes = Buffer::map_file(path, 0, static_cast<size_t>(size));
  return parse(bytes, path, options);
}

}  // namespace weft::vgf
