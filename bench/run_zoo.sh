#!/usr/bin/env bash
# Runs the model-zoo benchmark (bench/zoo.py) on the GPU machine against a graft build:
#     bash bench/run_zoo.sh BUILD_DIR OUT_DIR [zoo.py arguments...]
# e.g. after `scripts/gpu/run_gpu_suite.sh quickbuild` (which builds into /tmp/graft-build-gpu):
#     bash bench/run_zoo.sh /tmp/graft-build-gpu "$OUT" --models core --skip-done \
#         --previous docs/results/zoo.json --time-budget 540
# OUT_DIR gets zoo.json (the --previous records plus this call's, rewritten after every model, so a
# call cut short by the machine's limit still returns what it measured), zoo.md and zoo.png.
# The ONNX/weights/timing/inductor cache is $ZOO_CACHE (default /tmp/graft_zoo_cache): outside the
# carried tree, so the next call on the still-warm machine reuses it.
set -uo pipefail
if [ $# -lt 2 ]; then
  echo "usage: bash bench/run_zoo.sh BUILD_DIR OUT_DIR [zoo.py arguments...]" >&2
  exit 2
fi
cd "$(dirname "$0")/.."
BUILD=$(cd "$1" 2>/dev/null && pwd) || { echo "error: build directory '$1' does not exist" >&2; exit 2; }
mkdir -p "$2" && OUT=$(cd "$2" && pwd) || { echo "error: cannot create output directory '$2'" >&2; exit 2; }
shift 2
PY=${PYTHON:-python3}

export PYTHONPATH="$PWD/python:$BUILD/python${PYTHONPATH:+:$PYTHONPATH}"
export GRAFT_LIB_DIR="$BUILD/python/graft"
export PYTHONUNBUFFERED=1
# The engine links the protobuf that scripts/gpu/run_gpu_suite.sh unpacks from the carried .debs,
# and possibly pip's cuDNN: the same library path that script sets for its own Python steps.
DEPS=${GRAFT_DEPS:-/tmp/graft-deps}
if [ ! -d "$DEPS/usr/lib/x86_64-linux-gnu" ] && ls .device/debs/*.deb >/dev/null 2>&1; then
  mkdir -p "$DEPS" && for d in .device/debs/*.deb; do dpkg -x "$d" "$DEPS"; done
fi
[ -d "$DEPS/usr/lib/x86_64-linux-gnu" ] && export LD_LIBRARY_PATH="$DEPS/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
CUDNN_DIR=$($PY -c 'import nvidia.cudnn,os;print(list(nvidia.cudnn.__path__)[0])' 2>/dev/null)
[ -n "$CUDNN_DIR" ] && [ -d "$CUDNN_DIR/lib" ] && export LD_LIBRARY_PATH="$CUDNN_DIR/lib:${LD_LIBRARY_PATH:-}"
# The checkout on that machine may have no .git: a snapshot's commit comes from .device/commit.
export GRAFT_COMMIT=${GRAFT_COMMIT:-$(cat .device/commit 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)}

echo "run_zoo: build $BUILD, out $OUT, commit $GRAFT_COMMIT, $($PY -c 'import torch;print("torch", torch.__version__)' 2>&1)"
ls "$GRAFT_LIB_DIR"/_engine*.so >/dev/null 2>&1 || echo "warning: no _engine*.so in $GRAFT_LIB_DIR: every graft row will fail at graft_build"
exec $PY bench/zoo.py --out "$OUT" --cache "${ZOO_CACHE:-/tmp/graft_zoo_cache}" "$@"
