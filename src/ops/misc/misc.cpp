// The misc family's definitions and CPU references (misc.h; CUDA: misc.cu).
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

// ---- attributes and shapes (misc.h) ---------------------------------------------------------
// See misc.h.

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

Result<bool> bit_shift_left(const AttributeMap& attrs) {
  if (!attrs.has("direction")) return attr_error("direction", "is required (LEFT or RIGHT)");
  auto d = attrs.get_string("direction", "");
  if (!d) return Status(d.status()).with_attribute("direction");
  if (d.value() != "LEFT" && d.value() != "RIGHT")
    return attr_error("direction", "must be LEFT or RIGHT, got '", d.value(), "'");
  return d.value() == "LEFT";
}

Result<std::pair<int64_t, int64_t>> reverse_sequence_axes(const AttributeMap& attrs) {
  auto b = attrs.get_int("batch_axis", 1);
  if (!b) return Status(b.status()).with_attribute("batch_axis");
  auto t = attrs.get_int("time_axis", 0);
  if (!t) return Status(t.status()).with_attribute("time_axis");
  if (b.value() != 0 && b.value() != 1) return attr_error("batch_axis", "must be 0 or 1, got ", b.value());
  if (t.value() != 0 && t.value() != 1) return attr_error("time_axis", "must be 0 or 1, got ", t.value());
  if (b.value() == t.value())
    return attr_error("time_axis", "must differ from batch_axis (both are ", b.value(), ")");
  return std::make_pair(b.value(), t.value());
}

// ---- Einsum's equation (misc.h) ------------------------------------------------------------

namespace {

// One term of the equation: its letters, and where its ellipsis stands (-1: none).
struct Term {
  std::string letters;
  int ellipsis_at = -1;  // index into letters before which the ellipsis stands
};

Result<Term> parse_term(const std::string& text, const std::string& equation) {
  Term t;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ') continue;
    if (c == '.') {
      if (text.compare(i, 3, "...") != 0 || t.ellipsis_at >= 0)
        return error(StatusCode::kInvalidModel, "equation '", equation, "': a term may hold one '...' and no lone '.'");
      t.ellipsis_at = static_cast<int>(t.letters.size());
      i += 2;
      continue;
    }
    if (!std::isalpha(static_cast<unsigned char>(c)))
      return error(StatusCode::kInvalidModel, "equation '", equation, "': unexpected character '", std::string(1, c), "'");
    t.letters += c;
  }
  return t;
}

}  // namespace

