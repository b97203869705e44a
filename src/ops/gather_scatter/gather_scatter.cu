// The gather-scatter family's CUDA kernels and ops. One thread per index element (GatherElements,
// ScatterElements) or per element of the addressed slices (GatherND, ScatterND). A kernel cannot
// fail on an index outside the data, so it skips it (a gather writes zeros there, a scatter leaves
// the output as it is) and reports it (DataFault), which fails the run as the CPU reference does. Reductions combine atomically by
// compare-and-swap on the element's own bytes; "none" with duplicate positions keeps one of the
// updates, unspecified which, where the CPU reference keeps the last.
#include "ops/gather_scatter/gather_scatter.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/cuda_kernel_common.cuh"
#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"

namespace graft::cuda {

// ---- kernels --------------------------------------------------------------------------------------

namespace k {

// Index tensor dims, data dims and data strides (rank <= kMaxRank) and the indexed axis.
struct ElemIndexing {
  int rank = 0;
  int axis = 0;
  int64_t idx_dims[kMaxRank] = {};
  int64_t data_dims[kMaxRank] = {};
  int64_t data_strides[kMaxRank] = {};
  DataFault fault{};  // where an index out of range is reported
};
// out[i] = data[position i of indices with the axis coordinate replaced by indices[i]]; indices
// i32/i64; element size 1/2/4/8; n = indices' element count.
cudaError_t launch_gather_elements(int elem_size, KType idx_t, const void* data, const void* idx, void* out,
                                   const ElemIndexing& p, int64_t n, cudaStream_t s);

enum class ScatterRed : int { kNone, kAdd, kMul, kMax, kMin };
// out (already holding data) at the position of update i combined with upd[i]. kNone with
// duplicate positions leaves one of the updates (unspecified which; the CPU keeps the last).
// Reductions are atomic (f32/f16/bf16/i32/i64); kNone takes any element size via `t`.
cudaError_t launch_scatter_elements(KType t, ScatterRed red, KType idx_t, const void* idx, const void* upd,
                                    void* out, const ElemIndexing& p, int64_t n, cudaStream_t s);

// Each index tuple has m entries addressing data dims dims[0..m) (strides in elements) after the
// batch offset; it selects a contiguous slice of `slice` elements.
struct NDIndexing {
  int m = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[kMaxRank] = {};
  int64_t slice = 1;
  int64_t tuples_per_batch = 1;  // GatherND batch_dims: tuple t belongs to batch t / tuples_per_batch
  int64_t batch_stride = 0;      // elements of data per batch (0: no batch dims)
  DataFault fault{};             // where an index out of range is reported
};
// out[t * slice + e] = data[batch(t) * batch_stride + offset(tuple t) + e].
cudaError_t launch_gather_nd(int elem_size, KType idx_t, const void* data, const void* idx, void* out,
                             const NDIndexing& p, int64_t tuples, cudaStream_t s);
// out (already holding data) at offset(tuple t) + e combined with upd[t * slice + e].
cudaError_t launch_scatter_nd(KType t, ScatterRed red, KType idx_t, const void* idx, const void* upd, void* out,
                              const NDIndexing& p, int64_t tuples, cudaStream_t s);

namespace {

int elem_bytes(KType t) {
  switch (t) {
    case KType::kF32: case KType::kI32: return 4;
    case KType::kF16: case KType::kBF16: return 2;
    case KType::kI64: case KType::kF64: return 8;
    case KType::kI8: case KType::kU8: case KType::kBool: return 1;
    case KType::kI16: case KType::kU16: return 2;
    case KType::kU32: return 4;
    case KType::kU64: return 8;
  }
  return 0;
}

// Offset into data of index element i, or -1 (reported) when its index is out of range.
template <typename I>
__device__ __forceinline__ int64_t elem_target(const ElemIndexing& p, const I* idx, int64_t i) {
  int64_t k = static_cast<int64_t>(idx[i]);
  const int64_t extent = p.data_dims[p.axis];
  if (k < 0) k += extent;
  if (k < 0 || k >= extent) {
    report_invalid_data(p.fault);
    return -1;
  }
  int64_t off = 0, r = i;
  for (int d = p.rank - 1; d >= 0; --d) {
    const int64_t q = r % p.idx_dims[d];
    r /= p.idx_dims[d];
    const int64_t c = d == p.axis ? k : q;
    if (c >= p.data_dims[d]) {
      report_invalid_data(p.fault);
      return -1;
    }
    off += c * p.data_strides[d];
  }
  return off;
}

template <typename E, typename I>
__global__ void gather_elements_kernel(const E* __restrict__ data, const I* __restrict__ idx, E* __restrict__ out,
                                       ElemIndexing p, int64_t n) {
  GRAFT_GRID_STRIDE(i, n) {
    const int64_t off = elem_target(p, idx, i);
    out[i] = off < 0 ? E(0) : data[off];
  }
}

// Reductions combine in the compute type (float for the half types); integers wrap.
template <typename T>
__device__ __forceinline__ T combine(ScatterRed red, T cur, T u) {
  using C = typename Elem<T>::C;
  const C a = Elem<T>::ld(cur), b = Elem<T>::ld(u);
  C r;
  if constexpr (std::is_integral_v<C>) {
    using U = std::make_unsigned_t<C>;
    switch (red) {
      case ScatterRed::kAdd: r = static_cast<C>(static_cast<U>(a) + static_cast<U>(b)); break;
      case ScatterRed::kMul: r = static_cast<C>(static_cast<U>(a) * static_cast<U>(b)); break;
      case ScatterRed::kMax: r = a < b ? b : a; break;
      case ScatterRed::kMin: r = b < a ? b : a; break;
      default: r = b; break;
    }
  } else {
    switch (red) {
      case ScatterRed::kAdd: r = a + b; break;
      case ScatterRed::kMul: r = a * b; break;
      case ScatterRed::kMax: r = a < b ? b : a; break;  // std::max(cur, u)
      case ScatterRed::kMin: r = b < a ? b : a; break;  // std::min(cur, u)
      default: r = b; break;
    }
  }
  return Elem<T>::st(r);
}

// *addr = combine(*addr, u) atomically, by compare-and-swap on the element's own bytes. 2-byte
// elements use the 16-bit atomicCAS (sm_70 and later): a CAS on the enclosing 4-byte word would
// read past the end of a buffer whose last element starts a word (compute-sanitizer memcheck
// caught it on a 105-element float16 output).
template <typename T>
__device__ void atomic_combine(T* addr, T u, ScatterRed red) {
  static_assert(sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8, "2-, 4- or 8-byte elements");
  using W = std::conditional_t<sizeof(T) == 2, unsigned short int,
                               std::conditional_t<sizeof(T) == 4, unsigned int, unsigned long long>>;
  W* a = reinterpret_cast<W*>(addr);
  W old = *a, assumed;
  do {
    assumed = old;
    T cur;
    memcpy(&cur, &assumed, sizeof(T));
    const T nv = combine(red, cur, u);
    W bits;
    memcpy(&bits, &nv, sizeof(T));
    old = atomicCAS(a, assumed, bits);
  } while (assumed != old);
}

template <typename E, typename I>
__global__ void scatter_elements_store_kernel(const I* __restrict__ idx, const E* __restrict__ upd, E* out,
                                              ElemIndexing p, int64_t n) {
  GRAFT_GRID_STRIDE(i, n) {
    const int64_t off = elem_target(p, idx, i);
    if (off >= 0) out[off] = upd[i];
  }
}

template <typename T, typename I>
__global__ void scatter_elements_reduce_kernel(ScatterRed red, const I* __restrict__ idx, const T* __restrict__ upd,
                                               T* out, ElemIndexing p, int64_t n) {
  GRAFT_GRID_STRIDE(i, n) {
    const int64_t off = elem_target(p, idx, i);
    if (off >= 0) atomic_combine(out + off, upd[i], red);
  }
}

// Offset into data of tuple t (batch offset included), or -1 (reported) when an index is out of
// range.
template <typename I>
__device__ __forceinline__ int64_t nd_target(const NDIndexing& p, const I* idx, int64_t t) {
  int64_t off = p.batch_stride ? (t / p.tuples_per_batch) * p.batch_stride : 0;
  for (int j = 0; j < p.m; ++j) {
    int64_t k = static_cast<int64_t>(idx[t * p.m + j]);
    if (k < 0) k += p.dims[j];
    if (k < 0 || k >= p.dims[j]) {
      report_invalid_data(p.fault);
      return -1;
    }
    off += k * p.strides[j];
  }
  return off;
}

template <typename E, typename I>
__global__ void gather_nd_kernel(const E* __restrict__ data, const I* __restrict__ idx, E* __restrict__ out,
                                 NDIndexing p, int64_t total) {
  GRAFT_GRID_STRIDE(i, total) {
    const int64_t t = i / p.slice, e = i % p.slice;
    const int64_t off = nd_target(p, idx, t);
    out[i] = off < 0 ? E(0) : data[off + e];
  }
}

template <typename E, typename I>
__global__ void scatter_nd_store_kernel(const I* __restrict__ idx, const E* __restrict__ upd, E* out, NDIndexing p,
                                        int64_t total) {
  GRAFT_GRID_STRIDE(i, total) {
    const int64_t t = i / p.slice, e = i % p.slice;
    const int64_t off = nd_target(p, idx, t);
    if (off >= 0) out[off + e] = upd[i];
  }
}

template <typename T, typename I>
__global__ void scatter_nd_reduce_kernel(ScatterRed red, const I* __restrict__ idx, const T* __restrict__ upd, T* out,
                                         NDIndexing p, int64_t total) {
  GRAFT_GRID_STRIDE(i, total) {
    const int64_t t = i / p.slice, e = i % p.slice;
    const int64_t off = nd_target(p, idx, t);
    if (off >= 0) atomic_combine(out + off + e, upd[i], red);
  }
}

}  // namespace

cudaError_t launch_gather_elements(int elem_size, KType idx_t, const void* data, const void* idx, void* out,
                                   const ElemIndexing& p, int64_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  GRAFT_INDEX_DISPATCH(idx_t, GRAFT_SIZE_DISPATCH(elem_size, (gather_elements_kernel<E, I><<<grid_for(n), kThreads, 0, s>>>(
                                                                 static_cast<const E*>(data), static_cast<const I*>(idx),
                                                                 static_cast<E*>(out), p, n))));
  return cudaGetLastError();
}

cudaError_t launch_scatter_elements(KType t, ScatterRed red, KType idx_t, const void* idx, const void* upd,
                                    void* out, const ElemIndexing& p, int64_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  if (red == ScatterRed::kNone) {
    GRAFT_INDEX_DISPATCH(idx_t, GRAFT_SIZE_DISPATCH(elem_bytes(t), (scatter_elements_store_kernel<E, I><<<grid_for(n), kThreads, 0, s>>>(
                                                                     static_cast<const I*>(idx), static_cast<const E*>(upd),
                                                                     static_cast<E*>(out), p, n))));
  } else {
    GRAFT_INDEX_DISPATCH(idx_t, GRAFT_NUMERIC_DISPATCH(t, (scatter_elements_reduce_kernel<T, I><<<grid_for(n), kThreads, 0, s>>>(
                                                              red, static_cast<const I*>(idx), static_cast<const T*>(upd),
                                                              static_cast<T*>(out), p, n))));
  }
  return cudaGetLastError();
}

cudaError_t launch_gather_nd(int elem_size, KType idx_t, const void* data, const void* idx, void* out,
                             const NDIndexing& p, int64_t tuples, cudaStream_t s) {
  const int64_t total = tuples * p.slice;
  if (total == 0) return cudaSuccess;
  if (p.m < 1 || p.m > kMaxRank || p.tuples_per_batch < 1) return cudaErrorInvalidValue;
  GRAFT_INDEX_DISPATCH(idx_t, GRAFT_SIZE_DISPATCH(elem_size, (gather_nd_kernel<E, I><<<grid_for(total), kThreads, 0, s>>>(
                                                                 static_cast<const E*>(data), static_cast<const I*>(idx),
                                                                 static_cast<E*>(out), p, total))));
  return cudaGetLastError();
}

cudaError_t launch_scatter_nd(KType t, ScatterRed red, KType idx_t, const void* idx, const void* upd, void* out,
                              const NDIndexing& p, int64_t tuples, cudaStream_t s) {
  const int64_t total = tuples * p.slice;
  if (total == 0) return cudaSuccess;
  if (p.m < 0 || p.m > kMaxRank || p.tuples_per_batch < 1) return cudaErrorInvalidValue;
  if (red == ScatterRed::kNone) {
    GRAFT_INDEX_DISPATCH(idx_t, GRAFT_SIZE_DISPATCH(elem_bytes(t), (scatter_nd_store_kernel<E, I><<<grid_for(total), kThreads, 0, s>>>(
                                                                     static_cast<const I*>(idx), static_cast<const E*>(upd),
                                                                     static_cast<E*>(out), p, total))));
  } else {
    GRAFT_INDEX_DISPATCH(idx_t, GRAFT_NUMERIC_DISPATCH(t, (scatter_nd_reduce_kernel<T, I><<<grid_for(total), kThreads, 0, s>>>(
                                                              red, static_cast<const I*>(idx), static_cast<const T*>(upd),
                                                              static_cast<T*>(out), p, total))));
  }
  return cudaGetLastError();
}

}  // namespace k

// ---- CUDA ops -------------------------------------------------------------------------------------

namespace {

using namespace util;

Result<k::ElemIndexing> elem_indexing(const CudaExec& ex, const Tensor& data, const Tensor& ind) {
  GRAFT_ASSIGN_OR_RETURN(int64_t axis_attr, attrs_of(ex).get_int("axis", 0));
  if (data.rank() != ind.rank())
    return fail(ex, StatusCode::kInvalidModel, "data rank ", data.rank(), " differs from indices rank ", ind.rank());
  if (data.rank() > k::kMaxRank) return fail(ex, StatusCode::kUnsupported, "rank above ", k::kMaxRank);
  GRAFT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_attr, data.rank()));
  for (int64_t d = 0; d < data.rank(); ++d)
    if (d != axis && ind.dims()[d] > data.dims()[d])
      return fail(ex, StatusCode::kRuntimeError, "indices shape ", dims_str(ind.dims()), " exceeds data shape ",
                  dims_str(data.dims()), " on axis ", d);
  k::ElemIndexing p;
  p.fault = ex.fault;
  p.rank = static_cast<int>(data.rank());
  p.axis = static_cast<int>(axis);
  const auto st = contiguous_strides(data.dims());
  for (int d = 0; d < p.rank; ++d) {
    p.idx_dims[d] = ind.dims()[d];
    p.data_dims[d] = data.dims()[d];
    p.data_strides[d] = st[static_cast<size_t>(d)];
  }
  return p;
}

