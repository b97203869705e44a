// Cases for the quantized ONNX ops QLinearMatMul and QLinearConv (opset 10: 8-bit operands with
// scales and zero points, a requantized 8-bit output) and DynamicQuantizeLinear (opset 11: float32 to
// uint8 with the scale and zero point it chose), and GraftQuantizeDequantize (graft's fold of a
// QuantizeLinear -> DequantizeLinear pair). Each has an independent float64 formula.
//
// The requantizing ops' kernels round in float32 arithmetic (as ONNX Runtime does), the formulas in
// float64. So that both see the same value on every rounding boundary, each case's scales make the
// real multiplier a_scale * b_scale / y_scale either a power of two (every product exact in both, ties
// to even included, which the cases hit on purpose) or 2^k / 255 with k >= 0 (an odd denominator: the
// exact value is never a tie, and lies at least 1/510 from one, far beyond float32's error on these
// sums; k < 0 would make ties at the odd multiples of 255 that float32 may round either way).
// DynamicQuantizeLinear's inputs are moved a quarter step off every rounding boundary instead.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "case_util.h"
#include "harness.h"
#include "ops/internal_ops.h"

namespace graft::optest {

namespace {

// Rounds to the nearest integer, halves to the even one (ONNX's rounding), by comparison with the
// floor rather than through the floating-point rounding mode.
double round_half_even(double v) {
  const double f = std::floor(v), frac = v - f;
  if (frac > 0.5) return f + 1.0;
  if (frac < 0.5) return f;
  return std::fmod(f, 2.0) == 0.0 ? f : f + 1.0;
}

// The saturated output value round_half_even(v) + zp. The formula sees values, not dtypes: the cases
// give an int8 output a negative y_zero_point and a uint8 output a non-negative one, so the sign of
// the zero point tells the range.
double requantized(double v, double zp) {
  const double lo = zp < 0.0 ? -128.0 : 0.0, hi = zp < 0.0 ? 127.0 : 255.0;
  return std::clamp(round_half_even(v) + zp, lo, hi);
}

// Parameter `p` (a scale or zero point) for row or column `i`: one value per tensor, or one per row /
// column / output channel.
double param(const std::vector<double>& p, int64_t i) { return p.size() == 1 ? p[0] : p[static_cast<size_t>(i)]; }

// ---- QLinearMatMul ----------------------------------------------------------------------------
// Inputs a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point. numpy matmul of
// (a - a_zp) * a_scale by (b - b_zp) * b_scale (1-D operands promoted, batch dims broadcast), the
// parameters of a per tensor or per row, those of b per tensor or per column; y = requantized(
// real / y_scale, y_zp).
Values qlinear_matmul_formula(const Values& in, const DimsList& dims, const AttributeMap&) {
  Ints ad = dims[0], bd = dims[3];
  if (ad.size() == 1) ad.insert(ad.begin(), 1);
  if (bd.size() == 1) bd.push_back(1);
  const int64_t m = ad[ad.size() - 2], k = ad.back(), n = bd.back();
  const Ints a_batch(ad.begin(), ad.end() - 2), b_batch(bd.begin(), bd.end() - 2);
  const Ints batch = broadcast_dims({a_batch, b_batch});
  const int64_t batches = count(batch);
  const double y_scale = in[6][0], y_zp = in[7][0];
  std::vector<double> y;
  for (int64_t bi = 0; bi < batches; ++bi) {
    const int64_t a_off = broadcast_index(bi, batch, a_batch) * m * k, b_off = broadcast_index(bi, batch, b_batch) * k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double real = 0.0;
        for (int64_t p = 0; p < k; ++p) {
          const double a = (in[0][a_off + i * k + p] - param(in[2], i)) * param(in[1], i);
          const double b = (in[3][b_off + p * n + j] - param(in[5], j)) * param(in[4], j);
          real += a * b;
        }
        y.push_back(requantized(real / y_scale, y_zp));
      }
  }
  return {y};
}

OpCaseTable qlinear_matmul_cases() {
  OpCaseTable t = builtin_table("QLinearMatMul", qlinear_matmul_formula, 10);
  // Every input has a dtype of its own: one run per backend. The reference run turns float inputs
  // (the scales) into its dtype, and the scales take no float64: float32 (exact for all of them).
  t.cpu_dtypes = {DataType::kFloat32};
  t.cuda_dtypes = {DataType::kFloat32};
  t.reference_dtype = DataType::kFloat32;
  const DataType u8 = DataType::kUInt8, i8 = DataType::kInt8, f32 = DataType::kFloat32;
  auto scale = [](double s) { return fixed({}, DataType::kFloat32, {s}); };
  // Multiplier 2^-4 * 2^-5 / 2^-1 = 2^-8: outputs spread over about +-90 around the zero point,
  // saturating at both ends now and then; a sum of 128 mod 256 is a tie.
  t.cases.push_back(make_case("uint8_per_tensor",
                              {typed({4, 16}, u8, 0, 255), scale(0.0625), typed({}, u8, 100, 150),
                               typed({16, 6}, u8, 0, 255), scale(0.03125), typed({}, u8, 110, 140), scale(0.5),
                               typed({}, u8, 110, 140)},
                              {{4, 6}}));
  // Multiplier 2^-1 over small sums: every odd sum is a tie, rounded to the even neighbour.
  t.cases.push_back(make_case("ties_to_even",
                              {typed({3, 4}, u8, 124, 132), scale(0.5), typed({}, u8, 127, 129), typed({4, 5}, u8, 124, 132),
                               scale(0.25), typed({}, u8, 127, 129), scale(0.25), typed({}, u8, 60, 70)},
                              {{3, 5}}));
  // int8 throughout, a's scale and zero point per row, b's per column; the multipliers are
  // 2^(11 - i - j) / 255 (1, 2 or 4 over 255) for row scale 2^-i and column scale 2^-j.
  t.cases.push_back(make_case(
      "int8_per_row_per_column",
      {typed({5, 12}, i8, -64, 63), fixed({5}, f32, {0.0625, 0.03125, 0.0625, 0.03125, 0.0625}), typed({5}, i8, -10, 10),
       typed({12, 7}, i8, -128, 127),
       fixed({7}, f32, {0.03125, 0.015625, 0.03125, 0.015625, 0.03125, 0.015625, 0.03125}), typed({7}, i8, -10, 10),
       scale(255.0 / 2048.0), typed({}, i8, -20, -1)},
      {{5, 7}}));
  // uint8 a by int8 b with batch dims broadcast ([2, 1] against [4]); multiplier 2^-3 * 2^-7 / 2^-2.
  t.cases.push_back(make_case("batched_broadcast_uint8_by_int8",
                              {typed({2, 1, 3, 10}, u8, 0, 255), scale(0.125), typed({}, u8, 120, 136),
                               typed({4, 10, 5}, i8, -128, 127), scale(0.0078125), typed({}, i8, -4, 4), scale(0.25),
                               typed({}, u8, 100, 156)},
                              {{2, 4, 3, 5}}));
  // A 1-D a (promoted to one row and dropped again) and float16 scales (graft takes the opset-21
  // scale dtypes at any opset; the float32 reference run gets them exactly); multiplier
  // 2^-5 * 2^-4 / (255 * 2^-9) = 1 / 255.
  const DataType f16 = DataType::kFloat16;
  t.cases.push_back(make_case("vector_by_matrix_float16_scales",
                              {typed({24}, i8, -128, 127), fixed({}, f16, {0.03125}), typed({}, i8, -6, 6),
                               typed({24, 6}, u8, 0, 255), fixed({}, f16, {0.0625}), typed({}, u8, 120, 136),
                               fixed({}, f16, {255.0 / 512.0}), typed({}, i8, -10, -1)},
                              {{6}}));
  return t;
}

// ---- QLinearConv ------------------------------------------------------------------------------
// Inputs x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B?. ONNX Conv
// (conv_reference) of (x - x_zp) by (w - w_zp[m]), the int32 bias B[m] added to the sums, then
// y = requantized(sum * x_scale * w_scale[m] / y_scale, y_zp); w's scale and zero point per tensor or
// per output channel m.
Values qlinear_conv_formula(const Values& in, const DimsList& dims, const AttributeMap& a) {
  const Ints& wd = dims[3];
  const int64_t m_count = wd[0], per_m = count(wd, 1);
  std::vector<double> x = in[0], w = in[3];
  for (double& v : x) v -= in[2][0];
  for (size_t i = 0; i < w.size(); ++i) w[i] -= param(in[5], static_cast<int64_t>(i) / per_m);
  const std::vector<double> sums = conv_reference({x, w}, {dims[0], wd}, a)[0];
  const bool has_bias = in.size() > 8 && !in[8].empty();
  const int64_t area = static_cast<int64_t>(sums.size()) / (dims[0][0] * m_count);
  std::vector<double> y(sums.size());
  for (size_t i = 0; i < sums.size(); ++i) {
    const int64_t m = static_cast<int64_t>(i) / area % m_count;
    const double sum = sums[i] + (has_bias ? in[8][static_cast<size_t>(m)] : 0.0);
    y[i] = requantized(sum * in[1][0] * param(in[4], m) / in[6][0], in[7][0]);
  }
  return {y};
}

OpCaseTable qlinear_conv_cases() {
  OpCaseTable t = builtin_table("QLinearConv", qlinear_conv_formula, 10);
  t.cpu_dtypes = {DataType::kFloat32};
  t.cuda_dtypes = {DataType::kFloat32};
  t.reference_dtype = DataType::kFloat32;  // the scales take no float64
  const DataType u8 = DataType::kUInt8, i8 = DataType::kInt8, f32 = DataType::kFloat32, i32 = DataType::kInt32;
  auto scale = [](double s) { return fixed({}, DataType::kFloat32, {s}); };
  {
    // Multiplier 2^-4 * 2^-5 / 2^-1 = 2^-8.
    AttributeMap a;
    a.set("pads", Ints{1, 1, 1, 1});
    a.set("strides", Ints{2, 1});
    t.cases.push_back(make_case("uint8_per_tensor_pads_strides",
                                {typed({1, 3, 7, 6}, u8, 0, 255), scale(0.0625), typed({}, u8, 120, 136),
                                 typed({4, 3, 3, 3}, u8, 0, 255), scale(0.03125), typed({}, u8, 120, 136), scale(0.5),
                                 typed({}, u8, 100, 150)},
                                {{1, 4, 4, 6}}, a));
  }
  {
    // int8, two groups, w's scale and zero point per output channel, an int32 bias; multipliers
    // 2^-3 * 2^-c / (255 * 2^-10) = 2^(7 - c) / 255 (1 or 2 over 255).
    AttributeMap a;
    a.set("group", int64_t{2});
    a.set("dilations", Ints{1, 2});
    a.set("pads", Ints{1, 0, 0, 2});
    t.cases.push_back(make_case(
        "int8_per_channel_bias_groups",
        {typed({2, 4, 6, 5}, i8, -64, 63), scale(0.125), typed({}, i8, -5, 5), typed({6, 2, 3, 3}, i8, -128, 127),
         fixed({6}, f32, {0.015625, 0.0078125, 0.0078125, 0.015625, 0.0078125, 0.015625}), typed({6}, i8, -3, 3),
         scale(255.0 / 1024.0), typed({}, i8, -30, -1), typed({6}, i32, -15000, 15000)},
        {{2, 6, 5, 3}}, a));
  }
  {
    // 1-D, uint8 x by int8 w, a bias; multiplier 2^-2 * 2^-6 / 1 = 2^-8.
    AttributeMap a;
    a.set("strides", Ints{2});
    a.set("dilations", Ints{2});
    a.set("pads", Ints{2, 1});
    t.cases.push_back(make_case("conv1d_uint8_by_int8_bias",
                                {typed({1, 3, 20}, u8, 0, 255), scale(0.25), typed({}, u8, 110, 146),
                                 typed({5, 3, 3}, i8, -128, 127), scale(0.015625), typed({}, i8, -2, 2), scale(1.0),
                                 typed({}, u8, 60, 200), typed({5}, i32, -2000, 2000)},
                                {{1, 5, 10}}, a));
  }
  // Multipliers 2^-1 (odd sums tie) and 2^-2 (sums of 2 mod 4 tie) over small sums.
  t.cases.push_back(make_case("ties_to_even",
                              {typed({1, 2, 4, 4}, u8, 126, 130), scale(0.5), typed({}, u8, 127, 129),
                               typed({3, 2, 2, 2}, u8, 126, 130), fixed({3}, f32, {0.25, 0.25, 0.125}),
                               typed({}, u8, 127, 129), scale(0.25), typed({}, u8, 40, 60)},
                              {{1, 3, 3, 3}}));
  // Window attributes graft refuses, naming the attribute (checked against the first case's inputs).
  t.bad_attributes.push_back({"zero_stride", attr("strides", Ints{0, 1}), {}, "strides"});
  t.bad_attributes.push_back({"zero_dilation", attr("dilations", Ints{1, 0}), {}, "dilations"});
  t.bad_attributes.push_back({"negative_pad", attr("pads", Ints{1, -1, 1, 1}), {}, "pads"});
  t.bad_attributes.push_back({"three_pads", attr("pads", Ints{1, 1, 1}), {}, "pads"});
  t.bad_attributes.push_back({"kernel_shape_not_the_weights", attr("kernel_shape", Ints{2, 3}), {}, "kernel_shape"});
  t.bad_attributes.push_back({"zero_group", attr("group", int64_t{0}), {}, "group"});
  t.bad_attributes.push_back({"unknown_auto_pad", attr("auto_pad", std::string("SAME")), {}, "auto_pad"});
  return t;
}

// ---- DynamicQuantizeLinear --------------------------------------------------------------------
// y_scale = (max(0, max x) - min(0, min x)) / 255, y_zero_point = saturate(round(-min(0, min x) /
// y_scale)), y = saturate(round(x / y_scale) + y_zero_point), into uint8, rounding halves to even.
Values dynamic_quantize_formula(const Values& in, const DimsList&, const AttributeMap&) {
  double lo = 0.0, hi = 0.0;
  for (double v : in[0]) lo = std::min(lo, v), hi = std::max(hi, v);
  const double scale = (hi - lo) / 255.0;
  const double zp = std::clamp(round_half_even(-lo / scale), 0.0, 255.0);
  std::vector<double> y;
  for (double v : in[0]) y.push_back(std::clamp(round_half_even(v / scale) + zp, 0.0, 255.0));
  return {y, {scale}, {zp}};
}

// Moves x off the rounding boundaries: the minimum (when negative and the maximum positive) out to
// where -min / scale is a quarter past an integer, then every other value so that x / scale is. The
// kernel computes the scale and the quotients in float32, within far less than a quarter of these.
void quarter_steps(std::vector<Tensor>& ins) {
  Tensor& x = ins[0];
  double lo = 0.0, hi = 0.0;
  int64_t at_lo = -1, at_hi = -1;
  auto find_range = [&] {
    lo = hi = 0.0;
    for (int64_t i = 0; i < x.numel(); ++i) {
      if (x.get(i) < lo) lo = x.get(i), at_lo = i;
      if (x.get(i) > hi) hi = x.get(i), at_hi = i;
    }
  };
  find_range();
  if (lo < 0.0 && hi > 0.0) {
    // -lo' * 255 / (hi - lo') = r for lo' = -r * hi / (255 - r); r above -lo * 255 / (hi - lo), so
    // lo' < lo stays the minimum (the cases' ranges keep r well below 255).
    const double r = std::floor(-lo * 255.0 / (hi - lo)) + 1.25;
    if (r < 255.0) x.set(at_lo, -r * hi / (255.0 - r));
    find_range();
  }
  const double s = (hi - lo) / 255.0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (i == at_lo || i == at_hi) continue;
    double q = std::floor(x.get(i) / s) + 0.25;
    if (q * s < lo) q += 1.0;  // stays inside [lo, hi], so the range (and the scale) hold
    x.set(i, q * s);
  }
}

