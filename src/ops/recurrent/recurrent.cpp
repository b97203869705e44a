// The recurrent family, defined whole here: RNN, LSTM and GRU's attribute reader and shape checks
// (recurrent.h), their CPU reference kernel, and their schema rows with inference. The CUDA op is
// in recurrent.cu.
#include "ops/recurrent/recurrent.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/kernel_util.h"
#include "core/checked_math.h"
#include "ops/attr_util.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {

// ---- attributes and shapes (recurrent.h) ----------------------------------------------------

const char* recurrent_op_name(RecurrentOp op) {
  switch (op) {
    case RecurrentOp::kRnn: return "RNN";
    case RecurrentOp::kLstm: return "LSTM";
    case RecurrentOp::kGru: return "GRU";
  }
  return "?";
}

namespace {

struct ActivationInfo {
  const char* name;
  RnnActivationKind kind;
  bool takes_alpha, takes_beta;
  double alpha, beta;  // defaults
};

// The defaults are those of the ONNX operators of the same name, as the spec asks (LeakyRelu 0.01,
// ThresholdedRelu 1, HardSigmoid 0.2 and 0.5, Elu 1). Affine and ScaledTanh have no operator left
// in ONNX; 1 and 0 (the identity) and 1 and 1 (plain tanh) are the choices that change nothing.
const ActivationInfo kActivations[] = {
    {"Relu", RnnActivationKind::kRelu, false, false, 0, 0},
    {"Tanh", RnnActivationKind::kTanh, false, false, 0, 0},
    {"Sigmoid", RnnActivationKind::kSigmoid, false, false, 0, 0},
    {"Affine", RnnActivationKind::kAffine, true, true, 1, 0},
    {"LeakyRelu", RnnActivationKind::kLeakyRelu, true, false, 0.01, 0},
    {"ThresholdedRelu", RnnActivationKind::kThresholdedRelu, true, false, 1, 0},
    {"ScaledTanh", RnnActivationKind::kScaledTanh, true, true, 1, 1},
    {"HardSigmoid", RnnActivationKind::kHardSigmoid, true, true, 0.2, 0.5},
    {"Elu", RnnActivationKind::kElu, true, false, 1, 0},
    {"Softsign", RnnActivationKind::kSoftsign, false, false, 0, 0},
    {"Softplus", RnnActivationKind::kSoftplus, false, false, 0, 0},
};

bool same_name(const std::string& a, const char* b) {
  const std::string bs(b);
  if (a.size() != bs.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(bs[i])))
      return false;
  return true;
}

std::string activation_names() {
  std::string s;
  for (const ActivationInfo& a : kActivations) s += (s.empty() ? "" : ", ") + std::string(a.name);
  return s;
}

Result<bool> flag_attr(const AttributeMap& attrs, const char* name) {
  auto r = attrs.get_int(name, 0);
  if (!r) return Status(r.status()).with_attribute(name);
  if (r.value() != 0 && r.value() != 1) return attr_error(name, "must be 0 or 1, got ", r.value());
  return r.value() == 1;
}

std::string dims_string(const Shape& s) { return shape_to_string(s); }

// got must equal want where both are numbers.
Status expect_dim(const Shape& s, size_t axis, const Dim& want, size_t input, const char* meaning,
                  const char* attr = nullptr) {
  const Dim& got = s[axis];
  if (!got.is_const() || !want.is_const() || got.value() == want.value()) return Status::ok();
  Status st = error(StatusCode::kInvalidModel, "input ", recurrent_input_name(input), " has shape ",
                    dims_string(s), "; its dim ", static_cast<int64_t>(axis), " must be ", meaning, " = ",
                    want.value());
  if (attr) st.with_attribute(attr);
  return st;
}

Status expect_rank(const Shape& s, size_t rank, size_t input, const char* form) {
  if (s.size() == rank) return Status::ok();
  return error(StatusCode::kInvalidModel, "input ", recurrent_input_name(input), " must be ", form, " (rank ",
               static_cast<int64_t>(rank), "), got ", dims_string(s));
}

}  // namespace

