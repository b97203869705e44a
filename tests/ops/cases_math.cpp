// Cases for ONNX ops with formulas of their own: QuantizeLinear, MeanVarianceNormalization, Dropout
// (inference), Shape, Size, Einsum, Det, NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss, BitShift,
// DFT, STFT and RNN. Each has an independent float64 formula.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "case_util.h"
#include "harness.h"

namespace graft::optest {

namespace {

// ---- QuantizeLinear ---------------------------------------------------------------------------
// y = saturate(round_half_even(x / scale) + zero_point), per tensor, per channel of `axis`, or per
// block of `block_size` along `axis` (opset 21). The range is int8's, or the 4-bit or 16-bit type's
// that the case names in output_dtype (ONNX's 2 uint8, 22 int4, 21 uint4, 5 int16, 4 uint16). Into an 8-bit float (output_dtype 17 to
// 20, opset 19's types), y is x / scale rounded to the type's nearest value, saturating (the
// default); the zero point is zero.
Values quantize_formula(const Values& in, const DimsList& dims, const AttributeMap& a) {
  const int64_t axis = a.get_int("axis", 1).value(), block = a.get_int("block_size", 0).value();
  const int64_t out_type = a.get_int("output_dtype", 0).value();
  if (out_type >= 17 && out_type <= 20) {
    std::vector<double> y(in[0].size());
    for (size_t i = 0; i < y.size(); ++i)
      y[i] = float8_nearest(in[0][i] / in[1][static_cast<size_t>(
                                           quant_scale_index(static_cast<int64_t>(i), dims[0], dims[1], axis, block))],
                            out_type);
    return {y};
  }
  const double lo = out_type == 22 ? -8.0 : out_type == 21 || out_type == 4 || out_type == 2 ? 0.0 : out_type == 5 ? -32768.0 : -128.0;
  const double hi = out_type == 22   ? 7.0
                    : out_type == 21 ? 15.0
                    : out_type == 2  ? 255.0
                    : out_type == 5  ? 32767.0
                    : out_type == 4  ? 65535.0
                                     : 127.0;
  std::vector<double> y(in[0].size());
  for (size_t i = 0; i < y.size(); ++i) {
    const auto ch = static_cast<size_t>(quant_scale_index(static_cast<int64_t>(i), dims[0], dims[1], axis, block));
    y[i] = std::clamp(std::nearbyint(in[0][i] / in[1][ch]) + in[2][ch], lo, hi);
  }
  return {y};
}

// Moves every x / scale a quarter away from the nearest half, so that rounding in float16, float32
// and float64 agrees (a value on the boundary would round either way by a last bit).
void away_from_halves(std::vector<Tensor>& ins, int64_t axis, int64_t block) {
  Tensor& x = ins[0];
  const Tensor& scale = ins[1];
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double s = scale.get(quant_scale_index(i, x.dims(), scale.dims(), axis, block));
    x.set(i, (std::floor(x.get(i) / s) + 0.25) * s);
  }
}

OpCaseTable quantize_cases() {
  // Opset 21, which adds block_size; the per-tensor and per-axis forms mean what they did at 13.
  OpCaseTable t = builtin_table("QuantizeLinear", quantize_formula, 21);
  t.reference_dtype = DataType::kFloat32;  // ONNX's QuantizeLinear takes no float64
  // Values past the int8 range saturate: |x| / scale reaches about 300.
  OpCase a = make_case("int8_per_tensor_saturating", {data({4, 9}, -6, 6), data({}, 0.02, 0.05), typed({}, DataType::kInt8, -5, 5)},
                       {{4, 9}});
  // Per tensor over whole multiples of 8 elements: the CUDA op's vectorized path (8 a thread); the
  // cases above, 36 and 30 elements, take its element-wise one.
  OpCase a8 = make_case("int8_per_tensor_vector_path",
                        {data({6, 4, 16}, -6, 6), data({}, 0.02, 0.05), typed({}, DataType::kInt8, -5, 5)}, {{6, 4, 16}});
  OpCase u8 = make_case("uint8_per_tensor_vector_path",
                        {data({3, 40}, -1, 4), data({}, 0.01, 0.02), typed({}, DataType::kUInt8, 100, 140)}, {{3, 40}},
                        attr("output_dtype", int64_t{2}));
  OpCase b = make_case("int8_per_channel", {data({2, 3, 5}, -1, 3), data({3}, 0.01, 0.03), typed({3}, DataType::kInt8, -20, 20)},
                       {{2, 3, 5}}, attr("axis", int64_t{1}));
  // Blocks of 4 along axis 2 of extent 10: three blocks, the last one short.
  AttributeMap blocked = attr("axis", int64_t{2});
  blocked.set("block_size", int64_t{4});
  OpCase c = make_case("int8_blocked_short_last_block",
                       {data({2, 3, 10}, -2, 2), data({2, 3, 3}, 0.01, 0.04), typed({2, 3, 3}, DataType::kInt8, -20, 20)},
                       {{2, 3, 10}}, blocked);
  // Blocks along axis 0 (the outermost), of 2 over 4 rows.
  AttributeMap rows = attr("axis", int64_t{0});
  rows.set("block_size", int64_t{2});
  OpCase d = make_case("int8_blocked_axis0", {data({4, 6}, -1, 1), data({2, 6}, 0.005, 0.02), typed({2, 6}, DataType::kInt8, -9, 9)},
                       {{4, 6}}, rows);
  // int4 in blocks of 3 along the last axis (|x| / scale reaches 40: both ends saturate), and uint4
  // per tensor; the output type given twice, as output_dtype and as the zero point's.
  AttributeMap int4 = attr("axis", int64_t{-1});
  int4.set("block_size", int64_t{3});
  int4.set("output_dtype", int64_t{22});
  OpCase e = make_case("int4_blocked_saturating",
                       {data({3, 7}, -2, 2), data({3, 3}, 0.05, 0.1), typed({3, 3}, DataType::kInt4, -2, 2)}, {{3, 7}}, int4);
  OpCase f = make_case("uint4_per_tensor", {data({5, 5}, 0, 1), data({}, 0.05, 0.08), typed({}, DataType::kUInt4, 2, 4)},
                       {{5, 5}}, attr("output_dtype", int64_t{21}));
  // Opset 21's 16-bit types, past both ends of their ranges (|x| / scale reaches 80000), on the CPU
  // (the CUDA backend keeps no 16-bit integers).
  OpCase g = make_case("int16_per_tensor_saturating",
                       {data({4, 8}, -400, 400), data({}, 0.005, 0.01), typed({}, DataType::kInt16, -300, 300)}, {{4, 8}},
                       attr("output_dtype", int64_t{5}));
  OpCase h = make_case("uint16_per_channel_saturating",
                       {data({3, 6}, -300, 400), data({3}, 0.005, 0.01), typed({3}, DataType::kUInt16, 1000, 2000)},
                       {{3, 6}}, attr("axis", int64_t{0}));
  h.attrs.set("output_dtype", int64_t{4});
  for (OpCase* o : {&g, &h}) o->cpu_only_because = "the CUDA backend has no 16-bit integer tensors";
  for (OpCase* o : {&a, &a8, &u8, &b, &c, &d, &e, &f, &g, &h}) {
    const int64_t axis = o->attrs.get_int("axis", 1).value(), block = o->attrs.get_int("block_size", 0).value();
    o->adjust_inputs = [axis, block](std::vector<Tensor>& ins) { away_from_halves(ins, axis, block); };
    t.cases.push_back(*o);
  }
  // Opset 19's 8-bit floats, each named by output_dtype and by its zero point (zeros: the only zero
  // point ONNX defines for them). e4m3fn per channel with |x| / scale up to 800 (past 448: it
  // saturates); e5m2 per tensor among its subnormals (below 2^-14); e4m3fnuz blocked; e5m2fnuz
  // without a zero point, past its largest finite (57344).
  auto float8_case = [](const char* label, std::vector<CaseInput> in, std::vector<int64_t> dims, AttributeMap at,
                        int64_t type) {
    at.set("output_dtype", type);
    return make_case(label, std::move(in), {std::move(dims)}, at);
  };
  t.cases.push_back(float8_case("float8e4m3fn_per_channel_saturating",
                                {data({2, 3, 5}, -8, 8), data({3}, 0.01, 0.03), typed({3}, DataType::kFloat8E4M3FN, 0, 0)},
                                {2, 3, 5}, attr("axis", int64_t{1}), 17));
  t.cases.push_back(float8_case("float8e5m2_per_tensor_subnormals",
                                {data({4, 6}, -2e-5, 2e-5), data({}, 0.5, 2), typed({}, DataType::kFloat8E5M2, 0, 0)},
                                {4, 6}, {}, 19));
  AttributeMap fnuz_blocks = attr("axis", int64_t{1});
  fnuz_blocks.set("block_size", int64_t{4});
  t.cases.push_back(float8_case("float8e4m3fnuz_blocked",
                                {data({3, 10}, -20, 20), data({3, 3}, 0.05, 0.2),
                                 typed({3, 3}, DataType::kFloat8E4M3FNUZ, 0, 0)},
                                {3, 10}, fnuz_blocks, 18));
  t.cases.push_back(float8_case("float8e5m2fnuz_saturating_no_zero_point", {data({5, 5}, -6e4, 6e4), data({}, 0.9, 1.05)},
                                {5, 5}, {}, 20));
  // A blocked scale whose extent along the axis is not ceil(10 / 4) is refused naming block_size.
  t.bad_attributes.push_back(BadAttributeCase{"blocked_scale_of_wrong_extent", blocked, {{2, 3, 10}, {2, 3, 2}, {2, 3, 2}},
                                              "block_size"});
  t.bad_attributes.push_back(BadAttributeCase{"negative_block_size", attr("block_size", int64_t{-1}), {}, "block_size"});
  return t;
}

// ---- MeanVarianceNormalization ----------------------------------------------------------------
OpCaseTable mvn_cases() {
  OpCaseTable t = builtin_table("MeanVarianceNormalization", [](const Values& in, const DimsList& dims, const AttributeMap& a) {
    const Ints& d = dims[0];
    const Ints axes = a.get_ints("axes", {0, 2, 3}).value();
    std::vector<bool> reduced(d.size(), false);
    for (int64_t ax : axes) reduced[static_cast<size_t>(axis_in(ax, d.size()))] = true;
    std::map<int64_t, std::pair<double, int64_t>> sums;  // group -> (sum, count)
    auto group_of = [&](int64_t i) {
      int64_t g = 0;
      for (size_t k = d.size(); k-- > 0;) {
        const int64_t c = i % d[k];
        i /= d[k];
        if (!reduced[k]) g = g * 1000 + c;
      }
      return g;
    };
    const int64_t n = count(d);
    for (int64_t i = 0; i < n; ++i) {
      auto& s = sums[group_of(i)];
      s.first += in[0][i];
      s.second += 1;
    }
    std::map<int64_t, double> var;
    for (int64_t i = 0; i < n; ++i) {
      const auto& s = sums[group_of(i)];
      const double m = s.first / static_cast<double>(s.second);
      var[group_of(i)] += (in[0][i] - m) * (in[0][i] - m) / static_cast<double>(s.second);
    }
    std::vector<double> y(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const auto& s = sums[group_of(i)];
      // ONNX's function body: (x - mean) / (sqrt(variance) + 1e-9).
      y[i] = (in[0][i] - s.first / static_cast<double>(s.second)) / (std::sqrt(var[group_of(i)]) + 1e-9);
    }
    return Values{y};
  }, 13);
  t.cases.push_back(make_case("default_axes", {data({2, 3, 4, 5})}, {{2, 3, 4, 5}}));
  t.cases.push_back(make_case("last_axis", {data({3, 40})}, {{3, 40}}, attr("axes", Ints{1})));
  return t;
}

// ---- Dropout, Shape, Size ---------------------------------------------------------------------
OpCaseTable dropout_cases() {
  // Inference (no training_mode): the output is the input, whatever the ratio.
  OpCaseTable t = builtin_table("Dropout", [](const Values& in, const DimsList&, const AttributeMap&) { return Values{in[0]}; }, 13);
  t.cases.push_back(make_case("with_ratio", {data({3, 7}), data({}, 0.2, 0.6)}, {{3, 7}}));
  t.cases.push_back(make_case("data_only", {data({2, 2, 5})}, {{2, 2, 5}}));
  return t;
}

OpCaseTable dims_cases(const char* name, bool size) {
  // Both read their input's dims alone: the engines answer them on the host, so no CUDA kernel.
  OpCaseTable t = builtin_table(name, [size](const Values& in, const DimsList& dims, const AttributeMap&) {
    if (size) return Values{{static_cast<double>(count(dims[0]))}};
    return Values{std::vector<double>(dims[0].begin(), dims[0].end())};
  }, 15);
  t.cuda_dtypes = {};
  t.cases.push_back(make_case("rank3", {data({2, 5, 3})}, {size ? Ints{} : Ints{3}}));
  t.cases.push_back(make_case("scalar", {data({})}, {size ? Ints{} : Ints{0}}));
  return t;
}

// ---- Einsum -----------------------------------------------------------------------------------
// Evaluates `equation` (explicit output, no ellipsis) by looping over every letter's range.
Values einsum_formula(const Values& in, const DimsList& dims, const AttributeMap& a) {
  const std::string eq = a.get_string("equation", "").value();
  const size_t arrow = eq.find("->");
  std::vector<std::string> terms;
  std::string cur;
  for (char ch : eq.substr(0, arrow)) {
    if (ch == ',') {
      terms.push_back(cur);
      cur.clear();
    } else if (ch != ' ') {
      cur += ch;
    }
  }
  terms.push_back(cur);
  const std::string out = eq.substr(arrow + 2);
  std::map<char, int64_t> extent;
  for (size_t k = 0; k < terms.size(); ++k)
    for (size_t j = 0; j < terms[k].size(); ++j) extent[terms[k][j]] = dims[k][j];
  std::vector<char> letters;
  for (const auto& [ch, e] : extent) letters.push_back(ch);
  Ints out_dims;
  for (char ch : out) out_dims.push_back(extent[ch]);
  std::vector<double> y(static_cast<size_t>(count(out_dims)), 0.0);
  std::map<char, int64_t> at;
  const int64_t total = [&] {
    int64_t n = 1;
    for (char ch : letters) n *= extent[ch];
    return n;
  }();
  for (int64_t i = 0; i < total; ++i) {
    int64_t rem = i;
    for (size_t k = letters.size(); k-- > 0;) {
      at[letters[k]] = rem % extent[letters[k]];
      rem /= extent[letters[k]];
    }
    double p = 1.0;
    for (size_t k = 0; k < terms.size(); ++k) {
      int64_t off = 0;
      for (size_t j = 0; j < terms[k].size(); ++j) off = off * dims[k][j] + at[terms[k][j]];
      p *= in[k][off];
    }
    int64_t o = 0;
    for (char ch : out) o = o * extent[ch] + at[ch];
    y[o] += p;
  }
  return {y};
}

OpCaseTable einsum_cases() {
  OpCaseTable t = builtin_table("Einsum", einsum_formula, 12);
  auto eq = [](const char* e) { return attr("equation", std::string(e)); };
  t.cases.push_back(make_case("matmul", {data({4, 6}, -1, 1), data({6, 5}, -1, 1)}, {{4, 5}}, eq("ij,jk->ik")));
  t.cases.push_back(make_case("batched_transposed", {data({2, 3, 4}, -1, 1), data({2, 5, 4}, -1, 1)}, {{2, 3, 5}}, eq("bik,bjk->bij")));
  t.cases.push_back(make_case("transpose", {data({3, 7})}, {{7, 3}}, eq("ij->ji")));
  t.cases.push_back(make_case("row_sums", {data({4, 9})}, {{4}}, eq("ij->i")));
  for (OpCase& c : t.cases) c.tolerance[DataType::kFloat32] = 1e-5;
  return t;
}

// ---- Det --------------------------------------------------------------------------------------
// Gaussian elimination with partial pivoting, in float64, per trailing n x n matrix.
Values det_formula(const Values& in, const DimsList& dims, const AttributeMap&) {
  const Ints& d = dims[0];
  const int64_t n = d.back(), mats = count(d) / (n * n);
  std::vector<double> y;
  for (int64_t m = 0; m < mats; ++m) {
    std::vector<double> a(in[0].begin() + m * n * n, in[0].begin() + (m + 1) * n * n);
    double det = 1.0;
    for (int64_t c = 0; c < n; ++c) {
      int64_t piv = c;
      for (int64_t r = c + 1; r < n; ++r)
        if (std::fabs(a[r * n + c]) > std::fabs(a[piv * n + c])) piv = r;
      if (piv != c) {
        for (int64_t k = 0; k < n; ++k) std::swap(a[c * n + k], a[piv * n + k]);
        det = -det;
      }
      det *= a[c * n + c];
      for (int64_t r = c + 1; r < n; ++r) {
        const double f = a[r * n + c] / a[c * n + c];
        for (int64_t k = c; k < n; ++k) a[r * n + k] -= f * a[c * n + k];
      }
    }
    y.push_back(det);
  }
  return {y};
}

// Adds 3 to each matrix's diagonal, so that the determinants are well conditioned in float16 too.
void diagonally_dominant(std::vector<Tensor>& ins) {
  Tensor& x = ins[0];
  const int64_t n = x.dims().back();
  for (int64_t i = 0; i < x.numel(); ++i)
    if (i / n % n == i % n) x.set(i, x.get(i) + 3.0);
}

OpCaseTable det_cases() {
  OpCaseTable t = builtin_table("Det", det_formula, 11);
  t.cases.push_back(make_case("one_4x4", {data({4, 4}, -1, 1)}, {{}}));
  t.cases.push_back(make_case("batch_of_3x3", {data({2, 3, 3, 3}, -1, 1)}, {{2, 3}}));
  for (OpCase& c : t.cases) c.adjust_inputs = diagonally_dominant;
  return t;
}

// ---- losses -----------------------------------------------------------------------------------
// Scores [N, C, d...] as [n, c, inner], targets [n, inner]. Per target: -logp[b, t, i] * weight[t];
// a target equal to ignore_index counts 0 and weighs 0. Reduction none, sum, or the mean weighted
// by the counted targets' weights. SoftmaxCrossEntropyLoss's logp is log_softmax over the classes,
// also its optional second output (the formula gives it; a node without it compares output 0 only).
Values nll_formula(const std::vector<double>& logp, const Values& in, const DimsList& dims, const AttributeMap& a) {
  const int64_t n = dims[0][0], c = dims[0][1], inner = count(dims[0]) / (n * c);
  const std::string reduction = a.get_string("reduction", "mean").value();
  const bool weighted = in.size() > 2 && !in[2].empty();
  const bool ignoring = a.has("ignore_index");
  const int64_t ignored = a.get_int("ignore_index", 0).value();
  std::vector<double> per(static_cast<size_t>(n * inner));
  double sum = 0, wsum = 0;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t k = b * inner + i;
      const int64_t target = static_cast<int64_t>(in[1][k]);
      if (ignoring && target == ignored) continue;
      const double w = weighted ? in[2][target] : 1.0;
      per[k] = -logp[(b * c + target) * inner + i] * w;
      sum += per[k];
      wsum += w;
    }
  if (reduction == "none") return {per};
  return {{reduction == "sum" ? sum : sum / wsum}};
}

