// Cases for ONNX ops that index, scatter or generate: ConvTranspose, LRN, ReverseSequence, EyeLike,
// OneHot, GatherND, ScatterElements, ScatterND, DequantizeLinear, IsNaN, IsInf, Range and the
// Hann/Hamming/Blackman windows. Each has an independent float64 formula.
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <utility>

#include "case_util.h"
#include "harness.h"

namespace graft::optest {

namespace {

using Reference = std::function<Values(const Values&, const DimsList&, const AttributeMap&)>;

// ---- ConvTranspose ----------------------------------------------------------------------------
Values conv_transpose_formula(const Values& in, const DimsList& dims, const AttributeMap& a) {
  if (dims[0].size() == 3) {  // 1-D: the 2-D sum over a height of 1 (the same data, row-major)
    DimsList d2 = dims;
    for (size_t i : {size_t{0}, size_t{1}}) d2[i].insert(d2[i].begin() + 2, 1);
    const Ints s = a.get_ints("strides", {1}).value(), p = a.get_ints("pads", {0, 0}).value();
    const Ints d = a.get_ints("dilations", {1}).value(), op = a.get_ints("output_padding", {0}).value();
    AttributeMap a2 = a;
    a2.set("strides", Ints{1, s[0]});
    a2.set("pads", Ints{0, p[0], 0, p[1]});
    a2.set("dilations", Ints{1, d[0]});
    a2.set("output_padding", Ints{0, op[0]});
    return conv_transpose_formula(in, d2, a2);
  }
  const Ints& x = dims[0];
  const Ints& w = dims[1];  // [C, M / group, kH, kW]
  const int64_t group = a.get_int("group", 1).value(), n = x[0], c = x[1], h = x[2], wd = x[3];
  const int64_t mg = w[1], m = mg * group, cg = c / group, kh = w[2], kw = w[3];
  const Ints s = a.get_ints("strides", {1, 1}).value(), p = a.get_ints("pads", {0, 0, 0, 0}).value();
  const Ints d = a.get_ints("dilations", {1, 1}).value(), op = a.get_ints("output_padding", {0, 0}).value();
  const int64_t oh = (h - 1) * s[0] - p[0] - p[2] + d[0] * (kh - 1) + 1 + op[0];
  const int64_t ow = (wd - 1) * s[1] - p[1] - p[3] + d[1] * (kw - 1) + 1 + op[1];
  std::vector<double> y(static_cast<size_t>(n * m * oh * ow), 0.0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < m; ++o) {
      const int64_t g = o / mg, om = o % mg;
      for (int64_t i = 0; i < oh * ow; ++i) y[(b * m + o) * oh * ow + i] = in.size() > 2 && !in[2].empty() ? in[2][o] : 0.0;
      for (int64_t ci = 0; ci < cg; ++ci)
        for (int64_t iy = 0; iy < h; ++iy)
          for (int64_t ix = 0; ix < wd; ++ix)
            for (int64_t ky = 0; ky < kh; ++ky)
              for (int64_t kx = 0; kx < kw; ++kx) {
                const int64_t yy = iy * s[0] - p[0] + ky * d[0], xx = ix * s[1] - p[1] + kx * d[1];
                if (yy < 0 || yy >= oh || xx < 0 || xx >= ow) continue;
                const int64_t ch = g * cg + ci;
                y[((b * m + o) * oh + yy) * ow + xx] +=
                    in[0][((b * c + ch) * h + iy) * wd + ix] * in[1][((ch * mg + om) * kh + ky) * kw + kx];
              }
    }
  return {y};
}

OpCaseTable conv_transpose_cases() {
  OpCaseTable t = builtin_table("ConvTranspose", conv_transpose_formula);
  auto attrs = [](Ints strides, Ints pads, Ints output_padding, int64_t group) {
    AttributeMap a;
    a.set("strides", strides);
    a.set("pads", pads);
    a.set("output_padding", output_padding);
    a.set("group", group);
    return a;
  };
  t.cases.push_back(make_case("upsample_stride2", {data({2, 4, 5, 6}, -1, 1), data({4, 3, 4, 4}, -1, 1), data({3})}, {{2, 3, 10, 12}},
                              attrs({2, 2}, {1, 1, 1, 1}, {0, 0}, 1)));
  t.cases.push_back(make_case("grouped_output_padding", {data({1, 4, 4, 3}, -1, 1), data({4, 2, 3, 3}, -1, 1)}, {{1, 4, 10, 8}},
                              attrs({2, 2}, {0, 0, 0, 0}, {1, 1}, 2)));
  // Pads cuDNN cannot express (the CUDA op's direct kernel): asymmetric, and output_padding at the
  // stride (allowed below the dilation).
  t.cases.push_back(make_case("asymmetric_pads", {data({1, 3, 5, 6}, -1, 1), data({3, 4, 3, 3}, -1, 1), data({4})},
                              {{1, 4, 6, 6}}, attrs({1, 1}, {1, 0, 0, 2}, {0, 0}, 1)));
  // 1-D (run on CUDA as 2-D with a height of 1): output_padding below the stride, and groups.
  t.cases.push_back(make_case("1d_stride2_output_padding", {data({2, 4, 9}, -1, 1), data({4, 3, 5}, -1, 1), data({3})},
                              {{2, 3, 20}}, attrs({2}, {1, 1}, {1}, 1)));
  t.cases.push_back(make_case("1d_grouped", {data({1, 4, 7}, -1, 1), data({4, 2, 3}, -1, 1)}, {{1, 4, 7}},
                              attrs({1}, {1, 1}, {0}, 2)));
  for (OpCase& c : t.cases) c.tolerance[DataType::kFloat32] = 1e-4;
  return t;
}

// ---- LRN --------------------------------------------------------------------------------------
OpCaseTable lrn_cases() {
  OpCaseTable t = builtin_table("LRN", [](const Values& in, const DimsList& dims, const AttributeMap& a) {
    const Ints& d = dims[0];
    const int64_t size = a.get_int("size", 1).value(), c = d[1], area = count(d) / (d[0] * c);
    const double alpha = a.get_float("alpha", 1e-4f).value(), beta = a.get_float("beta", 0.75f).value();
    const double bias = a.get_float("bias", 1.f).value();
    const int64_t before = (size - 1) / 2, after = size - 1 - before;
    std::vector<double> y(in[0].size());
    for (int64_t b = 0; b < d[0]; ++b)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t i = 0; i < area; ++i) {
          double sq = 0;
          for (int64_t k = std::max<int64_t>(0, ch - before); k <= std::min(c - 1, ch + after); ++k) {
            const double v = in[0][(b * c + k) * area + i];
            sq += v * v;
          }
          const size_t at = static_cast<size_t>((b * c + ch) * area + i);
          y[at] = in[0][at] / std::pow(bias + alpha / static_cast<double>(size) * sq, beta);
        }
    return Values{y};
  });
  AttributeMap a;
  a.set("size", int64_t{3});
  a.set("alpha", 0.5f);
  a.set("beta", 0.75f);
  a.set("bias", 2.f);
  t.cases.push_back(make_case("size3", {data({2, 6, 4, 5})}, {{2, 6, 4, 5}}, a));
  a.set("size", int64_t{4});  // even: one more channel after than before
  t.cases.push_back(make_case("size4", {data({1, 7, 3, 3})}, {{1, 7, 3, 3}}, a));
  return t;
}

// ---- ReverseSequence, EyeLike, OneHot ---------------------------------------------------------
OpCaseTable reverse_sequence_cases() {
  OpCaseTable t = builtin_table("ReverseSequence", [](const Values& in, const DimsList& dims, const AttributeMap& a) {
    const Ints& d = dims[0];
    const int64_t batch_axis = a.get_int("batch_axis", 1).value(), time_axis = a.get_int("time_axis", 0).value();
    std::vector<double> y(in[0].size());
    for (size_t i = 0; i < y.size(); ++i) {
      Ints c(d.size());
      int64_t rem = static_cast<int64_t>(i);
      for (size_t k = d.size(); k-- > 0;) {
        c[k] = rem % d[k];
        rem /= d[k];
      }
      const int64_t len = static_cast<int64_t>(in[1][c[batch_axis]]);
      if (c[time_axis] < len) c[time_axis] = len - 1 - c[time_axis];
      int64_t src = 0;
      for (size_t k = 0; k < d.size(); ++k) src = src * d[k] + c[k];
      y[i] = in[0][src];
    }
    return Values{y};
  }, 10);
  t.cases.push_back(make_case("time_major", {data({5, 4, 3}), fixed({4}, DataType::kInt64, {5, 1, 3, 0})}, {{5, 4, 3}}));
  AttributeMap batch_major;
  batch_major.set("batch_axis", int64_t{0});
  batch_major.set("time_axis", int64_t{1});
  t.cases.push_back(make_case("batch_major", {data({3, 6, 2}), fixed({3}, DataType::kInt64, {2, 6, 4})}, {{3, 6, 2}}, batch_major));
  return t;
}

OpCaseTable eye_like_cases() {
  OpCaseTable t = builtin_table("EyeLike", [](const Values& in, const DimsList& dims, const AttributeMap& a) {
    const int64_t k = a.get_int("k", 0).value(), rows = dims[0][0], cols = dims[0][1];
    std::vector<double> y(static_cast<size_t>(rows * cols), 0.0);
    for (int64_t r = 0; r < rows; ++r)
      if (r + k >= 0 && r + k < cols) y[r * cols + r + k] = 1.0;
    return Values{y};
  }, 9);
  t.cases.push_back(make_case("square", {data({5, 5})}, {{5, 5}}));
  t.cases.push_back(make_case("wide_k2", {data({3, 7})}, {{3, 7}}, attr("k", int64_t{2})));
  t.cases.push_back(make_case("tall_k_minus1", {data({6, 4})}, {{6, 4}}, attr("k", int64_t{-1})));
  return t;
}

OpCaseTable one_hot_cases() {
  // Inputs: indices (int64, negative counting from the end), depth (scalar), values [off, on].
  OpCaseTable t = builtin_table("OneHot", [](const Values& in, const DimsList& dims, const AttributeMap& a) {
    const Ints& id = dims[0];
    const int64_t depth = static_cast<int64_t>(in[1][0]);
    int64_t axis = a.get_int("axis", -1).value();
    if (axis < 0) axis += static_cast<int64_t>(id.size()) + 1;
    int64_t outer = 1, inner = 1;
    for (int64_t k = 0; k < axis; ++k) outer *= id[k];
    for (size_t k = static_cast<size_t>(axis); k < id.size(); ++k) inner *= id[k];
    std::vector<double> y(static_cast<size_t>(outer * depth * inner));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < depth; ++j)
        for (int64_t i = 0; i < inner; ++i) {
          int64_t idx = static_cast<int64_t>(in[0][o * inner + i]);
          if (idx < 0) idx += depth;
          y[(o * depth + j) * inner + i] = idx == j ? in[2][1] : in[2][0];
        }
    return Values{y};
  }, 11);
  t.cases.push_back(make_case("last_axis", {typed({3, 4}, DataType::kInt64, -5, 4), fixed({}, DataType::kInt64, {5}), data({2})},
                              {{3, 4, 5}}));
  t.cases.push_back(make_case("first_axis", {typed({4}, DataType::kInt64, -3, 2), fixed({}, DataType::kInt64, {3}), data({2})},
                              {{3, 4}}, attr("axis", int64_t{0})));
  return t;
}

