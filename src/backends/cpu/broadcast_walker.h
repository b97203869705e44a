// Multidirectional (NumPy-style) broadcasting for the CPU reference kernels: the walk over a
// row-major output that keeps each operand's element offset. The elementwise family's binary ops,
// Where and the variadic ops walk with it, and so do the reductions and the other kernels that map
// output elements to broadcast inputs.
#pragma once

#include <cstdint>
#include <vector>

#include "graft/status.h"

namespace graft::cpu {

namespace detail {

// Walks a row-major output of `out_dims` and keeps, for each operand, the element offset that
// multidirectional broadcasting maps the current output element to.
class BroadcastWalker {
 public:
  // Fails when an operand's dims are not broadcastable to out_dims (names both shapes).
  static Result<BroadcastWalker> make(const std::vector<int64_t>& out_dims,
                                      const std::vector<std::vector<int64_t>>& operand_dims);
  int64_t offset(size_t operand) const { return offsets_[operand]; }
  // Advance to the next output element (row-major order).
  void next();

 private:
  std::vector<int64_t> dims_;
  std::vector<std::vector<int64_t>> strides_;  // per operand, per output axis; 0 when broadcast
  std::vector<int64_t> index_;
  std::vector<int64_t> offsets_;
};

}  // namespace detail
}  // namespace graft::cpu
