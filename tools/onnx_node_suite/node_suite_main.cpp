// weft_onnx_node_suite: runs ONNX's backend node test cases (written by
// scripts/onnx/gen_node_tests.py) through weft::import_onnx and the runtime, and compares every
// output with ONNX's expected values the way ONNX's own backend test runner does.
//
//   weft_onnx_node_suite DIR [--skips FILE] [--only REGEX] [--verbose] [--write-skips OUT]
//                            [--interpreter] [--in-process] [--timeout SEC] [--dump-pb FILE...]
//                            [--emit-vgf OUTDIR]
//
// For every case directory DIR/node/test_* (sorted by name): import model.onnx, bind each data
// set's input_N.pb (a serialized onnx.TensorProto) to graph input N, run, and compare output_N.pb
// with graph output N:
//  * floats: numpy allclose, |actual - expected| <= atol + rtol * |expected| with ONNX's defaults
//    rtol = 1e-3, atol = 1e-7; NaN equals NaN, infinities must be equal;
//  * integers and bools: exact, by value (ONNX int64 against Weft int32);
//  * types follow the frontend's mapping (int64 -> i32, float -> f32, float16 -> f16, ...) and
//    shapes must equal the expected shape exactly.
// int64 input data is narrowed to int32 when the imported input is i32 (out-of-range is an error).
//
// Outcomes: PASS; FAIL (an output is wrong); ERROR (import, preparation or the run threw, or the
// harness could not bind the data); SKIP (listed in the skips file: still run, and reported as
// "now passing, remove from skips" when it passes). Each case runs in a forked child so that a
// crash or a hang is an ERROR of that case only (--in-process turns this off, for debuggers).
//
// Exit status: 0 iff every selected case not listed in the skips file passes; 1 otherwise; 2 on
// usage errors, a malformed skips file or an unreadable case directory.
//
// Skips file: one case per line, `test_name <spaces or tabs> # reason`; the reason is mandatory.
// Blank lines and lines starting with '#' are ignored. Unknown or duplicate names are errors.
// --write-skips OUT writes such a file listing every selected case that did not pass, with a
// reason derived from its failure.
//
// --emit-vgf OUTDIR writes each imported case as OUTDIR/<case>.vgf (vgf::from_module), or, when
// the model cannot be written (what SPIR-V cannot carry), OUTDIR/<case>.refused with the error;
// scripts/interop/upstream_check.py then runs Arm's and Khronos' tools over them.
//
// --dump-pb FILE... prints the decoded tensors (type, dims, one value per line) and exits; it
// exists to check this reader against onnx.numpy_helper.to_array.

#include <onnx/onnx_pb.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "weft/dtype.h"
#include "weft/error.h"
#include "weft/interpreter.h"
#include "weft/onnx.h"
#include "weft/runtime.h"
#include "weft/tensor.h"
#include "weft/vgf.h"

namespace fs = std::filesystem;

namespace {

static_assert(std::endian::native == std::endian::little, "the .pb reader assumes a little-endian host");

constexpr double kRtol = 1e-3;  // onnx.backend.test.runner defaults
constexpr double kAtol = 1e-7;

// ---------------------------------------------------------------------------------------------
// Small helpers

std::string fmt_double(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string dims_str(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

// Flat index -> "[i,j,k]" for a row-major tensor of `dims`.
std::string index_str(int64_t flat, const std::vector<int64_t>& dims) {
  std::vector<int64_t> idx(dims.size());
  for (size_t k = dims.size(); k-- > 0;) {
    if (dims[k] > 0) {
      idx[k] = flat % dims[k];
      flat /= dims[k];
    }
  }
  return dims_str(idx);
}

std::string first_line(const std::string& s) {
  size_t nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size()) s.replace(pos, from.size(), to);
}

// One line, no tabs, bounded length: fit for a skips file.
std::string one_line_reason(std::string s) {
  s = first_line(s);
  for (char& c : s)
    if (c == '\t' || c == '\r') c = ' ';
  constexpr size_t kMax = 240;
  if (s.size() > kMax) s = s.substr(0, kMax - 3) + "...";
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s.empty() ? "(no message)" : s;
}

struct HarnessError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw HarnessError("cannot open " + path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  if (!in && !in.eof()) throw HarnessError("cannot read " + path.string());
  return ss.str();
}

// ---------------------------------------------------------------------------------------------
// ONNX tensors as plain little-endian bytes of the ONNX element type

const char* onnx_type_name(int32_t t) {
  if (onnx::TensorProto_DataType_IsValid(t))
    return onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(t)).c_str();
  return "INVALID";
}

// Bytes per element, 0 for types this reader does not decode (STRING, UNDEFINED, ...).
size_t onnx_elem_size(int32_t t) {
  using T = onnx::TensorProto;
  switch (t) {
    case T::BOOL: case T::INT8: case T::UINT8: return 1;
    case T::INT16: case T::UINT16: case T::FLOAT16: case T::BFLOAT16: return 2;
    case T::INT32: case T::UINT32: case T::FLOAT: return 4;
    case T::INT64: case T::UINT64: case T::DOUBLE: case T::COMPLEX64: return 8;
    case T::COMPLEX128: return 16;
    default: return 0;
  }
}

bool onnx_is_float(int32_t t) {
  using T = onnx::TensorProto;
  return t == T::FLOAT || t == T::DOUBLE || t == T::FLOAT16 || t == T::BFLOAT16;
}

struct OnnxArray {
  int32_t dtype = 0;
  std::vector<int64_t> dims;
  std::vector<uint8_t> bytes;  // little-endian, onnx_elem_size(dtype) per element

