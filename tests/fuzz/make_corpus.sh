#!/usr/bin/env bash
# Generates the seed corpus of every fuzz target (nothing binary is committed for it):
#   - graft's own writers, through build-dir/tests/fuzz/graft_fuzz_corpus (make_corpus.cpp): small
#     models over many ops and every custom op, their plans and plan payloads, timing caches,
#     .npy/.pb tensors of every dtype, serialized attributes;
#   - the ONNX backend tests' models (Debian's libonnx-testdata) and their .pb inputs and outputs,
#     with the plans graft builds from those models;
#   - the regression inputs of tests/data/fuzz_regressions, each into its target's corpus.
# Usage: tests/fuzz/make_corpus.sh BUILD_DIR OUT_DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:?usage: make_corpus.sh BUILD_DIR OUT_DIR}
OUT=${2:?usage: make_corpus.sh BUILD_DIR OUT_DIR}
TESTDATA=${ONNX_TESTDATA:-/usr/share/libonnx-testdata/data}
rm -rf "$OUT"
mkdir -p "$OUT"/{onnx,plan,plan_payload,timing_cache,tensor,attributes}

MODELS=()
if [ -d "$TESTDATA" ]; then
  # Models up to 64 KiB (all but a few large pytorch-converted ones), named by their test.
  while IFS= read -r m; do
    name=$(basename "$(dirname "$m")")
    cp "$m" "$OUT/onnx/$name.onnx"
    MODELS+=("$m")
  done < <(find "$TESTDATA" -name model.onnx -size -64k | sort)
  # Tensor files: the first data set's inputs and outputs of each node test, up to 16 KiB.
  find "$TESTDATA/node" -path '*test_data_set_0/*.pb' -size -16k | sort | while IFS= read -r f; do
    t=$(basename "$(dirname "$(dirname "$f")")")
    cp "$f" "$OUT/tensor/${t}_$(basename "$f")"
  done
else
  echo "make_corpus.sh: $TESTDATA not found (apt-get install libonnx-testdata); generated seeds only" >&2
fi

# Generated seeds, and the plans of the ONNX tests' models.
"$BUILD/tests/fuzz/graft_fuzz_corpus" "$OUT" "${MODELS[@]}"

# Regression inputs seed the target that reads them (tests/data/fuzz_regressions/README.md).
REG=tests/data/fuzz_regressions
for f in "$REG"/*; do
  case "$f" in
    *.onnx) cp "$f" "$OUT/onnx/" ;;
    *.plan) cp "$f" "$OUT/plan/" ;;
    *.payload) cp "$f" "$OUT/plan_payload/" ;;
    *.tcache) cp "$f" "$OUT/timing_cache/" ;;
    *.pb|*.npy) cp "$f" "$OUT/tensor/" ;;
    *.attrs) cp "$f" "$OUT/attributes/" ;;
  esac
done
for d in "$OUT"/*; do echo "  $(basename "$d"): $(find "$d" -type f | wc -l) seeds"; done
