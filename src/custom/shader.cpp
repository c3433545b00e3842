// Compute shaders of custom operators: GLSL/HLSL compiled with shaderc (Vulkan 1.1), every module
// validated with SPIRV-Tools, then its entry point and workgroup size read from the SPIR-V.
#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <memory>
#include <string>

#include <shaderc/shaderc.h>
#include <spirv-tools/libspirv.hpp>

#include "custom/base64.h"
#include "weft/custom.h"

namespace weft::custom {

namespace {

[[noreturn]] void fail(std::string_view name, const std::string& message) {
  throw Error(ErrorCode::kVerify, "shader '" + std::string(name) + "': " + message);
}

struct ShadercDeleter {
  void operator()(shaderc_compiler* c) const { shaderc_compiler_release(c); }
  void operator()(shaderc_compile_options* o) const { shaderc_compile_options_release(o); }
  void operator()(shaderc_compilation_result* r) const { shaderc_result_release(r); }
};

std::vector<uint32_t> compile_source(ShaderLanguage language, std::string_view code, std::string_view entry_point,
                                     std::string_view name) {
  std::unique_ptr<shaderc_compiler, ShadercDeleter> compiler(shaderc_compiler_initialize());
  std::unique_ptr<shaderc_compile_options, ShadercDeleter> options(shaderc_compile_options_initialize());
  if (!compiler || !options) fail(name, "could not start the shaderc compiler");
  bool hlsl = language == ShaderLanguage::kHlsl;
  shaderc_compile_options_set_source_language(options.get(),
                                              hlsl ? shaderc_source_language_hlsl : shaderc_source_language_glsl);
  shaderc_compile_options_set_target_env(options.get(), shaderc_target_env_vulkan, shaderc_env_version_vulkan_1_1);
  shaderc_compile_options_set_optimization_level(options.get(), shaderc_optimization_level_performance);
  const std::string file(name);
  // GLSL's entry point is always main(); the module's entry point is then checked against
  // `entry_point` like any other. HLSL names the function to compile.
  const std::string entry = hlsl ? std::string(entry_point) : "main";
  std::unique_ptr<shaderc_compilation_result, ShadercDeleter> result(
      shaderc_compile_into_spv(compiler.get(), code.data(), code.size(), shaderc_compute_shader, file.c_str(),
                               entry.c_str(), options.get()));
  if (!result) fail(name, "shaderc returned no result");
  shaderc_compilation_status status = shaderc_result_get_compilation_status(result.get());
  if (status != shaderc_compilation_status_success) {
    std::string text = shaderc_result_get_error_message(result.get());
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    if (text.empty()) text = "(no message; shaderc status " + std::to_string(static_cast<int>(status)) + ")";
    fail(name, std::string(language_name(language)) + " compilation failed:\n" + text);
  }
  const size_t bytes = shaderc_result_get_length(result.get());
  const char* data = shaderc_result_get_bytes(result.get());
  std::vector<uint32_t> words(bytes / 4);
  for (size_t i = 0; i < words.size(); ++i) {
    const auto* b = reinterpret_cast<const unsigned char*>(data) + 4 * i;
    words[i] = uint32_t{b[0]} | (uint32_t{b[1]} << 8) | (uint32_t{b[2]} << 16) | (uint32_t{b[3]} << 24);
  }
  return words;
}

const char* model_name(uint32_t m) {
  switch (m) {
    case 0: return "Vertex";
    case 1: return "TessellationControl";
    case 2: return "TessellationEvaluation";
    case 3: return "Geometry";
    case 4: return "Fragment";
    case 5: return "GLCompute";
    case 6: return "Kernel";
    default: return nullptr;
  }
}

// SPIR-V opcodes, execution modes and decorations the walker reads.
constexpr uint32_t kOpEntryPoint = 15, kOpExecutionMode = 16, kOpConstant = 43, kOpConstantComposite = 44,
                   kOpSpecConstant = 50, kOpSpecConstantComposite = 51, kOpDecorate = 71,
                   kOpExecutionModeId = 331;
constexpr uint32_t kOpTypeImage = 25, kOpTypeSampledImage = 27, kOpTypeArray = 28, kOpTypeRuntimeArray = 29,
                   kOpTypePointer = 32, kOpFunction = 54, kOpVariable = 59, kOpTypeTensorARM = 4163;
constexpr uint32_t kDecorationBinding = 33, kDecorationDescriptorSet = 34;
constexpr uint32_t kStorageUniformConstant = 0, kStorageUniform = 2, kStorageStorageBuffer = 12;
constexpr uint32_t kModeLocalSize = 17, kModeLocalSizeId = 38, kDecorationBuiltIn = 11,
                   kBuiltInWorkgroupSize = 25, kGLCompute = 5;

struct EntryPoint {
  uint32_t model = 0;
  uint32_t id = 0;
  std::string name;
};

std::string literal_string(const uint32_t* w, size_t count) {
  std::string s;
  for (size_t i = 0; i < count; ++i)
    for (int b = 0; b < 4; ++b) {
      char c = static_cast<char>((w[i] >> (8 * b)) & 0xFF);
      if (c == 0) return s;
      s += c;
    }
  return s;
}

// Reads the entry points and the workgroup size of `entry_point` from a (validated) module.
std::array<uint32_t, 3> read_module(const std::vector<uint32_t>& m, std::string_view entry_point,
                                    std::string_view name) {
  std::vector<EntryPoint> entries;
  std::map<uint32_t, std::array<uint32_t, 3>> local_size;        // entry id -> LocalSize
  std::map<uint32_t, std::array<uint32_t, 3>> local_size_ids;    // entry id -> LocalSizeId operands
  std::map<uint32_t, uint32_t> scalars;                          // (spec) constant id -> value
  std::map<uint32_t, std::array<uint32_t, 3>> composites;        // (spec) composite id -> constituents
  uint32_t workgroup_size_id = 0;                                 // decorated BuiltIn WorkgroupSize
  size_t i = 5;
  while (i < m.size()) {
    uint32_t count = m[i] >> 16, op = m[i] & 0xFFFF;
    if (count == 0 || i + count > m.size()) fail(name, "malformed SPIR-V instruction at word " + std::to_string(i));
    const uint32_t* w = &m[i];
    if (op == kOpEntryPoint && count >= 4) {
      entries.push_back({w[1], w[2], literal_string(w + 3, count - 3)});
    } else if ((op == kOpExecutionMode || op == kOpExecutionModeId) && count >= 6) {
      if (w[2] == kModeLocalSize && op == kOpExecutionMode) local_size[w[1]] = {w[3], w[4], w[5]};
      if (w[2] == kModeLocalSizeId) local_size_ids[w[1]] = {w[3], w[4], w[5]};
    } else if ((op == kOpConstant || op == kOpSpecConstant) && count == 4) {
      scalars[w[2]] = w[3];
    } else if ((op == kOpConstantComposite || op == kOpSpecConstantComposite) && count == 6) {
      composites[w[2]] = {w[3], w[4], w[5]};
    } else if (op == kOpDecorate && count >= 4 && w[2] == kDecorationBuiltIn && w[3] == kBuiltInWorkgroupSize) {
      workgroup_size_id = w[1];
    }
    i += count;
  }
  const EntryPoint* found = nullptr;
  for (const EntryPoint& e : entries)
    if (e.model == kGLCompute && e.name == entry_point) found = &e;
  if (!found) {
    std::string list;
    for (const EntryPoint& e : entries) {
      if (!list.empty()) list += ", ";
      const char* model = model_name(e.model);
      list += "'" + e.name + "' (" + (model ? model : "model " + std::to_string(e.model)) + ")";
    }
    fail(name, "the module has no GLCompute entry point '" + std::string(entry_point) +
                   "' (entry points: " + (list.empty() ? "none" : list) + ")");
  }
  auto resolve = [&](const std::array<uint32_t, 3>& ids) -> std::array<uint32_t, 3> {
    std::array<uint32_t, 3> out{};
    for (int k = 0; k < 3; ++k) {
      auto it = scalars.find(ids[k]);
      if (it == scalars.end()) return {};
      out[k] = it->second;
    }
    return out;
  };
  // A WorkgroupSize built-in overrides the execution modes (SPIR-V 3.21 BuiltIn).
  if (workgroup_size_id) {
    auto it = composites.find(workgroup_size_id);
    if (it != composites.end()) return resolve(it->second);
    return {};
  }
  if (auto it = local_size.find(found->id); it != local_size.end()) return it->second;
  if (auto it = local_size_ids.find(found->id); it != local_size_ids.end()) return resolve(it->second);
  return {};
}


// The descriptor-bound variables that function bodies reference, with their set and binding.
// Calls f(op, words, count) for each instruction before the first function and returns the ids
// that function bodies reference (what a shader actually uses).
template <class F>
std::set<uint32_t> walk_declarations(const std::vector<uint32_t>& m, F&& f) {
  std::set<uint32_t> used;
  bool in_functions = false;
  for (size_t i = 5; i < m.size();) {
    const uint32_t count = m[i] >> 16, op = m[i] & 0xFFFF;
    if (count == 0 || i + count > m.size()) break;
    const uint32_t* w = &m[i];
    if (op == kOpFunction) in_functions = true;
    if (in_functions) {
      for (uint32_t k = 1; k < count; ++k) used.insert(w[k]);
    } else {
      f(op, w, count);
    }
    i += count;
  }
  return used;
}

std::vector<ShaderBinding> reflect_bindings(const std::vector<uint32_t>& m) {
  std::map<uint32_t, uint32_t> set_of, binding_of;
  std::map<uint32_t, uint32_t> type_op;                 // type id -> opcode
  std::map<uint32_t, std::vector<uint32_t>> type_words;  // type id -> operands after the result
  std::map<uint32_t, std::pair<uint32_t, uint32_t>> variables;  // id -> (storage class, pointer type)
  const std::set<uint32_t> used = walk_declarations(m, [&](uint32_t op, const uint32_t* w, uint32_t count) {
    if (op == kOpDecorate && count >= 4 && w[2] == kDecorationDescriptorSet) {
      set_of[w[1]] = w[3];
    } else if (op == kOpDecorate && count >= 4 && w[2] == kDecorationBinding) {
      binding_of[w[1]] = w[3];
    } else if (op == kOpVariable && count >= 4) {
      variables[w[2]] = {w[3], w[1]};
    } else if ((op == kOpTypePointer || op == kOpTypeImage || op == kOpTypeSampledImage || op == kOpTypeArray ||
                op == kOpTypeRuntimeArray || op == kOpTypeTensorARM) &&
               count >= 2) {
      type_op[w[1]] = op;
      type_words[w[1]] = std::vector<uint32_t>(w + 2, w + count);
    }
  });
  std::vector<ShaderBinding> out;
  for (const auto& [id, v] : variables) {
    const auto [storage, ptr] = v;
    if (!binding_of.count(id) || !used.count(id)) continue;
    if (storage != kStorageUniformConstant && storage != kStorageUniform && storage != kStorageStorageBuffer) continue;
    ShaderBinding b;
    b.set = set_of.count(id) ? set_of[id] : 0;
    b.binding = binding_of[id];
    // The pointee, through arrays of descriptors.
    uint32_t t = type_words.count(ptr) && type_words[ptr].size() >= 2 ? type_words[ptr][1] : 0;
    while (type_op.count(t) && (type_op[t] == kOpTypeArray || type_op[t] == kOpTypeRuntimeArray)) t = type_words[t][0];
    const uint32_t top = type_op.count(t) ? type_op[t] : 0;
    if (storage != kStorageUniformConstant) b.kind = ShaderBinding::Kind::kBuffer;
    else if (top == kOpTypeSampledImage) b.kind = ShaderBinding::Kind::kSampledImage;
    else if (top == kOpTypeImage && type_words[t].size() >= 6 && type_words[t][5] == 2)
      b.kind = ShaderBinding::Kind::kStorageImage;
    else if (top == kOpTypeTensorARM) b.kind = ShaderBinding::Kind::kTensor;
    out.push_back(b);
  }
  std::sort(out.begin(), out.end(),
            [](const ShaderBinding& a, const ShaderBinding& b) { return std::pair(a.set, a.binding) < std::pair(b.set, b.binding); });
  return out;
}

// The size in bytes of the push-constant block that function bodies reference: the end of its last
// member (Offset + the member's size, through vectors, matrices, arrays and nested structs with
// their strides). 0 without one; nullopt where a type's size cannot be read from the module.
std::optional<uint32_t> reflect_push_constant_bytes(const std::vector<uint32_t>& m) {
  constexpr uint32_t kOpTypeInt = 21, kOpTypeFloat = 22, kOpTypeVector = 23, kOpTypeMatrix = 24, kOpTypeStruct = 30,
                     kOpMemberDecorate = 72, kDecorationArrayStride = 6, kDecorationMatrixStride = 7,
                     kDecorationOffset = 35, kStoragePushConstant = 9;
  std::map<uint32_t, uint32_t> type_op, array_stride, constant_value;
  std::map<uint32_t, std::vector<uint32_t>> type_words;
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> member_offset, member_matrix_stride;
  std::vector<std::pair<uint32_t, uint32_t>> push_vars;  // (variable, pointer type)
  const std::set<uint32_t> used = walk_declarations(m, [&](uint32_t op, const uint32_t* w, uint32_t count) {
    if (op == kOpDecorate && count >= 4 && w[2] == kDecorationArrayStride) {
      array_stride[w[1]] = w[3];
    } else if (op == kOpMemberDecorate && count >= 5 && w[3] == kDecorationOffset) {
      member_offset[{w[1], w[2]}] = w[4];
    } else if (op == kOpMemberDecorate && count >= 5 && w[3] == kDecorationMatrixStride) {
      member_matrix_stride[{w[1], w[2]}] = w[4];
    } else if (op == kOpConstant && count >= 4) {
      constant_value[w[2]] = w[3];
    } else if (op == kOpVariable && count >= 4 && w[3] == kStoragePushConstant) {
      push_vars.push_back({w[2], w[1]});
    } else if ((op >= kOpTypeInt && op <= kOpTypeMatrix) || op == kOpTypeArray || op == kOpTypeStruct ||
               op == kOpTypePointer) {
      if (count >= 2) {
        type_op[w[1]] = op;
        type_words[w[1]] = std::vector<uint32_t>(w + 2, w + count);
      }
    }
  });
  // Sizes in 64 bits, so that a hostile stride or length cannot wrap; depth-limited.
  std::function<std::optional<uint64_t>(uint32_t, uint32_t, int)> size_of = [&](uint32_t t, uint32_t matrix_stride,
                                                                                 int depth) -> std::optional<uint64_t> {
    if (depth > 32 || !type_op.count(t)) return std::nullopt;
    const std::vector<uint32_t>& o = type_words[t];
    switch (type_op[t]) {
      case kOpTypeInt:
      case kOpTypeFloat:
        if (o.empty()) return std::nullopt;
        return uint64_t{o[0]} / 8;
      case kOpTypeVector: {
        if (o.size() < 2) return std::nullopt;
        auto c = size_of(o[0], 0, depth + 1);
        if (!c) return std::nullopt;
        return *c * o[1];
      }
      case kOpTypeMatrix:
        if (o.size() < 2 || matrix_stride == 0) return std::nullopt;
        return uint64_t{matrix_stride} * o[1];
      case kOpTypeArray: {
        if (o.size() < 2 || !array_stride.count(t) || !constant_value.count(o[1])) return std::nullopt;
        return uint64_t{array_stride[t]} * constant_value[o[1]];
      }
      case kOpTypeStruct: {
        uint64_t end = 0;
        for (uint32_t k = 0; k < o.size(); ++k) {
          auto off = member_offset.find({t, k});
          if (off == member_offset.end()) return std::nullopt;
          auto ms = member_matrix_stride.find({t, k});
          auto sz = size_of(o[k], ms == member_matrix_stride.end() ? 0 : ms->second, depth + 1);
          if (!sz) return std::nullopt;
          end = std::max(end, uint64_t{off->second} + *sz);
        }
        return end;
      }
      default:
        return std::nullopt;
    }
  };
  uint64_t bytes = 0;
  for (const auto& [var, ptr] : push_vars) {
    if (!used.count(var)) continue;
    if (!type_words.count(ptr) || type_words[ptr].size() < 2) return std::nullopt;
    auto sz = size_of(type_words[ptr][1], 0, 0);
    if (!sz || *sz > UINT32_MAX) return std::nullopt;
    bytes = std::max(bytes, *sz);
  }
  return static_cast<uint32_t>(bytes);
}
}  // namespace

CompiledShader compile_shader(ShaderLanguage language, std::string_view code_or_empty,
                              const std::vector<uint32_t>& spirv, std::string_view entry_point,
                              std::string_view name) {
  CompiledShader out;
  switch (language) {
    case ShaderLanguage::kGlsl:
    case ShaderLanguage::kHlsl:
      if (code_or_empty.empty()) fail(name, std::string("no ") + language_name(language) + " source to compile");
      out.spirv = compile_source(language, code_or_empty, entry_point, name);
      break;
    case ShaderLanguage::kSpirv:
    case ShaderLanguage::kUnspecified:
      if (!spirv.empty()) {
        out.spirv = spirv;
      } else if (language == ShaderLanguage::kSpirv && !code_or_empty.empty()) {
        std::vector<uint8_t> bytes;
        try {
          bytes = base64_decode(code_or_empty, "the SPIR-V shader code");
        } catch (const Error& e) {
          fail(name, e.message());
        }
        if (bytes.size() % 4 != 0) fail(name, "SPIR-V code is not a whole number of 32-bit words");
        out.spirv.resize(bytes.size() / 4);
        for (size_t i = 0; i < out.spirv.size(); ++i)
          out.spirv[i] = uint32_t{bytes[4 * i]} | (uint32_t{bytes[4 * i + 1]} << 8) |
                         (uint32_t{bytes[4 * i + 2]} << 16) | (uint32_t{bytes[4 * i + 3]} << 24);
      } else if (!code_or_empty.empty()) {
        fail(name, "shader_language is unspecified: name GLSL or HLSL to compile source text");
      } else {
        fail(name, "no shader: neither source text nor SPIR-V");
      }
      break;
  }

  spvtools::SpirvTools tools(SPV_ENV_VULKAN_1_1);
  std::string messages;
  tools.SetMessageConsumer([&](spv_message_level_t level, const char*, const spv_position_t& position,
                               const char* message) {
    if (level > SPV_MSG_ERROR) return;  // warnings and infos
    if (!messages.empty()) messages += "\n";
    messages += "word " + std::to_string(position.index) + ": " + message;
  });
  if (out.spirv.size() < 5 || out.spirv[0] != 0x07230203u)
    fail(name, "not a SPIR-V module (no 5-word header starting with the magic number 0x07230203)");
  if (!tools.Validate(out.spirv))
    fail(name, "SPIR-V validation (Vulkan 1.1) failed:\n" + (messages.empty() ? std::string("(no message)") : messages));
  out.local_size = read_module(out.spirv, entry_point, name);
  out.bindings = reflect_bindings(out.spirv);
  out.push_constant_bytes = reflect_push_constant_bytes(out.spirv);
  return out;
}

const char* shader_binding_kind_name(ShaderBinding::Kind k) {
  switch (k) {
    case ShaderBinding::Kind::kBuffer: return "buffer";
    case ShaderBinding::Kind::kSampledImage: return "sampled image";
    case ShaderBinding::Kind::kStorageImage: return "storage image";
    case ShaderBinding::Kind::kTensor: return "tensor";
    default: return "resource";
  }
}

void check_shader_bindings(const Payload& p, const CompiledShader& shader, const Location& where) {
  // The kind each descriptor type binds.
  auto kind_of = [](const std::optional<std::string>& dt) {
    if (!dt) return ShaderBinding::Kind::kOther;
    if (*dt == "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER" || *dt == "VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER")
      return ShaderBinding::Kind::kBuffer;
    if (*dt == "VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER") return ShaderBinding::Kind::kSampledImage;
    if (*dt == "VK_DESCRIPTOR_TYPE_STORAGE_IMAGE") return ShaderBinding::Kind::kStorageImage;
    if (*dt == "VK_DESCRIPTOR_TYPE_TENSOR_ARM") return ShaderBinding::Kind::kTensor;
    return ShaderBinding::Kind::kOther;
  };
  std::string declared;
  for (const std::vector<Resource>* list : {&p.inputs, &p.outputs})
    for (const Resource& r : *list)
      declared += (declared.empty() ? "" : ", ") + r.key("binding") + " (set " + std::to_string(r.descriptor_set.value_or(0)) +
                  ", binding " + std::to_string(r.binding.value_or(-1)) + ")";
  for (const ShaderBinding& b : shader.bindings) {
    const Resource* match = nullptr;
    for (const std::vector<Resource>* list : {&p.inputs, &p.outputs})
      for (const Resource& r : *list)
        if (r.binding && static_cast<uint64_t>(*r.binding) == b.binding &&
            static_cast<uint64_t>(r.descriptor_set.value_or(0)) == b.set)
          match = &r;
    const std::string at = "set " + std::to_string(b.set) + ", binding " + std::to_string(b.binding);
    if (!match)
      throw Error(ErrorCode::kVerify,
                  "the shader uses a " + std::string(shader_binding_kind_name(b.kind)) + " at " + at +
                      ", which the payload does not describe (it declares " + (declared.empty() ? "none" : declared) +
                      "): the dispatch would read an unbound descriptor",
                  where);
    const ShaderBinding::Kind want = kind_of(match->descriptor_type);
    if (b.kind != ShaderBinding::Kind::kOther && want != ShaderBinding::Kind::kOther && want != b.kind)
      throw Error(ErrorCode::kVerify,
                  match->key("vkdescriptortype") + " " + *match->descriptor_type + " binds " + at + ", where the shader has a " +
                      shader_binding_kind_name(b.kind),
                  where);
  }
  // The push-constant block: the payload must provide at least the bytes the shader reads.
  if (shader.push_constant_bytes && *shader.push_constant_bytes > 0) {
    uint64_t declared_bytes = p.push_constant_data.size();
    uint64_t listed = 0;
    for (const PushConstant& pc : p.push_constants) listed += pc.size;
    declared_bytes = std::max(declared_bytes, listed);
    if (declared_bytes < *shader.push_constant_bytes)
      throw Error(ErrorCode::kVerify,
                  "the shader's push-constant block is " + std::to_string(*shader.push_constant_bytes) +
                      " bytes, but the payload provides " + std::to_string(declared_bytes) +
                      (p.push_constants_text ? " (push_constants \"" + *p.push_constants_text + "\")" : std::string(" (no push_constants)")) +
                      ": the dispatch would read push constants nobody set",
                  where);
  }
}

}  // namespace weft::custom
