// CUDA kernels of the less common builtin ops vs the CPU reference: Mod, Xor, Sum, Mean, the rarer
// unary math of src/ops/elementwise (trig/hyperbolic, Sign, Round, Selu, Shrink, ThresholdedRelu,
// Softsign, IsNaN, IsInf), Dropout, the extra reductions, ArgMax/ArgMin, Hardmax, CumSum, Trilu,
// GatherElements, ScatterElements, GatherND, ScatterND, OneHot, DepthToSpace/SpaceToDepth, TopK,
// Compress. Fresh random data every run; outputs are poisoned before the kernel runs.
#include <algorithm>
#include <limits>
#include <numeric>

#include "cuda_kernel_harness.h"

namespace graft::testing {
namespace {

constexpr DataType kF32 = DataType::kFloat32;
constexpr DataType kI32 = DataType::kInt32;
constexpr DataType kI64 = DataType::kInt64;

// Integer tensor (stored as `dt`) with values in [lo, hi] and none equal to zero when `nonzero`.
Tensor ints(std::mt19937& rng, std::vector<int64_t> dims, int64_t lo, int64_t hi, DataType dt, bool nonzero = false) {
  Tensor t = Tensor::empty(dt, std::move(dims));
  std::uniform_int_distribution<int64_t> d(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) {
    int64_t v = d(rng);
    while (nonzero && v == 0) v = d(rng);
    t.set(i, static_cast<double>(v));
  }
  return t;
}

// Small integers stored as float32: ties happen, and they are exact in float16.
Tensor int_floats(std::mt19937& rng, std::vector<int64_t> dims, int64_t lo, int64_t hi) {
  return ints(rng, std::move(dims), lo, hi, kF32);
}

Tensor int64_vec(std::vector<int64_t> v) { return Tensor::vector_int64(v); }
Tensor int64_scalar(int64_t v) { return Tensor::scalar_int64(v); }

std::string shape_label(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

struct Shapes2 {
  std::vector<int64_t> a, b;
};
const std::vector<Shapes2> kBinaryShapes = {
    {{3, 5, 7}, {3, 5, 7}}, {{2, 3, 4, 5}, {4, 1}}, {{5}, {2, 1, 3, 1, 5}}, {{}, {7}}, {{1027}, {1}},
    {{1, 3, 1, 2}, {4, 1, 5, 1}},
};

// ---- Mod, Xor ---------------------------------------------------------------------------------

TEST(CudaExtra, ModIntegerBothModes) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (DataType t : {kI32, kI64})
    for (int64_t fmod : {0, 1})
      for (const auto& s : kBinaryShapes) {
        // Negative dividends and divisors, never a zero divisor.
        KernelCase c{"Mod", {ints(rng, s.a, -60, 60, t), ints(rng, s.b, -9, 9, t, true)}};
        c.attrs.set("fmod", fmod);
        c.label = "fmod " + std::to_string(fmod) + " " + shape_label(s.a) + " % " + shape_label(s.b);
        run_kernel_case(c, kF32, seed);
      }
  // Large magnitudes and divisor -1 (INT64_MIN % -1 would trap on the CPU; kept out of the data).
  for (int64_t fmod : {0, 1}) {
    Tensor a = ints(rng, {257}, -4000000000000LL, 4000000000000LL, kI64);
    Tensor b = ints(rng, {257}, -1000003, 1000003, kI64, true);
    b.set(3, -1.0);
    b.set(4, 1.0);
    KernelCase c{"Mod", {a, b}};
    c.attrs.set("fmod", fmod);
    c.label = "int64 large, fmod " + std::to_string(fmod);
    run_kernel_case(c, kF32, seed);
  }
}

TEST(CudaExtra, ModFloatFmod) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (const auto& s : kBinaryShapes) {
    Tensor b = rnd(rng, s.b, 0.5, 3);
    for (int64_t i = 0; i < b.numel(); ++i)
      if (rng() & 1) b.set(i, -b.get(i));  // negative divisors, magnitude >= 0.5
    KernelCase c{"Mod", {rnd(rng, s.a, -10, 10), b}};
    c.attrs.set("fmod", int64_t{1});
    c.label = shape_label(s.a) + " fmod " + shape_label(s.b);
    run_float_dtypes(c, seed, /*bf16=*/true);
  }
}

// supports() needs no GPU: this one runs everywhere.
TEST(CudaExtra, ModRejectsFloatWithoutFmod) {
  std::mt19937 rng(1);
  OneNode n("Mod", {rnd(rng, {4}), rnd(rng, {4})});
  std::string why;
  const cuda::CudaOp* op = cuda::find_cuda_op("Mod");
  ASSERT_NE(op, nullptr);
  EXPECT_FALSE(op->supports(*n.node, &why));
  EXPECT_FALSE(why.empty());
}

TEST(CudaExtra, Xor) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (const auto& s : kBinaryShapes)
    run_kernel_case(KernelCase{"Xor", {rnd_bool(rng, s.a), rnd_bool(rng, s.b)}}, kF32, seed);
}

