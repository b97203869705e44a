// Ops whose output size depends on the data (NonZero, NonMaxSuppression) and the engine support they
// need: inference leaves the count symbolic, the executor does not pre-allocate that output, the
// kernel allocates it after counting, and later nodes see the real shape. Results are checked
// against naive references written here, independently of the kernels.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "graft/engine.h"
#include "graph/passes.h"
#include "onnx_model_builder.h"
#include "ops/operator.h"
#include "runtime/cpu_executor.h"

namespace graft {
namespace {

using testing::OnnxModelBuilder;

// One node whose inputs are graph values (not constants), run through the runtime's executor.
struct NodeRun {
  Graph graph;
  Node* node = nullptr;

  NodeRun(const std::string& op_type, const std::vector<Tensor>& inputs, size_t num_outputs = 1) {
    node = graph.add_node("the_" + op_type, op_type);
    node->opset = 17;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i].defined()) {
        node->inputs.push_back(nullptr);
        continue;
      }
      Value* v = graph.add_value("in" + std::to_string(i));
      v->desc = TensorDesc(inputs[i].dtype(), shape_from_values(inputs[i].dims()));
      node->inputs.push_back(v);
    }
    for (size_t o = 0; o < num_outputs; ++o) {
      Value* v = graph.add_value("out" + std::to_string(o));
      v->producer = node;
      node->outputs.push_back(v);
    }
  }

  Result<Tensor> run(const std::vector<Tensor>& inputs) {
    std::vector<const Tensor*> ins;
    for (const Tensor& t : inputs) ins.push_back(t.defined() ? &t : nullptr);
    auto outs = run_node_cpu(*node, ins);
    if (!outs) return std::move(outs).take_status();
    return (*outs)[0];
  }

  // Build-time inference (inputs known by shape only).
  Result<TensorDesc> infer_symbolic() {
    std::vector<InferContext::InputInfo> infos;
    for (Value* v : node->inputs) {
      InferContext::InputInfo info;
      if (v) info.desc = &v->desc;
      infos.push_back(info);
    }
    std::vector<TensorDesc> descs;
    std::vector<std::optional<std::vector<Dim>>> syms;
    GRAFT_RETURN_IF_ERROR(infer_node(*node, infos, &descs, &syms));
    return descs[0];
  }
};

std::vector<int64_t> values_i64(const Tensor& t) {
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  if (!v.empty()) std::memcpy(v.data(), t.data(), v.size() * sizeof(int64_t));
  return v;
}

Tensor scalar_f32(float v) {
  Tensor t = Tensor::empty(DataType::kFloat32, {1});
  t.data_as<float>()[0] = v;
  return t;
}

Tensor scalar_i64(int64_t v) {
  Tensor t = Tensor::empty(DataType::kInt64, {1});
  t.data_as<int64_t>()[0] = v;
  return t;
}

Tensor floats(std::vector<int64_t> dims, const std::vector<float>& v) {
  Tensor t = Tensor::empty(DataType::kFloat32, std::move(dims));
  EXPECT_EQ(static_cast<size_t>(t.numel()), v.size());
  std::copy(v.begin(), v.end(), t.data_as<float>());
  return t;
}

// ---- NonZero ------------------------------------------------------------------------------------

// Naive: walk every multi-index in row-major order, list those whose element is nonzero.
std::vector<std::vector<int64_t>> naive_non_zero(const Tensor& x) {
  const int64_t rank = x.rank();
  std::vector<std::vector<int64_t>> rows(static_cast<size_t>(std::max<int64_t>(rank, 1)));
  std::vector<int64_t> idx(static_cast<size_t>(rank), 0);
  for (int64_t flat = 0; flat < x.numel(); ++flat) {
    if (x.get(flat) != 0.0)
      for (size_t a = 0; a < rows.size(); ++a) rows[a].push_back(rank == 0 ? 0 : idx[a]);
    for (int64_t a = rank - 1; a >= 0; --a) {
      if (++idx[static_cast<size_t>(a)] < x.dims()[static_cast<size_t>(a)]) break;
      idx[static_cast<size_t>(a)] = 0;
    }
  }
  return rows;
}

