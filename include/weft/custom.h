// Custom operators carried as Vulkan compute shaders (docs/custom-ops.md).
//
// A user's operator that no framework knows stays inside the compiled model as a tosa.CUSTOM node
// whose implementation_attrs payload (JSON, the "Vulkan shader in TOSA custom operation
// attributes" schema) carries the shader, its workgroup size, push constants and the Vulkan
// resource of every input and output. `weft compile` turns each such node into a COMPUTE segment
// of the VGF; the Vulkan backend runs it.
//
//   weft::custom::OpSpec spec = ...;                     // or: weft compile --custom-ops ops.json
//   weft::custom::register_op(spec);                     // ONNX (domain, op_type) / .weft operator_name
//   weft::Module m = weft::import_onnx("model.onnx");   // matching nodes become tosa.CUSTOM
//
// Three layers, each usable on its own:
//   - Payload: parse_payload() / write_payload(), a strict validator of the JSON schema;
//   - Contract: check_contract(), the resource contract between a node's tensors and its shader
//     resources (scalar tensor/buffer views, packed C=1/2/4 images, NHWC 4-D feature tensors);
//   - Registration: OpSpec, register_op(), read_ops_file(), which build the payload for a node.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "weft/error.h"
#include "weft/graph.h"

namespace weft::custom {

// ---- The implementation_attrs payload ---------------------------------------------------------

enum class ShaderLanguage { kUnspecified, kSpirv, kGlsl, kHlsl };
const char* language_name(ShaderLanguage l);  // "", "SPIR-V", "GLSL", "HLSL"

// One `input_<i>_*` / `output_<i>_*` group. Every property is optional in the schema; the
// resource contract (check_contract) says which ones a runnable node needs.
struct Resource {
  bool output = false;
  uint32_t index = 0;
  std::optional<std::string> vkformat;         // "VK_FORMAT_R32_SFLOAT"
  std::optional<std::string> descriptor_type;  // "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER"
  std::optional<std::string> type;             // "Tensor", "Buffer", "Image"
  std::optional<int64_t> binding;              // >= 0
  std::optional<int64_t> descriptor_set;       // >= 0
  // Weft's extension properties (`*_weft_filter`, `*_weft_address_mode`) for sampled images:
  // "nearest" | "linear"; "clamp_to_edge" | "repeat" | "mirrored_repeat" | "clamp_to_border".
  std::optional<std::string> filter;
  std::optional<std::string> address_mode;
  // `input_0_binding` style name of this group, for messages.
  std::string key(std::string_view property) const;
  bool operator==(const Resource&) const = default;
};

struct PushConstant {
  std::string name;
  uint32_t size = 0;  // bytes
  bool operator==(const PushConstant&) const = default;
};

struct Payload {
  std::string entry_point;                    // required
  std::array<uint32_t, 3> workgroup_sizes{};  // required, each >= 1
  ShaderLanguage language = ShaderLanguage::kUnspecified;
  std::optional<std::string> shader_code;  // as written: source text, or base64 for SPIR-V
  std::vector<uint32_t> spirv;             // decoded words when language is SPIR-V
  std::optional<std::string> push_constants_text;  // "scale: 4, bias: 4", as written
  std::vector<PushConstant> push_constants;        // parsed from it
  std::vector<Resource> inputs;   // sorted by index; indexes need not be dense
  std::vector<Resource> outputs;  // sorted by index
  // Weft's extensions, needed to run the node and written by Weft's lowering:
  //   "weft_push_constant_data": base64 of the push constant block (its size = the sum of the sizes);
  //   "weft_dispatch": [x, y, z] workgroup counts, each >= 1.
  //   "weft_dispatch_rule": how the dispatch was decided when the payload did not give it (prepare:
  //   workgroup_sizes read as workgroup counts, and why), for --explain.
  std::vector<uint8_t> push_constant_data;
  std::optional<std::array<uint32_t, 3>> dispatch;
  std::optional<std::string> dispatch_rule;
  // "is_vkshader": written by ExecuTorch's Arm backend (true for Vulkan shader payloads); kept.
  std::optional<bool> is_vkshader;
  // Keys Weft does not know (forward compatibility): kept verbatim (key, JSON text of the value),
  // written back unchanged, never acted on. See ParseOptions::unknown_keys.
  std::vector<std::pair<std::string, std::string>> unknown;