double RnnActivation::operator()(double x) const {
  switch (kind) {
    case RnnActivationKind::kRelu: return x > 0 ? x : 0.0;
    case RnnActivationKind::kTanh: return std::tanh(x);
    case RnnActivationKind::kSigmoid: {
      // Written so exp never overflows: e^{-|x|} is at most 1.
      const double e = std::exp(-std::fabs(x));
      return x >= 0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
    }
    case RnnActivationKind::kAffine: return alpha * x + beta;
    case RnnActivationKind::kLeakyRelu: return x >= 0 ? x : alpha * x;
    // Strictly greater, as the ThresholdedRelu operator (and ONNX Runtime's RNNs) have it.
    case RnnActivationKind::kThresholdedRelu: return x > alpha ? x : 0.0;
    case RnnActivationKind::kScaledTanh: return alpha * std::tanh(beta * x);
    case RnnActivationKind::kHardSigmoid: return std::min(std::max(alpha * x + beta, 0.0), 1.0);
    case RnnActivationKind::kElu: return x >= 0 ? x : alpha * std::expm1(x);
    case RnnActivationKind::kSoftsign: return x / (1.0 + std::fabs(x));
    // log(1 + e^x) = max(x, 0) + log1p(e^{-|x|}): no overflow for large x, no lost digits for small.
    case RnnActivationKind::kSoftplus: return std::max(x, 0.0) + std::log1p(std::exp(-std::fabs(x)));
  }
  return x;
}

const char* recurrent_input_name(size_t i) {
  static const char* const kNames[] = {"X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"};
  return i < 8 ? kNames[i] : "?";
}

int64_t RecurrentAttrs::gates() const {
  return op == RecurrentOp::kLstm ? 4 : op == RecurrentOp::kGru ? 3 : 1;
}

int64_t RecurrentAttrs::activations_per_direction() const {
  return op == RecurrentOp::kLstm ? 3 : op == RecurrentOp::kGru ? 2 : 1;
}

// ---- attributes ------------------------------------------------------------------------------------

