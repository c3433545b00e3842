// The VGF container of Arm's ML SDK for Vulkan: Weft's deployable artifact. A VGF file holds the
// SPIR-V modules of a model (GRAPH modules with Weft's TOSA graphs, COMPUTE modules with shaders),
// the table of its resources (inputs, outputs, intermediates, constants), the sequence of segments
// that run it, and the constant data. Layout, the facts behind it and Weft's rules: docs/vgf.md.
//
//   vgf::Container c = vgf::from_module(module);   // IR -> container (spirv::encode)
//   vgf::save(c, "model.vgf");                      // version 0.4.3, 8-byte aligned sections
//   vgf::Container r = vgf::load("model.vgf");     // mmap; checked; constants point into the map
//   weft::Module m = vgf::to_module(r, "model.vgf"); // the whole sequence -> IR (spirv::decode)
//
// Models with custom operators (tosa.CUSTOM nodes carrying compiled Vulkan compute shaders) become
// a sequence of GRAPH and COMPUTE segments; docs/vgf.md, "Custom operators: COMPUTE segments".
//
// Every malformed input is a weft::Error (kParse for a broken layout, kVerify for tables that
// disagree with each other or a module that fails validation, kUnsupported for a newer format)
// whose location names the file and whose message names the section or field and the rule broken.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "weft/dtype.h"
#include "weft/graph.h"
#include "weft/spirv.h"
#include "weft/tensor.h"

