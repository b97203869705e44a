// Cases for ModulatedDeformConv2d (DCNv2, mmcv semantics): x (N,C,H,W), offset (N,2*dg*kh*kw,Ho,Wo),
// mask (N,dg*kh*kw,Ho,Wo), weight (Co,C/groups,kh,kw), optional bias (Co).
//
// The independent reference below evaluates every output element directly, with bilinear sampling
// written as a sum of tent weights max(0, 1-|y-i|) * max(0, 1-|x-j|) over the pixels around the
// sample, not the kernel's column-then-GEMM structure or its corner arithmetic. The extra tests
// check the mmdeploy alias, the shape function's errors, a call without bias and the runtime checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <tuple>
#include <utility>

#include "graft/registry.h"
#include "harness.h"

#ifdef GRAFT_WITH_CUDA
#include <cuda_runtime.h>

#include "ops/modulated_deform_conv2d/modulated_deform_conv2d_kernels.cuh"
#endif

namespace graft::optest {

namespace {

constexpr const char* kName = "ModulatedDeformConv2d";

struct MdcnShape {
  int64_t n, c, h, w, co, kh, kw;
  std::vector<int64_t> stride = {1, 1}, padding = {0, 0}, dilation = {1, 1};
  int64_t groups = 1, deform_groups = 1;
  double off_lo = -2.0, off_hi = 2.0;
  bool bias = true;
};

int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) { return (in + 2 * p - d * (k - 1) - 1) / s + 1; }

AttributeMap attrs_of(const MdcnShape& z) {
  AttributeMap a;
  a.set("stride", z.stride);
  a.set("padding", z.padding);
  a.set("dilation", z.dilation);
  a.set("groups", z.groups);
  a.set("deform_groups", z.deform_groups);
  return a;
}

std::vector<std::vector<int64_t>> dims_of(const MdcnShape& z) {
  const int64_t ho = out_size(z.h, z.kh, z.stride[0], z.padding[0], z.dilation[0]);
  const int64_t wo = out_size(z.w, z.kw, z.stride[1], z.padding[1], z.dilation[1]);
  const int64_t k = z.kh * z.kw;
  return {{z.n, z.c, z.h, z.w},
          {z.n, 2 * z.deform_groups * k, ho, wo},
          {z.n, z.deform_groups * k, ho, wo},
          {z.co, z.c / z.groups, z.kh, z.kw},
          {z.co},
          {z.n, z.co, ho, wo}};
}

OpCase mdcn_case(std::string label, const MdcnShape& z) {
  const auto d = dims_of(z);
  OpCase k;
  k.label = std::move(label);
  k.inputs = {{d[0], -2.0, 2.0}, {d[1], z.off_lo, z.off_hi}, {d[2], 0.0, 1.0}, {d[3], -1.0, 1.0}, {d[4], -1.0, 1.0}};
  k.inputs[4].omitted = !z.bias;
  // The harness checks every differentiable input's gradient, bias included; a case without bias
  // checks the forward only (BackwardWithoutBias below covers its backward).
  k.check_gradients = z.bias;
  k.attrs = attrs_of(z);
  k.output_dims = {d[5]};
  // The sample position is an integer grid position plus the offset, so it sits on a bilinear kink
  // (a pixel line, or the -1 / H border) exactly when the offset is an integer. A float32 kernel and
  // the float64 reference may then pick neighbouring cells, and a finite-difference step would
  // straddle the kink: offsets within 1e-3 of an integer are moved off it (the rest stay random).
  // With that margin the default step (1e-5 relative, offsets <= 6) never crosses a kink, and the op
  // is linear in each single input element inside a cell, so central differences are exact up to
  // rounding.
  k.adjust_inputs = [](std::vector<Tensor>& ins) {
    Tensor& off = ins[1];
    for (int64_t i = 0; i < off.numel(); ++i)
      for (int attempt = 0; attempt < 8; ++attempt) {
        const double v = off.get(i);
        if (std::fabs(v - std::round(v)) >= 1e-3) break;
        off.set(i, v + 1e-2 * (attempt + 1));
      }
  };
  return k;
}

// One output element straight from the definition.
ReferenceFn direct_reference() {
  return [](const std::vector<std::vector<double>>& in, const std::vector<std::vector<int64_t>>& dims,
            const AttributeMap& attrs) {
    const auto stride = attrs.get_ints("stride", {1, 1}).value();
    const auto pad = attrs.get_ints("padding", {0, 0}).value();
    const auto dil = attrs.get_ints("dilation", {1, 1}).value();
    const int64_t groups = attrs.get_int("groups", 1).value(), dg = attrs.get_int("deform_groups", 1).value();
    const int64_t n = dims[0][0], c = dims[0][1], h = dims[0][2], w = dims[0][3];
    const int64_t co = dims[3][0], cg = dims[3][1], kh = dims[3][2], kw = dims[3][3];
    const int64_t ho = dims[1][2], wo = dims[1][3];
    const bool has_bias = !in[4].empty();
    auto tent = [](double t) { return std::max(0.0, 1.0 - std::fabs(t)); };
    auto sample = [&](int64_t b, int64_t ch, double y, double x) {
      if (y <= -1.0 || x <= -1.0 || y >= static_cast<double>(h) || x >= static_cast<double>(w)) return 0.0;
      double s = 0.0;
      for (int64_t i = static_cast<int64_t>(std::floor(y)); i <= static_cast<int64_t>(std::floor(y)) + 1; ++i)
        for (int64_t j = static_cast<int64_t>(std::floor(x)); j <= static_cast<int64_t>(std::floor(x)) + 1; ++j)
          if (i >= 0 && j >= 0 && i < h && j < w)
            s += tent(y - static_cast<double>(i)) * tent(x - static_cast<double>(j)) * in[0][((b * c + ch) * h + i) * w + j];
      return s;
    };
    std::vector<double> out(static_cast<size_t>(n * co * ho * wo));
    for (int64_t b = 0; b < n; ++b)
      for (int64_t o = 0; o < co; ++o)
        for (int64_t oy = 0; oy < ho; ++oy)
          for (int64_t ox = 0; ox < wo; ++ox) {
            double acc = has_bias ? in[4][o] : 0.0;
            const int64_t g = o / (co / groups);
            for (int64_t cl = 0; cl < cg; ++cl) {
              const int64_t ch = g * cg + cl;
              const int64_t d = ch / (c / dg);
              for (int64_t i = 0; i < kh; ++i)
                for (int64_t j = 0; j < kw; ++j) {
                  const int64_t tap = d * kh * kw + i * kw + j;
                  const double dy = in[1][((b * 2 * dg * kh * kw + 2 * tap) * ho + oy) * wo + ox];
                  const double dx = in[1][((b * 2 * dg * kh * kw + 2 * tap + 1) * ho + oy) * wo + ox];
                  const double m = in[2][((b * dg * kh * kw + tap) * ho + oy) * wo + ox];
                  const double y = static_cast<double>(oy * stride[0] - pad[0] + i * dil[0]) + dy;
                  const double x = static_cast<double>(ox * stride[1] - pad[1] + j * dil[1]) + dx;
                  acc += in[3][((o * cg + cl) * kh + i) * kw + j] * m * sample(b, ch, y, x);
                }
            }
            out[((b * co + o) * ho + oy) * wo + ox] = acc;
          }
    return std::vector<std::vector<double>>{out};
  };
}

MdcnShape with(MdcnShape z, auto&& fn) {
  fn(z);
  return z;
}

}  // namespace

