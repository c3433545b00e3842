// Helpers shared by the IOSpec sources (target.cpp, generate.cpp, yaml.cpp, check.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "weft/iospec.h"

namespace weft::iospec::detail {

// Bits per element of a variable of type `t` (bool 8, i4 4, i8/fp8 8, i16/fp16/bf16 16, i32/fp32 32);
// nullopt for types that have no IOSpec precision (i48 does not divide a 64-bit word; shape values).
std::optional<int> precision_of(DType t);

// A precision the IOSpec accepts: 1, 2, 4, 8, 16, 32 or 64 (a 64-bit word holds whole elements).
bool valid_precision(int64_t p);

struct Padding {
  int64_t padded_length = 0;
  int64_t length_64b_words = 0;
};
// The target's padding of `length` elements of `precision` bits. Throws Error(kInvalidArgument)
// (message only; callers add the location) when the granule does not give whole elements or whole
// 64-bit words.
Padding pad(int64_t length, int precision, const Target& target);

// "the target (64-bit words, granules of 4 words = 256 bits)"
std::string describe_target(const Target& target);

// "[a, b]"
std::string list_str(const std::vector<std::string>& names);

// Whole file as text; Error(kIo) naming `what` ("IOSpec", "target file") and the path.
std::string read_text_file(const std::string& path, const char* what);

}  // namespace weft::iospec::detail