// ---- Sum, Mean --------------------------------------------------------------------------------

TEST(CudaExtra, SumMeanVariadic) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const std::vector<std::vector<std::vector<int64_t>>> sets = {
      {{3, 5, 7}},
      {{3, 5, 7}, {3, 5, 7}},
      {{2, 3, 4, 5}, {4, 1}, {5}},
      {{1027}, {1}, {1027}, {1}},
      // More operands than one launch takes (8): chained launches.
      {{4, 6}, {6}, {4, 1}, {4, 6}, {1}, {6}, {4, 6}, {4, 6}, {1, 6}, {4, 1}, {4, 6}},
  };
  for (const char* op : {"Sum", "Mean"})
    for (const auto& set : sets) {
      KernelCase c{op};
      for (const auto& d : set) c.inputs.push_back(rnd(rng, d, -2, 2));
      c.label = std::to_string(set.size()) + " inputs";
      run_float_dtypes(c, seed, /*bf16=*/true);
    }
  for (DataType t : {kI32, kI64})
    for (const auto& set : sets) {
      KernelCase c{"Sum"};
      for (const auto& d : set) c.inputs.push_back(ints(rng, d, -1000, 1000, t));
      c.label = std::to_string(set.size()) + " int inputs";
      run_kernel_case(c, kF32, seed);
    }
}

// ---- unary ------------------------------------------------------------------------------------

struct UnaryCase {
  const char* op;
  double lo, hi;
};

TEST(CudaExtra, UnaryMath) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const UnaryCase cases[] = {
      {"Tan", -1.2, 1.2},   {"Asin", -0.99, 0.99}, {"Acos", -0.99, 0.99}, {"Atan", -4, 4},
      {"Sinh", -3, 3},      {"Cosh", -3, 3},       {"Asinh", -4, 4},      {"Acosh", 1.05, 5},
      {"Atanh", -0.95, 0.95}, {"Softsign", -5, 5}, {"Selu", -3, 3},       {"Shrink", -2, 2},
      {"ThresholdedRelu", -1, 3}, {"Sign", -2, 2},
  };
  const std::vector<std::vector<int64_t>> shapes = {{3, 5, 7}, {1027}, {2, 3, 1, 4, 5}, {}};
  for (const auto& uc : cases)
    for (const auto& s : shapes) {
      KernelCase c{uc.op, {rnd(rng, s, uc.lo, uc.hi)}};
      c.label = shape_label(s);
      run_float_dtypes(c, seed, /*bf16=*/true);
    }
}

TEST(CudaExtra, UnaryAttributes) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  {
    KernelCase c{"Selu", {rnd(rng, {5, 9}, -3, 3)}};
    c.attrs.set("alpha", 1.3f);
    c.attrs.set("gamma", 0.8f);
    run_float_dtypes(c, seed);
  }
  {
    KernelCase c{"Shrink", {rnd(rng, {5, 9}, -3, 3)}};
    c.attrs.set("lambd", 1.25f);
    c.attrs.set("bias", 0.5f);
    run_float_dtypes(c, seed);
  }
  {
    KernelCase c{"ThresholdedRelu", {rnd(rng, {5, 9}, -3, 3)}};
    c.attrs.set("alpha", 0.4f);
    run_float_dtypes(c, seed);
  }
}

TEST(CudaExtra, RoundHalvesToEven) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  // Multiples of 0.25, so half of them are exact halves; exact in float16.
  Tensor x = rnd(rng, {3, 67}, -20, 20);
  for (int64_t i = 0; i < x.numel(); ++i) x.set(i, std::round(x.get(i) * 4) / 4);
  KernelCase c{"Round", {x}};
  c.tol32 = 0;
  c.tol16 = 0;
  run_float_dtypes(c, seed, /*bf16=*/true);
}

