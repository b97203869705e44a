// CUDA kernels of the transformer fusions vs their CPU references: GraftGemm (cuBLASLt epilogues:
// bias, Relu, GELU, residual; transB; alpha; N-D X), GraftAttention (batched cuBLASLt + softmax)
// and GraftElementwise (every opcode, a long program, mixed float16/float32 inputs and outputs,
// element counts around the kernel's 8-element groups, misaligned pointers straight through the
// launcher). Float32 and float16, fresh random data, poisoned outputs.
#include <cstring>
#include <limits>
#include <memory>

#include "ops/transformer/elementwise_program.cuh"
#include "cuda_kernel_harness.h"
#include "graft/dtype.h"
#include "ops/transformer/transformer.h"

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

// `lead` followed by (a, b): an attention operand's dims.
std::vector<int64_t> with_lead(std::vector<int64_t> lead, int64_t a, int64_t b) {
  lead.push_back(a);
  lead.push_back(b);
  return lead;
}

TEST(CudaFusedTransformer, GraftAttention) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  struct Shp { std::vector<int64_t> lead; int64_t S, D, S2, Dv; };
  // ViT-B/16 heads (197 tokens, head dim 64), a rank-3 [B*H, S, D] layout, odd sizes, one matrix.
  const std::vector<Shp> shapes = {{{2, 12}, 197, 64, 197, 64}, {{6}, 17, 16, 17, 16}, {{2, 3}, 7, 5, 9, 3}, {{}, 33, 8, 20, 8}};
  for (const auto& sh : shapes) {
    auto dims = [&](int64_t a, int64_t b) { return with_lead(sh.lead, a, b); };
    KernelCase c{"GraftAttention", {rnd(rng, dims(sh.S, sh.D)), rnd(rng, dims(sh.D, sh.S2)), rnd(rng, dims(sh.S2, sh.Dv))}};
    c.attrs.set("scale", static_cast<float>(1.0 / std::sqrt(static_cast<double>(sh.D))));
    c.tol32 = 1e-4;
    c.label = "S " + std::to_string(sh.S) + " D " + std::to_string(sh.D) + " S2 " + std::to_string(sh.S2);
    run_float_dtypes(c, seed, /*bf16=*/true);
  }
}

