// What the misc family's CUDA ops share: the element types their kernels are built for.
#pragma once

#include "graft/tensor.h"

namespace graft::cuda {

inline bool is_kernel_type(DataType t) {
  switch (t) {
    case DataType::kFloat32: case DataType::kFloat16: case DataType::kBFloat16: case DataType::kFloat64:
    case DataType::kInt8: case DataType::kUInt8: case DataType::kInt32: case DataType::kInt64: case DataType::kBool:
      return true;
    default: return false;
  }
}

}  // namespace graft::cuda
