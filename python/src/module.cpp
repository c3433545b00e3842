// The `weft._weft` extension: Weft's runtime for Python (pybind11 over include/weft/runtime.h).
// The pure-Python package `weft` (python/weft/) wraps it; docs/python.md describes the API.
//
// Arrays: inputs are numpy arrays of the model's dtype and shape, C-contiguous; they are borrowed,
// not copied, for the duration of the call. Outputs are numpy arrays over the runtime's own
// buffers (no copy): each array keeps its tensor's storage alive. Runs release the GIL.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "weft/error.h"
#include "weft/runtime.h"
#include "weft/tensor.h"

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
py::array to_numpy(const Tensor& t) {
  auto* keep = new Tensor(t);
  py::capsule owner(keep, [](void* p) { delete static_cast<Tensor*>(p); });
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end()), strides(shape.size());
  py::ssize_t stride = static_cast<py::ssize_t>(storage_size(t.dtype()));
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return py::array(numpy_dtype(t.dtype()), shape, strides, t.buffer().data(), owner);
}

// A numpy array as the model's input `info`, borrowed (the array must stay alive during the run).
Tensor from_numpy(const py::array& a, const IoInfo& info) {
  const TensorType& want = info.type;
  const py::dtype dt = numpy_dtype(want.dtype);
  auto fail = [&](const std::string& why) -> Tensor {
    throw Error(ErrorCode::kInvalidArgument, "input '" + info.name + "' (" + want.str() + "): " + why,
                {.operand = info.name});
  };
  if (!a.dtype().is(dt))
    fail("got an array of dtype " + std::string(py::str(py::object(a.dtype()))) + ", expected " +
         std::string(py::str(py::object(dt))));
  Shape shape(a.shape(), a.shape() + a.ndim());
  if (shape != want.shape) {
    std::string got = "[";
    for (size_t i = 0; i < shape.size(); ++i) got += (i ? "," : "") + std::to_string(shape[i]);
    fail("got shape " + got + "]");
  }
  if (!(a.flags() & py::array::c_style))
    fail("the array is not C-contiguous (use numpy.ascontiguousarray)");
  return Tensor(want, Buffer::wrap(nullptr, a.data(), want.byte_size()));
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
    std::vector<Tensor> out;
    {
      std::lock_guard<std::mutex> lock(mu_);  // a session runs one call at a time
      py::gil_scoped_release release;
      out = ctx_.run(tensors);
    }
    py::dict result;
    const std::vector<IoInfo>& outs = model_->outputs();
    for (size_t j = 0; j < outs.size() && j < out.size(); ++j) result[py::str(outs[j].name)] = to_numpy(out[j]);
    return result;
  }

 private:
  std::shared_ptr<const Model> model_;
  Context ctx_;
  std::mutex mu_;
};

py::list io_list(const std::vector<IoInfo>& io) {
  py::list l;
  for (const IoInfo& i : io)
    l.append(py::make_tuple(i.name, dtype_name(i.type.dtype), numpy_dtype(i.type.dtype), shape_tuple(i.type.shape)));
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
      .def("run", &Session::run, py::arg("feeds"));

  m.def(
      "load",
      [](const std::string& path, std::vector<std::string> backends, const std::string& device,
         std::map<std::string, std::vector<int64_t>> shapes) {
        LoadOptions o;
        o.backend.backends = std::move(backends);
        o.backend.device = device;
        for (auto& [name, dims] : shapes) o.onnx.input_shapes[name] = Shape(dims.begin(), dims.end());
        std::shared_ptr<const Model> model;
        {
          py::gil_scoped_release release;
          model = Model::load(path, o);
        }
        return std::const_pointer_cast<Model>(model);
      },
      py::arg("path"), py::arg("backends") = std::vector<std::string>{}, py::arg("device") = "",
      py::arg("shapes") = std::map<std::string, std::vector<int64_t>>{});

  m.def("backends", [] {
    py::list l;
    for (const BackendInfo& b : backends()) l.append(py::make_tuple(b.name, b.description, b.unavailable));
    return l;
  });
}
