#!/usr/bin/env bash
# Configures and builds Weft with CMake + Ninja (+ ccache) into build/ (or $WEFT_BUILD_DIR).
# Extra arguments are passed to CMake, e.g. scripts/build.sh -DWEFT_SANITIZE=ON
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${WEFT_BUILD_DIR:-build}"
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="${WEFT_BUILD_TYPE:-Release}" "$@" > /dev/null
ninja -C "$BUILD_DIR" -j "${WEFT_JOBS:-$(nproc)}"
