// Cases for ONNX Col2Im (opset 18): F.fold's 2-D blocks with strides, dilations and asymmetric pads,
// overlapping blocks (sums), a 1-D and a 3-D image. The independent formula gathers: for every
// image element, the column values whose block offset and sliding position land on it.
#include <vector>

#include "case_util.h"
#include "harness.h"

namespace graft::optest {

namespace {

AttributeMap col2im_attrs(std::vector<int64_t> dilations, std::vector<int64_t> pads,
                          std::vector<int64_t> strides) {
  AttributeMap a;
  if (!dilations.empty()) a.set("dilations", std::move(dilations));
  if (!pads.empty()) a.set("pads", std::move(pads));
  if (!strides.empty()) a.set("strides", std::move(strides));
  return a;
}

std::vector<std::vector<double>> col2im_formula(const std::vector<std::vector<double>>& in,
                                                const std::vector<std::vector<int64_t>>& dims,
                                                const AttributeMap& a) {
  std::vector<int64_t> image, block;
  for (double v : in[1]) image.push_back(static_cast<int64_t>(v));
  for (double v : in[2]) block.push_back(static_cast<int64_t>(v));
  const size_t k = image.size();
  const std::vector<int64_t> dil = a.get_ints("dilations", std::vector<int64_t>(k, 1)).value();
  const std::vector<int64_t> pads = a.get_ints("pads", std::vector<int64_t>(2 * k, 0)).value();
  const std::vector<int64_t> str = a.get_ints("strides", std::vector<int64_t>(k, 1)).value();
  std::vector<int64_t> nblocks(k);
  int64_t kernel = 1, positions = 1, area = 1;
  for (size_t d = 0; d < k; ++d) {
    nblocks[d] = (image[d] + pads[d] + pads[k + d] - dil[d] * (block[d] - 1) - 1) / str[d] + 1;
    kernel *= block[d];
    positions *= nblocks[d];
    area *= image[d];
  }
  const int64_t nc = dims[0][0] * (dims[0][1] / kernel);
  std::vector<double> y(static_cast<size_t>(nc * area), 0.0);
  for (int64_t c = 0; c < nc; ++c)
    for (int64_t p = 0; p < area; ++p) {
      std::vector<int64_t> pos(k);
      for (int64_t rem = p, d = static_cast<int64_t>(k) - 1; d >= 0; --d) {
        pos[static_cast<size_t>(d)] = rem % image[static_cast<size_t>(d)];
        rem /= image[static_cast<size_t>(d)];
      }
      double acc = 0.0;
      for (int64_t kf = 0; kf < kernel; ++kf)
        for (int64_t lf = 0; lf < positions; ++lf) {
          bool lands = true;
          for (int64_t kr = kf, lr = lf, d = static_cast<int64_t>(k) - 1; d >= 0; --d) {
            const size_t u = static_cast<size_t>(d);
            const int64_t kk = kr % block[u], l = lr % nblocks[u];
            kr /= block[u];
            lr /= nblocks[u];
            lands = lands && l * str[u] - pads[u] + kk * dil[u] == pos[u];
          }
          if (lands) acc += in[0][static_cast<size_t>((c * kernel + kf) * positions + lf)];
        }
      y[static_cast<size_t>(c * area + p)] = acc;
    }
  return {y};
}

}  // namespace

std::vector<OpCaseTable> col2im_case_tables() {
  OpCaseTable t = builtin_table("Col2Im", col2im_formula, 18);
  // (N, C * kh * kw, L) with L the sliding positions.
  t.cases.push_back(make_case("fold_3x3_overlapping",
                              {data({2, 2 * 9, 9}), int64_values({5, 5}), int64_values({3, 3})},
                              {{2, 2, 5, 5}}));
  t.cases.push_back(make_case("strides_dilations_pads",
                              {data({1, 3 * 4, 12}), int64_values({6, 7}), int64_values({2, 2})},
                              {{1, 3, 6, 7}}, col2im_attrs({2, 1}, {1, 0, 0, 1}, {2, 2})));
  t.cases.push_back(make_case("one_d", {data({2, 1 * 3, 3}), int64_values({8}), int64_values({3})},
                              {{2, 1, 8}}, col2im_attrs({}, {}, {2})));
  t.cases.push_back(make_case(
      "three_d", {data({1, 2 * 8, 8}), int64_values({3, 3, 3}), int64_values({2, 2, 2})}, {{1, 2, 3, 3, 3}}));
  AttributeMap bad = col2im_attrs({}, {}, {0, 1});
  t.bad_attributes.push_back({"stride_0", bad, {}, "strides"});
  return {t};
}

}  // namespace graft::optest
