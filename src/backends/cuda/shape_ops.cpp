// CUDA data-movement ops: Reshape/Flatten/Squeeze/Unsqueeze as device-to-device copies (their shape
// inputs are host inputs), Transpose through a strided gather, Expand through a broadcast copy.
// Concat, Split, Slice, Gather, Tile, Pad and Resize are not on the GPU yet: the runtime runs them
// on the CPU (they are absent from this table).
#include <numeric>
#include <string>

#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/elementwise_kernels.cuh"
#include "backends/cuda/shape_kernels.cuh"

namespace graft::cuda {
namespace {

using namespace util;

bool elem_size_ok(const Node& n, std::string* why) {
  if (!has_input(n, 0)) return reject(why, "input 0 is missing");
  const size_t es = dtype_size(in_dtype(n, 0));
  if (es != 1 && es != 2 && es != 4 && es != 8) return reject(why, "unsupported element size");
  return true;
}

Status copy_run(CudaExec& ex) {
  const Tensor& x = *ex.ctx->inputs[0];
  Tensor& y = *ex.ctx->outputs[0];
  if (x.nbytes() != y.nbytes()) return fail(ex, StatusCode::kInternal, "output size differs from input size");
  if (x.nbytes() == 0 || x.data() == y.data()) return Status::ok();
  return launch_status(cudaMemcpyAsync(y.data(), x.data(), x.nbytes(), cudaMemcpyDeviceToDevice, stream_of(ex)), ex,
                       "cudaMemcpyAsync");
}

Status transpose_run(CudaExec& ex) {
  const Tensor& x = *ex.ctx->inputs[0];
  Tensor& y = *ex.ctx->outputs[0];
  const int64_t r = x.rank();
  std::vector<int64_t> rev(static_cast<size_t>(r));
  std::iota(rev.rbegin(), rev.rend(), 0);
  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> perm, attrs_of(ex).get_ints("perm", rev));
  if (static_cast<int64_t>(perm.size()) != r) return fail(ex, StatusCode::kInvalidModel, "perm has the wrong length");
  const auto st = contiguous_strides(x.dims());
  // Output axis d walks input axis perm[d]; unit axes dropped so rank <= kMaxRank covers more cases.
  k::Strided p;
  for (int64_t d = 0; d < r; ++d) {
    const int64_t a = perm[static_cast<size_t>(d)];
    if (a < 0 || a >= r) return fail(ex, StatusCode::kInvalidModel, "perm entry out of range");
    if (x.dims()[a] == 1) continue;
    if (p.rank == k::kMaxRank) return fail(ex, StatusCode::kUnsupported, "more than ", k::kMaxRank, " non-unit axes");
    p.dims[p.rank] = x.dims()[a];
    p.strides[p.rank] = st[static_cast<size_t>(a)];
    ++p.rank;
  }
  if (y.numel() != x.numel()) return fail(ex, StatusCode::kInternal, "output size differs from input size");
  return launch_status(k::launch_strided_gather(x.data(), y.data(), static_cast<int>(dtype_size(x.dtype())), p, y.numel(),
                                                stream_of(ex)), ex);
}

Status expand_run(CudaExec& ex) {
  const Tensor& x = *ex.ctx->inputs[0];
  Tensor& y = *ex.ctx->outputs[0];
  k::Bcast p;
  std::string why;
  if (!make_bcast(y.dims(), {x.dims()}, &p, &why)) return fail(ex, StatusCode::kInvalidModel, why);
  return launch_status(k::launch_broadcast_copy(x.data(), y.data(), static_cast<int>(dtype_size(x.dtype())), p, y.numel(),
                                                stream_of(ex)), ex);
}

}  // namespace

void append_cuda_shape_ops(std::vector<CudaOp>& out) {
  out.push_back(CudaOp{"Reshape", &elem_size_ok, &copy_run, {1}, nullptr});
  out.push_back(CudaOp{"Flatten", &elem_size_ok, &copy_run, {}, nullptr});
  out.push_back(CudaOp{"Squeeze", &elem_size_ok, &copy_run, {1}, nullptr});
  out.push_back(CudaOp{"Unsqueeze", &elem_size_ok, &copy_run, {1}, nullptr});
  out.push_back(CudaOp{"Transpose", &elem_size_ok, &transpose_run, {}, nullptr});
  out.push_back(CudaOp{"Expand", &elem_size_ok, &expand_run, {1}, nullptr});
}

}  // namespace graft::cuda
