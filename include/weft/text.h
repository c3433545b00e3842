// The .weft text form: a readable, diff-friendly format for TOSA modules.
// The grammar is documented in docs/text-format.md.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "weft/graph.h"

namespace weft {

// Parses .weft text. `filename` is used in error locations (file:line:column) and `base_dir`
// resolves file("x.npy") constant references. The result is not verified; call verify_or_throw.
Module parse_weft(std::string_view text, const std::string& filename = "<input>",
                  const std::string& base_dir = ".");
// Reads and parses a file; constants in .npy files beside it are memory-mapped.
Module load_weft(const std::string& path);

struct PrintOptions {
  // Constants with more elements than this are written to .npy files (when saving) instead of
  // inline. Constants that came from a .npy file keep referring to it.
  size_t inline_limit = 16;
};

// Canonical text. Large constants without a data_file are printed inline when no directory is
// available to write them to.
std::string print_weft(const Module& module, const PrintOptions& options = {});
// Writes `path`, and large constants as <stem>.<value>.npy beside it (their data_file is set
// in the printed text, not in `module`).
void save_weft(const Module& module, const std::string& path, const PrintOptions& options = {});

}  // namespace weft
