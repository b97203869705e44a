// MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv on CUDA (src/ops/integer/integer.cu)
// against the CPU reference (src/ops/integer/integer.cpp), compared exactly (the harness compares
// integer outputs element by element): every int8/uint8 combination of the operands (and of the
// output for the QLinear ops), zero points per tensor, per row/column (broadcast over batches too)
// and per output channel, batched and 1-D matmuls, sums that wrap int32, convolutions with groups,
// strides, pads, dilations and auto_pad in 1-D, 2-D and 3-D, scales (float32, float16, bfloat16)
// spread so that some outputs saturate and some do not, and power-of-two scales for exact .5 ties.
// Fresh random data over the full 8-bit range each run.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "cuda_kernel_harness.h"

namespace graft::testing {
namespace {

constexpr DataType kU8 = DataType::kUInt8, kI8 = DataType::kInt8, kI32 = DataType::kInt32,
                   kF32 = DataType::kFloat32;
constexpr DataType k8[] = {kU8, kI8};


// Zero points are never 0, so a kernel that forgets one differs.
Tensor rand_zp(std::mt19937& rng, DataType dt, std::vector<int64_t> dims) {
  Tensor t = random_int8(dt, std::move(dims), rng);
  for (int64_t i = 0; i < t.numel(); ++i)
    if (t.get(i) == 0) t.set(i, dt == kU8 ? 9 : -9);
  return t;
}

// float32 scales 10^u, u uniform in [lo, hi] (decades apart, so a tensor's outputs both saturate
// and stay in range).
Tensor rand_scale(std::mt19937& rng, std::vector<int64_t> dims, double lo, double hi) {
  std::uniform_real_distribution<double> u(lo, hi);
  Tensor t = Tensor::empty(kF32, std::move(dims));
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, std::pow(10.0, u(rng)));
  return t;
}

// Powers of two 2^e, e in [lo, hi]: products and quotients of scales stay exact.
Tensor pow2_scale(std::mt19937& rng, std::vector<int64_t> dims, int lo, int hi) {
  std::uniform_int_distribution<int> e(lo, hi);
  Tensor t = Tensor::empty(kF32, std::move(dims));
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, std::ldexp(1.0, e(rng)));
  return t;
}

Tensor filled(DataType dt, std::vector<int64_t> dims, double v) {
  Tensor t = Tensor::empty(dt, std::move(dims));
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, v);
  return t;
}

Tensor rand_bias(std::mt19937& rng, int64_t m) {
  std::uniform_int_distribution<int64_t> d(-200000, 200000);
  Tensor t = Tensor::empty(kI32, {m});
  for (int64_t i = 0; i < m; ++i) t.set(i, static_cast<double>(d(rng)));
  return t;
}

std::string combo(std::initializer_list<DataType> ts) {
  std::string s;
  for (DataType t : ts) s += std::string(s.empty() ? "" : " x ") + dtype_name(t);
  return s;
}

// The QLinear ops read float scales: every scale dtype the kernels take, each compared exactly.
void run_all_scale_dtypes(const KernelCase& c, uint32_t seed) {
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
    run_kernel_case(c, dt, seed);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// ---- MatMulInteger ---------------------------------------------------------------------------------

struct MatMulLayout {
  std::vector<int64_t> a, b;        // operand dims
  std::vector<int64_t> azp, bzp;    // zero point dims ({} scalar); `none` leaves both out
  bool none = false;
  const char* label;
};

const std::vector<MatMulLayout> kMatMulLayouts = {
    {{37, 70}, {70, 45}, {}, {}, false, "2-D per tensor"},
    {{33, 64}, {64, 65}, {33}, {65}, false, "2-D per row / per column"},
    {{3, 1, 33, 40}, {4, 40, 17}, {3, 1, 33, 1}, {4, 1, 17}, false, "broadcast batch, per batch and row/column"},
    {{2, 5, 19, 300}, {300, 70}, {1}, {70}, false, "batched A, shared B, K not a tile multiple"},
    {{40}, {2, 40, 9}, {}, {9}, false, "1-D A"},
    {{5, 40}, {40}, {5}, {1}, false, "1-D B"},
    {{6, 31, 29}, {6, 29, 33}, {}, {}, true, "batched, no zero points"},
    {{1, 1}, {1, 1}, {}, {}, false, "1x1"},
};

TEST(CudaInteger, MatMulIntegerLayoutsAndDtypes) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (DataType ta : k8)
    for (DataType tb : k8)
      for (const MatMulLayout& l : kMatMulLayouts) {
        KernelCase c;
        c.op = "MatMulInteger";
        c.label = std::string(l.label) + " " + combo({ta, tb});
        c.inputs = {random_int8(ta, l.a, rng), random_int8(tb, l.b, rng)};
        if (!l.none) {
          c.inputs.push_back(rand_zp(rng, ta, l.azp));
          c.inputs.push_back(rand_zp(rng, tb, l.bzp));
        }
        run_kernel_case(c, kF32, seed);
        if (HasFatalFailure()) return;
      }
  // Only B's zero point (A's left empty).
  KernelCase c;
  c.op = "MatMulInteger";
  c.label = "b_zero_point alone";
  c.inputs = {random_int8(kI8, {7, 50}, rng), random_int8(kU8, {50, 11}, rng), Tensor(), rand_zp(rng, kU8, {11})};
  run_kernel_case(c, kF32, seed);
}

