#!/usr/bin/env bash
# The main job: the seed walkthrough on the CPU with Debian's torch.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
export GRAFT_LIB_DIR="$PWD/$BUILD/python/graft"
export PYTHONPATH="$PWD/python:$PWD/$BUILD/python${PYTHONPATH:+:$PYTHONPATH}"
/usr/bin/python3 examples/seed_walkthrough/walkthrough.py --device cpu --out "$BUILD/seed_walkthrough"