OpCaseTable modulated_deform_conv2d_cases() {
  OpCaseTable t;
  t.name = kName;
  const MdcnShape basic{2, 4, 5, 6, 3, 3, 3, {1, 1}, {1, 1}};
  t.cases.push_back(mdcn_case("basic_3x3_pad1", basic));
  t.cases.push_back(mdcn_case("groups2_deform_groups2", with(basic, [](MdcnShape& z) {
                                z.n = 1, z.co = 6, z.groups = 2, z.deform_groups = 2;
                              })));
  t.cases.push_back(mdcn_case("deform_groups4_one_group", with(basic, [](MdcnShape& z) { z.deform_groups = 4; })));
  t.cases.push_back(mdcn_case("depthwise_groups_eq_channels", with(basic, [](MdcnShape& z) {
                                z.co = 4, z.groups = 4, z.deform_groups = 2;
                              })));
  t.cases.push_back(mdcn_case("stride2_pad2_dilation2", {2, 3, 9, 8, 2, 3, 3, {2, 2}, {2, 2}, {2, 2}}));
  // Everything asymmetric: 2x3 kernel, stride (2, 1), padding (0, 1), dilation (1, 2).
  t.cases.push_back(mdcn_case("asymmetric_2x3", {1, 2, 7, 6, 4, 2, 3, {2, 1}, {0, 1}, {1, 2}, 1, 2}));
  t.cases.push_back(mdcn_case("kernel_1x1", {2, 3, 4, 5, 2, 1, 1}));
  // Offsets up to 6 pixels on a 4x5 image: most samples leave it or straddle its border.
  t.cases.push_back(mdcn_case("offsets_outside_image", with(basic, [](MdcnShape& z) {
                                z.h = 4, z.w = 5, z.off_lo = -6.0, z.off_hi = 6.0;
                              })));
  t.cases.push_back(mdcn_case("no_bias_forward", with(basic, [](MdcnShape& z) { z.bias = false; })));
  t.cases.push_back(mdcn_case("wider_c8_co16_g2_dg4", {2, 8, 7, 9, 16, 3, 3, {1, 1}, {1, 1}, {1, 1}, 2, 4}));
  // An input of height 0 whose output comes from the padding alone: every sample is outside the
  // image (the CUDA column kernel reads no plane then), so the output is the bias.
  t.cases.push_back(mdcn_case("empty_input_plane_padding_only", {2, 3, 0, 4, 2, 1, 1, {1, 1}, {1, 1}}));
  // A batch of 5 with groups, deform groups and stride 2 (ForwardInImageChunks below runs the CUDA
  // forward in chunks of fewer images than that).
  t.cases.push_back(mdcn_case("batch5_g2_dg2_stride2", {5, 4, 7, 6, 4, 3, 3, {2, 2}, {1, 1}, {1, 1}, 2, 2}));
  // Conv groups and deform groups of 8 channels (whole 16-byte vectors in FP16 and FP32; two of them
  // a thread in FP32): the CUDA forward's channels-last path, with the bias folded into its matmul,
  // without bias, with samples far outside a small image, and with an input plane of height 0.
  t.cases.push_back(mdcn_case("channels_last_c16_g2_dg2", {2, 16, 5, 6, 8, 3, 3, {1, 1}, {1, 1}, {1, 1}, 2, 2}));
  t.cases.push_back(
      mdcn_case("channels_last_c8_no_bias_far_offsets", {2, 8, 4, 5, 5, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, 1, -5.0, 5.0, false}));
  t.cases.push_back(mdcn_case("channels_last_c8_stride2_dilation2", {3, 8, 7, 6, 4, 3, 3, {2, 2}, {2, 2}, {2, 2}}));
  t.cases.push_back(mdcn_case("channels_last_c8_empty_input_plane", {2, 8, 0, 4, 3, 1, 1, {1, 1}, {1, 1}}));
  // Groups of 16 channels: the CUDA column pass takes two vectors a thread in FP16 too (in FP32 the
  // cases above with groups of 8 already do).
  t.cases.push_back(mdcn_case("channels_last_c32_g2_dg2_two_vectors", {1, 32, 4, 5, 4, 3, 3, {1, 1}, {1, 1}, {1, 1}, 2, 2}));
  // 512 channels of 3x3 taps, DCN-ResNet-50's stage-4 reduction depth: in FP32 the CUDA forward runs
  // the NCHW path for it (kFp32NchwMinTerms), whole vectors or not; in FP16 channels-last.
  t.cases.push_back(mdcn_case("deep_reduction_c512", {1, 512, 3, 4, 2, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, 2}));
  // Three images of it, and two images of a 4608-term reduction per conv group in two groups without
  // bias: the NCHW path's matmul over a whole chunk of images, its product laid out (and the bias
  // added) by the unpack kernel.
  t.cases.push_back(mdcn_case("deep_reduction_c512_batch3", {3, 512, 3, 4, 2, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, 2}));
  t.cases.push_back(mdcn_case("deep_reduction_c1024_batch2_g2_no_bias",
                              {2, 1024, 3, 3, 4, 3, 3, {1, 1}, {1, 1}, {1, 1}, 2, 2, -1.0, 1.0, false}));

  // Values validate_attributes refuses by the declared ranges.
  auto bad = [&](std::string label, const MdcnShape& z, std::string attr) {
    t.bad_attributes.push_back({std::move(label), attrs_of(z), {}, std::move(attr)});
  };
  // Shapes built for the valid groups, then the attribute changed: the shape function must object.
  {
    auto d = dims_of(basic);
    d.pop_back();
    AttributeMap a = attrs_of(basic);
    a.set("groups", int64_t{3});
    t.bad_attributes.push_back({"groups_do_not_divide_channels", a, d, "groups"});
    a = attrs_of(basic);
    a.set("deform_groups", int64_t{3});
    t.bad_attributes.push_back({"deform_groups_do_not_divide_channels", a, d, "deform_groups"});
    a = attrs_of(basic);
    a.set("stride", std::vector<int64_t>{1, 1, 1});
    t.bad_attributes.push_back({"stride_three_values", a, d, "stride"});
    a = attrs_of(basic);
    a.set("dilation", std::vector<int64_t>{1});
    t.bad_attributes.push_back({"dilation_one_value", a, d, "dilation"});
  }
  bad("stride_zero", with(basic, [](MdcnShape& z) { z.stride = {1, 0}; }), "stride");
  bad("padding_negative", with(basic, [](MdcnShape& z) { z.padding = {-1, 1}; }), "padding");
  bad("dilation_zero", with(basic, [](MdcnShape& z) { z.dilation = {0, 1}; }), "dilation");
  bad("deform_groups_zero", with(basic, [](MdcnShape& z) { z.deform_groups = 0; }), "deform_groups");
  t.reference = direct_reference();
  return t;
}

