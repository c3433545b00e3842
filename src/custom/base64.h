// Base64 (RFC 4648 section 4, the standard alphabet) as custom operator payloads and VGF use it.
//
// Encoding always pads with '=' to a multiple of 4 characters and never breaks lines.
// Decoding is strict, so that every byte string has exactly one accepted text (round trips are
// exact and two payloads with the same bytes compare equal as text):
//   - only A-Z a-z 0-9 + / and trailing '=' padding; no whitespace, no line breaks (the text lives
//     in JSON strings, not in MIME bodies), no URL-safe '-' '_' alphabet;
//   - the length must be a multiple of 4 (padding is required), '=' only as the last one or two
//     characters of the text;
//   - the unused low bits of the last character before the padding must be zero;
//   - the empty text decodes to no bytes.
// Implemented in src/custom/payload.cpp.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace weft::custom {

std::string base64_encode(std::span<const uint8_t> bytes);
// Throws Error(kInvalidArgument) whose message starts with `what` ("shader_code is not valid
// base64: ...") and says which character at which offset breaks which rule.
std::vector<uint8_t> base64_decode(std::string_view text, std::string_view what = "text");

}  // namespace weft::custom
