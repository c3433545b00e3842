// NumPy .npy files (format versions 1.0, 2.0 and 3.0) for every Weft element type.
//
// Mapping (numpy descr <-> DType):
//   |b1 bool, |i1 int8, <i2 int16, <i4 int32, <f2 fp16, <f4 fp32: natural.
//   int4 is stored as |i1 (one value in [-8, 7] per byte); int48 as <i8 (values in 48-bit range);
//   bf16 as <u2 or |V2 raw bits (ml_dtypes' bfloat16 also writes <V2); fp8 as |u1 or |V1 raw bits;
//   shape values as <i8.
// Reading without an expected type gives the natural type; <i8 reads as int48 when in range.
// Reading with an expected type also accepts the raw-bit conventions above for that type.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "weft/tensor.h"

namespace weft {

// Reads `path`. Large files are memory-mapped and used in place (no copy).
// Errors (Error kIo / kParse) name the file and the problem: unsupported dtype, Fortran order,
// truncated data, bad header, a type that does not match `expected`.
Tensor read_npy(const std::string& path, std::optional<DType> expected = std::nullopt);
// Parses bytes already in memory; `owner` keeps them alive (the tensor borrows them when
// possible). `source` names the data in errors.
Tensor parse_npy(const Buffer& bytes, const std::string& source,
                 std::optional<DType> expected = std::nullopt);

// Unsigned integer arrays for values a model carries in signed types (IoInfo::is_unsigned: an
// ONNX model's uint8 in int8 bits, uint16 in int16 bits, uint32/uint64 in int32). Reading gives a
// tensor of `carrier`: '|u1' -> int8 bits, '<u2' -> int16 bits, '<u4'/'<u8' -> int32 with every
// value checked below 2^31. Writing stores int8/int16/int32 bits as '|u1'/'<u2'/'<u4'.
Tensor read_npy_unsigned(const std::string& path, DType carrier);
void write_npy_unsigned(const std::string& path, const Tensor& t);

std::vector<uint8_t> encode_npy(const Tensor& t);
void write_npy(const std::string& path, const Tensor& t);  // throws Error(kIo)

}  // namespace weft
