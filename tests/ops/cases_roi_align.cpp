// Cases for mmdeploy::MMCVRoiAlign (input (N, C, H, W), rois (K, 5) = (batch_index, x1, y1, x2, y2);
// output_height, output_width, spatial_scale, sampling_ratio, mode avg|max, aligned 0|1) and for
// ROIAlign_TRT (X, rois (K, 4), batch_indices (K); ONNX's semantics with integer-coded attributes).
// The reference below is the definition written out once for both: mmcv's max pooling takes the
// largest interpolated sample, ONNX's (ROIAlign_TRT) the largest weighted corner term of any sample.
#include <algorithm>
#include <cmath>
#include <functional>

#include "case_util.h"
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

// Each roi's corners (x1, y1, x2, y2 from column `first` of `cols`) ordered, except every fourth
// roi, which stays inverted on purpose.
void order_corners(Tensor& r, int64_t cols, int64_t first) {
  for (int64_t k = 0; k < r.dims()[0]; ++k) {
    if (k % 4 == 3) continue;
    for (int64_t j : {first, first + 1}) {
      const double a = r.get(k * cols + j), b = r.get(k * cols + j + 2);
      r.set(k * cols + j, std::min(a, b));
      r.set(k * cols + j + 2, std::max(a, b));
    }
  }
}

// Random mmcv rois become usable ones: column 0 a batch index in [0, N) (an integer, exact in any
// float dtype), then the corners.
void make_rois_valid(std::vector<Tensor>& ins) {
  const int64_t n = ins[0].dims()[0];
  Tensor& r = ins[1];
  for (int64_t k = 0; k < r.dims()[0]; ++k)
    r.set(k * 5, static_cast<double>(static_cast<int64_t>(std::fabs(r.get(k * 5)) * 7.0) % n));
  order_corners(r, 5, 1);
}

// A case over x (N, C, H, W) whose rois input is `rois` (and any inputs after it), K rois.
OpCase roi_case(std::string label, std::vector<int64_t> x_dims, std::vector<CaseInput> rois, AttributeMap attrs,
                std::function<void(std::vector<Tensor>&)> adjust) {
  OpCase c;
  c.label = std::move(label);
  const int64_t k = rois[0].dims[0];
  c.inputs = {{x_dims, 0.25, 2.0}};
  c.inputs.insert(c.inputs.end(), rois.begin(), rois.end());
  const int64_t oh = attrs.get_int("output_height", 1).value(), ow = attrs.get_int("output_width", 1).value();
  c.output_dims = {{k, x_dims[1], oh, ow}};
  c.attrs = std::move(attrs);
  c.adjust_inputs = std::move(adjust);  // the input's gradient is checked; rois get none
  return c;
}

OpCase mmcv_case(std::string label, std::vector<int64_t> x_dims, int64_t k, double lo, double hi, AttributeMap attrs) {
  return roi_case(std::move(label), std::move(x_dims), {{{k, 5}, lo, hi}}, std::move(attrs), make_rois_valid);
}

// RoIAlign written out: bins of roi/output size, sampling_ratio^2 (or ceil(bin)^2) samples per bin,
// each a bilinear read clamped at the far edges and zero beyond one pixel outside; avg divides by
// the sample count (at least 1); max keeps the largest sample (mmcv) or the largest weighted corner
// term of any sample (ONNX); `shift` moves the roi by half a pixel, without it each roi is at least
// one pixel. `boxes` (K, 4) as x1, y1, x2, y2; `batch` the image of each.
struct RoiReference {
  int64_t oh = 1, ow = 1, ratio = 0;
  double scale = 1.0;
  bool avg = true, shift = true, weighted_corner_max = false;
};

// The attributes both ops name alike.
RoiReference reference_of(const AttributeMap& attrs) {
  RoiReference p;
  p.oh = attrs.get_int("output_height", 1).value(), p.ow = attrs.get_int("output_width", 1).value();
  p.ratio = attrs.get_int("sampling_ratio", 0).value();
  p.scale = attrs.get_float("spatial_scale", 1.0f).value();
  return p;
}

