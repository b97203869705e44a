// MMCVRoiAlign definition (README.md has the math). The kernel is the one ONNX's RoiAlign runs
// (src/backends/cpu/sampling.cpp) with mmcv's input layout and max pooling.
#include "ops/roi_align/roi_align.h"

#include <limits>

#include "backends/cpu/sampling.h"

namespace graft {
namespace {

constexpr const char* kName = "MMCVRoiAlign";
constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();

Result<RoiAlignParams> params_of(const AttributeMap& a) {
  RoiAlignParams p;
  GRAFT_ASSIGN_OR_RETURN(p.output_height, a.get_int("output_height", 1));
  GRAFT_ASSIGN_OR_RETURN(p.output_width, a.get_int("output_width", 1));
  GRAFT_ASSIGN_OR_RETURN(p.sampling_ratio, a.get_int("sampling_ratio", 0));
  GRAFT_ASSIGN_OR_RETURN(float scale, a.get_float("spatial_scale", 1.0f));
  GRAFT_ASSIGN_OR_RETURN(std::string mode, a.get_string("mode", "avg"));
  GRAFT_ASSIGN_OR_RETURN(int64_t aligned, a.get_int("aligned", 1));
  p.spatial_scale = scale;
  p.pool = mode == "max" ? RoiAlignParams::Pool::kMax : RoiAlignParams::Pool::kAvg;
  p.max_of_weighted_corners = false;  // mmcv: the largest interpolated sample
  p.half_pixel = aligned != 0;
  return p;
}

Status forward_cpu(const KernelContext& ctx) {
  if (ctx.inputs.size() != 2 || ctx.outputs.size() != 1)
    return error(StatusCode::kInvalidArgument, kName, ": kernel expects 2 inputs and 1 output");
  GRAFT_ASSIGN_OR_RETURN(RoiAlignParams p, params_of(*ctx.attrs));
  return cpu::roi_align_run(kName, p, ctx.inputs[0], ctx.inputs[1], nullptr, ctx.outputs[0]);
}

Status shape_fn(ShapeContext& c) {
  if (c.input_rank(0) != 4)
    return error(StatusCode::kInvalidModel, kName, ": input 'input' must have rank 4 (N, C, H, W), got rank ",
                 c.input_rank(0));
  if (c.input_rank(1) != 2)
    return error(StatusCode::kInvalidModel, kName, ": input 'rois' must have rank 2 (K, 5), got rank ",
                 c.input_rank(1));
  if (auto cols = c.input_dim(1, 1).constant_value(); cols && *cols != 5)
    return error(StatusCode::kInvalidModel, kName,
                 ": input 'rois' must have 5 columns (batch_index, x1, y1, x2, y2), got ", *cols);
  GRAFT_ASSIGN_OR_RETURN(int64_t oh, c.attrs().get_int("output_height", 1));
  GRAFT_ASSIGN_OR_RETURN(int64_t ow, c.attrs().get_int("output_width", 1));
  c.set_output(0, {c.input_dim(1, 0), c.input_dim(0, 1), c.constant(oh), c.constant(ow)});
  return Status::ok();
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
  def.shape_fn(shape_fn).kernel(Backend::kCPU, forward_cpu);
  // Two images, three rois (one partly outside the map); N = 2 differs from K = 3.
  AttributeMap ex;
  ex.set("output_height", int64_t{2});
  ex.set("output_width", int64_t{3});
  ex.set("spatial_scale", 0.5f);
  ex.set("sampling_ratio", int64_t{2});
  def.example({std::vector<int64_t>{2, 3, 8, 9}, std::vector<int64_t>{3, 5}}, ex,
              {{1, Tensor::from_doubles(DT::kFloat32, {3, 5},
                                        {0, 1.5, 2.0, 11.0, 9.5, 1, 0.0, 0.0, 17.0, 15.0, 1, -3.0, 4.0, 6.5, 20.0})}});
  return def;
}

}  // namespace graft
