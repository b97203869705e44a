// Builtin ops added for ONNX backend-suite coverage (issue 16): the losses (loss_ops.cpp), the
// quantization ops (quantize_ops.cpp) and the rest (misc_ops.cpp). Kernels against independent
// naive computations written here, on fresh random data (never zeros) with poisoned outputs, in the
// dtypes and attribute combinations the suite's few cases leave out; plus inference and the
// attribute errors, which must name the attribute.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "op_test_util.h"

using namespace graft;
using graft::testing::OneNode;
using graft::testing::random_tensor;

namespace {

uint32_t fresh_seed() { return std::random_device{}(); }

double tol_of(DataType t) {
  return t == DataType::kFloat16 ? 3e-3 : t == DataType::kBFloat16 ? 2e-2 : t == DataType::kFloat32 ? 2e-6 : 1e-12;
}

void expect_close(const Tensor& got, const std::vector<double>& want, const std::string& what, double tol = -1) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size())) << what;
  if (tol < 0) tol = tol_of(got.dtype());
  int bad = 0;
  for (int64_t i = 0; i < got.numel() && bad < 5; ++i) {
    const double g = got.get(i);
    if (std::isnan(want[i]) && std::isnan(g)) continue;
    if (!(std::fabs(g - want[i]) <= tol * (1 + std::fabs(want[i])))) {
      ADD_FAILURE() << what << " [" << i << "]: got " << g << ", want " << want[i];
      ++bad;
    }
  }
}

std::vector<double> values(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.get(i);
  return v;
}

AttributeMap attrs_of(std::vector<std::pair<std::string, AttrValue>> kv) {
  AttributeMap m;
  for (auto& [k, v] : kv) m.set(k, v);
  return m;
}

Result<std::vector<Tensor>> run_op(const std::string& op, std::vector<Tensor> in, AttributeMap attrs = {},
                                   int opset = 17, size_t num_outputs = 1) {
  OneNode n(op, std::move(in), num_outputs);
  n.node->attrs = std::move(attrs);
  return n.run(opset);
}

Result<std::vector<TensorDesc>> infer(const std::string& op, std::vector<TensorDesc> descs, const AttributeMap& attrs,
                                      int opset, size_t num_outputs = 1) {
  Graph g;
  Node* n = g.add_node("n", op);
  n->attrs = attrs;
  std::vector<InferContext::InputInfo> infos;
  for (size_t i = 0; i < descs.size(); ++i) {
    Value* v = g.add_value("in" + std::to_string(i));
    v->desc = descs[i];
    n->inputs.push_back(v);
    InferContext::InputInfo info;
    info.desc = &descs[i];
    infos.push_back(info);
  }
  for (size_t o = 0; o < num_outputs; ++o) n->outputs.push_back(g.add_value("out" + std::to_string(o)));
  InferContext ctx(*n, infos, opset);
  const BuiltinOp* op_def = find_builtin_op(op);
  if (!op_def) return error(StatusCode::kUnsupported, "no builtin op ", op);
  GRAFT_RETURN_IF_ERROR(op_def->infer(ctx));
  return ctx.outputs();
}

// Random class targets in [0, c), some of them set to `ignore` when `ignore_some`.
Tensor random_targets(DataType dt, std::vector<int64_t> dims, int64_t c, std::mt19937& rng, bool ignore_some,
                      int64_t ignore) {
  Tensor t = Tensor::empty(dt, std::move(dims));
  std::uniform_int_distribution<int64_t> d(0, c - 1);
  std::uniform_int_distribution<int> coin(0, 3);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, static_cast<double>(ignore_some && coin(rng) == 0 ? ignore : d(rng)));
  return t;
}

}  // namespace

// ---- losses -------------------------------------------------------------------------------------

