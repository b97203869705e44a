// Launchers for the CUDA kernels of builtin ops that had only a CPU reference: InstanceNormalization,
// MeanVarianceNormalization, LRN, BitShift, EyeLike, the Hann/Hamming/Blackman windows and
// ReverseSequence (src/backends/cpu/misc.cpp). Plain device pointers, no framework types; each
// returns the launch's cudaError_t (cudaErrorInvalidValue for a type the launcher does not handle).
//
// The arithmetic follows the CPU reference step by step (double for the normalizations and the
// windows; results stored as graft's store_from_double does) so that integer outputs match it
// exactly.
#pragma once

#include "backends/cuda/cuda_kernel_common.cuh"

namespace graft::cuda::k {

// ---- Normalizations -------------------------------------------------------------------------------

// x viewed as [n * c planes, spatial]; per plane, mean and (biased) variance in double, then
// y = (x - mean) * scale[ch] / sqrt(var + eps) + bias[ch]. Float types (scale, bias share x's type).
cudaError_t launch_instance_norm(KType t, const void* x, const void* scale, const void* bias, void* y, int64_t planes,
                                 int64_t channels, int64_t spatial, double eps, cudaStream_t s);

// One group per combination of the kept axes (`kept`: their extents and x strides), `count`
// elements each (`reduced`: the reduced axes' extents and x strides). y = (x - mean) /
// (sqrt(var) + 1e-9), statistics in double. Float types.
cudaError_t launch_mvn(KType t, const void* x, void* y, const Strided& kept, const Strided& reduced, int64_t groups,
                       int64_t count, cudaStream_t s);

// x viewed as [outer, channels, inner]; y = x / (bias + alpha / size * sum of x^2 over the channel
// window [ch - before, ch + after] clipped to the channels) ^ beta, in double. Float types.
cudaError_t launch_lrn(KType t, const void* x, void* y, int64_t outer, int64_t channels, int64_t inner, int64_t before,
                       int64_t after, double alpha_over_size, double bias, double beta, cudaStream_t s);

// ---- Data ---------------------------------------------------------------------------------------

// uint8 y = x << s (left) or x >> s, broadcast (operands 0 and 1 of `p`); shifts of 8 or more give 0.
cudaError_t launch_bit_shift(bool left, const uint8_t* x, const uint8_t* sh, const Bcast& p, uint8_t* y, int64_t n,
                             cudaStream_t s);

// y[r, c] = (c - r == k) ? one : 0, where `one` is the low elem_size bytes of `one_bits`.
cudaError_t launch_eye_like(int elem_size, uint64_t one_bits, int64_t rows, int64_t cols, int64_t k, void* y,
                            cudaStream_t s);

// 0: Hann, 1: Hamming, 2: Blackman. n samples over a period of n (periodic) or n - 1; a window of
// period 0 is all ones. Any numeric y type (integers truncate, as graft's Cast does).
cudaError_t launch_window(KType t, int kind, bool periodic, void* y, int64_t n, cudaStream_t s);

// x viewed as [d0, d1, block] with the batch on axis 0 (batch_axis_0) or 1 and time on the other;
// the first lens[b] steps of batch b are reversed. A length outside [0, steps] (which the CPU
// reference refuses, and a kernel cannot report) leaves that batch's steps in order.
cudaError_t launch_reverse_sequence(int elem_size, const void* x, const int64_t* lens, void* y, bool batch_axis_0,
                                    int64_t d0, int64_t d1, int64_t block, cudaStream_t s);

// y[b] = det(x[b]) for `batches` matrices [m, m] of float dtype t (float32, float16, bfloat16,
// float64): one thread per matrix, Gaussian elimination with partial pivoting in double, as the CPU
// reference does it, on the matrix copied to `scratch` (batches * m * m doubles).
cudaError_t launch_det(KType t, const void* x, int64_t batches, int64_t m, double* scratch, void* y, cudaStream_t s);

// ---- Einsum ----------------------------------------------------------------------------------------

inline constexpr int kEinsumMaxInputs = 3;
inline constexpr int kEinsumMaxLabels = 12;
// Labels in output-first order: the first n_out index y's axes, the rest are summed. stride[k][l] is
// input k's stride for label l (0 where it lacks the label or broadcasts it; a diagonal adds).
struct EinsumArgs {
  int n_in = 0, n_labels = 0, n_out = 0;
  const void* in[kEinsumMaxInputs] = {};
  int64_t stride[kEinsumMaxInputs][kEinsumMaxLabels] = {};
  int64_t ext[kEinsumMaxLabels] = {};
  int64_t inner = 1;  // product of the summed labels' extents
};
// One thread per output element, summing in double (floats) or wrapping int64 (integers), in the
// CPU reference's order. All inputs and y have type t.
cudaError_t launch_einsum(KType t, const EinsumArgs& a, void* y, int64_t n, cudaStream_t s);

}  // namespace graft::cuda::k
