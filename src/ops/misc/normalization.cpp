// InstanceNormalization, GroupNormalization, LRN and MeanVarianceNormalization: their attribute
// readers (misc.h), naive CPU references (statistics in double) and schemas. CUDA: normalization.cu.
#include "ops/misc/misc.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backends/cpu/element_traits.h"
#include "backends/cpu/broadcast_walker.h"
#include "backends/cpu/kernel_util.h"
#include "backends/cpu/unary_kernel.h"
#include "core/checked_math.h"
#include "graft/status.h"
#include "ops/attr_util.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {

namespace {

Result<float> float_attr(const AttributeMap& attrs, const char* name, float def) {
  auto r = attrs.get_float(name, def);
  if (!r) return Status(r.status()).with_attribute(name);
  if (!std::isfinite(r.value())) return attr_error(name, "must be finite, got ", static_cast<double>(r.value()));
  return r.value();
}

}  // namespace

Result<float> instance_norm_epsilon(const AttributeMap& attrs) {
  GRAFT_ASSIGN_OR_RETURN(float eps, float_attr(attrs, "epsilon", 1e-5f));
  if (!(eps >= 0.0f)) return attr_error("epsilon", "must be >= 0, got ", static_cast<double>(eps));
  return eps;
}

Result<GroupNormAttrs> group_norm_attrs(const AttributeMap& attrs) {
  GroupNormAttrs a;
  GRAFT_ASSIGN_OR_RETURN(a.epsilon, instance_norm_epsilon(attrs));
  auto g = attrs.require_int("num_groups");
  if (!g) return Status(g.status()).with_attribute("num_groups");
  if (g.value() < 1) return attr_error("num_groups", "must be >= 1, got ", g.value());
  a.groups = g.value();
  return a;
}

Result<GroupNormLayout> group_norm_layout(const std::vector<int64_t>& x, const std::vector<int64_t>& scale,
                                          const std::vector<int64_t>& bias, int64_t groups, int opset) {
  if (x.size() < 2)
    return error(StatusCode::kInvalidModel, "X must have rank >= 2 (N, C, ...), got ", ints_to_string(x));
  GroupNormLayout l;
  l.batch = x[0];
  l.channels = x[1];
  l.groups = groups;
  for (size_t d = 2; d < x.size(); ++d) l.spatial *= x[d];
  if (l.channels % groups != 0)
    return attr_error("num_groups", groups, " does not divide the ", l.channels, " channels of X ", ints_to_string(x));
  l.per_group_affine = group_norm_per_group_affine(opset);
  const int64_t want = l.per_group_affine ? groups : l.channels;
  if (scale != std::vector<int64_t>{want} || bias != std::vector<int64_t>{want})
    return error(StatusCode::kInvalidModel, "scale ", ints_to_string(scale), " and bias ", ints_to_string(bias),
                 " must be [", want, "] (one entry per ", l.per_group_affine ? "group, opset 18 to 20" : "channel, opset 21 on",
                 ") for X ", ints_to_string(x));
  return l;
}

Result<GroupNormLayout> instance_norm_layout(const std::vector<int64_t>& x, const std::vector<int64_t>& scale,
                                             const std::vector<int64_t>& bias) {
  if (x.size() < 2)
    return error(StatusCode::kInvalidModel, "input must have rank >= 2 (N, C, ...), got ", ints_to_string(x));
  const int64_t c = x[1];
  if (scale != std::vector<int64_t>{c} || bias != std::vector<int64_t>{c})
    return error(StatusCode::kInvalidModel, "scale ", ints_to_string(scale), " and B ", ints_to_string(bias), " must be [",
                 c, "] for input ", ints_to_string(x));
  GroupNormLayout l;
  l.batch = x[0];
  l.channels = l.groups = c;
  for (size_t d = 2; d < x.size(); ++d) l.spatial *= x[d];
  return l;
}

Result<LrnAttrs> lrn_attrs(const AttributeMap& attrs) {
  LrnAttrs a;
  auto size = attrs.require_int("size");
  if (!size) return Status(size.status()).with_attribute("size");
  if (size.value() < 1) return attr_error("size", "must be >= 1, got ", size.value());
  a.size = size.value();
  GRAFT_ASSIGN_OR_RETURN(a.alpha, float_attr(attrs, "alpha", 1e-4f));
  GRAFT_ASSIGN_OR_RETURN(a.beta, float_attr(attrs, "beta", 0.75f));
  GRAFT_ASSIGN_OR_RETURN(a.bias, float_attr(attrs, "bias", 1.0f));
  return a;
}

