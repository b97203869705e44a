// HannWindow, HammingWindow and BlackmanWindow's CUDA kernel and ops, in double as the CPU reference
// of window.cpp.
#include "ops/misc/misc.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/cuda_kernel_common.cuh"
#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "ops/attr_util.h"
#include "ops/misc/misc_cuda.h"

namespace graft::cuda {

// ---- kernels --------------------------------------------------------------------------------

namespace k {

// Launchers: plain device pointers, no framework types; each returns the launch's cudaError_t
// (cudaErrorInvalidValue for a type the launcher does not handle).
//
// The arithmetic follows the CPU reference step by step (double for the normalizations and the
// windows; results stored as graft's store_from_double does) so that integer outputs match it
// exactly.


// 0: Hann, 1: Hamming, 2: Blackman. n samples over a period of n (periodic) or n - 1; a window of
// period 0 is all ones. Any numeric y type (integers truncate, as graft's Cast does).
cudaError_t launch_window(KType t, int kind, bool periodic, void* y, int64_t n, cudaStream_t s);

namespace {

template <typename T>
__global__ void window_kernel(int kind, bool periodic, T* y, int64_t n) {
  constexpr double kPi = 3.14159265358979323846;
  const double den = periodic ? static_cast<double>(n) : static_cast<double>(n - 1);
  GRAFT_GRID_STRIDE(i, n) {
    if (den == 0) {
      y[i] = store_from_double<T>(1.0);
      continue;
    }
    // 2 * pi * i / den, evaluated left to right like the CPU reference.
    const double a = __ddiv_rn(__dmul_rn(2 * kPi, static_cast<double>(i)), den);
    double v;
    if (kind == 0) v = __dsub_rn(0.5, __dmul_rn(0.5, cos(a)));
    else if (kind == 1) v = __dsub_rn(25.0 / 46.0, __dmul_rn(21.0 / 46.0, cos(a)));
    else v = __dadd_rn(__dsub_rn(0.42, __dmul_rn(0.5, cos(a))), __dmul_rn(0.08, cos(2 * a)));
    y[i] = store_from_double<T>(v);
  }
}

}  // namespace

cudaError_t launch_window(KType t, int kind, bool periodic, void* y, int64_t n, cudaStream_t s) {
  if (kind < 0 || kind > 2) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  GRAFT_EVERY_NUMERIC_DISPATCH(t, (window_kernel<T><<<grid_for(n), kThreads, 0, s>>>(kind, periodic,
                                                                                     static_cast<T*>(y), n)));
  return cudaGetLastError();
}

}  // namespace k

// ---- CUDA op --------------------------------------------------------------------------------

namespace {

using namespace util;

bool window_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0)) return reject(why, "input size is missing");
  // The output's dtype is a key, which says nothing of an absent output.
  if (!n.output(0)) return reject(why, "output 0 is missing");
  return true;
}

// The size is a host input: the output's length is that value, which the engine needs on the host
// anyway to shape the output; the samples are computed on the device.
template <int kKind>
Status window_run(CudaExec& ex) {
  const Tensor* size = input_or_null(ex, 0);
  Tensor& y = *ex.ctx->outputs[0];
  if (!size || size->numel() != 1 || !dtype_is_integer(size->dtype()))
    return fail(ex, StatusCode::kInvalidModel, "input size must be one integer, got ",
                size ? dtype_name(size->dtype()) : "nothing", " ", size ? dims_str(size->dims()) : "");
  if (size->device() != DeviceType::kCPU) return fail(ex, StatusCode::kInternal, "size must be a host input");
  const int64_t n = size->to_int64_vector()[0];
  if (n < 0 || n > graft::kMaxWindowLength)
    return fail(ex, StatusCode::kInvalidModel, "size ", n, " is outside [0, ", graft::kMaxWindowLength, "]");
  if (y.numel() != n) return fail(ex, StatusCode::kInternal, "output has ", y.numel(), " elements, size is ", n);
  GRAFT_ASSIGN_OR_RETURN(int64_t periodic, attrs_of(ex).get_int("periodic", 1));
  return launch_status(k::launch_window(ktype(y.dtype()), kKind, periodic != 0, y.data(), n, stream_of(ex)), ex);
}

}  // namespace

void append_cuda_window_ops(std::vector<CudaOp>& out) {
  // Keyed by the output's dtype (the output_datatype attribute's) and the size's.
  out.push_back(kernel_dtypes({output_dtypes(0, kMiscNumericTypes), input_dtypes(0, kGpuInts)},
                              CudaOp{"HannWindow", &window_supports, &window_run<0>, {0}, nullptr}));
  out.push_back(kernel_dtypes({output_dtypes(0, kMiscNumericTypes), input_dtypes(0, kGpuInts)},
                              CudaOp{"HammingWindow", &window_supports, &window_run<1>, {0}, nullptr}));
  out.push_back(kernel_dtypes({output_dtypes(0, kMiscNumericTypes), input_dtypes(0, kGpuInts)},
                              CudaOp{"BlackmanWindow", &window_supports, &window_run<2>, {0}, nullptr}));
}

}  // namespace graft::cuda
