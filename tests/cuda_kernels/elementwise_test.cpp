// CUDA elementwise ops vs the CPU reference: unary, broadcasting binary, comparisons, Where, Cast.
#include "cuda_kernel_harness.h"
#include "ops/elementwise/elementwise.h"  // launch_add_periodic_bias

namespace graft::testing {
namespace {

struct UnaryCase {
  const char* op;
  double lo, hi;
};

TEST(CudaElementwise, UnaryOpsMatchReference) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const UnaryCase cases[] = {
      {"Relu", -2, 2},    {"LeakyRelu", -2, 2}, {"Sigmoid", -6, 6},    {"Tanh", -3, 3},      {"Erf", -2, 2},
      {"Gelu", -3, 3},    {"HardSigmoid", -4, 4}, {"HardSwish", -4, 4}, {"Exp", -3, 3},       {"Log", 0.1, 3},
      {"Sqrt", 0.1, 3},   {"Reciprocal", 0.5, 2}, {"Neg", -2, 2},       {"Abs", -2, 2},       {"Floor", -3, 3},
      {"Ceil", -3, 3},    {"Sin", -3, 3},        {"Cos", -3, 3},       {"Softplus", -4, 4},  {"Elu", -2, 2},
  };
  // Odd sizes, rank 1 (vector path plus tail), rank 5, and a scalar.
  const std::vector<std::vector<int64_t>> shapes = {{3, 5, 7}, {1027}, {2, 3, 1, 4, 5}, {}};
  for (const auto& uc : cases)
    for (const auto& s : shapes) {
      KernelCase c{uc.op, {rnd(rng, s, uc.lo, uc.hi)}};
      if (std::string(uc.op) == "Floor" || std::string(uc.op) == "Ceil") c.tol16 = 0;  // exact on rounded inputs
      run_float_dtypes(c, seed, /*bf16=*/true);
    }
}

TEST(CudaElementwise, UnaryAttributes) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  {
    KernelCase c{"LeakyRelu", {rnd(rng, {4, 9})}};
    c.attrs.set("alpha", 0.3f);
    run_float_dtypes(c, seed);
  }
  {
    KernelCase c{"HardSigmoid", {rnd(rng, {4, 9}, -5, 5)}};
    c.attrs.set("alpha", 0.3f);
    c.attrs.set("beta", 0.4f);
    run_float_dtypes(c, seed);
  }
  {
    KernelCase c{"Gelu", {rnd(rng, {4, 9}, -3, 3)}, {}, 20};
    c.attrs.set("approximate", std::string("tanh"));
    run_float_dtypes(c, seed);
  }
  {
    KernelCase c{"Elu", {rnd(rng, {33}, -3, 3)}};
    c.attrs.set("alpha", 0.7f);
    run_float_dtypes(c, seed);
  }
  {
    // Clip bounds as host scalar inputs; one omitted.
    run_float_dtypes(KernelCase{"Clip", {rnd(rng, {5, 7}, -2, 2), Tensor::from_doubles(DataType::kFloat32, {}, {-0.5}),
                                         Tensor::from_doubles(DataType::kFloat32, {}, {0.75})}},
                     seed);
    run_float_dtypes(KernelCase{"Clip", {rnd(rng, {5, 7}, -2, 2), Tensor(), Tensor::from_doubles(DataType::kFloat32, {}, {0.25})}},
                     seed);
    run_float_dtypes(KernelCase{"Clip", {rnd(rng, {5, 7}, -2, 2)}}, seed);
  }
}

TEST(CudaElementwise, IntegerUnary) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (const char* op : {"Relu", "Neg", "Abs"})
    for (DataType t : {DataType::kInt32, DataType::kInt64, DataType::kInt8})
      run_kernel_case(KernelCase{op, {rnd(rng, {37}, -50, 50, t)}}, DataType::kFloat32, seed);
}

struct Shapes2 {
  std::vector<int64_t> a, b;
};

