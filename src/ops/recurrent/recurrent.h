// The recurrent family (RNN, LSTM, GRU): what its definition (recurrent.cpp: schemas, inference,
// CPU reference) and its CUDA op (recurrent.cu) share. The attributes and shapes (opset 7 semantics,
// and opset 14's `layout`) are read one way by all three, so build-time inference and a run on
// either device refuse a bad node with the same words (naming the attribute or input).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "graft/attribute.h"
#include "graft/dim.h"
#include "graft/status.h"

namespace graft {

// The most multiply-adds one node may take (every step's gate rows times the inputs and hidden
// values each sums): the time loop is serial, so a modest model could otherwise ask for hours.
inline constexpr int64_t kMaxRecurrentTerms = int64_t{1} << 32;

enum class RecurrentOp { kRnn, kLstm, kGru };

// The activation functions the spec lists for f, g and h.
enum class RnnActivationKind {
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

struct RnnActivation {
  RnnActivationKind kind = RnnActivationKind::kTanh;
  double alpha = 0, beta = 0;
  double operator()(double x) const;
};

// Input slots, the same for the three ops (RNN and GRU stop at initial_h).
enum RecurrentInput : size_t { kRnnX = 0, kRnnW, kRnnR, kRnnB, kRnnSeqLens, kRnnInitialH, kRnnInitialC, kRnnP };
// The spec's name of input i, for errors.
const char* recurrent_input_name(size_t i);

struct RecurrentAttrs {
  RecurrentOp op = RecurrentOp::kRnn;
  bool bidirectional = false;
  bool reverse = false;                // direction "reverse" (one direction, run backwards)
  int64_t num_directions = 1;
  std::optional<int64_t> hidden_size;  // nullopt: R's last dim decides
  // activations_per_direction() entries for each direction, forward's first.
  std::vector<RnnActivation> activations;
  std::optional<double> clip;
  bool input_forget = false;           // LSTM
  bool linear_before_reset = false;    // GRU
  int64_t layout = 0;                  // opset 14: 1 puts batch first

  int64_t gates() const;                     // 1 (RNN), 4 (LSTM: i o f c), 3 (GRU: z r h)
  int64_t activations_per_direction() const; // 1 (f), 3 (f g h), 2 (f g)
  size_t max_inputs() const { return op == RecurrentOp::kLstm ? 8 : 6; }
  size_t max_outputs() const { return op == RecurrentOp::kLstm ? 3 : 2; }
  // Direction d (0 or 1 when bidirectional) runs from the last valid step to the first.
  bool runs_backwards(int64_t d) const { return reverse || (bidirectional && d == 1); }
};

// "RNN", "LSTM" or "GRU", for errors.
const char* recurrent_op_name(RecurrentOp op);

// The node's attributes; errors name the attribute. `layout` is an error before opset 14, where it
// does not exist (a model that sets it means batch-first data, which opset 7 would misread).
Result<RecurrentAttrs> recurrent_attrs(RecurrentOp op, const AttributeMap& attrs, int opset);

// The problem's extents, symbolic where the inputs' shapes are.
struct RecurrentDims {
  Dim seq, batch, input, hidden;
};

// Checks every input shape against the others (ranks, num_directions, gates * hidden_size, batch,
// layout) where both sides are numbers, and returns the extents. shapes[i]: input i's shape, or
// nullptr when the input is omitted or its rank unknown; `unknown` makes a fresh dim for an extent
// no known shape decides. Errors name the input (and hidden_size when the attribute disagrees).
Result<RecurrentDims> recurrent_dims(const RecurrentAttrs& a, const std::vector<const Shape*>& shapes,
                                     const std::function<Dim()>& unknown);

// Output shapes: Y [seq, dirs, batch, hidden] ([batch, seq, dirs, hidden] with layout 1), and
// Y_h / Y_c [dirs, batch, hidden] ([batch, dirs, hidden]).
Shape recurrent_y_shape(const RecurrentAttrs& a, const RecurrentDims& d);
Shape recurrent_state_shape(const RecurrentAttrs& a, const RecurrentDims& d);

// kUnsupported when the node would take more than kMaxRecurrentTerms multiply-adds.
Status check_recurrent_work(const RecurrentAttrs& a, int64_t seq, int64_t batch, int64_t input, int64_t hidden);

}  // namespace graft
