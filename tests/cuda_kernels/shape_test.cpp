// CUDA data-movement ops vs the CPU reference: Reshape-like copies, Transpose, Expand, Concat, Split,
// Slice, Gather, Tile, Pad (constant) and Resize (nearest / linear).
#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>

#include "backends/cuda/shape_kernels.cuh"
#include "cuda_kernel_harness.h"
#include "ops/views/views.h"

namespace graft::testing {
namespace {

TEST(CudaShape, CopiesTransposeExpand) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  run_float_dtypes(KernelCase{"Reshape", {rnd(rng, {3, 4, 5}), Tensor::vector_int64({5, -1})}}, seed);
  run_float_dtypes(KernelCase{"Unsqueeze", {rnd(rng, {3, 5}), Tensor::vector_int64({0, 2})}}, seed);
  run_float_dtypes(KernelCase{"Squeeze", {rnd(rng, {3, 1, 5}), Tensor::vector_int64({1})}}, seed);
  run_float_dtypes(KernelCase{"Flatten", {rnd(rng, {3, 4, 5})}}, seed);
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> perms = {
      {{3, 4, 5}, {2, 0, 1}}, {{2, 3, 4, 5, 6}, {4, 2, 0, 3, 1}}, {{7}, {0}}, {{2, 1, 3, 1}, {3, 2, 1, 0}}, {{5, 6}, {}}};
  for (const auto& [d, p] : perms) {
    KernelCase c{"Transpose", {rnd(rng, d)}};
    if (!p.empty()) c.attrs.set("perm", p);
    run_float_dtypes(c, seed);
  }
  run_kernel_case(KernelCase{"Transpose", {rnd(rng, {3, 4, 5}, -9, 9, DataType::kInt64)}}, DataType::kFloat32, seed);
  run_float_dtypes(KernelCase{"Expand", {rnd(rng, {3, 1}), Tensor::vector_int64({2, 3, 4})}}, seed);
  run_float_dtypes(KernelCase{"Expand", {rnd(rng, {1, 5, 1, 1, 2}), Tensor::vector_int64({5, 3, 4, 1})}}, seed);
}

Tensor ints(std::mt19937& rng, std::vector<int64_t> dims) { return rnd(rng, std::move(dims), -1000, 1000, DataType::kInt64); }

TEST(CudaShape, Concat) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  struct Spec {
    std::vector<std::vector<int64_t>> in;
    int64_t axis;
  };
  const std::vector<Spec> specs = {{{{2, 3, 4}, {2, 5, 4}}, 1},
                                   {{{3, 4}, {1, 4}, {6, 4}}, 0},
                                   {{{2, 3, 4}, {2, 3, 1}, {2, 3, 7}}, -1},
                                   {{{2, 3, 4, 5}, {2, 3, 0, 5}, {2, 3, 2, 5}}, 2},
                                   {{{7}, {9}}, 0}};
  for (const Spec& sp : specs) {
    KernelCase c{"Concat", {}};
    for (const auto& d : sp.in) c.inputs.push_back(rnd(rng, d));
    c.attrs.set("axis", sp.axis);
    c.label = "axis " + std::to_string(sp.axis);
    run_float_dtypes(c, seed, /*bf16=*/true);
  }
  KernelCase c{"Concat", {ints(rng, {2, 3}), ints(rng, {2, 2})}};
  c.attrs.set("axis", int64_t{1});
  run_kernel_case(c, DataType::kFloat32, seed);
  KernelCase b{"Concat", {rnd_bool(rng, {2, 3}), rnd_bool(rng, {4, 3})}};
  b.attrs.set("axis", int64_t{0});
  run_kernel_case(b, DataType::kFloat32, seed);
}

// Concat and Split move every part in one launch, in groups of kMaxBatchedCopies (32) parts with
// one access width per group: DenseNet-like part counts past one group, parts of 16-byte, 8-byte
// and odd widths mixed in a group (the group falls back to the narrowest), batch 1 (one row) and
// batch 3 (pitched rows).
TEST(CudaShape, ConcatSplitManyParts) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (int64_t batch : {1, 3}) {
    for (int parts : {33, 70}) {
      KernelCase c{"Concat", {}};
      int64_t channels = 0;
      for (int i = 0; i < parts; ++i) {
        const int64_t ch = i % 7 == 3 ? 3 : (i % 2 ? 8 : 32);  // a few odd widths among aligned ones
        c.inputs.push_back(rnd(rng, {batch, ch, 5, 4}));
        channels += ch;
      }
      c.attrs.set("axis", int64_t{1});
      c.label = std::to_string(parts) + " parts, batch " + std::to_string(batch);
      run_float_dtypes(c, seed);
      KernelCase sp{"Split", {rnd(rng, {batch, channels, 2, 2})}};
      std::vector<int64_t> sizes;
      for (const Tensor& t : c.inputs) sizes.push_back(t.dims()[1]);
      sp.inputs.push_back(Tensor::vector_int64(sizes));
      sp.attrs.set("axis", int64_t{1});
      sp.opset = 13;
      sp.num_outputs = parts;
      sp.label = c.label;
      run_float_dtypes(sp, seed);
    }
  }
}

