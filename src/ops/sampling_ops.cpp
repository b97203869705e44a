// Schemas of the ONNX sampling ops RoiAlign (opset 10, 16) and GridSample (opset 16, 20). Kernels:
// src/backends/cpu/sampling.cpp, which also serves mmdeploy's MMCVRoiAlign and grid_sampler
// (ops/roi_align, ops/grid_sample).
#include <string>

#include "backends/cpu/sampling.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {
namespace {

using namespace infer;
const std::vector<DataType> kSampleFloats{kF32, kF16, kF64};

// Constant dims that disagree are an error; symbolic ones are checked by the kernel.
bool known_differ(const Dim& a, const Dim& b) { return a.is_const() && b.is_const() && a.value() != b.value(); }

// RoiAlign: X (N, C, H, W), rois (num_rois, 4), batch_indices (num_rois) int64 ->
// Y (num_rois, C, output_height, output_width).
Status infer_roi_align(InferContext& ctx) {
  if (ctx.num_inputs() != 3)
    return ctx.fail("takes 3 inputs (X, rois, batch_indices), got ", static_cast<uint64_t>(ctx.num_inputs()));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kSampleFloats));
  GRAFT_RETURN_IF_ERROR(require_input(ctx, 1));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 2, {kI64, kI32}));
  const DataType t = ctx.input(0).dtype;
  if (ctx.input(1).dtype != t)
    return ctx.fail("input 'rois' ('", ctx.node().inputs[1]->name, "') has dtype ", dtype_name(ctx.input(1).dtype),
                    " but X has ", dtype_name(t), "; they must match");
  GRAFT_ASSIGN_OR_RETURN(RoiAlignParams p, parse_roi_align_attrs(ctx.attrs(), ctx.opset()));
  GRAFT_ASSIGN_OR_RETURN(Shape x, ctx.input_shape(0));
  GRAFT_ASSIGN_OR_RETURN(Shape rois, ctx.input_shape(1));
  GRAFT_ASSIGN_OR_RETURN(Shape bi, ctx.input_shape(2));
  if (x.size() != 4) return ctx.fail("input X must have rank 4 (N, C, H, W), got ", shape_to_string(x));
  if (rois.size() != 2 || known_differ(rois[1], Dim(4)))
    return ctx.fail("input 'rois' must have shape (num_rois, 4), got ", shape_to_string(rois));
  if (bi.size() != 1) return ctx.fail("input 'batch_indices' must have shape (num_rois), got ", shape_to_string(bi));
  if (known_differ(rois[0], bi[0]))
    return ctx.fail("inputs 'rois' ", shape_to_string(rois), " and 'batch_indices' ", shape_to_string(bi),
                    " disagree on num_rois");
  // num_rois from whichever input knows it.
  const Dim k = rois[0].is_const() ? rois[0] : bi[0];
  ctx.set_output(0, TensorDesc(t, Shape{k, x[1], Dim(p.output_height), Dim(p.output_width)}));
  return Status::ok();
}

// GridSample: X (N, C, H, W) and grid (N, H_out, W_out, 2) -> Y (N, C, H_out, W_out); from opset 20
// also X (N, C, D, H, W) and grid (N, D_out, H_out, W_out, 3).
Status infer_grid_sample(InferContext& ctx) {
  if (ctx.num_inputs() != 2)
    return ctx.fail("takes 2 inputs (X, grid), got ", static_cast<uint64_t>(ctx.num_inputs()));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kSampleFloats));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, kSampleFloats));
  GRAFT_ASSIGN_OR_RETURN(GridSampleParams p, parse_grid_sample_attrs(ctx.attrs(), ctx.opset()));
  (void)p;
  GRAFT_ASSIGN_OR_RETURN(Shape x, ctx.input_shape(0));
  GRAFT_ASSIGN_OR_RETURN(Shape grid, ctx.input_shape(1));
  if (x.size() == 5 && ctx.opset() < 20)
    return ctx.fail("a 5-D input (volumetric sampling) needs opset 20; the model has opset ", ctx.opset());
  if (x.size() != 4 && x.size() != 5)
    return ctx.fail("input X must have rank 4 (N, C, H, W)", ctx.opset() >= 20 ? " or 5 (N, C, D, H, W)" : "",
                    ", got ", shape_to_string(x));
  const int64_t k = static_cast<int64_t>(x.size()) - 2;
  if (grid.size() != x.size() || known_differ(grid.back(), Dim(k)) || known_differ(grid[0], x[0]))
    return ctx.fail("input 'grid' must have shape (N, ", k == 2 ? "H_out, W_out" : "D_out, H_out, W_out", ", ", k,
                    ") with X's N; got grid ", shape_to_string(grid), " for X ", shape_to_string(x));
  Shape out{x[0].is_const() ? x[0] : grid[0], x[1]};
  for (size_t a = 1; a + 1 < grid.size(); ++a) out.push_back(grid[a]);
  ctx.set_output(0, TensorDesc(ctx.input(0).dtype, out));
  return Status::ok();
}

}  // namespace

void append_sampling_ops(std::vector<OpEntry>& out) {
  out.push_back(OpEntry{"GridSample", 16, infer_grid_sample, cpu::grid_sample});
  out.push_back(OpEntry{"RoiAlign", 10, infer_roi_align, cpu::roi_align});
}

}  // namespace graft
