// CUDA kernels of the transformer fusions vs their CPU references: GraftGemm (cuBLASLt epilogues:
// bias, Relu, GELU, residual; transB; alpha; N-D X), GraftAttention (batched cuBLASLt + softmax)
// and GraftElementwise (every opcode, a long program,
// mixed float16/float32 inputs). Float32 and float16, fresh random data, poisoned outputs.
#include "cuda_kernel_harness.h"
#include "ops/fused_transformer_ops.h"

namespace graft::testing {
namespace {

TEST(CudaFusedTransformer, GraftGemmEpilogues) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const std::vector<std::vector<int64_t>> xs = {{7, 64}, {2, 5, 64}, {3, 1, 4, 64}, {64}};
  const int64_t K = 64, N = 48;
  for (const auto& xd : xs)
    for (int tb = 0; tb < 2; ++tb)
      for (const char* act : {"", "Relu", "Gelu"})
        for (int bias = 0; bias < 3; ++bias) {  // none, [N], [1, N]
          std::vector<int64_t> wd = tb ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N};
          KernelCase c{"GraftGemm", {rnd(rng, xd), rnd(rng, wd, -0.3, 0.3)}};
          if (bias == 1) c.inputs.push_back(rnd(rng, {N}));
          if (bias == 2) c.inputs.push_back(rnd(rng, {1, N}));
          c.attrs.set("transB", static_cast<int64_t>(tb));
          c.attrs.set("activation", std::string(act));
          if (xd.size() == 3) c.attrs.set("alpha", 0.8f);
          if (xd.size() == 2 && tb == 1) {  // residual R (the C matrix), with or without a bias
            std::vector<int64_t> yd = xd;
            yd.back() = N;
            if (bias == 0) c.inputs.emplace_back();  // omitted bias
            c.inputs.push_back(rnd(rng, yd));
          }
          c.tol32 = 1e-4;
          // float16 GELU uses cuBLASLt's tanh form: within float16 rounding of the erf reference.
          c.tol16 = 1e-2;
          c.label = "X rank " + std::to_string(xd.size()) + " transB " + std::to_string(tb) + " act '" + act +
                    "' bias form " + std::to_string(bias);
          run_float_dtypes(c, seed, /*bf16=*/true);
        }
}

TEST(CudaFusedTransformer, GraftAttention) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  struct Shp { std::vector<int64_t> lead; int64_t S, D, S2, Dv; };
  // ViT-B/16 heads (197 tokens, head dim 64), a rank-3 [B*H, S, D] layout, odd sizes, one matrix.
  const std::vector<Shp> shapes = {{{2, 12}, 197, 64, 197, 64}, {{6}, 17, 16, 17, 16}, {{2, 3}, 7, 5, 9, 3}, {{}, 33, 8, 20, 8}};
  for (const auto& sh : shapes) {
    auto dims = [&](int64_t a, int64_t b) {
      std::vector<int64_t> d = sh.lead;
      d.push_back(a);
      d.push_back(b);
      return d;
    };
    KernelCase c{"GraftAttention", {rnd(rng, dims(sh.S, sh.D)), rnd(rng, dims(sh.D, sh.S2)), rnd(rng, dims(sh.S2, sh.Dv))}};
    c.attrs.set("scale", static_cast<float>(1.0 / std::sqrt(static_cast<double>(sh.D))));
    c.tol32 = 1e-4;
    c.label = "S " + std::to_string(sh.S) + " D " + std::to_string(sh.D) + " S2 " + std::to_string(sh.S2);
    run_float_dtypes(c, seed, /*bf16=*/true);
  }
}

// One instruction (opcode, dst, a, b, c) per field group.
std::vector<int64_t> instr(EwOp op, int64_t dst, int64_t a, int64_t b = 0, int64_t c = 0) {
  return {static_cast<int64_t>(op), dst, a, b, c};
}

TEST(CudaFusedTransformer, GraftElementwiseEachOpcode) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (int op = 0; op < static_cast<int>(EwOp::kCount); ++op) {
    const EwOp e = static_cast<EwOp>(op);
    // Inputs in (0.1, 2): valid for Log, Sqrt, Pow, Reciprocal; sign-sensitive ops also see
    // negative values through Sub(x0, 1) below.
    KernelCase c{"GraftElementwise", {rnd(rng, {3, 257}, 0.1, 2.0), rnd(rng, {3, 257}, 0.1, 2.0)}};
    std::vector<int64_t> prog = instr(EwOp::kSub, 2, 0, -3);  // r2 = x0 - 1
    const bool positive_only = e == EwOp::kLog || e == EwOp::kSqrt || e == EwOp::kPow;
    const int64_t a = positive_only ? 0 : 2;
    const int arity = ew_arity(e);
    auto body = arity == 1 ? instr(e, 3, a) : arity == 2 ? instr(e, 3, a, 1) : instr(e, 3, a, -1, -2);
    prog.insert(prog.end(), body.begin(), body.end());
    c.attrs.set("program", prog);
    c.attrs.set("immediates", std::vector<float>{-0.3f, 0.6f, 1.0f});
    c.attrs.set("output_register", int64_t{3});
    c.attrs.set("to", static_cast<int64_t>(DataType::kFloat32));
    c.label = "opcode " + std::to_string(op);
    run_float_dtypes(c, seed);
  }
}

