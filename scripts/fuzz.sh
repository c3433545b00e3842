#!/usr/bin/env bash
# Fuzzes an untrusted-input reader with libFuzzer (clang, ASan+UBSan) for a given time.
#   scripts/fuzz.sh [TARGET=spirv] [SECONDS=600] [extra libFuzzer flags...]
# Targets:
#   spirv  the SPIR-V decoder + validator (fuzz/spirv_fuzz.cpp). Seeds: the .spvasm corpus of
#          tests/spirv/corpus (assembled with the regular build's weft) and the bundled example
#          compiled to SPIR-V.
#   vgf    the VGF container reader and the whole-sequence decoder vgf::to_module (fuzz/vgf_fuzz.cpp).
#          Seeds: the bundled example compiled to VGF, the same file with the old magic, a model with
#          small graph constants, and the custom-operator examples (COMPUTE segments; generated with
#          examples/custom_ops/make_all.py into build/custom-examples when missing).
#   payload  the custom-operator payload parser (fuzz/payload_fuzz.cpp). Seeds: the implementation_attrs
#          of the custom-operator examples (taken from Weft's records in their VGFs) and a few payloads
#          written after the schema.
#   onnx   the ONNX frontend (fuzz/onnx_fuzz.cpp). Seeds: the models of ONNX's node test cases
#          (scripts/onnx/gen_node_tests.py, build/onnx-node-tests) and the bundled tiny CNN's ONNX form.
#   tosa   the TOSA 1.0 file reader and writer (fuzz/tosa_fuzz.cpp). Seeds: the bundled example written
#          as .tosa and every 40th file of the TOSA conformance tests
#          (../shared/tosa-conformance, where present).
#   iospec the IOSpec and target-file YAML readers (fuzz/iospec_fuzz.cpp). Seeds: `weft iospec` of
#          the bundled example and of the specification's A = B + C (plain, with C latched, and padded
#          for a 32-bit target), and that target file.
# Findings are written to build-fuzz/findings/<target>/.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET=spirv
case "${1:-}" in
  spirv|vgf|payload|iospec|onnx|tosa) TARGET="$1"; shift ;;
esac
SECONDS_TO_RUN="${1:-600}"
shift || true
scripts/setup.sh
# clang >= 15: older ones (Debian 12's default clang 14) lack _Float16 on x86-64.
find_clang() {
  for c in clang++-19 clang++-18 clang++-17 clang++-16 clang++-15; do
    if command -v "$c" >/dev/null; then echo "$c"; return; fi
  done
}
FUZZ_CXX="$(find_clang)"
if [ -z "$FUZZ_CXX" ]; then
  SUDO=""; if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get install -y -qq --no-install-recommends clang-16 libclang-rt-16-dev
  FUZZ_CXX=clang++-16
fi
scripts/build.sh > /dev/null
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"
# No oneDNN backend: no target reaches it, and Debian's OpenMP for clang-16 (libomp-16-dev) is not
# among the packages setup.sh installs.
CXX="$FUZZ_CXX" cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEFT_FUZZ=ON \
  -DWEFT_BUILD_TESTS=OFF -DWEFT_BUILD_BENCH=OFF -DWEFT_WITH_ONEDNN=OFF > /dev/null