  int64_t count() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
  template <class T> T load(int64_t i) const {
    T v;
    std::memcpy(&v, bytes.data() + static_cast<size_t>(i) * sizeof(T), sizeof(T));
    return v;
  }
  int64_t as_int(int64_t i) const {
    using T = onnx::TensorProto;
    switch (dtype) {
      case T::BOOL: return load<uint8_t>(i) != 0;
      case T::INT8: return load<int8_t>(i);
      case T::UINT8: return load<uint8_t>(i);
      case T::INT16: return load<int16_t>(i);
      case T::UINT16: return load<uint16_t>(i);
      case T::INT32: return load<int32_t>(i);
      case T::UINT32: return load<uint32_t>(i);
      case T::INT64: return load<int64_t>(i);
      case T::UINT64: return static_cast<int64_t>(load<uint64_t>(i));
      default: throw HarnessError(std::string("as_int on ") + onnx_type_name(dtype));
    }
  }
  double as_double(int64_t i) const {
    using T = onnx::TensorProto;
    switch (dtype) {
      case T::FLOAT: return load<float>(i);
      case T::DOUBLE: return load<double>(i);
      case T::FLOAT16: return weft::fp16_to_float(load<uint16_t>(i));
      case T::BFLOAT16: return weft::bf16_to_float(load<uint16_t>(i));
      case T::UINT64: return static_cast<double>(load<uint64_t>(i));
      default: return static_cast<double>(as_int(i));
    }
  }
};

OnnxArray decode_tensor(const onnx::TensorProto& t) {
  using T = onnx::TensorProto;
  OnnxArray a;
  a.dtype = t.data_type();
  const std::string where = t.name().empty() ? std::string("tensor") : "tensor '" + t.name() + "'";
  if (t.data_location() == T::EXTERNAL) throw HarnessError(where + ": external data is not supported");
  if (t.has_segment()) throw HarnessError(where + ": segmented tensors are not supported");
  const size_t es = onnx_elem_size(a.dtype);
  if (es == 0) throw HarnessError(where + ": element type " + onnx_type_name(a.dtype) + " is not supported");
  int64_t n = 1;
  for (int64_t d : t.dims()) {
    if (d < 0) throw HarnessError(where + ": negative dimension");
    a.dims.push_back(d);
    n *= d;
  }
  const size_t nbytes = static_cast<size_t>(n) * es;
  if (t.has_raw_data()) {
    if (t.raw_data().size() != nbytes)
      throw HarnessError(where + ": raw_data has " + std::to_string(t.raw_data().size()) + " bytes, " +
                         dims_str(a.dims) + " " + onnx_type_name(a.dtype) + " needs " + std::to_string(nbytes));
    a.bytes.assign(t.raw_data().begin(), t.raw_data().end());
    return a;
  }
  a.bytes.resize(nbytes);
  auto check_count = [&](int have, int64_t want, const char* field) {
    if (have != want)
      throw HarnessError(where + ": " + field + " has " + std::to_string(have) + " values, " + dims_str(a.dims) +
                         " needs " + std::to_string(want));
  };
  uint8_t* out = a.bytes.data();
  switch (a.dtype) {
    case T::FLOAT: case T::COMPLEX64:
      check_count(t.float_data_size(), n * (a.dtype == T::COMPLEX64 ? 2 : 1), "float_data");
      if (nbytes) std::memcpy(out, t.float_data().data(), nbytes);
      break;
    case T::DOUBLE: case T::COMPLEX128:
      check_count(t.double_data_size(), n * (a.dtype == T::COMPLEX128 ? 2 : 1), "double_data");
      if (nbytes) std::memcpy(out, t.double_data().data(), nbytes);
      break;
    case T::INT64:
      check_count(t.int64_data_size(), n, "int64_data");
      if (nbytes) std::memcpy(out, t.int64_data().data(), nbytes);
      break;
    case T::UINT32: case T::UINT64:
      check_count(t.uint64_data_size(), n, "uint64_data");
      for (int64_t i = 0; i < n; ++i) {
        uint64_t v = t.uint64_data(static_cast<int>(i));
        std::memcpy(out + i * es, &v, es);  // low bytes: little-endian truncation
      }
      break;
    default:  // INT32, INT16, INT8, UINT16, UINT8, BOOL, FLOAT16, BFLOAT16: int32_data
      check_count(t.int32_data_size(), n, "int32_data");
      for (int64_t i = 0; i < n; ++i) {
        int32_t v = t.int32_data(static_cast<int>(i));
        if (a.dtype == T::BOOL) v = v != 0;
        std::memcpy(out + i * es, &v, es);
      }
      break;
  }
  return a;
}

OnnxArray read_tensor_pb(const fs::path& path) {
  onnx::TensorProto t;
  if (!t.ParseFromString(read_file(path))) throw HarnessError(path.filename().string() + ": not a TensorProto");
  try {
    return decode_tensor(t);
  } catch (const HarnessError& e) {
    throw HarnessError(path.filename().string() + ": " + e.what());
  }
}

// The Weft element type that carries an ONNX element type (the frontend's mapping).
std::optional<weft::DType> weft_dtype_for(int32_t onnx_type) {
  using T = onnx::TensorProto;
  switch (onnx_type) {
    case T::FLOAT: return weft::DType::kFp32;
    case T::FLOAT16: return weft::DType::kFp16;
    case T::BFLOAT16: return weft::DType::kBf16;
    case T::INT8: return weft::DType::kInt8;
    case T::INT16: return weft::DType::kInt16;
    case T::INT32: case T::INT64: return weft::DType::kInt32;
    // The frontend's boundary types of unsigned integers: uint8/uint16 as int8/int16 bits,
    // uint32/uint64 as int32 (values up to 2^31 - 1).
    case T::UINT8: return weft::DType::kInt8;
    case T::UINT16: return weft::DType::kInt16;
    case T::UINT32: case T::UINT64: return weft::DType::kInt32;
    case T::BOOL: return weft::DType::kBool;
    default: return std::nullopt;
  }
}

// float64 data as float32 (rounded to nearest): models are imported with narrow_float64, so their
// float64 inputs and outputs are float32 tensors, compared with float32 tolerances.
void narrow_doubles(OnnxArray& a) {
  if (a.dtype != onnx::TensorProto::DOUBLE) return;
  std::vector<uint8_t> bytes(static_cast<size_t>(a.count()) * 4);
  for (int64_t i = 0; i < a.count(); ++i) {
    const float f = static_cast<float>(a.load<double>(i));
    std::memcpy(bytes.data() + i * 4, &f, 4);
  }
  a.bytes = std::move(bytes);
  a.dtype = onnx::TensorProto::FLOAT;
}

// Converts input data to a tensor of the imported input's type `want`.
weft::Tensor to_weft_input(const OnnxArray& a, const std::string& name, const weft::TensorType& want) {
  const std::string where = "input '" + name + "'";
  auto mapped = weft_dtype_for(a.dtype);
  // onnx 1.12's test data stores bfloat16 tensors as UINT16 bit patterns.
  if (a.dtype == onnx::TensorProto::UINT16 && want.dtype == weft::DType::kBf16) mapped = weft::DType::kBf16;
  if (!mapped || *mapped != want.dtype)
    throw HarnessError(where + ": ONNX " + onnx_type_name(a.dtype) + " data cannot be bound to the imported input " +
                       want.str());
  if (a.dims != want.shape)
    throw HarnessError(where + ": data shape " + dims_str(a.dims) + " differs from the imported input " + want.str());
  weft::Tensor t = weft::Tensor::zeros(want);
  const int64_t n = a.count();
  if (a.dtype == onnx::TensorProto::INT64) {
    int32_t* out = t.mutable_data<int32_t>();
    for (int64_t i = 0; i < n; ++i) {
      int64_t v = a.load<int64_t>(i);
      if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
        throw HarnessError(where + ": int64 value " + std::to_string(v) + " at " + index_str(i, a.dims) +
                           " does not fit the imported int32 input");
      out[i] = static_cast<int32_t>(v);
    }
  } else if (a.dtype == onnx::TensorProto::UINT32 || a.dtype == onnx::TensorProto::UINT64) {
    int32_t* out = t.mutable_data<int32_t>();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t v = a.as_int(i);
      if (v < 0 || v > std::numeric_limits<int32_t>::max())
        throw HarnessError(where + ": " + onnx_type_name(a.dtype) + " value at " + index_str(i, a.dims) +
                           " does not fit the imported int32 input");
      out[i] = static_cast<int32_t>(v);
    }
  } else {
    if (a.bytes.size() != t.byte_size()) throw HarnessError(where + ": internal size mismatch");
    if (!a.bytes.empty()) std::memcpy(t.mutable_bytes(), a.bytes.data(), a.bytes.size());
  }
  return t;
}

