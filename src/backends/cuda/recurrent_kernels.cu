#include <cmath>
#include <cstdint>

#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/recurrent_kernels.cuh"

namespace graft::cuda::k {
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
    case RnnActKind::kRelu: return x > 0.f ? x : 0.f;
    case RnnActKind::kTanh: return tanhf(x);
    case RnnActKind::kSigmoid: {
      const float e = expf(-fabsf(x));  // at most 1: no overflow for any x
      return x >= 0.f ? 1.f / (1.f + e) : e / (1.f + e);
    }
    case RnnActKind::kAffine: return f.alpha * x + f.beta;
    case RnnActKind::kLeakyRelu: return x >= 0.f ? x : f.alpha * x;
    case RnnActKind::kThresholdedRelu: return x > f.alpha ? x : 0.f;
    case RnnActKind::kScaledTanh: return f.alpha * tanhf(f.beta * x);
    case RnnActKind::kHardSigmoid: return clamp_nan_through(f.alpha * x + f.beta, 0.f, 1.f);
    case RnnActKind::kElu: return x >= 0.f ? x : f.alpha * expm1f(x);
    case RnnActKind::kSoftsign: return x / (1.f + fabsf(x));
    case RnnActKind::kSoftplus: {
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
    if (a.cell == RnnCell::kRnn) {
      next = activate(act[0], clipped(a, xw[j] + hidden_dot<T>(a, p, d, j, hp)));
    } else if (a.cell == RnnCell::kLstm) {
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
  const bool two_phase = a.cell == RnnCell::kGru && !a.linear_before_reset;
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
      a.gates != (a.cell == RnnCell::kLstm ? 4 : a.cell == RnnCell::kGru ? 3 : 1))
    return cudaErrorInvalidValue;
  const size_t need = recurrent_workspace_floats(a);
  if (workspace_floats < need || (need > 0 && !workspace)) return cudaErrorInvalidValue;
  cudaError_t e = cudaSuccess;
  GRAFT_FLOAT_DISPATCH(t, e = launch_typed<T>(a, p, workspace, s));
  return e;
}

}  // namespace graft::cuda::k
