#!/usr/bin/env bash
# Runs graft's benchmark suite on the GPU machine; called by scripts/gpu/run_gpu_suite.sh as
#     bash bench/run_benchmarks.sh build-gpu "$OUT"
# Writes into OUT_DIR: bench_models.{json,md,png} and, when bench/ms_deform_attn_bench.py exists,
# msda.{json,md} (its --out is OUT_DIR/msda; its results.* are moved up as msda.*). Worker logs, ONNX files and plans stay in a temp dir.
#
# Time: about 7.5 minutes at most on an H200 (bench_models has a 400 s budget; what does not fit,
# typically the tail of the torch.compile phase, is recorded as skipped/timeout, never hung on).
# Environment overrides: PYTHON (default python3), BENCH_BUDGET_S, BENCH_ITERS, BENCH_WARMUP, BENCH_BATCHES,
# BENCH_MODELS (space-separated), BENCH_EXTRA_ARGS (e.g. --max-autotune), MSDA_TIMEOUT_S.
set -uo pipefail

if [ $# -ne 2 ]; then
  echo "usage: bash bench/run_benchmarks.sh BUILD_DIR OUT_DIR" >&2
  exit 2
fi
cd "$(dirname "$0")/.."
BUILD=$(cd "$1" 2>/dev/null && pwd) || { echo "error: build directory '$1' does not exist" >&2; exit 2; }
mkdir -p "$2" && OUT=$(cd "$2" && pwd) || { echo "error: cannot create output directory '$2'" >&2; exit 2; }
PY=${PYTHON:-python3}

# The same environment as tests/python and the GPU suite's python step.
export PYTHONPATH="$PWD/python:$BUILD/python${PYTHONPATH:+:$PYTHONPATH}"
export GRAFT_LIB_DIR="$BUILD/python/graft"
[ -x "$BUILD/bin/graft" ] && export GRAFT_CLI="$BUILD/bin/graft"
export PYTHONUNBUFFERED=1

if ! $PY -c 'import torch' 2>/dev/null; then
  echo "error: $PY cannot import torch (set PYTHON=/path/to/python with torch)" >&2
  exit 1
fi
echo "run_benchmarks: build $BUILD, out $OUT, python $($PY -c 'import sys;print(sys.executable, sys.version.split()[0])')"
ls "$GRAFT_LIB_DIR" 2>/dev/null | sed 's/^/  built: /' || echo "warning: $GRAFT_LIB_DIR is missing: graft entries will fail"
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader 2>/dev/null | sed 's/^/  gpu: /'

COMMIT=${GRAFT_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || cat .device/commit 2>/dev/null || echo unknown)}
rc_models=0
start=$(date +%s)
# shellcheck disable=SC2086
$PY bench/bench_models.py --out "$OUT" --commit "$COMMIT" \
  ${BENCH_MODELS:+--models $BENCH_MODELS} \
  --batches ${BENCH_BATCHES:-1 32} --dtypes fp16 fp32 \
  --iters "${BENCH_ITERS:-100}" --warmup "${BENCH_WARMUP:-20}" \
  --budget-s "${BENCH_BUDGET_S:-400}" \
  --eager-timeout 90 --graft-timeout 150 --compile-timeout 120 --max-seconds-per-config 8 \
  ${BENCH_EXTRA_ARGS:-} || rc_models=$?
echo "run_benchmarks: bench_models.py rc=$rc_models (0: all measured, 3: some entries failed/skipped, see bench_models.md) in $(( $(date +%s) - start ))s"

rc_msda=0
if [ -f bench/ms_deform_attn_bench.py ]; then
  start=$(date +%s)
  timeout -k 10 "${MSDA_TIMEOUT_S:-60}" $PY bench/ms_deform_attn_bench.py --out "$OUT/msda" || rc_msda=$?
  # Bring its results up to OUT_DIR as msda.* so few files come back from the machine.
  for f in "$OUT"/msda/*; do
    [ -f "$f" ] || continue
    base=$(basename "$f")
    case "$base" in
      results.*) dest="$OUT/msda.${base#results.}" ;;   # its results.{json,md} -> msda.{json,md}
      msda*) dest="$OUT/$base" ;;
      *) dest="$OUT/msda_$base" ;;
    esac
    mv -f "$f" "$dest"
  done
  rmdir "$OUT/msda" 2>/dev/null
  echo "run_benchmarks: ms_deform_attn_bench.py rc=$rc_msda in $(( $(date +%s) - start ))s"
else
  echo "run_benchmarks: bench/ms_deform_attn_bench.py not present: skipped"
fi

# Non-zero when anything did not run cleanly; the results are written in every case.
if [ "$rc_models" -ne 0 ]; then exit "$rc_models"; fi
exit "$rc_msda"