// GraftAttention with a periodic bias [P, S, S2] (Swin's relative position bias and shifted-window
// mask, folded by fuse_attention): batch entry b adds bias[b % P]. float32 runs the cuBLASLt path
// (scores, bias added in place, softmax, PV), float16/bfloat16 the fused kernel; in float16 both
// are then forced through the tactic table. Masked pairs at -100, as Swin writes them.
TEST(CudaFusedTransformer, GraftAttentionPeriodicBias) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  struct Shp { std::vector<int64_t> lead; int64_t S, D, S2, Dv, P; };
  const std::vector<Shp> shapes = {{{8, 3}, 49, 32, 49, 32, 12},  // 2 images x 4 windows x 3 heads, windows x heads periodic
                                   {{6}, 17, 16, 20, 16, 3},
                                   {{2, 2}, 70, 8, 66, 8, 1}};    // past one 64-key tile and one 64-row tile
  for (const auto& sh : shapes) {
    auto dims = [&](int64_t a, int64_t b) { return with_lead(sh.lead, a, b); };
    Tensor bias = rnd(rng, {sh.P, sh.S, sh.S2}, -2, 2);
    for (int64_t i = 0; i < bias.numel(); i += 5) bias.set(i, -100.0);
    KernelCase c{"GraftAttention",
                 {rnd(rng, dims(sh.S, sh.D)), rnd(rng, dims(sh.D, sh.S2)), rnd(rng, dims(sh.S2, sh.Dv)), bias}};
    c.attrs.set("scale", static_cast<float>(1.0 / std::sqrt(static_cast<double>(sh.D))));
    c.tol32 = 1e-4;
    c.label = "S " + std::to_string(sh.S) + " S2 " + std::to_string(sh.S2) + " period " + std::to_string(sh.P);
    run_float_dtypes(c, seed, /*bf16=*/true);
    run_timed_then_forced(c, DataType::kFloat16, seed, 0, 0, "attention;");  // the cuBLASLt path
    run_timed_then_forced(c, DataType::kFloat16, seed, 0, 1, "attention;");  // the fused kernel
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

// Values reused out of order (read from the kernel's saved slots, not only the previous result),
// element counts below, at and around a multiple of the 8-element group, and float32 inputs with
// a float16 output (the float32 run with to = float16) as well as mixed inputs.
TEST(CudaFusedTransformer, GraftElementwiseTailsAndReuse) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  // Registers 0..2: inputs. Immediates: -1: 1.5, -2: -0.75, -3: 0.8
  const std::vector<int64_t> prog = [] {
    std::vector<int64_t> p;
    for (const auto& f : {instr(EwOp::kAdd, 3, 0, 1), instr(EwOp::kMul, 4, 3, -1), instr(EwOp::kMax, 5, 4, 2),
                          instr(EwOp::kClip, 6, 5, -2, -3), instr(EwOp::kRoundHalf, 7, 3), instr(EwOp::kSub, 8, 6, 7),
                          instr(EwOp::kMin, 9, 8, 1), instr(EwOp::kMul, 10, 9, 4), instr(EwOp::kAdd, 11, 10, 5),
                          instr(EwOp::kSub, 12, 11, 2), instr(EwOp::kTanh, 13, 12)})
      p.insert(p.end(), f.begin(), f.end());
    return p;
  }();
  const std::vector<std::vector<int64_t>> shapes = {{1}, {5}, {8}, {9}, {2, 15}, {3, 1031}, {64, 67}};
  for (const auto& dims : shapes)
    for (int64_t out_reg : {int64_t{13}, int64_t{8}, int64_t{0}})  // last result, a saved one, input 0
      for (DataType to : {DataType::kFloat32, DataType::kFloat16})
        for (int keep = 0; keep < 2; ++keep) {
          KernelCase c{"GraftElementwise", {rnd(rng, dims), rnd(rng, dims), rnd(rng, dims)}};
          c.attrs.set("program", prog);
          c.attrs.set("immediates", std::vector<float>{1.5f, -0.75f, 0.8f});
          c.attrs.set("output_register", out_reg);
          c.attrs.set("to", static_cast<int64_t>(to));
          if (keep) c.keep_f32 = {1};
          // A float16 output: a 1-ulp float32 difference (tanhf against std::tanh) can round to the
          // neighbouring float16, 5e-4 relative for that element, so float16's tolerance applies.
          if (to == DataType::kFloat16) c.tol32 = 1e-3;
          c.label = "numel " + std::to_string(c.inputs[0].numel()) + " output register " + std::to_string(out_reg) +
                    " to " + dtype_name(to) + (keep ? " input 1 float32" : "");
          run_float_dtypes(c, seed);
        }
}

// The launcher directly, on buffers the op harness cannot make: inputs and the output starting
// one element into their allocations (no 16-byte accesses possible) as well as aligned ones,
// mixed float16/float32 inputs and outputs, NaNs among the inputs. The program uses only
// operations that are exact in float32 (and the float16 rounding), so the result must match a
// host float32 evaluation bit for bit, NaN for NaN.
struct DirectBuf {
  void* p = nullptr;
  explicit DirectBuf(size_t bytes) {
    if (cudaMalloc(&p, bytes) != cudaSuccess) p = nullptr;
  }
  ~DirectBuf() {
    if (p) cudaFree(p);
  }
  DirectBuf(const DirectBuf&) = delete;
  DirectBuf& operator=(const DirectBuf&) = delete;
};