ninja -C build-fuzz -j "${WEFT_JOBS:-$(nproc)}" "${TARGET}_fuzz"
# The custom-operator examples compiled to VGF into folder $1 (COMPUTE segments with Weft's records).
custom_example_vgfs() {
  local ex=build/custom-examples
  if [ ! -f "$ex/cnn/cnn.onnx" ] || [ ! -f "$ex/image_downsample/downsample.weft" ] ||
     [ ! -f "$ex/grid_sample/grid_sample.weft" ]; then
    /usr/bin/python3 examples/custom_ops/make_all.py "$ex" > /dev/null
  fi
  mkdir -p "$1"
  build/weft compile "$ex/cnn/cnn.onnx" --custom-ops examples/custom_ops/cnn/ops.json -o "$1/cnn.vgf" > /dev/null
  build/weft compile "$ex/image_downsample/downsample.weft" --custom-ops examples/custom_ops/image_downsample/ops.json \
    -o "$1/downsample.vgf" > /dev/null
  build/weft compile "$ex/grid_sample/grid_sample.weft" --custom-ops examples/custom_ops/grid_sample/ops.json \
    -o "$1/grid_sample_nhwc.vgf" > /dev/null
}
SEEDS=build-fuzz/seeds/$TARGET
CORPUS=build-fuzz/corpus/$TARGET
FINDINGS=build-fuzz/findings/$TARGET
mkdir -p "$SEEDS" "$CORPUS" "$FINDINGS"
MAX_LEN=65536
if [ "$TARGET" = spirv ]; then
  for f in tests/spirv/corpus/*/*.spvasm; do
    build/weft spirv as "$f" -o "$SEEDS/$(basename "${f%.spvasm}").spv" 2>/dev/null || true
  done
  build/weft compile examples/tiny_cnn/tiny_cnn.weft --emit spirv -o "$SEEDS/tiny_cnn.spv" > /dev/null
elif [ "$TARGET" = vgf ]; then
  build/weft compile examples/tiny_cnn/tiny_cnn.weft -o "$SEEDS/tiny_cnn.vgf" > /dev/null
  # The same container with the old magic number 0xF0E1D2C3.
  { printf '\xc3\xd2\xe1\xf0'; tail -c +5 "$SEEDS/tiny_cnn.vgf"; } > "$SEEDS/tiny_cnn_old_magic.vgf"
  cat > "$SEEDS/small.weft" <<'WEFT'
graph @main(%x: i32[2,2], %y: f16[3]) -> (%s, %t) {
  %w: i32[2,2] = CONST() {values = [1, 2, 3, 4]}
  %s: i32[2,2] = SUB(%x, %w)
  %k: f16[3] = CONST() {values = [0.5, 1, 2]}
  %t: f16[3] = MAXIMUM(%y, %k) {nan_mode = PROPAGATE}
  return %s, %t
}
WEFT
  build/weft compile "$SEEDS/small.weft" -o "$SEEDS/small.vgf" > /dev/null || true
  rm -f "$SEEDS/small.weft"
  # COMPUTE segments (custom operators), for vgf::to_module.
  custom_example_vgfs "$SEEDS"
  MAX_LEN=32768
elif [ "$TARGET" = payload ]; then
  # The payloads Weft writes: the implementation_attrs of each custom-operator example's record.
  custom_example_vgfs build-fuzz/custom-vgf
  python3 - build-fuzz/custom-vgf/*.vgf "$SEEDS" <<'PY'
import json, os, sys
*files, out = sys.argv[1:]
for f in files:
    text, at, n = open(f, "rb").read().decode("latin-1"), 0, 0
    while (at := text.find('{"weft_custom_op"', at)) >= 0:
        record, at = json.JSONDecoder().raw_decode(text, at)
        name = os.path.basename(f)[:-4] + "_" + str(n) + ".json"
        open(os.path.join(out, name), "wb").write(record["implementation_attrs"].encode("latin-1"))
        n += 1
PY
  # Written after the schema: GLSL source with every resource property, unknown keys, push constants.
  cat > "$SEEDS/glsl.json" <<'JSON'
{"entry_point": "main", "workgroup_sizes": [8, 8, 1], "shader_language": "GLSL",
 "shader_code": "#version 450\nlayout(local_size_x = 8, local_size_y = 8) in;\nvoid main() {}\n",
 "push_constants": "scale: 4, bias: 4", "weft_push_constant_data": "AACAPwAAAAA=", "weft_dispatch": [4, 4, 1],
 "input_0_vkformat": "VK_FORMAT_R32G32B32A32_SFLOAT", "input_0_vkdescriptortype": "VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER",
 "input_0_type": "Image", "input_0_binding": 0, "input_0_descriptorset": 0, "input_0_weft_filter": "nearest",
 "input_0_weft_address_mode": "repeat", "input_1_vkformat": "VK_FORMAT_R16_SINT", "input_1_binding": 1,
 "output_0_vkformat": "VK_FORMAT_R32_SFLOAT", "output_0_vkdescriptortype": "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER",
 "output_0_type": "Buffer", "output_0_binding": 2, "output_0_descriptorset": 1,
 "vendor_hint": {"tile": [16, 16], "fast": true, "note": null}, "output_0_vendor_flags": [1.5, -2, "x"]}
JSON
  printf '%s' '{"entry_point":"CSMain","workgroup_sizes":[64,1,1],"shader_language":"HLSL","shader_code":"[numthreads(64,1,1)] void CSMain() {}"}' > "$SEEDS/hlsl.json"
  printf '%s' '{"entry_point":"main","workgroup_sizes":[1,1,1],"shader_language":"","push_constants":""}' > "$SEEDS/minimal.json"
  MAX_LEN=16384
elif [ "$TARGET" = tosa ]; then
  build/weft compile examples/tiny_cnn/tiny_cnn.weft -o "$SEEDS/tiny_cnn.tosa" > /dev/null
  if [ -d ../shared/tosa-conformance/operators ]; then
    find ../shared/tosa-conformance/operators -name test.tosa | sort | awk 'NR % 40 == 1' | while read -r f; do
      cp "$f" "$SEEDS/$(basename "$(dirname "$f")").tosa"
    done
  fi
  MAX_LEN=65536
elif [ "$TARGET" = onnx ]; then
  /usr/bin/python3 scripts/onnx/gen_node_tests.py > /dev/null
  for d in build/onnx-node-tests/*/test_*; do
    [ -f "$d/model.onnx" ] && cp "$d/model.onnx" "$SEEDS/$(basename "$(dirname "$d")")_$(basename "$d").onnx"
  done
  MAX_LEN=65536
else
  build/weft iospec examples/tiny_cnn/tiny_cnn.weft -o "$SEEDS/tiny_cnn.iospec.yaml" > /dev/null
  # The specification's example: A = B + latched C over 60 16-bit elements.
  cat > "$SEEDS/add.weft" <<'WEFT'
graph @main(%B: f16[60], %C: f16[60]) -> (%A) {
  %A: f16[60] = ADD(%B, %C)
  return %A
}
WEFT
  build/weft iospec "$SEEDS/add.weft" -o "$SEEDS/add.iospec.yaml" > /dev/null
  build/weft iospec "$SEEDS/add.weft" --latched C -o "$SEEDS/add_latched.iospec.yaml" > /dev/null
  printf 'word_bits: 32\ngranule_words: 2\ncore_id: 1\n' > "$SEEDS/target.yaml"
  build/weft iospec "$SEEDS/add.weft" --target "$SEEDS/target.yaml" -o "$SEEDS/add_target.iospec.yaml" > /dev/null
  rm -f "$SEEDS/add.weft"
  MAX_LEN=16384
fi
"build-fuzz/fuzz/${TARGET}_fuzz" "$CORPUS" "$SEEDS" -max_total_time="$SECONDS_TO_RUN" -max_len="$MAX_LEN" \
  -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$FINDINGS/" -print_final_stats=1 "$@"