Result<RecurrentAttrs> recurrent_attrs(RecurrentOp op, const AttributeMap& attrs, int opset) {
  RecurrentAttrs a;
  a.op = op;
  auto dir = attrs.get_string("direction", "forward");
  if (!dir) return Status(dir.status()).with_attribute("direction");
  if (dir.value() == "bidirectional") {
    a.bidirectional = true;
    a.num_directions = 2;
  } else if (dir.value() == "reverse") {
    a.reverse = true;
  } else if (dir.value() != "forward") {
    return attr_error("direction", "must be forward, reverse or bidirectional, got \"", dir.value(), "\"");
  }
  if (attrs.has("hidden_size")) {
    auto h = attrs.get_int("hidden_size", 0);
    if (!h) return Status(h.status()).with_attribute("hidden_size");
    if (h.value() < 1) return attr_error("hidden_size", "must be >= 1, got ", h.value());
    a.hidden_size = h.value();
  }
  if (attrs.has("clip")) {
    auto c = attrs.get_float("clip", 0.0f);
    if (!c) return Status(c.status()).with_attribute("clip");
    // A negative bound would turn the clamp inside out; NaN would make every gate NaN.
    if (!(c.value() >= 0)) return attr_error("clip", "must be a threshold >= 0, got ", static_cast<double>(c.value()));
    a.clip = c.value();
  }
  if (op == RecurrentOp::kLstm) {
    GRAFT_ASSIGN_OR_RETURN(a.input_forget, flag_attr(attrs, "input_forget"));
  } else if (attrs.has("input_forget")) {
    return attr_error("input_forget", "is an LSTM attribute; ", recurrent_op_name(op), " has none");
  }
  if (op == RecurrentOp::kGru) {
    GRAFT_ASSIGN_OR_RETURN(a.linear_before_reset, flag_attr(attrs, "linear_before_reset"));
  } else if (attrs.has("linear_before_reset")) {
    return attr_error("linear_before_reset", "is a GRU attribute; ", recurrent_op_name(op), " has none");
  }
  if (attrs.has("layout")) {
    if (opset < 14)
      return attr_error("layout", "exists from opset 14 on; this model is opset ", opset,
                        ", where X is always [seq_length, batch_size, input_size]");
    auto l = attrs.get_int("layout", 0);
    if (!l) return Status(l.status()).with_attribute("layout");
    if (l.value() != 0 && l.value() != 1) return attr_error("layout", "must be 0 or 1, got ", l.value());
    a.layout = l.value();
  }

  // Activations: per direction, the defaults the equations name.
  const int64_t per = a.activations_per_direction();
  std::vector<std::string> defaults = op == RecurrentOp::kRnn    ? std::vector<std::string>{"Tanh"}
                                      : op == RecurrentOp::kLstm ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                                                 : std::vector<std::string>{"Sigmoid", "Tanh"};
  auto names_r = attrs.get_strings("activations", {});
  if (!names_r) return Status(names_r.status()).with_attribute("activations");
  std::vector<std::string> names = names_r.value();
  if (names.empty()) {
    for (int64_t d = 0; d < a.num_directions; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  }
  const int64_t given = static_cast<int64_t>(names.size());
  if (given != per * a.num_directions && !(a.bidirectional && given == per))
    return attr_error("activations", "lists ", given, " functions; ", recurrent_op_name(op), " takes ", per,
                      " per direction (", per * a.num_directions, " for ", a.num_directions,
                      a.num_directions == 1 ? " direction)" : " directions)");
  auto alphas = attrs.get_floats("activation_alpha", {});
  if (!alphas) return Status(alphas.status()).with_attribute("activation_alpha");
  auto betas = attrs.get_floats("activation_beta", {});
  if (!betas) return Status(betas.status()).with_attribute("activation_beta");
  // The scaling values are consumed in order by the functions that take one (as ONNX Runtime reads
  // the spec's "in the order of activation functions"); a function whose value runs out gets the
  // default. Extra values are left unused, as there.
  size_t ai = 0, bi = 0;
  for (const std::string& n : names) {
    const ActivationInfo* info = nullptr;
    for (const ActivationInfo& c : kActivations)
      if (same_name(n, c.name)) info = &c;
    if (!info)
      return attr_error("activations", "names unknown function \"", n, "\"; ", recurrent_op_name(op), " takes ",
                        activation_names());
    RnnActivation f;
    f.kind = info->kind;
    f.alpha = info->alpha;
    f.beta = info->beta;
    if (info->takes_alpha && ai < alphas.value().size()) f.alpha = alphas.value()[ai++];
    if (info->takes_beta && bi < betas.value().size()) f.beta = betas.value()[bi++];
    a.activations.push_back(f);
  }
  // One direction's list given for a bidirectional node: both directions use it.
  if (static_cast<int64_t>(a.activations.size()) < per * a.num_directions) {
    const std::vector<RnnActivation> one = a.activations;
    a.activations.insert(a.activations.end(), one.begin(), one.end());
  }
  return a;
}

// ---- shapes ----------------------------------------------------------------------------------------

Result<RecurrentDims> recurrent_dims(const RecurrentAttrs& a, const std::vector<const Shape*>& shapes,
                                     const std::function<Dim()>& unknown) {
  auto shape = [&](size_t i) -> const Shape* { return i < shapes.size() ? shapes[i] : nullptr; };
  const Shape *x = shape(kRnnX), *w = shape(kRnnW), *r = shape(kRnnR);
  if (x) GRAFT_RETURN_IF_ERROR(expect_rank(*x, 3, kRnnX, a.layout ? "[batch_size, seq_length, input_size]"
                                                                  : "[seq_length, batch_size, input_size]"));
  if (w) GRAFT_RETURN_IF_ERROR(expect_rank(*w, 3, kRnnW, "[num_directions, gates*hidden_size, input_size]"));
  if (r) GRAFT_RETURN_IF_ERROR(expect_rank(*r, 3, kRnnR, "[num_directions, gates*hidden_size, hidden_size]"));
  RecurrentDims d;
  d.seq = x ? (*x)[a.layout ? 1 : 0] : unknown();
  d.batch = x ? (*x)[a.layout ? 0 : 1] : unknown();
  d.input = x ? (*x)[2] : w ? (*w)[2] : unknown();
  const Dim gates(a.gates());
  if (a.hidden_size) {
    d.hidden = Dim(*a.hidden_size);
  } else if (r) {
    d.hidden = (*r)[2];
    if (d.hidden.is_const() && d.hidden.value() < 1)
      return error(StatusCode::kInvalidModel, "input R has shape ", dims_string(*r),
                   ": hidden_size (its last dim, the attribute being absent) must be >= 1");
  } else if (w && (*w)[1].is_const() && (*w)[1].value() % a.gates() == 0) {
    d.hidden = Dim((*w)[1].value() / a.gates());
  } else {
    d.hidden = unknown();
  }
  // Mismatches against a hidden_size attribute name it: it is as likely the wrong one.
  const char* hattr = a.hidden_size ? "hidden_size" : nullptr;
  const Dim dirs(a.num_directions);
  const char* dir_meaning = a.num_directions == 2 ? "num_directions (2: bidirectional)" : "num_directions (1)";
  const char* rows = a.op == RecurrentOp::kLstm ? "4*hidden_size" : a.op == RecurrentOp::kGru ? "3*hidden_size"
                                                                                              : "hidden_size";
  if (w) {
    GRAFT_RETURN_IF_ERROR(expect_dim(*w, 0, dirs, kRnnW, dir_meaning));
    GRAFT_RETURN_IF_ERROR(expect_dim(*w, 1, gates * d.hidden, kRnnW, rows, hattr));
    GRAFT_RETURN_IF_ERROR(expect_dim(*w, 2, d.input, kRnnW, "input_size (X's last dim)"));
  }
  if (r) {
    GRAFT_RETURN_IF_ERROR(expect_dim(*r, 0, dirs, kRnnR, dir_meaning));
    GRAFT_RETURN_IF_ERROR(expect_dim(*r, 1, gates * d.hidden, kRnnR, rows, hattr));
    GRAFT_RETURN_IF_ERROR(expect_dim(*r, 2, d.hidden, kRnnR, "hidden_size", hattr));
  }
  if (const Shape* b = shape(kRnnB)) {
    GRAFT_RETURN_IF_ERROR(expect_rank(*b, 2, kRnnB, "[num_directions, 2*gates*hidden_size]"));
    GRAFT_RETURN_IF_ERROR(expect_dim(*b, 0, dirs, kRnnB, dir_meaning));
    const char* brows = a.op == RecurrentOp::kLstm ? "8*hidden_size" : a.op == RecurrentOp::kGru ? "6*hidden_size"
                                                                                              : "2*hidden_size";
    GRAFT_RETURN_IF_ERROR(expect_dim(*b, 1, Dim(2 * a.gates()) * d.hidden, kRnnB, brows, hattr));
  }
  if (const Shape* s = shape(kRnnSeqLens)) {
    GRAFT_RETURN_IF_ERROR(expect_rank(*s, 1, kRnnSeqLens, "[batch_size]"));
    GRAFT_RETURN_IF_ERROR(expect_dim(*s, 0, d.batch, kRnnSeqLens, "batch_size"));
  }
  for (size_t i : {size_t{kRnnInitialH}, size_t{kRnnInitialC}}) {
    if (i == kRnnInitialC && a.op != RecurrentOp::kLstm) break;
    const Shape* h = shape(i);
    if (!h) continue;
    GRAFT_RETURN_IF_ERROR(expect_rank(*h, 3, i, a.layout ? "[batch_size, num_directions, hidden_size]"
                                                         : "[num_directions, batch_size, hidden_size]"));
    GRAFT_RETURN_IF_ERROR(expect_dim(*h, a.layout ? 1 : 0, dirs, i, dir_meaning));
    GRAFT_RETURN_IF_ERROR(expect_dim(*h, a.layout ? 0 : 1, d.batch, i, "batch_size"));
    GRAFT_RETURN_IF_ERROR(expect_dim(*h, 2, d.hidden, i, "hidden_size", hattr));
  }
  if (a.op == RecurrentOp::kLstm)
    if (const Shape* p = shape(kRnnP)) {
      GRAFT_RETURN_IF_ERROR(expect_rank(*p, 2, kRnnP, "[num_directions, 3*hidden_size]"));
      GRAFT_RETURN_IF_ERROR(expect_dim(*p, 0, dirs, kRnnP, dir_meaning));
      GRAFT_RETURN_IF_ERROR(expect_dim(*p, 1, Dim(3) * d.hidden, kRnnP, "3*hidden_size", hattr));
    }
  return d;
}

Shape recurrent_y_shape(const RecurrentAttrs& a, const RecurrentDims& d) {
  const Dim dirs(a.num_directions);
  return a.layout ? Shape{d.batch, d.seq, dirs, d.hidden} : Shape{d.seq, dirs, d.batch, d.hidden};
}

Shape recurrent_state_shape(const RecurrentAttrs& a, const RecurrentDims& d) {
  const Dim dirs(a.num_directions);
  return a.layout ? Shape{d.batch, dirs, d.hidden} : Shape{dirs, d.batch, d.hidden};
}

Status check_recurrent_work(const RecurrentAttrs& a, int64_t seq, int64_t batch, int64_t input, int64_t hidden) {
  int64_t per_row = 0, work = 1;
  bool ok = checked_add(input, hidden, &per_row);
  for (int64_t f : {a.num_directions, seq, batch, a.gates(), hidden, per_row}) ok = ok && f >= 0 && checked_mul(work, f, &work);
  if (!ok || work > kMaxRecurrentTerms)
    return error(StatusCode::kUnsupported, recurrent_op_name(a.op), " would take ",
                 ok ? std::to_string(work) : std::string("over 2^63"),
                 " multiply-adds (steps times gate rows times input_size + hidden_size); graft's reference "
                 "kernel stops at ",
                 kMaxRecurrentTerms);
  return Status::ok();
}

// ---- CPU reference --------------------------------------------------------------------------
// Each op is the spec's per-step equations written out directly: every value loaded as double, every
// gate's dot products accumulated in double, rounded once into the output dtype.

namespace cpu {

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

}  // namespace cpu

// ---- schema: inference and the table rows ---------------------------------------------------
// Every output is optional (Y, Y_h and, for LSTM, Y_c); each one the node lists gets its shape.
// hidden_size may be absent: R's last dim is then the hidden size.

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
