// The `weft._weft` extension: Weft's runtime for Python (pybind11 over include/weft/runtime.h).
// The pure-Python package `weft` (python/weft/) wraps it; docs/python.md describes the API.
//
// Arrays: inputs are numpy arrays of the model's dtype and shape, C-contiguous; they are borrowed,
// not copied, for the duration of the call. Outputs are numpy arrays over the runtime's own
// buffers (no copy): each array keeps its tensor's storage alive. Runs release the GIL.
#include <optional>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "weft/custom.h"
#include "weft/error.h"
#include "weft/iospec.h"
#include "weft/onnx.h"
#include "weft/runtime.h"
#include "weft/tensor.h"
#include "weft/text.h"
#include "weft/tosa_file.h"
#include "weft/verify.h"
#include "weft/vgf.h"

namespace py = pybind11;

namespace weft::python {

namespace {

// numpy's view of each element type: the format Weft stores it in (weft/dtype.h). int4 is one
// int8 per element, int48 an int64, bf16 and fp8 their raw bits, shape values int64.
py::dtype numpy_dtype(DType t) {
  switch (t) {
    case DType::kBool: return py::dtype("bool");
    case DType::kInt4:
    case DType::kInt8: return py::dtype("int8");
    case DType::kInt16: return py::dtype("int16");
    case DType::kInt32: return py::dtype("int32");
    case DType::kInt48:
    case DType::kShape: return py::dtype("int64");
    case DType::kFp8E4M3:
    case DType::kFp8E5M2: return py::dtype("uint8");
    case DType::kFp16: return py::dtype("float16");
    case DType::kBf16: return py::dtype("uint16");
    case DType::kFp32: return py::dtype("float32");
  }
  return py::dtype("uint8");
}

py::tuple shape_tuple(const Shape& s) {
  py::tuple t(s.size());
  for (size_t i = 0; i < s.size(); ++i) t[i] = s[i];
  return t;
}

// An output tensor as a numpy array over its buffer; the capsule keeps the buffer alive.
// The numpy type of a model input or output: its carrier's, or for unsigned values
// (IoInfo::is_unsigned) the unsigned type of the same size.
py::dtype io_dtype(const IoInfo& io) {
  if (io.is_int64) return py::dtype("int64");
  if (io.is_unsigned) {
    switch (io.type.dtype) {
      case DType::kInt8: return py::dtype("uint8");
      case DType::kInt16: return py::dtype("uint16");
      case DType::kInt32: return py::dtype("uint32");
      default: break;
    }
  }
  return numpy_dtype(io.type.dtype);
}

py::array to_numpy(const Tensor& t, std::optional<py::dtype> as = std::nullopt) {
  auto* keep = new Tensor(t);
  py::capsule owner(keep, [](void* p) { delete static_cast<Tensor*>(p); });
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end()), strides(shape.size());
  py::ssize_t stride = static_cast<py::ssize_t>(storage_size(t.dtype()));
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return py::array(as ? *as : numpy_dtype(t.dtype()), shape, strides, t.buffer().data(), owner);
}

// A numpy array as the model's input `info`, borrowed (the array must stay alive during the run).
Tensor from_numpy(const py::array& a, const IoInfo& info) {
  const TensorType& want = info.type;
  if (info.is_int64 && !a.dtype().is(py::dtype("int64")) && a.dtype().is(numpy_dtype(want.dtype))) {
    // int32 data for an ONNX int64 input: what the model carries, taken as it is.
    IoInfo as_is = info;
    as_is.is_int64 = false;
    return from_numpy(a, as_is);
  }
  const py::dtype dt = io_dtype(info);
  auto fail = [&](const std::string& why) -> Tensor {
    throw Error(ErrorCode::kInvalidArgument, "input '" + info.name + "' (" + want.str() + "): " + why,
                {.operand = info.name});
  };
  if (!a.dtype().is(dt))
    fail("got an array of dtype " + std::string(py::str(py::object(a.dtype()))) + ", expected " +
         std::string(py::str(py::object(dt))));
  Shape shape(a.shape(), a.shape() + a.ndim());
  bool fits = shape.size() == want.shape.size();
  for (size_t d = 0; fits && d < shape.size(); ++d) fits = want.shape[d] < 0 || want.shape[d] == shape[d];
  if (!fits) {
    std::string got = "[";
    for (size_t i = 0; i < shape.size(); ++i) got += (i ? "," : "") + std::to_string(shape[i]);
    fail("got shape " + got + "]");
  }
  if (!(a.flags() & py::array::c_style))
    fail("the array is not C-contiguous (use numpy.ascontiguousarray)");
  if (info.is_unsigned && want.dtype == DType::kInt32) {
    // uint32 values are carried as int32: each must be below 2^31.
    const auto* p = static_cast<const uint32_t*>(a.data());
    for (py::ssize_t i = 0; i < a.size(); ++i)
      if (p[i] > static_cast<uint32_t>(INT32_MAX))
        fail("value " + std::to_string(p[i]) + " at flat index " + std::to_string(i) +
             " does not fit int32, which carries the model's unsigned values (up to 2^31 - 1)");
  }
  const TensorType type{want.dtype, shape};  // a dynamic model's open dimensions take the array's
  if (info.is_int64) {
    // int64 values, carried as int32: converted (a copy), each checked to fit.
    Tensor t = Tensor::zeros(type);
    const auto* p = static_cast<const int64_t*>(a.data());
    for (py::ssize_t i = 0; i < a.size(); ++i) {
      if (p[i] < INT32_MIN || p[i] > INT32_MAX)
        fail("int64 value " + std::to_string(p[i]) + " at flat index " + std::to_string(i) +
             " is outside the int32 range the model carries it in");
      t.mutable_data<int32_t>()[i] = static_cast<int32_t>(p[i]);
    }
    return t;
  }
  return Tensor(type, Buffer::wrap(nullptr, a.data(), type.byte_size()));
}

class Session {
 public:
  Session(std::shared_ptr<const Model> model, int threads, int64_t max_loop_iterations, double deadline_ms,
          size_t max_memory_bytes)
      : model_(std::move(model)),
        ctx_(model_, ContextOptions{.threads = threads,
                                    .max_loop_iterations = max_loop_iterations,
                                    .deadline_ms = deadline_ms,
                                    .max_memory_bytes = max_memory_bytes}) {}

