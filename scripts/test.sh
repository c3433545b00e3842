#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite (the command CI runs).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh "$@"
BUILD_DIR="${WEFT_BUILD_DIR:-build}"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "${WEFT_JOBS:-$(nproc)}"
