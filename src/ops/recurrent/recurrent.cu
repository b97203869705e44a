// The recurrent family's CUDA kernels and CUDA op (definition and CPU reference: recurrent.cpp).
// Attributes and shapes are read by the readers the CPU reference uses too (recurrent.h:
// recurrent_attrs, recurrent_dims), so a bad node fails with the same words on both backends.
// Everything the reference takes is handled: every direction, layout 0 and 1, clip, the activation
// lists, input_forget, linear_before_reset, every optional input and output. float32, float16 and
// bfloat16 (float64 falls back to the CPU reference).
//
// Two differences from the reference, both where it stops with an error: sequence_lens stays on
// the device, so a length outside [0, seq_length] turns that batch entry's outputs into NaN instead
// of failing the run; and there is no kMaxRecurrentTerms bound at run time (the build still checks
// it where the shapes are known, in shape inference).
#include "ops/recurrent/recurrent.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "ops/attr_util.h"

namespace graft::cuda {

// ---- kernels --------------------------------------------------------------------------------

namespace k {

// The kernels' problem is described by plain structs, which the CUDA op below fills from the
// parsed attributes.
//
// The work is one input-projection kernel over every time step (W x + Wb for each gate row), then
// per time step one kernel for all directions at once (GRU with linear_before_reset 0 takes two:
// its candidate row reads r . h of every hidden unit), then one kernel writing Y_h / Y_c. Each thread
// owns one (direction, batch, hidden unit) and accumulates its dot products in float; the hidden
// state stays float in the workspace between steps, so float16 / bfloat16 round once, on store.
// Nothing is synchronized: a CUDA graph can capture the whole sequence of launches.

// The cell and its activation functions are the definition's enums (recurrent.h), read as they
// are on the device.
struct RnnAct {
  RnnActivationKind kind = RnnActivationKind::kTanh;
  float alpha = 0, beta = 0;
};

// Three functions per direction at most (LSTM's f, g, h), two directions.
inline constexpr int kRnnMaxActs = 6;

struct RecurrentArgs {
  RecurrentOp cell = RecurrentOp::kRnn;
  int64_t seq = 0, batch = 0, input = 0, hidden = 0;
  int64_t gates = 1;                 // 1 (RNN), 4 (LSTM: i o f c), 3 (GRU: z r h)
  int dirs = 1;
  bool batch_first = false;         // layout 1: X [batch, seq, input], Y [batch, seq, dirs, hidden]
  bool backwards[2] = {false, false};  // per direction: runs from the last valid step to the first
  bool has_clip = false;
  float clip = 0;
  bool input_forget = false;         // LSTM
  bool linear_before_reset = false;  // GRU
  int acts_per_dir = 1;              // 1 (RNN), 3 (LSTM), 2 (GRU)
  RnnAct act[kRnnMaxActs];           // direction d's functions start at d * acts_per_dir
};

// Device pointers, every tensor in the op's dtype except sequence_lens (int32, or int64 when
// lens64). Optional inputs and outputs may be null.
struct RecurrentTensors {
  const void* x = nullptr;   // [seq, batch, input] ([batch, seq, input] batch-first)
  const void* w = nullptr;   // [dirs, gates*hidden, input]
  const void* r = nullptr;   // [dirs, gates*hidden, hidden]
  const void* b = nullptr;   // [dirs, 2*gates*hidden]: Wb then Rb
  const void* lens = nullptr;  // [batch]
  bool lens64 = false;
  const void* h0 = nullptr;  // [dirs, batch, hidden] ([batch, dirs, hidden] batch-first)
  const void* c0 = nullptr;  // LSTM, as h0
  const void* p = nullptr;   // LSTM [dirs, 3*hidden]: peepholes i, o, f
  void* y = nullptr;
  void* yh = nullptr;
  void* yc = nullptr;        // LSTM
};

// Floats of workspace the launcher needs: the input projection of every step, two hidden-state
// buffers, the cell state and GRU's r . h.
inline size_t recurrent_workspace_floats(const RecurrentArgs& a) {
  const int64_t units = a.dirs * a.batch * a.hidden;
  const int64_t proj = a.dirs * a.seq * a.batch * a.gates * a.hidden;
  return static_cast<size_t>(proj + 4 * units);
}

// Runs the node for dtype t (float32, float16, bfloat16). A sequence length outside [0, seq] (the
// CPU reference fails the run; a kernel cannot without a synchronization) makes every Y, Y_h and
// Y_c value of that batch entry NaN. Steps past a sequence's length leave its state as it was and
// write 0 to Y; a sequence of length 0 gets Y_h = Y_c = 0, as on the CPU. `workspace` holds
// recurrent_workspace_floats(a) floats (cudaErrorInvalidValue when `workspace_floats` is fewer).
cudaError_t launch_recurrent(KType t, const RecurrentArgs& a, const RecurrentTensors& p, float* workspace,
                             size_t workspace_floats, cudaStream_t s);

namespace {

template <typename T>
__device__ __forceinline__ float ldf(const T* p, int64_t i) {
  return static_cast<float>(Elem<T>::ld(p[i]));
}
template <typename T>
__device__ __forceinline__ void stf(T* p, int64_t i, float v) {
  p[i] = Elem<T>::st(static_cast<typename Elem<T>::C>(v));
}

// The comparisons are written as the CPU reference's std::min / std::max evaluate them, so a NaN
// passes through the clamps there and here alike.
__device__ __forceinline__ float clamp_nan_through(float v, float lo, float hi) {
  v = v < lo ? lo : v;
  return hi < v ? hi : v;
}

__device__ float activate(const RnnAct& f, float x) {
  switch (f.kind) {
    case RnnActivationKind::kRelu: return x > 0.f ? x : 0.f;
    case RnnActivationKind::kTanh: return tanhf(x);
    case RnnActivationKind::kSigmoid: {
      const float e = expf(-fabsf(x));  // at most 1: no overflow for any x
      return x >= 0.f ? 1.f / (1.f + e) : e / (1.f + e);
    }
    case RnnActivationKind::kAffine: return f.alpha * x + f.beta;
    case RnnActivationKind::kLeakyRelu: return x >= 0.f ? x : f.alpha * x;
    case RnnActivationKind::kThresholdedRelu: return x > f.alpha ? x : 0.f;
    case RnnActivationKind::kScaledTanh: return f.alpha * tanhf(f.beta * x);
    case RnnActivationKind::kHardSigmoid: return clamp_nan_through(f.alpha * x + f.beta, 0.f, 1.f);
    case RnnActivationKind::kElu: return x >= 0.f ? x : f.alpha * expm1f(x);
    case RnnActivationKind::kSoftsign: return x / (1.f + fabsf(x));
    case RnnActivationKind::kSoftplus: {
      const float m = x < 0.f ? 0.f : x;
      return m + log1pf(expf(-fabsf(x)));
    }
  }
  return x;
}

__device__ __forceinline__ float clipped(const RecurrentArgs& a, float v) {
  return a.has_clip ? clamp_nan_through(v, -a.clip, a.clip) : v;
}

__device__ __forceinline__ int64_t seq_len_of(const RecurrentArgs& a, const RecurrentTensors& p, int64_t b) {
  if (!p.lens) return a.seq;
  return p.lens64 ? static_cast<const int64_t*>(p.lens)[b] : static_cast<int64_t>(static_cast<const int32_t*>(p.lens)[b]);
}

__device__ __forceinline__ int64_t x_offset(const RecurrentArgs& a, int64_t t, int64_t b) {
  return (a.batch_first ? b * a.seq + t : t * a.batch + b) * a.input;
}
__device__ __forceinline__ int64_t y_offset(const RecurrentArgs& a, int64_t t, int64_t d, int64_t b) {
  return (a.batch_first ? (b * a.seq + t) * a.dirs + d : (t * a.dirs + d) * a.batch + b) * a.hidden;
}
__device__ __forceinline__ int64_t state_offset(const RecurrentArgs& a, int64_t d, int64_t b) {
  return (a.batch_first ? b * a.dirs + d : d * a.batch + b) * a.hidden;
}

// The workspace's parts (see recurrent_workspace_floats): proj [dirs, seq, batch, gates*hidden]
// indexed by real time (not step), then per (dir, batch, hidden) unit: two hidden-state buffers
// (step s reads buffer s % 2 and writes the other), the cell state, GRU's r . h.
struct Scratch {
  float* proj;
  float* h[2];
  float* c;
  float* rh;
};

Scratch scratch_of(const RecurrentArgs& a, float* ws) {
  const int64_t units = a.dirs * a.batch * a.hidden;
  Scratch s;
  s.proj = ws;
  s.h[0] = ws + a.dirs * a.seq * a.batch * a.gates * a.hidden;
  s.h[1] = s.h[0] + units;
  s.c = s.h[1] + units;
  s.rh = s.c + units;
  return s;
}

// proj[d, t, b, row] = Wb[d, row] + W[d, row, :] . x[t, b, :], for every step at once.
template <typename T>
__global__ void project_kernel(RecurrentArgs a, RecurrentTensors p, float* proj) {
  const int64_t gh = a.gates * a.hidden;
  const int64_t count = a.dirs * a.seq * a.batch * gh;
  const T* x = static_cast<const T*>(p.x);
  const T* w = static_cast<const T*>(p.w);
  const T* bias = static_cast<const T*>(p.b);
  GRAFT_GRID_STRIDE(i, count) {
    const int64_t row = i % gh;
    int64_t rest = i / gh;
    const int64_t b = rest % a.batch;
    rest /= a.batch;
    const int64_t t = rest % a.seq, d = rest / a.seq;
    const T* xr = x + x_offset(a, t, b);
    const T* wr = w + (d * gh + row) * a.input;
    float acc = bias ? ldf(bias, d * 2 * gh + row) : 0.f;
    for (int64_t k = 0; k < a.input; ++k) acc += ldf(wr, k) * ldf(xr, k);
    proj[i] = acc;
  }
}

template <typename T>
__global__ void init_state_kernel(RecurrentArgs a, RecurrentTensors p, Scratch sc) {
  const int64_t count = a.dirs * a.batch * a.hidden;
  GRAFT_GRID_STRIDE(i, count) {
    const int64_t j = i % a.hidden, db = i / a.hidden;
    const int64_t b = db % a.batch, d = db / a.batch;
    const int64_t at = state_offset(a, d, b) + j;
    sc.h[0][i] = p.h0 ? ldf(static_cast<const T*>(p.h0), at) : 0.f;
    sc.c[i] = p.c0 ? ldf(static_cast<const T*>(p.c0), at) : 0.f;
  }
}

// R[d, row, :] . h + Rb[d, row] for the unit's batch entry.
template <typename T>
__device__ __forceinline__ float hidden_dot(const RecurrentArgs& a, const RecurrentTensors& p, int64_t d, int64_t row,
                                            const float* h) {
  const int64_t gh = a.gates * a.hidden;
  const T* r = static_cast<const T*>(p.r) + (d * gh + row) * a.hidden;
  float acc = p.b ? ldf(static_cast<const T*>(p.b), d * 2 * gh + gh + row) : 0.f;
  for (int64_t k = 0; k < a.hidden; ++k) acc += ldf(r, k) * h[k];
  return acc;
}

// GRU with linear_before_reset 0, first half of step s: rh = r . h_prev for every unit of a batch
// entry still inside its sequence, which the candidate rows of the second half read in full.
template <typename T>
__global__ void gru_reset_kernel(RecurrentArgs a, RecurrentTensors p, Scratch sc, int64_t s) {
  const int64_t count = a.dirs * a.batch * a.hidden;
  const int64_t gh = 3 * a.hidden;
  GRAFT_GRID_STRIDE(i, count) {
    const int64_t j = i % a.hidden, db = i / a.hidden;
    const int64_t b = db % a.batch, d = db / a.batch;
    const int64_t len = seq_len_of(a, p, b);
    if (len < 0 || len > a.seq || s >= len) continue;
    const int64_t t = a.backwards[d] ? len - 1 - s : s;
    const float* hp = sc.h[s % 2] + db * a.hidden;
    const float* xw = sc.proj + ((d * a.seq + t) * a.batch + b) * gh;
    const float r = activate(a.act[d * a.acts_per_dir], clipped(a, xw[a.hidden + j] + hidden_dot<T>(a, p, d, a.hidden + j, hp)));
    sc.rh[i] = r * hp[j];
  }
}

// Step s of every direction: one thread per (direction, batch, hidden unit).
template <typename T>
__global__ void step_kernel(RecurrentArgs a, RecurrentTensors p, Scratch sc, int64_t s) {
  const int64_t count = a.dirs * a.batch * a.hidden;
  const int64_t H = a.hidden, gh = a.gates * H;
  T* y = static_cast<T*>(p.y);
  GRAFT_GRID_STRIDE(i, count) {
    const int64_t j = i % H, db = i / H;
    const int64_t b = db % a.batch, d = db / a.batch;
    const int64_t len = seq_len_of(a, p, b);
    const float* hp = sc.h[s % 2] + db * H;
    float* hn = sc.h[(s + 1) % 2] + db * H;
    if (len < 0 || len > a.seq) {
      hn[j] = NAN;
      if (y) stf(y, y_offset(a, s, d, b) + j, NAN);
      continue;
    }
    if (s >= len) {
      // Past the end: the state stays as it was, and Y at time s (in either direction's order the
      // times [len, seq) are those no step reaches) is 0.
      hn[j] = hp[j];
      if (y) stf(y, y_offset(a, s, d, b) + j, 0.f);
      continue;
    }
    const int64_t t = a.backwards[d] ? len - 1 - s : s;
    const float* xw = sc.proj + ((d * a.seq + t) * a.batch + b) * gh;
    const RnnAct* act = a.act + d * a.acts_per_dir;
    float next;
    if (a.cell == RecurrentOp::kRnn) {
      next = activate(act[0], clipped(a, xw[j] + hidden_dot<T>(a, p, d, j, hp)));
    } else if (a.cell == RecurrentOp::kLstm) {
      // Gates i, o, f, c; peepholes i, o, f. The output gate's peephole sees the new cell state.
      const T* peep = p.p ? static_cast<const T*>(p.p) + d * 3 * H : nullptr;
      const float cp = sc.c[i];
      const float ig =
          activate(act[0], clipped(a, xw[j] + hidden_dot<T>(a, p, d, j, hp) + (peep ? ldf(peep, j) * cp : 0.f)));
      const float fg = a.input_forget ? 1.f - ig
                                      : activate(act[0], clipped(a, xw[2 * H + j] + hidden_dot<T>(a, p, d, 2 * H + j, hp) +
                                                                        (peep ? ldf(peep, 2 * H + j) * cp : 0.f)));
      const float cand = activate(act[1], clipped(a, xw[3 * H + j] + hidden_dot<T>(a, p, d, 3 * H + j, hp)));
      const float cn = fg * cp + ig * cand;
      const float og =
          activate(act[0], clipped(a, xw[H + j] + hidden_dot<T>(a, p, d, H + j, hp) + (peep ? ldf(peep, H + j) * cn : 0.f)));
      sc.c[i] = cn;
      next = og * activate(act[2], clipped(a, cn));
    } else {
      // Gates z, r, h.
      const float z = activate(act[0], clipped(a, xw[j] + hidden_dot<T>(a, p, d, j, hp)));
      float pre;
      if (a.linear_before_reset) {
        const float r = activate(act[0], clipped(a, xw[H + j] + hidden_dot<T>(a, p, d, H + j, hp)));
        pre = xw[2 * H + j] + r * hidden_dot<T>(a, p, d, 2 * H + j, hp);
      } else {
        pre = xw[2 * H + j] + hidden_dot<T>(a, p, d, 2 * H + j, sc.rh + db * H);
      }
      const float cand = activate(act[1], clipped(a, pre));
      next = (1.f - z) * cand + z * hp[j];
    }
    hn[j] = next;
    if (y) stf(y, y_offset(a, t, d, b) + j, next);
  }
}

template <typename T>
__global__ void final_state_kernel(RecurrentArgs a, RecurrentTensors p, Scratch sc) {
  const int64_t count = a.dirs * a.batch * a.hidden;
  const float* h = sc.h[a.seq % 2];
  GRAFT_GRID_STRIDE(i, count) {
    const int64_t j = i % a.hidden, db = i / a.hidden;
    const int64_t b = db % a.batch, d = db / a.batch;
    const int64_t len = seq_len_of(a, p, b);
    const bool bad = len < 0 || len > a.seq;
    const int64_t at = state_offset(a, d, b) + j;
    if (p.yh) stf(static_cast<T*>(p.yh), at, bad ? NAN : len > 0 ? h[i] : 0.f);
    if (p.yc) stf(static_cast<T*>(p.yc), at, bad ? NAN : len > 0 ? sc.c[i] : 0.f);
  }
}

template <typename T>
cudaError_t launch_typed(const RecurrentArgs& a, const RecurrentTensors& p, float* ws, cudaStream_t s) {
  const Scratch sc = scratch_of(a, ws);
  const int64_t units = a.dirs * a.batch * a.hidden;
  if (units == 0) return cudaGetLastError();
  const int64_t proj = a.dirs * a.seq * a.batch * a.gates * a.hidden;
  if (proj > 0) project_kernel<T><<<grid_for(proj), kThreads, 0, s>>>(a, p, sc.proj);
  init_state_kernel<T><<<grid_for(units), kThreads, 0, s>>>(a, p, sc);
  const bool two_phase = a.cell == RecurrentOp::kGru && !a.linear_before_reset;
  for (int64_t step = 0; step < a.seq; ++step) {
    if (two_phase) gru_reset_kernel<T><<<grid_for(units), kThreads, 0, s>>>(a, p, sc, step);
    step_kernel<T><<<grid_for(units), kThreads, 0, s>>>(a, p, sc, step);
    // A failed launch would fail every later one too; stop at the first.
    const cudaError_t e = cudaPeekAtLastError();
    if (e != cudaSuccess) return e;
  }
  final_state_kernel<T><<<grid_for(units), kThreads, 0, s>>>(a, p, sc);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_recurrent(KType t, const RecurrentArgs& a, const RecurrentTensors& p, float* workspace,
                             size_t workspace_floats, cudaStream_t s) {
  // x, w and r are not checked for null: a zero-sized tensor may have no buffer, and the kernels
  // read them only where they have elements.
  if (a.dirs < 1 || a.dirs > 2 || a.acts_per_dir * a.dirs > kRnnMaxActs ||
      a.gates != (a.cell == RecurrentOp::kLstm ? 4 : a.cell == RecurrentOp::kGru ? 3 : 1))
    return cudaErrorInvalidValue;
  const size_t need = recurrent_workspace_floats(a);
  if (workspace_floats < need || (need > 0 && !workspace)) return cudaErrorInvalidValue;
  cudaError_t e = cudaSuccess;
  GRAFT_FLOAT_DISPATCH(t, e = launch_typed<T>(a, p, workspace, s));
  return e;
}

}  // namespace k

// ---- CUDA ops -------------------------------------------------------------------------------

namespace {

using namespace util;

bool is_kernel_float(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kBFloat16;
}

// The opset the attributes are read with in supports()/workspace: a node of unknown opset (0) is
// read as opset 14, so `layout` is accepted there and checked against the real opset by run().
int opset_for_build(const Node& n) { return n.opset > 0 ? n.opset : 14; }

// The keys: X float32/float16/bfloat16, sequence_lens (if given) int32/int64; every other input and
// every output has X's dtype.
bool recurrent_supports(const Node& n, std::string* why, RecurrentOp op) {
  auto a = recurrent_attrs(op, n.attrs, opset_for_build(n));
  if (!a) return reject(why, "attributes: " + a.status().to_string());
  if (n.inputs.size() > a->max_inputs() || n.outputs.size() > a->max_outputs())
    return reject(why, "more inputs or outputs than " + n.op_type + " has");
  for (size_t i : {size_t{kRnnX}, size_t{kRnnW}, size_t{kRnnR}})
    if (!has_input(n, i)) return reject(why, std::string("needs input ") + recurrent_input_name(i));
  const DataType dt = in_dtype(n, kRnnX);
  for (size_t i = 1; i < n.inputs.size(); ++i) {
    if (!has_input(n, i) || i == kRnnSeqLens) continue;
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
  ka.cell = op;
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
    ka.act[i].kind = a.activations[i].kind;
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
  // X (input 0) float32/float16/bfloat16; sequence_lens (input 4) int32/int64.
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuFloats), input_dtypes(4, kGpuInts)},
                              CudaOp{"RNN", &rnn_supports, &rnn_run, {}, &rnn_workspace}));
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuFloats), input_dtypes(4, kGpuInts)},
                              CudaOp{"LSTM", &lstm_supports, &lstm_run, {}, &lstm_workspace}));
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuFloats), input_dtypes(4, kGpuInts)},
                              CudaOp{"GRU", &gru_supports, &gru_run, {}, &gru_workspace}));
}

}  // namespace graft::cuda
