// GroupNorm definition and CPU reference kernels (README.md has the math).
#include "graft/kernel_dtype.h"
#include "ops/group_norm/group_norm.h"
#include "ops/op_folder.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#ifdef GRAFT_WITH_CUDA
#include "ops/group_norm/group_norm_kernels.cuh"
#endif

namespace graft {
namespace {

constexpr const char* kOpName = "GroupNorm";
constexpr float kDefaultEpsilon = 1e-5f;

// Storage type per dtype. The CPU kernels are the reference: they compute in double for every dtype
// and round each result once on store.
using kernel::F16;
using kernel::F32;
using kernel::F64;

template <typename Fn>
Status visit_dtype(DataType t, Fn&& fn) {
  return kernel::visit_float_dtype(kOpName, t, std::forward<Fn>(fn));
}

Status attr_error(const std::string& attr, Status st) {
  st.with_attribute(attr);
  return st;
}

struct Params {
  int64_t n = 0, c = 0, s = 0, groups = 1;
  float epsilon = kDefaultEpsilon;
};

// x (N, C, *spatial) viewed as (N, C, S); scale and bias (C); num_groups divides C.
Result<Params> params_of(const KernelContext& ctx, size_t n_in, size_t n_out, DeviceType device) {
  GRAFT_RETURN_IF_ERROR(check_kernel_io(ctx, kOpName, n_in, n_out));
  if (!ctx.attrs) return error(StatusCode::kInvalidArgument, kOpName, ": kernel called without attributes");
  Params p;
  GRAFT_ASSIGN_OR_RETURN(p.groups, ctx.attrs->require_int("num_groups"));
  GRAFT_ASSIGN_OR_RETURN(p.epsilon, ctx.attrs->get_float("epsilon", kDefaultEpsilon));
  const TensorView& x = ctx.inputs[0];
  if (x.rank() < 2)
    return error(StatusCode::kInvalidArgument, kOpName, ": input 'x' must have rank >= 2 (N, C, ...), got rank ",
                 x.rank());
  p.n = x.dims[0];
  p.c = x.dims[1];
  p.s = 1;
  for (int64_t d = 2; d < x.rank(); ++d) p.s *= x.dims[d];
  if (p.groups < 1 || p.c % p.groups != 0)
    return attr_error("num_groups", error(StatusCode::kInvalidArgument, kOpName, ": num_groups ", p.groups,
                                          " must be >= 1 and divide the channel count ", p.c));
  if (!(p.epsilon > 0.0f))
    return attr_error("epsilon", error(StatusCode::kInvalidArgument, kOpName, ": epsilon must be > 0"));
  auto check = [&](const TensorView& v, const std::string& what, const std::vector<int64_t>& dims) -> Status {
    if (v.dtype != x.dtype || v.dims != dims)
      return error(StatusCode::kInvalidArgument, kOpName, ": ", what, " must be ", dtype_name(x.dtype), " of ",
                   dims.size() == 1 ? "shape (C)" : "the shape of x", ", got ", dtype_name(v.dtype), " of rank ",
                   v.rank());
    if (v.numel() > 0 && v.data == nullptr)
      return error(StatusCode::kInvalidArgument, kOpName, ": ", what, " has no data");
    if (v.device != device)
      return error(StatusCode::kInvalidArgument, kOpName, ": ", what, " is in ", device_name(v.device),
                   " memory, the kernel needs ", device_name(device));
    return Status::ok();
  };
  const std::vector<int64_t> per_channel = {p.c};
  // Forward: x, scale, bias -> y. Backward: x, scale, bias, dy -> dx, dscale, dbias.
  GRAFT_RETURN_IF_ERROR(check(ctx.inputs[1], "input 'scale'", per_channel));
  GRAFT_RETURN_IF_ERROR(check(ctx.inputs[2], "input 'bias'", per_channel));
  if (n_in == 4) GRAFT_RETURN_IF_ERROR(check(ctx.inputs[3], "gradient 'dy'", x.dims));
  GRAFT_RETURN_IF_ERROR(check(ctx.outputs[0], "output 0", x.dims));
  if (n_out == 3) {
    GRAFT_RETURN_IF_ERROR(check(ctx.outputs[1], "gradient 'dscale'", per_channel));
    GRAFT_RETURN_IF_ERROR(check(ctx.outputs[2], "gradient 'dbias'", per_channel));
  }
  return p;
}

struct Stats {
  double mean, rstd;
};

template <typename Tr>
Stats group_stats(const void* x, int64_t base, int64_t count, double epsilon) {
  double sum = 0.0;
  for (int64_t i = 0; i < count; ++i) sum += static_cast<double>(Tr::load(x, base + i));
  const double mean = sum / static_cast<double>(count);
  double sq = 0.0;
  for (int64_t i = 0; i < count; ++i) {
    const double d = static_cast<double>(Tr::load(x, base + i)) - mean;
    sq += d * d;
  }
  return {mean, 1.0 / std::sqrt(sq / static_cast<double>(count) + epsilon)};
}

Status forward_cpu(const KernelContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(Params p, params_of(ctx, 3, 1, DeviceType::kCPU));
  const void* x = ctx.inputs[0].data;
  const void* scale = ctx.inputs[1].data;
  const void* bias = ctx.inputs[2].data;
  void* y = ctx.outputs[0].data;
  return visit_dtype(ctx.inputs[0].dtype, [&](auto tr) {
    using Tr = decltype(tr);
    using C = typename Tr::C;
    const int64_t cpg = p.c / p.groups, count = cpg * p.s;
    if (count == 0) return Status::ok();
    for (int64_t n = 0; n < p.n; ++n) {
      for (int64_t g = 0; g < p.groups; ++g) {
        const int64_t base = (n * p.c + g * cpg) * p.s;
        const Stats st = group_stats<Tr>(x, base, count, p.epsilon);
        for (int64_t cl = 0; cl < cpg; ++cl) {
          const int64_t c = g * cpg + cl;
          const double sc = Tr::load(scale, c), b = Tr::load(bias, c);
          // In double: x - mean in float would carry mean's rounding, ulp(mean)/std per element.
          for (int64_t i = base + cl * p.s, e = i + p.s; i < e; ++i)
            Tr::store(y, i, static_cast<C>((Tr::load(x, i) - st.mean) * st.rstd * sc + b));
        }
      }
    }
    return Status::ok();
  });
}

// inputs: x, scale, bias, dy; outputs: dx, dscale, dbias. Sums in double.
Status backward_cpu(const KernelContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(Params p, params_of(ctx, 4, 3, DeviceType::kCPU));
  const void* x = ctx.inputs[0].data;
  const void* scale = ctx.inputs[1].data;
  const void* dy = ctx.inputs[3].data;
  void* dx = ctx.outputs[0].data;
  void* dscale = ctx.outputs[1].data;
  void* dbias = ctx.outputs[2].data;
  return visit_dtype(ctx.inputs[0].dtype, [&](auto tr) {
    using Tr = decltype(tr);
    const int64_t cpg = p.c / p.groups, count = cpg * p.s;
    std::vector<double> ds(static_cast<size_t>(p.c), 0.0), db(static_cast<size_t>(p.c), 0.0);
    for (int64_t n = 0; n < p.n && count > 0; ++n) {
      for (int64_t g = 0; g < p.groups; ++g) {
        const int64_t base = (n * p.c + g * cpg) * p.s;
        const Stats st = group_stats<Tr>(x, base, count, p.epsilon);
        double sum_g = 0.0, sum_gx = 0.0;  // over the group: g = dy*scale, g*xhat
        for (int64_t cl = 0; cl < cpg; ++cl) {
          const int64_t c = g * cpg + cl;
          const double sc = Tr::load(scale, c);
          for (int64_t i = base + cl * p.s, e = i + p.s; i < e; ++i) {
            const double d = Tr::load(dy, i);
            const double xhat = (Tr::load(x, i) - st.mean) * st.rstd;
            db[c] += d;
            ds[c] += d * xhat;
            sum_g += d * sc;
            sum_gx += d * sc * xhat;
          }
        }
        const double mean_g = sum_g / static_cast<double>(count), mean_gx = sum_gx / static_cast<double>(count);
        for (int64_t cl = 0; cl < cpg; ++cl) {
          const int64_t c = g * cpg + cl;
          const double sc = Tr::load(scale, c);
          for (int64_t i = base + cl * p.s, e = i + p.s; i < e; ++i) {
            const double xhat = (Tr::load(x, i) - st.mean) * st.rstd;
            Tr::store(dx, i, static_cast<typename Tr::C>(st.rstd * (Tr::load(dy, i) * sc - mean_g - xhat * mean_gx)));
          }
        }
      }
    }
    for (int64_t c = 0; c < p.c; ++c) {
      Tr::store(dscale, c, static_cast<typename Tr::C>(ds[c]));
      Tr::store(dbias, c, static_cast<typename Tr::C>(db[c]));
    }
    return Status::ok();
  });
}

Status shape_fn(ShapeContext& ctx) {
  const int rank = ctx.input_rank(0);
  if (rank < 2)
    return error(StatusCode::kInvalidModel, kOpName, ": input 'x' must have rank >= 2 (N, C, ...), got rank ",
                 rank);
  GRAFT_ASSIGN_OR_RETURN(int64_t groups, ctx.attrs().require_int("num_groups"));
  if (groups < 1)
    return attr_error("num_groups", error(StatusCode::kInvalidArgument, kOpName, ": num_groups must be >= 1, got ",
                                          groups));
  const SymDim channels = ctx.input_dim(0, 1);
  const std::optional<int64_t> c = channels.constant_value();
  // A symbolic channel count is checked by the kernel when the shape is known.
  if (c && *c % groups != 0)
    return attr_error("num_groups", error(StatusCode::kInvalidArgument, kOpName, ": the channel count ", *c,
                                          " of input 'x' is not divisible by num_groups ", groups));
  for (int i : {1, 2}) {
    const char* name = i == 1 ? "scale" : "bias";
    if (ctx.input_rank(i) != 1)
      return error(StatusCode::kInvalidModel, kOpName, ": input '", name, "' must have rank 1 (C), got rank ",
                   ctx.input_rank(i));
    const std::optional<int64_t> len = ctx.input_dim(i, 0).constant_value();
    if (c && len && *len != *c)
      return error(StatusCode::kInvalidModel, kOpName, ": input '", name, "' has ", *len,
                   " elements, expected the channel count ", *c);
  }
  ctx.set_output(0, ctx.input_shape(0));
  return Status::ok();
}

#ifdef GRAFT_WITH_CUDA
Status cuda_status(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Status::ok();
  return error(StatusCode::kRuntimeError, kOpName, ": ", what, " failed: ", cudaGetErrorString(e));
}

Status forward_cuda(const KernelContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(Params p, params_of(ctx, 3, 1, DeviceType::kCUDA));
  const TensorView &x = ctx.inputs[0], &scale = ctx.inputs[1], &bias = ctx.inputs[2], &y = ctx.outputs[0];
  auto stream = static_cast<cudaStream_t>(ctx.stream);
  switch (x.dtype) {
    case DataType::kFloat32:
      return cuda_status(cuda::group_norm_forward_f32(x.as<float>(), scale.as<float>(), bias.as<float>(),
                                                      y.as<float>(), p.n, p.c, p.s, p.groups, p.epsilon, stream),
                         "forward kernel launch");
    case DataType::kFloat16:
      return cuda_status(cuda::group_norm_forward_f16(x.as<__half>(), scale.as<__half>(), bias.as<__half>(),
                                                      y.as<__half>(), p.n, p.c, p.s, p.groups, p.epsilon, stream),
                         "forward kernel launch");
    default:
      return error(StatusCode::kUnsupported, kOpName, ": no CUDA kernel for dtype ", dtype_name(x.dtype));
  }
}

Status backward_cuda(const KernelContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(Params p, params_of(ctx, 4, 3, DeviceType::kCUDA));
  const size_t need = cuda::group_norm_backward_workspace_bytes(p.n, p.c);
  if (ctx.workspace_size < need || (need > 0 && ctx.workspace == nullptr))
    return error(StatusCode::kInvalidArgument, kOpName, ": the CUDA backward needs ", static_cast<uint64_t>(need),
                 " bytes of workspace (the op's workspace_fn), got ", static_cast<uint64_t>(ctx.workspace_size));
  const TensorView &x = ctx.inputs[0], &scale = ctx.inputs[1], &dy = ctx.inputs[3];
  const TensorView &dx = ctx.outputs[0], &dscale = ctx.outputs[1], &dbias = ctx.outputs[2];
  auto stream = static_cast<cudaStream_t>(ctx.stream);
  switch (x.dtype) {
    case DataType::kFloat32:
      return cuda_status(cuda::group_norm_backward_f32(x.as<float>(), scale.as<float>(), dy.as<float>(),
                                                       dx.as<float>(), dscale.as<float>(), dbias.as<float>(), p.n,
                                                       p.c, p.s, p.groups, p.epsilon, ctx.workspace,
                                                       ctx.workspace_size, stream),
                         "backward kernel launch");
    case DataType::kFloat16:
      return cuda_status(cuda::group_norm_backward_f16(x.as<__half>(), scale.as<__half>(), dy.as<__half>(),
                                                       dx.as<__half>(), dscale.as<__half>(), dbias.as<__half>(), p.n,
                                                       p.c, p.s, p.groups, p.epsilon, ctx.workspace,
                                                       ctx.workspace_size, stream),
                         "backward kernel launch");
    default:
      return error(StatusCode::kUnsupported, kOpName, ": no CUDA backward kernel for dtype ", dtype_name(x.dtype));
  }
}
#endif  // GRAFT_WITH_CUDA

// Forward needs none; the CUDA backward keeps per-sample dscale/dbias partials (2*N*C floats). The
// same size is reported for both directions since a workspace function cannot tell them apart.
size_t workspace_bytes(const std::vector<ConcreteDesc>& inputs, const std::vector<ConcreteDesc>&,
                       const AttributeMap&) {
  if (inputs.empty() || inputs[0].dims.size() < 2) return 0;
  const int64_t n = inputs[0].dims[0], c = inputs[0].dims[1];
  return n > 0 && c > 0 ? static_cast<size_t>(2 * n * c) * sizeof(float) : 0;
}

}  // namespace

OpDef define_group_norm() {
  using DT = DataType;
  const std::vector<DT> dtypes = {DT::kFloat32, DT::kFloat16, DT::kFloat64};
  OpDef def(kOpName);
  def.domain("ai.onnx.contrib")
      .version("1")
      .plugin_namespace("")
      .doc("Group normalization (Wu & He, arXiv 1803.08494): normalize each group of C/num_groups channels of "
           "each sample to zero mean and unit variance, then apply a per-channel scale and bias.")
      .attr_int("num_groups", std::nullopt, "number of channel groups; must divide C")
      .range(1, std::numeric_limits<int32_t>::max())
      .attr_float("epsilon", kDefaultEpsilon, "added to the variance before the square root")
      .range(std::numeric_limits<float>::min(), 1e3)
      .input("x", dtypes, "(N, C, *spatial)")
      .input("scale", dtypes, "(C), dtype of x")
      .input("bias", dtypes, "(C), dtype of x")
      .output("y", dtypes, "shape and dtype of x")
      .type_combination({DT::kFloat32, DT::kFloat32, DT::kFloat32, DT::kFloat32})
      .type_combination({DT::kFloat16, DT::kFloat16, DT::kFloat16, DT::kFloat16})
      .type_combination({DT::kFloat64, DT::kFloat64, DT::kFloat64, DT::kFloat64})
      .shape_fn(shape_fn)
      .workspace_fn(workspace_bytes)
      .kernel(Backend::kCPU, forward_cpu)
      .differentiable_inputs({0, 1, 2})
      .backward(Backend::kCPU, backward_cpu);
  {
    AttributeMap ex;
    ex.set("num_groups", int64_t{4});
    ex.set("epsilon", 1e-5f);
    def.example({std::vector<int64_t>{2, 12, 5, 7}, std::vector<int64_t>{12}, std::vector<int64_t>{12}}, ex);
    ex.set("num_groups", int64_t{3});
    def.example({std::vector<int64_t>{1, 6, 5}, std::vector<int64_t>{6}, std::vector<int64_t>{6}}, ex);  // rank 3
  }
#ifdef GRAFT_WITH_CUDA
  const std::vector<std::vector<DT>> cuda_combos = {{DT::kFloat32, DT::kFloat32, DT::kFloat32, DT::kFloat32},
                                                    {DT::kFloat16, DT::kFloat16, DT::kFloat16, DT::kFloat16}};
  def.kernel(Backend::kCUDA, forward_cuda, cuda_combos).backward(Backend::kCUDA, backward_cuda, cuda_combos);
#endif
  return def;
}

// This folder's ops for register_graft_ops (ops/op_folder.h).
void append_group_norm_ops(FolderOps& out) {
  out.defs.push_back(define_group_norm());
}

}  // namespace graft
