// CUDA kernels of modulated deformable convolution (im2col + GEMM, one image at a time).
//
// Forward, per image: `columns_kernel` writes the modulated bilinear samples as a float matrix of
// C*kh*kw rows by Ho*Wo columns (row c*K + k: channel c, kernel tap k), and `gemm_kernel` multiplies
// each conv group's weights (Co/groups x C/groups*K) by its rows of that matrix, adding the bias.
//
// Backward, per image: the column gradient is W^T * grad_out (one GEMM per group); grad_weight
// accumulates grad_out * columns^T over the images; `col2im_kernel` scatters the column gradient
// times mask times the bilinear corner weights into grad_x (float atomics: for __half into a float
// buffer converted afterwards); `offset_mask_kernel` gives each (deform group, tap, position) its
// offset and mask gradients by summing over the group's channels, so those are written once,
// without atomics. grad_bias is a per-channel reduction of grad_out.
//
// The GEMM is a plain 16x16 shared-memory tiled kernel over strided operands (no cuBLAS): it keeps
// the op free of a library handle; a tensor-core GEMM is the obvious next step for speed.
#include "ops/modulated_deform_conv2d/modulated_deform_conv2d_kernels.cuh"

#include <algorithm>
#include <type_traits>

namespace graft::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kTile = 16;

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
template <typename T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }

// Where one kernel tap samples: grid position plus offset, mmcv's validity rule (-1 < y < H and
// -1 < x < W, which also rejects NaN) and the bilinear cell.
struct Tap {
  int64_t y0, x0;
  float ly, lx, m;
  bool inside;
};

// Tap of (channel group g, kernel tap kk, output position pos) of one image; `off` and `mask` point at
// the image's offset and mask.
template <typename T>
__device__ __forceinline__ Tap locate(const T* __restrict__ off, const T* __restrict__ mask, const MdcnSizes& z,
                                      int64_t g, int64_t kk, int64_t pos) {
  const int64_t k = z.kh * z.kw, p = z.ho * z.wo;
  const int64_t oy = pos / z.wo, ox = pos % z.wo, i = kk / z.kw, j = kk % z.kw;
  const int64_t oi = (g * 2 * k + 2 * kk) * p + pos;
  const float y = static_cast<float>(oy * z.sh - z.ph + i * z.dh) + to_float(off[oi]);
  const float x = static_cast<float>(ox * z.sw - z.pw + j * z.dw) + to_float(off[oi + p]);
  Tap t;
  t.m = to_float(mask[(g * k + kk) * p + pos]);
  t.inside = y > -1.0f && x > -1.0f && y < static_cast<float>(z.h) && x < static_cast<float>(z.w);
  const float yf = t.inside ? floorf(y) : 0.0f, xf = t.inside ? floorf(x) : 0.0f;
  t.y0 = static_cast<int64_t>(yf);
  t.x0 = static_cast<int64_t>(xf);
  t.ly = t.inside ? y - yf : 0.0f;
  t.lx = t.inside ? x - xf : 0.0f;
  return t;
}

// The four corners (y0,x0), (y0,x0+1), (y0+1,x0), (y0+1,x0+1) of a tap in one plane; zero outside.
template <typename T>
__device__ __forceinline__ void corners(const T* __restrict__ plane, const Tap& t, int64_t h, int64_t w, float (&v)[4]) {
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const int64_t yy = t.y0 + (q >> 1), xx = t.x0 + (q & 1);
    v[q] = (yy >= 0 && xx >= 0 && yy < h && xx < w) ? to_float(plane[yy * w + xx]) : 0.0f;
  }
}

