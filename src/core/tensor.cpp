#include "weft/tensor.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/reloadable.h"
#include "weft/error.h"

namespace weft {

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) r += ",";
    r += s[i] < 0 ? std::string("?") : std::to_string(s[i]);  // ? : a dimension known per run (dynamic models)
  }
  return r + "]";
}

int64_t shape_elements(const Shape& s) {
  // (A multiply with an overflow flag per dimension, not a division: kernels ask this per run.)
  int64_t n = 1;
  for (int64_t d : s) {
    if (d < 0) throw Error(ErrorCode::kInvalidArgument, "negative dimension in shape " + shape_str(s));
    if (__builtin_mul_overflow(n, d, &n) || n > (int64_t{1} << 62))
      throw Error(ErrorCode::kInvalidArgument, "shape " + shape_str(s) + " has more than 2^62 elements");
  }
  return n;
}

std::string TensorType::str() const { return std::string(dtype_name(dtype)) + shape_str(shape); }

size_t physical_memory_bytes() {
  static const size_t bytes = [] {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) return SIZE_MAX;
    return static_cast<size_t>(pages) * static_cast<size_t>(page);
  }();
  return bytes;
}

Buffer Buffer::allocate(size_t bytes) {
  // Zero-filling more than the machine holds would end in the kernel's OOM killer, not an error.
  if (bytes > physical_memory_bytes())
    throw Error(ErrorCode::kRuntime, "cannot allocate " + std::to_string(bytes) + " bytes: more than this machine's " +
                                         std::to_string(physical_memory_bytes()) + " bytes of memory");
  size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded == 0) rounded = 64;
  void* p = std::aligned_alloc(64, rounded);
  if (!p) throw Error(ErrorCode::kRuntime, "out of memory allocating " + std::to_string(bytes) + " bytes");
  std::memset(p, 0, rounded);
  Buffer b;
  b.owner_ = std::shared_ptr<const void>(p, [](const void* q) { std::free(const_cast<void*>(q)); });
  b.data_ = static_cast<const uint8_t*>(p);
  b.size_ = bytes;
  b.writable_ = true;
  return b;
}

Buffer Buffer::wrap(std::shared_ptr<const void> owner, const void* data, size_t size) {
  Buffer b;
  b.owner_ = std::move(owner);
  b.data_ = static_cast<const uint8_t*>(data);
  b.size_ = size;
  b.writable_ = false;
  return b;
}

Buffer Buffer::wrap_mutable(std::shared_ptr<const void> owner, void* data, size_t size) {
  Buffer b = wrap(std::move(owner), data, size);
  b.writable_ = true;
  return b;
}

namespace {
struct Mapping {
  void* base = nullptr;
  size_t length = 0;
  ~Mapping() {
    if (base && base != MAP_FAILED) munmap(base, length);
  }
};
}  // namespace

Buffer Buffer::map_file(const std::string& path, size_t offset, size_t size) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(ErrorCode::kIo, std::string("cannot open: ") + std::strerror(errno), {.file = path});
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    throw Error(ErrorCode::kIo, std::string("cannot stat: ") + std::strerror(e), {.file = path});
  }
  auto file_size = static_cast<size_t>(st.st_size);
  if (offset > file_size || size > file_size - offset) {
    ::close(fd);
    throw Error(ErrorCode::kIo,
                "range [" + std::to_string(offset) + ", +" + std::to_string(size) + ") runs past the end of the " +
                    std::to_string(file_size) + "-byte file",
                {.file = path});
  }
  if (size == 0) {
    ::close(fd);
    return Buffer::allocate(0);
  }
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t start = offset / page * page;
  auto m = std::make_shared<Mapping>();
  m->length = size + (offset - start);
  m->base = ::mmap(nullptr, m->length, PROT_READ, MAP_PRIVATE, fd, static_cast<off_t>(start));
  int e = errno;
  ::close(fd);
  if (m->base == MAP_FAILED) {
    m->base = nullptr;
    throw Error(ErrorCode::kIo, std::string("cannot map: ") + std::strerror(e), {.file = path});
  }
  const uint8_t* data = static_cast<const uint8_t*>(m->base) + (offset - start);
  Buffer b = wrap(std::shared_ptr<const void>(m, m.get()), data, size);
  b.file_backed_ = true;
  return b;
}