// Sums past the int32 range wrap as an int32 accumulator's would (the reference wraps its exact sum).
TEST(CudaInteger, MatMulIntegerWrapsInt32) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const int64_t K = 70000;  // 70000 * 254 * 255 > 2^32
  Tensor A = filled(kU8, {2, K}, 255), B = random_int8(kI8, {K, 3}, rng);
  for (int64_t k = 0; k < K; ++k) B.set(k * 3, -128);  // column 0: every product -254 * 255
  A.set(1, 17);                                      // row 0 not all equal
  KernelCase c;
  c.op = "MatMulInteger";
  c.label = "wrapping sums";
  c.inputs = {A, B, filled(kU8, {}, 1), filled(kI8, {}, 127)};
  run_kernel_case(c, kF32, seed);
}

// ---- QLinearMatMul ---------------------------------------------------------------------------------

struct QMatMulLayout {
  std::vector<int64_t> a, b;
  std::vector<int64_t> a_param, b_param;  // dims of a's scale and zero point, of b's
  const char* label;
};

const std::vector<QMatMulLayout> kQMatMulLayouts = {
    {{29, 64}, {64, 37}, {}, {}, "2-D per tensor"},
    {{29, 64}, {64, 37}, {29}, {37}, "2-D per row / per column"},
    {{2, 3, 17, 40}, {3, 40, 33}, {2, 3, 17, 1}, {3, 1, 33}, "broadcast batch, per batch and row/column"},
    {{4, 9, 100}, {100, 21}, {1, 1}, {21}, "batched A, shared B"},
    {{48}, {48, 5}, {}, {5}, "1-D A"},
};

TEST(CudaInteger, QLinearMatMulRequantize) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (DataType ta : k8)
    for (DataType tb : k8)
      for (DataType ty : k8)
        for (const QMatMulLayout& l : kQMatMulLayouts) {
          KernelCase c;
          c.op = "QLinearMatMul";
          c.label = std::string(l.label) + " " + combo({ta, tb, ty});
          // multiplier = a_scale * b_scale / y_scale spans about 1e-6 .. 1e-2 against sums of
          // up to ~1e6: some outputs saturate, most do not.
          c.inputs = {random_int8(ta, l.a, rng),          rand_scale(rng, l.a_param, -2.5, -1.0),
                      rand_zp(rng, ta, l.a_param),  random_int8(tb, l.b, rng),
                      rand_scale(rng, l.b_param, -2.5, -1.0), rand_zp(rng, tb, l.b_param),
                      rand_scale(rng, {}, -2.0, 0.0),   rand_zp(rng, ty, {})};
          run_all_scale_dtypes(c, seed);
          if (HasFatalFailure()) return;
        }
}

