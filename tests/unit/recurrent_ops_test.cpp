// RNN, LSTM and GRU (definition and CPU reference:
// src/ops/recurrent/recurrent.cpp) against the spec's equations written out here step by step on
// fresh random data: every op x direction x layout, with and without sequence_lens (zero and full
// lengths included), with every optional input given or none, every activation function with its
// alpha/beta, clip, input_forget, linear_before_reset; omitted outputs; symbolic inference; then
// bad attributes and inputs (errors name the node and the attribute or input) and the work bound.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "ops/recurrent/recurrent.h"
#include "graft/engine.h"
#include "onnx_model_builder.h"
#include "op_test_util.h"

namespace graft {
namespace {

using testing::attrs_of;
using testing::expect_values_close;
using testing::OnnxModelBuilder;
using testing::random_tensor;
using testing::run_op;

uint32_t seed() { return testing::process_seed(); }

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// ---- the reference -------------------------------------------------------------------------------

// One activation by its spec name, alpha and beta already resolved.
double act(const std::string& name, double alpha, double beta, double x) {
  if (name == "Relu") return std::max(0.0, x);
  if (name == "Tanh") return std::tanh(x);
  if (name == "Sigmoid") return 1.0 / (1.0 + std::exp(-x));
  if (name == "Affine") return alpha * x + beta;
  if (name == "LeakyRelu") return x >= 0 ? x : alpha * x;
  if (name == "ThresholdedRelu") return x > alpha ? x : 0.0;
  if (name == "ScaledTanh") return alpha * std::tanh(beta * x);
  if (name == "HardSigmoid") return std::min(1.0, std::max(0.0, alpha * x + beta));
  if (name == "Elu") return x >= 0 ? x : alpha * (std::exp(x) - 1);
  if (name == "Softsign") return x / (1 + std::fabs(x));
  // log(1 + e^x), written so that a large x (the unbounded LSTM states of an all-Softplus cell
  // reach 1e8 within three steps) gives x rather than log(inf).
  if (name == "Softplus") return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
  ADD_FAILURE() << "unknown activation " << name;
  return 0;
}

struct Fn {
  std::string name;
  double alpha = 0, beta = 0;
  double operator()(double x) const { return act(name, alpha, beta, x); }
};

struct Case {
  std::string op = "RNN";  // RNN, LSTM, GRU
  std::string direction = "forward";
  int64_t layout = 0;
  int64_t seq = 3, batch = 2, input = 3, hidden = 4;
  std::vector<Fn> fns;  // per direction's functions, forward's first (already per direction)
  double clip = 0;      // 0: none
  bool input_forget = false, linear_before_reset = false;
};

int64_t gates_of(const std::string& op) { return op == "LSTM" ? 4 : op == "GRU" ? 3 : 1; }

struct Inputs {
  Tensor X, W, R, B, lens, h0, c0, P;  // undefined: omitted
};

struct Outputs {
  std::vector<double> Y, Yh, Yc;
};

// The spec's equations per step. X, Y, initial states and Y_h / Y_c are addressed through the
// layout explicitly; every sum is written out.
Outputs reference(const Case& c, const Inputs& in) {
  const int64_t S = c.seq, N = c.batch, I = c.input, H = c.hidden, G = gates_of(c.op);
  const int64_t D = c.direction == "bidirectional" ? 2 : 1;
  const size_t per = c.op == "LSTM" ? 3 : c.op == "GRU" ? 2 : 1;
  auto xval = [&](int64_t t, int64_t b, int64_t k) {
    return in.X.get(c.layout == 0 ? (t * N + b) * I + k : (b * S + t) * I + k);
  };
  auto state_idx = [&](int64_t d, int64_t b, int64_t j) {
    return c.layout == 0 ? (d * N + b) * H + j : (b * D + d) * H + j;
  };
  auto y_idx = [&](int64_t t, int64_t d, int64_t b, int64_t j) {
    return c.layout == 0 ? ((t * D + d) * N + b) * H + j : ((b * S + t) * D + d) * H + j;
  };
  auto w = [&](int64_t d, int64_t row, int64_t k) { return in.W.get((d * G * H + row) * I + k); };
  auto r = [&](int64_t d, int64_t row, int64_t k) { return in.R.get((d * G * H + row) * H + k); };
  auto wb = [&](int64_t d, int64_t row) { return in.B.defined() ? in.B.get(d * 2 * G * H + row) : 0.0; };
  auto rb = [&](int64_t d, int64_t row) { return in.B.defined() ? in.B.get(d * 2 * G * H + G * H + row) : 0.0; };
  auto peep = [&](int64_t d, int64_t k, int64_t j) { return in.P.defined() ? in.P.get(d * 3 * H + k * H + j) : 0.0; };
  auto cl = [&](double v) { return c.clip > 0 ? std::min(c.clip, std::max(-c.clip, v)) : v; };

  Outputs o;
  o.Y.assign(static_cast<size_t>(S * D * N * H), 0.0);
  o.Yh.assign(static_cast<size_t>(D * N * H), 0.0);
  o.Yc = o.Yh;
  for (int64_t d = 0; d < D; ++d) {
    const bool backwards = c.direction == "reverse" || d == 1;
    const Fn& f = c.fns[d * per];
    for (int64_t b = 0; b < N; ++b) {
      const int64_t len = in.lens.defined() ? static_cast<int64_t>(in.lens.get(b)) : S;
      std::vector<double> Hs(static_cast<size_t>(H), 0.0), Cs(static_cast<size_t>(H), 0.0);
      for (int64_t j = 0; j < H; ++j) {
        if (in.h0.defined()) Hs[j] = in.h0.get(state_idx(d, b, j));
        if (in.c0.defined()) Cs[j] = in.c0.get(state_idx(d, b, j));
      }
      std::vector<int64_t> order;
      for (int64_t s = 0; s < len; ++s) order.push_back(backwards ? len - 1 - s : s);
      for (int64_t t : order) {
        // Xt*(W_g^T) + Wb_g and Ht-1*(R_g^T) + Rb_g for gate g, element j.
        auto xpart = [&](int64_t g, int64_t j) {
          double s = wb(d, g * H + j);
          for (int64_t k = 0; k < I; ++k) s += xval(t, b, k) * w(d, g * H + j, k);
          return s;
        };
        auto hpart = [&](int64_t g, int64_t j, const std::vector<double>& hv) {
          double s = rb(d, g * H + j);
          for (int64_t k = 0; k < H; ++k) s += hv[k] * r(d, g * H + j, k);
          return s;
        };
        std::vector<double> Hn(static_cast<size_t>(H)), Cn(static_cast<size_t>(H));
        if (c.op == "RNN") {
          for (int64_t j = 0; j < H; ++j) Hn[j] = f(cl(xpart(0, j) + hpart(0, j, Hs)));
        } else if (c.op == "GRU") {
          const Fn& g = c.fns[d * per + 1];
          std::vector<double> z(H), rr(H), rH(H);
          for (int64_t j = 0; j < H; ++j) {
            z[j] = f(cl(xpart(0, j) + hpart(0, j, Hs)));
            rr[j] = f(cl(xpart(1, j) + hpart(1, j, Hs)));
            rH[j] = rr[j] * Hs[j];
          }
          for (int64_t j = 0; j < H; ++j) {
            const double hh = c.linear_before_reset ? g(cl(xpart(2, j) + rr[j] * hpart(2, j, Hs)))
                                                    : g(cl(xpart(2, j) + hpart(2, j, rH)));
            Hn[j] = (1 - z[j]) * hh + z[j] * Hs[j];
          }
        } else {
          const Fn& g = c.fns[d * per + 1];
          const Fn& h = c.fns[d * per + 2];
          // Gate rows: i 0, o 1, f 2, c 3; peepholes i 0, o 1, f 2.
          for (int64_t j = 0; j < H; ++j) {
            const double it = f(cl(xpart(0, j) + hpart(0, j, Hs) + peep(d, 0, j) * Cs[j]));
            const double ft = c.input_forget ? 1 - it : f(cl(xpart(2, j) + hpart(2, j, Hs) + peep(d, 2, j) * Cs[j]));
            const double ct = g(cl(xpart(3, j) + hpart(3, j, Hs)));
            Cn[j] = ft * Cs[j] + it * ct;
            const double ot = f(cl(xpart(1, j) + hpart(1, j, Hs) + peep(d, 1, j) * Cn[j]));
            Hn[j] = ot * h(cl(Cn[j]));
          }
          Cs = Cn;
        }
        Hs = Hn;
        for (int64_t j = 0; j < H; ++j) o.Y[y_idx(t, d, b, j)] = Hs[j];
      }
      if (len > 0)
        for (int64_t j = 0; j < H; ++j) {
          o.Yh[state_idx(d, b, j)] = Hs[j];
          o.Yc[state_idx(d, b, j)] = Cs[j];
        }
    }
  }
  return o;
}

// The node's inputs in ONNX order, trailing omitted ones dropped.
std::vector<Tensor> input_list(const Case& c, const Inputs& in) {
  std::vector<Tensor> v = {in.X, in.W, in.R, in.B, in.lens, in.h0};
  if (c.op == "LSTM") {
    v.push_back(in.c0);
    v.push_back(in.P);
  }
  while (!v.back().defined()) v.pop_back();
  return v;
}

AttributeMap attributes(const Case& c, bool with_activations) {
  AttributeMap a;
  a.set("hidden_size", c.hidden);
  a.set("direction", c.direction);
  if (c.layout) a.set("layout", c.layout);
  if (c.clip > 0) a.set("clip", static_cast<float>(c.clip));
  if (c.op == "LSTM" && c.input_forget) a.set("input_forget", int64_t{1});
  if (c.op == "GRU") a.set("linear_before_reset", int64_t{c.linear_before_reset ? 1 : 0});
  if (with_activations) {
    std::vector<std::string> names;
    std::vector<float> alphas, betas;
    for (const Fn& f : c.fns) {
      names.push_back(f.name);
      // Only the functions that take a value consume one (in order).
      if (f.name == "Affine" || f.name == "LeakyRelu" || f.name == "ThresholdedRelu" || f.name == "ScaledTanh" ||
          f.name == "HardSigmoid" || f.name == "Elu")
        alphas.push_back(static_cast<float>(f.alpha));
      if (f.name == "Affine" || f.name == "ScaledTanh" || f.name == "HardSigmoid") betas.push_back(static_cast<float>(f.beta));
    }
    a.set("activations", names);
    if (!alphas.empty()) a.set("activation_alpha", alphas);
    if (!betas.empty()) a.set("activation_beta", betas);
  }
  return a;
}

std::vector<Fn> default_fns(const std::string& op, int64_t dirs) {
  std::vector<Fn> one = op == "RNN"    ? std::vector<Fn>{{"Tanh"}}
                        : op == "LSTM" ? std::vector<Fn>{{"Sigmoid"}, {"Tanh"}, {"Tanh"}}
                                       : std::vector<Fn>{{"Sigmoid"}, {"Tanh"}};
  std::vector<Fn> all;
  for (int64_t d = 0; d < dirs; ++d) all.insert(all.end(), one.begin(), one.end());
  return all;
}

// Random inputs for case c; `optional` gives B, initial states and P; `lens` gives sequence_lens.
Inputs random_inputs(const Case& c, DataType dt, bool optional, bool lens, std::mt19937& rng) {
  const int64_t D = c.direction == "bidirectional" ? 2 : 1, G = gates_of(c.op), H = c.hidden;
  Inputs in;
  in.X = random_tensor(dt, c.layout ? std::vector<int64_t>{c.batch, c.seq, c.input}
                                    : std::vector<int64_t>{c.seq, c.batch, c.input},
                       rng);
  in.W = random_tensor(dt, {D, G * H, c.input}, rng, -0.7, 0.7);
  in.R = random_tensor(dt, {D, G * H, H}, rng, -0.7, 0.7);
  const std::vector<int64_t> state =
      c.layout ? std::vector<int64_t>{c.batch, D, H} : std::vector<int64_t>{D, c.batch, H};
  if (optional) {
    in.B = random_tensor(dt, {D, 2 * G * H}, rng);
    in.h0 = random_tensor(dt, state, rng);
    if (c.op == "LSTM") {
      in.c0 = random_tensor(dt, state, rng);
      in.P = random_tensor(dt, {D, 3 * H}, rng);
    }
  }
  if (lens) {
    // Batch 0 full length, batch 1 empty, the rest anywhere in [0, seq].
    std::uniform_int_distribution<int64_t> len(0, c.seq);
    std::vector<double> l;
    for (int64_t b = 0; b < c.batch; ++b) l.push_back(static_cast<double>(b == 0 ? c.seq : b == 1 ? 0 : len(rng)));
    in.lens = Tensor::from_doubles(DataType::kInt32, {c.batch}, l);
  }
  return in;
}

std::vector<int64_t> y_dims(const Case& c) {
  const int64_t D = c.direction == "bidirectional" ? 2 : 1;
  return c.layout ? std::vector<int64_t>{c.batch, c.seq, D, c.hidden}
                  : std::vector<int64_t>{c.seq, D, c.batch, c.hidden};
}

// Runs case c and compares every output with the reference.
void check_case(const Case& c, const Inputs& in, DataType dt, bool with_activations, const std::string& what) {
  SCOPED_TRACE(what);
  const size_t nout = c.op == "LSTM" ? 3 : 2;
  auto r = run_op(c.op, input_list(c, in), attributes(c, with_activations), c.layout ? 14 : 7, nout);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const Outputs want = reference(c, in);
  const double tol = dt == DataType::kFloat64 ? 1e-12 : 1e-5;
  EXPECT_EQ(r.value()[0].dims(), y_dims(c));
  expect_values_close(r.value()[0], want.Y, tol, "Y");
  expect_values_close(r.value()[1], want.Yh, tol, "Y_h");
  if (nout == 3) expect_values_close(r.value()[2], want.Yc, tol, "Y_c");
}

// ---- against the reference ------------------------------------------------------------------------

TEST(RecurrentOps, EveryOpDirectionLayoutLengthsAndOptionalInputs) {
  SCOPED_TRACE("seed " + std::to_string(seed()));
  std::mt19937 rng(seed());
  std::uniform_int_distribution<int64_t> small(1, 4);
  int n = 0;
  for (const char* op : {"RNN", "LSTM", "GRU"})
    for (const char* dir : {"forward", "reverse", "bidirectional"})
      for (int64_t layout : {0, 1})
        for (bool lens : {false, true})
          for (bool optional : {false, true}) {
            Case c;
            c.op = op;
            c.direction = dir;
            c.layout = layout;
            c.seq = small(rng) + 1;
            c.batch = small(rng) + (lens ? 2 : 0);  // room for a full and an empty sequence
            c.input = small(rng);
            c.hidden = small(rng);
            c.fns = default_fns(op, c.direction == "bidirectional" ? 2 : 1);
            c.linear_before_reset = c.op == "GRU" && (n % 2 == 1);
            const DataType dt = n % 2 ? DataType::kFloat64 : DataType::kFloat32;
            const Inputs in = random_inputs(c, dt, optional, lens, rng);
            check_case(c, in, dt, false,
                       std::string(op) + " " + dir + " layout " + std::to_string(layout) + (lens ? " lens" : "") +
                           (optional ? " optional" : "") + (c.linear_before_reset ? " lbr" : "") + " " +
                           dtype_name(dt));
            ++n;
          }
}

TEST(RecurrentOps, EveryActivationWithAlphaBetaAndClip) {
  SCOPED_TRACE("seed " + std::to_string(seed()));
  std::mt19937 rng(seed() + 1);
  std::uniform_real_distribution<double> u(0.2, 1.5);
  const std::vector<std::string> names = {"Relu",       "Tanh",        "Sigmoid", "Affine",   "LeakyRelu", "ThresholdedRelu",
                                          "ScaledTanh", "HardSigmoid", "Elu",     "Softsign", "Softplus"};
  for (const std::string& name : names)
    for (const char* op : {"RNN", "LSTM", "GRU"})
      for (bool clip : {false, true}) {
        Case c;
        c.op = op;
        c.direction = "bidirectional";
        c.clip = clip ? 0.5 : 0;
        c.input_forget = c.op == "LSTM" && clip;
        // The function under test in every slot of the forward direction; the backward one keeps
        // the defaults, so the two directions' lists are told apart.
        const size_t per = c.op == "LSTM" ? 3 : c.op == "GRU" ? 2 : 1;
        for (size_t k = 0; k < per; ++k) {
          // Rounded to float as the attribute stores them.
          Fn f{name, static_cast<float>(u(rng)), static_cast<float>(u(rng))};
          if (name == "ThresholdedRelu") f.alpha = 0.1;  // most values pass the threshold
          c.fns.push_back(f);
        }
        const std::vector<Fn> back = default_fns(op, 1);
        c.fns.insert(c.fns.end(), back.begin(), back.end());
        const Inputs in = random_inputs(c, DataType::kFloat64, true, false, rng);
        check_case(c, in, DataType::kFloat64, true, name + " " + op + (clip ? " clip" : ""));
      }
}

TEST(RecurrentOps, ActivationDefaultsAndOneListForBothDirections) {
  std::mt19937 rng(seed() + 2);
  // LeakyRelu and HardSigmoid without activation_alpha/beta: 0.01 and 0.2 / 0.5.
  Case c;
  c.op = "GRU";
  c.direction = "bidirectional";
  c.fns = {{"HardSigmoid", 0.2, 0.5}, {"LeakyRelu", 0.01, 0}, {"HardSigmoid", 0.2, 0.5}, {"LeakyRelu", 0.01, 0}};
  // The defaults are exact doubles in the kernel (no attribute holds them as float).
  const Inputs in = random_inputs(c, DataType::kFloat64, true, true, rng);
  AttributeMap a = attributes(c, false);
  a.set("activations", std::vector<std::string>{"HardSigmoid", "LeakyRelu"});  // one list, both directions
  auto r = run_op("GRU", input_list(c, in), a, 7, 2);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const Outputs want = reference(c, in);
  expect_values_close(r.value()[0], want.Y, 1e-12, "Y");
  expect_values_close(r.value()[1], want.Yh, 1e-12, "Y_h");
  // Names are matched without regard to case, as ONNX Runtime does.
  a.set("activations", std::vector<std::string>{"hardsigmoid", "LEAKYRELU"});
  r = run_op("GRU", input_list(c, in), a, 7, 2);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  expect_values_close(r.value()[1], want.Yh, 1e-12, "Y_h (lower case names)");
}

TEST(RecurrentOps, OmittedOutputsAndHiddenSizeFromR) {
  std::mt19937 rng(seed() + 3);
  Case c;
  c.op = "LSTM";
  c.direction = "reverse";
  c.fns = default_fns("LSTM", 1);
  const Inputs in = random_inputs(c, DataType::kFloat32, true, true, rng);
  const Outputs want = reference(c, in);
  // Only Y_c: the kernel gets nullptr for Y and Y_h.
  testing::OneNode node("LSTM", input_list(c, in), 3);
  node.node->attrs = attributes(c, false);
  node.node->attrs.erase("hidden_size");  // R's last dim decides
  std::vector<InferContext::InputInfo> infos;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    InferContext::InputInfo info;
    if (node.node->inputs[i]) {
      info.desc = &node.node->inputs[i]->desc;
      info.value = &node.inputs[i];
    }
    infos.push_back(info);
  }
  InferContext ictx(*node.node, infos, 7);
  const OpEntry* op = find_onnx_op("LSTM");
  ASSERT_NE(op, nullptr);
  ASSERT_TRUE(op->infer(ictx).is_ok());
  EXPECT_EQ(shape_values(*ictx.outputs()[2].shape), (std::vector<int64_t>{1, c.batch, c.hidden}));
  Tensor yc = Tensor::empty(DataType::kFloat32, {1, c.batch, c.hidden});
  yc.poison();
  ExecContext ectx;
  ectx.node = node.node;
  ectx.attrs = &node.node->attrs;
  ectx.opset = 7;
  for (auto& t : node.inputs) ectx.inputs.push_back(t.defined() ? &t : nullptr);
  ectx.outputs = {nullptr, nullptr, &yc};
  Status st = op->cpu(ectx);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  expect_values_close(yc, want.Yc, 1e-5, "Y_c alone");
}

TEST(RecurrentOps, InferenceKeepsSymbols) {
  const TensorDesc x(DataType::kFloat32, Shape{Dim::symbol("seq"), Dim::symbol("batch"), Dim(3)});
  const TensorDesc w(DataType::kFloat32, Shape{Dim(2), Dim(12), Dim(3)});
  const TensorDesc r(DataType::kFloat32, Shape{Dim(2), Dim(12), Dim(4)});
  auto out = testing::infer("GRU", {x, w, r}, attrs_of({{"direction", std::string("bidirectional")}}), 7, 2);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(shape_to_string(*out.value()[0].shape), "[seq,2,batch,4]");
  EXPECT_EQ(shape_to_string(*out.value()[1].shape), "[2,batch,4]");
  const TensorDesc xb(DataType::kFloat64, Shape{Dim::symbol("batch"), Dim::symbol("seq"), Dim(3)});
  const TensorDesc w1(DataType::kFloat64, Shape{Dim(1), Dim(16), Dim(3)});
  const TensorDesc r1(DataType::kFloat64, Shape{Dim(1), Dim(16), Dim(4)});
  out = testing::infer("LSTM", {xb, w1, r1}, attrs_of({{"layout", int64_t{1}}, {"hidden_size", int64_t{4}}}), 14, 3);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(shape_to_string(*out.value()[0].shape), "[batch,seq,1,4]");
  EXPECT_EQ(shape_to_string(*out.value()[2].shape), "[batch,1,4]");
  EXPECT_EQ(out.value()[2].dtype, DataType::kFloat64);
  // X of unknown rank: the hidden size still comes from R.
  TensorDesc xu;
  xu.dtype = DataType::kFloat32;
  out = testing::infer("RNN", {xu, TensorDesc(DataType::kFloat32, Shape{Dim(1), Dim(5), Dim(3)}),
                               TensorDesc(DataType::kFloat32, Shape{Dim(1), Dim(5), Dim(5)})},
                       {}, 7, 2);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(out.value()[1].shape->size(), 3u);
  EXPECT_TRUE((*out.value()[1].shape)[2] == 5);
}

// ---- errors ---------------------------------------------------------------------------------------

TEST(RecurrentErrors, BadAttributesNameTheAttribute) {
  std::mt19937 rng(seed() + 4);
  Case c;
  c.fns = default_fns("RNN", 1);
  const Inputs in = random_inputs(c, DataType::kFloat32, false, false, rng);
  const std::vector<Tensor> ins = input_list(c, in);
  struct Bad {
    std::string op;
    AttributeMap attrs;
    int opset;
    std::string attr, text;
  };
  auto with = [](std::vector<std::pair<std::string, AttrValue>> kv) { return attrs_of(std::move(kv)); };
  const std::vector<Bad> bad = {
      {"RNN", with({{"direction", std::string("sideways")}}), 7, "direction", "forward, reverse or bidirectional"},
      {"RNN", with({{"hidden_size", int64_t{5}}}), 7, "hidden_size", "hidden_size = 5"},
      {"RNN", with({{"hidden_size", int64_t{0}}}), 7, "hidden_size", ">= 1"},
      {"RNN", with({{"activations", std::vector<std::string>{"Swish"}}}), 7, "activations", "unknown function"},
      {"RNN", with({{"activations", std::vector<std::string>{"Tanh", "Tanh"}}}), 7, "activations", "1 per direction"},
      {"RNN", with({{"layout", int64_t{1}}}), 7, "layout", "opset 14"},
      {"RNN", with({{"layout", int64_t{2}}}), 14, "layout", "0 or 1"},
      {"RNN", with({{"clip", -1.0f}}), 7, "clip", ">= 0"},
      {"RNN", with({{"input_forget", int64_t{1}}}), 7, "input_forget", "LSTM"},
      {"RNN", with({{"linear_before_reset", int64_t{1}}}), 7, "linear_before_reset", "GRU"},
      {"RNN", with({{"hidden_size", std::string("4")}}), 7, "hidden_size", ""},
  };
  for (const Bad& b : bad) {
    auto r = run_op(b.op, ins, b.attrs, b.opset, 2);
    ASSERT_FALSE(r.is_ok()) << b.attr << " " << b.text;
    EXPECT_EQ(r.status().attribute(), b.attr) << r.status().to_string();
    EXPECT_TRUE(contains(r.status().to_string(), b.text)) << r.status().to_string();
  }
  // LSTM and GRU attributes on their own ops.
  Case l;
  l.op = "LSTM";
  const Inputs li = random_inputs(l, DataType::kFloat32, false, false, rng);
  auto r = run_op("LSTM", input_list(l, li), with({{"input_forget", int64_t{3}}}), 7, 3);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().attribute(), "input_forget");
  r = run_op("LSTM", input_list(l, li), with({{"activations", std::vector<std::string>{"Sigmoid", "Tanh"}}}), 7, 3);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().attribute(), "activations");
  EXPECT_TRUE(contains(r.status().to_string(), "3 per direction")) << r.status().to_string();
}