std::vector<double> log_softmax_over_classes(const std::vector<double>& x, const Ints& d) {
  const int64_t n = d[0], c = d[1], inner = count(d) / (n * c);
  std::vector<double> logp(x.size());
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t j) { return (b * c + j) * inner + i; };
      double mx = -INFINITY, s = 0;
      for (int64_t j = 0; j < c; ++j) mx = std::max(mx, x[at(j)]);
      for (int64_t j = 0; j < c; ++j) s += std::exp(x[at(j)] - mx);
      for (int64_t j = 0; j < c; ++j) logp[at(j)] = x[at(j)] - mx - std::log(s);
    }
  return logp;
}

// Every fourth target (a fixed pattern over fresh random classes) becomes `ignored`, which may lie
// outside [0, C).
std::function<void(std::vector<Tensor>&)> every_fourth_target_is(int64_t ignored) {
  return [ignored](std::vector<Tensor>& ins) {
    for (int64_t k = 0; k < ins[1].numel(); k += 4) ins[1].set(k, static_cast<double>(ignored));
  };
}

// The cases both losses share: each reduction, class weights, ignore_index inside and outside
// [0, C), int32 and int64 targets, 2-D to 4-D scores.
std::vector<OpCase> loss_cases() {
  auto attrs = [](const char* reduction, std::optional<int64_t> ignore_index = std::nullopt) {
    AttributeMap a;
    a.set("reduction", std::string(reduction));
    if (ignore_index) a.set("ignore_index", *ignore_index);
    return a;
  };
  std::vector<OpCase> cases;
  cases.push_back(make_case("mean", {data({6, 5}), typed({6}, DataType::kInt64, 0, 4)}, {{}}, attrs("mean")));
  cases.push_back(make_case("weighted_sum_int32_targets",
                            {data({4, 7}), typed({4}, DataType::kInt32, 0, 6), data({7}, 0.5, 2)}, {{}}, attrs("sum")));
  cases.push_back(make_case("none", {data({5, 3}), typed({5}, DataType::kInt64, 0, 2)}, {{5}}, attrs("none")));
  OpCase c = make_case("none_weighted_ignore_outside",
                       {data({8, 6}), typed({8}, DataType::kInt64, 0, 5), data({6}, 0.25, 2)}, {{8}}, attrs("none", -100));
  c.adjust_inputs = every_fourth_target_is(-100);
  cases.push_back(c);
  c = make_case("mean_4d_weighted_ignore_inside",
                {data({3, 5, 4, 6}), typed({3, 4, 6}, DataType::kInt64, 0, 4), data({5}, 0.25, 2)}, {{}},
                attrs("mean", 2));
  c.adjust_inputs = every_fourth_target_is(2);
  cases.push_back(c);
  c = make_case("none_4d_int32_ignore_outside", {data({3, 5, 4, 6}), typed({3, 4, 6}, DataType::kInt32, 0, 4)},
                {{3, 4, 6}}, attrs("none", -1));
  c.adjust_inputs = every_fourth_target_is(-1);
  cases.push_back(c);
  c = make_case("sum_3d_ignore_inside", {data({2, 9, 33}), typed({2, 33}, DataType::kInt64, 0, 8)}, {{}},
                attrs("sum", 0));
  c.adjust_inputs = every_fourth_target_is(0);
  cases.push_back(c);
  cases.push_back(make_case("mean_many_targets", {data({64, 10}), typed({64}, DataType::kInt64, 0, 9)}, {{}}, attrs("mean")));
  return cases;
}