// Power-of-two scales make float(sum) * multiplier exact, so the sums at odd multiples of half the
// step are real .5 ties (nearest-even must pick the same side); a zero y_scale makes every output
// saturate (or, for a zero sum, the zero point).
TEST(CudaInteger, QLinearMatMulTiesAndZeroScale) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (DataType ty : k8) {
    KernelCase c;
    c.op = "QLinearMatMul";
    c.label = std::string("ties ") + dtype_name(ty);
    // K = 2: |sum| <= 2 * 255 * 255; multipliers 2^-11 .. 2^-8 keep many outputs in range.
    c.inputs = {random_int8(kU8, {96, 2}, rng),      pow2_scale(rng, {96}, -4, -3), rand_zp(rng, kU8, {96}),
                random_int8(kI8, {2, 96}, rng),      pow2_scale(rng, {96}, -4, -3), rand_zp(rng, kI8, {96}),
                pow2_scale(rng, {}, 2, 3),     rand_zp(rng, ty, {})};
    run_all_scale_dtypes(c, seed);
    if (HasFatalFailure()) return;
    KernelCase z = c;
    z.label = std::string("zero y_scale ") + dtype_name(ty);
    z.inputs[6] = filled(kF32, {}, 0.0);
    run_all_scale_dtypes(z, seed);
    if (HasFatalFailure()) return;
  }
}

// ---- ConvInteger / QLinearConv ---------------------------------------------------------------------

struct ConvLayout {
  std::vector<int64_t> x, w;  // [N, C, spatial...], [M, C / group, kernel...]
  int64_t group = 1;
  std::vector<int64_t> strides, pads, dilations;  // empty: attribute left out
  const char* auto_pad = nullptr;
  const char* label;
};

const std::vector<ConvLayout> kConvLayouts = {
    {{2, 3, 11, 13}, {4, 3, 3, 3}, 1, {}, {}, {}, nullptr, "2-D plain"},
    {{1, 4, 12, 9}, {6, 2, 3, 2}, 2, {2, 1}, {1, 0, 2, 1}, {1, 2}, nullptr, "2-D group 2, strides, pads, dilations"},
    {{2, 6, 10, 10}, {6, 1, 3, 3}, 6, {1, 1}, {1, 1, 1, 1}, {2, 2}, nullptr, "2-D depthwise dilated"},
    {{1, 4, 9, 8}, {8, 4, 3, 3}, 1, {2, 2}, {}, {}, "SAME_UPPER", "2-D SAME_UPPER stride 2"},
    {{1, 4, 9, 8}, {4, 2, 4, 3}, 2, {2, 3}, {}, {}, "SAME_LOWER", "2-D SAME_LOWER"},
    {{1, 3, 9, 8}, {5, 3, 2, 2}, 1, {3, 2}, {}, {}, "VALID", "2-D VALID"},
    {{3, 4, 31}, {6, 2, 5}, 2, {2}, {3, 1}, {2}, nullptr, "1-D"},
    {{1, 2, 6, 7, 5}, {4, 2, 3, 2, 3}, 1, {1, 2, 1}, {1, 0, 1, 0, 1, 1}, {1, 1, 2}, nullptr, "3-D"},
    {{1, 8, 5, 5}, {16, 8, 1, 1}, 1, {}, {}, {}, nullptr, "1x1"},
};

void set_conv_attrs(KernelCase& c, const ConvLayout& l) {
  c.attrs.set("group", l.group);
  if (!l.strides.empty()) c.attrs.set("strides", l.strides);
  if (!l.pads.empty()) c.attrs.set("pads", l.pads);
  if (!l.dilations.empty()) c.attrs.set("dilations", l.dilations);
  if (l.auto_pad) c.attrs.set("auto_pad", std::string(l.auto_pad));
}

TEST(CudaInteger, ConvIntegerGeometryAndZeroPoints) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (DataType tx : k8)
    for (DataType tw : k8)
      for (const ConvLayout& l : kConvLayouts)
        for (int zp = 0; zp < 3; ++zp) {  // none, per tensor, w per output channel
          KernelCase c;
          c.op = "ConvInteger";
          static const char* kZp[] = {"no zero points", "per-tensor zero points", "per-channel w_zero_point"};
          c.label = std::string(l.label) + ", " + kZp[zp] + ", " + combo({tx, tw});
          set_conv_attrs(c, l);
          c.inputs = {random_int8(tx, l.x, rng), random_int8(tw, l.w, rng)};
          if (zp > 0) {
            c.inputs.push_back(rand_zp(rng, tx, {}));
            c.inputs.push_back(rand_zp(rng, tw, zp == 2 ? std::vector<int64_t>{l.w[0]} : std::vector<int64_t>{1}));
          }
          run_kernel_case(c, kF32, seed);
          if (HasFatalFailure()) return;
        }
}