// ---- GatherND, ScatterElements, ScatterND ------------------------------------------------------
OpCaseTable gather_nd_cases() {
  OpCaseTable t = builtin_table("GatherND", [](const Values& in, const DimsList& dims, const AttributeMap&) {
    const Ints& d = dims[0];
    const Ints& id = dims[1];
    const int64_t q = id.back();
    const int64_t tuples = count(id) / q;
    int64_t slice = 1;
    for (size_t k = static_cast<size_t>(q); k < d.size(); ++k) slice *= d[k];
    std::vector<double> y;
    for (int64_t tpl = 0; tpl < tuples; ++tpl) {
      const int64_t off = nd_offset(in[1], tpl, q, d);
      for (int64_t s = 0; s < slice; ++s) y.push_back(in[0][off * slice + s]);
    }
    return Values{y};
  }, 13);
  t.cases.push_back(make_case("pairs_of_rows", {data({4, 5, 3}), fixed({3, 2}, DataType::kInt64, {0, 1, 3, -1, -2, 4})}, {{3, 3}}));
  t.cases.push_back(make_case("whole_rows", {data({6, 4}), fixed({2, 2, 1}, DataType::kInt64, {5, 0, -3, 2})}, {{2, 2, 4}}));
  return t;
}

OpCaseTable scatter_elements_cases() {
  // Distinct indices per row (a permutation prefix), so no element is written twice.
  OpCaseTable t = builtin_table("ScatterElements", [](const Values& in, const DimsList& dims, const AttributeMap& a) {
    const Ints& d = dims[0];
    const Ints& id = dims[1];
    const int64_t axis = a.get_int("axis", 0).value();
    std::vector<double> y = in[0];
    for (int64_t i = 0; i < count(id); ++i) {
      Ints c(id.size());
      int64_t rem = i;
      for (size_t k = id.size(); k-- > 0;) {
        c[k] = rem % id[k];
        rem /= id[k];
      }
      int64_t idx = static_cast<int64_t>(in[1][i]);
      if (idx < 0) idx += d[axis];
      c[axis] = idx;
      int64_t dst = 0;
      for (size_t k = 0; k < d.size(); ++k) dst = dst * d[k] + c[k];
      y[dst] = in[2][i];
    }
    return Values{y};
  }, 16);
  t.cases.push_back(make_case("axis1", {data({3, 6}), fixed({3, 2}, DataType::kInt64, {0, 5, -1, 2, 3, 1}), data({3, 2})}, {{3, 6}},
                              attr("axis", int64_t{1})));
  t.cases.push_back(make_case("axis0", {data({4, 3}), fixed({2, 3}, DataType::kInt64, {3, 0, 1, -4, 2, 3}), data({2, 3})}, {{4, 3}}));
  return t;
}

