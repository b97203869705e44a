// Helpers the case tables share: numpy broadcasting for the independent formulas of elementwise ops.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "graft/attribute.h"

namespace graft::optest {

// Independent float64 formulas of ONNX's Conv (X, W, B?) and MaxPool/AveragePool (X), 1-D or 2-D,
// NCHW, from the ONNX attributes (cases_nn.cpp); GraftConv's and GraftPool's tables build on them.
std::vector<std::vector<double>> conv_reference(const std::vector<std::vector<double>>& in,
                                                const std::vector<std::vector<int64_t>>& dims, const AttributeMap& a);
std::vector<std::vector<double>> pool_reference(const std::vector<std::vector<double>>& in,
                                                const std::vector<std::vector<int64_t>>& dims, const AttributeMap& a,
                                                bool max);

// x of `dims` with its axes permuted: output axis k is input axis perm[k].
inline std::vector<double> permuted(const std::vector<double>& x, const std::vector<int64_t>& dims,
                                    const std::vector<int64_t>& perm) {
  std::vector<int64_t> out(perm.size()), stride(dims.size(), 1);
  for (size_t k = dims.size(); k-- > 1;) stride[k - 1] = stride[k] * dims[k];
  for (size_t k = 0; k < perm.size(); ++k) out[k] = dims[perm[k]];
  std::vector<double> y(x.size());
  for (size_t i = 0; i < y.size(); ++i) {
    int64_t rem = static_cast<int64_t>(i), src = 0;
    for (size_t k = out.size(); k-- > 0;) {
      src += (rem % out[k]) * stride[perm[k]];
      rem /= out[k];
    }
    y[i] = x[static_cast<size_t>(src)];
  }
  return y;
}

// The broadcast shape of operands of `dims` (numpy rules; the tables only pass compatible ones).
inline std::vector<int64_t> broadcast_dims(const std::vector<std::vector<int64_t>>& dims) {
  size_t rank = 0;
  for (const auto& d : dims) rank = std::max(rank, d.size());
  std::vector<int64_t> out(rank, 1);
  for (const auto& d : dims)
    for (size_t k = 0; k < d.size(); ++k) out[rank - 1 - k] = std::max(out[rank - 1 - k], d[d.size() - 1 - k]);
  return out;
}

// Row-major index into an operand of `dims` of the element at `out_index` of the broadcast `out`.
inline int64_t broadcast_index(int64_t out_index, const std::vector<int64_t>& out, const std::vector<int64_t>& dims) {
  int64_t index = 0, stride = 1;
  for (size_t k = 0; k < out.size(); ++k) {
    const size_t axis = out.size() - 1 - k;
    const int64_t coord = out_index % out[axis];
    out_index /= out[axis];
    if (k < dims.size()) {
      const int64_t d = dims[dims.size() - 1 - k];
      index += (d == 1 ? 0 : coord) * stride;
      stride *= d;
    }
  }
  return index;
}

// f applied elementwise over broadcast operands (flat row-major values with their dims).
inline std::vector<double> broadcast_apply(const std::vector<std::vector<double>>& in,
                                           const std::vector<std::vector<int64_t>>& dims,
                                           const std::function<double(const std::vector<double>&)>& f) {
  const std::vector<int64_t> out = broadcast_dims(dims);
  int64_t n = 1;
  for (int64_t d : out) n *= d;
  std::vector<double> y(static_cast<size_t>(n)), args(in.size());
  for (int64_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < in.size(); ++k) args[k] = in[k][static_cast<size_t>(broadcast_index(i, out, dims[k]))];
    y[static_cast<size_t>(i)] = f(args);
  }
  return y;
}

}  // namespace graft::optest