TEST(CudaInteger, QLinearConvRequantize) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (DataType tx : k8)
    for (DataType tw : k8)
      for (DataType ty : k8)
        for (size_t li = 0; li < kConvLayouts.size(); ++li) {
          const ConvLayout& l = kConvLayouts[li];
          const int64_t M = l.w[0];
          const bool per_channel = li % 2 == 0, bias = li % 3 != 1;
          KernelCase c;
          c.op = "QLinearConv";
          c.label = std::string(l.label) + (per_channel ? ", per-channel w" : ", per-tensor w") +
                    (bias ? ", bias, " : ", no bias, ") + combo({tx, tw, ty});
          set_conv_attrs(c, l);
          const std::vector<int64_t> wp = per_channel ? std::vector<int64_t>{M} : std::vector<int64_t>{};
          c.inputs = {random_int8(tx, l.x, rng),          rand_scale(rng, {}, -2.0, -1.0), rand_zp(rng, tx, {}),
                      random_int8(tw, l.w, rng),          rand_scale(rng, wp, -3.0, -1.0), rand_zp(rng, tw, wp),
                      rand_scale(rng, {}, -2.0, 0.0), rand_zp(rng, ty, {})};
          if (bias) c.inputs.push_back(rand_bias(rng, M));
          run_all_scale_dtypes(c, seed);
          if (HasFatalFailure()) return;
        }
}

// ---- registration and refusals ---------------------------------------------------------------------

TEST(CudaInteger, RegisteredAndRefusesWhatItDoesNotHandle) {
  GRAFT_REQUIRE_GPU();
  for (const char* op : {"MatMulInteger", "ConvInteger", "QLinearMatMul", "QLinearConv"})
    EXPECT_NE(cuda::find_cuda_op(op), nullptr) << op;
  std::mt19937 rng(fresh_seed());
  auto refused = [](const char* op, std::vector<Tensor> in, DataType out) {
    OneNode n(op, std::move(in));
    n.node->outputs[0]->desc = TensorDesc(out, shape_from_values({1}));
    std::string why;
    if (!cuda::find_cuda_op(op)) return std::string("(no op)");
    const cuda::CudaOp* chosen = nullptr;  // as the engine asks: the dtype keys, then the op's checks
    EXPECT_FALSE(cuda::gpu_supports(*n.node, &chosen, &why)) << op;
    EXPECT_FALSE(why.empty()) << op;
    return why;
  };
  // A 4-D convolution (rank 6).
  refused("ConvInteger", {random_int8(kU8, {1, 1, 2, 2, 2, 2}, rng), random_int8(kU8, {1, 1, 1, 1, 1, 1}, rng)}, kI32);
  // A zero point of the other dtype than its operand.
  refused("MatMulInteger", {random_int8(kU8, {2, 3}, rng), random_int8(kU8, {3, 2}, rng), rand_zp(rng, kI8, {})}, kI32);
  // Operands of a dtype other than int8/uint8.
  refused("MatMulInteger", {filled(kI32, {2, 3}, 1), random_int8(kU8, {3, 2}, rng)}, kI32);
  // Scales of two dtypes.
  refused("QLinearMatMul",
          {random_int8(kU8, {2, 3}, rng), filled(kF32, {}, 0.5), rand_zp(rng, kU8, {}), random_int8(kU8, {3, 2}, rng),
           filled(DataType::kFloat16, {}, 0.5), rand_zp(rng, kU8, {}), filled(kF32, {}, 1), rand_zp(rng, kU8, {})},
          kU8);
  // A bias that is not int32.
  refused("QLinearConv",
          {random_int8(kU8, {1, 1, 3, 3}, rng), filled(kF32, {}, 0.5), rand_zp(rng, kU8, {}), random_int8(kU8, {1, 1, 1, 1}, rng),
           filled(kF32, {}, 0.5), rand_zp(rng, kU8, {}), filled(kF32, {}, 1), rand_zp(rng, kU8, {}),
           filled(kF32, {1}, 3)},
          kU8);
}

}  // namespace
}  // namespace graft::testing
