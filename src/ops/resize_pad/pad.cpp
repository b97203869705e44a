// Pad: the mode reader and pad-amount rule declared in resize_pad.h, the naive CPU reference and the
// schema. The output shape is data dependent: pads not known at build time make the padded extents
// fresh unknown dims, and the run-time inference makes them concrete.
#include "ops/resize_pad/resize_pad.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "backends/cpu/kernel_util.h"
#include "core/checked_math.h"
#include "ops/attr_util.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {

// ---- attributes and inputs -------------------------------------------------------------------------

Result<PadMode> parse_pad_mode(const AttributeMap& attrs) {
  GRAFT_ASSIGN_OR_RETURN(std::string mode, attrs.get_string("mode", "constant"));
  if (mode == "constant") return PadMode::kConstant;
  if (mode == "reflect") return PadMode::kReflect;
  if (mode == "edge") return PadMode::kEdge;
  if (mode == "wrap") return PadMode::kWrap;
  return attr_error("mode", "unknown value '", mode, "' (expected constant, reflect, edge or wrap)");
}

Status pad_amounts(const std::vector<int64_t>& pads, const std::vector<int64_t>* axes, int64_t rank,
                   std::vector<int64_t>* begins, std::vector<int64_t>* ends) {
  std::vector<int64_t> ax;
  if (axes) {
    for (int64_t a : *axes) {
      if (a < -rank || a >= rank)
        return error(StatusCode::kInvalidModel, "input 'axes' has axis ", a, " out of range for rank ", rank);
      int64_t n = a < 0 ? a + rank : a;
      if (std::find(ax.begin(), ax.end(), n) != ax.end())
        return error(StatusCode::kInvalidModel, "input 'axes' repeats axis ", a);
      ax.push_back(n);
    }
  } else {
    for (int64_t i = 0; i < rank; ++i) ax.push_back(i);
  }
  if (pads.size() != 2 * ax.size())
    return error(StatusCode::kInvalidModel, "input 'pads' has ", pads.size(), " elements; expected ", 2 * ax.size(),
                 " (begins then ends for ", ax.size(), " axes)");
  begins->assign(static_cast<size_t>(rank), 0);
  ends->assign(static_cast<size_t>(rank), 0);
  for (size_t k = 0; k < ax.size(); ++k) {
    (*begins)[static_cast<size_t>(ax[k])] = pads[k];
    (*ends)[static_cast<size_t>(ax[k])] = pads[ax.size() + k];
  }
  return Status::ok();
}

// ---- CPU reference ---------------------------------------------------------------------------------

