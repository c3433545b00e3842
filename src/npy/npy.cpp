// NumPy .npy reader and writer (format versions 1.0, 2.0, 3.0).
//
// Format: "\x93NUMPY", major, minor, a little-endian header length (u16 for 1.0, u32 for 2.0/3.0),
// then a Python dict literal {'descr': ..., 'fortran_order': ..., 'shape': (...), } padded with
// spaces and ended by '\n', then the raw data in C order. numpy pads the header so that the data
// starts at a multiple of 64 bytes, which lets us memory-map large files and use them in place.
#include "weft/npy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <cctype>
#include <cerrno>
#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <string_view>

#include "weft/error.h"

namespace weft {
namespace {

static_assert(std::endian::native == std::endian::little, "Weft's storage is little-endian; so is '=' here");

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr size_t kArrayAlign = 64;
// Files with at least this many data bytes are memory-mapped instead of read.
constexpr size_t kMapThreshold = 1 << 16;
// numpy's NPY_MAXDIMS is 32 (64 in numpy 2); anything beyond is a corrupt header.
constexpr size_t kMaxDims = 64;

[[noreturn]] void fail(ErrorCode code, const std::string& source, const std::string& msg) {
  throw Error(code, msg, {.file = source});
}

// ---- Header dict parsing -----------------------------------------------------------------
// The header is a Python literal that numpy reads with ast.literal_eval and then checks: exactly
// the keys descr (a str), fortran_order (a bool) and shape (a tuple of ints). We accept the same
// subset of Python syntax that numpy (any version) writes, and nothing else.

struct RawHeader {
  std::string descr;
  bool fortran_order = false;
  Shape shape;
};

class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& source) : s_(text), source_(source) {}

  RawHeader parse() {
    RawHeader h;
    bool seen_descr = false, seen_fortran = false, seen_shape = false;
    skip_ws();
    expect('{');
    skip_ws();
    while (!at('}')) {
      std::string key = string_literal("a key");
      skip_ws();
      expect(':');
      skip_ws();
      if (key == "descr") {
        if (seen_descr) error("duplicate key 'descr'");
        seen_descr = true;
        if (at('[')) {
          fail(ErrorCode::kUnsupported, source_,
               "structured (record) dtypes are not supported; save a plain array of one element type");
        }
        h.descr = string_literal("the 'descr' value (a dtype string)");
      } else if (key == "fortran_order") {
        if (seen_fortran) error("duplicate key 'fortran_order'");
        seen_fortran = true;
        h.fortran_order = boolean();
      } else if (key == "shape") {
        if (seen_shape) error("duplicate key 'shape'");
        seen_shape = true;
        h.shape = tuple();
      } else {
        error("unexpected key '" + key + "' (an .npy header has exactly 'descr', 'fortran_order', 'shape')");
      }
      skip_ws();
      if (at(',')) {
        ++pos_;
        skip_ws();
      } else if (!at('}')) {
        error("expected ',' or '}'");
      }
    }
    ++pos_;  // '}'
    // After the dict: only the padding (spaces) and the final newline.
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r' ||
                                s_[pos_] == '\0')) {
      ++pos_;
    }
    if (pos_ != s_.size()) error("unexpected text after the header dict");
    if (!seen_descr || !seen_fortran || !seen_shape) {
      std::string missing;
      if (!seen_descr) missing += " 'descr'";
      if (!seen_fortran) missing += " 'fortran_order'";
      if (!seen_shape) missing += " 'shape'";
      error("header dict lacks" + missing);
    }
    return h;
  }

 private:
  [[noreturn]] void error(const std::string& msg) {
    fail(ErrorCode::kParse, source_,
         "bad .npy header at offset " + std::to_string(pos_) + " of the header dict: " + msg);
  }
  bool at(char c) const { return pos_ < s_.size() && s_[pos_] == c; }
  void expect(char c) {
    if (!at(c)) error(std::string("expected '") + c + "'");
    ++pos_;
  }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }
  std::string string_literal(const char* what) {
    if (!at('\'') && !at('"')) error(std::string("expected ") + what + " in quotes");
    char q = s_[pos_++];
    std::string r;
    while (pos_ < s_.size() && s_[pos_] != q) {
      char c = s_[pos_];
      // numpy writes no escapes (dtype strings and keys are plain ASCII); a backslash or a line
      // break means this is not a header we understand.
      if (c == '\\' || c == '\n' || static_cast<unsigned char>(c) < 0x20 ||
          static_cast<unsigned char>(c) >= 0x7f) {
        error("unexpected character in a string");
      }
      r += c;
      ++pos_;
    }
    if (pos_ >= s_.size()) error("unterminated string");
    ++pos_;
    return r;
  }
  bool word(std::string_view w) {
    if (s_.substr(pos_, w.size()) != w) return false;
    size_t end = pos_ + w.size();
    if (end < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[end])) || s_[end] == '_'))
      return false;
    pos_ = end;
    return true;
  }
  bool boolean() {
    if (word("True")) return true;
    if (word("False")) return false;
    error("'fortran_order' must be True or False");
  }
  int64_t integer() {
    if (pos_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      error("expected a non-negative integer dimension");
    }
    uint64_t v = 0;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      v = v * 10 + static_cast<uint64_t>(s_[pos_] - '0');
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        error("dimension does not fit in 64 bits");
      ++pos_;
    }
    if (at('L')) ++pos_;  // Python 2 longs, written by numpy under Python 2
    return static_cast<int64_t>(v);
  }
  Shape tuple() {
    expect('(');
    skip_ws();
    Shape shape;
    bool trailing_comma = false;
    while (!at(')')) {
      if (shape.size() >= kMaxDims) error("more than " + std::to_string(kMaxDims) + " dimensions");
      shape.push_back(integer());
      skip_ws();
      trailing_comma = false;
      if (at(',')) {
        ++pos_;
        trailing_comma = true;
        skip_ws();
      } else if (!at(')')) {
        error("expected ',' or ')' in 'shape'");
      }
    }
    // "(3)" is the integer 3 in Python, not a tuple: numpy rejects it, so do we.
    if (shape.size() == 1 && !trailing_comma) error("'shape' must be a tuple: write (n,) for one dimension");
    ++pos_;
    return shape;
  }

  std::string_view s_;
  const std::string& source_;
  size_t pos_ = 0;
};

