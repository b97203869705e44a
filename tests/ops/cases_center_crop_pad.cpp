// Cases for ONNX CenterCropPad (opset 18): every listed axis cropped or zero-padded to its target
// extent, centred (the odd element goes to the back), axes given or all, with integer data too. The
// independent formula follows ONNX's reference implementation: crop the front by
// floor((in - out) / 2), pad the front by floor((out - in) / 2).
#include <algorithm>
#include <vector>

#include "case_util.h"
#include "harness.h"

namespace graft::optest {

namespace {

AttributeMap axes_attr(std::vector<int64_t> axes) {
  AttributeMap a;
  a.set("axes", std::move(axes));
  return a;
}

// out[o] = in[o + crop - pad] per axis, 0 outside the input.
std::vector<std::vector<double>> center_crop_pad_formula(const std::vector<std::vector<double>>& in,
                                                         const std::vector<std::vector<int64_t>>& dims,
                                                         const AttributeMap& attrs) {
  const std::vector<int64_t>& d = dims[0];
  const int64_t rank = static_cast<int64_t>(d.size());
  std::vector<int64_t> axes;
  if (attrs.has("axes")) {
    const std::vector<int64_t> listed = attrs.get_ints("axes", {}).value();
    for (int64_t a : listed) axes.push_back(a < 0 ? a + rank : a);
  } else {
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  }
  std::vector<int64_t> out = d, shift(d.size(), 0);
  for (size_t k = 0; k < axes.size(); ++k) {
    const size_t a = static_cast<size_t>(axes[k]);
    const int64_t target = static_cast<int64_t>(in[1][k]);
    out[a] = target;
    shift[a] = target < d[a] ? (d[a] - target) / 2 : -((target - d[a]) / 2);  // input index = o + shift
  }
  int64_t n = 1;
  for (int64_t e : out) n *= e;
  std::vector<double> y(static_cast<size_t>(n), 0.0);
  std::vector<int64_t> o(out.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, src = 0;
    bool inside = true;
    for (size_t a = out.size(); a-- > 0;) {
      o[a] = rem % out[a];
      rem /= out[a];
    }
    for (size_t a = 0; a < out.size(); ++a) {
      const int64_t q = o[a] + shift[a];
      inside = inside && q >= 0 && q < d[a];
      src = src * d[a] + q;
    }
    if (inside) y[static_cast<size_t>(i)] = in[0][static_cast<size_t>(src)];
  }
  return {y};
}

}  // namespace

std::vector<OpCaseTable> center_crop_pad_case_tables() {
  OpCaseTable t = builtin_table("CenterCropPad", center_crop_pad_formula, 18);
  t.cases.push_back(make_case("crop_both_spatial_axes", {data({2, 3, 9, 8}), int64_values({5, 5})},
                              {{2, 3, 5, 5}}, axes_attr({2, 3})));
  t.cases.push_back(make_case("pad_both_spatial_axes_odd", {data({1, 2, 4, 3}), int64_values({7, 6})},
                              {{1, 2, 7, 6}}, axes_attr({-2, -1})));
  t.cases.push_back(make_case("crop_one_pad_other", {data({3, 10, 4}), int64_values({7, 9})}, {{3, 7, 9}},
                              axes_attr({1, 2})));
  t.cases.push_back(make_case("every_axis_no_attribute", {data({6, 5}), int64_values({3, 8})}, {{3, 8}}));
  t.cases.push_back(make_case("unchanged_and_to_empty", {data({4, 5}), int64_values({4, 0})}, {{4, 0}}));
  {
    OpCase c = make_case("int32_shape_int64_data",
                         {typed({3, 7}, DataType::kInt64, -50, 50), fixed({1}, DataType::kInt32, {4})},
                         {{3, 4}}, axes_attr({1}));
    t.cases.push_back(c);
  }
  t.bad_attributes.push_back({"axis_twice", axes_attr({1, -1}), {{2, 3}, {2}}, "axes"});
  t.bad_attributes.push_back({"axis_out_of_range", axes_attr({2}), {{2, 3}, {1}}, "axes"});
  return {t};
}

}  // namespace graft::optest
