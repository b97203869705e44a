#!/usr/bin/env bash
# Runs every test: the CPU build's CTest suite (unit tests, op-test harness, ONNX conformance runner,
# plugin and Python tests), then the C++ unit and op tests again under AddressSanitizer + UBSan and
# the fuzz targets for a bounded time (one clang build: libFuzzer, ASan + UBSan), the threading tests
# under ThreadSanitizer. The first build includes the CUDA backend where nvcc is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each step's start, in seconds since this script began, so a CI log shows where its time goes.
step() { echo "[test.sh ${SECONDS} s] $*"; }
step "release build (the CUDA backend included where nvcc is installed)"
bash scripts/build.sh build
step "CTest"
(cd build && ctest --output-on-failure -j "$(nproc)" --timeout 900)
step "pip install"
# `pip install .` offline into a venv over Debian's torch, reusing the build above.
bash scripts/test_pip_install.sh build

# AddressSanitizer + UBSan and fuzzing share one clang build (libtorch is not built with ASan, so no
# PyTorch/Python pieces): the C++ unit and op tests run under the sanitizers, then every libFuzzer
# target (tests/fuzz/README.md) runs for GRAFT_FUZZ_SECONDS (45 s) from a freshly generated seed
# corpus; any finding (crash, sanitizer report, timeout, a broken rule) fails here, its input saved
# under build-fuzz/fuzz-run/artifacts/. One build instead of a gcc ASan build plus a clang fuzz
# build: on CI's two cores the gcc -O2 ASan build alone took 39 of the run's 85 minutes.
# -O1 and line tables only: half the compile time of -O2 -g, same findings.
LAUNCHER=()
if command -v ccache >/dev/null; then LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
step "clang ASan + UBSan + libFuzzer build"
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
  -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
  -DGRAFT_FUZZ=ON -DGRAFT_BUILD_TORCH=OFF -DGRAFT_BUILD_PYTHON=OFF "${LAUNCHER[@]}"
cmake --build build-fuzz -j "$(nproc)" --target graft_unit_tests graft_op_tests graft_fuzzers
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
step "unit and op tests under ASan + UBSan"
./build-fuzz/tests/unit/graft_unit_tests --gtest_brief=1
./build-fuzz/tests/ops/graft_op_tests --gtest_brief=1
echo "sanitizer run: all C++ unit and op tests passed"
step "fuzz targets"
bash tests/fuzz/run_fuzzers.sh build-fuzz "${GRAFT_FUZZ_SECONDS:-45}"

# ThreadSanitizer: the unit-test files that start threads (8 threads on one engine, shared and
# per-thread contexts; the memory limit across threads), in their own binary.
step "ThreadSanitizer build and tests"
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGRAFT_SANITIZE=thread \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DGRAFT_BUILD_TORCH=OFF -DGRAFT_BUILD_PYTHON=OFF \
  "${LAUNCHER[@]}"
cmake --build build-tsan -j "$(nproc)" --target graft_thread_tests
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 ./build-tsan/tests/unit/graft_thread_tests --gtest_brief=1
echo "ThreadSanitizer run: the threading tests passed"

# The CUDA backend: scripts/build.sh compiled it into the build above wherever nvcc is installed (CI
# has it, without a GPU; .ci/run sets GRAFT_WERROR=1, so that is a -Werror compile), and CTest ran its
# test binaries, whose GPU tests skip there, each with its reason. The GPU machine runs them for real
# (scripts/gpu/run_gpu_suite.sh).
if grep -q '^GRAFT_ENABLE_CUDA:BOOL=ON' build/CMakeCache.txt; then
  echo "CUDA build: the library and the GPU test binaries compiled$(grep -q '^GRAFT_WERROR:BOOL=ON' build/CMakeCache.txt && echo ' with -Werror'); GPU tests skipped without a GPU"
else
  echo "the CUDA backend was not compiled (no nvcc, or GRAFT_CUDA=0); scripts/gpu/run_gpu_suite.sh builds it on the GPU machine"
fi
step "done"