// ---- dtype mapping ---------------------------------------------------------------------------

struct FileType {
  char order = '|';  // '<', '>', '|' after normalising '=' (native, little-endian here)
  char kind = 0;     // 'b', 'i', 'u', 'f', 'V', ...
  size_t size = 0;   // bytes per element in the file
};

// What a descr string like "<f4" means, or an error for the ones Weft cannot hold.
FileType parse_descr(const std::string& descr, const std::string& source, bool wide_unsigned = false) {
  FileType ft;
  std::string_view d = descr;
  if (!d.empty() && (d[0] == '<' || d[0] == '>' || d[0] == '|' || d[0] == '=')) {
    ft.order = d[0] == '=' ? '<' : d[0];
    d.remove_prefix(1);
  }
  if (d.empty()) fail(ErrorCode::kParse, source, "bad .npy header: empty dtype 'descr'");
  ft.kind = d[0];
  d.remove_prefix(1);
  size_t size = 0;
  bool ok = !d.empty() && d.size() <= 6;
  for (char c : d) {
    if (!std::isdigit(static_cast<unsigned char>(c)))
      ok = false;
    else
      size = size * 10 + static_cast<size_t>(c - '0');
  }
  auto unsupported = [&](const std::string& what) -> FileType {
    fail(ErrorCode::kUnsupported, source,
         "unsupported .npy dtype '" + descr + "' (" + what +
             "); Weft reads bool, int8/16/32/64, float16/32, and uint8/uint16/void raw bits for fp8/bf16");
  };
  switch (ft.kind) {
    case 'O': return unsupported("Python objects");
    case 'U': return unsupported("unicode strings");
    case 'S':
    case 'a': return unsupported("byte strings");
    case 'c': return unsupported("complex numbers");
    case 'M':
    case 'm': return unsupported("dates/times");
    default: break;
  }
  if (!ok) fail(ErrorCode::kParse, source, "bad .npy header: cannot parse dtype '" + descr + "'");
  ft.size = size;
  switch (ft.kind) {
    case 'b':
      if (size == 1) return ft;
      break;
    case 'i':
      if (size == 1 || size == 2 || size == 4 || size == 8) return ft;
      break;
    case 'u':
      if (size == 1 || size == 2) return ft;
      if ((size == 4 || size == 8) && wide_unsigned) return ft;
      if (size == 4 || size == 8) return unsupported("unsigned integers other than raw fp8/bf16 bits, except for a model's unsigned inputs");
      break;
    case 'f':
      if (size == 2 || size == 4) return ft;
      if (size == 8) return unsupported("float64: save the array as float32, e.g. a.astype(np.float32)");
      if (size == 16) return unsupported("long double");
      break;
    case 'V':
      if (size == 1 || size == 2) return ft;
      break;
    default: break;
  }
  return unsupported("no Weft element type has this layout");
}

