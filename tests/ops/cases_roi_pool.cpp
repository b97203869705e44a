// Cases for MaxRoiPool (src/ops/roi_pool): RoIs on several images, spatial scales, RoIs larger
// than the image and partly outside it (clipped bins, empty bins giving 0), a 1x1 RoI pooled into
// several bins, one pooled cell. The independent formula follows ONNX Runtime's kernel: corners
// rounded after scaling, bins of float32 extent, floor/ceil bin edges clipped to the image.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "case_util.h"
#include "harness.h"

namespace graft::optest {

namespace {

Values max_roi_pool_formula(const Values& in, const DimsList& dims, const AttributeMap& a) {
  const Ints& xd = dims[0];
  const int64_t c = xd[1], h = xd[2], w = xd[3], r = dims[1][0];
  const Ints pooled = a.get_ints("pooled_shape", {}).value();
  const float scale = a.get_float("spatial_scale", 1.0f).value();
  std::vector<double> y;
  for (int64_t k = 0; k < r; ++k) {
    const double* row = in[1].data() + k * 5;
    const int64_t batch = static_cast<int64_t>(row[0]);
    auto px = [scale](double v) { return static_cast<int64_t>(std::round(static_cast<float>(v) * scale)); };
    const int64_t x1 = px(row[1]), y1 = px(row[2]), x2 = px(row[3]), y2 = px(row[4]);
    const float bin_h = static_cast<float>(std::max<int64_t>(y2 - y1 + 1, 1)) / static_cast<float>(pooled[0]);
    const float bin_w = static_cast<float>(std::max<int64_t>(x2 - x1 + 1, 1)) / static_cast<float>(pooled[1]);
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t i = 0; i < pooled[0]; ++i)
        for (int64_t j = 0; j < pooled[1]; ++j) {
          const int64_t hs = std::clamp<int64_t>(static_cast<int64_t>(std::floor(static_cast<float>(i) * bin_h)) + y1, 0, h);
          const int64_t he = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(static_cast<float>(i + 1) * bin_h)) + y1, 0, h);
          const int64_t ws = std::clamp<int64_t>(static_cast<int64_t>(std::floor(static_cast<float>(j) * bin_w)) + x1, 0, w);
          const int64_t we = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(static_cast<float>(j + 1) * bin_w)) + x1, 0, w);
          double m = he <= hs || we <= ws ? 0.0 : -std::numeric_limits<double>::infinity();
          for (int64_t yy = hs; yy < he; ++yy)
            for (int64_t xx = ws; xx < we; ++xx) m = std::max(m, in[0][((batch * c + ch) * h + yy) * w + xx]);
          y.push_back(m);
        }
  }
  return {y};
}

// RoI rows (batch, x1, y1, x2, y2), values exact in float16.
CaseInput rois(std::vector<double> rows) {
  CaseInput in{{static_cast<int64_t>(rows.size() / 5), 5}};
  in.values = std::move(rows);
  return in;
}

AttributeMap roi_attrs(Ints pooled, float scale) {
  AttributeMap a;
  a.set("pooled_shape", pooled);
  a.set("spatial_scale", scale);
  return a;
}

OpCaseTable max_roi_pool_cases() {
  OpCaseTable t = builtin_table("MaxRoiPool", max_roi_pool_formula, 17);
  t.cpu_dtypes = t.cuda_dtypes = {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16};
  t.cases.push_back(make_case("two_images_scale_1", {data({2, 3, 8, 10}), rois({0, 1, 1, 6, 5, 1, 0, 2, 9, 7, 0, 3, 3, 3, 3})},
                              {{3, 3, 2, 2}}, roi_attrs({2, 2}, 1.0f)));
  t.cases.push_back(make_case("scale_half_3x3_bins", {data({1, 4, 9, 9}), rois({0, 2, 2, 14, 10, 0, 0, 0, 17, 17})},
                              {{2, 4, 3, 3}}, roi_attrs({3, 3}, 0.5f)));
  // Partly outside the image (negative corner, past the far edge): bins outside are empty (0).
  t.cases.push_back(make_case("outside_the_image", {data({1, 2, 6, 6}), rois({0, -6, -4, 3, 2, 0, 4, 3, 14, 12})},
                              {{2, 2, 4, 3}}, roi_attrs({4, 3}, 1.0f)));
  // A single pixel pooled into 2x3 bins: every bin reads it.
  t.cases.push_back(make_case("one_pixel_many_bins", {data({2, 3, 5, 5}), rois({1, 2, 3, 2, 3})}, {{1, 3, 2, 3}},
                              roi_attrs({2, 3}, 1.0f)));
  t.cases.push_back(make_case("one_cell", {data({1, 5, 7, 4}), rois({0, 0.5, 1.5, 3, 6.5})}, {{1, 5, 1, 1}},
                              roi_attrs({1, 1}, 1.0f)));
  t.bad_attributes.push_back({"pooled_shape_one_extent", roi_attrs({2}, 1.0f), {}, "pooled_shape"});
  t.bad_attributes.push_back({"pooled_shape_zero", roi_attrs({2, 0}, 1.0f), {}, "pooled_shape"});
  t.bad_attributes.push_back({"scale_infinite", roi_attrs({2, 2}, std::numeric_limits<float>::infinity()), {}, "spatial_scale"});
  return t;
}

}  // namespace

std::vector<OpCaseTable> roi_pool_case_tables() { return {max_roi_pool_cases()}; }

}  // namespace graft::optest