  py::dict run(const py::dict& feeds) {
    const std::vector<IoInfo>& ins = model_->inputs();
    std::vector<py::array> keep;  // the borrowed arrays, alive until the run ends
    std::vector<Tensor> tensors(ins.size());
    std::vector<bool> given(ins.size(), false);
    for (const auto& [key, value] : feeds) {
      const std::string name = py::str(key);
      const size_t i = model_->input_index(name);  // kNotFound lists the inputs
      keep.push_back(py::array::ensure(value));
      if (!keep.back()) throw Error(ErrorCode::kInvalidArgument, "input '" + name + "' is not an array", {.operand = name});
      tensors[i] = from_numpy(keep.back(), ins[i]);
      given[i] = true;
    }
    std::string missing;
    for (size_t i = 0; i < ins.size(); ++i)
      if (!given[i]) missing += (missing.empty() ? "" : ", ") + ins[i].name + " " + ins[i].type.str();
    if (!missing.empty()) throw Error(ErrorCode::kInvalidArgument, "inputs not given: " + missing);
    const std::vector<IoInfo>& outs = model_->outputs();
    if (model_->is_dynamic()) {
      // Output shapes are known once the run has picked its specialization: copied out.
      {
        std::lock_guard<std::mutex> lock(mu_);
        py::gil_scoped_release release;
        for (size_t i = 0; i < ins.size(); ++i) ctx_.set_input(i, tensors[i]);
        ctx_.run();
      }
      py::dict result;
      for (size_t j = 0; j < outs.size(); ++j)
        result[py::str(outs[j].name)] = outs[j].is_int64 ? widen_int64(ctx_.output(j)) : to_numpy(ctx_.output(j).clone(), io_dtype(outs[j]));
      return result;
    }
    // The outputs are written straight into new numpy arrays (bound as the outputs' memory for
    // this run), so the results reach Python without a copy.
    std::vector<py::array> results;
    std::vector<void*> out_data;
    results.reserve(outs.size());
    for (const IoInfo& o : outs) {
      std::vector<py::ssize_t> shape(o.type.shape.begin(), o.type.shape.end());
      // int64 outputs (computed as int32) are widened after the run; the others are bound.
      results.emplace_back(o.is_int64 ? numpy_dtype(o.type.dtype) : io_dtype(o), shape);
      out_data.push_back(results.back().mutable_data());
    }
    {
      std::lock_guard<std::mutex> lock(mu_);  // a session runs one call at a time
      py::gil_scoped_release release;
      // The arrays may be freed after this call: the outputs never stay bound to them.
      struct Park {
        Session& s;
        ~Park() { s.park_outputs(); }
      } park{*this};
      for (size_t i = 0; i < ins.size(); ++i) ctx_.set_input(i, tensors[i]);
      for (size_t j = 0; j < outs.size(); ++j)
        if (outs[j].type.byte_size() > 0) ctx_.bind_output(outs[j].name, out_data[j], outs[j].type.byte_size());
      ctx_.run();
    }
    py::dict result;
    for (size_t j = 0; j < outs.size(); ++j)
      result[py::str(outs[j].name)] = outs[j].is_int64 ? py::array(results[j].attr("astype")("int64")) : results[j];
    return result;
  }

