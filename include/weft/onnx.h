// The ONNX frontend: reads an ONNX model (Debian's libonnx protobuf definitions), resolves its
// shapes, folds its constant sub-graphs and lowers every node to TOSA 1.0 operators.
//
// Layout: ONNX's NCHW tensors are carried as NHWC inside the TOSA graph. Convolution weights are
// transposed once at import time, and layout-neutral operators (element-wise, concat, reductions,
// pooling, resize, ...) work on NHWC directly, so a CNN keeps transposes only at its boundaries.
// Graph inputs and outputs keep ONNX's names, shapes and layouts.
//
// Types: ONNX int64 becomes TOSA int32 (values are range-checked where known at import time; the
// runtime converts int64 inputs given by the caller), bool, int8/16/32, float16 and float32 map
// directly; float64, uint8 and other types are reported as unsupported.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "weft/graph.h"
#include "weft/tensor.h"

namespace weft {

struct OnnxImportOptions {
  // Static shapes for inputs whose ONNX shape has symbolic or unknown dimensions (or to override
  // a declared shape with a compatible one), as given by `--shape NAME=1x3x224x224`.
  std::map<std::string, Shape> input_shapes;
  // Verify the lowered module with the TOSA verifier (a failure is an importer bug).
  bool verify = true;
  // Remove TRANSPOSE / RESHAPE pairs that cancel (the permutes lowering puts around custom shader
  // nodes, between adjacent ones). Off only to inspect the explicit layout contract.
  bool cancel_layout_pairs = true;
  // Constant-folding budget, in bytes per folded result. A node whose inputs are all constant is
  // computed at import time only when each of its results fits; past it, a node that TOSA can run
  // (Expand, Tile, ConstantOfShape, element-wise, ...) stays a run-time node, and one that it
  // cannot (Range, a shape computation) is refused with an error naming the node and this
  // option. `weft import|check|run --max-fold-bytes N` sets it.
  int64_t max_folded_bytes = int64_t{256} << 20;
  // Graph inputs bound to values at compile time (`--bind NAME=FILE.npy`): each becomes a constant
  // (an initializer), so that inputs feeding shapes, axes, pads, scales or counts fold, and is no
  // longer an input of the compiled model. The value must have the input's shape (where the model
  // declares one) and values its ONNX element type holds: integers (int64 inputs take any Weft
  // integer tensor, e.g. an <i8 .npy) convert exactly, floats to float inputs. An unknown name is
  // an error listing the graph inputs.
  std::map<std::string, Tensor> bindings;
  // TOSA has no float64. With this set, float64 inputs, outputs, constants and casts are carried
  // as float32 (values rounded to nearest): the model then computes in float32, so its results
  // differ from a float64 run by float32 rounding. Off by default: a float64 model is an error
  // that names this option. The compiled module says so in its notes (weft run --explain).
  // `weft import|check|run|compile --narrow-float64` sets it.
  bool narrow_float64 = false;
};

// Imports `path`. Errors carry the file and, for a node, its name, op type, domain and opset.
Module import_onnx(const std::string& path, const OnnxImportOptions& options = {});
// Imports a serialized ModelProto; `source` names it in errors. External data is resolved
// relative to `base_dir` ("" = not allowed).
Module import_onnx_bytes(std::string_view bytes, const std::string& source, const OnnxImportOptions& options = {},
                         const std::string& base_dir = "");

// The graph inputs (initializers left out) and outputs of an ONNX model as declared: element type
// as Weft carries it, dimensions with -1 where the model gives a symbolic or no size (shape
// empty when the model declares no shape). Errors name the file.
struct OnnxInterface {
  struct Value {
    std::string name;
    DType dtype = DType::kFp32;
    Shape shape;
    bool has_shape = false;
    // The ONNX element type ("float", "uint8", "int64", ...). uint8 and uint16 values travel as
    // the bits of int8 / int16 (dtype); uint32, uint64 and int64 as int32, values up to 2^31 - 1.
    std::string onnx_type;
    bool is_unsigned = false;
    bool is_int64 = false;  // ONNX int64, carried as int32
  };
  std::vector<Value> inputs, outputs;
};
OnnxInterface onnx_interface(const std::string& path);

// The ONNX operators (domain "" / "ai.onnx") the frontend lowers, sorted by name.
std::vector<std::string> onnx_supported_ops();

}  // namespace weft
