// Builds small ONNX ModelProtos in C++ for the frontend tests, imports them and runs them with the
// runtime, plus the plain-loop helpers the tests use for their expected values.
#pragma once

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "weft/graph.h"
#include "weft/onnx.h"
#include "weft/runtime.h"
#include "weft/tensor.h"

namespace weft::test::onnxb {

// ONNX TensorProto.DataType values.
enum : int { kFloat = 1, kUint8 = 2, kInt8 = 3, kUint16 = 4, kInt32 = 6, kInt64 = 7, kBool = 9, kFloat16 = 10, kDouble = 11, kUint32 = 12 };

// A dimension of a graph input: a number or a symbolic name.
using Dim = std::variant<int64_t, std::string>;

class ModelBuilder {
 public:
  explicit ModelBuilder(int opset = 17) {
    model_.set_ir_version(8);
    model_.set_producer_name("weft-test");
    auto* os = model_.add_opset_import();
    os->set_domain("");
    os->set_version(opset);
    graph()->set_name("test");
  }

  onnx::ModelProto& model() { return model_; }
  onnx::GraphProto* graph() { return model_.mutable_graph(); }

  // A graph input of element type `type`.
  ModelBuilder& input(const std::string& name, int type, const std::vector<int64_t>& dims) {
    std::vector<Dim> d(dims.begin(), dims.end());
    return input_dims(name, type, d);
  }
  ModelBuilder& input_dims(const std::string& name, int type, const std::vector<Dim>& dims) {
    auto* vi = graph()->add_input();
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(type);
    auto* shape = tt->mutable_shape();
    for (const Dim& d : dims) {
      auto* dim = shape->add_dim();
      if (std::holds_alternative<int64_t>(d)) dim->set_dim_value(std::get<int64_t>(d));
      else dim->set_dim_param(std::get<std::string>(d));
    }
    return *this;
  }
  // A graph output (type only; the importer infers the shape).
  ModelBuilder& output(const std::string& name, int type = kFloat) {
    auto* vi = graph()->add_output();
    vi->set_name(name);
    vi->mutable_type()->mutable_tensor_type()->set_elem_type(type);
    return *this;
  }

  ModelBuilder& init_f(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v) {
    auto* t = graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(kFloat);
    for (int64_t d : dims) t->add_dims(d);
    for (float x : v) t->add_float_data(x);
    return *this;
  }
  // fp16 initializer: the values rounded to fp16, their bits carried in int32_data as ONNX stores them.
  ModelBuilder& init_f16(const std::string& name, const std::vector<int64_t>& dims, const std::vector<double>& v) {
    const Tensor h = Tensor::from_doubles({DType::kFp16, Shape(dims.begin(), dims.end())}, v);
    auto* t = graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(kFloat16);
    for (int64_t d : dims) t->add_dims(d);
    const auto* bits = reinterpret_cast<const uint16_t*>(h.bytes());
    for (int64_t i = 0; i < h.num_elements(); ++i) t->add_int32_data(bits[i]);
    return *this;
  }
  ModelBuilder& init_bool(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int32_t>& v) {
    auto* t = graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(kBool);
    for (int64_t d : dims) t->add_dims(d);
    for (int32_t x : v) t->add_int32_data(x);
    return *this;
  }
  ModelBuilder& init_i64(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int64_t>& v) {
    auto* t = graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(kInt64);
    for (int64_t d : dims) t->add_dims(d);
    for (int64_t x : v) t->add_int64_data(x);
    return *this;
  }
  // int8 (or other int32_data-carried types) initializer.
  ModelBuilder& init_i8(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int32_t>& v) {
    auto* t = graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(kInt8);
    for (int64_t d : dims) t->add_dims(d);
    for (int32_t x : v) t->add_int32_data(x);
    return *this;
  }