  static py::array widen_int64(const Tensor& t) { return py::array(to_numpy(t.clone()).attr("astype")("int64")); }

  // Binds every output to the session's own buffer (allocated once).
  void park_outputs() {
    const std::vector<IoInfo>& outs = model_->outputs();
    if (parking_.empty())
      for (const IoInfo& o : outs) parking_.push_back(Buffer::allocate(o.type.byte_size()));
    for (size_t j = 0; j < outs.size(); ++j)
      if (outs[j].type.byte_size() > 0) ctx_.bind_output(outs[j].name, parking_[j].mutable_data(), outs[j].type.byte_size());
  }

  void set_profiling(bool on) {
    std::lock_guard<std::mutex> lock(mu_);
    ctx_.set_profiling(on);
  }
  py::list profile() {
    std::lock_guard<std::mutex> lock(mu_);
    py::list l;
    for (const KernelProfile& k : ctx_.profile())
      l.append(py::make_tuple(k.backend, k.pattern, k.node, k.microseconds, k.device, k.implementation));
    return l;
  }

 private:
  std::shared_ptr<const Model> model_;
  Context ctx_;
  std::mutex mu_;
  std::vector<Buffer> parking_;
};

// Any C-contiguous array of a Weft element type, as a tensor of its shape (borrowed).
Tensor any_from_numpy(const py::array& a, const std::string& what) {
  static const std::pair<const char*, DType> kinds[] = {{"bool", DType::kBool},       {"int8", DType::kInt8},
                                                         {"int16", DType::kInt16},     {"int32", DType::kInt32},
                                                         {"float16", DType::kFp16},    {"float32", DType::kFp32}};
  for (const auto& [name, t] : kinds) {
    if (!a.dtype().is(py::dtype(name))) continue;
    if (!(a.flags() & py::array::c_style))
      throw Error(ErrorCode::kInvalidArgument, what + ": the array is not C-contiguous", {.operand = what});
    TensorType type{t, Shape(a.shape(), a.shape() + a.ndim())};
    return Tensor(type, Buffer::wrap(nullptr, a.data(), type.byte_size()));
  }
  throw Error(ErrorCode::kInvalidArgument,
              what + ": arrays of dtype " + std::string(py::str(py::object(a.dtype()))) +
                  " have no Weft element type (bool, int8, int16, int32, float16, float32)",
              {.operand = what});
}

// An IOSpec streaming session (weft stream): inputs written one at a time in sequence order.
class Stream {
 public:
  Stream(std::shared_ptr<const Model> model, const std::string& iospec, const std::string& target) {
    iospec::IoSpec spec = iospec::load_yaml(iospec);
    iospec::Target t = target.empty() ? iospec::Target{} : iospec::read_target(target);
    session_ = std::make_unique<StreamSession>(std::move(model), std::move(spec), t);
  }
  void write(const std::string& key, const py::array& value) {
    const py::array a = py::array::ensure(value);
    session_->write(key, any_from_numpy(a, key));
  }
  void write_values(const std::string& key, const std::vector<double>& values) { session_->write_values(key, values); }
  py::array read(const std::string& key) {
    Tensor t;
    {
      py::gil_scoped_release release;
      t = session_->read(key);
    }
    return to_numpy(t);
  }
  std::vector<double> read_values(const std::string& key) {
    py::gil_scoped_release release;
    return session_->read_values(key);
  }
  std::string expected() const { return session_->expected(); }

