// Pad's CUDA kernels and op: one thread per output element maps it to its source along every axis
// (constant fill, or graft::pad_source's reflect/edge/wrap mapping, the CPU reference's own function).
#include "ops/resize_pad/resize_pad.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/cuda_kernel_common.cuh"
#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "ops/resize_pad/pad_cuda.cuh"

namespace graft::cuda {

// ---- kernels --------------------------------------------------------------------------------------

namespace k {

namespace {

template <typename E>
__global__ void pad_constant_kernel(const E* __restrict__ in, E* __restrict__ out, AxisMap p,
                                    const E* __restrict__ fill_ptr, int64_t n) {
  const E fill = fill_ptr ? *fill_ptr : E(0);
  GRAFT_GRID_STRIDE(i, n) {
    int64_t rem = i, off = 0;
    bool inside = true;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t q = rem % p.out_dims[d] - p.begin[d];
      rem /= p.out_dims[d];
      if (q < 0 || q >= p.in_dims[d]) inside = false;
      else off += q * p.in_strides[d];
    }
    out[i] = inside ? in[off] : fill;
  }
}

template <typename E>
__global__ void pad_mode_kernel(const E* __restrict__ in, E* __restrict__ out, AxisMap p, PadMode mode, int64_t n) {
  GRAFT_GRID_STRIDE(i, n) {
    int64_t rem = i, off = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t q = rem % p.out_dims[d] - p.begin[d];
      rem /= p.out_dims[d];
      off += pad_source(mode, q, p.in_dims[d]) * p.in_strides[d];
    }
    out[i] = in[off];
  }
}

}  // namespace

cudaError_t launch_pad_constant(const void* in, void* out, int elem_size, const AxisMap& p, const void* fill,
                                int64_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  const unsigned g = grid_for(n);
#define L(E)                                                                                               \
  pad_constant_kernel<E><<<g, kThreads, 0, s>>>(static_cast<const E*>(in), static_cast<E*>(out), p, \
                                                static_cast<const E*>(fill), n)
  GRAFT_SIZE_DISPATCH(elem_size, L(E))
#undef L
  return cudaGetLastError();
}

cudaError_t launch_pad_mode(int mode, const void* in, void* out, int elem_size, const AxisMap& p, int64_t n,
                            cudaStream_t s) {
  const PadMode m = static_cast<PadMode>(mode);
  if (m != PadMode::kReflect && m != PadMode::kEdge && m != PadMode::kWrap) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  for (int d = 0; d < p.rank; ++d)
    if (p.in_dims[d] <= 0) return cudaErrorInvalidValue;
  const unsigned g = grid_for(n);
#define L(E) pad_mode_kernel<E><<<g, kThreads, 0, s>>>(static_cast<const E*>(in), static_cast<E*>(out), p, m, n)
  GRAFT_SIZE_DISPATCH(elem_size, L(E))
#undef L
  return cudaGetLastError();
}

}  // namespace k

// ---- CUDA op ---------------------------------------------------------------------------------------

namespace {

using namespace util;

bool pad_supports(const Node& n, std::string* why) {
  if (n.opset != 0 && n.opset < 11) return reject(why, "Pad before opset 11 (attribute form) is not handled");
  if (!same_bytes_ok(n, why) || !rank_fits(n, 0, why)) return false;
  auto mode = graft::parse_pad_mode(n.attrs);
  if (!mode.is_ok()) return reject(why, mode.status().to_string());
  if (!has_input(n, 1)) return reject(why, "input 1 (pads) is missing");
  if (has_input(n, 2) && in_dtype(n, 2) != in_dtype(n, 0))
    return reject(why, "constant_value dtype differs from the data dtype");
  return true;
}

Status pad_run(CudaExec& ex) {
  const ExecContext& ctx = *ex.ctx;
  const Tensor* X = ctx.inputs.empty() ? nullptr : ctx.inputs[0];
  const Tensor* P = ctx.inputs.size() > 1 ? ctx.inputs[1] : nullptr;
  if (!X || !P) return fail(ex, StatusCode::kInvalidModel, "inputs 'data' and 'pads' are required");
  if (!dtype_is_integer(P->dtype()))
    return fail(ex, StatusCode::kInvalidModel, "input 'pads' must be int64, got ", dtype_name(P->dtype()));
  auto mode = graft::parse_pad_mode(*ctx.attrs);
  if (!mode.is_ok()) return with_node(ex, mode.status());
  const bool constant = mode.value() == graft::PadMode::kConstant;
  const Tensor* V = ctx.inputs.size() > 2 ? ctx.inputs[2] : nullptr;
  const Tensor* A = ctx.inputs.size() > 3 ? ctx.inputs[3] : nullptr;
  std::vector<int64_t> axes_v;
  if (A) axes_v = A->to_int64_vector();
  std::vector<int64_t> pb, pe;
  GRAFT_RETURN_IF_ERROR(with_node(ex, graft::pad_amounts(P->to_int64_vector(), A ? &axes_v : nullptr, X->rank(), &pb, &pe)));
  const int64_t r = X->rank();
  if (r > k::kMaxRank) return fail(ex, StatusCode::kUnsupported, "rank ", r, " exceeds ", k::kMaxRank);
  Tensor& Y = *ctx.outputs[0];
  GRAFT_RETURN_IF_ERROR(check_same_dtype(ex, *X, Y));
  const auto is = contiguous_strides(X->dims());
  k::AxisMap p;
  p.rank = static_cast<int>(r);
  for (int64_t a = 0; a < r; ++a) {
    const int64_t od = X->dims()[a] + pb[a] + pe[a];
    if (od < 0)
      return fail(ex, StatusCode::kInvalidModel, "negative pads crop axis ", a, " below zero (extent ", X->dims()[a], ")");
    // The CPU reference's words: reflect, edge and wrap have nothing to repeat on an empty axis.
    if (!constant && X->dims()[a] == 0 && od > 0)
      return fail(ex, StatusCode::kInvalidModel, "cannot pad empty axis ", a, " in this mode");
    if (Y.dims().size() != static_cast<size_t>(r) || Y.dims()[a] != od)
      return fail(ex, StatusCode::kInternal, "output shape ", dims_str(Y.dims()), " does not match the pads");
    p.out_dims[a] = od;
    p.in_dims[a] = X->dims()[a];
    p.in_strides[a] = is[a];
    p.begin[a] = pb[a];
  }
  if (!constant) {
    if (Y.numel() == 0) return Status::ok();
    return launch_status(k::launch_pad_mode(static_cast<int>(mode.value()), X->data(), Y.data(), esize(*X), p, Y.numel(),
                                            stream_of(ex)),
                         ex);
  }
  // constant_value stays on the device (so the fp16 pass converts it with the data); its first
  // element is the fill, zero bytes when it is absent or empty.
  const void* fill = nullptr;
  if (V && V->defined() && V->numel() > 0) {
    if (V->dtype() != X->dtype())
      return fail(ex, StatusCode::kInvalidModel, "constant_value has dtype ", dtype_name(V->dtype()), " but data has ",
                  dtype_name(X->dtype()));
    fill = V->data();
  }
  if (Y.numel() == 0) return Status::ok();
  return launch_status(k::launch_pad_constant(X->data(), Y.data(), esize(*X), p, fill, Y.numel(), stream_of(ex)), ex);
}

}  // namespace

void append_cuda_pad_ops(std::vector<CudaOp>& out) {
  out.push_back(
      kernel_dtypes({input_dtypes(0, kGpuEveryDtype)}, CudaOp{"Pad", &pad_supports, &pad_run, {1, 3}, nullptr}));
}

}  // namespace graft::cuda
