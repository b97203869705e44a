// Resize and Pad: shape inference (symbolic and data-dependent), error paths, and the CPU reference
// against formulas written out here on fresh random data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "tests/unit/op_test_util.h"

namespace graft {
namespace {

using testing::OneNode;
using testing::random_tensor;

struct Seeded {
  uint32_t seed = std::random_device{}();
  std::mt19937 rng{seed};
  std::string trace() const { return "seed=" + std::to_string(seed); }
};

void expect_close(const Tensor& got, const std::vector<double>& want, double tol, const std::string& what) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size())) << what;
  int bad = 0;
  for (int64_t i = 0; i < got.numel() && bad < 5; ++i) {
    double g = got.get(i), w = want[static_cast<size_t>(i)];
    if (!(std::fabs(g - w) <= tol * (1.0 + std::fabs(w)))) {
      ADD_FAILURE() << what << ": element " << i << " got " << g << " want " << w;
      ++bad;
    }
  }
}

Tensor floats(std::vector<double> v) {
  return Tensor::from_doubles(DataType::kFloat32, {static_cast<int64_t>(v.size())}, v);
}

// Shape inference only; inputs may be symbolic, and `consts` marks which carry a known value.
struct InferOnly {
  Graph graph;
  Node* node;
  InferOnly(const std::string& op, const std::vector<TensorDesc>& ins, const std::vector<Tensor>& values) {
    node = graph.add_node("n_" + op, op);
    for (size_t i = 0; i < ins.size(); ++i) {
      if (ins[i].dtype == DataType::kUndefined) {
        node->inputs.push_back(nullptr);
        continue;
      }
      Value* v = graph.add_value("in" + std::to_string(i));
      v->desc = ins[i];
      if (i < values.size() && values[i].defined()) v->constant = values[i];
      node->inputs.push_back(v);
    }
    node->outputs.push_back(graph.add_value("out"));
  }
  Result<TensorDesc> run(int opset = 13) {
    std::vector<InferContext::InputInfo> infos;
    for (Value* v : node->inputs) {
      InferContext::InputInfo info;
      if (v) {
        info.desc = &v->desc;
        if (v->constant) info.value = &*v->constant;
      }
      infos.push_back(info);
    }
    InferContext ctx(*node, infos, opset);
    GRAFT_RETURN_IF_ERROR(find_onnx_op(node->op_type)->infer(ctx));
    return ctx.outputs()[0];
  }
};

// ---------------------------------------------------------------------------------------------
// Resize

// Bilinear on the last two axes of an NCHW tensor: the sample point is clamped into the image and
// blended from its four neighbours. `src(o, in, out)` is the coordinate transformation.
template <typename Src>
std::vector<double> bilinear_formula(const Tensor& x, int64_t OH, int64_t OW, Src src) {
  const int64_t NC = x.dims()[0] * x.dims()[1], H = x.dims()[2], W = x.dims()[3];
  std::vector<double> y;
  for (int64_t nc = 0; nc < NC; ++nc)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        double sy = std::clamp(src(oh, H, OH, 0), 0.0, double(H - 1));
        double sx = std::clamp(src(ow, W, OW, 1), 0.0, double(W - 1));
        int64_t y0 = int64_t(std::floor(sy)), x0 = int64_t(std::floor(sx));
        int64_t y1 = std::min(y0 + 1, H - 1), x1 = std::min(x0 + 1, W - 1);
        double fy = sy - double(y0), fx = sx - double(x0);
        auto at = [&](int64_t r, int64_t c) { return x.get((nc * H + r) * W + c); };
        y.push_back((1 - fy) * ((1 - fx) * at(y0, x0) + fx * at(y0, x1)) + fy * ((1 - fx) * at(y1, x0) + fx * at(y1, x1)));
      }
  return y;
}

TEST(ResizeOp, LinearHalfPixelFromScalesRandom) {
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16}) {
    Seeded s;
    SCOPED_TRACE(s.trace() + " dtype=" + dtype_name(dt));
    Tensor x = random_tensor(dt, {2, 3, 4, 5}, s.rng);
    OneNode node("Resize", {x, Tensor(), floats({1, 1, 2, 1.5})});
    node.node->attrs.set("mode", std::string("linear"));
    auto out = node.run(13);
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    ASSERT_EQ((*out)[0].dims(), (std::vector<int64_t>{2, 3, 8, 7}));  // floor(5 * 1.5) = 7
    const double scales[2] = {2.0, 1.5};
    auto half_pixel = [&](int64_t o, int64_t, int64_t, int a) { return (double(o) + 0.5) / scales[a] - 0.5; };
    expect_close((*out)[0], bilinear_formula(x, 8, 7, half_pixel), dt == DataType::kFloat16 ? 4e-3 : 2e-6, "linear");
  }
}

