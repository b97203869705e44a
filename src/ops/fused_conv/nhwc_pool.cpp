// GraftPool (fused_conv.h), an ONNX pool on an NHWC tensor: its schema and CPU reference, the
// builtin pool's over NCHW views. CUDA: nhwc_pool_cuda.cpp.
#include "ops/fused_conv/fused_conv.h"

#include <cstring>
#include <string>

#include "ops/layout.h"
#include "ops/operator.h"

namespace graft {

namespace {

// ---- GraftPool ----

Result<const char*> pool_kind(const AttributeMap& attrs) {
  GRAFT_ASSIGN_OR_RETURN(std::string p, attrs.get_string("pool", ""));
  for (const char* k : {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"})
    if (p == k) return k;
  Status st = error(StatusCode::kInvalidModel, "pool must be MaxPool, AveragePool, GlobalAveragePool or GlobalMaxPool, got '",
                    p, "'");
  st.with_attribute("pool");
  return st;
}

Status infer_graft_pool(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(const char* kind, pool_kind(ctx.attrs()));
  bool nhwc = false;
  GRAFT_RETURN_IF_ERROR(read_layout(ctx.attrs(), &nhwc));
  if (!nhwc) return ctx.fail("GraftPool exists for layout NHWC only");
  if (ctx.input(0).rank() != 4) return ctx.fail("X must have rank 4, got ", ctx.input(0).to_string());
  return infer_as(ctx, kind, true, 1);
}

Status graft_pool_cpu(ExecContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(const char* kind, pool_kind(*ctx.attrs));
  if (ctx.inputs[0]->rank() != 4) return error(StatusCode::kInvalidModel, "X must have rank 4");
  Tensor xn = permute_rank4(*ctx.inputs[0], kToNchw);
  Tensor& y = *ctx.outputs[0];
  Tensor yn = Tensor::empty(y.dtype(), permuted(y.dims(), kToNchw));
  ExecContext inner = ctx;
  inner.inputs = {&xn};
  inner.outputs = {&yn};
  GRAFT_RETURN_IF_ERROR(builtin(kind).cpu(inner));
  Tensor back = permute_rank4(yn, kToNhwc);
  std::memcpy(y.data(), back.data(), y.nbytes());
  return Status::ok();
}

}  // namespace

void append_nhwc_pool_ops(std::vector<OpEntry>& out) {
  out.push_back(internal_op(OpEntry{"GraftPool", 11, infer_graft_pool, graft_pool_cpu}));
}

}  // namespace graft
