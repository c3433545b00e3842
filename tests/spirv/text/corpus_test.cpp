// The hand-written modules of tests/spirv/corpus (valid and invalid ones: the validator's corpus is
// syntactically well-formed) assemble, and their disassembly assembles back to the same words.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "text_test_util.h"
#include "weft/spirv.h"

namespace weft::spirv {
namespace {

namespace fs = std::filesystem;

TEST(SpirvTextCorpus, EveryCorpusModuleAssemblesAndRoundTrips) {
  fs::path root = fs::path(WEFT_SOURCE_DIR) / "tests/spirv/corpus";
  if (!fs::exists(root)) GTEST_SKIP() << "no corpus at " << root;
  int files = 0;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(root)) {
    if (e.path().extension() != ".spvasm") continue;
    SCOPED_TRACE(e.path().string());
    std::ifstream in(e.path());
    std::stringstream text;
    text << in.rdbuf();
    ++files;
    try {
      std::vector<uint32_t> words = assemble(text.str(), e.path().string());
      for (bool friendly : {true, false}) {
        testing::expect_same_words(assemble(disassemble(words, {.friendly_names = friendly})), words);
      }
    } catch (const Error& err) {
      ADD_FAILURE() << err.what();
    }
  }
  EXPECT_GT(files, 0);
}

}  // namespace
}  // namespace weft::spirv
