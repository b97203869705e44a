// Modulated deformable convolution (DCNv2: X. Zhu et al., "Deformable ConvNets v2: More Deformable,
// Better Results", arXiv 1811.11168; mmcv semantics) as a graft custom op. See README.md in this
// folder for the math, inputs, outputs, attributes and aliases.
#pragma once

#include "graft/op.h"

namespace graft {

// ai.onnx.contrib::ModulatedDeformConv2d version "1": x (N,C,H,W), offset (N,2*dg*kh*kw,Ho,Wo),
// mask (N,dg*kh*kw,Ho,Wo), weight (Co,C/groups,kh,kw), optional bias (Co) -> output (N,Co,Ho,Wo).
// Attributes stride, padding, dilation (2 ints each, (h, w)), groups, deform_groups. float32/float16/
// float64 on the CPU, float32/float16 on CUDA. Forward and backward (gradients for x, offset, mask,
// weight and bias).
OpDef define_modulated_deform_conv2d();

// mmdeploy exports mmcv's op as mmdeploy::MMCVModulatedDeformConv2d with the same inputs and
// attribute names (its TensorRT plugin has that name too); append_modulated_deform_conv2d_ops adds that alias.
inline constexpr const char* kModulatedDeformConvMmdeployDomain = "mmdeploy";
inline constexpr const char* kModulatedDeformConvMmdeployName = "MMCVModulatedDeformConv2d";

}  // namespace graft