// The value of an input to bind at compile time (OnnxImportOptions::bindings): int64 data as
// Weft's int48 (int64 storage); nullopt when the data has no Weft form.
std::optional<weft::Tensor> binding_tensor(const OnnxArray& a) {
  const weft::Shape shape(a.dims.begin(), a.dims.end());
  if (a.dtype == onnx::TensorProto::INT64) {
    std::vector<int64_t> v(static_cast<size_t>(a.count()));
    for (int64_t i = 0; i < a.count(); ++i) {
      v[static_cast<size_t>(i)] = a.load<int64_t>(i);
      if (v[static_cast<size_t>(i)] < -(int64_t{1} << 47) || v[static_cast<size_t>(i)] >= (int64_t{1} << 47))
        return std::nullopt;
    }
    return weft::Tensor::from_ints({weft::DType::kInt48, shape}, v);
  }
  auto mapped = weft_dtype_for(a.dtype);
  if (!mapped) return std::nullopt;
  weft::Tensor t = weft::Tensor::zeros({*mapped, shape});
  if (a.bytes.size() != t.byte_size()) return std::nullopt;
  if (!a.bytes.empty()) std::memcpy(t.mutable_bytes(), a.bytes.data(), a.bytes.size());
  return t;
}

// ---------------------------------------------------------------------------------------------
// Comparison

struct Mismatch {
  std::string reason;  // one line
  std::string detail;  // may span lines
};