Result<EinsumSpec> parse_einsum(const std::string& equation, const std::vector<int64_t>& ranks) {
  const size_t arrow = equation.find("->");
  const std::string lhs = equation.substr(0, arrow);
  if (arrow != std::string::npos && equation.find("->", arrow + 2) != std::string::npos)
    return error(StatusCode::kInvalidModel, "equation '", equation, "' has more than one '->'");
  std::vector<Term> terms;
  size_t start = 0;
  while (true) {
    const size_t comma = lhs.find(',', start);
    GRAFT_ASSIGN_OR_RETURN(Term t, parse_term(lhs.substr(start, comma - start), equation));
    terms.push_back(std::move(t));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != ranks.size())
    return error(StatusCode::kInvalidModel, "equation '", equation, "' has ", terms.size(), " operand terms but the node has ",
                 ranks.size(), " inputs");
  // Ellipsis lengths from the ranks, and the broadcast length.
  std::vector<int64_t> ell(terms.size(), 0);
  int64_t max_ell = 0;
  for (size_t k = 0; k < terms.size(); ++k) {
    const int64_t n = static_cast<int64_t>(terms[k].letters.size());
    ell[k] = ranks[k] - n;
    if ((terms[k].ellipsis_at < 0 && ell[k] != 0) || ell[k] < 0)
      return error(StatusCode::kInvalidModel, "equation '", equation, "': operand ", k, " has rank ", ranks[k],
                   " but its term names ", n, " axes", terms[k].ellipsis_at >= 0 ? " and an ellipsis" : "");
    max_ell = std::max(max_ell, ell[k]);
  }
  EinsumSpec spec;
  std::map<char, int> letter_id;
  std::map<char, int> count;
  for (const Term& t : terms)
    for (char c : t.letters) {
      if (!letter_id.count(c)) letter_id.emplace(c, static_cast<int>(letter_id.size()));
      ++count[c];
    }
  const int letters = static_cast<int>(letter_id.size());
  spec.num_labels = letters + static_cast<int>(max_ell);
  spec.ellipsis_label.assign(static_cast<size_t>(spec.num_labels), false);
  for (int64_t j = 0; j < max_ell; ++j) spec.ellipsis_label[static_cast<size_t>(letters + j)] = true;
  for (size_t k = 0; k < terms.size(); ++k) {
    std::vector<int> labels;
    const Term& t = terms[k];
    for (size_t i = 0; i <= t.letters.size(); ++i) {
      if (static_cast<int>(i) == t.ellipsis_at)
        for (int64_t j = 0; j < ell[k]; ++j) labels.push_back(letters + static_cast<int>(max_ell - ell[k] + j));
      if (i < t.letters.size()) labels.push_back(letter_id[t.letters[i]]);
    }
    spec.in_labels.push_back(std::move(labels));
  }
  if (arrow == std::string::npos) {
    for (int64_t j = 0; j < max_ell; ++j) spec.out_labels.push_back(letters + static_cast<int>(j));
    for (const auto& [c, n] : count)  // std::map: alphabetical (upper case before lower, as in ASCII)
      if (n == 1) spec.out_labels.push_back(letter_id[c]);
    return spec;
  }
  GRAFT_ASSIGN_OR_RETURN(Term out, parse_term(equation.substr(arrow + 2), equation));
  if (out.ellipsis_at < 0 && max_ell > 0)
    return error(StatusCode::kInvalidModel, "equation '", equation, "': the inputs have an ellipsis but the output does not");
  std::vector<bool> seen(static_cast<size_t>(letters), false);
  for (size_t i = 0; i <= out.letters.size(); ++i) {
    if (static_cast<int>(i) == out.ellipsis_at)
      for (int64_t j = 0; j < max_ell; ++j) spec.out_labels.push_back(letters + static_cast<int>(j));
    if (i == out.letters.size()) break;
    const char c = out.letters[i];
    auto it = letter_id.find(c);
    if (it == letter_id.end())
      return error(StatusCode::kInvalidModel, "equation '", equation, "': output label '", std::string(1, c),
                   "' names no input axis");
    if (seen[static_cast<size_t>(it->second)])
      return error(StatusCode::kInvalidModel, "equation '", equation, "': output label '", std::string(1, c), "' repeats");
    seen[static_cast<size_t>(it->second)] = true;
    spec.out_labels.push_back(it->second);
  }
  return spec;
}

Result<std::vector<int64_t>> einsum_extents(const EinsumSpec& spec, const std::vector<std::vector<int64_t>>& dims) {
  std::vector<int64_t> ext(static_cast<size_t>(spec.num_labels), -1);
  for (size_t k = 0; k < spec.in_labels.size(); ++k) {
    if (dims[k].size() != spec.in_labels[k].size())
      return error(StatusCode::kInvalidModel, "operand ", k, " has rank ", dims[k].size(), ", the equation gives it ",
                   spec.in_labels[k].size(), " axes");
    for (size_t a = 0; a < dims[k].size(); ++a) {
      const int label = spec.in_labels[k][a];
      int64_t& e = ext[static_cast<size_t>(label)];
      const int64_t d = dims[k][a];
      if (e < 0 || e == d) {
        e = d;
      } else if (spec.ellipsis_label[static_cast<size_t>(label)] && (e == 1 || d == 1)) {
        e = std::max(e, d);
      } else {
        return error(StatusCode::kInvalidModel, "operand ", k, " axis ", a, " has extent ", d, " where another axis with ",
                     "the same label has ", e);
      }
    }
  }
  for (int64_t& e : ext)
    if (e < 0) e = 1;  // an ellipsis position no operand reaches (cannot happen; kept well-defined)
  return ext;
}

