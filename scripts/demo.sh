#!/usr/bin/env bash
# Sets up, builds and runs Weft's main job on the bundled example model: verify it, compile it to
# a VGF container (SPIR-V graph module + constants), load that once and run it on an input,
# printing the output and the memory plan; then a PyTorch-exported ONNX model, and a CNN with
# custom operators carried as Vulkan shaders.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
BUILD_DIR="${WEFT_BUILD_DIR:-build}"
WEFT="$BUILD_DIR/weft"
"$WEFT" check examples/tiny_cnn/tiny_cnn.weft
"$WEFT" compile examples/tiny_cnn/tiny_cnn.weft -o "$BUILD_DIR/tiny_cnn.vgf"
"$WEFT" run "$BUILD_DIR/tiny_cnn.vgf" --input image=examples/tiny_cnn/image.npy --print --stats

# Weft's main job on a real model: a SqueezeNet 1.1 exported from PyTorch (random weights) as ONNX,
# compiled to a VGF container and run; the top classes are printed.
/usr/bin/python3 scripts/onnx/export_models.py --models squeezenet1_1 --out "$BUILD_DIR/models"
"$WEFT" compile "$BUILD_DIR/models/squeezenet1_1.onnx" -o "$BUILD_DIR/squeezenet1_1.vgf"
"$WEFT" run "$BUILD_DIR/squeezenet1_1.vgf" --input input="$BUILD_DIR/models/squeezenet1_1.input.npy" \
  --output output="$BUILD_DIR/squeezenet1_1.output.npy" --stats
/usr/bin/python3 - "$BUILD_DIR/squeezenet1_1.output.npy" "$BUILD_DIR/models/squeezenet1_1.torch.npy" <<'PY'
import sys, numpy as np
y, ref = np.load(sys.argv[1]), np.load(sys.argv[2])
top = np.argsort(-y[0])[:5]
print("squeezenet1_1 top-5 classes:", top.tolist(), "scores:", np.round(y[0][top], 4).tolist())
print("max |weft - pytorch| = %.2e" % np.abs(y - ref).max())
PY

# A custom operator carried as a Vulkan shader: the CNN of examples/custom_ops/cnn (GridSample and a
# model-specific ChannelGate as GLSL shaders between two convolutions), compiled with its ops file
# into GRAPH and COMPUTE segments and run on the default Vulkan device (`weft devices`).
/usr/bin/python3 examples/custom_ops/make_all.py "$BUILD_DIR/custom-examples" cnn
"$WEFT" devices
"$WEFT" compile "$BUILD_DIR/custom-examples/cnn/cnn.onnx" --custom-ops examples/custom_ops/cnn/ops.json \
  -o "$BUILD_DIR/cnn_custom.vgf"
"$WEFT" run "$BUILD_DIR/cnn_custom.vgf" --input x="$BUILD_DIR/custom-examples/cnn/input.npy" \
  --output y="$BUILD_DIR/cnn_custom.output.npy" --explain
/usr/bin/python3 - "$BUILD_DIR/cnn_custom.output.npy" "$BUILD_DIR/custom-examples/cnn/expected.npy" <<'PY'
import sys, numpy as np
y, ref = np.load(sys.argv[1]), np.load(sys.argv[2])
print("custom-op CNN: max |weft - pytorch| = %.2e" % np.abs(y - ref).max())
PY
