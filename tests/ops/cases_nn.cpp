// Cases for the ONNX nn ops the CUDA backend runs on cuDNN, cuBLASLt or its own kernels: Conv (1-D,
// 2-D and 3-D, groups, strides, dilations, asymmetric pads), MaxPool and AveragePool (1-D to 3-D), Gemm, MatMul (batch
// broadcasting), Softmax and LayerNormalization. Each has an independent float64 formula written
// here as plain loops.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <utility>

#include "case_util.h"
#include "harness.h"

namespace graft::optest {

namespace {

int64_t product(const Ints& d, size_t from = 0, size_t to = std::numeric_limits<size_t>::max()) {
  int64_t p = 1;
  for (size_t i = from; i < std::min(to, d.size()); ++i) p *= d[i];
  return p;
}

OpCaseTable nn_table(std::string name) {
  OpCaseTable t;
  t.domain = "";
  t.name = std::move(name);
  t.cpu_dtypes = {DataType::kFloat32, DataType::kFloat16};
  t.cuda_dtypes = {DataType::kFloat32, DataType::kFloat16};
  return t;
}

Ints ints_or(const AttributeMap& a, const char* name, Ints fallback) {
  auto v = a.get_ints(name, fallback);
  return v.is_ok() ? v.value() : fallback;
}

// ---- sliding windows (Conv, pools) ------------------------------------------------------------
// One window geometry over 1 to 3 spatial axes.
struct Window {
  int64_t n = 1, c = 1;
  Ints in, k, s, d, pb, pe, out;  // per spatial axis: extent, kernel, stride, dilation, pads, output
};

Window window_of(const Ints& x, const Ints& kernel, const AttributeMap& a) {
  const size_t sp = x.size() - 2;
  const Ints strides = ints_or(a, "strides", Ints(sp, 1)), dil = ints_or(a, "dilations", Ints(sp, 1));
  const Ints pads = ints_or(a, "pads", Ints(2 * sp, 0));
  Window g;
  g.n = x[0];
  g.c = x[1];
  for (size_t i = 0; i < sp; ++i) {
    g.in.push_back(x[2 + i]);
    g.k.push_back(kernel[i]);
    g.s.push_back(strides[i]);
    g.d.push_back(dil[i]);
    g.pb.push_back(pads[i]);
    g.pe.push_back(pads[sp + i]);
    g.out.push_back((x[2 + i] + pads[i] + pads[sp + i] - dil[i] * (kernel[i] - 1) - 1) / strides[i] + 1);
  }
  return g;
}

// Calls f(index) for every multi-index below `extent`, the last axis fastest.
template <typename F>
void for_each_index(const Ints& extent, F&& f) {
  for (int64_t e : extent)
    if (e <= 0) return;
  Ints idx(extent.size(), 0);
  for (;;) {
    f(idx);
    size_t a = extent.size();
    while (a > 0 && ++idx[a - 1] == extent[a - 1]) idx[--a] = 0;
    if (a == 0) return;
  }
}

int64_t volume(const Ints& dims) {
  int64_t v = 1;
  for (int64_t d : dims) v *= d;
  return v;
}

int64_t flat_index(const Ints& idx, const Ints& dims) {
  int64_t f = 0;
  for (size_t i = 0; i < idx.size(); ++i) f = f * dims[i] + idx[i];
  return f;
}

// Calls f(tap, src) for each tap of output position `o` that lands inside the input.
template <typename F>
void for_each_tap(const Window& g, const Ints& o, F&& f) {
  for_each_index(g.k, [&](const Ints& tap) {
    Ints src(tap.size());
    for (size_t i = 0; i < tap.size(); ++i) {
      src[i] = o[i] * g.s[i] - g.pb[i] + tap[i] * g.d[i];
      if (src[i] < 0 || src[i] >= g.in[i]) return;
    }
    f(tap, src);
  });
}

}  // namespace

Values conv_reference(const Values& in, const DimsList& dims, const AttributeMap& a) {
  const Ints& wd = dims[1];
  const Window g = window_of(dims[0], Ints(wd.begin() + 2, wd.end()), a);
  auto group = a.get_int("group", 1);
  const int64_t groups = group.is_ok() ? group.value() : 1, m = wd[0], cg = g.c / groups, mg = m / groups;
  const int64_t plane = volume(g.out), in_plane = volume(g.in), taps = volume(g.k);
  std::vector<double> y(static_cast<size_t>(g.n * m * plane));
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t o = 0; o < m; ++o)
      for_each_index(g.out, [&](const Ints& pos) {
        double acc = in.size() > 2 && !in[2].empty() ? in[2][o] : 0.0;
        const int64_t c0 = (o / mg) * cg;
        for (int64_t ci = 0; ci < cg; ++ci)
          for_each_tap(g, pos, [&](const Ints& tap, const Ints& src) {
            acc += in[0][(n * g.c + c0 + ci) * in_plane + flat_index(src, g.in)] *
                   in[1][(o * cg + ci) * taps + flat_index(tap, g.k)];
          });
        y[(n * m + o) * plane + flat_index(pos, g.out)] = acc;
      });
  return {y};
}

