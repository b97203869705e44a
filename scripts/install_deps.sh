#!/usr/bin/env bash
# Installs graft's build and test dependencies from Debian 12's archive (run as root or with sudo).
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends \
  build-essential cmake ninja-build pkg-config ccache git \
  clang libclang-rt-14-dev llvm \
  protobuf-compiler libprotobuf-dev libonnx-dev libonnx-testdata \
  libcli11-dev nlohmann-json3-dev libfmt-dev zlib1g-dev libre2-dev libjpeg-dev libpng-dev libtiff-dev libwebp-dev libopenjp2-7-dev \
  libgtest-dev libgmock-dev libbenchmark-dev \
  pybind11-dev python3-dev python3-numpy python3-pytest python3-onnx python3-torch libtorch-dev \
  python3-venv python3-pip python3-setuptools python3-wheel
