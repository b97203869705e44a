// CUDA ops for MaxUnpool and Celu (kernels: selection_kernels.cu). Attributes and shapes are
// validated with the CPU reference's own readers (max_unpool_attrs, max_unpool_shape, celu_alpha),
// so errors read the same on both backends. Unique has no CUDA op: its output sizes depend on the
// data, and the CUDA engine places such ops on the CPU reference.
#include <optional>
#include <string>
#include <vector>

#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/selection_kernels.cuh"
#include "ops/extra_attrs.h"
#include "ops/selection_attrs.h"

namespace graft::cuda {
namespace {

using namespace util;



// ---- MaxUnpool ----------------------------------------------------------------------------------

bool max_unpool_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0) || !has_input(n, 1)) return reject(why, "needs X and I");
  if (!require_dtype(n, 0, {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kFloat64},
                     why))
    return false;
  if (!require_dtype(n, 1, {DataType::kInt64}, why)) return false;
  if (has_input(n, 2) && !require_dtype(n, 2, {DataType::kInt64}, why)) return false;
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
                                            numel_of(up), y.data(), y.numel(), stream_of(ex)),
                       ex);
}

// ---- Celu ---------------------------------------------------------------------------------------

bool celu_supports(const Node& n, std::string* why) {
  // float32 is Celu's one type in the specification (and in its schema).
  return require_dtype(n, 0, {DataType::kFloat32}, why);
}

Status celu_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  if (!x) return fail(ex, StatusCode::kInvalidModel, "needs X");
  Tensor& y = *ex.ctx->outputs[0];
  auto alpha = graft::celu_alpha(attrs_of(ex));
  if (!alpha) return with_node(ex, alpha.status());
  if (x->dtype() != DataType::kFloat32 || y.dtype() != DataType::kFloat32 || y.numel() != x->numel())
    return fail(ex, StatusCode::kInvalidModel, "X and Y must be float32 of one size");
  return launch_status(k::launch_celu(static_cast<const float*>(x->data()), static_cast<float*>(y.data()),
                                      y.numel(), alpha.value(), stream_of(ex)),
                       ex);
}

}  // namespace

void append_cuda_selection_ops(std::vector<CudaOp>& out) {
  out.push_back(CudaOp{"MaxUnpool", &max_unpool_supports, &max_unpool_run, {2}, nullptr});
  out.push_back(CudaOp{"Celu", &celu_supports, &celu_run, {}, nullptr});
}

}  // namespace graft::cuda