TEST(CudaFusedTransformer, GraftElementwiseLongProgramAndMixedDtypes) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  std::vector<int64_t> p;
  auto add = [&](EwOp op, int64_t a, int64_t b = 0, int64_t c = 0) {
    const int64_t dst = 3 + static_cast<int64_t>(p.size()) / kEwFields;
    auto f = instr(op, dst, a, b, c);
    p.insert(p.end(), f.begin(), f.end());
    return dst;
  };
  // Registers 0..2: inputs. Immediates: -1: 0.25, -2: 1.7, -3: 2, -4: 1, -5: 0.3, -6: 0.4, -7: -0.5, -8: 0.7
  int64_t s = add(EwOp::kAdd, 0, 1);
  int64_t t = add(EwOp::kSub, s, -1);
  int64_t u = add(EwOp::kMul, t, 2);
  int64_t v = add(EwOp::kDiv, u, -2);
  int64_t sg = add(EwOp::kSigmoid, v);
  int64_t th = add(EwOp::kTanh, u);
  int64_t sq = add(EwOp::kSqrt, add(EwOp::kAbs, add(EwOp::kErf, t)));
  int64_t pw = add(EwOp::kPow, sq, -3);
  int64_t ex = add(EwOp::kExp, add(EwOp::kNeg, add(EwOp::kRelu, t)));
  int64_t e1 = add(EwOp::kAdd, ex, -4);
  int64_t lg = add(EwOp::kLog, e1);
  int64_t rc = add(EwOp::kReciprocal, e1);
  int64_t hs = add(EwOp::kHardSigmoid, th, -5, -6);
  int64_t cl = add(EwOp::kClip, add(EwOp::kHardSwish, s), -7, -8);
  int64_t ge = add(EwOp::kGeluErf, t);
  int64_t gt = add(EwOp::kRoundHalf, add(EwOp::kGeluTanh, u));
  int64_t mm = add(EwOp::kCopy, add(EwOp::kMin, add(EwOp::kMax, ge, gt), sg));
  int64_t acc = add(EwOp::kAdd, mm, pw);
  for (int64_t r : {lg, rc, hs, cl}) acc = add(EwOp::kAdd, acc, r);
  ASSERT_LE(p.size() / kEwFields, static_cast<size_t>(kEwMaxInstr));
  for (int keep = 0; keep < 2; ++keep) {
    KernelCase c{"GraftElementwise", {rnd(rng, {5, 1031}), rnd(rng, {5, 1031}), rnd(rng, {5, 1031})}};
    c.attrs.set("program", p);
    c.attrs.set("immediates", std::vector<float>{0.25f, 1.7f, 2.f, 1.f, 0.3f, 0.4f, -0.5f, 0.7f});
    c.attrs.set("output_register", acc);
    c.attrs.set("to", static_cast<int64_t>(DataType::kFloat32));
    if (keep) c.keep_f32 = {1};  // float16 run: input 1 stays float32 (a chain across a Cast)
    c.label = keep ? "input 1 float32" : "uniform dtype";
    run_float_dtypes(c, seed);
  }
}

// GraftAttention with view attributes (fold_views_into_attention): Q, K and V read in place from a
// packed [S=5, B=3, 3E=48] projection (E=16, H=2, hd=8; the batch is two-level (B, H)), K through
// its transpose view, Y written straight into [S, B, H*hd]; float16 and bfloat16 (the fused kernel).
TEST(CudaFusedTransformer, AttentionWithPackedViews) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  Tensor packed = rnd(rng, {5, 3, 48});
  KernelCase c{"GraftAttention", {packed, packed, packed}};
  c.attrs.set("scale", 0.35f);
  c.attrs.set("dims", std::vector<int64_t>{3, 2, 5, 8, 5, 8});
  c.attrs.set("q_view", std::vector<int64_t>{0, 48, 8, 144, 1});
  c.attrs.set("kt_view", std::vector<int64_t>{16, 48, 8, 1, 144});
  c.attrs.set("v_view", std::vector<int64_t>{32, 48, 8, 144, 1});
  c.attrs.set("y_view", std::vector<int64_t>{0, 16, 8, 48, 1});
  c.attrs.set("y_shape", std::vector<int64_t>{5, 3, 16});
  run_kernel_case(c, DataType::kFloat16, seed);
  c.tol16 = 2e-2;
  run_kernel_case(c, DataType::kBFloat16, seed);
}

}  // namespace
}  // namespace graft::testing
