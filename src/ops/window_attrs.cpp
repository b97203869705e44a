// See window_attrs.h.
#include "ops/window_attrs.h"

#include <algorithm>
#include <string>

#include "ops/attr_util.h"

namespace graft {

namespace {

std::vector<int64_t> tail(const std::vector<int64_t>& v, size_t from) {
  return std::vector<int64_t>(v.begin() + static_cast<std::ptrdiff_t>(std::min(from, v.size())), v.end());
}

}  // namespace

Result<WindowAttrs> parse_window_attrs(const AttributeMap& attrs, size_t n,
                                       const std::vector<int64_t>* kernel_from_weights, bool pool) {
  WindowAttrs w;
  GRAFT_ASSIGN_OR_RETURN(std::string ap, attrs.get_string("auto_pad", "NOTSET"));
  if (ap == "NOTSET" || ap.empty()) w.auto_pad = AutoPad::kNotSet;
  else if (ap == "SAME_UPPER") w.auto_pad = AutoPad::kSameUpper;
  else if (ap == "SAME_LOWER") w.auto_pad = AutoPad::kSameLower;
  else if (ap == "VALID") w.auto_pad = AutoPad::kValid;
  else return attr_error("auto_pad", "unknown value '", ap, "' (expected NOTSET, SAME_UPPER, SAME_LOWER or VALID)");

  GRAFT_ASSIGN_OR_RETURN(w.kernel, attrs.get_ints("kernel_shape", {}));
  if (w.kernel.empty()) {
    if (!kernel_from_weights) return attr_error("kernel_shape", "is required");
    w.kernel = *kernel_from_weights;
  } else if (kernel_from_weights && *kernel_from_weights != w.kernel) {
    return attr_error("kernel_shape", ints_to_string(w.kernel), " disagrees with the weight's spatial shape ",
                      ints_to_string(*kernel_from_weights));
  }
  if (w.kernel.size() != n)
    return attr_error("kernel_shape", "has ", w.kernel.size(), " entries but the input has ", n, " spatial axes");
  for (int64_t k : w.kernel)
    if (k < 1) return attr_error("kernel_shape", "entries must be >= 1, got ", ints_to_string(w.kernel));

  GRAFT_ASSIGN_OR_RETURN(w.strides, attrs.get_ints("strides", std::vector<int64_t>(n, 1)));
  if (w.strides.size() != n)
    return attr_error("strides", "has ", w.strides.size(), " entries but the input has ", n, " spatial axes");
  for (int64_t s : w.strides)
    if (s < 1) return attr_error("strides", "entries must be >= 1, got ", ints_to_string(w.strides));

  GRAFT_ASSIGN_OR_RETURN(w.dilations, attrs.get_ints("dilations", std::vector<int64_t>(n, 1)));
  if (w.dilations.size() != n)
    return attr_error("dilations", "has ", w.dilations.size(), " entries but the input has ", n, " spatial axes");
  for (int64_t d : w.dilations)
    if (d < 1) return attr_error("dilations", "entries must be >= 1, got ", ints_to_string(w.dilations));

  GRAFT_ASSIGN_OR_RETURN(w.pads, attrs.get_ints("pads", std::vector<int64_t>(2 * n, 0)));
  if (w.pads.size() != 2 * n)
    return attr_error("pads", "has ", w.pads.size(), " entries; expected ", 2 * n, " (begins then ends)");
  for (int64_t p : w.pads)
    if (p < 0) return attr_error("pads", "entries must be >= 0, got ", ints_to_string(w.pads));

  if (pool) {
    GRAFT_ASSIGN_OR_RETURN(int64_t cm, attrs.get_int("ceil_mode", 0));
    w.ceil_mode = cm != 0;
  }
  return w;
}

Dim window_output_dim(const WindowAttrs& w, size_t i, const Dim& in) {
  const size_t n = w.kernel.size();
  const int64_t eff = w.dilations[i] * (w.kernel[i] - 1) + 1;
  const int64_t s = w.strides[i];
  switch (w.auto_pad) {
    case AutoPad::kSameUpper:
    case AutoPad::kSameLower:
      return ceil_div(in, s);
    case AutoPad::kValid:
      return floor_div(in - eff, s) + 1;
    case AutoPad::kNotSet:
      break;
  }
  const int64_t pb = w.pads[i], pe = w.pads[i + n];
  Dim span = in + Dim(pb + pe - eff);
  if (!w.ceil_mode) return floor_div(span, s) + 1;
  Dim out = ceil_div(span, s) + 1;
  // The last window must start inside the input or its begin padding (the PyTorch rule that later
  // ONNX versions adopted); 1 when it does, 0 when it would start in the end padding only.
  Dim starts_inside = dim_lt((out - 1) * s, in + pb);
  return out - 1 + starts_inside;
}

void resolve_pads(const WindowAttrs& w, const std::vector<int64_t>& in, std::vector<int64_t>* begins,
                  std::vector<int64_t>* ends) {
  const size_t n = w.kernel.size();
  begins->assign(n, 0);
  ends->assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    switch (w.auto_pad) {
      case AutoPad::kNotSet:
        (*begins)[i] = w.pads[i];
        (*ends)[i] = w.pads[i + n];
        break;
      case AutoPad::kValid:
        break;
      case AutoPad::kSameUpper:
      case AutoPad::kSameLower: {
        int64_t eff = w.dilations[i] * (w.kernel[i] - 1) + 1;
        int64_t out = (in[i] + w.strides[i] - 1) / w.strides[i];
        int64_t total = std::max<int64_t>(0, (out - 1) * w.strides[i] + eff - in[i]);
        int64_t small = total / 2, big = total - small;
        // SAME_UPPER puts the extra pad at the end, SAME_LOWER at the beginning.
        (*begins)[i] = w.auto_pad == AutoPad::kSameUpper ? small : big;
        (*ends)[i] = w.auto_pad == AutoPad::kSameUpper ? big : small;
        break;
      }
    }
  }
}

