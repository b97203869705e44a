// Every op case table the harness runs. Adding an op: write cases_<op>.cpp and add one line here;
// OpCoverage.EveryRegisteredOpHasCases (custom ops) and EveryBuiltinOpHasCasesOrIsListedAsPending
// (builtin ops) fail until you do.
#include "harness.h"

namespace graft::optest {

std::vector<OpCaseTable> all_case_tables() {
  std::vector<OpCaseTable> tables = {
      custom_layer_cases(),
      efficient_nms_cases(),
      batched_nms_dynamic_trt_cases(),
      trt_batched_nms_cases(),
      group_norm_cases(),
      modulated_deform_conv2d_cases(),
      ms_deform_attn_cases(),
      ms_deform_attn_trt_cases(),
      mmcv_roi_align_cases(),
      roi_align_trt_cases(),
      grid_sampler_cases(),
      // Builtin ops (ONNX, graft.internal).
      mod_cases(),
      onnx_roi_align_cases(),
  };
  for (auto family : {unary_elementwise_cases, binary_elementwise_cases, nn_cases, reduce_cases, shape_cases,
                       misc_cases, internal_conv_cases, indexing_cases, math_cases,
                       resize_cases, cast_sample_cases, integer_cases, recurrent_cases, quantized_cases,
                       mel_tfidf_cases, data_dependent_cases, random_cases, lp_norm_cases, roi_pool_cases,
                       internal_view_cases, container_cases, control_flow_cases})
    for (OpCaseTable& t : family()) tables.push_back(std::move(t));
  return tables;
}

}  // namespace graft::optest
