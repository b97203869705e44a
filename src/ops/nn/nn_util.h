// What the nn family's op files share: the CPU references' window walker (Conv and the pools) and
// axis helper, and the schemas' input checks. Internal to src/ops/nn; inline, so each op file stays
// one translation unit.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "backends/cpu/kernel_util.h"
#include "ops/operator.h"
#include "ops/window_attrs.h"

namespace graft::cpu {

inline std::vector<int64_t> tail(const std::vector<int64_t>& v, size_t from) {
  return std::vector<int64_t>(v.begin() + static_cast<std::ptrdiff_t>(std::min(from, v.size())), v.end());
}

// One output position of a sliding window: the input positions it reads (row-major spatial offset,
// and the column-major one for MaxPool's storage_order=1) and how many window taps fall inside the
// padded extent (AveragePool count_include_pad's divisor).
struct WindowTaps {
  std::vector<std::pair<int64_t, int64_t>> kernel_and_input;  // (kernel offset, input offset)
  std::vector<int64_t> input_col_major;
  int64_t padded_count = 0;
};

class WindowWalker {
 public:
  WindowWalker(const WindowAttrs& w, std::vector<int64_t> in_sp, std::vector<int64_t> out_sp)
      : w_(w), in_(std::move(in_sp)), out_(std::move(out_sp)) {
    resolve_pads(w_, in_, &pb_, &pe_);
    in_strides_ = contiguous_strides(in_);
    col_strides_.assign(in_.size(), 1);
    for (size_t a = 1; a < in_.size(); ++a) col_strides_[a] = col_strides_[a - 1] * in_[a - 1];
  }
  int64_t in_area() const { return numel_of(in_); }
  int64_t out_area() const { return numel_of(out_); }
  int64_t kernel_area() const { return numel_of(w_.kernel); }

  void taps_at(int64_t out_flat, WindowTaps& t) {
    unravel(out_flat, out_, op_);
    t.kernel_and_input.clear();
    t.input_col_major.clear();
    t.padded_count = 1;
    for (size_t a = 0; a < in_.size(); ++a) {
      int64_t inside_padded = 0;
      for (int64_t k = 0; k < w_.kernel[a]; ++k) {
        int64_t ip = op_[a] * w_.strides[a] - pb_[a] + k * w_.dilations[a];
        if (ip >= -pb_[a] && ip < in_[a] + pe_[a]) ++inside_padded;
      }
      t.padded_count *= inside_padded;
    }
    int64_t k_area = kernel_area();
    for (int64_t kk = 0; kk < k_area; ++kk) {
      unravel(kk, w_.kernel, kidx_);
      int64_t off = 0, col = 0;
      bool inside = true;
      for (size_t a = 0; a < in_.size() && inside; ++a) {
        int64_t ip = op_[a] * w_.strides[a] - pb_[a] + kidx_[a] * w_.dilations[a];
        inside = ip >= 0 && ip < in_[a];
        off += ip * in_strides_[a];
        col += ip * col_strides_[a];
      }
      if (!inside) continue;
      t.kernel_and_input.emplace_back(kk, off);
      t.input_col_major.push_back(col);
    }
  }

 private:
  const WindowAttrs& w_;
  std::vector<int64_t> in_, out_, pb_, pe_, in_strides_, col_strides_, op_, kidx_;
};

}  // namespace graft::cpu

namespace graft {

inline Status require_float_input(const InferContext& ctx, size_t i, const char* name) {
  DataType t = ctx.input(i).dtype;
  if (!dtype_is_float(t))
    return error(StatusCode::kUnsupported, "input ", name, " has dtype ", dtype_name(t), "; expected a floating type");
  return Status::ok();
}

inline Status require_numeric_input(const InferContext& ctx, size_t i, const char* name) {
  DataType t = ctx.input(i).dtype;
  if (!dtype_is_float(t) && !dtype_is_integer(t))
    return error(StatusCode::kUnsupported, "input ", name, " has dtype ", dtype_name(t), "; expected a numeric type");
  return Status::ok();
}

inline Status require_same_dtype(const InferContext& ctx, size_t i, const char* name) {
  if (ctx.input(i).dtype != ctx.input(0).dtype)
    return error(StatusCode::kInvalidModel, "input ", name, " has dtype ", dtype_name(ctx.input(i).dtype),
                 " but input 0 has ", dtype_name(ctx.input(0).dtype));
  return Status::ok();
}

inline bool output_requested(const InferContext& ctx, size_t i) {
  return i < ctx.node().outputs.size() && ctx.node().outputs[i] != nullptr;
}

// Conv's and ConvTranspose's X and W: a floating X of rank >= 3 (N, C, spatial...) and a W of X's
// dtype and rank.
inline Status infer_conv_operands(const InferContext& ctx, Shape* x, Shape* w) {
  GRAFT_ASSIGN_OR_RETURN(*x, ctx.input_shape(0));
  GRAFT_ASSIGN_OR_RETURN(*w, ctx.input_shape(1));
  GRAFT_RETURN_IF_ERROR(require_float_input(ctx, 0, "X"));
  GRAFT_RETURN_IF_ERROR(require_same_dtype(ctx, 1, "W"));
  if (x->size() < 3)
    return ctx.fail("input X must have rank >= 3 (N, C, spatial...), got ", shape_to_string(*x));
  if (w->size() != x->size())
    return ctx.fail("weight W ", shape_to_string(*w), " must have the rank of X ", shape_to_string(*x));
  return Status::ok();
}

// Their optional bias B: X's dtype, 1-D with M elements (M, the output channels, from W).
inline Status check_conv_bias(const InferContext& ctx, const Dim& M, const Shape& w) {
  if (!ctx.has_input(2)) return Status::ok();
  GRAFT_RETURN_IF_ERROR(require_same_dtype(ctx, 2, "B"));
  GRAFT_ASSIGN_OR_RETURN(Shape b, ctx.input_shape(2));
  if (b.size() != 1 || (b[0].is_const() && M.is_const() && b[0].value() != M.value()))
    return ctx.fail("bias B ", shape_to_string(b), " must be 1-D with ", M.to_string(), " elements (W ",
                    shape_to_string(w), ")");
  return Status::ok();
}

}  // namespace graft
