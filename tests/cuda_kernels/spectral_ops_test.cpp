// CUDA kernels of src/backends/cuda/spectral_ops.cpp (DFT, STFT) vs the CPU reference
// (src/backends/cpu/spectral.cpp): every axis, real and complex input, inverse, onesided,
// dft_length padding and truncation, opset 20's axis input, STFT with and without a window and
// frame_length; float32, float16, bfloat16 and float64. Fresh random data every run.
#include <string>

#include "cuda_kernel_harness.h"

namespace graft::testing {
namespace {

Tensor iscalar(DataType dt, int64_t v) { return Tensor::from_doubles(dt, {}, {static_cast<double>(v)}); }

void run_all_dtypes(const KernelCase& c, uint32_t seed) {
  run_float_dtypes(c, seed, true);
  KernelCase d = c;
  d.tol16 = c.tol32;  // float64 is compared with the float32 reference's tolerance
  run_kernel_case(d, DataType::kFloat64, seed);
}

TEST(CudaSpectral, DftEveryAxisAndMode) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (int64_t ch : {1, 2})
    for (int64_t axis : {0, 1, 2, -2})
      for (int inverse : {0, 1})
        for (int onesided : {0, 1})
          for (int len_kind : {0, 1, 2}) {  // the axis' extent, padded, truncated
            if (onesided && ch == 2) continue;
            KernelCase k;
            k.op = "DFT";
            k.inputs = {rnd(rng, {3, 17, 5, ch})};
            const int64_t ext = k.inputs[0].dims()[static_cast<size_t>(axis < 0 ? axis + 4 : axis)];
            if (len_kind == 1) k.inputs.push_back(iscalar(DataType::kInt64, ext + 6));
            if (len_kind == 2) k.inputs.push_back(iscalar(DataType::kInt32, ext > 2 ? ext - 2 : 1));
            k.attrs.set("axis", axis);
            k.attrs.set("inverse", int64_t{inverse});
            k.attrs.set("onesided", int64_t{onesided});
            k.label = "c " + std::to_string(ch) + " axis " + std::to_string(axis) + " inverse " +
                      std::to_string(inverse) + " onesided " + std::to_string(onesided) + " length kind " +
                      std::to_string(len_kind);
            run_all_dtypes(k, seed);
          }
}

TEST(CudaSpectral, DftLongSignal) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> len(500, 3000);
  KernelCase k;
  k.op = "DFT";
  k.inputs = {rnd(rng, {2, len(rng), 2})};
  k.attrs.set("axis", int64_t{1});
  k.label = "length " + std::to_string(k.inputs[0].dims()[1]);
  run_all_dtypes(k, seed);
}

TEST(CudaSpectral, DftOpset20AxisInput) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (int64_t axis : {0, 1, -2, -3}) {
    KernelCase k;
    k.op = "DFT";
    k.opset = 20;
    k.inputs = {rnd(rng, {4, 9, 1}), iscalar(DataType::kInt64, 12), iscalar(DataType::kInt64, axis)};
    k.attrs.set("onesided", int64_t{1});
    k.label = "axis input " + std::to_string(axis);
    run_all_dtypes(k, seed);
  }
  KernelCase d;  // default axis -2, no dft_length
  d.op = "DFT";
  d.opset = 20;
  d.inputs = {rnd(rng, {4, 9, 2})};
  d.attrs.set("inverse", int64_t{1});
  d.label = "default axis";
  run_all_dtypes(d, seed);
}

TEST(CudaSpectral, StftWithAndWithoutWindow) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (int64_t ch : {1, 2})
    for (int onesided : {0, 1})
      for (int variant = 0; variant < 4; ++variant) {  // none / window / frame_length / both
        if (onesided && ch == 2) continue;
        const int64_t len = 301, fl = variant == 0 ? len : 64;
        KernelCase k;
        k.op = "STFT";
        k.inputs = {rnd(rng, {2, len, ch}), iscalar(DataType::kInt64, 7)};
        k.inputs.push_back(variant == 1 || variant == 3 ? rnd(rng, {fl}, 0, 1) : Tensor());
        if (variant >= 2) k.inputs.push_back(iscalar(DataType::kInt32, fl));
        k.attrs.set("onesided", int64_t{onesided});
        k.label = "c " + std::to_string(ch) + " onesided " + std::to_string(onesided) + " variant " +
                  std::to_string(variant);
        run_all_dtypes(k, seed);
      }
}

TEST(CudaSpectral, BadInputsFailNamingTheNode) {
  GRAFT_REQUIRE_GPU();
  const cuda::CudaOp* op = cuda::find_cuda_op("STFT");
  ASSERT_NE(op, nullptr);
  // A frame_length beyond the signal: the CPU reference's layout check, reported by the CUDA op.
  OneNode n("STFT", {Tensor::empty(DataType::kFloat32, {1, 8, 1}), iscalar(DataType::kInt64, 1), Tensor(),
                     iscalar(DataType::kInt64, 9)});
  Tensor x = Tensor::wrap(nullptr, DataType::kFloat32, {1, 8, 1}, DeviceType::kCUDA);
  Tensor y = Tensor::wrap(nullptr, DataType::kFloat32, {1, 1, 5, 2}, DeviceType::kCUDA);
  ExecContext ectx;
  ectx.node = n.node;
  ectx.attrs = &n.node->attrs;
  ectx.opset = 17;
  ectx.inputs = {&x, &n.inputs[1], nullptr, &n.inputs[3]};
  ectx.outputs = {&y};
  cuda::CudaExec ex;
  ex.ctx = &ectx;
  Status st = op->run(ex);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.node_name(), n.node->name) << st.to_string();
  EXPECT_NE(st.to_string().find("exceeds the signal length"), std::string::npos) << st.to_string();
}

}  // namespace
}  // namespace graft::testing
