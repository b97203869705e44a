// CUDA kernels of src/ops/unpool/unpool.cu and Celu (src/ops/elementwise) vs the CPU reference: MaxUnpool (exact, every
// float type, with and without output_shape, strides and pads) and Celu (float32, alpha of either
// sign). Out-of-range MaxUnpool indices, which the CPU reference refuses, are run directly: the
// kernel must skip them and write nothing outside the output. Fresh random data every run.
#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>

#include "cuda_kernel_harness.h"

namespace graft::testing {
namespace {

constexpr DataType kF32 = DataType::kFloat32;
constexpr DataType kF16 = DataType::kFloat16;
constexpr DataType kF64 = DataType::kFloat64;
constexpr DataType kI64 = DataType::kInt64;

// I for X of dims `x`: distinct random flat positions of the unpooled tensor (numel `unpooled`), so
// no two elements race for one output element.
Tensor distinct_indices(std::mt19937& rng, const std::vector<int64_t>& x, int64_t unpooled) {
  std::vector<int64_t> all(static_cast<size_t>(unpooled));
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), rng);
  Tensor t = Tensor::empty(kI64, x);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<int64_t>()[i] = all[static_cast<size_t>(i)];
  return t;
}

struct UnpoolCase {
  std::vector<int64_t> x;  // N, C, pooled spatial dims
  std::vector<int64_t> kernel, strides, pads;
  std::vector<int64_t> extra;  // output_shape beyond the unpooled extent per spatial axis; empty: none
};

TEST(CudaSelection, MaxUnpoolMatchesReference) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const std::vector<UnpoolCase> cases = {
      {{1, 1, 2, 2}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {}},
      {{2, 3, 5, 7}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}},
      {{2, 4, 6, 5}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}},
      {{1, 2, 4, 3}, {3, 2}, {3, 1}, {1, 0, 0, 1}, {2, 0}},
      {{3, 2, 33}, {4}, {3}, {1, 2}, {}},
      {{1, 2, 33}, {2}, {2}, {0, 0}, {5}},
      {{1, 2, 3, 4, 2}, {2, 2, 2}, {2, 2, 2}, {0, 0, 0, 0, 0, 0}, {1, 0, 1}},
      {{2, 16, 40, 40}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {}},
  };
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const UnpoolCase& u = cases[ci];
    const size_t sp = u.kernel.size();
    std::vector<int64_t> up = {u.x[0], u.x[1]};
    for (size_t d = 0; d < sp; ++d)
      up.push_back((u.x[d + 2] - 1) * u.strides[d] + u.kernel[d] - u.pads[d] - u.pads[d + sp]);
    const int64_t up_numel = numel_of(up);
    KernelCase c;
    c.op = "MaxUnpool";
    c.opset = 11;
    c.label = "case " + std::to_string(ci);
    c.inputs = {rnd(rng, u.x, -2, 2), distinct_indices(rng, u.x, up_numel)};
    if (!u.extra.empty()) {
      std::vector<int64_t> os = up;
      for (size_t d = 0; d < sp; ++d) os[d + 2] += u.extra[d];
      c.inputs.push_back(Tensor::vector_int64(os));
    }
    c.attrs = attrs_of({{"kernel_shape", u.kernel}, {"strides", u.strides}, {"pads", u.pads}});
    c.tol32 = c.tol16 = 0;  // a scatter moves values exactly
    run_kernel_case(c, kF32, seed);
    run_kernel_case(c, kF16, seed);
    run_kernel_case(c, kF64, seed);
  }
}

