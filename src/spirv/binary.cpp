// Word-level access to SPIR-V modules: splitting the stream, strings, grammar-driven operand
// parsing, instruction writing and .spv files. Every read is bounds-checked.
#include "spirv/binary.h"
#include "weft/io.h"

#include <fstream>
#include <iterator>
#include <sstream>

#include "weft/spirv.h"

namespace weft::spirv {
namespace {

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

[[noreturn]] void parse_error(uint32_t offset, const std::string& what) {
  throw Error(ErrorCode::kParse, "word " + std::to_string(offset) + ": " + what);
}

uint32_t byte_swap(uint32_t w) {
  return (w >> 24) | ((w >> 8) & 0xff00u) | ((w << 8) & 0xff0000u) | (w << 24);
}

std::string inst_label(const Instruction& inst) {
  const InstDef* d = find_instruction(inst.opcode());
  return d ? d->name : "opcode " + std::to_string(inst.opcode());
}

// Walks the operands of one instruction, appending what it finds to `out`.
class OperandParser {
 public:
  OperandParser(const Instruction& inst, const ParseState* state, std::vector<ParsedOperand>& out)
      : inst_(inst), state_(state), out_(out) {}

  // The whole instruction: its grammar entry, with the instructions whose operands depend on an
  // earlier operand (OpExtInst, OpSpecConstantOp) read through what that operand names.
  void parse_instruction(const InstDef& def) {
    std::span<const OperandDef> defs = def.operands;
    for (size_t i = 0; i < defs.size(); ++i) {
      parse_def(defs[i]);
      if (defs[i].kind == OperandKind::kLiteralExtInstInteger && !out_.empty() &&
          out_.back().kind == OperandKind::kLiteralExtInstInteger) {
        if (const InstDef* ext = ext_instruction()) {
          parse_list(ext->operands);
          return;  // the set's grammar replaces the core's "IdRef *"
        }
      }
      if (defs[i].kind == OperandKind::kLiteralSpecConstantOpInteger) {
        parse_spec_constant_op();
        return;
      }
    }
  }

  void parse_list(std::span<const OperandDef> defs) {
    for (const OperandDef& def : defs) parse_def(def);
  }
  bool at_end() const { return next_ >= inst_.size(); }
  size_t next() const { return next_; }

 private:
  void parse_def(const OperandDef& def) {
    switch (def.quantifier) {
      case Quantifier::kOne:
        if (at_end()) fail_missing(def);
        parse_one(def.kind);
        break;
      case Quantifier::kOptional:
        if (!at_end()) parse_one(def.kind);
        break;
      case Quantifier::kMany:
        while (!at_end()) parse_one(def.kind);
        break;
    }
  }

  [[noreturn]] void fail_missing(const OperandDef& def) {
    parse_error(inst_.offset, inst_label(inst_) + ": missing operand " + std::to_string(out_.size() + 1) + " (" +
                                  operand_kind_name(def.kind) + (def.name[0] ? std::string(" ") + def.name : "") +
                                  "): the instruction has only " + std::to_string(inst_.size()) + " words");
  }

  void push(OperandKind kind, size_t first, size_t count) {
    out_.push_back({kind, static_cast<uint16_t>(first), static_cast<uint16_t>(count)});
    next_ = first + count;
  }

  // The extended instruction named by OpExtInst's Set and Instruction operands, where the set's
  // grammar is known; nullptr when its operands are to be read as ids (TOSA, unknown sets).
  const InstDef* ext_instruction() {
    if (!state_ || out_.size() < 2) return nullptr;
    const ParsedOperand& set_op = out_[out_.size() - 2];
    const ParseState::ExtSet* set = state_->ext_set(inst_.word(set_op.first_word));
    if (!set || !set->grammar) return nullptr;
    uint32_t number = inst_.word(out_.back().first_word);
    const InstDef* d = find_ext_instruction(*set->grammar, number);
    if (!d)
      parse_error(inst_.offset, inst_label(inst_) + ": " + set->name + " has no instruction " +
                                    std::to_string(number));
    return d;
  }

