// Plumbing shared by the CPU reference kernels of elementwise ops: I/O checks, the unsupported-dtype
// error, and applying a function element by element.
#pragma once

#include "backends/cpu/element_traits.h"
#include "ops/operator.h"

namespace graft::cpu {

inline const char* op_name(const ExecContext& ctx) { return ctx.node ? ctx.node->op_type.c_str() : "op"; }

inline Status bad_dtype(const ExecContext& ctx, DataType t) {
  return error(StatusCode::kUnsupported, "the CPU reference kernel of ", op_name(ctx), " does not support dtype ",
               dtype_name(t));
}

// At least `min_inputs` inputs present and output 0 allocated.
inline Status check_io(const ExecContext& ctx, size_t min_inputs) {
  if (ctx.inputs.size() < min_inputs || ctx.outputs.empty() || !ctx.outputs[0])
    return error(StatusCode::kInternal, op_name(ctx), " kernel called with ", static_cast<int64_t>(ctx.inputs.size()),
                 " inputs and ", static_cast<int64_t>(ctx.outputs.size()), " outputs");
  for (size_t i = 0; i < min_inputs; ++i)
    if (!ctx.inputs[i]) return error(StatusCode::kInvalidModel, "required input ", static_cast<int64_t>(i), " is missing");
  return Status::ok();
}

// y[i] = f(x[i]); Tr and OutTr are the storage types of input 0 and output 0.
template <typename Tr, typename OutTr = Tr, typename F>
Status map_unary(ExecContext& ctx, F f) {
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  GRAFT_CHECK(x.numel() == y.numel());
  for (int64_t i = 0, n = x.numel(); i < n; ++i) OutTr::store(y.data(), i, f(Tr::load(x.data(), i)));
  return Status::ok();
}

// Unary float op: f is generic over the compute type (float for half types and float32, double for float64).
template <typename F>
Status unary_float(ExecContext& ctx, F f) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1));
  return visit_float(ctx.inputs[0]->dtype(), [&](auto tr) -> Status {
    using Tr = decltype(tr);
    return map_unary<Tr>(ctx, f);
  }, [&](DataType t) { return bad_dtype(ctx, t); });
}

}  // namespace graft::cpu