TEST(RecurrentErrors, BadInputsAreClearErrors) {
  std::mt19937 rng(seed() + 5);
  Case c;
  c.op = "GRU";  // seq 3, batch 2, input 3, hidden 4: W [1, 12, 3], R [1, 12, 4]
  const Inputs ok = random_inputs(c, DataType::kFloat32, true, false, rng);
  auto f32 = [&](std::vector<int64_t> d) { return random_tensor(DataType::kFloat32, std::move(d), rng); };
  struct Bad {
    std::vector<Tensor> in;
    AttributeMap attrs;
    std::string text;
  };
  const Tensor none;
  const std::vector<Bad> bad = {
      {{f32({3, 2}), ok.W, ok.R}, {}, "input X must be"},
      {{ok.X, f32({12, 3}), ok.R}, {}, "input W must be"},
      {{ok.X, f32({1, 12, 5}), ok.R}, {}, "input_size"},
      {{ok.X, f32({1, 9, 3}), ok.R}, {}, "3*hidden_size"},
      {{ok.X, f32({2, 12, 3}), ok.R}, {}, "num_directions"},
      {{ok.X, ok.W, f32({1, 12, 3})}, {}, "3*hidden_size = 9"},  // hidden_size from R: 3
      {{ok.X, ok.W, ok.R, f32({1, 12})}, {}, "6*hidden_size"},
      {{ok.X, ok.W, ok.R, none, Tensor::from_doubles(DataType::kInt32, {3}, {1, 1, 1})}, {}, "batch_size"},
      {{ok.X, ok.W, ok.R, none, Tensor::from_doubles(DataType::kInt32, {2}, {1, 4})}, {}, "sequence_lens[1] is 4"},
      {{ok.X, ok.W, ok.R, none, Tensor::from_doubles(DataType::kInt32, {2}, {-1, 1})}, {}, "sequence_lens[0]"},
      {{ok.X, ok.W, ok.R, none, Tensor::from_doubles(DataType::kFloat32, {2}, {1, 1})}, {}, "dtype"},
      {{ok.X, ok.W, ok.R, none, none, f32({1, 3, 4})}, {}, "input initial_h"},
      {{ok.X, ok.W, ok.R, none, none, f32({1, 2, 4, 1})}, {}, "input initial_h must be"},
      {{ok.X, random_tensor(DataType::kFloat64, {1, 12, 3}, rng), ok.R}, {}, "input W has dtype float64"},
      {{Tensor::from_doubles(DataType::kInt32, {3, 2, 3}, std::vector<double>(18, 1.0)), ok.W, ok.R}, {}, "dtype"},
      {{ok.X, ok.W}, {}, "required input R"},
      {{ok.X, ok.W, ok.R, none, none, none, none}, {}, "at most 6 inputs"},
  };
  for (const Bad& b : bad) {
    auto r = run_op("GRU", b.in, b.attrs, 7, 2);
    ASSERT_FALSE(r.is_ok()) << b.text;
    EXPECT_TRUE(contains(r.status().to_string(), b.text)) << r.status().to_string();
  }
  // hidden_size against W names the attribute; with the attribute absent the error names R.
  auto r = run_op("GRU", {ok.X, ok.W, ok.R}, attrs_of({{"hidden_size", int64_t{3}}}), 7, 2);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().attribute(), "hidden_size") << r.status().to_string();
  // LSTM's P and initial_c.
  Case l;
  l.op = "LSTM";
  const Inputs li = random_inputs(l, DataType::kFloat32, true, false, rng);
  r = run_op("LSTM", {li.X, li.W, li.R, li.B, none, li.h0, li.c0, f32({1, 16})}, {}, 7, 3);
  ASSERT_FALSE(r.is_ok());
  EXPECT_TRUE(contains(r.status().to_string(), "input P has shape")) << r.status().to_string();
  r = run_op("LSTM", {li.X, li.W, li.R, li.B, none, li.h0, f32({2, 2, 4})}, {}, 7, 3);
  ASSERT_FALSE(r.is_ok());
  EXPECT_TRUE(contains(r.status().to_string(), "input initial_c has shape")) << r.status().to_string();
  // Layout 1 wants initial_h batch first.
  Case b1;
  b1.layout = 1;
  b1.batch = 3;
  b1.direction = "bidirectional";
  const Inputs bi = random_inputs(b1, DataType::kFloat32, true, false, rng);
  r = run_op("RNN", {bi.X, bi.W, bi.R, bi.B, none, f32({2, 3, 4})},
             attrs_of({{"layout", int64_t{1}}, {"direction", std::string("bidirectional")}}), 14, 2);
  ASSERT_FALSE(r.is_ok());
  EXPECT_TRUE(contains(r.status().to_string(), "initial_h")) << r.status().to_string();
}