// NLL over [N, C, D] input against a direct loop; SoftmaxCrossEntropyLoss against log-softmax
// written out here, both outputs.
TEST(LossKernels, NllAndSoftmaxCrossEntropyAgainstLoops) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const int64_t N = 3, C = 4, D = 5;
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16, DataType::kFloat64, DataType::kBFloat16})
    for (DataType tdt : {DataType::kInt64, DataType::kInt32})
      for (const char* reduction : {"none", "sum", "mean"})
        for (int with_weight : {0, 1})
          for (int64_t ii : {int64_t{-100}, int64_t{2}, int64_t{0}}) {
            const bool has_ii = ii != -100;
            Tensor x = random_tensor(dt, {N, C, D}, rng, -3, 3);
            Tensor t = random_targets(tdt, {N, D}, C, rng, has_ii, ii);
            Tensor w = random_tensor(dt, {C}, rng, 0.25, 2);
            std::vector<Tensor> in{x, t};
            if (with_weight) in.push_back(w);
            AttributeMap a = attrs_of({{"reduction", std::string(reduction)}});
            if (has_ii) a.set("ignore_index", ii);
            const auto xv = values(x), wv = values(w);
            // log-softmax over C, directly.
            std::vector<double> lp(xv.size());
            for (int64_t n = 0; n < N; ++n)
              for (int64_t d = 0; d < D; ++d) {
                double s = 0;
                for (int64_t c = 0; c < C; ++c) s += std::exp(xv[(n * C + c) * D + d]);
                for (int64_t c = 0; c < C; ++c) lp[(n * C + c) * D + d] = xv[(n * C + c) * D + d] - std::log(s);
              }
            for (int sce = 0; sce < 2; ++sce) {
              const std::vector<double>& src = sce ? lp : xv;
              std::vector<double> per;
              double sum = 0, wsum = 0;
              for (int64_t n = 0; n < N; ++n)
                for (int64_t d = 0; d < D; ++d) {
                  const int64_t k = static_cast<int64_t>(t.get(n * D + d));
                  const double wt = (has_ii && k == ii) ? 0.0 : (with_weight ? wv[k] : 1.0);
                  const double l = wt == 0.0 ? 0.0 : -src[(n * C + k) * D + d] * wt;
                  per.push_back(l);
                  sum += l;
                  wsum += wt;
                }
              std::vector<double> want = std::string(reduction) == "none" ? per
                                         : std::string(reduction) == "sum" ? std::vector<double>{sum}
                                                                           : std::vector<double>{sum / wsum};
              const std::string what = std::string(sce ? "SCE " : "NLL ") + dtype_name(dt) + " target " +
                                       dtype_name(tdt) + " " + reduction + " weight " + std::to_string(with_weight) +
                                       " ii " + std::to_string(ii);
              auto r = run_op(sce ? "SoftmaxCrossEntropyLoss" : "NegativeLogLikelihoodLoss", in, a, 13, sce ? 2 : 1);
              ASSERT_TRUE(r.is_ok()) << what << ": " << r.status().to_string();
              // Sums of 15 terms rounded once: a looser bound for the half types.
              const double tol = dt == DataType::kBFloat16 ? 3e-2 : dt == DataType::kFloat16 ? 4e-3 : tol_of(dt) * 4;
              expect_close(r.value()[0], want, what, tol);
              if (sce) expect_close(r.value()[1], lp, what + " log_prob", tol);
            }
          }
}