bool gather_elements_supports(const Node& n, std::string* why) {
  if (!input0_given(n, why)) return false;
  if (!has_input(n, 1)) return reject(why, "indices are missing");
  return true;
}

Status gather_elements_run(CudaExec& ex) {
  const Tensor& data = *ex.ctx->inputs[0];
  const Tensor& ind = *ex.ctx->inputs[1];
  Tensor& y = *ex.ctx->outputs[0];
  GRAFT_ASSIGN_OR_RETURN(k::ElemIndexing p, elem_indexing(ex, data, ind));
  if (y.numel() != ind.numel() || y.dtype() != data.dtype())
    return fail(ex, StatusCode::kInternal, "output must have the indices' shape and the data's dtype");
  return launch_status(k::launch_gather_elements(static_cast<int>(dtype_size(data.dtype())), ktype(ind.dtype()), data.data(),
                                                 ind.data(), y.data(), p, ind.numel(), stream_of(ex)), ex);
}

Result<k::ScatterRed> scatter_reduction(const CudaExec& ex) {
  GRAFT_ASSIGN_OR_RETURN(std::string red, attrs_of(ex).get_string("reduction", "none"));
  if (red == "none") return k::ScatterRed::kNone;
  if (red == "add") return k::ScatterRed::kAdd;
  if (red == "mul") return k::ScatterRed::kMul;
  if (red == "max") return k::ScatterRed::kMax;
  if (red == "min") return k::ScatterRed::kMin;
  return fail(ex, StatusCode::kInvalidModel, "attribute 'reduction' must be none, add, mul, max or min, got '", red, "'");
}

