// Tensors: a type (element type + static shape) and a shared, possibly borrowed, byte buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "weft/dtype.h"
#include "weft/error.h"

namespace weft {

using Shape = std::vector<int64_t>;

std::string shape_str(const Shape& s);  // "[1,2,3]"
// Product of dims; throws Error(kInvalidArgument) on negative dims or overflow past 2^62.
int64_t shape_elements(const Shape& s);

struct TensorType {
  DType dtype = DType::kFp32;
  Shape shape;

  int rank() const { return static_cast<int>(shape.size()); }
  int64_t num_elements() const { return shape_elements(shape); }
  size_t byte_size() const { return static_cast<size_t>(num_elements()) * storage_size(dtype); }
  // Element by element, inline: the runtime compares types for every kernel of every run, and the
  // defaulted comparison's library memcmp call for the shapes cost a tenth of an unrolled LSTM's run.
  bool operator==(const TensorType& o) const {
    if (dtype != o.dtype || shape.size() != o.shape.size()) return false;
    for (size_t i = 0; i < shape.size(); ++i)
      if (shape[i] != o.shape[i]) return false;
    return true;
  }
  std::string str() const;  // "f32[1,2,3]"
};

// Bytes owned by someone: a heap block, a memory-mapped file, a caller's array.
// Copies of a Buffer share the same bytes (no data copy). Alignment of allocate() is 64.
// The machine's physical memory in bytes (SIZE_MAX when the system does not say).
size_t physical_memory_bytes();

class Buffer {
 public:
  Buffer() = default;
  // Zero-filled. More than physical_memory_bytes() is refused (Error kRuntime) before anything is
  // touched.
  static Buffer allocate(size_t bytes);
  // Borrows `data`; `owner` keeps it alive (may be null for static/caller-managed memory).
  static Buffer wrap(std::shared_ptr<const void> owner, const void* data, size_t size);
  // Borrows writable `data` (a caller's output array, a slice of an arena); `owner` as for wrap().
  static Buffer wrap_mutable(std::shared_ptr<const void> owner, void* data, size_t size);
  // Maps [offset, offset+size) of a file read-only. Throws Error(kIo).
  static Buffer map_file(const std::string& path, size_t offset, size_t size);

  // [offset, offset+size) of this buffer, sharing its owner (and its file, for a mapped one).
  // Throws Error(kInvalidArgument) past the end.
  Buffer slice(size_t offset, size_t size) const;
  // A backend calls it once it has copied a constant into a layout of its own (and will not read
  // these bytes when it runs), so that a model's weights are not held twice. For a buffer mapped from
  // a file it drops the pages from this process's resident memory at once; they are read from the
  // file again when touched, with the same bytes. For a reloadable buffer (below) it only records
  // the promise: the runtime drops the bytes once every kernel reading them has made it. Nothing
  // for other buffers.
  void release_resident() const;
  bool file_backed() const { return file_backed_; }
  // Bytes that are also stored as-is in a file (an ONNX initializer's raw_data): the runtime of a
  // model it loaded itself may drop them from memory and read them from the file again when they are
  // needed (src/core/reloadable.h).
  bool reloadable() const { return reloadable_; }

  const uint8_t* data() const { return data_; }
  // Writable pointer; only valid for buffers from allocate() and wrap_mutable(). Throws otherwise.
  uint8_t* mutable_data();
  size_t size() const { return size_; }
  bool writable() const { return writable_; }
  bool same_storage(const Buffer& o) const { return data_ == o.data_; }
  // Whether this is the only Buffer (or Tensor) holding its bytes' owner: nobody else can see them.
  bool unique() const { return owner_ && owner_.use_count() == 1; }

 private:
  std::shared_ptr<const void> owner_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool writable_ = false;
  bool file_backed_ = false;  // inside a private read-only mapping of a file (map_file)
  bool reloadable_ = false;   // owner_ is a core::ReloadBlock (src/core/reloadable.h)
  friend struct BufferInternals;
};

class Tensor {
 public:
  Tensor() = default;
  Tensor(TensorType type, Buffer buffer);  // checks buffer.size() == type.byte_size()
  static Tensor zeros(TensorType type);
  // Build from values (converted with store_from_double / store_from_int).
  static Tensor from_doubles(TensorType type, std::span<const double> values);
  static Tensor from_ints(TensorType type, std::span<const int64_t> values);

  const TensorType& type() const { return type_; }
  DType dtype() const { return type_.dtype; }
  const Shape& shape() const { return type_.shape; }
  int rank() const { return type_.rank(); }
  int64_t num_elements() const { return type_.num_elements(); }
  size_t byte_size() const { return buffer_.size(); }
  const Buffer& buffer() const { return buffer_; }
  bool valid() const { return buffer_.data() != nullptr || type_.byte_size() == 0; }

  const uint8_t* bytes() const { return buffer_.data(); }
  uint8_t* mutable_bytes() { return buffer_.mutable_data(); }
  template <class T> const T* data() const { return reinterpret_cast<const T*>(buffer_.data()); }
  template <class T> T* mutable_data() { return reinterpret_cast<T*>(buffer_.mutable_data()); }

  double at_double(int64_t i) const;
  int64_t at_int(int64_t i) const;
  std::vector<double> to_doubles() const;
  std::vector<int64_t> to_ints() const;

  // A tensor of the same type with its own writable copy of the bytes.
  Tensor clone() const;
  // Bitwise equality of type and bytes.
  bool identical(const Tensor& o) const;

 private:
  TensorType type_;
  Buffer buffer_;
};

}  // namespace weft
