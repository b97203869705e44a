// LayerNormalization's CUDA kernels and op over the trailing block: a warp or part of one per row
// when rows are short enough to live in registers (row_kernels.cuh), else a block per row.
#include "ops/reduce_norm/reduce_norm.h"

#include <climits>
#include <string>

#include "backends/cuda/cuda_kernel_common.cuh"
#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "ops/reduce_norm/row_kernels.cuh"

namespace graft::cuda {

// ---- kernels --------------------------------------------------------------------------------------

namespace k {

namespace {

template <typename T>
__global__ void layernorm_kernel(const T* __restrict__ x, const T* __restrict__ scale, int64_t scale_n,
                                 const T* __restrict__ bias, int64_t bias_n, T* __restrict__ y, float* mean_out,
                                 float* inv_out, int64_t inner, float eps) {
  __shared__ float sh[32];
  const T* xp = x + blockIdx.x * inner;
  T* yp = y + blockIdx.x * inner;
  float s = 0.f;
  for (int64_t k = threadIdx.x; k < inner; k += blockDim.x) s += Elem<T>::ld(xp[k]);
  const float mean = block_sum(s, sh) / static_cast<float>(inner);
  float v = 0.f;
  for (int64_t k = threadIdx.x; k < inner; k += blockDim.x) {
    float d = Elem<T>::ld(xp[k]) - mean;
    v += d * d;
  }
  const float inv = rsqrtf(block_sum(v, sh) / static_cast<float>(inner) + eps);
  for (int64_t k = threadIdx.x; k < inner; k += blockDim.x) {
    float o = (Elem<T>::ld(xp[k]) - mean) * inv * Elem<T>::ld(scale[scale_n == 1 ? 0 : k]);
    if (bias) o += Elem<T>::ld(bias[bias_n == 1 ? 0 : k]);
    yp[k] = Elem<T>::st(o);
  }
  if (threadIdx.x == 0) {
    if (mean_out) mean_out[blockIdx.x] = mean;
    if (inv_out) inv_out[blockIdx.x] = inv;
  }
}

// LayerNormalization of contiguous rows, two passes over the registers (mean, then the centred
// variance) as the block kernel does. scale/bias: `inner` elements (kVec-aligned when kVec > 1)
// or one.
template <typename T, int kVec, int kIters>
__global__ void layernorm_warp_kernel(const T* __restrict__ x, const T* __restrict__ scale, int64_t scale_n,
                                      const T* __restrict__ bias, int64_t bias_n, T* __restrict__ y,
                                      float* mean_out, float* inv_out, int64_t rows, int inner, float eps) {
  const int lane = threadIdx.x & 31;
  const int64_t row = int64_t(blockIdx.x) * kRowsPerBlock + (threadIdx.x >> 5);
  if (row >= rows) return;
  float v[kIters][kVec];
  load_row<T, kVec, kIters>(x + row * inner, inner, lane, 0.f, v);
  const int ng = inner / kVec;
  float s = 0.f;
#pragma unroll
  for (int it = 0; it < kIters; ++it)
#pragma unroll
    for (int j = 0; j < kVec; ++j) s += v[it][j];
  const float mean = warp_sum(s) / static_cast<float>(inner);
  float q = 0.f;
#pragma unroll
  for (int it = 0; it < kIters; ++it)
    if (lane + 32 * it < ng)
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        const float d = v[it][j] - mean;
        q += d * d;
      }
  const float inv = rsqrtf(warp_sum(q) / static_cast<float>(inner) + eps);
  T* yr = y + row * inner;
  const float s0 = Elem<T>::ld(scale[0]), b0 = bias ? Elem<T>::ld(bias[0]) : 0.f;
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int g = lane + 32 * it;
    if (g >= ng) continue;
    Pack<T, kVec> sc, bi, o;
    if (scale_n != 1) sc = reinterpret_cast<const Pack<T, kVec>*>(scale)[g];
    if (bias && bias_n != 1) bi = reinterpret_cast<const Pack<T, kVec>*>(bias)[g];
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      float r = (v[it][j] - mean) * inv * (scale_n == 1 ? s0 : Elem<T>::ld(sc.v[j]));
      if (bias) r += bias_n == 1 ? b0 : Elem<T>::ld(bi.v[j]);
      o.v[j] = Elem<T>::st(r);
    }
    reinterpret_cast<Pack<T, kVec>*>(yr)[g] = o;
  }
  if (lane == 0) {
    if (mean_out) mean_out[row] = mean;
    if (inv_out) inv_out[row] = inv;
  }
}

