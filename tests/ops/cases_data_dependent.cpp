// Cases for the ops whose output size depends on the input data: NonZero, Unique and
// NonMaxSuppression (their kernels size the outputs: counted on CUDA, allocated on the CPU) and
// Compress (sized by its condition). The random inputs are arranged (adjust_inputs) so that the count
// is fixed while the values stay fresh: zeros at fixed places, k distinct values repeated in a fixed
// pattern, overlapping box pairs. Each has an independent float64 formula.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <utility>

#include "case_util.h"
#include "harness.h"

namespace graft::optest {

namespace {

// NonZero: the coordinates of the non-zero elements in row-major order, as [rank, count].
OpCaseTable non_zero_cases() {
  OpCaseTable t = builtin_table("NonZero", [](const Values& in, const DimsList& dims, const AttributeMap&) {
    const Ints& d = dims[0];
    std::vector<std::vector<int64_t>> coords(d.size());
    for (size_t i = 0; i < in[0].size(); ++i) {
      if (in[0][i] == 0.0) continue;
      int64_t rem = static_cast<int64_t>(i);
      for (size_t k = d.size(); k-- > 0;) {
        coords[k].push_back(rem % d[k]);
        rem /= d[k];
      }
    }
    std::vector<double> y;
    for (const auto& row : coords) y.insert(y.end(), row.begin(), row.end());
    return Values{y};
  }, 13);
  // Every fifth element zero (the others are random, away from zero): the count is fixed.
  auto zero_every_fifth = [](std::vector<Tensor>& ins) {
    for (int64_t i = 0; i < ins[0].numel(); i += 5) ins[0].set(i, 0.0);
  };
  OpCase floats = make_case("float_3d", {data({3, 4, 5}, 0.5, 3.0)}, {{3, 48}});
  floats.adjust_inputs = zero_every_fifth;
  t.cases.push_back(floats);
  OpCase negative = make_case("negative_1d", {data({23}, -3.0, -0.5)}, {{1, 18}});
  negative.adjust_inputs = zero_every_fifth;
  t.cases.push_back(negative);
  OpCase ints = make_case("int32_2d", {typed({6, 7}, DataType::kInt32, 1, 1000)}, {{2, 33}});
  ints.adjust_inputs = zero_every_fifth;
  t.cases.push_back(ints);
  return t;
}

// Unique (opset 11): the distinct values (or slices along `axis`), sorted ascending (lexicographic
// for slices) or in order of first occurrence; outputs Y, the first occurrence of each, every
// element's index into Y, and the counts.
OpCaseTable unique_cases() {
  OpCaseTable t = builtin_table("Unique", [](const Values& in, const DimsList& dims, const AttributeMap& a) {
    const Ints& d = dims[0];
    const bool has_axis = a.has("axis");
    const int64_t axis = has_axis ? axis_in(a.get_int("axis", 0).value(), d.size()) : 0;
    const int64_t n = has_axis ? d[static_cast<size_t>(axis)] : count(d);
    const int64_t outer = has_axis ? count(d, 0, static_cast<size_t>(axis)) : 1;
    const int64_t inner = has_axis ? count(d, static_cast<size_t>(axis) + 1) : 1;
    auto slice = [&](int64_t j) {
      std::vector<double> s;
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) s.push_back(in[0][static_cast<size_t>((o * n + j) * inner + i)]);
      return s;
    };
    std::vector<int64_t> first;  // first occurrence of each distinct slice, in order of appearance
    std::vector<double> inverse(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) {
      bool seen = false;
      for (int64_t f : first) seen = seen || slice(f) == slice(j);
      if (!seen) first.push_back(j);
    }
    if (a.get_int("sorted", 1).value())
      std::stable_sort(first.begin(), first.end(), [&](int64_t p, int64_t q) { return slice(p) < slice(q); });
    const int64_t k = static_cast<int64_t>(first.size());
    std::vector<double> counts(static_cast<size_t>(k), 0.0), indices;
    for (int64_t j = 0; j < n; ++j)
      for (int64_t u = 0; u < k; ++u)
        if (slice(first[static_cast<size_t>(u)]) == slice(j)) {
          inverse[static_cast<size_t>(j)] = static_cast<double>(u);
          counts[static_cast<size_t>(u)] += 1;
        }
    std::vector<double> y(static_cast<size_t>(outer * k * inner));
    for (int64_t u = 0; u < k; ++u) {
      indices.push_back(static_cast<double>(first[static_cast<size_t>(u)]));
      const std::vector<double> s = slice(first[static_cast<size_t>(u)]);
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i)
          y[static_cast<size_t>((o * k + u) * inner + i)] = s[static_cast<size_t>(o * inner + i)];
    }
    return Values{y, indices, inverse, counts};
  }, 11);
  // Exactly k distinct values: value u is (u - k/2) plus a random quarter, element i takes value
  // (5i + 3) mod k (5 is prime to k, so all k appear).
  auto k_values = [](int64_t k) {
    return [k](std::vector<Tensor>& ins) {
      Tensor& x = ins[0];
      std::vector<double> base(static_cast<size_t>(k));
      for (int64_t u = 0; u < k; ++u) base[static_cast<size_t>(u)] = static_cast<double>(u - k / 2) + 0.25 * x.get(u);
      for (int64_t i = 0; i < x.numel(); ++i) x.set(i, base[static_cast<size_t>((5 * i + 3) % k)]);
    };
  };
  // Along axis 1 of [outer, n, inner]: slice j is a copy of random slice (3j + 1) mod k of k.
  auto k_slices = [](int64_t k) {
    return [k](std::vector<Tensor>& ins) {
      Tensor& x = ins[0];
      const Tensor orig = x.clone();
      const int64_t outer = x.dims()[0], n = x.dims()[1], inner = x.numel() / (outer * n);
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < n; ++j)
          for (int64_t i = 0; i < inner; ++i)
            x.set((o * n + j) * inner + i, orig.get((o * n + (3 * j + 1) % k) * inner + i));
    };
  };
  OpCase flat = make_case("flat_sorted", {data({4, 5}, -1, 1)}, {{7}, {7}, {20}, {7}});
  flat.adjust_inputs = k_values(7);
  t.cases.push_back(flat);
  OpCase unsorted = make_case("flat_first_occurrence", {data({31}, -1, 1)}, {{6}, {6}, {31}, {6}},
                              attr("sorted", int64_t{0}));
  unsorted.adjust_inputs = k_values(6);
  t.cases.push_back(unsorted);
  OpCase slices = make_case("axis_1_slices", {data({3, 6, 2}, -2, 2)}, {{3, 4, 2}, {4}, {6}, {4}}, attr("axis", int64_t{1}));
  slices.adjust_inputs = k_slices(4);
  t.cases.push_back(slices);
  OpCase ints = make_case("int64_flat", {typed({3, 11}, DataType::kInt64, -1000000, 1000000)}, {{9}, {9}, {33}, {9}});
  // Nine distinct values: random multiples of 16 plus u.
  ints.adjust_inputs = [](std::vector<Tensor>& ins) {
    Tensor& x = ins[0];
    std::vector<double> base(9);
    for (int64_t u = 0; u < 9; ++u) base[static_cast<size_t>(u)] = x.get(u) * 16 + static_cast<double>(u);
    for (int64_t i = 0; i < x.numel(); ++i) x.set(i, base[static_cast<size_t>((5 * i + 3) % 9)]);
  };
  t.cases.push_back(ints);
  return t;
}