Values pool_reference(const Values& in, const DimsList& dims, const AttributeMap& a, bool max) {
  const Window g = window_of(dims[0], ints_or(a, "kernel_shape", {}), a);
  auto include = a.get_int("count_include_pad", 0);
  const bool include_pad = include.is_ok() && include.value() != 0;
  const int64_t plane = volume(g.out), in_plane = volume(g.in);
  std::vector<double> y(static_cast<size_t>(g.n * g.c * plane)), indices(max ? y.size() : 0);
  for (int64_t nc = 0; nc < g.n * g.c; ++nc)
    for_each_index(g.out, [&](const Ints& pos) {
      double acc = max ? -std::numeric_limits<double>::infinity() : 0.0;
      int64_t count = 0, first_max = -1;
      for_each_tap(g, pos, [&](const Ints&, const Ints& src) {
        const int64_t at = nc * in_plane + flat_index(src, g.in);
        const double v = in[0][at];
        // MaxPool's Indices: the first tap holding the maximum, as a flat index into X.
        if (max && (first_max < 0 || v > acc)) first_max = at;
        acc = max ? std::max(acc, v) : acc + v;
        ++count;
      });
      if (max) indices[nc * plane + flat_index(pos, g.out)] = static_cast<double>(first_max < 0 ? nc * in_plane : first_max);
      if (!max) {
        // With count_include_pad the divisor is the window clipped to the padded input.
        int64_t padded = 0;
        for_each_index(g.k, [&](const Ints& tap) {
          for (size_t i = 0; i < tap.size(); ++i) {
            const int64_t at = pos[i] * g.s[i] - g.pb[i] + tap[i] * g.d[i];
            if (at < -g.pb[i] || at >= g.in[i] + g.pe[i]) return;
          }
          ++padded;
        });
        acc /= static_cast<double>(include_pad ? padded : count);
      }
      y[nc * plane + flat_index(pos, g.out)] = acc;
    });
  if (max) return {y, indices};
  return {y};
}

namespace {

OpCase window_case(std::string label, DimsList inputs, Ints out, AttributeMap a) {
  OpCase c;
  c.label = std::move(label);
  for (auto& d : inputs) c.inputs.push_back({std::move(d), -1.0, 1.0});
  c.output_dims = {std::move(out)};
  c.attrs = std::move(a);
  return c;
}

AttributeMap window_attrs(Ints kernel, Ints strides, Ints pads, Ints dilations, int64_t group) {
  AttributeMap a;
  if (!kernel.empty()) a.set("kernel_shape", kernel);
  a.set("strides", strides);
  a.set("pads", pads);
  if (!dilations.empty()) a.set("dilations", dilations);
  if (group > 0) a.set("group", group);
  return a;
}

OpCaseTable conv_cases() {
  OpCaseTable t = nn_table("Conv");
  t.cases.push_back(window_case("3x3_pad1_bias", {{2, 3, 11, 9}, {8, 3, 3, 3}, {8}}, {2, 8, 11, 9},
                                window_attrs({}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1)));
  t.cases.push_back(window_case("grouped_stride2", {{1, 4, 13, 13}, {6, 2, 3, 3}}, {1, 6, 6, 6},
                                window_attrs({}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 2)));
  t.cases.push_back(window_case("depthwise_dilated", {{1, 4, 15, 12}, {4, 1, 3, 3}, {4}}, {1, 4, 15, 12},
                                window_attrs({}, {1, 1}, {2, 2, 2, 2}, {2, 2}, 4)));
  t.cases.push_back(window_case("asymmetric_pads", {{1, 3, 10, 10}, {5, 3, 3, 2}, {5}}, {1, 5, 11, 5},
                                window_attrs({}, {1, 2}, {1, 0, 2, 1}, {1, 1}, 1)));
  t.cases.push_back(window_case("pointwise", {{2, 16, 7, 5}, {24, 16, 1, 1}, {24}}, {2, 24, 7, 5},
                                window_attrs({}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1)));
  t.cases.push_back(window_case("1d_stride2", {{2, 3, 17}, {4, 3, 5}, {4}}, {2, 4, 9},
                                window_attrs({}, {2}, {2, 2}, {1}, 1)));
  t.cases.push_back(window_case("3d_pad1_bias", {{1, 2, 5, 6, 7}, {4, 2, 3, 3, 3}, {4}}, {1, 4, 5, 6, 7},
                                window_attrs({}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}, {1, 1, 1}, 1)));
  t.cases.push_back(window_case("3d_grouped_strided", {{2, 4, 6, 5, 4}, {6, 2, 2, 3, 1}}, {2, 6, 3, 3, 2},
                                window_attrs({}, {2, 1, 2}, {0, 0, 0, 0, 0, 0}, {1, 1, 1}, 2)));
  for (OpCase& c : t.cases) c.tolerance[DataType::kFloat32] = 1e-4;
  t.bad_attributes.push_back({"group_not_dividing_channels", window_attrs({}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 2),
                              {{2, 3, 11, 9}, {8, 3, 3, 3}, {8}}, "group"});
  t.reference = conv_reference;
  return t;
}

