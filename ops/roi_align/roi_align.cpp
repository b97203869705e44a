// MMCVRoiAlign and ROIAlign_TRT definitions (README.md has the math). Both run the kernels ONNX's
// RoiAlign runs (src/ops/sampling): roi_align.cpp's reference on the CPU, roi_align.cu's kernel on
// the GPU; MMCVRoiAlign with mmcv's input layout and max pooling, ROIAlign_TRT with ONNX's
// semantics and TensorRT's integer-coded attributes.
#include "ops/roi_align/roi_align.h"
#include "ops/op_folder.h"

#include <limits>

#include "ops/sampling/sampling.h"

namespace graft {
namespace {

constexpr const char* kName = "MMCVRoiAlign";
constexpr const char* kTrtName = "ROIAlign_TRT";
constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();

// The attributes both ops name alike: output size, sampling ratio, spatial scale.
Result<RoiAlignParams> common_params_of(const AttributeMap& a) {
  RoiAlignParams p;
  GRAFT_ASSIGN_OR_RETURN(p.output_height, a.get_int("output_height", 1));
  GRAFT_ASSIGN_OR_RETURN(p.output_width, a.get_int("output_width", 1));
  GRAFT_ASSIGN_OR_RETURN(p.sampling_ratio, a.get_int("sampling_ratio", 0));
  GRAFT_ASSIGN_OR_RETURN(float scale, a.get_float("spatial_scale", 1.0f));
  p.spatial_scale = scale;
  return p;
}

Result<RoiAlignParams> params_of(const AttributeMap& a) {
  GRAFT_ASSIGN_OR_RETURN(RoiAlignParams p, common_params_of(a));
  GRAFT_ASSIGN_OR_RETURN(std::string mode, a.get_string("mode", "avg"));
  GRAFT_ASSIGN_OR_RETURN(int64_t aligned, a.get_int("aligned", 1));
  p.pool = mode == "max" ? RoiAlignParams::Pool::kMax : RoiAlignParams::Pool::kAvg;
  p.max_of_weighted_corners = false;  // mmcv: the largest interpolated sample
  p.half_pixel = aligned != 0;
  return p;
}

// ROIAlign_TRT: ONNX's RoiAlign (max of weighted corners included, as the plugin follows the ONNX
// specification) with coordinate_transformation_mode 1 = half_pixel, 0 = output_half_pixel, and
// mode 1 = avg, 0 = max.
Result<RoiAlignParams> trt_params_of(const AttributeMap& a) {
  GRAFT_ASSIGN_OR_RETURN(RoiAlignParams p, common_params_of(a));
  GRAFT_ASSIGN_OR_RETURN(int64_t mode, a.get_int("mode", 1));
  GRAFT_ASSIGN_OR_RETURN(int64_t shift, a.get_int("coordinate_transformation_mode", 1));
  p.pool = mode == 0 ? RoiAlignParams::Pool::kMax : RoiAlignParams::Pool::kAvg;
  p.max_of_weighted_corners = true;
  p.half_pixel = shift != 0;
  return p;
}

// Either op on the CPU. `packed`: mmcv's rois (K, 5) with the batch index first, else rois (K, 4)
// and batch indices as input 2.
template <const char* const* kOp, Result<RoiAlignParams> (*Params)(const AttributeMap&), bool kPacked>
Status forward_cpu(const KernelContext& ctx) {
  const size_t want = kPacked ? 2 : 3;
  GRAFT_RETURN_IF_ERROR(check_kernel_io(ctx, *kOp, want, 1));
  GRAFT_ASSIGN_OR_RETURN(RoiAlignParams p, Params(*ctx.attrs));
  return cpu::roi_align_run(*kOp, p, ctx.inputs[0], ctx.inputs[1], kPacked ? nullptr : &ctx.inputs[2], ctx.outputs[0]);
}

// The input's gradient on the CPU (rois and batch indices get none, as in torchvision and mmcv):
// inputs are the forward's and the output's gradient, the output the input's gradient.
template <const char* const* kOp, Result<RoiAlignParams> (*Params)(const AttributeMap&), bool kPacked>
Status backward_cpu(const KernelContext& ctx) {
  const size_t want = kPacked ? 3 : 4;
  GRAFT_RETURN_IF_ERROR(check_kernel_io(ctx, *kOp, want, 1, "backward kernel"));
  GRAFT_ASSIGN_OR_RETURN(RoiAlignParams p, Params(*ctx.attrs));
  return cpu::roi_align_backward_run(*kOp, p, ctx.inputs[0], ctx.inputs[1], kPacked ? nullptr : &ctx.inputs[2],
                                     ctx.inputs[want - 1], ctx.outputs[0]);
}

#ifdef GRAFT_WITH_CUDA
// Both ops on the GPU: the kernel ONNX's RoiAlign runs there. `packed`: rois (K, 5) with the batch
// index first (mmcv), else rois (K, 4) and batch indices as input 2. As for the builtin, a roi whose
// batch index is outside [0, N) or whose coordinates are not finite gives zeros on the GPU, where
// the CPU reference reports it.
// The kernels' arguments for x (N, C, H, W) and rois (K, cols).
cuda::k::RoiAlignArgs roi_align_args(const RoiAlignParams& p, const TensorView& x, const TensorView& rois, bool packed) {
  cuda::k::RoiAlignArgs a;
  a.n = x.dims[0], a.c = x.dims[1], a.h = x.dims[2], a.w = x.dims[3], a.k = rois.dims[0];
  a.oh = p.output_height, a.ow = p.output_width, a.sampling_ratio = p.sampling_ratio;
  a.spatial_scale = static_cast<float>(p.spatial_scale);
  a.half_pixel = p.half_pixel;
  a.max_mode = p.pool == RoiAlignParams::Pool::kMax;
  a.max_of_weighted_corners = p.max_of_weighted_corners;
  a.packed_rois = packed;
  return a;
}

Status roi_align_cuda(const char* op, const RoiAlignParams& p, const KernelContext& ctx, bool packed) {
  GRAFT_RETURN_IF_ERROR(check_kernel_io(ctx, op, packed ? 2 : 3, 1));
  const TensorView &x = ctx.inputs[0], &rois = ctx.inputs[1], &y = ctx.outputs[0];
  if (x.rank() != 4 || rois.rank() != 2 || rois.dims[1] != (packed ? 5 : 4))
    return error(StatusCode::kInvalidArgument, op, ": input must be (N, C, H, W) and rois (K, ", packed ? 5 : 4, ")");
  const cuda::k::RoiAlignArgs a = roi_align_args(p, x, rois, packed);
  if (y.dims != std::vector<int64_t>{a.k, a.c, a.oh, a.ow})
    return error(StatusCode::kInternal, op, ": output shape differs from (K, C, output_height, output_width)");
  const void* batch_idx = packed ? nullptr : ctx.inputs[2].data;
  const bool idx64 = !packed && ctx.inputs[2].dtype == DataType::kInt64;
  const cudaError_t e =
      cuda::k::launch_roi_align(static_cast<cuda::k::KType>(static_cast<int>(x.dtype)), x.data, rois.data, batch_idx,
                                idx64, y.data, a, static_cast<cudaStream_t>(ctx.stream));
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return error(StatusCode::kRuntimeError, op, ": CUDA kernel launch failed: ", cudaGetErrorName(e), " (",
                 cudaGetErrorString(e), ")");
  }
  return Status::ok();
}

template <const char* const* kOp, Result<RoiAlignParams> (*Params)(const AttributeMap&), bool kPacked>
Status forward_cuda(const KernelContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(RoiAlignParams p, Params(*ctx.attrs));
  return roi_align_cuda(*kOp, p, ctx, kPacked);
}

// The input's gradient on the GPU, by atomic adds into a float accumulator.
template <const char* const* kOp, Result<RoiAlignParams> (*Params)(const AttributeMap&), bool kPacked>
Status backward_cuda(const KernelContext& ctx) {
  const size_t want = kPacked ? 3 : 4;
  GRAFT_RETURN_IF_ERROR(check_kernel_io(ctx, *kOp, want, 1, "backward kernel"));
  GRAFT_ASSIGN_OR_RETURN(RoiAlignParams p, Params(*ctx.attrs));
  const TensorView &x = ctx.inputs[0], &rois = ctx.inputs[1], &dy = ctx.inputs[want - 1], &dx = ctx.outputs[0];
  if (x.rank() != 4 || rois.rank() != 2 || rois.dims[1] != (kPacked ? 5 : 4) || dx.dims != x.dims ||
      dy.dims != std::vector<int64_t>{rois.dims[0], x.dims[1], p.output_height, p.output_width})
    return error(StatusCode::kInvalidArgument, *kOp, ": backward: input must be (N, C, H, W), rois (K, ",
                 kPacked ? 5 : 4, "), the output's gradient (K, C, output_height, output_width) and the input's "
                 "gradient the input's shape");
  const cuda::k::RoiAlignArgs a = roi_align_args(p, x, rois, kPacked);
  const void* batch_idx = kPacked ? nullptr : ctx.inputs[2].data;
  const bool idx64 = !kPacked && ctx.inputs[2].dtype == DataType::kInt64;
  const cudaError_t e = cuda::k::launch_roi_align_backward(static_cast<cuda::k::KType>(static_cast<int>(x.dtype)),
                                                           x.data, rois.data, batch_idx, idx64, dy.data, dx.data, a,
                                                           static_cast<cudaStream_t>(ctx.stream));
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return error(StatusCode::kRuntimeError, *kOp, ": CUDA backward kernel launch failed: ", cudaGetErrorName(e), " (",
                 cudaGetErrorString(e), ")");
  }
  return Status::ok();
}
#endif

