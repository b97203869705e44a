#!/usr/bin/env bash
# Runs every fuzz target (or the ones named) for a bounded time from a freshly generated seed corpus,
# and fails when any of them makes a finding (crash, sanitizer report, timeout, memory limit, or a
# violation of graft's rules, see tests/fuzz/fuzz_targets.h). A finding's input is saved under
# WORK_DIR/artifacts/TARGET/; minimize it (fuzz_TARGET -minimize_crash=1 -runs=10000 FILE), fix the
# bug, and add it to tests/data/fuzz_regressions (README there) so the unit tests replay it.
# Usage: tests/fuzz/run_fuzzers.sh BUILD_DIR [SECONDS_PER_TARGET=60] [WORK_DIR=BUILD_DIR/fuzz-run] [TARGET...]
#   BUILD_DIR is a -DGRAFT_FUZZ=ON build with the graft_fuzzers target built.
#   GRAFT_FUZZ_EXTRA_ARGS: more libFuzzer flags, e.g. "-runs=10000000" to stop at a number of
#   executions (whichever of that and SECONDS_PER_TARGET comes first).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=$(cd "${1:?usage: run_fuzzers.sh BUILD_DIR [SECONDS] [WORK_DIR] [TARGET...]}" && pwd)
SECS=${2:-60}
WORK=${3:-$BUILD/fuzz-run}
shift $(( $# < 3 ? $# : 3 ))
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
  TARGETS=(onnx_build plan_load plan_payload_load timing_cache_parse tensor_file_read attributes_validate)
fi
source tests/fuzz/fuzz_settings.sh

mkdir -p "$WORK"
bash tests/fuzz/make_corpus.sh "$BUILD" "$WORK/seeds"
failed=()
for t in "${TARGETS[@]}"; do
  exe="$BUILD/tests/fuzz/fuzz_$t"
  [ -x "$exe" ] || { echo "run_fuzzers.sh: $exe not built (cmake --build $BUILD --target graft_fuzzers)" >&2; exit 2; }
  corpus="$WORK/corpus/$t" artifacts="$WORK/artifacts/$t/" log="$WORK/$t.log"
  mkdir -p "$corpus" "$artifacts"
  dict=()
  [ -n "${FUZZ_DICT[$t]:-}" ] && dict=(-dict="tests/fuzz/dict/${FUZZ_DICT[$t]}.dict")
  set +e
  "$exe" -max_total_time="$SECS" "${FUZZ_LIMITS[@]}" \
    -artifact_prefix="$artifacts" "${dict[@]}" ${GRAFT_FUZZ_EXTRA_ARGS:-} "$corpus" "$WORK/seeds/${FUZZ_SEEDS[$t]}" > "$log" 2>&1
  rc=$?
  set -e
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  speed=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
  if [ $rc -ne 0 ]; then
    failed+=("$t")
    echo "fuzz_$t: FINDING (exit $rc) after $runs executions; input in $artifacts"
    grep -E "ERROR:|runtime error|violation|Test unit written|SUMMARY" "$log" | head -20 || true
    tail -40 "$log"
  else
    echo "fuzz_$t: $runs executions (at most ${SECS}s, $speed/s), $cov, no finding"
  fi
done
if [ ${#failed[@]} -ne 0 ]; then
  echo "fuzzing: findings in ${failed[*]} (logs in $WORK)"
  exit 1
fi
echo "fuzzing: ${#TARGETS[@]} targets, no finding"