TEST(ResizeOp, LinearAlignCornersAndPytorchHalfPixelFromSizesRandom) {
  for (const char* mode : {"align_corners", "pytorch_half_pixel", "asymmetric"}) {
    Seeded s;
    SCOPED_TRACE(s.trace() + " " + mode);
    Tensor x = random_tensor(DataType::kFloat32, {1, 2, 5, 4}, s.rng);
    // Opset 11 form: roi and (empty) scales present, sizes given. Width 1 exercises the
    // single-output special cases.
    OneNode node("Resize", {x, floats({}), floats({}), Tensor::vector_int64({1, 2, 3, 1})});
    node.node->attrs.set("mode", std::string("linear"));
    node.node->attrs.set("coordinate_transformation_mode", std::string(mode));
    auto out = node.run(11);
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    ASSERT_EQ((*out)[0].dims(), (std::vector<int64_t>{1, 2, 3, 1}));
    std::string m = mode;
    auto src = [&](int64_t o, int64_t in, int64_t out_len, int) {
      double scale = double(out_len) / double(in);
      if (m == "align_corners") return out_len == 1 ? 0.0 : double(o) * double(in - 1) / double(out_len - 1);
      if (m == "pytorch_half_pixel") return out_len > 1 ? (double(o) + 0.5) / scale - 0.5 : 0.0;
      return double(o) / scale;
    };
    expect_close((*out)[0], bilinear_formula(x, 3, 1, src), 2e-6, mode);
  }
}

TEST(ResizeOp, NearestModesOnTies) {
  // asymmetric with scale 2 samples x / 2: ties at every odd output coordinate.
  Tensor x = Tensor::from_doubles(DataType::kFloat32, {1, 1, 1, 3}, {10, 20, 30});
  struct Case {
    const char* mode;
    std::vector<double> want;
  } cases[] = {
      {"round_prefer_floor", {10, 10, 20, 20, 30, 30}},
      {"round_prefer_ceil", {10, 20, 20, 30, 30, 30}},
      {"floor", {10, 10, 20, 20, 30, 30}},
      {"ceil", {10, 20, 20, 30, 30, 30}},
  };
  for (const Case& c : cases) {
    OneNode node("Resize", {x, Tensor(), floats({1, 1, 1, 2})});
    node.node->attrs.set("coordinate_transformation_mode", std::string("asymmetric"));
    node.node->attrs.set("nearest_mode", std::string(c.mode));
    auto out = node.run(13);
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    expect_close((*out)[0], c.want, 0.0, c.mode);
  }
}

TEST(ResizeOp, NearestDownsampleRandomInt64) {
  // Nearest copies elements exactly, whatever the dtype; half_pixel with scale 1/2 samples 2*o + 0.5,
  // which round_prefer_floor maps to 2*o.
  Seeded s;
  SCOPED_TRACE(s.trace());
  Tensor x = random_tensor(DataType::kInt64, {1, 2, 6, 4}, s.rng, -1e6, 1e6);
  OneNode node("Resize", {x, Tensor(), floats({1, 1, 0.5, 0.5})});
  auto out = node.run(13);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  ASSERT_EQ((*out)[0].dims(), (std::vector<int64_t>{1, 2, 3, 2}));
  std::vector<double> want;
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t h = 0; h < 3; ++h)
      for (int64_t w = 0; w < 2; ++w) want.push_back(x.get((c * 6 + 2 * h) * 4 + 2 * w));
  expect_close((*out)[0], want, 0.0, "nearest int64");
}

TEST(ResizeOp, CubicAlongOneAxisRandom) {
  Seeded s;
  SCOPED_TRACE(s.trace());
  Tensor x = random_tensor(DataType::kFloat32, {1, 1, 2, 6}, s.rng);
  OneNode node("Resize", {x, Tensor(), floats({1, 1, 1, 2})});
  node.node->attrs.set("mode", std::string("cubic"));
  node.node->attrs.set("coordinate_transformation_mode", std::string("asymmetric"));
  auto out = node.run(13);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  const double a = -0.75;
  auto kernel = [a](double d) {
    d = std::fabs(d);
    if (d <= 1) return (a + 2) * d * d * d - (a + 3) * d * d + 1;
    if (d < 2) return a * d * d * d - 5 * a * d * d + 8 * a * d - 4 * a;
    return 0.0;
  };
  std::vector<double> want;
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t o = 0; o < 12; ++o) {
      double sx = double(o) / 2.0, acc = 0.0;
      int64_t base = int64_t(std::floor(sx));
      for (int64_t i = base - 1; i <= base + 2; ++i)
        acc += kernel(sx - double(i)) * x.get(r * 6 + std::clamp<int64_t>(i, 0, 5));
      want.push_back(acc);
    }
  expect_close((*out)[0], want, 2e-6, "cubic");
}

