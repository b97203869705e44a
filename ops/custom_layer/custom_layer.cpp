// CustomLayer definition and CPU reference kernels (README.md has the math).
#include "graft/kernel_dtype.h"
#include "ops/custom_layer/custom_layer.h"
#include "ops/op_folder.h"

#include <cmath>
#include <string>

#ifdef GRAFT_WITH_CUDA
#include "ops/custom_layer/custom_layer_kernels.cuh"
#endif

namespace graft {
namespace {

constexpr const char* kOpName = "CustomLayer";
constexpr float kDefaultBeta = 1.0f;

// How each dtype is stored and computed: float64 natively, float32 in float, float16 in float with
// one rounding on store.
using kernel::F16;
using kernel::F32;
using kernel::F64;

template <typename Fn>
Status visit_dtype(DataType t, Fn&& fn) {
  return kernel::visit_float_dtype(kOpName, t, std::forward<Fn>(fn));
}

// Every view must have x's dtype and dims, and memory when it has elements.
Status check_views(const KernelContext& ctx, size_t n_in, size_t n_out, DeviceType device) {
  GRAFT_RETURN_IF_ERROR(check_kernel_io(ctx, kOpName, n_in, n_out));
  const TensorView& x = ctx.inputs[0];
  auto check = [&](const TensorView& v, const char* what, size_t i) -> Status {
    if (v.dtype != x.dtype || v.dims != x.dims)
      return error(StatusCode::kInvalidArgument, kOpName, ": ", what, " ", i, " must have the dtype and shape of x (",
                   dtype_name(x.dtype), "), got ", dtype_name(v.dtype), " of rank ", v.rank());
    if (v.numel() > 0 && v.data == nullptr)
      return error(StatusCode::kInvalidArgument, kOpName, ": ", what, " ", i, " has no data");
    if (v.device != device)
      return error(StatusCode::kInvalidArgument, kOpName, ": ", what, " ", i, " is in ", device_name(v.device),
                   " memory, the kernel needs ", device_name(device));
    return Status::ok();
  };
  for (size_t i = 0; i < n_in; ++i) GRAFT_RETURN_IF_ERROR(check(ctx.inputs[i], "input", i));
  for (size_t i = 0; i < n_out; ++i) GRAFT_RETURN_IF_ERROR(check(ctx.outputs[i], "output", i));
  return Status::ok();
}

Result<float> beta_of(const KernelContext& ctx) {
  if (!ctx.attrs) return kDefaultBeta;
  return ctx.attrs->get_float("beta", kDefaultBeta);
}

Status forward_cpu(const KernelContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_views(ctx, 1, 1, DeviceType::kCPU));
  GRAFT_ASSIGN_OR_RETURN(float beta_attr, beta_of(ctx));
  const TensorView& x = ctx.inputs[0];
  const TensorView& y = ctx.outputs[0];
  return visit_dtype(x.dtype, [&](auto tr) {
    using Tr = decltype(tr);
    using C = typename Tr::C;
    const C beta = static_cast<C>(beta_attr);
    for (int64_t i = 0, n = x.numel(); i < n; ++i) {
      const C v = Tr::load(x.data, i);
      const C s = C(1) / (C(1) + std::exp(-beta * v));
      Tr::store(y.data, i, v * s);
    }
    return Status::ok();
  });
}

// inputs: x, dy; outputs: dx.
Status backward_cpu(const KernelContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_views(ctx, 2, 1, DeviceType::kCPU));
  GRAFT_ASSIGN_OR_RETURN(float beta_attr, beta_of(ctx));
  const TensorView& x = ctx.inputs[0];
  const TensorView& dy = ctx.inputs[1];
  const TensorView& dx = ctx.outputs[0];
  return visit_dtype(x.dtype, [&](auto tr) {
    using Tr = decltype(tr);
    using C = typename Tr::C;
    const C beta = static_cast<C>(beta_attr);
    for (int64_t i = 0, n = x.numel(); i < n; ++i) {
      const C v = Tr::load(x.data, i);
      const C s = C(1) / (C(1) + std::exp(-beta * v));
      Tr::store(dx.data, i, Tr::load(dy.data, i) * (s + beta * v * s * (C(1) - s)));
    }
    return Status::ok();
  });
}

