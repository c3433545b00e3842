// Word-level access to a SPIR-V module: the header, the instruction stream and operand parsing
// driven by the grammar tables. Every function here is bounds-checked: malformed input throws
// Error(kParse) whose message names the word offset and the rule broken, never reads past the end.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "spirv/grammar.h"
#include "weft/error.h"

namespace weft::spirv {

struct Header {
  uint32_t magic = kMagic;
  uint32_t version = kVersion16;
  uint32_t generator = 0;
  uint32_t bound = 0;
  uint32_t schema = 0;
};

// One instruction of the stream: its word offset in the module and its words (first word
// included: word_count << 16 | opcode).
struct Instruction {
  uint32_t offset = 0;
  std::span<const uint32_t> words;

  uint16_t opcode() const { return static_cast<uint16_t>(words[0] & 0xffff); }
  uint16_t word_count() const { return static_cast<uint16_t>(words[0] >> 16); }
  uint32_t word(size_t i) const { return words[i]; }  // caller checks i < words.size()
  size_t size() const { return words.size(); }
};

// Splits a module into its header and instructions. Checks: at least 5 words, the magic number,
// every instruction's word count >= 1 and not running past the end. Does not look up opcodes.
struct Stream {
  Header header;
  std::vector<Instruction> instructions;
};
Stream split_instructions(std::span<const uint32_t> words);

// A literal string starting at word `first` of `inst`: UTF-8, nul-terminated, padded to a word.
// Sets `next` to the word after it. Throws if the terminator is missing.
std::string read_string(const Instruction& inst, size_t first, size_t* next);
// Appends `s` as a nul-terminated, zero-padded literal string.
void append_string(std::vector<uint32_t>& out, std::string_view s);

// An operand located by the grammar.
struct ParsedOperand {
  OperandKind kind;
  uint16_t first_word;  // index into Instruction::words
  uint16_t num_words;
};

// What operand parsing needs to know of the instructions before: the width of scalar types
// (OpConstant / OpSpecConstant literals, OpSwitch case literals) and the set each OpExtInstImport
// names (the operands of OpExtInst). Feed it every instruction in stream order with record().
class ParseState {
 public:
  // An OpExtInstImport: the set's name and, where Weft has its grammar, its instructions.
  struct ExtSet {
    std::string name;
    const ExtInstSetDef* grammar = nullptr;  // nullptr: TOSA.001000.1 or a set without a grammar
    bool tosa = false;
  };
  void record(const Instruction& inst, const std::vector<ParsedOperand>& operands);
  uint32_t type_width(uint32_t type_id) const;   // 0 if not an OpTypeInt / OpTypeFloat
  uint32_t value_width(uint32_t value_id) const;  // width of a value's scalar type (0 if unknown)
  const ExtSet* ext_set(uint32_t set_id) const;   // nullptr: no OpExtInstImport of that id

 private:
  std::unordered_map<uint32_t, uint32_t> widths_;        // scalar type -> bits
  std::unordered_map<uint32_t, uint32_t> wide_values_;  // value of a scalar type wider than 32 bits -> bits
  std::unordered_map<uint32_t, ExtSet> sets_;
};

// Locates every operand of `inst` with its grammar entry: quantifiers, strings, enumerant
// parameters (value enums and each set bit of bit enums), composites (as their parts),
// OpConstant literal widths, OpSpecConstantOp's operation and its operands, OpExtInst operands
// (by the set's grammar where Weft has it, else ids). `state` (may be null: widths unknown, one
// word assumed; OpExtInst operands read as ids) holds what earlier instructions declared.
// Throws Error(kParse) on unknown opcodes ("unknown opcode N"), too few or too many words,
// unknown enumerants or extended instructions, or unterminated strings.
std::vector<ParsedOperand> parse_operands(const Instruction& inst, const ParseState* state);

// Whether operands of this kind are ids (IdRef, IdResult, IdResultType, IdScope, IdMemorySemantics).
bool is_id_kind(OperandKind kind);

// Builds one instruction: appends (count << 16 | opcode) and the operands.
class InstructionWriter {
 public:
  explicit InstructionWriter(std::vector<uint32_t>& out, uint16_t opcode);
  InstructionWriter& word(uint32_t w);
  InstructionWriter& words(std::span<const uint32_t> ws);
  InstructionWriter& string(std::string_view s);
  // Patches the word count. Throws Error(kUnsupported) if the instruction exceeds 65535 words
  // (and removes the partial instruction). Must be called once.
  void finish();

 private:
  std::vector<uint32_t>& out_;
  size_t start_;
};

}  // namespace weft::spirv