void expect_non_zero(const Tensor& x) {
  NodeRun r("NonZero", {x});
  auto sym = r.infer_symbolic();
  ASSERT_TRUE(sym.is_ok()) << sym.status().to_string();
  ASSERT_TRUE(sym->shape.has_value());
  ASSERT_EQ(sym->shape->size(), 2u);
  EXPECT_TRUE((*sym->shape)[0] == std::max<int64_t>(x.rank(), 1)) << sym->to_string();
  if (x.numel() > 0) EXPECT_TRUE((*sym->shape)[1].is_symbol()) << sym->to_string();
  auto y = r.run({x});
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  const auto want = naive_non_zero(x);
  const int64_t count = static_cast<int64_t>(want[0].size());
  ASSERT_EQ(y->dtype(), DataType::kInt64);
  ASSERT_EQ(y->dims(), (std::vector<int64_t>{static_cast<int64_t>(want.size()), count}));
  const auto got = values_i64(*y);
  for (size_t a = 0; a < want.size(); ++a)
    for (int64_t k = 0; k < count; ++k)
      EXPECT_EQ(got[a * count + k], want[a][k]) << "row " << a << " col " << k;
}

TEST(NonZero, RandomIntegersAndFloatsAgainstNaive) {
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int> small(-2, 2);
  for (const auto& dims : std::vector<std::vector<int64_t>>{{17}, {3, 5}, {2, 3, 4}, {2, 1, 3, 2}}) {
    Tensor xi = Tensor::empty(DataType::kInt32, dims);
    for (int64_t i = 0; i < xi.numel(); ++i) xi.set(i, small(rng));
    xi.set(0, 1);  // never all zeros
    expect_non_zero(xi);
    Tensor xf = Tensor::empty(DataType::kFloat32, dims);
    for (int64_t i = 0; i < xf.numel(); ++i) xf.set(i, small(rng) * 0.25);
    xf.set(xf.numel() - 1, 0.5);
    expect_non_zero(xf);
  }
}

TEST(NonZero, NaNCountsNegativeZeroDoesNotBoolAndScalar) {
  expect_non_zero(floats({5}, {std::nanf(""), -0.0f, 0.0f, 1e-30f, -2.0f}));
  Tensor b = Tensor::empty(DataType::kBool, {2, 3});
  for (int64_t i = 0; i < 6; ++i) b.set(i, i % 2);
  expect_non_zero(b);
  Tensor s = Tensor::empty(DataType::kFloat32, {});
  s.set(0, 3.0);
  expect_non_zero(s);  // [1, 1]: the scalar is read as a one-element vector
  s.set(0, 0.0);
  expect_non_zero(s);  // [1, 0]
}

TEST(NonZero, EmptyInputHasStaticZeroCount) {
  Tensor x = Tensor::empty(DataType::kFloat32, {0, 3});
  NodeRun r("NonZero", {x});
  auto sym = r.infer_symbolic();
  ASSERT_TRUE(sym.is_ok()) << sym.status().to_string();
  EXPECT_EQ(shape_to_string(*sym->shape), "[2,0]");
  expect_non_zero(x);
  Tensor zeros = Tensor::empty(DataType::kInt64, {4, 2});
  for (int64_t i = 0; i < 8; ++i) zeros.set(i, 0);
  expect_non_zero(zeros);  // [2, 0] found at run time
}

// ---- NonMaxSuppression ----------------------------------------------------------------------------

struct NmsCase {
  int64_t batches = 1, classes = 1, boxes = 1;
  std::vector<float> box_data, score_data;
  bool center = false;
  bool has_max = true, has_iou = true, has_score = false;
  int64_t max_per_class = 0;
  float iou = 0.5f, score = 0.0f;
};

