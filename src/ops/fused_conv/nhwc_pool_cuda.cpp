// GraftPool's CUDA op (nhwc_pool.cpp defines it): graft's own channels-last window kernels (the nn
// family's nn_kernels.cu).
#include "backends/cuda/cuda_ops.h"

#include <string>

#include "backends/cuda/cuda_op_util.h"
#include "ops/nn/nn_kernels.cuh"
#include "ops/window_attrs.h"

namespace graft::cuda {

using namespace util;  // NOLINT(build/namespaces)

namespace {

// ---- GraftPool (NHWC) ----

Status graft_pool_run(CudaExec& ex) {
  const Tensor& X = *ex.ctx->inputs[0];
  Tensor& Y = *ex.ctx->outputs[0];
  const AttributeMap& a = *ex.ctx->attrs;
  if (X.rank() != 4 || Y.rank() != 4) return fail(ex, StatusCode::kInvalidModel, "X and Y must have rank 4");
  GRAFT_ASSIGN_OR_RETURN(std::string pool, a.get_string("pool", ""));
  k::Window2d g;
  g.n = X.dims()[0]; g.h = X.dims()[1]; g.w = X.dims()[2]; g.c = X.dims()[3];
  g.oh = Y.dims()[1]; g.ow = Y.dims()[2];
  k::PoolKind kind = k::PoolKind::kAverage;
  if (pool == "GlobalAveragePool" || pool == "GlobalMaxPool") {
    return launch_status(k::launch_global_pool_nhwc(ktype(X.dtype()), pool == "GlobalMaxPool", X.data(), Y.data(), g.n,
                                                    g.h * g.w, g.c, ex.workspace, ex.workspace_size, stream_of(ex)),
                         ex);
  } else if (pool == "MaxPool" || pool == "AveragePool") {
    GRAFT_ASSIGN_OR_RETURN(graft::WindowAttrs wa, graft::parse_window_attrs(a, 2, nullptr, true));
    std::vector<int64_t> begins, ends;
    graft::resolve_pads(wa, {g.h, g.w}, &begins, &ends);
    g.kh = wa.kernel[0]; g.kw = wa.kernel[1];
    g.sh = wa.strides[0]; g.sw = wa.strides[1];
    g.dh = wa.dilations[0]; g.dw = wa.dilations[1];
    g.ph = begins[0]; g.pw = begins[1]; g.peh = ends[0]; g.pew = ends[1];
    if (pool == "MaxPool") {
      kind = k::PoolKind::kMax;
    } else {
      GRAFT_ASSIGN_OR_RETURN(int64_t include_pad, a.get_int("count_include_pad", 0));
      if (include_pad) kind = k::PoolKind::kAverageIncludePad;
    }
  } else {
    return fail(ex, StatusCode::kInvalidModel, "unknown pool '", pool, "'");
  }
  return launch_status(k::launch_pool2d_nhwc(ktype(X.dtype()), kind, X.data(), Y.data(), g, stream_of(ex)), ex);
}

// A global pool over a large plane splits it across blocks (float partials in the workspace).
size_t graft_pool_workspace(const Node& n, const std::vector<const Tensor*>& ins, const std::vector<Tensor>& /*outputs*/) {
  if (ins.empty() || !ins[0] || ins[0]->rank() != 4) return 0;
  const auto pool = n.attrs.get_string("pool", "");
  if (!pool || (*pool != "GlobalAveragePool" && *pool != "GlobalMaxPool")) return 0;
  const auto& d = ins[0]->dims();
  return k::global_pool_nhwc_workspace(d[0], d[1] * d[2], d[3]);
}

}  // namespace

void append_cuda_nhwc_pool_ops(std::vector<CudaOp>& out) {
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuFloats)},
                              CudaOp{"GraftPool", &rank4_input0, &graft_pool_run, {}, &graft_pool_workspace}));
}

}  // namespace graft::cuda