TEST(CudaFusedTransformer, GraftElementwiseLauncherMisalignedAndExact) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  const float qnan = std::numeric_limits<float>::quiet_NaN();
  const float imm[3] = {1.5f, -0.75f, 0.8f};
  auto round_half = [](float x) { return half_to_float(float_to_half(x)); };
  auto max_nan = [&](float a, float b) { return std::isnan(a) || std::isnan(b) ? qnan : std::max(a, b); };
  auto min_nan = [&](float a, float b) { return std::isnan(a) || std::isnan(b) ? qnan : std::min(a, b); };

  // (op, a, b, c) with registers 0..2 the inputs; `extra` adds instructions that read two more
  // results out of order (more saved values than the kernel's small register file holds).
  struct I { EwOp op; int16_t a, b, c; };
  const std::vector<I> base_prog = {{EwOp::kAdd, 0, 1, 0},    {EwOp::kMul, 3, -1, 0},  {EwOp::kMax, 4, 2, 0},
                                    {EwOp::kClip, 5, -2, -3}, {EwOp::kRoundHalf, 3, 0, 0}, {EwOp::kSub, 7, 3, 0},
                                    {EwOp::kMin, 8, 1, 0},    {EwOp::kDiv, 9, 4, 0},   {EwOp::kAbs, 10, 0, 0}};
  const std::vector<I> extra = {{EwOp::kMul, 11, 5, 0}, {EwOp::kAdd, 12, 6, 0}, {EwOp::kSqrt, 13, 0, 0}};
  auto host_run = [&](const std::vector<I>& prog, const float* x, int out_reg) {
    std::vector<float> r(x, x + 3);
    auto get = [&](int16_t k) { return k >= 0 ? r[static_cast<size_t>(k)] : imm[-k - 1]; };
    for (const I& in : prog) {
      const float a = get(in.a), b = get(in.b), c = get(in.c);
      float y = 0.f;
      switch (in.op) {
        case EwOp::kAdd: y = a + b; break;
        case EwOp::kSub: y = a - b; break;
        case EwOp::kMul: y = a * b; break;
        case EwOp::kDiv: y = a / b; break;
        case EwOp::kMax: y = max_nan(a, b); break;
        case EwOp::kMin: y = min_nan(a, b); break;
        case EwOp::kClip: y = a < b ? b : (a > c ? c : a); break;
        case EwOp::kRoundHalf: y = round_half(a); break;
        case EwOp::kAbs: y = std::fabs(a); break;
        case EwOp::kSqrt: y = std::sqrt(a); break;
        default: ADD_FAILURE() << "opcode " << static_cast<int>(in.op) << " has no host model"; break;
      }
      r.push_back(y);
    }
    return r[static_cast<size_t>(out_reg)];
  };

  for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{8}, int64_t{13}, int64_t{4099}, int64_t{100003}})
    for (unsigned in_half : {0u, 5u, 7u})  // float32 inputs; inputs 0 and 2 float16; all float16
      for (int out_half = 0; out_half < 2; ++out_half)
        for (int misalign : {0, 1, 2})  // none; input 2 one element in; the output one element in
          for (int long_prog = 0; long_prog < 2; ++long_prog) {
            std::vector<I> prog = base_prog;
            if (long_prog) prog.insert(prog.end(), extra.begin(), extra.end());
            const int n_instr = static_cast<int>(prog.size());
            const int out_reg = 3 + n_instr - 1;
            SCOPED_TRACE("n " + std::to_string(n) + " in_half " + std::to_string(in_half) + " out_half " +
                         std::to_string(out_half) + " misalign " + std::to_string(misalign) + " long " +
                         std::to_string(long_prog) + " seed " + std::to_string(seed));
            // Host values, already rounded to each input's dtype; about 1 in 50 is NaN.
            std::vector<float> x(static_cast<size_t>(3 * n));
            for (int k = 0; k < 3; ++k)
              for (int64_t i = 0; i < n; ++i) {
                float v = rng() % 50 == 0 ? qnan : u(rng);
                if ((in_half >> k) & 1u) v = round_half(v);
                x[static_cast<size_t>(i * 3 + k)] = v;
              }
            const int64_t off[4] = {0, 0, misalign == 1 ? 1 : 0, misalign == 2 ? 1 : 0};  // in0..2, out
            std::vector<std::unique_ptr<DirectBuf>> bufs;
            cuda::k::EwKernelProgram p;
            p.n_in = 3;
            p.n_instr = n_instr;
            p.out_reg = out_reg;
            p.in_half = in_half;
            p.out_half = out_half;
            for (int j = 0; j < n_instr; ++j) {
              p.code[j][0] = static_cast<int16_t>(prog[static_cast<size_t>(j)].op);
              p.code[j][1] = prog[static_cast<size_t>(j)].a;
              p.code[j][2] = prog[static_cast<size_t>(j)].b;
              p.code[j][3] = prog[static_cast<size_t>(j)].c;
            }
            for (int k = 0; k < 3; ++k) p.imm[k] = imm[k];
            for (int k = 0; k < 3; ++k) {
              const bool h = (in_half >> k) & 1u;
              const size_t es = h ? 2 : 4, total = static_cast<size_t>(n + off[k]);
              std::vector<unsigned char> host(total * es);
              for (int64_t i = 0; i < n; ++i) {
                const float v = x[static_cast<size_t>(i * 3 + k)];
                unsigned char* at = host.data() + static_cast<size_t>(i + off[k]) * es;
                if (h) {
                  const uint16_t b = float_to_half(v);
                  std::memcpy(at, &b, 2);
                } else {
                  std::memcpy(at, &v, 4);
                }
              }
              bufs.push_back(std::make_unique<DirectBuf>(host.size()));
              ASSERT_NE(bufs.back()->p, nullptr);
              ASSERT_EQ(cudaMemcpy(bufs.back()->p, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
              p.in[k] = static_cast<const unsigned char*>(bufs.back()->p) + off[k] * static_cast<int64_t>(es);
            }
            const size_t oes = out_half ? 2 : 4, obytes = static_cast<size_t>(n + off[3] + 1) * oes;
            bufs.push_back(std::make_unique<DirectBuf>(obytes));
            ASSERT_NE(bufs.back()->p, nullptr);
            ASSERT_EQ(cudaMemset(bufs.back()->p, 0x7B, obytes), cudaSuccess);  // poison, also past the end
            p.out = static_cast<unsigned char*>(bufs.back()->p) + off[3] * static_cast<int64_t>(oes);
            ASSERT_EQ(cuda::k::launch_elementwise_program(p, n, nullptr), cudaSuccess);
            ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
            std::vector<unsigned char> got(obytes);
            ASSERT_EQ(cudaMemcpy(got.data(), bufs.back()->p, obytes, cudaMemcpyDeviceToHost), cudaSuccess);
            for (size_t b = 0; b < static_cast<size_t>(off[3]) * oes; ++b) ASSERT_EQ(got[b], 0x7B) << "byte before the output";
            for (size_t b = static_cast<size_t>(n + off[3]) * oes; b < obytes; ++b)
              ASSERT_EQ(got[b], 0x7B) << "byte past the output";
            for (int64_t i = 0; i < n; ++i) {
              float want = host_run(prog, &x[static_cast<size_t>(i * 3)], out_reg), g = 0.f;
              const unsigned char* at = got.data() + static_cast<size_t>(i + off[3]) * oes;
              if (out_half) {
                uint16_t b = 0;
                std::memcpy(&b, at, 2);
                g = half_to_float(b);
                want = round_half(want);
              } else {
                std::memcpy(&g, at, 4);
              }
              if (std::isnan(want)) {
                ASSERT_TRUE(std::isnan(g)) << "element " << i << ": " << g << ", want NaN";
              } else {
                uint32_t gb = 0, wb = 0;
                std::memcpy(&gb, &g, 4);
                std::memcpy(&wb, &want, 4);
                ASSERT_EQ(gb, wb) << "element " << i << ": " << g << ", want " << want;
              }
            }
          }
}

// GraftAttention with view attributes (fold_views_into_attention): Q, K and V read in place from a
// packed [S=5, B=3, 3E=48] projection (E=16, H=2, hd=8; the batch is two-level (B, H)), K through
// its transpose view, Y written straight into [S, B, H*hd]; float16 and bfloat16 (the fused kernel).
// Then with a periodic bias on the scores read as it is: [2, S, S] (one per head, as Swin's relative
// position bias) and [6, S, S] (one per batch entry).
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
  for (int64_t period : {2, 6}) {
    KernelCase b = c;
    b.inputs.push_back(rnd(rng, {period, 5, 5}, -2, 2));
    b.label = "bias period " + std::to_string(period);
    b.tol16 = 1e-2;
    run_kernel_case(b, DataType::kFloat16, seed);
    b.tol16 = 2e-2;
    run_kernel_case(b, DataType::kBFloat16, seed);
  }
}