// GraftConcatSlices (torch.roll's Slice, Slice, Concat read in place) against its CPU reference:
// a roll along axis 1 (the same tensor's tail then head), a mix of whole inputs and slices with
// negative and clamped bounds along axis 2, an empty slice, and 40 parts (two launches).
TEST(CudaShape, GraftConcatSlices) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const int64_t big = std::numeric_limits<int64_t>::max();
  {
    Tensor x = rnd(rng, {2, 6, 5, 4});
    KernelCase c{"GraftConcatSlices", {x, x}};
    c.attrs.set("axis", int64_t{1});
    c.attrs.set("starts", std::vector<int64_t>{-2, 0});
    c.attrs.set("ends", std::vector<int64_t>{big, -2});
    c.label = "roll by 2";
    run_float_dtypes(c, seed, /*bf16=*/true);
  }
  {
    KernelCase c{"GraftConcatSlices", {rnd(rng, {3, 2, 4, 8}), rnd(rng, {3, 2, 7, 8}), rnd(rng, {3, 2, 5, 8}),
                                       rnd(rng, {3, 2, 3, 8})}};
    c.attrs.set("axis", int64_t{-2});
    c.attrs.set("starts", std::vector<int64_t>{0, 1, -100, 2});
    c.attrs.set("ends", std::vector<int64_t>{big, -3, 2, 2});  // whole, [1:4], clamped [0:2], empty
    c.label = "mixed";
    run_float_dtypes(c, seed);
  }
  {
    KernelCase c{"GraftConcatSlices", {}};
    std::vector<int64_t> starts, ends;
    for (int i = 0; i < 40; ++i) {
      c.inputs.push_back(rnd(rng, {2, 3 + i % 4, 6}));
      starts.push_back(i % 3 == 0 ? 1 : 0);
      ends.push_back(big);
    }
    c.attrs.set("axis", int64_t{1});
    c.attrs.set("starts", starts);
    c.attrs.set("ends", ends);
    c.label = "40 parts";
    run_float_dtypes(c, seed);
  }
}

TEST(CudaShape, Split) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  {  // opset 11: split attribute
    KernelCase c{"Split", {rnd(rng, {4, 9, 3})}};
    c.attrs.set("axis", int64_t{1});
    c.attrs.set("split", std::vector<int64_t>{2, 0, 3, 4});
    c.opset = 11;
    c.num_outputs = 4;
    c.label = "opset 11 attribute";
    run_float_dtypes(c, seed);
  }
  {  // opset 13: split input (host)
    KernelCase c{"Split", {rnd(rng, {5, 6, 7}), Tensor::vector_int64({1, 4})}};
    c.attrs.set("axis", int64_t{0});
    c.opset = 13;
    c.num_outputs = 2;
    c.label = "opset 13 input";
    run_float_dtypes(c, seed);
  }
  {  // opset 13: equal parts, negative axis
    KernelCase c{"Split", {rnd(rng, {3, 4, 6})}};
    c.attrs.set("axis", int64_t{-1});
    c.opset = 13;
    c.num_outputs = 3;
    c.label = "opset 13 equal";
    run_float_dtypes(c, seed);
  }
  {  // opset 18: num_outputs with a shorter last chunk
    KernelCase c{"Split", {rnd(rng, {2, 11, 3})}};
    c.attrs.set("axis", int64_t{1});
    c.attrs.set("num_outputs", int64_t{3});
    c.opset = 18;
    c.num_outputs = 3;
    c.label = "opset 18 num_outputs";
    run_float_dtypes(c, seed);
  }
  KernelCase c{"Split", {ints(rng, {6, 2}), Tensor::vector_int64({2, 4})}};
  c.opset = 13;
  c.num_outputs = 2;
  run_kernel_case(c, DataType::kFloat32, seed);
}

TEST(CudaShape, Slice) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const int64_t big = std::numeric_limits<int64_t>::max();
  struct Spec {
    std::vector<int64_t> dims, starts, ends, axes, steps;
  };
  const std::vector<Spec> specs = {
      {{5, 6, 7}, {1, 2}, {4, 6}, {}, {}},
      {{5, 6, 7}, {0, -1}, {big, -big}, {2, 1}, {2, -1}},
      {{5, 6, 7}, {-2, 4}, {-6, 0}, {0, -1}, {-1, -2}},
      {{4, 10}, {3}, {big}, {1}, {4}},
      {{4, 10}, {9}, {-big}, {-1}, {-3}},
      {{4, 10}, {2}, {2}, {1}, {1}},  // empty
      {{3, 1, 4, 1, 5, 2, 3, 2}, {1, 0, -1}, {3, 5, 0}, {0, 4, 7}, {1, 2, -1}},  // rank 8 with unit axes
      {{6, 8}, {0, 7}, {6, 0}, {0, 1}, {100, -100}},  // |step| beyond the extent
  };
  for (const Spec& sp : specs) {
    KernelCase c{"Slice", {rnd(rng, sp.dims), Tensor::vector_int64(sp.starts), Tensor::vector_int64(sp.ends)}};
    if (!sp.axes.empty()) c.inputs.push_back(Tensor::vector_int64(sp.axes));
    if (!sp.steps.empty()) c.inputs.push_back(Tensor::vector_int64(sp.steps));
    run_float_dtypes(c, seed);
  }
  KernelCase c{"Slice", {ints(rng, {4, 5}), Tensor::vector_int64({3, 1}), Tensor::vector_int64({0, 5}),
                         Tensor::vector_int64({0, 1}), Tensor::vector_int64({-1, 2})}};
  run_kernel_case(c, DataType::kFloat32, seed);
}