Buffer Buffer::slice(size_t offset, size_t size) const {
  if (offset > size_ || size > size_ - offset)
    throw Error(ErrorCode::kInvalidArgument, "slice [" + std::to_string(offset) + ", +" + std::to_string(size) +
                                                 ") runs past the end of a " + std::to_string(size_) + "-byte buffer");
  Buffer b = *this;
  b.data_ = data_ + offset;
  b.size_ = size;
  return b;
}

void Buffer::release_resident() const {
  if (reloadable_) {
    // The promise is recorded; the runtime drops the bytes once every reader has made it.
    core::note_released(*this);
    return;
  }
  if (!file_backed_ || size_ == 0) return;
  // Only the pages wholly inside this buffer: a neighbour sharing the first or last page keeps it.
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data_) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data_) + size_) / page * page;
  // A private mapping that was never written: MADV_DONTNEED only forgets the pages, and the next
  // read faults them in from the file again. Best effort; a failure changes nothing.
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

uint8_t* Buffer::mutable_data() {
  if (!writable_) throw Error(ErrorCode::kInternal, "write to a read-only (borrowed) buffer");
  return const_cast<uint8_t*>(data_);
}

Tensor::Tensor(TensorType type, Buffer buffer) : type_(std::move(type)), buffer_(std::move(buffer)) {
  if (buffer_.size() != type_.byte_size()) {
    throw Error(ErrorCode::kInvalidArgument, "tensor " + type_.str() + " needs " + std::to_string(type_.byte_size()) +
                                                 " bytes, buffer has " + std::to_string(buffer_.size()));
  }
}

Tensor Tensor::zeros(TensorType type) {
  size_t n = type.byte_size();
  return Tensor(std::move(type), Buffer::allocate(n));
}

Tensor Tensor::from_doubles(TensorType type, std::span<const double> values) {
  Tensor t = zeros(std::move(type));
  if (static_cast<int64_t>(values.size()) != t.num_elements()) {
    throw Error(ErrorCode::kInvalidArgument, "tensor " + t.type().str() + " needs " +
                                                 std::to_string(t.num_elements()) + " values, got " +
                                                 std::to_string(values.size()));
  }
  size_t es = storage_size(t.dtype());
  uint8_t* p = t.mutable_bytes();
  for (size_t i = 0; i < values.size(); ++i) store_from_double(t.dtype(), p + i * es, values[i]);
  return t;
}

Tensor Tensor::from_ints(TensorType type, std::span<const int64_t> values) {
  Tensor t = zeros(std::move(type));
  if (static_cast<int64_t>(values.size()) != t.num_elements()) {
    throw Error(ErrorCode::kInvalidArgument, "tensor " + t.type().str() + " needs " +
                                                 std::to_string(t.num_elements()) + " values, got " +
                                                 std::to_string(values.size()));
  }
  size_t es = storage_size(t.dtype());
  uint8_t* p = t.mutable_bytes();
  for (size_t i = 0; i < values.size(); ++i) store_from_int(t.dtype(), p + i * es, values[i]);
  return t;
}

double Tensor::at_double(int64_t i) const {
  return load_as_double(dtype(), bytes() + static_cast<size_t>(i) * storage_size(dtype()));
}
int64_t Tensor::at_int(int64_t i) const {
  return load_as_int(dtype(), bytes() + static_cast<size_t>(i) * storage_size(dtype()));
}
std::vector<double> Tensor::to_doubles() const {
  std::vector<double> r(static_cast<size_t>(num_elements()));
  for (size_t i = 0; i < r.size(); ++i) r[i] = at_double(static_cast<int64_t>(i));
  return r;
}
std::vector<int64_t> Tensor::to_ints() const {
  std::vector<int64_t> r(static_cast<size_t>(num_elements()));
  for (size_t i = 0; i < r.size(); ++i) r[i] = at_int(static_cast<int64_t>(i));
  return r;
}

Tensor Tensor::clone() const {
  Tensor t = zeros(type_);
  if (byte_size()) std::memcpy(t.mutable_bytes(), bytes(), byte_size());
  return t;
}

bool Tensor::identical(const Tensor& o) const {
  return type_ == o.type_ && byte_size() == o.byte_size() &&
         (byte_size() == 0 || std::memcmp(bytes(), o.bytes(), byte_size()) == 0);
}

}  // namespace weft