TEST(RecurrentErrors, TooMuchWorkIsRefusedAtBuildTime) {
  // 2^20 steps of a 256-wide LSTM: far past the bound, refused before anything is allocated.
  const TensorDesc x(DataType::kFloat32, Shape{Dim(int64_t{1} << 20), Dim(1), Dim(256)});
  const TensorDesc w(DataType::kFloat32, Shape{Dim(1), Dim(1024), Dim(256)});
  const TensorDesc r(DataType::kFloat32, Shape{Dim(1), Dim(1024), Dim(256)});
  auto out = testing::infer("LSTM", {x, w, r}, {}, 7, 3);
  ASSERT_FALSE(out.is_ok());
  EXPECT_EQ(out.status().code(), StatusCode::kUnsupported) << out.status().to_string();
  EXPECT_TRUE(contains(out.status().to_string(), "multiply-adds")) << out.status().to_string();
  RecurrentAttrs a;
  a.op = RecurrentOp::kLstm;
  EXPECT_TRUE(check_recurrent_work(a, 10, 2, 3, 4).is_ok());
  EXPECT_FALSE(check_recurrent_work(a, INT64_MAX / 2, 4, 4, 4).is_ok());
}

TEST(RecurrentErrors, ThroughTheEngineErrorsNameTheNode) {
  std::mt19937 rng(seed() + 6);
  Case c;
  c.fns = default_fns("RNN", 1);
  const Inputs in = random_inputs(c, DataType::kFloat32, true, true, rng);
  {
    OnnxModelBuilder b(14);
    b.input("X", DataType::kFloat32, {3, 2, 3});
    b.initializer("W", in.W);
    b.initializer("R", in.R);
    OnnxModelBuilder::attr(b.node("RNN", {"X", "W", "R"}, {"", "Y_h"}, "encoder"), "hidden_size", int64_t{7});
    b.output("Y_h", DataType::kFloat32);
    auto e = Engine::build_from_onnx_bytes(b.bytes(), BuilderConfig{}, "rnn.onnx");
    ASSERT_FALSE(e.is_ok());
    EXPECT_EQ(e.status().node_name(), "encoder") << e.status().to_string();
    EXPECT_EQ(e.status().attribute(), "hidden_size") << e.status().to_string();
  }
  // sequence_lens as a graph input: a good run matches the reference with Y omitted, a length past
  // seq_length fails the run naming the node.
  OnnxModelBuilder b(14);
  b.input("X", DataType::kFloat32, {3, 2, 3});
  b.input("lens", DataType::kInt32, {2});
  b.initializer("W", in.W);
  b.initializer("R", in.R);
  b.initializer("B", in.B);
  b.initializer("h0", in.h0);
  OnnxModelBuilder::attr(b.node("RNN", {"X", "W", "R", "B", "lens", "h0"}, {"", "Y_h"}, "encoder"), "hidden_size",
                         int64_t{4});
  b.output("Y_h", DataType::kFloat32);
  auto e = Engine::build_from_onnx_bytes(b.bytes(), BuilderConfig{}, "rnn.onnx");
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  auto ctx = e.value()->create_context();
  ASSERT_TRUE(ctx.is_ok()) << ctx.status().to_string();
  std::map<std::string, Tensor> inputs = {{"X", in.X}, {"lens", in.lens}};
  std::map<std::string, Tensor> out;
  Status st = ctx.value()->run(inputs, out);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  expect_values_close(out["Y_h"], reference(c, in).Yh, 1e-5, "engine Y_h");
  inputs["lens"] = Tensor::from_doubles(DataType::kInt32, {2}, {3, 9});
  out.clear();
  st = ctx.value()->run(inputs, out);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.node_name(), "encoder") << st.to_string();
  EXPECT_TRUE(contains(st.to_string(), "sequence_lens")) << st.to_string();
}

}  // namespace
}  // namespace graft
