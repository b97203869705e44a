// Schemas of the recurrent ops: RNN, LSTM and GRU (opset 7, and opset 14's `layout`). Kernels:
// src/backends/cpu/recurrent.cpp, which also holds the attribute reader and the shape checks both
// sides share (errors name the attribute or input).
//
// Every output is optional (Y, Y_h and, for LSTM, Y_c); each one the node lists gets its shape.
// hidden_size may be absent: R's last dim is then the hidden size.
#include <string>
#include <vector>

#include "backends/cpu/recurrent.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {
namespace {

using namespace infer;

Status infer_recurrent(InferContext& ctx, RecurrentOp op) {
  GRAFT_ASSIGN_OR_RETURN(RecurrentAttrs a, recurrent_attrs(op, ctx.attrs(), ctx.opset()));
  if (ctx.num_inputs() > a.max_inputs())
    return ctx.fail("takes at most ", static_cast<int64_t>(a.max_inputs()), " inputs, the node lists ",
                    static_cast<int64_t>(ctx.num_inputs()));
  if (ctx.num_outputs() > a.max_outputs())
    return ctx.fail("has at most ", static_cast<int64_t>(a.max_outputs()), " outputs (Y, Y_h",
                    op == RecurrentOp::kLstm ? ", Y_c" : "", "), the node lists ",
                    static_cast<int64_t>(ctx.num_outputs()));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, kRnnX, kFloatTypes));
  const DataType dt = ctx.input(kRnnX).dtype;
  for (size_t i : {size_t{kRnnW}, size_t{kRnnR}})
    if (!ctx.has_input(i)) return ctx.fail("required input ", recurrent_input_name(i), " is missing");
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    if (i == kRnnSeqLens) {
      if (ctx.has_input(i)) GRAFT_RETURN_IF_ERROR(check_dtype(ctx, i, {kI32, kI64}));
      continue;
    }
    if (!ctx.has_input(i)) continue;
    if (ctx.input(i).dtype != dt)
      return ctx.fail("input ", recurrent_input_name(i), " has dtype ", dtype_name(ctx.input(i).dtype),
                      " but X has ", dtype_name(dt));
  }
  std::vector<const Shape*> shapes(a.max_inputs(), nullptr);
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i) && ctx.input(i).shape) shapes[i] = &*ctx.input(i).shape;
  GRAFT_ASSIGN_OR_RETURN(RecurrentDims d, recurrent_dims(a, shapes, [&] { return ctx.unknown_dim(); }));
  // With every extent known, the kernel's work bound is checked at build time already.
  if (d.seq.is_const() && d.batch.is_const() && d.input.is_const() && d.hidden.is_const())
    GRAFT_RETURN_IF_ERROR(
        check_recurrent_work(a, d.seq.value(), d.batch.value(), d.input.value(), d.hidden.value()));
  ctx.set_output(0, desc_of(dt, recurrent_y_shape(a, d)));
  for (size_t o = 1; o < ctx.num_outputs(); ++o) ctx.set_output(o, desc_of(dt, recurrent_state_shape(a, d)));
  return Status::ok();
}

Status infer_rnn(InferContext& ctx) { return infer_recurrent(ctx, RecurrentOp::kRnn); }
Status infer_lstm(InferContext& ctx) { return infer_recurrent(ctx, RecurrentOp::kLstm); }
Status infer_gru(InferContext& ctx) { return infer_recurrent(ctx, RecurrentOp::kGru); }

}  // namespace

void append_recurrent_ops(std::vector<OpEntry>& out) {
  // Opset 7 is the first form without opset 1's output_sequence attribute; 14 adds layout, which
  // the shared attribute reader accepts from that opset on.
  // Y, Y_h (and LSTM's Y_c) are all optional: a node may ask for any of them.
  const std::vector<OpEntry> ops = {
      every_output_optional({"RNN", 7, infer_rnn, cpu::rnn}),
      every_output_optional({"LSTM", 7, infer_lstm, cpu::lstm}),
      every_output_optional({"GRU", 7, infer_gru, cpu::gru}),
  };
  out.insert(out.end(), ops.begin(), ops.end());
}

}  // namespace graft
