// The random family's definitions and CPU references (CUDA: random.cu). Attributes are checked at
// inference, so a bad node fails at build time naming the attribute (random.h). Constant folding
// never runs these nodes (node_is_random).
#include "ops/random/random.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <vector>

#include "backends/cpu/kernel_util.h"
#include "backends/cpu/unary_kernel.h"
#include "graft/status.h"
#include "ops/attr_util.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {

// ---- attributes and shapes (random.h) -------------------------------------------------------
// See random.h.

namespace {

bool is_one_of(DataType t, std::initializer_list<DataType> allowed) {
  return std::find(allowed.begin(), allowed.end(), t) != allowed.end();
}

std::string names_of(std::initializer_list<DataType> ts) {
  std::string s;
  for (DataType t : ts) s += (s.empty() ? "" : ", ") + std::string(dtype_name(t));
  return s;
}

Result<double> finite_float(const AttributeMap& attrs, const char* name, float def) {
  auto v = attrs.get_float(name, def);
  if (!v) return Status(v.status()).with_attribute(name);
  if (!std::isfinite(v.value())) return attr_error(name, "must be finite, got ", static_cast<double>(v.value()));
  return static_cast<double>(v.value());
}

}  // namespace

Result<std::optional<uint64_t>> seed_attr(const AttributeMap& attrs) {
  const AttrValue* v = attrs.find("seed");
  if (!v) return std::optional<uint64_t>();
  if (const int64_t* i = std::get_if<int64_t>(v)) return std::optional<uint64_t>(static_cast<uint64_t>(*i));
  const float* f = std::get_if<float>(v);
  if (!f) return attr_error("seed", "must be a float or an int, got a ", attr_type_name(attr_type_of(*v)));
  if (!std::isfinite(*f)) return attr_error("seed", "must be finite, got ", static_cast<double>(*f));
  if (*f == std::trunc(*f) && std::fabs(*f) < 9.2e18)
    return std::optional<uint64_t>(static_cast<uint64_t>(static_cast<int64_t>(*f)));
  uint32_t bits;
  std::memcpy(&bits, f, sizeof bits);
  return std::optional<uint64_t>(bits);
}

Result<RandomAttrs> random_attrs(const std::string& op_type, const AttributeMap& attrs, DataType input_dtype) {
  RandomAttrs a;
  GRAFT_ASSIGN_OR_RETURN(a.seed, seed_attr(attrs));
  const bool like = op_type == "RandomUniformLike" || op_type == "RandomNormalLike";
  const bool source = op_type == "RandomUniform" || op_type == "RandomNormal";
  const bool uniform = op_type == "RandomUniform" || op_type == "RandomUniformLike";
  const bool normal = op_type == "RandomNormal" || op_type == "RandomNormalLike";

  // dtype: an ONNX type code; default float for the source ops, int32 for Multinomial, the input's otherwise.
  const std::initializer_list<DataType> kFloat3 = {DataType::kFloat16, DataType::kFloat32, DataType::kFloat64};
  const std::initializer_list<DataType> kBernoulliOut = {
      DataType::kFloat16, DataType::kFloat32, DataType::kFloat64, DataType::kBFloat16, DataType::kUInt8,
      DataType::kUInt16,  DataType::kUInt32,  DataType::kUInt64,  DataType::kInt8,     DataType::kInt16,
      DataType::kInt32,   DataType::kInt64,   DataType::kBool};
  const std::initializer_list<DataType> kIndex = {DataType::kInt32, DataType::kInt64};
  const std::initializer_list<DataType> allowed =
      op_type == "Bernoulli" ? kBernoulliOut : op_type == "Multinomial" ? kIndex : kFloat3;
  if (attrs.has("dtype")) {
    auto code = attrs.get_int("dtype", 0);
    if (!code) return Status(code.status()).with_attribute("dtype");
    DataType t;
    if (code.value() < INT32_MIN || code.value() > INT32_MAX || !dtype_from_onnx_numeric(static_cast<int32_t>(code.value()), &t))
      return Status(error(StatusCode::kUnsupported, "ONNX data type ", code.value(), " is not one graft supports"))
          .with_attribute("dtype");
    a.dtype = t;
  } else if (source) {
    a.dtype = DataType::kFloat32;
  } else if (op_type == "Multinomial") {
    a.dtype = DataType::kInt32;
  } else {
    a.dtype = input_dtype;
  }
  if (a.dtype != DataType::kUndefined && !is_one_of(a.dtype, allowed)) {
    if (like && !attrs.has("dtype"))
      return attr_error("dtype", "is absent, so the output would take input 0's dtype ", dtype_name(a.dtype), ", but ",
                        op_type, " outputs only ", names_of(allowed), "; give the dtype attribute");
    return attr_error("dtype", op_type, " outputs ", names_of(allowed), ", not ", dtype_name(a.dtype));
  }

  if (uniform) {
    GRAFT_ASSIGN_OR_RETURN(a.low, finite_float(attrs, "low", 0.0f));
    GRAFT_ASSIGN_OR_RETURN(a.high, finite_float(attrs, "high", 1.0f));
    if (a.high < a.low) return attr_error("high", "must be >= low (", a.low, "), got ", a.high);
  }
  if (normal) {
    GRAFT_ASSIGN_OR_RETURN(a.mean, finite_float(attrs, "mean", 0.0f));
    GRAFT_ASSIGN_OR_RETURN(a.scale, finite_float(attrs, "scale", 1.0f));
    if (a.scale < 0) return attr_error("scale", "is a standard deviation and must be >= 0, got ", a.scale);
  }
  if (source) {
    if (!attrs.has("shape")) return attr_error("shape", "is required");
    auto shape = attrs.get_ints("shape", {});
    if (!shape) return Status(shape.status()).with_attribute("shape");
    for (int64_t d : shape.value())
      if (d < 0) return attr_error("shape", "dimensions must be >= 0, got ", ints_to_string(shape.value()));
    a.shape = shape.value();
  }
  if (op_type == "Multinomial") {
    auto n = attrs.get_int("sample_size", 1);
    if (!n) return Status(n.status()).with_attribute("sample_size");
    if (n.value() < 1) return attr_error("sample_size", "must be >= 1, got ", n.value());
    a.sample_size = n.value();
  }
  return a;
}

