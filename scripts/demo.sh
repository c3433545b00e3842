#!/usr/bin/env bash
# Sets up, builds and runs Weft's main job on the bundled example model: check it, run it on an
# input and print the output.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
BUILD_DIR="${WEFT_BUILD_DIR:-build}"
WEFT="$BUILD_DIR/weft"
"$WEFT" check examples/tiny_cnn/tiny_cnn.weft
"$WEFT" run examples/tiny_cnn/tiny_cnn.weft --input image=examples/tiny_cnn/image.npy --print
