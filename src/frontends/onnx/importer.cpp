// The ONNX importer: model loading, graph inputs and initializers, the walk over the nodes, the
// emitter that folds constant sub-graphs with the reference kernels, layout bookkeeping and the
// final clean-up. Operator lowerings live in lower_*.cpp.
#include "frontends/onnx/importer.h"
#include "weft/io.h"
#include "compiler/canonicalize.h"
#include "compiler/layout_cleanup.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>

#include <onnx/defs/schema.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/wire_format_lite.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include "backends/reference/kernels.h"
#include "weft/verify.h"

namespace weft::onnxfe {

const char* onnx_type_name(int t) {
  switch (t) {
    case kOFloat: return "float";
    case kOUint8: return "uint8";
    case kOInt8: return "int8";
    case kOUint16: return "uint16";
    case kOInt16: return "int16";
    case kOInt32: return "int32";
    case kOInt64: return "int64";
    case kOString: return "string";
    case kOBool: return "bool";
    case kOFloat16: return "float16";
    case kODouble: return "double";
    case kOUint32: return "uint32";
    case kOUint64: return "uint64";
    case kOBfloat16: return "bfloat16";
    default: return "undefined";
  }
}

// Set while a model is imported with OnnxImportOptions::narrow_float64 (this thread only).
thread_local bool g_narrow_float64 = false;

std::optional<DType> tosa_dtype(int t) {
  switch (t) {
    case kODouble:
      if (g_narrow_float64) return DType::kFp32;
      return std::nullopt;
    case kOFloat: return DType::kFp32;
    case kOFloat16: return DType::kFp16;
    case kOBfloat16: return DType::kBf16;
    case kOInt8: return DType::kInt8;
    case kOInt16: return DType::kInt16;
    case kOInt32: return DType::kInt32;
    case kOInt64: return DType::kInt32;
    // Unsigned integers are computed as int32 inside the graph (TOSA 1.0 has no unsigned
    // arithmetic); at the graph's boundary uint8/uint16 travel in int8/int16 bits (boundary_dtype).
    case kOUint8: case kOUint16: case kOUint32: case kOUint64: return DType::kInt32;
    case kOBool: return DType::kBool;
    default: return std::nullopt;
  }
}

std::optional<DType> boundary_dtype(int t) {
  if (t == kOUint8) return DType::kInt8;
  if (t == kOUint16) return DType::kInt16;
  return tosa_dtype(t);
}

bool is_unsigned_onnx(int t) { return t == kOUint8 || t == kOUint16 || t == kOUint32 || t == kOUint64; }

namespace {

int onnx_type_of(DType t) {
  switch (t) {
    case DType::kFp32: return kOFloat;
    case DType::kFp16: return kOFloat16;
    case DType::kBf16: return kOBfloat16;
    case DType::kInt8: return kOInt8;
    case DType::kInt16: return kOInt16;
    case DType::kInt32: return kOInt32;
    case DType::kBool: return kOBool;
    default: return kOUndefined;
  }
}

std::string unsupported_type_message(int t) {
  std::string s = std::string("ONNX type ") + onnx_type_name(t) + " has no TOSA 1.0 equivalent";
  if (t == kODouble) s += " (TOSA has no float64; export the model in float32, or narrow it to float32 when it is compiled with --narrow-float64)";
  return s;
}

bool is_identity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

}  // namespace

std::vector<int64_t> inverse_perm(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return inv;
}

// ---- tensors from protobuf ----------------------------------------------------------------------

// An initializer may declare at most this many elements (TOSA level 8K: 2^31 - 1).
constexpr int64_t kMaxInitializerElements = (int64_t{1} << 31) - 1;

Tensor tensor_from_proto(const onnx::TensorProto& t, const std::string& what, const std::string& base_dir,
                         std::shared_ptr<const std::vector<int64_t>>* exact_ints, int* onnx_type,
                         const std::shared_ptr<const void>& owner, const ParsedOnnx* parsed) {
  const int et = t.data_type();
  if (onnx_type) *onnx_type = et;
  auto dt = tosa_dtype(et);
  if (!dt) throw Error(ErrorCode::kUnsupported, what + ": " + unsupported_type_message(et));
  Shape shape(t.dims().begin(), t.dims().end());
  for (int64_t d : shape)
    if (d < 0) throw Error(ErrorCode::kInvalidArgument, what + ": negative dimension in " + shape_str(shape));
  // The element count and byte size, checked before anything is allocated: a few bytes of
  // protobuf can declare any shape.
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d != 0 && n > kMaxInitializerElements / d)
      throw Error(ErrorCode::kInvalidArgument, what + ": shape " + shape_str(shape) + " has more than " +
                                                   std::to_string(kMaxInitializerElements) +
                                                   " elements (2^31 - 1, TOSA level 8K): no tensor of it can exist");
    n *= d;
  }
  const size_t elem_bytes = et == kOInt64 || et == kODouble || et == kOUint64 ? 8
                            : et == kOUint8                                  ? 1
                            : et == kOUint16                                 ? 2
                                                                             : storage_size(*dt);
  const uint64_t want_bytes = static_cast<uint64_t>(n) * elem_bytes;

  // The little-endian bytes of the data, from raw_data, external data (mapped) or the typed fields.
  Buffer external;
  std::optional<std::string_view> raw;
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string location;
    int64_t offset = 0, length = -1;
    for (const auto& kv : t.external_data()) {
      auto number = [&](const std::string& key) {
        const std::string& v = kv.value();
        if (v.empty() || v.size() > 18 || !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; }))
          throw Error(ErrorCode::kInvalidArgument,
                      what + ": external data '" + key + "' must be a non-negative decimal number, got '" + v + "'");
        return std::stoll(v);
      };
      if (kv.key() == "location") location = kv.value();
      else if (kv.key() == "offset") offset = number("offset");
      else if (kv.key() == "length") length = number("length");
    }
    if (base_dir.empty())
      throw Error(ErrorCode::kInvalidArgument, what + ": external data ('" + location +
                                                   "') needs the model's directory; load the model from a file");
    // Confined to the model's folder, as ONNX Runtime does: a relative path without "..", and
    // no symbolic link leading out of the folder.
    const std::filesystem::path rel(location);
    const bool escapes = location.empty() || rel.is_absolute() || rel.has_root_name() ||
                         std::any_of(rel.begin(), rel.end(), [](const std::filesystem::path& c) { return c == ".."; });
    std::error_code ec;
    const std::filesystem::path dir = std::filesystem::weakly_canonical(base_dir, ec);
    const std::filesystem::path p = std::filesystem::weakly_canonical(std::filesystem::path(base_dir) / rel, ec);
    auto [dir_end, p_it] = std::mismatch(dir.begin(), dir.end(), p.begin(), p.end());
    if (escapes || ec || dir_end != dir.end())
      throw Error(ErrorCode::kInvalidArgument,
                  what + ": external data location '" + location +
                      "' is not a file inside the model's folder (relative, no '..', no link out of the folder)");
    if (!std::filesystem::is_regular_file(p, ec))
      throw Error(ErrorCode::kIo, what + ": external data '" + location + "' is not a regular file ('" + p.string() + "')");
    const auto fsize = static_cast<int64_t>(std::filesystem::file_size(p, ec));
    if (ec) throw Error(ErrorCode::kIo, what + ": cannot read the size of external data file '" + p.string() + "': " + ec.message());
    if (length < 0) length = fsize - offset;
    if (offset > fsize || length > fsize - offset)
      throw Error(ErrorCode::kInvalidArgument, what + ": external data range [" + std::to_string(offset) + ", " +
                                                   std::to_string(offset + length) + ") lies outside '" +
                                                   p.string() + "' (" + std::to_string(fsize) + " bytes)");
    if (static_cast<uint64_t>(length) != want_bytes)
      throw Error(ErrorCode::kInvalidArgument, what + ": external data holds " + std::to_string(length) +
                                                   " bytes, its shape " + shape_str(shape) + " needs " +
                                                   std::to_string(want_bytes));
    // Mapped, not read: a tensor stored as-is then uses the file's pages (see below), and the
    // backends that copy a weight into a layout of their own release them.
    try {
      external = Buffer::map_file(p.string(), static_cast<size_t>(offset), static_cast<size_t>(length));
    } catch (const Error& e) {
      throw Error(ErrorCode::kIo, what + ": cannot map external data file '" + p.string() + "': " + e.message());
    }
    raw = std::string_view(reinterpret_cast<const char*>(external.data()), external.size());
  } else if (t.has_raw_data()) {
    raw = t.raw_data();
  }
  // Data present against data declared, before the tensor is allocated.
  {
    uint64_t have = 0;
    if (raw) {
      have = raw->size();
    } else if (et == kOInt64) {
      have = static_cast<uint64_t>(t.int64_data_size()) * 8;
    } else if (et == kOFloat) {
      have = static_cast<uint64_t>(t.float_data_size()) * 4;
    } else if (et == kODouble) {
      have = static_cast<uint64_t>(t.double_data_size()) * 8;
    } else if (et == kOUint32 || et == kOUint64) {
      have = static_cast<uint64_t>(t.uint64_data_size()) * elem_bytes;
    } else {
      have = static_cast<uint64_t>(t.int32_data_size()) * elem_bytes;
    }
    if (have != want_bytes && (raw || n != 0))
      throw Error(ErrorCode::kInvalidArgument,
                  what + ": holds " + std::to_string(have / std::max<size_t>(elem_bytes, 1)) + " values, its shape " +
                      shape_str(shape) + " needs " + std::to_string(n));
  }

  auto count_error = [&](int64_t got) {
    return Error(ErrorCode::kInvalidArgument, what + ": holds " + std::to_string(got) + " values, its shape " +
                                                  shape_str(shape) + " needs " + std::to_string(n));
  };
  TensorType type{*dt, shape};
  if (is_unsigned_onnx(et)) {
    // Carried as int32 (tosa_dtype): every value must fit, uint32/uint64 ones are checked.
    std::vector<int64_t> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      uint64_t x = 0;
      if (raw) {
        std::memcpy(&x, raw->data() + i * static_cast<int64_t>(elem_bytes), elem_bytes);
      } else if (et == kOUint32 || et == kOUint64) {
        x = t.uint64_data(static_cast<int>(i));
      } else {
        x = static_cast<uint32_t>(t.int32_data(static_cast<int>(i))) & (et == kOUint8 ? 0xFFu : 0xFFFFu);
      }
      if (x > static_cast<uint64_t>(INT32_MAX))
        throw Error(ErrorCode::kUnsupported, what + ": " + onnx_type_name(et) + " value " + std::to_string(x) + " at index " +
                                                 std::to_string(i) + " does not fit int32, which carries " +
                                                 onnx_type_name(et) + " values in TOSA 1.0 (values up to 2^31 - 1 are supported)");
      v[static_cast<size_t>(i)] = static_cast<int64_t>(x);
    }
    Tensor out = Tensor::from_ints(type, v);
    if (exact_ints) *exact_ints = std::make_shared<const std::vector<int64_t>>(std::move(v));
    return out;
  }
  if (et == kOInt64) {
    std::vector<int64_t> v(static_cast<size_t>(n));
    if (raw) {
      if (raw->size() != static_cast<size_t>(n) * 8) throw count_error(static_cast<int64_t>(raw->size() / 8));
      if (!raw->empty()) std::memcpy(v.data(), raw->data(), raw->size());
    } else {
      if (t.int64_data_size() != n) throw count_error(t.int64_data_size());
      std::copy(t.int64_data().begin(), t.int64_data().end(), v.begin());
    }
    Tensor out = Tensor::zeros(type);
    int32_t* p = out.mutable_data<int32_t>();
    for (int64_t i = 0; i < n; ++i)
      p[i] = static_cast<int32_t>(std::clamp<int64_t>(v[static_cast<size_t>(i)], INT32_MIN, INT32_MAX));
    if (exact_ints) *exact_ints = std::make_shared<const std::vector<int64_t>>(std::move(v));
    return out;
  }
  if (et == kODouble) {
    // Narrowed to float32 (OnnxImportOptions::narrow_float64), each value rounded to nearest.
    Tensor out = Tensor::zeros(type);
    float* p = out.mutable_data<float>();
    for (int64_t i = 0; i < n; ++i) {
      double v;
      if (raw) std::memcpy(&v, raw->data() + i * 8, 8);
      else v = t.double_data(static_cast<int>(i));
      p[i] = static_cast<float>(v);
    }
    return out;
  }
  const size_t bytes = type.byte_size();
  const bool mapped = external.file_backed();
  if (raw && (owner || mapped) && raw->size() == bytes && bytes >= 4096 &&
      reinterpret_cast<uintptr_t>(raw->data()) % storage_size(*dt) == 0) {
    // Stored as-is: borrowed from the parsed model, which `owner` keeps alive, or from the mapping
    // of the external data file.
    Buffer bytes_of = mapped ? external : Buffer::wrap(owner, raw->data(), bytes);
    if (!mapped && parsed && bytes >= kReloadableBytes) {
      // Also stored as-is in the file at a known place: reloadable (one buffer per initializer).
      auto it = parsed->raw_ranges.find(raw->data());
      if (it != parsed->raw_ranges.end() && it->second.name == t.name() && it->second.size == bytes) {
        if (!it->second.wrapped)
          it->second.wrapped = core::wrap_reloadable(owner, raw->data(), bytes, parsed->origin, it->second.offset);
        bytes_of = *it->second.wrapped;
      }
    }
    Tensor borrowed(type, bytes_of);
    if (exact_ints && (et == kOInt32 || et == kOInt16 || et == kOInt8))
      *exact_ints = std::make_shared<const std::vector<int64_t>>(borrowed.to_ints());
    return borrowed;
  }
  Tensor out = Tensor::zeros(type);
  if (raw) {
    if (raw->size() != bytes)
      throw count_error(static_cast<int64_t>(raw->size() / std::max<size_t>(storage_size(*dt), 1)));
    if (bytes) std::memcpy(out.mutable_bytes(), raw->data(), bytes);
  } else if (et == kOFloat) {
    if (t.float_data_size() != n) throw count_error(t.float_data_size());
    if (bytes) std::memcpy(out.mutable_bytes(), t.float_data().data(), bytes);
  } else {
    // int32_data carries int8/int16/int32/bool values and float16/bfloat16 bit patterns.
    if (t.int32_data_size() != n) throw count_error(t.int32_data_size());
    for (int64_t i = 0; i < n; ++i) {
      const int32_t v = t.int32_data(static_cast<int>(i));
      if (et == kOFloat16 || et == kOBfloat16) {
        const uint16_t bits = static_cast<uint16_t>(v);
        std::memcpy(out.mutable_bytes() + i * 2, &bits, 2);
      } else {
        store_from_int(*dt, out.mutable_bytes() + i * static_cast<int64_t>(storage_size(*dt)), v);
      }
    }
  }
  if (et != kOInt64 && exact_ints && (et == kOInt32 || et == kOInt16 || et == kOInt8)) {
    auto ints = out.to_ints();
    *exact_ints = std::make_shared<const std::vector<int64_t>>(std::move(ints));
  }
  return out;
}