TEST(CudaShape, Gather) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  struct Spec {
    std::vector<int64_t> data, idx;
    int64_t axis;
    DataType idx_dt;
  };
  const std::vector<Spec> specs = {{{7, 5}, {4}, 0, DataType::kInt64},
                                   {{3, 6, 4}, {2, 5}, 1, DataType::kInt64},
                                   {{3, 6, 4}, {9}, -1, DataType::kInt32},
                                   {{2, 3, 4, 5}, {}, 2, DataType::kInt64},  // scalar index
                                   {{10}, {3, 3}, 0, DataType::kInt32}};
  for (const Spec& sp : specs) {
    const int64_t a = sp.axis < 0 ? sp.axis + static_cast<int64_t>(sp.data.size()) : sp.axis;
    const double n = static_cast<double>(sp.data[static_cast<size_t>(a)]);
    KernelCase c{"Gather", {rnd(rng, sp.data), rnd(rng, sp.idx, -n, n, sp.idx_dt)}};  // negatives included
    c.attrs.set("axis", sp.axis);
    c.label = "axis " + std::to_string(sp.axis);
    run_float_dtypes(c, seed);
  }
  KernelCase c{"Gather", {ints(rng, {5, 3}), rnd(rng, {6}, -5, 5, DataType::kInt64)}};
  run_kernel_case(c, DataType::kFloat32, seed);
}

TEST(CudaShape, Tile) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> specs = {
      {{3, 4}, {2, 3}}, {{2, 1, 3}, {1, 4, 2}}, {{5}, {3}}, {{2, 3}, {0, 2}}, {{2, 3, 2, 2}, {2, 1, 3, 1}}};
  for (const auto& [d, r] : specs) run_float_dtypes(KernelCase{"Tile", {rnd(rng, d), Tensor::vector_int64(r)}}, seed);
  run_kernel_case(KernelCase{"Tile", {ints(rng, {2, 3}), Tensor::vector_int64({3, 2})}}, DataType::kFloat32, seed);
}

TEST(CudaShape, PadConstant) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-3, 3);
  {  // zero fill
    KernelCase c{"Pad", {rnd(rng, {2, 3, 4}), Tensor::vector_int64({0, 1, 2, 1, 0, 3})}};
    run_float_dtypes(c, seed);
  }
  {  // a constant value, negative pads crop
    KernelCase c{"Pad", {rnd(rng, {3, 5, 4}), Tensor::vector_int64({1, -2, 0, 2, 1, -1}),
                         Tensor::from_doubles(DataType::kFloat32, {}, {u(rng)})}};
    c.attrs.set("mode", std::string("constant"));
    run_float_dtypes(c, seed);
  }
  {  // opset 18 axes input
    KernelCase c{"Pad", {rnd(rng, {2, 3, 4, 5}), Tensor::vector_int64({1, 2, 3, 0}),
                         Tensor::from_doubles(DataType::kFloat32, {}, {u(rng)}), Tensor::vector_int64({-1, 1})}};
    c.opset = 18;
    run_float_dtypes(c, seed);
  }
  KernelCase c{"Pad", {ints(rng, {3, 2}), Tensor::vector_int64({2, 1, 1, 0}), Tensor::scalar_int64(77)}};
  run_kernel_case(c, DataType::kFloat32, seed);
}