std::vector<BadAttributeCase> loss_bad_attributes() {
  return {{"unknown_reduction", attr("reduction", std::string("average")), {{4, 3}, {4}}, "reduction"}};
}

OpCaseTable nll_cases() {
  OpCaseTable t = builtin_table("NegativeLogLikelihoodLoss", [](const Values& in, const DimsList& dims, const AttributeMap& a) {
    return nll_formula(in[0], in, dims, a);
  }, 13);
  t.cases = loss_cases();
  t.bad_attributes = loss_bad_attributes();
  return t;
}

OpCaseTable sce_cases() {
  OpCaseTable t = builtin_table("SoftmaxCrossEntropyLoss", [](const Values& in, const DimsList& dims, const AttributeMap& a) {
    std::vector<double> logp = log_softmax_over_classes(in[0], dims[0]);
    Values out = nll_formula(logp, in, dims, a);
    out.push_back(std::move(logp));
    return out;
  }, 13);
  t.cases = loss_cases();
  // With the optional log_prob output.
  for (const OpCase& base : loss_cases()) {
    if (base.label != "none_weighted_ignore_outside" && base.label != "mean_4d_weighted_ignore_inside") continue;
    OpCase c = base;
    c.label += "_with_log_prob";
    c.output_dims.push_back(c.inputs[0].dims);
    t.cases.push_back(c);
  }
  t.bad_attributes = loss_bad_attributes();
  return t;
}