OpCaseTable dynamic_quantize_cases() {
  OpCaseTable t = builtin_table("DynamicQuantizeLinear", dynamic_quantize_formula, 11);
  // x is float32 only (no float16 or float64 kernel): the float32 run is the reference.
  t.cpu_dtypes = {DataType::kFloat32};
  t.cuda_dtypes = {DataType::kFloat32};
  t.reference_dtype = DataType::kFloat32;
  OpCase mixed = make_case("mixed_signs", {data({3, 5, 7}, -4, 6)}, {{3, 5, 7}, {}, {}});
  // All positive: the range starts at 0 (zero point 0). All negative: it ends at 0 (zero point 255).
  OpCase positive = make_case("all_positive", {data({40}, 0.5, 3)}, {{40}, {}, {}});
  OpCase negative = make_case("all_negative", {data({4, 6}, -5, -1)}, {{4, 6}, {}, {}});
  for (OpCase* c : {&mixed, &positive, &negative}) {
    c->adjust_inputs = quarter_steps;
    t.cases.push_back(*c);
  }
  return t;
}

// ---- GraftQuantizeDequantize ----------------------------------------------------------------
// graft's fold of a QuantizeLinear -> DequantizeLinear pair (inputs x, scale, zero_point, all of
// one quantization): y = (requantized(x / scale, zp) - zp) * scale.
Values quantize_dequantize_formula(const Values& in, const DimsList&, const AttributeMap&) {
  const double s = in[1][0], zp = in[2][0];
  std::vector<double> y(in[0].size());
  for (size_t i = 0; i < y.size(); ++i) y[i] = (requantized(in[0][i] / s, zp) - zp) * s;
  return {y};
}