// LayerNormalization of short rows (at most 16 groups): kLanes lanes per row, 32 / kLanes rows per
// warp, as softmax_subwarp_kernel. A warp per row left most lanes idle on the channel rows of
// Swin's and ConvNeXt's first stage (96 half-size channels: 12 groups of 8), which ran at about
// 1.2 TB/s on an H200 at batch 32.
template <typename T, int kVec, int kLanes>
__global__ void layernorm_subwarp_kernel(const T* __restrict__ x, const T* __restrict__ scale, int64_t scale_n,
                                         const T* __restrict__ bias, int64_t bias_n, T* __restrict__ y,
                                         float* mean_out, float* inv_out, int64_t rows, int inner, float eps) {
  constexpr int kRowsPerWarp = 32 / kLanes;
  const int lane = threadIdx.x & 31, sub = lane % kLanes;
  const int64_t first = (int64_t(blockIdx.x) * kRowsPerBlock + (threadIdx.x >> 5)) * kRowsPerWarp;
  if (first >= rows) return;  // whole warps leave together
  const int64_t row = first + lane / kLanes;
  const int ng = inner / kVec;
  const bool mine = row < rows && sub < ng;
  float v[kVec];
  if (mine) {
    const Pack<T, kVec> p = reinterpret_cast<const Pack<T, kVec>*>(x + row * inner)[sub];
#pragma unroll
    for (int j = 0; j < kVec; ++j) v[j] = Elem<T>::ld(p.v[j]);
  } else {
#pragma unroll
    for (int j = 0; j < kVec; ++j) v[j] = 0.f;
  }
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < kVec; ++j) s += v[j];
  // XOR partners below kLanes stay inside the row's aligned group of lanes.
#pragma unroll
  for (int o = kLanes / 2; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  const float mean = s / static_cast<float>(inner);
  float q = 0.f;
  if (mine) {
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      const float d = v[j] - mean;
      q += d * d;
    }
  }
#pragma unroll
  for (int o = kLanes / 2; o > 0; o >>= 1) q += __shfl_xor_sync(0xffffffffu, q, o);
  if (!mine) return;
  const float inv = rsqrtf(q / static_cast<float>(inner) + eps);
  const float s0 = Elem<T>::ld(scale[0]), b0 = bias ? Elem<T>::ld(bias[0]) : 0.f;
  Pack<T, kVec> sc, bi, o;
  if (scale_n != 1) sc = reinterpret_cast<const Pack<T, kVec>*>(scale)[sub];
  if (bias && bias_n != 1) bi = reinterpret_cast<const Pack<T, kVec>*>(bias)[sub];
#pragma unroll
  for (int j = 0; j < kVec; ++j) {
    float r = (v[j] - mean) * inv * (scale_n == 1 ? s0 : Elem<T>::ld(sc.v[j]));
    if (bias) r += bias_n == 1 ? b0 : Elem<T>::ld(bi.v[j]);
    o.v[j] = Elem<T>::st(r);
  }
  reinterpret_cast<Pack<T, kVec>*>(y + row * inner)[sub] = o;
  if (sub == 0) {
    if (mean_out) mean_out[row] = mean;
    if (inv_out) inv_out[row] = inv;
  }
}

