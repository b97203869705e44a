// GraftElementwise's CUDA kernel: the program interpreter (elementwise_program_cuda.cpp packs the
// node's program for it). Each thread runs the whole (short) program for its elements in float32,
// reading float16/float32 inputs and writing a float16/float32 output once: one pass over memory
// instead of one per node of the chain.
#include "backends/cuda/cuda_kernel_device.cuh"
#include "ops/transformer/elementwise_program.cuh"

namespace graft::cuda::k {

namespace {

__device__ __forceinline__ float ew_op(int op, float a, float b, float c) {
  switch (static_cast<EwOp>(op)) {
    case EwOp::kCopy: return a;
    case EwOp::kAdd: return a + b;
    case EwOp::kSub: return a - b;
    case EwOp::kMul: return a * b;
    case EwOp::kDiv: return a / b;
    case EwOp::kPow: return powf(a, b);
    case EwOp::kRelu: return a > 0.f ? a : 0.f;
    case EwOp::kSigmoid: return 1.f / (1.f + expf(-a));
    case EwOp::kTanh: return tanhf(a);
    case EwOp::kErf: return erff(a);
    case EwOp::kSqrt: return sqrtf(a);
    case EwOp::kNeg: return -a;
    case EwOp::kAbs: return fabsf(a);
    case EwOp::kExp: return expf(a);
    case EwOp::kLog: return logf(a);
    case EwOp::kReciprocal: return 1.f / a;
    case EwOp::kHardSigmoid: return fmaxf(0.f, fminf(1.f, b * a + c));
    case EwOp::kHardSwish: return a * fmaxf(0.f, fminf(1.f, a / 6.f + 0.5f));
    case EwOp::kClip: {  // min(max(a, b), c): c wherever b > c; NaN stays
      const float up = a < b ? b : a;
      return up > c ? c : up;
    }
    case EwOp::kGeluErf: return 0.5f * a * erfcf(a * -0.70710678118654752440f);  // = 1 + erf, no cancellation
    case EwOp::kGeluTanh: return 0.5f * a * (1.f + tanhf(0.79788456080286535588f * (a + 0.044715f * a * a * a)));
    case EwOp::kRoundHalf: return __half2float(__float2half_rn(a));
    // NaN propagates, as in the CPU reference (fmaxf/fminf would drop it).
    case EwOp::kMax: return (a != a || b != b) ? __int_as_float(0x7fc00000) : fmaxf(a, b);
    case EwOp::kMin: return (a != a || b != b) ? __int_as_float(0x7fc00000) : fminf(a, b);
    default: return __int_as_float(0x7fc00000);
  }
}

// Why the kernel looks the way it does: an interpreter that indexes a register file with a
// runtime register number forces that file into local memory, and a layer that does one cast and
// one clip then spends its time on local loads and opcode decode instead of DRAM. So:
//  - each thread runs the program over V consecutive elements, instruction loop outside and the V
//    elements inside: decode and operand selection are paid once per V elements;
//  - the host resolves every operand to an immediate value, the previous instruction's result or
//    input 0 (both held in real registers), or a slot of the in-memory register file; only values
//    read through a slot are ever stored there, so a chain over one input touches no local memory;
//  - loads and stores are 16 bytes wide when every pointer allows it (checked on the host).
constexpr int V = 8;  // 8 halves are one 16-byte access; 8 floats two

// Operand sources besides a slot (>= 0).
constexpr int8_t kFromImm = -1, kFromAcc = -2, kFromX0 = -3;

struct EwStep {
  float imm[3];     // the operand's value where src is kFromImm (0 for operands the op ignores)
  int16_t op;       // EwOp, as given (an unknown one yields NaN)
  int8_t src[3];    // slot >= 0, or kFromImm / kFromAcc / kFromX0
  int8_t dst_slot;  // slot the result is saved to for later reads, or -1
  int8_t arity;     // operands the op reads; the others are never fetched
};

struct EwPlan {
  EwStep step[kEwMaxInstr];
  const void* in[kEwMaxInputs];
  void* out;
  int n_in, n_instr;
  unsigned in_half;
  int out_half;
  int8_t in_slot[kEwMaxInputs];  // input k >= 1 is read through this slot, or -1 (unread)
  int8_t out_src;                // kFromAcc / kFromX0 / slot
  bool x0_used;
};

// An alignas(16) group of V values so that a slot moves with two 16-byte local accesses.
struct alignas(16) Lanes {
  float v[V];
};

// `count` (1..V) elements from `base`; kVec: the pointer is 16-byte aligned.
template <bool kVec, typename Idx>
__device__ __forceinline__ void load_lanes(const void* ptr, bool half, Idx base, int count, float (&o)[V]) {
  if (kVec && count == V && half) {
    const uint4 raw = *reinterpret_cast<const uint4*>(static_cast<const __half*>(ptr) + base);
    const __half2* h = reinterpret_cast<const __half2*>(&raw);
#pragma unroll
    for (int q = 0; q < V / 2; ++q) {
      const float2 f = __half22float2(h[q]);
      o[2 * q] = f.x;
      o[2 * q + 1] = f.y;
    }
  } else if (kVec && count == V) {
    const float4* f = reinterpret_cast<const float4*>(static_cast<const float*>(ptr) + base);
    const float4 lo = f[0], hi = f[1];
    o[0] = lo.x, o[1] = lo.y, o[2] = lo.z, o[3] = lo.w;
    o[4] = hi.x, o[5] = hi.y, o[6] = hi.z, o[7] = hi.w;
  } else {
    // Lanes past the end compute on zeros and are never stored.
#pragma unroll
    for (int v = 0; v < V; ++v)
      o[v] = v >= count ? 0.f
             : half    ? __half2float(static_cast<const __half*>(ptr)[base + v])
                       : static_cast<const float*>(ptr)[base + v];
  }
}

template <bool kVec, typename Idx>
__device__ __forceinline__ void store_lanes(void* ptr, bool half, Idx base, int count, const float (&y)[V]) {
  if (kVec && count == V && half) {
    uint4 raw;
    __half2* h = reinterpret_cast<__half2*>(&raw);
#pragma unroll
    for (int q = 0; q < V / 2; ++q) h[q] = __floats2half2_rn(y[2 * q], y[2 * q + 1]);
    *reinterpret_cast<uint4*>(static_cast<__half*>(ptr) + base) = raw;
  } else if (kVec && count == V) {
    float4* f = reinterpret_cast<float4*>(static_cast<float*>(ptr) + base);
    f[0] = make_float4(y[0], y[1], y[2], y[3]);
    f[1] = make_float4(y[4], y[5], y[6], y[7]);
  } else {
#pragma unroll
    for (int v = 0; v < V; ++v) {
      if (v >= count) break;
      if (half) static_cast<__half*>(ptr)[base + v] = __float2half_rn(y[v]);
      else static_cast<float*>(ptr)[base + v] = y[v];
    }
  }
}

template <int kSlots>
__device__ __forceinline__ void fetch(int src, float imm, const float (&x0)[V], const float (&acc)[V],
                                      const Lanes (&slot)[kSlots], float (&o)[V]) {
  if (src >= 0) {
    const Lanes s = slot[src];
#pragma unroll
    for (int v = 0; v < V; ++v) o[v] = s.v[v];
  } else if (src == kFromAcc) {
#pragma unroll
    for (int v = 0; v < V; ++v) o[v] = acc[v];
  } else if (src == kFromX0) {
#pragma unroll
    for (int v = 0; v < V; ++v) o[v] = x0[v];
  } else {
#pragma unroll
    for (int v = 0; v < V; ++v) o[v] = imm;
  }
}

// ew_op with a constant opcode folds to the one expression, so every lane computes exactly what
// the scalar interpreter computed.
template <EwOp kOp>
__device__ __forceinline__ void apply(const float (&a)[V], const float (&b)[V], const float (&c)[V], float (&d)[V]) {
#pragma unroll
  for (int v = 0; v < V; ++v) d[v] = ew_op(static_cast<int>(kOp), a[v], b[v], c[v]);
}

__device__ __forceinline__ void apply(int op, const float (&a)[V], const float (&b)[V], const float (&c)[V],
                                      float (&d)[V]) {
  switch (static_cast<EwOp>(op)) {
    case EwOp::kCopy: return apply<EwOp::kCopy>(a, b, c, d);
    case EwOp::kAdd: return apply<EwOp::kAdd>(a, b, c, d);
    case EwOp::kSub: return apply<EwOp::kSub>(a, b, c, d);
    case EwOp::kMul: return apply<EwOp::kMul>(a, b, c, d);
    case EwOp::kDiv: return apply<EwOp::kDiv>(a, b, c, d);
    case EwOp::kPow: return apply<EwOp::kPow>(a, b, c, d);
    case EwOp::kRelu: return apply<EwOp::kRelu>(a, b, c, d);
    case EwOp::kSigmoid: return apply<EwOp::kSigmoid>(a, b, c, d);
    case EwOp::kTanh: return apply<EwOp::kTanh>(a, b, c, d);
    case EwOp::kErf: return apply<EwOp::kErf>(a, b, c, d);
    case EwOp::kSqrt: return apply<EwOp::kSqrt>(a, b, c, d);
    case EwOp::kNeg: return apply<EwOp::kNeg>(a, b, c, d);
    case EwOp::kAbs: return apply<EwOp::kAbs>(a, b, c, d);
    case EwOp::kExp: return apply<EwOp::kExp>(a, b, c, d);
    case EwOp::kLog: return apply<EwOp::kLog>(a, b, c, d);
    case EwOp::kReciprocal: return apply<EwOp::kReciprocal>(a, b, c, d);
    case EwOp::kHardSigmoid: return apply<EwOp::kHardSigmoid>(a, b, c, d);
    case EwOp::kHardSwish: return apply<EwOp::kHardSwish>(a, b, c, d);
    case EwOp::kClip: return apply<EwOp::kClip>(a, b, c, d);
    case EwOp::kGeluErf: return apply<EwOp::kGeluErf>(a, b, c, d);
    case EwOp::kGeluTanh: return apply<EwOp::kGeluTanh>(a, b, c, d);
    case EwOp::kRoundHalf: return apply<EwOp::kRoundHalf>(a, b, c, d);
    case EwOp::kMax: return apply<EwOp::kMax>(a, b, c, d);
    case EwOp::kMin: return apply<EwOp::kMin>(a, b, c, d);
    default:
#pragma unroll
      for (int v = 0; v < V; ++v) d[v] = __int_as_float(0x7fc00000);
  }
}

// kVec: every pointer is 16-byte aligned, so whole groups of V use vector accesses. Idx is 32-bit
// whenever the element count allows (64-bit multiply and compare cost several instructions each).
// __grid_constant__ lets the instruction loop index the plan at run time in the parameter bank
// without a copy to local memory.
template <bool kVec, typename Idx, int kSlots>
__global__ void __launch_bounds__(kThreads) elementwise_program_kernel(const __grid_constant__ EwPlan p, Idx n) {
  Lanes slot[kSlots];
  const Idx groups = (n + V - 1) / V;
  for (Idx g = Idx(blockIdx.x) * blockDim.x + threadIdx.x; g < groups; g += Idx(gridDim.x) * blockDim.x) {
    const Idx base = g * V;
    const int count = n - base < Idx(V) ? static_cast<int>(n - base) : V;
    float x0[V] = {}, acc[V] = {};
    if (p.x0_used) load_lanes<kVec>(p.in[0], p.in_half & 1u, base, count, x0);
#pragma unroll
    for (int k = 1; k < kEwMaxInputs; ++k) {
      if (k >= p.n_in) break;
      if (p.in_slot[k] < 0) continue;
      Lanes t;  // filled in registers, then stored whole: two 16-byte local stores
      load_lanes<kVec>(p.in[k], (p.in_half >> k) & 1u, base, count, t.v);
      slot[p.in_slot[k]] = t;
    }
#pragma unroll 1
    for (int j = 0; j < p.n_instr; ++j) {
      const EwStep& s = p.step[j];
      float a[V], b[V] = {}, c[V] = {};
      fetch(s.src[0], s.imm[0], x0, acc, slot, a);
      if (s.arity > 1) fetch(s.src[1], s.imm[1], x0, acc, slot, b);
      if (s.arity > 2) fetch(s.src[2], s.imm[2], x0, acc, slot, c);
      apply(s.op, a, b, c, acc);
      if (s.dst_slot >= 0) {
        Lanes t;
#pragma unroll
        for (int v = 0; v < V; ++v) t.v[v] = acc[v];
        slot[s.dst_slot] = t;
      }
    }
    float y[V];
    fetch(p.out_src, 0.f, x0, acc, slot, y);
    store_lanes<kVec>(p.out, p.out_half != 0, base, count, y);
  }
}

// Resolves the program's register operands (see the comment above V). False on a program that
// reads a register before it is written or an immediate past kEwMaxImm.
bool make_plan(const EwKernelProgram& p, EwPlan* q, int* n_slots) {
  if (p.n_in < 1 || p.n_in > kEwMaxInputs || p.n_instr < 0 || p.n_instr > kEwMaxInstr) return false;
  if (p.out_reg < 0 || p.out_reg >= p.n_in + p.n_instr) return false;
  int slot_of[kEwMaxRegs];
  for (int& s : slot_of) s = -1;
  int slots = 0;
  q->x0_used = false;
  // `reader`: the instruction reading `reg` (n_instr for the output); its predecessor's result
  // is still in acc.
  auto source = [&](int reg, int reader) -> int8_t {
    if (reg == 0) {
      q->x0_used = true;
      return kFromX0;
    }
    if (reader >= 1 && reg == p.n_in + reader - 1) return kFromAcc;
    if (slot_of[reg] < 0) slot_of[reg] = slots++;
    return static_cast<int8_t>(slot_of[reg]);
  };
  for (int j = 0; j < p.n_instr; ++j) {
    EwStep& s = q->step[j];
    s.op = p.code[j][0];
    const int arity = ew_arity(static_cast<EwOp>(p.code[j][0]));
    s.arity = static_cast<int8_t>(arity);
    for (int k = 0; k < 3; ++k) {
      const int r = p.code[j][1 + k];
      s.src[k] = kFromImm;
      s.imm[k] = 0.f;
      if (k >= arity) continue;  // ew_op never reads it
      if (r < 0) {
        if (-r - 1 >= kEwMaxImm) return false;
        s.imm[k] = p.imm[-r - 1];
      } else {
        if (r >= p.n_in + j) return false;
        s.src[k] = source(r, j);
      }
    }
  }
  q->out_src = source(p.out_reg, p.n_instr);
  for (int j = 0; j < p.n_instr; ++j) q->step[j].dst_slot = static_cast<int8_t>(slot_of[p.n_in + j]);
  for (int k = 0; k < kEwMaxInputs; ++k) {
    q->in[k] = p.in[k];
    q->in_slot[k] = static_cast<int8_t>(k >= 1 && k < p.n_in ? slot_of[k] : -1);
  }
  q->out = p.out;
  q->n_in = p.n_in;
  q->n_instr = p.n_instr;
  q->in_half = p.in_half;
  q->out_half = p.out_half;
  *n_slots = slots;
  return true;
}

template <bool kVec, typename Idx>
cudaError_t launch_plan(const EwPlan& q, int n_slots, int64_t n, cudaStream_t s) {
  const unsigned grid = grid_for((n + V - 1) / V);
  // Most programs save at most a few values; the small file keeps the per-thread local memory
  // the driver reserves (for every resident thread) small.
  if (n_slots <= 4) elementwise_program_kernel<kVec, Idx, 4><<<grid, kThreads, 0, s>>>(q, static_cast<Idx>(n));
  else elementwise_program_kernel<kVec, Idx, kEwMaxRegs><<<grid, kThreads, 0, s>>>(q, static_cast<Idx>(n));
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_elementwise_program(const EwKernelProgram& p, int64_t n, cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  EwPlan q{};
  int n_slots = 0;
  if (!make_plan(p, &q, &n_slots)) return cudaErrorInvalidValue;
  bool aligned = reinterpret_cast<uintptr_t>(p.out) % 16 == 0;
  for (int k = 0; k < p.n_in; ++k) aligned = aligned && reinterpret_cast<uintptr_t>(p.in[k]) % 16 == 0;
  // 32-bit indices need base + V and the grid stride to stay below 2^32 (see grid_for's cap).
  const bool narrow = n <= INT32_MAX;
  if (aligned) return narrow ? launch_plan<true, uint32_t>(q, n_slots, n, s) : launch_plan<true, int64_t>(q, n_slots, n, s);
  return narrow ? launch_plan<false, uint32_t>(q, n_slots, n, s) : launch_plan<false, int64_t>(q, n_slots, n, s);
}

}  // namespace graft::cuda::k