// ---- op-specific checks ---------------------------------------------------------------------
namespace {

std::vector<std::optional<std::vector<int64_t>>> opt_dims(std::vector<std::vector<int64_t>> d) {
  return {d.begin(), d.end()};
}

const OpDef& the_op() {
  auto def = OpRegistry::global().find("ai.onnx.contrib", kName, "1", "");
  EXPECT_TRUE(def.is_ok()) << def.status().to_string();
  return **def;
}

Tensor random(DataType dt, const std::vector<int64_t>& dims, std::mt19937_64& rng, double lo, double hi) {
  std::uniform_real_distribution<double> u(lo, hi);
  Tensor t = Tensor::empty(dt, dims);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, u(rng));
  return t;
}

}  // namespace

TEST(ModulatedDeformConv2d, MmdeployAliasFindsTheOp) {
  auto found = OpRegistry::global().find("mmdeploy", "MMCVModulatedDeformConv2d", "1", "");
  ASSERT_TRUE(found.is_ok()) << found.status().to_string();
  EXPECT_EQ((*found)->name(), kName);
  // mmdeploy's attribute names are the op's own.
  for (const char* a : {"stride", "padding", "dilation", "groups", "deform_groups"})
    EXPECT_NE((*found)->find_attr(a), nullptr) << a;
}

