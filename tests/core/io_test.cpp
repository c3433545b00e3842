// The one file reader: regular files only, a cap per kind, errors naming the file.
#include <gtest/gtest.h>

#include <fstream>

#include "common/temp_dir.h"
#include "weft/error.h"
#include "weft/io.h"

namespace weft {
namespace {

std::string error_of(const std::string& path, size_t cap) {
  try {
    read_file_bytes(path, cap, "a test file");
  } catch (const Error& e) {
    EXPECT_EQ(e.location().file, path);
    return std::string(error_code_name(e.code())) + ": " + e.message();
  }
  return "no error";
}

TEST(ReadFileBytes, RegularFilesWithinTheCapOnly) {
  test::TempDir dir("weft_io");
  {
    std::ofstream(dir.file("f.txt"), std::ios::binary) << "hello";
  }
  EXPECT_EQ(read_file_bytes(dir.file("f.txt"), 5, "a test file"), "hello");
  EXPECT_NE(error_of(dir.file("f.txt"), 4).find("of 5 bytes is larger than the limit of 4 bytes"), std::string::npos);
  EXPECT_NE(error_of("/dev/zero", 1 << 20).find("not a regular file"), std::string::npos);  // never ends
  EXPECT_NE(error_of(dir.path(), 1 << 20).find("it is a directory"), std::string::npos);
  EXPECT_NE(error_of(dir.file("missing"), 1 << 20).find("cannot open a test file: No such file"), std::string::npos);
  {
    std::ofstream(dir.file("empty"), std::ios::binary);
  }
  EXPECT_EQ(read_file_bytes(dir.file("empty"), 0, "a test file"), "");
}

}  // namespace
}  // namespace weft