std::vector<double> roi_align_reference(const std::vector<double>& x, const std::vector<int64_t>& x_dims,
                                        const std::vector<double>& boxes, const std::vector<int64_t>& batch,
                                        const RoiReference& p) {
  const int64_t C = x_dims[1], H = x_dims[2], W = x_dims[3], K = static_cast<int64_t>(batch.size());
  // The four corner weights and positions of a sample (weights 0 when it reads nothing).
  struct Corners {
    double w[4] = {0, 0, 0, 0};
    int64_t at[4] = {0, 0, 0, 0};
  };
  auto corners = [&](double yy, double xx) {
    Corners c;
    if (yy < -1.0 || yy > H || xx < -1.0 || xx > W) return c;
    yy = std::clamp(yy, 0.0, double(H - 1));
    xx = std::clamp(xx, 0.0, double(W - 1));
    const int64_t y0 = int64_t(yy), x0 = int64_t(xx), y1 = std::min(y0 + 1, H - 1), x1 = std::min(x0 + 1, W - 1);
    const double fy = yy - y0, fx = xx - x0;
    const double w[4] = {(1 - fy) * (1 - fx), (1 - fy) * fx, fy * (1 - fx), fy * fx};
    const int64_t at[4] = {y0 * W + x0, y0 * W + x1, y1 * W + x0, y1 * W + x1};
    for (int t = 0; t < 4; ++t) c.w[t] = w[t], c.at[t] = at[t];
    return c;
  };
  std::vector<double> y;
  for (int64_t k = 0; k < K; ++k) {
    const int64_t b = batch[size_t(k)];
    const double off = p.shift ? 0.5 : 0.0;
    const double sx = boxes[size_t(k * 4)] * p.scale - off, sy = boxes[size_t(k * 4 + 1)] * p.scale - off;
    double w = boxes[size_t(k * 4 + 2)] * p.scale - off - sx, h = boxes[size_t(k * 4 + 3)] * p.scale - off - sy;
    if (!p.shift) w = std::max(w, 1.0), h = std::max(h, 1.0);
    const int64_t gy = p.ratio > 0 ? p.ratio : std::max<int64_t>(0, int64_t(std::ceil(h / p.oh)));
    const int64_t gx = p.ratio > 0 ? p.ratio : std::max<int64_t>(0, int64_t(std::ceil(w / p.ow)));
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < p.oh; ++i)
        for (int64_t j = 0; j < p.ow; ++j) {
          double sum = 0, best = 0;
          for (int64_t a = 0; a < gy; ++a)
            for (int64_t q = 0; q < gx; ++q) {
              const Corners s = corners(sy + h / p.oh * (i + (a + 0.5) / gy), sx + w / p.ow * (j + (q + 0.5) / gx));
              double v = 0, top = 0;
              for (int t = 0; t < 4; ++t) {
                const double term = s.w[t] * x[size_t((b * C + c) * H * W + s.at[t])];
                v += term;
                top = t == 0 ? term : std::max(top, term);
              }
              sum += v;
              const double m = p.weighted_corner_max ? top : v;
              best = (a == 0 && q == 0) ? m : std::max(best, m);
            }
          y.push_back(p.avg ? sum / double(std::max<int64_t>(1, gy * gx)) : best);
        }
  }
  return y;
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
      t.cases.push_back(mmcv_case("adaptive_" + tag, {2, 3, 9, 11}, 6, -4.0, 14.0, roi_attrs(3, 4, 1.0f, 0, mode, aligned)));
      t.cases.push_back(mmcv_case("ratio2_scale_half_" + tag, {3, 2, 9, 11}, 5, -4.0, 26.0,
                                 roi_attrs(2, 2, 0.5f, 2, mode, aligned)));
      // Max pooling: samples of a bin may lie within a finite-difference step of each other.
      for (size_t i = t.cases.size() - 2; i < t.cases.size(); ++i)
        t.cases[i].fd_piecewise_linear = std::string(mode) == "max";
    }
  t.cases.push_back(mmcv_case("one_bin_many_rois", {1, 4, 6, 6}, 33, -2.0, 8.0, roi_attrs(1, 1, 1.0f, 1, "avg", 1)));
  t.cases.push_back(mmcv_case("detector_like_7x7", {2, 8, 16, 20}, 12, 0.0, 80.0, roi_attrs(7, 7, 0.25f, 2, "avg", 1)));

  auto bad = [&](std::string label, AttributeMap a, std::string attr) {
    t.bad_attributes.push_back({std::move(label), std::move(a), {}, std::move(attr)});
  };
  bad("mode_min", roi_attrs(2, 2, 1.0f, 0, "min", 1), "mode");
  bad("aligned_2", roi_attrs(2, 2, 1.0f, 0, "avg", 2), "aligned");
  bad("zero_height", roi_attrs(0, 2, 1.0f, 0, "avg", 1), "output_height");
  bad("negative_width", roi_attrs(2, -1, 1.0f, 0, "avg", 1), "output_width");
  bad("negative_ratio", roi_attrs(2, 2, 1.0f, -1, "avg", 1), "sampling_ratio");
  bad("zero_scale", roi_attrs(2, 2, 0.0f, 0, "avg", 1), "spatial_scale");

  t.reference = [](const std::vector<std::vector<double>>& in, const std::vector<std::vector<int64_t>>& dims,
                   const AttributeMap& attrs) {
    RoiReference p = reference_of(attrs);
    p.avg = attrs.get_string("mode", "avg").value() == "avg";
    p.shift = attrs.get_int("aligned", 1).value() != 0;
    std::vector<double> boxes;
    std::vector<int64_t> batch;
    for (int64_t k = 0; k < dims[1][0]; ++k) {
      batch.push_back(int64_t(in[1][size_t(k * 5)]));
      for (int j = 1; j < 5; ++j) boxes.push_back(in[1][size_t(k * 5 + j)]);
    }
    return std::vector<std::vector<double>>{roi_align_reference(in[0], dims[0], boxes, batch, p)};
  };
  return t;
}