TEST(CudaShape, Resize) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  auto scales = [](std::vector<double> s) {
    return Tensor::from_doubles(DataType::kFloat32, {static_cast<int64_t>(s.size())}, s);
  };
  const std::vector<std::string> coords = {"half_pixel",    "half_pixel_symmetric", "pytorch_half_pixel",
                                           "align_corners", "asymmetric",           "tf_half_pixel_for_nn"};
  const std::vector<std::string> nearest_modes = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  const std::vector<std::vector<double>> scale_sets = {{1, 1, 2, 2}, {1, 1, 0.5, 0.5}, {1, 1, 1.7, 0.6},
                                                       {1, 1, 3, 1}};
  for (const std::string& mode : {std::string("nearest"), std::string("linear")})
    for (const std::string& coord : coords)
      for (size_t si = 0; si < scale_sets.size(); ++si)
        for (size_t ni = 0; ni < (mode == "nearest" ? nearest_modes.size() : 1); ++ni) {
          if (mode == "linear" && coord == "tf_half_pixel_for_nn") continue;
          KernelCase c{"Resize", {rnd(rng, {2, 3, 7, 10}), Tensor(), scales(scale_sets[si])}};
          c.keep_f32 = {2};
          c.opset = 19;
          c.attrs.set("mode", mode);
          c.attrs.set("coordinate_transformation_mode", coord);
          if (mode == "nearest") c.attrs.set("nearest_mode", nearest_modes[ni]);
          c.label = mode + " " + coord + " scales #" + std::to_string(si) + " " + (mode == "nearest" ? nearest_modes[ni] : "");
          run_float_dtypes(c, seed, /*bf16=*/mode == "linear");
        }
  // sizes (exact resized length) for both modes and every transform
  for (const std::string& mode : {std::string("nearest"), std::string("linear")})
    for (const std::string& coord : coords) {
      if (mode == "linear" && coord == "tf_half_pixel_for_nn") continue;
      KernelCase c{"Resize", {rnd(rng, {1, 2, 6, 9}), Tensor(), Tensor(), Tensor::vector_int64({1, 2, 13, 4})}};
      c.opset = 19;
      c.attrs.set("mode", mode);
      c.attrs.set("coordinate_transformation_mode", coord);
      c.label = mode + " " + coord + " sizes";
      run_float_dtypes(c, seed);
    }
  {  // opset 18 axes and keep_aspect_ratio_policy
    KernelCase c{"Resize", {rnd(rng, {1, 3, 8, 6}), Tensor(), Tensor(), Tensor::vector_int64({5, 9})}};
    c.opset = 18;
    c.attrs.set("mode", std::string("linear"));
    c.attrs.set("axes", std::vector<int64_t>{2, 3});
    c.attrs.set("keep_aspect_ratio_policy", std::string("not_larger"));
    c.label = "axes + not_larger";
    run_float_dtypes(c, seed);
  }
  {  // linear on every axis of a rank-3 tensor, align_corners
    KernelCase c{"Resize", {rnd(rng, {3, 4, 5}), Tensor(), scales({2, 1.5, 0.8})}};
    c.keep_f32 = {2};
    c.attrs.set("mode", std::string("linear"));
    c.attrs.set("coordinate_transformation_mode", std::string("align_corners"));
    c.label = "rank 3 all axes";
    run_float_dtypes(c, seed);
  }
  // A segmentation head's upsampling to the input size (28x28 to 224x224, 21 classes) and an FPN's
  // nearest x2, big enough for many blocks of the 2-D kernels; and a 1-D resize of the last axis alone,
  // which the general kernel keeps.
  for (const std::string& mode : {std::string("linear"), std::string("nearest")}) {
    KernelCase c{"Resize", {rnd(rng, {2, 21, 28, 28}), Tensor(), Tensor(), Tensor::vector_int64({2, 21, 224, 224})}};
    c.opset = 19;
    c.attrs.set("mode", mode);
    c.attrs.set("coordinate_transformation_mode", std::string(mode == "linear" ? "half_pixel" : "asymmetric"));
    if (mode == "nearest") c.attrs.set("nearest_mode", std::string("floor"));
    c.label = mode + " segmentation head 28 -> 224";
    run_float_dtypes(c, seed, /*bf16=*/mode == "linear");
  }
  {
    KernelCase c{"Resize", {rnd(rng, {2, 3, 5, 17}), Tensor(), scales({1, 1, 1, 1.9})}};
    c.keep_f32 = {2};
    c.attrs.set("mode", std::string("linear"));
    c.label = "linear last axis only";
    run_float_dtypes(c, seed);
  }
  {  // nearest on int64 data is a byte copy
    KernelCase c{"Resize", {ints(rng, {1, 2, 5, 4}), Tensor(), scales({1, 1, 1.5, 2.5})}};
    c.attrs.set("mode", std::string("nearest"));
    run_kernel_case(c, DataType::kFloat32, seed);
  }
}

TEST(CudaShape, SupportsRejects) {
  // No GPU needed: gpu_supports (the op's dtype keys, then its own checks) runs on the host.
  auto supported = [](const std::string& op, std::vector<Tensor> in, const AttributeMap& attrs) {
    OneNode n(op, std::move(in));
    n.node->attrs = attrs;
    n.node->opset = 19;
    n.node->outputs[0]->desc = TensorDesc(n.node->inputs[0]->desc.dtype, Shape{});
    const cuda::CudaOp* o = nullptr;
    std::string why;
    return cuda::gpu_supports(*n.node, &o, &why) && o == cuda::find_cuda_op(op);
  };
  std::mt19937 rng(1);
  const Tensor x = rnd(rng, {1, 2, 3, 4});
  // Every Pad mode and every Resize form run on the GPU; tf_crop_and_resize only in the float types
  // (the general kernel writes its extrapolation value).
  AttributeMap a;
  a.set("mode", std::string("reflect"));
  EXPECT_TRUE(supported("Pad", {x, Tensor::vector_int64({0, 0, 1, 1, 0, 0, 1, 1})}, a));
  AttributeMap cubic;
  cubic.set("mode", std::string("cubic"));
  EXPECT_TRUE(supported("Resize", {x, Tensor(), Tensor::from_doubles(DataType::kFloat32, {4}, {1, 1, 2, 2})}, cubic));
  cubic.set("antialias", int64_t{1});
  EXPECT_TRUE(supported("Resize", {x, Tensor(), Tensor::from_doubles(DataType::kFloat32, {4}, {1, 1, 2, 2})}, cubic));
  AttributeMap crop;
  crop.set("coordinate_transformation_mode", std::string("tf_crop_and_resize"));
  EXPECT_TRUE(supported("Resize", {x, Tensor(), Tensor::from_doubles(DataType::kFloat32, {4}, {1, 1, 2, 2})}, crop));
  EXPECT_FALSE(supported("Resize", {ints(rng, {1, 2, 3, 4}), Tensor(),
                                     Tensor::from_doubles(DataType::kFloat32, {4}, {1, 1, 2, 2})},
                         crop));
  AttributeMap lin;
  lin.set("mode", std::string("linear"));
  EXPECT_FALSE(supported("Resize", {ints(rng, {1, 2, 3, 4}), Tensor(),
                                     Tensor::from_doubles(DataType::kFloat32, {4}, {1, 1, 2, 2})},
                         lin));
  EXPECT_TRUE(supported("Resize", {x, Tensor(), Tensor::from_doubles(DataType::kFloat32, {4}, {1, 1, 2, 2})}, lin));
  EXPECT_FALSE(supported("Gather", {x, rnd(rng, {2}, 0, 1)}, AttributeMap{}));  // float indices
}


