// CUDA kernels of the transformer fusions: the GraftElementwise interpreter. Each thread runs the
// whole (short) program for its elements in float32, reading float16/float32 inputs and writing a
// float16/float32 output once: one pass over memory instead of one per node of the chain.
#include "backends/cuda/cuda_kernel_device.cuh"
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

// The input and instruction loops are unrolled to their limits with constant indices, so the
// program is read in place from the parameters instead of being copied to local memory; they
// leave at n_in / n_instr.
__global__ void elementwise_program_kernel(const EwKernelProgram p, int64_t n) {
  float r[kEwMaxRegs];
  GRAFT_GRID_STRIDE(i, n) {
#pragma unroll
    for (int k = 0; k < kEwMaxInputs; ++k) {
      if (k >= p.n_in) break;
      r[k] = (p.in_half >> k) & 1u ? __half2float(static_cast<const __half*>(p.in[k])[i])
                                   : static_cast<const float*>(p.in[k])[i];
    }
#pragma unroll
    for (int j = 0; j < kEwMaxInstr; ++j) {
      if (j >= p.n_instr) break;
      const int16_t* c = p.code[j];
      const float a = c[1] >= 0 ? r[c[1]] : p.imm[-c[1] - 1];
      const float b = c[2] >= 0 ? r[c[2]] : p.imm[-c[2] - 1];
      const float d = c[3] >= 0 ? r[c[3]] : p.imm[-c[3] - 1];
      r[p.n_in + j] = ew_op(c[0], a, b, d);
    }
    const float y = r[p.out_reg];
    if (p.out_half) static_cast<__half*>(p.out)[i] = __float2half_rn(y);
    else static_cast<float*>(p.out)[i] = y;
  }
}

}  // namespace

cudaError_t launch_elementwise_program(const EwKernelProgram& p, int64_t n, cudaStream_t s) {
  if (n <= 0) return cudaSuccess;
  elementwise_program_kernel<<<grid_for(n), kThreads, 0, s>>>(p, n);
  return cudaGetLastError();
}

}  // namespace graft::cuda::k