namespace weft::vgf {

// ---- Constants of the format ------------------------------------------------------------------

inline constexpr size_t kHeaderSize = 128;
inline constexpr uint32_t kOldMagic = 0xF0E1D2C3;  // magic of older files (u32, little-endian)
inline constexpr uint64_t kSectionAlignment = 8;   // since format 0.4.3
// VK_HEADER_VERSION written by Weft: the Vulkan headers whose enumerant values (VkFormat,
// VkDescriptorType, including the VK_ARM_tensors ones below) Weft's writer follows.
inline constexpr uint16_t kVkHeaderVersion = 320;

// VkDescriptorType values.
inline constexpr uint32_t kDescriptorTypeStorageBuffer = 7;
inline constexpr uint32_t kDescriptorTypeTensorARM = 1000460000;  // VK_DESCRIPTOR_TYPE_TENSOR_ARM
inline constexpr uint32_t kNoDescriptorType = 0xFFFFFFFF;         // constants: no descriptor
inline constexpr uint32_t kDescriptorTypeCombinedImageSampler = 1;
// DescriptorSetInfo::set_index when not given: the set is the entry's position in set_infos.
inline constexpr uint32_t kSetIndexUnset = 0xFFFFFFFF;
// Resource::alias_group_id when the row shares its storage with no other row.
inline constexpr uint32_t kNoAliasGroup = 0xFFFFFFFF;
// VK_SHADER_STAGE_COMPUTE_BIT: the stage of a COMPUTE segment's push constant range.
inline constexpr uint32_t kShaderStageCompute = 0x20;

// VkFormat values of one-component tensor elements.
namespace format {
inline constexpr uint32_t kUndefined = 0;
inline constexpr uint32_t kR8Uint = 13;
inline constexpr uint32_t kR8Sint = 14;
inline constexpr uint32_t kR16Uint = 74;
inline constexpr uint32_t kR16Sint = 75;
inline constexpr uint32_t kR16Sfloat = 76;
inline constexpr uint32_t kR32Uint = 98;
inline constexpr uint32_t kR32Sint = 99;
inline constexpr uint32_t kR32Sfloat = 100;
inline constexpr uint32_t kR64Uint = 110;
inline constexpr uint32_t kR64Sint = 111;
inline constexpr uint32_t kR8BoolARM = 1000460000;
inline constexpr uint32_t kR16SfloatBfloat16ARM = 1000460001;
inline constexpr uint32_t kR8SfloatFloat8E4M3ARM = 1000460002;
inline constexpr uint32_t kR8SfloatFloat8E5M2ARM = 1000460003;
}  // namespace format

// ---- The tables -------------------------------------------------------------------------------

enum class ModuleType : uint8_t { kCompute = 0, kGraph = 1 };
// The ModuleCode union's type tag (0: no code, a placeholder provided at load time).
enum class CodeType : uint8_t { kNone = 0, kSpirv = 1, kGlsl = 2, kHlsl = 3 };
enum class ResourceCategory : uint8_t { kInput = 0, kOutput = 1, kIntermediate = 2, kConstant = 3 };
// How the constant section of a file was stored. Weft always writes kRaw.
enum class ConstantEncoding : uint8_t { kRaw, kLegacyFlatbuffers };

const char* module_type_name(ModuleType t);              // "COMPUTE", "GRAPH"
const char* code_type_name(CodeType t);                  // "NONE", "SPIRV", "GLSL", "HLSL"
const char* category_name(ResourceCategory c);           // "INPUT", ...
std::string descriptor_type_name(uint32_t vk_descriptor_type);  // "VK_DESCRIPTOR_TYPE_TENSOR_ARM", or the number
std::string format_name(uint32_t vk_format);                    // "VK_FORMAT_R32_SFLOAT", or the number
// Names of Vulkan enumerants as Arm's tools print them: the canonical VK_* name (from the Vulkan
// header the build uses, plus VK_ARM_tensors' values), VkDescriptorType 0xFFFFFFFF "none", and
// "Unknown(<n>)" for a value neither knows.
enum class VkEnum : uint8_t { kFormat, kDescriptorType, kFilter, kSamplerAddressMode, kBorderColor };
std::string vk_name(VkEnum kind, uint32_t value);

struct Version {
  uint8_t major = 0;
  uint8_t minor = 4;
  uint8_t patch = 3;
  auto operator<=>(const Version&) const = default;
  std::string str() const;  // "0.4.3"
};

// A section's place in the file.
struct Section {
  uint64_t offset = 0;
  uint64_t size = 0;
  bool operator==(const Section&) const = default;
};

struct Header {
  bool old_magic = false;  // the file used the old magic 0xF0E1D2C3
  uint16_t vk_header_version = kVkHeaderVersion;
  Version version;
  // Where load() found the sections; save() computes its own and ignores these.
  Section modules, sequence, resources, constants;
};

struct Module {
  ModuleType type = ModuleType::kGraph;
  std::string name;
  std::string entry_point;
  CodeType code_type = CodeType::kNone;
  std::vector<uint32_t> spirv;  // code_type kSpirv
  std::string source;           // code_type kGlsl / kHlsl
  bool operator==(const Module&) const = default;
};

struct SamplerConfig {
  uint32_t min_filter = 0;
  uint32_t mag_filter = 0;
  uint32_t address_mode_u = 0;
  uint32_t address_mode_v = 0;
  uint32_t border_color = 0;
  bool operator==(const SamplerConfig&) const = default;
};

// One row of the model resource table. Shape dimensions of -1 are unknown (not allowed for
// constants). Strides are in bytes, one per dimension (VkTensorDescriptionARM::pStrides);
// empty strides mean the packed row-major layout. Rows with the same alias_group_id (the SDK's
// ModelResourceTableEntry.alias_group_id, VGF library 0.10) are views of one storage, e.g. the
// TENSOR_ARM row a GRAPH segment binds and the STORAGE_BUFFER row a COMPUTE segment binds for the
// same tensor; kNoAliasGroup (not written to the file) for a row of its own. Constants never alias.
struct Resource {
  uint32_t vk_descriptor_type = kDescriptorTypeTensorARM;
  uint32_t vk_format = format::kUndefined;
  ResourceCategory category = ResourceCategory::kInput;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  std::optional<SamplerConfig> sampler;  // the ExtraConfig union
  uint32_t alias_group_id = kNoAliasGroup;
  bool operator==(const Resource&) const = default;
};

// A binding number tied to a row of the resource table.
struct BindingSlot {
  uint32_t binding = 0;
  uint32_t mrt_index = 0;
  bool operator==(const BindingSlot&) const = default;
};

struct DescriptorSetInfo {
  std::vector<BindingSlot> bindings;
  uint32_t set_index = kSetIndexUnset;
  bool operator==(const DescriptorSetInfo&) const = default;
};

struct PushConstantRange {
  uint32_t stage_flags = 0;
  uint32_t offset = 0;
  uint32_t size = 0;
  bool operator==(const PushConstantRange&) const = default;
};

struct Segment {
  ModuleType type = ModuleType::kGraph;
  std::string name;
  uint32_t module_index = 0;
  std::vector<DescriptorSetInfo> set_infos;
  std::vector<BindingSlot> inputs;
  std::vector<BindingSlot> outputs;
  std::vector<uint32_t> constants;       // indexes into Container::constants
  std::vector<uint32_t> dispatch_shape;  // 3 entries (COMPUTE: workgroups; GRAPH: 0,0,0) or none
  std::vector<PushConstantRange> push_constant_ranges;
  bool operator==(const Segment&) const = default;