// (K, C, output_height, output_width) from input `x_name` (N, C, H, W) and rois (K, cols), whose
// columns hold `columns`.
Status roi_shape(ShapeContext& c, const char* op, const char* x_name, int64_t cols, const char* columns) {
  if (c.input_rank(0) != 4)
    return error(StatusCode::kInvalidModel, op, ": input '", x_name, "' must have rank 4 (N, C, H, W), got rank ",
                 c.input_rank(0));
  if (c.input_rank(1) != 2)
    return error(StatusCode::kInvalidModel, op, ": input 'rois' must have rank 2 (K, ", cols, "), got rank ",
                 c.input_rank(1));
  if (auto have = c.input_dim(1, 1).constant_value(); have && *have != cols)
    return error(StatusCode::kInvalidModel, op, ": input 'rois' must have ", cols, " columns (", columns, "), got ",
                 *have);
  GRAFT_ASSIGN_OR_RETURN(int64_t oh, c.attrs().get_int("output_height", 1));
  GRAFT_ASSIGN_OR_RETURN(int64_t ow, c.attrs().get_int("output_width", 1));
  c.set_output(0, {c.input_dim(1, 0), c.input_dim(0, 1), c.constant(oh), c.constant(ow)});
  return Status::ok();
}

Status shape_fn(ShapeContext& c) { return roi_shape(c, kName, "input", 5, "batch_index, x1, y1, x2, y2"); }

