// Pieces shared by the VGF reader, checker, writer and model builder (src/package/).
#pragma once

#include <map>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "weft/error.h"
#include "weft/graph.h"
#include "weft/vgf.h"

namespace weft::vgf::detail {

[[noreturn]] inline void fail(ErrorCode code, std::string_view source, std::string message) {
  throw Error(code, std::move(message), {.file = std::string(source)});
}

// Overflow-safe arithmetic on u64 (nullopt on overflow).
inline std::optional<uint64_t> add(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}
inline std::optional<uint64_t> mul(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}
inline uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }  // callers keep v small

// Bytes of a tensor of `shape` with `element_bytes` per element; nullopt on a negative
// dimension or overflow past 2^63.
std::optional<uint64_t> tensor_bytes(const std::vector<int64_t>& shape, uint64_t element_bytes);

// What the container rules need to know about a GRAPH module, read from its instruction stream.
struct InterfaceVariable {
  uint32_t id = 0;
  std::optional<uint32_t> set;      // DescriptorSet decoration
  std::optional<uint32_t> binding;  // Binding decoration
};
struct GraphModuleFacts {
  bool has_entry_point = false;
  std::string entry_name;                     // of the first OpGraphEntryPointARM
  std::vector<InterfaceVariable> interface;   // its interface variables, in order
  std::vector<uint32_t> graph_constant_ids;   // GraphConstantID of every OpGraphConstantARM
};
// Throws Error(kParse) on a malformed stream.
GraphModuleFacts scan_graph_module(std::span<const uint32_t> words);

// Renames the entry graph's inputs and outputs of a one-GRAPH-segment container after the model
// sequence's input_names / output_names, matched through the interface variables' bindings.
void name_interface(const Container& c, weft::Module& m, std::string_view source_name);

// Models with custom operators (vgf_custom.cpp): whether the entry graph has CUSTOM nodes, and
// the segmented container from_module builds for them.
bool has_custom_nodes(const weft::Module& module);
Container build_segmented(const weft::Module& module, const BuildOptions& options);
// The storage a resource row is a view of: its alias group when it has one, else the row itself.
uint64_t storage_of(const Container& c, uint32_t row);

// Interface variable i of an encoded graph module, which the encoder always decorates with a
// DescriptorSet and a Binding (kInternal otherwise).
inline const InterfaceVariable& bound_variable(const GraphModuleFacts& f, size_t i) {
  const InterfaceVariable& var = f.interface.at(i);
  if (!var.set || !var.binding)
    throw Error(ErrorCode::kInternal,
                "the encoder left interface variable %" + std::to_string(var.id) + " without DescriptorSet/Binding");
  return var;
}

// The encoder numbers graph constants 0, 1, 2, ... in order (GraphConstantID i is constant i).
inline void check_constant_ids(const std::vector<spirv::GraphConstant>& constants) {
  for (size_t i = 0; i < constants.size(); ++i)
    if (constants[i].id != i)
      throw Error(ErrorCode::kInternal, "graph constants are not numbered 0, 1, 2, ...: found id " +
                                            std::to_string(constants[i].id) + " at position " + std::to_string(i));
}

// DescriptorSetInfos from slots grouped by set number: set_index unset where the set number is
// the entry's position (the SDK's default), explicit otherwise.
inline std::vector<DescriptorSetInfo> set_infos_of(std::map<uint32_t, std::vector<BindingSlot>> sets) {
  std::vector<DescriptorSetInfo> infos;
  for (auto& [set, bindings] : sets) {
    const uint32_t position = static_cast<uint32_t>(infos.size());
    infos.push_back({std::move(bindings), set == position ? kSetIndexUnset : set});
  }
  return infos;
}

}  // namespace weft::vgf::detail