// Launches KERNEL<T, kVec, kIters> with the smallest kIters (a power of two) whose groups cover
// `n`; instantiations stop at 32 values per lane (n <= kWarpRowMax keeps within that).
template <typename T, int kVec, int kIters = 1>
cudaError_t layernorm_rows(const T* x, const T* scale, int64_t scale_n, const T* bias, int64_t bias_n, T* y,
                           float* mean, float* inv, int64_t rows, int inner, float eps, cudaStream_t s) {
  if constexpr (kVec * kIters > 32) {
    return cudaErrorInvalidValue;
  } else {
    if (inner > kVec * kIters * 32)
      return layernorm_rows<T, kVec, kIters * 2>(x, scale, scale_n, bias, bias_n, y, mean, inv, rows, inner, eps, s);
    const unsigned grid = static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock);
    layernorm_warp_kernel<T, kVec, kIters><<<grid, kThreads, 0, s>>>(x, scale, scale_n, bias, bias_n, y, mean, inv,
                                                                    rows, inner, eps);
    return cudaGetLastError();
  }
}

// LayerNormalization rows of at most 16 groups: the sub-warp kernel with the fewest lanes (a power
// of two) that cover a row's groups.
template <typename T, int kVec, int kLanes = 1>
cudaError_t layernorm_short_rows(const T* x, const T* scale, int64_t scale_n, const T* bias, int64_t bias_n, T* y,
                                 float* mean, float* inv, int64_t rows, int inner, float eps, cudaStream_t s) {
  if constexpr (kLanes > 16) {
    return cudaErrorInvalidValue;
  } else {
    if (inner > kVec * kLanes)
      return layernorm_short_rows<T, kVec, kLanes * 2>(x, scale, scale_n, bias, bias_n, y, mean, inv, rows, inner, eps,
                                                       s);
    constexpr int64_t kRowsPerLaunchBlock = int64_t(kRowsPerBlock) * (32 / kLanes);
    const unsigned grid = static_cast<unsigned>((rows + kRowsPerLaunchBlock - 1) / kRowsPerLaunchBlock);
    layernorm_subwarp_kernel<T, kVec, kLanes><<<grid, kThreads, 0, s>>>(x, scale, scale_n, bias, bias_n, y, mean, inv,
                                                                       rows, inner, eps);
    return cudaGetLastError();
  }
}

template <typename T>
cudaError_t layernorm_warp(const void* x, const void* scale, int64_t scale_n, const void* bias, int64_t bias_n,
                           void* y, float* mean, float* inv, int64_t rows, int64_t inner, float eps, cudaStream_t s) {
  constexpr int V = 16 / sizeof(T);
  const T* px = static_cast<const T*>(x);
  const T* ps = static_cast<const T*>(scale);
  const T* pb = static_cast<const T*>(bias);
  T* py = static_cast<T*>(y);
  const int in = static_cast<int>(inner);
  const bool vec = inner % V == 0 && aligned16(x) && aligned16(y) && (scale_n == 1 || aligned16(scale)) &&
                   (!bias || bias_n == 1 || aligned16(bias));
  if (vec)
    return in <= 16 * V ? layernorm_short_rows<T, V>(px, ps, scale_n, pb, bias_n, py, mean, inv, rows, in, eps, s)
                        : layernorm_rows<T, V>(px, ps, scale_n, pb, bias_n, py, mean, inv, rows, in, eps, s);
  return in <= 16 ? layernorm_short_rows<T, 1>(px, ps, scale_n, pb, bias_n, py, mean, inv, rows, in, eps, s)
                  : layernorm_rows<T, 1>(px, ps, scale_n, pb, bias_n, py, mean, inv, rows, in, eps, s);
}

}  // namespace

