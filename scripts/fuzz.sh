#!/usr/bin/env bash
# Fuzzes an untrusted-input reader with libFuzzer (clang, ASan+UBSan) for a given time.
#   scripts/fuzz.sh [TARGET=spirv] [SECONDS=600] [extra libFuzzer flags...]
# Targets:
#   spirv  the SPIR-V decoder + validator (fuzz/spirv_fuzz.cpp). Seeds: the .spvasm corpus of
#          tests/spirv/corpus (assembled with the regular build's weft) and the bundled example
#          compiled to SPIR-V.
#   vgf    the VGF container reader (fuzz/vgf_fuzz.cpp). Seeds: the bundled example compiled to
#          VGF, the same file with the old magic, and a model with small graph constants.
# Findings are written to build-fuzz/findings/<target>/.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET=spirv
case "${1:-}" in
  spirv|vgf) TARGET="$1"; shift ;;
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
CXX="$FUZZ_CXX" cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEFT_FUZZ=ON \
  -DWEFT_BUILD_TESTS=OFF -DWEFT_BUILD_BENCH=OFF > /dev/null
ninja -C build-fuzz -j "${WEFT_JOBS:-$(nproc)}" "${TARGET}_fuzz"
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
else
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
  MAX_LEN=16384
fi
"build-fuzz/fuzz/${TARGET}_fuzz" "$CORPUS" "$SEEDS" -max_total_time="$SECONDS_TO_RUN" -max_len="$MAX_LEN" \
  -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$FINDINGS/" -print_final_stats=1 "$@"