// col[(c*K + kk)*P + pos] = mask * bilinear(x[c]) for one image.
template <typename T>
__global__ void __launch_bounds__(kThreads)
columns_kernel(const T* __restrict__ x, const T* __restrict__ off, const T* __restrict__ mask, float* __restrict__ col,
               MdcnSizes z, int64_t total) {
  const int64_t k = z.kh * z.kw, p = z.ho * z.wo, cpd = z.c / z.deform_groups, hw = z.h * z.w;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t pos = idx % p, kk = (idx / p) % k, c = idx / p / k;
    const Tap t = locate(off, mask, z, c / cpd, kk, pos);
    float val = 0.0f;
    if (t.inside) {
      float v[4];
      corners(x + c * hw, t, z.h, z.w, v);
      const float hy = 1.0f - t.ly, hx = 1.0f - t.lx;
      val = hy * hx * v[0] + hy * t.lx * v[1] + t.ly * hx * v[2] + t.ly * t.lx * v[3];
    }
    col[idx] = t.m * val;
  }
}

// C[b](m, n) (+)= sum_k A[b](m, k) * B[b](k, n) (+ bias[b][m]) over strided operands; b = blockIdx.z.
template <typename TA, typename TB, typename TC>
struct GemmArgs {
  int64_t m = 0, n = 0, k = 0;
  const TA* a = nullptr;
  int64_t a_sm = 0, a_sk = 0, a_sb = 0;
  const TB* b = nullptr;
  int64_t b_sk = 0, b_sn = 0, b_sb = 0;
  TC* c = nullptr;
  int64_t c_sm = 0, c_sn = 0, c_sb = 0;
  const TA* bias = nullptr;  // per row m of batch b: bias[b * bias_sb + m]
  int64_t bias_sb = 0;
  bool accumulate = false;
};

template <typename TA, typename TB, typename TC>
__global__ void __launch_bounds__(kTile * kTile) gemm_kernel(GemmArgs<TA, TB, TC> g) {
  __shared__ float as[kTile][kTile + 1];
  __shared__ float bs[kTile][kTile + 1];
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int64_t batch = blockIdx.z;
  const int64_t row = static_cast<int64_t>(blockIdx.y) * kTile + ty;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kTile + tx;
  const TA* a = g.a + batch * g.a_sb;
  const TB* b = g.b + batch * g.b_sb;
  float acc = 0.0f;
  for (int64_t k0 = 0; k0 < g.k; k0 += kTile) {
    const int64_t ka = k0 + tx, kb = k0 + ty;
    as[ty][tx] = (row < g.m && ka < g.k) ? to_float(a[row * g.a_sm + ka * g.a_sk]) : 0.0f;
    bs[ty][tx] = (kb < g.k && col < g.n) ? to_float(b[kb * g.b_sk + col * g.b_sn]) : 0.0f;
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kTile; ++kk) acc = fmaf(as[ty][kk], bs[kk][tx], acc);
    __syncthreads();
  }
  if (row < g.m && col < g.n) {
    TC* out = g.c + batch * g.c_sb + row * g.c_sm + col * g.c_sn;
    if (g.bias) acc += to_float(g.bias[batch * g.bias_sb + row]);
    if (g.accumulate) acc += to_float(*out);
    *out = from_float<TC>(acc);
  }
}

// grad_x[c] += gcol * mask * corner weight at each corner inside the image, for one image.
template <typename T>
__global__ void __launch_bounds__(kThreads)
col2im_kernel(const T* __restrict__ off, const T* __restrict__ mask, const float* __restrict__ gcol,
              float* __restrict__ gx, MdcnSizes z, int64_t total) {
  const int64_t k = z.kh * z.kw, p = z.ho * z.wo, cpd = z.c / z.deform_groups, hw = z.h * z.w;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t pos = idx % p, kk = (idx / p) % k, c = idx / p / k;
    const Tap t = locate(off, mask, z, c / cpd, kk, pos);
    if (!t.inside) continue;
    const float g = gcol[idx] * t.m;
    const float hy = 1.0f - t.ly, hx = 1.0f - t.lx;
    const float cw[4] = {hy * hx, hy * t.lx, t.ly * hx, t.ly * t.lx};
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int64_t yy = t.y0 + (q >> 1), xx = t.x0 + (q & 1);
      if (yy >= 0 && xx >= 0 && yy < z.h && xx < z.w) atomicAdd(gx + c * hw + yy * z.w + xx, g * cw[q]);
    }
  }
}