bool node_is_random(const Node& n) {
  if (!is_onnx(n)) return false;
  static const char* const kOps[] = {"RandomUniform", "RandomNormal", "RandomUniformLike",
                                     "RandomNormalLike", "Bernoulli", "Multinomial"};
  for (const char* op : kOps)
    if (n.op_type == op) return true;
  if (n.op_type != "Dropout" || n.opset < 12 || n.inputs.size() < 3 || !n.inputs[2] || !n.inputs[2]->constant)
    return false;
  const Tensor& t = *n.inputs[2]->constant;
  if (t.numel() != 1 || t.get(0) == 0) return false;
  const Value* r = n.inputs.size() > 1 ? n.inputs[1] : nullptr;
  return !(r && r->constant && r->constant->numel() == 1 && r->constant->get(0) == 0);
}

Status check_dropout_ratio(double ratio) {
  if (ratio >= 0.0 && ratio < 1.0) return Status::ok();
  return error(StatusCode::kInvalidModel, "input 1 (ratio) must be in [0, 1) in training mode, got ", ratio);
}

// ---- CPU reference --------------------------------------------------------------------------
// RandomUniform(Like) draws from [low, high), RandomNormal(Like) from N(mean, scale^2), Bernoulli
// y = 1 with probability x, Multinomial per row of unnormalized log probabilities `sample_size`
// class indices. Dropout's training mode draws its mask from the same generator.
//
// One generator per kernel call: std::mt19937_64 seeded with SplitMix64 of the seed attribute (the
// same values every run), or of a process-wide random seed plus a call counter (fresh values every
// run). Uniform doubles take the generator's top 53 bits; normals come from Box-Muller over them,
// so a seed gives the same stream on every platform graft builds on (std::normal_distribution's
// algorithm is the standard library's choice). These streams are graft's own: ONNX Runtime's
// differ for the same seed.

namespace cpu {

namespace {

class RandomStream {
 public:
  // `seed` absent: a fresh stream (a process-wide random seed plus a counter of streams made).
  explicit RandomStream(std::optional<uint64_t> seed);
  double uniform01();  // [0, 1), a multiple of 2^-53
  double normal();     // standard normal (Box-Muller; the second value of each pair is kept for the next call)

