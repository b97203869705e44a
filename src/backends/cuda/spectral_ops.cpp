// CUDA ops for DFT and STFT (CPU reference: src/backends/cpu/spectral.cpp), so a CUDA engine keeps
// them on the GPU. The layout and every check come from the CPU reference's own readers
// (dft_attrs, dft_layout, stft_layout), so errors read the same on both backends; the lengths and
// the axis are host inputs (they decide the output's shape, which the engine needs on the host
// anyway), the samples and the window stay on the device. Kernel: spectral_kernels.cu.
#include <optional>
#include <string>
#include <vector>

#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/spectral_kernels.cuh"
#include "ops/attr_util.h"
#include "ops/spectral_attrs.h"

namespace graft::cuda {
namespace {

using namespace util;

constexpr std::initializer_list<DataType> kFloats = {DataType::kFloat32, DataType::kFloat16,
                                                     DataType::kBFloat16, DataType::kFloat64};
constexpr std::initializer_list<DataType> kInts = {DataType::kInt32, DataType::kInt64};



int opset_of(const CudaExec& ex) {
  if (ex.ctx->opset > 0) return ex.ctx->opset;
  return ex.ctx->node ? ex.ctx->node->opset : 0;
}

// Output 0 has input 0's float dtype.
bool float_io(const Node& n, std::string* why) {
  if (!has_input(n, 0)) return reject(why, "input 0 is missing");
  if (!require_dtype(n, 0, kFloats, why)) return false;
  if (out_dtype(n, 0) != in_dtype(n, 0)) return reject(why, "output dtype differs from the input's");
  return true;
}

k::SpectralArgs args_of(const graft::SpectralLayout& l) {
  k::SpectralArgs a;
  a.batch = l.batch;
  a.frames = l.frames;
  a.bins = l.bins;
  a.inner = l.inner;
  a.batch_stride = l.batch_stride;
  a.frame_stride = l.frame_stride;
  a.inner_stride = l.inner_stride;
  a.term_stride = l.term_stride;
  a.terms = l.terms;
  a.n = l.n;
  a.complex_input = l.complex_input;
  a.inverse = l.inverse;
  return a;
}

Status launch(CudaExec& ex, const graft::SpectralLayout& l, const Tensor& x, const Tensor* window) {
  Tensor& y = *ex.ctx->outputs[0];
  if (y.numel() != l.out_numel() || y.dtype() != x.dtype())
    return fail(ex, StatusCode::kInternal, "output has ", dtype_name(y.dtype()), " ",
                graft::ints_to_string(y.dims()), ", the transform makes ", l.out_numel(), " values of ",
                dtype_name(x.dtype()));
  if (x.device() != DeviceType::kCUDA || (window && window->device() != DeviceType::kCUDA))
    return fail(ex, StatusCode::kInternal, "the signal and the window must be device tensors");
  return launch_status(k::launch_spectral(ktype(x.dtype()), args_of(l), x.data(),
                                          window ? window->data() : nullptr, y.data(), stream_of(ex)),
                       ex);
}

// ---- DFT --------------------------------------------------------------------------------------------

bool dft_supports(const Node& n, std::string* why) {
  if (!float_io(n, why)) return false;
  if (has_input(n, 1) && !require_dtype(n, 1, kInts, why)) return false;
  if (has_input(n, 2) && !require_dtype(n, 2, {DataType::kInt64}, why)) return false;
  return true;
}

Status dft_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  if (!x) return fail(ex, StatusCode::kInvalidModel, "input is missing");
  auto a = graft::dft_attrs(attrs_of(ex), opset_of(ex));
  if (!a) return with_node(ex, a.status());
  std::optional<int64_t> n;
  if (const Tensor* t = input_or_null(ex, 1)) {
    auto v = graft::integer_scalar(*t, "dft_length");
    if (!v) return with_node(ex, v.status());
    n = v.value();
  }
  if (const Tensor* t = input_or_null(ex, 2)) {
    if (opset_of(ex) < 20)
      return fail(ex, StatusCode::kInvalidModel, "takes the axis as input 2 only from opset 20 on");
    auto v = graft::integer_scalar(*t, "axis");
    if (!v) return with_node(ex, v.status());
    a.value().axis = v.value();
  }
  auto l = graft::dft_layout(x->dims(), a.value().axis, n, a.value());
  if (!l) return with_node(ex, l.status());
  return launch(ex, l.value(), *x, nullptr);
}

// ---- STFT -------------------------------------------------------------------------------------------

bool stft_supports(const Node& n, std::string* why) {
  if (!float_io(n, why)) return false;
  if (!has_input(n, 1)) return reject(why, "frame_step is missing");
  if (!require_dtype(n, 1, kInts, why)) return false;
  if (has_input(n, 2) && in_dtype(n, 2) != in_dtype(n, 0))
    return reject(why, "window dtype differs from the signal's");
  if (has_input(n, 3) && !require_dtype(n, 3, kInts, why)) return false;
  return true;
}

Status stft_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  const Tensor* step = input_or_null(ex, 1);
  if (!x || !step) return fail(ex, StatusCode::kInvalidModel, "needs signal and frame_step");
  auto onesided = graft::stft_onesided(attrs_of(ex));
  if (!onesided) return with_node(ex, onesided.status());
  auto s = graft::integer_scalar(*step, "frame_step");
  if (!s) return with_node(ex, s.status());
  const Tensor* window = input_or_null(ex, 2);
  std::optional<int64_t> wlen, flen;
  if (window) {
    if (window->dtype() != x->dtype() || window->rank() != 1)
      return fail(ex, StatusCode::kInvalidModel, "window must be 1-D of the signal's dtype ",
                  dtype_name(x->dtype()), ", got ", dtype_name(window->dtype()), " ",
                  graft::ints_to_string(window->dims()));
    wlen = window->dims()[0];
  }
  if (const Tensor* t = input_or_null(ex, 3)) {
    auto v = graft::integer_scalar(*t, "frame_length");
    if (!v) return with_node(ex, v.status());
    flen = v.value();
  }
  auto l = graft::stft_layout(x->dims(), s.value(), wlen, flen, onesided.value());
  if (!l) return with_node(ex, l.status());
  return launch(ex, l.value(), *x, window);
}

}  // namespace

void append_cuda_spectral_ops(std::vector<CudaOp>& out) {
  out.push_back(CudaOp{"DFT", &dft_supports, &dft_run, {1, 2}, nullptr});
  out.push_back(CudaOp{"STFT", &stft_supports, &stft_run, {1, 3}, nullptr});
}

}  // namespace graft::cuda