// IoU of boxes a and b ([y1, x1, y2, x2] corners in any order, or [cx, cy, w, h] centres).
double iou(const double* a, const double* b, bool centre) {
  auto corners = [&](const double* v, double* y1, double* x1, double* y2, double* x2) {
    if (centre) {
      *x1 = v[0] - v[2] / 2, *x2 = v[0] + v[2] / 2, *y1 = v[1] - v[3] / 2, *y2 = v[1] + v[3] / 2;
    } else {
      *y1 = std::min(v[0], v[2]), *y2 = std::max(v[0], v[2]), *x1 = std::min(v[1], v[3]), *x2 = std::max(v[1], v[3]);
    }
  };
  double ay1, ax1, ay2, ax2, by1, bx1, by2, bx2;
  corners(a, &ay1, &ax1, &ay2, &ax2);
  corners(b, &by1, &bx1, &by2, &bx2);
  const double ih = std::max(0.0, std::min(ay2, by2) - std::max(ay1, by1));
  const double iw = std::max(0.0, std::min(ax2, bx2) - std::max(ax1, bx1));
  const double inter = ih * iw;
  const double uni = (ay2 - ay1) * (ax2 - ax1) + (by2 - by1) * (bx2 - bx1) - inter;
  return uni > 0 ? inter / uni : 0.0;
}