// ---- the importer ---------------------------------------------------------------------------------

Importer::Importer(const onnx::ModelProto& model, std::string source, const OnnxImportOptions& options,
                   std::string base_dir, std::shared_ptr<const void> owner, const ParsedOnnx* parsed)
    : model_(model), g_(model.graph()), owner_(std::move(owner)), parsed_(parsed), source_(std::move(source)), options_(options),
      base_dir_(std::move(base_dir)), graph_("main") {
  for (const auto& os : model.opset_import())
    if (os.domain().empty() || os.domain() == "ai.onnx") opset_ = static_cast<int>(os.version());
  if (opset_ == 0)
    throw Error(ErrorCode::kInvalidArgument, "the model imports no opset of the default ONNX domain (ai.onnx)",
                {.file = source_});
  if (opset_ < 1)
    throw Error(ErrorCode::kInvalidArgument, "the model imports ai.onnx opset " + std::to_string(opset_), {.file = source_});
}

int Importer::num_inputs() const {
  int n = node_->input_size();
  while (n > 0 && node_->input(n - 1).empty()) --n;
  return n;
}

bool Importer::has_input(int i) const { return i >= 0 && i < node_->input_size() && !node_->input(i).empty(); }

const OVal& Importer::in(int i) const {
  if (!has_input(i)) fail("input " + std::to_string(i) + " is required", ErrorCode::kInvalidArgument);
  auto it = values_.find(node_->input(i));
  if (it == values_.end())
    fail("input " + std::to_string(i) + " '" + node_->input(i) + "' is not produced by any earlier node, input or "
         "initializer (nodes must be in topological order)",
         ErrorCode::kInvalidArgument);
  return it->second;
}

int Importer::num_outputs() const { return node_->output_size(); }
bool Importer::wants_output(int i) const { return i < node_->output_size() && !node_->output(i).empty(); }

void Importer::set_out(int i, TVal v, std::vector<int64_t> perm, int onnx_type) {
  if (!wants_output(i)) return;
  if (is_identity(perm)) perm.clear();
  OVal o;
  if (onnx_type < 0) {
    onnx_type = onnx_type_of(v.dtype());
    // int64 flows stay int64 (ONNX semantics of later Cast/Shape users), carried as int32.
    // Likewise unsigned flows, computed as int32.
    if (v.dtype() == DType::kInt32 && num_inputs() > 0 && has_input(0) &&
        (in(0).onnx_type == kOInt64 || is_unsigned_onnx(in(0).onnx_type)))
      onnx_type = in(0).onnx_type;
  }
  o.onnx_type = onnx_type;
  o.shape.resize(v.shape().size());
  if (perm.empty()) o.shape = v.shape();
  else {
    if (perm.size() != v.shape().size()) fail("internal: layout of rank " + std::to_string(perm.size()) +
                                              " for a value of rank " + std::to_string(v.rank()), ErrorCode::kInternal);
    for (size_t k = 0; k < perm.size(); ++k) o.shape[static_cast<size_t>(perm[k])] = v.shape()[k];
  }
  o.perm = std::move(perm);
  o.v = std::move(v);
  values_[node_->output(i)] = std::move(o);
}

void Importer::set_out_const_ints(int i, std::vector<int64_t> values, Shape shape, int onnx_type) {
  DType dt = tosa_dtype(onnx_type).value_or(DType::kInt32);
  std::vector<int64_t> clamped(values);
  for (auto& x : clamped) x = std::clamp<int64_t>(x, int_min(dt), int_max(dt));
  TVal v = const_tensor(Tensor::from_ints({dt, shape}, clamped));
  set_out(i, v, {}, onnx_type);
  set_exact_ints(i, std::make_shared<const std::vector<int64_t>>(std::move(values)));
}

const onnx::AttributeProto* Importer::attr(const char* name) const {
  for (const auto& a : node_->attribute())
    if (a.name() == name) return &a;
  return nullptr;
}
int64_t Importer::attr_int(const char* name, int64_t dflt) const {
  const auto* a = attr(name);
  if (!a) return dflt;
  if (a->type() != onnx::AttributeProto::INT) fail(std::string("attribute '") + name + "' must be an int", ErrorCode::kInvalidArgument);
  return a->i();
}
float Importer::attr_float(const char* name, float dflt) const {
  const auto* a = attr(name);
  if (!a) return dflt;
  if (a->type() != onnx::AttributeProto::FLOAT) fail(std::string("attribute '") + name + "' must be a float", ErrorCode::kInvalidArgument);
  return a->f();
}
std::string Importer::attr_str(const char* name, const std::string& dflt) const {
  const auto* a = attr(name);
  if (!a) return dflt;
  if (a->type() != onnx::AttributeProto::STRING) fail(std::string("attribute '") + name + "' must be a string", ErrorCode::kInvalidArgument);
  return a->s();
}
std::optional<std::vector<int64_t>> Importer::attr_ints(const char* name) const {
  const auto* a = attr(name);
  if (!a) return std::nullopt;
  if (a->type() != onnx::AttributeProto::INTS) fail(std::string("attribute '") + name + "' must be a list of ints", ErrorCode::kInvalidArgument);
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}
std::optional<std::vector<float>> Importer::attr_floats(const char* name) const {
  const auto* a = attr(name);
  if (!a) return std::nullopt;
  if (a->type() != onnx::AttributeProto::FLOATS) fail(std::string("attribute '") + name + "' must be a list of floats", ErrorCode::kInvalidArgument);
  return std::vector<float>(a->floats().begin(), a->floats().end());
}
Tensor Importer::attr_tensor(const char* name) const {
  const auto* a = attr(name);
  if (!a || a->type() != onnx::AttributeProto::TENSOR) fail(std::string("attribute '") + name + "' must be a tensor", ErrorCode::kInvalidArgument);
  return tensor_from_proto(a->t(), std::string("attribute '") + name + "'", base_dir_, nullptr, nullptr);
}

void Importer::fail(const std::string& msg, ErrorCode code) const {
  throw Error(code, msg, {.file = source_, .node = node_label_});
}

