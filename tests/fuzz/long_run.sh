#!/usr/bin/env bash
# Long fuzz runs toward issue 19's target (10 million executions per target with no finding). Runs
# each target (or the ones named) one after the other on one core until it has made RUNS executions
# or MAX_SECONDS have passed, whichever comes first, and appends one row per target to the "Long
# runs" table of docs/results/fuzzing.md: the command, the commit fuzzed, the executions actually
# reached, the time, and the result. The corpus under WORK_DIR is kept between calls (only the seeds
# are regenerated), so a campaign can be run in pieces. A finding fails the script, as in CI; its
# input is in WORK_DIR/artifacts/TARGET/ (tests/fuzz/README.md says what to do with it).
# Usage: tests/fuzz/long_run.sh BUILD_DIR [RUNS=10000000] [MAX_SECONDS_PER_TARGET=3600] [TARGET...]
#   BUILD_DIR: a -DGRAFT_FUZZ=ON build with graft_fuzzers built (tests/fuzz/README.md).
#   GRAFT_FUZZ_LONG_WORK: the work directory (default BUILD_DIR/fuzz-long).
#   GRAFT_FUZZ_NO_RECORD=1: print the rows, leave docs/results/fuzzing.md alone.
# AddressSanitizer runs without allocation stacks here (malloc_context_size=0; GRAFT_FUZZ_ASAN_OPTIONS
# overrides): recording one per allocation took 35% of plan_payload_load's time (perf, 2026-12-03),
# in a stack depot that grows for the whole run. A finding still reports the faulting access's stack;
# replay its input (tests/fuzz/README.md) for the allocation's.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=$(cd "${1:?usage: long_run.sh BUILD_DIR [RUNS] [MAX_SECONDS_PER_TARGET] [TARGET...]}" && pwd)
RUNS=${2:-10000000}
SECS=${3:-3600}
shift $(( $# < 3 ? $# : 3 ))
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
  TARGETS=(onnx_build plan_load plan_payload_load timing_cache_parse tensor_file_read attributes_validate)
fi
WORK=${GRAFT_FUZZ_LONG_WORK:-$BUILD/fuzz-long}
group() { echo "$1" | sed ':a;s/\B[0-9]\{3\}\>/,&/;ta'; }  # 10000000 -> 10,000,000
RESULTS=docs/results/fuzzing.md

# What was fuzzed: the commit of the tree the build was configured from, and whether that tree had
# uncommitted changes to the library when this ran.
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$BUILD/CMakeCache.txt" 2>/dev/null)
commit=$(git -C "${src:-.}" rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -n "$(git -C "${src:-.}" status --porcelain -- src include ops 2>/dev/null)" ] && commit="$commit + uncommitted changes"
where="$(nproc)-core machine, load $(cut -d' ' -f1 /proc/loadavg) at the start"
cmd="tests/fuzz/long_run.sh BUILD $RUNS $SECS"
[ $# -gt 0 ] && cmd="$cmd ${TARGETS[*]}"

mkdir -p "$WORK"
export GRAFT_FUZZ_ASAN_OPTIONS=${GRAFT_FUZZ_ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:allocator_may_return_null=1:malloc_context_size=0}
rc=0
GRAFT_FUZZ_EXTRA_ARGS="-runs=$RUNS ${GRAFT_FUZZ_EXTRA_ARGS:-}" \
  bash tests/fuzz/run_fuzzers.sh "$BUILD" "$SECS" "$WORK" "${TARGETS[@]}" | tee "$WORK/long_run.log" || rc=$?

rows=()
for t in "${TARGETS[@]}"; do
  log="$WORK/$t.log"
  line=$(grep "^fuzz_$t:" "$WORK/long_run.log" | tail -1)
  # A run that ends in a finding may print its statistics twice: the last of each counts.
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" 2>/dev/null | grep -o '[0-9]*$' | tail -1 || echo 0)
  # libFuzzer's last line: "Done N runs in S second(s)"; a finding ends before it.
  secs=$(grep -o 'Done [0-9]* runs in [0-9]* second' "$log" 2>/dev/null | grep -o 'in [0-9]*' | grep -o '[0-9]*' || true)
  speed=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" 2>/dev/null | grep -o '[0-9]*$' | tail -1 || echo 0)
  if [[ "$line" == *FINDING* ]]; then
    result="**finding**: $(grep -m1 -E 'ERROR:|runtime error|violation' "$log" | cut -c1-160 | tr '|' '/'), input in artifacts/$t/"
  elif [ -z "$line" ]; then
    result="not run (see $log)"
  elif [ "${runs:-0}" -ge "$RUNS" ]; then
    result="none ($(group "$RUNS") executions reached)"
  else
    result="none (stopped by the ${SECS} s limit before $(group "$RUNS"))"
  fi
  rows+=("| $(date -u +%F) | $commit | $where | \`$cmd\` | $t | $(group "${runs:-0}") | ${secs:-?} | ${speed:-?} | $result |")
done
printf '%s\n' "${rows[@]}"

if [ "${GRAFT_FUZZ_NO_RECORD:-0}" != 1 ]; then
  header='## Long runs (`tests/fuzz/long_run.sh`)'
  if ! grep -qF "$header" "$RESULTS"; then
    printf '\n%s\n\nOne target at a time on one core, from the kept corpus of earlier long runs plus freshly generated seeds.\n\n| date | commit | where | command | target | executions | seconds | exec/s | result |\n|---|---|---|---|---|---:|---:|---:|---|\n' \
      "$header" >> "$RESULTS"
  fi
  # The rows go right after the last row of that table, wherever the section is in the page.
  tmp=$(mktemp)
  printf '%s\n' "${rows[@]}" > "$tmp.rows"
  awk -v header="$header" -v rows="$tmp.rows" '
    function flush() { while ((getline r < rows) > 0) print r; done = 1 }
    $0 == header { in_section = 1 }
    in_section && !done && /^\|/ { in_table = 1 }
    in_section && in_table && !done && !/^\|/ { flush() }
    { print }
    END { if (!done) flush() }' "$RESULTS" > "$tmp"
  mv "$tmp" "$RESULTS"
  rm -f "$tmp.rows"
  echo "long_run.sh: ${#rows[@]} row(s) added to $RESULTS"
fi
exit $rc
