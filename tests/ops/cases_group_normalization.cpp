// Cases for ONNX's GroupNormalization: opset 18's scale and bias per group, and opset 21's per
// channel (ONNX changed the meaning at 21). (cases_group_norm.cpp is graft's custom GroupNorm op.)
// The formula gathers each group's channels by their coordinates in x, independent of the kernels'
// contiguous-plane view.
#include <cmath>
#include <vector>

#include "case_util.h"
#include "harness.h"

namespace graft::optest {

namespace {

Values group_norm_formula(const Values& in, const DimsList& dims, const AttributeMap& a, bool per_group_affine) {
  const Ints& d = dims[0];
  const int64_t n = d[0], c = d[1], spatial = count(d, 2);
  const int64_t groups = a.get_int("num_groups", 1).value();
  const double eps = a.get_float("epsilon", 1e-5f).value();
  const int64_t per = c / groups;
  std::vector<double> y(in[0].size());
  for (int64_t b = 0; b < n; ++b)
    for (int64_t g = 0; g < groups; ++g) {
      std::vector<int64_t> at;  // the group's elements: channels g * per .. (g + 1) * per - 1, every position
      for (int64_t ch = g * per; ch < (g + 1) * per; ++ch)
        for (int64_t s = 0; s < spatial; ++s) at.push_back((b * c + ch) * spatial + s);
      double mean = 0, var = 0;
      for (int64_t i : at) mean += in[0][i];
      mean /= static_cast<double>(at.size());
      for (int64_t i : at) var += (in[0][i] - mean) * (in[0][i] - mean);
      var /= static_cast<double>(at.size());
      for (int64_t i : at) {
        const int64_t k = per_group_affine ? g : (i / spatial) % c;
        y[i] = (in[0][i] - mean) / std::sqrt(var + eps) * in[1][k] + in[2][k];
      }
    }
  return {y};
}

AttributeMap groups(int64_t g) { return attr("num_groups", g); }

OpCaseTable group_norm_cases(int opset) {
  const bool per_group = opset < 21;
  OpCaseTable t = builtin_table("GroupNormalization", [per_group](const Values& in, const DimsList& dims, const AttributeMap& a) {
    return group_norm_formula(in, dims, a, per_group);
  }, opset);
  auto affine = [per_group](int64_t g, int64_t c) { return std::vector<int64_t>{per_group ? g : c}; };
  t.cases.push_back(make_case("nchw_4_groups", {data({2, 8, 5, 3}), data(affine(4, 8), 0.5, 2), data(affine(4, 8), -1, 1)},
                              {{2, 8, 5, 3}}, groups(4)));
  // One group (layer normalization over C, H, W), and C groups (instance normalization).
  t.cases.push_back(make_case("one_group", {data({3, 6, 4}), data(affine(1, 6), 0.5, 2), data(affine(1, 6), -1, 1)},
                              {{3, 6, 4}}, groups(1)));
  t.cases.push_back(make_case("group_per_channel", {data({2, 3, 7}), data(affine(3, 3), 0.5, 2), data(affine(3, 3), -1, 1)},
                              {{2, 3, 7}}, groups(3)));
  // Large groups (a block strides over 2 * 1100 elements), 5-D, and rank 2 (no spatial axes).
  AttributeMap eps = groups(2);
  eps.set("epsilon", 1e-3f);
  t.cases.push_back(make_case("long_groups", {data({1, 4, 1100}), data(affine(2, 4), 0.5, 2), data(affine(2, 4), -1, 1)},
                              {{1, 4, 1100}}, eps));
  t.cases.push_back(make_case("ncdhw", {data({1, 6, 2, 3, 4}), data(affine(3, 6), 0.5, 2), data(affine(3, 6), -1, 1)},
                              {{1, 6, 2, 3, 4}}, groups(3)));
  t.cases.push_back(make_case("rank2", {data({5, 6}), data(affine(2, 6), 0.5, 2), data(affine(2, 6), -1, 1)}, {{5, 6}},
                              groups(2)));
  t.bad_attributes.push_back({"num_groups_missing", AttributeMap{}, {}, "num_groups"});
  t.bad_attributes.push_back({"num_groups_zero", groups(0), {}, "num_groups"});
  t.bad_attributes.push_back({"num_groups_not_dividing_c", groups(3), {{2, 8, 5, 3}, affine(3, 8), affine(3, 8)}, "num_groups"});
  return t;
}

}  // namespace

std::vector<OpCaseTable> group_normalization_case_tables() { return {group_norm_cases(18), group_norm_cases(21)}; }

}  // namespace graft::optest
