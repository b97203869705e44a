// CUDA ops for RNN, LSTM and GRU (kernels: recurrent_kernels.cu). Attributes and shapes are read by
// the readers the CPU reference uses too (src/ops/recurrent_attrs.h: recurrent_attrs, recurrent_dims),
// so a bad node fails with the same words on both backends. Everything the reference takes is
// handled: every direction, layout 0 and 1, clip, the activation lists, input_forget,
// linear_before_reset, every optional input and output. float32, float16 and bfloat16 (float64
// falls back to the CPU reference).
//
// Two differences from the reference, both where it stops with an error: sequence_lens stays on
// the device, so a length outside [0, seq_length] turns that batch entry's outputs into NaN instead
// of failing the run; and there is no kMaxRecurrentTerms bound at run time (the build still checks
// it where the shapes are known, in shape inference).
#include <string>
#include <vector>

#include "ops/recurrent_attrs.h"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/recurrent_kernels.cuh"
#include "ops/attr_util.h"

namespace graft::cuda {
namespace {

using namespace util;

bool is_kernel_float(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kBFloat16;
}

// The opset the attributes are read with in supports()/workspace: a node of unknown opset (0) is
// read as opset 14, so `layout` is accepted there and checked against the real opset by run().
int opset_for_build(const Node& n) { return n.opset > 0 ? n.opset : 14; }

k::RnnActKind kernel_kind(RnnActivationKind kind) {
  using K = RnnActivationKind;
  switch (kind) {
    case K::kRelu: return k::RnnActKind::kRelu;
    case K::kTanh: return k::RnnActKind::kTanh;
    case K::kSigmoid: return k::RnnActKind::kSigmoid;
    case K::kAffine: return k::RnnActKind::kAffine;
    case K::kLeakyRelu: return k::RnnActKind::kLeakyRelu;
    case K::kThresholdedRelu: return k::RnnActKind::kThresholdedRelu;
    case K::kScaledTanh: return k::RnnActKind::kScaledTanh;
    case K::kHardSigmoid: return k::RnnActKind::kHardSigmoid;
    case K::kElu: return k::RnnActKind::kElu;
    case K::kSoftsign: return k::RnnActKind::kSoftsign;
    case K::kSoftplus: return k::RnnActKind::kSoftplus;
  }
  return k::RnnActKind::kTanh;
}

k::RnnCell kernel_cell(RecurrentOp op) {
  return op == RecurrentOp::kLstm ? k::RnnCell::kLstm : op == RecurrentOp::kGru ? k::RnnCell::kGru : k::RnnCell::kRnn;
}

bool recurrent_supports(const Node& n, std::string* why, RecurrentOp op) {
  auto a = recurrent_attrs(op, n.attrs, opset_for_build(n));
  if (!a) return reject(why, "attributes: " + a.status().to_string());
  if (n.inputs.size() > a->max_inputs() || n.outputs.size() > a->max_outputs())
    return reject(why, "more inputs or outputs than " + n.op_type + " has");
  for (size_t i : {size_t{kRnnX}, size_t{kRnnW}, size_t{kRnnR}})
    if (!has_input(n, i)) return reject(why, std::string("needs input ") + recurrent_input_name(i));
  const DataType dt = in_dtype(n, kRnnX);
  if (!is_kernel_float(dt))
    return reject(why, std::string("X has dtype ") + dtype_name(dt) +
                           "; the CUDA kernel handles float32, float16 and bfloat16");
  for (size_t i = 1; i < n.inputs.size(); ++i) {
    if (!has_input(n, i)) continue;
    if (i == kRnnSeqLens) {
      if (!require_dtype(n, i, {DataType::kInt32, DataType::kInt64}, why)) return false;
      continue;
    }
    if (in_dtype(n, i) != dt)
      return reject(why, std::string("input ") + recurrent_input_name(i) + " has dtype " +
                             dtype_name(in_dtype(n, i)) + " but X has " + dtype_name(dt));
  }
  for (size_t o = 0; o < n.outputs.size(); ++o)
    if (n.output(o) && out_dtype(n, o) != dt)
      return reject(why, "output " + std::to_string(o) + " has dtype " + dtype_name(out_dtype(n, o)) +
                             " but X has " + dtype_name(dt));
  return true;
}

// The kernel's arguments for concrete inputs (every one of them, omitted ones null), checked as
// the CPU reference checks them; `opset` is the one the attributes are read with.
Result<k::RecurrentArgs> recurrent_args(RecurrentOp op, const AttributeMap& attrs, int opset,
                                        const std::vector<const Tensor*>& in) {
  GRAFT_ASSIGN_OR_RETURN(RecurrentAttrs a, recurrent_attrs(op, attrs, opset));
  std::vector<Shape> shapes(a.max_inputs());
  std::vector<const Shape*> ptrs(a.max_inputs(), nullptr);
  for (size_t i = 0; i < a.max_inputs() && i < in.size(); ++i)
    if (in[i]) {
      shapes[i] = shape_from_values(in[i]->dims());
      ptrs[i] = &shapes[i];
    }
  for (size_t i : {size_t{kRnnX}, size_t{kRnnW}, size_t{kRnnR}})
    if (!ptrs[i]) return error(StatusCode::kInvalidModel, "required input ", recurrent_input_name(i), " is missing");
  // Every shape is concrete here, so no extent is left unknown.
  GRAFT_ASSIGN_OR_RETURN(RecurrentDims rd, recurrent_dims(a, ptrs, [] { return Dim(int64_t{-1}); }));
  k::RecurrentArgs ka;
  ka.cell = kernel_cell(op);
  ka.seq = rd.seq.value();
  ka.batch = rd.batch.value();
  ka.input = rd.input.value();
  ka.hidden = rd.hidden.value();
  ka.gates = a.gates();
  ka.dirs = static_cast<int>(a.num_directions);
  ka.batch_first = a.layout == 1;
  for (int64_t d = 0; d < a.num_directions; ++d) ka.backwards[d] = a.runs_backwards(d);
  ka.has_clip = a.clip.has_value();
  ka.clip = static_cast<float>(a.clip.value_or(0.0));
  ka.input_forget = a.input_forget;
  ka.linear_before_reset = a.linear_before_reset;
  ka.acts_per_dir = static_cast<int>(a.activations_per_direction());
  if (a.activations.size() != static_cast<size_t>(ka.acts_per_dir * ka.dirs) ||
      a.activations.size() > static_cast<size_t>(k::kRnnMaxActs))
    return error(StatusCode::kInternal, "activation list of ", static_cast<int64_t>(a.activations.size()),
                 " functions for ", ka.dirs, " directions");
  for (size_t i = 0; i < a.activations.size(); ++i) {
    ka.act[i].kind = kernel_kind(a.activations[i].kind);
    ka.act[i].alpha = static_cast<float>(a.activations[i].alpha);
    ka.act[i].beta = static_cast<float>(a.activations[i].beta);
  }
  return ka;
}

size_t recurrent_workspace(const Node& node, const std::vector<const Tensor*>& inputs, RecurrentOp op) {
  auto ka = recurrent_args(op, node.attrs, opset_for_build(node), inputs);
  return ka ? k::recurrent_workspace_floats(ka.value()) * sizeof(float) : 0;
}

Status recurrent_run(CudaExec& ex, RecurrentOp op) {
  const ExecContext& ctx = *ex.ctx;
  auto parsed = recurrent_attrs(op, attrs_of(ex), ctx.opset);
  if (!parsed) return with_node(ex, parsed.status());
  const RecurrentAttrs& a = parsed.value();
  if (ctx.inputs.size() > a.max_inputs() || ctx.outputs.size() > a.max_outputs())
    return fail(ex, StatusCode::kInternal, "called with ", static_cast<int64_t>(ctx.inputs.size()), " inputs and ",
                static_cast<int64_t>(ctx.outputs.size()), " outputs");
  std::vector<const Tensor*> in(a.max_inputs(), nullptr);
  for (size_t i = 0; i < ctx.inputs.size(); ++i) in[i] = ctx.inputs[i];
  for (size_t i : {size_t{kRnnX}, size_t{kRnnW}, size_t{kRnnR}})
    if (!in[i]) return fail(ex, StatusCode::kInvalidModel, "required input ", recurrent_input_name(i), " is missing");
  const DataType dt = in[kRnnX]->dtype();
  if (!is_kernel_float(dt)) return fail(ex, StatusCode::kInternal, "X has dtype ", dtype_name(dt));
  for (size_t i = 1; i < in.size(); ++i) {
    if (!in[i] || i == kRnnSeqLens) continue;
    if (in[i]->dtype() != dt)
      return fail(ex, StatusCode::kInvalidModel, "input ", recurrent_input_name(i), " has dtype ",
                  dtype_name(in[i]->dtype()), " but X has ", dtype_name(dt));
  }
  const Tensor* lens = in[kRnnSeqLens];
  if (lens && lens->dtype() != DataType::kInt32 && lens->dtype() != DataType::kInt64)
    return fail(ex, StatusCode::kInvalidModel, "input sequence_lens must be int32 (or int64), got ",
                dtype_name(lens->dtype()));

  auto args = recurrent_args(op, attrs_of(ex), ctx.opset, in);
  if (!args) return with_node(ex, args.status());
  const k::RecurrentArgs& ka = args.value();

  // Outputs: each optional; those present must have the shapes inference gave them.
  RecurrentDims rd{Dim(ka.seq), Dim(ka.batch), Dim(ka.input), Dim(ka.hidden)};
  const std::vector<int64_t> y_dims = shape_values(recurrent_y_shape(a, rd));
  const std::vector<int64_t> state_dims = shape_values(recurrent_state_shape(a, rd));
  Tensor* out[3] = {};
  for (size_t o = 0; o < ctx.outputs.size(); ++o) {
    out[o] = ctx.outputs[o];
    if (!out[o]) continue;
    const std::vector<int64_t>& want = o == 0 ? y_dims : state_dims;
    if (out[o]->dims() != want || out[o]->dtype() != dt)
      return fail(ex, StatusCode::kInternal, "output ", static_cast<int64_t>(o), " is ", dtype_name(out[o]->dtype()),
                  " ", ints_to_string(out[o]->dims()), ", the node makes ", dtype_name(dt), " ", ints_to_string(want));
  }

  const size_t floats = k::recurrent_workspace_floats(ka);
  if (ex.workspace_size < floats * sizeof(float) || (floats > 0 && !ex.workspace))
    return fail(ex, StatusCode::kInternal, "recurrent workspace missing (", static_cast<int64_t>(ex.workspace_size),
                " bytes, needs ", static_cast<int64_t>(floats * sizeof(float)), ")");

  k::RecurrentTensors t;
  t.x = in[kRnnX]->data();
  t.w = in[kRnnW]->data();
  t.r = in[kRnnR]->data();
  t.b = in[kRnnB] ? in[kRnnB]->data() : nullptr;
  t.lens = lens ? lens->data() : nullptr;
  t.lens64 = lens && lens->dtype() == DataType::kInt64;
  t.h0 = in[kRnnInitialH] ? in[kRnnInitialH]->data() : nullptr;
  if (op == RecurrentOp::kLstm) {
    t.c0 = in[kRnnInitialC] ? in[kRnnInitialC]->data() : nullptr;
    t.p = in[kRnnP] ? in[kRnnP]->data() : nullptr;
  }
  t.y = out[0] ? out[0]->data() : nullptr;
  t.yh = out[1] ? out[1]->data() : nullptr;
  t.yc = out[2] ? out[2]->data() : nullptr;
  return launch_status(k::launch_recurrent(ktype(dt), ka, t, static_cast<float*>(ex.workspace), floats, stream_of(ex)),
                       ex);
}

bool rnn_supports(const Node& n, std::string* why) { return recurrent_supports(n, why, RecurrentOp::kRnn); }
bool lstm_supports(const Node& n, std::string* why) { return recurrent_supports(n, why, RecurrentOp::kLstm); }
bool gru_supports(const Node& n, std::string* why) { return recurrent_supports(n, why, RecurrentOp::kGru); }
Status rnn_run(CudaExec& ex) { return recurrent_run(ex, RecurrentOp::kRnn); }
Status lstm_run(CudaExec& ex) { return recurrent_run(ex, RecurrentOp::kLstm); }
Status gru_run(CudaExec& ex) { return recurrent_run(ex, RecurrentOp::kGru); }
size_t rnn_workspace(const Node& n, const std::vector<const Tensor*>& in, const std::vector<Tensor>& /*outputs*/) {
  return recurrent_workspace(n, in, RecurrentOp::kRnn);
}
size_t lstm_workspace(const Node& n, const std::vector<const Tensor*>& in, const std::vector<Tensor>& /*outputs*/) {
  return recurrent_workspace(n, in, RecurrentOp::kLstm);
}
size_t gru_workspace(const Node& n, const std::vector<const Tensor*>& in, const std::vector<Tensor>& /*outputs*/) {
  return recurrent_workspace(n, in, RecurrentOp::kGru);
}

}  // namespace

void append_cuda_recurrent_ops(std::vector<CudaOp>& out) {
  out.push_back(CudaOp{"RNN", &rnn_supports, &rnn_run, {}, &rnn_workspace});
  out.push_back(CudaOp{"LSTM", &lstm_supports, &lstm_run, {}, &lstm_workspace});
  out.push_back(CudaOp{"GRU", &gru_supports, &gru_run, {}, &gru_workspace});
}

}  // namespace graft::cuda