// Naive NMS, written independently of the kernel: per batch and class, repeatedly take the best
// remaining candidate (highest score, lowest index on ties) and drop every remaining candidate that
// overlaps it by more than the threshold, until enough are taken. IoU in double.
std::vector<int64_t> naive_nms(const NmsCase& c) {
  auto corners = [&](int64_t b, int64_t i) {
    const float* p = &c.box_data[static_cast<size_t>((b * c.boxes + i) * 4)];
    std::array<double, 4> r;  // lo0, lo1, hi0, hi1
    if (c.center) {
      r = {p[0] - p[2] / 2.0, p[1] - p[3] / 2.0, p[0] + p[2] / 2.0, p[1] + p[3] / 2.0};
    } else {
      r = {std::min<double>(p[0], p[2]), std::min<double>(p[1], p[3]), std::max<double>(p[0], p[2]),
           std::max<double>(p[1], p[3])};
    }
    return r;
  };
  auto iou = [&](int64_t b, int64_t i, int64_t j) {
    auto a = corners(b, i), d = corners(b, j);
    double w = std::min(a[2], d[2]) - std::max(a[0], d[0]);
    double h = std::min(a[3], d[3]) - std::max(a[1], d[1]);
    double area_a = (a[2] - a[0]) * (a[3] - a[1]), area_d = (d[2] - d[0]) * (d[3] - d[1]);
    if (w <= 0 || h <= 0 || area_a <= 0 || area_d <= 0) return 0.0;
    return w * h / (area_a + area_d - w * h);
  };
  std::vector<int64_t> out;
  const int64_t limit = c.has_max ? c.max_per_class : 0;
  for (int64_t b = 0; b < c.batches; ++b)
    for (int64_t k = 0; k < c.classes; ++k) {
      const float* s = &c.score_data[static_cast<size_t>((b * c.classes + k) * c.boxes)];
      std::vector<bool> alive(static_cast<size_t>(c.boxes));
      for (int64_t i = 0; i < c.boxes; ++i) alive[i] = !c.has_score || s[i] > c.score;
      int64_t taken = 0;
      while (taken < limit) {
        int64_t best = -1;
        for (int64_t i = 0; i < c.boxes; ++i)
          if (alive[i] && (best < 0 || s[i] > s[best])) best = i;
        if (best < 0) break;
        alive[best] = false;
        out.insert(out.end(), {b, k, best});
        ++taken;
        for (int64_t i = 0; i < c.boxes; ++i)
          if (alive[i] && iou(b, best, i) > (c.has_iou ? c.iou : 0.0f)) alive[i] = false;
      }
    }
  return out;
}

std::vector<Tensor> nms_inputs(const NmsCase& c) {
  return {floats({c.batches, c.boxes, 4}, c.box_data), floats({c.batches, c.classes, c.boxes}, c.score_data),
          c.has_max ? scalar_i64(c.max_per_class) : Tensor(), c.has_iou ? scalar_f32(c.iou) : Tensor(),
          c.has_score ? scalar_f32(c.score) : Tensor()};
}

Result<Tensor> run_nms(const NmsCase& c) {
  auto ins = nms_inputs(c);
  while (!ins.empty() && !ins.back().defined()) ins.pop_back();
  NodeRun r("NonMaxSuppression", ins);
  if (c.center) r.node->attrs.set("center_point_box", int64_t{1});
  return r.run(ins);
}

void expect_nms(const NmsCase& c, const std::string& what) {
  SCOPED_TRACE(what);
  auto y = run_nms(c);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  const auto want = naive_nms(c);
  ASSERT_EQ(y->dtype(), DataType::kInt64);
  ASSERT_EQ(y->dims(), (std::vector<int64_t>{static_cast<int64_t>(want.size() / 3), 3}));
  EXPECT_EQ(values_i64(*y), want);
}

NmsCase random_case(std::mt19937& rng, int64_t batches, int64_t classes, int64_t boxes, bool center) {
  NmsCase c;
  c.batches = batches, c.classes = classes, c.boxes = boxes, c.center = center;
  std::uniform_real_distribution<float> pos(0.0f, 10.0f), size(0.5f, 4.0f), score(0.0f, 1.0f);
  for (int64_t i = 0; i < batches * boxes; ++i) {
    float a = pos(rng), b = pos(rng), w = size(rng), h = size(rng);
    if (center) {
      c.box_data.insert(c.box_data.end(), {a, b, w, h});
    } else if (i % 3 == 0) {
      c.box_data.insert(c.box_data.end(), {a + h, b + w, a, b});  // flipped corners
    } else {
      c.box_data.insert(c.box_data.end(), {a, b, a + h, b + w});
    }
  }
  for (int64_t i = 0; i < batches * classes * boxes; ++i) c.score_data.push_back(score(rng));
  return c;
}

