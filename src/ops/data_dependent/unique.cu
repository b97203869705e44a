// Unique's CUDA kernels and op (definition and CPU reference: unique.cpp). It declares a
// CountedOutput that sizes all four of its outputs from one count (data_dependent_cuda.cuh).
#include "ops/data_dependent/data_dependent.h"

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/cuda_kernel_common.cuh"
#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "ops/attr_util.h"
#include "ops/data_dependent/data_dependent_cuda.cuh"

namespace graft::cuda {

// ---- kernels --------------------------------------------------------------------------------

namespace k {

// Each launcher writes its output into a buffer sized for the most the input shapes allow, laid out as the real (smaller) output would be, and writes the real
// count to a device int64, which is all the engine reads back (cuda_engine.cpp). Plain device
// pointers; each returns the first launch's cudaError_t (cudaErrorInvalidValue for a problem the
// launcher does not handle). Nothing here synchronizes.

// X viewed as [outer, n, inner]: n slices of outer * inner elements each (axis given), or n
// elements (flattened: outer = inner = 1), compared as the CPU reference compares them: numbers by
// value (-0 == 0), every NaN equal to every other and after every number, slices
// lexicographically in row-major order of the other axes; bool by truth.
struct UniqueProblem {
  int64_t outer = 1, n = 0, inner = 1;
  bool sorted = true;  // false: in order of first occurrence
};

// Each slice is compared with every other (no sort), so the work is bounded: at most
// kUniqueMaxWork element comparisons in all (n * n * slice) and kUniqueMaxThreadWork per thread
// (n * slice). Larger problems are the CPU reference's.
constexpr int64_t kUniqueMaxWork = int64_t{1} << 33;
constexpr int64_t kUniqueMaxThreadWork = int64_t{1} << 27;
bool unique_within_bounds(const UniqueProblem& p);

// Bytes of scratch launch_unique needs (three int64 per slice).
size_t unique_workspace_bytes(const UniqueProblem& p);

// x of type t (kF32, kF16, kBF16, kF64, kI8, kU8, kI32, kI64, kBool). Writes *count = u, the
// number of distinct slices, and: y [outer, u, inner] (each distinct slice's first occurrence,
// bit for bit), indices [u] (that first occurrence), counts [u] (how many slices equal it) and
// inverse [n] (each slice's position in y), positions in ascending order (sorted) or in order of
// first occurrence. indices, inverse and counts may each be null (an omitted output).
cudaError_t launch_unique(KType t, const void* x, const UniqueProblem& p, void* workspace, size_t workspace_bytes,
                          void* y, int64_t* indices, int64_t* inverse, int64_t* counts, int64_t* count,
                          cudaStream_t s);

namespace {

// ---- Unique --------------------------------------------------------------------------------------
//
// Without a sort: each slice finds its group's first occurrence and size by comparing itself with
// every slice, each first occurrence its output position by counting the groups before it (smaller
// ones when sorted, earlier ones otherwise), and every slice then knows where its group landed. The
// comparisons are the CPU reference's compare_values, so groups and order are its own.

// bool compares by truth, as the reference loads it.
struct BoolByte {
  uint8_t b;
};

__device__ __forceinline__ float ukey(__half v) { return __half2float(v); }
__device__ __forceinline__ float ukey(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float ukey(float v) { return v; }
__device__ __forceinline__ double ukey(double v) { return v; }
__device__ __forceinline__ int64_t ukey(int8_t v) { return v; }
__device__ __forceinline__ int64_t ukey(uint8_t v) { return v; }
__device__ __forceinline__ int64_t ukey(int32_t v) { return v; }
__device__ __forceinline__ int64_t ukey(int64_t v) { return v; }
__device__ __forceinline__ int64_t ukey(BoolByte v) { return v.b != 0; }

template <typename C>
__device__ __forceinline__ int unique_cmp3(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    const bool na = isnan(a), nb = isnan(b);
    if (na || nb) return na == nb ? 0 : (na ? 1 : -1);
  }
  return a < b ? -1 : (b < a ? 1 : 0);
}

// Slices a and b, lexicographically over [outer, inner] in row-major order.
template <typename T>
__device__ __forceinline__ int unique_slice_cmp(const T* x, const UniqueProblem& p, int64_t a, int64_t b) {
  if (a == b) return 0;
  for (int64_t o = 0; o < p.outer; ++o) {
    const T* ra = x + (o * p.n + a) * p.inner;
    const T* rb = x + (o * p.n + b) * p.inner;
    for (int64_t i = 0; i < p.inner; ++i) {
      const int c = unique_cmp3(ukey(ra[i]), ukey(rb[i]));
      if (c != 0) return c;
    }
  }
  return 0;
}

template <typename T>
__global__ void unique_group_kernel(const T* x, UniqueProblem p, int64_t* first, int64_t* size) {
  GRAFT_GRID_STRIDE(i, p.n) {
    int64_t f = -1, c = 0;
    for (int64_t j = 0; j < p.n; ++j)
      if (unique_slice_cmp(x, p, j, i) == 0) {
        if (f < 0) f = j;
        ++c;
      }
    first[i] = f;
    size[i] = c;
  }
}

template <typename T>
__global__ void unique_position_kernel(const T* x, UniqueProblem p, const int64_t* first, int64_t* pos,
                                       int64_t* count) {
  GRAFT_GRID_STRIDE(i, p.n) {
    if (first[i] != i) continue;
    int64_t r = 0;
    if (p.sorted) {
      for (int64_t j = 0; j < p.n; ++j) r += first[j] == j && unique_slice_cmp(x, p, j, i) < 0;
    } else {
      for (int64_t j = 0; j < i; ++j) r += first[j] == j;
    }
    pos[i] = r;
    atomicAdd(reinterpret_cast<unsigned long long*>(count), 1ull);
  }
}

__global__ void unique_index_kernel(int64_t n, const int64_t* first, const int64_t* size, const int64_t* pos,
                                    int64_t* indices, int64_t* inverse, int64_t* counts) {
  GRAFT_GRID_STRIDE(i, n) {
    const int64_t g = first[i], at = pos[g];
    if (inverse) inverse[i] = at;
    if (g == i) {
      if (indices) indices[at] = i;
      if (counts) counts[at] = size[i];
    }
  }
}

// Element e of X (slice s) goes to y[o, pos[s], :] when s is its group's first occurrence; y is
// [outer, u, inner] with u read on the device (the position kernel counted it).
template <typename E>
__global__ void unique_y_kernel(const E* x, UniqueProblem p, const int64_t* first, const int64_t* pos,
                                const int64_t* count, E* y, int64_t total) {
  const int64_t u = *count;
  GRAFT_GRID_STRIDE(e, total) {
    const int64_t in = e % p.inner, r = e / p.inner;
    const int64_t s = r % p.n, o = r / p.n;
    if (first[s] != s) continue;
    y[(o * u + pos[s]) * p.inner + in] = x[e];
  }
}

template <typename T>
cudaError_t unique_typed(const void* xv, const UniqueProblem& p, int64_t* first, int64_t* size, int64_t* pos,
                         int64_t* count, cudaStream_t s) {
  const T* x = static_cast<const T*>(xv);
  unique_group_kernel<T><<<grid_for(p.n), kThreads, 0, s>>>(x, p, first, size);
  GRAFT_LAUNCH_CHECK();
  unique_position_kernel<T><<<grid_for(p.n), kThreads, 0, s>>>(x, p, first, pos, count);
  return cudaGetLastError();
}

}  // namespace

bool unique_within_bounds(const UniqueProblem& p) {
  if (p.outer < 0 || p.n < 0 || p.inner < 0) return false;
  const int64_t slice = p.outer * p.inner;
  const int64_t per_thread = p.n * (slice > 1 ? slice : 1);  // at most numel(X), or n
  return per_thread <= kUniqueMaxThreadWork && p.n * per_thread <= kUniqueMaxWork;
}

size_t unique_workspace_bytes(const UniqueProblem& p) {
  return p.n > 0 ? 3 * align_up(static_cast<size_t>(p.n) * sizeof(int64_t)) : 0;
}

cudaError_t launch_unique(KType t, const void* x, const UniqueProblem& p, void* workspace, size_t workspace_bytes,
                          void* y, int64_t* indices, int64_t* inverse, int64_t* counts, int64_t* count,
                          cudaStream_t s) {
  if (!count || !unique_within_bounds(p)) return cudaErrorInvalidValue;
  const size_t need = unique_workspace_bytes(p);
  if (workspace_bytes < need || (need && !workspace)) return cudaErrorInvalidValue;
  int elem = 0;
  switch (t) {
    case KType::kI8: case KType::kU8: case KType::kBool: elem = 1; break;
    case KType::kF16: case KType::kBF16: elem = 2; break;
    case KType::kF32: case KType::kI32: elem = 4; break;
    case KType::kF64: case KType::kI64: elem = 8; break;
    default: return cudaErrorInvalidValue;
  }
  cudaError_t e = cudaMemsetAsync(count, 0, sizeof(int64_t), s);
  if (e != cudaSuccess || p.n == 0) return e;
  const size_t stride = align_up(static_cast<size_t>(p.n) * sizeof(int64_t));
  auto* first = static_cast<int64_t*>(workspace);
  auto* size = reinterpret_cast<int64_t*>(static_cast<char*>(workspace) + stride);
  auto* pos = reinterpret_cast<int64_t*>(static_cast<char*>(workspace) + 2 * stride);
  switch (t) {
    case KType::kF32: e = unique_typed<float>(x, p, first, size, pos, count, s); break;
    case KType::kF16: e = unique_typed<__half>(x, p, first, size, pos, count, s); break;
    case KType::kBF16: e = unique_typed<__nv_bfloat16>(x, p, first, size, pos, count, s); break;
    case KType::kF64: e = unique_typed<double>(x, p, first, size, pos, count, s); break;
    case KType::kI8: e = unique_typed<int8_t>(x, p, first, size, pos, count, s); break;
    case KType::kU8: e = unique_typed<uint8_t>(x, p, first, size, pos, count, s); break;
    case KType::kI32: e = unique_typed<int32_t>(x, p, first, size, pos, count, s); break;
    case KType::kI64: e = unique_typed<int64_t>(x, p, first, size, pos, count, s); break;
    case KType::kBool: e = unique_typed<BoolByte>(x, p, first, size, pos, count, s); break;
    default: return cudaErrorInvalidValue;
  }
  if (e != cudaSuccess) return e;
  if (indices || inverse || counts) {
    unique_index_kernel<<<grid_for(p.n), kThreads, 0, s>>>(p.n, first, size, pos, indices, inverse, counts);
    GRAFT_LAUNCH_CHECK();
  }
  const int64_t total = p.outer * p.n * p.inner;
  if (total == 0) return cudaSuccess;
  if (!y) return cudaErrorInvalidValue;
  GRAFT_SIZE_DISPATCH(elem, (unique_y_kernel<E><<<grid_for(total), kThreads, 0, s>>>(
                                static_cast<const E*>(x), p, first, pos, count, static_cast<E*>(y), total)));
  return cudaGetLastError();
}

}  // namespace k

// ---- CUDA op --------------------------------------------------------------------------------

namespace {

using namespace util;

constexpr std::initializer_list<DataType> kUniqueTypes = {
    DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kFloat64, DataType::kInt8,
    DataType::kUInt8,   DataType::kInt32,   DataType::kInt64,    DataType::kBool};

// The CPU reference's reading of `sorted` and `axis` (its words), and the [outer, n, inner] view.
struct UniqueSetup {
  k::UniqueProblem p;
  bool has_axis = false;
  int64_t axis = 0;
};

Result<UniqueSetup> unique_setup(const AttributeMap& attrs, const std::vector<int64_t>& dims) {
  UniqueSetup u;
  GRAFT_ASSIGN_OR_RETURN(int64_t sorted, attrs.get_int("sorted", 1));
  if (sorted != 0 && sorted != 1) return attr_error("sorted", "must be 0 or 1, got ", sorted);
  u.p.sorted = sorted == 1;
  u.has_axis = attrs.has("axis");
  if (u.has_axis) {
    GRAFT_ASSIGN_OR_RETURN(int64_t a, attrs.get_int("axis", 0));
    auto na = normalize_axis(a, static_cast<int64_t>(dims.size()));
    if (!na) return Status(na.status()).with_attribute("axis");
    u.axis = na.value();
    const AxisView v = axis_view(dims, u.axis, false);
    u.p.outer = v.outer;
    u.p.n = v.n;
    u.p.inner = v.inner;
  } else {
    u.p.n = numel_of(dims);
  }
  return u;
}

std::string unique_too_big(const k::UniqueProblem& p) {
  return "Unique on the GPU compares every slice with every other: " + std::to_string(p.n) + " slices of " +
         std::to_string(p.outer * p.inner) + " elements exceed its bound (n * n * slice <= 2^33, n * slice <= 2^27); "
         "the CPU reference runs larger inputs";
}

// The keys: X kUniqueTypes, outputs 1 to 3 (indices, inverse_indices, counts; if given) int64.
bool unique_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0)) return reject(why, "needs an input");
  if (n.outputs.empty() || n.outputs.size() > 4 || !n.output(0))
    return reject(why, "needs output Y and at most 3 more outputs");
  if (out_dtype(n, 0) != in_dtype(n, 0)) return reject(why, "output Y's dtype differs from X's");
  const TensorDesc& x = n.input(0)->desc;
  if (!x.shape) return true;  // the attributes and the bound are checked per run
  std::vector<int64_t> dims;
  bool known = true;
  for (const Dim& d : *x.shape) {
    known = known && d.is_const();
    dims.push_back(d.is_const() ? d.value() : 1);
  }
  auto u = unique_setup(n.attrs, dims);
  if (!u) return reject(why, u.status().message());
  if (known && !k::unique_within_bounds(u->p)) return reject(why, unique_too_big(u->p));
  return true;
}

