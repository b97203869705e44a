// Small helpers shared by the CPU reference kernels.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "graft/status.h"
#include "ops/operator.h"

namespace graft::cpu {

// The node's attributes (an empty map when the kernel runs without any).
inline const AttributeMap& attrs_of(const ExecContext& ctx) {
  static const AttributeMap kEmpty;
  return ctx.attrs ? *ctx.attrs : kEmpty;
}

// Input i, or nullptr when it is omitted (an optional input past the end or left empty).
inline const Tensor* input_or_null(const ExecContext& ctx, size_t i) {
  return i < ctx.inputs.size() ? ctx.inputs[i] : nullptr;
}

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

// Row-major multi-index of `flat` within `dims`.
inline void unravel(int64_t flat, const std::vector<int64_t>& dims, std::vector<int64_t>& idx) {
  idx.resize(dims.size());
  for (size_t a = dims.size(); a-- > 0;) {
    idx[a] = flat % dims[a];
    flat /= dims[a];
  }
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

}  // namespace graft::cpu