TEST(NonMaxSuppression, RandomBoxesAgainstNaive) {
  std::mt19937 rng(99);
  for (bool center : {false, true})
    for (int64_t max_out : {int64_t{1}, int64_t{3}, int64_t{1000}, std::numeric_limits<int64_t>::max()})
      for (float iou : {0.0f, 0.3f, 0.7f, 1.0f}) {
        NmsCase c = random_case(rng, 2, 3, 37, center);
        c.max_per_class = max_out;
        c.iou = iou;
        expect_nms(c, "center " + std::to_string(center) + " max " + std::to_string(max_out) + " iou " +
                          std::to_string(iou));
        c.has_score = true;
        c.score = 0.4f;
        expect_nms(c, "with score threshold 0.4");
      }
}

TEST(NonMaxSuppression, SymbolicCountAtBuildTime) {
  std::mt19937 rng(5);
  NmsCase c = random_case(rng, 1, 2, 6, false);
  c.max_per_class = 4;
  auto ins = nms_inputs(c);
  NodeRun r("NonMaxSuppression", ins);
  auto sym = r.infer_symbolic();
  ASSERT_TRUE(sym.is_ok()) << sym.status().to_string();
  EXPECT_TRUE((*sym->shape)[0].is_symbol()) << sym->to_string();
  EXPECT_TRUE((*sym->shape)[1] == 3) << sym->to_string();
}

TEST(NonMaxSuppression, TiesPickTheLowerIndexFirst) {
  NmsCase c;
  c.boxes = 5;
  // Disjoint boxes, all with the same score except the last.
  for (int i = 0; i < 5; ++i) c.box_data.insert(c.box_data.end(), {0.0f, i * 2.0f, 1.0f, i * 2.0f + 1.0f});
  c.score_data = {0.5f, 0.5f, 0.5f, 0.5f, 0.9f};
  c.max_per_class = 3;
  auto y = run_nms(c);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values_i64(*y), (std::vector<int64_t>{0, 0, 4, 0, 0, 0, 0, 0, 1}));
  // Identical boxes with identical scores: only the first survives.
  NmsCase same;
  same.boxes = 4;
  for (int i = 0; i < 4; ++i) same.box_data.insert(same.box_data.end(), {0.0f, 0.0f, 1.0f, 1.0f});
  same.score_data = {0.7f, 0.7f, 0.7f, 0.7f};
  same.max_per_class = 10;
  y = run_nms(same);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values_i64(*y), (std::vector<int64_t>{0, 0, 0}));
}

TEST(NonMaxSuppression, EmptyResultsHaveShapeZeroByThree) {
  std::mt19937 rng(7);
  NmsCase c = random_case(rng, 2, 2, 10, false);
  c.max_per_class = 5;
  c.has_score = true;
  c.score = 2.0f;  // above every score
  auto y = run_nms(c);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(y->dims(), (std::vector<int64_t>{0, 3}));

  // max_output_boxes_per_class = 0 (or negative, or absent): nothing is selected, and inference
  // knows it before running when the value is known.
  for (int64_t m : {int64_t{0}, int64_t{-3}}) {
    NmsCase z = random_case(rng, 1, 2, 4, false);
    z.max_per_class = m;
    y = run_nms(z);
    ASSERT_TRUE(y.is_ok()) << y.status().to_string();
    EXPECT_EQ(y->dims(), (std::vector<int64_t>{0, 3}));
  }
  NmsCase absent = random_case(rng, 1, 2, 4, false);
  absent.has_max = absent.has_iou = false;
  y = run_nms(absent);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(y->dims(), (std::vector<int64_t>{0, 3}));
  NodeRun r("NonMaxSuppression", {floats({1, 4, 4}, absent.box_data), floats({1, 2, 4}, absent.score_data)});
  auto sym = r.infer_symbolic();
  ASSERT_TRUE(sym.is_ok()) << sym.status().to_string();
  EXPECT_EQ(shape_to_string(*sym->shape), "[0,3]");

  // No boxes at all.
  NmsCase none;
  none.boxes = 0;
  none.classes = 3;
  none.max_per_class = 4;
  y = run_nms(none);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(y->dims(), (std::vector<int64_t>{0, 3}));
}

