#!/usr/bin/env bash
# Puts the TensorRT headers the GPU suite's `trt` step builds the adapter against (8.6, 10.16, 11.1)
# into .device/trt/<version>/include, taken from a git clone of github.com/NVIDIA/TensorRT (its
# include/ folder at the newest commit of each version). They are never committed (.device is
# git-ignored); a device call carries them with carry [".device"].
#   bash scripts/gpu/trt_headers.sh /path/to/TensorRT.git [versions...]
set -euo pipefail
repo=${1:?usage: trt_headers.sh <TensorRT git dir> [versions, default: 8.6 10.16 11.1]}
shift
versions=${*:-"8.6 10.16 11.1"}
out=$(cd "$(dirname "$0")/../.." && pwd)/.device/trt
# The version a commit's include/NvInferVersion.h declares, as major.minor (TensorRT 10 and later
# name it TRT_*_ENTERPRISE; 8.x NV_TENSORRT_*).
version_at() {
  git -C "$repo" show "$1:include/NvInferVersion.h" 2>/dev/null |
    awk '/#define (TRT_MAJOR_ENTERPRISE|NV_TENSORRT_MAJOR) [0-9]/ {ma=$3} /#define (TRT_MINOR_ENTERPRISE|NV_TENSORRT_MINOR) [0-9]/ {mi=$3}
         END {if (ma != "" && mi != "") print ma "." mi}'
}
for v in $versions; do
  found=""
  # Newest first: every commit that touched the version header, on any branch or tag.
  for c in $(git -C "$repo" log --all --format=%H -- include/NvInferVersion.h); do
    if [ "$(version_at "$c")" = "$v" ]; then found=$c; break; fi
  done
  if [ -z "$found" ]; then echo "trt_headers: no commit of $repo declares TensorRT $v" >&2; exit 1; fi
  rm -rf "$out/$v.tmp" && mkdir -p "$out/$v.tmp"
  git -C "$repo" archive "$found" include | tar -x -C "$out/$v.tmp"
  rm -rf "${out:?}/${v:?}" && mv "$out/$v.tmp" "$out/$v"
  echo "TensorRT $v headers: $out/$v/include (commit ${found:0:10})"
done