// The scatters' data key is kGpuKTypes (reduction "none" moves its bytes); add, mul, max and min
// take the float types and int32/int64 only (checked below).

bool scatter_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0) || !has_input(n, 1) || !has_input(n, 2)) return reject(why, "needs data, indices and updates");
  if (in_dtype(n, 2) != in_dtype(n, 0)) return reject(why, "updates dtype differs from data");
  auto red = n.attrs.get_string("reduction", "none");
  if (!red) return reject(why, "attribute 'reduction' is not a string");
  if (red.value() == "none") return true;
  if (red.value() != "add" && red.value() != "mul" && red.value() != "max" && red.value() != "min")
    return reject(why, "attribute 'reduction' must be none, add, mul, max or min");
  return require_dtype(n, 0, kGpuFloatsInts, why);
}

Status copy_data(CudaExec& ex, const Tensor& data, Tensor& y) {
  if (y.nbytes() != data.nbytes() || y.dtype() != data.dtype()) return fail(ex, StatusCode::kInternal, "output differs from data");
  if (!data.nbytes() || data.data() == y.data()) return Status::ok();
  return launch_status(cudaMemcpyAsync(y.data(), data.data(), data.nbytes(), cudaMemcpyDeviceToDevice, stream_of(ex)), ex,
                       "cudaMemcpyAsync");
}