TEST(NonMaxSuppression, CenterPointBoxFormat) {
  // Two boxes of size 2x2 centred 0.5 apart (IoU 0.6) and one far away.
  NmsCase c;
  c.boxes = 3;
  c.center = true;
  c.box_data = {1.0f, 1.0f, 2.0f, 2.0f, 1.5f, 1.0f, 2.0f, 2.0f, 10.0f, 10.0f, 2.0f, 2.0f};
  c.score_data = {0.9f, 0.8f, 0.7f};
  c.max_per_class = 3;
  c.iou = 0.5f;
  auto y = run_nms(c);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values_i64(*y), (std::vector<int64_t>{0, 0, 0, 0, 0, 2}));
  c.iou = 0.65f;  // now the second box survives
  y = run_nms(c);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values_i64(*y), (std::vector<int64_t>{0, 0, 0, 0, 0, 1, 0, 0, 2}));
}

TEST(NonMaxSuppression, NaNScoresAreNeverSelected) {
  NmsCase c;
  c.boxes = 3;
  c.box_data = {0, 0, 1, 1, 0, 2, 1, 3, 0, 4, 1, 5};
  c.score_data = {std::nanf(""), 0.2f, 0.3f};
  c.max_per_class = 3;
  auto y = run_nms(c);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(values_i64(*y), (std::vector<int64_t>{0, 0, 2, 0, 0, 1}));
}

TEST(NonMaxSuppression, BadInputsAreRefusedNamingTheProblem) {
  std::mt19937 rng(3);
  NmsCase c = random_case(rng, 1, 1, 4, false);
  c.max_per_class = 2;
  c.iou = 1.5f;
  auto y = run_nms(c);
  ASSERT_FALSE(y.is_ok());
  EXPECT_NE(y.status().message().find("iou_threshold"), std::string::npos) << y.status().to_string();
  EXPECT_EQ(y.status().node_name(), "the_NonMaxSuppression");

  // Boxes and scores that disagree on the number of boxes.
  NodeRun r("NonMaxSuppression",
            {floats({1, 4, 4}, c.box_data), floats({1, 1, 3}, {0.1f, 0.2f, 0.3f}), scalar_i64(2)});
  auto s = r.run({floats({1, 4, 4}, c.box_data), floats({1, 1, 3}, {0.1f, 0.2f, 0.3f}), scalar_i64(2)});
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.status().message().find("number of boxes"), std::string::npos) << s.status().to_string();

  // center_point_box outside {0, 1}.
  auto ins = nms_inputs(c);
  NodeRun bad("NonMaxSuppression", ins);
  bad.node->attrs.set("center_point_box", int64_t{2});
  auto b = bad.run(ins);
  ASSERT_FALSE(b.is_ok());
  EXPECT_EQ(b.status().attribute(), "center_point_box") << b.status().to_string();

  // A max_output_boxes_per_class with two values.
  Tensor two = Tensor::empty(DataType::kInt64, {2});
  two.set(0, 1);
  two.set(1, 1);
  c.iou = 0.5f;
  auto ins2 = nms_inputs(c);
  ins2[2] = two;
  NodeRun r2("NonMaxSuppression", ins2);
  auto t = r2.run(ins2);
  ASSERT_FALSE(t.is_ok());
  EXPECT_NE(t.status().to_string().find("max_output_boxes_per_class"), std::string::npos)
      << t.status().to_string();
}

// ---- engine: downstream shapes, size changes between runs, plans ----------------------------------