TEST(LossKernels, NdInputsAndIgnoreOutsideTheClassRange) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  // [N, C, d1, d2] with ignore_index -1 (outside [0, C)), mean over what is left.
  Tensor x = random_tensor(DataType::kFloat32, {2, 3, 2, 3}, rng, -2, 2);
  Tensor t = random_targets(DataType::kInt64, {2, 2, 3}, 3, rng, true, -1);
  t.set(0, 1);  // at least one target counts
  auto r = run_op("NegativeLogLikelihoodLoss", {x, t}, attrs_of({{"ignore_index", int64_t{-1}}}), 13);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  double sum = 0, cnt = 0;
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t s = 0; s < 6; ++s) {
      const int64_t k = static_cast<int64_t>(t.get(n * 6 + s));
      if (k == -1) continue;
      sum -= x.get((n * 3 + k) * 6 + s);
      cnt += 1;
    }
  expect_close(r.value()[0], {sum / cnt}, "NLL 4-D mean ii=-1");
  // Every target ignored: the mean is 0/0.
  Tensor all_ignored = Tensor::from_doubles(DataType::kInt64, {2, 2, 3}, std::vector<double>(12, 2.0));
  r = run_op("NegativeLogLikelihoodLoss", {x, all_ignored}, attrs_of({{"ignore_index", int64_t{2}}}), 13);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(std::isnan(r.value()[0].get(0)));
}

TEST(LossInfer, ShapesAndErrors) {
  Dim b = Dim::symbol("batch");
  TensorDesc x(DataType::kFloat32, Shape{b, 5, 7});
  TensorDesc t(DataType::kInt64, Shape{b, 7});
  auto r = infer("NegativeLogLikelihoodLoss", {x, t}, attrs_of({{"reduction", std::string("none")}}), 13);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r.value()[0].to_string(), "float32[batch,7]");
  r = infer("SoftmaxCrossEntropyLoss", {x, t}, {}, 13, 2);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r.value()[0].to_string(), "float32[]");
  EXPECT_EQ(r.value()[1].to_string(), "float32[batch,5,7]");
  // Attribute errors name the attribute.
  r = infer("NegativeLogLikelihoodLoss", {x, t}, attrs_of({{"reduction", std::string("avg")}}), 13);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().attribute(), "reduction");
  r = infer("SoftmaxCrossEntropyLoss", {x, t}, attrs_of({{"ignore_index", std::string("x")}}), 13);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().attribute(), "ignore_index");
  r = infer("SoftmaxCrossEntropyLoss", {x, t}, attrs_of({{"reduction", 1.5f}}), 13);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().attribute(), "reduction");
  // Shape and dtype errors.
  EXPECT_FALSE(infer("NegativeLogLikelihoodLoss", {x, TensorDesc(DataType::kInt64, Shape{b, 6})}, {}, 13).is_ok());
  EXPECT_FALSE(infer("NegativeLogLikelihoodLoss", {x, TensorDesc(DataType::kInt64, Shape{b})}, {}, 13).is_ok());
  EXPECT_FALSE(infer("NegativeLogLikelihoodLoss", {x, TensorDesc(DataType::kFloat32, Shape{b, 7})}, {}, 13).is_ok());
  EXPECT_FALSE(
      infer("NegativeLogLikelihoodLoss", {x, t, TensorDesc(DataType::kFloat32, Shape{4})}, {}, 13).is_ok());
  EXPECT_FALSE(
      infer("NegativeLogLikelihoodLoss", {x, t, TensorDesc(DataType::kFloat64, Shape{5})}, {}, 13).is_ok());
  EXPECT_FALSE(infer("NegativeLogLikelihoodLoss", {TensorDesc(DataType::kFloat32, Shape{5}), TensorDesc(DataType::kInt64, Shape{})}, {}, 13).is_ok());
}

TEST(LossKernels, TargetOutOfRangeIsAnError) {
  std::mt19937 rng(7);
  Tensor x = random_tensor(DataType::kFloat32, {2, 3}, rng, -1, 1);
  for (double bad : {3.0, -1.0}) {
    Tensor t = Tensor::from_doubles(DataType::kInt64, {2}, {0, bad});
    auto r = run_op("NegativeLogLikelihoodLoss", {x, t}, {}, 13);
    ASSERT_FALSE(r.is_ok());
    EXPECT_NE(r.status().message().find("target value"), std::string::npos) << r.status().to_string();
    r = run_op("SoftmaxCrossEntropyLoss", {x, t}, attrs_of({{"ignore_index", int64_t{7}}}), 13);
    ASSERT_FALSE(r.is_ok());
  }
}