std::string file_type_name(const FileType& ft) {
  return std::string(1, ft.order) + ft.kind + std::to_string(ft.size);
}

// The natural Weft type of a file type, when it has one (uint8/uint16/void are only raw bits).
std::optional<DType> natural_type(const FileType& ft) {
  switch (ft.kind) {
    case 'b': return DType::kBool;
    case 'i':
      switch (ft.size) {
        case 1: return DType::kInt8;
        case 2: return DType::kInt16;
        case 4: return DType::kInt32;
        case 8: return DType::kInt48;  // range-checked after reading
      }
      break;
    case 'f': return ft.size == 2 ? DType::kFp16 : DType::kFp32;
    default: break;
  }
  return std::nullopt;
}

// Whether a file of type `ft` can be read as `t` (natural types and the raw-bit conventions).
bool accepts(const FileType& ft, DType t) {
  switch (t) {
    case DType::kBool: return ft.kind == 'b';
    case DType::kInt4:
    case DType::kInt8: return ft.kind == 'i' && ft.size == 1;
    case DType::kInt16: return ft.kind == 'i' && ft.size == 2;
    case DType::kInt32: return ft.kind == 'i' && ft.size == 4;
    case DType::kInt48:
    case DType::kShape: return ft.kind == 'i' && ft.size == 8;
    case DType::kFp16: return ft.kind == 'f' && ft.size == 2;
    case DType::kFp32: return ft.kind == 'f' && ft.size == 4;
    case DType::kBf16: return (ft.kind == 'u' || ft.kind == 'V') && ft.size == 2;
    case DType::kFp8E4M3:
    case DType::kFp8E5M2: return (ft.kind == 'u' || ft.kind == 'V') && ft.size == 1;
  }
  return false;
}

const char* expected_descr_hint(DType t) {
  switch (t) {
    case DType::kBool: return "'|b1' (bool)";
    case DType::kInt4: return "'|i1' (int8 holding values in [-8, 7])";
    case DType::kInt8: return "'|i1' (int8)";
    case DType::kInt16: return "'<i2' (int16)";
    case DType::kInt32: return "'<i4' (int32)";
    case DType::kInt48: return "'<i8' (int64 holding 48-bit values)";
    case DType::kShape: return "'<i8' (int64)";
    case DType::kFp16: return "'<f2' (float16)";
    case DType::kFp32: return "'<f4' (float32)";
    case DType::kBf16: return "'<u2' or '<V2' (bfloat16 raw bits)";
    case DType::kFp8E4M3:
    case DType::kFp8E5M2: return "'|u1' or '|V1' (fp8 raw bits)";
  }
  return "?";
}

// ---- Header ----------------------------------------------------------------------------------

struct Header {
  DType dtype = DType::kFp32;
  bool as_unsigned = false;  // unsigned integers held in the signed type's bits
  FileType file;
  Shape shape;
  size_t data_offset = 0;
  size_t data_bytes = 0;
};

// Checks the preamble (magic, version, header length) in the first `avail` bytes of a file and
// returns the offset where the header ends and the data begins; sets `major` to the version.
size_t preamble_header_end(const uint8_t* p, size_t avail, const std::string& source, int* major) {
  if (avail < kMagicLen + 2 || std::memcmp(p, kMagic, kMagicLen) != 0) {
    fail(ErrorCode::kParse, source, "not an .npy file (the \\x93NUMPY magic is missing)");
  }
  *major = p[6];
  int minor = p[7];
  size_t len_size;
  if (*major == 1 && minor == 0)
    len_size = 2;
  else if ((*major == 2 || *major == 3) && minor == 0)
    len_size = 4;
  else
    fail(ErrorCode::kUnsupported, source,
         "unsupported .npy format version " + std::to_string(*major) + "." + std::to_string(minor) +
             " (Weft reads 1.0, 2.0 and 3.0)");
  if (avail < kMagicLen + 2 + len_size)
    fail(ErrorCode::kParse, source, "truncated .npy file: header length missing");
  size_t hlen = 0;
  for (size_t i = 0; i < len_size; ++i) hlen |= static_cast<size_t>(p[8 + i]) << (8 * i);
  return kMagicLen + 2 + len_size + hlen;
}