TEST(ModulatedDeformConv2d, ShapeFunctionNamesTheBadInput) {
  const OpDef& def = the_op();
  const MdcnShape z{2, 4, 5, 6, 3, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, 2};
  AttributeMap attrs = attrs_of(z);
  ASSERT_TRUE(def.validate_attributes(attrs).is_ok());
  auto good = dims_of(z);
  good.pop_back();
  auto ok = infer_concrete_shapes(def, opt_dims(good), attrs);
  ASSERT_TRUE(ok.is_ok()) << ok.status().to_string();
  EXPECT_EQ((*ok)[0], (std::vector<int64_t>{2, 3, 5, 6}));
  auto no_bias = opt_dims(good);
  no_bias[4] = std::nullopt;
  auto nb = infer_concrete_shapes(def, no_bias, attrs);
  ASSERT_TRUE(nb.is_ok()) << nb.status().to_string();

  struct Bad {
    int input;
    std::vector<int64_t> dims;
    std::string names;
  };
  const std::vector<Bad> bad = {
      {0, {2, 4, 5}, "'x'"},                // rank 3
      {0, {2, 4, 0, 6}, "'x'"},             // kernel larger than the padded input
      {1, {2, 18, 5, 6}, "'offset'"},       // channels for one deform group, not two
      {1, {2, 36, 4, 6}, "'offset'"},       // Ho disagrees
      {1, {3, 36, 5, 6}, "'offset'"},       // N disagrees
      {2, {2, 9, 5, 6}, "'mask'"},          // channels
      {2, {2, 18, 5, 7}, "'mask'"},         // Wo disagrees
      {3, {3, 2, 3, 3}, "'weight'"},        // C/groups disagrees with x
      {4, {4}, "'bias'"},                   // Co disagrees
  };
  for (const Bad& b : bad) {
    auto dims = good;
    dims[b.input] = b.dims;
    auto r = infer_concrete_shapes(def, opt_dims(dims), attrs);
    ASSERT_FALSE(r.is_ok()) << "accepted input " << b.input << " with a bad shape";
    EXPECT_NE(r.status().to_string().find(b.names), std::string::npos) << r.status().to_string();
  }
}

// Without bias the backward leaves grad_bias unwritten (absent) and the other gradients equal those
// of a call with a zero bias.
TEST(ModulatedDeformConv2d, BackwardWithoutBias) {
  const OpDef& def = the_op();
  const MdcnShape z{2, 4, 5, 6, 4, 3, 3, {1, 1}, {1, 1}, {1, 1}, 2, 2};
  AttributeMap attrs = attrs_of(z);
  ASSERT_TRUE(def.validate_attributes(attrs).is_ok());
  const auto d = dims_of(z);
  std::mt19937_64 rng(11);
  const DataType f64 = DataType::kFloat64;
  Tensor x = random(f64, d[0], rng, -2, 2), off = random(f64, d[1], rng, -2, 2), mask = random(f64, d[2], rng, 0, 1),
         wt = random(f64, d[3], rng, -1, 1), zero_bias = Tensor::empty(f64, d[4]), go = random(f64, d[5], rng, -1, 1);
  for (int64_t i = 0; i < zero_bias.numel(); ++i) zero_bias.set(i, 0.0);
  auto run = [&](bool with_bias) {
    std::vector<Tensor> grads;
    for (int i = 0; i < 5; ++i) grads.push_back(Tensor::empty(f64, d[i]));
    KernelContext ctx;
    ctx.attrs = &attrs;
    ctx.inputs = {x.view(), off.view(), mask.view(), wt.view(), with_bias ? zero_bias.view() : TensorView{}, go.view()};
    for (int i = 0; i < 5; ++i) ctx.outputs.push_back(i == 4 && !with_bias ? TensorView{} : grads[i].view());
    Status s = def.run_backward(Backend::kCPU, ctx);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    return grads;
  };
  auto a = run(true), b = run(false);
  for (int i = 0; i < 4; ++i)
    for (int64_t j = 0; j < a[i].numel(); ++j) ASSERT_EQ(a[i].get(j), b[i].get(j)) << "gradient " << i << " at " << j;
}

