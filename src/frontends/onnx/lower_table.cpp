// The dispatch table of the ONNX frontend, generated from WEFT_ONNX_OPS (lower.h).
#include "frontends/onnx/importer.h"
#include "frontends/onnx/lower.h"

namespace weft::onnxfe {

const std::vector<OpRule>& op_rules() {
#define WEFT_RULE(NAME) OpRule{#NAME, &lower_##NAME},
  static const std::vector<OpRule> rules = {WEFT_ONNX_OPS(WEFT_RULE)};
#undef WEFT_RULE
  return rules;
}

}  // namespace weft::onnxfe
