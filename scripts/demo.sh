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
