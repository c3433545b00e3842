// The reference interpreter's kernels as a backend: every TOSA operator, one node at a time, with
// the exact semantics of the TOSA 1.0 pseudocode. It is the fallback of every partition.
#include "backends/backend.h"
#include "compiler/strided_view.h"

namespace weft::ref {
// Defined in custom_registry.cpp.
std::optional<CustomKernel> find_custom_kernel(const std::string& domain_name, const std::string& operator_name);
}  // namespace weft::ref

namespace weft::backend {
namespace {

class RefKernel final : public Kernel {
 public:
  RefKernel(const Graph& g, int node)
      : g_(g),
        node_(node),
        fn_(ref::kernel_for(g.node(node).op)),
        in_place_(ref::runs_in_place(g.node(node).op)),
        zeroed_(!ref::writes_every_output(g.node(node).op)) {
    // A SLICE that is one contiguous run of its input is a view of the input's storage (no copy):
    // an unrolled LSTM's gates split out of one vector, a step's slice of the input projections.
    // Only where elements take whole bytes (not packed int4).
    if (auto off = compiler::contiguous_slice_offset(g, g.node(node))) {
      const TensorType& ot = g.value(g.node(node).outputs[0]).type;
      if (ot.byte_size() == static_cast<size_t>(ot.num_elements()) * storage_size(ot.dtype))
        slice_bytes_ = static_cast<int64_t>(static_cast<size_t>(*off) * storage_size(ot.dtype));
    }
  }
  // DenseNet-121 at 2 threads zeroed its 58 CONCAT outputs before copying into them: 15.3 -> 14.9 ms.
  bool needs_zeroed_outputs() const override { return zeroed_; }
  bool in_place_ok() const override { return in_place_; }
  bool forwards_buffer() const override { return slice_bytes_ >= 0 || ref::forwards_buffer(g_.node(node_).op); }
  void execute(ExecArgs& a) const override {
    if (slice_bytes_ >= 0) {
      const TensorType& ot = g_.value(g_.node(node_).outputs[0]).type;
      a.out[0] = Tensor(ot, a.in[0]->buffer().slice(static_cast<size_t>(slice_bytes_), ot.byte_size()));
      return;
    }
    ref::KernelArgs args{g_, g_.node(node_), node_, a.in, a.out, a.ctx};
    fn_(args);
  }

 private:
  const Graph& g_;
  int node_;
  ref::KernelFn fn_;
  bool in_place_ = false;
  bool zeroed_ = true;
  int64_t slice_bytes_ = -1;  // >= 0: a SLICE forwarded as a view at this byte offset of its input
};

class ReferenceBackend final : public Backend {
 public:
  std::string_view name() const override { return "reference"; }
  std::string_view description() const override {
    return "Weft's reference kernels: every TOSA 1.0 operator and type, exact pseudocode semantics";
  }
  bool runs_row(const OpDef&, const TypeSupport&) const override { return true; }
  Support supports(const Module&, const Graph& g, const Composite& c) const override {
    if (!c.single()) return Support::no("runs single operators, not fused groups");
    const Node& n = g.node(c.anchor);
    if (n.op == Op::CUSTOM && !ref::find_custom_kernel(n.attr_str("domain_name"), n.attr_str("operator_name")))
      return Support::no("no CPU implementation of custom operator " + n.attr_str("domain_name") +
                         "::" + n.attr_str("operator_name") + " is registered (weft::register_custom_kernel)");
    return Support::yes();
  }
  std::unique_ptr<Kernel> prepare(const Module&, const Graph& g, const Composite& c,
                                  const PrepareOptions&) const override {
    return std::make_unique<RefKernel>(g, c.anchor);
  }
};

}  // namespace

const Backend& reference_backend() {
  static const ReferenceBackend b;
  return b;
}

}  // namespace weft::backend