// A kernel call whose offset does not match the convolution is an error naming the input, never a
// read past the buffer.
TEST(ModulatedDeformConv2d, CpuKernelRefusesInconsistentShapes) {
  const OpDef& def = the_op();
  const MdcnShape z{1, 4, 5, 6, 3, 3, 3, {1, 1}, {1, 1}};
  AttributeMap attrs = attrs_of(z);
  ASSERT_TRUE(def.validate_attributes(attrs).is_ok());
  auto d = dims_of(z);
  std::mt19937_64 rng(5);
  const DataType f32 = DataType::kFloat32;
  for (auto [input, dims, names] : {std::tuple{1, std::vector<int64_t>{1, 18, 4, 6}, "'offset'"},
                                    std::tuple{2, std::vector<int64_t>{1, 8, 5, 6}, "'mask'"},
                                    std::tuple{3, std::vector<int64_t>{3, 3, 3, 3}, "'weight'"},
                                    std::tuple{4, std::vector<int64_t>{2}, "'bias'"}}) {
    auto dd = d;
    dd[input] = dims;
    std::vector<Tensor> ins;
    for (int i = 0; i < 5; ++i) ins.push_back(random(f32, dd[i], rng, -1, 1));
    Tensor out = Tensor::empty(f32, d[5]);
    KernelContext ctx;
    ctx.attrs = &attrs;
    for (auto& t : ins) ctx.inputs.push_back(t.view());
    ctx.outputs = {out.view()};
    Status s = def.run(Backend::kCPU, ctx);
    ASSERT_FALSE(s.is_ok()) << "accepted input " << input;
    EXPECT_NE(s.to_string().find(names), std::string::npos) << s.to_string();
  }
}

// (N, C, H, W) as (N, H, W, C) and back, for the channels-last kernel calls below.
Tensor permuted(const Tensor& t, bool to_channels_last) {
  const auto& d = t.dims();
  const std::vector<int64_t> out_dims =
      to_channels_last ? std::vector<int64_t>{d[0], d[2], d[3], d[1]} : std::vector<int64_t>{d[0], d[3], d[1], d[2]};
  Tensor o = Tensor::empty(t.dtype(), out_dims);
  const int64_t n = d[0], c = to_channels_last ? d[1] : d[3], h = to_channels_last ? d[2] : d[1],
                w = to_channels_last ? d[3] : d[2];
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t i = 0; i < h * w; ++i) {
        const int64_t nchw = (b * c + ch) * h * w + i, nhwc = (b * h * w + i) * c + ch;
        if (to_channels_last) o.set(nhwc, t.get(nchw));
        else o.set(nchw, t.get(nhwc));
      }
  return o;
}

// Shapes for the channels-last calls: groups of whole 16-byte vectors and not (3 channels, groups
// of 2), two vectors a thread, no bias, samples far outside, an input plane of height 0.
const std::vector<MdcnShape>& channels_last_shapes() {
  static const std::vector<MdcnShape> shapes = {
      {2, 16, 5, 6, 8, 3, 3, {1, 1}, {1, 1}, {1, 1}, 2, 2},
      {3, 32, 4, 5, 6, 3, 3, {2, 2}, {1, 1}, {1, 1}},
      {2, 3, 6, 5, 4, 3, 3, {1, 1}, {1, 1}},
      {2, 4, 5, 6, 6, 3, 3, {1, 1}, {2, 2}, {2, 2}, 2, 2, -5.0, 5.0, false},
      {2, 8, 0, 4, 3, 1, 1, {1, 1}, {1, 1}},
  };
  return shapes;
}