// NonMaxSuppression: per batch and class, greedy over scores (descending) above score_threshold,
// keeping a box unless its IoU with a kept one exceeds iou_threshold, at most
// max_output_boxes_per_class; rows [batch, class, box] in batch, class, score order.
OpCaseTable nms_cases() {
  OpCaseTable t = builtin_table("NonMaxSuppression", [](const Values& in, const DimsList& dims, const AttributeMap& a) {
    const int64_t batches = dims[0][0], boxes = dims[0][1], classes = dims[1][1];
    const bool centre = a.get_int("center_point_box", 0).value() == 1;
    const int64_t max_out = in.size() > 2 && !in[2].empty() ? static_cast<int64_t>(in[2][0]) : 0;
    const double iou_max = in.size() > 3 && !in[3].empty() ? in[3][0] : 0.0;
    const bool has_floor = in.size() > 4 && !in[4].empty();
    std::vector<double> y;
    for (int64_t b = 0; b < batches; ++b)
      for (int64_t c = 0; c < classes; ++c) {
        const double* score = &in[1][static_cast<size_t>((b * classes + c) * boxes)];
        std::vector<int64_t> order;
        for (int64_t i = 0; i < boxes; ++i)
          if (!has_floor || score[i] > in[4][0]) order.push_back(i);
        std::stable_sort(order.begin(), order.end(), [&](int64_t p, int64_t q) { return score[p] > score[q]; });
        std::vector<int64_t> kept;
        for (int64_t i : order) {
          if (static_cast<int64_t>(kept.size()) >= max_out) break;
          bool keep = true;
          for (int64_t k : kept)
            keep = keep && iou(&in[0][static_cast<size_t>((b * boxes + i) * 4)],
                               &in[0][static_cast<size_t>((b * boxes + k) * 4)], centre) <= iou_max;
          if (keep) kept.push_back(i);
        }
        for (int64_t i : kept) y.insert(y.end(), {static_cast<double>(b), static_cast<double>(c), static_cast<double>(i)});
      }
    return Values{y};
  }, 11);
  // Six boxes per image in three pairs: a pair's two boxes overlap (IoU above 0.6), different
  // pairs are ten apart (IoU 0). Coordinates: the pair's base plus a random 0.3 at most. Scores: a
  // random order of the distinct values (r + 1) / 8, exact in float16.
  auto pairs_and_ranks = [](bool centre) {
    return [centre](std::vector<Tensor>& ins) {
      Tensor& boxes = ins[0];
      Tensor& scores = ins[1];
      const int64_t n = boxes.dims()[1];
      for (int64_t b = 0; b < boxes.dims()[0]; ++b)
        for (int64_t i = 0; i < n; ++i) {
          const double p = static_cast<double>(i / 2) * 10.0;
          const double base[4] = {centre ? p + 2.5 : 0.0, centre ? 2.5 : p, centre ? 5.0 : 5.0, centre ? 5.0 : p + 5.0};
          for (int64_t k = 0; k < 4; ++k) {
            const int64_t at = (b * n + i) * 4 + k;
            boxes.set(at, base[k] + 0.3 * boxes.get(at));
          }
        }
      for (int64_t row = 0; row < scores.numel() / n; ++row) {
        std::vector<int64_t> order(static_cast<size_t>(n));
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(),
                         [&](int64_t p, int64_t q) { return scores.get(row * n + p) < scores.get(row * n + q); });
        for (int64_t r = 0; r < n; ++r) scores.set(row * n + order[static_cast<size_t>(r)], static_cast<double>(r + 1) / 8.0);
      }
    };
  };
  auto scalar_i64 = [](int64_t v) { return fixed({1}, DataType::kInt64, {static_cast<double>(v)}); };
  auto scalar_f32 = [](double v) { return fixed({1}, DataType::kFloat32, {v}); };
  CaseInput none;
  none.omitted = true;
  // Two of the three pairs per class survive max_output_boxes_per_class = 2.
  OpCase corners = make_case("corner_boxes", {data({2, 6, 4}, 0, 1), data({2, 2, 6}, 0, 1), scalar_i64(2), scalar_f32(0.5), none},
                             {{8, 3}});
  corners.adjust_inputs = pairs_and_ranks(false);
  t.cases.push_back(corners);
  // A score floor of 0.3 leaves 4 of 6 boxes, in at least two pairs: again two per class.
  OpCase floor = make_case("centre_boxes_score_floor",
                           {data({1, 6, 4}, 0, 1), data({1, 3, 6}, 0, 1), scalar_i64(2), scalar_f32(0.5), scalar_f32(0.3)},
                           {{6, 3}}, attr("center_point_box", int64_t{1}));
  floor.adjust_inputs = pairs_and_ranks(true);
  t.cases.push_back(floor);
  // IoU threshold 1 suppresses nothing: all six boxes, within the limit of 10.
  OpCase all = make_case("threshold_one_keeps_all", {data({1, 6, 4}, 0, 1), data({1, 1, 6}, 0, 1), scalar_i64(10), scalar_f32(1.0), none},
                         {{6, 3}});
  all.adjust_inputs = pairs_and_ranks(false);
  t.cases.push_back(all);
  // float32 only on both backends: ONNX's type constraint, which inference checks.
  t.cpu_dtypes = {DataType::kFloat32};
  t.cuda_dtypes = {DataType::kFloat32};
  t.reference_dtype = DataType::kFloat32;
  return t;
}