TEST(CudaElementwise, BinaryBroadcasting) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const std::vector<Shapes2> shapes = {
      {{3, 5, 7}, {3, 5, 7}},        {{2, 3, 4, 5}, {4, 1}},     {{5}, {2, 1, 3, 1, 5}}, {{}, {7}},
      {{1, 3, 1, 2}, {4, 1, 5, 1}},  {{2, 3, 4, 5, 6}, {1, 3, 1, 5, 1}}, {{1001}, {1}},
  };
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min"})
    for (const auto& s : shapes) {
      const bool pos = std::string(op) == "Pow" || std::string(op) == "Div";
      KernelCase c{op, {rnd(rng, s.a, pos ? 0.5 : -2, 2), rnd(rng, s.b, pos ? 0.5 : -2, 2)}};
      if (std::string(op) == "Pow") c.inputs[1] = rnd(rng, s.b, -2, 2);
      run_float_dtypes(c, seed, /*bf16=*/true);
    }
  // PRelu: slope broadcasts to X (per-channel and scalar).
  run_float_dtypes(KernelCase{"PRelu", {rnd(rng, {2, 3, 4, 5}), rnd(rng, {3, 1, 1})}}, seed);
  run_float_dtypes(KernelCase{"PRelu", {rnd(rng, {2, 3, 4, 5}), rnd(rng, {1})}}, seed);
  // Variadic Max/Min with three inputs.
  run_float_dtypes(KernelCase{"Max", {rnd(rng, {4, 5}), rnd(rng, {5}), rnd(rng, {4, 1})}}, seed);
  run_float_dtypes(KernelCase{"Min", {rnd(rng, {4, 5}), rnd(rng, {5}), rnd(rng, {4, 1})}}, seed);
  // Integers.
  for (const char* op : {"Add", "Sub", "Mul", "Max", "Min"})
    for (DataType t : {DataType::kInt32, DataType::kInt64})
      run_kernel_case(KernelCase{op, {rnd(rng, {3, 4}, -100, 100, t), rnd(rng, {4}, -100, 100, t)}}, DataType::kFloat32, seed);
}

TEST(CudaElementwise, Comparisons) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  // Small integers stored as floats so equality happens (and is exact in fp16).
  auto ints = [&](std::vector<int64_t> d) {
    Tensor t = rnd(rng, d, -3, 3);
    for (int64_t i = 0; i < t.numel(); ++i) t.set(i, std::floor(t.get(i)));
    return t;
  };
  for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"}) {
    run_float_dtypes(KernelCase{op, {ints({3, 4, 5}), ints({4, 1})}}, seed);
    run_float_dtypes(KernelCase{op, {ints({2, 1, 3, 1, 5}), ints({5})}}, seed);
    run_kernel_case(KernelCase{op, {rnd(rng, {6, 7}, -4, 4, DataType::kInt64), rnd(rng, {7}, -4, 4, DataType::kInt64)}},
                    DataType::kFloat32, seed);
  }
  run_kernel_case(KernelCase{"Equal", {rnd_bool(rng, {4, 6}), rnd_bool(rng, {6})}}, DataType::kFloat32, seed);
  run_kernel_case(KernelCase{"And", {rnd_bool(rng, {4, 6}), rnd_bool(rng, {4, 1})}}, DataType::kFloat32, seed);
  run_kernel_case(KernelCase{"Or", {rnd_bool(rng, {4, 6}), rnd_bool(rng, {6})}}, DataType::kFloat32, seed);
  run_kernel_case(KernelCase{"Not", {rnd_bool(rng, {3, 7})}}, DataType::kFloat32, seed);
}

