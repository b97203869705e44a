// A direct CUDA kernel for the transposed convolutions cuDNN cannot express (conv_transpose_cuda.cpp
// says which: asymmetric pads, output_padding at or past the stride, 3-D): each output element
// gathers the input positions whose window reaches it, y[o] = B + sum x[i] * w[k] over
// i * s - pb + k * d = o, as the CPU reference scatters them, accumulated in float (double for
// float64) in the reference's order of channels and taps.
#include "ops/nn/nn_kernels.cuh"

#include "backends/cuda/cuda_kernel_device.cuh"

namespace graft::cuda::k {

namespace {

template <typename T>
using TransposeAcc = std::conditional_t<std::is_same_v<T, double>, double, float>;

// g: X [n, c, in...], Y [n, M, out...] over three spatial axes (leading ones 1 for fewer), kernel k,
// stride s, dilation d, begin pad pb; W is [c, M / group, k...].
template <typename T>
__global__ void conv_transpose_direct_kernel(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                                             T* __restrict__ y, Window3d g, int64_t M, int64_t group, int64_t total) {
  using A = TransposeAcc<T>;
  const int64_t cg = g.c / group, mg = M / group;
  const int64_t in_plane = g.in[0] * g.in[1] * g.in[2], k_plane = g.k[0] * g.k[1] * g.k[2];
  GRAFT_GRID_STRIDE(idx, total) {
    int64_t r = idx;
    int64_t o[3];
    for (int a = 2; a >= 0; --a) {
      o[a] = r % g.out[a];
      r /= g.out[a];
    }
    const int64_t m = r % M, n = r / M;
    const int64_t grp = m / mg, om = m % mg;
    A acc = b ? static_cast<A>(Elem<T>::ld(b[m])) : A(0);
    for (int64_t ci = 0; ci < cg; ++ci) {
      const int64_t ch = grp * cg + ci;
      const T* xc = x + (n * g.c + ch) * in_plane;
      const T* wc = w + (ch * mg + om) * k_plane;
      for (int64_t k0 = 0; k0 < g.k[0]; ++k0) {
        const int64_t t0 = o[0] + g.pb[0] - k0 * g.d[0];  // = i0 * s0 when a tap of i0 lands here
        if (t0 < 0 || t0 % g.s[0]) continue;
        const int64_t i0 = t0 / g.s[0];
        if (i0 >= g.in[0]) continue;
        for (int64_t k1 = 0; k1 < g.k[1]; ++k1) {
          const int64_t t1 = o[1] + g.pb[1] - k1 * g.d[1];
          if (t1 < 0 || t1 % g.s[1]) continue;
          const int64_t i1 = t1 / g.s[1];
          if (i1 >= g.in[1]) continue;
          for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
            const int64_t t2 = o[2] + g.pb[2] - k2 * g.d[2];
            if (t2 < 0 || t2 % g.s[2]) continue;
            const int64_t i2 = t2 / g.s[2];
            if (i2 >= g.in[2]) continue;
            acc += static_cast<A>(Elem<T>::ld(xc[(i0 * g.in[1] + i1) * g.in[2] + i2])) *
                   static_cast<A>(Elem<T>::ld(wc[(k0 * g.k[1] + k1) * g.k[2] + k2]));
          }
        }
      }
    }
    y[idx] = Elem<T>::st(static_cast<typename Elem<T>::C>(acc));
  }
}

}  // namespace

cudaError_t launch_conv_transpose_direct(KType t, const void* x, const void* w, const void* b, void* y,
                                         const Window3d& g, int64_t M, int64_t group, cudaStream_t s) {
  const int64_t total = g.n * M * g.out[0] * g.out[1] * g.out[2];
  if (total == 0) return cudaSuccess;
  if (group < 1 || M % group != 0 || g.c % group != 0) return cudaErrorInvalidValue;
  for (int a = 0; a < 3; ++a)
    if (g.s[a] < 1 || g.d[a] < 1 || g.k[a] < 1) return cudaErrorInvalidValue;
  GRAFT_FLOAT64_DISPATCH(t, (conv_transpose_direct_kernel<T><<<grid_for(total), kThreads, 0, s>>>(
                                static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(b),
                                static_cast<T*>(y), g, M, group, total)));
  return cudaGetLastError();
}

}  // namespace graft::cuda::k