  // A node; attributes are added with the helpers below on the returned node.
  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name = "",
                        const std::string& domain = "") {
    auto* n = graph()->add_node();
    n->set_op_type(op);
    if (!name.empty()) n->set_name(name);
    if (!domain.empty()) n->set_domain(domain);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return *n;
  }

  std::string bytes() const {
    std::string s;
    EXPECT_TRUE(model_.SerializeToString(&s));
    return s;
  }
  void save(const std::string& path) const {
    std::ofstream f(path, std::ios::binary);
    f << bytes();
  }
  Module import(const OnnxImportOptions& options = {}) const { return import_onnx_bytes(bytes(), "test.onnx", options); }

 private:
  onnx::ModelProto model_;
};

inline void attr_i(onnx::NodeProto& n, const std::string& name, int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
inline void attr_f(onnx::NodeProto& n, const std::string& name, float v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}
inline void attr_s(onnx::NodeProto& n, const std::string& name, const std::string& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}
inline void attr_ints(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

inline void attr_graph(onnx::NodeProto& n, const std::string& name, const onnx::GraphProto& g) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = g;
}

// A sub-graph (If branches, Loop and Scan bodies): inputs, nodes and outputs as ModelBuilder makes
// them. Inputs and outputs may leave their shapes open, as exporters write them.
class SubGraphBuilder {
 public:
  explicit SubGraphBuilder(const std::string& name) { g_.set_name(name); }
  // An input of element type `type`; `dims` empty = no shape given.
  SubGraphBuilder& input(const std::string& name, int type, const std::vector<int64_t>& dims = {}, bool scalar = false) {
    auto* vi = g_.add_input();
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(type);
    if (!dims.empty() || scalar) {
      auto* shape = tt->mutable_shape();
      for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
    }
    return *this;
  }
  SubGraphBuilder& output(const std::string& name, int type = kFloat) {
    auto* vi = g_.add_output();
    vi->set_name(name);
    vi->mutable_type()->mutable_tensor_type()->set_elem_type(type);
    return *this;
  }
  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name = "") {
    auto* n = g_.add_node();
    n->set_op_type(op);
    if (!name.empty()) n->set_name(name);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return *n;
  }
  const onnx::GraphProto& graph() const { return g_; }

 private:
  onnx::GraphProto g_;
};

// ---- running and data ---------------------------------------------------------------------------

// Runs `module` with the runtime (Model::from_module + Context) on `inputs` in input order.
inline std::vector<Tensor> run_module(Module module, const std::vector<Tensor>& inputs) {
  auto model = Model::from_module(std::move(module));
  Context ctx(model);
  return ctx.run(inputs);
}

// Deterministic values in [-1, 1) with a few binary digits, so hand-computed sums stay exact-ish.
inline std::vector<float> ramp(int64_t n, int seed = 1) {
  std::vector<float> v(static_cast<size_t>(n));
  uint32_t s = 2463534242u + static_cast<uint32_t>(seed) * 7919u;
  for (auto& x : v) {
    s ^= s << 13;
    s ^= s >> 17;
    s ^= s << 5;
    x = static_cast<float>(static_cast<int>(s % 64) - 32) / 32.0f;
  }
  return v;
}

inline Tensor f32(const Shape& shape, const std::vector<float>& v) {
  std::vector<double> d(v.begin(), v.end());
  return Tensor::from_doubles({DType::kFp32, shape}, d);
}
inline Tensor i32(const Shape& shape, const std::vector<int64_t>& v) { return Tensor::from_ints({DType::kInt32, shape}, v); }
inline Tensor boolean(const Shape& shape, const std::vector<int64_t>& v) { return Tensor::from_ints({DType::kBool, shape}, v); }

inline std::vector<float> floats_of(const Tensor& t) {
  EXPECT_EQ(t.dtype(), DType::kFp32);
  std::vector<float> v(static_cast<size_t>(t.num_elements()));
  for (int64_t i = 0; i < t.num_elements(); ++i) v[static_cast<size_t>(i)] = t.data<float>()[i];
  return v;
}

