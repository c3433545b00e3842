// The one file reader (weft/io.h).
#include "weft/io.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "weft/error.h"

namespace weft {

size_t checked_file_size(const std::string& path, size_t max_bytes, std::string_view what) {
  const Location file{.file = path};
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw Error(ErrorCode::kIo, "cannot open " + std::string(what) + ": " + std::strerror(errno), file);
  if (!S_ISREG(st.st_mode)) {
    const char* kind = S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO" : "a device or special file";
    throw Error(ErrorCode::kIo, "cannot read " + std::string(what) + ": it is " + kind + ", not a regular file", file);
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes)
    throw Error(ErrorCode::kInvalidArgument,
                std::string(what) + " of " + std::to_string(st.st_size) + " bytes is larger than the limit of " +
                    std::to_string(max_bytes) + " bytes",
                file);
  return static_cast<size_t>(st.st_size);
}

std::string read_file_bytes(const std::string& path, size_t max_bytes, std::string_view what) {
  const Location file{.file = path};
  const size_t size = checked_file_size(path, max_bytes, what);
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) throw Error(ErrorCode::kIo, "cannot open " + std::string(what) + ": " + std::strerror(errno), file);
  std::string bytes(size, '\0');
  const size_t got = bytes.empty() ? 0 : std::fread(bytes.data(), 1, bytes.size(), f.get());
  if (got != bytes.size() || std::ferror(f.get()))
    throw Error(ErrorCode::kIo, "cannot read " + std::string(what) + ": read " + std::to_string(got) + " of " +
                                    std::to_string(bytes.size()) + " bytes",
                file);
  return bytes;
}

}  // namespace weft
