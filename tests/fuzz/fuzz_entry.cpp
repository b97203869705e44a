// One libFuzzer executable per target: GRAFT_FUZZ_TARGET names the function of fuzz_targets.h that
// this executable fuzzes (tests/fuzz/CMakeLists.txt compiles this file once per target). A
// violation of graft's rules aborts, which libFuzzer reports as a finding, with the input saved.
#include <cstdio>
#include <cstdlib>

#include "tests/fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  graft::fuzz::initialize();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const graft::fuzz::Outcome out = graft::fuzz::GRAFT_FUZZ_TARGET(data, size);
  if (!out.violation.empty()) {
    std::fprintf(stderr, "graft fuzz violation: %s\n", out.violation.c_str());
    std::abort();
  }
  return 0;
}
