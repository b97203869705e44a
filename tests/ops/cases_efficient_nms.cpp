// Cases for EfficientNMS_TRT: boxes (B, N, 4) or (B, N, C, 4), scores (B, N, C), optional anchors
// (1 or B, N, 4) -> num_detections (B, 1), detection_boxes (B, K, 4), detection_scores (B, K),
// detection_classes (B, K), K = max_output_boxes. Discrete decisions are compared exactly: every
// dtype's kernel computes in double on the same (rounded) inputs as the float64 reference.
#include <algorithm>
#include <array>
#include <cmath>

#include "harness.h"

namespace graft::optest {
namespace {

AttributeMap nms_attrs(float score, float iou, int64_t max_out) {
  AttributeMap a;
  a.set("score_threshold", score);
  a.set("iou_threshold", iou);
  a.set("max_output_boxes", max_out);
  return a;
}

OpCase nms_case(std::string label, int64_t b, int64_t n, int64_t c, AttributeMap attrs,
                bool per_class = false) {
  OpCase k;
  k.label = std::move(label);
  std::vector<int64_t> box_dims =
      per_class ? std::vector<int64_t>{b, n, c, 4} : std::vector<int64_t>{b, n, 4};
  k.inputs = {{box_dims, 0.0, 10.0}, {{b, n, c}, 0.0, 1.0}, {{}, 0.0, 0.0, /*omitted=*/true}};
  const int64_t max_out = attrs.get_int("max_output_boxes", 100).value();
  k.attrs = std::move(attrs);
  k.output_dims = {{b, 1}, {b, max_out, 4}, {b, max_out}, {b, max_out}};
  k.check_gradients = false;
  return k;
}

// Written from the description in ops/efficient_nms/README.md, in a different order than the
// kernel: corners first, then repeated "best remaining candidate, drop what it covers".
std::vector<std::vector<double>> reference(const std::vector<std::vector<double>>& in,
                                           const std::vector<std::vector<int64_t>>& dims,
                                           const AttributeMap& attrs) {
  const double score_thr = attrs.get_float("score_threshold", 0.5f).value();
  const double iou_thr = attrs.get_float("iou_threshold", 0.5f).value();
  const int64_t k = attrs.get_int("max_output_boxes", 100).value();
  const int64_t background = attrs.get_int("background_class", -1).value();
  const bool center = attrs.get_int("box_coding", 0).value() == 1;
  const bool sigmoid = attrs.get_int("score_activation", 0).value() == 1;
  const bool agnostic = attrs.get_int("class_agnostic", 0).value() == 1;
  const int64_t b = dims[1][0], n = dims[1][1], c = dims[1][2];
  const bool per_class = dims[0].size() == 4;
  const bool anchors = !dims[2].empty();
  std::vector<std::vector<double>> out = {std::vector<double>(b, 0.0), std::vector<double>(b * k * 4, 0.0),
                                          std::vector<double>(b * k, 0.0), std::vector<double>(b * k, 0.0)};
  auto corners = [&](int64_t img, int64_t i, int64_t cls) {
    const double* v = &in[0][per_class ? ((img * n + i) * c + cls) * 4 : (img * n + i) * 4];
    std::array<double, 4> r = {v[0], v[1], v[2], v[3]};
    if (anchors) {
      const double* a = &in[2][((dims[2][0] == 1 ? 0 : img) * n + i) * 4];
      if (!center) {
        r = {std::min(v[0], v[2]) + std::min(a[0], a[2]), std::min(v[1], v[3]) + std::min(a[1], a[3]),
             std::max(v[0], v[2]) + std::max(a[0], a[2]), std::max(v[1], v[3]) + std::max(a[1], a[3])};
      } else {
        r = {a[0] + v[0] * a[2], a[1] + v[1] * a[3], a[2] * std::exp(v[2]), a[3] * std::exp(v[3])};
      }
    }
    if (center) r = {r[0] - r[2] / 2, r[1] - r[3] / 2, r[0] + r[2] / 2, r[1] + r[3] / 2};
    return r;
  };
  auto overlap = [](std::array<double, 4> p, std::array<double, 4> q) {
    auto lo = [](const std::array<double, 4>& x, int a) { return std::min(x[a], x[a + 2]); };
    auto hi = [](const std::array<double, 4>& x, int a) { return std::max(x[a], x[a + 2]); };
    const double w = std::min(hi(p, 0), hi(q, 0)) - std::max(lo(p, 0), lo(q, 0));
    const double h = std::min(hi(p, 1), hi(q, 1)) - std::max(lo(p, 1), lo(q, 1));
    if (w <= 0 || h <= 0) return 0.0;
    const double ap = (hi(p, 0) - lo(p, 0)) * (hi(p, 1) - lo(p, 1));
    const double aq = (hi(q, 0) - lo(q, 0)) * (hi(q, 1) - lo(q, 1));
    return w * h / (ap + aq - w * h);
  };
  const double raw_thr = sigmoid ? (score_thr <= 0   ? -INFINITY
                                    : score_thr >= 1 ? INFINITY
                                                     : std::log(score_thr / (1 - score_thr)))
                                 : score_thr;
  for (int64_t img = 0; img < b; ++img) {
    struct Cand {
      double s;
      int64_t i, cls;
      bool alive;
    };
    std::vector<Cand> cands;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t cls = 0; cls < c; ++cls) {
        const double s = in[1][(img * n + i) * c + cls];
        if (cls != background && s >= raw_thr) cands.push_back({s, i, cls, true});
      }
    std::stable_sort(cands.begin(), cands.end(), [](const Cand& x, const Cand& y) { return x.s > y.s; });
    if (cands.size() > 4096) cands.resize(4096);
    int64_t found = 0;
    for (size_t j = 0; j < cands.size() && found < k; ++j) {
      if (!cands[j].alive) continue;
      const auto box = corners(img, cands[j].i, cands[j].cls);
      const int64_t slot = img * k + found++;
      for (int e = 0; e < 4; ++e) out[1][slot * 4 + e] = box[e];
      out[2][slot] = sigmoid ? 1 / (1 + std::exp(-cands[j].s)) : cands[j].s;
      out[3][slot] = static_cast<double>(cands[j].cls);
      for (size_t m = j + 1; m < cands.size(); ++m)
        if ((agnostic || cands[m].cls == cands[j].cls) &&
            overlap(box, corners(img, cands[m].i, cands[m].cls)) >= iou_thr)
          cands[m].alive = false;
    }
    out[0][img] = static_cast<double>(found);
  }
  return out;
}

}  // namespace

