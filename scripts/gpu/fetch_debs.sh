#!/usr/bin/env bash
# Downloads (on the development machine) the Debian packages the GPU machine lacks, into
# .device/debs (git-ignored), so scripts/gpu/run_gpu_suite.sh can unpack them there.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .device/debs && cd .device/debs
apt-get download libprotobuf-dev libprotobuf32 libprotobuf-lite32 libonnx-dev libonnx1 libfmt-dev libfmt9 \
  nlohmann-json3-dev libcli11-dev libgtest-dev googletest zlib1g-dev libonnxifi libonnx-testdata libre2-dev libre2-9 \
  libjpeg-dev libjpeg62-turbo-dev libjpeg62-turbo libpng-dev libpng16-16