OpCaseTable scatter_nd_cases() {
  OpCaseTable t = builtin_table("ScatterND", [](const Values& in, const DimsList& dims, const AttributeMap&) {
    const Ints& d = dims[0];
    const Ints& id = dims[1];
    const int64_t q = id.back(), tuples = count(id) / q;
    int64_t slice = 1;
    for (size_t k = static_cast<size_t>(q); k < d.size(); ++k) slice *= d[k];
    std::vector<double> y = in[0];
    for (int64_t tpl = 0; tpl < tuples; ++tpl) {
      const int64_t off = nd_offset(in[1], tpl, q, d);
      for (int64_t s = 0; s < slice; ++s) y[off * slice + s] = in[2][tpl * slice + s];
    }
    return Values{y};
  }, 16);
  t.cases.push_back(make_case("rows", {data({5, 4}), fixed({2, 1}, DataType::kInt64, {3, -5}), data({2, 4})}, {{5, 4}}));
  t.cases.push_back(make_case("elements", {data({3, 4}), fixed({3, 2}, DataType::kInt64, {0, 0, 2, 3, 1, -2}), data({3})}, {{3, 4}}));
  return t;
}

// ---- DequantizeLinear, IsNaN, IsInf, Range, windows ------------------------------------------
OpCaseTable dequantize_cases() {
  // y = (x - zero_point) * scale; per tensor, per channel along `axis`, or per block of `block_size`
  // along `axis` (opset 21, which adds block_size; the other forms mean what they did at 13).
  OpCaseTable t = builtin_table("DequantizeLinear", [](const Values& in, const DimsList& dims, const AttributeMap& a) {
    const int64_t axis = a.get_int("axis", 1).value(), block = a.get_int("block_size", 0).value();
    std::vector<double> y(in[0].size());
    for (size_t i = 0; i < y.size(); ++i) {
      const auto ch = static_cast<size_t>(quant_scale_index(static_cast<int64_t>(i), dims[0], dims[1], axis, block));
      y[i] = (in[0][i] - (in.size() > 2 && !in[2].empty() ? in[2][ch] : 0.0)) * in[1][ch];
    }
    return Values{y};
  }, 21);
  t.cases.push_back(make_case("int8_per_tensor", {typed({3, 5}, DataType::kInt8, -128, 127), data({}, 0.01, 0.1),
                                                  typed({}, DataType::kInt8, -10, 10)}, {{3, 5}}));
  t.cases.push_back(make_case("uint8_per_channel", {typed({2, 4, 3}, DataType::kUInt8, 0, 255), data({4}, 0.01, 0.1),
                                                    typed({4}, DataType::kUInt8, 100, 150)}, {{2, 4, 3}}));
  // Blocks of 3 along axis 1 of extent 7 (three blocks, the last of one row), with and without a
  // zero point.
  AttributeMap blocked = attr("axis", int64_t{1});
  blocked.set("block_size", int64_t{3});
  t.cases.push_back(make_case("int8_blocked_short_last_block",
                              {typed({2, 7, 4}, DataType::kInt8, -128, 127), data({2, 3, 4}, 0.01, 0.1),
                               typed({2, 3, 4}, DataType::kInt8, -10, 10)},
                              {{2, 7, 4}}, blocked));
  AttributeMap last = attr("axis", int64_t{-1});
  last.set("block_size", int64_t{8});
  t.cases.push_back(make_case("uint8_blocked_last_axis_no_zero_point",
                              {typed({3, 16}, DataType::kUInt8, 0, 255), data({3, 2}, 0.01, 0.1)}, {{3, 16}}, last));
  // Opset 21's 4-bit types over their whole ranges: int4 blocked (the usual weight-only form, an odd
  // element count), uint4 per channel.
  AttributeMap int4_blocks = attr("axis", int64_t{0});
  int4_blocks.set("block_size", int64_t{4});
  t.cases.push_back(make_case("int4_blocked_odd_count",
                              {typed({7, 3}, DataType::kInt4, -8, 7), data({2, 3}, 0.01, 0.1),
                               typed({2, 3}, DataType::kInt4, -3, 3)},
                              {{7, 3}}, int4_blocks));
  t.cases.push_back(make_case("uint4_per_channel", {typed({2, 5, 3}, DataType::kUInt4, 0, 15), data({5}, 0.01, 0.1),
                                                    typed({5}, DataType::kUInt4, 5, 10)}, {{2, 5, 3}}));
  // Opset 19's 8-bit floats over most of their ranges, with a zero point of zeros (the only one ONNX
  // defines for them) or none.
  t.cases.push_back(make_case("float8e4m3fn_per_channel", {typed({2, 4, 3}, DataType::kFloat8E4M3FN, -440, 440),
                                                           data({4}, 0.01, 0.1),
                                                           typed({4}, DataType::kFloat8E4M3FN, 0, 0)}, {{2, 4, 3}}));
  t.cases.push_back(make_case("float8e5m2_per_tensor_no_zero_point",
                              {typed({3, 7}, DataType::kFloat8E5M2, -5e4, 5e4), data({}, 1e-3, 1e-2)}, {{3, 7}}));
  AttributeMap fnuz_blocks = attr("axis", int64_t{0});
  fnuz_blocks.set("block_size", int64_t{2});
  t.cases.push_back(make_case("float8e4m3fnuz_blocked", {typed({5, 4}, DataType::kFloat8E4M3FNUZ, -200, 200),
                                                         data({3, 4}, 0.1, 1),
                                                         typed({3, 4}, DataType::kFloat8E4M3FNUZ, 0, 0)}, {{5, 4}},
                              fnuz_blocks));
  // Opset 21's 16-bit types, on the CPU (the CUDA backend keeps no 16-bit integers).
  OpCase int16 = make_case("int16_per_channel", {typed({3, 5}, DataType::kInt16, -32768, 32767), data({3}, 1e-4, 1e-3),
                                                 typed({3}, DataType::kInt16, -500, 500)}, {{3, 5}}, attr("axis", int64_t{0}));
  OpCase uint16 = make_case("uint16_per_tensor", {typed({11}, DataType::kUInt16, 0, 65535), data({}, 1e-4, 1e-3),
                                                  typed({}, DataType::kUInt16, 30000, 35000)}, {{11}});
  for (OpCase* o : {&int16, &uint16}) {
    o->cpu_only_because = "the CUDA backend has no 16-bit integer tensors";
    t.cases.push_back(*o);
  }
  t.cases.push_back(make_case("float8e5m2fnuz_per_tensor", {typed({9}, DataType::kFloat8E5M2FNUZ, -100, 100),
                                                            data({}, 0.5, 2)}, {{9}}));
  return t;
}