// ---- fast paths of the strided gather (Transpose / Slice / Expand), Concat/Split and Gather ----

namespace k = ::graft::cuda::k;

// Host-side plan checks (no GPU): a plan must move exactly the bytes of the plain per-element
// gather. The kCopy / kGeneric plans are replayed with their (coalesced, widened) view; the kTile
// plan is replayed through make_tile_params exactly as the tile kernel indexes.
std::vector<uint8_t> replay_direct(const std::vector<uint8_t>& in, int64_t base, const k::Strided& p, int es) {
  const int64_t n = k::strided_numel(p);
  std::vector<uint8_t> out(static_cast<size_t>(n * es));
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, off = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      off += (rem % p.dims[d]) * p.strides[d];
      rem /= p.dims[d];
    }
    std::memcpy(&out[static_cast<size_t>(i * es)], &in[static_cast<size_t>(base + off * es)], static_cast<size_t>(es));
  }
  return out;
}

std::vector<uint8_t> replay_plan(const std::vector<uint8_t>& in, int64_t base, const k::GatherPlan& g, int64_t nbytes) {
  if (g.kind == k::GatherKind::kCopy)
    return std::vector<uint8_t>(in.begin() + base, in.begin() + base + nbytes);
  if (g.kind == k::GatherKind::kGeneric) return replay_direct(in, base, g.p, g.elem_size);
  const k::TileParams t = k::make_tile_params(g);
  const int es = g.elem_size;
  std::vector<uint8_t> out(static_cast<size_t>(nbytes), 0xAB);
  for (int64_t b = 0; b < t.batches; ++b) {
    int64_t rem = b, ib = 0, ob = 0;
    for (int d = t.nb - 1; d >= 0; --d) {
      const int64_t q = rem % t.bdims[d];
      rem /= t.bdims[d];
      ib += q * t.bin[d];
      ob += q * t.bout[d];
    }
    for (int64_t a = 0; a < t.A; ++a)
      for (int64_t l = 0; l < t.L; ++l)
        std::memcpy(&out[static_cast<size_t>((ob + a * t.oA + l) * es)],
                    &in[static_cast<size_t>(base + (ib + a + l * t.sL) * es)], static_cast<size_t>(es));
  }
  return out;
}

// Transpose view of a contiguous input, as transpose_run builds it.
k::Strided transpose_view(const std::vector<int64_t>& dims, const std::vector<int64_t>& perm) {
  std::vector<int64_t> st(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) st[d - 1] = st[d] * dims[d];
  k::Strided p;
  for (int64_t a : perm) {
    p.dims[p.rank] = dims[static_cast<size_t>(a)];
    p.strides[p.rank] = st[static_cast<size_t>(a)];
    ++p.rank;
  }
  return p;
}

k::GatherPlan check_plan(const k::Strided& p, int es, int64_t base_bytes, uintptr_t dst_addr, std::mt19937& rng) {
  int64_t lo = 0, hi = 0;  // element offsets reached (negative strides walk backwards)
  for (int d = 0; d < p.rank; ++d) (p.strides[d] < 0 ? lo : hi) += (p.dims[d] - 1) * p.strides[d];
  const int64_t base = base_bytes + (-lo) * es;
  std::vector<uint8_t> in(static_cast<size_t>(base + (hi + 1) * es + 16));
  for (auto& b : in) b = static_cast<uint8_t>(rng());
  const k::GatherPlan g = k::plan_strided_gather(p, es, static_cast<uintptr_t>(base), dst_addr);
  const int64_t nbytes = k::strided_numel(p) * es;
  EXPECT_EQ(g.n * g.elem_size, nbytes);
  EXPECT_TRUE(replay_plan(in, base, g, nbytes) == replay_direct(in, base, p, es));
  return g;
}