TEST(CudaExtra, IntegerSignShrink) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (DataType t : {kI32, kI64, DataType::kInt8}) {
    run_kernel_case(KernelCase{"Sign", {ints(rng, {41}, -5, 5, t)}}, kF32, seed);
    KernelCase c{"Shrink", {ints(rng, {41}, -9, 9, t)}};
    c.attrs.set("lambd", 2.5f);
    c.attrs.set("bias", 1.5f);
    run_kernel_case(c, kF32, seed);
  }
}

Tensor with_specials(std::mt19937& rng, std::vector<int64_t> dims) {
  Tensor x = rnd(rng, std::move(dims), -3, 3);
  const double specials[] = {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::infinity()};
  for (int64_t i = 0; i < x.numel(); ++i)
    if (rng() % 4 == 0) x.set(i, specials[rng() % 3]);
  return x;
}

TEST(CudaExtra, IsNaNIsInf) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (const auto& s : std::vector<std::vector<int64_t>>{{3, 5, 7}, {1027}, {}}) {
    run_float_dtypes(KernelCase{"IsNaN", {with_specials(rng, s)}}, seed, /*bf16=*/true);
    for (int64_t neg : {0, 1})
      for (int64_t pos : {0, 1}) {
        KernelCase c{"IsInf", {with_specials(rng, s)}};
        c.attrs.set("detect_negative", neg);
        c.attrs.set("detect_positive", pos);
        c.label = "neg " + std::to_string(neg) + " pos " + std::to_string(pos);
        run_float_dtypes(c, seed, /*bf16=*/true);
      }
  }
}

TEST(CudaExtra, DropoutInference) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  // With the mask output, and with ratio omitted and training_mode false as a host input.
  run_float_dtypes(KernelCase{"Dropout", {rnd(rng, {3, 5, 7})}, {}, 13, 2}, seed);
  Tensor off = Tensor::empty(DataType::kBool, {});
  off.set(0, 0.0);
  run_float_dtypes(KernelCase{"Dropout", {rnd(rng, {1027}), Tensor(), off}, {}, 13, 2}, seed);
  run_float_dtypes(KernelCase{"Dropout", {rnd(rng, {4, 9})}, {}, 13, 1}, seed, /*bf16=*/true);
}

// ---- reductions -------------------------------------------------------------------------------

TEST(CudaExtra, MoreReductions) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const std::vector<std::vector<int64_t>> axes_sets = {{1}, {0, 2}, {-1}, {}, {1, 3, 4}};
  // Prod: factors near 1, so hundreds of them stay inside float16 range.
  const UnaryCase ops[] = {{"ReduceProd", 0.9, 1.1},      {"ReduceSumSquare", -2, 2}, {"ReduceL1", -2, 2},
                           {"ReduceL2", -2, 2},          {"ReduceLogSum", 0.1, 2},   {"ReduceLogSumExp", -5, 5}};
  for (const auto& op : ops)
    for (const auto& axes : axes_sets)
      for (int64_t keep : {0, 1}) {
        KernelCase c{op.op, {rnd(rng, {2, 3, 4, 5, 3}, op.lo, op.hi)}, {}, 18};
        if (!axes.empty()) c.inputs.push_back(int64_vec(axes));
        c.attrs.set("keepdims", keep);
        c.tol16 = 2e-2;
        c.label = "axes input " + shape_label(axes) + " keepdims " + std::to_string(keep);
        run_float_dtypes(c, seed, /*bf16=*/true);
        KernelCase a{op.op, {rnd(rng, {7, 5, 66}, op.lo, op.hi)}, {}, 13};
        std::vector<int64_t> ax;
        for (int64_t v : axes)
          if (v < 3) ax.push_back(v);
        if (!ax.empty()) a.attrs.set("axes", ax);
        a.attrs.set("keepdims", keep);
        a.tol16 = 2e-2;
        a.label = "axes attribute " + shape_label(ax);
        if (std::string(op.op) == "ReduceProd" && ax.empty()) continue;  // 2310 factors: under/overflow
        run_float_dtypes(a, seed);
      }
  // noop_with_empty_axes: a copy for Prod/SumSquare/L2, the per-element function for L1/LogSum/LogSumExp.
  for (const auto& op : ops) {
    KernelCase c{op.op, {rnd(rng, {3, 4, 5}, op.lo, op.hi)}, {}, 18};
    c.attrs.set("noop_with_empty_axes", int64_t{1});
    c.label = "noop";
    run_float_dtypes(c, seed);
  }
  // A long reduction (several passes of the block).
  run_float_dtypes(KernelCase{"ReduceLogSumExp", {rnd(rng, {3, 5000}, -20, 20)}, {}, 13}, seed);
}