 private:
  std::mt19937_64 gen_;
  std::optional<double> spare_;
};

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t fresh_seed() {
  static const uint64_t base = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  static std::atomic<uint64_t> counter{0};
  return base + 0x632be59bd9b4e019ULL * counter.fetch_add(1, std::memory_order_relaxed);
}

// The node's attributes, after checking it has `inputs` inputs and its output.
Result<RandomAttrs> attrs_for(const ExecContext& ctx, const char* op_type, size_t inputs) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, inputs));
  const Tensor* x = input_or_null(ctx, 0);
  auto a = random_attrs(op_type, attrs_of(ctx), x ? x->dtype() : DataType::kUndefined);
  if (a && a.value().dtype != ctx.outputs[0]->dtype())
    return error(StatusCode::kInternal, op_type, " output has dtype ", dtype_name(ctx.outputs[0]->dtype()),
                 " but the attributes give ", dtype_name(a.value().dtype));
  return a;
}

// y[i] in [low, high) in y's dtype: a draw that rounds to high (or below low) in a narrower type is
// drawn again, so the bound holds exactly; high == low gives low.
Status fill_uniform(Tensor& y, const RandomAttrs& a) {
  RandomStream rng(a.seed);
  for (int64_t i = 0; i < y.numel(); ++i) {
    if (a.high == a.low) {
      y.set(i, a.low);
      continue;
    }
    int tries = 0;
    for (;; ++tries) {
      if (tries == 64)
        return error(StatusCode::kInvalidModel, "no ", dtype_name(y.dtype()), " value lies in [low, high) = [", a.low,
                     ", ", a.high, ")");
      y.set(i, a.low + (a.high - a.low) * rng.uniform01());
      const double v = y.get(i);
      if (v >= a.low && v < a.high) break;
    }
  }
  return Status::ok();
}

Status fill_normal(Tensor& y, const RandomAttrs& a) {
  RandomStream rng(a.seed);
  for (int64_t i = 0; i < y.numel(); ++i) y.set(i, a.mean + a.scale * rng.normal());
  return Status::ok();
}

}  // namespace

RandomStream::RandomStream(std::optional<uint64_t> seed) : gen_(splitmix64(seed ? *seed : fresh_seed())) {}

double RandomStream::uniform01() { return static_cast<double>(gen_() >> 11) * 0x1.0p-53; }

double RandomStream::normal() {
  if (spare_) {
    const double z = *spare_;
    spare_.reset();
    return z;
  }
  const double u1 = 1.0 - uniform01();  // (0, 1]: log is finite
  const double u2 = uniform01();
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double t = 2.0 * M_PI * u2;
  spare_ = r * std::sin(t);
  return r * std::cos(t);
}

namespace {

// RandomUniform(Like) and RandomNormal(Like): output 0 filled by `fill` from the node's attributes.
Status draw(ExecContext& ctx, const char* op_type, size_t inputs, Status (*fill)(Tensor&, const RandomAttrs&)) {
  GRAFT_ASSIGN_OR_RETURN(RandomAttrs a, attrs_for(ctx, op_type, inputs));
  return fill(*ctx.outputs[0], a);
}

}  // namespace

Status random_uniform(ExecContext& ctx) { return draw(ctx, "RandomUniform", 0, fill_uniform); }
Status random_uniform_like(ExecContext& ctx) { return draw(ctx, "RandomUniformLike", 1, fill_uniform); }
Status random_normal(ExecContext& ctx) { return draw(ctx, "RandomNormal", 0, fill_normal); }
Status random_normal_like(ExecContext& ctx) { return draw(ctx, "RandomNormalLike", 1, fill_normal); }

// y = 1 where a uniform draw u in [0, 1) is below p: probability exactly p, and p = 0 or 1 exact.
Status bernoulli(ExecContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(RandomAttrs a, attrs_for(ctx, "Bernoulli", 1));
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  RandomStream rng(a.seed);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double p = x.get(i);
    if (!(p >= 0.0 && p <= 1.0))
      return error(StatusCode::kInvalidArgument, "input 0 (probabilities) element ", i, " is ", p,
                   ", outside [0, 1]");
    y.set(i, rng.uniform01() < p ? 1.0 : 0.0);
  }
  return Status::ok();
}