  // The descriptor set number of set_infos[i]: its set_index, else its position.
  uint32_t set_number(size_t i) const;
};

struct Sequence {
  std::vector<Segment> segments;
  std::vector<BindingSlot> inputs;   // the model's inputs, in order
  std::vector<BindingSlot> outputs;  // the model's outputs, in order
  std::vector<std::string> input_names;
  std::vector<std::string> output_names;
  bool operator==(const Sequence&) const = default;
};

// A constant's data. Its type (format, shape) is the resource at mrt_index. After load() the
// bytes are a view into the memory-mapped file (never copied); the Buffer keeps the map alive.
struct Constant {
  uint32_t mrt_index = 0;
  int64_t sparsity_dimension = -1;  // -1: dense; >= 0: 2:4 sparse along that dimension
  Buffer data;                      // unpadded bytes
};

struct Container {
  Header header;
  std::vector<Module> modules;
  std::vector<Resource> resources;
  Sequence sequence;
  std::vector<Constant> constants;
  ConstantEncoding constant_encoding = ConstantEncoding::kRaw;
  // What parse()/load() accepted but a user should hear about (check()'s warnings): placeholder
  // modules, a module entry_point that is not its OpGraphEntryPointARM's name. Not written.
  std::vector<std::string> warnings;
};

// A module without code (Arm's encoder writes such placeholders: the application supplies the
// shader when it loads the model) or whose code is not a SPIR-V stream (the SDK's updater test
// files carry one zero word). Such a container is read and dumped, not run.
bool is_placeholder(const Module& m);

// Same modules, resources, sequence and constants (bytes compared); the header is not compared.
bool equal_tables(const Container& a, const Container& b);

// ---- Reading ----------------------------------------------------------------------------------

struct ReadOptions {
  // Run spirv::validate() on every GRAPH module (a diagnostic is an Error(kVerify)).
  bool validate_modules = true;
};

// Maps `path` read-only and decodes it: every offset and size is checked against the file, each
// FlatBuffers section goes through the FlatBuffers verifier, then check() runs. Constants are
// Buffers into the mapping.
Container load(const std::string& path, const ReadOptions& options = {});
// The same for bytes already in memory; constants share `bytes`' storage (no copy).
Container parse(const Buffer& bytes, std::string_view source_name, const ReadOptions& options = {});

// The rules that tie the tables together (docs/vgf.md, "Checks"): indexes in range, segment and
// module types agreeing, constants' sizes matching their resources, a GRAPH module's interface
// variables and graph constants matching the segment's bindings and constants, modules valid.
// load() and save() call it; throws Error(kVerify) naming `source_name` and the field. Returns
// the warnings: what is accepted though a producer should not write it (Container::warnings).
std::vector<std::string> check(const Container& c, std::string_view source_name, const ReadOptions& options = {});

// ---- Writing ----------------------------------------------------------------------------------

struct WriteOptions {
  // check() the container (without re-validating its modules) before writing. Off only to
  // produce broken files on purpose (tests, fuzzing seeds).
  bool check = true;
};

// Format 0.4.3: magic "VGF1", sections in the order header, modules, sequence, resources,
// constants, each at an 8-byte aligned offset; the raw CONST00 constant section, every payload
// padded to 8 bytes. The same container gives the same bytes. save() writes PATH.tmp and renames
// it over PATH (a container still mapping the old file keeps valid bytes).
void save(const Container& c, const std::string& path, const WriteOptions& options = {});
std::vector<uint8_t> serialize(const Container& c, const WriteOptions& options = {});

// ---- Models -----------------------------------------------------------------------------------

struct BuildOptions {
  spirv::EncodeOptions encode;
};

// One GRAPH module (spirv::encode of `module`, entry point = the entry graph's name) and one
// GRAPH segment; a resource per entry-graph input (INPUT), output (OUTPUT) and graph constant
// (CONSTANT, in GraphConstantID order, so that GraphConstantID i is constant i), each with its
// format, shape and packed byte strides; bindings read from the module's interface variables;
// the sequence's inputs/outputs named after the graph's. Constant data is shared, not copied.
// Throws what spirv::encode throws, and Error(kUnsupported) for tensor-array interfaces.
//
// When the entry graph holds CUSTOM nodes (compiled shaders: shader_language "SPIR-V" and
// weft_dispatch in the payload), the graph is split into a sequence of segments: the other
// nodes in maximal runs, each a GRAPH segment with its own module, and one COMPUTE segment per
// CUSTOM node, with INTERMEDIATE resources for the tensors that cross segments and Weft's record
// of each CUSTOM node (docs/vgf.md, "Custom operators: COMPUTE segments"). A CUSTOM node whose
// shader is not compiled is an Error(kUnsupported) naming the node.
Container from_module(const weft::Module& module, const BuildOptions& options = {});

// The data of a GRAPH segment's graph constants for spirv::decode(): GraphConstantID = the
// constant's index in Container::constants, typed by its resource; tensors share the buffers.
std::vector<spirv::GraphConstant> graph_constants(const Container& c, size_t segment);

// Decodes GRAPH segment `segment` back into IR (spirv::decode with graph_constants()).
weft::Module to_module(const Container& c, size_t segment = 0, std::string_view source_name = "<vgf>");

// Decodes the whole sequence into one module: the entry graph has the model's inputs and outputs
// (named by input_names/output_names), the nodes of every GRAPH segment (in sequence order,
// connected through the resources they share: a row, or rows of one alias group) and one CUSTOM
// node per COMPUTE segment, rebuilt from Weft's record. A container of one GRAPH segment decodes
// exactly as to_module(c, 0, source_name). The result verifies (verify_module). Errors: kVerify
// for tables that do not connect (a resource read before any segment writes it, types that
// disagree), kUnsupported for a COMPUTE segment without Weft's record.
weft::Module to_module(const Container& c, std::string_view source_name);

// Weft's record of a COMPUTE segment made from a CUSTOM node: a CONSTANT resource (R8_UINT, [n],
// no descriptor type) listed in the segment's `constants`, holding a JSON document that starts
// with {"weft_custom_op":1 (docs/vgf.md). It keeps what the tables do not: the node's
// operator_name, domain_name and implementation_attrs (verbatim: push constant names and values,
// workgroup size, unknown keys), its label, and the names and types of its tensors.
struct CustomOpRecord {
  uint32_t constant = 0;  // index of the record in Container::constants
  std::string graph;      // name of the model's entry graph
  ProfileSet profiles = kAllProfiles;
  std::string node;       // the node's label ("" when it had none)
  std::string operator_name;
  std::string domain_name;
  std::string implementation_attrs;
  struct Operand {
    std::string name;
    TensorType type;
  };
  std::vector<Operand> inputs;
  std::vector<Operand> outputs;
};
// The record of COMPUTE segment `segment`, cross-checked against the tables: the module's code,
// entry point and name, every binding (set, binding, resource descriptor type, format, shape,
// sampler), the dispatch shape and the push constant range must be what the record's payload
// says. None when the segment has no record (a COMPUTE segment Weft did not write). Throws
// Error(kVerify) naming `source_name`, the segment and the field; check() calls it.
std::optional<CustomOpRecord> custom_op_record(const Container& c, size_t segment,
                                               std::string_view source_name = "<vgf>");

// ---- Formats ----------------------------------------------------------------------------------

// The VkFormat Weft writes for an element type (none for i4 and shape).
std::optional<uint32_t> format_of(DType t);
// The element type of a tensor format (the UINT formats read as the signed type of that width;
// R64 as i48, Weft's 64-bit storage); none for formats that are not tensor elements Weft knows.
std::optional<DType> dtype_of(uint32_t vk_format);
// Bytes per element of a tensor format Weft knows.
std::optional<size_t> element_size(uint32_t vk_format);
// Packed row-major byte strides of `shape` with `element_bytes` per element.
std::vector<int64_t> packed_strides(const std::vector<int64_t>& shape, size_t element_bytes);
// The tensor type of a resource (format known, every dimension >= 0), else none.
std::optional<TensorType> tensor_type(const Resource& r);

// ---- Inspection ---------------------------------------------------------------------------------

struct DumpOptions {
  bool disassemble = false;  // add each SPIR-V module's disassembly ("disassembly": text)
};
// The whole container as JSON (header, modules, resources, sequence, constants with their
// sizes), pretty-printed with 2-space indentation. Deterministic: two builds diff cleanly.
std::string to_json(const Container& c, const DumpOptions& options = {});

// The container as Arm's `vgf_dump -i FILE` prints it (VGF library 0.10): keys sorted, 4-space
// indentation, no trailing newline; header version only; resources with Vulkan enumerant names;
// model inputs/outputs with their names; segments' descriptor sets with their set numbers;
// modules' shader type and whether code is present (never the code).
std::string to_vgf_dump_json(const Container& c);

// A Scenario Runner scenario (Arm ML SDK) that runs the container: a "graph" resource for the
// file, a tensor (or buffer) resource per model input and output reading / writing .npy files, a
// dispatch_graph command binding them by the model's binding numbers (set 0), and for a COMPUTE
// segment with push constants (Weft's record holds their bytes) a raw_data resource and the
// graph's push_constants_size; a module without code gets a "shader" resource to supply and a
// shader substitution. Input and output .npy paths: `inputs` / `outputs` by model input and
// output, default "<name>.npy" with the model's names (else "input_<i>.npy", "output_<i>.npy").
// Throws Error(kUnsupported) naming a model input/output the runner cannot bind from .npy (images).
struct ScenarioOptions {
  std::string vgf_path = "model.vgf";  // as the scenario refers to the container
  std::vector<std::string> inputs;     // one per model input, or empty
  std::vector<std::string> outputs;    // one per model output, or empty
  bool boundaries = false;             // mark_boundary commands around the dispatch (frame capture)
};
struct Scenario {
  std::string json;  // the scenario (4-space indented)
  // Files the scenario reads besides the inputs (push constant blocks as .npy of bytes), by the
  // path the scenario names them with, relative to the scenario file.
  std::vector<std::pair<std::string, std::vector<uint8_t>>> files;
};
Scenario to_scenario(const Container& c, const ScenarioOptions& options = {});

}  // namespace weft::vgf
