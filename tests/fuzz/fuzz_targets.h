// The fuzz targets of graft, as plain functions: each takes the bytes of one untrusted input and
// drives it through what a user can do with such a file. The libFuzzer executables
// (tests/fuzz/fuzz_entry.cpp, built with -DGRAFT_FUZZ=ON) call them, and so does the regression
// replay of the normal unit tests (tests/unit/fuzz_regressions_test.cpp), so a reproducer saved
// from a fuzzer is replayed by exactly the code that found it.
//
// Each returns the outcome: `status` is what graft answered (success, or a clean error), and
// `violation` is non-empty when graft broke one of its own rules on that input: an exception
// crossed a Status API, an error spans several lines, a built or loaded engine does not survive a
// save/load round trip, the round trip changes its outputs, ... The fuzzer aborts on a violation
// (a finding, as a crash or a sanitizer report is); the replay fails the test.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "graft/status.h"

namespace graft::fuzz {

struct Outcome {
  Status status;
  std::string violation;  // empty: graft kept its rules
};

// Limits every target runs under, so a small hostile input cannot make a slow or huge but correct
// computation look like a finding: the host memory graft's tensors may hold (graft::MemoryLimit),
// and the largest input tensor a target feeds to an engine it then runs.
inline constexpr int64_t kMemoryLimitBytes = int64_t{256} << 20;
inline constexpr int64_t kMaxRunInputElements = int64_t{1} << 16;
// What a run may hold at once beyond the engine's weights: a model that makes larger activations
// from small inputs (a Resize upwards, an Expand) fails to run with kOutOfMemory instead of
// spending minutes of a sanitized CPU kernel on work the fuzzer learns nothing more from.
inline constexpr int64_t kMaxRunBytes = int64_t{32} << 20;

// ONNX model bytes -> import -> build for the CPU (dynamic dims set to 1, as the command line
// does) -> describe, serialize, load back -> run both engines on small inputs, outputs bit-equal.
Outcome onnx_build(const uint8_t* data, size_t size);
// Plan bytes -> load (header, checksum, payload) -> describe, serialize, load back -> run.
Outcome plan_load(const uint8_t* data, size_t size);
// Plan payload bytes (the part behind the checksum: graph and JSON sections) -> the same as
// plan_load. Reaches the parser without forging a CRC.
Outcome plan_payload_load(const uint8_t* data, size_t size);
// Timing cache file bytes -> parse -> entries round trip through JSON.
Outcome timing_cache_parse(const uint8_t* data, size_t size);
// Tensor file bytes -> read as .npy and as an ONNX TensorProto .pb -> what reads is written and
// read back unchanged.
Outcome tensor_file_read(const uint8_t* data, size_t size);
// Custom-op attribute JSON (plans, the TensorRT adapter's serialized fields) -> deserialize ->
// serialize round trip -> validate against every registered op -> each valid set through the op's
// shape function with its example inputs.
Outcome attributes_validate(const uint8_t* data, size_t size);

// Called once before the first input (the fuzzer's LLVMFuzzerInitialize): quiet logging, the
// registry filled, so the first input is not slower than the rest.
void initialize();

}  // namespace graft::fuzz
