// CUDA ConvTranspose (cuDNN backward data + bias kernel) vs the CPU reference, float32 and float16,
// and the forms its supports() keeps on the CPU (pads cuDNN cannot express symmetrically).
#include "cuda_kernel_harness.h"

namespace graft::testing {
namespace {

struct ConvTransposeSpec {
  const char* label;
  std::vector<int64_t> x, w;  // X [N, C, H, W], W [C, M/group, kH, kW]
  int64_t group;
  bool bias;
  AttributeMap attrs;
};

AttributeMap window(std::vector<int64_t> strides, std::vector<int64_t> pads, std::vector<int64_t> dilations) {
  AttributeMap a;
  a.set("strides", strides);
  a.set("pads", pads);
  a.set("dilations", dilations);
  return a;
}

AttributeMap with(AttributeMap a, const char* name, std::vector<int64_t> v) {
  a.set(name, v);
  return a;
}

AttributeMap with(AttributeMap a, const char* name, const char* v) {
  a.set(name, std::string(v));
  return a;
}

TEST(CudaConvTranspose, Registered) {
  const cuda::CudaOp* op = cuda::find_cuda_op("ConvTranspose");
  ASSERT_NE(op, nullptr);
  EXPECT_NE(op->supports, nullptr);
  EXPECT_NE(op->run, nullptr);
  EXPECT_NE(op->workspace_bytes, nullptr);  // cuDNN's backward-data algorithms take scratch
}

TEST(CudaConvTranspose, MatchesCpuReference) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const ConvTransposeSpec specs[] = {
      {"stride 1, pads 1, bias", {2, 4, 7, 6}, {4, 3, 3, 3}, 1, true, window({1, 1}, {1, 1, 1, 1}, {1, 1})},
      {"stride 2, pads 1", {1, 3, 5, 6}, {3, 5, 3, 3}, 1, false, window({2, 2}, {1, 1, 1, 1}, {1, 1})},
      {"stride 2, no pads, 4x4 kernel, bias", {2, 5, 4, 3}, {5, 6, 4, 4}, 1, true, window({2, 2}, {0, 0, 0, 0}, {1, 1})},
      {"strides 2x1, kernel 4x3", {1, 3, 5, 6}, {3, 2, 4, 3}, 1, true, window({2, 1}, {1, 1, 1, 1}, {1, 1})},
      {"dilation 2, pads 2, bias", {1, 4, 6, 7}, {4, 2, 3, 3}, 1, true, window({1, 1}, {2, 2, 2, 2}, {2, 2})},
      {"dilation 2, stride 2", {2, 3, 5, 5}, {3, 4, 3, 3}, 1, false, window({2, 2}, {1, 1, 1, 1}, {2, 2})},
      {"group 2, stride 2, bias", {2, 4, 5, 5}, {4, 3, 3, 3}, 2, true, window({2, 2}, {0, 0, 0, 0}, {1, 1})},
      {"group 2, pads 1", {1, 6, 6, 4}, {6, 2, 3, 3}, 2, false, window({1, 1}, {1, 1, 1, 1}, {1, 1})},
      {"depthwise (group = C), stride 2", {1, 4, 5, 6}, {4, 1, 3, 3}, 4, true, window({2, 2}, {1, 1, 1, 1}, {1, 1})},
      // output_padding below the stride adds trailing rows/cols that cuDNN computes as part of dx.
      {"stride 2, pads 1, output_padding 1, bias", {2, 3, 5, 4}, {3, 4, 3, 3}, 1, true,
       with(window({2, 2}, {1, 1, 1, 1}, {1, 1}), "output_padding", {1, 1})},
      // SAME_LOWER with stride 2 and a 3x3 kernel pads 1 at the begin and 0 at the end: in range.
      {"auto_pad SAME_LOWER, stride 2", {1, 3, 4, 5}, {3, 2, 3, 3}, 1, true,
       with(with(AttributeMap{}, "strides", {2, 2}), "auto_pad", "SAME_LOWER")},
      // SAME_UPPER with an even kernel pads evenly.
      {"auto_pad SAME_UPPER, stride 2, kernel 4", {1, 2, 4, 4}, {2, 3, 4, 4}, 1, false,
       with(with(AttributeMap{}, "strides", {2, 2}), "auto_pad", "SAME_UPPER")},
      // output_shape one short of the natural extent: begin pad 1, end pad 0.
      {"output_shape", {1, 2, 4, 4}, {2, 3, 3, 3}, 1, true, with(window({2, 2}, {0, 0, 0, 0}, {1, 1}), "output_shape", {8, 8})},
      // What cuDNN cannot pad, on the direct kernel: asymmetric pads, output_padding past the
      // stride (below the dilation), SAME_UPPER with an odd total.
      {"asymmetric pads, bias", {2, 3, 5, 6}, {3, 4, 3, 3}, 1, true, window({1, 1}, {1, 0, 0, 2}, {1, 1})},
      {"output_padding 1 at stride 1, dilation 2", {1, 4, 5, 5}, {4, 2, 3, 3}, 2, false,
       with(window({1, 1}, {1, 1, 1, 1}, {2, 2}), "output_padding", {1, 1})},
      {"auto_pad SAME_UPPER, stride 2, kernel 3", {1, 3, 4, 5}, {3, 2, 3, 3}, 1, true,
       with(with(AttributeMap{}, "strides", {2, 2}), "auto_pad", "SAME_UPPER")},
      // 3-D, direct kernel.
      {"3-D stride 2, pads 1, bias", {1, 3, 3, 4, 5}, {3, 2, 3, 3, 3}, 1, true, window({2, 2, 2}, {1, 1, 1, 1, 1, 1}, {1, 1, 1})},
      // 1-D, run as 2-D with a height of 1: a vocoder's upsampling layer, and groups with SAME_LOWER.
      {"1-D stride 4, kernel 8, pads 2, bias", {2, 6, 9}, {6, 4, 8}, 1, true, window({4}, {2, 2}, {1})},
      {"1-D group 2, SAME_LOWER, stride 2", {1, 4, 7}, {4, 3, 3}, 2, false,
       with(with(AttributeMap{}, "strides", {2}), "auto_pad", "SAME_LOWER")},
  };
  for (const auto& s : specs) {
    const int64_t m = s.w[1] * s.group;
    KernelCase c{"ConvTranspose", {rnd(rng, s.x), rnd(rng, s.w)}};
    if (s.bias) c.inputs.push_back(rnd(rng, {m}));
    c.attrs = s.attrs;
    c.attrs.set("group", s.group);
    c.tol32 = 1e-4;
    c.label = s.label;
    run_float_dtypes(c, seed);
  }
}

// A larger problem, so cuDNN's heuristic picks its tiled algorithms rather than the small-problem ones.
TEST(CudaConvTranspose, LargerUpsampling) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  KernelCase c{"ConvTranspose", {rnd(rng, {2, 32, 16, 16}), rnd(rng, {32, 16, 4, 4}), rnd(rng, {16})}};
  c.attrs = window({2, 2}, {1, 1, 1, 1}, {1, 1});
  c.tol32 = 1e-4;
  c.label = "32->16 channels, 16x16 -> 32x32";
  run_float_dtypes(c, seed);
}