Result<ConvTransposeAttrs> parse_conv_transpose_attrs(const AttributeMap& attrs, size_t n,
                                                      const std::vector<int64_t>* kernel_from_weights) {
  ConvTransposeAttrs a;
  GRAFT_ASSIGN_OR_RETURN(a.window, parse_window_attrs(attrs, n, kernel_from_weights, false));
  GRAFT_ASSIGN_OR_RETURN(a.output_padding, attrs.get_ints("output_padding", std::vector<int64_t>(n, 0)));
  if (a.output_padding.size() != n)
    return attr_error("output_padding", "has ", a.output_padding.size(), " entries; expected ", n);
  for (size_t i = 0; i < n; ++i)
    if (a.output_padding[i] < 0 || a.output_padding[i] >= std::max(a.window.strides[i], a.window.dilations[i]))
      return attr_error("output_padding", ints_to_string(a.output_padding),
                        " entries must be >= 0 and smaller than the stride or dilation");
  GRAFT_ASSIGN_OR_RETURN(a.output_shape, attrs.get_ints("output_shape", {}));
  // Some exporters write the full output shape (N, C, spatial...): keep the spatial tail.
  if (a.output_shape.size() == n + 2) a.output_shape = tail(a.output_shape, 2);
  if (!a.output_shape.empty() && a.output_shape.size() != n)
    return attr_error("output_shape", "has ", a.output_shape.size(), " entries; expected ", n);
  GRAFT_ASSIGN_OR_RETURN(a.group, attrs.get_int("group", 1));
  if (a.group < 1) return attr_error("group", "must be >= 1, got ", a.group);
  return a;
}

Dim conv_transpose_output_dim(const ConvTransposeAttrs& a, size_t i, const Dim& in) {
  const WindowAttrs& w = a.window;
  const size_t n = w.kernel.size();
  if (!a.output_shape.empty()) return Dim(a.output_shape[i]);
  if (w.auto_pad == AutoPad::kSameUpper || w.auto_pad == AutoPad::kSameLower) return in * Dim(w.strides[i]);
  const int64_t eff = w.dilations[i] * (w.kernel[i] - 1) + 1;
  const int64_t pads = w.auto_pad == AutoPad::kValid ? 0 : w.pads[i] + w.pads[i + n];
  return Dim(w.strides[i]) * (in - 1) + Dim(a.output_padding[i] + eff - pads);
}

std::vector<int64_t> conv_transpose_pad_begins(const ConvTransposeAttrs& a, const std::vector<int64_t>& in,
                                               const std::vector<int64_t>& out) {
  const WindowAttrs& w = a.window;
  std::vector<int64_t> begins(in.size(), 0);
  for (size_t i = 0; i < in.size(); ++i) {
    const bool derived = !a.output_shape.empty() || w.auto_pad == AutoPad::kSameUpper ||
                         w.auto_pad == AutoPad::kSameLower;
    if (!derived) {
      begins[i] = w.auto_pad == AutoPad::kValid ? 0 : w.pads[i];
      continue;
    }
    // Padding implied by the requested output extent; SAME_UPPER puts the odd unit at the end.
    const int64_t eff = w.dilations[i] * (w.kernel[i] - 1) + 1;
    const int64_t total = w.strides[i] * (in[i] - 1) + a.output_padding[i] + eff - out[i];
    // Floor division: a requested extent beyond the natural one gives a negative total, and the
    // ONNX reference then keeps the begin pad at 0 and lets the end absorb it.
    const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
    begins[i] = w.auto_pad == AutoPad::kSameUpper ? half : total - half;
  }
  return begins;
}

Result<Shape> window_output_shape(const Shape& x, const Dim& channels, const WindowAttrs& w) {
  Shape out{x[0], channels};
  for (size_t i = 0; i + 2 < x.size(); ++i) {
    Dim d = window_output_dim(w, i, x[i + 2]);
    if (d.is_const() && d.value() < 1)
      return error(StatusCode::kInvalidModel, "input ", shape_to_string(x), " is too small for the window on spatial axis ",
                   static_cast<int64_t>(i), " (output extent ", d.value(), ")");
    out.push_back(d);
  }
  return out;
}

}  // namespace graft
