// Cases for MatMulInteger and ConvInteger (int8/uint8 operands, zero points, exact int32 results),
// ConstantOfShape, MaxUnpool, and graft's internal GraftChannelsLast (a stem's channels-last,
// zero-padded and optionally space-to-depth input). Each has an independent float64 formula.
#include <string>
#include <utility>

#include "case_util.h"
#include "harness.h"
#include "ops/internal_ops.h"

namespace graft::optest {

namespace {

// Subtracts a zero point (a scalar, or one per row of a [rows, ...] operand when `per_row`).
std::vector<double> minus_zero_point(const std::vector<double>& v, const std::vector<double>& zp, int64_t rows) {
  if (zp.empty()) return v;
  std::vector<double> out = v;
  const int64_t per = static_cast<int64_t>(v.size()) / rows;
  for (size_t i = 0; i < out.size(); ++i) out[i] -= zp.size() == 1 ? zp[0] : zp[static_cast<size_t>(i) / per];
  return out;
}

OpCaseTable matmul_integer_cases() {
  // A [M, K] - a_zero_point, B [K, N] - b_zero_point (scalars here), as int32 products summed.
  OpCaseTable t = builtin_table("MatMulInteger", [](const Values& in, const DimsList& dims, const AttributeMap&) {
    const int64_t m = dims[0][0], k = dims[0][1], n = dims[1][1];
    const std::vector<double> a = minus_zero_point(in[0], in.size() > 2 ? in[2] : std::vector<double>{}, 1);
    const std::vector<double> b = minus_zero_point(in[1], in.size() > 3 ? in[3] : std::vector<double>{}, 1);
    std::vector<double> y(static_cast<size_t>(m * n), 0.0);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        for (int64_t p = 0; p < k; ++p) y[i * n + j] += a[i * k + p] * b[p * n + j];
    return Values{y};
  }, 10);
  t.cases.push_back(make_case("uint8_int8_zero_points",
                              {typed({5, 12}, DataType::kUInt8, 0, 255), typed({12, 7}, DataType::kInt8, -128, 127),
                               typed({}, DataType::kUInt8, 100, 150), typed({}, DataType::kInt8, -3, 3)},
                              {{5, 7}}));
  t.cases.push_back(make_case("int8_no_zero_points",
                              {typed({9, 33}, DataType::kInt8, -128, 127), typed({33, 4}, DataType::kInt8, -128, 127)},
                              {{9, 4}}));
  return t;
}

OpCaseTable conv_integer_cases() {
  // ONNX Conv over (x - x_zero_point) and (w - w_zero_point), summed in int32.
  OpCaseTable t = builtin_table("ConvInteger", [](const Values& in, const DimsList& dims, const AttributeMap& a) {
    Values shifted = {minus_zero_point(in[0], in.size() > 2 ? in[2] : std::vector<double>{}, 1),
                      minus_zero_point(in[1], in.size() > 3 ? in[3] : std::vector<double>{}, 1)};
    return conv_reference(shifted, {dims[0], dims[1]}, a);
  }, 10);
  AttributeMap a;
  a.set("pads", Ints{1, 1, 1, 1});
  a.set("strides", Ints{2, 1});
  t.cases.push_back(make_case("uint8_3x3", {typed({1, 3, 7, 6}, DataType::kUInt8, 0, 255), typed({4, 3, 3, 3}, DataType::kUInt8, 0, 255),
                                            typed({}, DataType::kUInt8, 120, 136), typed({}, DataType::kUInt8, 120, 136)},
                              {{1, 4, 4, 6}}, a));
  return t;
}

OpCaseTable constant_of_shape_cases() {
  OpCaseTable t = builtin_table("ConstantOfShape", [](const Values& in, const DimsList&, const AttributeMap& a) {
    int64_t n = 1;
    for (double d : in[0]) n *= static_cast<int64_t>(d);
    auto value = a.get_tensor("value");
    return Values{std::vector<double>(static_cast<size_t>(n), value.is_ok() ? value->get(0) : 0.0)};
  }, 9);
  Tensor v = Tensor::empty(DataType::kFloat32, {1});
  v.set(0, 2.5);
  t.cases.push_back(make_case("float_value", {int64_values({2, 3, 4})}, {{2, 3, 4}}, attr("value", v)));
  t.cases.push_back(make_case("default_zeros", {int64_values({5})}, {{5}}));
  return t;
}

// Y[n, i, j, (dy * s + dx) * C + c] = X[n, c, s*i + dy - top, s*j + dx - left], zero outside X and in
// the channels past s*s*C.
OpCaseTable channels_last_cases() {
  OpCaseTable t = builtin_table("GraftChannelsLast", [](const Values& in, const DimsList& dims, const AttributeMap& a) {
    const Ints& d = dims[0];
    const int64_t n = d[0], c = d[1], h = d[2], w = d[3];
    const int64_t s = a.get_int("block", 1).value(), channels = a.get_int("channels", 0).value();
    const Ints pads = a.get_ints("pads", {0, 0, 0, 0}).value();
    const int64_t oh = (h + pads[0] + pads[2]) / s, ow = (w + pads[1] + pads[3]) / s;
    std::vector<double> y(static_cast<size_t>(n * oh * ow * channels), 0.0);
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j)
          for (int64_t k = 0; k < s * s * c; ++k) {
            const int64_t block = k / c, ch = k % c, dy = block / s, dx = block % s;
            const int64_t yy = s * i + dy - pads[0], xx = s * j + dx - pads[1];
            if (yy >= 0 && yy < h && xx >= 0 && xx < w)
              y[((b * oh + i) * ow + j) * channels + k] = in[0][((b * c + ch) * h + yy) * w + xx];
          }
    return Values{y};
  });
  t.domain = kInternalDomain;
  // Its X is float32 or float16 (no float64): the float32 run is the reference.
  t.reference_dtype = DataType::kFloat32;
  t.cases.push_back(make_case("image_to_8_channels", {data({2, 3, 5, 7})}, {{2, 5, 7, 8}}, attr("channels", int64_t{8})));
  AttributeMap stem;
  stem.set("channels", int64_t{16});
  stem.set("block", int64_t{2});
  stem.set("pads", Ints{3, 3, 2, 2});
  t.cases.push_back(make_case("space_to_depth_stem", {data({1, 3, 9, 8})}, {{1, 7, 6, 16}}, stem));
  return t;
}

// MaxUnpool (kernel 2, stride 2): Y zero but for Y[I[i]] = X[i], I holding flat indices into the
// whole output, one per input element, each inside its element's 2x2 window (so all distinct).
OpCaseTable max_unpool_cases() {
  OpCaseTable t = builtin_table("MaxUnpool", [](const Values& in, const DimsList& dims, const AttributeMap&) {
    const Ints& d = dims[0];
    std::vector<double> y(static_cast<size_t>(d[0] * d[1] * d[2] * 2 * d[3] * 2), 0.0);
    for (size_t i = 0; i < in[0].size(); ++i) y[static_cast<size_t>(in[1][i])] = in[0][i];
    return Values{y};
  }, 11);
  AttributeMap a;
  a.set("kernel_shape", Ints{2, 2});
  a.set("strides", Ints{2, 2});
  OpCase c = make_case("2x2_windows", {data({2, 3, 4, 5}), typed({2, 3, 4, 5}, DataType::kInt64, 0, 3)}, {{2, 3, 8, 10}}, a);
  // Input 1 arrives as random window positions 0..3; make each the flat output index it names.
  c.adjust_inputs = [](std::vector<Tensor>& ins) {
    Tensor& idx = ins[1];
    const auto& d = idx.dims();
    const int64_t h = d[2], w = d[3], oh = 2 * h, ow = 2 * w;
    for (int64_t i = 0; i < idx.numel(); ++i) {
      const int64_t plane = i / (h * w), y = i / w % h, x = i % w, pos = static_cast<int64_t>(idx.get(i));
      idx.set(i, static_cast<double>((plane * oh + 2 * y + pos / 2) * ow + 2 * x + pos % 2));
    }
  };
  t.cases.push_back(std::move(c));
  return t;
}

}  // namespace

std::vector<OpCaseTable> integer_case_tables() {
  return {matmul_integer_cases(), conv_integer_cases(), constant_of_shape_cases(), channels_last_cases(),
          max_unpool_cases()};
}

}  // namespace graft::optest
