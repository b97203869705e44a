// Rank-4 layout helpers shared by the NHWC pass (src/graph/nhwc_regions.cpp) and the reference kernels
// of graft's NHWC internal ops (src/ops/fused_conv/fused_conv.h).
#pragma once

#include <string>

#include <cstdint>
#include <vector>

#include "graft/attribute.h"
#include "graft/tensor.h"

namespace graft {

inline const std::vector<int64_t> kNhwcToNchw{0, 3, 1, 2};  // NHWC axes in NCHW order
inline const std::vector<int64_t> kNchwToNhwc{0, 2, 3, 1};  // NCHW axes in NHWC order

// The internal NHWC ops' attributes (src/ops/fused_conv/fused_conv.h), read by their schemas, CPU
// references and CUDA kernels alike: `layout` ("NCHW" or "NHWC") and GraftConv's `activation`
// ("", "Relu", "HardSwish", "Clip" with float `clip_min`/`clip_max`, "Silu", x * sigmoid(x) as
// PyTorch exports SiLU, "Sigmoid", a squeeze-excitation gate's, or "HardSigmoid" with float
// `hardsigmoid_alpha`/`hardsigmoid_beta`, MobileNetV3's gate). Errors name the attribute.
enum class ConvActivation : int { kNone = 0, kRelu = 1, kHardSwish = 2, kClip = 3, kSilu = 4, kSigmoid = 5, kHardSigmoid = 6 };  // the CUDA epilogue's codes
struct ConvEpilogueActivation {
  ConvActivation kind = ConvActivation::kNone;
  float lo = 0, hi = 0;  // kClip's bounds; kHardSigmoid's alpha and beta
};
Status read_layout(const AttributeMap& attrs, bool* nhwc);
// `prefix` "input_" reads GraftConv's input activation (input_activation, input_clip_min, ...).
Status read_activation(const AttributeMap& attrs, ConvEpilogueActivation* act, const std::string& prefix = "");
// GraftChannelsLast's attributes: `channels`, `to` (a graft DataType code; kUndefined: X's type) and
// the space-to-depth `block` with its `pads` [top, left, bottom, right].
struct ChannelsLastAttrs {
  int64_t channels = 0;
  DataType to = DataType::kUndefined;
  int64_t block = 1;                      // 1: no rearranging
  std::vector<int64_t> pads{0, 0, 0, 0};  // top, left, bottom, right
};
Result<ChannelsLastAttrs> read_channels_last(const AttributeMap& attrs);
// The activation in double (the CPU reference): ONNX Relu, HardSwish x * clamp(x / 6 + 1/2, 0, 1),
// Clip (NaN stays NaN), x / (1 + exp(-x)).
double apply_activation(const ConvEpilogueActivation& act, double v);

// A host copy of a rank-4 host tensor with its axes permuted (output axis i = input axis perm[i]).
Tensor permute_rank4(const Tensor& t, const std::vector<int64_t>& perm);

}  // namespace graft
