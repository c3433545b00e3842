// ONNX nodes of registered custom operators -> tosa.CUSTOM nodes carrying a Vulkan shader payload.
//
// The shader's resource contract is explicit: an input the registration declares "NHWC" is a 4-D
// feature tensor the shader reads channels-last, so the ONNX (NCHW) value is permuted NCHW->NHWC in
// front of the node, and an NHWC output is permuted back NHWC->NCHW after it. Pairs of permutes that
// cancel (between adjacent shader nodes, or next to NHWC convolutions) are removed afterwards by
// compiler::cancel_layout_pairs; the node itself always sees the contract's layout.
#include <onnx/onnx_pb.h>

#include "frontends/onnx/importer.h"

namespace weft::onnxfe::custom_lowering {

namespace {

const std::vector<int64_t> kNchwToNhwc{0, 2, 3, 1};
const std::vector<int64_t> kNhwcToNchw{0, 3, 1, 2};

// The node's attributes as the expression language sees them (integers, floats) and the string
// attributes the registration may constrain.
custom::ExprEnv attributes_of(const onnx::NodeProto& n) {
  custom::ExprEnv env;
  for (const onnx::AttributeProto& a : n.attribute()) {
    switch (a.type()) {
      case onnx::AttributeProto::INT:
        env.attrs[a.name()] = static_cast<double>(a.i());
        env.attr_is_float[a.name()] = false;
        break;
      case onnx::AttributeProto::FLOAT:
        env.attrs[a.name()] = a.f();
        env.attr_is_float[a.name()] = true;
        break;
      case onnx::AttributeProto::STRING:
        env.string_attrs[a.name()] = a.s();
        break;
      default:
        break;
    }
  }
  return env;
}

}  // namespace

void lower(Importer& imp, const onnx::NodeProto& n, const custom::OpSpec& spec) {
  const int count = imp.num_inputs();
  if (count != static_cast<int>(spec.inputs.size()))
    imp.fail("custom operator " + spec.domain_name + "::" + spec.operator_name + " is registered with " +
                 std::to_string(spec.inputs.size()) + " inputs, but this node has " + std::to_string(count),
             ErrorCode::kInvalidArgument);
  std::vector<TVal> inputs;
  std::vector<TensorType> types;
  for (int i = 0; i < count; ++i) {
    const custom::ResourceSpec& r = spec.inputs[static_cast<size_t>(i)];
    const OVal& o = imp.in(i);
    TVal v = imp.plain(o);  // ONNX's layout
    if (r.layout == "NHWC") {
      if (v.rank() != 4)
        imp.fail("input " + std::to_string(i) + " is declared NHWC by the custom operator's registration but has rank " +
                     std::to_string(v.rank()) + " (NHWC resources are 4-D feature tensors)",
                 ErrorCode::kInvalidArgument);
      v = imp.transpose(v, kNchwToNhwc);
    }
    types.push_back(v.type);
    inputs.push_back(std::move(v));
  }
  custom::ExprEnv env = attributes_of(n);
  Location where{.file = imp.source(), .node = n.name().empty() ? (n.output_size() ? n.output(0) : "") : n.name()};
  custom::Lowered lowered = custom::lower(spec, types, env, where);
  if (static_cast<int>(lowered.outputs.size()) < imp.num_outputs())
    imp.fail("custom operator " + spec.domain_name + "::" + spec.operator_name + " is registered with " +
                 std::to_string(lowered.outputs.size()) + " outputs, but this node has " + std::to_string(imp.num_outputs()),
             ErrorCode::kInvalidArgument);
  std::vector<TVal> outs = imp.emit_typed(Op::CUSTOM, std::move(inputs),
                                          {{"operator_name", spec.operator_name},
                                           {"domain_name", spec.domain_name},
                                           {"implementation_attrs", custom::write_payload(lowered.payload)}},
                                          lowered.outputs);
  for (size_t j = 0; j < outs.size(); ++j) {
    TVal v = outs[j];
    if (spec.outputs[j].layout == "NHWC") {
      if (v.rank() != 4)
        imp.fail("output " + std::to_string(j) + " is declared NHWC but its shape has rank " + std::to_string(v.rank()),
                 ErrorCode::kInvalidArgument);
      v = imp.transpose(v, kNhwcToNchw);
    }
    imp.set_out(static_cast<int>(j), std::move(v));
  }
}

}  // namespace weft::onnxfe::custom_lowering
