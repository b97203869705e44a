// Multi-scale deformable attention (Deformable DETR, Zhu et al., arXiv 2010.04159; mmcv semantics)
// as graft custom ops. See README.md in this folder for the math, inputs, outputs and aliases.
#pragma once

#include "graft/op.h"

namespace graft {

// ai.onnx.contrib::MultiScaleDeformableAttention version "1": value (N,S,M,D), spatial_shapes (L,2),
// level_start_index (L), sampling_locations (N,Lq,M,L,P,2), attention_weights (N,Lq,M,L,P) ->
// output (N,Lq,M*D). Optional int attribute `im2col_step` (mmcv's; accepted and ignored). Float
// inputs float32/float16/float64 (CPU) and float32/float16 (CUDA); index inputs int64 or int32.
// Forward and backward (gradients for value, sampling_locations, attention_weights).
OpDef define_ms_deform_attn();

// TensorRT OSS's MultiscaleDeformableAttnPlugin_TRT layout (version "1", domain ai.onnx.contrib,
// which TensorRT ignores): int32 spatial_shapes and level_start_index, output (N,Lq,M,D). Same
// kernels as define_ms_deform_attn().
OpDef define_ms_deform_attn_trt();

// mmdeploy exports the op as mmdeploy::MMCVMultiScaleDeformableAttention (same inputs and output
// as MultiScaleDeformableAttention); append_ms_deform_attn_ops adds that alias.
inline constexpr const char* kMsDeformAttnMmdeployDomain = "mmdeploy";
inline constexpr const char* kMsDeformAttnMmdeployName = "MMCVMultiScaleDeformableAttention";

}  // namespace graft
