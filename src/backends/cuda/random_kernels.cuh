// Launchers for the CUDA kernels of the random ops (random_ops.cpp): RandomUniform(Like),
// RandomNormal(Like), Bernoulli, Multinomial and Dropout in training mode. Plain device pointers,
// no framework types; each returns the launch's cudaError_t (cudaErrorInvalidValue for a type the
// launcher does not handle).
//
// Generator: cuRAND's Philox4x32-10 (device API), one stream per output element (the element's
// index is the Philox subsequence), so the values do not depend on the launch configuration. An
// element's first 128 bits give two uniforms in [0, 1) of 53 bits each. The streams are graft's own
// and differ from the CPU engine's (std::mt19937_64) for the same seed.
//
// What the kernels do where the CPU reference fails the run (a device error would need a copy back
// and a synchronization per run, which a CUDA graph cannot hold):
// - uniform: a draw that rounds to high (or below low) in the output dtype is drawn again from the
//   element's next Philox bits, up to 64 times; only when no value of the dtype lies in
//   [low, high) at all (an interval narrower than the dtype's spacing, where the CPU reports an
//   error) do all fail, and then the element is low rounded to the dtype.
// - Bernoulli: y = (u < p) for u in [0, 1): p <= 0 or NaN gives 0, p >= 1 gives 1; the CPU engine
//   refuses p outside [0, 1] instead.
// - Multinomial: a row holding NaN or +inf, or only -inf (no class with a positive probability),
//   samples class 0 every time; the CPU engine refuses such a row.
#pragma once

#include "backends/cuda/cuda_kernel_common.cuh"

namespace graft::cuda::k {

// Where an element's stream is seeded from: `seed` itself when `counter` is null (a seeded node,
// the host already mixed the seed), else splitmix64(seed + golden * *counter), the counter read on
// the device so a replayed CUDA graph sees the value the previous replay left (an unseeded node).
// The draw kernels only read the counter; launch_advance_counter, launched after them, moves it on.
struct RandSeed {
  uint64_t seed = 0;
  uint64_t* counter = nullptr;
};

// SplitMix64's finalizer: the host and device mix seeds the same way.
inline __host__ __device__ uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// *counter += 1: one thread, launched on the stream right after the draw that read it, so an eager
// run and every replay of a captured graph advance it.
cudaError_t launch_advance_counter(uint64_t* counter, cudaStream_t s);

// y[i] uniform in [low, high) (high == low: low), y f16/bf16/f32/f64.
cudaError_t launch_random_uniform(KType t, RandSeed seed, double low, double high, void* y, int64_t n,
                                  cudaStream_t s);
// y[i] = mean + scale * z, z standard normal by Box-Muller over two uniforms; y f16/bf16/f32/f64.
cudaError_t launch_random_normal(KType t, RandSeed seed, double mean, double scale, void* y, int64_t n,
                                 cudaStream_t s);
// y[i] = (u < p[i]) ? one : 0 stored as an `out_size`-byte word (1, 2, 4 or 8), `one_bits` being
// the output dtype's 1 (so any numeric dtype or bool); p f16/bf16/f32/f64.
cudaError_t launch_bernoulli(KType pt, RandSeed seed, const void* p, int out_size, uint64_t one_bits, void* y,
                             int64_t n, cudaStream_t s);
// x [batch, classes] unnormalized log probabilities (f16/bf16/f32/f64) -> y [batch, samples] class
// indices (int64 when `out64`, else int32): per sample the first class whose running sum of
// exp(x - max) exceeds u * total (at most the last class of positive weight), in double.
cudaError_t launch_multinomial(KType xt, RandSeed seed, const void* x, int64_t batch, int64_t classes,
                               int64_t samples, bool out64, void* y, cudaStream_t s);
// Dropout in training mode: keep = u >= ratio; y = keep ? x / (1 - ratio) : 0 (in double, rounded
// once to x's dtype), mask (bool, may be null) = keep. x and y f16/bf16/f32/f64.
cudaError_t launch_dropout_train(KType t, RandSeed seed, double ratio, const void* x, void* y, bool* mask,
                                 int64_t n, cudaStream_t s);

}  // namespace graft::cuda::k