  // OpSpecConstantOp: the operation's own operands, less its result type and result id.
  void parse_spec_constant_op() {
    uint32_t opcode = inst_.word(out_.back().first_word);
    const InstDef* op = opcode <= 0xffff ? find_instruction(static_cast<uint16_t>(opcode)) : nullptr;
    if (!op)
      parse_error(inst_.offset, inst_label(inst_) + ": unknown operation opcode " + std::to_string(opcode));
    for (const OperandDef& d : op->operands)
      if (d.kind != OperandKind::kIdResult && d.kind != OperandKind::kIdResultType) parse_def(d);
  }

  uint32_t literal_width(OperandKind kind) const {
    if (!state_) return 0;
    if (kind == OperandKind::kLiteralContextDependentNumber)  // OpConstant: the result type's width
      return inst_.size() > 1 ? state_->type_width(inst_.word(1)) : 0;
    if (inst_.opcode() == kOpSwitch && kind == OperandKind::kLiteralInteger)  // OpSwitch: the selector's
      return inst_.size() > 1 ? state_->value_width(inst_.word(1)) : 0;
    return 0;
  }

  void parse_one(OperandKind kind) {
    size_t first = next_;
    const KindDef& k = kind_def(kind);
    switch (kind) {
      case OperandKind::kLiteralString: {
        size_t after = 0;
        read_string(inst_, first, &after);
        push(kind, first, after - first);
        return;
      }
      case OperandKind::kLiteralContextDependentNumber: {
        uint32_t width = literal_width(kind);
        size_t count = width > 32 ? (width + 31) / 32 : 1;
        if (first + count > inst_.size())
          parse_error(inst_.offset, inst_label(inst_) + ": a " + std::to_string(width) + "-bit literal needs " +
                                        std::to_string(count) + " words, the instruction has " +
                                        std::to_string(inst_.size() - first) + " left");
        push(kind, first, count);
        return;
      }
      default:
        break;
    }
    if (k.category == KindCategory::kComposite) {  // its parts, each an operand of its own
      for (OperandKind base : k.bases) {
        if (at_end())
          parse_error(inst_.offset, inst_label(inst_) + ": " + k.name + " is cut short after " +
                                        std::to_string(next_ - first) + " words");
        if (kind == OperandKind::kPairLiteralIntegerIdRef && base == OperandKind::kLiteralInteger &&
            literal_width(base) > 32) {
          if (first + 2 > inst_.size())
            parse_error(inst_.offset, inst_label(inst_) + ": a 64-bit case literal needs 2 words");
          push(base, next_, 2);
          continue;
        }
        parse_one(base);
      }
      return;
    }
    push(kind, first, 1);
    if (k.category == KindCategory::kValueEnum) {
      uint32_t v = inst_.word(first);
      const EnumDef* e = find_enumerant(kind, v);
      if (!e)
        parse_error(inst_.offset, inst_label(inst_) + ": unknown " + k.name + " " + std::to_string(v));
      parse_list(e->params);
    } else if (k.category == KindCategory::kBitEnum) {
      uint32_t v = inst_.word(first);
      for (int bit = 0; bit < 32; ++bit) {
        uint32_t flag = uint32_t{1} << bit;
        if (!(v & flag)) continue;
        const EnumDef* e = find_enumerant(kind, flag);
        if (!e)
          parse_error(inst_.offset, inst_label(inst_) + ": unknown " + k.name + " bit 0x" + hex(flag).substr(2));
        parse_list(e->params);
      }
    }
  }