TEST(CudaShapePlan, CoalesceAndWiden) {  // CPU only: runs without a GPU
  std::mt19937 rng(1234);
  // ViT shapes: [B,197,768] -> [B,768,197] tiles; [B,197,3,12,64] -> [3,B,12,197,64] copies
  // 128-byte rows as 16-byte elements; [B,197,768] -> [197,B,768] copies rows.
  k::GatherPlan g = check_plan(transpose_view({2, 197, 768}, {0, 2, 1}), 2, 0, 0, rng);
  EXPECT_EQ(g.kind, k::GatherKind::kTile);
  EXPECT_EQ(g.p.rank, 3);
  g = check_plan(transpose_view({2, 197, 3, 12, 64}, {2, 0, 3, 1, 4}), 2, 0, 0, rng);
  EXPECT_EQ(g.kind, k::GatherKind::kGeneric);
  EXPECT_EQ(g.elem_size, 16);
  EXPECT_EQ(g.p.dims[g.p.rank - 1], 8);
  EXPECT_TRUE(g.index32);
  g = check_plan(transpose_view({2, 197, 768}, {1, 0, 2}), 2, 0, 0, rng);
  EXPECT_EQ(g.kind, k::GatherKind::kGeneric);
  EXPECT_EQ(g.elem_size, 16);
  EXPECT_EQ(g.p.rank, 3);
  // Merging: [2,4,4,5] perm (2,3,0,1) is a rank-2 transpose of [8,20]; an identity perm is a copy.
  g = check_plan(transpose_view({2, 4, 4, 5}, {2, 3, 0, 1}), 4, 0, 0, rng);
  EXPECT_EQ(g.kind, k::GatherKind::kTile);
  EXPECT_EQ(g.p.rank, 2);
  g = check_plan(transpose_view({2, 1, 3, 4}, {0, 1, 2, 3}), 4, 0, 0, rng);
  EXPECT_EQ(g.kind, k::GatherKind::kCopy);
  g = check_plan(transpose_view({1, 1}, {1, 0}), 4, 0, 0, rng);
  EXPECT_EQ(g.kind, k::GatherKind::kCopy);
  // Misaligned source: no widening; rows of 6 halves (12 bytes) widen to 4 bytes only.
  g = check_plan(transpose_view({3, 5, 8}, {1, 0, 2}), 2, 2, 0, rng);
  EXPECT_EQ(g.elem_size, 2);
  g = check_plan(transpose_view({3, 5, 6}, {1, 0, 2}), 2, 0, 0, rng);
  EXPECT_EQ(g.elem_size, 4);
  // Small extents stay on the per-element path; broadcast (stride 0) and negative strides.
  g = check_plan(transpose_view({3, 4}, {1, 0}), 4, 0, 0, rng);
  EXPECT_EQ(g.kind, k::GatherKind::kGeneric);
  k::Strided b;
  b.rank = 3;
  b.dims[0] = 4; b.dims[1] = 5; b.dims[2] = 16;
  b.strides[0] = 16; b.strides[1] = 0; b.strides[2] = 1;  // Expand [4,1,16] -> [4,5,16]
  g = check_plan(b, 2, 0, 0, rng);
  EXPECT_EQ(g.elem_size, 16);
  b.strides[0] = -16;  // reversed rows (Slice with step -1 on axis 0)
  g = check_plan(b, 4, 0, 16, rng);
  EXPECT_EQ(g.elem_size, 16);
  b.strides[2] = -1;
  check_plan(b, 4, 0, 0, rng);
  // Random permutations of random shapes (unit axes included), every element size.
  for (int trial = 0; trial < 300; ++trial) {
    const int r = 1 + static_cast<int>(rng() % 5);
    std::vector<int64_t> dims(static_cast<size_t>(r)), perm(static_cast<size_t>(r));
    for (auto& d : dims) d = 1 + static_cast<int64_t>(rng() % 12);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    const int es = 1 << (rng() % 4);
    check_plan(transpose_view(dims, perm), es, (rng() % 3) * es, (rng() % 2) * 8, rng);
    // permute_view (Transpose's and GraftConv's view: unit axes dropped, axes merged) moves the
    // same bytes as the plain per-axis view, in at most as many axes.
    k::Strided merged;
    ASSERT_TRUE(k::permute_view(dims, perm, &merged));
    EXPECT_LE(merged.rank, r);
    std::vector<uint8_t> in(static_cast<size_t>(k::strided_numel(transpose_view(dims, perm)) * es));
    for (auto& b : in) b = static_cast<uint8_t>(rng());
    EXPECT_TRUE(replay_direct(in, 0, merged, es) == replay_direct(in, 0, transpose_view(dims, perm), es));
  }
}

// CPU only: the harness refuses index values passed where dims are expected (the Gather cases of
// SliceConcatSplitGatherFastPaths once did, and failed with an unnamed std::length_error).
TEST(CudaKernelHarness, RndRejectsNegativeDims) {
  std::mt19937 rng(fresh_seed());
  EXPECT_THROW(rnd(rng, {2, -3}, -3, 3, DataType::kInt32), std::invalid_argument);
  EXPECT_EQ(rnd(rng, {}, -3, 3, DataType::kInt64).numel(), 1);  // scalar index
  EXPECT_EQ(rnd(rng, {8, 0}).numel(), 0);
}

