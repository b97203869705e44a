// Cases for ONNX Cast and CastLike (float to float16, float32, int32, int64, bool, int4, uint4 and
// the four 8-bit floats, and those back; the formula rounds to float16 by arithmetic, not through
// graft's conversion code) and GridSample (opset 16), whose formula is mmdeploy::grid_sampler's
// table's (PyTorch's semantics) under string attributes, with ONNX's one difference (bicubic pads
// the coordinate first) applied to the grid.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "case_util.h"
#include "harness.h"

namespace graft::optest {

OpCaseTable grid_sampler_cases();  // cases_grid_sample.cpp: mmdeploy's grid_sampler, whose formula GridSample's reuses

namespace {

// x rounded to float16 (11 significant bits, subnormals below 2^-14, infinity past 65504), to the
// nearest and ties to even, by arithmetic on doubles rather than by any conversion code.
double to_half(double x) {
  if (x == 0.0 || !std::isfinite(x)) return x;
  int e = 0;
  std::frexp(x, &e);                                          // |x| in [2^(e-1), 2^e)
  const double ulp = std::ldexp(1.0, std::max(e, -13) - 11);  // 2^-24 below the normal range
  const double r = std::nearbyint(x / ulp) * ulp;             // ties to even (the default mode)
  return std::fabs(r) > 65504.0 ? std::copysign(INFINITY, x) : r;
}

// x converted to ONNX type `to` and read back: round to nearest even for the float types, toward
// zero for the integers, nonzero for bool.
double converted(double x, int64_t to) {
  switch (to) {
    case 10: return to_half(x);                                      // FLOAT16
    case 1: return static_cast<double>(static_cast<float>(x));      // FLOAT
    case 6:                                                          // INT32
    case 7: return std::trunc(x);                                    // INT64
    case 9: return x != 0.0 ? 1.0 : 0.0;                             // BOOL
    case 22: return std::nearbyint(std::clamp(x, -8.0, 7.0));        // INT4: clamped, ties to even
    case 21: return std::nearbyint(std::clamp(x, 0.0, 15.0));        // UINT4
    case 17: case 18: case 19: case 20: return float8_nearest(x, to);     // the 8-bit floats
    default: return x;                                               // DOUBLE
  }
}

OpCaseTable cast_cases() {
  OpCaseTable t = builtin_table("Cast", [](const Values& in, const DimsList&, const AttributeMap& a) {
    const int64_t to = a.get_int("to", 1).value();
    std::vector<double> y;
    for (double v : in[0]) y.push_back(converted(v, to));
    return Values{y};
  }, 13);
  // Wide values, so that float16's rounding and the integers' truncation both show.
  t.cases.push_back(make_case("to_float16", {data({3, 11}, -300, 300)}, {{3, 11}}, attr("to", int64_t{10})));
  t.cases.push_back(make_case("to_float32", {data({4, 5}, -300, 300)}, {{4, 5}}, attr("to", int64_t{1})));
  t.cases.push_back(make_case("to_int32", {data({2, 9}, -300, 300)}, {{2, 9}}, attr("to", int64_t{6})));
  t.cases.push_back(make_case("to_int64", {data({7}, -300, 300)}, {{7}}, attr("to", int64_t{7})));
  OpCase to_bool = make_case("to_bool", {data({3, 4}, -2, 2)}, {{3, 4}}, attr("to", int64_t{9}));
  to_bool.adjust_inputs = [](std::vector<Tensor>& ins) {
    for (int64_t i = 0; i < ins[0].numel(); i += 3) ins[0].set(i, 0.0);  // zeros among the values
  };
  t.cases.push_back(std::move(to_bool));
  // Opset 21's 4-bit targets: values past both ends of the range, and halves, which round to even
  // (2.5 -> 2, -3.5 -> -4, 6.5 -> 6 but 7.5 clamps to 7).
  auto with_halves = [](std::vector<Tensor>& ins) {
    const double halves[] = {2.5, -3.5, 0.5, 6.5, -7.5, 7.5, 1.5, 14.5};
    for (int64_t i = 0, k = 0; i < ins[0].numel(); i += 4, ++k) ins[0].set(i, halves[k % 8]);
  };
  OpCase to_int4 = make_case("to_int4", {data({3, 7}, -12, 12)}, {{3, 7}}, attr("to", int64_t{22}));
  to_int4.adjust_inputs = with_halves;
  t.cases.push_back(std::move(to_int4));
  OpCase to_uint4 = make_case("to_uint4", {data({5, 4}, -6, 20)}, {{5, 4}}, attr("to", int64_t{21}));
  to_uint4.adjust_inputs = with_halves;
  t.cases.push_back(std::move(to_uint4));
  // And from them: their values, exactly.
  t.cases.push_back(make_case("int4_to_float32", {typed({4, 5}, DataType::kInt4, -8, 7)}, {{4, 5}}, attr("to", int64_t{1})));
  t.cases.push_back(make_case("uint4_to_int32", {typed({9}, DataType::kUInt4, 0, 15)}, {{9}}, attr("to", int64_t{6})));
  t.cases.push_back(make_case("int32_to_int4", {typed({2, 6}, DataType::kInt32, -30, 30)}, {{2, 6}}, attr("to", int64_t{22})));
  // Opset 19's 8-bit floats: past the largest finite (saturated: the default), and small values
  // among the subnormals; then back to float32, exactly.
  t.cases.push_back(make_case("to_float8e4m3fn", {data({3, 8}, -600, 600)}, {{3, 8}}, attr("to", int64_t{17})));
  t.cases.push_back(make_case("to_float8e4m3fn_small", {data({4, 6}, -0.03, 0.03)}, {{4, 6}}, attr("to", int64_t{17})));
  t.cases.push_back(make_case("to_float8e4m3fnuz", {data({5, 5}, -300, 300)}, {{5, 5}}, attr("to", int64_t{18})));
  t.cases.push_back(make_case("to_float8e5m2", {data({2, 9}, -60000, 60000)}, {{2, 9}}, attr("to", int64_t{19})));
  t.cases.push_back(make_case("to_float8e5m2_small", {data({3, 5}, -1e-4, 1e-4)}, {{3, 5}}, attr("to", int64_t{19})));
  t.cases.push_back(make_case("to_float8e5m2fnuz", {data({7}, -60000, 60000)}, {{7}}, attr("to", int64_t{20})));
  for (auto [label, type] : {std::pair<const char*, DataType>{"float8e4m3fn_to_float32", DataType::kFloat8E4M3FN},
                             {"float8e4m3fnuz_to_float32", DataType::kFloat8E4M3FNUZ},
                             {"float8e5m2_to_float32", DataType::kFloat8E5M2},
                             {"float8e5m2fnuz_to_float32", DataType::kFloat8E5M2FNUZ}})
    t.cases.push_back(make_case(label, {typed({3, 7}, type, -200, 200)}, {{3, 7}}, attr("to", int64_t{1})));
  // From an 8-bit float to other than float32: through float32 (on CUDA, the op's scratch), then
  // Cast's rules for floats: truncation for int32, and e5m2 into float16 (exact: e5m2 is float16's top byte).
  t.cases.push_back(make_case("float8e4m3fn_to_int32", {typed({2, 9}, DataType::kFloat8E4M3FN, -300, 300)}, {{2, 9}},
                              attr("to", int64_t{6})));
  t.cases.push_back(make_case("float8e5m2_to_float16", {typed({11}, DataType::kFloat8E5M2, -5000, 5000)}, {{11}},
                              attr("to", int64_t{10})));
  t.cases.push_back(make_case("float8e4m3fn_to_float8e5m2", {typed({4, 4}, DataType::kFloat8E4M3FN, -400, 400)},
                              {{4, 4}}, attr("to", int64_t{19})));
  return t;
}

OpCaseTable cast_like_cases() {
  // The target's dtype is the second input's (int32 here); its values do not matter.
  OpCaseTable t = builtin_table("CastLike", [](const Values& in, const DimsList&, const AttributeMap&) {
    std::vector<double> y;
    for (double v : in[0]) y.push_back(std::trunc(v));
    return Values{y};
  }, 15);
  t.cases.push_back(make_case("like_int32", {data({3, 6}, -50, 50), typed({2}, DataType::kInt32, -5, 5)}, {{3, 6}}));
  return t;
}

// ONNX's bicubic GridSample pads a coordinate that falls outside the image before taking its taps
// (PyTorch's only pads each tap): the grid is rewritten to the padded coordinates, after which the
// two definitions agree.
std::vector<double> onnx_bicubic_grid(const std::vector<double>& grid, const Ints& x_dims, bool border, bool align) {
  std::vector<double> g = grid;
  for (size_t i = 0; i < g.size(); ++i) {
    const double size = static_cast<double>(i % 2 == 0 ? x_dims[3] : x_dims[2]);  // x is the width
    const double lo = align ? 0.0 : -0.5, hi = align ? size - 1.0 : size - 0.5;
    double v = align ? (g[i] + 1.0) / 2.0 * (size - 1.0) : ((g[i] + 1.0) * size - 1.0) / 2.0;
    if (v >= lo && v <= hi) continue;
    v = border ? std::clamp(v, 0.0, size - 1.0) : mirror(v, lo, hi);
    g[i] = align ? v / (size - 1.0) * 2.0 - 1.0 : (2.0 * v + 1.0) / size - 1.0;
  }
  return g;
}

OpCaseTable grid_sample_cases() {
  const ReferenceFn mmdeploy_formula = grid_sampler_cases().reference;
  OpCaseTable t = builtin_table("GridSample", [mmdeploy_formula](const Values& in, const DimsList& dims, const AttributeMap& a) {
    const std::string mode = a.get_string("mode", "bilinear").value(), pad = a.get_string("padding_mode", "zeros").value();
    const bool align = a.get_int("align_corners", 0).value() != 0;
    AttributeMap m;
    m.set("interpolation_mode", int64_t{mode == "bilinear" ? 0 : mode == "nearest" ? 1 : 2});
    m.set("padding_mode", int64_t{pad == "zeros" ? 0 : pad == "border" ? 1 : 2});
    m.set("align_corners", int64_t{align ? 1 : 0});
    if (mode != "bicubic" || pad == "zeros") return mmdeploy_formula(in, dims, m);
    return mmdeploy_formula({in[0], onnx_bicubic_grid(in[1], dims[0], pad == "border", align)}, dims, m);
  }, 16);
  auto attrs = [](const char* mode, const char* pad, int64_t align) {
    AttributeMap a;
    a.set("mode", std::string(mode));
    a.set("padding_mode", std::string(pad));
    a.set("align_corners", align);
    return a;
  };
  for (const char* mode : {"bilinear", "nearest", "bicubic"})
    for (const char* pad : {"zeros", "border", "reflection"}) {
      // Sampling points reach past the image (|g| up to 1.3), so every padding mode matters.
      OpCase c = make_case(std::string(mode) + "_" + pad, {data({2, 3, 5, 7}, 0.25, 2), data({2, 4, 6, 2}, -1.3, 1.3)},
                           {{2, 3, 4, 6}}, attrs(mode, pad, std::string(pad) == "border" ? 1 : 0));
      t.cases.push_back(std::move(c));
    }
  // float16 grids put points on pixel-centre lines, where bilinear cells legitimately differ by an
  // ulp of the coordinate: float32 only, as mmdeploy's table tests it.
  t.cpu_dtypes = t.cuda_dtypes = {DataType::kFloat32};
  return t;
}

}  // namespace

std::vector<OpCaseTable> cast_sample_case_tables() { return {cast_cases(), cast_like_cases(), grid_sample_cases()}; }

}  // namespace graft::optest
