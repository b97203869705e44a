// grid_sampler definition (README.md has the math). The kernel is the one ONNX's GridSample runs
// (src/ops/sampling/grid_sample.cpp), in PyTorch's order of padding and rounding.
#include "ops/grid_sample/grid_sample.h"
#include "ops/op_folder.h"

#include "ops/sampling/sampling.h"

namespace graft {
namespace {

constexpr const char* kName = "grid_sampler";

Result<GridSampleParams> params_of(const AttributeMap& a) {
  using P = GridSampleParams;
  P p;
  GRAFT_ASSIGN_OR_RETURN(int64_t mode, a.get_int("interpolation_mode", 0));
  GRAFT_ASSIGN_OR_RETURN(int64_t pad, a.get_int("padding_mode", 0));
  GRAFT_ASSIGN_OR_RETURN(int64_t ac, a.get_int("align_corners", 0));
  p.mode = mode == 1 ? P::Mode::kNearest : mode == 2 ? P::Mode::kCubic : P::Mode::kLinear;
  p.padding = pad == 1 ? P::Padding::kBorder : pad == 2 ? P::Padding::kReflection : P::Padding::kZeros;
  p.align_corners = ac != 0;
  p.torch_order = true;
  return p;
}

Status forward_cpu(const KernelContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_kernel_io(ctx, kName, 2, 1));
  if (ctx.inputs[0].rank() != 4)
    return error(StatusCode::kInvalidArgument, kName, ": input 'input' must have rank 4 (N, C, H, W)");
  GRAFT_ASSIGN_OR_RETURN(GridSampleParams p, params_of(*ctx.attrs));
  return cpu::grid_sample_run(kName, p, ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]);
}

// Inputs (input, grid, the output's gradient); outputs the gradients of input and grid.
Status backward_cpu(const KernelContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_kernel_io(ctx, kName, 3, 2, "backward kernel (input, grid, the output's gradient)"));
  GRAFT_ASSIGN_OR_RETURN(GridSampleParams p, params_of(*ctx.attrs));
  return cpu::grid_sample_backward_run(kName, p, ctx.inputs[0], ctx.inputs[1], ctx.inputs[2], ctx.outputs[0],
                                       ctx.outputs[1]);
}

#ifdef GRAFT_WITH_CUDA
// On the GPU: the kernel ONNX's GridSample runs there (src/ops/sampling/grid_sample.cu), in PyTorch's
// order of padding and rounding, computing in float (the CPU reference computes in double).
Status forward_cuda(const KernelContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_kernel_io(ctx, kName, 2, 1));
  const TensorView &x = ctx.inputs[0], &grid = ctx.inputs[1], &y = ctx.outputs[0];
  if (x.rank() != 4 || grid.rank() != 4 || grid.dims[0] != x.dims[0] || grid.dims[3] != 2)
    return error(StatusCode::kInvalidArgument, kName, ": input must be (N, C, H, W) and grid (N, H_out, W_out, 2)");
  if (y.dims != std::vector<int64_t>{x.dims[0], x.dims[1], grid.dims[1], grid.dims[2]})
    return error(StatusCode::kInternal, kName, ": output shape differs from (N, C, H_out, W_out)");
  GRAFT_ASSIGN_OR_RETURN(GridSampleParams p, params_of(*ctx.attrs));
  const cudaError_t e = cuda::k::launch_grid_sample(static_cast<cuda::k::KType>(static_cast<int>(x.dtype)), x.data,
                                                    grid.data, y.data, cuda::k::grid_sample_args(p, x.dims, grid.dims),
                                                    static_cast<cudaStream_t>(ctx.stream));
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return error(StatusCode::kRuntimeError, kName, ": CUDA kernel launch failed: ", cudaGetErrorName(e), " (",
                 cudaGetErrorString(e), ")");
  }
  return Status::ok();
}