OpCaseTable float_class_cases(const char* name, bool inf) {
  OpCaseTable t = builtin_table(name, [inf](const Values& in, const DimsList& dims, const AttributeMap& a) {
    const bool pos = a.get_int("detect_positive", 1).value() != 0, neg = a.get_int("detect_negative", 1).value() != 0;
    std::vector<double> y;
    for (double v : in[0])
      y.push_back(inf ? (std::isinf(v) && ((v > 0 && pos) || (v < 0 && neg)) ? 1.0 : 0.0) : (std::isnan(v) ? 1.0 : 0.0));
    return Values{y};
  }, inf ? 10 : 13);
  const double nan = std::numeric_limits<double>::quiet_NaN(), big = std::numeric_limits<double>::infinity();
  CaseInput x{{2, 4}};
  x.values = {1.5, nan, -big, big, 0.0, -2.25, nan, 1e30};  // 1e30 is inf in float16 alone
  t.cases.push_back(make_case("mixed", {x}, {{2, 4}}));
  if (inf) t.cases.push_back(make_case("positive_only", {x}, {{2, 4}}, attr("detect_negative", int64_t{0})));
  // Float32 only: in float16, 1e30 would become infinity before the op sees it.
  t.cpu_dtypes = t.cuda_dtypes = {DataType::kFloat32};
  return t;
}

