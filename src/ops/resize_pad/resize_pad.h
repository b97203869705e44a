// The resize-and-pad family: ONNX's Resize (nearest, linear and cubic) and Pad (constant, reflect,
// edge, wrap). This header holds what the schemas, the CPU references and the CUDA kernels share so
// that every side computes the same output extents and words its errors the same way: the attribute
// readers, the reading of the scales/sizes/pads inputs and Pad's index mapping (a host-and-device
// function). One file per op: resize.cpp and pad.cpp (attributes, CPU reference, schema), resize.cu and
// pad.cu (kernels and the CUDA op).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graft/attribute.h"
#include "graft/status.h"
#include "graft/tensor.h"
#include "ops/operator.h"

namespace graft {

// ---- Resize (opset 11+: X, roi, scales, sizes) ----
struct ResizeAttrs {
  enum class Mode { kNearest, kLinear, kCubic };
  Mode mode = Mode::kNearest;
  std::string coordinate_mode = "half_pixel";
  std::string nearest_mode = "round_prefer_floor";
  double cubic_coeff_a = -0.75;
  bool exclude_outside = false;
  double extrapolation_value = 0.0;
  bool antialias = false;                   // opset 18
  std::string keep_aspect_ratio = "stretch";  // opset 18
  std::vector<int64_t> axes;                // opset 18; normalized; empty = every axis
};

// Whether an optional tensor input (Resize's roi, scales, sizes) was given: present and not empty.
bool tensor_given(const Tensor* t);
// The tensor's values as doubles (roi and scales, read whatever their float type).
std::vector<double> tensor_doubles(const Tensor& t);

// Parses and validates the attributes for an input of rank `rank`; errors name the attribute.
Result<ResizeAttrs> parse_resize_attrs(const AttributeMap& attrs, int64_t rank);

// tf_crop_and_resize's region of interest per axis of a rank-`rank` input, from `roi` (starts, then
// ends, one per listed axis; an unlisted axis takes [0, 1]); [0, 1] everywhere for the other
// transforms. kInvalidModel when roi is missing or of the wrong size. Both backends read it here.
Status resize_roi(const ResizeAttrs& a, const Tensor* roi, size_t rank, std::vector<double>* start,
                  std::vector<double>* end);

// The most input samples one axis of an antialiased Resize may read in all (each output sample
// reads about 2 / scale or 4 / scale of them): bounded, so that a tiny scale cannot ask for an
// unbounded amount of work or tap tables.
inline constexpr int64_t kMaxAntialiasTaps = int64_t{1} << 26;
// kUnsupported, naming the attribute `antialias`, when an antialiased axis would read more than
// kMaxAntialiasTaps samples; both backends check it before resizing.
Status check_antialias_taps(const ResizeAttrs& a, const std::vector<double>& scale,
                            const std::vector<int64_t>& out_dims);

// Output extents and the per-axis scale the coordinate transform uses, from the concrete input
// extents and the scales or sizes tensor (exactly one non-empty). `roi` (may be null or empty)
// matters only for tf_crop_and_resize.
Status resize_output(const ResizeAttrs& a, const std::vector<int64_t>& in, const Tensor* roi,
                     const Tensor* scales, const Tensor* sizes, std::vector<int64_t>* out,
                     std::vector<double>* scale);

// ---- Pad (opset 11+: data, pads, constant_value, axes(18)) ----
enum class PadMode { kConstant, kReflect, kEdge, kWrap };
Result<PadMode> parse_pad_mode(const AttributeMap& attrs);

// The input index that output position i (already shifted by the begin pad) reads along an axis of
// n > 0 elements, or -1 where the constant goes: the one mapping of the CPU reference and the CUDA
// kernel (host and device). reflect mirrors about the edge elements without repeating them, edge
// repeats them, wrap continues from the other side; each holds however far past the edge i is.
#if defined(__CUDACC__)
__host__ __device__
#endif
inline int64_t pad_source(PadMode mode, int64_t i, int64_t n) {
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case PadMode::kConstant:
      return -1;
    case PadMode::kEdge:
      return i < 0 ? 0 : n - 1;
    case PadMode::kWrap:
      return ((i % n) + n) % n;
    case PadMode::kReflect: {
      if (n == 1) return 0;
      const int64_t period = 2 * (n - 1);
      const int64_t m = ((i % period) + period) % period;
      return m < n ? m : period - m;
    }
  }
  return -1;
}

// Per-axis begin/end pads (length rank each) from the pads tensor contents and optional axes.
Status pad_amounts(const std::vector<int64_t>& pads, const std::vector<int64_t>* axes, int64_t rank,
                   std::vector<int64_t>* begins, std::vector<int64_t>* ends);

// ---- CenterCropPad (opset 18: input_data, shape; attribute axes) ----
// The listed axes (every axis when the attribute is absent), normalized against `rank`; an axis
// listed twice or out of range is an error naming the attribute.
Result<std::vector<int64_t>> center_crop_pad_axes(const AttributeMap& attrs, int64_t rank);
// The output extents and, per axis, the output position of input element 0 (negative where the
// front is cropped), from the input extents and the `shape` input's values: the one geometry of the
// CPU reference and the CUDA op.
Status center_crop_pad_geometry(const AttributeMap& attrs, const std::vector<int64_t>& in,
                                const std::vector<int64_t>& shape, std::vector<int64_t>* out,
                                std::vector<int64_t>* begin);

// ---- CPU references (resize.cpp, pad.cpp, center_crop_pad.cpp) ---------------------------------------------------------
namespace cpu {

Status resize(ExecContext& ctx);
Status pad(ExecContext& ctx);
Status center_crop_pad(ExecContext& ctx);

}  // namespace cpu

}  // namespace graft
