#!/usr/bin/env bash
# One command on a fresh Debian 12 machine: install dependencies, build, and run the main job — the
# seed walkthrough (a PyTorch model with a custom layer, trained one step, exported to ONNX, built
# into a graft engine, run at batch 1 and 7, checked against PyTorch).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/build.sh build
bash scripts/run_main_job.sh build