// The node as the engine asks about it at build time (gpu_supports: the op's dtype keys, then its
// own checks): float inputs of these shapes.
bool supports(const std::vector<int64_t>& x, const std::vector<int64_t>& w, const AttributeMap& attrs,
              std::string* why, DataType dt = DataType::kFloat32) {
  std::mt19937 rng(1);
  OneNode n("ConvTranspose", {rnd(rng, x, -1, 1, dt), rnd(rng, w, -1, 1, dt)});
  n.node->attrs = attrs;
  const cuda::CudaOp* op = nullptr;
  return cuda::gpu_supports(*n.node, &op, why) && op == cuda::find_cuda_op("ConvTranspose");
}

// Every pad form runs on the GPU: cuDNN where it can express the pads, the direct kernel where not
// (MatchesCpuReference runs both); 1-D to 3-D; a 4-D spatial problem does not.
TEST(CudaConvTranspose, SupportsEveryPadFormAndOneToThreeSpatialAxes) {
  ASSERT_NE(cuda::find_cuda_op("ConvTranspose"), nullptr);
  const std::vector<int64_t> x{1, 3, 6, 6}, w{3, 2, 3, 3};
  struct Case {
    const char* label;
    AttributeMap attrs;
  };
  const Case cases[] = {
      {"symmetric pads", window({1, 1}, {1, 1, 1, 1}, {1, 1})},
      {"asymmetric pads (begin > end)", window({1, 1}, {1, 1, 0, 0}, {1, 1})},
      {"asymmetric pads (end > begin)", window({1, 1}, {0, 1, 1, 1}, {1, 1})},
      {"output_padding >= stride (below the dilation)", with(window({1, 1}, {1, 1, 1, 1}, {2, 2}), "output_padding", {1, 0})},
      {"auto_pad SAME_UPPER, odd total", with(window({2, 2}, {0, 0, 0, 0}, {1, 1}), "auto_pad", "SAME_UPPER")},
      {"output_shape beyond the natural extent", with(window({1, 1}, {0, 0, 0, 0}, {1, 1}), "output_shape", {10, 10})},
  };
  for (const auto& c : cases) {
    std::string why;
    EXPECT_TRUE(supports(x, w, c.attrs, &why)) << c.label << ": " << why;
  }
  std::string why;
  EXPECT_TRUE(supports({1, 3, 6}, {3, 2, 3}, AttributeMap{}, &why)) << "1-D: " << why;
  EXPECT_TRUE(supports({1, 3, 4, 4, 4}, {3, 2, 3, 3, 3}, AttributeMap{}, &why)) << "3-D: " << why;
  EXPECT_TRUE(supports(x, w, AttributeMap{}, &why, DataType::kBFloat16)) << "bfloat16: " << why;
  EXPECT_FALSE(supports({1, 3, 3, 3, 3, 3}, {3, 2, 2, 2, 2, 2}, AttributeMap{}, &why)) << "4 spatial axes";
  EXPECT_NE(why.find("1-D, 2-D and 3-D"), std::string::npos) << why;
}

// A symbolic input extent: every form runs on the GPU (cuDNN or the direct kernel is chosen per run,
// when the extents are known).
TEST(CudaConvTranspose, SupportsWithSymbolicExtents) {
  std::mt19937 rng(1);
  OneNode n("ConvTranspose", {rnd(rng, {1, 3, 6, 6}), rnd(rng, {3, 2, 3, 3})});
  n.node->inputs[0]->desc = TensorDesc(DataType::kFloat32, {Dim::symbol("n"), Dim(3), Dim::symbol("h"), Dim::symbol("w")});
  const cuda::CudaOp* op = cuda::find_cuda_op("ConvTranspose");
  ASSERT_NE(op, nullptr);
  std::string why;
  for (const AttributeMap& a : {window({2, 2}, {1, 1, 1, 1}, {1, 1}), window({1, 1}, {1, 0, 0, 0}, {1, 1}),
                                with(window({2, 2}, {0, 0, 0, 0}, {1, 1}), "output_shape", {12, 12})}) {
    n.node->attrs = a;
    EXPECT_TRUE(op->supports(*n.node, &why)) << why;
  }
}

}  // namespace
}  // namespace graft::testing