void Importer::fail_not_constant(int i, const std::string& what, const std::string& must) const {
  const std::string& name = node_->input(i);
  bool graph_input = false;
  for (const auto& vi : g_.input()) graph_input |= vi.name() == name;
  for (const auto& t : g_.initializer()) graph_input &= t.name() != name;
  if (graph_input)
    throw Error(ErrorCode::kUnsupported,
                what + " (input " + std::to_string(i) + " '" + name + "') " + must + "; it is the graph input '" + name +
                    "', given at run time: bind it to a value when the model is compiled with --bind " + name +
                    "=FILE.npy (OnnxImportOptions::bindings)",
                {.file = source_, .node = node_label_, .operand = name});
  // A value of the main graph computed from graph inputs: name those inputs, which the user can
  // bind (their values, not only their shapes, decide it).
  std::vector<std::string> behind = runtime_inputs_behind(name);
  if (!behind.empty()) {
    std::string list;
    for (const std::string& b : behind) list += (list.empty() ? "'" : ", '") + b + "'";
    throw Error(ErrorCode::kUnsupported,
                what + " (input " + std::to_string(i) + " '" + name + "') " + must +
                    "; it is computed at run time from the graph input" + (behind.size() > 1 ? "s " : " ") + list +
                    ": bind " + (behind.size() > 1 ? "them" : "it") + " to values when the model is compiled with --bind " +
                    behind[0] + "=FILE.npy (OnnxImportOptions::bindings)" + budget_note(),
                {.file = source_, .node = node_label_, .operand = behind[0]});
  }
  fail(what + " (input " + std::to_string(i) + " '" + name + "') " + must +
       "; it is computed at run time here (give static shapes with --shape)" + budget_note());
}

std::vector<std::string> Importer::runtime_inputs_behind(const std::string& name) const {
  std::map<std::string, int> producer;
  for (int k = 0; k < g_.node_size(); ++k)
    for (const std::string& o : g_.node(k).output())
      if (!o.empty()) producer[o] = k;
  std::set<std::string> initialized, reached;
  for (const auto& t : g_.initializer()) initialized.insert(t.name());
  std::vector<std::string> work{name};
  std::set<int> seen_nodes;
  while (!work.empty()) {
    const std::string v = work.back();
    work.pop_back();
    if (!reached.insert(v).second) continue;
    auto p = producer.find(v);
    if (p == producer.end() || !seen_nodes.insert(p->second).second) continue;
    const onnx::NodeProto& n = g_.node(p->second);
    for (const std::string& in : n.input())
      if (!in.empty()) work.push_back(in);
    for (const auto& a : n.attribute()) {
      if (a.has_g())
        for (const std::string& o : outer_names(a.g())) work.push_back(o);
      for (const auto& sub : a.graphs())
        for (const std::string& o : outer_names(sub)) work.push_back(o);
    }
  }
  std::vector<std::string> r;
  for (const auto& vi : g_.input()) {
    if (!reached.count(vi.name()) || initialized.count(vi.name())) continue;
    auto it = values_.find(vi.name());
    if (it != values_.end() && !it->second.v.is_const()) r.push_back(vi.name());
  }
  return r;
}

std::vector<int64_t> Importer::const_ints(int i, const char* what) const {
  const OVal& o = in(i);
  if (o.ints) return *o.ints;
  if (!o.v.is_const()) fail_not_constant(i, what, "must be known when the model is compiled");
  if (!o.perm.empty()) return const_cast<Importer*>(this)->plain(o).c->to_ints();
  return o.v.c->to_ints();
}

std::vector<double> Importer::const_doubles(int i, const char* what) const {
  const OVal& o = in(i);
  if (!o.v.is_const()) fail_not_constant(i, what, "must be a constant");
  if (!o.perm.empty()) return const_cast<Importer*>(this)->plain(o).c->to_doubles();
  return o.v.c->to_doubles();
}

std::string Importer::budget_note() const {
  if (over_budget_.empty()) return "";
  return " (constant folding stopped where " + over_budget_ + ", past the budget of " +
         std::to_string(options_.max_folded_bytes) + " bytes; raise it with --max-fold-bytes or OnnxImportOptions::max_folded_bytes)";
}

bool Importer::fits_fold_budget(const Shape& shape, DType dt) const {
  const int64_t es = std::max<int64_t>(static_cast<int64_t>(storage_size(dt)), 1);
  return shape_elements(shape) <= options_.max_folded_bytes / es;
}

void Importer::require_fold_budget(const Shape& shape, DType dt, const std::string& what) const {
  if (fits_fold_budget(shape, dt)) return;
  fail(what + " " + TensorType{dt, shape}.str() + " would be computed at import time, which is past the constant-folding budget of " +
           std::to_string(options_.max_folded_bytes) + " bytes; raise it with --max-fold-bytes or OnnxImportOptions::max_folded_bytes",
       ErrorCode::kUnsupported);
}

TVal Importer::const_tensor(Tensor t) const {
  TVal v;
  v.type = t.type();
  v.c = std::make_shared<const Tensor>(std::move(t));
  return v;
}

TVal Importer::scalar(DType dt, double x, int rank) const {
  std::vector<double> vals{x};
  return const_tensor(Tensor::from_doubles({dt, Shape(static_cast<size_t>(rank), 1)}, vals));
}

TVal Importer::shape_const(const std::vector<int64_t>& dims) const {
  return const_tensor(Tensor::from_ints({DType::kShape, {static_cast<int64_t>(dims.size())}}, dims));
}

ValueId Importer::materialize(const TVal& v) {
  if (!v.is_const()) return v.id;
  if (v.dtype() != DType::kShape && shape_elements(v.shape()) == 0)
    fail("an empty tensor " + v.type.str() + " reaches an operator that runs when the model runs; TOSA has no empty "
         "tensors (empty values are folded away only where they contribute nothing, such as a Concat piece)");
  auto it = materialized_.find(v.c.get());
  if (it != materialized_.end()) return it->second.second;
  Node n;
  TensorType t = v.type;
  if (v.dtype() == DType::kShape) {
    n.op = Op::CONST_SHAPE;
    n.attrs = make_attrs(Op::CONST_SHAPE, {{"values", v.c->to_ints()}});
  } else {
    n.op = Op::CONST;
    n.attrs = make_attrs(Op::CONST, {{"values", *v.c}});
  }
  ValueId id = graph_.add_value(graph_.unique_name(v.dtype() == DType::kShape ? "shape" : "const"), t);
  n.outputs = {id};
  graph_.add_node(std::move(n));
  materialized_[v.c.get()] = {v.c, id};  // the pointer keeps the key's tensor alive
  return id;
}

std::optional<std::vector<TVal>> Importer::fold(Node fn, const std::vector<TVal>& inputs, const std::vector<DType>& out_dtypes) {
  Graph g("fold");
  for (const TVal& v : inputs) {
    Node c;
    if (v.dtype() == DType::kShape) {
      c.op = Op::CONST_SHAPE;
      c.attrs = make_attrs(Op::CONST_SHAPE, {{"values", v.c->to_ints()}});
    } else {
      c.op = Op::CONST;
      c.attrs = make_attrs(Op::CONST, {{"values", *v.c}});
    }
    ValueId id = g.add_value(g.unique_name("in"), v.type);
    c.outputs = {id};
    g.add_node(std::move(c));
    fn.inputs.push_back(id);
  }
  // Declared output types decide where the input types allow several (CAST, RESCALE).
  for (DType d : out_dtypes) fn.outputs.push_back(g.add_value(g.unique_name("hint"), {d, {}}));
  std::vector<TensorType> types = infer_output_types(g, fn, nullptr);
  for (const TensorType& t : types) {
    if (t.dtype == DType::kShape) continue;  // a shape has one value per dimension; always folded
    const int64_t elements = shape_elements(t.shape);
    const int64_t es = static_cast<int64_t>(storage_size(t.dtype));
    if (elements > options_.max_folded_bytes / std::max<int64_t>(es, 1)) {
      if (over_budget_.empty())
        over_budget_ = "node '" + node_label_ + "' gives " + t.str() + " (" + std::to_string(elements) + " elements)";
      return std::nullopt;
    }
  }
  fn.outputs.clear();
  for (const TensorType& t : types) fn.outputs.push_back(g.add_value(g.unique_name("out"), t));
  std::vector<ValueId> outs = fn.outputs;
  g.add_node(std::move(fn));
  g.set_outputs(outs);
  Module empty;
  ref::ModuleContext ctx(empty, 1);
  std::vector<Tensor> results = ref::execute_graph(g, {}, ctx);
  std::vector<TVal> r;
  for (Tensor& t : results) r.push_back(const_tensor(std::move(t)));
  return r;
}

std::vector<TVal> Importer::emit_multi(Op op, std::vector<TVal> inputs, Attrs attrs, std::vector<DType> out_dtypes) {
  // fp16 operands of a product: TOSA's MATMUL lets its output type name the accumulator (fp16 or
  // fp32), the importer keeps ONNX's fp16 result (a model exported with model.half()), as the fp16
  // precision mode narrows an fp32 MATMUL; backends that have fp32 accumulators use them (docs/onnx.md).
  if (op == Op::MATMUL && out_dtypes.empty() && !inputs.empty() && inputs[0].dtype() == DType::kFp16)
    out_dtypes = {DType::kFp16};
  // TOSA's integer ADD, SUB, MAXIMUM, MINIMUM and INTDIV are int32 only: narrower integers are
  // widened, computed and narrowed back (exact, with C's wrap-around on overflow).
  if ((op == Op::ADD || op == Op::SUB || op == Op::MAXIMUM || op == Op::MINIMUM || op == Op::INTDIV) && !inputs.empty() &&
      (inputs[0].dtype() == DType::kInt8 || inputs[0].dtype() == DType::kInt16)) {
    const DType narrow = inputs[0].dtype();
    for (TVal& v : inputs) v = cast(v, DType::kInt32);
    return {cast(emit(op, std::move(inputs), std::move(attrs)), narrow)};
  }
  const bool foldable = std::all_of(inputs.begin(), inputs.end(), [](const TVal& v) { return v.is_const(); }) &&
                        op != Op::CUSTOM && op != Op::VARIABLE && op != Op::VARIABLE_READ &&
                        op != Op::VARIABLE_WRITE && op != Op::COND_IF && op != Op::WHILE_LOOP;
  Node n;
  n.op = op;
  n.attrs = make_attrs(op, attrs);
  if (foldable) {
    // Constant folding: run the reference kernel on a one-node graph of constants, within the
    // budget; a node whose result is larger stays a run-time node.
    Node fn = n;
    if (auto folded = fold(fn, inputs, out_dtypes)) return std::move(*folded);
  }
  for (const TVal& v : inputs) n.inputs.push_back(materialize(v));
  for (DType d : out_dtypes) n.outputs.push_back(hint_value(d));
  std::vector<TensorType> types = infer_output_types(graph_, n, nullptr);
  n.outputs.clear();
  std::vector<TVal> r;
  for (const TensorType& t : types) {
    ValueId id = graph_.add_value(graph_.unique_name("t" + std::to_string(graph_.values().size())), t);
    n.outputs.push_back(id);
    r.push_back(TVal{id, nullptr, t});
  }
  // The ONNX node it comes from: `weft run --explain` / `--profile`, errors and the text form's
  // loc("...") then point at the node of the user's model.
  if (node_) n.name = node_->name().empty() ? (node_->output_size() ? node_->output(0) : std::string()) : node_->name();
  const int index = graph_.add_node(std::move(n));
  // Every TOSA node is checked as it is made, so that a type TOSA 1.0 lacks is reported at the
  // ONNX node that needs it.
  std::vector<Error> errors;
  verify_node(nullptr, graph_, index, kAllProfiles, errors);
  if (!errors.empty()) {
    std::string types;
    for (const TVal& v : inputs) types += std::string(types.empty() ? "" : ", ") + v.type.str();
    fail(std::string("this node needs TOSA ") + op_name(op) + " on " + types + ", which TOSA 1.0 does not define: " +
         errors[0].message());
  }
  return r;
}