// x snapped to multiples of half the (power-of-two) scale: every x / scale an integer or an exact
// tie, in float16 too, so the kernels' float32 rounding and the formula's agree on every element.
void half_steps(std::vector<Tensor>& ins) {
  const double half = ins[1].get(0) / 2.0;
  for (int64_t i = 0; i < ins[0].numel(); ++i) ins[0].set(i, std::nearbyint(ins[0].get(i) / half) * half);
}

OpCaseTable quantize_dequantize_cases() {
  OpCaseTable t;
  t.domain = kInternalDomain;
  t.name = "GraftQuantizeDequantize";
  t.reference = quantize_dequantize_formula;
  t.cpu_dtypes = t.cuda_dtypes = {DataType::kFloat32, DataType::kFloat16};
  // The scale keeps its float32 when x is float16 (it is read on the host, as the fused op runs in
  // an engine); every value here is exact in both.
  t.reference_dtype = DataType::kFloat32;
  // int8 (a negative zero point tells the formula the range): |x| / scale reaches 160, past 127.
  OpCase a = make_case("int8_saturating_ties", {data({2, 3, 4, 5}, -20, 20), fixed({}, DataType::kFloat32, {0.125}),
                                                typed({}, DataType::kInt8, -6, -1)},
                       {{2, 3, 4, 5}});
  // uint8 with a zero point near the middle; values under it saturate at 0 steps.
  OpCase b = make_case("uint8_zero_point", {data({37}, -6, 10), fixed({}, DataType::kFloat32, {0.0625}),
                                            typed({}, DataType::kUInt8, 90, 110)},
                       {{37}});
  for (OpCase* c : {&a, &b}) {
    c->adjust_inputs = half_steps;
    t.cases.push_back(*c);
  }
  return t;
}

}  // namespace

std::vector<OpCaseTable> quantized_case_tables() {
  return {qlinear_matmul_cases(), qlinear_conv_cases(), dynamic_quantize_cases(), quantize_dequantize_cases()};
}

}  // namespace graft::optest
