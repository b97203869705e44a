#include "backends/cpu/misc.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/element_traits.h"
#include "backends/cpu/elementwise.h"
#include "backends/cpu/kernel_util.h"
#include "backends/cpu/nn.h"
#include "core/checked_math.h"
#include "ops/einsum.h"
#include "backends/cpu/unary_kernel.h"

namespace graft::cpu {
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

}  // namespace graft::cpu