Result<std::vector<CountedDims>> unique_outputs(const Node& n, const std::vector<const Tensor*>& ins) {
  const Tensor* x = ins.empty() ? nullptr : ins[0];
  if (!x) return error(StatusCode::kInvalidModel, "Unique needs an input");
  GRAFT_ASSIGN_OR_RETURN(UniqueSetup u, unique_setup(n.attrs, x->dims()));
  std::vector<CountedDims> out(n.outputs.size());
  if (out.empty()) return out;
  out[0].dims = u.has_axis ? x->dims() : std::vector<int64_t>{u.p.n};
  out[0].count_axis = static_cast<int>(u.has_axis ? u.axis : 0);
  for (size_t o = 1; o < out.size(); ++o) {
    out[o].dims = {u.p.n};
    out[o].count_axis = o == 2 ? -1 : 0;  // inverse_indices has one entry per slice of X
  }
  return out;
}

size_t unique_workspace(const Node& n, const std::vector<const Tensor*>& ins, const std::vector<Tensor>& /*outputs*/) {
  if (ins.empty() || !ins[0]) return 0;
  auto u = unique_setup(n.attrs, ins[0]->dims());
  return u ? k::unique_workspace_bytes(u->p) : 0;  // run() reports the error
}

Status unique_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  if (!x || ex.ctx->outputs.empty() || !ex.ctx->outputs[0])
    return fail(ex, StatusCode::kInternal, "called without X or its output Y");
  if (!ex.output_count) return fail(ex, StatusCode::kInternal, "called without its device count");
  auto u = unique_setup(attrs_of(ex), x->dims());
  if (!u) return with_node(ex, u.status());
  if (!k::unique_within_bounds(u->p)) return fail(ex, StatusCode::kUnsupported, unique_too_big(u->p));
  auto want = unique_outputs(*ex.ctx->node, ex.ctx->inputs);
  if (!want) return with_node(ex, want.status());
  Tensor* outs[4] = {};
  for (size_t o = 0; o < ex.ctx->outputs.size() && o < 4; ++o) {
    Tensor* t = ex.ctx->outputs[o];
    if (!t || !t->defined()) continue;
    const DataType dt = o == 0 ? x->dtype() : DataType::kInt64;
    if (o >= want->size() || t->dtype() != dt || t->dims() != (*want)[o].dims)
      return fail(ex, StatusCode::kInternal, "output ", static_cast<uint64_t>(o),
                  " was not allocated with the bound the op computes");
    outs[o] = t;
  }
  if (!outs[0]) return fail(ex, StatusCode::kInternal, "called without its output Y");
  auto i64 = [&](int o) { return outs[o] ? outs[o]->data_as<int64_t>() : nullptr; };
  return launch_status(k::launch_unique(ktype(x->dtype()), x->data(), u->p, ex.workspace, ex.workspace_size,
                                        outs[0]->data(), i64(1), i64(2), i64(3), ex.output_count, stream_of(ex)),
                       ex);
}

}  // namespace

void append_cuda_unique_ops(std::vector<CudaOp>& out) {
  out.push_back(kernel_dtypes({input_dtypes(0, kUniqueTypes), output_dtypes(1, {DataType::kInt64}),
                               output_dtypes(2, {DataType::kInt64}), output_dtypes(3, {DataType::kInt64})},
                              CudaOp{"Unique", &unique_supports, &unique_run, {}, &unique_workspace,
                                     CountedOutput{nullptr, 0, nullptr, &unique_outputs}}));
}

}  // namespace graft::cuda