TEST(CudaExtra, IntegerReductions) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare", "ReduceL1"})
    for (DataType t : {kI32, kI64})
      for (const auto& axes : std::vector<std::vector<int64_t>>{{1}, {0, 2}, {}}) {
        const bool prod = std::string(op) == "ReduceProd";
        KernelCase c{op, {ints(rng, {3, 4, 5}, prod ? -3 : -100, prod ? 3 : 100, t)}, {}, 18};
        if (!axes.empty()) c.inputs.push_back(int64_vec(axes));
        c.label = "axes " + shape_label(axes);
        run_kernel_case(c, kF32, seed);
      }
}

// ---- ArgMax / ArgMin / Hardmax ----------------------------------------------------------------

TEST(CudaExtra, ArgMaxArgMin) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  struct Case {
    std::vector<int64_t> dims;
    int64_t axis;
  };
  // Rows of 1 to 3000 elements along the axis; contiguous (inner 1) and strided.
  const Case cases[] = {{{3, 5, 7}, 0}, {{3, 5, 7}, 1}, {{3, 5, 7}, -1}, {{4, 100}, 1},
                        {{6, 3000}, -1}, {{33}, 0},     {{5, 1, 4}, 1},  {{2, 70, 3}, 1}};
  for (const char* op : {"ArgMax", "ArgMin"})
    for (const auto& cs : cases)
      for (int64_t keep : {0, 1})
        for (int64_t last : {0, 1}) {
          KernelCase c{op, {int_floats(rng, cs.dims, -4, 4)}};  // many ties
          c.attrs.set("axis", cs.axis);
          c.attrs.set("keepdims", keep);
          c.attrs.set("select_last_index", last);
          c.label = shape_label(cs.dims) + " axis " + std::to_string(cs.axis) + " last " + std::to_string(last);
          run_float_dtypes(c, seed, /*bf16=*/true);
          KernelCase r = c;
          r.inputs = {rnd(rng, cs.dims, -3, 3)};  // distinct values
          run_float_dtypes(r, seed);
          for (DataType t : {kI32, kI64, DataType::kInt8, DataType::kUInt8}) {
            KernelCase i = c;
            i.inputs = {ints(rng, cs.dims, t == DataType::kUInt8 ? 0 : -5, 5, t)};
            run_kernel_case(i, kF32, seed);
          }
        }
}

TEST(CudaExtra, Hardmax) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (int opset : {11, 13})
    for (int64_t axis : {-1, 0, 1, 2})
      for (const auto& d : std::vector<std::vector<int64_t>>{{3, 4, 5}, {2, 3, 64}}) {
        KernelCase c{"Hardmax", {int_floats(rng, d, -3, 3)}, {}, opset};  // ties: the first wins
        c.attrs.set("axis", axis);
        c.label = "opset " + std::to_string(opset) + " axis " + std::to_string(axis) + " " + shape_label(d);
        run_float_dtypes(c, seed, /*bf16=*/true);
      }
  run_float_dtypes(KernelCase{"Hardmax", {rnd(rng, {7, 1000})}}, seed);
}

// ---- CumSum, Trilu ----------------------------------------------------------------------------

TEST(CudaExtra, CumSum) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  struct Case {
    std::vector<int64_t> dims;
    int64_t axis;
  };
  // Strided lines, short contiguous rows, and long contiguous rows (one block per row).
  const Case cases[] = {{{3, 5, 7}, 1}, {{3, 5, 7}, 0}, {{3, 5, 7}, -1}, {{4, 1000}, 1}, {{2, 3001}, -1},
                        {{77}, 0},      {{5, 300}, 1}};
  for (const auto& cs : cases)
    for (int64_t excl : {0, 1})
      for (int64_t rev : {0, 1}) {
        KernelCase c{"CumSum", {rnd(rng, cs.dims, -1, 1), int64_scalar(cs.axis)}};
        c.attrs.set("exclusive", excl);
        c.attrs.set("reverse", rev);
        c.tol32 = 1e-5;
        c.tol16 = 1e-2;
        c.label = shape_label(cs.dims) + " axis " + std::to_string(cs.axis) + " exclusive " + std::to_string(excl) +
                  " reverse " + std::to_string(rev);
        run_float_dtypes(c, seed, /*bf16=*/true);
        for (DataType t : {kI32, kI64}) {
          KernelCase i = c;
          i.inputs[0] = ints(rng, cs.dims, -1000, 1000, t);
          i.inputs[1] = Tensor::from_doubles(kI32, {1}, {static_cast<double>(cs.axis)});  // int32 axis, shape [1]
          run_kernel_case(i, kF32, seed);
        }
      }
}