// boxes [N,4] -> Unsqueeze -> NMS (one batch, C classes) -> selected [n,3]; Gather column 2 ->
// box indices [n]; Gather rows of boxes -> picked [n,4]. mask -> NonZero -> Transpose -> [m, 2].
std::string chained_model() {
  OnnxModelBuilder b(13);
  b.input("boxes", DataType::kFloat32, {"n", 4});
  b.input("scores", DataType::kFloat32, {1, 2, "n"});
  b.input("mask", DataType::kFloat32, {"r", "c"});
  b.initializer("axes0", Tensor::vector_int64({0}));
  b.initializer("max_out", Tensor::vector_int64({3}));
  b.initializer("iou", scalar_f32(0.5f));
  b.initializer("score_thr", scalar_f32(0.2f));
  b.initializer("col2", Tensor::scalar_int64(2));
  b.node("Unsqueeze", {"boxes", "axes0"}, {"boxes3"});
  b.node("NonMaxSuppression", {"boxes3", "scores", "max_out", "iou", "score_thr"}, {"selected"}, "nms");
  auto& g = b.node("Gather", {"selected", "col2"}, {"box_idx"});
  OnnxModelBuilder::attr(g, "axis", int64_t{1});
  auto& g2 = b.node("Gather", {"boxes", "box_idx"}, {"picked"});
  OnnxModelBuilder::attr(g2, "axis", int64_t{0});
  b.node("NonZero", {"mask"}, {"nz"}, "nonzero");
  auto& t = b.node("Transpose", {"nz"}, {"nz_t"});
  OnnxModelBuilder::attr(t, "perm", std::vector<int64_t>{1, 0});
  b.output("selected", DataType::kInt64);
  b.output("picked", DataType::kFloat32);
  b.output("nz_t", DataType::kInt64);
  return b.bytes();
}

struct ChainedData {
  NmsCase nms;
  Tensor mask;
};

ChainedData chained_data(std::mt19937& rng, int64_t n, int64_t r, int64_t cols) {
  ChainedData d;
  d.nms = random_case(rng, 1, 2, n, false);
  d.nms.max_per_class = 3;
  d.nms.has_score = true;
  d.nms.score = 0.2f;
  d.mask = Tensor::empty(DataType::kFloat32, {r, cols});
  std::bernoulli_distribution on(0.4);
  for (int64_t i = 0; i < d.mask.numel(); ++i) d.mask.set(i, on(rng) ? 1.5 : 0.0);
  d.mask.set(0, 2.0);
  return d;
}

void check_chained(ExecutionContext& ctx, const ChainedData& d) {
  std::map<std::string, Tensor> in, out;
  in["boxes"] = floats({d.nms.boxes, 4}, d.nms.box_data);
  in["scores"] = floats({1, 2, d.nms.boxes}, d.nms.score_data);
  in["mask"] = d.mask;
  const auto want = naive_nms(d.nms);
  const int64_t n = static_cast<int64_t>(want.size() / 3);
  // Caller-provided, poisoned outputs: one of the right size (written in place, every element),
  // one of a stale size (replaced by a tensor of the size this run produced).
  Tensor given = Tensor::empty(DataType::kInt64, {n, 3});
  given.poison();
  out["selected"] = given;
  Tensor stale = Tensor::empty(DataType::kInt64, {n + 7, 2});
  stale.poison();
  out["nz_t"] = stale;
  ASSERT_TRUE(ctx.run(in, out).is_ok());
  EXPECT_EQ(out["selected"].data(), given.data()) << "an output of the right size is written in place";
  ASSERT_EQ(out["selected"].dims(), (std::vector<int64_t>{n, 3}));
  EXPECT_EQ(values_i64(out["selected"]), want);
  ASSERT_EQ(out["picked"].dims(), (std::vector<int64_t>{n, 4}));
  for (int64_t k = 0; k < n; ++k)
    for (int64_t j = 0; j < 4; ++j)
      EXPECT_EQ(out["picked"].get(k * 4 + j), d.nms.box_data[static_cast<size_t>(want[k * 3 + 2] * 4 + j)]);
  const auto nz = naive_non_zero(d.mask);
  const int64_t m = static_cast<int64_t>(nz[0].size());
  ASSERT_EQ(out["nz_t"].dims(), (std::vector<int64_t>{m, 2}));
  const auto got = values_i64(out["nz_t"]);
  for (int64_t k = 0; k < m; ++k) {
    EXPECT_EQ(got[k * 2], nz[0][k]);
    EXPECT_EQ(got[k * 2 + 1], nz[1][k]);
  }
}

