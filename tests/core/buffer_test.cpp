// Buffers: slices of a mapped file stay file-backed, and releasing their resident pages keeps
// their bytes (they are read from the file again); other buffers are left alone.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "common/temp_dir.h"
#include "weft/error.h"
#include "weft/tensor.h"

namespace weft {
namespace {

TEST(Buffer, MappedSlicesReleaseResidentPagesAndKeepTheirBytes) {
  test::TempDir dir("weft_buffer");
  std::string bytes(5 * 4096 + 123, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 131) % 251);
  {
    std::ofstream(dir.file("data.bin"), std::ios::binary) << bytes;
  }
  const Buffer whole = Buffer::map_file(dir.file("data.bin"), 0, bytes.size());
  ASSERT_TRUE(whole.file_backed());
  EXPECT_FALSE(whole.writable());
  const Buffer part = whole.slice(1000, 3 * 4096);
  EXPECT_TRUE(part.file_backed());
  EXPECT_EQ(part.data(), whole.data() + 1000);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(part.data()), part.size()), bytes.substr(1000, 3 * 4096));
  part.release_resident();
  whole.release_resident();
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(whole.data()), whole.size()), bytes);
  EXPECT_THROW(whole.slice(bytes.size() - 1, 2), Error);
  EXPECT_EQ(whole.slice(bytes.size(), 0).size(), 0u);

  // Memory of the process (an allocation, a wrapped vector) is never dropped: it has no file.
  Buffer own = Buffer::allocate(3 * 4096);
  std::memset(own.mutable_data(), 7, own.size());
  own.release_resident();
  EXPECT_FALSE(own.file_backed());
  for (size_t i = 0; i < own.size(); ++i) ASSERT_EQ(own.data()[i], 7) << i;
  std::vector<uint8_t> v(3 * 4096, 9);
  const Buffer wrapped = Buffer::wrap(nullptr, v.data(), v.size());
  wrapped.slice(0, v.size()).release_resident();
  for (uint8_t b : v) ASSERT_EQ(b, 9);
}

}  // namespace
}  // namespace weft
