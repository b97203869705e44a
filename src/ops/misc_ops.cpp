// Schemas of more ONNX ops the backend test suite exercises: InstanceNormalization, LRN,
// MeanVarianceNormalization, EyeLike, BitShift, ReverseSequence, HannWindow, HammingWindow,
// BlackmanWindow, Det and Einsum (its equation parser: src/ops/einsum.h). Kernels: src/backends/cpu/misc.cpp, which also holds the attribute
// readers both sides share (errors name the attribute).
#include <optional>
#include <string>
#include <vector>

#include "backends/cpu/misc.h"
#include "ops/einsum.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {
namespace {

using namespace infer;

Status require_rank_at_least(const InferContext& ctx, size_t i, int64_t r, const char* what) {
  const TensorDesc& d = ctx.input(i);
  if (d.shape && d.rank() < r) return ctx.fail("input ", what, " must have rank >= ", r, ", got ", d.to_string());
  return Status::ok();
}

Status infer_instance_norm(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kFloatTypes));
  GRAFT_RETURN_IF_ERROR(instance_norm_epsilon(ctx.attrs()).status());
  GRAFT_RETURN_IF_ERROR(require_rank_at_least(ctx, 0, 2, "input (N, C, ...)"));
  const TensorDesc& x = ctx.input(0);
  const char* names[3] = {"input", "scale", "B"};
  for (size_t i = 1; i < 3; ++i) {
    GRAFT_RETURN_IF_ERROR(require_input(ctx, i));
    const TensorDesc& p = ctx.input(i);
    if (p.dtype != x.dtype)
      return ctx.fail("input ", names[i], " has dtype ", dtype_name(p.dtype), " but input has ", dtype_name(x.dtype));
    if (!p.shape) continue;
    const bool c_known = x.shape && (*x.shape)[1].is_const() && (*p.shape).size() == 1 && (*p.shape)[0].is_const();
    if (p.rank() != 1 || (c_known && (*p.shape)[0].value() != (*x.shape)[1].value()))
      return ctx.fail("input ", names[i], " ", p.to_string(), " must be 1-D with C elements (input ", x.to_string(), ")");
  }
  ctx.set_output(0, x);
  return Status::ok();
}

Status infer_lrn(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kFloatTypes));
  GRAFT_RETURN_IF_ERROR(lrn_attrs(ctx.attrs()).status());
  GRAFT_RETURN_IF_ERROR(require_rank_at_least(ctx, 0, 2, "X (N, C, ...)"));
  ctx.set_output(0, ctx.input(0));
  return Status::ok();
}

Status infer_mvn(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kFloatTypes));
  if (ctx.input(0).shape) {
    GRAFT_RETURN_IF_ERROR(mvn_axes(ctx.attrs(), ctx.input(0).rank()).status());
  } else {
    auto r = ctx.attrs().get_ints("axes", {});
    if (!r) return Status(r.status()).with_attribute("axes");
  }
  ctx.set_output(0, ctx.input(0));
  return Status::ok();
}

Status infer_eye_like(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kAllTypes));
  auto k = ctx.attrs().get_int("k", 0);
  if (!k) return Status(k.status()).with_attribute("k");
  DataType out = ctx.input(0).dtype;
  if (ctx.attrs().has("dtype")) {
    auto dt = ctx.attrs().get_int("dtype", 0);
    if (!dt) return Status(dt.status()).with_attribute("dtype");
    if (dt.value() < INT32_MIN || dt.value() > INT32_MAX || !dtype_from_onnx_numeric(static_cast<int32_t>(dt.value()), &out))
      return Status(error(StatusCode::kUnsupported, "ONNX element type ", dt.value(), " is not supported (graft supports ",
                          dtype_list(kAllTypes), ")"))
          .with_attribute("dtype");
  }
  const TensorDesc& x = ctx.input(0);
  if (x.shape && x.rank() != 2) return ctx.fail("input must be 2-D, got ", x.to_string());
  ctx.set_output(0, desc_of(out, x.shape));
  return Status::ok();
}

Status infer_bit_shift(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kUnsignedIntTypes));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, kUnsignedIntTypes));
  GRAFT_RETURN_IF_ERROR(bit_shift_left(ctx.attrs()).status());
  std::optional<Shape> out;
  if (ctx.input(0).shape && ctx.input(1).shape) {
    GRAFT_ASSIGN_OR_RETURN(Shape s, broadcast_shapes(*ctx.input(0).shape, *ctx.input(1).shape));
    out = std::move(s);
  }
  ctx.set_output(0, desc_of(ctx.input(0).dtype, out));
  return Status::ok();
}

