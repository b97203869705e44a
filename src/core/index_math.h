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

}  // namespace graft