Result<std::vector<int64_t>> mvn_axes(const AttributeMap& attrs, int64_t rank) {
  auto r = attrs.get_ints("axes", {0, 2, 3});
  if (!r) return Status(r.status()).with_attribute("axes");
  std::vector<int64_t> axes;
  for (int64_t a : r.value()) {
    auto n = normalize_axis(a, rank);
    if (!n) return Status(n.status()).with_attribute("axes");
    if (std::find(axes.begin(), axes.end(), n.value()) != axes.end())
      return attr_error("axes", "lists axis ", a, " twice: ", ints_to_string(r.value()));
    axes.push_back(n.value());
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}


// ---- CPU reference --------------------------------------------------------------------------
// Values are loaded as double, statistics and sums accumulate in double, and each result is rounded
// once into the output dtype.

namespace cpu {

namespace {

// Output 0 allocated and of the input's element count.
Status same_size_output(const ExecContext& ctx) {
  const Tensor& x = *ctx.inputs[0];
  const Tensor& y = *ctx.outputs[0];
  GRAFT_CHECK(y.numel() == x.numel() && y.dtype() == x.dtype());
  return Status::ok();
}

// Per group of `l` (contiguous: C / G channels of `spatial` elements), the mean and biased variance
// in double, then y = (x - mean) * scale / sqrt(var + eps) + bias, with the group's or the channel's
// scale and bias.
void normalize_groups(const Tensor& x, const Tensor& scale, const Tensor& bias, Tensor& y, const GroupNormLayout& l,
                      float eps) {
  const int64_t per_group = l.channels / l.groups, size = per_group * l.spatial;
  for (int64_t p = 0; p < l.batch * l.groups; ++p) {
    const int64_t base = p * size, g = p % l.groups;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < size; ++i) mean += x.get(base + i);
    mean /= static_cast<double>(size);
    for (int64_t i = 0; i < size; ++i) {
      const double d = x.get(base + i) - mean;
      var += d * d;
    }
    var /= static_cast<double>(size);
    const double den = std::sqrt(var + static_cast<double>(eps));
    for (int64_t i = 0; i < size; ++i) {
      const int64_t ch = l.per_group_affine ? g : g * per_group + i / l.spatial;
      y.set(base + i, (x.get(base + i) - mean) * (scale.get(ch) / den) + bias.get(ch));
    }
  }
}

}  // namespace

Status instance_normalization(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 3));
  GRAFT_RETURN_IF_ERROR(require_float_tensor(ctx.inputs[0], "input"));
  GRAFT_RETURN_IF_ERROR(require_float_tensor(ctx.inputs[1], "scale"));
  GRAFT_RETURN_IF_ERROR(require_float_tensor(ctx.inputs[2], "B"));
  const Tensor& x = *ctx.inputs[0];
  const Tensor& scale = *ctx.inputs[1];
  const Tensor& bias = *ctx.inputs[2];
  GRAFT_RETURN_IF_ERROR(same_size_output(ctx));
  GRAFT_ASSIGN_OR_RETURN(float eps, instance_norm_epsilon(attrs_of(ctx)));
  auto l = instance_norm_layout(x.dims(), scale.dims(), bias.dims());
  if (!l) return error(l.status().code(), "InstanceNormalization: ", l.status().message());
  normalize_groups(x, scale, bias, *ctx.outputs[0], l.value(), eps);
  return Status::ok();
}

Status group_normalization(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 3));
  GRAFT_RETURN_IF_ERROR(require_float_tensor(ctx.inputs[0], "X"));
  GRAFT_RETURN_IF_ERROR(require_float_tensor(ctx.inputs[1], "scale"));
  GRAFT_RETURN_IF_ERROR(require_float_tensor(ctx.inputs[2], "bias"));
  GRAFT_RETURN_IF_ERROR(same_size_output(ctx));
  GRAFT_ASSIGN_OR_RETURN(GroupNormAttrs a, group_norm_attrs(attrs_of(ctx)));
  const Tensor& x = *ctx.inputs[0];
  GRAFT_ASSIGN_OR_RETURN(GroupNormLayout l, group_norm_layout(x.dims(), ctx.inputs[1]->dims(), ctx.inputs[2]->dims(),
                                                              a.groups, ctx.opset));
  normalize_groups(x, *ctx.inputs[1], *ctx.inputs[2], *ctx.outputs[0], l, a.epsilon);
  return Status::ok();
}

