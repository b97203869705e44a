// Helpers the case tables share: building tables, cases and inputs, and the pieces of independent
// formulas several ops need (numpy broadcasting, axis and index arithmetic, Conv and pools).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "graft/attribute.h"
#include "harness.h"

namespace graft::optest {

// What the independent formulas take and return: dims, and flat row-major values per input/output.
using Ints = std::vector<int64_t>;
using Values = std::vector<std::vector<double>>;
using DimsList = std::vector<std::vector<int64_t>>;

// A builtin op's table (ONNX's default domain) run in float32 and float16 on both backends.
inline OpCaseTable builtin_table(std::string name, ReferenceFn reference, int opset = 17) {
  OpCaseTable t;
  t.domain = "";
  t.name = std::move(name);
  t.opset = opset;
  t.reference = std::move(reference);
  t.cpu_dtypes = {DataType::kFloat32, DataType::kFloat16};
  t.cuda_dtypes = {DataType::kFloat32, DataType::kFloat16};
  return t;
}

inline OpCase make_case(std::string label, std::vector<CaseInput> inputs, std::vector<std::vector<int64_t>> out,
                        AttributeMap attrs = {}) {
  OpCase c;
  c.label = std::move(label);
  c.inputs = std::move(inputs);
  c.output_dims = std::move(out);
  c.attrs = std::move(attrs);
  return c;
}

// A float input (in the dtype the case runs in), uniform over [lo, hi].
inline CaseInput data(std::vector<int64_t> dims, double lo = -3.0, double hi = 3.0) {
  return CaseInput{std::move(dims), lo, hi};
}
// An input of its own dtype, uniform over [lo, hi] (integers: inclusive).
inline CaseInput typed(std::vector<int64_t> dims, DataType t, double lo, double hi) {
  CaseInput in{std::move(dims), lo, hi};
  in.dtype = t;
  return in;
}
// An input of its own dtype with exactly these values (row-major).
inline CaseInput fixed(std::vector<int64_t> dims, DataType t, std::vector<double> values) {
  CaseInput in{std::move(dims)};
  in.dtype = t;
  in.values = std::move(values);
  return in;
}
// A 1-D int64 input (axes, shapes, pads, split sizes).
inline CaseInput int64_values(const std::vector<int64_t>& values) {
  return fixed({static_cast<int64_t>(values.size())}, DataType::kInt64, std::vector<double>(values.begin(), values.end()));
}

template <typename T>
AttributeMap attr(const char* name, T v) {
  AttributeMap a;
  a.set(name, std::move(v));
  return a;
}

// x rounded to an 8-bit float (ONNX types 17 to 20) with saturation, by searching the type's values,
// built from its layout alone (exponent and mantissa widths, bias, largest finite), for the nearest,
// ties to the even mantissa: independent of graft's bit arithmetic (src/core/float8.h). Cast's and
// QuantizeLinear's cases read it.
inline double float8_nearest(double x, int64_t to) {
  const int mantissa_bits = to <= 18 ? 3 : 2;
  const int exponent_bits = 7 - mantissa_bits;
  const int bias = to == 17 ? 7 : to == 18 ? 8 : to == 19 ? 15 : 16;
  const double largest = to == 17 ? 448.0 : to == 18 ? 240.0 : 57344.0;
  x = std::clamp(x, -largest, largest);
  double best = 0.0, best_d = INFINITY;
  bool best_even = true;
  for (int e = 0; e < (1 << exponent_bits); ++e)
    for (int m = 0; m < (1 << mantissa_bits); ++m) {
      const double v = e == 0 ? std::ldexp(m, 1 - bias - mantissa_bits)
                              : std::ldexp((1 << mantissa_bits) + m, e - bias - mantissa_bits);
      if (v > largest) continue;
      const double d = std::fabs(std::fabs(x) - v);
      if (d < best_d || (d == best_d && m % 2 == 0 && !best_even)) best = v, best_d = d, best_even = m % 2 == 0;
    }
  return std::copysign(best, x);
}

// The flat index into a (De)QuantizeLinear scale of shape `s` that element i of x (dims `d`) reads:
// per tensor (s empty or one element), per axis (s 1-D), or blocked (s of x's rank, x's coordinate
// along `axis` divided by `block`), by unravelling i into coordinates and ravelling them into s.
inline int64_t quant_scale_index(int64_t i, const std::vector<int64_t>& d, const std::vector<int64_t>& s, int64_t axis,
                                 int64_t block) {
  int64_t n = 1;
  for (int64_t e : s) n *= e;
  if (n == 1) return 0;
  if (axis < 0) axis += static_cast<int64_t>(d.size());
  std::vector<int64_t> c(d.size());
  for (size_t k = d.size(); k-- > 0;) {
    c[k] = i % d[k];
    i /= d[k];
  }
  if (block == 0) return c[static_cast<size_t>(axis)];
  c[static_cast<size_t>(axis)] /= block;
  int64_t at = 0;
  for (size_t k = 0; k < s.size(); ++k) at = at * s[k] + c[k];
  return at;
}

// The product of d[from, to).
inline int64_t count(const std::vector<int64_t>& d, size_t from = 0, size_t to = std::numeric_limits<size_t>::max()) {
  int64_t n = 1;
  for (size_t i = 0; i < d.size(); ++i)
    if (i >= from && i < to) n *= d[i];
  return n;
}

inline int64_t axis_in(int64_t axis, size_t rank) { return axis < 0 ? axis + static_cast<int64_t>(rank) : axis; }

// PyTorch's and ONNX's reflection padding: `v` folded into [lo, hi] by repeated reflection (lo == hi
// gives lo).
inline double mirror(double v, double lo, double hi) {
  if (hi <= lo) return lo;
  const double span = hi - lo;
  const double d = std::fabs(v - lo);
  const double flips = std::floor(d / span), extra = std::fmod(d, span);
  return std::fmod(flips, 2.0) == 0.0 ? lo + extra : hi - extra;
}

// GatherND/ScatterND: the row-major offset, in slices, of index tuple `tuple` (q indices, negative
// ones counting from the end) into data of dims `d`.
inline int64_t nd_offset(const std::vector<double>& indices, int64_t tuple, int64_t q, const std::vector<int64_t>& d) {
  int64_t off = 0;
  for (int64_t k = 0; k < q; ++k) {
    int64_t v = static_cast<int64_t>(indices[static_cast<size_t>(tuple * q + k)]);
    if (v < 0) v += d[static_cast<size_t>(k)];
    off = off * d[static_cast<size_t>(k)] + v;
  }
  return off;
}

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

// ---- containers and control flow (tables with a container_reference) ----
inline OpCaseTable container_table(std::string name, ContainerReferenceFn reference, int opset = 17) {
  OpCaseTable t = builtin_table(std::move(name), nullptr, opset);
  t.container_reference = std::move(reference);
  return t;
}
inline OpCase container_case(std::string label, std::vector<CaseInput> inputs, std::vector<ContainerOutput> outputs,
                             AttributeMap attrs = {}) {
  OpCase c = make_case(std::move(label), std::move(inputs), {}, std::move(attrs));
  c.container_outputs = std::move(outputs);
  return c;
}
inline ContainerOutput tensor_out(std::vector<int64_t> dims) { return {ValueKind::kTensor, {std::move(dims)}}; }
inline ContainerOutput sequence_out(std::vector<std::vector<int64_t>> items) {
  return {ValueKind::kSequence, std::move(items)};
}
// A sequence (or optional tensor) input of random tensors of these dims.
inline CaseInput container_of(ValueKind kind, std::vector<std::vector<int64_t>> items) {
  CaseInput in;
  in.kind = kind;
  in.items = std::move(items);
  return in;
}
inline CaseInput sequence_of(std::vector<std::vector<int64_t>> items) {
  return container_of(ValueKind::kSequence, std::move(items));
}
inline CaseInput optional_of(std::vector<std::vector<int64_t>> items) {
  return container_of(ValueKind::kOptionalTensor, std::move(items));
}
inline CaseInput int64_scalar(int64_t v) { return fixed({}, DataType::kInt64, {static_cast<double>(v)}); }
inline CaseInput omitted() {
  CaseInput in;
  in.omitted = true;
  return in;
}

}  // namespace graft::optest