std::optional<Mismatch> compare_output(const std::string& name, const weft::Tensor& actual, const OnnxArray& expected_in) {
  const std::string out = "output '" + name + "'";
  // onnx 1.12's test data stores bfloat16 tensors as UINT16 bit patterns.
  OnnxArray bf16_copy;
  const bool bf16_bits = expected_in.dtype == onnx::TensorProto::UINT16 && actual.dtype() == weft::DType::kBf16;
  if (bf16_bits) {
    bf16_copy = expected_in;
    bf16_copy.dtype = onnx::TensorProto::BFLOAT16;
  }
  const OnnxArray& expected = bf16_bits ? bf16_copy : expected_in;
  // uint8/uint16 outputs arrive as int8/int16 bits.
  const int64_t umask = expected.dtype == onnx::TensorProto::UINT8 ? 0xFF : expected.dtype == onnx::TensorProto::UINT16 ? 0xFFFF : 0;
  auto actual_int = [&](int64_t i) { return umask ? (actual.at_int(i) & umask) : actual.at_int(i); };
  auto mapped = weft_dtype_for(expected.dtype);
  if (!mapped || *mapped != actual.dtype()) {
    std::string m = "wrong type: " + out + " is " + actual.type().str() + ", expected ONNX " +
                    onnx_type_name(expected.dtype) + " " + dims_str(expected.dims);
    return Mismatch{m, m};
  }
  if (actual.shape() != expected.dims) {
    std::string m = "wrong shape: " + out + " is " + dims_str(actual.shape()) + ", expected " + dims_str(expected.dims);
    return Mismatch{m, m};
  }
  const int64_t n = expected.count();
  int64_t bad = 0, first = -1, worst = -1;
  double max_err = 0;
  const bool is_float = onnx_is_float(expected.dtype);
  for (int64_t i = 0; i < n; ++i) {
    double err;
    bool ok;
    if (is_float) {
      const double a = actual.at_double(i), b = expected.as_double(i);
      if (std::isnan(a) || std::isnan(b)) {
        ok = std::isnan(a) && std::isnan(b);
        err = ok ? 0 : std::numeric_limits<double>::infinity();
      } else if (std::isinf(a) || std::isinf(b)) {
        ok = a == b;
        err = ok ? 0 : std::numeric_limits<double>::infinity();
      } else {
        err = std::fabs(a - b);
        ok = err <= kAtol + kRtol * std::fabs(b);
      }
    } else {
      const int64_t a = actual_int(i), b = expected.as_int(i);
      ok = a == b;
      err = std::fabs(static_cast<double>(a) - static_cast<double>(b));
    }
    if (!ok) {
      ++bad;
      if (first < 0) first = i;
    }
    if (err > max_err || (worst < 0 && !ok)) {
      max_err = std::max(max_err, err);
      worst = i;
    }
  }
  if (bad == 0) return std::nullopt;
  auto val = [&](bool act, int64_t i) {
    if (is_float) return fmt_double(act ? actual.at_double(i) : expected.as_double(i));
    return std::to_string(act ? actual_int(i) : expected.as_int(i));
  };
  Mismatch m;
  m.reason = "wrong result: max abs err " + fmt_double(max_err) + " at " + index_str(worst, expected.dims) + " of " +
             out + " (" + std::to_string(bad) + " of " + std::to_string(n) + " elements differ)";
  std::ostringstream d;
  d << out << " " << actual.type().str() << ": " << bad << " of " << n << " elements differ";
  if (is_float) d << " (rtol " << kRtol << ", atol " << kAtol << ")";
  d << "\n  first mismatch at " << index_str(first, expected.dims) << ": got " << val(true, first) << ", expected "
    << val(false, first);
  d << "\n  max abs err " << fmt_double(max_err) << " at " << index_str(worst, expected.dims) << ": got "
    << val(true, worst) << ", expected " << val(false, worst);
  m.detail = d.str();
  return m;
}

// ---------------------------------------------------------------------------------------------
// One case

enum class Outcome : char { kPass = 'P', kFail = 'F', kError = 'E' };

struct CaseResult {
  Outcome outcome = Outcome::kError;
  std::string reason;  // one line, for the skips file
  std::string detail;  // for the log
  double seconds = 0;
};

struct Options {
  fs::path dir;
  std::optional<fs::path> skips;
  std::optional<std::string> only;
  bool verbose = false;
  std::optional<fs::path> write_skips;
  bool interpreter = false;
  bool in_process = false;
  int timeout_s = 300;
  std::optional<fs::path> emit_vgf;
};

struct GraphIo {
  std::string name;
  std::string kind;  // "tensor", "sequence", "optional", "map", "sparse_tensor", ...
  bool dynamic = false;
};

std::vector<GraphIo> graph_io(const google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>& vis) {
  std::vector<GraphIo> r;
  for (const auto& vi : vis) {
    GraphIo io;
    io.name = vi.name();
    switch (vi.type().value_case()) {
      case onnx::TypeProto::kTensorType: {
        io.kind = "tensor";
        const auto& tt = vi.type().tensor_type();
        if (!tt.has_shape()) {
          io.dynamic = true;
        } else {
          for (const auto& d : tt.shape().dim())
            if (!d.has_dim_value()) io.dynamic = true;
        }
        break;
      }
      case onnx::TypeProto::kSequenceType: io.kind = "sequence"; break;
      case onnx::TypeProto::kOptionalType: io.kind = "optional"; break;
      case onnx::TypeProto::kMapType: io.kind = "map"; break;
      case onnx::TypeProto::kSparseTensorType: io.kind = "sparse_tensor"; break;
      default: io.kind = "untyped"; break;
    }
    r.push_back(io);
  }
  return r;
}

