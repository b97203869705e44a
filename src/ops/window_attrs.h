// The sliding-window attributes of Conv, ConvTranspose, MaxPool and AveragePool (and the integer
// convolutions and LpPool built on them), parsed one way for the schemas (src/ops/nn/conv.cpp, conv_transpose.cpp and pool.cpp,
// src/ops/integer/integer.cpp, src/ops/lp_norm/lp_pool.cpp), the CPU references and the CUDA
// ops, so an error reads the same whichever side finds it and every side pads the same way.
#pragma once

#include <cstdint>
#include <vector>

#include "graft/attribute.h"
#include "graft/dim.h"
#include "graft/status.h"

namespace graft {

// ---- sliding-window attributes (Conv, MaxPool, AveragePool) ----
enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };

struct WindowAttrs {
  AutoPad auto_pad = AutoPad::kNotSet;
  std::vector<int64_t> kernel, strides, dilations;
  std::vector<int64_t> pads;  // explicit pads: n begins then n ends (ONNX order)
  bool ceil_mode = false;
};

// Parses auto_pad, kernel_shape, strides, dilations, pads (and ceil_mode when `pool`) for
// `spatial` spatial axes. `kernel_from_weights` (Conv) is used when kernel_shape is absent and
// must agree with it when present. Errors name the attribute.
Result<WindowAttrs> parse_window_attrs(const AttributeMap& attrs, size_t spatial,
                                       const std::vector<int64_t>* kernel_from_weights, bool pool);

// Output extent of spatial axis `axis` for an input extent `in` (symbolic where `in` is).
Dim window_output_dim(const WindowAttrs& w, size_t axis, const Dim& in);

// The output shape [N, channels, out...] of a sliding window over x [N, C, in...] (the pools:
// channels = C); errors when a constant extent comes out < 1.
Result<Shape> window_output_shape(const Shape& x, const Dim& channels, const WindowAttrs& w);

// Concrete begin/end pads for a run: explicit pads, or SAME_* resolved from the input extents.
void resolve_pads(const WindowAttrs& w, const std::vector<int64_t>& in_spatial,
                  std::vector<int64_t>* begins, std::vector<int64_t>* ends);

// ---- ConvTranspose geometry ----
struct ConvTransposeAttrs {
  WindowAttrs window;                   // kernel, strides, dilations, pads, auto_pad
  std::vector<int64_t> output_padding;  // n entries
  std::vector<int64_t> output_shape;    // n entries, or empty
  int64_t group = 1;
};
Result<ConvTransposeAttrs> parse_conv_transpose_attrs(const AttributeMap& attrs, size_t spatial,
                                                      const std::vector<int64_t>* kernel_from_weights);
// Output extent of spatial axis `axis` (symbolic where `in` is).
Dim conv_transpose_output_dim(const ConvTransposeAttrs& a, size_t axis, const Dim& in);
// Concrete begin pads for a run (output_shape / SAME_* resolved from the extents).
std::vector<int64_t> conv_transpose_pad_begins(const ConvTransposeAttrs& a, const std::vector<int64_t>& in,
                                               const std::vector<int64_t>& out);

}  // namespace graft
