// Plain types shared by the CUDA kernel launchers (elementwise, reduce/norm, shape, nn) and the op
// files that call them. Host-compilable: no device code and no graft framework types, so the
// launchers can be reused outside the engine.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace graft::cuda::k {

// Element types, numbered like ONNX TensorProto.DataType (and graft::DataType) so mapping is a cast.
enum class KType : int {
  kF32 = 1, kU8 = 2, kI8 = 3, kU16 = 4, kI16 = 5, kI32 = 6, kI64 = 7, kBool = 9, kF16 = 10, kF64 = 11,
  kU32 = 12, kU64 = 13, kBF16 = 16
};

constexpr int kMaxRank = 8;

// Up to three operands broadcast to one row-major output: per output axis, each operand's element
// stride (0 along a broadcast axis). Computed on the host, passed by value.
struct Bcast {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[3][kMaxRank] = {};
};

// A generic strided view used by gathers over an output index: per output axis, the extent and the
// input stride to add (Transpose, Slice, Expand).
struct Strided {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[kMaxRank] = {};
};

// Where a kernel reports input data it cannot compute on (an index out of range, an integer
// divisor of zero), where the CPU reference fails the run: the first report writes `tag` to the
// device word, which the engine reads back after the run (CudaExec::fault). A default one (no
// word) reports nothing.
struct DataFault {
  int64_t* word = nullptr;
  int64_t tag = 0;
};

}  // namespace graft::cuda::k
