#!/usr/bin/env bash
# Configures and builds graft (CPU configuration, PyTorch extension and Python bindings included),
# with the CUDA backend wherever nvcc is found (GRAFT_CUDA=0 leaves it out; no GPU is needed to
# build it, and without one the engine runs on the CPU). GRAFT_WERROR=1 makes warnings errors
# (CI sets it: .ci/run).
# Usage: scripts/build.sh [build-dir] [extra cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}; shift || true
ARGS=()
if command -v ccache >/dev/null; then ARGS+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache); fi
NVCC=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)
if [ -n "$NVCC" ] && [ "${GRAFT_CUDA:-1}" != 0 ]; then
  ARGS+=(-DGRAFT_ENABLE_CUDA=ON -DCMAKE_CUDA_COMPILER="$NVCC")
else
  ARGS+=(-DGRAFT_ENABLE_CUDA=OFF)
fi
[ "${GRAFT_WERROR:-0}" = 1 ] && ARGS+=(-DGRAFT_WERROR=ON)
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE=/usr/bin/python3 "${ARGS[@]}" "$@"
cmake --build "$BUILD" -j "$(nproc)"