Status lrn(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1));
  GRAFT_RETURN_IF_ERROR(require_float_tensor(ctx.inputs[0], "X"));
  const Tensor& x = *ctx.inputs[0];
  GRAFT_RETURN_IF_ERROR(same_size_output(ctx));
  GRAFT_ASSIGN_OR_RETURN(LrnAttrs a, lrn_attrs(attrs_of(ctx)));
  if (x.rank() < 2)
    return error(StatusCode::kInvalidModel, "LRN: input must have rank >= 2 (N, C, ...), got ", ints_to_string(x.dims()));
  const AxisView v = axis_view(x.dims(), 1, false);
  // The window over channels: floor((size - 1) / 2) before, ceil((size - 1) / 2) after.
  const int64_t before = (a.size - 1) / 2, after = a.size - 1 - before;
  // Windows of realistic sizes are summed directly; one wider than kDirect channels (only a
  // pathological size over many channels) from prefix sums, so the cost stays linear in the input.
  constexpr int64_t kDirect = 256;
  const bool direct = std::min(a.size, v.n) <= kDirect;
  std::vector<double> prefix(direct ? 0 : static_cast<size_t>(v.n) + 1);
  Tensor& y = *ctx.outputs[0];
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t i = 0; i < v.inner; ++i) {
      auto sq_at = [&](int64_t k) {
        const double e = x.get((o * v.n + k) * v.inner + i);
        return e * e;
      };
      if (!direct)
        for (int64_t k = 0; k < v.n; ++k) prefix[static_cast<size_t>(k) + 1] = prefix[static_cast<size_t>(k)] + sq_at(k);
      for (int64_t ch = 0; ch < v.n; ++ch) {
        // ch + after may exceed int64 for a huge size: clamp `after` to the channel count first.
        const int64_t lo = std::max<int64_t>(0, ch - before), hi = std::min<int64_t>(v.n - 1, ch + std::min(after, v.n));
        double sq = 0;
        if (direct) {
          for (int64_t k = lo; k <= hi; ++k) sq += sq_at(k);
        } else {
          sq = prefix[static_cast<size_t>(hi) + 1] - prefix[static_cast<size_t>(lo)];
        }
        const int64_t at = (o * v.n + ch) * v.inner + i;
        const double den = std::pow(static_cast<double>(a.bias) + static_cast<double>(a.alpha) / static_cast<double>(a.size) * sq,
                                    static_cast<double>(a.beta));
        y.set(at, x.get(at) / den);
      }
    }
  return Status::ok();
}

Status mean_variance_normalization(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1));
  GRAFT_RETURN_IF_ERROR(require_float_tensor(ctx.inputs[0], "X"));
  const Tensor& x = *ctx.inputs[0];
  GRAFT_RETURN_IF_ERROR(same_size_output(ctx));
  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> axes, mvn_axes(attrs_of(ctx), x.rank()));
  const int64_t rank = x.rank();
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t a : axes) reduced[static_cast<size_t>(a)] = true;
  // Group id of each element: its index with the reduced axes dropped.
  std::vector<int64_t> kept_dims;
  for (int64_t d = 0; d < rank; ++d)
    if (!reduced[static_cast<size_t>(d)]) kept_dims.push_back(x.dims()[d]);
  int64_t groups = 1;
  for (int64_t d : kept_dims) groups *= d;
  const int64_t total = x.numel();
  std::vector<int64_t> group_of(static_cast<size_t>(total));
  std::vector<int64_t> idx;
  for (int64_t e = 0; e < total; ++e) {
    unravel(e, x.dims(), idx);
    int64_t g = 0;
    for (int64_t d = 0; d < rank; ++d)
      if (!reduced[static_cast<size_t>(d)]) g = g * x.dims()[d] + idx[static_cast<size_t>(d)];
    group_of[static_cast<size_t>(e)] = g;
  }
  std::vector<double> mean(static_cast<size_t>(groups), 0.0), var(static_cast<size_t>(groups), 0.0),
      count(static_cast<size_t>(groups), 0.0);
  for (int64_t e = 0; e < total; ++e) {
    const size_t g = static_cast<size_t>(group_of[static_cast<size_t>(e)]);
    mean[g] += x.get(e);
    count[g] += 1;
  }
  for (size_t g = 0; g < mean.size(); ++g) mean[g] /= count[g];
  for (int64_t e = 0; e < total; ++e) {
    const size_t g = static_cast<size_t>(group_of[static_cast<size_t>(e)]);
    const double d = x.get(e) - mean[g];
    var[g] += d * d;
  }
  Tensor& y = *ctx.outputs[0];
  // (x - mean) / (sqrt(variance) + 1e-9), the epsilon of the ONNX function body.
  for (int64_t e = 0; e < total; ++e) {
    const size_t g = static_cast<size_t>(group_of[static_cast<size_t>(e)]);
    y.set(e, (x.get(e) - mean[g]) / (std::sqrt(var[g] / count[g]) + 1e-9));
  }
  return Status::ok();
}

}  // namespace cpu