Status trt_shape_fn(ShapeContext& c) {
  if (c.input_rank(2) != 1)
    return error(StatusCode::kInvalidModel, kTrtName, ": input 'batch_indices' must have rank 1 (K), got rank ",
                 c.input_rank(2));
  return roi_shape(c, kTrtName, "X", 4, "x1, y1, x2, y2");
}

// The examples' shared attributes: a 2x3 output grid at half scale, two samples per bin and axis.
AttributeMap example_attrs() {
  AttributeMap ex;
  ex.set("output_height", int64_t{2});
  ex.set("output_width", int64_t{3});
  ex.set("spatial_scale", 0.5f);
  ex.set("sampling_ratio", int64_t{2});
  return ex;
}

}  // namespace

OpDef define_mmcv_roi_align() {
  using DT = DataType;
  OpDef def(kName);
  def.domain("mmdeploy")
      .version("1")
      .doc("RoIAlign (Mask R-CNN, arXiv 1703.06870) with mmcv's semantics: per roi and output bin, the average (or "
           "maximum) of sampling_ratio x sampling_ratio bilinear samples of the feature map (adaptive when 0); "
           "rois are (batch_index, x1, y1, x2, y2) in input-image coordinates times spatial_scale.")
      .attr_int("output_height", int64_t{1}, "pooled output height").range(1, kIntMax)
      .attr_int("output_width", int64_t{1}, "pooled output width").range(1, kIntMax)
      .attr_float("spatial_scale", 1.0f, "scale from roi coordinates to feature-map pixels").range(1e-9, 1e9)
      .attr_int("sampling_ratio", int64_t{0}, "samples per bin and axis; 0: ceil(roi size / output size)")
      .range(0, kIntMax)
      .attr_string("mode", std::string("avg"), "mmcv's pool_mode: avg or max").allowed(std::vector<std::string>{"avg", "max"})
      .attr_int("aligned", int64_t{1}, "1: shift rois by -0.5 pixel (pixel centres); 0: legacy, rois at least 1x1")
      .allowed(std::vector<int64_t>{0, 1})
      .input("input", {DT::kFloat32, DT::kFloat16, DT::kFloat64}, "(N, C, H, W) feature map")
      .input("rois", {DT::kFloat32, DT::kFloat16, DT::kFloat64}, "(K, 5): batch_index, x1, y1, x2, y2")
      .output("output", {DT::kFloat32, DT::kFloat16, DT::kFloat64}, "(K, C, output_height, output_width)");
  for (DT t : {DT::kFloat32, DT::kFloat16, DT::kFloat64}) def.type_combination({t, t, t});
  def.shape_fn(shape_fn)
      .kernel(Backend::kCPU, forward_cpu<&kName, params_of, true>)
      .differentiable_inputs({0})
      .backward(Backend::kCPU, backward_cpu<&kName, params_of, true>);
#ifdef GRAFT_WITH_CUDA
  const std::vector<std::vector<DT>> gpu = {{DT::kFloat32, DT::kFloat32, DT::kFloat32},
                                            {DT::kFloat16, DT::kFloat16, DT::kFloat16}};
  def.kernel(Backend::kCUDA, forward_cuda<&kName, params_of, true>, gpu)
      .backward(Backend::kCUDA, backward_cuda<&kName, params_of, true>, gpu);
#endif
  // Two images, three rois (one partly outside the map); N = 2 differs from K = 3.
  const AttributeMap ex = example_attrs();
  def.example({std::vector<int64_t>{2, 3, 8, 9}, std::vector<int64_t>{3, 5}}, ex,
              {{1, Tensor::from_doubles(DT::kFloat32, {3, 5},
                                        {0, 1.5, 2.0, 11.0, 9.5, 1, 0.0, 0.0, 17.0, 15.0, 1, -3.0, 4.0, 6.5, 20.0})}});
  return def;
}