namespace {

AttributeMap trt_attrs(int64_t oh, int64_t ow, float scale, int64_t ratio, int64_t mode, int64_t shift) {
  AttributeMap a;
  a.set("output_height", oh);
  a.set("output_width", ow);
  a.set("spatial_scale", scale);
  a.set("sampling_ratio", ratio);
  a.set("mode", mode);
  a.set("coordinate_transformation_mode", shift);
  return a;
}

// rois (K, 4) and batch indices drawn in [0, N).
OpCase trt_case(std::string label, std::vector<int64_t> x_dims, int64_t k, double lo, double hi, AttributeMap attrs) {
  const double last_image = static_cast<double>(x_dims[0] - 1);
  return roi_case(std::move(label), std::move(x_dims), {{{k, 4}, lo, hi}, {{k}, 0.0, last_image}}, std::move(attrs),
                  [](std::vector<Tensor>& ins) { order_corners(ins[1], 4, 0); });
}

}  // namespace

OpCaseTable roi_align_trt_cases() {
  OpCaseTable t;
  t.name = "ROIAlign_TRT";
  for (int64_t mode : {1, 0})
    for (int64_t shift : {0, 1}) {
      const std::string tag = std::string(mode ? "avg" : "max") + (shift ? "_half_pixel" : "_output_half_pixel");
      t.cases.push_back(trt_case("adaptive_" + tag, {2, 3, 9, 11}, 6, -4.0, 14.0, trt_attrs(3, 4, 1.0f, 0, mode, shift)));
      t.cases.push_back(trt_case("ratio2_scale_half_" + tag, {3, 2, 9, 11}, 5, -4.0, 26.0,
                                 trt_attrs(2, 2, 0.5f, 2, mode, shift)));
      for (size_t i = t.cases.size() - 2; i < t.cases.size(); ++i) t.cases[i].fd_piecewise_linear = mode == 0;  // max
    }
  t.cases.push_back(trt_case("detector_like_7x7", {2, 8, 16, 20}, 12, 0.0, 80.0, trt_attrs(7, 7, 0.25f, 2, 1, 1)));

  auto bad = [&](std::string label, AttributeMap a, std::string attr) {
    t.bad_attributes.push_back({std::move(label), std::move(a), {}, std::move(attr)});
  };
  bad("mode_2", trt_attrs(2, 2, 1.0f, 0, 2, 1), "mode");
  bad("transformation_mode_2", trt_attrs(2, 2, 1.0f, 0, 1, 2), "coordinate_transformation_mode");
  bad("zero_height", trt_attrs(0, 2, 1.0f, 0, 1, 1), "output_height");
  bad("negative_ratio", trt_attrs(2, 2, 1.0f, -1, 1, 1), "sampling_ratio");
  bad("zero_scale", trt_attrs(2, 2, 0.0f, 0, 1, 1), "spatial_scale");

  t.reference = [](const std::vector<std::vector<double>>& in, const std::vector<std::vector<int64_t>>& dims,
                   const AttributeMap& attrs) {
    RoiReference p = reference_of(attrs);
    p.avg = attrs.get_int("mode", 1).value() == 1;
    p.shift = attrs.get_int("coordinate_transformation_mode", 1).value() == 1;
    p.weighted_corner_max = true;
    std::vector<int64_t> batch;
    for (double b : in[2]) batch.push_back(int64_t(b));
    return std::vector<std::vector<double>>{roi_align_reference(in[0], dims[0], in[1], batch, p)};
  };
  return t;
}