  const Resource* input(uint32_t index) const;
  const Resource* output(uint32_t index) const;
  bool operator==(const Payload&) const = default;
};

struct ParseOptions {
  // What an unknown key does: a well-formed key Weft does not know (a new top-level key, or a new
  // property of `input_<i>_` / `output_<i>_`) is kept in Payload::unknown and listed in
  // `warnings` (kKeep), or is an error (kReject). Malformed indexed keys (`input_01_binding`,
  // `input_x_binding`, `input_0_`) are always errors: they break the naming rule itself.
  enum class Unknown { kKeep, kReject } unknown_keys = Unknown::kKeep;
};

// Parses and validates every rule of the schema (required keys, exactly three workgroup sizes
// >= 1, the shader_language enum, base64 SPIR-V, "name: size" push constants, indexed keys
// without leading zeros, the descriptor type pattern, integer bindings and sets >= 0, known VkFormat
// names, and Weft's extension keys). Throws Error(kVerify) whose location is `where` with
// operand = the offending key, and whose message names the rule.
Payload parse_payload(std::string_view json, const Location& where = {}, const ParseOptions& options = {},
                      std::vector<std::string>* warnings = nullptr);
// Canonical JSON (keys sorted, 2-space indentation off: one line), SPIR-V written as base64 of
// `spirv` when the language is SPIR-V. parse_payload(write_payload(p)) == p.
std::string write_payload(const Payload& p);

// ---- Formats and descriptor types ---------------------------------------------------------------

struct FormatInfo {
  const char* name;     // "VK_FORMAT_R32G32_SFLOAT"
  uint32_t value;       // VkFormat enumerant
  int components;       // 1..4
  int component_bytes;  // 1, 2, 4 or 8
  char kind;            // 'f' float, 'i' signed int, 'u' unsigned int
};
// Every VkFormat name Weft knows (the one- to four-component 8/16/32/64-bit UINT/SINT/SFLOAT
// formats and Arm's tensor element formats). Unknown names are a validation error.
const FormatInfo* find_format(std::string_view name);
const FormatInfo* find_format(uint32_t value);
// VkDescriptorType value of a name ("VK_DESCRIPTOR_TYPE_STORAGE_BUFFER" -> 7); none if unknown.
std::optional<uint32_t> descriptor_type_value(std::string_view name);
std::string descriptor_type_name(uint32_t value);

// ---- The resource contract ------------------------------------------------------------------------

enum class ResourceKind {
  kBuffer,        // STORAGE_BUFFER / UNIFORM_BUFFER: scalar view, channels in the shape
  kStorageImage,  // STORAGE_IMAGE: packed texels [H,W,C] / [1,H,W,C], C in {1,2,4}
  kSampledImage,  // COMBINED_IMAGE_SAMPLER: as above, read through a sampler
  kTensorArm,     // VK_DESCRIPTOR_TYPE_TENSOR_ARM / STORAGE_TENSOR_EXT: scalar view
};

// A resource as the runtime binds it: the contract applied to a node's tensor.
struct BoundResource {
  bool output = false;
  uint32_t index = 0;      // position in the node's input/output list
  ResourceKind kind = ResourceKind::kBuffer;
  uint32_t descriptor_type = 0;  // VkDescriptorType
  uint32_t set = 0, binding = 0;
  const FormatInfo* format = nullptr;
  TensorType tensor;       // the node's tensor (the shader-local layout)
  // Images: extent and channel count; buffers: 0.
  uint32_t width = 0, height = 0, channels = 0;
  std::string filter = "linear", address_mode = "clamp_to_edge";
};

// Checks the payload against a CUSTOM node's input and output types and returns the resources in
// binding order (inputs first). Errors (kVerify) name the node (`where.node`), the resource key and
// the rule: scalar formats matching the element type for tensors and buffers; images fp32 with shape
// [H,W,C] or [1,H,W,C] and C = the format's component count, C = 3 rejected with the two ways out;
// output images writable (STORAGE_IMAGE); every tensor given a (set, binding) no other resource uses
// unless it is the same tensor (an alias), and aliases describe the same data.
std::vector<BoundResource> check_contract(const Payload& p, const std::vector<TensorType>& inputs,
                                          const std::vector<TensorType>& outputs, const Location& where);

// ---- Shader compilation ------------------------------------------------------------------------------

// A resource variable the shader uses (reflected from its SPIR-V): its descriptor set and binding
// and what it is.
struct ShaderBinding {
  uint32_t set = 0;
  uint32_t binding = 0;
  enum class Kind : uint8_t { kBuffer, kSampledImage, kStorageImage, kTensor, kOther } kind = Kind::kOther;
  bool operator==(const ShaderBinding&) const = default;
};
const char* shader_binding_kind_name(ShaderBinding::Kind k);  // "buffer", "sampled image", ...

struct CompiledShader {
  std::vector<uint32_t> spirv;
  std::array<uint32_t, 3> local_size{};  // from the module's LocalSize execution mode (0 if absent)
  // Every descriptor-bound variable a function of the module references, sorted by (set, binding).
  std::vector<ShaderBinding> bindings;
  // Bytes of the push-constant block the shader reads (0: none; nullopt: not readable from the module).
  std::optional<uint32_t> push_constant_bytes;
};
// Compares the shader's own bindings with what the payload declares: every binding the shader
// uses must be one the payload describes (same set and binding, a descriptor type of the same
// kind), or the dispatch would read a descriptor nobody bound (zeros, or a crash in the driver);
// and the payload's push constants must cover the shader's push-constant block. Throws Error(kVerify) at `where` naming the set, the binding and the payload key.
void check_shader_bindings(const Payload& p, const CompiledShader& shader, const Location& where);
// Compiles GLSL or HLSL compute shader source with shaderc (Vulkan 1.1 environment) and validates
// the result with SPIRV-Tools; SPIR-V input is validated only. `name` names the shader in errors
// (a compile error carries the compiler's "name:line: error: ..." text). Errors are kVerify.
CompiledShader compile_shader(ShaderLanguage language, std::string_view code_or_empty,
                              const std::vector<uint32_t>& spirv, std::string_view entry_point,
                              std::string_view name);

// ---- Registration --------------------------------------------------------------------------------

// How one input or output of a registered operator is handed to the shader.
struct ResourceSpec {
  std::string type = "Buffer";  // "Buffer", "Tensor" or "Image"
  // Defaults: Buffer/Tensor -> STORAGE_BUFFER; Image input -> COMBINED_IMAGE_SAMPLER; Image
  // output -> STORAGE_IMAGE.
  std::string descriptor_type;
  std::string vkformat;          // default: the scalar format of the element type; Image: by C
  int64_t binding = -1;          // default: position, inputs then outputs
  int64_t descriptor_set = 0;
  // "NHWC": a 4-D feature tensor the shader reads/writes channels-last. In an NCHW graph (ONNX)
  // the lowering puts NCHW->NHWC transposes before and NHWC->NCHW after the node. "" = as is.
  std::string layout;
  std::string filter, address_mode;  // sampled images (defaults linear, clamp_to_edge)
  // Outputs only: the shape in the shader's layout, one expression per dimension (see Expr), and
  // the element type ("fp32", ...; default: the first input's).
  std::vector<std::string> shape;
  std::string dtype;
};

// A registered custom operator: what it replaces, and the payload it becomes.
//
// Expressions (push constant values, dispatch sizes, output dimensions) are integer or float
// arithmetic (+ - * / % and parentheses, / of two integers rounds down) over: literals;
// `in<i>[<d>]` / `out<i>[<d>]` (dimension d of input/output i in the shader's layout; d may be
// negative, counting from the end); `in<i>.rank`; `attr.<name>` (the replaced node's integer or
// float attribute, ONNX only; `attr.<name>|<default>` when it may be absent); `ceil_div(a, b)`,
// `min(a, b)`, `max(a, b)`.
struct OpSpec {
  // What it replaces: an ONNX node (domain, "" for the standard domain, and op_type), and/or a
  // CUSTOM node of a .weft model whose operator_name and domain_name are the ones below.
  std::string onnx_domain;
  std::string onnx_op_type;
  std::string operator_name;  // required
  std::string domain_name;    // required
  // The shader: source text (GLSL/HLSL) or SPIR-V words; source_file is read at registration
  // (relative paths against `base_dir`, the ops file's folder).
  std::string language = "GLSL";
  std::string source;
  std::string source_file;
  std::vector<uint32_t> spirv;
  std::string entry_point = "main";
  std::array<uint32_t, 3> workgroup_size{1, 1, 1};
  std::vector<ResourceSpec> inputs;
  std::vector<ResourceSpec> outputs;
  // Push constants in block order: name, size in bytes (4) and value expression.
  struct Push {
    std::string name;
    uint32_t size = 4;
    std::string value;
  };
  std::vector<Push> push_constants;
  // The dispatch rule: invocations along x, y, z (expressions); the dispatch is
  // ceil(invocations / workgroup_size) workgroups per axis.
  std::array<std::string, 3> invocations{"1", "1", "1"};
  // Allowed values of the replaced ONNX node's string attributes (e.g. GridSample "mode":
  // ["bilinear", "linear"]); a node with another value is an import error naming the attribute.
  // An attribute listed here but absent from the node passes (the ONNX default applies; list
  // the default among the allowed values when it matters).
  std::map<std::string, std::vector<std::string>> allowed_attrs;
};

// Registers `spec` (replacing an earlier registration with the same operator_name and
// domain_name). Validates it, reads source_file and compiles the shader now, so that a broken
// shader is reported at registration. Thread-safe. Errors name `origin` (the ops file) and the field.
void register_op(OpSpec spec, const std::string& origin = "", const std::string& base_dir = "");
bool unregister_op(const std::string& domain_name, const std::string& operator_name);
void clear_ops();
// Reads a declarative ops file (JSON: {"custom_ops": [ {...}, ... ]}, docs/custom-ops.md) and
// registers every operator in it; returns their operator names. Nothing is registered when any
// entry is invalid.
std::vector<std::string> register_ops_file(const std::string& path);
std::vector<OpSpec> read_ops_file(const std::string& path);
// The same for the text of an ops file: errors name `origin` (a file name or a description such as
// "weft.register_op('my_op')"); relative shader files are read against `base_dir`.
std::vector<std::string> register_ops_text(std::string_view text, const std::string& origin,
                                           const std::string& base_dir);
std::vector<OpSpec> read_ops_text(std::string_view text, const std::string& origin, const std::string& base_dir);

// The registration for an ONNX node / a .weft CUSTOM node, if any (a copy).
std::optional<OpSpec> find_onnx_op(std::string_view domain, std::string_view op_type);
std::optional<OpSpec> find_op(std::string_view domain_name, std::string_view operator_name);

// Values the expressions read.
struct ExprEnv {
  std::vector<Shape> inputs;   // shader-layout shapes
  std::vector<Shape> outputs;  // known once the output shapes are computed
  std::map<std::string, double> attrs;
  std::map<std::string, bool> attr_is_float;
  std::map<std::string, std::string> string_attrs;  // checked against OpSpec::allowed_attrs
};
struct ExprValue {
  double value = 0;
  bool is_float = false;
};
// Evaluates an expression; errors (kInvalidArgument) name `what` (e.g. "push constant 'scale'").
ExprValue eval_expr(std::string_view expr, const ExprEnv& env, const std::string& what);

// Builds the payload of a node of a registered op: the shader compiled to SPIR-V, the resources
// with their defaults filled in, push constant data and dispatch evaluated. `inputs` are the
// node's input types in the shader's layout; returns the output types too.
struct Lowered {
  Payload payload;
  std::vector<TensorType> outputs;
};
Lowered lower(const OpSpec& spec, const std::vector<TensorType>& inputs, const ExprEnv& attrs,
              const Location& where);

// ---- Whole modules ----------------------------------------------------------------------------------

struct PrepareStats {
  int lowered = 0;   // nodes that got their registration's payload
  int compiled = 0;  // GLSL/HLSL payloads compiled to SPIR-V
  int checked = 0;   // CUSTOM nodes validated
};
// Makes every CUSTOM node of `m` (all graphs) runnable; `weft compile` and Model::load run it.
//   - A node of a registered operator (domain_name, operator_name) whose implementation_attrs is
//     empty gets the registration's payload (lower()); its declared output types must equal the
//     registration's.
//   - GLSL/HLSL payloads are compiled to SPIR-V (the payload then says "SPIR-V").
//   - Every payload is validated (parse_payload) and its resource contract checked; a payload
//     without a dispatch shape (weft_dispatch) is an error, since nothing else says how to run it.
//   - Nodes with an empty payload and no registration are left alone (a CPU kernel registered with
//     register_custom_kernel may run them).
// Errors name `source` and the node. On error `m` is unchanged.
PrepareStats prepare_module(Module& m, const std::string& source);

}  // namespace weft::custom