OpCaseTable pool_cases(const char* name, bool max) {
  OpCaseTable t = nn_table(name);
  t.cases.push_back(window_case("3x3_stride2_pad1", {{2, 3, 11, 10}}, {2, 3, 6, 5},
                                window_attrs({3, 3}, {2, 2}, {1, 1, 1, 1}, {}, 0)));
  t.cases.push_back(window_case("2x2_stride2", {{1, 5, 8, 6}}, {1, 5, 4, 3}, window_attrs({2, 2}, {2, 2}, {0, 0, 0, 0}, {}, 0)));
  t.cases.push_back(window_case("asymmetric", {{1, 2, 9, 7}}, {1, 2, 9, 4},
                                window_attrs({3, 2}, {1, 2}, {1, 0, 1, 1}, {}, 0)));
  t.cases.push_back(window_case("1d", {{2, 3, 13}}, {2, 3, 6}, window_attrs({3}, {2}, {1, 0}, {}, 0)));
  t.cases.push_back(window_case("3d_asymmetric", {{1, 3, 6, 7, 5}}, {1, 3, 3, 4, 5},
                                window_attrs({2, 3, 2}, {2, 2, 1}, {0, 1, 0, 0, 1, 1}, {}, 0)));
  if (max) {
    OpCase ind = window_case("2d_with_indices", {{2, 3, 9, 8}}, {2, 3, 5, 4}, window_attrs({3, 3}, {2, 2}, {1, 1, 1, 1}, {}, 0));
    ind.output_dims.push_back({2, 3, 5, 4});
    t.cases.push_back(std::move(ind));
    OpCase ind3 = window_case("3d_with_indices", {{1, 2, 5, 6, 4}}, {1, 2, 2, 3, 2},
                              window_attrs({2, 2, 2}, {2, 2, 2}, {0, 0, 0, 0, 0, 0}, {}, 0));
    ind3.output_dims.push_back({1, 2, 2, 3, 2});
    t.cases.push_back(std::move(ind3));
    // int8 and uint8 (opset 12+): the maximum is one of the inputs, exactly.
    for (auto [label, dt, lo, hi] : {std::tuple<const char*, DataType, double, double>{"uint8_3x3_stride2", DataType::kUInt8, 0, 255},
                                     {"int8_3x3_stride2", DataType::kInt8, -128, 127}}) {
      OpCase c = window_case(label, {{2, 3, 9, 8}}, {2, 3, 5, 4}, window_attrs({3, 3}, {2, 2}, {1, 1, 1, 1}, {}, 0));
      c.inputs[0].dtype = dt;
      c.inputs[0].lo = lo;
      c.inputs[0].hi = hi;
      t.cases.push_back(std::move(c));
    }
  }
  if (!max) {
    OpCase inc3 = window_case("3d_count_include_pad", {{1, 2, 5, 5, 6}}, {1, 2, 3, 3, 3},
                              window_attrs({3, 3, 3}, {2, 2, 2}, {1, 1, 1, 1, 1, 0}, {}, 0));
    inc3.attrs.set("count_include_pad", int64_t{1});
    t.cases.push_back(std::move(inc3));
    OpCase inc = window_case("count_include_pad", {{2, 3, 11, 10}}, {2, 3, 6, 5},
                             window_attrs({3, 3}, {2, 2}, {1, 1, 1, 1}, {}, 0));
    inc.attrs.set("count_include_pad", int64_t{1});
    t.cases.push_back(std::move(inc));
  }
  t.reference = [max](const Values& in, const DimsList& dims, const AttributeMap& a) { return pool_reference(in, dims, a, max); };
  return t;
}

