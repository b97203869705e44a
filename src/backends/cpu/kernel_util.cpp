// The host helpers of kernel_util.h that are not inline.
#include "backends/cpu/kernel_util.h"

#include <vector>

namespace graft::cpu {

std::vector<double> load_doubles(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.get(i);
  return v;
}

void store_doubles(Tensor& t, const std::vector<double>& v) {
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, v[static_cast<size_t>(i)]);
}

Status require_float_tensor(const Tensor* t, const char* what) {
  if (!t) return error(StatusCode::kInvalidModel, "input ", what, " is missing");
  if (t->device() != DeviceType::kCPU)
    return error(StatusCode::kInvalidArgument, "input ", what, " is not a host tensor");
  if (!dtype_is_float(t->dtype()))
    return error(StatusCode::kUnsupported, "input ", what, " has dtype ", dtype_name(t->dtype()),
                 "; expected a floating type");
  return Status::ok();
}

Status require_float_or_int(const Tensor* t, const char* what) {
  if (!t) return error(StatusCode::kInvalidModel, "input ", what, " is missing");
  if (t->device() != DeviceType::kCPU)
    return error(StatusCode::kInvalidArgument, "input ", what, " is not a host tensor");
  if (!dtype_is_float(t->dtype()) && !dtype_is_integer(t->dtype()))
    return error(StatusCode::kUnsupported, "input ", what, " has dtype ", dtype_name(t->dtype()),
                 "; expected a numeric type");
  return Status::ok();
}

}  // namespace graft::cpu
