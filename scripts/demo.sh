#!/usr/bin/env bash
# Sets up, builds and runs Weft's main job on the bundled example model: verify it, compile it to
# a VGF container (SPIR-V graph module + constants), load that once and run it on an input,
# printing the output and the memory plan.
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