// ---- Gemm, MatMul -----------------------------------------------------------------------------
Values gemm_formula(const Values& in, const DimsList& dims, const AttributeMap& a) {
  const bool ta = a.get_int("transA", 0).value() != 0, tb = a.get_int("transB", 0).value() != 0;
  const double alpha = a.get_float("alpha", 1.f).value(), beta = a.get_float("beta", 1.f).value();
  const int64_t m = ta ? dims[0][1] : dims[0][0], k = ta ? dims[0][0] : dims[0][1], n = tb ? dims[1][0] : dims[1][1];
  std::vector<double> y(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0.0;
      for (int64_t p = 0; p < k; ++p) acc += in[0][ta ? p * m + i : i * k + p] * in[1][tb ? j * k + p : p * n + j];
      double c = 0.0;
      if (in.size() > 2 && !in[2].empty()) c = in[2][broadcast_index(i * n + j, {m, n}, dims[2])];
      y[i * n + j] = alpha * acc + beta * c;
    }
  return {y};
}

OpCase matrix_case(std::string label, DimsList inputs, Ints out, AttributeMap a = {}) {
  OpCase c = window_case(std::move(label), std::move(inputs), std::move(out), std::move(a));
  c.tolerance[DataType::kFloat32] = 1e-4;
  return c;
}

OpCaseTable gemm_cases() {
  OpCaseTable t = nn_table("Gemm");
  auto attrs = [](int64_t ta, int64_t tb, float alpha, float beta) {
    AttributeMap a;
    a.set("transA", ta);
    a.set("transB", tb);
    a.set("alpha", alpha);
    a.set("beta", beta);
    return a;
  };
  t.cases.push_back(matrix_case("plain_bias_row", {{5, 7}, {7, 9}, {9}}, {5, 9}, attrs(0, 0, 1.f, 1.f)));
  t.cases.push_back(matrix_case("transB_scaled", {{6, 16}, {12, 16}, {6, 12}}, {6, 12}, attrs(0, 1, 0.5f, 2.f)));
  t.cases.push_back(matrix_case("transA_column_bias", {{8, 3}, {8, 5}, {3, 1}}, {3, 5}, attrs(1, 0, 1.5f, -1.f)));
  t.cases.push_back(matrix_case("no_bias_both_transposed", {{33, 17}, {20, 33}}, {17, 20}, attrs(1, 1, 1.f, 1.f)));
  t.reference = gemm_formula;
  return t;
}

Values matmul_formula(const Values& in, const DimsList& dims, const AttributeMap&) {
  const Ints& a = dims[0];
  const Ints& b = dims[1];
  const int64_t m = a[a.size() - 2], k = a.back(), n = b.back();
  const Ints batch = broadcast_dims({Ints(a.begin(), a.end() - 2), Ints(b.begin(), b.end() - 2)});
  const int64_t batches = product(batch);
  std::vector<double> y(static_cast<size_t>(batches * m * n));
  for (int64_t bi = 0; bi < batches; ++bi) {
    const int64_t ai = broadcast_index(bi, batch, Ints(a.begin(), a.end() - 2));
    const int64_t bj = broadcast_index(bi, batch, Ints(b.begin(), b.end() - 2));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0.0;
        for (int64_t p = 0; p < k; ++p) acc += in[0][(ai * m + i) * k + p] * in[1][(bj * k + p) * n + j];
        y[(bi * m + i) * n + j] = acc;
      }
  }
  return {y};
}

OpCaseTable matmul_cases() {
  OpCaseTable t = nn_table("MatMul");
  t.cases.push_back(matrix_case("2d", {{7, 12}, {12, 5}}, {7, 5}));
  t.cases.push_back(matrix_case("batched", {{3, 6, 8}, {3, 8, 4}}, {3, 6, 4}));
  t.cases.push_back(matrix_case("shared_weights", {{2, 5, 9, 16}, {16, 10}}, {2, 5, 9, 10}));
  t.cases.push_back(matrix_case("broadcast_batches", {{2, 1, 3, 4}, {5, 4, 6}}, {2, 5, 3, 6}));
  // One call per output matrix at odd element offsets: float16 matrices 2 bytes off alignment.
  t.cases.push_back(matrix_case("broadcast_batches_odd_offsets", {{2, 1, 3, 5}, {1, 3, 5, 7}}, {2, 3, 3, 7}));
  // One strided-batch call whose matrices after the first start off alignment (15, 35, 21 elements):
  // cuBLASLt checks a batch's strides itself (lt_rowmajor counts only the base addresses).
  t.cases.push_back(matrix_case("batched_odd_strides", {{3, 3, 5}, {3, 5, 7}}, {3, 3, 7}));
  t.reference = matmul_formula;
  return t;
}