TEST(CudaShape, TransposeFastPaths) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> perms = {
      {{5, 37, 24}, {0, 2, 1}},           // tiled, odd extent, partial tiles
      {{33, 65}, {1, 0}},                 // rank-2 tile
      {{1, 70, 1, 45}, {3, 2, 1, 0}},     // unit axes dropped, then a tile
      {{2, 5, 40, 9}, {2, 3, 0, 1}},      // merges to a rank-2 [10, 360] transpose
      {{3, 33, 40}, {1, 0, 2}},           // rows of 40: 16-byte copies
      {{2, 7, 3, 4, 8}, {2, 0, 3, 1, 4}}, // ViT qkv permute, rows of 8
      {{4, 9, 3, 5, 6}, {2, 0, 3, 1, 4}}, // rows of 6: narrower widening
      {{3, 5, 7}, {1, 0, 2}},             // rows of 7: no widening
      {{4, 6, 10}, {0, 1, 2}},            // identity: one memcpy
      {{2, 3, 2, 2, 2, 2, 2, 2, 3}, {1, 0, 2, 3, 4, 5, 6, 7, 8}},  // rank 9, merged to 3 on the host
  };
  for (const auto& [d, p] : perms) {
    KernelCase c{"Transpose", {rnd(rng, d)}};
    c.attrs.set("perm", p);
    run_float_dtypes(c, seed, /*bf16=*/true);
  }
  for (DataType t : {DataType::kInt64, DataType::kInt8}) {  // 8- and 1-byte tiles
    KernelCase c{"Transpose", {rnd(rng, {3, 20, 17}, -9, 9, t)}};
    c.attrs.set("perm", std::vector<int64_t>{0, 2, 1});
    run_kernel_case(c, DataType::kFloat32, seed);
  }
  KernelCase b{"Transpose", {rnd_bool(rng, {16, 40})}};
  run_kernel_case(b, DataType::kFloat32, seed);
  // Expand: rows widen (stride-0 axes), a broadcast last axis stays per element, same shape copies.
  run_float_dtypes(KernelCase{"Expand", {rnd(rng, {1, 64}), Tensor::vector_int64({6, 64})}}, seed);
  run_float_dtypes(KernelCase{"Expand", {rnd(rng, {5, 1}), Tensor::vector_int64({5, 33})}}, seed);
  run_float_dtypes(KernelCase{"Expand", {rnd(rng, {4, 8}), Tensor::vector_int64({4, 8})}}, seed);
  run_float_dtypes(KernelCase{"Expand", {rnd(rng, {3, 1, 24}), Tensor::vector_int64({2, 3, 9, 24})}}, seed);
}

TEST(CudaShape, SliceConcatSplitGatherFastPaths) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const int64_t big = std::numeric_limits<int64_t>::max();
  struct Spec {
    std::vector<int64_t> dims, starts, ends, axes, steps;
  };
  const std::vector<Spec> specs = {
      {{6, 16}, {2}, {5}, {0}, {}},             // whole rows: one memcpy
      {{6, 4, 16}, {1}, {3}, {1}, {}},          // row pieces: 16-byte copies
      {{6, 4, 16}, {1}, {9}, {2}, {}},          // base offset by one element: unaligned, per element
      {{6, 4, 16}, {5}, {-big}, {0}, {-1}},     // rows reversed
      {{40, 24}, {3, 0}, {37, big}, {0, 1}, {1, 2}},  // strided columns
  };
  for (const Spec& sp : specs) {
    KernelCase c{"Slice", {rnd(rng, sp.dims), Tensor::vector_int64(sp.starts), Tensor::vector_int64(sp.ends),
                           Tensor::vector_int64(sp.axes)}};
    if (!sp.steps.empty()) c.inputs.push_back(Tensor::vector_int64(sp.steps));
    run_float_dtypes(c, seed);
  }
  {  // Concat rows of 16 and 8 (16-byte pieces) and of 3 (per element)
    KernelCase c{"Concat", {rnd(rng, {5, 2, 16}), rnd(rng, {5, 1, 16}), rnd(rng, {5, 3, 16})}};
    c.attrs.set("axis", int64_t{1});
    run_float_dtypes(c, seed, /*bf16=*/true);
    KernelCase d{"Concat", {rnd(rng, {7, 8}), rnd(rng, {7, 3})}};
    d.attrs.set("axis", int64_t{1});
    run_float_dtypes(d, seed);
  }
  {  // Split: ViT-style thirds of 96 and uneven pieces
    KernelCase c{"Split", {rnd(rng, {4, 96})}};
    c.attrs.set("axis", int64_t{1});
    c.attrs.set("split", std::vector<int64_t>{32, 32, 32});
    c.opset = 11;
    c.num_outputs = 3;
    run_float_dtypes(c, seed);
    KernelCase d{"Split", {rnd(rng, {3, 13})}};
    d.attrs.set("axis", int64_t{1});
    d.attrs.set("split", std::vector<int64_t>{5, 8});
    d.opset = 11;
    d.num_outputs = 2;
    run_float_dtypes(d, seed);
  }
  // `idx` holds index VALUES (negatives wrap), not the index tensor's dims: an empty list means one
  // random scalar index (dims {}). Taking these lists as dims made index tensors of dims {2, -3}
  // (numel -6), on which the CPU reference's shape inference threw std::length_error.
  struct GSpec {
    std::vector<int64_t> data, idx;
    int64_t axis;
    DataType idx_dt;
  };
  const std::vector<GSpec> gspecs = {{{3, 2, 4, 5, 16}, {}, 0, DataType::kInt64},  // q/k/v select, 16-byte pieces
                                     {{3, 2, 4, 5, 16}, {2, -3}, 0, DataType::kInt32},
                                     {{4, 9, 24}, {8, 0, -1}, 1, DataType::kInt64},
                                     {{4, 9, 7}, {1, -2}, 1, DataType::kInt32}};  // odd inner: per element
  for (const GSpec& sp : gspecs) {
    const int64_t n = sp.data[static_cast<size_t>(sp.axis)];
    Tensor idx;
    if (sp.idx.empty()) {
      idx = rnd(rng, {}, -static_cast<double>(n), static_cast<double>(n), sp.idx_dt);
    } else {
      std::vector<double> v;
      for (int64_t i : sp.idx) {
        ASSERT_TRUE(i >= -n && i < n) << "index " << i << " out of range for an axis of " << n;
        v.push_back(static_cast<double>(i));
      }
      idx = Tensor::from_doubles(sp.idx_dt, {static_cast<int64_t>(v.size())}, v);
    }
    KernelCase c{"Gather", {rnd(rng, sp.data), idx}};
    c.attrs.set("axis", sp.axis);
    c.label = "axis " + std::to_string(sp.axis);
    run_float_dtypes(c, seed);
  }
}