// test_data_set_N directories, by N.
std::vector<fs::path> data_sets(const fs::path& case_dir) {
  std::vector<std::pair<long, fs::path>> sets;
  const std::string prefix = "test_data_set_";
  for (const auto& e : fs::directory_iterator(case_dir)) {
    std::string n = e.path().filename().string();
    if (e.is_directory() && n.rfind(prefix, 0) == 0) sets.emplace_back(std::strtol(n.c_str() + prefix.size(), nullptr, 10), e.path());
  }
  std::sort(sets.begin(), sets.end());
  std::vector<fs::path> r;
  for (auto& s : sets) r.push_back(s.second);
  return r;
}

size_t count_pb(const fs::path& ds, const std::string& stem) {
  size_t n = 0;
  while (fs::exists(ds / (stem + "_" + std::to_string(n) + ".pb"))) ++n;
  return n;
}

CaseResult error_result(const std::string& stage, const std::string& message, const std::string& model_path) {
  std::string m = message;
  replace_all(m, model_path, "model.onnx");
  CaseResult r;
  r.outcome = Outcome::kError;
  r.reason = one_line_reason(stage + ": " + m);
  r.detail = stage + ": " + m;
  return r;
}

// The case as a VGF container, or why it cannot be one.
void emit_vgf(const weft::Module& module, const fs::path& stem) {
  try {
    weft::vgf::save(weft::vgf::from_module(module), stem.string() + ".vgf");
  } catch (const std::exception& e) {
    std::ofstream(stem.string() + ".refused") << e.what() << "\n";
  }
}

CaseResult run_case_unchecked(const fs::path& case_dir, const Options& opt) {
  const fs::path model_path = case_dir / "model.onnx";
  const std::string model_str = model_path.string();
  onnx::ModelProto proto;
  if (!proto.ParseFromString(read_file(model_path))) throw HarnessError("model.onnx: not a ModelProto");
  const std::vector<GraphIo> inputs = graph_io(proto.graph().input());
  const std::vector<GraphIo> outputs = graph_io(proto.graph().output());
  const std::vector<fs::path> sets = data_sets(case_dir);
  if (sets.empty()) throw HarnessError("no test_data_set_* directory");

  CaseResult result;
  result.outcome = Outcome::kPass;
  for (const fs::path& ds : sets) {
    const std::string ds_name = ds.filename().string();
    if (count_pb(ds, "input") != inputs.size() || count_pb(ds, "output") != outputs.size())
      throw HarnessError(ds_name + " has " + std::to_string(count_pb(ds, "input")) + " inputs and " +
                         std::to_string(count_pb(ds, "output")) + " outputs, the graph " +
                         std::to_string(inputs.size()) + " and " + std::to_string(outputs.size()));
    // Input data first: it gives the shapes of inputs with symbolic dimensions. Data the harness
    // cannot read (strings, ...) and non-tensor kinds (sequence, optional) are reported only once the
    // import accepted the model, so that the importer's own diagnosis comes first.
    std::vector<std::optional<OnnxArray>> in_data(inputs.size());
    std::vector<std::string> in_error(inputs.size());
    weft::OnnxImportOptions import_options;
    import_options.narrow_float64 = true;  // TOSA has no float64: such cases run in float32
    for (size_t j = 0; j < inputs.size(); ++j) {
      if (inputs[j].kind != "tensor") continue;
      try {
        in_data[j] = read_tensor_pb(ds / ("input_" + std::to_string(j) + ".pb"));
        narrow_doubles(*in_data[j]);
      } catch (const HarnessError& e) {
        in_error[j] = e.what();
        continue;
      }
      if (inputs[j].dynamic) import_options.input_shapes[inputs[j].name] = in_data[j]->dims;
    }

    // Inputs the model needs at compile time (a Trilu's k, a Reshape's shape, axes, pads, scales)
    // are bound to this data set's values, as a user does with --bind: the importer names such an
    // input in its error (operand), and the import is retried with it bound.
    weft::Module module;
    std::set<std::string> bound;
    for (;;) {
      try {
        module = weft::import_onnx(model_str, import_options);
        break;
      } catch (const weft::Error& e) {
        const std::string& name = e.location().operand;
        std::optional<size_t> j;
        for (size_t k = 0; k < inputs.size(); ++k)
          if (inputs[k].name == name && in_data[k] && !bound.count(name)) j = k;
        std::optional<weft::Tensor> value = j ? binding_tensor(*in_data[*j]) : std::nullopt;
        if (!value || std::string(e.what()).find("--bind") == std::string::npos)
          return error_result("import", e.what(), model_str);
        import_options.bindings[name] = *value;
        bound.insert(name);
      } catch (const std::exception& e) {
        return error_result("import", e.what(), model_str);
      }
    }
    if (opt.emit_vgf && ds == sets.front()) emit_vgf(module, *opt.emit_vgf / case_dir.filename());
    for (const auto* ios : {&inputs, &outputs})
      for (const GraphIo& io : *ios)
        if (io.kind != "tensor")
          return error_result("harness", (ios == &inputs ? "input '" : "output '") + io.name + "' is a " + io.kind +
                                             "; the harness binds and compares tensors only",
                              model_str);
    for (const std::string& e : in_error)
      if (!e.empty()) return error_result("harness", e, model_str);

    // Input types as imported.
    std::map<std::string, weft::TensorType> in_types;
    std::set<std::string> out_names;
    std::unique_ptr<weft::Interpreter> interp;
    std::shared_ptr<const weft::Model> model;
    std::unique_ptr<weft::Context> ctx;
    try {
      if (opt.interpreter) {
        const weft::Graph& g = module.main();
        for (weft::ValueId v : g.inputs()) in_types[g.value(v).name] = g.value(v).type;
        for (weft::ValueId v : g.outputs()) out_names.insert(g.value(v).name);
        interp = std::make_unique<weft::Interpreter>(module);
      } else {
        model = weft::Model::from_module(module);
        for (const weft::IoInfo& io : model->inputs()) in_types[io.name] = io.type;
        for (const weft::IoInfo& io : model->outputs()) out_names.insert(io.name);
        ctx = std::make_unique<weft::Context>(model);
      }
    } catch (const std::exception& e) {
      return error_result("prepare", e.what(), model_str);
    }

    for (const GraphIo& o : outputs)
      if (!out_names.count(o.name))
        return error_result("harness", "graph output '" + o.name + "' is not an output of the imported module",
                            model_str);
    std::map<std::string, weft::Tensor> feeds;
    for (size_t j = 0; j < inputs.size(); ++j) {
      if (bound.count(inputs[j].name)) continue;  // a constant of the compiled model now
      auto it = in_types.find(inputs[j].name);
      if (it == in_types.end())
        return error_result("harness", "graph input '" + inputs[j].name + "' is not an input of the imported module",
                            model_str);
      try {
        feeds[inputs[j].name] = to_weft_input(*in_data[j], inputs[j].name, it->second);
      } catch (const HarnessError& e) {
        return error_result("harness", e.what(), model_str);
      }
    }

    std::map<std::string, weft::Tensor> results;
    try {
      if (opt.interpreter) {
        results = interp->run(feeds);
      } else {
        for (const auto& [name, t] : feeds) ctx->set_input(name, t);
        ctx->run();
        for (const GraphIo& o : outputs) results[o.name] = ctx->output(o.name);  // views, valid until the next run
      }
    } catch (const std::exception& e) {
      return error_result("run", e.what(), model_str);
    }

    std::vector<Mismatch> mismatches;
    for (size_t j = 0; j < outputs.size(); ++j) {
      OnnxArray expected = read_tensor_pb(ds / ("output_" + std::to_string(j) + ".pb"));
      narrow_doubles(expected);
      auto it = results.find(outputs[j].name);
      if (it == results.end())
        return error_result("harness", "the run returned no output '" + outputs[j].name + "'", model_str);
      if (auto m = compare_output(outputs[j].name, it->second, expected)) mismatches.push_back(*m);
    }
    if (!mismatches.empty()) {
      result.outcome = Outcome::kFail;
      result.reason = one_line_reason(mismatches.front().reason);
      for (const Mismatch& m : mismatches) result.detail += (result.detail.empty() ? "" : "\n") + m.detail;
      if (sets.size() > 1) result.detail = ds_name + ": " + result.detail;
      return result;
    }
  }
  return result;
}