TEST(CudaExtra, Trilu) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (const auto& d : std::vector<std::vector<int64_t>>{{5, 7}, {2, 3, 6, 4}, {1, 9, 9}})
    for (int64_t upper : {0, 1})
      for (int64_t k : {-2, 0, 3, 100}) {
        KernelCase c{"Trilu", {rnd(rng, d, 0.5, 2), int64_scalar(k)}};  // no zeros: an unwritten zero shows
        c.attrs.set("upper", upper);
        c.label = shape_label(d) + " upper " + std::to_string(upper) + " k " + std::to_string(k);
        run_float_dtypes(c, seed);
        KernelCase i = c;
        i.inputs[0] = ints(rng, d, 1, 1000, kI64);
        run_kernel_case(i, kF32, seed);
      }
  run_float_dtypes(KernelCase{"Trilu", {rnd(rng, {4, 6}, 0.5, 2)}}, seed);  // k omitted
}

// ---- GatherElements / ScatterElements ---------------------------------------------------------

// Indices along `axis` in [-extent, extent) (negative ones count from the end).
Tensor axis_indices(std::mt19937& rng, std::vector<int64_t> dims, int64_t extent, DataType t) {
  return ints(rng, std::move(dims), -extent, extent - 1, t);
}

TEST(CudaExtra, GatherElements) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  struct Case {
    std::vector<int64_t> data, ind;
    int64_t axis;
  };
  const Case cases[] = {{{3, 5, 7}, {3, 4, 7}, 1}, {{3, 5, 7}, {6, 5, 7}, 0}, {{3, 5, 7}, {2, 3, 9}, -1},
                        {{13}, {20}, 0},           {{4, 1, 6}, {4, 1, 3}, 2}};
  for (const auto& cs : cases)
    for (DataType it : {kI32, kI64}) {
      const int64_t a = cs.axis < 0 ? cs.axis + static_cast<int64_t>(cs.data.size()) : cs.axis;
      KernelCase c{"GatherElements", {rnd(rng, cs.data, -2, 2), axis_indices(rng, cs.ind, cs.data[a], it)}};
      c.attrs.set("axis", cs.axis);
      c.tol32 = c.tol16 = 0;  // a copy
      c.label = shape_label(cs.data) + " by " + shape_label(cs.ind) + " axis " + std::to_string(cs.axis);
      run_float_dtypes(c, seed, /*bf16=*/true);
      KernelCase i = c;
      i.inputs[0] = ints(rng, cs.data, -1000, 1000, kI64);
      run_kernel_case(i, kF32, seed);
    }
}

// ScatterElements indices that are distinct along the axis for every other position: for each
// line along the axis, `count` distinct positions, each written as negative with probability 1/2.
Tensor distinct_axis_indices(std::mt19937& rng, const std::vector<int64_t>& ind_dims, int64_t axis, int64_t extent,
                             DataType t) {
  Tensor out = Tensor::empty(t, ind_dims);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(ind_dims.size()); ++d)
    if (d < axis) outer *= ind_dims[d];
    else if (d > axis) inner *= ind_dims[d];
  const int64_t count = ind_dims[axis];
  std::vector<int64_t> perm(extent);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), rng);
      for (int64_t k = 0; k < count; ++k) {
        const int64_t v = (rng() & 1) ? perm[k] - extent : perm[k];
        out.set((o * count + k) * inner + i, static_cast<double>(v));
      }
    }
  return out;
}

