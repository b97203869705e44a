// GraftConvInt8's CUDA op (graft_conv_int8.cpp defines it): graft's INT8 tensor-core convolution,
// conv_int8_kernels.cu, whose epilogue computes the CPU reference's float32 steps.
#include <string>
#include <vector>

#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "ops/fused_conv/conv_int8_kernels.cuh"
#include "ops/layout.h"
#include "ops/nn/window_plan_cuda.h"

namespace graft::cuda {

using namespace util;  // NOLINT(build/namespaces)

namespace {

// The kernel's epilogue for the node's activation (k::Epilogue takes ConvActivation's codes); false
// for one it does not compute.
bool epilogue_of(const AttributeMap& attrs, k::Epilogue* e) {
  ConvEpilogueActivation act;
  if (!read_activation(attrs, &act).is_ok() ||
      (act.kind != ConvActivation::kNone && act.kind != ConvActivation::kRelu && act.kind != ConvActivation::kClip))
    return false;
  *e = k::Epilogue{static_cast<int>(act.kind), act.lo, act.hi};
  return true;
}

// X int8 (the key), W int8, the scale and bias float32, a float16 or int8 output, a float16
// residual, C a multiple of 16 where the filter is known.
bool graft_conv_int8_supports(const Node& n, std::string* why) {
  if (in_dtype(n, 1) != DataType::kInt8) return reject(why, "the filter must be int8");
  if (in_dtype(n, 2) != DataType::kFloat32 || (has_input(n, 3) && in_dtype(n, 3) != DataType::kFloat32))
    return reject(why, "the scale and bias must be float32");
  if (!n.output(0) || (n.output(0)->desc.dtype != DataType::kFloat16 && n.output(0)->desc.dtype != DataType::kInt8))
    return reject(why, "the INT8 kernel writes float16 or int8, not " +
                           std::string(n.output(0) ? dtype_name(n.output(0)->desc.dtype) : "nothing"));
  if (has_input(n, 4) && in_dtype(n, 4) != DataType::kFloat16) return reject(why, "the residual must be float16");
  k::Epilogue e;
  if (!epilogue_of(n.attrs, &e)) return reject(why, "the INT8 kernel's epilogue has no such activation");
  const Value* w = n.input(1);
  if (w && w->constant && (w->constant->rank() != 4 || w->constant->dims()[3] % 16 != 0))
    return reject(why, "the INT8 kernel takes channel counts that are multiples of 16");
  return true;
}

Status graft_conv_int8_run(CudaExec& ex) {
  const Tensor& X = *ex.ctx->inputs[0];
  const Tensor& W = *ex.ctx->inputs[1];
  const Tensor& S = *ex.ctx->inputs[2];
  const Tensor* B = ex.ctx->inputs.size() > 3 ? ex.ctx->inputs[3] : nullptr;
  const Tensor* Z = ex.ctx->inputs.size() > 4 ? ex.ctx->inputs[4] : nullptr;
  Tensor& Y = *ex.ctx->outputs[0];
  if (X.rank() != 4 || W.rank() != 4 || Y.rank() != 4 || W.dims()[3] != X.dims()[3] || Y.dims()[3] != W.dims()[0] ||
      S.numel() != W.dims()[0] || (B && B->numel() != W.dims()[0]) || (Z && Z->dims() != Y.dims()))
    return fail(ex, StatusCode::kInvalidModel, "X, W, the scale, the bias, Z and Y disagree in shape");
  k::Int8ConvEpilogue e;
  if (!epilogue_of(attrs_of(ex), &e.act)) return fail(ex, StatusCode::kInvalidModel, "an activation the kernel lacks");
  // The window over the NHWC dims, named in the NCHW order plan_window reads.
  auto nchw = [](const std::vector<int64_t>& d) { return std::vector<int64_t>{d[0], d[3], d[1], d[2]}; };
  const std::vector<int64_t> kernel = {W.dims()[1], W.dims()[2]};
  WindowPlan plan;
  GRAFT_RETURN_IF_ERROR(plan_window(ex, nchw(X.dims()), nchw(Y.dims()), &kernel, false, &plan));
  const k::Window2d& g = plan.g;
  if (!k::conv_nhwc_int8_supported(g, W.dims()[0], e.act))
    return fail(ex, StatusCode::kUnsupported, "this geometry is outside the INT8 kernel's limits");
  e.scale = S.data_as<float>();
  e.bias = B ? B->data_as<float>() : nullptr;
  e.z = Z ? Z->data() : nullptr;
  e.out_scale = 0.f;  // float16 out
  if (Y.dtype() == DataType::kInt8) {
    GRAFT_ASSIGN_OR_RETURN(e.out_scale, attrs_of(ex).get_float("out_scale", 0.f));
    if (!(e.out_scale > 0.f)) return fail(ex, StatusCode::kInvalidModel, "an int8 output needs a positive out_scale");
  } else if (Y.dtype() != DataType::kFloat16) {
    return fail(ex, StatusCode::kUnsupported, "the INT8 kernel writes float16 or int8");
  }
  return launch_status(k::launch_conv_nhwc_int8(X.data_as<int8_t>(), W.data_as<int8_t>(), e, Y.data(), g,
                                                W.dims()[0], stream_of(ex)),
                       ex);
}

}  // namespace

void append_cuda_graft_conv_int8_ops(std::vector<CudaOp>& out) {
  out.push_back(kernel_dtypes({input_dtypes(0, {DataType::kInt8})},
                              CudaOp{"GraftConvInt8", &graft_conv_int8_supports, &graft_conv_int8_run, {}, nullptr}));
}

}  // namespace graft::cuda