Result<EinsumLayout> einsum_layout(const EinsumSpec& spec, const std::vector<std::vector<int64_t>>& dims) {
  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> ext, einsum_extents(spec, dims));
  EinsumLayout lay;
  lay.order = spec.out_labels;
  lay.n_out = spec.out_labels.size();
  std::vector<bool> in_out(static_cast<size_t>(spec.num_labels), false);
  for (int l : spec.out_labels) in_out[static_cast<size_t>(l)] = true;
  for (int l = 0; l < spec.num_labels; ++l)
    if (!in_out[static_cast<size_t>(l)]) lay.order.push_back(l);
  std::vector<size_t> pos_of(static_cast<size_t>(spec.num_labels));
  for (size_t p = 0; p < lay.order.size(); ++p) {
    pos_of[static_cast<size_t>(lay.order[p])] = p;
    lay.ext.push_back(ext[static_cast<size_t>(lay.order[p])]);
  }
  for (size_t k = 0; k < dims.size(); ++k) {
    std::vector<int64_t> st(lay.order.size(), 0);
    int64_t s = 1;
    for (size_t a = dims[k].size(); a-- > 0;) {
      const int label = spec.in_labels[k][a];
      if (dims[k][a] != 1 || ext[static_cast<size_t>(label)] == 1) st[pos_of[static_cast<size_t>(label)]] += s;
      s *= dims[k][a];
    }
    lay.stride.push_back(std::move(st));
  }
  for (size_t p = lay.n_out; p < lay.order.size(); ++p) {
    if (lay.ext[p] != 0 && lay.inner > INT64_MAX / lay.ext[p]) {
      lay.inner = INT64_MAX;
      break;
    }
    lay.inner *= lay.ext[p];
  }
  return lay;
}

// ---- CPU reference --------------------------------------------------------------------------
// Same conventions as the other CPU references: values are loaded as double, statistics and sums
// accumulate in double, and each result is rounded once into the output dtype.

namespace cpu {

enum class WindowKind { kHann, kHamming, kBlackman };

// Einsum refuses (kUnsupported) more than this many products.
inline constexpr int64_t kMaxEinsumTerms = int64_t{1} << 32;

namespace {

constexpr double kPi = 3.14159265358979323846;

// Output 0 allocated and of the input's element count.
Status same_size_output(const ExecContext& ctx) {
  const Tensor& x = *ctx.inputs[0];
  const Tensor& y = *ctx.outputs[0];
  GRAFT_CHECK(y.numel() == x.numel() && y.dtype() == x.dtype());
  return Status::ok();
}

Status window(ExecContext& ctx, WindowKind kind) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1));
  const Tensor& size_t_ = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  if (size_t_.numel() != 1 || !dtype_is_integer(size_t_.dtype()))
    return error(StatusCode::kInvalidModel, op_name(ctx), ": input size must be one integer, got ",
                 dtype_name(size_t_.dtype()), " ", ints_to_string(size_t_.dims()));
  const int64_t n = size_t_.to_int64_vector()[0];
  if (n < 0 || n > kMaxWindowLength)
    return error(StatusCode::kInvalidModel, op_name(ctx), ": size ", n, " is outside [0, ", kMaxWindowLength, "]");
  GRAFT_CHECK(y.numel() == n);
  GRAFT_ASSIGN_OR_RETURN(int64_t periodic, attrs_of(ctx).get_int("periodic", 1));
  // Periodic windows divide by N (the first N of an N+1 symmetric window), symmetric ones by N - 1.
  // A symmetric window of one sample (0/0 in the formula) is [1], as in numpy and scipy.
  const double den = periodic ? static_cast<double>(n) : static_cast<double>(n - 1);
  for (int64_t i = 0; i < n; ++i) {
    if (den == 0) {
      y.set(i, 1.0);
      continue;
    }
    const double a = 2 * kPi * static_cast<double>(i) / den;
    double v = 0;
    switch (kind) {
      case WindowKind::kHann: v = 0.5 - 0.5 * std::cos(a); break;
      case WindowKind::kHamming: v = 25.0 / 46.0 - 21.0 / 46.0 * std::cos(a); break;
      case WindowKind::kBlackman: v = 0.42 - 0.5 * std::cos(a) + 0.08 * std::cos(2 * a); break;
    }
    y.set(i, v);
  }
  return Status::ok();
}

}  // namespace