TVal Importer::emit(Op op, std::vector<TVal> inputs, Attrs attrs) {
  return emit_multi(op, std::move(inputs), std::move(attrs)).at(0);
}

std::vector<TVal> Importer::emit_typed(Op op, std::vector<TVal> inputs, Attrs attrs,
                                       const std::vector<TensorType>& out_types) {
  Node n;
  n.op = op;
  n.attrs = make_attrs(op, attrs);
  for (const TVal& v : inputs) n.inputs.push_back(materialize(v));
  std::vector<TVal> r;
  for (const TensorType& t : out_types) {
    ValueId id = graph_.add_value(graph_.unique_name("t" + std::to_string(graph_.values().size())), t);
    n.outputs.push_back(id);
    r.push_back(TVal{id, nullptr, t});
  }
  if (node_) n.name = node_->name().empty() ? (node_->output_size() ? node_->output(0) : std::string()) : node_->name();
  graph_.add_node(std::move(n));
  return r;
}

TVal Importer::emit_as(Op op, DType out, std::vector<TVal> inputs, Attrs attrs) {
  return emit_multi(op, std::move(inputs), std::move(attrs), {out}).at(0);
}

// Values that only declare an output type for inference; they get no producer and are dropped by
// prune_graph. One per type is enough.
ValueId Importer::hint_value(DType d) {
  auto it = hints_.find(d);
  if (it != hints_.end()) return it->second;
  ValueId id = graph_.add_value(graph_.unique_name(std::string("type_hint_") + dtype_name(d)), {d, {}});
  hints_[d] = id;
  return id;
}

TVal Importer::reshape(const TVal& v, const Shape& shape) {
  if (v.shape() == shape) return v;
  if (v.is_const()) {
    // A view of the same bytes: no kernel needed.
    return const_tensor(Tensor({v.dtype(), shape}, v.c->buffer()));
  }
  return emit(Op::RESHAPE, {v, shape_const(shape)});
}

TVal Importer::transpose(const TVal& v, const std::vector<int64_t>& perm) {
  if (is_identity(perm)) return v;
  // When only dimensions of size 1 move, the bytes are already in order: a RESHAPE does it.
  int64_t last = -1;
  bool ordered = true;
  Shape out(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    out[i] = v.shape()[static_cast<size_t>(perm[i])];
    if (out[i] != 1) {
      if (perm[i] < last) ordered = false;
      last = perm[i];
    }
  }
  if (ordered) return reshape(v, out);
  return emit(Op::TRANSPOSE, {v}, {{"perms", perm}});
}

TVal Importer::unfolded(const TVal& v) {
  if (!v.is_const()) return v;
  return TVal{materialize(v), nullptr, v.type};
}

TVal Importer::cast(const TVal& v, DType to) {
  if (v.dtype() == to) return v;
  return emit_as(Op::CAST, to, {v});
}

// TOSA 1.0's RESCALE reads unsigned 8/16-bit values (input_unsigned) into a signed type of at
// most 16 bits and writes them (output_unsigned) from one; never to or from int32. So:
//   uint8:  RESCALE u8 -> i16 (scale 1), CAST i16 -> i32.
//   uint16: RESCALE u16 (zero point 32768) -> i16, CAST -> i32, ADD 32768.
// and the reverse for outputs, after the int32 value is wrapped into the type's range.
TVal Importer::widen_unsigned(const TVal& bits, int onnx_type) {
  const bool u8 = onnx_type == kOUint8;
  const DType in = u8 ? DType::kInt8 : DType::kInt16;
  TVal b = cast(bits, in);  // bits are already of this type; a no-op
  auto ints = [&](DType d, int64_t v) { return const_tensor(Tensor::from_ints({d, {1}}, std::vector<int64_t>{v})); };
  TVal r = emit_as(Op::RESCALE, DType::kInt16,
                   {b, ints(DType::kInt16, 1 << 14), ints(DType::kInt8, 14), ints(in, u8 ? 0 : -32768), ints(DType::kInt16, 0)},
                   {{"scale32", false}, {"input_unsigned", true}});
  TVal w = cast(r, DType::kInt32);
  return u8 ? w : add(w, scalar(DType::kInt32, 32768, w.rank()));
}

TVal Importer::narrow_unsigned(const TVal& v, int onnx_type) {
  const bool u8 = onnx_type == kOUint8;
  const DType out = u8 ? DType::kInt8 : DType::kInt16;
  TVal w = cast(v, DType::kInt32);
  w = emit(Op::BITWISE_AND, {w, scalar(DType::kInt32, u8 ? 0xFF : 0xFFFF, w.rank())});
  if (!u8) w = sub(w, scalar(DType::kInt32, 32768, w.rank()));
  TVal h = cast(w, DType::kInt16);
  auto ints = [&](DType d, int64_t x) { return const_tensor(Tensor::from_ints({d, {1}}, std::vector<int64_t>{x})); };
  return emit_as(Op::RESCALE, out,
                 {h, ints(DType::kInt16, 1 << 14), ints(DType::kInt8, 14), ints(DType::kInt16, 0), ints(out, u8 ? 0 : -32768)},
                 {{"scale32", false}, {"output_unsigned", true}});
}

TVal Importer::mul(const TVal& a, const TVal& b) { return emit(Op::MUL, {a, b, scalar(DType::kInt8, 0, 1)}); }

TVal Importer::slice(const TVal& v, const std::vector<int64_t>& start, const std::vector<int64_t>& size) {
  if (v.shape() == Shape(size.begin(), size.end()) &&
      std::all_of(start.begin(), start.end(), [](int64_t s) { return s == 0; }))
    return v;
  return emit(Op::SLICE, {v, shape_const(start), shape_const(size)});
}

TVal Importer::clamp(const TVal& v, double lo, double hi) {
  if (v.dtype() == DType::kInt32) {
    // TOSA's CLAMP has no int32 row: MAXIMUM and MINIMUM against constants do it.
    TVal r = v;
    if (lo > static_cast<double>(INT32_MIN)) r = emit(Op::MAXIMUM, {r, scalar(DType::kInt32, lo, v.rank())});
    if (hi < static_cast<double>(INT32_MAX)) r = emit(Op::MINIMUM, {r, scalar(DType::kInt32, hi, v.rank())});
    return r;
  }
  std::vector<double> l{lo}, h{hi};
  return emit(Op::CLAMP, {v},
              {{"min_val", Tensor::from_doubles({v.dtype(), {}}, l)}, {"max_val", Tensor::from_doubles({v.dtype(), {}}, h)}});
}

TVal Importer::reduce(Op op, const TVal& v, int64_t axis) { return emit(op, {v}, {{"axis", axis}}); }

TVal Importer::to_rank(const TVal& v, int rank) {
  if (v.rank() >= rank) return v;
  Shape s(static_cast<size_t>(rank - v.rank()), 1);
  s.insert(s.end(), v.shape().begin(), v.shape().end());
  return reshape(v, s);
}

TVal Importer::plain(const OVal& o) {
  if (o.perm.empty()) return o.v;
  if (o.plain_cache) return *o.plain_cache;
  TVal t = transpose(o.v, inverse_perm(o.perm));
  const_cast<OVal&>(o).plain_cache = std::make_shared<TVal>(t);
  return t;
}

TVal Importer::in_layout(const OVal& o, const std::vector<int64_t>& perm) {
  if (perm == o.perm || (perm.empty() && is_identity(o.perm)) || (o.perm.empty() && is_identity(perm))) return o.v;
  if (perm.empty()) return plain(o);
  if (static_cast<int>(perm.size()) != o.v.rank())
    fail("internal: layout of rank " + std::to_string(perm.size()) + " for a value of rank " + std::to_string(o.v.rank()),
         ErrorCode::kInternal);
  if (!o.v.is_const() && o.layout_cache) {
    auto it = o.layout_cache->find(perm);
    if (it != o.layout_cache->end()) return it->second;
  }
  TVal t;
  if (o.perm.empty()) {
    t = transpose(o.v, perm);
  } else {
    std::vector<int64_t> inv = inverse_perm(o.perm), r(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) r[i] = inv[static_cast<size_t>(perm[i])];
    t = transpose(o.v, r);
  }
  if (!o.v.is_const()) {
    OVal& m = const_cast<OVal&>(o);
    if (!m.layout_cache) m.layout_cache = std::make_shared<std::map<std::vector<int64_t>, TVal>>();
    (*m.layout_cache)[perm] = t;
  }
  return t;
}

std::vector<TVal> Importer::elementwise_operands(const std::vector<int>& idx, std::vector<int64_t>* perm_out,
                                                 Shape* shape_out) {
  // Numpy broadcasting of the ONNX shapes.
  size_t rank = 0;
  for (int i : idx) rank = std::max(rank, in(i).shape.size());
  Shape out(rank, 1);
  for (int i : idx) {
    const Shape& s = in(i).shape;
    for (size_t k = 0; k < s.size(); ++k) {
      int64_t& o = out[rank - s.size() + k];
      const int64_t d = s[k];
      if (d == o || d == 1) continue;
      if (o == 1) {
        o = d;
        continue;
      }
      fail("inputs cannot be broadcast together: input " + std::to_string(i) + " has shape " + shape_str(s) +
               ", the others broadcast to " + shape_str(out),
           ErrorCode::kInvalidArgument);
    }
  }
  // The layout: that of the first full-rank operand computed at run time that has one.
  std::vector<int64_t> perm;
  for (int i : idx)
    if (!in(i).perm.empty() && in(i).shape.size() == rank && !in(i).v.is_const()) {
      perm = in(i).perm;
      break;
    }
  std::vector<TVal> r;
  for (int i : idx) {
    const OVal& o = in(i);
    if (o.shape.size() == rank) {
      r.push_back(in_layout(o, perm));
    } else {
      TVal t = to_rank(plain(o), static_cast<int>(rank));
      r.push_back(perm.empty() ? t : transpose(t, perm));
    }
  }
  *perm_out = perm;
  *shape_out = out;
  return r;
}

// ---- the walk -------------------------------------------------------------------------------------

OVal Importer::make_const_oval(const onnx::TensorProto& t, const std::string& what) {
  OVal o;
  Tensor tensor = tensor_from_proto(t, what, base_dir_, &o.ints, &o.onnx_type, owner_, parsed_);
  o.shape = tensor.shape();
  o.v = const_tensor(std::move(tensor));
  return o;
}

void Importer::import_initializers() {
  for (const auto& t : g_.initializer()) {
    try {
      values_[t.name()] = make_const_oval(t, "initializer '" + t.name() + "'");
    } catch (const Error& e) {
      // An initializer TOSA cannot represent is only an error if a node uses it; remember why.
      if (e.code() != ErrorCode::kUnsupported) throw e.with_context({.file = source_});
      values_.erase(t.name());
      unusable_[t.name()] = e.message();
    }
  }
}