// ---- BitShift ---------------------------------------------------------------------------------
OpCaseTable bit_shift_cases() {
  // Values and shifts small enough that nothing is shifted past the type's width.
  OpCaseTable t = builtin_table("BitShift", [](const Values& in, const DimsList& dims, const AttributeMap& a) {
    const bool left = a.get_string("direction", "").value() == "LEFT";
    return Values{broadcast_apply(in, dims, [left](const std::vector<double>& v) {
      return left ? v[0] * std::pow(2.0, v[1]) : std::floor(v[0] / std::pow(2.0, v[1]));
    })};
  }, 11);
  auto direction = [](const char* d) { return attr("direction", std::string(d)); };
  t.cases.push_back(make_case("uint8_left", {typed({2, 3}, DataType::kUInt8, 0, 31), typed({2, 3}, DataType::kUInt8, 0, 3)},
                              {{2, 3}}, direction("LEFT")));
  t.cases.push_back(make_case("uint32_right_broadcast",
                              {typed({3, 4}, DataType::kUInt32, 0, 4e9), typed({4}, DataType::kUInt32, 0, 31)}, {{3, 4}},
                              direction("RIGHT")));
  t.cases.push_back(make_case("uint16_left", {typed({5}, DataType::kUInt16, 0, 255), typed({5}, DataType::kUInt16, 0, 8)},
                              {{5}}, direction("LEFT")));
  t.cases.push_back(make_case("uint64_right", {typed({2, 3}, DataType::kUInt64, 0, 1e15), typed({2, 3}, DataType::kUInt64, 0, 63)},
                              {{2, 3}}, direction("RIGHT")));
  return t;
}