// The gradients on the GPU (float32, float16): dx by atomic adds into a float accumulator.
Status backward_cuda(const KernelContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_kernel_io(ctx, kName, 3, 2, "backward kernel (input, grid, the output's gradient)"));
  const TensorView &x = ctx.inputs[0], &grid = ctx.inputs[1], &dy = ctx.inputs[2];
  const TensorView &dx = ctx.outputs[0], &dgrid = ctx.outputs[1];
  if (x.rank() != 4 || grid.rank() != 4 || grid.dims[0] != x.dims[0] || grid.dims[3] != 2)
    return error(StatusCode::kInvalidArgument, kName, ": input must be (N, C, H, W) and grid (N, H_out, W_out, 2)");
  if (dy.dims != std::vector<int64_t>{x.dims[0], x.dims[1], grid.dims[1], grid.dims[2]} || dx.dims != x.dims ||
      dgrid.dims != grid.dims)
    return error(StatusCode::kInvalidArgument, kName, ": backward: the gradients' shapes differ from the tensors'");
  GRAFT_ASSIGN_OR_RETURN(GridSampleParams p, params_of(*ctx.attrs));
  const cudaError_t e = cuda::k::launch_grid_sample_backward(
      static_cast<cuda::k::KType>(static_cast<int>(x.dtype)), x.data, grid.data, dy.data, dx.data, dgrid.data,
      cuda::k::grid_sample_args(p, x.dims, grid.dims), static_cast<cudaStream_t>(ctx.stream));
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return error(StatusCode::kRuntimeError, kName, ": CUDA backward kernel launch failed: ", cudaGetErrorName(e), " (",
                 cudaGetErrorString(e), ")");
  }
  return Status::ok();
}
#endif

Status shape_fn(ShapeContext& c) {
  if (c.input_rank(0) != 4)
    return error(StatusCode::kInvalidModel, kName, ": input 'input' must have rank 4 (N, C, H, W), got rank ",
                 c.input_rank(0));
  if (c.input_rank(1) != 4)
    return error(StatusCode::kInvalidModel, kName, ": input 'grid' must have rank 4 (N, H_out, W_out, 2), got rank ",
                 c.input_rank(1));
  if (auto two = c.input_dim(1, 3).constant_value(); two && *two != 2)
    return error(StatusCode::kInvalidModel, kName, ": input 'grid' must end in a dimension of 2 (x, y), got ", *two);
  const auto n = c.input_dim(0, 0).constant_value(), gn = c.input_dim(1, 0).constant_value();
  if (n && gn && *n != *gn)
    return error(StatusCode::kInvalidModel, kName, ": input 'grid' has batch ", *gn, " but 'input' has ", *n);
  c.set_output(0, {c.input_dim(0, 0), c.input_dim(0, 1), c.input_dim(1, 1), c.input_dim(1, 2)});
  return Status::ok();
}

}  // namespace

OpDef define_grid_sampler() {
  using DT = DataType;
  OpDef def(kName);
  def.domain("mmdeploy")
      .version("1")
      .doc("PyTorch's grid_sample (Spatial Transformer Networks, arXiv 1506.02025) as mmdeploy exports it: samples "
           "the input at the normalized (x, y) locations of grid by bilinear, nearest or bicubic interpolation, "
           "with zeros, border or reflection padding.")
      .attr_int("interpolation_mode", int64_t{0}, "0 bilinear, 1 nearest, 2 bicubic").allowed(std::vector<int64_t>{0, 1, 2})
      .attr_int("padding_mode", int64_t{0}, "0 zeros, 1 border, 2 reflection").allowed(std::vector<int64_t>{0, 1, 2})
      .attr_int("align_corners", int64_t{0}, "1: -1 and 1 are the centres of the corner pixels; 0: their outer edges")
      .allowed(std::vector<int64_t>{0, 1})
      .input("input", {DT::kFloat32, DT::kFloat16, DT::kFloat64}, "(N, C, H, W)")
      .input("grid", {DT::kFloat32, DT::kFloat16, DT::kFloat64}, "(N, H_out, W_out, 2): (x, y) in [-1, 1]")
      .output("output", {DT::kFloat32, DT::kFloat16, DT::kFloat64}, "(N, C, H_out, W_out)");
  for (DT t : {DT::kFloat32, DT::kFloat16, DT::kFloat64}) def.type_combination({t, t, t});
  def.shape_fn(shape_fn).kernel(Backend::kCPU, forward_cpu).differentiable_inputs({0, 1}).backward(Backend::kCPU, backward_cpu);
#ifdef GRAFT_WITH_CUDA
  const std::vector<std::vector<DT>> gpu = {{DT::kFloat32, DT::kFloat32, DT::kFloat32},
                                            {DT::kFloat16, DT::kFloat16, DT::kFloat16}};
  def.kernel(Backend::kCUDA, forward_cuda, gpu).backward(Backend::kCUDA, backward_cuda, gpu);
#endif
  // The grid a little past [-1, 1], so that some samples fall outside the input.
  def.example({std::vector<int64_t>{2, 3, 5, 6}, std::vector<int64_t>{2, 4, 3, 2}}).example_range(1, -1.2, 1.2);
  return def;
}

// This folder's ops for register_graft_ops (ops/op_folder.h).
void append_grid_sample_ops(FolderOps& out) {
  out.defs.push_back(define_grid_sampler());
}

}  // namespace graft