OpCaseTable efficient_nms_cases() {
  OpCaseTable t;
  t.name = "EfficientNMS_TRT";
  t.cases.push_back(nms_case("corners_3_classes", 2, 40, 3, nms_attrs(0.3f, 0.5f, 20)));
  {
    AttributeMap a = nms_attrs(0.2f, 0.4f, 5);  // fewer outputs than survivors: the limit stops it
    a.set("class_agnostic", int64_t{1});
    a.set("background_class", int64_t{0});
    t.cases.push_back(nms_case("agnostic_background_0", 2, 30, 4, a));
  }
  {
    AttributeMap a = nms_attrs(0.4f, 0.5f, 30);
    a.set("box_coding", int64_t{1});
    a.set("score_activation", int64_t{1});
    OpCase k = nms_case("center_size_sigmoid", 1, 50, 2, a);
    k.inputs[1].lo = -4.0;  // logits
    k.inputs[1].hi = 4.0;
    k.inputs[0].lo = 0.5;  // centres and sizes
    t.cases.push_back(k);
  }
  t.cases.push_back(nms_case("per_class_boxes", 2, 25, 3, nms_attrs(0.25f, 0.3f, 40), /*per_class=*/true));
  {
    OpCase k = nms_case("decode_corners_shared_anchors", 2, 30, 2, nms_attrs(0.3f, 0.5f, 16));
    k.inputs[0].lo = -0.5;
    k.inputs[0].hi = 0.5;
    k.inputs[2] = {{1, 30, 4}, 0.0, 10.0};
    t.cases.push_back(k);
  }
  {
    AttributeMap a = nms_attrs(0.3f, 0.5f, 16);
    a.set("box_coding", int64_t{1});
    OpCase k = nms_case("decode_center_size_per_image_anchors", 2, 30, 2, a);
    k.inputs[0].lo = -0.3;
    k.inputs[0].hi = 0.3;
    k.inputs[2] = {{2, 30, 4}, 0.5, 8.0};
    t.cases.push_back(k);
  }
  t.cases.push_back(nms_case("nothing_passes", 2, 10, 2, nms_attrs(1.5f, 0.5f, 8)));
  t.cases.push_back(nms_case("iou_zero_one_per_class", 1, 20, 3, nms_attrs(0.1f, 0.0f, 10)));
  // About 5,400 of 6,000 (box, class) pairs pass per image: more than the 4,096 candidates the
  // reference keeps, so the cap (and, in float16, its tie rule among equal scores) decides the set.
  t.cases.push_back(nms_case("over_4096_candidates", 2, 1500, 4, nms_attrs(0.1f, 0.5f, 100)));
  {
    AttributeMap bad = nms_attrs(0.3f, 0.5f, 10);
    bad.set("box_coding", int64_t{2});
    t.bad_attributes.push_back({"box_coding_2", bad, {}, "box_coding"});
  }
  t.bad_attributes.push_back({"iou_above_1", nms_attrs(0.3f, 1.5f, 10), {}, "iou_threshold"});
  t.bad_attributes.push_back({"zero_max_output_boxes", nms_attrs(0.3f, 0.5f, 0), {}, "max_output_boxes"});
  t.bad_attributes.push_back(
      {"huge_max_output_boxes", nms_attrs(0.3f, 0.5f, int64_t{1} << 40), {}, "max_output_boxes"});
  t.reference = reference;
  return t;
}

std::vector<OpCaseTable> efficient_nms_case_tables() { return {efficient_nms_cases()}; }

}  // namespace graft::optest