Status scatter_elements_run(CudaExec& ex) {
  const Tensor& data = *ex.ctx->inputs[0];
  const Tensor& ind = *ex.ctx->inputs[1];
  const Tensor& upd = *ex.ctx->inputs[2];
  Tensor& y = *ex.ctx->outputs[0];
  if (ind.dims() != upd.dims()) return fail(ex, StatusCode::kInvalidModel, "indices and updates differ in shape");
  GRAFT_ASSIGN_OR_RETURN(k::ScatterRed red, scatter_reduction(ex));
  GRAFT_ASSIGN_OR_RETURN(k::ElemIndexing p, elem_indexing(ex, data, ind));
  GRAFT_RETURN_IF_ERROR(copy_data(ex, data, y));
  return launch_status(k::launch_scatter_elements(ktype(data.dtype()), red, ktype(ind.dtype()), ind.data(), upd.data(),
                                                  y.data(), p, ind.numel(), stream_of(ex)), ex);
}

bool gather_nd_supports(const Node& n, std::string* why) {
  if (!input0_given(n, why)) return false;
  if (!has_input(n, 1)) return reject(why, "indices are missing");
  return true;
}

Status gather_nd_run(CudaExec& ex) {
  const Tensor& data = *ex.ctx->inputs[0];
  const Tensor& ind = *ex.ctx->inputs[1];
  Tensor& y = *ex.ctx->outputs[0];
  GRAFT_ASSIGN_OR_RETURN(int64_t b, attrs_of(ex).get_int("batch_dims", 0));
  const int64_t r = data.rank(), q = ind.rank();
  if (q < 1 || b < 0 || b >= std::min(r, q))
    return fail(ex, StatusCode::kInvalidModel, "batch_dims ", b, " does not fit data rank ", r, " and indices rank ", q);
  const int64_t m = ind.dims().back();
  if (m < 1 || m > r - b) return fail(ex, StatusCode::kInvalidModel, "indices address ", m, " dims of data ", dims_str(data.dims()));
  if (m > k::kMaxRank) return fail(ex, StatusCode::kUnsupported, "index tuples longer than ", k::kMaxRank);
  for (int64_t d = 0; d < b; ++d)
    if (data.dims()[d] != ind.dims()[d]) return fail(ex, StatusCode::kInvalidModel, "batch dim ", d, " differs");
  int64_t batches = 1;
  k::NDIndexing p;
  p.fault = ex.fault;
  for (int64_t d = 0; d < b; ++d) batches *= data.dims()[d];
  for (int64_t d = b + m; d < r; ++d) p.slice *= data.dims()[d];
  const auto st = contiguous_strides(data.dims());
  p.m = static_cast<int>(m);
  for (int64_t j = 0; j < m; ++j) {
    p.dims[j] = data.dims()[b + j];
    p.strides[j] = st[static_cast<size_t>(b + j)];
  }
  const int64_t tuples = ind.numel() / m;
  p.tuples_per_batch = batches ? std::max<int64_t>(tuples / batches, 1) : 1;
  p.batch_stride = b > 0 && batches ? data.numel() / batches : 0;
  if (y.numel() != tuples * p.slice || y.dtype() != data.dtype())
    return fail(ex, StatusCode::kInternal, "output has ", y.numel(), " elements, expected ", tuples * p.slice);
  return launch_status(k::launch_gather_nd(static_cast<int>(dtype_size(data.dtype())), ktype(ind.dtype()), data.data(),
                                           ind.data(), y.data(), p, tuples, stream_of(ex)), ex);
}

