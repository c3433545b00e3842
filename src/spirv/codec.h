// What the SPIR-V encoder (encode.cpp) and decoder (decode.cpp) share: the TOSA.001000.1 mapping of
// element types to SPIR-V scalar types and the literal encoding of scalar constants
// (docs/spirv.md, "How Weft writes a module").
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

#include "spirv/grammar.h"
#include "weft/dtype.h"
#include "weft/spirv.h"

namespace weft::spirv {

inline constexpr std::string_view kProfilesMarker = "weft.profiles=";
inline constexpr uint32_t kNoEncoding = ~0u;

// One element type: OpTypeBool, OpTypeInt <width> 0 or OpTypeFloat <width> [<encoding>], and the
// capability it needs (0: none).
struct ScalarType {
  DType dtype;
  uint16_t opcode;
  uint32_t width;
  uint32_t encoding;  // FPEncoding operand of OpTypeFloat, kNoEncoding if absent
  uint32_t capability;
};

inline constexpr ScalarType kScalarTypes[] = {
    {DType::kBool, kOpTypeBool, 0, kNoEncoding, 0},
    {DType::kInt8, kOpTypeInt, 8, kNoEncoding, kCapInt8},
    {DType::kInt16, kOpTypeInt, 16, kNoEncoding, kCapInt16},
    {DType::kInt32, kOpTypeInt, 32, kNoEncoding, 0},
    {DType::kInt48, kOpTypeInt, 64, kNoEncoding, kCapInt64},
    {DType::kFp8E4M3, kOpTypeFloat, 8, kFPEncodingFloat8E4M3EXT, kCapFloat8EXT},
    {DType::kFp8E5M2, kOpTypeFloat, 8, kFPEncodingFloat8E5M2EXT, kCapFloat8EXT},
    {DType::kFp16, kOpTypeFloat, 16, kNoEncoding, kCapFloat16},
    {DType::kBf16, kOpTypeFloat, 16, kFPEncodingBFloat16KHR, kCapBFloat16TypeKHR},
    {DType::kFp32, kOpTypeFloat, 32, kNoEncoding, 0},
};

// nullptr for i4 and shape_t (shape values are i32 tensors, see encode.cpp).
inline const ScalarType* scalar_type(DType t) {
  for (const ScalarType& s : kScalarTypes)
    if (s.dtype == t) return &s;
  return nullptr;
}

// The element type a SPIR-V scalar type declaration stands for; nullptr if none.
inline const ScalarType* scalar_type(uint16_t opcode, uint32_t width, uint32_t encoding) {
  for (const ScalarType& s : kScalarTypes)
    if (s.opcode == opcode && s.width == width && s.encoding == encoding) return &s;
  return nullptr;
}

// Number of literal words of an OpConstant of element type `t` (bool has no OpConstant).
inline size_t literal_words(DType t) { return t == DType::kInt48 ? 2 : 1; }

// OpConstant literal of one element stored at `p` (Weft's storage, little-endian): narrower types in
// the low bits of one word, the rest zero; i48 as its sign-extended 64 bits, low word first.
inline size_t pack_literal(DType t, const uint8_t* p, uint32_t out[2]) {
  const size_t size = storage_size(t);
  uint64_t bits = 0;
  std::memcpy(&bits, p, size);  // little-endian host (Weft's storage is little-endian)
  out[0] = static_cast<uint32_t>(bits);
  out[1] = static_cast<uint32_t>(bits >> 32);
  return literal_words(t);
}

// The inverse: writes one element of type `t` at `p` from the literal words (ignoring bits above
// the type's width; i48 is sign-extended from bit 47).
inline void unpack_literal(DType t, std::span<const uint32_t> words, uint8_t* p) {
  uint64_t bits = words.empty() ? 0 : words[0];
  if (t == DType::kInt48) {
    uint64_t hi = words.size() > 1 ? words[1] : 0;
    bits |= hi << 32;
    bits = static_cast<uint64_t>(static_cast<int64_t>(bits << 16) >> 16);
  }
  std::memcpy(p, &bits, storage_size(t));
}

// decode() without its validate() step: the decoder's own checks only (tests use it to show that
// the decoder never relies on the validator).
Module decode_unvalidated(std::span<const uint32_t> words, std::span<const GraphConstant> constants,
                          std::string_view source_name);

}  // namespace weft::spirv
