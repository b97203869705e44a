#include "backends/cpu/recurrent.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/kernel_util.h"
#include "backends/cpu/nn.h"
#include "core/checked_math.h"

namespace graft::cpu {

// ---- the kernel ------------------------------------------------------------------------------------

namespace {

Status run_recurrent(ExecContext& ctx, RecurrentOp op) {
  GRAFT_ASSIGN_OR_RETURN(RecurrentAttrs a, recurrent_attrs(op, attrs_of(ctx), ctx.opset));
  if (ctx.inputs.size() > a.max_inputs() || ctx.outputs.size() > a.max_outputs())
    return error(StatusCode::kInternal, recurrent_op_name(op), " kernel called with ", static_cast<int64_t>(ctx.inputs.size()),
                 " inputs and ", static_cast<int64_t>(ctx.outputs.size()), " outputs");
  const Tensor* in[8] = {};
  for (size_t i = 0; i < ctx.inputs.size(); ++i) in[i] = ctx.inputs[i];
  for (size_t i : {size_t{kRnnX}, size_t{kRnnW}, size_t{kRnnR}})
    GRAFT_RETURN_IF_ERROR(require_float_tensor(in[i], recurrent_input_name(i)));
  const DataType dt = in[kRnnX]->dtype();
  for (size_t i = 1; i < a.max_inputs(); ++i) {
    if (!in[i] || i == kRnnSeqLens) continue;
    GRAFT_RETURN_IF_ERROR(require_float_tensor(in[i], recurrent_input_name(i)));
    if (in[i]->dtype() != dt)
      return error(StatusCode::kInvalidModel, "input ", recurrent_input_name(i), " has dtype ",
                   dtype_name(in[i]->dtype()), " but X has ", dtype_name(dt));
  }
  const Tensor* lens_t = in[kRnnSeqLens];
  if (lens_t) {
    if (lens_t->dtype() != DataType::kInt32 && lens_t->dtype() != DataType::kInt64)
      return error(StatusCode::kInvalidModel, "input sequence_lens must be int32 (or int64), got ", dtype_name(lens_t->dtype()));
    if (lens_t->device() != DeviceType::kCPU)
      return error(StatusCode::kInternal, "input sequence_lens must be a host tensor");
  }
  std::vector<Shape> shapes(a.max_inputs());
  std::vector<const Shape*> ptrs(a.max_inputs(), nullptr);
  for (size_t i = 0; i < a.max_inputs(); ++i)
    if (in[i]) {
      shapes[i] = shape_from_values(in[i]->dims());
      ptrs[i] = &shapes[i];
    }
  // Every shape is concrete here, so no extent is left unknown.
  GRAFT_ASSIGN_OR_RETURN(RecurrentDims rd, recurrent_dims(a, ptrs, [] { return Dim(int64_t{-1}); }));
  const int64_t S = rd.seq.value(), N = rd.batch.value(), I = rd.input.value(), H = rd.hidden.value();
  const int64_t D = a.num_directions, G = a.gates();
  GRAFT_RETURN_IF_ERROR(check_recurrent_work(a, S, N, I, H));

  // Outputs: each optional; those present must have the shapes inference gave them.
  Tensor* out[3] = {};
  for (size_t o = 0; o < ctx.outputs.size(); ++o) out[o] = ctx.outputs[o];
  const std::vector<int64_t> y_dims = shape_values(recurrent_y_shape(a, rd));
  const std::vector<int64_t> state_dims = shape_values(recurrent_state_shape(a, rd));
  for (size_t o = 0; o < a.max_outputs(); ++o) {
    if (!out[o]) continue;
    const std::vector<int64_t>& want = o == 0 ? y_dims : state_dims;
    if (out[o]->dims() != want || out[o]->dtype() != dt)
      return error(StatusCode::kInternal, "output ", static_cast<int64_t>(o), " is ", dtype_name(out[o]->dtype()),
                   " ", ints_to_string(out[o]->dims()), ", the node makes ", dtype_name(dt), " ",
                   ints_to_string(want));
  }

  std::vector<int64_t> lens(static_cast<size_t>(N), S);
  if (lens_t) {
    lens = lens_t->to_int64_vector();
    for (int64_t b = 0; b < N; ++b)
      if (lens[static_cast<size_t>(b)] < 0 || lens[static_cast<size_t>(b)] > S)
        return error(StatusCode::kInvalidArgument, "input sequence_lens[", b, "] is ", lens[static_cast<size_t>(b)],
                     "; each length must be in [0, seq_length = ", S, "]");
  }

  const std::vector<double> X = load_doubles(*in[kRnnX]), W = load_doubles(*in[kRnnW]), R = load_doubles(*in[kRnnR]);
  const std::vector<double> B = in[kRnnB] ? load_doubles(*in[kRnnB]) : std::vector<double>();
  const std::vector<double> H0 = in[kRnnInitialH] ? load_doubles(*in[kRnnInitialH]) : std::vector<double>();
  const bool lstm = op == RecurrentOp::kLstm;
  const std::vector<double> C0 = lstm && in[kRnnInitialC] ? load_doubles(*in[kRnnInitialC]) : std::vector<double>();
  const std::vector<double> P = lstm && in[kRnnP] ? load_doubles(*in[kRnnP]) : std::vector<double>();

  // Flat offsets of the layout-dependent tensors.
  auto x_at = [&](int64_t t, int64_t b) { return (a.layout ? b * S + t : t * N + b) * I; };
  auto y_at = [&](int64_t t, int64_t d, int64_t b) { return ((a.layout ? (b * S + t) * D + d : (t * D + d) * N + b)) * H; };
  auto state_at = [&](int64_t d, int64_t b) { return (a.layout ? b * D + d : d * N + b) * H; };

  std::vector<double> Y(static_cast<size_t>(S * D * N * H), 0.0);  // zero past each sequence's end
  std::vector<double> Yh(static_cast<size_t>(D * N * H), 0.0), Yc(Yh.size(), 0.0);
  std::vector<double> h(static_cast<size_t>(H)), c(static_cast<size_t>(H)), next(static_cast<size_t>(H));
  std::vector<double> xw(static_cast<size_t>(G * H)), hr(static_cast<size_t>(G * H)), rh(static_cast<size_t>(H));
  auto clipped = [&](double v) { return a.clip ? std::min(std::max(v, -*a.clip), *a.clip) : v; };

  for (int64_t d = 0; d < D; ++d) {
    const size_t per = static_cast<size_t>(a.activations_per_direction());
    const RnnActivation* act = &a.activations[static_cast<size_t>(d) * per];
    const double* w = W.data() + d * G * H * I;
    const double* r = R.data() + d * G * H * H;
    const double* wb = B.empty() ? nullptr : B.data() + d * 2 * G * H;
    const double* rb = wb ? wb + G * H : nullptr;
    const double* p = P.empty() ? nullptr : P.data() + d * 3 * H;
    for (int64_t b = 0; b < N; ++b) {
      const int64_t len = lens[static_cast<size_t>(b)];
      for (int64_t j = 0; j < H; ++j) {
        const size_t s = static_cast<size_t>(state_at(d, b) + j);
        h[static_cast<size_t>(j)] = H0.empty() ? 0.0 : H0[s];
        c[static_cast<size_t>(j)] = C0.empty() ? 0.0 : C0[s];
      }
      for (int64_t step = 0; step < len; ++step) {
        const int64_t t = a.runs_backwards(d) ? len - 1 - step : step;
        const double* x = X.data() + x_at(t, b);
        // xw = W x + Wb and hr = R h + Rb for every gate row; GRU's candidate row with
        // linear_before_reset 0 takes R (r . h) instead, so its hr is recomputed below.
        for (int64_t row = 0; row < G * H; ++row) {
          double sx = wb ? wb[row] : 0.0, sh = rb ? rb[row] : 0.0;
          for (int64_t k = 0; k < I; ++k) sx += w[row * I + k] * x[k];
          for (int64_t k = 0; k < H; ++k) sh += r[row * H + k] * h[static_cast<size_t>(k)];
          xw[static_cast<size_t>(row)] = sx;
          hr[static_cast<size_t>(row)] = sh;
        }
        auto g = [&](int64_t gate, int64_t j) {
          const size_t i = static_cast<size_t>(gate * H + j);
          return xw[i] + hr[i];
        };
        if (op == RecurrentOp::kRnn) {
          for (int64_t j = 0; j < H; ++j) next[static_cast<size_t>(j)] = act[0](clipped(g(0, j)));
        } else if (op == RecurrentOp::kGru) {
          // Gates z, r, h (rows [0, H), [H, 2H), [2H, 3H)).
          for (int64_t j = 0; j < H; ++j) rh[static_cast<size_t>(j)] = act[0](clipped(g(1, j))) * h[static_cast<size_t>(j)];
          for (int64_t j = 0; j < H; ++j) {
            const double z = act[0](clipped(g(0, j)));
            double pre;
            if (a.linear_before_reset) {
              const double rr = act[0](clipped(g(1, j)));
              pre = xw[static_cast<size_t>(2 * H + j)] + rr * hr[static_cast<size_t>(2 * H + j)];
            } else {
              double s = rb ? rb[2 * H + j] : 0.0;
              for (int64_t k = 0; k < H; ++k) s += r[(2 * H + j) * H + k] * rh[static_cast<size_t>(k)];
              pre = xw[static_cast<size_t>(2 * H + j)] + s;
            }
            const double cand = act[1](clipped(pre));
            next[static_cast<size_t>(j)] = (1.0 - z) * cand + z * h[static_cast<size_t>(j)];
          }
        } else {
          // Gates i, o, f, c (rows [0, H), [H, 2H), [2H, 3H), [3H, 4H)); peepholes i, o, f.
          for (int64_t j = 0; j < H; ++j) {
            const size_t js = static_cast<size_t>(j);
            const double cp = c[js];
            const double ig = act[0](clipped(g(0, j) + (p ? p[j] * cp : 0.0)));
            const double fg = a.input_forget ? 1.0 - ig : act[0](clipped(g(2, j) + (p ? p[2 * H + j] * cp : 0.0)));
            const double cand = act[1](clipped(g(3, j)));
            const double cn = fg * cp + ig * cand;
            // The output gate's peephole sees the new cell state.
            const double og = act[0](clipped(g(1, j) + (p ? p[H + j] * cn : 0.0)));
            c[js] = cn;
            next[js] = og * act[2](clipped(cn));
          }
        }
        h.swap(next);
        std::copy(h.begin(), h.end(), Y.begin() + y_at(t, d, b));
      }
      // A sequence of length 0 has no last output: its Y_h and Y_c stay 0, as ONNX Runtime leaves them.
      if (len > 0) {
        std::copy(h.begin(), h.end(), Yh.begin() + state_at(d, b));
        std::copy(c.begin(), c.end(), Yc.begin() + state_at(d, b));
      }
    }
  }
  if (out[0]) store_doubles(*out[0], Y);
  if (out[1]) store_doubles(*out[1], Yh);
  if (out[2]) store_doubles(*out[2], Yc);
  return Status::ok();
}

}  // namespace

Status rnn(ExecContext& ctx) { return run_recurrent(ctx, RecurrentOp::kRnn); }
Status lstm(ExecContext& ctx) { return run_recurrent(ctx, RecurrentOp::kLstm); }
Status gru(ExecContext& ctx) { return run_recurrent(ctx, RecurrentOp::kGru); }

}  // namespace graft::cpu
