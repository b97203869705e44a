// Launchers for the CUDA kernels of RNN, LSTM and GRU (CPU reference: src/backends/cpu/recurrent.cpp;
// attributes and shapes: src/ops/recurrent_attrs.h). Host-compilable: the op file fills the
// plain structs below from the CPU side's parsed attributes.
//
// The work is one input-projection kernel over every time step (W x + Wb for each gate row), then
// per time step one kernel for all directions at once (GRU with linear_before_reset 0 takes two:
// its candidate row reads r . h of every hidden unit), then one kernel writing Y_h / Y_c. Each thread
// owns one (direction, batch, hidden unit) and accumulates its dot products in float; the hidden
// state stays float in the workspace between steps, so float16 / bfloat16 round once, on store.
// Nothing is synchronized: a CUDA graph can capture the whole sequence of launches.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/cuda/cuda_kernel_common.cuh"

namespace graft::cuda::k {

enum class RnnCell : int { kRnn, kLstm, kGru };

// The spec's activation functions (the same list as graft::RnnActivationKind, mapped by name
// in recurrent_ops.cpp, not by value).
enum class RnnActKind : int {
  kRelu,
  kTanh,
  kSigmoid,
  kAffine,
  kLeakyRelu,
  kThresholdedRelu,
  kScaledTanh,
  kHardSigmoid,
  kElu,
  kSoftsign,
  kSoftplus,
};

struct RnnAct {
  RnnActKind kind = RnnActKind::kTanh;
  float alpha = 0, beta = 0;
};

// Three functions per direction at most (LSTM's f, g, h), two directions.
inline constexpr int kRnnMaxActs = 6;

struct RecurrentArgs {
  RnnCell cell = RnnCell::kRnn;
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

}  // namespace graft::cuda::k