// With KernelContext::channels_last_io the CPU kernel reads x as (N, H, W, C) and writes the output
// as (N, Ho, Wo, Co), views still (N, C, H, W): the same values as the NCHW call, exactly (float64).
TEST(ModulatedDeformConv2d, ChannelsLastIoMatchesNchwOnCpu) {
  const OpDef& def = the_op();
  EXPECT_TRUE(def.supports_channels_last_io());
  std::mt19937_64 rng(29);
  const DataType f64 = DataType::kFloat64;
  for (const MdcnShape& z : channels_last_shapes()) {
    AttributeMap attrs = attrs_of(z);
    ASSERT_TRUE(def.validate_attributes(attrs).is_ok());
    const auto d = dims_of(z);
    std::vector<Tensor> in;
    const double lo[] = {-2, z.off_lo, 0, -1, -1}, hi[] = {2, z.off_hi, 1, 1, 1};
    for (int i = 0; i < 5; ++i) in.push_back(random(f64, d[i], rng, lo[i], hi[i]));
    auto run = [&](bool channels_last) {
      const Tensor x = channels_last ? permuted(in[0], true) : in[0];
      Tensor out = Tensor::empty(f64, channels_last ? std::vector<int64_t>{d[5][0], d[5][2], d[5][3], d[5][1]} : d[5]);
      for (int64_t i = 0; i < out.numel(); ++i) out.set(i, std::nan(""));
      KernelContext ctx;
      ctx.attrs = &attrs;
      ctx.channels_last_io = channels_last;
      ctx.inputs = {TensorView{x.view().data, f64, d[0], DeviceType::kCPU}, in[1].view(), in[2].view(), in[3].view(),
                    z.bias ? in[4].view() : TensorView{}};
      ctx.outputs = {TensorView{out.data(), f64, d[5], DeviceType::kCPU}};
      Status st = def.run(Backend::kCPU, ctx);
      EXPECT_TRUE(st.is_ok()) << st.to_string();
      return channels_last ? permuted(out, false) : out;
    };
    const Tensor want = run(false), got = run(true);
    for (int64_t i = 0; i < want.numel(); ++i) ASSERT_EQ(got.get(i), want.get(i)) << "C " << z.c << ", element " << i;
  }
  // The backward takes NCHW only: a channels-last call is refused, naming the layout.
  const MdcnShape& z = channels_last_shapes()[0];
  AttributeMap attrs = attrs_of(z);
  ASSERT_TRUE(def.validate_attributes(attrs).is_ok());
  const auto d = dims_of(z);
  std::vector<Tensor> t;
  for (int i = 0; i < 6; ++i) t.push_back(random(f64, d[i], rng, 0, 1));
  KernelContext ctx;
  ctx.attrs = &attrs;
  ctx.channels_last_io = true;
  for (int i = 0; i < 6; ++i) ctx.inputs.push_back(t[i].view());
  std::vector<Tensor> grads;
  for (int i = 0; i < 5; ++i) grads.push_back(Tensor::empty(f64, d[i]));
  for (auto& g : grads) ctx.outputs.push_back(g.view());
  Status st = def.run_backward(Backend::kCPU, ctx);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.to_string().find("channels-last"), std::string::npos) << st.to_string();
}

#ifdef GRAFT_WITH_CUDA
bool no_cuda_device() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0) return false;
  (void)cudaGetLastError();
  return true;
}

// A CUDA test's problem: inputs of z's shape in dtype dt (no bias tensor without one), their exact
// values in float64, and the float64 CPU reference output.
struct CudaProblem {
  std::vector<Tensor> in, ref_in;
  Tensor ref;
};
CudaProblem cuda_problem(const OpDef& def, const AttributeMap& attrs, const MdcnShape& z, DataType dt,
                         std::mt19937_64& rng) {
  const auto d = dims_of(z);
  CudaProblem p;
  const double lo[] = {-2, z.off_lo, 0, -1, -1}, hi[] = {2, z.off_hi, 1, 1, 1};
  for (int i = 0; i < (z.bias ? 5 : 4); ++i) {
    auto low = random(DataType::kFloat64, d[i], rng, lo[i], hi[i]).cast(dt);
    auto back = low.is_ok() ? low->cast(DataType::kFloat64) : low;
    EXPECT_TRUE(back.is_ok());
    if (!back.is_ok()) return p;
    p.in.push_back(*low);
    p.ref_in.push_back(*back);
  }
  p.ref = Tensor::empty(DataType::kFloat64, d[5]);
  KernelContext ctx;
  ctx.attrs = &attrs;
  for (int i = 0; i < 5; ++i) ctx.inputs.push_back(i < static_cast<int>(p.ref_in.size()) ? p.ref_in[i].view() : TensorView{});
  ctx.outputs = {p.ref.view()};
  EXPECT_TRUE(def.run(Backend::kCPU, ctx).is_ok());
  return p;
}

// Device copies of host tensors, freed when this goes.
class DeviceCopies {
 public:
  DeviceCopies() = default;
  DeviceCopies(const DeviceCopies&) = delete;
  DeviceCopies& operator=(const DeviceCopies&) = delete;
  ~DeviceCopies() {
    for (void* p : owned_) (void)cudaFree(p);
  }
  // A device copy of t, viewed with `dims` (t's own when empty).
  TensorView copy(const Tensor& t, std::vector<int64_t> dims = {}) {
    void* p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, std::max<size_t>(t.nbytes(), 1)), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(p, t.data(), t.nbytes(), cudaMemcpyHostToDevice), cudaSuccess);
    owned_.push_back(p);
    return TensorView{p, t.dtype(), dims.empty() ? t.dims() : std::move(dims), DeviceType::kCUDA};
  }

 private:
  std::vector<void*> owned_;
};