// Per row of x [batch, classes] (unnormalized log probabilities): weights exp(x - max), their
// running sum, and per sample the first class whose running sum exceeds u * total.
Status multinomial(ExecContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(RandomAttrs a, attrs_for(ctx, "Multinomial", 1));
  const Tensor& x = *ctx.inputs[0];
  if (x.rank() != 2) return error(StatusCode::kInvalidModel, "input 0 must be [batch_size, class_size]");
  const int64_t batch = x.dims()[0], classes = x.dims()[1];
  Tensor& y = *ctx.outputs[0];
  GRAFT_CHECK(y.numel() == batch * a.sample_size);
  RandomStream rng(a.seed);
  std::vector<double> cum(static_cast<size_t>(classes));
  for (int64_t b = 0; b < batch; ++b) {
    double mx = -INFINITY;
    for (int64_t c = 0; c < classes; ++c) {
      const double v = x.get(b * classes + c);
      if (std::isnan(v) || v == INFINITY)
        return error(StatusCode::kInvalidArgument, "input 0 (log probabilities) row ", b, " holds ", v);
      mx = std::max(mx, v);
    }
    if (mx == -INFINITY)
      return error(StatusCode::kInvalidArgument, "input 0 (log probabilities) row ", b,
                   " gives every class probability 0 (no class, or every log probability -inf)");
    double total = 0;
    int64_t last = 0;  // the last class with a positive weight
    for (int64_t c = 0; c < classes; ++c) {
      const double w = std::exp(x.get(b * classes + c) - mx);
      total += w;
      if (w > 0) last = c;
      cum[static_cast<size_t>(c)] = total;
    }
    for (int64_t s = 0; s < a.sample_size; ++s) {
      const double u = rng.uniform01() * total;
      int64_t c = std::upper_bound(cum.begin(), cum.end(), u) - cum.begin();
      if (c > last) c = last;  // u rounded up to total
      store_from_int64(y.dtype(), y.data(), b * a.sample_size + s, c);
    }
  }
  return Status::ok();
}

// Inference (and training at ratio 0): Y = X, mask all true. Training at ratio r > 0 keeps each
// element with probability 1 - r, drawn from graft's generator (RandomStream above; the seed
// attribute gives the same mask every run), and scales the kept ones by 1 / (1 - r).
Status dropout(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1));
  double ratio = 0.0;
  if (ctx.opset >= 12 && ctx.inputs.size() > 2 && ctx.inputs[2]) {
    auto v = ctx.inputs[2]->to_int64_vector();
    if (v.size() != 1)
      return error(StatusCode::kInvalidModel, "Dropout input 2 (training_mode) must be a scalar bool");
    if (v[0] != 0) {
      ratio = 0.5;  // the input's default
      if (const Tensor* r = input_or_null(ctx, 1)) {
        if (r->numel() != 1) return error(StatusCode::kInvalidModel, "Dropout input 1 (ratio) must be a scalar");
        ratio = r->get(0);
      }
      GRAFT_RETURN_IF_ERROR(check_dropout_ratio(ratio));
    }
  }
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  Tensor* mask = output_or_null(ctx, 1);
  GRAFT_CHECK(x.nbytes() == y.nbytes() && x.dtype() == y.dtype());
  if (ratio == 0.0) {
    if (x.nbytes()) std::memcpy(y.data(), x.data(), x.nbytes());
    if (mask)
      for (int64_t i = 0; i < mask->numel(); ++i) mask->set(i, 1.0);
    return Status::ok();
  }
  GRAFT_ASSIGN_OR_RETURN(std::optional<uint64_t> seed, seed_attr(attrs_of(ctx)));
  RandomStream rng(seed);
  const double scale = 1.0 / (1.0 - ratio);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const bool keep = rng.uniform01() >= ratio;
    y.set(i, keep ? x.get(i) * scale : 0.0);
    if (mask) mask->set(i, keep ? 1.0 : 0.0);
  }
  return Status::ok();
}

}  // namespace cpu