namespace cpu {

Status pad(ExecContext& ctx) {
  const Tensor* X = ctx.inputs.empty() ? nullptr : ctx.inputs[0];
  const Tensor* P = ctx.inputs.size() > 1 ? ctx.inputs[1] : nullptr;
  if (!X || !P) return error(StatusCode::kInvalidModel, "Pad: inputs 'data' and 'pads' are required");
  if (!dtype_is_integer(P->dtype()))
    return error(StatusCode::kInvalidModel, "Pad: input 'pads' must be int64, got ", dtype_name(P->dtype()));
  GRAFT_ASSIGN_OR_RETURN(PadMode mode, parse_pad_mode(*ctx.attrs));
  const Tensor* V = ctx.inputs.size() > 2 ? ctx.inputs[2] : nullptr;
  const Tensor* A = ctx.inputs.size() > 3 ? ctx.inputs[3] : nullptr;
  std::vector<int64_t> axes_v;
  if (A) axes_v = A->to_int64_vector();
  std::vector<int64_t> pb, pe;
  GRAFT_RETURN_IF_ERROR(pad_amounts(P->to_int64_vector(), A ? &axes_v : nullptr, X->rank(), &pb, &pe));
  const size_t r = static_cast<size_t>(X->rank());
  std::vector<int64_t> out_dims(r);
  for (size_t a = 0; a < r; ++a) {
    out_dims[a] = X->dims()[a] + pb[a] + pe[a];
    if (out_dims[a] < 0)
      return error(StatusCode::kInvalidModel, "Pad: negative pads crop axis ", static_cast<int64_t>(a),
                   " below zero (extent ", X->dims()[a], ")");
    if (mode != PadMode::kConstant && X->dims()[a] == 0 && out_dims[a] > 0)
      return error(StatusCode::kInvalidModel, "Pad: cannot pad empty axis ", static_cast<int64_t>(a),
                   " in this mode");
  }
  Tensor& Y = *ctx.outputs[0];
  if (Y.dims() != out_dims)
    return error(StatusCode::kInternal, "Pad: output shape ", ints_to_string(Y.dims()), " differs from ",
                 ints_to_string(out_dims));
  const size_t es = dtype_size(X->dtype());
  // The fill value's bytes: constant_value when given (same dtype as data), else zero bytes.
  std::vector<char> fill(es, 0);
  if (V && V->defined() && V->numel() > 0) {
    if (V->dtype() != X->dtype())
      return error(StatusCode::kInvalidModel, "Pad: constant_value has dtype ", dtype_name(V->dtype()),
                   " but data has ", dtype_name(X->dtype()));
    std::memcpy(fill.data(), V->data(), es);
  }
  // Row by row along the last axis: the outer indices are resolved once per row (not per element:
  // a fuzzed plan padding to tens of millions of elements spent most of a minute in the per-element
  // index arithmetic), and a row's in-range middle is one copy.
  const std::vector<int64_t> in_strides = contiguous_strides(X->dims());
  const int64_t out_row = r ? out_dims[r - 1] : 1, in_row = r ? X->dims()[r - 1] : 1;
  const int64_t rb = r ? pb[r - 1] : 0;
  const int64_t rows = out_row == 0 ? 0 : Y.numel() / out_row;
  const char* xs = static_cast<const char*>(X->data());
  std::vector<int64_t> oi;
  const std::vector<int64_t> outer(out_dims.begin(), out_dims.end() - (r ? 1 : 0));
  for (int64_t row = 0; row < rows; ++row) {
    unravel(row, outer, oi);
    int64_t off = 0;
    bool constant = false;
    for (size_t a = 0; a + 1 < r && !constant; ++a) {
      const int64_t src = pad_source(mode, oi[a] - pb[a], X->dims()[a]);
      if (src < 0)
        constant = true;
      else
        off += src * in_strides[a];
    }
    char* dst = static_cast<char*>(Y.data()) + static_cast<size_t>(row * out_row) * es;
    for (int64_t j = 0; j < out_row; ++j) {
      const int64_t src = constant ? -1 : pad_source(mode, j - rb, in_row);
      if (src < 0) {
        std::memcpy(dst + static_cast<size_t>(j) * es, fill.data(), es);
        continue;
      }
      // The run of output elements whose sources are consecutive: one copy.
      int64_t len = 1;
      if (j - rb == src) len = std::min<int64_t>(out_row - j, in_row - src);
      std::memcpy(dst + static_cast<size_t>(j) * es, xs + static_cast<size_t>(off + src) * es,
                  static_cast<size_t>(len) * es);
      j += len - 1;
    }
  }
  return Status::ok();
}

}  // namespace cpu

// ---- schema ----------------------------------------------------------------------------------------

namespace {

Status infer_pad(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(Shape x, ctx.input_shape(0));
  GRAFT_ASSIGN_OR_RETURN(PadMode mode, parse_pad_mode(ctx.attrs()));
  (void)mode;
  if (!ctx.has_input(1)) return ctx.fail("input 'pads' is required");
  if (!dtype_is_integer(ctx.input(1).dtype))
    return ctx.fail("input 'pads' must be int64, got ", dtype_name(ctx.input(1).dtype));
  if (infer::input_given(ctx, 2) && ctx.input(2).dtype != ctx.input(0).dtype)
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

void append_pad_ops(std::vector<OpEntry>& out) { out.push_back(OpEntry{"Pad", 11, infer_pad, cpu::pad}); }

}  // namespace graft