Status infer_reverse_sequence(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kAllTypes));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, {kI64}));
  GRAFT_ASSIGN_OR_RETURN(auto axes, reverse_sequence_axes(ctx.attrs()));
  GRAFT_RETURN_IF_ERROR(require_rank_at_least(ctx, 0, 2, "input"));
  const TensorDesc& x = ctx.input(0);
  const TensorDesc& lens = ctx.input(1);
  if (lens.shape && lens.rank() != 1) return ctx.fail("sequence_lens must be 1-D [batch], got ", lens.to_string());
  if (x.shape && lens.shape) {
    const Dim& b = (*x.shape)[axes.first];
    const Dim& l = (*lens.shape)[0];
    if (b.is_const() && l.is_const() && b.value() != l.value())
      return ctx.fail("sequence_lens ", lens.to_string(), " must have one entry per batch (axis ", axes.first, " of ",
                      x.to_string(), ")");
  }
  ctx.set_output(0, x);
  return Status::ok();
}

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

Status infer_det(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kFloatTypes));
  const TensorDesc& x = ctx.input(0);
  if (!x.shape) {
    ctx.set_output(0, desc_of(x.dtype, std::nullopt));
    return Status::ok();
  }
  if (x.rank() < 2) return ctx.fail("input must be [..., M, M], got ", x.to_string());
  const Dim& r = (*x.shape)[x.rank() - 2];
  const Dim& c = (*x.shape)[x.rank() - 1];
  if (r.is_const() && c.is_const() && r.value() != c.value())
    return ctx.fail("input must hold square matrices [..., M, M], got ", x.to_string());
  ctx.set_output(0, desc_of(x.dtype, Shape(x.shape->begin(), x.shape->end() - 2)));
  return Status::ok();
}

// Output dims: each output label's extent, taken from an input axis with that label (a broadcast
// ellipsis position prefers an extent other than 1). Extents are checked against each other when
// they are numbers; the kernels check the concrete ones again.
Status infer_einsum(InferContext& ctx) {
  auto eq = ctx.attrs().get_string("equation", "");
  if (!eq) return Status(eq.status()).with_attribute("equation");
  if (eq->empty()) return Status(ctx.fail("is required")).with_attribute("equation");
  if (ctx.num_inputs() == 0) return ctx.fail("needs at least one input");
  std::vector<int64_t> ranks;
  bool ranks_known = true;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    GRAFT_RETURN_IF_ERROR(require_input(ctx, i));
    GRAFT_RETURN_IF_ERROR(check_dtype(ctx, i, kNumericTypes));
    if (ctx.input(i).dtype != ctx.input(0).dtype)
      return ctx.fail("input ", static_cast<int64_t>(i), " has dtype ", dtype_name(ctx.input(i).dtype), ", input 0 ",
                      dtype_name(ctx.input(0).dtype), ": Einsum takes one dtype");
    ranks_known &= ctx.input(i).shape.has_value();
    ranks.push_back(ctx.input(i).rank());
  }
  const DataType dt = ctx.input(0).dtype;
  if (!ranks_known) {
    ctx.set_output(0, desc_of(dt, std::nullopt));
    return Status::ok();
  }
  auto spec = parse_einsum(*eq, ranks);
  if (!spec) return Status(ctx.fail(spec.status().message())).with_attribute("equation");
  std::vector<std::optional<Dim>> ext(static_cast<size_t>(spec->num_labels));
  for (size_t k = 0; k < ranks.size(); ++k)
    for (size_t a = 0; a < spec->in_labels[k].size(); ++a) {
      const Dim& d = (*ctx.input(k).shape)[a];
      auto& e = ext[static_cast<size_t>(spec->in_labels[k][a])];
      const bool ell = spec->ellipsis_label[static_cast<size_t>(spec->in_labels[k][a])];
      if (!e || (ell && *e == 1)) {
        e = d;
      } else if (e->is_const() && d.is_const() && e->value() != d.value() && !(ell && d.value() == 1)) {
        return Status(ctx.fail("input ", static_cast<int64_t>(k), " axis ", static_cast<int64_t>(a), " has extent ",
                               d.value(), " where another axis with the same label has ", e->value()))
            .with_attribute("equation");
      }
    }
  Shape out;
  for (int label : spec->out_labels) out.push_back(ext[static_cast<size_t>(label)].value_or(Dim(1)));
  ctx.set_output(0, desc_of(dt, out));
  return Status::ok();
}

}  // namespace

void append_misc_ops(std::vector<OpEntry>& out) {
  const std::vector<OpEntry> ops = {
      {"InstanceNormalization", 6, infer_instance_norm, cpu::instance_normalization},
      {"LRN", 1, infer_lrn, cpu::lrn},
      {"MeanVarianceNormalization", 9, infer_mvn, cpu::mean_variance_normalization},
      keeps_float32({"EyeLike", 9, infer_eye_like, cpu::eye_like}),
      {"BitShift", 11, infer_bit_shift, cpu::bit_shift},
      {"ReverseSequence", 10, infer_reverse_sequence, cpu::reverse_sequence},
      {"HannWindow", 17, infer_window, cpu::hann_window},
      {"HammingWindow", 17, infer_window, cpu::hamming_window},
      {"BlackmanWindow", 17, infer_window, cpu::blackman_window},
      {"Det", 11, infer_det, cpu::det},
      {"Einsum", 12, infer_einsum, cpu::einsum},
  };
  out.insert(out.end(), ops.begin(), ops.end());
}

}  // namespace graft
