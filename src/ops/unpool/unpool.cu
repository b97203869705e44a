// MaxUnpool's CUDA kernel and CUDA op (definition and CPU reference: unpool.cpp). Attributes and
// shapes are validated with the CPU reference's own readers (max_unpool_attrs, max_unpool_shape), so
// errors read the same on both backends; output_shape is a host input.
#include "ops/unpool/unpool.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backends/cuda/cuda_kernel_common.cuh"
#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"

namespace graft::cuda {

// ---- kernels --------------------------------------------------------------------------------

namespace k {

// y (y_numel elements of elem_size bytes: 2, 4 or 8) = 0, then for each i < n whose index
// ind[i] lies in [0, unpooled_numel): y[strided_offset(map, ind[i])] = x[i]. `map` takes a flat
// index of the unpooled tensor to its offset in y (dims: the unpooled dims; strides: y's strides).
// An index outside the range is skipped (never written outside y) and reported through `fault`:
// the CPU reference refuses it. Repeated indices with
// different values (which MaxPool never produces) leave one of them, unspecified which.
cudaError_t launch_max_unpool(int elem_size, const void* x, const int64_t* ind, int64_t n, const Strided& map,
                              int64_t unpooled_numel, void* y, int64_t y_numel, cudaStream_t s,
                              const DataFault& fault);

namespace {

// E: an unsigned integer of the element's size; the scatter moves bits, whatever the float type.
template <typename E>
__global__ void max_unpool_kernel(const E* x, const int64_t* ind, int64_t n, Strided map,
                                  int64_t unpooled_numel, E* y, DataFault fault) {
  GRAFT_GRID_STRIDE(i, n) {
    const int64_t q = ind[i];
    if (q < 0 || q >= unpooled_numel) {
      report_invalid_data(fault);
      continue;
    }
    y[strided_offset(map, q)] = x[i];
  }
}

}  // namespace

cudaError_t launch_max_unpool(int elem_size, const void* x, const int64_t* ind, int64_t n, const Strided& map,
                              int64_t unpooled_numel, void* y, int64_t y_numel, cudaStream_t s,
                              const DataFault& fault) {
  if (map.rank < 1 || map.rank > kMaxRank) return cudaErrorInvalidValue;
  if (elem_size != 2 && elem_size != 4 && elem_size != 8) return cudaErrorInvalidValue;
  if (y_numel == 0) return cudaSuccess;
  // All-zero bits are +0 in every float type.
  cudaError_t e = cudaMemsetAsync(y, 0, static_cast<size_t>(y_numel) * static_cast<size_t>(elem_size), s);
  if (e != cudaSuccess || n == 0) return e;
  switch (elem_size) {
    case 2:
      max_unpool_kernel<uint16_t><<<grid_for(n), kThreads, 0, s>>>(
          static_cast<const uint16_t*>(x), ind, n, map, unpooled_numel, static_cast<uint16_t*>(y), fault);
      break;
    case 4:
      max_unpool_kernel<uint32_t><<<grid_for(n), kThreads, 0, s>>>(
          static_cast<const uint32_t*>(x), ind, n, map, unpooled_numel, static_cast<uint32_t*>(y), fault);
      break;
    default:
      max_unpool_kernel<uint64_t><<<grid_for(n), kThreads, 0, s>>>(
          static_cast<const uint64_t*>(x), ind, n, map, unpooled_numel, static_cast<uint64_t*>(y), fault);
      break;
  }
  return cudaGetLastError();
}

}  // namespace k

// ---- CUDA ops -------------------------------------------------------------------------------

namespace {

using namespace util;

bool max_unpool_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0) || !has_input(n, 1)) return reject(why, "needs X and I");
  const TensorDesc& x = n.input(0)->desc;
  if (x.shape && x.rank() > k::kMaxRank)
    return reject(
        why, "rank " + std::to_string(x.rank()) + " exceeds the kernel's " + std::to_string(k::kMaxRank));
  return true;
}

Status max_unpool_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  const Tensor* ind = input_or_null(ex, 1);
  const Tensor* shape = input_or_null(ex, 2);  // on the host (host_inputs)
  if (!x || !ind) return fail(ex, StatusCode::kInvalidModel, "needs X and I");
  Tensor& y = *ex.ctx->outputs[0];
  if (ind->dtype() != DataType::kInt64 || ind->dims() != x->dims())
    return fail(ex, StatusCode::kInvalidModel, "input 1 (I) must be int64 with X's dims");
  if (x->rank() < 3 || x->rank() > k::kMaxRank)
    return fail(ex, StatusCode::kInvalidModel, "X must be (N, C, spatial...) of rank 3 to ",
                static_cast<int64_t>(k::kMaxRank), ", got rank ", x->rank());
  auto a = graft::max_unpool_attrs(attrs_of(ex), x->rank() - 2);
  if (!a) return with_node(ex, a.status());
  std::optional<std::vector<int64_t>> os;
  if (shape) {
    if (shape->dtype() != DataType::kInt64 || shape->rank() != 1 || shape->device() != DeviceType::kCPU)
      return fail(ex, StatusCode::kInvalidModel, "input 2 (output_shape) must be a 1-D int64 host tensor");
    os = shape->to_int64_vector();
  }
  auto sh = graft::max_unpool_shape(a.value(), x->dims(), os);
  if (!sh) return with_node(ex, sh.status());
  const std::vector<int64_t>& up = sh.value().unpooled;
  const std::vector<int64_t>& out = sh.value().out;
  if (y.dims() != out || y.dtype() != x->dtype())
    return fail(ex, StatusCode::kInternal,
                "output was allocated with other dims or dtype than the op computes");
  // The map from a flat unpooled index to y: the identity when the shapes agree, else the
  // unpooled dims walked with y's strides (the unpooled tensor sits at y's origin).
  k::Strided map;
  if (up == out) {
    map.rank = 1;
    map.dims[0] = numel_of(up);
    map.strides[0] = 1;
  } else {
    map.rank = static_cast<int>(up.size());
    int64_t stride = 1;
    for (int d = map.rank - 1; d >= 0; --d) {
      map.dims[d] = up[static_cast<size_t>(d)];
      map.strides[d] = stride;
      stride *= out[static_cast<size_t>(d)];  // y's element count was checked by max_unpool_shape
    }
  }
  return launch_status(k::launch_max_unpool(static_cast<int>(dtype_size(x->dtype())), x->data(),
                                            static_cast<const int64_t*>(ind->data()), x->numel(), map,
                                            numel_of(up), y.data(), y.numel(), stream_of(ex), ex.fault),
                       ex);
}

}  // namespace

void append_cuda_unpool_ops(std::vector<CudaOp>& out) {
  // X float32/float16/bfloat16/float64; I and output_shape (if given) int64.
  out.push_back(reports_invalid_data(
      "an index is outside the unpooled tensor",
      kernel_dtypes({input_dtypes(0, kGpuFloats64), input_dtypes(1, {DataType::kInt64}), input_dtypes(2, {DataType::kInt64})},
                    CudaOp{"MaxUnpool", &max_unpool_supports, &max_unpool_run, {2}, nullptr})));
}

}  // namespace graft::cuda
