#include "core/reloadable.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "weft/error.h"

namespace weft {

// Buffer's private fields for the functions below.
struct BufferInternals {
  static const std::shared_ptr<const void>& owner(const Buffer& b) { return b.owner_; }
  static Buffer make(std::shared_ptr<const void> owner, const void* data, size_t size) {
    Buffer b = Buffer::wrap(std::move(owner), data, size);
    b.reloadable_ = true;
    return b;
  }
};

namespace core {

struct ReloadBlock {
  std::shared_ptr<const void> owner;  // keeps the bytes' memory allocated
  uint8_t* data = nullptr;
  size_t size = 0;
  std::shared_ptr<const FileOrigin> origin;
  uint64_t offset = 0;  // of data[0] in the file
  std::atomic<bool> released{false};
  mutable std::mutex mu;
  bool evicted = false;
  bool kept = false;

  // The pages wholly inside [data, data + size): neighbours sharing the first or last page keep it.
  std::pair<uint8_t*, size_t> pages() const {
    const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + page - 1) / page * page;
    const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + size) / page * page;
    if (end <= begin) return {nullptr, 0};
    return {reinterpret_cast<uint8_t*>(begin), end - begin};
  }
};

bool file_origin(int fd, const std::string& path, FileOrigin* out) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return false;
  out->path = path;
  out->device = static_cast<uint64_t>(st.st_dev);
  out->inode = static_cast<uint64_t>(st.st_ino);
  out->size = static_cast<uint64_t>(st.st_size);
  out->mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return true;
}

Buffer wrap_reloadable(std::shared_ptr<const void> owner, const void* data, size_t size,
                       std::shared_ptr<const FileOrigin> origin, uint64_t offset) {
  auto block = std::make_shared<ReloadBlock>();
  block->owner = std::move(owner);
  // The bytes are the caller's (a parsed model's string it keeps for this block alone): dropping
  // and rewriting their pages is the block's business from now on.
  block->data = const_cast<uint8_t*>(static_cast<const uint8_t*>(data));
  block->size = size;
  block->origin = std::move(origin);
  block->offset = offset;
  return BufferInternals::make(std::shared_ptr<const void>(block, block.get()), data, size);
}

ReloadBlock* reload_block(const Buffer& b) {
  if (!b.reloadable()) return nullptr;
  return static_cast<ReloadBlock*>(const_cast<void*>(BufferInternals::owner(b).get()));
}

void note_released(const Buffer& b) {
  if (ReloadBlock* r = reload_block(b)) r->released.store(true);
}

bool take_released(ReloadBlock& b) { return b.released.exchange(false); }

void evict(ReloadBlock& b) {
  std::lock_guard<std::mutex> lock(b.mu);
  if (b.kept || b.evicted) return;
  auto [p, n] = b.pages();
  if (n == 0) return;
  // Anonymous (heap) pages: MADV_DONTNEED frees them, and they read as zeros until make_resident
  // writes the file's bytes back. Only the runtime reads them, and only after make_resident.
  if (::madvise(p, n, MADV_DONTNEED) == 0) b.evicted = true;
}

namespace {
void reload_locked(ReloadBlock& b) {
  if (!b.evicted) return;
  const FileOrigin& o = *b.origin;
  auto fail = [&](const std::string& why) {
    return Error(ErrorCode::kIo,
                 "cannot read a constant (" + std::to_string(b.size) + " bytes at offset " + std::to_string(b.offset) +
                     ") from the model file again, which Weft released from memory once the backends had copied it: " +
                     why,
                 {.file = o.path});
  };
  struct Fd {
    int fd;
    ~Fd() {
      if (fd >= 0) ::close(fd);
    }
  } f{::open(o.path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) throw fail(std::string("cannot open it: ") + std::strerror(errno));
  FileOrigin now;
  if (!file_origin(f.fd, o.path, &now) || now.device != o.device || now.inode != o.inode || now.size != o.size ||
      now.mtime_ns != o.mtime_ns)
    throw fail("the file changed since the model was loaded (its inode, size or modification time differ)");
  auto [p, n] = b.pages();
  const uint64_t from = b.offset + static_cast<uint64_t>(p - b.data);
  size_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(f.fd, p + done, n - done, static_cast<off_t>(from + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw fail(std::string("read failed: ") + std::strerror(errno));
    if (r == 0) throw fail("the file ended early");
    done += static_cast<size_t>(r);
  }
  b.evicted = false;
}
}  // namespace

void make_resident(ReloadBlock& b) {
  std::lock_guard<std::mutex> lock(b.mu);
  reload_locked(b);
}

void keep(ReloadBlock& b) {
  std::lock_guard<std::mutex> lock(b.mu);
  reload_locked(b);
  b.kept = true;
}

bool evicted(const ReloadBlock& b) {
  std::lock_guard<std::mutex> lock(b.mu);
  return b.evicted;
}

size_t block_bytes(const ReloadBlock& b) { return b.size; }

}  // namespace core
}  // namespace weft