void Importer::import_inputs() {
  std::set<std::string> initializers;
  for (const auto& t : g_.initializer()) initializers.insert(t.name());
  std::set<std::string> known;
  for (const auto& vi : g_.input()) {
    const std::string& name = vi.name();
    known.insert(name);
    if (initializers.count(name)) continue;  // an input with a default value: treated as the constant
    Location loc{.file = source_, .operand = name};
    if (!vi.type().has_tensor_type())
      throw Error(ErrorCode::kUnsupported, "graph input '" + name + "' is not a tensor (sequences, maps and optionals are not supported)", loc);
    const auto& tt = vi.type().tensor_type();
    auto dt = boundary_dtype(tt.elem_type());
    if (!dt) throw Error(ErrorCode::kUnsupported, "graph input '" + name + "': " + unsupported_type_message(tt.elem_type()), loc);
    Shape shape;
    auto given = options_.input_shapes.find(name);
    if (!tt.has_shape()) {
      if (given == options_.input_shapes.end())
        throw Error(ErrorCode::kInvalidArgument, "graph input '" + name + "' has no shape; give one with --shape " + name + "=D0xD1x...", loc);
      shape = given->second;
    } else {
      const auto& dims = tt.shape().dim();
      if (given != options_.input_shapes.end()) {
        if (static_cast<int>(given->second.size()) != dims.size())
          throw Error(ErrorCode::kInvalidArgument,
                      "--shape " + name + "=" + shape_str(given->second) + " has rank " + std::to_string(given->second.size()) +
                          " but the model declares rank " + std::to_string(dims.size()), loc);
        for (int k = 0; k < dims.size(); ++k)
          if (dims[k].has_dim_value() && dims[k].dim_value() != given->second[static_cast<size_t>(k)])
            throw Error(ErrorCode::kInvalidArgument,
                        "--shape " + name + "=" + shape_str(given->second) + " disagrees with the model's dimension " +
                            std::to_string(k) + " (" + std::to_string(dims[k].dim_value()) + ")", loc);
        shape = given->second;
      } else {
        for (int k = 0; k < dims.size(); ++k) {
          if (dims[k].has_dim_value() && dims[k].dim_value() >= 0) {
            shape.push_back(dims[k].dim_value());
          } else {
            std::string what = dims[k].has_dim_param() ? "'" + dims[k].dim_param() + "'" : "unknown";
            throw Error(ErrorCode::kInvalidArgument,
                        "graph input '" + name + "' has a dynamic dimension " + std::to_string(k) + " (" + what +
                            "); Weft compiles static shapes: give it with --shape " + name + "=" +
                            [&] {
                              std::string s;
                              for (int j = 0; j < dims.size(); ++j)
                                s += (j ? "x" : "") + (dims[j].has_dim_value() ? std::to_string(dims[j].dim_value()) : std::string("N"));
                              return s;
                            }(),
                        loc);
          }
        }
      }
    }
    for (int64_t d : shape)
      if (d <= 0)
        throw Error(ErrorCode::kInvalidArgument,
                    "graph input '" + name + "' has shape " + shape_str(shape) +
                        " with a dimension < 1: TOSA has no empty tensors (an empty list of axes or sizes can be "
                        "bound at compile time with --bind " + name + "=FILE.npy)",
                    loc);
    OVal o;
    o.onnx_type = tt.elem_type();
    o.shape = shape;
    o.v = TVal{graph_.add_input(name, {*dt, shape}), nullptr, {*dt, shape}};
    if (tt.elem_type() == kOUint8 || tt.elem_type() == kOUint16) o.v = widen_unsigned(o.v, tt.elem_type());
    values_[name] = o;
  }
  for (const auto& [name, shape] : options_.input_shapes)
    if (!known.count(name))
      throw Error(ErrorCode::kInvalidArgument, "--shape names '" + name + "', which is not an input of the model", {.file = source_});
}

void Importer::lower_node(const onnx::NodeProto& n) {
  node_ = &n;
  const std::string dom = n.domain().empty() ? "ai.onnx" : n.domain();
  node_label_ = (n.name().empty() ? (n.output_size() ? n.output(0) : std::string("?")) : n.name()) + " (" +
                n.op_type() + ", domain " + dom + ", opset " + std::to_string(opset_) + ")" + scope_note_;
  if (opset_ < 7 && attr("broadcast"))
    fail("the legacy 'broadcast' / 'axis' attributes (opsets before 7) are not supported; convert the model "
         "to opset 7 or later with onnx.version_converter");
  // A registered custom operator takes precedence over the built-in lowering of the same op type.
  const std::optional<custom::OpSpec> custom_op = custom::find_onnx_op(dom == "ai.onnx" ? "" : dom, n.op_type());
  if (!custom_op && !(n.domain().empty() || n.domain() == "ai.onnx")) {
    fail("operator " + n.op_type() + " of domain '" + n.domain() +
         "' is not an ONNX standard operator and Weft has no lowering for it; replace it before export, or "
         "carry it as a custom operator (tosa.CUSTOM) once it is registered with Weft");
  }
  const auto& rules = op_rules();
  auto it = std::find_if(rules.begin(), rules.end(), [&](const OpRule& r) { return n.op_type() == r.op_type; });
  if (!custom_op && it == rules.end())
    fail("operator " + n.op_type() + " is not supported by Weft's ONNX frontend (`weft import --list-ops` lists "
         "the supported ones); replace it before export, or carry it as a custom operator (tosa.CUSTOM) once it "
         "is registered with Weft");
  // ONNX's schema of the operator at the model's opset: input and output counts, required
  // attributes and attribute types, as ONNX's checker and ONNX Runtime require them. The lowering
  // can then index the operands and attributes a well-formed node has. Only at opsets the linked
  // libonnx knows: for a newer opset it would pick an older schema (Split-13 has no num_outputs),
  // so there the lowering's own checks are all.
  static const int known_opset = [] {
    const auto& m = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
    auto it = m.find("");
    return it == m.end() ? 0 : it->second.second;
  }();
  if (!custom_op && opset_ <= known_opset) {
    if (const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(n.op_type(), opset_, "")) {
      try {
        schema->Verify(n);
      } catch (const std::exception& e) {
        std::string msg = e.what();
        if (const size_t cut = msg.find("\n\n==> Context"); cut != std::string::npos) msg.resize(cut);
        fail("the node breaks ONNX's schema of " + n.op_type() + " at opset " + std::to_string(opset_) + ": " + msg,
             ErrorCode::kInvalidArgument);
      }
    }
  }
  for (int i = 0; i < n.input_size(); ++i) {
    auto bad = unusable_.find(n.input(i));
    if (bad != unusable_.end()) fail("input " + std::to_string(i) + " is " + bad->second);
    if (!n.input(i).empty() && !values_.count(n.input(i)))
      fail("input " + std::to_string(i) + " '" + n.input(i) +
               "' is not produced by any earlier node, graph input or initializer",
           ErrorCode::kInvalidArgument);
  }
  try {
    if (custom_op) custom_lowering::lower(*this, n, *custom_op);
    else it->lower(*this, n);
  } catch (const Error& e) {
    if (!e.location().node.empty()) throw;
    throw Error(e.code(), e.message(), {.file = source_, .node = node_label_, .operand = e.location().operand});
  }
  for (int i = 0; i < n.output_size(); ++i) {
    if (n.output(i).empty()) continue;
    auto v = values_.find(n.output(i));
    if (v == values_.end()) fail("output " + std::to_string(i) + " '" + n.output(i) + "' is not supported", ErrorCode::kUnsupported);
    // ONNX's shape inference is cross-checked for the main graph's values only: a sub-graph's
    // names are lowered once per iteration, or into graphs of their own.
    if (sub_depth_ == 0) lowered_shapes_[n.output(i)] = {v->second.shape, node_label_};
    // Name the TOSA value after the ONNX one where it is a fresh, same-layout result.
    TVal& t = v->second.v;
    if (!t.is_const() && v->second.perm.empty()) {
      const Value& val = graph_.value(t.id);
      if (val.producer >= 0 && val.name.size() > 1 && val.name[0] == 't' && std::isdigit(static_cast<unsigned char>(val.name[1])))
        graph_.rename_value(t.id, graph_.unique_name(n.output(i)));
    }
  }
}

void Importer::finish_outputs() {
  node_ = nullptr;
  node_label_.clear();
  std::set<ValueId> used;
  std::vector<ValueId> outs;
  for (const auto& vi : g_.output()) {
    const std::string& name = vi.name();
    auto it = values_.find(name);
    if (it == values_.end())
      throw Error(ErrorCode::kInvalidArgument, "graph output '" + name + "' is not produced by any node", {.file = source_, .operand = name});
    TVal t = plain(it->second);
    // The declared element type decides the boundary type (an unsigned value the graph computed
    // in int32 goes back to its uint8/uint16 bits); without a declaration, the computed one.
    int et = vi.type().has_tensor_type() ? vi.type().tensor_type().elem_type() : kOUndefined;
    if (et == kOUndefined) et = it->second.onnx_type;
    if ((et == kOUint8 || et == kOUint16) && t.dtype() == DType::kInt32) t = narrow_unsigned(t, et);
    ValueId id = materialize(t);
    const Value& val = graph_.value(id);
    const bool is_input = std::find(graph_.inputs().begin(), graph_.inputs().end(), id) != graph_.inputs().end();
    if (is_input || used.count(id) || (val.name != name && graph_.find_value(name) && *graph_.find_value(name) != id)) {
      Node n;
      n.op = Op::IDENTITY;
      n.inputs = {id};
      n.attrs = make_attrs(Op::IDENTITY, {});
      if (auto other = graph_.find_value(name)) graph_.rename_value(*other, graph_.unique_name(name + "_0"));
      ValueId nid = graph_.add_value(name, val.type);
      n.outputs = {nid};
      graph_.add_node(std::move(n));
      id = nid;
    } else if (val.name != name) {
      graph_.rename_value(id, name);
    }
    used.insert(id);
    outs.push_back(id);
  }
  graph_.set_outputs(outs);
}