// One thread per (deform group, tap, position) of one image: with the column gradient gc of each
// channel of the group, d/d(mask) = sum gc * value and d/d(dy, dx) = mask * sum gc * d value/d(y, x).
template <typename T>
__global__ void __launch_bounds__(kThreads)
offset_mask_kernel(const T* __restrict__ x, const T* __restrict__ off, const T* __restrict__ mask,
                   const float* __restrict__ gcol, T* __restrict__ goff, T* __restrict__ gmask, MdcnSizes z,
                   int64_t total) {
  const int64_t k = z.kh * z.kw, p = z.ho * z.wo, cpd = z.c / z.deform_groups, hw = z.h * z.w;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t pos = idx % p, kk = (idx / p) % k, g = idx / p / k;
    const Tap t = locate(off, mask, z, g, kk, pos);
    float s_m = 0.0f, s_y = 0.0f, s_x = 0.0f;
    if (t.inside) {
      const float hy = 1.0f - t.ly, hx = 1.0f - t.lx;
      for (int64_t c = g * cpd; c < (g + 1) * cpd; ++c) {
        float v[4];
        corners(x + c * hw, t, z.h, z.w, v);
        const float gc = gcol[(c * k + kk) * p + pos];
        const float val = hy * hx * v[0] + hy * t.lx * v[1] + t.ly * hx * v[2] + t.ly * t.lx * v[3];
        s_m = fmaf(gc, val, s_m);
        s_y = fmaf(gc, hx * (v[2] - v[0]) + t.lx * (v[3] - v[1]), s_y);
        s_x = fmaf(gc, hy * (v[1] - v[0]) + t.ly * (v[3] - v[2]), s_x);
      }
    }
    const int64_t oi = (g * 2 * k + 2 * kk) * p + pos;
    goff[oi] = from_float<T>(s_y * t.m);
    goff[oi + p] = from_float<T>(s_x * t.m);
    gmask[(g * k + kk) * p + pos] = from_float<T>(s_m);
  }
}

// grad_bias[co] = sum over images and positions of grad_out[n, co]; one block per channel.
template <typename T>
__global__ void __launch_bounds__(kThreads)
bias_grad_kernel(const T* __restrict__ gout, T* __restrict__ gbias, int64_t n, int64_t co, int64_t p) {
  __shared__ float partial[kThreads];
  const int64_t ch = blockIdx.x;
  float s = 0.0f;
  for (int64_t i = threadIdx.x; i < n * p; i += blockDim.x) s += to_float(gout[((i / p) * co + ch) * p + i % p]);
  partial[threadIdx.x] = s;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride >>= 1) {
    if (static_cast<int>(threadIdx.x) < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) gbias[ch] = from_float<T>(partial[0]);
}

template <typename T>
__global__ void float_to_kernel(const float* __restrict__ in, T* __restrict__ out, int64_t count) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[i] = from_float<T>(in[i]);
}

// ---- launch helpers -----------------------------------------------------------------------------
unsigned grid_for(int64_t work, int threads) {
  const int64_t blocks = (work + threads - 1) / threads;
  return static_cast<unsigned>(std::min<int64_t>(std::max<int64_t>(blocks, 1), 1 << 30));
}

bool bad_sizes(const MdcnSizes& z) {
  const int64_t all[] = {z.n, z.c, z.h, z.w, z.co, z.kh, z.kw, z.ho, z.wo, z.ph, z.pw};
  for (int64_t v : all)
    if (v < 0) return true;
  if (z.sh < 1 || z.sw < 1 || z.dh < 1 || z.dw < 1 || z.groups < 1 || z.deform_groups < 1) return true;
  if (z.c % z.groups != 0 || z.co % z.groups != 0 || z.c % z.deform_groups != 0) return true;
  // Sample coordinates are floats: grid positions must be exact in float (below 2^24).
  return z.h > (1 << 24) || z.w > (1 << 24) || z.ho * z.sh + z.kh * z.dh > (1 << 24) ||
         z.wo * z.sw + z.kw * z.dw > (1 << 24);
}

