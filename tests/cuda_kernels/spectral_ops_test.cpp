// CUDA kernels of DFT, STFT and MelWeightMatrix (src/ops/spectral/spectral.cu) vs the CPU
// reference (src/ops/spectral/spectral.cpp): every axis, real and complex input, inverse, onesided
// (inverse and onesided together: irfft),
// dft_length padding and truncation, opset 20's axis input, STFT with and without a window and
// frame_length; float32, float16, bfloat16 and float64. Fresh random data every run.
#include <string>
#include <vector>

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
            if (onesided && ch == 2 && !inverse) continue;  // inverse + onesided: irfft of a spectrum
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

// ---- MelWeightMatrix ------------------------------------------------------------------------------

// Random band layouts within Nyquist (every edge inside the matrix), every output_datatype the CUDA
// op makes, int32/int64 sizes and float32/float64 hertz; the weights must equal the reference's.
// num_mel_bins above k::kMelParamEdges - 2 takes the path that computes the edges on the device.
TEST(CudaSpectral, MelWeightMatrixMatchesReference) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const std::vector<int64_t> out_types = {1, 10, 11, 16, 3, 2, 6, 7};  // ONNX element types
  const std::vector<int64_t> rates = {8000, 16000, 22050, 44100};
  std::uniform_real_distribution<double> u(0.0, 1.0);
  struct Shape {
    int64_t mels_lo, mels_hi, len_lo, len_hi;
  };
  const std::vector<Shape> shapes = {{1, 8, 8, 64}, {20, 128, 128, 1024}, {499, 520, 1500, 2500}, {600, 700, 4000, 5000}};
  for (const Shape& sh : shapes)
    for (int64_t ot : out_types)
      for (int variant = 0; variant < 2; ++variant) {
        const int64_t mels = std::uniform_int_distribution<int64_t>(sh.mels_lo, sh.mels_hi)(rng);
        const int64_t len = std::uniform_int_distribution<int64_t>(sh.len_lo, sh.len_hi)(rng);
        const int64_t rate = rates[rng() % rates.size()];
        const double nyquist = static_cast<double>(rate) / 2;
        // variant 0 starts at 0 Hz (the usual model), variant 1 somewhere in the lower eighth.
        const double lower = variant == 0 ? 0.0 : nyquist / 4 * (0.05 + 0.95 * u(rng));
        const double upper = lower + (nyquist - lower) * (0.3 + 0.7 * u(rng));
        const DataType it = variant == 0 ? DataType::kInt64 : DataType::kInt32;
        const DataType ft = variant == 0 ? DataType::kFloat32 : DataType::kFloat64;
        KernelCase k;
        k.op = "MelWeightMatrix";
        k.opset = 17;
        k.inputs = {iscalar(it, mels), iscalar(it, len), iscalar(it, rate),
                    Tensor::from_doubles(ft, {}, {lower}), Tensor::from_doubles(ft, {1}, {upper})};
        k.keep_f32 = {3, 4};
        k.attrs.set("output_datatype", ot);
        k.tol32 = 1e-12;  // the same edges and one rounding per weight: equal
        k.label = "mels " + std::to_string(mels) + " dft_length " + std::to_string(len) + " rate " +
                  std::to_string(rate) + " lower " + std::to_string(lower) + " upper " + std::to_string(upper) +
                  " output_datatype " + std::to_string(ot);
        run_kernel_case(k, DataType::kFloat32, seed);
      }
}

// No bands: an empty [bins, 0] matrix, the edges still checked.
TEST(CudaSpectral, MelWeightMatrixNoBands) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  KernelCase k;
  k.op = "MelWeightMatrix";
  k.inputs = {iscalar(DataType::kInt64, 0), iscalar(DataType::kInt64, 256), iscalar(DataType::kInt64, 16000),
              Tensor::from_doubles(DataType::kFloat32, {}, {20.0}), Tensor::from_doubles(DataType::kFloat32, {}, {7000.0})};
  k.keep_f32 = {3, 4};
  run_kernel_case(k, DataType::kFloat32, seed);
}

// Edges past the last bin: the CPU reference's error, word for word, naming the node.
TEST(CudaSpectral, MelWeightMatrixEdgesOutsideFailLikeTheReference) {
  GRAFT_REQUIRE_GPU();
  const cuda::CudaOp* op = cuda::find_cuda_op("MelWeightMatrix");
  ASSERT_NE(op, nullptr);
  struct Bad {
    double lower, upper;
  };
  // lower above Nyquist (the first edge is outside), and upper far above it (a later one is).
  for (const Bad& b : {Bad{9000.0, 9500.0}, Bad{100.0, 40000.0}}) {
    std::vector<Tensor> in = {iscalar(DataType::kInt64, 10), iscalar(DataType::kInt64, 64),
                              iscalar(DataType::kInt64, 16000), Tensor::from_doubles(DataType::kFloat32, {}, {b.lower}),
                              Tensor::from_doubles(DataType::kFloat32, {}, {b.upper})};
    OneNode ref("MelWeightMatrix", in);
    auto want = ref.run(17);
    ASSERT_FALSE(want.is_ok()) << "the CPU reference accepted lower " << b.lower << " upper " << b.upper;
    OneNode n("MelWeightMatrix", in);
    Tensor y = Tensor::wrap(nullptr, DataType::kFloat32, {33, 10}, DeviceType::kCUDA);
    ExecContext ectx;
    ectx.node = n.node;
    ectx.attrs = &n.node->attrs;
    ectx.opset = 17;
    for (auto& t : n.inputs) ectx.inputs.push_back(&t);
    ectx.outputs = {&y};
    cuda::CudaExec ex;
    ex.ctx = &ectx;
    Status st = op->run(ex);
    ASSERT_FALSE(st.is_ok());
    EXPECT_EQ(st.node_name(), n.node->name) << st.to_string();
    EXPECT_EQ(st.message(), want.status().message());
  }
}

}  // namespace
}  // namespace graft::testing