#ifdef GRAFT_WITH_CUDA
Status cuda_status(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Status::ok();
  return error(StatusCode::kRuntimeError, kOpName, ": ", what, " failed: ", cudaGetErrorString(e));
}

Status forward_cuda(const KernelContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_views(ctx, 1, 1, DeviceType::kCUDA));
  GRAFT_ASSIGN_OR_RETURN(float beta, beta_of(ctx));
  const TensorView& x = ctx.inputs[0];
  const TensorView& y = ctx.outputs[0];
  auto stream = static_cast<cudaStream_t>(ctx.stream);
  switch (x.dtype) {
    case DataType::kFloat32:
      return cuda_status(cuda::custom_layer_forward_f32(x.as<float>(), y.as<float>(), x.numel(), beta, stream),
                         "forward kernel launch");
    case DataType::kFloat16:
      return cuda_status(cuda::custom_layer_forward_f16(x.as<__half>(), y.as<__half>(), x.numel(), beta, stream),
                         "forward kernel launch");
    default:
      return error(StatusCode::kUnsupported, kOpName, ": no CUDA kernel for dtype ", dtype_name(x.dtype));
  }
}

Status backward_cuda(const KernelContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_views(ctx, 2, 1, DeviceType::kCUDA));
  GRAFT_ASSIGN_OR_RETURN(float beta, beta_of(ctx));
  const TensorView& x = ctx.inputs[0];
  const TensorView& dy = ctx.inputs[1];
  const TensorView& dx = ctx.outputs[0];
  auto stream = static_cast<cudaStream_t>(ctx.stream);
  switch (x.dtype) {
    case DataType::kFloat32:
      return cuda_status(cuda::custom_layer_backward_f32(x.as<float>(), dy.as<float>(), dx.as<float>(), x.numel(),
                                                         beta, stream),
                         "backward kernel launch");
    case DataType::kFloat16:
      return cuda_status(cuda::custom_layer_backward_f16(x.as<__half>(), dy.as<__half>(), dx.as<__half>(),
                                                         x.numel(), beta, stream),
                         "backward kernel launch");
    default:
      return error(StatusCode::kUnsupported, kOpName, ": no CUDA backward kernel for dtype ", dtype_name(x.dtype));
  }
}
#endif  // GRAFT_WITH_CUDA

}  // namespace

OpDef define_custom_layer() {
  using DT = DataType;
  const std::vector<DT> dtypes = {DT::kFloat32, DT::kFloat16, DT::kFloat64};
  OpDef def(kOpName);
  def.domain("ai.onnx.contrib")
      .version("1")
      .plugin_namespace("")
      .doc("y = x * sigmoid(beta * x), elementwise (SiLU/Swish, arXiv 1710.05941, with a fixed beta).")
      .attr_float("beta", kDefaultBeta, "slope of the sigmoid gate; 1 gives SiLU")
      .range(-1e4, 1e4)
      .input("x", dtypes, "any shape")
      .output("y", dtypes, "same shape and dtype as x")
      .type_combination({DT::kFloat32, DT::kFloat32})
      .type_combination({DT::kFloat16, DT::kFloat16})
      .type_combination({DT::kFloat64, DT::kFloat64})
      .shape_fn([](ShapeContext& c) {
        c.set_output(0, c.input_shape(0));
        return Status::ok();
      })
      .kernel(Backend::kCPU, forward_cpu)
      .differentiable_inputs({0})
      .backward(Backend::kCPU, backward_cpu);
  {
    AttributeMap ex;
    ex.set("beta", 0.5f);
    def.example({std::vector<int64_t>{4, 3, 5, 7}}, ex);  // odd sizes: no vector-width assumption
    ex.set("beta", 2.0f);
    def.example({std::vector<int64_t>{5}}, ex);  // rank 1
  }
#ifdef GRAFT_WITH_CUDA
  const std::vector<std::vector<DT>> cuda_combos = {{DT::kFloat32, DT::kFloat32}, {DT::kFloat16, DT::kFloat16}};
  def.kernel(Backend::kCUDA, forward_cuda, cuda_combos).backward(Backend::kCUDA, backward_cuda, cuda_combos);
#endif
  return def;
}

// This folder's ops for register_graft_ops (ops/op_folder.h).
void append_custom_layer_ops(FolderOps& out) {
  out.defs.push_back(define_custom_layer());
}

}  // namespace graft
