// CPU reference kernels of the random ops. See random.h.
#include "backends/cpu/random.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

#include "backends/cpu/kernel_util.h"
#include "backends/cpu/unary_kernel.h"
#include "ops/random_attrs.h"

namespace graft::cpu {
namespace {

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

}  // namespace graft::cpu
