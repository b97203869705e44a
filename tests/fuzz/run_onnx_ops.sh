#!/usr/bin/env bash
# Fuzzes the ONNX import/build/run path of chosen ops: fuzz_onnx_build seeded only with the ONNX
# backend suite's models (Debian's libonnx-testdata) whose test names match a regular expression, so
# the mutations stay on those ops' kernels and attributes. Fails on any finding, like run_fuzzers.sh.
# Usage: tests/fuzz/run_onnx_ops.sh BUILD_DIR REGEX [SECONDS=300] [WORK_DIR=BUILD_DIR/fuzz-ops]
#   e.g. tests/fuzz/run_onnx_ops.sh build-fuzz 'gridsample|roialign|nonmaxsuppression' 600
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=$(cd "${1:?usage: run_onnx_ops.sh BUILD_DIR REGEX [SECONDS] [WORK_DIR]}" && pwd)
REGEX=${2:?a regular expression over the test names of the suite}
SECS=${3:-300}
WORK=${4:-$BUILD/fuzz-ops}
rm -rf "$WORK" && mkdir -p "$WORK/seeds" "$WORK/corpus" "$WORK/artifacts"
n=0
while read -r m; do
  cp "$m" "$WORK/seeds/$n.onnx"
  n=$((n + 1))
done < <(dpkg -L libonnx-testdata | grep '/model.onnx$' | grep -iE "$REGEX" || true)
[ "$n" -gt 0 ] || { echo "run_onnx_ops.sh: no suite model matches '$REGEX'" >&2; exit 2; }
echo "run_onnx_ops.sh: $n seed models"
source tests/fuzz/fuzz_settings.sh
set +e
"$BUILD/tests/fuzz/fuzz_onnx_build" -max_total_time="$SECS" "${FUZZ_LIMITS[@]}" \
  -artifact_prefix="$WORK/artifacts/" -dict=tests/fuzz/dict/onnx_build.dict "$WORK/corpus" "$WORK/seeds" \
  > "$WORK/log" 2>&1
rc=$?
set -e
grep -E "stat::number_of_executed_units|stat::average_exec_per_sec" "$WORK/log" || true
if [ $rc -ne 0 ]; then
  echo "fuzz_onnx_build: FINDING (exit $rc); input in $WORK/artifacts/"
  grep -E "ERROR:|runtime error|violation|Test unit written|SUMMARY" "$WORK/log" | head -20 || true
  exit 1
fi
echo "fuzz_onnx_build on '$REGEX': no finding"