cudaError_t launch_layernorm(KType t, const void* x, const void* scale, int64_t scale_n, const void* bias,
                             int64_t bias_n, void* y, float* mean, float* inv_std, int64_t outer, int64_t inner,
                             float eps, cudaStream_t s) {
  if (outer == 0 || inner == 0) return cudaSuccess;
  if (outer > 0x7fffffffLL) return cudaErrorInvalidValue;
  if (inner <= kWarpRowMax) {  // one warp per row, the row in registers
    switch (t) {
      case KType::kF32: return layernorm_warp<float>(x, scale, scale_n, bias, bias_n, y, mean, inv_std, outer, inner, eps, s);
      case KType::kF16: return layernorm_warp<__half>(x, scale, scale_n, bias, bias_n, y, mean, inv_std, outer, inner, eps, s);
      case KType::kBF16:
        return layernorm_warp<__nv_bfloat16>(x, scale, scale_n, bias, bias_n, y, mean, inv_std, outer, inner, eps, s);
      default: return cudaErrorInvalidValue;
    }
  }
  GRAFT_FLOAT_DISPATCH(t, (layernorm_kernel<T><<<static_cast<unsigned>(outer), kThreads, 0, s>>>(
                              static_cast<const T*>(x), static_cast<const T*>(scale), scale_n,
                              static_cast<const T*>(bias), bias_n, static_cast<T*>(y), mean, inv_std, inner, eps)));
  return cudaGetLastError();
}

}  // namespace k

// ---- CUDA op ---------------------------------------------------------------------------------------

namespace {

using namespace util;

// The keys check X and the Mean/InvStdDev outputs (1 and 2); an output past them (not ONNX's) must
// be float32 as well.
bool layernorm_supports(const Node& n, std::string* why) {
  if (!input0_given(n, why)) return false;
  if (!has_input(n, 1)) return reject(why, "Scale is missing");
  for (size_t i = 1; i < 3; ++i)
    if (has_input(n, i) && in_dtype(n, i) != in_dtype(n, 0)) return reject(why, "Scale/B dtype differs from X");
  for (size_t i = 3; i < n.outputs.size(); ++i)
    if (n.outputs[i] && n.outputs[i]->desc.dtype != DataType::kFloat32)
      return reject(why, "outputs past Y are handled only as float32");
  return true;
}

Status layernorm_run(CudaExec& ex) {
  const auto& in = ex.ctx->inputs;
  const auto& out = ex.ctx->outputs;
  const Tensor& x = *in[0];
  const Tensor& scale = *in[1];
  const Tensor* bias = in.size() > 2 ? in[2] : nullptr;
  GRAFT_ASSIGN_OR_RETURN(int64_t axis_attr, attrs_of(ex).get_int("axis", -1));
  GRAFT_ASSIGN_OR_RETURN(float eps, attrs_of(ex).get_float("epsilon", 1e-5f));
  GRAFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_attr, x.rank()));
  int64_t inner = 1;
  for (int64_t d = axis; d < x.rank(); ++d) inner *= x.dims()[d];
  const int64_t outer = inner ? x.numel() / inner : 0;
  for (const Tensor* p : {&scale, bias})
    if (p && p->numel() != inner && p->numel() != 1)
      return fail(ex, StatusCode::kUnsupported, "Scale/B must have the normalized block's size or one element");
  float* mean = out.size() > 1 && out[1] ? static_cast<float*>(out[1]->data()) : nullptr;
  float* inv = out.size() > 2 && out[2] ? static_cast<float*>(out[2]->data()) : nullptr;
  return launch_status(k::launch_layernorm(ktype(x.dtype()), x.data(), scale.data(), scale.numel(), bias ? bias->data() : nullptr,
                                           bias ? bias->numel() : 0, out[0]->data(), mean, inv, outer, inner, eps,
                                           stream_of(ex)), ex);
}

}  // namespace

void append_cuda_layer_norm_ops(std::vector<CudaOp>& out) {
  // Mean and InvStdDev (outputs 1 and 2, when present) are written as float32 only.
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuFloats), output_dtypes(1, {DataType::kFloat32}),
                               output_dtypes(2, {DataType::kFloat32})},
                              CudaOp{"LayerNormalization", &layernorm_supports, &layernorm_run, {}, nullptr}));
}

}  // namespace graft::cuda