  const Instruction& inst_;
  const ParseState* state_;
  std::vector<ParsedOperand>& out_;
  size_t next_ = 1;
};

}  // namespace

Stream split_instructions(std::span<const uint32_t> words) {
  if (words.size() < 5)
    parse_error(0, "a SPIR-V module starts with a 5-word header; the stream has " + std::to_string(words.size()) +
                       " words");
  if (words[0] != kMagic) {
    if (byte_swap(words[0]) == kMagic)
      parse_error(0, "the magic number is byte-swapped (" + hex(words[0]) +
                         "): the words are in the other endianness");
    parse_error(0, "wrong magic number " + hex(words[0]) + " (expected " + hex(kMagic) + ")");
  }
  Stream s;
  s.header = {words[0], words[1], words[2], words[3], words[4]};
  size_t i = 5;
  while (i < words.size()) {
    uint32_t count = words[i] >> 16;
    if (count == 0)
      parse_error(static_cast<uint32_t>(i), "instruction with a word count of 0 (opcode " +
                                                std::to_string(words[i] & 0xffff) + ")");
    if (i + count > words.size())
      parse_error(static_cast<uint32_t>(i), "instruction (opcode " + std::to_string(words[i] & 0xffff) +
                                                ") declares " + std::to_string(count) + " words but only " +
                                                std::to_string(words.size() - i) + " remain in the stream");
    s.instructions.push_back({static_cast<uint32_t>(i), words.subspan(i, count)});
    i += count;
  }
  return s;
}

std::string read_string(const Instruction& inst, size_t first, size_t* next) {
  std::string s;
  for (size_t w = first; w < inst.size(); ++w) {
    uint32_t word = inst.word(w);
    for (int b = 0; b < 4; ++b) {
      char c = static_cast<char>((word >> (8 * b)) & 0xff);
      if (c == '\0') {
        if (next) *next = w + 1;
        return s;
      }
      s.push_back(c);
    }
  }
  parse_error(inst.offset, inst_label(inst) + ": literal string at operand word " + std::to_string(first) +
                               " has no nul terminator before the end of the instruction");
}

void append_string(std::vector<uint32_t>& out, std::string_view s) {
  size_t n = s.size() / 4 + 1;  // always room for the terminator
  size_t base = out.size();
  out.resize(base + n, 0);
  for (size_t i = 0; i < s.size(); ++i)
    out[base + i / 4] |= static_cast<uint32_t>(static_cast<uint8_t>(s[i])) << (8 * (i % 4));
}

std::vector<ParsedOperand> parse_operands(const Instruction& inst, const ParseState* state) {
  const InstDef* def = find_instruction(inst.opcode());
  if (!def) parse_error(inst.offset, "unknown opcode " + std::to_string(inst.opcode()));
  std::vector<ParsedOperand> out;
  OperandParser p(inst, state, out);
  p.parse_instruction(*def);
  if (!p.at_end())
    parse_error(inst.offset, std::string(def->name) + ": " + std::to_string(inst.size() - p.next()) +
                                 " words left over after the last operand (the instruction has " +
                                 std::to_string(inst.size()) + " words)");
  return out;
}

bool is_id_kind(OperandKind k) {
  return kind_category(k) == KindCategory::kId;
}

void ParseState::record(const Instruction& inst, const std::vector<ParsedOperand>& operands) {
  uint32_t result = 0, result_type = 0;
  for (const ParsedOperand& op : operands) {
    if (op.kind == OperandKind::kIdResult) result = inst.word(op.first_word);
    if (op.kind == OperandKind::kIdResultType) result_type = inst.word(op.first_word);
  }
  if (!result) return;
  switch (inst.opcode()) {
    case kOpTypeInt:
    case kOpTypeFloat:
      if (inst.size() > 2) widths_[result] = inst.word(2);
      return;
    case kOpExtInstImport: {
      ExtSet set;
      set.name = read_string(inst, 2, nullptr);
      set.tosa = set.name == kTosaSetName;
      set.grammar = find_ext_inst_set(set.name);
      sets_[result] = std::move(set);
      return;
    }
    default:
      break;
  }
  widths_.erase(result);  // an id redefined as something else (invalid, but parsable)
  if (result_type) {
    uint32_t w = type_width(result_type);
    if (w > 32) wide_values_[result] = w;
  }
}

uint32_t ParseState::type_width(uint32_t type_id) const {
  auto it = widths_.find(type_id);
  return it == widths_.end() ? 0 : it->second;
}

uint32_t ParseState::value_width(uint32_t value_id) const {
  auto it = wide_values_.find(value_id);
  return it == wide_values_.end() ? 0 : it->second;
}

const ParseState::ExtSet* ParseState::ext_set(uint32_t set_id) const {
  auto it = sets_.find(set_id);
  return it == sets_.end() ? nullptr : &it->second;
}

InstructionWriter::InstructionWriter(std::vector<uint32_t>& out, uint16_t opcode) : out_(out), start_(out.size()) {
  out_.push_back(opcode);
}

InstructionWriter& InstructionWriter::word(uint32_t w) {
  out_.push_back(w);
  return *this;
}

InstructionWriter& InstructionWriter::words(std::span<const uint32_t> ws) {
  out_.insert(out_.end(), ws.begin(), ws.end());
  return *this;
}

InstructionWriter& InstructionWriter::string(std::string_view s) {
  append_string(out_, s);
  return *this;
}

void InstructionWriter::finish() {
  size_t count = out_.size() - start_;
  if (count > 0xffff) {
    uint16_t opcode = static_cast<uint16_t>(out_[start_] & 0xffff);
    out_.resize(start_);
    const InstDef* d = find_instruction(opcode);
    throw Error(ErrorCode::kUnsupported, std::string(d ? d->name : "instruction") + " would need " +
                                             std::to_string(count) +
                                             " words; a SPIR-V instruction holds at most 65535");
  }
  out_[start_] |= static_cast<uint32_t>(count) << 16;
}

std::vector<uint32_t> words_from_bytes(std::span<const uint8_t> bytes, std::string_view source_name) {
  Location loc{.file = std::string(source_name)};
  if (bytes.size() % 4 != 0)
    throw Error(ErrorCode::kParse, "size " + std::to_string(bytes.size()) + " bytes is not a multiple of 4 (SPIR-V is a stream of 32-bit words)", loc);
  if (bytes.size() < 20)
    throw Error(ErrorCode::kParse, "size " + std::to_string(bytes.size()) + " bytes is shorter than the 20-byte SPIR-V header", loc);
  // The magic number, read little-endian from the bytes, decides the byte order.
  auto le = [&](size_t i) {
    return static_cast<uint32_t>(bytes[i]) | static_cast<uint32_t>(bytes[i + 1]) << 8 |
           static_cast<uint32_t>(bytes[i + 2]) << 16 | static_cast<uint32_t>(bytes[i + 3]) << 24;
  };
  uint32_t magic = le(0);
  bool swap;
  if (magic == kMagic) {
    swap = false;
  } else if (byte_swap(magic) == kMagic) {
    swap = true;
  } else {
    throw Error(ErrorCode::kParse, "not a SPIR-V module: wrong magic number " + hex(magic) + " (expected " + hex(kMagic) + ")", loc);
  }
  std::vector<uint32_t> words(bytes.size() / 4);
  for (size_t i = 0; i < words.size(); ++i) words[i] = swap ? byte_swap(le(4 * i)) : le(4 * i);
  return words;
}

std::vector<uint32_t> read_file(const std::string& path) {
  const std::string s = read_file_bytes(path, kMaxSpirvBytes, "a SPIR-V module");
  return words_from_bytes(std::span(reinterpret_cast<const uint8_t*>(s.data()), s.size()), path);
}

void write_file(const std::string& path, std::span<const uint32_t> words) {
  std::vector<uint8_t> bytes(words.size() * 4);
  for (size_t i = 0; i < words.size(); ++i)
    for (int b = 0; b < 4; ++b) bytes[4 * i + static_cast<size_t>(b)] = static_cast<uint8_t>(words[i] >> (8 * b));
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw Error(ErrorCode::kIo, "cannot create file", {.file = path});
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f.flush()) throw Error(ErrorCode::kIo, "cannot write file", {.file = path});
}

}  // namespace weft::spirv