// GraftAttention's chain form (fold_views_into_attention over a dynamic batch), planned per run:
// from the packed [S=5, B, 48] projection, Q and V through the head split's steps (one strided view
// each, read in place), K through steps whose Reshape merges axes no stride covers (two copies,
// materialized in the workspace), Y written through the output permute; batches 1 and 3; with and
// without a bias per head.
TEST(CudaFusedTransformer, AttentionWithViewChains) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  auto head = [](int64_t part) {
    return std::vector<ViewStep>{
        {ViewStepKind::kReshape, {0, 0, 3, 16}},  // [S, B, 3, E]
        {ViewStepKind::kSelect, {2, part, 0}},    // [S, B, E]
        {ViewStepKind::kReshape, {5, -1, 8}},     // [S, B*H, hd]
        {ViewStepKind::kPermute, {1, 0, 2}},      // [B*H, S, hd]
        {ViewStepKind::kReshape, {-1, 2, 5, 8}},  // [B, H, S, hd]
    };
  };
  // K^T [B, H, hd, S] through a detour that regroups [B, S] as [S, B] in row-major order: at B = 3
  // no strides express it (two copies, the first materialized in the workspace), at B = 1 they do.
  const std::vector<ViewStep> kt = {
      {ViewStepKind::kReshape, {0, 0, 3, 16}},
      {ViewStepKind::kSelect, {2, 1, 0}},       // [S, B, E]
      {ViewStepKind::kPermute, {1, 0, 2}},      // [B, S, E]
      {ViewStepKind::kReshape, {5, -1, 16}},    // [S, B, E], reinterpreted
      {ViewStepKind::kReshape, {5, -1, 8}},     // [S, B*H, hd]
      {ViewStepKind::kPermute, {1, 2, 0}},      // [B*H, hd, S]
      {ViewStepKind::kReshape, {-1, 2, 8, 5}},  // [B, H, hd, S]
  };
  for (int64_t b : {1, 3}) {
    SCOPED_TRACE("batch " + std::to_string(b));
    auto plan = plan_view_steps({5, b, 48}, kt);
    ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
    EXPECT_EQ(plan.value().size(), b == 1 ? 1u : 2u);
    Tensor packed = rnd(rng, {5, b, 48});
    KernelCase c{"GraftAttention", {packed, packed, packed}};
    c.attrs.set("scale", 0.35f);
    AttentionChains chains;
    chains.steps[0] = head(0);
    chains.steps[1] = kt;
    chains.steps[2] = head(2);
    chains.y_perm = {2, 0, 1, 3};  // Y [B, H, S, hd] -> [S, B, H, hd]
    write_attention_chains(chains, &c.attrs);
    run_kernel_case(c, DataType::kFloat16, seed);
    c.tol16 = 2e-2;
    run_kernel_case(c, DataType::kBFloat16, seed);
    // With a bias per head ([H, S, S]), read as it is while the operands go through their chains.
    KernelCase biased = c;
    biased.inputs.push_back(rnd(rng, {2, 5, 5}, -2, 2));
    biased.label = "bias per head";
    biased.tol16 = 1e-2;
    run_kernel_case(biased, DataType::kFloat16, seed);
  }
}

}  // namespace
}  // namespace graft::testing