// ---- schema ---------------------------------------------------------------------------------

namespace {

using namespace infer;

Status infer_instance_norm(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kFloatTypes));
  GRAFT_RETURN_IF_ERROR(instance_norm_epsilon(ctx.attrs()).status());
  GRAFT_RETURN_IF_ERROR(require_rank_at_least(ctx, 0, 2, "input (N, C, ...)"));
  const TensorDesc& x = ctx.input(0);
  const char* names[3] = {"input", "scale", "B"};
  for (size_t i = 1; i < 3; ++i) {
    GRAFT_RETURN_IF_ERROR(require_input(ctx, i));
    const TensorDesc& p = ctx.input(i);
    if (p.dtype != x.dtype)
      return ctx.fail("input ", names[i], " has dtype ", dtype_name(p.dtype), " but input has ", dtype_name(x.dtype));
    if (!p.shape) continue;
    const bool c_known = x.shape && (*x.shape)[1].is_const() && (*p.shape).size() == 1 && (*p.shape)[0].is_const();
    if (p.rank() != 1 || (c_known && (*p.shape)[0].value() != (*x.shape)[1].value()))
      return ctx.fail("input ", names[i], " ", p.to_string(), " must be 1-D with C elements (input ", x.to_string(), ")");
  }
  ctx.set_output(0, x);
  return Status::ok();
}

Status infer_group_norm(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kFloatTypes));
  GRAFT_ASSIGN_OR_RETURN(GroupNormAttrs a, group_norm_attrs(ctx.attrs()));
  GRAFT_RETURN_IF_ERROR(require_rank_at_least(ctx, 0, 2, "X (N, C, ...)"));
  const TensorDesc& x = ctx.input(0);
  const char* names[3] = {"X", "scale", "bias"};
  for (size_t i = 1; i < 3; ++i) {
    GRAFT_RETURN_IF_ERROR(require_input(ctx, i));
    if (ctx.input(i).dtype != x.dtype)
      return ctx.fail("input ", names[i], " has dtype ", dtype_name(ctx.input(i).dtype), " but X has ", dtype_name(x.dtype));
  }
  // Where the shapes are known, the layout's checks, worded as the kernels word them.
  const bool known = x.shape && shape_is_static(*x.shape) && ctx.input(1).shape && shape_is_static(*ctx.input(1).shape) &&
                     ctx.input(2).shape && shape_is_static(*ctx.input(2).shape);
  if (known) {
    auto l = group_norm_layout(shape_values(*x.shape), shape_values(*ctx.input(1).shape), shape_values(*ctx.input(2).shape),
                               a.groups, ctx.opset());
    if (!l) return l.status().attribute().empty() ? ctx.fail(l.status().message()) : l.status();
  } else if (x.shape && (*x.shape)[1].is_const() && (*x.shape)[1].value() % a.groups != 0) {
    return attr_error("num_groups", a.groups, " does not divide the ", (*x.shape)[1].value(), " channels of X ",
                      x.to_string());
  }
  auto stash = ctx.attrs().get_int("stash_type", 1);  // opset 21: the statistics' type; graft's are double
  if (!stash) return Status(stash.status()).with_attribute("stash_type");
  ctx.set_output(0, x);
  return Status::ok();
}

Status infer_lrn(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kFloatTypes));
  GRAFT_RETURN_IF_ERROR(lrn_attrs(ctx.attrs()).status());
  GRAFT_RETURN_IF_ERROR(require_rank_at_least(ctx, 0, 2, "X (N, C, ...)"));
  ctx.set_output(0, ctx.input(0));
  return Status::ok();
}

Status infer_mvn(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kFloatTypes));
  if (ctx.input(0).shape) {
    GRAFT_RETURN_IF_ERROR(mvn_axes(ctx.attrs(), ctx.input(0).rank()).status());
  } else {
    auto r = ctx.attrs().get_ints("axes", {});
    if (!r) return Status(r.status()).with_attribute("axes");
  }
  ctx.set_output(0, ctx.input(0));
  return Status::ok();
}

}  // namespace

void append_normalization_ops(std::vector<OpEntry>& out) {
  out.push_back(OpEntry{"InstanceNormalization", 6, infer_instance_norm, cpu::instance_normalization});
  out.push_back(OpEntry{"GroupNormalization", 18, infer_group_norm, cpu::group_normalization});
  out.push_back(OpEntry{"LRN", 1, infer_lrn, cpu::lrn});
  out.push_back(OpEntry{"MeanVarianceNormalization", 9, infer_mvn, cpu::mean_variance_normalization});
}

}  // namespace graft
