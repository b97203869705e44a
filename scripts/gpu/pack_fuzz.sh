#!/usr/bin/env bash
# Packs one fuzz target of a clang libFuzzer build (scripts/test.sh's build-fuzz) for the GPU machine's
# `fuzz` step (run_gpu_suite.sh), which has 16 CPU cores and no clang: the target, its ASan libgraft
# (debug sections stripped, symbols kept for the reports), a corpus to start from, the target's seeds
# and dictionary, into .device/fuzz.tar.xz (git-ignored; carry .device).
# Usage: scripts/gpu/pack_fuzz.sh [BUILD_DIR=build-fuzz] [TARGET=onnx_build] [CORPUS_DIR]
#   CORPUS_DIR: a grown corpus (e.g. BUILD_DIR/fuzz-run/corpus/TARGET, or one a previous `fuzz` step
#   brought back); the seeds are generated afresh by tests/fuzz/make_corpus.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build-fuzz}
TARGET=${2:-onnx_build}
CORPUS=${3:-}
source tests/fuzz/fuzz_settings.sh
[ -x "$BUILD/tests/fuzz/fuzz_$TARGET" ] || { echo "pack_fuzz.sh: $BUILD/tests/fuzz/fuzz_$TARGET not built" >&2; exit 2; }
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
bash tests/fuzz/make_corpus.sh "$BUILD" "$stage/all-seeds" > /dev/null
mkdir -p "$stage/pack/corpus"
mv "$stage/all-seeds/${FUZZ_SEEDS[$TARGET]}" "$stage/pack/seeds"
[ -n "$CORPUS" ] && cp -r "$CORPUS"/. "$stage/pack/corpus/"
cp "$BUILD/tests/fuzz/fuzz_$TARGET" "$stage/pack/fuzz_target"
objcopy --strip-debug "$BUILD/src/libgraft.so.0" "$stage/pack/libgraft.so.0"
cp "tests/fuzz/dict/${FUZZ_DICT[$TARGET]}.dict" "$stage/pack/target.dict"
echo "$TARGET $(git rev-parse --short HEAD)" > "$stage/pack/what"
mkdir -p .device
tar -cJf .device/fuzz.tar.xz.tmp -C "$stage/pack" . && mv .device/fuzz.tar.xz.tmp .device/fuzz.tar.xz
echo "pack_fuzz.sh: .device/fuzz.tar.xz ($(du -h .device/fuzz.tar.xz | cut -f1)): fuzz_$TARGET, $(ls "$stage/pack/corpus" | wc -l) corpus units, $(ls "$stage/pack/seeds" | wc -l) seeds"