// ---- DFT --------------------------------------------------------------------------------------
// Opset 17: x [batch, n, 1 (real) or 2 (complex)], the transform along axis 1; y [batch, n or
// n/2 + 1 (onesided), 2]. Forward: sum x[t] e^(-2 pi i k t / n); inverse: the conjugate sum / n.
Values dft_formula(const Values& in, const DimsList& dims, const AttributeMap& a) {
  const Ints& d = dims[0];
  const int64_t batch = d[0], n = d[1], parts = d[2];
  const bool inverse = a.get_int("inverse", 0).value() != 0, onesided = a.get_int("onesided", 0).value() != 0;
  const int64_t bins = onesided ? n / 2 + 1 : n;
  const double pi = 3.14159265358979323846, sign = inverse ? 1.0 : -1.0;
  std::vector<double> y;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t k = 0; k < bins; ++k) {
      double re = 0.0, im = 0.0;
      for (int64_t t = 0; t < n; ++t) {
        const double xr = in[0][(b * n + t) * parts], xi = parts == 2 ? in[0][(b * n + t) * parts + 1] : 0.0;
        const double angle = sign * 2.0 * pi * static_cast<double>(k * t % n) / static_cast<double>(n);
        re += xr * std::cos(angle) - xi * std::sin(angle);
        im += xr * std::sin(angle) + xi * std::cos(angle);
      }
      y.push_back(inverse ? re / static_cast<double>(n) : re);
      y.push_back(inverse ? im / static_cast<double>(n) : im);
    }
  return {y};
}