// ONNX's own shape inference, run on a copy of the model whose inputs carry the resolved static
// shapes. Its static results cross-check the shapes the lowering produced (a mismatch is a Weft
// bug, reported at the node). Inference failures are not errors here: the lowering decides.
void Importer::infer_onnx_shapes() {
  // A copy for the inference to annotate, without the data of large initializers: it reads their
  // dims (and the values only of small ones: Reshape's shape, Pad's pads), and a whole copy of a
  // model doubled the peak memory of loading one.
  constexpr int64_t kDataBytes = int64_t{1} << 16;
  onnx::ModelProto copy;
  copy.set_ir_version(model_.ir_version());
  *copy.mutable_opset_import() = model_.opset_import();
  *copy.mutable_functions() = model_.functions();
  {
    const onnx::GraphProto& src = model_.graph();
    onnx::GraphProto& dst = *copy.mutable_graph();
    dst.set_name(src.name());
    *dst.mutable_node() = src.node();
    *dst.mutable_input() = src.input();
    *dst.mutable_output() = src.output();
    *dst.mutable_value_info() = src.value_info();
    for (const auto& t : src.initializer()) {
      onnx::TensorProto& c = *dst.add_initializer();
      if (static_cast<int64_t>(t.raw_data().size()) <= kDataBytes) {  // typed fields and external data too
        c = t;
        continue;
      }
      c.set_name(t.name());
      c.set_data_type(t.data_type());
      *c.mutable_dims() = t.dims();
    }
  }
  for (auto& vi : *copy.mutable_graph()->mutable_input()) {
    auto it = values_.find(vi.name());
    if (it == values_.end() || it->second.v.is_const() || !vi.type().has_tensor_type()) continue;
    auto* shape = vi.mutable_type()->mutable_tensor_type()->mutable_shape();
    shape->clear_dim();
    for (int64_t d : it->second.shape) shape->add_dim()->set_dim_value(d);
  }
  try {
    onnx::ShapeInferenceOptions opts(false, 0, true);
    onnx::shape_inference::InferShapes(copy, onnx::OpSchemaRegistry::Instance(), opts);
  } catch (const std::exception&) {
    return;
  }
  auto take = [&](const onnx::ValueInfoProto& vi) {
    if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return;
    Shape s;
    for (const auto& d : vi.type().tensor_type().shape().dim()) {
      if (!d.has_dim_value()) return;
      s.push_back(d.dim_value());
    }
    onnx_shapes_[vi.name()] = s;
  };
  for (const auto& vi : copy.graph().value_info()) take(vi);
  for (const auto& vi : copy.graph().output()) take(vi);
  for (const auto& [name, inferred] : onnx_shapes_) {
    auto lowered = lowered_shapes_.find(name);
    if (lowered != lowered_shapes_.end() && lowered->second.first != inferred)
      throw Error(ErrorCode::kInternal,
                  "output '" + name + "' has shape " + shape_str(lowered->second.first) + " here but " + shape_str(inferred) +
                      " by ONNX shape inference (a Weft bug)",
                  {.file = source_, .node = lowered->second.second});
  }
}

// ONNX's structural rules that the lowering and ONNX's own shape inference rely on: every node has
// an op_type, every input is defined before it is used (a graph input, an initializer, or an
// output of an earlier node; in a sub-graph also a value of the enclosing scopes), and every
// graph output is defined. Checked before shape inference, which dereferences undefined inputs
// (Debian's onnx segfaults on a 60-byte model whose one node reads an undefined name).
void Importer::check_structure(const onnx::GraphProto& g, std::set<std::string> scope, int depth) const {
  if (depth > 64) throw Error(ErrorCode::kInvalidArgument, "sub-graphs are nested more than 64 deep", {.file = source_});
  for (const auto& vi : g.input()) scope.insert(vi.name());
  for (const auto& t : g.initializer()) scope.insert(t.name());
  for (const auto& t : g.sparse_initializer()) scope.insert(t.values().name());
  const std::string in_graph = depth == 0 ? "" : " (in sub-graph '" + g.name() + "')";
  for (int k = 0; k < g.node_size(); ++k) {
    const onnx::NodeProto& n = g.node(k);
    const std::string label = (n.name().empty() ? (n.output_size() ? n.output(0) : "#" + std::to_string(k)) : n.name()) +
                              " (" + n.op_type() + ")" + in_graph;
    if (n.op_type().empty())
      throw Error(ErrorCode::kInvalidArgument, "the node has no op_type", {.file = source_, .node = label});
    for (const std::string& i : n.input())
      if (!i.empty() && !scope.count(i))
        throw Error(ErrorCode::kInvalidArgument,
                    "input '" + i + "' is not a graph input, an initializer or an output of an earlier node "
                    "(ONNX requires every value defined before use, nodes in topological order)",
                    {.file = source_, .node = label});
    for (const auto& a : n.attribute()) {
      if (a.has_g()) check_structure(a.g(), scope, depth + 1);
      for (const auto& sub : a.graphs()) check_structure(sub, scope, depth + 1);
    }
    for (const std::string& o : n.output())
      if (!o.empty()) scope.insert(o);
  }
  for (const auto& vi : g.output())
    if (!scope.count(vi.name()))
      throw Error(ErrorCode::kInvalidArgument,
                  "graph output '" + vi.name() + "'" + in_graph + " is not a graph input, an initializer or an output of a node",
                  {.file = source_});
}

Module Importer::run() {
  check_structure(g_, {}, 0);
  import_initializers();
  import_inputs();
  for (const auto& n : g_.node()) lower_node(n);
  finish_outputs();
  // ONNX's shape inference cross-checks the shapes the lowering produced. It runs last, on a model
  // the lowering accepted whole: libonnx's inference functions crash on some malformed nodes
  // (Scan with missing attributes, undefined inputs), and only supported, well-formed ones reach it.
  infer_onnx_shapes();
  Graph lowered = compiler::prune_graph(graph_);
  // One form of what frameworks write in several (a division by a square root as RSQRT), so that
  // the partitioner's fusions (layer normalization) recognise hand-written models too.
  const std::string canonical = compiler::canonical_summary(compiler::canonicalize(lowered));
  // Custom shader nodes come with explicit NCHW<->NHWC permutes around them; pairs that cancel
  // between adjacent shader nodes (or a shader node and an NHWC operator) go here.
  if (options_.cancel_layout_pairs) {
    compiler::sink_layout_transposes(lowered);
    compiler::cancel_layout_pairs(lowered);
  }
  Module m(std::move(lowered));
  if (!canonical.empty()) m.add_note("canonical forms: " + canonical);
  // The graphs of COND_IF and WHILE_LOOP nodes that are still used, reached from the entry graph.
  std::map<std::string, const Graph*> built;
  for (const Graph& sub : subgraphs_) built[sub.name()] = &sub;
  std::vector<std::string> work;
  auto referenced = [&](const Graph& g) {
    for (const Node& n : g.nodes()) {
      if (n.op == Op::COND_IF) work.insert(work.end(), {n.attr_str("then_graph"), n.attr_str("else_graph")});
      if (n.op == Op::WHILE_LOOP) work.insert(work.end(), {n.attr_str("cond_graph"), n.attr_str("body_graph")});
    }
  };
  referenced(m.main());
  while (!work.empty()) {
    const std::string name = work.back();
    work.pop_back();
    auto it = built.find(name);
    if (it == built.end() || m.find_graph(name)) continue;
    referenced(m.add_graph(compiler::prune_graph(*it->second)));
  }
  if (options_.verify) {
    auto errors = verify_module(m);
    if (!errors.empty())
      throw Error(ErrorCode::kInternal, "the lowered TOSA graph fails verification (a Weft bug): " + std::string(errors[0].what()),
                  {.file = source_});
  }
  return m;
}

namespace {

// Turns every binding into an initializer of its graph input (replacing a default value it had).
void apply_bindings(onnx::GraphProto& g, const std::map<std::string, Tensor>& bindings, const std::string& source) {
  for (const auto& [name, value] : bindings) {
    const Location loc{.file = source, .operand = name};
    const onnx::ValueInfoProto* input = nullptr;
    std::string names;
    for (const auto& vi : g.input()) {
      if (vi.name() == name) input = &vi;
      names += (names.empty() ? "" : ", ") + vi.name();
    }
    if (!input)
      throw Error(ErrorCode::kNotFound, "--bind " + name + ": the model has no graph input named '" + name +
                                            "'; its inputs are: " + (names.empty() ? "(none)" : names), loc);
    if (!input->type().has_tensor_type())
      throw Error(ErrorCode::kUnsupported, "--bind " + name + ": graph input '" + name + "' is not a tensor", loc);
    const auto& tt = input->type().tensor_type();
    const int et = tt.elem_type();
    const Shape& shape = value.shape();
    if (tt.has_shape()) {
      bool ok = tt.shape().dim_size() == static_cast<int>(shape.size());
      for (int d = 0; ok && d < tt.shape().dim_size(); ++d)
        if (tt.shape().dim(d).has_dim_value() && tt.shape().dim(d).dim_value() != shape[static_cast<size_t>(d)]) ok = false;
      if (!ok)
        throw Error(ErrorCode::kInvalidArgument,
                    "--bind " + name + ": the value has shape " + shape_str(shape) + ", the graph input is declared " +
                        [&] {
                          std::string s = "[";
                          for (int d = 0; d < tt.shape().dim_size(); ++d)
                            s += (d ? "," : "") + (tt.shape().dim(d).has_dim_value()
                                                       ? std::to_string(tt.shape().dim(d).dim_value())
                                                       : std::string(tt.shape().dim(d).dim_param().empty()
                                                                         ? "?" : tt.shape().dim(d).dim_param()));
                          return s + "]";
                        }(),
                    loc);
    }
    onnx::TensorProto t;
    t.set_name(name);
    t.set_data_type(et);
    for (int64_t d : shape) t.add_dims(d);
    const bool float_input = et == kOFloat || et == kODouble || et == kOFloat16 || et == kOBfloat16;
    const bool float_value = value.dtype() == DType::kFp32 || value.dtype() == DType::kFp16 || value.dtype() == DType::kBf16;
    const bool bool_value = value.dtype() == DType::kBool;
    if (float_input != float_value || (et == kOBool) != bool_value)
      throw Error(ErrorCode::kInvalidArgument,
                  "--bind " + name + ": a " + std::string(dtype_name(value.dtype())) + " value cannot be bound to an ONNX " +
                      onnx_type_name(et) + " input",
                  loc);
    const int64_t n = value.num_elements();
    if (et == kOFloat16 || et == kOBfloat16) {
      // Half types as raw bits: the value must be of that very type.
      if (value.dtype() != (et == kOFloat16 ? DType::kFp16 : DType::kBf16))
        throw Error(ErrorCode::kInvalidArgument,
                    "--bind " + name + ": a " + std::string(dtype_name(value.dtype())) + " value cannot be bound to an ONNX " +
                        onnx_type_name(et) + " input (give " + (et == kOFloat16 ? "float16" : "bfloat16") + " data)",
                    loc);
      t.set_raw_data(std::string(reinterpret_cast<const char*>(value.bytes()), value.byte_size()));
    }
    for (int64_t i = 0; i < n && t.raw_data().empty(); ++i) {
      if (float_input) {
        if (et == kODouble) t.add_double_data(value.at_double(i));
        else t.add_float_data(static_cast<float>(value.at_double(i)));
        continue;
      }
      int64_t v = value.at_int(i);
      // uint8 / uint16 data given as the bits of int8 / int16 (how Weft carries them).
      if (et == kOUint8 && value.dtype() == DType::kInt8) v &= 0xFF;
      if (et == kOUint16 && value.dtype() == DType::kInt16) v &= 0xFFFF;
      const auto range = [&]() -> std::pair<int64_t, int64_t> {
        switch (et) {
          case kOBool: return {0, 1};
          case kOInt8: return {-128, 127};
          case kOUint8: return {0, 255};
          case kOInt16: return {-32768, 32767};
          case kOUint16: return {0, 65535};
          case kOInt32: return {INT32_MIN, INT32_MAX};
          case kOUint32: return {0, UINT32_MAX};
          default: return {INT64_MIN, INT64_MAX};
        }
      }();
      if (v < range.first || v > range.second)
        throw Error(ErrorCode::kInvalidArgument,
                    "--bind " + name + ": element " + std::to_string(i) + " = " + std::to_string(v) + " does not fit the input's ONNX type " +
                        onnx_type_name(et),
                    loc);
      if (et == kOInt64) t.add_int64_data(v);
      else if (et == kOUint64 || et == kOUint32) t.add_uint64_data(static_cast<uint64_t>(v));
      else t.add_int32_data(static_cast<int32_t>(v));
    }
    auto* inits = g.mutable_initializer();
    for (int i = inits->size() - 1; i >= 0; --i)
      if (inits->Get(i).name() == name) inits->DeleteSubrange(i, 1);
    *g.add_initializer() = std::move(t);
  }
}

Module import_model(onnx::ModelProto& model, const std::string& source, const OnnxImportOptions& options,
                    const std::string& base_dir, std::shared_ptr<const void> owner = nullptr,
                    const ParsedOnnx* parsed = nullptr) {
  if (!model.has_graph()) throw Error(ErrorCode::kInvalidArgument, "the model has no graph", {.file = source});
  apply_bindings(*model.mutable_graph(), options.bindings, source);
  struct Narrow {
    bool was = g_narrow_float64;
    explicit Narrow(bool on) { g_narrow_float64 = on; }
    ~Narrow() { g_narrow_float64 = was; }
  } narrow(options.narrow_float64);
  Importer imp(model, source, options, base_dir, std::move(owner), parsed);
  Module m = imp.run();
  if (options.narrow_float64) {
    // Say what was narrowed: the interface first, then how many constants and casts.
    const onnx::GraphProto& g = model.graph();
    std::set<std::string> initialized;
    for (const auto& t : g.initializer()) initialized.insert(t.name());
    std::string ins, outs;
    auto is_double = [](const onnx::ValueInfoProto& vi) {
      return vi.type().has_tensor_type() && vi.type().tensor_type().elem_type() == kODouble;
    };
    for (const auto& vi : g.input())
      if (is_double(vi) && !initialized.count(vi.name())) ins += (ins.empty() ? "" : ", ") + vi.name();
    for (const auto& vi : g.output())
      if (is_double(vi)) outs += (outs.empty() ? "" : ", ") + vi.name();
    int inner = 0;
    for (const auto& t : g.initializer()) inner += t.data_type() == kODouble;
    for (const auto& n : g.node())
      for (const auto& a : n.attribute()) {
        inner += n.op_type() == "Cast" && a.name() == "to" && a.i() == kODouble;
        inner += a.type() == onnx::AttributeProto::TENSOR && a.t().data_type() == kODouble;
      }
    if (!ins.empty() || !outs.empty() || inner > 0)
      m.add_note("float64 narrowed to float32 (--narrow-float64): computed in float32" +
                 (ins.empty() ? std::string() : "; inputs " + ins) + (outs.empty() ? std::string() : "; outputs " + outs) +
                 (inner ? "; " + std::to_string(inner) + " float64 constants and casts" : std::string()));
  }
  return m;
}

}  // namespace
}  // namespace weft::onnxfe

