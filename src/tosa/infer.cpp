// PENDING: placeholder, replaced by per-operator shape and type inference.
#include "weft/verify.h"

namespace weft {
std::vector<TensorType> infer_output_types(const Graph&, const Node& node, const Module*) {
  throw Error(ErrorCode::kInternal, std::string("shape inference pending for ") + op_name(node.op));
}
}  // namespace weft