Header parse_header(const uint8_t* p, size_t header_end, size_t total, const std::string& source,
                    std::optional<DType> expected, int major, bool as_unsigned = false) {
  size_t start = kMagicLen + 2 + (major == 1 ? 2 : 4);
  if (header_end > total) {
    fail(ErrorCode::kParse, source,
         "truncated .npy file: the header needs " + std::to_string(header_end) + " bytes, the file has " +
             std::to_string(total));
  }
  std::string_view text(reinterpret_cast<const char*>(p + start), header_end - start);
  // numpy ends the header with '\n'; 1.0/2.0 headers are latin-1, 3.0 utf-8. Every valid header we
  // accept is ASCII, so a byte >= 0x80 is reported by the dict parser as an unexpected character.
  if (text.empty() || text.back() != '\n') {
    fail(ErrorCode::kParse, source, "bad .npy header: it does not end with a newline");
  }
  RawHeader raw = HeaderParser(text, source).parse();
  Header h;
  h.file = parse_descr(raw.descr, source, as_unsigned);
  h.shape = raw.shape;
  h.data_offset = header_end;
  if (as_unsigned) {
    // Unsigned integers, kept as the bits of the signed type of their size (read_npy_unsigned).
    if (h.file.kind != 'u')
      fail(ErrorCode::kInvalidArgument, source,
           "type mismatch: the file holds '" + raw.descr + "', expected unsigned integers ('|u1', '<u2', '<u4' or '<u8')");
    expected = h.file.size == 1 ? DType::kInt8 : h.file.size == 2 ? DType::kInt16 : h.file.size == 4 ? DType::kInt32 : DType::kInt48;
    h.file.kind = 'i';  // the same bits, read as the signed type
    h.as_unsigned = true;
  }

  if (raw.fortran_order && h.shape.size() > 1) {
    // Layouts only differ for rank >= 2. numpy writes Fortran order only for arrays that are
    // F-contiguous and not C-contiguous (e.g. a transposed view).
    fail(ErrorCode::kUnsupported, source,
         "Fortran-order (column-major) arrays are not supported; save np.ascontiguousarray(a) instead");
  }
  if (expected) {
    if (!accepts(h.file, *expected)) {
      auto nat = natural_type(h.file);
      fail(ErrorCode::kInvalidArgument, source,
           "type mismatch: the file holds '" + raw.descr + "'" +
               (nat ? std::string(" (") + dtype_name(*nat) + ")" : std::string()) + ", expected " +
               dtype_name(*expected) + " stored as " + expected_descr_hint(*expected));
    }
    h.dtype = *expected;
  } else {
    auto nat = natural_type(h.file);
    if (!nat) {
      fail(ErrorCode::kInvalidArgument, source,
           "'" + raw.descr +
               "' has no element type of its own in Weft: it holds bf16 ('<u2', '<V2') or fp8 "
               "('|u1', '|V1') raw bits, so the expected type must be given");
    }
    h.dtype = *nat;
  }

  int64_t n;
  try {
    n = shape_elements(h.shape);
  } catch (const Error&) {
    fail(ErrorCode::kParse, source,
         "bad .npy header: shape " + shape_str(h.shape) + " has too many elements");
  }
  if (static_cast<uint64_t>(n) > std::numeric_limits<size_t>::max() / h.file.size) {
    fail(ErrorCode::kParse, source, "bad .npy header: shape " + shape_str(h.shape) + " is too large");
  }
  h.data_bytes = static_cast<size_t>(n) * h.file.size;
  size_t have = total - header_end;
  if (have < h.data_bytes) {
    fail(ErrorCode::kParse, source,
         "truncated .npy file: " + file_type_name(h.file) + shape_str(h.shape) + " needs " +
             std::to_string(h.data_bytes) + " data bytes, the file has " + std::to_string(have));
  }
  if (have > h.data_bytes) {
    fail(ErrorCode::kParse, source,
         "malformed .npy file: " + std::to_string(have - h.data_bytes) + " unexpected bytes after the " +
             std::to_string(h.data_bytes) + " data bytes of " + file_type_name(h.file) + shape_str(h.shape));
  }
  return h;
}

