// Validator, stage 1: the binary stream (header, word counts, opcodes, operands, id bounds).
// Each failure is one "binary.*" diagnostic; the stream is not looked at further.
#include <cstdio>
#include <string>

#include "spirv/validate_internal.h"

namespace weft::spirv::validation {
namespace {

std::string hex(uint32_t w) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", w);
  return buf;
}

uint32_t byteswap(uint32_t w) {
  return (w >> 24) | ((w >> 8) & 0xff00u) | ((w << 8) & 0xff0000u) | (w << 24);
}

Diagnostic binary_diag(const char* rule, uint32_t offset, std::string message, std::vector<uint32_t> ids = {}) {
  Diagnostic d;
  d.rule = rule;
  d.offset = offset;
  d.message = std::move(message);
  d.ids = std::move(ids);
  return d;
}

std::optional<Diagnostic> check_header(std::span<const uint32_t> words, Header& h) {
  if (words.size() < 5) {
    return binary_diag("binary.header", 0,
                       "module is " + std::to_string(words.size()) + " words long; the header alone needs 5");
  }
  h = Header{words[0], words[1], words[2], words[3], words[4]};
  if (h.magic != kMagic) {
    if (byteswap(h.magic) == kMagic) {
      return binary_diag("binary.header", 0,
                         "magic number " + hex(h.magic) +
                             " is byte-swapped: the words are in the other endianness (read files with "
                             "words_from_bytes)");
    }
    return binary_diag("binary.header", 0, "wrong magic number " + hex(h.magic) + ", expected " + hex(kMagic));
  }
  uint32_t major = (h.version >> 16) & 0xff, minor = (h.version >> 8) & 0xff;
  if ((h.version & 0xff0000ffu) != 0 || major != 1 || minor > 6) {
    return binary_diag("binary.header", 1, "unsupported SPIR-V version " + hex(h.version) + " (1.0 to 1.6)");
  }
  if (h.schema != 0) return binary_diag("binary.header", 4, "schema word must be 0, got " + std::to_string(h.schema));
  return std::nullopt;
}

}  // namespace

std::optional<Diagnostic> parse_module(std::span<const uint32_t> words, ParsedModule& out) {
  out.words = words;
  if (auto d = check_header(words, out.header)) return d;
  ParseState state;
  size_t pos = 5;
  while (pos < words.size()) {
    auto offset = static_cast<uint32_t>(pos);
    uint32_t count = words[pos] >> 16, opcode = words[pos] & 0xffff;
    if (count == 0) return binary_diag("binary.word-count", offset, "instruction has word count 0");
    if (count > words.size() - pos) {
      return binary_diag("binary.word-count", offset,
                         "word count " + std::to_string(count) + " runs past the end of the module (" +
                             std::to_string(words.size() - pos) + " words left)");
    }
    Inst in;
    in.offset = offset;
    in.words = words.subspan(pos, count);
    in.def = find_instruction(static_cast<uint16_t>(opcode));
    if (in.def == nullptr) return binary_diag("binary.opcode", offset, "unknown opcode " + std::to_string(opcode));
    Instruction view{offset, in.words};
    try {
      in.operands = parse_operands(view, &state);
    } catch (const Error& e) {
      // parse_operands' messages read "word N: <instruction>: <what>"; the offset is reported apart.
      std::string msg = e.message();
      if (msg.rfind("word ", 0) == 0 && msg.find(": ") != std::string::npos) msg.erase(0, msg.find(": ") + 2);
      bool string = msg.find("terminator") != std::string::npos;
      return binary_diag(string ? "binary.string" : "binary.operands", offset, msg);
    }
    for (const ParsedOperand& op : in.operands) {
      if (!is_id_kind(op.kind) || op.first_word >= in.size()) continue;
      uint32_t id = in.words[op.first_word];
      if (id == 0 || id >= out.header.bound) {
        return binary_diag("binary.id-bound", offset,
                           std::string(in.def->name) + " uses id " + std::to_string(id) +
                               (id == 0 ? ", which is not a valid id" : ", at or above the bound " +
                                                                            std::to_string(out.header.bound)),
                           {id});
      }
      if (op.kind == OperandKind::kIdResult) in.result = id;
      if (op.kind == OperandKind::kIdResultType) in.result_type = id;
    }
    state.record(view, in.operands);
    out.insts.push_back(std::move(in));
    pos += count;
  }
  return std::nullopt;
}

}  // namespace weft::spirv::validation
