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
declare -A SEEDS=([onnx_build]=onnx [plan_load]=plan [plan_payload_load]=plan_payload
                  [timing_cache_parse]=timing_cache [tensor_file_read]=tensor [attributes_validate]=attributes)
declare -A DICT=([onnx_build]=onnx_build [plan_load]=plan_json [plan_payload_load]=plan_json
                 [timing_cache_parse]=timing_cache_parse [tensor_file_read]=tensor_file_read
                 [attributes_validate]=attributes_validate)

mkdir -p "$WORK"
bash tests/fuzz/make_corpus.sh "$BUILD" "$WORK/seeds"
# Leaks are findings too; a failed malloc returns NULL (graft turns it into an error), while a
# failed operator new is still reported.
export ASAN_OPTIONS=${GRAFT_FUZZ_ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${GRAFT_FUZZ_UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=()
for t in "${TARGETS[@]}"; do
  exe="$BUILD/tests/fuzz/fuzz_$t"
  [ -x "$exe" ] || { echo "run_fuzzers.sh: $exe not built (cmake --build $BUILD --target graft_fuzzers)" >&2; exit 2; }
  corpus="$WORK/corpus/$t" artifacts="$WORK/artifacts/$t/" log="$WORK/$t.log"
  mkdir -p "$corpus" "$artifacts"
  dict=()
  [ -n "${DICT[$t]:-}" ] && dict=(-dict="tests/fuzz/dict/${DICT[$t]}.dict")
  # -timeout: one input may take this long (sanitizers included, on a loaded machine: the CPU
  # reference kernels of a small convnet take 1.5 s under ASan + UBSan); -rss_limit_mb: the process.
  # graft's tensors are capped at 256 MiB by the targets themselves (graft::MemoryLimit).
  set +e
  "$exe" -max_total_time="$SECS" -timeout=60 -rss_limit_mb=3072 -print_final_stats=1 \
    -artifact_prefix="$artifacts" "${dict[@]}" ${GRAFT_FUZZ_EXTRA_ARGS:-} "$corpus" "$WORK/seeds/${SEEDS[$t]}" > "$log" 2>&1
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