// ---- Softmax, LayerNormalization --------------------------------------------------------------
int64_t axis_of(const AttributeMap& a, int64_t fallback, size_t rank) {
  auto v = a.get_int("axis", fallback);
  const int64_t axis = v.is_ok() ? v.value() : fallback;
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

Values softmax_formula(const Values& in, const DimsList& dims, const AttributeMap& a) {
  const Ints& d = dims[0];
  const size_t axis = static_cast<size_t>(axis_of(a, -1, d.size()));
  const int64_t outer = product(d, 0, axis), len = d[axis], inner = product(d, axis + 1);
  std::vector<double> y(in[0].size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t j) { return (o * len + j) * inner + i; };
      double mx = -std::numeric_limits<double>::infinity(), sum = 0.0;
      for (int64_t j = 0; j < len; ++j) mx = std::max(mx, in[0][at(j)]);
      for (int64_t j = 0; j < len; ++j) sum += std::exp(in[0][at(j)] - mx);
      for (int64_t j = 0; j < len; ++j) y[at(j)] = std::exp(in[0][at(j)] - mx) / sum;
    }
  return {y};
}

OpCase axis_case(std::string label, DimsList inputs, Ints out, int64_t axis, double lo, double hi) {
  OpCase c;
  c.label = std::move(label);
  for (auto& d : inputs) c.inputs.push_back({std::move(d), lo, hi});
  c.output_dims = {std::move(out)};
  c.attrs.set("axis", axis);
  return c;
}

OpCaseTable softmax_cases() {
  OpCaseTable t = nn_table("Softmax");
  t.opset = 13;
  t.cases.push_back(axis_case("last_axis", {{4, 3, 10}}, {4, 3, 10}, -1, -4, 4));
  t.cases.push_back(axis_case("middle_axis", {{2, 7, 5}}, {2, 7, 5}, 1, -4, 4));
  t.cases.push_back(axis_case("long_rows", {{3, 1500}}, {3, 1500}, 1, -8, 8));
  t.cases.push_back(axis_case("first_axis", {{6, 4}}, {6, 4}, 0, -4, 4));
  t.bad_attributes.push_back({"axis_out_of_range", [] {
                                AttributeMap a;
                                a.set("axis", int64_t{3});
                                return a;
                              }(),
                              {}, "axis"});
  t.reference = softmax_formula;
  return t;
}

Values layer_norm_formula(const Values& in, const DimsList& dims, const AttributeMap& a) {
  const Ints& d = dims[0];
  const size_t axis = static_cast<size_t>(axis_of(a, -1, d.size()));
  const double eps = a.get_float("epsilon", 1e-5f).value();
  const int64_t rows = product(d, 0, axis), len = product(d, axis);
  std::vector<double> y(in[0].size());
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0.0, var = 0.0;
    for (int64_t j = 0; j < len; ++j) mean += in[0][r * len + j];
    mean /= static_cast<double>(len);
    for (int64_t j = 0; j < len; ++j) var += (in[0][r * len + j] - mean) * (in[0][r * len + j] - mean);
    var /= static_cast<double>(len);
    for (int64_t j = 0; j < len; ++j) {
      const double bias = in.size() > 2 && !in[2].empty() ? in[2][j] : 0.0;
      y[r * len + j] = (in[0][r * len + j] - mean) / std::sqrt(var + eps) * in[1][j] + bias;
    }
  }
  return {y};
}

OpCaseTable layer_norm_cases() {
  OpCaseTable t = nn_table("LayerNormalization");
  t.cases.push_back(axis_case("last_axis_bias", {{4, 6, 32}, {32}, {32}}, {4, 6, 32}, -1, -2, 3));
  t.cases.push_back(axis_case("two_axes", {{3, 5, 4, 6}, {4, 6}, {4, 6}}, {3, 5, 4, 6}, 2, -2, 3));
  t.cases.push_back(axis_case("no_bias_wide", {{2, 1000}, {1000}}, {2, 1000}, 1, -1, 2));
  t.reference = layer_norm_formula;
  return t;
}

}  // namespace

std::vector<OpCaseTable> nn_case_tables() {
  return {conv_cases(), pool_cases("MaxPool", true), pool_cases("AveragePool", false), gemm_cases(), matmul_cases(),
          softmax_cases(), layer_norm_cases()};
}

}  // namespace graft::optest
