// Small readers shared by the op definitions, the CPU reference kernels and the CUDA ops: attribute
// errors, shape text, the [outer, n, inner] view around an axis and integer input contents. They
// live beside the op definitions so that neither backend has to include the other to word an error
// or walk an axis the same way.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "graft/status.h"
#include "ops/operator.h"

namespace graft {

// An error about one attribute of the node being run (the caller adds the node).
template <typename... Args>
Status attr_error(const char* attr, Args&&... parts) {
  Status st = error(StatusCode::kInvalidModel, std::forward<Args>(parts)...);
  st.with_attribute(attr);
  return st;
}

inline std::string ints_to_string(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

// View of a tensor as [outer, n, inner] around one axis (`flatten_tail`: n covers the axis and
// every axis after it), as the axis-wise kernels walk it on the CPU and the GPU.
struct AxisView {
  int64_t outer = 1, n = 1, inner = 1;
};
inline AxisView axis_view(const std::vector<int64_t>& dims, int64_t axis, bool flatten_tail) {
  AxisView v;
  for (int64_t d = 0; d < static_cast<int64_t>(dims.size()); ++d) {
    if (d < axis) v.outer *= dims[d];
    else if (d == axis || flatten_tail) v.n *= dims[d];
    else v.inner *= dims[d];
  }
  return v;
}

// Contents of a (host) integer tensor input as int64; error names the input.
Result<std::vector<int64_t>> int_input(const ExecContext& ctx, size_t i, const char* what);

}  // namespace graft
