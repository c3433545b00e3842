// TOSA 1.0 model files (".tosa"): the FlatBuffer the TOSA world exchanges. ExecuTorch's Arm backend
// and the TOSA serialization library write it; Arm's model converter and the TOSA reference model
// read it; the TOSA conformance tests are such files. Schema: src/package/tosa.fbs; the mapping to
// Weft's IR and the rules: docs/tosa-file.md.
//
//   weft::Module m = tosa_file::read("model.tosa");   // verified (FlatBuffers and IR)
//   tosa_file::save(m, "out.tosa");                    // version 1.0.0 (final)
//
// Every region's basic block becomes a graph named after the block (a COND_IF / WHILE_LOOP names
// its sub-graphs by region or block); the entry is the block "main", else the first. Operator
// locations become node names. Errors are weft::Error with the file named: kParse for a file that
// is not a valid TOSA FlatBuffer, kUnsupported for another version or for what Weft's IR cannot
// hold (unranked or dynamic shapes), kVerify for tables that disagree (an operator input that
// nothing produced, constant data of the wrong size) and for graphs that break a TOSA rule.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "weft/graph.h"
#include "weft/tensor.h"

namespace weft::tosa_file {

struct ReadOptions {
  // A CONST or CONST_SHAPE whose tensor holds no data but is listed among the block's inputs (the
  // conformance tests feed their constants that way): its data, or nullopt to keep the value a
  // graph input. Without a function every such value stays a graph input.
  std::function<std::optional<Tensor>(const std::string& name, const TensorType& type)> constant_data;
};

// Reads a .tosa file (memory-mapped; constant data stays in the map where its encoding is Weft's).
Module read(const std::string& path, const ReadOptions& options = {});
// From bytes already in memory; `source` names them in errors. `file` must outlive nothing: data
// is shared through the Buffer.
Module from_bytes(const Buffer& file, const std::string& source, const ReadOptions& options = {});
// Whether the bytes carry the TOSA file identifier.
bool has_identifier(std::span<const uint8_t> bytes);

struct WriteOptions {
  bool draft = false;  // the version's _draft flag: false writes 1.0.0 final, as Arm's released tools do
  // Constant data beyond this many bytes in total goes after the FlatBuffer (tensor offset/size),
  // which cannot exceed 2 GiB.
  size_t inline_data_limit = size_t{1} << 30;
};

// The module as a .tosa file. Throws Error(kUnsupported) for what the format cannot carry.
std::vector<uint8_t> to_bytes(const Module& module, const WriteOptions& options = {});
void save(const Module& module, const std::string& path, const WriteOptions& options = {});

}  // namespace weft::tosa_file
