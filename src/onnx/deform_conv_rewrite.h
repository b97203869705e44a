// ONNX's DeformConv (opset 19) read as graft's ModulatedDeformConv2d (ops/modulated_deform_conv2d,
// ai.onnx.contrib), ModelProto to ModelProto, before the importer reads the model. The two are the
// same operation: offsets as (dy, dx) per offset group and kernel tap, the mask per group and tap,
// bilinear samples whose corners outside the image read zero (ONNX's reference samples with
// GridSample, zeros padding, align_corners=1; graft's op follows mmcv and torchvision, which agree),
// channel c in offset group c / (C / offset_group). So the node is renamed and its inputs reordered:
//   DeformConv(X, W, offset[, B][, mask])  ->  ModulatedDeformConv2d(X, offset, mask, W[, B])
// with strides, pads, dilations, group and offset_group as stride, padding, dilation, groups and
// deform_groups. Without a mask, one of ones is made beside the node (ONNX's default):
//   mask = CastLike(ConstantOfShape(Shape(offset) / [1, 2, 1, 1], 1.0), offset).
// Pads that differ between the two sides of an axis: graft's op pads both by the smaller, and a Pad
// before it adds the rest to X (zeros, which samples read as they read the padding: the same sums).
// Refused, naming the node and attribute: a 1-D or 3-D DeformConv (graft's op is 2-D), negative
// pads, and a kernel_shape that W contradicts where W is a constant. Subgraphs are rewritten too. The rest of the model is copied unchanged.
#pragma once

#include "graft/status.h"

namespace onnx {
class ModelProto;
}

namespace graft {

// A default-domain op the importer reads as another op (for `graft ops`, which lists these beside the
// ops graft defines): DeformConv, as above.
struct ImportRewrite {
  const char* op_type;   // in ai.onnx
  int since_opset;
  const char* target;    // DOMAIN::NAME of the op it becomes
  const char* how;       // one line
};
const ImportRewrite& deform_conv_import_rewrite();

// Whether `model` has a default-domain DeformConv node in any graph.
bool has_deform_conv(const onnx::ModelProto& model);

// `in` with every DeformConv rewritten as above, into *out.
Status rewrite_deform_conv(const onnx::ModelProto& in, onnx::ModelProto* out);

}  // namespace graft