template <typename TA, typename TB, typename TC>
cudaError_t launch_gemm(const GemmArgs<TA, TB, TC>& g, int64_t batches, cudaStream_t stream) {
  if (g.m == 0 || g.n == 0 || batches == 0) return cudaSuccess;
  const int64_t gx = (g.n + kTile - 1) / kTile, gy = (g.m + kTile - 1) / kTile;
  if (gx > 0x7fffffff || gy > 65535 || batches > 65535) return cudaErrorInvalidConfiguration;
  gemm_kernel<TA, TB, TC><<<dim3(static_cast<unsigned>(gx), static_cast<unsigned>(gy), static_cast<unsigned>(batches)),
                            dim3(kTile, kTile), 0, stream>>>(g);
  return cudaGetLastError();
}

size_t region_bytes(int64_t floats) { return (static_cast<size_t>(floats) * sizeof(float) + 255) / 256 * 256; }

// Scratch given by the caller, or taken stream-ordered when it is too small.
class Scratch {
 public:
  Scratch(void* ws, size_t have, size_t need, cudaStream_t stream) : stream_(stream) {
    if (need == 0) return;
    if (ws != nullptr && have >= need) {
      base_ = static_cast<char*>(ws);
    } else {
      err_ = cudaMallocAsync(reinterpret_cast<void**>(&base_), need, stream);
      owned_ = err_ == cudaSuccess;
    }
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  cudaError_t error() const { return err_; }
  // Takes the next region of `floats` floats (256-byte aligned).
  float* take(int64_t floats) {
    float* p = reinterpret_cast<float*>(base_ + used_);
    used_ += region_bytes(floats);
    return p;
  }
  cudaError_t release() {
    cudaError_t e = cudaSuccess;
    if (owned_) e = cudaFreeAsync(base_, stream_);
    owned_ = false;
    return e;
  }
  ~Scratch() { (void)release(); }

 private:
  cudaStream_t stream_;
  char* base_ = nullptr;
  size_t used_ = 0;
  bool owned_ = false;
  cudaError_t err_ = cudaSuccess;
};

}  // namespace

template <typename T>
size_t modulated_deform_conv2d_workspace_bytes(const MdcnSizes& z, bool backward) {
  const int64_t cols = z.c * z.kh * z.kw * z.ho * z.wo;
  size_t bytes = region_bytes(cols);
  if (backward) {
    bytes += region_bytes(cols);
    if constexpr (!std::is_same_v<T, float>)
      bytes += region_bytes(z.c * z.h * z.w) + region_bytes(z.co * (z.c / std::max<int64_t>(z.groups, 1)) * z.kh * z.kw);
  }
  return bytes;
}