// ---- Data ------------------------------------------------------------------------------------

bool needs_swap(const FileType& ft) { return ft.order == '>' && ft.size > 1; }

bool has_non_canonical_bool(const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] > 1) return true;
  }
  return false;
}

// Fixes the bytes of a writable buffer in place: big-endian to little-endian, bools to 0/1.
void convert_in_place(uint8_t* p, const Header& h) {
  if (needs_swap(h.file)) {
    size_t es = h.file.size;
    for (size_t off = 0; off + es <= h.data_bytes; off += es) {
      for (size_t i = 0; i < es / 2; ++i) std::swap(p[off + i], p[off + es - 1 - i]);
    }
  }
  if (h.dtype == DType::kBool) {
    for (size_t i = 0; i < h.data_bytes; ++i) p[i] = p[i] != 0;
  }
}

// Range checks of types narrower than their storage (after conversion).
void check_ranges(const Tensor& t, const std::string& source) {
  DType d = t.dtype();
  if (d != DType::kInt4 && d != DType::kInt48) return;
  const int64_t lo = int_min(d), hi = int_max(d);
  const int64_t n = t.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    int64_t v = t.at_int(i);
    if (v < lo || v > hi) {
      std::string hint = d == DType::kInt48
                             ? " (Weft has no int64 element type; int64 files are read as int48)"
                             : " (int4 values are stored one per int8)";
      fail(ErrorCode::kInvalidArgument, source,
           std::string("value ") + std::to_string(v) + " at flat index " + std::to_string(i) +
               " is outside the " + dtype_name(d) + " range [" + std::to_string(lo) + ", " +
               std::to_string(hi) + "]" + hint);
    }
  }
}

// Builds the tensor over `data` (exactly the data bytes): uses it in place when it is aligned and
// needs no conversion, else copies into an owned buffer and converts there.
Tensor finish(const Header& h, Buffer data, const std::string& source) {
  TensorType type{h.dtype, h.shape};
  bool aligned = reinterpret_cast<uintptr_t>(data.data()) % h.file.size == 0;
  bool convert =
      needs_swap(h.file) || (h.dtype == DType::kBool && has_non_canonical_bool(data.data(), data.size()));
  if (!data.writable() && (!aligned || convert)) {
    Buffer copy = Buffer::allocate(data.size());
    if (data.size()) std::memcpy(copy.mutable_data(), data.data(), data.size());
    data = std::move(copy);
  }
  if (convert) convert_in_place(data.mutable_data(), h);
  Tensor t(type, std::move(data));
  if (!h.as_unsigned) check_ranges(t, source);
  return t;
}

// ---- Encoding --------------------------------------------------------------------------------

const char* descr_of(DType t) {
  switch (t) {
    case DType::kBool: return "|b1";
    case DType::kInt4:
    case DType::kInt8: return "|i1";
    case DType::kInt16: return "<i2";
    case DType::kInt32: return "<i4";
    case DType::kInt48:
    case DType::kShape: return "<i8";
    case DType::kFp16: return "<f2";
    case DType::kFp32: return "<f4";
    case DType::kBf16: return "<u2";
    case DType::kFp8E4M3:
    case DType::kFp8E5M2: return "|u1";
  }
  return "?";
}

