// CUDA kernels of the transformer fusions: the GraftElementwise interpreter. Each thread runs the
// whole (short) program for its elements in float32, reading float16/float32 inputs and writing a
// float16/float32 output once: one pass over memory instead of one per node of the chain.
#include <type_traits>

#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/fast_divide.h"
#include "backends/cuda/fused_transformer_kernels.cuh"

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
    case EwOp::kClip: return a < b ? b : (a > c ? c : a);
    case EwOp::kGeluErf: return 0.5f * a * (1.f + erff(a * 0.70710678118654752440f));
    case EwOp::kGeluTanh: return 0.5f * a * (1.f + tanhf(0.79788456080286535588f * (a + 0.044715f * a * a * a)));
    case EwOp::kRoundHalf: return __half2float(__float2half_rn(a));
    // NaN propagates, as in the CPU reference (fmaxf/fminf would drop it).
    case EwOp::kMax: return (a != a || b != b) ? __int_as_float(0x7fc00000) : fmaxf(a, b);
    case EwOp::kMin: return (a != a || b != b) ? __int_as_float(0x7fc00000) : fminf(a, b);
    default: return __int_as_float(0x7fc00000);
  }
}

// Loads input k's element at `off` as float32.
__device__ __forceinline__ float ew_load(const EwKernelProgram& p, int k, int64_t off) {
  return (p.in_half >> k) & 1u ? __half2float(static_cast<const __half*>(p.in[k])[off])
                               : static_cast<const float*>(p.in[k])[off];
}

// Runs the program on registers r[0..n_in) (the inputs) and returns the output register's value.
// The instruction loop is unrolled to its limit with constant indices, so the program is read in
// place from the parameters instead of being copied to local memory; it leaves at n_instr.
__device__ __forceinline__ float ew_run_program(const EwKernelProgram& p, float (&r)[kEwMaxRegs]) {
#pragma unroll
  for (int j = 0; j < kEwMaxInstr; ++j) {
    if (j >= p.n_instr) break;
    const int16_t* c = p.code[j];
    const float a = c[1] >= 0 ? r[c[1]] : p.imm[-c[1] - 1];
    const float b = c[2] >= 0 ? r[c[2]] : p.imm[-c[2] - 1];
    const float d = c[3] >= 0 ? r[c[3]] : p.imm[-c[3] - 1];
    r[p.n_in + j] = ew_op(c[0], a, b, d);
  }
  return r[p.out_reg];
}

__device__ __forceinline__ void ew_store(const EwKernelProgram& p, int64_t i, float y) {
  if (p.out_half) static_cast<__half*>(p.out)[i] = __float2half_rn(y);
  else static_cast<float*>(p.out)[i] = y;
}

// Every input has the output's shape: input k is read at the output's index.
__global__ void elementwise_program_kernel(const EwKernelProgram p, int64_t n) {
  float r[kEwMaxRegs];
  GRAFT_GRID_STRIDE(i, n) {
#pragma unroll
    for (int k = 0; k < kEwMaxInputs; ++k) {
      if (k >= p.n_in) break;
      r[k] = ew_load(p, k, i);
    }
    ew_store(p, i, ew_run_program(p, r));
  }
}

// Broadcast inputs: the output index is decomposed once (axes innermost first, divided with
// FastDivide in 32-bit indexing) and each input read at its own offset.
static_assert(kEwMaxBroadcastRank <= kMaxRank, "the pass may hand the kernel broadcasts of kEwMaxBroadcastRank axes");

template <typename I>
struct EwIndex {
  int rank = 0;
  I dims[kMaxRank] = {};
  FastDivide fast_dims[kMaxRank];
  I strides[kEwMaxInputs][kMaxRank] = {};
};

// Elements per thread: all loads of a thread's elements are issued before the first program runs
// (one element per thread waits on each scattered load in turn).
constexpr int kEwUnroll = 4;

template <typename I>
__global__ void elementwise_program_bcast_kernel(const EwKernelProgram p, const EwIndex<I> x, I n) {
  const I step = static_cast<I>(blockDim.x);
  for (I base = static_cast<I>(blockIdx.x) * step * kEwUnroll + static_cast<I>(threadIdx.x); base < n;
       base += static_cast<I>(gridDim.x) * step * kEwUnroll) {
    float v[kEwUnroll][kEwMaxInputs];
#pragma unroll
    for (int u = 0; u < kEwUnroll; ++u) {
      I i = base + static_cast<I>(u) * step;
      if (i >= n) break;
      I off[kEwMaxInputs] = {};
#pragma unroll
      for (int d = 0; d < kMaxRank; ++d) {
        if (d >= x.rank) break;
        const I q = pop_axis(i, x.dims[d], x.fast_dims[d]);
#pragma unroll
        for (int k = 0; k < kEwMaxInputs; ++k) {
          if (k >= p.n_in) break;
          off[k] += q * x.strides[k][d];
        }
      }
#pragma unroll
      for (int k = 0; k < kEwMaxInputs; ++k) {
        if (k >= p.n_in) break;
        v[u][k] = ew_load(p, k, static_cast<int64_t>(off[k]));
      }
    }
#pragma unroll
    for (int u = 0; u < kEwUnroll; ++u) {
      const I i = base + static_cast<I>(u) * step;
      if (i >= n) break;
      float r[kEwMaxRegs];
#pragma unroll
      for (int k = 0; k < kEwMaxInputs; ++k) {
        if (k >= p.n_in) break;
        r[k] = v[u][k];
      }
      ew_store(p, static_cast<int64_t>(i), ew_run_program(p, r));
    }
  }
}

template <typename I>
EwIndex<I> narrow_index(const EwKernelProgram& p) {
  EwIndex<I> x;
  x.rank = p.rank;
  for (int d = 0; d < p.rank; ++d) {
    const int from = p.rank - 1 - d;  // innermost first
    x.dims[d] = static_cast<I>(p.dims[from]);
    if constexpr (std::is_same_v<I, int32_t>) x.fast_dims[d] = FastDivide(static_cast<uint32_t>(p.dims[from]));
    for (int k = 0; k < p.n_in; ++k) x.strides[k][d] = static_cast<I>(p.strides[k][from]);
  }
  return x;
}

}  // namespace

cudaError_t launch_elementwise_program(const EwKernelProgram& p, int64_t n, cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  if (p.rank == 0) {
    elementwise_program_kernel<<<grid_for(n), kThreads, 0, s>>>(p, n);
  } else if (n < (int64_t(1) << 30)) {  // n plus one grid's width (x kEwUnroll) stays below 2^31
    elementwise_program_bcast_kernel<int32_t>
        <<<grid_for(n, kEwUnroll), kThreads, 0, s>>>(p, narrow_index<int32_t>(p), static_cast<int32_t>(n));
  } else {
    elementwise_program_bcast_kernel<int64_t><<<grid_for(n, kEwUnroll), kThreads, 0, s>>>(p, narrow_index<int64_t>(p), n);
  }
  return cudaGetLastError();
}

}  // namespace graft::cuda::k
