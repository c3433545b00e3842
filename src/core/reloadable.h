// Reloadable constants: bytes a model borrows from a parsed file (an ONNX initializer's raw_data)
// that are also stored as-is at a known offset of that file.
//
// Once every kernel that reads such a constant has copied it into a layout of its own
// (Buffer::release_resident), the runtime drops the bytes' pages from memory (evict); before
// anything reads them again (Model::module(), preparing kernels for another thread count) it reads
// them back from the file (make_resident). The buffer's address never changes, so every Buffer and
// Tensor sharing it stays valid; only its contents come and go, and only the runtime, under its own
// lock, decides when. keep() ends that for good: the bytes are read back and never dropped again.
//
// The file is identified by device, inode, size and modification time when it is parsed; a file
// changed since is an Error(kIo) naming it when the bytes are needed again, never other bytes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "weft/tensor.h"

namespace weft::core {

struct FileOrigin {
  std::string path;
  uint64_t device = 0, inode = 0, size = 0;
  int64_t mtime_ns = 0;
};
// The identity of open file `fd` (fstat); false when it cannot be read.
bool file_origin(int fd, const std::string& path, FileOrigin* out);

struct ReloadBlock;

// Borrows `data` (alive while `owner` is) whose bytes are also the file's bytes at `offset`.
Buffer wrap_reloadable(std::shared_ptr<const void> owner, const void* data, size_t size,
                       std::shared_ptr<const FileOrigin> origin, uint64_t offset);

// The block behind a reloadable buffer (shared by its copies and slices); null for other buffers.
ReloadBlock* reload_block(const Buffer& b);
// What Buffer::release_resident() does for a reloadable buffer.
void note_released(const Buffer& b);
// Whether release_resident() was called on a buffer of the block since the last call; clears it.
bool take_released(ReloadBlock& b);
// Drops the block's pages unless keep() was called (no-op when already dropped).
void evict(ReloadBlock& b);
// Reads the bytes back if they were dropped. Throws Error(kIo) naming the file when it changed.
void make_resident(ReloadBlock& b);
// make_resident(), and never evict again.
void keep(ReloadBlock& b);
bool evicted(const ReloadBlock& b);
size_t block_bytes(const ReloadBlock& b);

}  // namespace weft::core