// ---- schema: inference and the table rows ---------------------------------------------------
// RandomUniform and RandomNormal (opset 1; output shape and dtype from the attributes),
// RandomUniformLike and RandomNormalLike (opset 1; input 0's shape, and its dtype unless the dtype
// attribute is given), Bernoulli (opset 15; input 0 holds probabilities, output its shape),
// Multinomial (opset 7; [batch, classes] log probabilities to [batch, sample_size] class indices)
// and Dropout (X's shape and dtype, and the mask).

namespace {

using namespace infer;

Status infer_random_source(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(RandomAttrs a, random_attrs(ctx.node().op_type, ctx.attrs(), DataType::kUndefined));
  ctx.set_output(0, desc_of(a.dtype, shape_from_values(a.shape)));
  return Status::ok();
}

// RandomUniformLike, RandomNormalLike and Bernoulli: output 0 has input 0's shape.
Status infer_random_like(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(require_input(ctx, 0));
  if (ctx.node().op_type == "Bernoulli") GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, {kF16, kF32, kF64}));
  else GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kAllTypes));
  const TensorDesc& x = ctx.input(0);
  GRAFT_ASSIGN_OR_RETURN(RandomAttrs a, random_attrs(ctx.node().op_type, ctx.attrs(), x.dtype));
  ctx.set_output(0, desc_of(a.dtype, x.shape));
  return Status::ok();
}

Status infer_multinomial(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, {kF16, kF32, kF64}));
  const TensorDesc& x = ctx.input(0);
  GRAFT_ASSIGN_OR_RETURN(RandomAttrs a, random_attrs("Multinomial", ctx.attrs(), x.dtype));
  if (!x.shape) {
    ctx.set_output(0, desc_of(a.dtype, Shape{ctx.unknown_dim(), Dim(a.sample_size)}));
    return Status::ok();
  }
  if (x.rank() != 2) return ctx.fail("input 0 must be [batch_size, class_size], got ", x.to_string());
  ctx.set_output(0, desc_of(a.dtype, Shape{(*x.shape)[0], Dim(a.sample_size)}));
  return Status::ok();
}

Status infer_dropout(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kFloatTypes));
  if (ctx.opset() < 12) {
    auto ratio = ctx.attrs().get_float("ratio", 0.5f);
    if (!ratio) return Status(ratio.status()).with_attribute("ratio");
  } else {
    GRAFT_RETURN_IF_ERROR(seed_attr(ctx.attrs()).status());
    if (ctx.has_input(1)) GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, kFloatTypes));
    if (ctx.has_input(2)) {
      GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 2, {kBool}));
      if (const Tensor* t = ctx.input_value(2); t && t->device() == DeviceType::kCPU) {
        auto v = t->to_int64_vector();
        if (v.size() != 1) return ctx.fail("input training_mode must be a scalar bool");
        // Training mode draws a random mask unless the ratio is 0 (default 0.5); a ratio known
        // now is checked now, one known only at run time by the kernel.
        if (v[0] != 0 && ctx.has_input(1)) {
          if (const Tensor* r = ctx.input_value(1); r && r->device() == DeviceType::kCPU) {
            if (r->numel() != 1) return ctx.fail("input ratio must be a scalar");
            GRAFT_RETURN_IF_ERROR(check_dropout_ratio(r->get(0)));
          }
        }
      }
    }
  }
  ctx.set_output(0, ctx.input(0));
  // The mask is bool from opset 10; before it has the data's type.
  if (ctx.num_outputs() > 1) ctx.set_output(1, desc_of(ctx.opset() < 10 ? ctx.input(0).dtype : kBool, ctx.input(0).shape));
  return Status::ok();
}

}  // namespace

void append_random_ops(std::vector<OpEntry>& out) {
  out.insert(out.end(), {
      keeps_float32({"RandomUniform", 1, infer_random_source, cpu::random_uniform}),
      keeps_float32({"RandomNormal", 1, infer_random_source, cpu::random_normal}),
      keeps_float32({"RandomUniformLike", 1, infer_random_like, cpu::random_uniform_like}),
      keeps_float32({"RandomNormalLike", 1, infer_random_like, cpu::random_normal_like}),
      {"Bernoulli", 15, infer_random_like, cpu::bernoulli},
      {"Multinomial", 7, infer_multinomial, cpu::multinomial},
      {"Dropout", 7, infer_dropout, cpu::dropout},
  });
}

}  // namespace graft
