// Cases for GroupNorm (x (N, C, *spatial), scale (C), bias (C); num_groups, epsilon).
#include <cmath>

#include "harness.h"

namespace graft::optest {

namespace {
AttributeMap gn_attrs(int64_t groups, std::optional<float> epsilon = std::nullopt) {
  AttributeMap a;
  a.set("num_groups", groups);
  if (epsilon) a.set("epsilon", *epsilon);
  return a;
}

OpCase gn_case(std::string label, std::vector<int64_t> x_dims, int64_t groups, std::optional<float> eps = std::nullopt) {
  const int64_t c = x_dims[1];
  OpCase k;
  k.label = std::move(label);
  k.inputs = {{x_dims, -2.0, 3.0}, {{c}, 0.5, 1.5}, {{c}, -1.0, 1.0}};
  k.attrs = gn_attrs(groups, eps);
  k.output_dims = {x_dims};
  return k;
}
}  // namespace

OpCaseTable group_norm_cases() {
  OpCaseTable t;
  t.name = "GroupNorm";
  t.cases.push_back(gn_case("nchw_2groups", {2, 6, 3, 4}, 2));
  t.cases.push_back(gn_case("one_group_is_layernorm", {3, 4, 5}, 1));
  t.cases.push_back(gn_case("instance_norm_groups", {2, 5, 7}, 5, 1e-3f));
  t.cases.push_back(gn_case("rank2_no_spatial", {4, 8}, 2));
  t.cases.push_back(gn_case("ncdhw_5d", {1, 8, 2, 3, 3}, 4));
  {
    // A diffusion-UNet-like block (32 groups), large enough for many CUDA threads per group.
    OpCase k = gn_case("unet_like_32groups", {2, 64, 16, 16}, 32);
    k.fd_tolerance = 1e-5;
    t.cases.push_back(k);
  }
  {
    // |mean| >> std: a one-pass E[x^2]-E[x]^2 variance loses every digit here.
    OpCase k = gn_case("large_mean", {2, 4, 64}, 2);
    k.inputs[0].lo = 100.0;
    k.inputs[0].hi = 101.0;
    k.fd_tolerance = 1e-4;  // the loss is large relative to its derivatives
    // fp16 cannot hold 100 + 1/1024 finely; the input quantization dominates but the reference
    // sees the same rounded inputs, so only the normalization's own error remains.
    t.cases.push_back(k);
  }

  t.bad_attributes.push_back({"groups_do_not_divide_channels", gn_attrs(4), {{2, 6, 3}, {6}, {6}}, "num_groups"});
  t.bad_attributes.push_back({"zero_groups", gn_attrs(0), {}, "num_groups"});
  t.bad_attributes.push_back({"zero_epsilon", gn_attrs(2, 0.0f), {}, "epsilon"});
  t.bad_attributes.push_back({"negative_epsilon", gn_attrs(2, -1e-5f), {}, "epsilon"});

  // Written directly from the paper's definition (biased variance), in double.
  t.reference = [](const std::vector<std::vector<double>>& in, const std::vector<std::vector<int64_t>>& dims,
                   const AttributeMap& attrs) {
    const int64_t groups = attrs.get_int("num_groups", 1).value();
    const double eps = attrs.get_float("epsilon", 1e-5f).value();
    const auto& xd = dims[0];
    const int64_t n = xd[0], c = xd[1];
    int64_t s = 1;
    for (size_t d = 2; d < xd.size(); ++d) s *= xd[d];
    const int64_t cpg = c / groups;
    std::vector<double> y(in[0].size());
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t g = 0; g < groups; ++g) {
        double mean = 0.0, var = 0.0;
        const int64_t count = cpg * s;
        for (int64_t ch = g * cpg; ch < (g + 1) * cpg; ++ch)
          for (int64_t p = 0; p < s; ++p) mean += in[0][(i * c + ch) * s + p];
        mean /= static_cast<double>(count);
        for (int64_t ch = g * cpg; ch < (g + 1) * cpg; ++ch)
          for (int64_t p = 0; p < s; ++p) var += std::pow(in[0][(i * c + ch) * s + p] - mean, 2);
        var /= static_cast<double>(count);
        for (int64_t ch = g * cpg; ch < (g + 1) * cpg; ++ch)
          for (int64_t p = 0; p < s; ++p) {
            const int64_t k = (i * c + ch) * s + p;
            y[k] = (in[0][k] - mean) / std::sqrt(var + eps) * in[1][ch] + in[2][ch];
          }
      }
    }
    return std::vector<std::vector<double>>{y};
  };
  return t;
}

std::vector<OpCaseTable> group_norm_case_tables() { return {group_norm_cases()}; }

}  // namespace graft::optest
