// Launcher for the CUDA kernel of the spectral ops (DFT, STFT; src/backends/cuda/spectral_ops.cpp).
// Plain device pointers, no framework types; returns the launch's cudaError_t
// (cudaErrorInvalidValue for a type or layout the launcher does not handle).
//
// The sum is the CPU reference's (src/backends/cpu/spectral.h, SpectralLayout) term for term:
// samples loaded as double, twiddle angle 2*pi*(k*m mod n)/n, accumulation in double, one rounding
// into the output type.
#pragma once

#include "backends/cuda/cuda_kernel_common.cuh"

namespace graft::cuda::k {

// Mirrors graft::SpectralLayout: y is [batch, frames, bins, inner, 2] and
//   y[a, f, k, i] = scale * sum_{m < terms} w[m] * x(a, f, i, m) * exp(sign * 2*pi*j * (k*m mod n) / n),
// x(a, f, i, m) at scalar offset a*batch_stride + f*frame_stride + i*inner_stride + m*term_stride
// (imaginary part next to it when complex_input); sign -1 and scale 1, or +1 and 1/n (inverse).
struct SpectralArgs {
  int64_t batch = 1, frames = 1, bins = 1, inner = 1;
  int64_t batch_stride = 0, frame_stride = 0, inner_stride = 0, term_stride = 0;
  int64_t terms = 0, n = 1;
  bool complex_input = false, inverse = false;
};

// One thread per output bin. x, window (nullptr: none) and y all have the float type t
// (f32, f16, bf16, f64).
cudaError_t launch_spectral(KType t, const SpectralArgs& a, const void* x, const void* window, void* y,
                            cudaStream_t s);

}  // namespace graft::cuda::k
