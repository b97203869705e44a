// Cases for mmdeploy::MMCVRoiAlign (input (N, C, H, W), rois (K, 5) = (batch_index, x1, y1, x2, y2);
// output_height, output_width, spatial_scale, sampling_ratio, mode avg|max, aligned 0|1). The
// reference below is mmcv's definition written out: max pooling takes the largest interpolated
// sample (ONNX's RoiAlign differs there; tests/unit/sampling_ops_test.cpp covers it).
#include <algorithm>
#include <cmath>

#include "harness.h"

namespace graft::optest {

namespace {

AttributeMap roi_attrs(int64_t oh, int64_t ow, float scale, int64_t ratio, const char* mode, int64_t aligned) {
  AttributeMap a;
  a.set("output_height", oh);
  a.set("output_width", ow);
  a.set("spatial_scale", scale);
  a.set("sampling_ratio", ratio);
  a.set("mode", std::string(mode));
  a.set("aligned", aligned);
  return a;
}

// Random rois become usable ones: column 0 a batch index in [0, N) (an integer, exact in any
// float dtype), corners ordered except every fourth roi, which stays inverted on purpose.
void make_rois_valid(std::vector<Tensor>& ins) {
  const int64_t n = ins[0].dims()[0];
  Tensor& r = ins[1];
  for (int64_t k = 0; k < r.dims()[0]; ++k) {
    r.set(k * 5, static_cast<double>(static_cast<int64_t>(std::fabs(r.get(k * 5)) * 7.0) % n));
    if (k % 4 == 3) continue;
    for (int j : {1, 2}) {
      const double a = r.get(k * 5 + j), b = r.get(k * 5 + j + 2);
      r.set(k * 5 + j, std::min(a, b));
      r.set(k * 5 + j + 2, std::max(a, b));
    }
  }
}

OpCase roi_case(std::string label, std::vector<int64_t> x_dims, int64_t k, double lo, double hi, AttributeMap attrs) {
  OpCase c;
  c.label = std::move(label);
  c.inputs = {{x_dims, 0.25, 2.0}, {{k, 5}, lo, hi}};
  const int64_t oh = attrs.get_int("output_height", 1).value(), ow = attrs.get_int("output_width", 1).value();
  c.output_dims = {{k, x_dims[1], oh, ow}};
  c.attrs = std::move(attrs);
  c.check_gradients = false;  // forward only
  c.adjust_inputs = make_rois_valid;
  return c;
}

}  // namespace

OpCaseTable mmcv_roi_align_cases() {
  OpCaseTable t;
  t.domain = "mmdeploy";
  t.name = "MMCVRoiAlign";
  // Rois drawn over [-4, 14] on a 9x11 map: some partly or wholly outside.
  for (const char* mode : {"avg", "max"})
    for (int64_t aligned : {0, 1}) {
      const std::string tag = std::string(mode) + (aligned ? "_aligned" : "_legacy");
      t.cases.push_back(roi_case("adaptive_" + tag, {2, 3, 9, 11}, 6, -4.0, 14.0, roi_attrs(3, 4, 1.0f, 0, mode, aligned)));
      t.cases.push_back(roi_case("ratio2_scale_half_" + tag, {3, 2, 9, 11}, 5, -4.0, 26.0,
                                 roi_attrs(2, 2, 0.5f, 2, mode, aligned)));
    }
  t.cases.push_back(roi_case("one_bin_many_rois", {1, 4, 6, 6}, 33, -2.0, 8.0, roi_attrs(1, 1, 1.0f, 1, "avg", 1)));
  t.cases.push_back(roi_case("detector_like_7x7", {2, 8, 16, 20}, 12, 0.0, 80.0, roi_attrs(7, 7, 0.25f, 2, "avg", 1)));

  auto bad = [&](std::string label, AttributeMap a, std::string attr) {
    t.bad_attributes.push_back({std::move(label), std::move(a), {}, std::move(attr)});
  };
  bad("mode_min", roi_attrs(2, 2, 1.0f, 0, "min", 1), "mode");
  bad("aligned_2", roi_attrs(2, 2, 1.0f, 0, "avg", 2), "aligned");
  bad("zero_height", roi_attrs(0, 2, 1.0f, 0, "avg", 1), "output_height");
  bad("negative_width", roi_attrs(2, -1, 1.0f, 0, "avg", 1), "output_width");
  bad("negative_ratio", roi_attrs(2, 2, 1.0f, -1, "avg", 1), "sampling_ratio");
  bad("zero_scale", roi_attrs(2, 2, 0.0f, 0, "avg", 1), "spatial_scale");

  // mmcv's roi_align: bins of roi/output size, sampling_ratio^2 (or ceil(bin)^2) samples per bin, each
  // a bilinear read clamped at the far edges and zero beyond one pixel outside; avg divides by the
  // sample count (at least 1), max keeps the largest sample; aligned shifts by half a pixel, legacy
  // makes each roi at least one pixel.
  t.reference = [](const std::vector<std::vector<double>>& in, const std::vector<std::vector<int64_t>>& dims,
                   const AttributeMap& attrs) {
    const int64_t C = dims[0][1], H = dims[0][2], W = dims[0][3], K = dims[1][0];
    const int64_t oh = attrs.get_int("output_height", 1).value(), ow = attrs.get_int("output_width", 1).value();
    const int64_t ratio = attrs.get_int("sampling_ratio", 0).value();
    const double scale = attrs.get_float("spatial_scale", 1.0f).value();
    const bool avg = attrs.get_string("mode", "avg").value() == "avg";
    const bool aligned = attrs.get_int("aligned", 1).value() != 0;
    const std::vector<double>&x = in[0], &r = in[1];
    auto read = [&](int64_t plane, double yy, double xx) {
      if (yy < -1.0 || yy > H || xx < -1.0 || xx > W) return 0.0;
      yy = std::clamp(yy, 0.0, double(H - 1));
      xx = std::clamp(xx, 0.0, double(W - 1));
      const int64_t y0 = int64_t(yy), x0 = int64_t(xx), y1 = std::min(y0 + 1, H - 1), x1 = std::min(x0 + 1, W - 1);
      const double fy = yy - y0, fx = xx - x0;
      auto at = [&](int64_t a, int64_t b) { return x[size_t(plane * H * W + a * W + b)]; };
      return (1 - fy) * ((1 - fx) * at(y0, x0) + fx * at(y0, x1)) + fy * ((1 - fx) * at(y1, x0) + fx * at(y1, x1));
    };
    std::vector<double> y;
    for (int64_t k = 0; k < K; ++k) {
      const int64_t b = int64_t(r[size_t(k * 5)]);
      const double off = aligned ? 0.5 : 0.0;
      const double sx = r[size_t(k * 5 + 1)] * scale - off, sy = r[size_t(k * 5 + 2)] * scale - off;
      double w = r[size_t(k * 5 + 3)] * scale - off - sx, h = r[size_t(k * 5 + 4)] * scale - off - sy;
      if (!aligned) w = std::max(w, 1.0), h = std::max(h, 1.0);
      const int64_t gy = ratio > 0 ? ratio : std::max<int64_t>(0, int64_t(std::ceil(h / oh)));
      const int64_t gx = ratio > 0 ? ratio : std::max<int64_t>(0, int64_t(std::ceil(w / ow)));
      for (int64_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < oh; ++i)
          for (int64_t j = 0; j < ow; ++j) {
            double sum = 0, best = 0;
            for (int64_t a = 0; a < gy; ++a)
              for (int64_t q = 0; q < gx; ++q) {
                const double v = read(b * C + c, sy + h / oh * (i + (a + 0.5) / gy), sx + w / ow * (j + (q + 0.5) / gx));
                sum += v;
                best = (a == 0 && q == 0) ? v : std::max(best, v);
              }
            y.push_back(avg ? sum / double(std::max<int64_t>(1, gy * gx)) : best);
          }
    }
    return std::vector<std::vector<double>>{y};
  };
  return t;
}

}  // namespace graft::optest