// Out-of-range indices are skipped on the GPU: the valid ones land, everything else is 0, and the
// guard elements after the output keep their poison.
TEST(CudaSelection, MaxUnpoolSkipsOutOfRangeIndices) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  const cuda::CudaOp* op = cuda::find_cuda_op("MaxUnpool");
  ASSERT_NE(op, nullptr);
  for (bool with_shape : {false, true}) {
    Tensor x = rnd(rng, {1, 2, 2, 2}, 0.5, 2.0);  // unpooled [1, 2, 4, 4]: 32 elements
    const std::vector<int64_t> idx = {
        0, 31, 32, -1, 17, std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(), 40};
    Tensor ind = Tensor::empty(kI64, {1, 2, 2, 2});
    std::memcpy(ind.data(), idx.data(), idx.size() * sizeof(int64_t));
    const std::vector<int64_t> out =
        with_shape ? std::vector<int64_t>{1, 2, 5, 6} : std::vector<int64_t>{1, 2, 4, 4};
    Tensor shape = Tensor::vector_int64(out);
    std::vector<Tensor> host_in = {x, ind};
    if (with_shape) host_in.push_back(shape);
    OneNode node("MaxUnpool", host_in, 1);
    node.node->attrs =
        attrs_of({{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}});
    node.node->opset = 11;
    node.node->outputs[0]->desc = TensorDesc(kF32, shape_from_values(out));
    std::string why;
    ASSERT_TRUE(op->supports(*node.node, &why)) << why;

    const int64_t y_numel = numel_of(out), guard = 64;
    void *dx = nullptr, *di = nullptr, *dy = nullptr;
    ASSERT_EQ(cudaMalloc(&dx, x.nbytes()), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&di, ind.nbytes()), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&dy, static_cast<size_t>(y_numel + guard) * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(dx, x.data(), x.nbytes(), cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(di, ind.data(), ind.nbytes(), cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemset(dy, 0xFF, static_cast<size_t>(y_numel + guard) * sizeof(float)), cudaSuccess);
    Tensor tx = Tensor::wrap(dx, kF32, x.dims(), DeviceType::kCUDA);
    Tensor ti = Tensor::wrap(di, kI64, ind.dims(), DeviceType::kCUDA);
    Tensor ty = Tensor::wrap(dy, kF32, out, DeviceType::kCUDA);
    ExecContext ectx;
    ectx.node = node.node;
    ectx.attrs = &node.node->attrs;
    ectx.opset = 11;
    ectx.inputs = {&tx, &ti};
    if (with_shape) ectx.inputs.push_back(&shape);  // a host input
    ectx.outputs = {&ty};
    cuda::CudaExec ex;
    ex.ctx = &ectx;
    Status st = op->run(ex);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<float> got(static_cast<size_t>(y_numel + guard));
    ASSERT_EQ(cudaMemcpy(got.data(), dy, got.size() * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    cudaFree(dx);
    cudaFree(di);
    cudaFree(dy);

    // Expected: elements 0, 1 and 4 (indices 0, 31, 17) land at their place in `out`.
    std::vector<float> want(static_cast<size_t>(y_numel), 0.0f);
    const std::vector<int64_t> up = {1, 2, 4, 4};
    for (int64_t e : {0, 1, 4}) {
      int64_t q = idx[static_cast<size_t>(e)], off = 0, mul = 1;
      for (int d = 3; d >= 0; --d) {
        off += (q % up[static_cast<size_t>(d)]) * mul;
        q /= up[static_cast<size_t>(d)];
        mul *= out[static_cast<size_t>(d)];
      }
      want[static_cast<size_t>(off)] = static_cast<float>(x.get(e));
    }
    for (int64_t i = 0; i < y_numel; ++i)
      EXPECT_EQ(got[static_cast<size_t>(i)], want[static_cast<size_t>(i)]) << i;
    for (int64_t i = y_numel; i < y_numel + guard; ++i)
      EXPECT_TRUE(std::isnan(got[static_cast<size_t>(i)]))
          << "guard element " << i - y_numel << " was written";
  }
}

TEST(CudaSelection, CeluMatchesReference) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (float alpha : {1.0f, 0.4f, 3.0f, -1.25f}) {
    const std::vector<std::vector<int64_t>> shapes = {{1}, {7, 33}, {4, 3, 1000}};
    for (const auto& dims : shapes) {
      KernelCase c;
      c.op = "Celu";
      c.opset = 12;
      c.label = "alpha " + std::to_string(alpha);
      c.inputs = {rnd(rng, dims, -8, 8)};
      if (alpha != 1.0f) c.attrs.set("alpha", alpha);
      run_kernel_case(c, kF32, seed);
    }
  }
}

}  // namespace
}  // namespace graft::testing
