#include "backends/cpu/broadcast_walker.h"

#include <string>

#include "graft/dim.h"

namespace graft::cpu {

namespace detail {

Result<BroadcastWalker> BroadcastWalker::make(const std::vector<int64_t>& out_dims,
                                              const std::vector<std::vector<int64_t>>& operand_dims) {
  BroadcastWalker w;
  w.dims_ = out_dims;
  const size_t rank = out_dims.size();
  w.index_.assign(rank, 0);
  w.offsets_.assign(operand_dims.size(), 0);
  for (const auto& in : operand_dims) {
    if (in.size() > rank)
      return error(StatusCode::kRuntimeError, "operand of shape ", shape_to_string(shape_from_values(in)),
                   " has a higher rank than the output ", shape_to_string(shape_from_values(out_dims)));
    std::vector<int64_t> strides(rank, 0);
    int64_t stride = 1;
    for (size_t k = 0; k < in.size(); ++k) {
      size_t in_axis = in.size() - 1 - k;
      size_t out_axis = rank - 1 - k;
      if (in[in_axis] == out_dims[out_axis]) {
        strides[out_axis] = in[in_axis] == 1 ? 0 : stride;
      } else if (in[in_axis] == 1) {
        strides[out_axis] = 0;
      } else {
        return error(StatusCode::kRuntimeError, "operand of shape ", shape_to_string(shape_from_values(in)),
                     " cannot be broadcast to the output shape ", shape_to_string(shape_from_values(out_dims)));
      }
      stride *= in[in_axis];
    }
    w.strides_.push_back(std::move(strides));
  }
  return w;
}

void BroadcastWalker::next() {
  for (size_t d = dims_.size(); d-- > 0;) {
    ++index_[d];
    for (size_t k = 0; k < offsets_.size(); ++k) offsets_[k] += strides_[k][d];
    if (index_[d] < dims_[d]) return;
    for (size_t k = 0; k < offsets_.size(); ++k) offsets_[k] -= strides_[k][d] * dims_[d];
    index_[d] = 0;
  }
}

}  // namespace detail

}  // namespace graft::cpu
