#!/usr/bin/env bash
# Installs every Debian 12 package Weft's build, tests and benchmarks need. Idempotent: packages
# already installed are left alone and the package lists are only refreshed when something is missing.
set -euo pipefail

PACKAGES=(
  build-essential g++ cmake ninja-build ccache pkg-config git
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev libyaml-cpp-dev
  flatbuffers-compiler libflatbuffers-dev
  libonnx-dev libprotobuf-dev protobuf-compiler
  libdnnl-dev
  libvulkan-dev mesa-vulkan-drivers glslc libshaderc-dev glslang-dev spirv-tools vulkan-tools
  python3 python3-numpy python3-onnx python3-torch python3-torchvision
  python3-dev pybind11-dev python3-pytest
)
# Node.js runs ONNX Runtime (npm onnxruntime-node) for the model comparisons; any node >= 18 will do.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then PACKAGES+=(nodejs npm); fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present"
fi
