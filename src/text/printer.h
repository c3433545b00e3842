// The canonical printer, shared by print_weft and save_weft. Private to src/text.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>

#include "weft/graph.h"
#include "weft/text.h"

namespace weft::text {

// (graph index, node index) -> the path printed as file("...") for that node's tensor attribute.
// save_weft fills it with the .npy files it wrote or kept; nodes absent from it follow the rule
// of print_weft (file(data_file) for large constants loaded from a file, inline otherwise).
using FileRefs = std::map<std::pair<size_t, size_t>, std::string>;

std::string print_module(const Module& module, const PrintOptions& options, const FileRefs& files);

}  // namespace weft::text
