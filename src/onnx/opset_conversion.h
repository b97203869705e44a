// Opset conversion on import. graft's op schemas implement the default-domain (ai.onnx) operators
// of opsets kMinOpset..kMaxOpset (importer.h). A model of an older opset (1..kMinOpset-1) is
// converted to kMinOpset, ModelProto to ModelProto, before the importer reads it:
// - by ONNX's own version converter (libonnx, onnx::version_conversion), whose adapters cover most
//   steps (consumed_inputs, Reshape's shape attribute, Slice/TopK attributes to inputs, Upsample to
//   Resize, Scatter to ScatterElements, BatchNormalization's is_test/spatial, ...);
// - with graft's own adapters where that converter falls short or is wrong: the legacy
//   broadcast/axis attributes of the binary ops (opset < 7; the converter's axis arithmetic is
//   wrong and it has none for And/Or/Xor/Equal/Greater/Less), Gemm's broadcast, Reshape-1..4
//   (its shape constant had no dims), Pad-1 (paddings) and Pad-2 (the fill value typed like the
//   data, its default), Clip-1..10 (min/max typed like the data), Cast-1 (`to` as a string),
//   Upsample-1 (bilinear), Resize-10 (the asymmetric coordinates and floor rounding Resize-10
//   and Upsample define, which Resize-11 must be told), PRelu-1..6 (a 1-D slope is per channel)
//   and Dropout-1..9 (refused when its mask, whose type changes at 10, is read).
// Large weights do not go through the converter (ONNX's IR would drop external data and copy
// them twice); they get their contents back afterwards.
// Nodes ONNX does not know (custom domains, ops newer than libonnx) pass through unchanged; the
// importer resolves them as usual. A model that cannot be converted is refused (kUnsupported) with a
// message naming the opset, the op, the node and the step that failed. No exception leaves here.
#pragma once

#include <cstdint>

#include "graft/status.h"

namespace onnx {
class ModelProto;
}

namespace graft {

// The model's default-domain ("" or "ai.onnx") opset version, or -1 when it imports none.
int64_t default_domain_opset_of(const onnx::ModelProto& model);

// True when the importer converts `model` before reading it (its default opset is below kMinOpset).
bool needs_opset_conversion(const onnx::ModelProto& model);

// Converts `in` (default-domain opset 1..kMinOpset-1) to opset kMinOpset into *out. Value and node
// names, graph inputs/outputs, initializers and the value_info the model carried are kept; values the
// conversion adds get fresh names. Errors are kUnsupported and name the opset and the op (also set
// as the status's node context).
Status convert_to_supported_opset(const onnx::ModelProto& in, onnx::ModelProto* out);

}  // namespace graft