Status scatter_nd_run(CudaExec& ex) {
  const Tensor& data = *ex.ctx->inputs[0];
  const Tensor& ind = *ex.ctx->inputs[1];
  const Tensor& upd = *ex.ctx->inputs[2];
  Tensor& y = *ex.ctx->outputs[0];
  GRAFT_ASSIGN_OR_RETURN(k::ScatterRed red, scatter_reduction(ex));
  const int64_t m = ind.rank() ? ind.dims().back() : 0;
  if (ind.rank() < 1 || m > data.rank())
    return fail(ex, StatusCode::kInvalidModel, "indices ", dims_str(ind.dims()), " do not fit data ", dims_str(data.dims()));
  if (m > k::kMaxRank) return fail(ex, StatusCode::kUnsupported, "index tuples longer than ", k::kMaxRank);
  std::vector<int64_t> want(ind.dims().begin(), ind.dims().end() - 1);
  want.insert(want.end(), data.dims().begin() + m, data.dims().end());
  if (upd.dims() != want)
    return fail(ex, StatusCode::kInvalidModel, "updates have shape ", dims_str(upd.dims()), ", expected ", dims_str(want));
  k::NDIndexing p;
  p.fault = ex.fault;
  const auto st = contiguous_strides(data.dims());
  p.m = static_cast<int>(m);
  for (int64_t j = 0; j < m; ++j) {
    p.dims[j] = data.dims()[j];
    p.strides[j] = st[static_cast<size_t>(j)];
  }
  for (int64_t d = m; d < data.rank(); ++d) p.slice *= data.dims()[d];
  const int64_t tuples = m ? ind.numel() / m : 0;  // m = 0: no tuples, as the CPU reference
  GRAFT_RETURN_IF_ERROR(copy_data(ex, data, y));
  if (tuples == 0) return Status::ok();
  return launch_status(k::launch_scatter_nd(ktype(data.dtype()), red, ktype(ind.dtype()), ind.data(), upd.data(), y.data(),
                                            p, tuples, stream_of(ex)), ex);
}

}  // namespace

void append_cuda_gather_scatter_ops(std::vector<CudaOp>& out) {
  // The indices (input 1) are read on the device as int32 or int64; the gathers move any dtype's bytes.
  // Each reports an index out of range.
  const KernelDtypes indices = input_dtypes(1, kGpuInts);
  const auto row = [&out](CudaOp op) { out.push_back(reports_invalid_data("an index is out of range", op)); };
  row(kernel_dtypes({input_dtypes(0, kGpuEveryDtype), indices},
                    CudaOp{"GatherElements", &gather_elements_supports, &gather_elements_run, {}, nullptr}));
  row(kernel_dtypes({input_dtypes(0, kGpuKTypes), indices},
                    CudaOp{"ScatterElements", &scatter_supports, &scatter_elements_run, {}, nullptr}));
  row(kernel_dtypes({input_dtypes(0, kGpuEveryDtype), indices}, CudaOp{"GatherND", &gather_nd_supports, &gather_nd_run, {}, nullptr}));
  row(kernel_dtypes({input_dtypes(0, kGpuKTypes), indices}, CudaOp{"ScatterND", &scatter_supports, &scatter_nd_run, {}, nullptr}));
}

}  // namespace graft::cuda
