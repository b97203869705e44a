// What the misc family's CUDA ops share: the element types their kernels are built for (their dtype keys).
#pragma once

#include <initializer_list>

#include "graft/tensor.h"

namespace graft::cuda {

// kGpuKTypes (cuda_op_util.h: EyeLike's and ReverseSequence's key) less bool: the types of the
// kernels that compute (GRAFT_EVERY_NUMERIC_DISPATCH: Einsum, the windows).
constexpr std::initializer_list<DataType> kMiscNumericTypes = {
    DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kFloat64,
    DataType::kInt8,    DataType::kUInt8,   DataType::kInt32,    DataType::kInt64};

}  // namespace graft::cuda
