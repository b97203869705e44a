#include "ops/sequence_attrs.h"

#include <algorithm>

namespace graft {

Result<int64_t> sequence_position(const Tensor& position, int64_t length, bool insert) {
  if ((position.dtype() != DataType::kInt32 && position.dtype() != DataType::kInt64) || position.numel() != 1)
    return error(StatusCode::kInvalidArgument, "the position must be one int32 or int64 element, not ",
                 desc_of_value(position).to_string());
  const int64_t p = load_as_int64(position.dtype(), position.data(), 0);
  const int64_t hi = insert ? length : length - 1;
  if (p < -length || p > hi) {
    if (length == 0 && !insert)
      return error(StatusCode::kInvalidArgument, "position ", p, " is out of range: the sequence is empty");
    return error(StatusCode::kInvalidArgument, "position ", p, " is out of range for a sequence of ", length,
                 " tensors (valid: ", -length, " to ", hi, ")");
  }
  return p < 0 ? p + length : p;
}

Result<std::vector<int64_t>> split_lengths(const Tensor* split, int64_t dim) {
  if (!split) return std::vector<int64_t>(static_cast<size_t>(dim), 1);
  if (split->dtype() != DataType::kInt32 && split->dtype() != DataType::kInt64)
    return error(StatusCode::kInvalidArgument, "split must be int32 or int64, not ", dtype_name(split->dtype()));
  if (split->rank() > 1)
    return error(StatusCode::kInvalidArgument, "split must be a scalar or 1-D, not ", desc_of_value(*split).to_string());
  const std::vector<int64_t> v = split->to_int64_vector();
  if (split->rank() == 0) {
    const int64_t chunk = v[0];
    if (chunk <= 0) return error(StatusCode::kInvalidArgument, "a scalar split must be positive, not ", chunk);
    std::vector<int64_t> out;
    for (int64_t at = 0; at < dim; at += chunk) out.push_back(std::min(chunk, dim - at));
    return out;
  }
  int64_t sum = 0;
  for (int64_t s : v) {
    if (s < 0) return error(StatusCode::kInvalidArgument, "split lengths must be non-negative, not ", s);
    sum += s;
  }
  if (sum != dim)
    return error(StatusCode::kInvalidArgument, "split lengths sum to ", sum, " but the axis has ", dim, " elements");
  return v;
}

Status optional_empty_error() {
  return error(StatusCode::kInvalidArgument, "the optional holds no value: check it with OptionalHasElement first");
}

Result<std::vector<int64_t>> concat_from_sequence_dims(const std::vector<Tensor>& items, int64_t axis, bool new_axis,
                                                       size_t* axis_out) {
  if (items.empty())
    return error(StatusCode::kInvalidArgument, "the sequence is empty: there is nothing to concatenate");
  const std::vector<int64_t>& first = items[0].dims();
  const int64_t rank = static_cast<int64_t>(first.size());
  const int64_t out_rank = new_axis ? rank + 1 : rank;
  if (axis < -out_rank || axis >= out_rank || out_rank == 0)
    return error(StatusCode::kInvalidArgument, "axis ", axis, " is out of range for ", new_axis ? "stacking " : "",
                 "tensors of rank ", rank, " (valid: ", -out_rank, " to ", out_rank - 1, ")");
  const size_t a = static_cast<size_t>(axis < 0 ? axis + out_rank : axis);
  std::vector<int64_t> out = first;
  if (new_axis) out.insert(out.begin() + static_cast<ptrdiff_t>(a), 0);
  else out[a] = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    const std::vector<int64_t>& d = items[i].dims();
    bool same = d.size() == first.size();
    for (size_t k = 0; same && k < d.size(); ++k) same = d[k] == first[k] || (!new_axis && k == a);
    if (!same)
      return error(StatusCode::kInvalidArgument, "tensor ", static_cast<uint64_t>(i), " of the sequence is ",
                   desc_of_value(items[i]).to_string(), " but tensor 0 is ", desc_of_value(items[0]).to_string(),
                   new_axis ? "; stacked tensors must have the same shape"
                            : "; concatenated tensors must agree on every axis but " + std::to_string(a));
    out[a] += new_axis ? 1 : d[a];
  }
  *axis_out = a;
  return out;
}

}  // namespace graft
