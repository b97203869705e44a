// Schemas for Resize and Pad. Kernels: src/backends/cpu/resize_pad.cpp.
//
// Both have data-dependent output shapes: when scales/sizes/pads are not known at build time the
// affected extents become fresh unknown dims, and the run-time inference (with every input on the
// host) makes them concrete.
#include <algorithm>
#include <cmath>

#include "backends/cpu/resize_pad.h"
#include "core/checked_math.h"
#include "ops/operator.h"

namespace graft {

namespace {

// True when input i is present and (by its static shape) not an empty placeholder tensor.
bool input_given(const InferContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return false;
  const TensorDesc& d = ctx.input(i);
  if (d.shape && shape_is_static(*d.shape) && numel_of(shape_values(*d.shape)) == 0) return false;
  return true;
}

// floor(in * s) over a symbolic extent, when expressible exactly in the Dim algebra.
// Scales come from the model: an extent out of int64's range is left unknown here (the kernel's
// concrete rule refuses it) rather than converted with undefined behaviour.
std::optional<Dim> scaled_dim(const Dim& in, double s) {
  if (in.is_const()) {
    const auto v = checked_int64(std::floor(static_cast<double>(in.value()) * s));
    if (!v || *v < 0) return std::nullopt;
    return Dim(*v);
  }
  // A zero, negative or NaN scale has no symbolic form (the kernel's concrete rule refuses it).
  if (!(s > 0.0)) return std::nullopt;
  if (s >= 1.0 && s == std::floor(s)) {
    const auto k = checked_int64(s);
    if (!k) return std::nullopt;
    return in * Dim(*k);
  }
  // Reciprocals of powers of two are exact in binary, so floor(in * s) == in floor-div 1/s. The
  // range check comes before any conversion: a huge reciprocal would not fit in int64 (UB).
  const double inv = 1.0 / s;
  if (!(inv >= 1.0 && inv <= 1024.0) || inv != std::floor(inv)) return std::nullopt;
  const auto k = static_cast<int64_t>(inv);
  if ((k & (k - 1)) == 0) return floor_div(in, Dim(k));
  return std::nullopt;
}

Status infer_resize(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(Shape x, ctx.input_shape(0));
  const int64_t rank = static_cast<int64_t>(x.size());
  GRAFT_ASSIGN_OR_RETURN(ResizeAttrs a, parse_resize_attrs(ctx.attrs(), rank));
  if (a.mode != ResizeAttrs::Mode::kNearest && !dtype_is_float(ctx.input(0).dtype))
    return error(StatusCode::kUnsupported, "linear/cubic Resize needs a floating input, got ",
                 dtype_name(ctx.input(0).dtype));
  const bool has_scales = input_given(ctx, 2), has_sizes = input_given(ctx, 3);
  if (has_scales && has_sizes)
    return ctx.fail("only one of the inputs 'scales' and 'sizes' may be given");
  if (!has_scales && !has_sizes) return ctx.fail("one of the inputs 'scales' and 'sizes' is required");

  // Fully concrete: the kernel's own rule decides.
  const Tensor* scales_v = has_scales ? ctx.input_value(2) : nullptr;
  const Tensor* sizes_v = has_sizes ? ctx.input_value(3) : nullptr;
  if (shape_is_static(x) && (scales_v || sizes_v)) {
    std::vector<int64_t> out;
    std::vector<double> scale;
    GRAFT_RETURN_IF_ERROR(resize_output(a, shape_values(x), ctx.has_input(1) ? ctx.input_value(1) : nullptr,
                                             scales_v, sizes_v, &out, &scale));
    ctx.set_output(0, TensorDesc(ctx.input(0).dtype, shape_from_values(out)));
    return Status::ok();
  }
  Shape out = x;
  if (has_sizes && a.keep_aspect_ratio == "stretch") {
    if (auto sizes = ctx.input_dims_value(3)) {
      if (sizes->size() != a.axes.size())
        return ctx.fail("input 'sizes' has ", static_cast<int64_t>(sizes->size()), " elements; expected ",
                        static_cast<int64_t>(a.axes.size()));
      for (size_t k = 0; k < a.axes.size(); ++k) out[static_cast<size_t>(a.axes[k])] = (*sizes)[k];
      ctx.set_output(0, TensorDesc(ctx.input(0).dtype, out));
      return Status::ok();
    }
  }
  std::vector<double> s;
  if (scales_v && a.coordinate_mode != "tf_crop_and_resize")
    for (int64_t i = 0; i < scales_v->numel(); ++i) s.push_back(scales_v->get(i));
  if (!s.empty() && s.size() != a.axes.size())
    return ctx.fail("input 'scales' has ", static_cast<int64_t>(s.size()), " elements; expected ",
                    static_cast<int64_t>(a.axes.size()));
  for (size_t k = 0; k < a.axes.size(); ++k) {
    Dim& d = out[static_cast<size_t>(a.axes[k])];
    std::optional<Dim> known = s.empty() ? std::nullopt : scaled_dim(d, s[k]);
    d = known ? *known : ctx.unknown_dim();
  }
  ctx.set_output(0, TensorDesc(ctx.input(0).dtype, out));
  return Status::ok();
}

Status infer_pad(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(Shape x, ctx.input_shape(0));
  GRAFT_ASSIGN_OR_RETURN(PadMode mode, parse_pad_mode(ctx.attrs()));
  (void)mode;
  if (!ctx.has_input(1)) return ctx.fail("input 'pads' is required");
  if (!dtype_is_integer(ctx.input(1).dtype))
    return ctx.fail("input 'pads' must be int64, got ", dtype_name(ctx.input(1).dtype));
  if (input_given(ctx, 2) && ctx.input(2).dtype != ctx.input(0).dtype)
    return ctx.fail("input 'constant_value' has dtype ", dtype_name(ctx.input(2).dtype), " but data has ",
                    dtype_name(ctx.input(0).dtype));
  const int64_t rank = static_cast<int64_t>(x.size());
  std::optional<std::vector<Dim>> pads = ctx.input_dims_value(1);
  // Axes (opset 18): every axis when absent; unknown when given but not constant.
  const bool has_axes = ctx.has_input(3);
  const Tensor* axes_t = has_axes ? ctx.input_value(3) : nullptr;
  std::vector<int64_t> axes;
  if (axes_t) axes = axes_t->to_int64_vector();
  else for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  Shape out = x;
  if (pads && (!has_axes || axes_t)) {
    bool all_const = true;
    std::vector<int64_t> pv;  // symbolic pad entries are placeholders for the validation below
    for (const Dim& d : *pads) {
      all_const = all_const && d.is_const();
      pv.push_back(d.is_const() ? d.value() : 0);
    }
    std::vector<int64_t> pb, pe;
    GRAFT_RETURN_IF_ERROR(pad_amounts(pv, &axes, rank, &pb, &pe));
    for (size_t k = 0; k < axes.size(); ++k) {
      size_t a = static_cast<size_t>(axes[k] < 0 ? axes[k] + rank : axes[k]);
      out[a] = x[a] + (*pads)[k] + (*pads)[axes.size() + k];
      if (all_const && out[a].is_const() && out[a].value() < 0)
        return ctx.fail("pads ", pb[a], "/", pe[a], " crop axis ", static_cast<int64_t>(a), " of ",
                        shape_to_string(x), " below zero");
    }
  } else {
    for (int64_t i = 0; i < rank; ++i) {
      // With known axes only the listed ones change.
      if (axes_t && std::find(axes.begin(), axes.end(), i) == axes.end() &&
          std::find(axes.begin(), axes.end(), i - rank) == axes.end())
        continue;
      out[static_cast<size_t>(i)] = ctx.unknown_dim();
    }
  }
  ctx.set_output(0, TensorDesc(ctx.input(0).dtype, out));
  return Status::ok();
}

}  // namespace

void append_resize_pad_ops(std::vector<OpEntry>& out) {
  out.push_back(OpEntry{"Pad", 11, infer_pad, cpu::pad});
  out.push_back(OpEntry{"Resize", 11, infer_resize, cpu::resize});
}

}  // namespace graft