// GraftStridedCopy (a composed chain of views): the vit q/k/v head split from the packed
// projection (offset into the middle third, interleaved heads), a transposed K, an odd offset
// (unaligned start: no vector path), and a stride-0 broadcast axis.
TEST(CudaShape, StridedCopyMatchesReference) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  struct Case {
    std::vector<int64_t> in, shape, strides;
    int64_t offset;
  };
  // Packed [S=7, B=3, 3E=48] with E=16, H=2, hd=8: k for (B*H, S, hd) starts at E.
  const Case cases[] = {
      {{7, 3, 48}, {3, 2, 7, 8}, {48, 8, 144, 1}, 16},
      {{7, 3, 48}, {3, 2, 8, 7}, {48, 8, 1, 144}, 16},
      {{5, 9}, {4, 8}, {9, 1}, 1},
      {{6, 10}, {6, 3, 10}, {10, 0, 1}, 0},
  };
  for (const Case& c : cases) {
    KernelCase k{"GraftStridedCopy", {rnd(rng, c.in)}};
    k.attrs.set("shape", c.shape);
    k.attrs.set("strides", c.strides);
    k.attrs.set("offset", c.offset);
    k.tol16 = 0;  // a copy
    run_float_dtypes(k, seed, /*bf16=*/true);
  }
}

// GraftViewChain (a chain over a dynamic batch, planned per run): the dynamo head split's k
// (reshape with 0 and -1, permute, select) ending transposed as [B*H, hd, S], one strided copy at
// batch 1 and two at batch 3 (B and H merged into one axis no stride covers); and a Transpose ->
// merging Reshape -> select chain, two copies through the workspace.
TEST(CudaShape, ViewChainMatchesReference) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  struct Case {
    std::vector<int64_t> in;
    std::vector<ViewStep> steps;
    size_t copies;
  };
  const std::vector<ViewStep> head_split = {
      {ViewStepKind::kReshape, {0, 0, 3, 16}},  // [S, B, 48] -> [S, B, 3, 16]
      {ViewStepKind::kPermute, {2, 0, 1, 3}},   // [3, S, B, 16]
      {ViewStepKind::kSelect, {0, 1, 0}},       // k: [S, B, 16]
      {ViewStepKind::kReshape, {7, -1, 8}},     // [S, B*H, hd]
      {ViewStepKind::kPermute, {1, 2, 0}},      // [B*H, hd, S]: K transposed
  };
  const std::vector<ViewStep> merged = {
      {ViewStepKind::kPermute, {1, 0, 2}},  // [B, 6, 2] -> [6, B, 2]
      {ViewStepKind::kReshape, {-1, 2}},    // [6B, 2]: merges axes no stride covers
      {ViewStepKind::kSelect, {1, 1, 1}},   // [6B, 1]
  };
  const Case cases[] = {
      {{7, 1, 48}, head_split, 1},
      {{7, 3, 48}, head_split, 2},
      {{5, 6, 2}, merged, 2},
  };
  for (const Case& c : cases) {
    auto plan = plan_view_steps(c.in, c.steps);
    ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
    EXPECT_EQ(plan.value().size(), c.copies);
    KernelCase k{"GraftViewChain", {rnd(rng, c.in)}};
    write_view_steps(c.steps, &k.attrs);
    k.tol16 = 0;  // copies
    run_float_dtypes(k, seed, /*bf16=*/true);
  }
}

}  // namespace
}  // namespace graft::testing