// ---- normalizations ---------------------------------------------------------------------------

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
  if (x.rank() < 2)
    return error(StatusCode::kInvalidModel, "InstanceNormalization: input must have rank >= 2 (N, C, ...), got ",
                 ints_to_string(x.dims()));
  const int64_t n = x.dims()[0], c = x.dims()[1];
  if (scale.dims() != std::vector<int64_t>{c} || bias.dims() != std::vector<int64_t>{c})
    return error(StatusCode::kInvalidModel, "InstanceNormalization: scale ", ints_to_string(scale.dims()), " and B ",
                 ints_to_string(bias.dims()), " must be [", c, "] for input ", ints_to_string(x.dims()));
  const AxisView v = axis_view(x.dims(), 1, false);  // [n, c, spatial]
  Tensor& y = *ctx.outputs[0];
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch) {
      const int64_t base = (b * c + ch) * v.inner;
      double mean = 0, var = 0;
      for (int64_t i = 0; i < v.inner; ++i) mean += x.get(base + i);
      mean /= static_cast<double>(v.inner);
      for (int64_t i = 0; i < v.inner; ++i) {
        const double d = x.get(base + i) - mean;
        var += d * d;
      }
      var /= static_cast<double>(v.inner);
      const double k = scale.get(ch) / std::sqrt(var + static_cast<double>(eps)), sh = bias.get(ch);
      for (int64_t i = 0; i < v.inner; ++i) y.set(base + i, (x.get(base + i) - mean) * k + sh);
    }
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

// ---- data ---------------------------------------------------------------------------------------

Status eye_like(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1));
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  GRAFT_ASSIGN_OR_RETURN(int64_t k, attrs_of(ctx).get_int("k", 0));
  if (x.rank() != 2)
    return error(StatusCode::kInvalidModel, "EyeLike: input must be 2-D, got ", ints_to_string(x.dims()));
  GRAFT_CHECK(y.dims() == x.dims());
  const int64_t rows = x.dims()[0], cols = x.dims()[1];
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) y.set(i * cols + j, j - i == k ? 1.0 : 0.0);  // j - i: both dims, no overflow
  return Status::ok();
}

// A shift by the bit width or more gives 0.
Status bit_shift(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 2));
  const Tensor& x = *ctx.inputs[0];
  const Tensor& s = *ctx.inputs[1];
  Tensor& y = *ctx.outputs[0];
  GRAFT_ASSIGN_OR_RETURN(bool left, bit_shift_left(attrs_of(ctx)));
  if (x.dtype() != s.dtype() || y.dtype() != x.dtype())
    return error(StatusCode::kInvalidModel, "BitShift: X and Y must share a dtype, got ", dtype_name(x.dtype()), " and ",
                 dtype_name(s.dtype()));
  GRAFT_ASSIGN_OR_RETURN(detail::BroadcastWalker w, detail::BroadcastWalker::make(y.dims(), {x.dims(), s.dims()}));
  auto shift = [&](auto zero) -> Status {
    using T = decltype(zero);
    constexpr uint64_t kBits = sizeof(T) * 8;
    const T* xp = static_cast<const T*>(x.data());
    const T* sp = static_cast<const T*>(s.data());
    T* yp = static_cast<T*>(y.data());
    for (int64_t i = 0, n = y.numel(); i < n; ++i, w.next()) {
      // Widened to 64 bits so that narrow types do not promote to signed int; shifting by the
      // width or more is undefined in C++, and ONNX's answer is that every bit is shifted out.
      const uint64_t v = xp[w.offset(0)], by = sp[w.offset(1)];
      yp[i] = by >= kBits ? T{0} : static_cast<T>(left ? (v << by) : (v >> by));
    }
    return Status::ok();
  };
  switch (x.dtype()) {
    case DataType::kUInt8: return shift(uint8_t{0});
    case DataType::kUInt16: return shift(uint16_t{0});
    case DataType::kUInt32: return shift(uint32_t{0});
    case DataType::kUInt64: return shift(uint64_t{0});
    default: return bad_dtype(ctx, x.dtype());
  }
}

