#!/usr/bin/env bash
# Per-layer profile of graft's CUDA engines for the benchmark models: exports each model to ONNX
# (dynamic batch), builds an engine per batch size and precision with the `graft` CLI and prints
# `graft run --profile`. Used to see where the time goes; bench_models.py is the benchmark.
#
# Usage: bash bench/profile_models.sh BUILD_DIR OUT_DIR [models...]   (default: resnet50 vit_b_16 mobilenet_v3_large)
# Environment: PROFILE_BATCHES (default "1 32"), PROFILE_PRECISIONS (default "fp16").
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: bash bench/profile_models.sh BUILD_DIR OUT_DIR [models...]" >&2; exit 2; }
cd "$(dirname "$0")/.."
BUILD=$(cd "$1" && pwd) || exit 2
OUT=$2; shift 2
mkdir -p "$OUT"
MODELS=${*:-resnet50 vit_b_16 mobilenet_v3_large}
export PYTHONPATH="$PWD/python:$PWD/bench:$BUILD/python${PYTHONPATH:+:$PYTHONPATH}" GRAFT_LIB_DIR="$BUILD/python/graft"
WORK=$(mktemp -d)
rc=0
for m in $MODELS; do
  python3 - "$m" "$WORK/$m.onnx" <<'PY' || { echo "export of $m failed"; rc=1; continue; }
import sys, torch, graft, models
spec = models.get(sys.argv[1])
with open(sys.argv[2] + ".dims", "w") as f:  # the input's dims after the batch, as the CLI writes them
    f.write("x".join(str(d) for d in spec.input(1).shape[1:]))
errors = []
for exporter in ("torchscript", "dynamo"):  # as bench_models.py: TorchScript first, then dynamo
    try:
        with torch.no_grad():
            graft.export(spec.build(), spec.input(2), sys.argv[2], exporter=exporter,
                         input_names=["input"], output_names=["output"])
        print(f"exported {sys.argv[1]} with the {exporter} exporter")
        break
    except Exception as e:  # noqa: BLE001
        errors.append(f"{exporter}: {type(e).__name__}: {str(e)[:300]}")
else:
    sys.exit("; ".join(errors))
PY
  for b in ${PROFILE_BATCHES:-1 32}; do
    for p in ${PROFILE_PRECISIONS:-fp16}; do
      shape="input:${b}x$(cat "$WORK/$m.onnx.dims")"
      flag=(); [ "$p" = fp16 ] && flag=(--fp16)
      log="$OUT/profile_${m}_b${b}_${p}.txt"
      { "$BUILD/bin/graft" build "$WORK/$m.onnx" -o "$WORK/$m.plan" --device cuda --shapes "$shape" "${flag[@]}" &&
        "$BUILD/bin/graft" run "$WORK/$m.plan" --device cuda --shapes "$shape" --iterations 100 --warmup 20 --profile
      } > "$log" 2>&1 || rc=1
      echo "== $m b$b $p: $(grep -iE 'median|mean' "$log" | head -2 | tr '\n' ' ')"
    done
  done
done
rm -rf "$WORK"
exit $rc