TEST(CudaElementwise, WhereCastIdentity) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  run_float_dtypes(KernelCase{"Where", {rnd_bool(rng, {3, 1, 5}), rnd(rng, {4, 5}), rnd(rng, {3, 4, 1})}}, seed);
  run_float_dtypes(KernelCase{"Where", {rnd_bool(rng, {2, 3, 2, 2, 3}), rnd(rng, {3}), rnd(rng, {})}}, seed);
  run_kernel_case(KernelCase{"Where", {rnd_bool(rng, {9}), rnd(rng, {9}, -9, 9, DataType::kInt64), rnd(rng, {1}, -9, 9, DataType::kInt64)}},
                  DataType::kFloat32, seed);
  run_float_dtypes(KernelCase{"Identity", {rnd(rng, {3, 5, 7})}}, seed);
  const std::pair<DataType, DataType> casts[] = {
      {DataType::kFloat32, DataType::kFloat16}, {DataType::kFloat32, DataType::kInt32},
      {DataType::kFloat32, DataType::kInt64},   {DataType::kFloat32, DataType::kBool},
      {DataType::kInt64, DataType::kFloat32},   {DataType::kInt32, DataType::kInt64},
      {DataType::kBool, DataType::kFloat32},    {DataType::kFloat16, DataType::kFloat32},
      {DataType::kFloat32, DataType::kBFloat16}, {DataType::kInt8, DataType::kFloat16},
  };
  for (auto [from, to] : casts) {
    Tensor x = from == DataType::kBool ? rnd_bool(rng, {5, 7}) : rnd(rng, {5, 7}, -100, 100, from);
    if (x.dtype() != from) x = x.cast(from).value();
    KernelCase c{"Cast", {x}};
    c.attrs.set("to", static_cast<int64_t>(to));
    c.label = std::string(dtype_name(from)) + "->" + dtype_name(to);
    c.tol16 = c.tol32 = to == DataType::kBFloat16 ? 1e-2 : 1e-3;  // one rounding of the output
    run_kernel_case(c, DataType::kFloat32, seed);
  }
}


// Fast paths of the binary kernels: same-shape and scalar operands (vectorized groups plus a scalar
// tail: sizes not a multiple of the group), the scalar on either side, and the 32-bit broadcast
// path (rows, columns, rank 3+), for arithmetic and comparisons.
TEST(CudaElementwise, BinaryFastPaths) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const std::vector<Shapes2> shapes = {
      {{1003}, {1003}}, {{3}, {3}}, {{8, 16}, {8, 16}},          // same shape: tail only, groups + tail, groups only
      {{37, 41}, {}}, {{}, {37, 41}}, {{5, 7}, {1}}, {{1}, {9}},  // scalar operand on either side
      {{6, 33}, {33}}, {{6, 33}, {6, 1}}, {{4, 1, 5}, {1, 3, 5}}, // row, column, both broadcast
      {{}, {}},
  };
  for (const char* op : {"Mul", "Add", "Div", "Sub"})
    for (const auto& sh : shapes) {
      KernelCase c{op, {rnd(rng, sh.a, 0.5, 2), rnd(rng, sh.b, 0.5, 2)}};
      run_float_dtypes(c, seed, /*bf16=*/true);
    }
  for (const auto& sh : shapes)
    for (const char* op : {"Less", "Equal"}) {
      Tensor a = rnd(rng, sh.a, -3, 3), b = rnd(rng, sh.b, -3, 3);
      for (Tensor* t : {&a, &b})
        for (int64_t i = 0; i < t->numel(); ++i) t->set(i, std::floor(t->get(i)));
      run_float_dtypes(KernelCase{op, {a, b}}, seed);
    }
  for (DataType t : {DataType::kInt32, DataType::kInt64}) {
    run_kernel_case(KernelCase{"Mul", {rnd(rng, {1001}, -100, 100, t), rnd(rng, {}, -100, 100, t)}}, DataType::kFloat32, seed);
    run_kernel_case(KernelCase{"Add", {rnd(rng, {1001}, -100, 100, t), rnd(rng, {1001}, -100, 100, t)}}, DataType::kFloat32, seed);
  }
  run_kernel_case(KernelCase{"And", {rnd_bool(rng, {1001}), rnd_bool(rng, {1001})}}, DataType::kFloat32, seed);
  run_kernel_case(KernelCase{"Or", {rnd_bool(rng, {37}), rnd_bool(rng, {})}}, DataType::kFloat32, seed);
  run_float_dtypes(KernelCase{"Where", {rnd_bool(rng, {1001}), rnd(rng, {1001}), rnd(rng, {1001})}}, seed);
}

