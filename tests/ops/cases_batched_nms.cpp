// Cases for the batched NMS ops (ops/batched_nms): TensorRT's BatchedNMSDynamic_TRT and mmdeploy's
// TRTBatchedNMS. Discrete decisions are compared exactly: every dtype's kernel computes in double on
// the same (rounded) inputs as the float64 reference. Box corners are drawn independently, so many
// boxes have their corners the wrong way round: TensorRT's rule orders them, mmdeploy's does not.
#include <algorithm>
#include <array>
#include <tuple>

#include "harness.h"

namespace graft::optest {
namespace {

using Box = std::array<double, 4>;

// Written from ops/batched_nms/README.md, in another shape than the kernel: per class, repeatedly
// take the best remaining candidate and drop what it covers; then one sort of all kept detections.
struct Rule {
  bool trt;
  int64_t classes, background, top_k, keep;
  double score_thr, iou_thr;
  bool normalized, caffe, clip;
};

double overlap(const Rule& r, Box p, Box q) {
  if (r.trt)
    for (Box* b : {&p, &q}) *b = {std::min((*b)[0], (*b)[2]), std::min((*b)[1], (*b)[3]), std::max((*b)[0], (*b)[2]),
                                  std::max((*b)[1], (*b)[3])};
  const double size_add = r.trt && !r.normalized ? 1.0 : 0.0;
  const double inter_add = r.trt && !r.normalized && r.caffe ? 1.0 : 0.0;
  const bool apart = q[0] > p[2] || q[2] < p[0] || q[1] > p[3] || q[3] < p[1];
  const double w = (apart ? 0.0 : std::min(p[2], q[2]) - std::max(p[0], q[0])) + inter_add;
  const double h = (apart ? 0.0 : std::min(p[3], q[3]) - std::max(p[1], q[1])) + inter_add;
  if (w <= 0 || h <= 0) return 0.0;
  auto size = [&](const Box& b) {
    return b[2] < b[0] || b[3] < b[1] ? 0.0 : (b[2] - b[0] + size_add) * (b[3] - b[1] + size_add);
  };
  return w * h / (size(p) + size(q) - w * h);
}

std::vector<std::vector<double>> reference(const Rule& r, const std::vector<std::vector<double>>& in,
                                           const std::vector<std::vector<int64_t>>& dims) {
  const int64_t b = dims[1][0], n = dims[1][1], c = r.classes, k = r.keep;
  const bool per_class = dims[0].size() == 4 && dims[0][2] != 1;
  const int64_t top_k = r.trt ? std::min(r.top_k, n) : (r.top_k > 0 && r.top_k <= n ? r.top_k : n);
  auto box = [&](int64_t img, int64_t i, int64_t cls) {
    const double* v = &in[0][per_class ? ((img * n + i) * c + cls) * 4 : (img * n + i) * 4];
    return Box{v[0], v[1], v[2], v[3]};
  };
  std::vector<std::vector<double>> out;
  if (r.trt)
    out = {std::vector<double>(b, 0.0), std::vector<double>(b * k * 4, 0.0), std::vector<double>(b * k, 0.0),
           std::vector<double>(b * k, -1.0)};
  else
    out = {std::vector<double>(b * k * 5, 0.0), std::vector<double>(b * k, -1.0), std::vector<double>(b * k, -1.0)};
  for (int64_t img = 0; img < b; ++img) {
    std::vector<std::tuple<double, int64_t, int64_t>> dets;  // (-score, class, box): sorts best first
    for (int64_t cls = 0; cls < c; ++cls) {
      if (cls == r.background) continue;
      std::vector<std::pair<double, int64_t>> pool;  // (-score, box)
      for (int64_t i = 0; i < n; ++i) {
        const double s = in[1][(img * n + i) * c + cls];
        if (s > r.score_thr) pool.push_back({-s, i});
      }
      std::sort(pool.begin(), pool.end());
      if (static_cast<int64_t>(pool.size()) > top_k) pool.resize(top_k);
      while (!pool.empty()) {
        const auto [neg, i] = pool.front();
        dets.push_back({neg, cls, i});
        std::vector<std::pair<double, int64_t>> rest;
        for (size_t j = 1; j < pool.size(); ++j)
          if (!(overlap(r, box(img, i, cls), box(img, pool[j].second, cls)) > r.iou_thr)) rest.push_back(pool[j]);
        pool = std::move(rest);
      }
    }
    std::sort(dets.begin(), dets.end());
    const int64_t found = std::min<int64_t>(k, static_cast<int64_t>(dets.size()));
    if (r.trt) out[0][img] = static_cast<double>(found);
    for (int64_t j = 0; j < found; ++j) {
      const auto [neg, cls, i] = dets[j];
      Box v = box(img, i, cls);
      if (r.clip)
        for (double& x : v) x = std::clamp(x, 0.0, 1.0);
      const int64_t slot = img * k + j;
      if (r.trt) {
        for (int e = 0; e < 4; ++e) out[1][slot * 4 + e] = v[e];
        out[2][slot] = -neg;
        out[3][slot] = static_cast<double>(cls);
      } else {
        for (int e = 0; e < 4; ++e) out[0][slot * 5 + e] = v[e];
        out[0][slot * 5 + 4] = -neg;
        out[1][slot] = static_cast<double>(cls);
        out[2][slot] = static_cast<double>(per_class ? cls * n + i : i);
      }
    }
  }
  return out;
}

// ---- BatchedNMSDynamic_TRT ----------------------------------------------------------------------

AttributeMap trt_attrs(int64_t classes, int64_t top_k, int64_t keep, float score, float iou, bool share = true) {
  AttributeMap a;
  a.set("shareLocation", int64_t{share ? 1 : 0});
  a.set("backgroundLabelId", int64_t{-1});
  a.set("numClasses", classes);
  a.set("topK", top_k);
  a.set("keepTopK", keep);
  a.set("scoreThreshold", score);
  a.set("iouThreshold", iou);
  return a;
}

OpCase trt_case(std::string label, int64_t b, int64_t n, int64_t c, AttributeMap attrs, double box_hi = 1.0) {
  OpCase k;
  k.label = std::move(label);
  const bool share = attrs.get_int("shareLocation", 1).value() == 1;
  k.inputs = {{{b, n, share ? 1 : c, 4}, 0.0, box_hi}, {{b, n, c}, 0.0, 1.0}};
  const int64_t keep = attrs.get_int("keepTopK", 1).value();
  k.attrs = std::move(attrs);
  k.output_dims = {{b, 1}, {b, keep, 4}, {b, keep}, {b, keep}};
  k.check_gradients = false;
  return k;
}

Rule trt_rule(const AttributeMap& a) {
  return {true,
          a.get_int("numClasses", 1).value(),
          a.get_int("backgroundLabelId", -1).value(),
          a.get_int("topK", 1).value(),
          a.get_int("keepTopK", 1).value(),
          a.get_float("scoreThreshold", 0.0f).value(),
          a.get_float("iouThreshold", 0.5f).value(),
          a.get_int("isNormalized", 1).value() == 1,
          a.get_int("caffeSemantics", 1).value() == 1,
          a.get_int("clipBoxes", 1).value() == 1};
}

// ---- TRTBatchedNMS (mmdeploy) -------------------------------------------------------------------

AttributeMap mmdeploy_attrs(int64_t classes, int64_t top_k, int64_t keep, float score, float iou) {
  AttributeMap a;
  a.set("num_classes", classes);
  a.set("topk", top_k);
  a.set("keep_topk", keep);
  a.set("score_threshold", score);
  a.set("iou_threshold", iou);
  a.set("clip_boxes", int64_t{0});  // what mmdeploy's export writes
  a.set("return_index", int64_t{1});
  return a;
}

OpCase mmdeploy_case(std::string label, int64_t b, int64_t n, int64_t c, AttributeMap attrs,
                     std::vector<int64_t> box_dims, double box_lo = 0.0, double box_hi = 10.0) {
  OpCase k;
  k.label = std::move(label);
  k.inputs = {{std::move(box_dims), box_lo, box_hi}, {{b, n, c}, 0.0, 1.0}};
  const int64_t keep = attrs.get_int("keep_topk", 1).value();
  k.attrs = std::move(attrs);
  k.output_dims = {{b, keep, 5}, {b, keep}, {b, keep}};
  k.check_gradients = false;
  return k;
}

Rule mmdeploy_rule(const AttributeMap& a) {
  return {false,
          a.get_int("num_classes", 1).value(),
          a.get_int("background_label_id", -1).value(),
          a.get_int("topk", -1).value(),
          a.get_int("keep_topk", 1).value(),
          a.get_float("score_threshold", 0.0f).value(),
          a.get_float("iou_threshold", 0.5f).value(),
          false,
          false,
          a.get_int("clip_boxes", 1).value() == 1};
}

}  // namespace

OpCaseTable batched_nms_dynamic_trt_cases() {
  OpCaseTable t;
  t.name = "BatchedNMSDynamic_TRT";
  t.cases.push_back(trt_case("normalized_shared_clip", 2, 40, 3, trt_attrs(3, 20, 15, 0.3f, 0.5f)));
  {
    AttributeMap a = trt_attrs(3, 25, 25, 0.2f, 0.4f, /*share=*/false);
    a.set("isNormalized", int64_t{0});
    a.set("clipBoxes", int64_t{0});
    t.cases.push_back(trt_case("pixels_caffe_per_class_boxes", 2, 25, 3, a, 10.0));
  }
  {
    AttributeMap a = trt_attrs(2, 30, 12, 0.2f, 0.3f);
    a.set("isNormalized", int64_t{0});
    a.set("caffeSemantics", int64_t{0});
    a.set("clipBoxes", int64_t{0});
    t.cases.push_back(trt_case("pixels_without_caffe", 1, 30, 2, a, 10.0));
  }
  {
    // topK 5 of ~40 candidates per class: the pre-selection decides; the background never shows.
    AttributeMap a = trt_attrs(4, 5, 5, 0.1f, 0.5f);
    a.set("backgroundLabelId", int64_t{0});
    t.cases.push_back(trt_case("top_k_cap_background_0", 2, 50, 4, a));
  }
  t.cases.push_back(trt_case("nothing_passes", 2, 10, 2, trt_attrs(2, 8, 8, 1.5f, 0.5f)));
  t.cases.push_back(trt_case("iou_zero_disjoint_only", 1, 20, 3, trt_attrs(3, 20, 20, 0.1f, 0.0f)));
  {
    OpCase k = trt_case("scores_rank_4", 2, 20, 2, trt_attrs(2, 10, 10, 0.3f, 0.5f));
    k.inputs[1].dims = {2, 20, 2, 1};
    t.cases.push_back(k);
  }
  {
    // Checked with the shapes (the shape function), as TensorRT checks it when building.
    AttributeMap bad = trt_attrs(3, 10, 20, 0.3f, 0.5f);
    t.bad_attributes.push_back({"keep_above_top_k", bad, {{2, 20, 1, 4}, {2, 20, 3}}, "keepTopK"});
  }
  t.bad_attributes.push_back({"top_k_above_4096", trt_attrs(3, 5000, 10, 0.3f, 0.5f), {}, "topK"});
  t.bad_attributes.push_back({"iou_above_1", trt_attrs(3, 10, 10, 0.3f, 1.5f), {}, "iouThreshold"});
  {
    AttributeMap bad = trt_attrs(3, 10, 10, 0.3f, 0.5f);
    bad.set("shareLocation", int64_t{2});
    t.bad_attributes.push_back({"share_location_2", bad, {}, "shareLocation"});
  }
  t.bad_attributes.push_back(
      {"classes_disagree_with_scores", trt_attrs(4, 10, 10, 0.3f, 0.5f), {{2, 20, 1, 4}, {2, 20, 3}}, "numClasses"});
  t.reference = [](const std::vector<std::vector<double>>& in, const std::vector<std::vector<int64_t>>& dims,
                   const AttributeMap& attrs) { return reference(trt_rule(attrs), in, dims); };
  return t;
}

OpCaseTable trt_batched_nms_cases() {
  OpCaseTable t;
  t.domain = "mmdeploy";
  t.name = "TRTBatchedNMS";
  t.cases.push_back(mmdeploy_case("rank_3_boxes", 2, 40, 3, mmdeploy_attrs(3, 20, 15, 0.3f, 0.5f), {2, 40, 4}));
  t.cases.push_back(
      mmdeploy_case("per_class_boxes_all_topk", 2, 25, 3, mmdeploy_attrs(3, -1, 30, 0.2f, 0.4f), {2, 25, 3, 4}));
  t.cases.push_back(
      mmdeploy_case("topk_above_n_means_all", 1, 20, 2, mmdeploy_attrs(2, 100, 8, 0.2f, 0.3f), {1, 20, 1, 4}));
  {
    AttributeMap a = mmdeploy_attrs(4, 6, 6, 0.1f, 0.5f);
    a.set("background_label_id", int64_t{3});
    a.set("clip_boxes", int64_t{1});
    t.cases.push_back(mmdeploy_case("clip_background_3", 2, 50, 4, a, {2, 50, 4}, -0.2, 1.2));
  }
  t.cases.push_back(mmdeploy_case("nothing_passes", 2, 10, 2, mmdeploy_attrs(2, 8, 8, 1.5f, 0.5f), {2, 10, 4}));
  // Hundreds kept in one class: past the 128 kept boxes the CUDA suppression warp holds in
  // registers, so the boxes it loads as it goes are checked too.
  t.cases.push_back(
      mmdeploy_case("past_the_kept_box_cache", 1, 400, 1, mmdeploy_attrs(1, 400, 400, 0.0f, 0.9f), {1, 400, 4}));
  t.bad_attributes.push_back({"zero_keep_topk", mmdeploy_attrs(3, 10, 0, 0.3f, 0.5f), {}, "keep_topk"});
  t.bad_attributes.push_back({"negative_iou", mmdeploy_attrs(3, 10, 10, 0.3f, -0.1f), {}, "iou_threshold"});
  {
    AttributeMap bad = mmdeploy_attrs(3, 10, 10, 0.3f, 0.5f);
    bad.set("return_index", int64_t{2});
    t.bad_attributes.push_back({"return_index_2", bad, {}, "return_index"});
  }
  t.bad_attributes.push_back(
      {"classes_disagree_with_scores", mmdeploy_attrs(2, 10, 10, 0.3f, 0.5f), {{2, 20, 4}, {2, 20, 3}}, "num_classes"});
  t.reference = [](const std::vector<std::vector<double>>& in, const std::vector<std::vector<int64_t>>& dims,
                   const AttributeMap& attrs) { return reference(mmdeploy_rule(attrs), in, dims); };
  return t;
}

std::vector<OpCaseTable> batched_nms_case_tables() { return {batched_nms_dynamic_trt_cases(), trt_batched_nms_cases()}; }

}  // namespace graft::optest