template <typename T>
cudaError_t modulated_deform_conv2d_forward(const T* x, const T* offset, const T* mask, const T* weight, const T* bias,
                                            T* output, const MdcnSizes& z, void* workspace, size_t workspace_bytes,
                                            cudaStream_t stream) {
  if (bad_sizes(z)) return cudaErrorInvalidValue;
  const int64_t k = z.kh * z.kw, p = z.ho * z.wo, cg = z.c / z.groups, cog = z.co / z.groups;
  const int64_t cols = z.c * k * p;
  if (z.n == 0 || z.co == 0 || p == 0) return cudaSuccess;
  Scratch scratch(workspace, workspace_bytes, modulated_deform_conv2d_workspace_bytes<T>(z, false), stream);
  if (scratch.error() != cudaSuccess) return scratch.error();
  float* col = scratch.take(cols);
  cudaError_t err = cudaSuccess;
  for (int64_t n = 0; n < z.n && err == cudaSuccess; ++n) {
    if (cols > 0) {
      columns_kernel<T><<<grid_for(cols, kThreads), kThreads, 0, stream>>>(
          x + n * z.c * z.h * z.w, offset + n * 2 * z.deform_groups * k * p, mask + n * z.deform_groups * k * p, col, z,
          cols);
      err = cudaGetLastError();
      if (err != cudaSuccess) break;
    }
    // out[n, g*cog + m, pos] = bias + sum_r weight[g*cog + m, r] * col[g*cg*K + r, pos]
    GemmArgs<T, float, T> g;
    g.m = cog, g.n = p, g.k = cg * k;
    g.a = weight, g.a_sm = cg * k, g.a_sk = 1, g.a_sb = cog * cg * k;
    g.b = col, g.b_sk = p, g.b_sn = 1, g.b_sb = cg * k * p;
    g.c = output + n * z.co * p, g.c_sm = p, g.c_sn = 1, g.c_sb = cog * p;
    g.bias = bias, g.bias_sb = cog;
    err = launch_gemm(g, z.groups, stream);
  }
  const cudaError_t f = scratch.release();
  return err != cudaSuccess ? err : f;
}