TEST(CudaExtra, ScatterElements) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  struct Case {
    std::vector<int64_t> data, ind;
    int64_t axis;
  };
  const Case cases[] = {{{4, 6}, {3, 6}, 0}, {{4, 6}, {4, 5}, 1}, {{3, 5, 7}, {3, 2, 7}, 1}, {{3, 5, 7}, {2, 4, 7}, -1},
                        {{50}, {31}, 0}};
  for (const auto& cs : cases)
    for (DataType it : {kI32, kI64})
      for (const char* red : {"none", "add", "mul", "max", "min"}) {
        const int64_t a = cs.axis < 0 ? cs.axis + static_cast<int64_t>(cs.data.size()) : cs.axis;
        Tensor ind = distinct_axis_indices(rng, cs.ind, a, cs.data[a], it);
        KernelCase c{"ScatterElements", {rnd(rng, cs.data, 0.5, 2), ind, rnd(rng, cs.ind, 0.5, 2)}, {}, 18};
        c.attrs.set("axis", cs.axis);
        c.attrs.set("reduction", std::string(red));
        c.label = shape_label(cs.data) + " by " + shape_label(cs.ind) + " axis " + std::to_string(cs.axis) +
                  " reduction " + red;
        run_float_dtypes(c, seed, /*bf16=*/true);
        KernelCase i = c;
        i.inputs[0] = ints(rng, cs.data, -100, 100, kI64);
        i.inputs[2] = ints(rng, cs.ind, -100, 100, kI64);
        run_kernel_case(i, kF32, seed);
        i.inputs[0] = ints(rng, cs.data, -100, 100, kI32);
        i.inputs[2] = ints(rng, cs.ind, -100, 100, kI32);
        run_kernel_case(i, kF32, seed);
      }
  // Duplicate indices with an accumulating reduction: every update lands.
  for (const char* red : {"add", "max"}) {
    KernelCase c{"ScatterElements", {rnd(rng, {5, 4}), ints(rng, {40, 4}, -5, 4, kI64), rnd(rng, {40, 4})}, {}, 18};
    c.attrs.set("reduction", std::string(red));
    c.label = std::string("duplicates ") + red;
    run_float_dtypes(c, seed);
  }
}

// ---- GatherND / ScatterND ---------------------------------------------------------------------

// `tuples` distinct index tuples into `dims` (as [tuples, m]), entries negative at random.
Tensor distinct_tuples(std::mt19937& rng, const std::vector<int64_t>& lead, const std::vector<int64_t>& dims, DataType t) {
  const int64_t m = static_cast<int64_t>(dims.size());
  int64_t space = 1, tuples = 1;
  for (int64_t d : dims) space *= d;
  for (int64_t d : lead) tuples *= d;
  std::vector<int64_t> flat(space);
  std::iota(flat.begin(), flat.end(), 0);
  std::shuffle(flat.begin(), flat.end(), rng);
  std::vector<int64_t> shape = lead;
  shape.push_back(m);
  Tensor out = Tensor::empty(t, shape);
  for (int64_t q = 0; q < tuples; ++q) {
    int64_t f = flat[q];
    for (int64_t j = m - 1; j >= 0; --j) {
      int64_t v = f % dims[j];
      f /= dims[j];
      if (rng() & 1) v -= dims[j];
      out.set(q * m + j, static_cast<double>(v));
    }
  }
  return out;
}

TEST(CudaExtra, GatherND) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (DataType it : {kI64}) {  // the ONNX schema (and so the CPU reference) takes int64 indices only
    struct Case {
      std::vector<int64_t> data, ind;
      int64_t batch_dims;
    };
    const Case cases[] = {{{4, 5, 6}, {3, 2}, 0},    {{4, 5, 6}, {2, 3, 1}, 0}, {{4, 5, 6}, {7, 3}, 0},
                          {{2, 5, 6}, {2, 3, 1}, 1}, {{2, 3, 5, 6}, {2, 3, 4, 1}, 2}, {{3, 4}, {2}, 0}};
    for (const auto& cs : cases) {
      const int64_t m = cs.ind.back();
      Tensor ind = Tensor::empty(it, cs.ind);
      for (int64_t q = 0; q < ind.numel(); ++q) {
        const int64_t extent = cs.data[cs.batch_dims + q % m];
        std::uniform_int_distribution<int64_t> d(-extent, extent - 1);
        ind.set(q, static_cast<double>(d(rng)));
      }
      KernelCase c{"GatherND", {rnd(rng, cs.data, -2, 2), ind}};
      c.attrs.set("batch_dims", cs.batch_dims);
      c.tol32 = c.tol16 = 0;
      c.label = shape_label(cs.data) + " by " + shape_label(cs.ind) + " batch_dims " + std::to_string(cs.batch_dims);
      run_float_dtypes(c, seed, /*bf16=*/true);
      KernelCase i = c;
      i.inputs[0] = ints(rng, cs.data, -1000, 1000, kI32);
      run_kernel_case(i, kF32, seed);
    }
  }
}

