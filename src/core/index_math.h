// Row-major index arithmetic shared by the op definitions (src/ops) and the backends' kernels.
#pragma once

#include <cstdint>
#include <vector>

namespace graft {

// Row-major multi-index of `flat` within `dims`.
inline void unravel(int64_t flat, const std::vector<int64_t>& dims, std::vector<int64_t>& idx) {
  idx.resize(dims.size());
  for (size_t a = dims.size(); a-- > 0;) {
    idx[a] = flat % dims[a];
    flat /= dims[a];
  }
}

// For every flat index of the broadcast batch `out`, the flat index into `operand`'s own batch
// (right-aligned against `out`; its size-1 axes repeat): numpy matmul's batch broadcasting.
inline std::vector<int64_t> broadcast_batch_offsets(const std::vector<int64_t>& out,
                                                    const std::vector<int64_t>& operand) {
  std::vector<int64_t> strides(operand.size(), 1);
  for (size_t a = operand.size(); a-- > 1;) strides[a - 1] = strides[a] * operand[a];
  int64_t count = 1;
  for (int64_t d : out) count *= d;
  const size_t lead = out.size() - operand.size();
  std::vector<int64_t> idx, result(static_cast<size_t>(count));
  for (int64_t f = 0; f < count; ++f) {
    unravel(f, out, idx);
    int64_t off = 0;
    for (size_t a = 0; a < operand.size(); ++a)
      if (operand[a] != 1) off += idx[a + lead] * strides[a];
    result[static_cast<size_t>(f)] = off;
  }
  return result;
}

}  // namespace graft