TEST(DataDependentEngine, DownstreamShapesFollowEachRunAndPlansRoundTrip) {
  BuilderConfig cfg;
  cfg.profile["boxes"] = ProfileRange{{1, 4}, {20, 4}, {64, 4}};
  cfg.profile["scores"] = ProfileRange{{1, 2, 1}, {1, 2, 20}, {1, 2, 64}};
  cfg.profile["mask"] = ProfileRange{{1, 1}, {4, 4}, {16, 16}};
  auto eng = Engine::build_from_onnx_bytes(chained_model(), cfg, "chained.onnx");
  ASSERT_TRUE(eng.is_ok()) << eng.status().to_string();
  // The count is a symbol at build time.
  for (const IOInfo& io : (*eng)->outputs())
    if (io.name == "selected") EXPECT_EQ(io.static_dims, (std::vector<int64_t>{-1, 3})) << io.shape;
  auto ctx = (*eng)->create_context();
  ASSERT_TRUE(ctx.is_ok()) << ctx.status().to_string();
  std::mt19937 rng(2024);
  // One context, different data and sizes each run: the output sizes change between runs.
  std::vector<int64_t> counts;
  for (auto [n, r, c] : std::vector<std::array<int64_t, 3>>{{20, 4, 4}, {20, 4, 4}, {50, 9, 3}, {3, 2, 2}}) {
    ChainedData d = chained_data(rng, n, r, c);
    check_chained(**ctx, d);
    counts.push_back(static_cast<int64_t>(naive_nms(d.nms).size() / 3));
  }
  EXPECT_NE(std::adjacent_find(counts.begin(), counts.end(), std::not_equal_to<>()), counts.end())
      << "the data should make the selected count change between runs";
  // Zero selected boxes downstream: Gather over an empty index list.
  {
    ChainedData d = chained_data(rng, 10, 3, 3);
    for (float& s : d.nms.score_data) s *= 0.1f;  // all below the model's score threshold (0.2)
    check_chained(**ctx, d);
  }

  // Plan round trip: the loaded engine runs the same data to the same results.
  auto bytes = (*eng)->serialize();
  ASSERT_TRUE(bytes.is_ok()) << bytes.status().to_string();
  auto loaded = Engine::deserialize(*bytes, "chained.plan");
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  auto ctx2 = (*loaded)->create_context();
  ASSERT_TRUE(ctx2.is_ok());
  for (int i = 0; i < 3; ++i) check_chained(**ctx2, chained_data(rng, 10 + 7 * i, 3 + i, 5 - i));
}

TEST(DataDependentEngine, NonZeroOfAConstantIsFoldedAtBuildTime) {
  OnnxModelBuilder b(13);
  b.input("x", DataType::kFloat32, {3});
  Tensor c = floats({2, 3}, {0, 1, 0, 2, 0, 3});
  b.initializer("c", c);
  b.node("NonZero", {"c"}, {"nz"});
  b.node("Identity", {"x"}, {"y"});
  b.output("nz", DataType::kInt64);
  b.output("y", DataType::kFloat32);
  auto eng = Engine::build_from_onnx_bytes(b.bytes(), BuilderConfig{}, "folded.onnx");
  ASSERT_TRUE(eng.is_ok()) << eng.status().to_string();
  EXPECT_EQ((*eng)->describe().find("NonZero]"), std::string::npos) << (*eng)->describe();
  for (const IOInfo& io : (*eng)->outputs())
    if (io.name == "nz") EXPECT_EQ(io.static_dims, (std::vector<int64_t>{2, 3}));
  auto ctx = (*eng)->create_context();
  ASSERT_TRUE(ctx.is_ok());
  std::map<std::string, Tensor> in{{"x", floats({3}, {1, 2, 3})}}, out;
  ASSERT_TRUE((*ctx)->run(in, out).is_ok());
  EXPECT_EQ(values_i64(out["nz"]), (std::vector<int64_t>{0, 1, 1, 1, 0, 2}));
}

}  // namespace
}  // namespace graft
