// What the sampling family's CPU references and schemas share (roi_align.cpp, grid_sample.cpp): the
// checks of a view the references are given and the schemas' dtype set.
#pragma once

#include <string>
#include <vector>

#include "graft/status.h"
#include "graft/tensor.h"
#include "ops/attr_util.h"
#include "ops/infer_util.h"

namespace graft::sampling {

inline bool is_float(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kFloat64;
}

// Common checks of a view: data present when it has elements, host memory.
inline Status check_view(const char* op, const char* what, const TensorView& t) {
  if (t.numel() > 0 && t.data == nullptr)
    return error(StatusCode::kInvalidArgument, op, ": ", what, " has no data");
  if (t.device != DeviceType::kCPU)
    return error(StatusCode::kInvalidArgument, op, ": ", what, " is in ", device_name(t.device),
                 " memory; the reference kernel needs host memory");
  return Status::ok();
}

inline std::string dims_text(const std::vector<int64_t>& d) { return ints_to_string(d); }

// The dtypes the references compute in double and store.
inline const std::vector<DataType> kSampleFloats{infer::kF32, infer::kF16, infer::kF64};

// Constant dims that disagree are an error; symbolic ones are checked by the kernel.
inline bool known_differ(const Dim& a, const Dim& b) { return a.is_const() && b.is_const() && a.value() != b.value(); }

}  // namespace graft::sampling