// The vectorized broadcast (binary_bcast_vec): the innermost axis a multiple of the vector width
// (8 halves, 4 floats, 2 int64s) with each operand running along it or broadcast over it: the SE
// gate of an NHWC engine, a per-row scale, an operand broadcast on an outer axis too, and inner
// extents that take the vector path only in float32 (12) or in no float type (20 halves, 6 floats
// with a column operand); comparisons write bytes in the same groups.
TEST(CudaElementwise, BinaryBroadcastVectorized) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const std::vector<Shapes2> shapes = {
      {{2, 196, 40}, {2, 1, 40}},  {{3, 49, 32}, {3, 49, 1}}, {{3, 1, 16}, {3, 5, 1}}, {{2, 7, 3, 24}, {7, 1, 24}},
      {{5, 1, 8}, {1, 6, 8}},      {{3, 12}, {3, 1}},         {{4, 20}, {20}},         {{2, 6}, {2, 1}},
  };
  for (const char* op : {"Mul", "Sub", "Div"})
    for (const auto& sh : shapes) {
      KernelCase c{op, {rnd(rng, sh.a, 0.5, 2), rnd(rng, sh.b, 0.5, 2)}};
      c.label = std::string(op);
      run_float_dtypes(c, seed, /*bf16=*/true);
      // Operands swapped: the broadcast one first.
      run_float_dtypes(KernelCase{op, {rnd(rng, sh.b, 0.5, 2), rnd(rng, sh.a, 0.5, 2)}}, seed, /*bf16=*/true);
    }
  for (const auto& sh : shapes) {
    Tensor a = rnd(rng, sh.a, -3, 3), b = rnd(rng, sh.b, -3, 3);
    for (Tensor* t : {&a, &b})
      for (int64_t i = 0; i < t->numel(); ++i) t->set(i, std::floor(t->get(i)));
    run_float_dtypes(KernelCase{"Greater", {a, b}}, seed);
  }
  run_kernel_case(KernelCase{"Add", {rnd(rng, {4, 6}, -100, 100, DataType::kInt64), rnd(rng, {4, 1}, -100, 100, DataType::kInt64)}},
                  DataType::kFloat32, seed);
  run_kernel_case(KernelCase{"Mul", {rnd(rng, {3, 4, 8}, -100, 100, DataType::kInt32), rnd(rng, {4, 8}, -100, 100, DataType::kInt32)}},
                  DataType::kFloat32, seed);
}

// y += bias[i % period] in place (a matmul's row bias when cuBLASLt has no bias epilogue, the
// unfused attention's score bias): odd periods and lengths, so rows start anywhere in the grid, and a
// length that walks the grid-stride loop more than once. A bad period is refused.
TEST(CudaElementwise, AddPeriodicBiasInPlace) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  struct Case {
    int64_t period, n;
  };
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16})
    for (const Case& c : {Case{1, 17}, Case{7, 7 * 13}, Case{1000, 1000 * 37}, Case{33, 33 * 70001}}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " period " + std::to_string(c.period) + " n " + std::to_string(c.n) +
                   " seed " + std::to_string(seed));
      const Tensor y = rnd(rng, {c.n}, -2, 2, dt), bias = rnd(rng, {c.period}, -2, 2, dt);
      DevBuf dy(y.nbytes()), db(bias.nbytes());
      ASSERT_TRUE(dy.p && db.p);
      ASSERT_EQ(cudaMemcpy(dy.p, y.data(), y.nbytes(), cudaMemcpyHostToDevice), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(db.p, bias.data(), bias.nbytes(), cudaMemcpyHostToDevice), cudaSuccess);
      ASSERT_EQ(cuda::k::launch_add_periodic_bias(static_cast<cuda::k::KType>(dt), dy.p, db.p, c.period, c.n, nullptr),
                cudaSuccess);
      Tensor got = Tensor::empty(dt, {c.n});
      ASSERT_EQ(cudaMemcpy(got.data(), dy.p, got.nbytes(), cudaMemcpyDeviceToHost), cudaSuccess);
      const std::vector<double> y0 = to_doubles(y), b = to_doubles(bias), g = to_doubles(got);
      const double tol = dt == DataType::kFloat32 ? 1e-6 : dt == DataType::kFloat16 ? 1e-3 : 8e-3;  // one rounding
      for (int64_t i = 0; i < c.n; ++i) {
        const double want = y0[static_cast<size_t>(i)] + b[static_cast<size_t>(i % c.period)];
        ASSERT_NEAR(g[static_cast<size_t>(i)], want, tol * (1.0 + std::fabs(want))) << "element " << i;
      }
    }
  EXPECT_EQ(cuda::k::launch_add_periodic_bias(cuda::k::KType::kF32, nullptr, nullptr, 0, 4, nullptr), cudaErrorInvalidValue);
}

}  // namespace
}  // namespace graft::testing