template <typename T>
cudaError_t modulated_deform_conv2d_backward(const T* x, const T* offset, const T* mask, const T* weight,
                                             const T* grad_output, T* grad_x, T* grad_offset, T* grad_mask,
                                             T* grad_weight, T* grad_bias, const MdcnSizes& z, void* workspace,
                                             size_t workspace_bytes, cudaStream_t stream) {
  if (bad_sizes(z)) return cudaErrorInvalidValue;
  constexpr bool kFloat = std::is_same_v<T, float>;
  const int64_t k = z.kh * z.kw, p = z.ho * z.wo, cg = z.c / z.groups, cog = z.co / z.groups, hw = z.h * z.w;
  const int64_t cols = z.c * k * p, wcount = z.co * cg * k;
  Scratch scratch(workspace, workspace_bytes, modulated_deform_conv2d_workspace_bytes<T>(z, true), stream);
  if (scratch.error() != cudaSuccess) return scratch.error();
  float* col = scratch.take(cols);
  float* gcol = scratch.take(cols);
  float* gx_half = kFloat ? nullptr : scratch.take(z.c * hw);
  float* gw = nullptr;
  if constexpr (kFloat) {
    gw = grad_weight;
  } else {
    gw = scratch.take(wcount);
  }
  cudaError_t err = cudaSuccess;
  auto check = [&]() {
    if (err == cudaSuccess) err = cudaGetLastError();
    return err == cudaSuccess;
  };
  if (wcount > 0) err = cudaMemsetAsync(gw, 0, static_cast<size_t>(wcount) * sizeof(float), stream);
  if constexpr (kFloat) {
    if (err == cudaSuccess && z.n * z.c * hw > 0)
      err = cudaMemsetAsync(grad_x, 0, static_cast<size_t>(z.n * z.c * hw) * sizeof(float), stream);
  }
  for (int64_t n = 0; n < z.n && err == cudaSuccess; ++n) {
    const T* x_n = x + n * z.c * hw;
    const T* off_n = offset + n * 2 * z.deform_groups * k * p;
    const T* mask_n = mask + n * z.deform_groups * k * p;
    const T* go_n = grad_output + n * z.co * p;
    float* gx_n = nullptr;
    if constexpr (kFloat) {
      gx_n = grad_x + n * z.c * hw;
    } else {
      gx_n = gx_half;
      if (z.c * hw > 0) err = cudaMemsetAsync(gx_n, 0, static_cast<size_t>(z.c * hw) * sizeof(float), stream);
      if (err != cudaSuccess) break;
    }
    if (cols > 0) {
      columns_kernel<T><<<grid_for(cols, kThreads), kThreads, 0, stream>>>(x_n, off_n, mask_n, col, z, cols);
      if (!check()) break;
      // gcol[g*cg*K + r, pos] = sum_m weight[g*cog + m, r] * grad_out[n, g*cog + m, pos]
      GemmArgs<T, T, float> gc;
      gc.m = cg * k, gc.n = p, gc.k = cog;
      gc.a = weight, gc.a_sm = 1, gc.a_sk = cg * k, gc.a_sb = cog * cg * k;
      gc.b = go_n, gc.b_sk = p, gc.b_sn = 1, gc.b_sb = cog * p;
      gc.c = gcol, gc.c_sm = p, gc.c_sn = 1, gc.c_sb = cg * k * p;
      if ((err = launch_gemm(gc, z.groups, stream)) != cudaSuccess) break;
      // gw[g*cog + m, r] += sum_pos grad_out[n, g*cog + m, pos] * col[g*cg*K + r, pos]
      GemmArgs<T, float, float> gwa;
      gwa.m = cog, gwa.n = cg * k, gwa.k = p;
      gwa.a = go_n, gwa.a_sm = p, gwa.a_sk = 1, gwa.a_sb = cog * p;
      gwa.b = col, gwa.b_sk = 1, gwa.b_sn = p, gwa.b_sb = cg * k * p;
      gwa.c = gw, gwa.c_sm = cg * k, gwa.c_sn = 1, gwa.c_sb = cog * cg * k;
      gwa.accumulate = true;
      if ((err = launch_gemm(gwa, z.groups, stream)) != cudaSuccess) break;
      col2im_kernel<T><<<grid_for(cols, kThreads), kThreads, 0, stream>>>(off_n, mask_n, gcol, gx_n, z, cols);
      if (!check()) break;
    }
    const int64_t taps = z.deform_groups * k * p;
    if (taps > 0) {
      offset_mask_kernel<T><<<grid_for(taps, kThreads), kThreads, 0, stream>>>(
          x_n, off_n, mask_n, gcol, grad_offset + n * 2 * z.deform_groups * k * p, grad_mask + n * z.deform_groups * k * p,
          z, taps);
      if (!check()) break;
    }
    if constexpr (!kFloat) {
      if (z.c * hw > 0) {
        float_to_kernel<T><<<grid_for(z.c * hw, kThreads), kThreads, 0, stream>>>(gx_n, grad_x + n * z.c * hw, z.c * hw);
        if (!check()) break;
      }
    }
  }
  if constexpr (!kFloat) {
    if (err == cudaSuccess && wcount > 0) {
      float_to_kernel<T><<<grid_for(wcount, kThreads), kThreads, 0, stream>>>(gw, grad_weight, wcount);
      check();
    }
  }
  if (err == cudaSuccess && grad_bias != nullptr && z.co > 0) {
    if (z.co > 0x7fffffff) {
      err = cudaErrorInvalidConfiguration;
    } else {
      bias_grad_kernel<T><<<static_cast<unsigned>(z.co), kThreads, 0, stream>>>(grad_output, grad_bias, z.n, z.co, p);
      check();
    }
  }
  const cudaError_t f = scratch.release();
  return err != cudaSuccess ? err : f;
}

#define GRAFT_MDCN_INSTANTIATE(T)                                                                                  \
  template size_t modulated_deform_conv2d_workspace_bytes<T>(const MdcnSizes&, bool);                              \
  template cudaError_t modulated_deform_conv2d_forward<T>(const T*, const T*, const T*, const T*, const T*, T*,    \
                                                          const MdcnSizes&, void*, size_t, cudaStream_t);          \
  template cudaError_t modulated_deform_conv2d_backward<T>(const T*, const T*, const T*, const T*, const T*, T*,   \
                                                           T*, T*, T*, T*, const MdcnSizes&, void*, size_t,        \
                                                           cudaStream_t);
GRAFT_MDCN_INSTANTIATE(float)
GRAFT_MDCN_INSTANTIATE(__half)
#undef GRAFT_MDCN_INSTANTIATE

}  // namespace graft::cuda
