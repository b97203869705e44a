// Cases for the Lp-norm family (src/ops/lp_norm): LpNormalization over each axis with p 1 and 2,
// LpPool with strides, explicit and SAME_UPPER pads, p 1 to 3, 1-D to 3-D windows, and opset 18's
// dilations and ceil_mode, GlobalLpPool. The independent formulas walk every tap of the full window
// and skip those outside the input, where the kernels first clamp each axis's tap range.
#include <cmath>
#include <string>
#include <vector>

#include "case_util.h"
#include "harness.h"

namespace graft::optest {

namespace {

double lp_root(double sum, int64_t p) { return std::pow(sum, 1.0 / static_cast<double>(p)); }

Values lp_normalization_formula(const Values& in, const DimsList& dims, const AttributeMap& a) {
  const Ints& d = dims[0];
  const int64_t rank = static_cast<int64_t>(d.size());
  int64_t axis = a.get_int("axis", -1).value();
  if (axis < 0) axis += rank;
  const int64_t p = a.get_int("p", 2).value();
  const int64_t len = d[static_cast<size_t>(axis)], inner = count(d, static_cast<size_t>(axis) + 1);
  const int64_t outer = count(d) / (len * inner);
  std::vector<double> y(in[0].size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double sum = 0;
      for (int64_t l = 0; l < len; ++l) sum += std::pow(std::fabs(in[0][(o * len + l) * inner + i]), static_cast<double>(p));
      const double norm = lp_root(sum, p);
      for (int64_t l = 0; l < len; ++l) y[(o * len + l) * inner + i] = in[0][(o * len + l) * inner + i] / norm;
    }
  return {y};
}

// (sum over the window's taps inside x of |x|^p)^(1/p) per output position; the window attributes
// as ONNX defines them (SAME_UPPER: the extra padding at the end; ceil_mode: the output extent
// rounded up).
Values lp_pool_formula(const Values& in, const DimsList& dims, const AttributeMap& a, bool global) {
  const Ints& d = dims[0];
  const size_t n = d.size() - 2;
  const Ints x_spatial(d.begin() + 2, d.end());
  const int64_t p = a.get_int("p", 2).value();
  const Ints kernel = global ? x_spatial : a.get_ints("kernel_shape", {}).value();
  const Ints strides = a.get_ints("strides", Ints(n, 1)).value();
  const Ints dilations = a.get_ints("dilations", Ints(n, 1)).value();
  Ints pads = a.get_ints("pads", Ints(2 * n, 0)).value();
  const bool same_upper = a.get_string("auto_pad", "NOTSET").value() == "SAME_UPPER";
  const bool ceil_mode = a.get_int("ceil_mode", 0).value() != 0;
  Ints out(n);
  for (size_t k = 0; k < n; ++k) {
    const int64_t span = (kernel[k] - 1) * dilations[k] + 1;
    if (same_upper) {
      out[k] = (x_spatial[k] + strides[k] - 1) / strides[k];
      const int64_t total = std::max<int64_t>((out[k] - 1) * strides[k] + span - x_spatial[k], 0);
      pads[k] = total / 2;
      pads[n + k] = total - total / 2;
    } else {
      const double steps = static_cast<double>(x_spatial[k] + pads[k] + pads[n + k] - span) / static_cast<double>(strides[k]);
      out[k] = static_cast<int64_t>(ceil_mode ? std::ceil(steps) : std::floor(steps)) + 1;
    }
  }
  const int64_t planes = d[0] * d[1], in_plane = count(x_spatial), out_plane = count(out), taps = count(kernel);
  std::vector<double> y(static_cast<size_t>(planes * out_plane));
  Ints o(n), t(n);
  for (int64_t plane = 0; plane < planes; ++plane)
    for (int64_t op = 0; op < out_plane; ++op) {
      int64_t rem = op;
      for (size_t k = n; k-- > 0;) {
        o[k] = rem % out[k];
        rem /= out[k];
      }
      double sum = 0;
      for (int64_t tap = 0; tap < taps; ++tap) {
        int64_t trem = tap, off = 0;
        bool inside = true;
        for (size_t k = n; k-- > 0;) {
          t[k] = trem % kernel[k];
          trem /= kernel[k];
        }
        for (size_t k = 0; k < n; ++k) {
          const int64_t pos = o[k] * strides[k] - pads[k] + t[k] * dilations[k];
          inside = inside && pos >= 0 && pos < x_spatial[k];
          off = off * x_spatial[k] + pos;
        }
        if (inside) sum += std::pow(std::fabs(in[0][plane * in_plane + off]), static_cast<double>(p));
      }
      y[plane * out_plane + op] = lp_root(sum, p);
    }
  return {y};
}

AttributeMap pool_attrs(Ints kernel, Ints strides, Ints pads, int64_t p) {
  AttributeMap a;
  a.set("kernel_shape", kernel);
  if (!strides.empty()) a.set("strides", strides);
  if (!pads.empty()) a.set("pads", pads);
  a.set("p", p);
  return a;
}

OpCaseTable lp_normalization_cases() {
  OpCaseTable t = builtin_table("LpNormalization", lp_normalization_formula, 17);
  t.cpu_dtypes = t.cuda_dtypes = {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16};
  auto attrs = [](int64_t axis, int64_t p) {
    AttributeMap a;
    a.set("axis", axis);
    a.set("p", p);
    return a;
  };
  t.cases.push_back(make_case("last_axis_p2", {data({3, 4, 7})}, {{3, 4, 7}}));  // the defaults
  t.cases.push_back(make_case("middle_axis_p1", {data({2, 5, 6})}, {{2, 5, 6}}, attrs(1, 1)));
  t.cases.push_back(make_case("first_axis_p2", {data({9, 4})}, {{9, 4}}, attrs(0, 2)));
  t.cases.push_back(make_case("negative_axis_p1_4d", {data({2, 3, 4, 5})}, {{2, 3, 4, 5}}, attrs(-3, 1)));
  t.bad_attributes.push_back({"p_3", attrs(-1, 3), {}, "p"});
  t.bad_attributes.push_back({"axis_past_rank", attrs(3, 2), {{3, 4, 7}}, "axis"});
  return t;
}

OpCaseTable lp_pool_cases() {
  OpCaseTable t = builtin_table(
      "LpPool", [](const Values& in, const DimsList& dims, const AttributeMap& a) { return lp_pool_formula(in, dims, a, false); },
      17);
  t.cpu_dtypes = t.cuda_dtypes = {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16};
  t.cases.push_back(make_case("3x3_stride2_pad1_p2", {data({2, 3, 11, 10})}, {{2, 3, 6, 5}},
                              pool_attrs({3, 3}, {2, 2}, {1, 1, 1, 1}, 2)));
  t.cases.push_back(make_case("2x2_p1", {data({1, 5, 8, 6})}, {{1, 5, 7, 5}}, pool_attrs({2, 2}, {}, {}, 1)));
  t.cases.push_back(make_case("asymmetric_pads_p3", {data({1, 2, 9, 7})}, {{1, 2, 9, 4}},
                              pool_attrs({3, 2}, {1, 2}, {1, 0, 1, 1}, 3)));
  t.cases.push_back(make_case("1d", {data({2, 3, 13})}, {{2, 3, 6}}, pool_attrs({3}, {2}, {1, 0}, 2)));
  t.cases.push_back(make_case("3d", {data({1, 2, 5, 6, 4})}, {{1, 2, 3, 3, 2}}, pool_attrs({3, 2, 2}, {2, 2, 2}, {1, 0, 0, 1, 0, 0}, 2)));
  OpCase same = make_case("same_upper_stride2", {data({1, 3, 7, 8})}, {{1, 3, 4, 4}}, pool_attrs({3, 3}, {2, 2}, {}, 2));
  same.attrs.set("auto_pad", std::string("SAME_UPPER"));
  t.cases.push_back(same);
  // A window wider than the padded input's reach on one side: taps in the padding add nothing.
  t.cases.push_back(make_case("pads_wider_than_input", {data({1, 2, 3, 3})}, {{1, 2, 3, 3}},
                              pool_attrs({5, 5}, {1, 1}, {2, 2, 2, 2}, 2)));
  t.bad_attributes.push_back({"p_0", pool_attrs({3, 3}, {2, 2}, {1, 1, 1, 1}, 0), {}, "p"});
  t.bad_attributes.push_back({"kernel_rank", pool_attrs({3}, {2, 2}, {1, 1, 1, 1}, 2), {}, "kernel_shape"});
  return t;
}

// Opset 18 added dilations and ceil_mode.
OpCaseTable lp_pool_18_cases() {
  OpCaseTable t = builtin_table(
      "LpPool", [](const Values& in, const DimsList& dims, const AttributeMap& a) { return lp_pool_formula(in, dims, a, false); },
      18);
  t.cpu_dtypes = t.cuda_dtypes = {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16};
  OpCase dilated = make_case("dilated_2x2", {data({1, 3, 9, 8})}, {{1, 3, 7, 3}}, pool_attrs({2, 2}, {1, 2}, {}, 2));
  dilated.attrs.set("dilations", Ints{2, 3});
  t.cases.push_back(dilated);
  // 10 - 3 = 7 steps of 2: 3.5, rounded up to 4, so 5 outputs; the last window starts inside x.
  OpCase ceil = make_case("ceil_mode", {data({2, 2, 10, 10})}, {{2, 2, 5, 5}}, pool_attrs({3, 3}, {2, 2}, {}, 2));
  ceil.attrs.set("ceil_mode", int64_t{1});
  t.cases.push_back(ceil);
  return t;
}

OpCaseTable global_lp_pool_cases() {
  OpCaseTable t = builtin_table(
      "GlobalLpPool", [](const Values& in, const DimsList& dims, const AttributeMap& a) { return lp_pool_formula(in, dims, a, true); },
      17);
  t.cpu_dtypes = t.cuda_dtypes = {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16};
  t.cases.push_back(make_case("2d_p2", {data({2, 3, 7, 5})}, {{2, 3, 1, 1}}));
  t.cases.push_back(make_case("1d_p1", {data({3, 4, 9})}, {{3, 4, 1}}, attr("p", int64_t{1})));
  t.cases.push_back(make_case("3d_p3", {data({1, 2, 3, 4, 5})}, {{1, 2, 1, 1, 1}}, attr("p", int64_t{3})));
  t.bad_attributes.push_back({"p_negative", attr("p", int64_t{-2}), {}, "p"});
  return t;
}

}  // namespace

std::vector<OpCaseTable> lp_norm_case_tables() {
  return {lp_normalization_cases(), lp_pool_cases(), lp_pool_18_cases(), global_lp_pool_cases()};
}

}  // namespace graft::optest