namespace weft {

Module import_onnx_bytes(std::string_view bytes, const std::string& source, const OnnxImportOptions& options,
                         const std::string& base_dir) {
  auto model = std::make_shared<onnx::ModelProto>();
  if (bytes.size() > static_cast<size_t>(INT32_MAX) || !model->ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw Error(ErrorCode::kParse, "not a valid ONNX model (the protobuf ModelProto does not parse)", {.file = source});
  return onnxfe::import_model(*model, source, options, base_dir, model);
}

OnnxInterface onnx_interface(const std::string& path) { return onnxfe::interface_of(*onnxfe::parse_onnx_file(path)->model, path); }

Module import_onnx(const std::string& path, const OnnxImportOptions& options) {
  return onnxfe::import_parsed(onnxfe::parse_onnx_file(path), path, options);
}

std::vector<std::string> onnx_supported_ops() {
  std::vector<std::string> r;
  for (const auto& rule : onnxfe::op_rules()) r.push_back(rule.op_type);
  std::sort(r.begin(), r.end());
  return r;
}

}  // namespace weft

namespace weft::onnxfe {

void Importer::alias_out(int i, const OVal& v) {
  if (!wants_output(i)) return;
  OVal o = v;
  o.plain_cache = v.plain_cache;
  values_[node_->output(i)] = std::move(o);
}

void Importer::set_exact_ints(int i, std::shared_ptr<const std::vector<int64_t>> ints) {
  if (!wants_output(i)) return;
  values_[node_->output(i)].ints = std::move(ints);
}

int64_t norm_axis(const Importer& imp, int64_t axis, int64_t rank, const char* what) {
  if (rank == 0)
    imp.fail(std::string(what) + " " + std::to_string(axis) + ": the input is a scalar (rank 0) and has no axes", ErrorCode::kInvalidArgument);
  if (axis < -rank || axis >= rank)
    imp.fail(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank) +
                 " (must be in [" + std::to_string(-rank) + ", " + std::to_string(rank - 1) + "])",
             ErrorCode::kInvalidArgument);
  return axis < 0 ? axis + rank : axis;
}

int64_t tosa_axis(const std::vector<int64_t>& perm, int64_t onnx_axis) {
  if (perm.empty()) return onnx_axis;
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] == onnx_axis) return static_cast<int64_t>(i);
  return onnx_axis;
}

}  // namespace weft::onnxfe

// ---- sub-graphs ---------------------------------------------------------------------------------

namespace weft::onnxfe {

Importer::Scope::~Scope() {
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
    if (it->second) imp_.values_[it->first] = std::move(*it->second);
    else imp_.values_.erase(it->first);
  }
}

void Importer::Scope::save(const std::string& name) {
  auto it = imp_.values_.find(name);
  saved_.emplace_back(name, it == imp_.values_.end() ? std::nullopt : std::optional<OVal>(it->second));
}

void Importer::Scope::bind(const std::string& name, OVal v) {
  save(name);
  imp_.values_[name] = std::move(v);
}

const OVal* Importer::find_value(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? nullptr : &it->second;
}

const onnx::GraphProto& Importer::attr_graph(const char* name) const {
  const auto* a = attr(name);
  if (!a || a->type() != onnx::AttributeProto::GRAPH || !a->has_g())
    fail(std::string("attribute '") + name + "' must be a graph", ErrorCode::kInvalidArgument);
  return a->g();
}

namespace {

void collect_outer(const onnx::GraphProto& g, std::set<std::string> defined, std::set<std::string>& seen,
                   std::vector<std::string>& out) {
  for (const auto& vi : g.input()) defined.insert(vi.name());
  for (const auto& t : g.initializer()) defined.insert(t.name());
  for (const auto& t : g.sparse_initializer()) defined.insert(t.values().name());
  auto use = [&](const std::string& name) {
    if (!name.empty() && !defined.count(name) && seen.insert(name).second) out.push_back(name);
  };
  for (const auto& n : g.node()) {
    for (const std::string& i : n.input()) use(i);
    for (const auto& a : n.attribute()) {
      if (a.has_g()) collect_outer(a.g(), defined, seen, out);
      for (const auto& sub : a.graphs()) collect_outer(sub, defined, seen, out);
    }
    for (const std::string& o : n.output())
      if (!o.empty()) defined.insert(o);
  }
  for (const auto& vi : g.output()) use(vi.name());
}

std::string type_kind(const onnx::TypeProto& t) {
  if (t.has_sequence_type()) return "a sequence";
  if (t.has_optional_type()) return "an optional";
  if (t.has_map_type()) return "a map";
  if (t.has_sparse_tensor_type()) return "a sparse tensor";
  return "not a tensor";
}

}  // namespace

std::vector<std::string> Importer::outer_names(const onnx::GraphProto& body) {
  std::set<std::string> seen;
  std::vector<std::string> out;
  collect_outer(body, {}, seen, out);
  return out;
}

int64_t Importer::count_nodes(const onnx::GraphProto& body) {
  int64_t n = body.node_size();
  for (const auto& node : body.node())
    for (const auto& a : node.attribute()) {
      if (a.has_g()) n += count_nodes(a.g());
      for (const auto& sub : a.graphs()) n += count_nodes(sub);
    }
  return n;
}

std::vector<OVal> Importer::inline_graph(const onnx::GraphProto& body, const std::vector<OVal>& inputs,
                                         const std::string& where, const std::string& detail) {
  const std::string in_what = where + " '" + body.name() + "'";
  if (body.input_size() != static_cast<int>(inputs.size()))
    fail(in_what + " declares " + std::to_string(body.input_size()) + " inputs; " + node_->op_type() + " passes it " +
             std::to_string(inputs.size()),
         ErrorCode::kInvalidArgument);
  for (const auto& vi : body.output())
    if (!vi.type().has_tensor_type() && vi.type().value_case() != onnx::TypeProto::VALUE_NOT_SET)
      fail(in_what + ": output '" + vi.name() + "' is " + type_kind(vi.type()) +
           "; Weft carries tensors only (sequences, maps and optionals are not supported)");
  // The node being lowered and its label come back once the body is lowered, also on errors.
  struct Restore {
    Importer& imp;
    const onnx::NodeProto* node;
    std::string label, note;
    ~Restore() {
      imp.node_ = node;
      imp.node_label_ = label;
      imp.scope_note_ = note;
      --imp.sub_depth_;
    }
  } restore{*this, node_, node_label_, scope_note_};
  ++sub_depth_;
  Scope scope(*this);
  for (int k = 0; k < body.input_size(); ++k) {
    const auto& vi = body.input(k);
    if (vi.type().value_case() != onnx::TypeProto::VALUE_NOT_SET) {
      if (!vi.type().has_tensor_type())
        fail(in_what + ": input '" + vi.name() + "' is " + type_kind(vi.type()) +
             "; Weft carries tensors only (sequences, maps and optionals are not supported)");
      const int et = vi.type().tensor_type().elem_type();
      const auto dt = tosa_dtype(et);
      if (et != kOUndefined && dt && *dt != inputs[static_cast<size_t>(k)].v.dtype())
        fail(in_what + ": input " + std::to_string(k) + " '" + vi.name() + "' is declared " + onnx_type_name(et) +
                 " but receives " + inputs[static_cast<size_t>(k)].v.type.str(),
             ErrorCode::kInvalidArgument);
    }
    scope.bind(vi.name(), inputs[static_cast<size_t>(k)]);
  }
  for (const auto& t : body.initializer())
    scope.bind(t.name(), make_const_oval(t, in_what + ": initializer '" + t.name() + "'"));
  for (const auto& n : body.node())
    for (const std::string& o : n.output())
      if (!o.empty()) scope.save(o);
  scope_note_ = " in " + in_what + (detail.empty() ? "" : " (" + detail + ")") + " of " + node_label_;
  for (const auto& n : body.node()) lower_node(n);
  node_ = restore.node;
  node_label_ = restore.label;
  std::vector<OVal> outs;
  for (const auto& vi : body.output()) {
    auto it = values_.find(vi.name());
    if (it == values_.end())
      fail(in_what + ": output '" + vi.name() + "' is not produced by any node, input or enclosing scope",
           ErrorCode::kInvalidArgument);
    outs.push_back(it->second);
  }
  return outs;
}