// The preamble + header exactly as numpy's np.save writes it (numpy >= 1.22 layout): sorted keys,
// repr() of the shape tuple, spare spaces so the first dimension can grow in place, padding to a
// multiple of 64 bytes, and a final '\n'. Version 1.0 unless the header exceeds 65535 bytes.
std::vector<uint8_t> encode_header(const TensorType& type) {
  std::string dict = "{'descr': '";
  dict += descr_of(type.dtype);
  dict += "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < type.shape.size(); ++i) {
    if (i) dict += ", ";
    dict += std::to_string(type.shape[i]);
  }
  if (type.shape.size() == 1) dict += ",";
  dict += "), }";
  constexpr size_t kGrowthAxisMaxDigits = 21;
  if (!type.shape.empty())
    dict += std::string(kGrowthAxisMaxDigits - std::to_string(type.shape[0]).size(), ' ');

  auto wrap = [&](size_t len_size) {
    size_t hlen = dict.size() + 1;
    size_t pad = kArrayAlign - ((kMagicLen + 2 + len_size + hlen) % kArrayAlign);
    return hlen + pad;
  };
  size_t len_size = 2;
  size_t total_hlen = wrap(2);
  int major = 1;
  if (total_hlen > 0xFFFF) {
    len_size = 4;
    total_hlen = wrap(4);
    major = 2;
  }
  // Built as a string: GCC 12 warns falsely (-Wstringop-overflow) on vector<uint8_t> range inserts.
  std::string out(kMagic, kMagicLen);
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < len_size; ++i) out += static_cast<char>((total_hlen >> (8 * i)) & 0xFF);
  out += dict;
  out.append(total_hlen - dict.size() - 1, ' ');
  out += '\n';
  return std::vector<uint8_t>(out.begin(), out.end());
}

std::string errno_str(int e) { return std::strerror(e); }

// pread until `n` bytes or EOF; returns the count read.
size_t read_fully(int fd, uint8_t* dst, size_t n, size_t offset, const std::string& path) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = ::pread(fd, dst + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      fail(ErrorCode::kIo, path, "read failed: " + errno_str(errno));
    }
    if (r == 0) break;
    done += static_cast<size_t>(r);
  }
  return done;
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

Tensor parse_npy(const Buffer& bytes, const std::string& source, std::optional<DType> expected) {
  int major = 0;
  size_t header_end = preamble_header_end(bytes.data(), bytes.size(), source, &major);
  Header h = parse_header(bytes.data(), header_end, bytes.size(), source, expected, major);
  // Borrow the data bytes: the new Buffer keeps a copy of `bytes` (and so its owner) alive.
  auto keep = std::make_shared<Buffer>(bytes);
  Buffer data = Buffer::wrap(std::shared_ptr<const void>(keep, keep->data()), bytes.data() + h.data_offset,
                             h.data_bytes);
  return finish(h, std::move(data), source);
}

Tensor read_npy(const std::string& path, std::optional<DType> expected) {
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f.fd < 0) fail(ErrorCode::kIo, path, "cannot open .npy file: " + errno_str(errno));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) fail(ErrorCode::kIo, path, "cannot stat: " + errno_str(errno));
  if (!S_ISREG(st.st_mode)) fail(ErrorCode::kIo, path, "not a regular file");
  const auto total = static_cast<size_t>(st.st_size);

  // Preamble first (12 bytes cover every version), then the whole header.
  uint8_t pre[12] = {};
  size_t got = read_fully(f.fd, pre, sizeof pre, 0, path);
  int major = 0;
  size_t header_end = preamble_header_end(pre, got, path, &major);
  if (header_end > total) {
    fail(ErrorCode::kParse, path,
         "truncated .npy file: the header needs " + std::to_string(header_end) + " bytes, the file has " +
             std::to_string(total));
  }
  std::vector<uint8_t> head(header_end);
  if (read_fully(f.fd, head.data(), header_end, 0, path) != header_end) {
    fail(ErrorCode::kIo, path, "the file shrank while being read");
  }
  Header h = parse_header(head.data(), header_end, total, path, expected, major);

  Buffer data;
  if (h.data_bytes >= kMapThreshold) {
    data = Buffer::map_file(path, h.data_offset, h.data_bytes);
  } else {
    data = Buffer::allocate(h.data_bytes);
    if (h.data_bytes &&
        read_fully(f.fd, data.mutable_data(), h.data_bytes, h.data_offset, path) != h.data_bytes) {
      fail(ErrorCode::kIo, path, "the file shrank while being read");
    }
  }
  return finish(h, std::move(data), path);
}

std::vector<uint8_t> encode_npy(const Tensor& t) {
  std::vector<uint8_t> out = encode_header(t.type());
  size_t header_size = out.size();
  out.resize(header_size + t.byte_size());
  if (t.byte_size()) std::memcpy(out.data() + header_size, t.bytes(), t.byte_size());
  return out;
}

namespace {
void write_atomically(const std::string& path, const std::vector<uint8_t>& header, const Tensor& t) {
  // Write a temporary file beside the target and rename it over the target, so readers never see
  // a half-written file and a failure leaves any previous file intact. O_EXCL with a unique name
  // (pid + counter) instead of mkstemp so the file gets the usual umask-derived permissions.
  static std::atomic<unsigned> counter{0};
  std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) fail(ErrorCode::kIo, path, "cannot create " + tmp + ": " + errno_str(errno));

