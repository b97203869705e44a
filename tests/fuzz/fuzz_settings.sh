# Sourced (not run) by every script that runs the fuzz targets (run_fuzzers.sh, run_onnx_ops.sh,
# scripts/gpu/pack_fuzz.sh, the GPU suite's fuzz step), so they fuzz under the same rules.

# Each target's seed folder (under make_corpus.sh's output) and dictionary (tests/fuzz/dict/NAME.dict).
declare -A FUZZ_SEEDS=([onnx_build]=onnx [plan_load]=plan [plan_payload_load]=plan_payload
                       [timing_cache_parse]=timing_cache [tensor_file_read]=tensor [attributes_validate]=attributes)
declare -A FUZZ_DICT=([onnx_build]=onnx_build [plan_load]=plan_json [plan_payload_load]=plan_json
                      [timing_cache_parse]=timing_cache_parse [tensor_file_read]=tensor_file_read
                      [attributes_validate]=attributes_validate)

# Leaks are findings too; a failed malloc returns NULL (graft turns it into an error), while a
# failed operator new is still reported. GRAFT_FUZZ_ASAN_OPTIONS / GRAFT_FUZZ_UBSAN_OPTIONS override.
export ASAN_OPTIONS=${GRAFT_FUZZ_ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${GRAFT_FUZZ_UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# libFuzzer's limits. -timeout: one input may take this long (sanitizers included, on a loaded
# machine: the CPU reference kernels of a small convnet take 1.5 s under ASan + UBSan); -rss_limit_mb:
# the process. graft's tensors are capped at 256 MiB by the targets themselves (graft::MemoryLimit).
FUZZ_LIMITS=(-timeout=60 -rss_limit_mb=3072 -print_final_stats=1)
