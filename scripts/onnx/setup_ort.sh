#!/usr/bin/env bash
# Installs onnxruntime-node (CPU) into build/ort (or $WEFT_ORT_DIR) for scripts/onnx/ort_run.js.
# Idempotent: does nothing when the pinned version is already there and its CPU binding loads.
#
# --ignore-scripts: the package's install script only downloads GPU (CUDA/TensorRT) binaries and
# fails offline; the CPU binding for linux/x64 ships inside the npm tarball itself.
set -euo pipefail
cd "$(dirname "$0")/../.."
ORT_VERSION="${WEFT_ORT_VERSION:-1.30.0}"
ORT_DIR="${WEFT_ORT_DIR:-build/ort}"

check() {
  # Prints the installed version if the package loads (which loads the native CPU binding).
  (cd "$ORT_DIR" && node -e '
    const ort = require("onnxruntime-node");
    const v = require("onnxruntime-node/package.json").version;
    if (typeof ort.InferenceSession?.create !== "function") throw new Error("no InferenceSession");
    process.stdout.write(v);') 2>/dev/null
}

if [ -d "$ORT_DIR/node_modules/onnxruntime-node" ] && [ "$(check || true)" = "$ORT_VERSION" ]; then
  echo "onnxruntime-node $ORT_VERSION already in $ORT_DIR"
  exit 0
fi

command -v node >/dev/null || { echo "setup_ort.sh: node not found" >&2; exit 1; }
command -v npm >/dev/null || { echo "setup_ort.sh: npm not found" >&2; exit 1; }
mkdir -p "$ORT_DIR"
echo "installing onnxruntime-node@$ORT_VERSION into $ORT_DIR"
npm install --ignore-scripts --no-audit --no-fund --prefix "$ORT_DIR" "onnxruntime-node@$ORT_VERSION"

v="$(check || true)"
if [ "$v" != "$ORT_VERSION" ]; then
  echo "setup_ort.sh: onnxruntime-node did not load from $ORT_DIR (got '$v'); binaries present:" >&2
  find "$ORT_DIR/node_modules/onnxruntime-node/bin" -name '*.node' >&2 || true
  (cd "$ORT_DIR" && node -e 'require("onnxruntime-node")') || true
  exit 1
fi
echo "onnxruntime-node $v installed in $ORT_DIR"