Status reverse_sequence(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 2));
  const Tensor& x = *ctx.inputs[0];
  const Tensor& lens_t = *ctx.inputs[1];
  Tensor& y = *ctx.outputs[0];
  GRAFT_ASSIGN_OR_RETURN(auto axes, reverse_sequence_axes(attrs_of(ctx)));
  const auto [batch_axis, time_axis] = axes;
  if (x.rank() < 2)
    return error(StatusCode::kInvalidModel, "ReverseSequence: input must have rank >= 2, got ", ints_to_string(x.dims()));
  GRAFT_CHECK(y.dims() == x.dims() && y.dtype() == x.dtype());
  const int64_t batch = x.dims()[batch_axis], steps = x.dims()[time_axis];
  if (lens_t.dtype() != DataType::kInt64 || lens_t.dims() != std::vector<int64_t>{batch})
    return error(StatusCode::kInvalidModel, "ReverseSequence: sequence_lens must be int64 [", batch, "], got ",
                 dtype_name(lens_t.dtype()), " ", ints_to_string(lens_t.dims()));
  const std::vector<int64_t> lens = lens_t.to_int64_vector();
  for (int64_t b = 0; b < batch; ++b)
    if (lens[static_cast<size_t>(b)] < 0 || lens[static_cast<size_t>(b)] > steps)
      return error(StatusCode::kRuntimeError, "ReverseSequence: sequence_lens[", b, "] = ", lens[static_cast<size_t>(b)],
                   " is outside [0, ", steps, "] (the time axis)");
  // Elements after the two leading axes are one contiguous block per (axis 0, axis 1) pair.
  int64_t block = 1;
  for (int64_t d = 2; d < x.rank(); ++d) block *= x.dims()[d];
  const size_t es = dtype_size(x.dtype());
  const size_t block_bytes = static_cast<size_t>(block) * es;
  const int64_t d1 = x.dims()[1];
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < steps; ++t) {
      const int64_t len = lens[static_cast<size_t>(b)];
      const int64_t src_t = t < len ? len - 1 - t : t;
      const int64_t dst = batch_axis == 0 ? b * d1 + t : t * d1 + b;
      const int64_t src = batch_axis == 0 ? b * d1 + src_t : src_t * d1 + b;
      if (block_bytes)
        std::memcpy(static_cast<char*>(y.data()) + static_cast<size_t>(dst) * block_bytes,
                    static_cast<const char*>(x.data()) + static_cast<size_t>(src) * block_bytes, block_bytes);
    }
  return Status::ok();
}

Status hann_window(ExecContext& ctx) { return window(ctx, WindowKind::kHann); }
Status hamming_window(ExecContext& ctx) { return window(ctx, WindowKind::kHamming); }
Status blackman_window(ExecContext& ctx) { return window(ctx, WindowKind::kBlackman); }

// ---- Det ----------------------------------------------------------------------------------------

// LU with partial pivoting in double.
Status det(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1));
  GRAFT_RETURN_IF_ERROR(require_float_tensor(ctx.inputs[0], "X"));
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  if (x.rank() < 2 || x.dims()[x.rank() - 1] != x.dims()[x.rank() - 2])
    return error(StatusCode::kInvalidModel, "Det: input must be [..., M, M], got ", ints_to_string(x.dims()));
  const int64_t m = x.dims()[x.rank() - 1];
  const int64_t mm = m * m;
  const int64_t batches = mm == 0 ? y.numel() : x.numel() / mm;
  GRAFT_CHECK(y.numel() == batches && y.dtype() == x.dtype());
  std::vector<double> a(static_cast<size_t>(mm));
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t i = 0; i < mm; ++i) a[static_cast<size_t>(i)] = x.get(b * mm + i);
    auto at = [&](int64_t r, int64_t c) -> double& { return a[static_cast<size_t>(r * m + c)]; };
    double d = 1;
    for (int64_t col = 0; col < m && d != 0; ++col) {
      int64_t piv = col;
      for (int64_t r = col + 1; r < m; ++r)
        if (std::fabs(at(r, col)) > std::fabs(at(piv, col))) piv = r;
      if (at(piv, col) == 0) {
        d = 0;
        break;
      }
      if (piv != col) {
        for (int64_t c = 0; c < m; ++c) std::swap(at(piv, c), at(col, c));
        d = -d;
      }
      d *= at(col, col);
      for (int64_t r = col + 1; r < m; ++r) {
        const double f = at(r, col) / at(col, col);
        for (int64_t c = col; c < m; ++c) at(r, c) -= f * at(col, c);
      }
    }
    y.set(b, d);
  }
  return Status::ok();
}

