// Case tables of the recurrent ONNX ops GRU and LSTM (opset 14): every direction, with and
// without B, initial_h (and initial_c, peepholes P for LSTM), both linear_before_reset forms of
// GRU, LSTM's input_forget, sequence_lens, layout 1, clip and non-default activation lists,
// against independent float64 formulas written from the ONNX operator spec. (RNN's table is in
// cases_math.cpp.)
//
// Weights and biases are drawn from [-0.5, 0.5] and X from [-1, 1], so the gates' pre-activations
// stay in the sigmoid's and tanh's sloped range and every step's result depends on its inputs.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "case_util.h"
#include "harness.h"

namespace graft::optest {
namespace {

// ---- the spec's pieces, shared by both formulas -------------------------------------------------

// An activation function of the spec's list, by name, with its alpha and beta.
struct SpecActivation {
  std::string name;
  double alpha = 0.0, beta = 0.0;

  double operator()(double x) const {
    if (name == "Sigmoid") return 1.0 / (1.0 + std::exp(-x));
    if (name == "Tanh") return std::tanh(x);
    if (name == "Relu") return x > 0.0 ? x : 0.0;
    if (name == "HardSigmoid") return std::min(1.0, std::max(0.0, alpha * x + beta));
    if (name == "Softsign") return x / (1.0 + std::fabs(x));
    if (name == "ScaledTanh") return alpha * std::tanh(beta * x);
    if (name == "LeakyRelu") return x >= 0.0 ? x : alpha * x;
    return std::nan("");  // a function this formula does not know: the comparison fails
  }
};

// The node's activation functions, `per` for each direction (forward's first). Absent: the
// spec's defaults; one direction's list on a bidirectional node serves both. activation_alpha and
// activation_beta are consumed in order by the functions that take the value (the cases below
// give them only where every reading of the spec agrees); the defaults are those of the ONNX
// operators of the same name.
std::vector<SpecActivation> activations_of(const AttributeMap& a, int64_t dirs,
                                           const std::vector<std::string>& defaults) {
  std::vector<std::string> names = a.get_strings("activations", {}).value();
  if (names.empty())
    for (int64_t d = 0; d < dirs; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  if (names.size() < defaults.size() * static_cast<size_t>(dirs)) {
    const std::vector<std::string> one = names;
    names.insert(names.end(), one.begin(), one.end());
  }
  const std::vector<float> alphas = a.get_floats("activation_alpha", {}).value();
  const std::vector<float> betas = a.get_floats("activation_beta", {}).value();
  size_t next_alpha = 0, next_beta = 0;
  std::vector<SpecActivation> out;
  for (const std::string& n : names) {
    SpecActivation f{n};
    const bool takes_alpha = n == "HardSigmoid" || n == "ScaledTanh" || n == "LeakyRelu";
    const bool takes_beta = n == "HardSigmoid" || n == "ScaledTanh";
    if (n == "HardSigmoid") f.alpha = 0.2, f.beta = 0.5;
    if (n == "ScaledTanh") f.alpha = 1.0, f.beta = 1.0;
    if (n == "LeakyRelu") f.alpha = 0.01;
    if (takes_alpha && next_alpha < alphas.size()) f.alpha = alphas[next_alpha++];
    if (takes_beta && next_beta < betas.size()) f.beta = betas[next_beta++];
    out.push_back(f);
  }
  return out;
}

// The extents, direction, layout, lengths and clip of one node, and where its values lie.
struct Recurrence {
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1;
  bool batch_first = false;  // layout 1
  std::string direction;
  std::vector<int64_t> lens;  // per batch entry; seq when sequence_lens is omitted
  std::optional<double> clip;

  // Direction d reads the sequence from its last valid step back to the first.
  bool backwards(int64_t d) const {
    return direction == "reverse" || (direction == "bidirectional" && d == 1);
  }
  double clamp(double v) const { return clip ? std::max(-*clip, std::min(*clip, v)) : v; }
  // X[t, b, k] (layout 0) or X[b, t, k] (layout 1).
  size_t x_at(int64_t t, int64_t b, int64_t k) const {
    return static_cast<size_t>(((batch_first ? b * seq + t : t * batch + b)) * input + k);
  }
  // Y[t, d, b, j] (layout 0) or Y[b, t, d, j] (layout 1).
  size_t y_at(int64_t t, int64_t d, int64_t b, int64_t j) const {
    return static_cast<size_t>(
        (batch_first ? (b * seq + t) * dirs + d : (t * dirs + d) * batch + b) * hidden + j);
  }
  // initial_h, initial_c, Y_h, Y_c: [d, b, j] (layout 0) or [b, d, j] (layout 1).
  size_t state_at(int64_t d, int64_t b, int64_t j) const {
    return static_cast<size_t>((batch_first ? b * dirs + d : d * batch + b) * hidden + j);
  }
};

Recurrence recurrence_of(const Values& in, const DimsList& dims, const AttributeMap& a, size_t lens_input) {
  Recurrence r;
  r.batch_first = a.get_int("layout", 0).value() == 1;
  r.seq = dims[0][r.batch_first ? 1 : 0];
  r.batch = dims[0][r.batch_first ? 0 : 1];
  r.input = dims[0][2];
  r.dirs = dims[1][0];    // W [dirs, gates * hidden, input]
  r.hidden = dims[2][2];  // R [dirs, gates * hidden, hidden]
  r.direction = a.get_string("direction", "forward").value();
  r.lens.assign(static_cast<size_t>(r.batch), r.seq);
  if (lens_input < in.size() && !in[lens_input].empty())
    for (int64_t b = 0; b < r.batch; ++b)
      r.lens[static_cast<size_t>(b)] = static_cast<int64_t>(in[lens_input][static_cast<size_t>(b)]);
  if (a.has("clip")) r.clip = a.get_float("clip", 0.0f).value();
  return r;
}

// Input i's values, or n zeros where the node leaves it out (the spec's default for B, initial_h,
// initial_c and P).
std::vector<double> values_or_zeros(const Values& in, size_t i, int64_t n) {
  if (i < in.size() && !in[i].empty()) return in[i];
  return std::vector<double>(static_cast<size_t>(n), 0.0);
}

// Row `row` of direction d of a [dirs, rows, cols] matrix times v.
double row_times(const std::vector<double>& m, int64_t d, int64_t rows, int64_t cols, int64_t row,
                 const double* v) {
  double s = 0.0;
  for (int64_t k = 0; k < cols; ++k) s += m[static_cast<size_t>((d * rows + row) * cols + k)] * v[k];
  return s;
}

// ---- GRU ----------------------------------------------------------------------------------------
// Inputs X, W [dirs, 3H, in] (gates z, r, h), R [dirs, 3H, H], B [dirs, 6H] (Wb[zrh] then
// Rb[zrh]), sequence_lens, initial_h. With f = Sigmoid and g = Tanh by default:
//   zt = f(Xt Wz^T + Ht-1 Rz^T + Wbz + Rbz),  rt = f(Xt Wr^T + Ht-1 Rr^T + Wbr + Rbr)
//   linear_before_reset 0: ht = g(Xt Wh^T + (rt . Ht-1) Rh^T + Rbh + Wbh)
//   linear_before_reset 1: ht = g(Xt Wh^T + rt . (Ht-1 Rh^T + Rbh) + Wbh)
//   Ht = (1 - zt) . ht + zt . Ht-1
// clip bounds every activation's input; steps past a sequence's length leave Y at 0.
Values gru_formula(const Values& in, const DimsList& dims, const AttributeMap& a) {
  const Recurrence p = recurrence_of(in, dims, a, 4);
  const int64_t H = p.hidden, I = p.input, rows = 3 * H;
  const bool linear_before_reset = a.get_int("linear_before_reset", 0).value() == 1;
  const std::vector<SpecActivation> acts = activations_of(a, p.dirs, {"Sigmoid", "Tanh"});
  const std::vector<double>& X = in[0];
  const std::vector<double>& W = in[1];
  const std::vector<double>& R = in[2];
  const std::vector<double> B = values_or_zeros(in, 3, p.dirs * 6 * H);
  const std::vector<double> H0 = values_or_zeros(in, 5, p.dirs * p.batch * H);
  std::vector<double> Y(static_cast<size_t>(p.seq * p.dirs * p.batch * H), 0.0);
  std::vector<double> Yh(static_cast<size_t>(p.dirs * p.batch * H), 0.0);
  for (int64_t d = 0; d < p.dirs; ++d) {
    const SpecActivation& f = acts[static_cast<size_t>(2 * d)];
    const SpecActivation& g = acts[static_cast<size_t>(2 * d + 1)];
    // Wb and Rb of gate `gate` (0 z, 1 r, 2 h), unit j.
    auto wb = [&](int64_t gate, int64_t j) { return B[static_cast<size_t>(d * 6 * H + gate * H + j)]; };
    auto rb = [&](int64_t gate, int64_t j) {
      return B[static_cast<size_t>(d * 6 * H + 3 * H + gate * H + j)];
    };
    for (int64_t b = 0; b < p.batch; ++b) {
      std::vector<double> h(static_cast<size_t>(H)), z(h.size()), r(h.size()), reset_h(h.size()),
          next(h.size());
      for (int64_t j = 0; j < H; ++j) h[static_cast<size_t>(j)] = H0[p.state_at(d, b, j)];
      const int64_t len = p.lens[static_cast<size_t>(b)];
      for (int64_t step = 0; step < len; ++step) {
        const int64_t t = p.backwards(d) ? len - 1 - step : step;
        const double* x = &X[p.x_at(t, b, 0)];
        for (int64_t j = 0; j < H; ++j) {
          const size_t u = static_cast<size_t>(j);
          z[u] = f(p.clamp(row_times(W, d, rows, I, 0 * H + j, x) +
                           row_times(R, d, rows, H, 0 * H + j, h.data()) + wb(0, j) + rb(0, j)));
          r[u] = f(p.clamp(row_times(W, d, rows, I, 1 * H + j, x) +
                           row_times(R, d, rows, H, 1 * H + j, h.data()) + wb(1, j) + rb(1, j)));
          reset_h[u] = r[u] * h[u];
        }
        for (int64_t j = 0; j < H; ++j) {
          const size_t u = static_cast<size_t>(j);
          const double xh = row_times(W, d, rows, I, 2 * H + j, x) + wb(2, j);
          const double candidate =
              linear_before_reset
                  ? g(p.clamp(xh + r[u] * (row_times(R, d, rows, H, 2 * H + j, h.data()) + rb(2, j))))
                  : g(p.clamp(xh + row_times(R, d, rows, H, 2 * H + j, reset_h.data()) + rb(2, j)));
          next[u] = (1.0 - z[u]) * candidate + z[u] * h[u];
        }
        h = next;
        for (int64_t j = 0; j < H; ++j) Y[p.y_at(t, d, b, j)] = h[static_cast<size_t>(j)];
      }
      for (int64_t j = 0; j < H; ++j) Yh[p.state_at(d, b, j)] = h[static_cast<size_t>(j)];
    }
  }
  return Values{Y, Yh};
}

// ---- LSTM ---------------------------------------------------------------------------------------
// Inputs X, W [dirs, 4H, in] (gates i, o, f, c), R [dirs, 4H, H], B [dirs, 8H] (Wb[iofc] then
// Rb[iofc]), sequence_lens, initial_h, initial_c, P [dirs, 3H] (peepholes i, o, f). With f =
// Sigmoid, g = h = Tanh by default:
//   it = f(Xt Wi^T + Ht-1 Ri^T + Pi . Ct-1 + Wbi + Rbi)
//   ft = f(Xt Wf^T + Ht-1 Rf^T + Pf . Ct-1 + Wbf + Rbf)   (input_forget 1: ft = 1 - it)
//   ct = g(Xt Wc^T + Ht-1 Rc^T + Wbc + Rbc)
//   Ct = ft . Ct-1 + it . ct
//   ot = f(Xt Wo^T + Ht-1 Ro^T + Po . Ct + Wbo + Rbo)
//   Ht = ot . h(Ct)
Values lstm_formula(const Values& in, const DimsList& dims, const AttributeMap& a) {
  const Recurrence p = recurrence_of(in, dims, a, 4);
  const int64_t H = p.hidden, I = p.input, rows = 4 * H;
  const bool input_forget = a.get_int("input_forget", 0).value() == 1;
  const std::vector<SpecActivation> acts = activations_of(a, p.dirs, {"Sigmoid", "Tanh", "Tanh"});
  const std::vector<double>& X = in[0];
  const std::vector<double>& W = in[1];
  const std::vector<double>& R = in[2];
  const std::vector<double> B = values_or_zeros(in, 3, p.dirs * 8 * H);
  const std::vector<double> H0 = values_or_zeros(in, 5, p.dirs * p.batch * H);
  const std::vector<double> C0 = values_or_zeros(in, 6, p.dirs * p.batch * H);
  const std::vector<double> P = values_or_zeros(in, 7, p.dirs * 3 * H);
  std::vector<double> Y(static_cast<size_t>(p.seq * p.dirs * p.batch * H), 0.0);
  std::vector<double> Yh(static_cast<size_t>(p.dirs * p.batch * H), 0.0), Yc(Yh.size(), 0.0);
  enum Gate : int64_t { kI = 0, kO = 1, kF = 2, kC = 3 };
  for (int64_t d = 0; d < p.dirs; ++d) {
    const SpecActivation& f = acts[static_cast<size_t>(3 * d)];
    const SpecActivation& g = acts[static_cast<size_t>(3 * d + 1)];
    const SpecActivation& hf = acts[static_cast<size_t>(3 * d + 2)];
    auto bias = [&](int64_t gate, int64_t j) {
      return B[static_cast<size_t>(d * 8 * H + gate * H + j)] +
             B[static_cast<size_t>(d * 8 * H + 4 * H + gate * H + j)];
    };
    // Peepholes: P[d] holds Pi, Po, Pf.
    auto peep = [&](int64_t which, int64_t j) { return P[static_cast<size_t>(d * 3 * H + which * H + j)]; };
    for (int64_t b = 0; b < p.batch; ++b) {
      std::vector<double> h(static_cast<size_t>(H)), c(h.size()), next_h(h.size()), next_c(h.size());
      for (int64_t j = 0; j < H; ++j) {
        h[static_cast<size_t>(j)] = H0[p.state_at(d, b, j)];
        c[static_cast<size_t>(j)] = C0[p.state_at(d, b, j)];
      }
      const int64_t len = p.lens[static_cast<size_t>(b)];
      for (int64_t step = 0; step < len; ++step) {
        const int64_t t = p.backwards(d) ? len - 1 - step : step;
        const double* x = &X[p.x_at(t, b, 0)];
        auto pre = [&](int64_t gate, int64_t j) {
          return row_times(W, d, rows, I, gate * H + j, x) +
                 row_times(R, d, rows, H, gate * H + j, h.data()) + bias(gate, j);
        };
        for (int64_t j = 0; j < H; ++j) {
          const size_t u = static_cast<size_t>(j);
          const double it = f(p.clamp(pre(kI, j) + peep(0, j) * c[u]));
          const double ft = input_forget ? 1.0 - it : f(p.clamp(pre(kF, j) + peep(2, j) * c[u]));
          const double ct = g(p.clamp(pre(kC, j)));
          next_c[u] = ft * c[u] + it * ct;
          const double ot = f(p.clamp(pre(kO, j) + peep(1, j) * next_c[u]));
          next_h[u] = ot * hf(p.clamp(next_c[u]));
        }
        h = next_h;
        c = next_c;
        for (int64_t j = 0; j < H; ++j) Y[p.y_at(t, d, b, j)] = h[static_cast<size_t>(j)];
      }
      for (int64_t j = 0; j < H; ++j) {
        Yh[p.state_at(d, b, j)] = h[static_cast<size_t>(j)];
        Yc[p.state_at(d, b, j)] = c[static_cast<size_t>(j)];
      }
    }
  }
  return Values{Y, Yh, Yc};
}

// ---- case helpers -------------------------------------------------------------------------------

CaseInput none() {
  CaseInput c;
  c.omitted = true;
  return c;
}
CaseInput weights(std::vector<int64_t> dims) { return data(std::move(dims), -0.5, 0.5); }
CaseInput sequence(std::vector<int64_t> dims) { return data(std::move(dims), -1.0, 1.0); }
// sequence_lens: int32, as the spec types it (every length >= 1).
CaseInput lengths(std::vector<double> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return fixed({n}, DataType::kInt32, std::move(v));
}

// direction, and hidden_size unless 0 (R's last dim then decides).
AttributeMap recurrent_attrs(const char* direction, int64_t hidden) {
  AttributeMap a;
  a.set("direction", std::string(direction));
  if (hidden > 0) a.set("hidden_size", hidden);
  return a;
}
AttributeMap with(AttributeMap a, const char* name, AttrValue v) {
  a.set(name, std::move(v));
  return a;
}

// The formula's first `outputs` outputs, for a table whose nodes list fewer than all (the harness
// makes each node with as many outputs as its case's output_dims, Y first, and compares as many).
ReferenceFn first_outputs(ReferenceFn formula, size_t outputs) {
  return [formula, outputs](const Values& in, const DimsList& dims, const AttributeMap& a) {
    Values all = formula(in, dims, a);
    all.resize(outputs);
    return all;
  };
}

// ---- GRU cases ----------------------------------------------------------------------------------

OpCaseTable gru_cases() {
  OpCaseTable t = builtin_table("GRU", gru_formula, 14);
  auto gru = [](const char* direction, int64_t hidden, int64_t linear_before_reset) {
    return with(recurrent_attrs(direction, hidden), "linear_before_reset", linear_before_reset);
  };
  // Shapes for dirs directions, hidden 5, input 3: W, R, B, initial_h of `batch`.
  auto w = [](int64_t dirs) { return weights({dirs, 15, 3}); };
  auto r = [](int64_t dirs) { return weights({dirs, 15, 5}); };
  auto b = [](int64_t dirs) { return weights({dirs, 30}); };
  auto h0 = [](int64_t dirs, int64_t batch) { return sequence({dirs, batch, 5}); };

  t.cases.push_back(make_case("forward", {sequence({5, 2, 3}), w(1), r(1), b(1)}, {{5, 1, 2, 5}, {1, 2, 5}},
                              gru("forward", 5, 0)));
  t.cases.push_back(make_case("forward_linear_before_reset", {sequence({6, 3, 3}), w(1), r(1), b(1)},
                              {{6, 1, 3, 5}, {1, 3, 5}}, gru("forward", 5, 1)));
  t.cases.push_back(make_case("forward_no_bias_linear_before_reset", {sequence({4, 2, 3}), w(1), r(1)},
                              {{4, 1, 2, 5}, {1, 2, 5}}, gru("forward", 5, 1)));
  t.cases.push_back(make_case("reverse_initial_h", {sequence({4, 3, 3}), w(1), r(1), b(1), none(), h0(1, 3)},
                              {{4, 1, 3, 5}, {1, 3, 5}}, gru("reverse", 5, 0)));
  t.cases.push_back(make_case("reverse_no_bias_linear_before_reset", {sequence({5, 2, 3}), w(1), r(1)},
                              {{5, 1, 2, 5}, {1, 2, 5}}, gru("reverse", 5, 1)));
  t.cases.push_back(make_case("bidirectional_no_bias_initial_h",
                              {sequence({6, 2, 3}), w(2), r(2), none(), none(), h0(2, 2)},
                              {{6, 2, 2, 5}, {2, 2, 5}}, gru("bidirectional", 5, 0)));
  t.cases.push_back(make_case("bidirectional_initial_h_linear_before_reset",
                              {sequence({5, 3, 3}), w(2), r(2), b(2), none(), h0(2, 3)},
                              {{5, 2, 3, 5}, {2, 3, 5}}, gru("bidirectional", 5, 1)));
  // Lengths 5, 2 and 3 of 5 steps: each direction stops (or starts, backwards) at its own length,
  // Y is 0 past it and Y_h is the state at its last valid step. No hidden_size: R's last dim.
  t.cases.push_back(make_case("bidirectional_sequence_lens",
                              {sequence({5, 3, 3}), w(2), r(2), b(2), lengths({5, 2, 3}), h0(2, 3)},
                              {{5, 2, 3, 5}, {2, 3, 5}}, gru("bidirectional", 0, 1)));
  t.cases.push_back(make_case("reverse_sequence_lens",
                              {sequence({6, 2, 3}), w(1), r(1), b(1), lengths({3, 6})},
                              {{6, 1, 2, 5}, {1, 2, 5}}, gru("reverse", 5, 0)));
  // layout 1: X [batch, seq, in], initial_h [batch, dirs, H], Y [batch, seq, dirs, H].
  t.cases.push_back(make_case("layout_batch_first_bidirectional",
                              {sequence({2, 4, 3}), w(2), r(2), b(2), lengths({4, 3}), sequence({2, 2, 5})},
                              {{2, 4, 2, 5}, {2, 2, 5}},
                              with(gru("bidirectional", 5, 0), "layout", int64_t{1})));
  // Wider weights and a low clip, so the clamp acts on many gate inputs.
  t.cases.push_back(make_case("clip",
                              {sequence({5, 2, 3}), data({1, 15, 3}, -1, 1), data({1, 15, 5}, -1, 1), b(1)},
                              {{5, 1, 2, 5}, {1, 2, 5}}, with(gru("forward", 5, 1), "clip", 0.4f)));
  {
    AttributeMap a = gru("forward", 5, 0);
    a.set("activations", std::vector<std::string>{"HardSigmoid", "ScaledTanh"});
    a.set("activation_alpha", std::vector<float>{0.3f, 0.9f});
    a.set("activation_beta", std::vector<float>{0.45f, 1.3f});
    t.cases.push_back(make_case("activations_with_alpha_beta",
                                {sequence({4, 2, 3}), w(1), r(1), b(1), none(), h0(1, 2)},
                                {{4, 1, 2, 5}, {1, 2, 5}}, a));
  }
  {
    // Each direction its own pair; the backward one's HardSigmoid takes the defaults 0.2 and 0.5.
    AttributeMap a = gru("bidirectional", 5, 1);
    a.set("activations", std::vector<std::string>{"Sigmoid", "Softsign", "HardSigmoid", "Tanh"});
    t.cases.push_back(make_case("activations_per_direction", {sequence({4, 3, 3}), w(2), r(2), b(2)},
                                {{4, 2, 3, 5}, {2, 3, 5}}, a));
  }
  for (OpCase& c : t.cases) c.tolerance[DataType::kFloat32] = 1e-5;

  const AttributeMap base = gru("forward", 5, 0);
  t.bad_attributes.push_back(
      {"direction_sideways", with(base, "direction", std::string("sideways")), {}, "direction"});
  t.bad_attributes.push_back(
      {"linear_before_reset_2", with(base, "linear_before_reset", int64_t{2}), {}, "linear_before_reset"});
  t.bad_attributes.push_back(
      {"hidden_size_disagrees_with_w", with(base, "hidden_size", int64_t{4}), {}, "hidden_size"});
  t.bad_attributes.push_back({"hidden_size_0", with(base, "hidden_size", int64_t{0}), {}, "hidden_size"});
  t.bad_attributes.push_back(
      {"input_forget_is_lstm_only", with(base, "input_forget", int64_t{0}), {}, "input_forget"});
  t.bad_attributes.push_back({"negative_clip", with(base, "clip", -1.0f), {}, "clip"});
  t.bad_attributes.push_back({"three_activations",
                              with(base, "activations", std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}),
                              {},
                              "activations"});
  t.bad_attributes.push_back({"unknown_activation",
                              with(base, "activations", std::vector<std::string>{"Sigmoid", "Swish"}),
                              {},
                              "activations"});
  t.bad_attributes.push_back({"layout_2", with(base, "layout", int64_t{2}), {}, "layout"});
  return t;
}

// Opset 7's GRU (no layout attribute), its nodes asking for Y alone.
OpCaseTable gru_opset7_y_only_cases() {
  OpCaseTable t = builtin_table("GRU", first_outputs(gru_formula, 1), 7);
  AttributeMap lbr = with(recurrent_attrs("forward", 5), "linear_before_reset", int64_t{1});
  t.cases.push_back(
      make_case("forward_linear_before_reset_y_only",
                {sequence({5, 2, 3}), weights({1, 15, 3}), weights({1, 15, 5}), weights({1, 30})},
                {{5, 1, 2, 5}}, lbr));
  t.cases.push_back(make_case("bidirectional_sequence_lens_y_only",
                              {sequence({4, 3, 3}), weights({2, 15, 3}), weights({2, 15, 5}),
                               weights({2, 30}), lengths({2, 4, 3}), sequence({2, 3, 5})},
                              {{4, 2, 3, 5}}, recurrent_attrs("bidirectional", 5)));
  for (OpCase& c : t.cases) c.tolerance[DataType::kFloat32] = 1e-5;
  // layout exists from opset 14 on: a batch-first model read as opset 7 would be misread.
  t.bad_attributes.push_back({"layout_before_opset_14", with(lbr, "layout", int64_t{1}), {}, "layout"});
  return t;
}

// ---- LSTM cases ---------------------------------------------------------------------------------

OpCaseTable lstm_cases() {
  OpCaseTable t = builtin_table("LSTM", lstm_formula, 14);
  // Shapes for dirs directions, hidden 5, input 3.
  auto w = [](int64_t dirs) { return weights({dirs, 20, 3}); };
  auto r = [](int64_t dirs) { return weights({dirs, 20, 5}); };
  auto b = [](int64_t dirs) { return weights({dirs, 40}); };
  auto p = [](int64_t dirs) { return weights({dirs, 15}); };
  auto state = [](int64_t dirs, int64_t batch) { return sequence({dirs, batch, 5}); };
  auto outs = [](int64_t seq, int64_t dirs, int64_t batch) {
    return std::vector<std::vector<int64_t>>{{seq, dirs, batch, 5}, {dirs, batch, 5}, {dirs, batch, 5}};
  };

  t.cases.push_back(make_case("forward", {sequence({5, 2, 3}), w(1), r(1), b(1)}, outs(5, 1, 2),
                              recurrent_attrs("forward", 5)));
  t.cases.push_back(make_case("forward_no_bias", {sequence({6, 3, 3}), w(1), r(1)}, outs(6, 1, 3),
                              recurrent_attrs("forward", 5)));
  t.cases.push_back(make_case("reverse_initial_states_no_bias",
                              {sequence({4, 3, 3}), w(1), r(1), none(), none(), state(1, 3), state(1, 3)},
                              outs(4, 1, 3), recurrent_attrs("reverse", 5)));
  t.cases.push_back(make_case("reverse_peepholes",
                              {sequence({5, 2, 3}), w(1), r(1), b(1), none(), none(), none(), p(1)},
                              outs(5, 1, 2), recurrent_attrs("reverse", 5)));
  // The peepholes see a nonzero C_0 from the first step on.
  t.cases.push_back(make_case("forward_peepholes_initial_c",
                              {sequence({5, 3, 3}), w(1), r(1), none(), none(), none(), state(1, 3), p(1)},
                              outs(5, 1, 3), recurrent_attrs("forward", 5)));
  t.cases.push_back(make_case("bidirectional_initial_h",
                              {sequence({4, 2, 3}), w(2), r(2), b(2), none(), state(2, 2)}, outs(4, 2, 2),
                              recurrent_attrs("bidirectional", 5)));
  t.cases.push_back(make_case("bidirectional_peepholes_initial_states",
                              {sequence({6, 2, 3}), w(2), r(2), b(2), none(), state(2, 2), state(2, 2), p(2)},
                              outs(6, 2, 2), recurrent_attrs("bidirectional", 5)));
  // Lengths 5, 3 and 1 of 5 steps; no hidden_size: R's last dim decides.
  t.cases.push_back(
      make_case("bidirectional_sequence_lens_peepholes",
                {sequence({5, 3, 3}), w(2), r(2), b(2), lengths({5, 3, 1}), state(2, 3), state(2, 3), p(2)},
                outs(5, 2, 3), recurrent_attrs("bidirectional", 0)));
  // layout 1: X [batch, seq, in], initial states [batch, dirs, H], Y [batch, seq, dirs, H].
  t.cases.push_back(make_case("layout_batch_first_bidirectional",
                              {sequence({3, 4, 3}), w(2), r(2), b(2), lengths({4, 2, 3}), sequence({3, 2, 5}),
                               sequence({3, 2, 5}), p(2)},
                              {{3, 4, 2, 5}, {3, 2, 5}, {3, 2, 5}},
                              with(recurrent_attrs("bidirectional", 5), "layout", int64_t{1})));
  t.cases.push_back(make_case(
      "input_forget", {sequence({5, 2, 3}), w(1), r(1), b(1), none(), state(1, 2), state(1, 2), p(1)},
      outs(5, 1, 2), with(recurrent_attrs("forward", 5), "input_forget", int64_t{1})));
  t.cases.push_back(make_case("clip",
                              {sequence({5, 2, 3}), data({1, 20, 3}, -1, 1), data({1, 20, 5}, -1, 1), b(1),
                               none(), none(), data({1, 2, 5}, -2, 2), p(1)},
                              outs(5, 1, 2), with(recurrent_attrs("forward", 5), "clip", 0.5f)));
  {
    AttributeMap a = recurrent_attrs("forward", 5);
    a.set("activations", std::vector<std::string>{"HardSigmoid", "Softsign", "Tanh"});
    a.set("activation_alpha", std::vector<float>{0.3f});
    a.set("activation_beta", std::vector<float>{0.55f});
    t.cases.push_back(
        make_case("activations_with_alpha_beta", {sequence({4, 2, 3}), w(1), r(1), b(1)}, outs(4, 1, 2), a));
  }
  {
    // Each direction its own three; the backward one's HardSigmoid takes the defaults 0.2 and 0.5.
    AttributeMap a = recurrent_attrs("bidirectional", 5);
    a.set("activations",
          std::vector<std::string>{"Sigmoid", "Tanh", "Softsign", "HardSigmoid", "Softsign", "Tanh"});
    t.cases.push_back(make_case("activations_per_direction",
                                {sequence({4, 3, 3}), w(2), r(2), b(2), none(), state(2, 3), state(2, 3)},
                                outs(4, 2, 3), a));
  }
  for (OpCase& c : t.cases) c.tolerance[DataType::kFloat32] = 1e-5;

  const AttributeMap base = recurrent_attrs("forward", 5);
  t.bad_attributes.push_back(
      {"direction_sideways", with(base, "direction", std::string("sideways")), {}, "direction"});
  t.bad_attributes.push_back({"input_forget_2", with(base, "input_forget", int64_t{2}), {}, "input_forget"});
  t.bad_attributes.push_back(
      {"hidden_size_disagrees_with_w", with(base, "hidden_size", int64_t{4}), {}, "hidden_size"});
  t.bad_attributes.push_back({"linear_before_reset_is_gru_only",
                              with(base, "linear_before_reset", int64_t{0}),
                              {},
                              "linear_before_reset"});
  t.bad_attributes.push_back({"negative_clip", with(base, "clip", -0.5f), {}, "clip"});
  t.bad_attributes.push_back({"two_activations",
                              with(base, "activations", std::vector<std::string>{"Sigmoid", "Tanh"}),
                              {},
                              "activations"});
  t.bad_attributes.push_back({"unknown_activation",
                              with(base, "activations", std::vector<std::string>{"Sigmoid", "Tanh", "Gelu"}),
                              {},
                              "activations"});
  t.bad_attributes.push_back({"layout_minus_1", with(base, "layout", int64_t{-1}), {}, "layout"});
  return t;
}

// Opset 7's LSTM (no layout attribute), its nodes asking for Y and Y_h but not Y_c.
OpCaseTable lstm_opset7_without_y_c_cases() {
  OpCaseTable t = builtin_table("LSTM", first_outputs(lstm_formula, 2), 7);
  t.cases.push_back(
      make_case("bidirectional_peepholes_y_and_y_h",
                {sequence({4, 3, 3}), weights({2, 20, 3}), weights({2, 20, 5}), weights({2, 40}), none(),
                 sequence({2, 3, 5}), sequence({2, 3, 5}), weights({2, 15})},
                {{4, 2, 3, 5}, {2, 3, 5}}, recurrent_attrs("bidirectional", 5)));
  t.cases.push_back(make_case(
      "reverse_sequence_lens_y_and_y_h",
      {sequence({5, 2, 3}), weights({1, 20, 3}), weights({1, 20, 5}), weights({1, 40}), lengths({5, 2})},
      {{5, 1, 2, 5}, {1, 2, 5}}, recurrent_attrs("reverse", 5)));
  for (OpCase& c : t.cases) c.tolerance[DataType::kFloat32] = 1e-5;
  t.bad_attributes.push_back({"layout_before_opset_14",
                              with(recurrent_attrs("bidirectional", 5), "layout", int64_t{0}),
                              {},
                              "layout"});
  return t;
}

}  // namespace

std::vector<OpCaseTable> recurrent_case_tables() {
  return {gru_cases(), gru_opset7_y_only_cases(), lstm_cases(), lstm_opset7_without_y_c_cases()};
}

}  // namespace graft::optest