CaseResult run_case(const fs::path& case_dir, const Options& opt) {
  auto t0 = std::chrono::steady_clock::now();
  CaseResult r;
  try {
    r = run_case_unchecked(case_dir, opt);
  } catch (const HarnessError& e) {
    r = error_result("harness", e.what(), (case_dir / "model.onnx").string());
  } catch (const std::exception& e) {
    r = error_result("harness", std::string("unexpected exception: ") + e.what(), (case_dir / "model.onnx").string());
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

// ---- isolation: each case in a child process --------------------------------------------------

void put_string(std::string& buf, const std::string& s) {
  uint64_t n = s.size();
  buf.append(reinterpret_cast<const char*>(&n), sizeof n);
  buf += s;
}

bool get_string(const std::string& buf, size_t& pos, std::string& s) {
  uint64_t n;
  if (buf.size() - pos < sizeof n) return false;
  std::memcpy(&n, buf.data() + pos, sizeof n);
  pos += sizeof n;
  if (buf.size() - pos < n) return false;
  s = buf.substr(pos, n);
  pos += n;
  return true;
}

CaseResult run_case_isolated(const fs::path& case_dir, const Options& opt) {
  auto t0 = std::chrono::steady_clock::now();
  auto crashed = [&](const std::string& what) {
    CaseResult r;
    r.outcome = Outcome::kError;
    r.reason = one_line_reason(what);
    r.detail = what;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
  };
  int fds[2];
  if (pipe(fds) != 0) return crashed(std::string("harness: pipe: ") + std::strerror(errno));
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return crashed(std::string("harness: fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    close(fds[0]);
    CaseResult r = run_case(case_dir, opt);
    std::string buf(1, static_cast<char>(r.outcome));
    put_string(buf, r.reason);
    put_string(buf, r.detail);
    buf.append(reinterpret_cast<const char*>(&r.seconds), sizeof r.seconds);
    for (size_t off = 0; off < buf.size();) {
      ssize_t w = write(fds[1], buf.data() + off, buf.size() - off);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) _exit(3);
      off += static_cast<size_t>(w);
    }
    _exit(0);
  }
  close(fds[1]);
  std::string buf;
  bool timed_out = false;
  const auto deadline = t0 + std::chrono::seconds(opt.timeout_s);
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    int pr = poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (pr < 0 && errno == EINTR) continue;
    if (pr == 0) continue;
    char chunk[65536];
    ssize_t n = read(fds[0], chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    buf.append(chunk, static_cast<size_t>(n));
  }
  close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) return crashed("timed out after " + std::to_string(opt.timeout_s) + " s");
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    const char* abbrev = sigabbrev_np(sig);
    return crashed("crashed: SIG" + std::string(abbrev ? abbrev : std::to_string(sig).c_str()) + " (" +
                   strsignal(sig) + ")");
  }
  CaseResult r;
  size_t pos = 1;
  if (WEXITSTATUS(status) != 0 || buf.empty() || !get_string(buf, pos, r.reason) || !get_string(buf, pos, r.detail) ||
      buf.size() - pos != sizeof r.seconds)
    return crashed("crashed: exit status " + std::to_string(WEXITSTATUS(status)) + " without a result");
  r.outcome = static_cast<Outcome>(buf[0]);
  std::memcpy(&r.seconds, buf.data() + pos, sizeof r.seconds);
  return r;
}