  auto write_all = [&](const uint8_t* p, size_t n) {
    while (n > 0) {
      ssize_t w = ::write(fd, p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        return errno;
      }
      p += w;
      n -= static_cast<size_t>(w);
    }
    return 0;
  };
  int err = write_all(header.data(), header.size());
  if (!err && t.byte_size()) err = write_all(t.bytes(), t.byte_size());
  if (!err && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && !err) err = errno;
  if (!err && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err) {
    ::unlink(tmp.c_str());
    fail(ErrorCode::kIo, path, "cannot write .npy file: " + errno_str(err));
  }
}
}  // namespace

void write_npy(const std::string& path, const Tensor& t) {
  if (!t.valid()) fail(ErrorCode::kInvalidArgument, path, "cannot write an empty (default) tensor");
  write_atomically(path, encode_header(t.type()), t);
}

Tensor read_npy_unsigned(const std::string& path, DType carrier) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(ErrorCode::kIo, path, "cannot open .npy file: " + errno_str(errno));
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) fail(ErrorCode::kIo, path, "cannot read .npy file");
  Buffer buf = Buffer::allocate(bytes.size());
  if (!bytes.empty()) std::memcpy(buf.mutable_data(), bytes.data(), bytes.size());
  int major = 0;
  size_t header_end = preamble_header_end(buf.data(), buf.size(), path, &major);
  Header h = parse_header(buf.data(), header_end, buf.size(), path, std::nullopt, major, true);
  Tensor t = finish(h, Buffer::wrap(std::make_shared<Buffer>(buf), buf.data() + h.data_offset, h.data_bytes), path);
  const char* names[] = {"uint8 ('|u1')", "uint16 ('<u2')", "uint32 ('<u4')", "uint64 ('<u8')"};
  const char* got = names[h.file.size == 1 ? 0 : h.file.size == 2 ? 1 : h.file.size == 4 ? 2 : 3];
  if (carrier == DType::kInt32 && (t.dtype() == DType::kInt32 || t.dtype() == DType::kInt48)) {
    // uint32 / uint64 values are carried as int32: each must be below 2^31.
    Tensor out = Tensor::zeros({DType::kInt32, t.shape()});
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      uint64_t v = 0;
      std::memcpy(&v, t.bytes() + i * static_cast<int64_t>(h.file.size), h.file.size);
      if (v > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()))
        fail(ErrorCode::kInvalidArgument, path,
             std::string("value ") + std::to_string(v) + " at flat index " + std::to_string(i) +
                 " does not fit int32, which carries the model's unsigned values (up to 2^31 - 1)");
      out.mutable_data<int32_t>()[i] = static_cast<int32_t>(v);
    }
    return out;
  }
  if (t.dtype() != carrier)
    fail(ErrorCode::kInvalidArgument, path,
         std::string("type mismatch: the file holds ") + got + ", the model's unsigned value is carried as " +
             dtype_name(carrier) + " (give " + (carrier == DType::kInt8 ? "uint8" : carrier == DType::kInt16 ? "uint16" : "uint32") +
             " data)");
  return t;
}

void write_npy_unsigned(const std::string& path, const Tensor& t) {
  if (t.dtype() != DType::kInt8 && t.dtype() != DType::kInt16 && t.dtype() != DType::kInt32)
    fail(ErrorCode::kInvalidArgument, path, std::string("unsigned values carried as ") + dtype_name(t.dtype()) + " cannot be written");
  // The same bytes under the unsigned descr of their size.
  std::vector<uint8_t> bytes = encode_header(t.type());
  const char* from = t.dtype() == DType::kInt8 ? "|i1" : t.dtype() == DType::kInt16 ? "<i2" : "<i4";
  const char* to = t.dtype() == DType::kInt8 ? "|u1" : t.dtype() == DType::kInt16 ? "<u2" : "<u4";
  auto it = std::search(bytes.begin(), bytes.end(), from, from + 3);
  if (it == bytes.end()) fail(ErrorCode::kInternal, path, "npy header without its descr");
  std::copy(to, to + 3, it);
  write_atomically(path, bytes, t);
}

}  // namespace weft
