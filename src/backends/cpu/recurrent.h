// CPU reference kernels for the recurrent ops of src/ops/recurrent_ops.cpp: RNN, LSTM and GRU
// (opset 7 semantics, and opset 14's `layout` attribute).
//
// Each is the spec's per-step equations written out directly: every value loaded as double, every
// gate's dot products accumulated in double, rounded once into the output dtype. The attribute
// reader and the shape checks are in src/ops/recurrent_attrs.h.
#pragma once

#include "graft/status.h"
#include "ops/operator.h"
#include "ops/recurrent_attrs.h"

namespace graft::cpu {

Status rnn(ExecContext& ctx);
Status lstm(ExecContext& ctx);
Status gru(ExecContext& ctx);

}  // namespace graft::cpu