TEST(CudaExtra, ScatterND) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const std::vector<int64_t> data = {4, 5, 6};
  for (DataType it : {kI64})  // int64 indices only, as the ONNX schema
    for (const char* red : {"none", "add", "mul", "max", "min"})
      for (int64_t m : {1, 2, 3}) {
        const std::vector<int64_t> lead = m == 1 ? std::vector<int64_t>{3} : std::vector<int64_t>{2, 3};
        Tensor ind = distinct_tuples(rng, lead, std::vector<int64_t>(data.begin(), data.begin() + m), it);
        std::vector<int64_t> ud = lead;
        ud.insert(ud.end(), data.begin() + m, data.end());
        KernelCase c{"ScatterND", {rnd(rng, data, 0.5, 2), ind, rnd(rng, ud, 0.5, 2)}, {}, 18};
        c.attrs.set("reduction", std::string(red));
        c.label = "m " + std::to_string(m) + " reduction " + red;
        run_float_dtypes(c, seed, /*bf16=*/true);
        KernelCase i = c;
        i.inputs[0] = ints(rng, data, -100, 100, kI64);
        i.inputs[2] = ints(rng, ud, -100, 100, kI64);
        run_kernel_case(i, kF32, seed);
      }
  // Duplicate tuples with add: every update lands.
  KernelCase c{"ScatterND", {rnd(rng, {4, 5}), ints(rng, {30, 1}, -4, 3, kI64), rnd(rng, {30, 5})}, {}, 18};
  c.attrs.set("reduction", std::string("add"));
  c.label = "duplicates add";
  run_float_dtypes(c, seed);
}

// ---- OneHot, DepthToSpace / SpaceToDepth ------------------------------------------------------

TEST(CudaExtra, OneHot) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const int64_t depth = 7;
  for (int64_t axis : {-1, 0, 1, 2})
    for (DataType it : {kI32, kI64, kF32}) {
      // Indices in [-depth, depth + 1]: negative ones count from the end, too large ones are all off.
      Tensor ind = ints(rng, {3, 5}, -depth, depth + 1, it);
      Tensor vals = rnd(rng, {2}, 0.5, 2);
      KernelCase c{"OneHot", {ind, int64_scalar(depth), vals}};
      c.attrs.set("axis", axis);
      c.tol32 = c.tol16 = 0;
      c.label = "axis " + std::to_string(axis) + " indices " + dtype_name(it);
      run_float_dtypes(c, seed);
      KernelCase i = c;
      i.inputs[2] = ints(rng, {2}, 1, 100, kI64);
      run_kernel_case(i, kF32, seed);
    }
}

TEST(CudaExtra, DepthToSpaceSpaceToDepth) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (const char* mode : {"DCR", "CRD"})
    for (const auto& [dims, b] : std::vector<std::pair<std::vector<int64_t>, int64_t>>{
             {{2, 12, 3, 5}, 2}, {{1, 18, 2, 3}, 3}, {{2, 8, 1, 1}, 2}, {{1, 4, 5, 7}, 1}}) {
      KernelCase c{"DepthToSpace", {rnd(rng, dims)}};
      c.attrs.set("blocksize", b);
      c.attrs.set("mode", std::string(mode));
      c.tol32 = c.tol16 = 0;
      c.label = std::string(mode) + " " + shape_label(dims) + " b " + std::to_string(b);
      run_float_dtypes(c, seed);
      KernelCase i = c;
      i.inputs[0] = ints(rng, dims, -1000, 1000, kI64);
      run_kernel_case(i, kF32, seed);
    }
  for (const auto& [dims, b] : std::vector<std::pair<std::vector<int64_t>, int64_t>>{
           {{2, 3, 6, 4}, 2}, {{1, 2, 9, 6}, 3}, {{2, 5, 2, 2}, 2}}) {
    KernelCase c{"SpaceToDepth", {rnd(rng, dims)}};
    c.attrs.set("blocksize", b);
    c.tol32 = c.tol16 = 0;
    c.label = shape_label(dims) + " b " + std::to_string(b);
    run_float_dtypes(c, seed);
    KernelCase i = c;
    i.inputs[0] = ints(rng, dims, -1000, 1000, kI32);
    run_kernel_case(i, kF32, seed);
  }
}

// ---- TopK, Compress ---------------------------------------------------------------------------