// Expects `got` to have `shape` and to match `want` elementwise within `tol`.
inline void expect_near(const Tensor& got, const Shape& shape, const std::vector<float>& want, double tol = 1e-5) {
  ASSERT_EQ(got.dtype(), DType::kFp32);
  ASSERT_EQ(got.shape(), shape) << shape_str(got.shape()) << " vs " << shape_str(shape);
  ASSERT_EQ(static_cast<size_t>(got.num_elements()), want.size());
  int bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const float g = got.data<float>()[i];
    if (!(std::abs(static_cast<double>(g) - want[i]) <= tol)) {
      if (++bad <= 8) ADD_FAILURE() << "element " << i << ": got " << g << ", want " << want[i];
    }
  }
  EXPECT_EQ(bad, 0) << bad << " of " << want.size() << " elements differ";
}

inline void expect_ints(const Tensor& got, const Shape& shape, const std::vector<int64_t>& want) {
  ASSERT_EQ(got.shape(), shape) << shape_str(got.shape()) << " vs " << shape_str(shape);
  EXPECT_EQ(got.to_ints(), want);
}

// Counts the nodes of the entry graph with operator `op`.
inline int count_ops(const Module& m, Op op) {
  int n = 0;
  for (const Node& node : m.main().nodes()) n += node.op == op;
  return n;
}

// ---- hand-written references (NCHW, plain loops) -----------------------------------------------

struct ConvParams {
  int64_t group = 1;
  std::vector<int64_t> pads{0, 0, 0, 0};  // top, left, bottom, right (ONNX order)
  std::vector<int64_t> strides{1, 1}, dilations{1, 1};
};

// Conv: x [N,C,H,W], w [OC,C/g,KH,KW], b [OC] (or empty) -> y [N,OC,OH,OW].
inline std::vector<float> ref_conv(const std::vector<float>& x, const Shape& xs, const std::vector<float>& w,
                                   const Shape& ws, const std::vector<float>& b, const ConvParams& p, Shape* ys) {
  const int64_t n = xs[0], c = xs[1], h = xs[2], wd = xs[3];
  const int64_t oc = ws[0], cg = ws[1], kh = ws[2], kw = ws[3];
  const int64_t ocg = oc / p.group;
  const int64_t oh = (h + p.pads[0] + p.pads[2] - ((kh - 1) * p.dilations[0] + 1)) / p.strides[0] + 1;
  const int64_t ow = (wd + p.pads[1] + p.pads[3] - ((kw - 1) * p.dilations[1] + 1)) / p.strides[1] + 1;
  *ys = {n, oc, oh, ow};
  std::vector<float> y(static_cast<size_t>(n * oc * oh * ow));
  for (int64_t in = 0; in < n; ++in)
    for (int64_t o = 0; o < oc; ++o) {
      const int64_t g = o / ocg;
      for (int64_t yy = 0; yy < oh; ++yy)
        for (int64_t xx = 0; xx < ow; ++xx) {
          double acc = b.empty() ? 0.0 : b[static_cast<size_t>(o)];
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t ky = 0; ky < kh; ++ky)
              for (int64_t kx = 0; kx < kw; ++kx) {
                const int64_t iy = yy * p.strides[0] - p.pads[0] + ky * p.dilations[0];
                const int64_t ix = xx * p.strides[1] - p.pads[1] + kx * p.dilations[1];
                if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                const int64_t cin = g * cg + ci;
                acc += static_cast<double>(x[static_cast<size_t>(((in * c + cin) * h + iy) * wd + ix)]) *
                       w[static_cast<size_t>(((o * cg + ci) * kh + ky) * kw + kx)];
              }
          y[static_cast<size_t>(((in * oc + o) * oh + yy) * ow + xx)] = static_cast<float>(acc);
        }
    }
  (void)c;
  return y;
}

}  // namespace weft::test::onnxb
