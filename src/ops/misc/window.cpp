// HannWindow, HammingWindow and BlackmanWindow: the naive CPU reference (in double) and the schema.
// CUDA: window.cu.
#include "ops/misc/misc.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backends/cpu/element_traits.h"
#include "backends/cpu/broadcast_walker.h"
#include "backends/cpu/kernel_util.h"
#include "backends/cpu/unary_kernel.h"
#include "core/checked_math.h"
#include "graft/status.h"
#include "ops/attr_util.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {

// ---- CPU reference --------------------------------------------------------------------------
// Values are loaded as double, statistics and sums accumulate in double, and each result is rounded
// once into the output dtype.

namespace cpu {

namespace {

enum class WindowKind { kHann, kHamming, kBlackman };

constexpr double kPi = 3.14159265358979323846;

Status window(ExecContext& ctx, WindowKind kind) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1));
  const Tensor& size_t_ = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  if (size_t_.numel() != 1 || !dtype_is_integer(size_t_.dtype()))
    return error(StatusCode::kInvalidModel, op_name(ctx), ": input size must be one integer, got ",
                 dtype_name(size_t_.dtype()), " ", ints_to_string(size_t_.dims()));
  const int64_t n = size_t_.to_int64_vector()[0];
  if (n < 0 || n > kMaxWindowLength)
    return error(StatusCode::kInvalidModel, op_name(ctx), ": size ", n, " is outside [0, ", kMaxWindowLength, "]");
  GRAFT_CHECK(y.numel() == n);
  GRAFT_ASSIGN_OR_RETURN(int64_t periodic, attrs_of(ctx).get_int("periodic", 1));
  // Periodic windows divide by N (the first N of an N+1 symmetric window), symmetric ones by N - 1.
  // A symmetric window of one sample (0/0 in the formula) is [1], as in numpy and scipy.
  const double den = periodic ? static_cast<double>(n) : static_cast<double>(n - 1);
  for (int64_t i = 0; i < n; ++i) {
    if (den == 0) {
      y.set(i, 1.0);
      continue;
    }
    const double a = 2 * kPi * static_cast<double>(i) / den;
    double v = 0;
    switch (kind) {
      case WindowKind::kHann: v = 0.5 - 0.5 * std::cos(a); break;
      case WindowKind::kHamming: v = 25.0 / 46.0 - 21.0 / 46.0 * std::cos(a); break;
      case WindowKind::kBlackman: v = 0.42 - 0.5 * std::cos(a) + 0.08 * std::cos(2 * a); break;
    }
    y.set(i, v);
  }
  return Status::ok();
}

}  // namespace

Status hann_window(ExecContext& ctx) { return window(ctx, WindowKind::kHann); }
Status hamming_window(ExecContext& ctx) { return window(ctx, WindowKind::kHamming); }
Status blackman_window(ExecContext& ctx) { return window(ctx, WindowKind::kBlackman); }

}  // namespace cpu

// ---- schema ---------------------------------------------------------------------------------

namespace {

using namespace infer;

Status infer_window(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, {kI32, kI64}));
  auto periodic = ctx.attrs().get_int("periodic", 1);
  if (!periodic) return Status(periodic.status()).with_attribute("periodic");
  if (periodic.value() != 0 && periodic.value() != 1)
    return Status(ctx.fail("must be 0 or 1, got ", periodic.value())).with_attribute("periodic");
  auto odt = ctx.attrs().get_int("output_datatype", 1);
  if (!odt) return Status(odt.status()).with_attribute("output_datatype");
  DataType out;
  if (odt.value() < INT32_MIN || odt.value() > INT32_MAX || !dtype_from_onnx_numeric(static_cast<int32_t>(odt.value()), &out) ||
      out == kBool)
    return Status(error(StatusCode::kUnsupported, "ONNX element type ", odt.value(), " is not supported (graft supports ",
                        dtype_list(kNumericTypes), ")"))
        .with_attribute("output_datatype");
  const TensorDesc& size = ctx.input(0);
  if (size.shape && !(size.rank() == 0 || (size.rank() == 1 && (*size.shape)[0] == 1)))
    return ctx.fail("input size must be a scalar, got ", size.to_string());
  Dim n = ctx.unknown_dim();
  if (auto v = ctx.input_dims_value(0)) {
    if (v->size() != 1) return ctx.fail("input size must hold one value, got ", static_cast<int64_t>(v->size()));
    n = (*v)[0];
    if (n.is_const() && (n.value() < 0 || n.value() > kMaxWindowLength))
      return ctx.fail("input size ", n.value(), " is outside [0, ", kMaxWindowLength, "]");
  }
  ctx.set_output(0, desc_of(out, Shape{n}));
  return Status::ok();
}

}  // namespace

void append_window_ops(std::vector<OpEntry>& out) {
  out.push_back(OpEntry{"HannWindow", 17, infer_window, cpu::hann_window});
  out.push_back(OpEntry{"HammingWindow", 17, infer_window, cpu::hamming_window});
  out.push_back(OpEntry{"BlackmanWindow", 17, infer_window, cpu::blackman_window});
}

}  // namespace graft