TEST(CudaExtra, TopK) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  struct Case {
    std::vector<int64_t> dims;
    int64_t axis, k;
  };
  // Shared-memory lines, k = n, k = 0, a strided axis, and lines too long for shared memory: the
  // tournament with one, three (90000 -> 22000 -> 6000 -> 2000 pairs) and strided rounds, and the
  // global-memory sort for a k too large for the tournament (2k > its 4096-entry chunk).
  const Case cases[] = {{{3, 50}, -1, 5},      {{4, 7, 3}, 1, 7},     {{4, 7, 3}, 1, 0},
                        {{5, 33}, 1, 1},       {{2, 6, 9}, 0, 2},     {{2, 20000}, 1, 10},
                        {{1}, 0, 1},           {{3, 1000}, 1, 1000},  {{2, 90000}, 1, 1000},
                        {{2, 9000, 3}, 1, 300}, {{1, 10000}, -1, 3000}, {{2, 4097}, 1, 2048}};
  for (const auto& cs : cases)
    for (int64_t largest : {0, 1})
      for (int64_t sorted : {0, 1}) {
        const std::string label = shape_label(cs.dims) + " axis " + std::to_string(cs.axis) + " k " +
                                  std::to_string(cs.k) + " largest " + std::to_string(largest);
        // Ties (small integers): equal values come in index order, as the CPU's stable sort.
        KernelCase c{"TopK", {int_floats(rng, cs.dims, -20, 20), int64_vec({cs.k})}, {}, 11, 2};
        c.attrs.set("axis", cs.axis);
        c.attrs.set("largest", largest);
        c.attrs.set("sorted", sorted);
        c.tol32 = c.tol16 = 0;
        c.label = label + " ties";
        run_float_dtypes(c, seed, /*bf16=*/true);
        KernelCase r = c;
        r.inputs[0] = rnd(rng, cs.dims, -3, 3);
        r.label = label;
        run_kernel_case(r, kF32, seed);
        for (DataType t : {kI32, kI64}) {
          KernelCase i = c;
          i.inputs[0] = ints(rng, cs.dims, -50, 50, t);
          run_kernel_case(i, kF32, seed);
        }
      }
}

TEST(CudaExtra, Compress) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  struct Case {
    std::vector<int64_t> dims;
    int64_t cond_len;
    bool has_axis;
    int64_t axis;
  };
  // Shorter condition than the axis, no axis (flattened), and more kept slots than one launch takes.
  const Case cases[] = {{{4, 6}, 6, true, 1},   {{4, 6}, 3, true, 0}, {{3, 5, 7}, 5, true, -2},
                        {{3, 5, 7}, 100, false, 0}, {{2, 1500}, 1500, true, 1}, {{5, 4}, 4, true, 1}};
  for (const auto& cs : cases)
    for (bool all_false : {false, true}) {
      Tensor cond = rnd_bool(rng, {cs.cond_len});
      if (all_false)
        for (int64_t i = 0; i < cond.numel(); ++i) cond.set(i, 0.0);
      KernelCase c{"Compress", {rnd(rng, cs.dims), cond}};
      if (cs.has_axis) c.attrs.set("axis", cs.axis);
      c.tol32 = c.tol16 = 0;
      c.label = shape_label(cs.dims) + " cond " + std::to_string(cs.cond_len) + (all_false ? " all false" : "");
      run_float_dtypes(c, seed);
      KernelCase i = c;
      i.inputs[0] = ints(rng, cs.dims, -1000, 1000, kI64);
      run_kernel_case(i, kF32, seed);
    }
}

TEST(CudaExtra, ConstantOfShapeRange) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-3, 3);
  for (DataType t : {kF32, DataType::kFloat16, kI32, kI64}) {
    KernelCase c{"ConstantOfShape", {int64_vec({3, 1, 5})}, {}, 17};
    Tensor v = Tensor::empty(t, {1});
    v.set(0, dtype_is_integer(t) ? std::round(u(rng) * 100) : u(rng));
    c.attrs.set("value", v);
    c.tol32 = c.tol16 = 0;
    c.label = std::string("value ") + dtype_name(t);
    run_kernel_case(c, kF32, seed);
  }
  run_kernel_case(KernelCase{"ConstantOfShape", {int64_vec({1027})}}, kF32, seed);  // default float 0
  for (DataType t : {kF32, kI32, kI64}) {
    const bool i = dtype_is_integer(t);
    const double start = i ? std::round(u(rng) * 10) : u(rng), delta = i ? 3 : 0.37;
    KernelCase c{"Range", {Tensor::from_doubles(t, {}, {start}), Tensor::from_doubles(t, {}, {start + 97 * delta + delta / 2}),
                           Tensor::from_doubles(t, {}, {delta})}};
    c.keep_f32 = {0, 1, 2};
    c.label = std::string("range ") + dtype_name(t);
    run_kernel_case(c, kF32, seed);
    c.inputs[2] = Tensor::from_doubles(t, {}, {-delta});  // descending
    c.inputs[1] = Tensor::from_doubles(t, {}, {start - 50 * delta});
    run_kernel_case(c, kF32, seed);
  }
}

}  // namespace
}  // namespace graft::testing