OpDef define_roi_align_trt() {
  using DT = DataType;
  OpDef def(kTrtName);
  def.domain("ai.onnx.contrib")
      .version("1")
      .doc("TensorRT's ROIAlign plugin: ONNX's RoiAlign (Mask R-CNN, arXiv 1703.06870) with integer-coded attributes. "
           "Per roi and output bin, the average (or maximum) of bilinear samples of X[batch_indices[k]]; rois are "
           "(x1, y1, x2, y2) in input-image coordinates times spatial_scale.")
      .attr_int("coordinate_transformation_mode", int64_t{1},
                "1: shift rois by -0.5 pixel (ONNX half_pixel); 0: no shift, rois at least 1x1 (output_half_pixel)")
      .allowed(std::vector<int64_t>{0, 1})
      .attr_int("mode", int64_t{1}, "1: average pooling; 0: max pooling (ONNX's: the largest weighted corner term)")
      .allowed(std::vector<int64_t>{0, 1})
      .attr_int("output_height", int64_t{1}, "pooled output height").range(1, kIntMax)
      .attr_int("output_width", int64_t{1}, "pooled output width").range(1, kIntMax)
      .attr_int("sampling_ratio", int64_t{0}, "samples per bin and axis; 0: ceil(roi size / output size)")
      .range(0, kIntMax)
      .attr_float("spatial_scale", 1.0f, "scale from roi coordinates to feature-map pixels").range(1e-9, 1e9)
      .input("X", {DT::kFloat32, DT::kFloat16, DT::kFloat64}, "(N, C, H, W) feature map")
      .input("rois", {DT::kFloat32, DT::kFloat16, DT::kFloat64}, "(K, 4): x1, y1, x2, y2")
      .input("batch_indices", {DT::kInt32, DT::kInt64}, "(K): the image of each roi")
      .output("Y", {DT::kFloat32, DT::kFloat16, DT::kFloat64}, "(K, C, output_height, output_width)");
  for (DT t : {DT::kFloat32, DT::kFloat16, DT::kFloat64})
    for (DT i : {DT::kInt32, DT::kInt64}) def.type_combination({t, t, i, t});
  def.shape_fn(trt_shape_fn)
      .kernel(Backend::kCPU, forward_cpu<&kTrtName, trt_params_of, false>)
      .differentiable_inputs({0})
      .backward(Backend::kCPU, backward_cpu<&kTrtName, trt_params_of, false>);
#ifdef GRAFT_WITH_CUDA
  std::vector<std::vector<DT>> gpu;
  for (DT t : {DT::kFloat32, DT::kFloat16})
    for (DT i : {DT::kInt32, DT::kInt64}) gpu.push_back({t, t, i, t});
  def.kernel(Backend::kCUDA, forward_cuda<&kTrtName, trt_params_of, false>, gpu)
      .backward(Backend::kCUDA, backward_cuda<&kTrtName, trt_params_of, false>, gpu);
#endif
  // Two images, three rois (one partly outside the map); max pooling and the unshifted mode in a
  // second example.
  const AttributeMap ex = example_attrs();
  const Tensor rois =
      Tensor::from_doubles(DT::kFloat32, {3, 4}, {1.5, 2.0, 11.0, 9.5, 0.0, 0.0, 17.0, 15.0, -3.0, 4.0, 6.5, 20.0});
  const Tensor idx = Tensor::from_doubles(DT::kInt32, {3}, {0, 1, 1});
  def.example({std::vector<int64_t>{2, 3, 8, 9}, std::vector<int64_t>{3, 4}, std::vector<int64_t>{3}}, ex,
              {{1, rois}, {2, idx}});
  AttributeMap max_ex = ex;
  max_ex.set("mode", int64_t{0});
  max_ex.set("coordinate_transformation_mode", int64_t{0});
  max_ex.set("sampling_ratio", int64_t{0});
  def.example({std::vector<int64_t>{2, 3, 8, 9}, std::vector<int64_t>{3, 4}, std::vector<int64_t>{3}}, max_ex,
              {{1, rois}, {2, idx}});
  return def;
}

// This folder's ops for register_graft_ops (ops/op_folder.h).
void append_roi_align_ops(FolderOps& out) {
  out.defs.push_back(define_mmcv_roi_align());
  out.defs.push_back(define_roi_align_trt());
}

}  // namespace graft