OpCaseTable dft_cases() {
  OpCaseTable t = builtin_table("DFT", dft_formula, 17);
  t.cases.push_back(make_case("complex_forward", {data({2, 12, 2}, -1, 1)}, {{2, 12, 2}}));
  t.cases.push_back(make_case("real_onesided", {data({3, 10, 1}, -1, 1)}, {{3, 6, 2}}, attr("onesided", int64_t{1})));
  t.cases.push_back(make_case("complex_inverse", {data({1, 9, 2}, -1, 1)}, {{1, 9, 2}}, attr("inverse", int64_t{1})));
  for (OpCase& c : t.cases) c.tolerance[DataType::kFloat32] = 1e-5;
  return t;
}

// STFT (opset 17): signal [batch, length, 1], frame_step, window?, frame_length?; output
// [batch, frames, bins, 2], frames = (length - frame_length) / frame_step + 1, each frame times the
// window and transformed as DFT does (one-sided by default).
OpCaseTable stft_cases() {
  OpCaseTable t = builtin_table("STFT", [](const Values& in, const DimsList& dims, const AttributeMap& a) {
    const int64_t batch = dims[0][0], length = dims[0][1], step = static_cast<int64_t>(in[1][0]);
    const bool has_window = in.size() > 2 && !in[2].empty();
    const int64_t frame = has_window ? static_cast<int64_t>(in[2].size()) : static_cast<int64_t>(in[3][0]);
    const int64_t frames = (length - frame) / step + 1;
    Values frames_in(1);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t f = 0; f < frames; ++f)
        for (int64_t i = 0; i < frame; ++i)
          frames_in[0].push_back(in[0][b * length + f * step + i] * (has_window ? in[2][i] : 1.0));
    AttributeMap dft;
    dft.set("onesided", a.get_int("onesided", 1).value());
    return dft_formula(frames_in, {{batch * frames, frame, 1}}, dft);
  }, 17);
  auto scalar = [](int64_t v) { return fixed({}, DataType::kInt64, {static_cast<double>(v)}); };
  CaseInput none;
  none.omitted = true;
  t.cases.push_back(make_case("hann_like_window", {data({2, 40, 1}, -1, 1), scalar(8), data({16}, 0, 1)}, {{2, 4, 9, 2}}));
  t.cases.push_back(make_case("frame_length_two_sided", {data({1, 30, 1}, -1, 1), scalar(5), none, scalar(10)},
                              {{1, 5, 10, 2}}, attr("onesided", int64_t{0})));
  for (OpCase& c : t.cases) c.tolerance[DataType::kFloat32] = 1e-5;
  return t;
}

