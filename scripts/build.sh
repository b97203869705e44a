#!/usr/bin/env bash
# Configures and builds graft (CPU configuration, PyTorch extension and Python bindings included).
# Usage: scripts/build.sh [build-dir] [extra cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}; shift || true
LAUNCHER=()
if command -v ccache >/dev/null; then LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE=/usr/bin/python3 "${LAUNCHER[@]}" "$@"
cmake --build "$BUILD" -j "$(nproc)"