OpCaseTable range_cases() {
  OpCaseTable t = builtin_table("Range", [](const Values& in, const DimsList&, const AttributeMap&) {
    const double start = in[0][0], limit = in[1][0], delta = in[2][0];
    const int64_t n = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((limit - start) / delta)));
    std::vector<double> y;
    for (int64_t i = 0; i < n; ++i) y.push_back(start + static_cast<double>(i) * delta);
    return Values{y};
  }, 11);
  auto scalar = [](double v) {
    CaseInput c{{}};
    c.values = {v};
    return c;
  };
  t.cases.push_back(make_case("up_by_quarters", {scalar(-1.5), scalar(2.0), scalar(0.25)}, {{14}}));
  t.cases.push_back(make_case("down", {scalar(3.0), scalar(-2.0), scalar(-0.5)}, {{10}}));
  t.cases.push_back(make_case("int64", {fixed({}, DataType::kInt64, {-7}), fixed({}, DataType::kInt64, {20}),
                                        fixed({}, DataType::kInt64, {4})}, {{7}}));
  return t;
}

OpCaseTable window_cases(const char* name, int kind) {
  OpCaseTable t = builtin_table(name, [kind](const Values& in, const DimsList&, const AttributeMap& a) {
    const int64_t size = static_cast<int64_t>(in[0][0]);
    const bool periodic = a.get_int("periodic", 1).value() != 0;
    const double n = static_cast<double>(periodic ? size : size - 1), pi = 3.14159265358979323846;
    std::vector<double> y;
    for (int64_t i = 0; i < size; ++i) {
      const double x = 2.0 * pi * static_cast<double>(i) / n;
      if (kind == 0) y.push_back(0.5 - 0.5 * std::cos(x));
      if (kind == 1) y.push_back(25.0 / 46.0 - 21.0 / 46.0 * std::cos(x));
      if (kind == 2) y.push_back(0.42 - 0.5 * std::cos(x) + 0.08 * std::cos(2.0 * x));
    }
    return Values{y};
  }, 17);
  t.cases.push_back(make_case("periodic_16", {fixed({}, DataType::kInt64, {16})}, {{16}}));
  t.cases.push_back(make_case("symmetric_11", {fixed({}, DataType::kInt64, {11})}, {{11}}, attr("periodic", int64_t{0})));
  // A window near zero compares to round-off on both sides: give its relative norm the float32 floor.
  for (OpCase& c : t.cases) c.tolerance[DataType::kFloat32] = 1e-6;
  return t;
}

}  // namespace

std::vector<OpCaseTable> indexing_case_tables() {
  return {conv_transpose_cases(),     lrn_cases(),         reverse_sequence_cases(), eye_like_cases(),
          one_hot_cases(),           gather_nd_cases(),   scatter_elements_cases(), scatter_nd_cases(),
          dequantize_cases(),        float_class_cases("IsNaN", false), float_class_cases("IsInf", true),
          range_cases(),             window_cases("HannWindow", 0), window_cases("HammingWindow", 1),
          window_cases("BlackmanWindow", 2)};
}

}  // namespace graft::optest
