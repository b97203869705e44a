// Cases for ONNX Resize (opset 13): nearest (floor, round_prefer_floor), linear and cubic
// interpolation under the asymmetric, half_pixel, pytorch_half_pixel and align_corners coordinate
// transforms, the output given by scales or by sizes. The independent formula maps each output
// coordinate back per axis and interpolates over the corners of the cell around it (cubic: over the
// 4 x 4 x ... stencil of Keys' kernel), indices clamped to the input (the edge padding of ONNX's
// reference implementation).
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "case_util.h"
#include "harness.h"

namespace graft::optest {

namespace {

// Input coordinate of output index `o` along an axis of `in` -> `out` elements at scale `scale`.
double source_coordinate(const std::string& mode, int64_t o, int64_t in, int64_t out, double scale) {
  const double x = static_cast<double>(o);
  if (mode == "asymmetric") return x / scale;
  if (mode == "align_corners") return out == 1 ? 0.0 : x * static_cast<double>(in - 1) / static_cast<double>(out - 1);
  if (mode == "pytorch_half_pixel") return out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  return (x + 0.5) / scale - 0.5;  // half_pixel
}

// Keys' cubic convolution kernel with parameter `c` at distance s.
double keys(double s, double c) {
  s = std::fabs(s);
  if (s <= 1) return (c + 2) * s * s * s - (c + 3) * s * s + 1;
  if (s < 2) return c * s * s * s - 5 * c * s * s + 8 * c * s - 4 * c;
  return 0;
}

using Taps = std::vector<std::pair<int64_t, double>>;  // (input index, weight) along one axis

// sum over every combination of one tap per axis of the product of their weights times x there.
double separable_sum(const std::vector<const Taps*>& taps, const Ints& d, const std::vector<double>& x) {
  const size_t rank = taps.size();
  double acc = 0;
  std::vector<size_t> pick(rank, 0);
  for (bool more = true; more;) {
    double w = 1;
    int64_t src = 0;
    for (size_t k = 0; k < rank; ++k) {
      w *= (*taps[k])[pick[k]].second;
      src = src * d[k] + (*taps[k])[pick[k]].first;
    }
    acc += w * x[static_cast<size_t>(src)];
    more = false;
    for (size_t k = rank; k-- > 0;) {
      if (++pick[k] < taps[k]->size()) {
        more = true;
        break;
      }
      pick[k] = 0;
    }
  }
  return acc;
}

Values resize_formula(const Values& in, const DimsList& dims, const AttributeMap& a) {
  const Ints& d = dims[0];
  const size_t rank = d.size();
  const std::string mode = a.get_string("mode", "nearest").value();
  const std::string transform = a.get_string("coordinate_transformation_mode", "half_pixel").value();
  const std::string nearest = a.get_string("nearest_mode", "round_prefer_floor").value();
  // Inputs: X, roi (omitted), scales, sizes (one of the last two given).
  std::vector<double> scale(rank);
  Ints out(rank);
  const bool by_sizes = in.size() > 3 && !in[3].empty();
  for (size_t k = 0; k < rank; ++k) {
    if (by_sizes) {
      out[k] = static_cast<int64_t>(in[3][k]);
      scale[k] = static_cast<double>(out[k]) / static_cast<double>(d[k]);
    } else {
      scale[k] = in[2][k];
      out[k] = static_cast<int64_t>(std::floor(static_cast<double>(d[k]) * scale[k]));
    }
  }
  std::vector<double> y(static_cast<size_t>(count(out)));
  if (mode == "cubic") {
    const double c = a.get_float("cubic_coeff_a", -0.75f).value();
    const bool exclude = a.get_int("exclude_outside", 0).value() != 0;
    std::vector<Taps> taps(rank);  // per axis
    for (int64_t i = 0; i < count(out); ++i) {
      int64_t rem = i;
      for (size_t k = rank; k-- > 0;) {
        const int64_t o = rem % out[k];
        rem /= out[k];
        taps[k].clear();
        if (out[k] == d[k] && scale[k] == 1.0) {  // an axis left alone reads itself
          taps[k].push_back({o, 1.0});
          continue;
        }
        const double x = source_coordinate(transform, o, d[k], out[k], scale[k]);
        const double f = std::floor(x);
        double sum = 0;
        for (int j = -1; j <= 2; ++j) {
          const int64_t at = static_cast<int64_t>(f) + j;
          const bool inside = at >= 0 && at < d[k];
          const double w = exclude && !inside ? 0.0 : keys(x - (f + j), c);
          taps[k].push_back({std::clamp<int64_t>(at, 0, d[k] - 1), w});
          sum += w;
        }
        if (exclude)
          for (auto& tap : taps[k]) tap.second /= sum;
      }
      std::vector<const Taps*> per_axis;
      for (const Taps& t : taps) per_axis.push_back(&t);
      y[i] = separable_sum(per_axis, d, in[0]);
    }
    return {y};
  }
  Ints lo(rank), hi(rank);
  std::vector<double> frac(rank);
  for (int64_t i = 0; i < count(out); ++i) {
    int64_t rem = i;
    for (size_t k = rank; k-- > 0;) {
      const int64_t o = rem % out[k];
      rem /= out[k];
      double x = source_coordinate(transform, o, d[k], out[k], scale[k]);
      if (mode == "nearest") {
        const double r = nearest == "floor" ? std::floor(x) : (x - std::floor(x) == 0.5 ? std::floor(x) : std::round(x));
        lo[k] = hi[k] = std::clamp<int64_t>(static_cast<int64_t>(r), 0, d[k] - 1);
        frac[k] = 0.0;
      } else {
        x = std::clamp(x, 0.0, static_cast<double>(d[k] - 1));
        lo[k] = static_cast<int64_t>(std::floor(x));
        hi[k] = std::min(lo[k] + 1, d[k] - 1);
        frac[k] = x - static_cast<double>(lo[k]);
      }
    }
    double acc = 0.0;
    for (int64_t corner = 0; corner < (int64_t{1} << rank); ++corner) {
      double w = 1.0;
      int64_t src = 0;
      for (size_t k = 0; k < rank; ++k) {
        const bool up = (corner >> k) & 1;
        w *= up ? frac[k] : 1.0 - frac[k];
        src = src * d[k] + (up ? hi[k] : lo[k]);
      }
      if (w != 0.0) acc += w * in[0][src];
    }
    y[i] = acc;
  }
  return {y};
}

// Opset 18's antialiased linear and cubic Resize, written as the filter stretched by 1 / s on each
// axis (s = min(scale, 1)): output sample x reads every input j with weight k(s * (j - x)), k the
// triangle max(0, 1 - |t|) or Keys' kernel, edge values beyond the input (or, with exclude_outside,
// those taps dropped), the weights normalized per axis. At s = 1 this is the plain interpolation.
Values antialias_formula(const Values& in, const DimsList& dims, const AttributeMap& a) {
  const Ints& d = dims[0];
  const size_t rank = d.size();
  const bool cubic = a.get_string("mode", "nearest").value() == "cubic";
  const std::string transform = a.get_string("coordinate_transformation_mode", "half_pixel").value();
  const double c = a.get_float("cubic_coeff_a", -0.75f).value();
  const bool exclude = a.get_int("exclude_outside", 0).value() != 0;
  std::vector<double> scale(rank);
  Ints out(rank);
  const bool by_sizes = in.size() > 3 && !in[3].empty();
  for (size_t k = 0; k < rank; ++k) {
    scale[k] = by_sizes ? in[3][k] / static_cast<double>(d[k]) : in[2][k];
    out[k] = by_sizes ? static_cast<int64_t>(in[3][k]) : static_cast<int64_t>(std::floor(static_cast<double>(d[k]) * scale[k]));
  }
  std::vector<std::vector<Taps>> taps(rank);  // per axis and output coordinate
  for (size_t k = 0; k < rank; ++k)
    for (int64_t o = 0; o < out[k]; ++o) {
      const double x = source_coordinate(transform, o, d[k], out[k], scale[k]);
      const double s = std::min(scale[k], 1.0);
      const int64_t reach = static_cast<int64_t>(std::ceil((cubic ? 2.0 : 1.0) / s)) + 1;
      Taps t;
      double sum = 0;
      for (int64_t j = static_cast<int64_t>(std::floor(x)) - reach; j <= static_cast<int64_t>(std::floor(x)) + reach; ++j) {
        const double u = s * (static_cast<double>(j) - x);
        double w = cubic ? keys(u, c) : std::max(0.0, 1.0 - std::fabs(u));
        if (exclude && (j < 0 || j >= d[k])) w = 0.0;
        if (w == 0.0) continue;
        t.push_back({std::clamp<int64_t>(j, 0, d[k] - 1), w});
        sum += w;
      }
      for (auto& tap : t) tap.second /= sum;
      taps[k].push_back(std::move(t));
    }
  std::vector<double> y(static_cast<size_t>(count(out)));
  for (int64_t i = 0; i < count(out); ++i) {
    Ints oi(rank);
    for (int64_t rem = i, k = static_cast<int64_t>(rank) - 1; k >= 0; --k) {
      oi[static_cast<size_t>(k)] = rem % out[static_cast<size_t>(k)];
      rem /= out[static_cast<size_t>(k)];
    }
    std::vector<const Taps*> per_axis;
    for (size_t k = 0; k < rank; ++k) per_axis.push_back(&taps[k][static_cast<size_t>(oi[k])]);
    y[static_cast<size_t>(i)] = separable_sum(per_axis, d, in[0]);
  }
  return {y};
}

// tf_crop_and_resize: output index o of an axis samples x = start * (in - 1) + o * (end - start) *
// (in - 1) / (out - 1) (the middle of the region for out = 1), the roi's start and end per axis; an
// element whose sample falls outside the input on any axis is the extrapolation value, the others
// are linear or nearest (round_prefer_floor) interpolation with edge clamping.
Values crop_formula(const Values& in, const DimsList& dims, const AttributeMap& a) {
  const Ints& d = dims[0];
  const size_t rank = d.size();
  const bool linear = a.get_string("mode", "nearest").value() == "linear";
  const double extrapolation = a.get_float("extrapolation_value", 0.0f).value();
  Ints out(rank);
  for (size_t k = 0; k < rank; ++k) out[k] = static_cast<int64_t>(in[3][k]);
  std::vector<double> y(static_cast<size_t>(count(out)));
  std::vector<Taps> taps(rank);
  for (int64_t i = 0; i < count(out); ++i) {
    bool outside = false;
    int64_t rem = i;
    for (size_t k = rank; k-- > 0;) {
      const int64_t o = rem % out[k];
      rem /= out[k];
      const double s = in[1][k], e = in[1][rank + k], n1 = static_cast<double>(d[k] - 1);
      const double x = out[k] > 1 ? s * n1 + static_cast<double>(o) * (e - s) * n1 / static_cast<double>(out[k] - 1)
                                  : 0.5 * (s + e) * n1;
      if (x < 0 || x > n1) outside = true;
      const int64_t lo = static_cast<int64_t>(std::floor(x));
      auto edge = [&](int64_t j) { return std::clamp<int64_t>(j, 0, d[k] - 1); };
      if (linear)
        taps[k] = {{edge(lo), 1.0 - (x - std::floor(x))}, {edge(lo + 1), x - std::floor(x)}};
      else
        taps[k] = {{edge(static_cast<int64_t>(std::ceil(x - 0.5))), 1.0}};
    }
    if (outside) {
      y[static_cast<size_t>(i)] = extrapolation;
      continue;
    }
    std::vector<const Taps*> per_axis;
    for (const Taps& t : taps) per_axis.push_back(&t);
    y[static_cast<size_t>(i)] = separable_sum(per_axis, d, in[0]);
  }
  return {y};
}

AttributeMap resize_attrs(const char* mode, const char* transform, const char* nearest = "round_prefer_floor") {
  AttributeMap a;
  a.set("mode", std::string(mode));
  a.set("coordinate_transformation_mode", std::string(transform));
  a.set("nearest_mode", std::string(nearest));
  return a;
}

CaseInput no_roi() {
  CaseInput c;
  c.omitted = true;
  return c;
}
CaseInput scales(std::vector<double> v) {
  const int64_t n = static_cast<int64_t>(v.size());  // before v is moved from
  return fixed({n}, DataType::kFloat32, std::move(v));
}

}  // namespace

std::vector<OpCaseTable> resize_case_tables() {
  OpCaseTable t = builtin_table("Resize", resize_formula, 13);
  const CaseInput none = no_roi();
  t.cases.push_back(make_case("nearest_x2_asymmetric_floor", {data({1, 2, 4, 5}), none, scales({1, 1, 2, 2})}, {{1, 2, 8, 10}},
                              resize_attrs("nearest", "asymmetric", "floor")));
  t.cases.push_back(make_case("nearest_sizes_half_pixel", {data({1, 3, 6, 6}), none, no_roi(), int64_values({1, 3, 9, 4})},
                              {{1, 3, 9, 4}}, resize_attrs("nearest", "half_pixel")));
  t.cases.push_back(make_case("linear_down_half_pixel", {data({2, 3, 7, 9}), none, no_roi(), int64_values({2, 3, 4, 5})},
                              {{2, 3, 4, 5}}, resize_attrs("linear", "half_pixel")));
  t.cases.push_back(make_case("linear_up_align_corners", {data({1, 2, 5, 6}), none, scales({1, 1, 2, 1.5})}, {{1, 2, 10, 9}},
                              resize_attrs("linear", "align_corners")));
  t.cases.push_back(make_case("linear_pytorch_half_pixel_to_one", {data({1, 1, 4, 6}), none, no_roi(), int64_values({1, 1, 1, 3})},
                              {{1, 1, 1, 3}}, resize_attrs("linear", "pytorch_half_pixel")));
  t.cases.push_back(make_case("linear_x2_asymmetric", {data({2, 2, 3, 4}), none, scales({1, 1, 2, 2})}, {{2, 2, 6, 8}},
                              resize_attrs("linear", "asymmetric")));
  t.cases.push_back(make_case("cubic_x2_half_pixel", {data({1, 2, 5, 6}), none, scales({1, 1, 2, 2})}, {{1, 2, 10, 12}},
                              resize_attrs("cubic", "half_pixel")));
  t.cases.push_back(make_case("cubic_down_align_corners", {data({2, 1, 9, 7}), none, no_roi(), int64_values({2, 1, 4, 5})},
                              {{2, 1, 4, 5}}, resize_attrs("cubic", "align_corners")));
  AttributeMap exclude = resize_attrs("cubic", "asymmetric");
  exclude.set("exclude_outside", int64_t{1});
  exclude.set("cubic_coeff_a", -0.5f);
  t.cases.push_back(make_case("cubic_exclude_outside_a_half", {data({1, 3, 4, 4}), none, scales({1, 1, 1.5, 2.5})},
                              {{1, 3, 6, 10}}, exclude));

  // Opset 18's antialias: downsampling averages every input under the stretched filter (on CUDA,
  // the general tap kernel).
  OpCaseTable aa = builtin_table("Resize", antialias_formula, 18);
  auto antialiased = [](const char* mode, const char* transform) {
    AttributeMap m = resize_attrs(mode, transform);
    m.set("antialias", int64_t{1});
    return m;
  };
  AttributeMap cubic_exclude = antialiased("cubic", "half_pixel");
  cubic_exclude.set("exclude_outside", int64_t{1});
  for (OpCase c : {make_case("linear_scales_down", {data({1, 2, 9, 11}), none, scales({1, 1, 0.6, 0.45})}, {{1, 2, 5, 4}},
                             antialiased("linear", "half_pixel")),
                   make_case("cubic_sizes_down", {data({2, 1, 13, 8}), none, no_roi(), int64_values({2, 1, 4, 3})},
                             {{2, 1, 4, 3}}, antialiased("cubic", "half_pixel")),
                   make_case("linear_down_one_axis_up_other", {data({1, 3, 10, 4}), none, scales({1, 1, 0.3, 1.75})},
                             {{1, 3, 3, 7}}, antialiased("linear", "pytorch_half_pixel")),
                   make_case("cubic_exclude_outside_down", {data({1, 1, 12, 12}), none, scales({1, 1, 0.4, 0.25})},
                             {{1, 1, 4, 3}}, cubic_exclude),
                   make_case("linear_asymmetric_down", {data({1, 2, 7, 7}), none, scales({1, 1, 0.5, 0.5})}, {{1, 2, 3, 3}},
                             antialiased("linear", "asymmetric"))})
    aa.cases.push_back(std::move(c));
  // tf_crop_and_resize: a region reaching past the input on two axes, so some outputs are the
  // extrapolation value.
  OpCaseTable crop = builtin_table("Resize", crop_formula, 11);
  for (const char* mode : {"linear", "nearest"}) {
    AttributeMap m = resize_attrs(mode, "tf_crop_and_resize");
    m.set("extrapolation_value", 2.5f);
    crop.cases.push_back(make_case(std::string("crop_") + mode,
                                   {data({1, 2, 7, 9}),
                                    fixed({8}, DataType::kFloat32, {0, 0, 0.15, -0.2, 1, 1, 0.8, 1.1}), no_roi(),
                                    int64_values({1, 2, 5, 6})},
                                   {{1, 2, 5, 6}}, m));
  }
  return {t, aa, crop};
}

}  // namespace graft::optest