// ---------------------------------------------------------------------------------------------
// Skips file

struct SkipEntry {
  std::string reason;
  int line = 0;
};

std::map<std::string, SkipEntry> read_skips(const fs::path& path, const std::set<std::string>& known) {
  std::ifstream in(path);
  if (!in) throw HarnessError(path.string() + ": cannot open the skips file");
  static const std::regex kLine(R"(^(test_[A-Za-z0-9_]+)[ \t]+#[ \t]*(\S.*?)[ \t]*$)");
  static const std::regex kName(R"(^test_[A-Za-z0-9_]+$)");
  std::map<std::string, SkipEntry> skips;
  std::string line;
  for (int lineno = 1; std::getline(in, line); ++lineno) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    size_t b = line.find_first_not_of(" \t");
    if (b == std::string::npos || line[b] == '#') continue;
    const std::string where = path.string() + ":" + std::to_string(lineno) + ": ";
    if (b != 0) throw HarnessError(where + "entries start at the beginning of the line");
    std::smatch m;
    if (!std::regex_match(line, m, kLine)) {
      std::string first = line.substr(0, line.find_first_of(" \t#"));
      if (std::regex_match(first, kName) && line.size() > first.size() && line[first.size()] == '#')
        throw HarnessError(where + "put spaces or a tab between '" + first + "' and '#'");
      if (std::regex_match(first, kName))
        throw HarnessError(where + "'" + first + "' needs a reason: `" + first + "  # why it is skipped`");
      throw HarnessError(where + "expected `test_name  # reason`, got `" + line + "`");
    }
    const std::string name = m[1];
    if (!known.count(name)) throw HarnessError(where + "no case '" + name + "' in the suite");
    auto [it, inserted] = skips.emplace(name, SkipEntry{m[2], lineno});
    if (!inserted) throw HarnessError(where + "'" + name + "' is already listed on line " + std::to_string(it->second.line));
  }
  return skips;
}

void write_skips(const fs::path& path, const std::vector<std::pair<std::string, CaseResult>>& results, size_t total,
                 const Options& opt) {
  size_t width = 0;
  for (const auto& [name, r] : results)
    if (r.outcome != Outcome::kPass) width = std::max(width, name.size());
  std::ofstream out(path);
  if (!out) throw HarnessError(path.string() + ": cannot write");
  out << "# ONNX backend node cases that do not pass, written by weft_onnx_node_suite --write-skips.\n"
      << "# Format: test_name  # reason (mandatory). " << total << " cases were run"
      << (opt.only ? " (--only " + *opt.only + ")" : "") << ".\n";
  for (const auto& [name, r] : results) {
    if (r.outcome == Outcome::kPass) continue;
    out << name << std::string(width - name.size() + 2, ' ') << "# " << r.reason << "\n";
  }
  if (!out) throw HarnessError(path.string() + ": write failed");
}

// ---------------------------------------------------------------------------------------------

int dump_pb(const std::vector<std::string>& files) {
  for (const std::string& f : files) {
    OnnxArray a = read_tensor_pb(f);
    std::printf("%s %s %s\n", f.c_str(), onnx_type_name(a.dtype), dims_str(a.dims).c_str());
    const bool fl = onnx_is_float(a.dtype);
    for (int64_t i = 0; i < a.count(); ++i) {
      if (fl)
        std::printf("%.17g\n", a.as_double(i));
      else if (a.dtype == onnx::TensorProto::UINT64)
        std::printf("%llu\n", static_cast<unsigned long long>(a.load<uint64_t>(i)));
      else
        std::printf("%lld\n", static_cast<long long>(a.as_int(i)));
    }
  }
  return 0;
}

[[noreturn]] void usage(const std::string& error) {
  if (!error.empty()) std::cerr << "weft_onnx_node_suite: " << error << "\n";
  std::cerr << "usage: weft_onnx_node_suite DIR [--skips FILE] [--only REGEX] [--verbose] [--write-skips OUT]\n"
               "                            [--interpreter] [--in-process] [--timeout SEC]\n"
               "       weft_onnx_node_suite --dump-pb FILE...\n"
               "Runs the ONNX backend node cases under DIR/node (scripts/onnx/gen_node_tests.py writes them).\n"
               "  --skips FILE        cases expected not to pass: `test_name  # reason` per line\n"
               "  --only REGEX        run only the cases whose name contains a match (ECMAScript regex)\n"
               "  --verbose           print every case with its outcome and time\n"
               "  --write-skips OUT   write a skips file listing every case that did not pass\n"
               "  --interpreter       run with weft::Interpreter instead of the runtime\n"
               "  --in-process        run the cases in this process (no crash isolation; for debuggers)\n"
               "  --timeout SEC       per-case time limit when isolated (default 300)\n"
               "  --emit-vgf OUTDIR   write each case as OUTDIR/<case>.vgf (or <case>.refused: why not)\n";
  std::exit(2);
}