namespace {

// The attributes ROIAlign_TRT and ONNX's RoiAlign name alike.
AttributeMap reference_attrs(const AttributeMap& a) {
  return trt_attrs(a.get_int("output_height", 1).value(), a.get_int("output_width", 1).value(),
                   a.get_float("spatial_scale", 1.0f).value(), a.get_int("sampling_ratio", 0).value(), 0, 0);
}

}  // namespace

// ONNX's RoiAlign (opset 16): ROIAlign_TRT's inputs and semantics (its max is ONNX's weighted-corner
// max) under string attributes and int64 batch indices; the reference is that table's.
OpCaseTable onnx_roi_align_cases() {
  OpCaseTable t = builtin_table("RoiAlign", nullptr, 16);
  t.cuda_dtypes = {DataType::kFloat32};  // the CUDA kernel is float32's
  auto attrs = [](int64_t oh, int64_t ow, float scale, int64_t ratio, const char* mode, const char* transform) {
    AttributeMap a = trt_attrs(oh, ow, scale, ratio, 0, 0);
    a.set("mode", std::string(mode));
    a.set("coordinate_transformation_mode", std::string(transform));
    return a;
  };
  auto onnx_case = [](std::string label, std::vector<int64_t> x_dims, int64_t k, double hi, AttributeMap a) {
    CaseInput batch{{k}, 0.0, static_cast<double>(x_dims[0] - 1)};
    batch.dtype = DataType::kInt64;
    return roi_case(std::move(label), std::move(x_dims), {{{k, 4}, -4.0, hi}, batch}, std::move(a),
                    [](std::vector<Tensor>& ins) { order_corners(ins[1], 4, 0); });
  };
  for (const char* mode : {"avg", "max"})
    for (const char* transform : {"half_pixel", "output_half_pixel"}) {
      const std::string tag = std::string(mode) + "_" + transform;
      t.cases.push_back(onnx_case("adaptive_" + tag, {2, 3, 9, 11}, 6, 14.0, attrs(3, 4, 1.0f, 0, mode, transform)));
      t.cases.push_back(onnx_case("ratio2_scale_half_" + tag, {3, 2, 9, 11}, 5, 26.0, attrs(2, 2, 0.5f, 2, mode, transform)));
    }
  const ReferenceFn trt_formula = roi_align_trt_cases().reference;
  t.reference = [trt_formula](const std::vector<std::vector<double>>& in, const std::vector<std::vector<int64_t>>& dims,
                              const AttributeMap& attrs) {
    const int64_t mode = attrs.get_string("mode", "avg").value() == "avg" ? 1 : 0;
    const int64_t shift = attrs.get_string("coordinate_transformation_mode", "half_pixel").value() == "half_pixel" ? 1 : 0;
    AttributeMap a = reference_attrs(attrs);
    a.set("mode", mode);
    a.set("coordinate_transformation_mode", shift);
    return trt_formula(in, dims, a);
  };
  return t;
}

std::vector<OpCaseTable> roi_align_case_tables() { return {mmcv_roi_align_cases(), roi_align_trt_cases(), onnx_roi_align_cases()}; }

}  // namespace graft::optest
