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

namespace graft::cuda::k {

// ---- MelWeightMatrix (CPU reference: src/backends/cpu/mel.cpp) -----------------------------------

// Up to this many band edges travel in the launch's parameters, computed on the host with the CPU
// reference's own arithmetic (so a floor() that lands on an integer cannot differ by an ulp of pow);
// more are computed per thread on the device with the same operations in the same order.
constexpr int kMelParamEdges = 500;

// y is [bins, mels]; band i rises from edge i to edge i + 1 and falls to edge i + 2. Edge k is
// floor((dft_length + 1) * hz(low_mel + step * k) / sample_rate), hz(m) = 700 * (10^(m / 2595) - 1).
struct MelArgs {
  int64_t bins = 0, mels = 0;
  int64_t dft_length = 1, sample_rate = 1;
  double low_mel = 0, step = 0;
  int host_edges = 0;  // mels + 2 when `edges` holds every edge, else 0
  int32_t edges[kMelParamEdges] = {};
};

// One thread per weight; `t` is the output type (f32, f16, bf16, f64, i8, u8, i32, i64). Each
// weight is computed in double and rounded once (integers truncate), as the CPU reference does.
cudaError_t launch_mel_weight_matrix(KType t, const MelArgs& a, void* y, cudaStream_t s);

}  // namespace graft::cuda::k