 private:
  std::unique_ptr<StreamSession> session_;
};

py::list io_list(const std::vector<IoInfo>& io) {
  py::list l;
  for (const IoInfo& i : io)
    l.append(py::make_tuple(i.name, dtype_name(i.type.dtype), io_dtype(i), shape_tuple(i.type.shape)));
  return l;
}

}  // namespace

}  // namespace weft::python

PYBIND11_MODULE(_weft, m) {
  using namespace weft;
  using namespace weft::python;
  m.doc() = "Weft's runtime (C++), wrapped by the weft package";

  // weft.Error carries the code and the location; the package defines it and registers it here.
  static py::object error_type;
  m.def("_set_error_type", [](py::object t) { error_type = t; });
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      if (!error_type) throw;
      const Location& l = e.location();
      py::object err = error_type(e.what(), error_code_name(e.code()), e.message(), l.file, l.line, l.column, l.graph,
                                  l.node, l.operand);
      PyErr_SetObject(error_type.ptr(), err.ptr());
    }
  });

  py::class_<Model, std::shared_ptr<Model>>(m, "Model")
      .def_property_readonly("inputs", [](const Model& model) { return io_list(model.inputs()); })
      .def_property_readonly("outputs", [](const Model& model) { return io_list(model.outputs()); })
      .def("explain", &Model::explain)
      .def("placement",
           [](const Model& model) {
             py::list l;
             for (const KernelPlacement& k : model.placement())
               l.append(py::make_tuple(k.backend, k.pattern, k.nodes, k.declined));
             return l;
           })
      .def("backend_priority", &Model::backend_priority)
      .def_property_readonly("is_dynamic", &Model::is_dynamic)
      .def_property_readonly("specializations", &Model::specializations)
      .def("memory_stats", [](const Model& model) {
        const MemoryStats& s = model.memory_stats();
        py::dict d;
        d["arena_bytes"] = s.arena_bytes;
        d["intermediate_bytes"] = s.intermediate_bytes;
        d["intermediates"] = s.intermediates;
        d["in_place_nodes"] = s.in_place_nodes;
        d["output_bytes"] = s.output_bytes;
        d["constant_bytes"] = s.constant_bytes;
        d["workspace_bytes"] = s.workspace_bytes;
        d["prepared_bytes"] = s.prepared_bytes;
        return d;
      });

  py::class_<Session>(m, "Session")
      .def(py::init([](std::shared_ptr<Model> model, int threads, int64_t max_loop_iterations, double deadline_ms,
                       size_t max_memory_bytes) {
             return std::make_unique<Session>(std::move(model), threads, max_loop_iterations, deadline_ms,
                                              max_memory_bytes);
           }),
           py::arg("model"), py::arg("threads") = 1, py::arg("max_loop_iterations") = 0, py::arg("deadline_ms") = 0.0,
           py::arg("max_memory_bytes") = 0)
      .def("run", &Session::run, py::arg("feeds"))
      .def("set_profiling", &Session::set_profiling, py::arg("on"))
      .def("profile", &Session::profile);

  m.def(
      "load",
      [](const std::string& path, std::vector<std::string> backends, const std::string& device,
         std::map<std::string, std::vector<int64_t>> shapes, const std::string& precision) {
        LoadOptions o;
        o.backend.backends = std::move(backends);
        o.backend.device = device;
        if (precision != "fp32" && precision != "fp16")
          throw Error(ErrorCode::kInvalidArgument, "precision must be 'fp32' or 'fp16', got '" + precision + "'");
        o.backend.precision = precision == "fp16" ? Precision::kFp16 : Precision::kFp32;
        for (auto& [name, dims] : shapes) o.onnx.input_shapes[name] = Shape(dims.begin(), dims.end());
        std::shared_ptr<const Model> model;
        {
          py::gil_scoped_release release;
          model = Model::load(path, o);
        }
        return std::const_pointer_cast<Model>(model);
      },
      py::arg("path"), py::arg("backends") = std::vector<std::string>{}, py::arg("device") = "",
      py::arg("shapes") = std::map<std::string, std::vector<int64_t>>{}, py::arg("precision") = "fp32");

  py::class_<Stream>(m, "Stream")
      .def(py::init([](std::shared_ptr<Model> model, const std::string& iospec, const std::string& target) {
             return std::make_unique<Stream>(std::move(model), iospec, target);
           }),
           py::arg("model"), py::arg("iospec"), py::arg("target") = "")
      .def("write", &Stream::write, py::arg("key"), py::arg("value"))
      .def("write_values", &Stream::write_values, py::arg("key"), py::arg("values"))
      .def("read", &Stream::read, py::arg("key"))
      .def("read_values", &Stream::read_values, py::arg("key"))
      .def("expected", &Stream::expected);

  m.def("register_ops", [](const std::string& path) { return custom::register_ops_file(path); }, py::arg("path"));
  m.def(
      "register_ops_text",
      [](const std::string& text, const std::string& origin, const std::string& base_dir) {
        return custom::register_ops_text(text, origin, base_dir);
      },
      py::arg("text"), py::arg("origin"), py::arg("base_dir") = "");
  m.def("unregister_op", &custom::unregister_op, py::arg("domain_name"), py::arg("operator_name"));

  // weft compile: the model read, custom shader nodes prepared, verified, written by the output's
  // extension (.vgf, .tosa, .weft), and its IOSpec where asked for.
  m.def(
      "compile",
      [](const std::string& src, const std::string& out, const std::string& iospec_out,
         std::vector<std::string> latched, const std::string& target, std::map<std::string, std::vector<int64_t>> shapes) {
        py::gil_scoped_release release;
        LoadOptions o;
        for (auto& [name, dims] : shapes) o.onnx.input_shapes[name] = Shape(dims.begin(), dims.end());
        Module m = read_model(src, o);
        try {
          custom::prepare_module(m, src);
          verify_or_throw(m);
        } catch (const Error& e) {
          throw e.with_context({.file = src});
        }
        std::optional<iospec::IoSpec> spec;
        if (!iospec_out.empty()) {
          iospec::GenerateOptions gen;
          if (!target.empty()) gen.target = iospec::read_target(target);
          gen.latched = std::move(latched);
          spec = iospec::generate(m, gen);
        }
        auto ends = [&](const char* ext) {
          const std::string e(ext);
          return out.size() > e.size() && out.compare(out.size() - e.size(), e.size(), e) == 0;
        };
        if (ends(".vgf")) {
          vgf::save(vgf::from_module(m), out);
        } else if (ends(".tosa")) {
          tosa_file::save(m, out);
        } else if (ends(".weft")) {
          save_weft(m, out);
        } else {
          throw Error(ErrorCode::kInvalidArgument, "the output must end in .vgf, .tosa or .weft", {.file = out});
        }
        if (spec) iospec::save_yaml(*spec, iospec_out);
      },
      py::arg("src"), py::arg("out"), py::arg("iospec") = "", py::arg("latched") = std::vector<std::string>{},
      py::arg("target") = "", py::arg("shapes") = std::map<std::string, std::vector<int64_t>>{});

  m.def(
      "import_onnx",
      [](const std::string& path, std::map<std::string, std::vector<int64_t>> shapes) {
        OnnxImportOptions o;
        for (auto& [name, dims] : shapes) o.input_shapes[name] = Shape(dims.begin(), dims.end());
        Module m;
        {
          py::gil_scoped_release release;
          m = import_onnx(path, o);
        }
        return print_weft(m);
      },
      py::arg("path"), py::arg("shapes") = std::map<std::string, std::vector<int64_t>>{});

  m.def("backends", [] {
    py::list l;
    for (const BackendInfo& b : backends()) l.append(py::make_tuple(b.name, b.description, b.unavailable));
    return l;
  });
}