int run_main(int argc, char** argv) {
  Options opt;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "--dump-pb") return dump_pb({args.begin() + 1, args.end()});
  std::optional<fs::path> dir;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) usage(a + " needs a value");
      return args[++i];
    };
    if (a == "--skips") opt.skips = value();
    else if (a == "--only") opt.only = value();
    else if (a == "--verbose" || a == "-v") opt.verbose = true;
    else if (a == "--write-skips") opt.write_skips = value();
    else if (a == "--interpreter") opt.interpreter = true;
    else if (a == "--in-process") opt.in_process = true;
    else if (a == "--emit-vgf") opt.emit_vgf = value();
    else if (a == "--timeout") {
      std::string v = value();
      char* end = nullptr;
      long t = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end || t <= 0 || t > 86400) usage("--timeout needs a number of seconds");
      opt.timeout_s = static_cast<int>(t);
    } else if (a == "--help" || a == "-h") usage("");
    else if (!a.empty() && a[0] == '-') usage("unknown option " + a);
    else if (dir) usage("more than one DIR");
    else dir = a;
  }
  if (!dir) usage("DIR is required");
  opt.dir = *dir;
  if (opt.emit_vgf) fs::create_directories(*opt.emit_vgf);
  const fs::path node_dir = opt.dir / "node";
  if (!fs::is_directory(node_dir))
    throw HarnessError(node_dir.string() + " is not a directory (run scripts/onnx/gen_node_tests.py " +
                       opt.dir.string() + ")");

  std::vector<std::string> all;
  for (const auto& e : fs::directory_iterator(node_dir))
    if (e.is_directory()) all.push_back(e.path().filename().string());
  std::sort(all.begin(), all.end());
  const std::set<std::string> known(all.begin(), all.end());

  std::map<std::string, SkipEntry> skips;
  if (opt.skips) skips = read_skips(*opt.skips, known);

  std::optional<std::regex> only;
  if (opt.only) {
    try {
      only.emplace(*opt.only);
    } catch (const std::regex_error& e) {
      usage("--only: bad regular expression: " + std::string(e.what()));
    }
  }
  std::vector<std::string> selected;
  for (const std::string& n : all)
    if (!only || std::regex_search(n, *only)) selected.push_back(n);

  size_t passed = 0, failed = 0, errors = 0, skipped = 0;
  std::vector<std::string> now_passing;
  std::vector<std::pair<std::string, CaseResult>> results;
  const auto t0 = std::chrono::steady_clock::now();
  for (const std::string& name : selected) {
    const fs::path case_dir = node_dir / name;
    CaseResult r = opt.in_process ? run_case(case_dir, opt) : run_case_isolated(case_dir, opt);
    const bool listed = skips.count(name) != 0;
    const char* tag = r.outcome == Outcome::kPass ? "PASS " : r.outcome == Outcome::kFail ? "FAIL " : "ERROR";
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.3fs", r.seconds);
    if (listed) {
      ++skipped;
      if (r.outcome == Outcome::kPass) {
        now_passing.push_back(name);
        std::cout << "SKIP  " << name << ": now passing, remove from skips\n";
      } else if (opt.verbose) {
        std::cout << "SKIP  " << name << " (" << secs << "; still " << (r.outcome == Outcome::kFail ? "fails" : "errors")
                  << ": " << r.reason << ")\n";
      }
    } else if (r.outcome == Outcome::kPass) {
      ++passed;
      if (opt.verbose) std::cout << "PASS  " << name << " (" << secs << ")\n";
    } else {
      (r.outcome == Outcome::kFail ? failed : errors)++;
      std::string detail = r.detail;
      replace_all(detail, "\n", "\n      ");
      std::cout << tag << " " << name << (opt.verbose ? " (" + std::string(secs) + ")" : "") << ": " << detail << "\n";
    }
    std::cout.flush();
    results.emplace_back(name, std::move(r));
  }
  const double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  if (opt.write_skips) {
    write_skips(*opt.write_skips, results, selected.size(), opt);
    size_t n = 0;
    for (const auto& [name, r] : results) n += r.outcome != Outcome::kPass;
    std::cout << "wrote " << n << " skip entries to " << opt.write_skips->string() << "\n";
  }
  if (!now_passing.empty())
    std::cout << now_passing.size() << " case(s) listed in " << opt.skips->string()
              << " now pass; remove them from the skips file\n";
  char tail[64];
  std::snprintf(tail, sizeof tail, " (%.1f s)", total_s);
  std::cout << "passed " << passed << " / failed " << failed << " / errors " << errors << " / skipped " << skipped
            << " of " << selected.size() << tail << "\n";
  return failed == 0 && errors == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  GOOGLE_PROTOBUF_VERIFY_VERSION;
  try {
    return run_main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "weft_onnx_node_suite: " << e.what() << "\n";
    return 2;
  }
}