// RNN (opset 14, Tanh, forward or bidirectional): X [seq, batch, in], W [dirs, hidden, in], R [dirs,
// hidden, hidden], B [dirs, 2 hidden]; h_t = tanh(W x_t + R h_(t-1) + Wb + Rb) from h_0 = 0, the
// reverse direction walking the sequence backwards. Outputs Y [seq, dirs, batch, hidden], Y_h.
OpCaseTable rnn_cases() {
  OpCaseTable t = builtin_table("RNN", [](const Values& in, const DimsList& dims, const AttributeMap&) {
    const int64_t seq = dims[0][0], batch = dims[0][1], input = dims[0][2], dirs = dims[1][0], hidden = dims[1][1];
    std::vector<double> y(static_cast<size_t>(seq * dirs * batch * hidden)), yh(static_cast<size_t>(dirs * batch * hidden));
    for (int64_t d = 0; d < dirs; ++d)
      for (int64_t b = 0; b < batch; ++b) {
        std::vector<double> h(static_cast<size_t>(hidden), 0.0), next(static_cast<size_t>(hidden));
        for (int64_t step = 0; step < seq; ++step) {
          const int64_t s = d == 0 ? step : seq - 1 - step;
          for (int64_t j = 0; j < hidden; ++j) {
            double v = in[3][d * 2 * hidden + j] + in[3][d * 2 * hidden + hidden + j];
            for (int64_t i = 0; i < input; ++i) v += in[1][(d * hidden + j) * input + i] * in[0][(s * batch + b) * input + i];
            for (int64_t i = 0; i < hidden; ++i) v += in[2][(d * hidden + j) * hidden + i] * h[i];
            next[j] = std::tanh(v);
          }
          h = next;
          for (int64_t j = 0; j < hidden; ++j) y[((s * dirs + d) * batch + b) * hidden + j] = h[j];
        }
        for (int64_t j = 0; j < hidden; ++j) yh[(d * batch + b) * hidden + j] = h[j];
      }
    return Values{y, yh};
  }, 14);
  auto rnn = [](const char* direction, int64_t hidden) {
    AttributeMap a;
    a.set("direction", std::string(direction));
    a.set("hidden_size", hidden);
    return a;
  };
  t.cases.push_back(make_case("forward", {data({5, 2, 3}, -1, 1), data({1, 4, 3}, -0.5, 0.5), data({1, 4, 4}, -0.5, 0.5),
                                          data({1, 8}, -0.5, 0.5)},
                              {{5, 1, 2, 4}, {1, 2, 4}}, rnn("forward", 4)));
  t.cases.push_back(make_case("bidirectional", {data({4, 3, 2}, -1, 1), data({2, 5, 2}, -0.5, 0.5), data({2, 5, 5}, -0.5, 0.5),
                                                data({2, 10}, -0.5, 0.5)},
                              {{4, 2, 3, 5}, {2, 3, 5}}, rnn("bidirectional", 5)));
  for (OpCase& c : t.cases) c.tolerance[DataType::kFloat32] = 1e-5;
  return t;
}

}  // namespace

std::vector<OpCaseTable> math_case_tables() {
  return {quantize_cases(), mvn_cases(), dropout_cases(), dims_cases("Shape", false), dims_cases("Size", true),
          einsum_cases(),   det_cases(), nll_cases(),     sce_cases(),                bit_shift_cases(),
          dft_cases(),      stft_cases(), rnn_cases()};
}

}  // namespace graft::optest