TEST(ResizeOp, SymbolicShapes) {
  TensorDesc x(DataType::kFloat32, {Dim::symbol("n"), 3, Dim::symbol("h"), Dim::symbol("w")});
  TensorDesc f4(DataType::kFloat32, {4});
  TensorDesc none;
  {
    InferOnly t("Resize", {x, none, f4}, {Tensor(), Tensor(), floats({1, 1, 2, 0.5})});
    auto out = t.run();
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    const Shape& s = *out->shape;
    EXPECT_TRUE(s[0].same_as(Dim::symbol("n")));
    EXPECT_EQ(s[1], 3);
    EXPECT_EQ(s[2].evaluate({{"h", 7}}), 14);
    EXPECT_EQ(s[3].evaluate({{"w", 7}}), 3);
  }
  {
    InferOnly t("Resize", {x, none, none, TensorDesc(DataType::kInt64, {4})},
                {Tensor(), Tensor(), Tensor(), Tensor::vector_int64({2, 3, 9, 10})});
    auto out = t.run();
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    EXPECT_EQ(shape_to_string(*out->shape), "[2,3,9,10]");
  }
  {
    // Scales not known at build time: the rank is known, the extents are fresh unknown dims.
    InferOnly t("Resize", {x, none, f4}, {});
    auto out = t.run();
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    ASSERT_EQ(out->shape->size(), 4u);
    EXPECT_FALSE((*out->shape)[2].is_const());
  }
  {
    // Opset 18 axes: only H and W listed; N and C keep their dims even with unknown scales.
    InferOnly t("Resize", {x, none, TensorDesc(DataType::kFloat32, {2})}, {});
    t.node->attrs.set("axes", std::vector<int64_t>{2, -1});
    auto out = t.run(18);
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    EXPECT_TRUE((*out->shape)[0].same_as(Dim::symbol("n")));
    EXPECT_EQ((*out->shape)[1], 3);
  }
}

TEST(ResizeOp, Errors) {
  std::mt19937 rng(3);
  Tensor x = random_tensor(DataType::kFloat32, {1, 1, 2, 2}, rng);
  {
    OneNode node("Resize", {x, Tensor(), floats({1, 1, 2, 2}), Tensor::vector_int64({1, 1, 4, 4})});
    auto out = node.run(13);
    ASSERT_FALSE(out.is_ok());
    EXPECT_NE(out.status().message().find("scales"), std::string::npos) << out.status().message();
  }
  {
    OneNode node("Resize", {x, Tensor(), floats({1, 1, 2, 2})});
    node.node->attrs.set("mode", std::string("area"));
    auto out = node.run(13);
    ASSERT_FALSE(out.is_ok());
    EXPECT_EQ(out.status().attribute(), "mode");
  }
  {
    OneNode node("Resize", {x, Tensor(), floats({2, 2})});
    auto out = node.run(13);
    ASSERT_FALSE(out.is_ok());
    EXPECT_NE(out.status().message().find("expected 4"), std::string::npos) << out.status().message();
  }
}

// ---------------------------------------------------------------------------------------------
// Pad

// Source index along one axis for padded position p (already shifted by the begin pad), or -1.
int64_t pad_src_formula(const std::string& mode, int64_t p, int64_t n) {
  if (p >= 0 && p < n) return p;
  if (mode == "constant") return -1;
  if (mode == "edge") return p < 0 ? 0 : n - 1;
  if (mode == "wrap") return ((p % n) + n) % n;
  // reflect: mirror about the first and last element until inside
  while (p < 0 || p >= n) p = p < 0 ? -p : 2 * (n - 1) - p;
  return p;
}

std::vector<double> pad3d_formula(const Tensor& x, const std::string& mode, std::vector<int64_t> pb,
                                  std::vector<int64_t> pe, double value) {
  std::vector<int64_t> d = x.dims();
  std::vector<double> y;
  for (int64_t i = 0; i < d[0] + pb[0] + pe[0]; ++i)
    for (int64_t j = 0; j < d[1] + pb[1] + pe[1]; ++j)
      for (int64_t k = 0; k < d[2] + pb[2] + pe[2]; ++k) {
        int64_t a = pad_src_formula(mode, i - pb[0], d[0]), b = pad_src_formula(mode, j - pb[1], d[1]),
                c = pad_src_formula(mode, k - pb[2], d[2]);
        y.push_back(a < 0 || b < 0 || c < 0 ? value : x.get((a * d[1] + b) * d[2] + c));
      }
  return y;
}

