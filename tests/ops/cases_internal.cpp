// Cases for graft's internal ops (graft.internal, made by the CUDA builder's passes): GraftConv (NCHW
// and NHWC; bias, residual, output and input activations; dense, grouped, depthwise, pointwise,
// dilated and strided problems), GraftConvInt8 (int8 NHWC with per-filter scales), GraftPool (NHWC pools), GraftGemm (bias, residual, Relu/Gelu) and
// GraftAttention (heads, a periodic bias). Their independent
// formulas are ONNX Conv's and pools' (case_util.h) around layout permutations and the epilogue.
// These run the untuned choice of each problem (cuDNN's heuristic, or graft's depthwise kernel);
// tests/cuda_kernels forces each of graft's other kernel variants after tactic timing.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "case_util.h"
#include "harness.h"
#include "ops/internal_ops.h"

namespace graft::optest {

namespace {

const Ints kToNchw = {0, 3, 1, 2}, kToNhwc = {0, 2, 3, 1};

Ints dims_permuted(const Ints& d, const Ints& perm) {
  Ints out;
  for (int64_t p : perm) out.push_back(d[p]);
  return out;
}

// One of GraftConv's activations (`prefix` "" or "input_"), on one value.
double activation(const AttributeMap& a, const std::string& prefix, double x) {
  const std::string act = a.get_string(prefix + "activation", "").value();
  if (act == "Relu") return std::max(0.0, x);
  if (act == "Clip")
    return std::clamp(x, static_cast<double>(a.get_float(prefix + "clip_min", 0.f).value()),
                      static_cast<double>(a.get_float(prefix + "clip_max", 6.f).value()));
  if (act == "HardSwish") return x * std::clamp(x / 6.0 + 0.5, 0.0, 1.0);
  if (act == "Sigmoid") return 1.0 / (1.0 + std::exp(-x));
  if (act == "Silu") return x / (1.0 + std::exp(-x));
  return x;
}

bool nhwc(const AttributeMap& a) { return a.get_string("layout", "NCHW").value() == "NHWC"; }

Values graft_conv_formula(const Values& in, const DimsList& dims, const AttributeMap& a) {
  const bool channels_last = nhwc(a);
  Values conv_in;
  DimsList conv_dims;
  std::vector<double> x = in[0];
  for (double& v : x) v = activation(a, "input_", v);
  conv_in.push_back(channels_last ? permuted(x, dims[0], kToNchw) : x);
  conv_dims.push_back(channels_last ? dims_permuted(dims[0], kToNchw) : dims[0]);
  // NHWC filters are [M, kH, kW, C/group].
  conv_in.push_back(channels_last ? permuted(in[1], dims[1], kToNchw) : in[1]);
  conv_dims.push_back(channels_last ? dims_permuted(dims[1], kToNchw) : dims[1]);
  if (in.size() > 2 && !in[2].empty()) {
    conv_in.push_back(in[2]);
    conv_dims.push_back(dims[2]);
  }
  std::vector<double> y = conv_reference(conv_in, conv_dims, a)[0];
  const int64_t m = conv_dims[1][0];
  const Ints& xd = conv_dims[0];
  const Ints kernel = {conv_dims[1][2], conv_dims[1][3]};
  // The NCHW output's dims, from the count and the batch and filter counts.
  const int64_t hw = static_cast<int64_t>(y.size()) / (xd[0] * m);
  Ints yd = {xd[0], m, 0, 0};
  if (in.size() > 3 && !in[3].empty()) {
    yd = channels_last ? dims_permuted(dims[3], kToNchw) : dims[3];
    const std::vector<double> z = channels_last ? permuted(in[3], dims[3], kToNchw) : in[3];
    for (size_t i = 0; i < y.size(); ++i) y[i] += z[i];
  } else {
    // No residual: recover H and W from the conv attributes.
    const Ints strides = a.get_ints("strides", {1, 1}).value(), pads = a.get_ints("pads", {0, 0, 0, 0}).value();
    const Ints dil = a.get_ints("dilations", {1, 1}).value();
    yd[2] = (xd[2] + pads[0] + pads[2] - dil[0] * (kernel[0] - 1) - 1) / strides[0] + 1;
    yd[3] = hw / yd[2];
  }
  for (double& v : y) v = activation(a, "", v);
  return {channels_last ? permuted(y, yd, kToNhwc) : y};
}

AttributeMap conv_attrs(const char* layout, const char* act, int64_t group, int64_t k, int64_t stride, int64_t pad,
                        int64_t dilation = 1) {
  AttributeMap a;
  a.set("layout", std::string(layout));
  a.set("activation", std::string(act));
  a.set("group", group);
  a.set("kernel_shape", Ints{k, k});
  a.set("strides", Ints{stride, stride});
  a.set("pads", Ints{pad, pad, pad, pad});
  a.set("dilations", Ints{dilation, dilation});
  return a;
}

OpCase conv_case(std::string label, std::vector<CaseInput> inputs, Ints out, AttributeMap a) {
  OpCase c;
  c.label = std::move(label);
  c.inputs = std::move(inputs);
  c.output_dims = {std::move(out)};
  c.attrs = std::move(a);
  c.tolerance[DataType::kFloat32] = 1e-4;
  return c;
}

CaseInput in(Ints dims) { return CaseInput{std::move(dims), -1.0, 1.0}; }
CaseInput none() {
  CaseInput c;
  c.omitted = true;
  return c;
}

OpCaseTable graft_conv_cases() {
  OpCaseTable t;
  t.domain = kInternalDomain;
  t.name = "GraftConv";
  t.cuda_dtypes = t.cpu_dtypes = {DataType::kFloat32, DataType::kFloat16};
  t.cases.push_back(conv_case("nchw_3x3_relu", {in({2, 8, 9, 9}), in({16, 8, 3, 3}), in({16})}, {2, 16, 9, 9},
                              conv_attrs("NCHW", "Relu", 1, 3, 1, 1)));
  t.cases.push_back(conv_case("nchw_dilated_sigmoid_no_bias", {in({1, 4, 12, 12}), in({6, 4, 3, 3})}, {1, 6, 12, 12},
                              conv_attrs("NCHW", "Sigmoid", 1, 3, 1, 2, 2)));
  t.cases.push_back(conv_case("nhwc_depthwise_stride2_hardswish_residual",
                              {in({2, 10, 9, 24}), in({24, 3, 3, 1}), in({24}), in({2, 5, 5, 24})}, {2, 5, 5, 24},
                              conv_attrs("NHWC", "HardSwish", 24, 3, 2, 1)));
  AttributeMap clip = conv_attrs("NHWC", "Clip", 1, 1, 1, 0);
  clip.set("clip_min", -0.25f);
  clip.set("clip_max", 0.5f);
  t.cases.push_back(conv_case("nhwc_pointwise_clip", {in({2, 7, 6, 32}), in({48, 1, 1, 32}), in({48})}, {2, 7, 6, 48}, clip));
  t.cases.push_back(conv_case("nhwc_grouped", {in({1, 8, 8, 16}), in({32, 3, 3, 4}), in({32})}, {1, 8, 8, 32},
                              conv_attrs("NHWC", "", 4, 3, 1, 1)));
  AttributeMap deferred = conv_attrs("NHWC", "Relu", 32, 3, 1, 1);
  deferred.set("input_activation", std::string("Silu"));
  t.cases.push_back(conv_case("nhwc_depthwise_input_silu_residual",
                              {in({2, 9, 10, 32}), in({32, 3, 3, 1}), in({32}), in({2, 9, 10, 32})}, {2, 9, 10, 32},
                              deferred));
  t.cases.push_back(conv_case("nhwc_stem_7x7_stride2", {in({2, 32, 32, 8}), in({16, 7, 7, 8}), in({16})}, {2, 16, 16, 16},
                              conv_attrs("NHWC", "Relu", 1, 7, 2, 3)));
  t.cases.push_back(conv_case("nhwc_silu_no_bias_residual", {in({2, 6, 5, 16}), in({24, 3, 3, 16}), none(), in({2, 6, 5, 24})},
                              {2, 6, 5, 24}, conv_attrs("NHWC", "Silu", 1, 3, 1, 1)));
  AttributeMap bad = conv_attrs("NWHC", "Relu", 1, 3, 1, 1);
  t.bad_attributes.push_back({"unknown_layout", bad, {}, "layout"});
  t.reference = graft_conv_formula;
  return t;
}

// ---- GraftConvInt8: int8 X and W (NHWC), float32 per-filter scale and bias, a float16 output ----
// The formula is GraftConv's over the filter scaled per output channel in double: conv(x, w) * s =
// conv(x, w * s), the integer sums' scale taken exactly.
Values graft_conv_int8_formula(const Values& in, const DimsList& dims, const AttributeMap& a) {
  std::vector<double> w = in[1];
  const int64_t m = dims[1][0], per_filter = m ? static_cast<int64_t>(w.size()) / m : 0;
  for (int64_t f = 0; f < m; ++f)
    for (int64_t i = 0; i < per_filter; ++i) w[static_cast<size_t>(f * per_filter + i)] *= in[2][static_cast<size_t>(f)];
  AttributeMap nhwc_attrs = a;
  nhwc_attrs.set("layout", std::string("NHWC"));
  const bool bias = in.size() > 3 && !in[3].empty(), residual = in.size() > 4 && !in[4].empty();
  Values conv_in = {in[0], w, bias ? in[3] : std::vector<double>{}};
  DimsList conv_dims = {dims[0], dims[1], bias ? dims[3] : Ints{}};
  if (residual) {
    conv_in.push_back(in[4]);
    conv_dims.push_back(dims[4]);
  }
  Values y = graft_conv_formula(conv_in, conv_dims, nhwc_attrs);
  // An int8 output: QuantizeLinear's rounding (half to even) and saturation, zero point 0.
  if (a.get_int("to", 10).value() == static_cast<int64_t>(DataType::kInt8)) {
    const double s = a.get_float("out_scale", 1.f).value();
    for (double& v : y[0]) v = std::clamp(std::nearbyint(v / s), -128.0, 127.0);
  }
  return y;
}

OpCaseTable graft_conv_int8_cases() {
  OpCaseTable t;
  t.domain = kInternalDomain;
  t.name = "GraftConvInt8";
  // Its output is float16 (attribute `to`), which the INT8 kernel writes; X and W are int8 and the
  // scale and bias float32 in every case.
  t.cuda_dtypes = t.cpu_dtypes = {DataType::kFloat16};
  t.reference_dtype = DataType::kFloat32;  // the scale and bias are float32 by definition
  auto attrs = [](const char* act, int64_t k, int64_t stride, int64_t pad, int64_t dilation) {
    AttributeMap a = conv_attrs("NHWC", act, 1, k, stride, pad, dilation);
    a.erase("layout");
    a.set("to", static_cast<int64_t>(DataType::kFloat16));
    return a;
  };
  auto i8 = [](Ints d) { return typed(std::move(d), DataType::kInt8, -128, 127); };
  // Scales that keep the outputs within a few units: the sums' spread is about sqrt(K) * 74^2.
  auto scales = [](int64_t m, int64_t k) {
    const double s = 1.0 / (std::sqrt(static_cast<double>(k)) * 5500.0);
    return typed({m}, DataType::kFloat32, 0.5 * s, 1.5 * s);
  };
  auto f32 = [](Ints d) { return typed(std::move(d), DataType::kFloat32, -1.0, 1.0); };
  t.cases.push_back(conv_case("3x3_relu_bias", {i8({2, 7, 7, 16}), i8({32, 3, 3, 16}), scales(32, 144), f32({32})},
                              {2, 7, 7, 32}, attrs("Relu", 3, 1, 1, 1)));
  AttributeMap clip = attrs("Clip", 1, 1, 0, 1);
  clip.set("clip_min", -0.25f);
  clip.set("clip_max", 0.5f);
  t.cases.push_back(conv_case("1x1_clip_residual_no_bias",
                              {i8({2, 5, 6, 32}), i8({24, 1, 1, 32}), scales(24, 32), none(), in({2, 5, 6, 24})},
                              {2, 5, 6, 24}, clip));
  t.cases.push_back(conv_case("3x3_stride2_dilated", {i8({1, 11, 9, 16}), i8({20, 3, 3, 16}), scales(20, 144), f32({20})},
                              {1, 5, 4, 20}, attrs("", 3, 2, 1, 2)));
  // An int8 output (the next layer's quantizer fused): powers of two for every scale and bias values
  // on a 2^-6 grid, so the float32 steps are exact and the formula's rounding (half to even) agrees
  // with them on every element, ties included.
  AttributeMap int8_out = attrs("Relu", 3, 1, 1, 1);
  int8_out.set("to", static_cast<int64_t>(DataType::kInt8));
  int8_out.set("out_scale", 0.0625f);
  std::vector<double> pow2_scales, grid_bias;
  for (int i = 0; i < 24; ++i) {
    pow2_scales.push_back(std::ldexp(1.0, -14 - i % 3));
    grid_bias.push_back((i % 9 - 4) * 0.078125);
  }
  OpCase q = conv_case("3x3_relu_int8_out", {i8({2, 6, 5, 16}), i8({24, 3, 3, 16}), fixed({24}, DataType::kFloat32, pow2_scales),
                                               fixed({24}, DataType::kFloat32, grid_bias)},
                       {2, 6, 5, 24}, int8_out);
  t.cases.push_back(q);
  AttributeMap silu = attrs("Silu", 3, 1, 1, 1);
  t.bad_attributes.push_back({"silu_activation", silu, {}, "activation"});
  AttributeMap grouped = attrs("Relu", 3, 1, 1, 1);
  grouped.set("group", int64_t{2});
  t.bad_attributes.push_back({"two_groups", grouped, {}, "group"});
  AttributeMap to_int32 = attrs("Relu", 3, 1, 1, 1);
  to_int32.set("to", static_cast<int64_t>(DataType::kInt32));
  t.bad_attributes.push_back({"int32_output", to_int32, {}, "to"});
  AttributeMap no_scale = attrs("Relu", 3, 1, 1, 1);
  no_scale.set("to", static_cast<int64_t>(DataType::kInt8));
  t.bad_attributes.push_back({"int8_output_without_scale", no_scale, {}, "out_scale"});
  t.reference = graft_conv_int8_formula;
  return t;
}

OpCaseTable graft_pool_cases() {
  OpCaseTable t;
  t.domain = kInternalDomain;
  t.name = "GraftPool";
  t.cuda_dtypes = t.cpu_dtypes = {DataType::kFloat32, DataType::kFloat16};
  auto pool = [](const char* kind, Ints k, Ints s, Ints p) {
    AttributeMap a;
    a.set("pool", std::string(kind));
    a.set("layout", std::string("NHWC"));
    if (!k.empty()) {
      a.set("kernel_shape", k);
      a.set("strides", s);
      a.set("pads", p);
    }
    return a;
  };
  auto pcase = [](std::string label, Ints x, Ints out, AttributeMap a) {
    OpCase c;
    c.label = std::move(label);
    c.inputs = {in(std::move(x))};
    c.output_dims = {std::move(out)};
    c.attrs = std::move(a);
    return c;
  };
  t.cases.push_back(pcase("max_3x3_stride2", {2, 11, 10, 16}, {2, 6, 5, 16}, pool("MaxPool", {3, 3}, {2, 2}, {1, 1, 1, 1})));
  t.cases.push_back(pcase("average_2x2", {1, 8, 6, 24}, {1, 4, 3, 24}, pool("AveragePool", {2, 2}, {2, 2}, {0, 0, 0, 0})));
  t.cases.push_back(pcase("global_average", {2, 7, 7, 40}, {2, 1, 1, 40}, pool("GlobalAveragePool", {}, {}, {})));
  t.cases.push_back(pcase("global_max", {2, 5, 6, 12}, {2, 1, 1, 12}, pool("GlobalMaxPool", {}, {}, {})));
  t.reference = [](const Values& x, const DimsList& dims, const AttributeMap& a) {
    const std::string kind = a.get_string("pool", "").value();
    const Ints nchw = dims_permuted(dims[0], kToNchw);
    const std::vector<double> v = permuted(x[0], dims[0], kToNchw);
    std::vector<double> y;
    Ints yd;
    if (kind == "GlobalAveragePool" || kind == "GlobalMaxPool") {
      const int64_t area = nchw[2] * nchw[3];
      for (int64_t r = 0; r < nchw[0] * nchw[1]; ++r) {
        double acc = kind == "GlobalMaxPool" ? -INFINITY : 0.0;
        for (int64_t i = 0; i < area; ++i)
          acc = kind == "GlobalMaxPool" ? std::max(acc, v[r * area + i]) : acc + v[r * area + i];
        y.push_back(kind == "GlobalMaxPool" ? acc : acc / static_cast<double>(area));
      }
      yd = {nchw[0], nchw[1], 1, 1};
    } else {
      y = pool_reference({v}, {nchw}, a, kind == "MaxPool")[0];
      yd = {nchw[0], nchw[1], 0, 0};
      const Ints k = a.get_ints("kernel_shape", {}).value(), s = a.get_ints("strides", {}).value();
      const Ints p = a.get_ints("pads", {}).value();
      yd[2] = (nchw[2] + p[0] + p[2] - k[0]) / s[0] + 1;
      yd[3] = (nchw[3] + p[1] + p[3] - k[1]) / s[1] + 1;
    }
    return Values{permuted(y, yd, kToNhwc)};
  };
  return t;
}

// GraftGemm(X[..., K], W, bias?, R?): Y = act(alpha * X.W + bias + R), W [K, N] or (transB) [N, K].
OpCaseTable graft_gemm_cases() {
  OpCaseTable t = builtin_table("GraftGemm", [](const Values& in, const DimsList& dims, const AttributeMap& a) {
    const bool tb = a.get_int("transB", 0).value() == 1;
    const double alpha = a.get_float("alpha", 1.f).value();
    const std::string act = a.get_string("activation", "").value();
    const int64_t k = dims[0].back(), m = count(dims[0]) / k, n = tb ? dims[1][0] : dims[1][1];
    std::vector<double> y(static_cast<size_t>(m * n));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0.0;
        for (int64_t p = 0; p < k; ++p) acc += in[0][i * k + p] * in[1][tb ? j * k + p : p * n + j];
        double v = alpha * acc + (in.size() > 2 && !in[2].empty() ? in[2][j] : 0.0) +
                   (in.size() > 3 && !in[3].empty() ? in[3][i * n + j] : 0.0);
        if (act == "Relu") v = std::max(0.0, v);
        if (act == "Gelu") v = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
        y[i * n + j] = v;
      }
    return Values{y};
  });
  t.domain = kInternalDomain;
  t.cuda_dtypes = t.cpu_dtypes = {DataType::kFloat32, DataType::kFloat16};
  auto attrs = [](int64_t tb, float alpha, const char* act) {
    AttributeMap a;
    a.set("transB", tb);
    a.set("alpha", alpha);
    a.set("activation", std::string(act));
    return a;
  };
  t.cases.push_back(make_case("bias_gelu_folded_batch", {data({2, 5, 16}, -1, 1), data({16, 12}, -1, 1), data({12}, -1, 1)},
                              {{2, 5, 12}}, attrs(0, 1.f, "Gelu")));
  t.cases.push_back(make_case("transB_relu_scaled", {data({7, 24}, -1, 1), data({10, 24}, -1, 1), data({10}, -1, 1)}, {{7, 10}},
                              attrs(1, 0.5f, "Relu")));
  t.cases.push_back(make_case("residual", {data({3, 4, 8}, -1, 1), data({8, 6}, -1, 1), data({6}, -1, 1), data({3, 4, 6}, -1, 1)},
                              {{3, 4, 6}}, attrs(0, 1.f, "")));
  for (OpCase& c : t.cases) c.tolerance[DataType::kFloat32] = 1e-4;
  t.reference_dtype = DataType::kFloat32;  // GraftGemm takes float32, float16 and bfloat16 only
  return t;
}

// GraftAttention(Q[..., S, D], Kt[..., D, S2], V[..., S2, Dv], bias?[P, S, S2]):
// Y = softmax(scale * Q.Kt + bias[b % P]) . V per batch entry b.
OpCaseTable graft_attention_cases() {
  OpCaseTable t = builtin_table("GraftAttention", [](const Values& in, const DimsList& dims, const AttributeMap& a) {
    const double scale = a.get_float("scale", 1.f).value();
    const Ints& q = dims[0];
    const int64_t s = q[q.size() - 2], d = q.back(), s2 = dims[1].back(), dv = dims[2].back();
    const int64_t batch = count(q) / (s * d);
    const bool has_bias = in.size() > 3 && !in[3].empty();
    const int64_t periods = has_bias ? dims[3][0] : 1;
    std::vector<double> y(static_cast<size_t>(batch * s * dv), 0.0), row(static_cast<size_t>(s2));
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < s; ++i) {
        double mx = -INFINITY, sum = 0.0;
        for (int64_t j = 0; j < s2; ++j) {
          double v = 0.0;
          for (int64_t p = 0; p < d; ++p) v += in[0][(b * s + i) * d + p] * in[1][(b * d + p) * s2 + j];
          v *= scale;
          if (has_bias) v += in[3][((b % periods) * s + i) * s2 + j];
          row[j] = v;
          mx = std::max(mx, v);
        }
        for (int64_t j = 0; j < s2; ++j) sum += (row[j] = std::exp(row[j] - mx));
        for (int64_t j = 0; j < s2; ++j)
          for (int64_t e = 0; e < dv; ++e) y[(b * s + i) * dv + e] += row[j] / sum * in[2][(b * s2 + j) * dv + e];
      }
    return Values{y};
  });
  t.domain = kInternalDomain;
  t.cuda_dtypes = t.cpu_dtypes = {DataType::kFloat32, DataType::kFloat16};
  t.cases.push_back(make_case("heads", {data({2, 3, 7, 8}, -1, 1), data({2, 3, 8, 9}, -1, 1), data({2, 3, 9, 8}, -1, 1)},
                              {{2, 3, 7, 8}}, attr("scale", 0.35f)));
  t.cases.push_back(make_case("periodic_bias", {data({4, 5, 8}, -1, 1), data({4, 8, 5}, -1, 1), data({4, 5, 6}, -1, 1),
                                                data({2, 5, 5}, -1, 1)},
                              {{4, 5, 6}}, attr("scale", 0.5f)));
  for (OpCase& c : t.cases) c.tolerance[DataType::kFloat32] = 1e-4;
  t.reference_dtype = DataType::kFloat32;  // as GraftGemm's
  return t;
}

}  // namespace

std::vector<OpCaseTable> internal_case_tables() {
  return {graft_conv_cases(), graft_conv_int8_cases(), graft_pool_cases(), graft_gemm_cases(), graft_attention_cases()};
}

}  // namespace graft::optest