// The CUDA kernel context of problem p: device copies of its inputs (input 0 stored channels-last
// with the NCHW dims its view keeps, when `channels_last`; a missing bias as an absent input) and of
// a host output, which `out_host` receives (allocated in the output's storage layout).
KernelContext device_context(const CudaProblem& p, const AttributeMap& attrs, const MdcnShape& z, bool channels_last,
                             DeviceCopies& dev, Tensor* out_host) {
  const auto d = dims_of(z);
  KernelContext ctx;
  ctx.attrs = &attrs;
  ctx.channels_last_io = channels_last;
  ctx.inputs = {channels_last ? dev.copy(permuted(p.in[0], true), d[0]) : dev.copy(p.in[0])};
  for (int i = 1; i < 5; ++i) ctx.inputs.push_back(i < static_cast<int>(p.in.size()) ? dev.copy(p.in[i]) : TensorView{});
  *out_host = channels_last ? Tensor::empty(p.in[0].dtype(), {d[5][0], d[5][2], d[5][3], d[5][1]})
                            : Tensor::empty(p.in[0].dtype(), d[5]);
  ctx.outputs = {dev.copy(*out_host, d[5])};
  return ctx;
}

cuda::MdcnSizes cuda_sizes_of(const MdcnShape& z, const std::vector<int64_t>& out_dims, bool channels_last_io) {
  cuda::MdcnSizes s;
  s.n = z.n, s.c = z.c, s.h = z.h, s.w = z.w, s.co = z.co, s.kh = z.kh, s.kw = z.kw;
  s.ho = out_dims[2], s.wo = out_dims[3], s.sh = z.stride[0], s.sw = z.stride[1], s.ph = z.padding[0];
  s.pw = z.padding[1], s.dh = z.dilation[0], s.dw = z.dilation[1], s.groups = z.groups, s.deform_groups = z.deform_groups;
  s.channels_last_io = channels_last_io;
  return s;
}

size_t forward_workspace(DataType dt, const cuda::MdcnSizes& s, int64_t images) {
  return dt == DataType::kFloat32 ? cuda::modulated_deform_conv2d_forward_workspace_bytes<float>(s, images)
                                  : cuda::modulated_deform_conv2d_forward_workspace_bytes<__half>(s, images);
}

// The CUDA forward of `ctx` (inputs, output, flag set by the caller) with `bytes` of workspace
// starting `misalign` bytes into its allocation (none when 0), the output poisoned with NaN first;
// the output comes back into `out_host`.
void run_cuda_forward(const OpDef& def, KernelContext ctx, size_t bytes, size_t misalign, Tensor* out_host) {
  void* ws = nullptr;
  if (bytes > 0) {
    ASSERT_EQ(cudaMalloc(&ws, bytes + misalign), cudaSuccess);
  }
  const TensorView& out = ctx.outputs[0];
  ASSERT_EQ(cudaMemset(out.data, 0xFF, out.nbytes()), cudaSuccess);  // poison: NaN everywhere
  ctx.workspace = ws != nullptr ? static_cast<char*>(ws) + misalign : nullptr;
  ctx.workspace_size = bytes;
  Status st = def.run(Backend::kCUDA, ctx);
  const cudaError_t sync = cudaDeviceSynchronize();
  if (ws != nullptr) (void)cudaFree(ws);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  ASSERT_EQ(sync, cudaSuccess) << cudaGetErrorString(sync);
  ASSERT_EQ(cudaMemcpy(out_host->data(), out.data, out.nbytes(), cudaMemcpyDeviceToHost), cudaSuccess);
}

