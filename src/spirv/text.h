// The disassembler as a reusable object, so that diagnostics can print single instructions with
// the same friendly names as the full listing.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "weft/spirv.h"

namespace weft::spirv {

class Disassembler {
 public:
  // Splits the stream and computes names once. Throws Error(kParse) only if the stream cannot be
  // split into instructions (bad header, word counts); instructions whose operands do not parse
  // print as raw words ("OpUnknown(<opcode>) 0x... ; <why>") instead of throwing.
  Disassembler(std::span<const uint32_t> words, const DisassembleOptions& options = {});
  ~Disassembler();

  std::string listing() const;                   // the whole module (what disassemble() returns)
  // One instruction as in the listing ("%name = OpX ...", with the "; @offset" comment if the
  // options ask for it) without the alignment spaces or a newline; "" if none starts at `offset`.
  std::string instruction(uint32_t offset) const;
  std::string id_name(uint32_t id) const;          // "%name" or "%12"

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace weft::spirv
