// The disassembler on damaged streams: every word of valid modules mutated, and every truncation.
// Only a stream that cannot be split into instructions is an Error(kParse) (naming the word
// offset); anything else prints, unparsable instructions as OpUnknown, and the raw-id listing
// assembles back to the same words.
#include <gtest/gtest.h>

#include <random>

#include "spirv/binary.h"
#include "spirv/text.h"
#include "text_test_util.h"
#include "weft/spirv.h"

namespace weft::spirv {
namespace {

bool splittable(const std::vector<uint32_t>& words) {
  try {
    split_instructions(words);
    return true;
  } catch (const Error&) {
    return false;
  }
}

// Disassembles a possibly damaged stream; checks the contract; returns whether it printed.
bool check_stream(const std::vector<uint32_t>& words) {
  bool can_split = splittable(words);
  for (bool friendly : {true, false}) {
    try {
      std::string text = disassemble(words, {.friendly_names = friendly});
      EXPECT_TRUE(can_split) << "printed a stream that does not split";
      EXPECT_FALSE(text.empty());
    } catch (const Error& e) {
      EXPECT_FALSE(can_split) << "threw on a splittable stream: " << e.what();
      EXPECT_EQ(e.code(), ErrorCode::kParse) << e.what();
      EXPECT_NE(e.message().find("word "), std::string::npos) << "no word offset: " << e.what();
      return false;
    }
  }
  // Raw ids reproduce any splittable stream; only the bound is raised to max id + 1 when the
  // damaged header declares less.
  std::string raw = disassemble(words, {.friendly_names = false});
  try {
    std::vector<uint32_t> back = assemble(raw);
    EXPECT_EQ(back.size(), words.size()) << raw;
    if (back.size() != words.size()) return true;
    for (size_t i = 0; i < words.size(); ++i) {
      if (i == 3) {
        EXPECT_GE(back[i], words[i]);
      } else {
        EXPECT_EQ(back[i], words[i]) << "word " << i << "\n" << raw;
      }
    }
  } catch (const Error& e) {
    ADD_FAILURE() << e.what() << "\n" << raw;
  }
  return true;
}

std::vector<std::vector<uint32_t>> base_modules() {
  std::vector<std::vector<uint32_t>> modules{testing::example_module()};
  for (uint32_t seed = 1; seed <= 3; ++seed) modules.push_back(testing::RandomModule(seed).build(25));
  return modules;
}

TEST(SpirvDisassembleRobustness, EveryWordMutated) {
  std::mt19937 rng(11);
  int printed = 0, rejected = 0;
  for (const std::vector<uint32_t>& base : base_modules()) {
    for (size_t i = 0; i < base.size(); ++i) {
      uint32_t w = base[i];
      for (uint32_t v : {0u, 1u, 0xffffffffu, w ^ 1u, w + 0x10000u, w - 0x10000u, w ^ 0x80000000u,
                         static_cast<uint32_t>(rng()), (w & 0xffff0000u) | static_cast<uint32_t>(rng() & 0xffffu)}) {
        std::vector<uint32_t> m = base;
        m[i] = v;
        SCOPED_TRACE("word " + std::to_string(i) + " = " + std::to_string(v));
        (check_stream(m) ? printed : rejected)++;
        if (::testing::Test::HasFailure()) return;
      }
    }
  }
  // Both outcomes occur: the mutations reach the splitter and the operand parser.
  EXPECT_GT(printed, 1000);
  EXPECT_GT(rejected, 100);
}

TEST(SpirvDisassembleRobustness, EveryTruncation) {
  std::vector<uint32_t> base = testing::example_module();
  for (size_t n = 0; n <= base.size(); ++n) {
    SCOPED_TRACE("first " + std::to_string(n) + " words");
    check_stream(std::vector<uint32_t>(base.begin(), base.begin() + static_cast<long>(n)));
  }
}

TEST(SpirvDisassembleRobustness, UnsplittableStreamsNameTheWordOffset) {
  std::vector<uint32_t> base = testing::example_module();
  auto message = [](const std::vector<uint32_t>& w) {
    try {
      disassemble(w);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kParse);
      return e.message();
    }
    ADD_FAILURE() << "no error";
    return std::string();
  };
  std::vector<uint32_t> zero_count = base;
  zero_count[7] = kOpCapability;  // word count 0
  EXPECT_NE(message(zero_count).find("word 7"), std::string::npos);
  std::vector<uint32_t> past_end = base;
  past_end[base.size() - 1] = (2u << 16) | kOpGraphEndARM;
  EXPECT_NE(message(past_end).find("word " + std::to_string(base.size() - 1)), std::string::npos);
  std::vector<uint32_t> bad_magic = base;
  bad_magic[0] = 0x03022307;
  EXPECT_NE(message(bad_magic).find("word 0"), std::string::npos);
  EXPECT_NE(message({kMagic, kVersion16}).find("word 0"), std::string::npos);
}

TEST(SpirvDisassembleRobustness, HugeDeclaredBoundAllocatesNothing) {
  // Names are kept per id seen, not per declared id: a bound of 2^32-1 is harmless.
  std::vector<uint32_t> words = testing::example_module();
  words[3] = 0xffffffffu;
  std::string text = disassemble(words);
  EXPECT_NE(text.find("; Bound: 4294967295\n"), std::string::npos);
  testing::expect_same_words(assemble(text), words);
}

TEST(SpirvDisassembleRobustness, ManyClashingNamesStayFast) {
  // 50000 ids that all want the name "bool": suffixes are found in constant time each.
  testing::ModuleBuilder b;
  for (uint32_t id = 1; id <= 50000; ++id) b.op(kOpTypeBool, {id});
  std::vector<uint32_t> words = b.words(50001);
  Disassembler d(words);
  EXPECT_EQ(d.id_name(1), "%bool");
  EXPECT_EQ(d.id_name(50000), "%bool_49999");
  testing::expect_same_words(assemble(d.listing()), words);
}

TEST(SpirvAssembleRobustness, DamagedTextIsAParseErrorOrAModule) {
  // Random edits of a listing: characters deleted, duplicated or replaced by ones that matter to
  // the lexer. The assembler returns words or throws Error(kParse) with a line; nothing else.
  const std::string base = testing::kExampleText;
  const std::string specials = "%=\";\\ \n0x-.pOp9_";
  std::mt19937 rng(5);
  int errors = 0, modules = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string text = base;
    for (int edits = 1 + static_cast<int>(rng() % 3); edits > 0; --edits) {
      size_t at = rng() % text.size();
      switch (rng() % 3) {
        case 0: text.erase(at, 1 + rng() % 4); break;
        case 1: text.insert(at, text.substr(rng() % text.size(), 1 + rng() % 8)); break;
        default: text[at] = specials[rng() % specials.size()]; break;
      }
    }
    try {
      std::vector<uint32_t> words = assemble(text);
      EXPECT_GE(words.size(), 5u);
      ++modules;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kParse) << e.what();
      EXPECT_GT(e.location().line, 0) << e.what();
      ++errors;
    }
  }
  EXPECT_GT(errors, 100);
  EXPECT_GT(modules, 100);
}

}  // namespace
}  // namespace weft::spirv