// Relative L2 error of `got` against the float64 `ref` (NaN when an element of got is NaN).
double relative_l2(const Tensor& got, const Tensor& ref) {
  double num = 0.0, den = 0.0;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    const double e = got.get(i) - ref.get(i);
    num += e * e;
    den += ref.get(i) * ref.get(i);
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

// The CUDA forward with channels_last_io (x read as (N, H, W, C), the output written (N, Ho, Wo, Co)
// by one matmul per group over the chunk) against the float64 CPU reference of the NCHW call, in
// FP32 and FP16, with a workspace for one image per chunk and with none.
TEST(ModulatedDeformConv2dCuda, ChannelsLastIo) {
  if (no_cuda_device()) GTEST_SKIP() << "no CUDA device";
  const OpDef& def = the_op();
  std::mt19937_64 rng(31);
  for (const MdcnShape& z : channels_last_shapes()) {
    AttributeMap attrs = attrs_of(z);
    ASSERT_TRUE(def.validate_attributes(attrs).is_ok());
    const auto d = dims_of(z);
    for (DataType dt : {DataType::kFloat32, DataType::kFloat16}) {
      const CudaProblem p = cuda_problem(def, attrs, z, dt, rng);
      ASSERT_FALSE(::testing::Test::HasFailure());
      DeviceCopies dev;
      Tensor out_host;
      const KernelContext ctx = device_context(p, attrs, z, /*channels_last=*/true, dev, &out_host);
      const cuda::MdcnSizes s = cuda_sizes_of(z, d[5], true);
      for (size_t bytes : {forward_workspace(dt, s, 1), size_t{0}}) {
        SCOPED_TRACE(std::string(dtype_name(dt)) + ", C " + std::to_string(z.c) + ", workspace " + std::to_string(bytes));
        ASSERT_NO_FATAL_FAILURE(run_cuda_forward(def, ctx, bytes, 0, &out_host));
        auto got = permuted(out_host, false).cast(DataType::kFloat64);
        ASSERT_TRUE(got.is_ok());
        EXPECT_LT(relative_l2(*got, p.ref), dt == DataType::kFloat32 ? 1e-5 : 5e-3);  // NaN fails too
      }
    }
  }
}

// The CUDA forward runs a batch in chunks of as many images as its workspace holds: with room for 1,
// 2 or all images, none (it allocates), and a workspace that starts off a 256-byte boundary, it must
// match the float64 CPU reference. Chunks of 2 over 5 images end with a chunk of 1, so with 2 or 3
// conv groups both matmul arrangements run (per group over images, per image over groups). The last
// two shapes take the channels-last path (its packed weights and channels-last copy of x share the
// workspace with the columns).
TEST(ModulatedDeformConv2dCuda, ForwardInImageChunks) {
  if (no_cuda_device()) GTEST_SKIP() << "no CUDA device";
  const OpDef& def = the_op();
  const std::vector<MdcnShape> shapes = {
      {5, 8, 9, 7, 6, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, 1, -1.5, 1.5, false},
      {5, 8, 9, 7, 6, 3, 3, {2, 2}, {1, 1}, {1, 1}, 2, 2, -1.5, 1.5},
      {3, 6, 6, 5, 9, 3, 3, {1, 1}, {2, 2}, {2, 2}, 3, 3, -1.5, 1.5},
      // Channels-last (conv and deform groups of 8 channels), with and without bias.
      {5, 16, 6, 7, 6, 3, 3, {1, 1}, {1, 1}, {1, 1}, 2, 2, -1.5, 1.5},
      {5, 8, 6, 5, 4, 3, 3, {2, 2}, {1, 1}, {1, 1}, 1, 1, -1.5, 1.5, false},
  };
  std::mt19937_64 rng(23);
  for (const MdcnShape& z : shapes) {
    const AttributeMap attrs = attrs_of(z);
    const auto d = dims_of(z);
    for (DataType dt : {DataType::kFloat32, DataType::kFloat16}) {
      const CudaProblem p = cuda_problem(def, attrs, z, dt, rng);
      ASSERT_FALSE(::testing::Test::HasFailure());
      DeviceCopies dev;
      Tensor out_host;
      const KernelContext ctx = device_context(p, attrs, z, /*channels_last=*/false, dev, &out_host);
      const cuda::MdcnSizes s = cuda_sizes_of(z, d[5], false);
      struct Workspace {
        std::string label;
        size_t bytes;
        size_t misalign;
      };
      const std::vector<Workspace> spaces = {{"1 image per chunk", forward_workspace(dt, s, 1), 0},
                                             {"2 images per chunk", forward_workspace(dt, s, 2), 0},
                                             {"2 images per chunk, unaligned", forward_workspace(dt, s, 2), 16},
                                             {"all images", forward_workspace(dt, s, z.n), 0},
                                             {"no workspace", 0, 0}};
      for (const Workspace& w : spaces) {
        SCOPED_TRACE(std::string(dtype_name(dt)) + ", groups " + std::to_string(z.groups) + ", " + w.label);
        ASSERT_NO_FATAL_FAILURE(run_cuda_forward(def, ctx, w.bytes, w.misalign, &out_host));
        auto got = out_host.cast(DataType::kFloat64);
        ASSERT_TRUE(got.is_ok());
        EXPECT_LT(relative_l2(*got, p.ref), dt == DataType::kFloat32 ? 1e-5 : 5e-3);  // NaN fails too
      }
    }
  }
}
#endif  // GRAFT_WITH_CUDA

std::vector<OpCaseTable> modulated_deform_conv2d_case_tables() { return {modulated_deform_conv2d_cases()}; }

}  // namespace graft::optest