namespace {

// Exact integer element access (double would round int64 beyond 2^53); a uint64 travels as its
// bit pattern, and two's-complement products and sums of those bits are the uint64 results.
int64_t load_integer(const Tensor& t, int64_t i) { return load_as_int64(t.dtype(), t.data(), i); }
// Wraps to the output's width, as integer arithmetic in that type would.
void store_integer(Tensor& t, int64_t i, int64_t v) { store_from_int64(t.dtype(), t.data(), i, v); }

}  // namespace

// Every output element sums the products over the labels the output lacks (double for floats,
// wrapping int64 for integers).
Status einsum(ExecContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(std::string eq, ctx.attrs->get_string("equation", ""));
  const size_t n = ctx.inputs.size();
  if (n == 0 || ctx.outputs.size() != 1) return error(StatusCode::kInvalidModel, "Einsum takes inputs and one output");
  std::vector<int64_t> ranks;
  std::vector<std::vector<int64_t>> dims;
  for (const Tensor* t : ctx.inputs) {
    if (!t) return error(StatusCode::kInvalidModel, "Einsum inputs are all required");
    ranks.push_back(t->rank());
    dims.push_back(t->dims());
  }
  auto spec = parse_einsum(eq, ranks);
  if (!spec) return Status(spec.status()).with_attribute("equation");
  GRAFT_ASSIGN_OR_RETURN(EinsumLayout lay, einsum_layout(*spec, dims));
  Tensor& y = *ctx.outputs[0];
  if (y.dims() != std::vector<int64_t>(lay.ext.begin(), lay.ext.begin() + static_cast<int64_t>(lay.n_out)))
    return error(StatusCode::kInternal, "Einsum output has dims that do not match the equation");
  const size_t L = lay.order.size(), out_rank = lay.n_out;
  const auto& ext = lay.ext;
  const auto& stride = lay.stride;
  const int64_t outer = y.numel(), inner = lay.inner;
  int64_t terms = 0;
  if (!checked_mul(outer, inner, &terms) || terms > kMaxEinsumTerms)
    return error(StatusCode::kUnsupported, "Einsum '", eq, "' needs more than ", kMaxEinsumTerms,
                 " products, more than graft's reference computes");
  const bool integer = dtype_is_integer(y.dtype());
  std::vector<int64_t> idx(L, 0);
  for (int64_t o = 0; o < outer; ++o) {
    // idx[0..out_rank) is output element o (row-major); the summed labels run from 0 each time.
    int64_t rem = o;
    for (size_t p = out_rank; p-- > 0;) {
      const int64_t e = ext[p];
      idx[p] = rem % e;
      rem /= e;
    }
    for (size_t p = out_rank; p < L; ++p) idx[p] = 0;
    double acc = 0;
    uint64_t iacc = 0;
    for (int64_t t = 0; t < inner; ++t) {
      double prod = 1;
      uint64_t iprod = 1;
      for (size_t k = 0; k < n; ++k) {
        int64_t off = 0;
        for (size_t p = 0; p < L; ++p) off += idx[p] * stride[k][p];
        if (integer) iprod *= static_cast<uint64_t>(load_integer(*ctx.inputs[k], off));
        else prod *= ctx.inputs[k]->get(off);
      }
      acc += prod;
      iacc += iprod;
      for (size_t p = L; p-- > out_rank;) {  // next combination of the summed labels
        if (++idx[p] < ext[p]) break;
        idx[p] = 0;
      }
    }
    if (integer) store_integer(y, o, static_cast<int64_t>(iacc));
    else y.set(o, acc);
  }
  return Status::ok();
}

}  // namespace cpu

// ---- schema: inference and the table rows ---------------------------------------------------