TEST(PadOp, AllModesRandom) {
  for (const char* mode : {"constant", "reflect", "edge", "wrap"}) {
    Seeded s;
    SCOPED_TRACE(s.trace() + " " + mode);
    Tensor x = random_tensor(DataType::kFloat32, {3, 4, 5}, s.rng);
    // Begins then ends; the negative end on axis 0 crops.
    std::vector<int64_t> pads = {1, 0, 2, -1, 3, 2};
    Tensor value = Tensor::from_doubles(DataType::kFloat32, {}, {0.625});
    OneNode node("Pad", {x, Tensor::vector_int64(pads), value});
    node.node->attrs.set("mode", std::string(mode));
    auto out = node.run(19);
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    ASSERT_EQ((*out)[0].dims(), (std::vector<int64_t>{3, 7, 9}));
    expect_close((*out)[0], pad3d_formula(x, mode, {1, 0, 2}, {-1, 3, 2}, 0.625), 0.0, mode);
  }
}

TEST(PadOp, DefaultZeroAndIntegerData) {
  Seeded s;
  SCOPED_TRACE(s.trace());
  Tensor x = random_tensor(DataType::kInt64, {2, 3}, s.rng, 1, 1e9);
  OneNode node("Pad", {x, Tensor::vector_int64({0, 1, 2, 0})});
  auto out = node.run(11);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  ASSERT_EQ((*out)[0].dims(), (std::vector<int64_t>{4, 4}));
  Tensor x3 = x.reshaped({1, 2, 3});
  expect_close((*out)[0], pad3d_formula(x3, "constant", {0, 0, 1}, {0, 2, 0}, 0.0), 0.0, "int64");
}

TEST(PadOp, Opset18Axes) {
  Seeded s;
  SCOPED_TRACE(s.trace());
  Tensor x = random_tensor(DataType::kFloat16, {2, 3, 4}, s.rng);
  // Axes {-1, 0}: pads are begins (axis -1, axis 0) then ends.
  OneNode node("Pad", {x, Tensor::vector_int64({1, 2, 0, 1}), Tensor(), Tensor::vector_int64({-1, 0})});
  node.node->attrs.set("mode", std::string("edge"));
  auto out = node.run(18);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  ASSERT_EQ((*out)[0].dims(), (std::vector<int64_t>{5, 3, 5}));
  expect_close((*out)[0], pad3d_formula(x, "edge", {2, 0, 1}, {1, 0, 0}, 0.0), 0.0, "axes");
}

TEST(PadOp, SymbolicAndUnknownShapes) {
  TensorDesc x(DataType::kFloat32, {Dim::symbol("n"), 3, Dim::symbol("w")});
  TensorDesc pads(DataType::kInt64, {6});
  {
    InferOnly t("Pad", {x, pads}, {Tensor(), Tensor::vector_int64({0, 1, 2, 0, 1, 3})});
    auto out = t.run(13);
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    EXPECT_TRUE((*out->shape)[0].same_as(Dim::symbol("n")));
    EXPECT_EQ((*out->shape)[1], 5);
    EXPECT_EQ((*out->shape)[2].evaluate({{"w", 10}}), 15);
  }
  {
    InferOnly t("Pad", {x, pads}, {});
    auto out = t.run(13);
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    ASSERT_EQ(out->shape->size(), 3u);
    EXPECT_FALSE((*out->shape)[1].is_const());
  }
}

TEST(PadOp, Errors) {
  std::mt19937 rng(5);
  Tensor x = random_tensor(DataType::kFloat32, {2, 3}, rng);
  {
    OneNode node("Pad", {x, Tensor::vector_int64({1, 1, 1})});
    auto out = node.run(13);
    ASSERT_FALSE(out.is_ok());
    EXPECT_NE(out.status().message().find("'pads'"), std::string::npos) << out.status().message();
  }
  {
    OneNode node("Pad", {x, Tensor::vector_int64({1, 1, 1, 1})});
    node.node->attrs.set("mode", std::string("mirror"));
    auto out = node.run(13);
    ASSERT_FALSE(out.is_ok());
    EXPECT_EQ(out.status().attribute(), "mode");
  }
  {
    OneNode node("Pad", {x, Tensor::vector_int64({0, -4, 0, 0})});
    auto out = node.run(13);
    ASSERT_FALSE(out.is_ok());
    EXPECT_NE(out.status().message().find("below zero"), std::string::npos) << out.status().message();
  }
}

}  // namespace
}  // namespace graft