// Compress: the slices along `axis` (or the elements of the flattened input) whose condition is
// true; a condition shorter than the axis drops the rest.
OpCaseTable compress_cases() {
  OpCaseTable t = builtin_table("Compress", [](const Values& in, const DimsList& dims, const AttributeMap& a) {
    const Ints& d = dims[0];
    const std::vector<double>& cond = in[1];
    std::vector<double> y;
    if (!a.has("axis")) {
      for (size_t i = 0; i < cond.size() && i < in[0].size(); ++i)
        if (cond[i] != 0.0) y.push_back(in[0][i]);
      return Values{y};
    }
    const size_t axis = static_cast<size_t>(axis_in(a.get_int("axis", 0).value(), d.size()));
    const int64_t outer = count(d, 0, axis), n = d[axis], inner = count(d, axis + 1);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < n && j < static_cast<int64_t>(cond.size()); ++j)
        if (cond[static_cast<size_t>(j)] != 0.0)
          for (int64_t i = 0; i < inner; ++i) y.push_back(in[0][static_cast<size_t>((o * n + j) * inner + i)]);
    return Values{y};
  }, 11);
  auto mask = [](std::vector<double> v) {
    const int64_t n = static_cast<int64_t>(v.size());
    return fixed({n}, DataType::kBool, std::move(v));
  };
  t.cases.push_back(make_case("axis_1", {data({3, 5, 2}), mask({1, 0, 1, 1, 0})}, {{3, 3, 2}}, attr("axis", int64_t{1})));
  t.cases.push_back(make_case("negative_axis_short_condition", {data({4, 3}), mask({0, 1})}, {{4, 1}}, attr("axis", int64_t{-1})));
  t.cases.push_back(make_case("flattened", {data({2, 4}), mask({1, 1, 0, 1, 0, 0, 1})}, {{4}}));
  t.cases.push_back(make_case("nothing_selected", {data({2, 3}), mask({0, 0})}, {{0, 3}}, attr("axis", int64_t{0})));
  t.bad_attributes.push_back({"axis_out_of_range", attr("axis", int64_t{3}), {}, "axis"});
  return t;
}

}  // namespace

std::vector<OpCaseTable> data_dependent_case_tables() { return {non_zero_cases(), unique_cases(), nms_cases(), compress_cases()}; }

}  // namespace graft::optest