namespace {

using namespace infer;

Status require_rank_at_least(const InferContext& ctx, size_t i, int64_t r, const char* what) {
  const TensorDesc& d = ctx.input(i);
  if (d.shape && d.rank() < r) return ctx.fail("input ", what, " must have rank >= ", r, ", got ", d.to_string());
  return Status::ok();
}

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

Status infer_eye_like(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kAllTypes));
  auto k = ctx.attrs().get_int("k", 0);
  if (!k) return Status(k.status()).with_attribute("k");
  DataType out = ctx.input(0).dtype;
  if (ctx.attrs().has("dtype")) {
    auto dt = ctx.attrs().get_int("dtype", 0);
    if (!dt) return Status(dt.status()).with_attribute("dtype");
    if (dt.value() < INT32_MIN || dt.value() > INT32_MAX || !dtype_from_onnx_numeric(static_cast<int32_t>(dt.value()), &out))
      return Status(error(StatusCode::kUnsupported, "ONNX element type ", dt.value(), " is not supported (graft supports ",
                          dtype_list(kAllTypes), ")"))
          .with_attribute("dtype");
  }
  const TensorDesc& x = ctx.input(0);
  if (x.shape && x.rank() != 2) return ctx.fail("input must be 2-D, got ", x.to_string());
  ctx.set_output(0, desc_of(out, x.shape));
  return Status::ok();
}

Status infer_bit_shift(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kUnsignedIntTypes));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, kUnsignedIntTypes));
  GRAFT_RETURN_IF_ERROR(bit_shift_left(ctx.attrs()).status());
  std::optional<Shape> out;
  if (ctx.input(0).shape && ctx.input(1).shape) {
    GRAFT_ASSIGN_OR_RETURN(Shape s, broadcast_shapes(*ctx.input(0).shape, *ctx.input(1).shape));
    out = std::move(s);
  }
  ctx.set_output(0, desc_of(ctx.input(0).dtype, out));
  return Status::ok();
}

Status infer_reverse_sequence(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kAllTypes));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, {kI64}));
  GRAFT_ASSIGN_OR_RETURN(auto axes, reverse_sequence_axes(ctx.attrs()));
  GRAFT_RETURN_IF_ERROR(require_rank_at_least(ctx, 0, 2, "input"));
  const TensorDesc& x = ctx.input(0);
  const TensorDesc& lens = ctx.input(1);
  if (lens.shape && lens.rank() != 1) return ctx.fail("sequence_lens must be 1-D [batch], got ", lens.to_string());
  if (x.shape && lens.shape) {
    const Dim& b = (*x.shape)[axes.first];
    const Dim& l = (*lens.shape)[0];
    if (b.is_const() && l.is_const() && b.value() != l.value())
      return ctx.fail("sequence_lens ", lens.to_string(), " must have one entry per batch (axis ", axes.first, " of ",
                      x.to_string(), ")");
  }
  ctx.set_output(0, x);
  return Status::ok();
}

Status infer_window(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, {kI32, kI64}));
  auto periodic = ctx.attrs().get_int("periodic", 1);
  if (!periodic) return Status(periodic.status()).with_attribute("periodic");
  if (periodic.value() != 0 && periodic.value() != 1)
    return Status(ctx.fail("must be 0 or 1, got ", periodic.value())).with_attribute("periodic");
  auto odt = ctx.attrs().get_int("output_datatype", 1);
  if (!odt) return Status(odt.status()).with_attribute("output_datatype");
  DataType out;
  if (odt.value() < INT32_MIN || odt.value() > INT32_MAX || !dtype_from_onnx_numeric(static_cast<int32_t>(odt.value()), &out) ||
      out == kBool)
    return Status(error(StatusCode::kUnsupported, "ONNX element type ", odt.value(), " is not supported (graft supports ",
                        dtype_list(kNumericTypes), ")"))
        .with_attribute("output_datatype");
  const TensorDesc& size = ctx.input(0);
  if (size.shape && !(size.rank() == 0 || (size.rank() == 1 && (*size.shape)[0] == 1)))
    return ctx.fail("input size must be a scalar, got ", size.to_string());
  Dim n = ctx.unknown_dim();
  if (auto v = ctx.input_dims_value(0)) {
    if (v->size() != 1) return ctx.fail("input size must hold one value, got ", static_cast<int64_t>(v->size()));
    n = (*v)[0];
    if (n.is_const() && (n.value() < 0 || n.value() > kMaxWindowLength))
      return ctx.fail("input size ", n.value(), " is outside [0, ", kMaxWindowLength, "]");
  }
  ctx.set_output(0, desc_of(out, Shape{n}));
  return Status::ok();
}