std::string Importer::build_graph(const std::string& base, const std::vector<TensorType>& input_types,
                                  const std::vector<std::string>& input_names,
                                  const std::function<std::vector<TVal>(const std::vector<TVal>&)>& fn,
                                  std::vector<TensorType>* output_types) {
  // A name the text format and the .tosa writer take as they are: letters, digits, '_'.
  std::string stem;
  for (char c : base) stem += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
  if (stem.empty() || std::isdigit(static_cast<unsigned char>(stem[0]))) stem = "g_" + stem;
  std::string name = stem;
  for (int k = 1; graph_names_.count(name); ++k) name = stem + "_" + std::to_string(k);
  graph_names_.insert(name);

  // Every emit goes to the new graph while `fn` runs: its own constants and type hints.
  struct Swap {
    Importer& imp;
    Graph graph;
    std::map<const Tensor*, std::pair<std::shared_ptr<const Tensor>, ValueId>> materialized;
    std::map<DType, ValueId> hints;
    bool inside = false;
    void swap() {
      std::swap(imp.graph_, graph);
      std::swap(imp.materialized_, materialized);
      std::swap(imp.hints_, hints);
      inside = !inside;
    }
    ~Swap() {
      if (inside) swap();
    }
  } sw{*this, Graph(name), {}, {}};
  sw.swap();
  std::vector<TVal> ins;
  for (size_t k = 0; k < input_types.size(); ++k) {
    const std::string nm = graph_.unique_name(k < input_names.size() && !input_names[k].empty() ? input_names[k] : "in");
    ins.push_back(TVal{graph_.add_input(nm, input_types[k]), nullptr, input_types[k]});
  }
  std::vector<TVal> results = fn(ins);
  std::vector<ValueId> outs;
  std::set<ValueId> used;
  for (const TVal& r : results) {
    ValueId id = materialize(r);
    const bool is_input = std::find(graph_.inputs().begin(), graph_.inputs().end(), id) != graph_.inputs().end();
    if (is_input || used.count(id)) {
      // One value per output, none of them an input: each output is a tensor of its own.
      const TensorType t = graph_.value(id).type;
      Node n;
      n.op = Op::IDENTITY;
      n.inputs = {id};
      n.attrs = make_attrs(Op::IDENTITY, {});
      id = graph_.add_value(graph_.unique_name(graph_.value(id).name + "_out"), t);
      n.outputs = {id};
      graph_.add_node(std::move(n));
    }
    used.insert(id);
    outs.push_back(id);
  }
  graph_.set_outputs(outs);
  if (output_types) {
    output_types->clear();
    for (ValueId id : outs) output_types->push_back(graph_.value(id).type);
  }
  // Back to the enclosing graph; the new one joins the module's graphs.
  sw.swap();
  subgraphs_.push_back(std::move(sw.graph));
  return name;
}

namespace {

// The file offset and length of the raw_data of each initializer of the file's top-level graph, in
// the order the file holds them, read from protobuf's wire format without reading the data (the
// stream skips over it). {} when the file is not as a single parse reads it: more than one graph
// field (protobuf merges them), an initializer with more than one raw_data, or anything unreadable.
// An initializer without raw_data gets length 0.
std::vector<std::pair<uint64_t, uint64_t>> raw_data_places(int fd) {
  namespace pb = google::protobuf;
  using WFL = pb::internal::WireFormatLite;
  std::vector<std::pair<uint64_t, uint64_t>> out;
  if (::lseek(fd, 0, SEEK_SET) != 0) return {};
  pb::io::FileInputStream file(fd);
  pb::io::CodedInputStream in(&file);
  in.SetTotalBytesLimit(INT_MAX);
  int graphs = 0;
  while (const uint32_t tag = in.ReadTag()) {
    if (WFL::GetTagFieldNumber(tag) != 7 || WFL::GetTagWireType(tag) != WFL::WIRETYPE_LENGTH_DELIMITED) {
      if (!WFL::SkipField(&in, tag)) return {};
      continue;
    }
    if (++graphs > 1) return {};
    uint32_t glen = 0;
    if (!in.ReadVarint32(&glen) || glen > INT_MAX) return {};
    const auto glimit = in.PushLimit(static_cast<int>(glen));
    while (const uint32_t gtag = in.ReadTag()) {
      if (WFL::GetTagFieldNumber(gtag) != 5 || WFL::GetTagWireType(gtag) != WFL::WIRETYPE_LENGTH_DELIMITED) {
        if (!WFL::SkipField(&in, gtag)) return {};
        continue;
      }
      uint32_t tlen = 0;
      if (!in.ReadVarint32(&tlen) || tlen > INT_MAX) return {};
      const auto tlimit = in.PushLimit(static_cast<int>(tlen));
      std::pair<uint64_t, uint64_t> place{0, 0};
      int raws = 0;
      while (const uint32_t ttag = in.ReadTag()) {
        if (WFL::GetTagFieldNumber(ttag) == 9 && WFL::GetTagWireType(ttag) == WFL::WIRETYPE_LENGTH_DELIMITED) {
          uint32_t rlen = 0;
          if (!in.ReadVarint32(&rlen) || rlen > INT_MAX) return {};
          place = {static_cast<uint64_t>(in.CurrentPosition()), rlen};
          if (++raws > 1 || !in.Skip(static_cast<int>(rlen))) return {};
        } else if (!WFL::SkipField(&in, ttag)) {
          return {};
        }
      }
      if (!in.ConsumedEntireMessage()) return {};
      in.PopLimit(tlimit);
      out.push_back(place);
    }
    if (!in.ConsumedEntireMessage()) return {};
    in.PopLimit(glimit);
  }
  return in.ConsumedEntireMessage() ? out : std::vector<std::pair<uint64_t, uint64_t>>{};
}

// Whether the file's bytes at `offset` begin and end as `bytes` do (the walk found the right place).
bool same_edges(int fd, uint64_t offset, std::string_view bytes) {
  const size_t n = std::min<size_t>(64, bytes.size());
  char buf[64];
  for (const uint64_t at : {uint64_t{0}, static_cast<uint64_t>(bytes.size() - n)}) {
    if (::pread(fd, buf, n, static_cast<off_t>(offset + at)) != static_cast<ssize_t>(n)) return false;
    if (std::memcmp(buf, bytes.data() + at, n) != 0) return false;
  }
  return true;
}

}  // namespace

std::shared_ptr<ParsedOnnx> parse_onnx_file(const std::string& path) {
  checked_file_size(path, kMaxOnnxBytes, "an ONNX model");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(ErrorCode::kIo, std::string("cannot open an ONNX model: ") + std::strerror(errno), {.file = path});
  auto parsed = std::make_shared<ParsedOnnx>();
  parsed->model = std::make_shared<onnx::ModelProto>();
  core::FileOrigin origin;
  const bool known = core::file_origin(fd, path, &origin);
  const bool ok = parsed->model->ParseFromFileDescriptor(fd);
  if (!ok) {
    ::close(fd);
    throw Error(ErrorCode::kParse, "not a valid ONNX model (the protobuf ModelProto does not parse)", {.file = path});
  }
  // Where the large initializers' bytes lie in the file, so that they can be read again.
  const auto& inits = parsed->model->graph().initializer();
  bool large = false;
  for (const auto& t : inits) large |= t.raw_data().size() >= kReloadableBytes;
  if (known && large) {
    const auto places = raw_data_places(fd);
    if (places.size() == static_cast<size_t>(inits.size())) {
      parsed->origin = std::make_shared<core::FileOrigin>(std::move(origin));
      std::set<std::string> names, repeated;
      for (const auto& t : inits)
        if (!names.insert(t.name()).second) repeated.insert(t.name());
      for (int i = 0; i < inits.size(); ++i) {
        const std::string& raw = inits[i].raw_data();
        const auto [offset, length] = places[static_cast<size_t>(i)];
        if (raw.size() < kReloadableBytes || length != raw.size() || repeated.count(inits[i].name()) ||
            !same_edges(fd, offset, raw))
          continue;
        parsed->raw_ranges.emplace(raw.data(), ParsedOnnx::Range{.name = inits[i].name(), .offset = offset, .size = raw.size()});
      }
    }
  }
  ::close(fd);
  return parsed;
}

OnnxInterface interface_of(const onnx::ModelProto& model, const std::string& path) {
  const onnx::GraphProto& g = model.graph();
  std::set<std::string> initialized;
  for (const auto& t : g.initializer()) initialized.insert(t.name());
  auto value = [&](const onnx::ValueInfoProto& vi) {
    OnnxInterface::Value v{.name = vi.name()};
    if (!vi.type().has_tensor_type())
      throw Error(ErrorCode::kUnsupported, "'" + vi.name() + "' is not a tensor (sequences, maps and optionals are not supported)",
                  {.file = path, .operand = vi.name()});
    const auto& tt = vi.type().tensor_type();
    auto dt = boundary_dtype(tt.elem_type());
    if (!dt) throw Error(ErrorCode::kUnsupported, "'" + vi.name() + "': " + unsupported_type_message(tt.elem_type()),
                         {.file = path, .operand = vi.name()});
    v.dtype = *dt;
    v.onnx_type = onnx_type_name(tt.elem_type());
    v.is_unsigned = is_unsigned_onnx(tt.elem_type());
    v.is_int64 = tt.elem_type() == kOInt64;
    v.has_shape = tt.has_shape();
    for (const auto& d : tt.shape().dim()) v.shape.push_back(d.has_dim_value() && d.dim_value() > 0 ? d.dim_value() : -1);
    return v;
  };
  OnnxInterface out;
  for (const auto& vi : g.input())
    if (!initialized.count(vi.name())) out.inputs.push_back(value(vi));
  for (const auto& vi : g.output()) out.outputs.push_back(value(vi));
  return out;
}

Module import_parsed(std::shared_ptr<ParsedOnnx> parsed, const std::string& path, const OnnxImportOptions& options) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  // A bound input's initializer is replaced by the binding's value: not the file's bytes.
  std::erase_if(parsed->raw_ranges, [&](const auto& kv) { return options.bindings.count(kv.second.name) != 0; });
  onnx::ModelProto& m = *parsed->model;
  const ParsedOnnx* p = parsed.get();
  return import_model(m, path, options, dir, std::shared_ptr<const void>(std::move(parsed)), p);
}

}  // namespace weft::onnxfe