Status infer_det(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kFloatTypes));
  const TensorDesc& x = ctx.input(0);
  if (!x.shape) {
    ctx.set_output(0, desc_of(x.dtype, std::nullopt));
    return Status::ok();
  }
  if (x.rank() < 2) return ctx.fail("input must be [..., M, M], got ", x.to_string());
  const Dim& r = (*x.shape)[x.rank() - 2];
  const Dim& c = (*x.shape)[x.rank() - 1];
  if (r.is_const() && c.is_const() && r.value() != c.value())
    return ctx.fail("input must hold square matrices [..., M, M], got ", x.to_string());
  ctx.set_output(0, desc_of(x.dtype, Shape(x.shape->begin(), x.shape->end() - 2)));
  return Status::ok();
}

// Output dims: each output label's extent, taken from an input axis with that label (a broadcast
// ellipsis position prefers an extent other than 1). Extents are checked against each other when
// they are numbers; the kernels check the concrete ones again.
Status infer_einsum(InferContext& ctx) {
  auto eq = ctx.attrs().get_string("equation", "");
  if (!eq) return Status(eq.status()).with_attribute("equation");
  if (eq->empty()) return Status(ctx.fail("is required")).with_attribute("equation");
  if (ctx.num_inputs() == 0) return ctx.fail("needs at least one input");
  std::vector<int64_t> ranks;
  bool ranks_known = true;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    GRAFT_RETURN_IF_ERROR(require_input(ctx, i));
    GRAFT_RETURN_IF_ERROR(check_dtype(ctx, i, kNumericTypes));
    if (ctx.input(i).dtype != ctx.input(0).dtype)
      return ctx.fail("input ", static_cast<int64_t>(i), " has dtype ", dtype_name(ctx.input(i).dtype), ", input 0 ",
                      dtype_name(ctx.input(0).dtype), ": Einsum takes one dtype");
    ranks_known &= ctx.input(i).shape.has_value();
    ranks.push_back(ctx.input(i).rank());
  }
  const DataType dt = ctx.input(0).dtype;
  if (!ranks_known) {
    ctx.set_output(0, desc_of(dt, std::nullopt));
    return Status::ok();
  }
  auto spec = parse_einsum(*eq, ranks);
  if (!spec) return Status(ctx.fail(spec.status().message())).with_attribute("equation");
  std::vector<std::optional<Dim>> ext(static_cast<size_t>(spec->num_labels));
  for (size_t k = 0; k < ranks.size(); ++k)
    for (size_t a = 0; a < spec->in_labels[k].size(); ++a) {
      const Dim& d = (*ctx.input(k).shape)[a];
      auto& e = ext[static_cast<size_t>(spec->in_labels[k][a])];
      const bool ell = spec->ellipsis_label[static_cast<size_t>(spec->in_labels[k][a])];
      if (!e || (ell && *e == 1)) {
        e = d;
      } else if (e->is_const() && d.is_const() && e->value() != d.value() && !(ell && d.value() == 1)) {
        return Status(ctx.fail("input ", static_cast<int64_t>(k), " axis ", static_cast<int64_t>(a), " has extent ",
                               d.value(), " where another axis with the same label has ", e->value()))
            .with_attribute("equation");
      }
    }
  Shape out;
  for (int label : spec->out_labels) out.push_back(ext[static_cast<size_t>(label)].value_or(Dim(1)));
  ctx.set_output(0, desc_of(dt, out));
  return Status::ok();
}

}  // namespace

void append_misc_ops(std::vector<OpEntry>& out) {
  const std::vector<OpEntry> ops = {
      {"InstanceNormalization", 6, infer_instance_norm, cpu::instance_normalization},
      {"LRN", 1, infer_lrn, cpu::lrn},
      {"MeanVarianceNormalization", 9, infer_mvn, cpu::mean_variance_normalization},
      keeps_float32({"EyeLike", 9, infer_eye_like, cpu::eye_like}),
      {"BitShift", 11, infer_bit_shift, cpu::bit_shift},
      {"ReverseSequence", 10, infer_reverse_sequence, cpu::reverse_sequence},
      {"HannWindow", 17, infer_window, cpu::hann_window},
      {"HammingWindow", 17, infer_window, cpu::hamming_window},
      {"BlackmanWindow", 17, infer_window, cpu::blackman_window},
      {"Det", 11, infer_det, cpu::det},
      {"Einsum", 12, infer_einsum, cpu::einsum},
  };
  out.insert(out.end(), ops.begin(), ops.end());
}

}  // namespace graft
