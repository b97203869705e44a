// CPU reference kernels for MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv. See integer.h.
#include "backends/cpu/integer.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "backends/cpu/kernel_util.h"
#include "backends/cpu/unary_kernel.h"

namespace graft::cpu {
namespace {

// Two's complement wrap of an exact sum to int32, as an int32 accumulator would hold it.
int32_t wrap_int32(int64_t v) {
  return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v)));
}

Status require_8bit(const Tensor* t, const char* what) {
  if (!t) return error(StatusCode::kInvalidModel, "required input ", what, " is missing");
  if (t->device() != DeviceType::kCPU)
    return error(StatusCode::kInvalidArgument, "input ", what, " is not a host tensor");
  if (t->dtype() != DataType::kInt8 && t->dtype() != DataType::kUInt8)
    return error(StatusCode::kUnsupported, "input ", what, " has dtype ", dtype_name(t->dtype()),
                 "; expected int8 or uint8");
  return Status::ok();
}

// A zero point has the dtype of the tensor it belongs to.
Status require_zero_point(const Tensor* zp, const char* zp_name, const Tensor& of, const char* of_name) {
  if (!zp) return Status::ok();
  GRAFT_RETURN_IF_ERROR(require_8bit(zp, zp_name));
  if (zp->dtype() != of.dtype())
    return error(StatusCode::kInvalidModel, "input ", zp_name, " has dtype ", dtype_name(zp->dtype()),
                 " but ", of_name, " has ", dtype_name(of.dtype()),
                 "; a zero point has the dtype of its tensor");
  return Status::ok();
}

// Scales are float32 (float16/bfloat16 from opset 21); the three of one node agree.
Status require_scales(const std::vector<std::pair<const Tensor*, const char*>>& scales) {
  for (const auto& [t, name] : scales) {
    if (!t) return error(StatusCode::kInvalidModel, "required input ", name, " is missing");
    if (t->device() != DeviceType::kCPU)
      return error(StatusCode::kInvalidArgument, "input ", name, " is not a host tensor");
    if (t->dtype() != DataType::kFloat32 && t->dtype() != DataType::kFloat16 &&
        t->dtype() != DataType::kBFloat16)
      return error(StatusCode::kUnsupported, "input ", name, " has dtype ", dtype_name(t->dtype()),
                   "; expected float32, float16 or bfloat16");
    if (t->dtype() != scales[0].first->dtype())
      return error(StatusCode::kInvalidModel, "input ", name, " has dtype ", dtype_name(t->dtype()), " but ",
                   scales[0].second, " has ", dtype_name(scales[0].first->dtype()),
                   "; the scales share one dtype");
  }
  return Status::ok();
}

struct QRange {
  float lo, hi;
};
QRange range_of(DataType t) { return t == DataType::kUInt8 ? QRange{0.0f, 255.0f} : QRange{-128.0f, 127.0f}; }

// round_half_even(sum * multiplier) + zp saturated to the output's range, in float32 as ONNX Runtime
// requantizes (and as QuantizeLinear rounds: the current rounding mode, nearest-even). A NaN (a zero
// y_scale over a zero sum) gives the zero point, as QuantizeLinear gives it for NaN.
float requantize(int32_t sum, float multiplier, float zp, QRange r) {
  const float v = static_cast<float>(sum) * multiplier;
  const float q = std::isnan(v) ? zp : std::nearbyint(v) + zp;
  return std::min(std::max(q, r.lo), r.hi);
}

// The values of an 8-bit tensor less the zero point that applies to each (zp_index maps a flat index
// of `t` to one of zp; nullptr: per tensor).
std::vector<int32_t> shifted(const Tensor& t, const Tensor* zp,
                             const std::vector<int64_t>* zp_index = nullptr) {
  std::vector<int32_t> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double z = !zp ? 0.0 : zp->get(zp_index ? (*zp_index)[static_cast<size_t>(i)] : 0);
    v[static_cast<size_t>(i)] = static_cast<int32_t>(t.get(i) - z);
  }
  return v;
}

// ---- matmul core ----

// The exact sums of a quantized matmul: y[b, m, n] = sum_k (A[.., m, k] - azp) * (B[.., k, n] - bzp),
// wrapped to int32; plan, parameter indexes (for the scales too) checked on the way.
struct IntMatMul {
  IntMatMulPlan plan;
  std::vector<int32_t> sums;  // one per output element
};

Result<IntMatMul> int_matmul(const Tensor& A, const Tensor* azp, const char* azp_name, const Tensor& B,
                             const Tensor* bzp, const char* bzp_name) {
  IntMatMul r;
  GRAFT_ASSIGN_OR_RETURN(r.plan, int_matmul_plan(A.dims(), B.dims()));
  const IntMatMulPlan& p = r.plan;
  // Expand each zero point to one entry per element of its operand.
  auto expand = [&](const Tensor* zp, bool a_side, const char* name) -> Result<std::vector<int64_t>> {
    if (!zp) return std::vector<int64_t>();
    GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> rows, matmul_param_index(p, a_side, zp->dims(), name));
    const int64_t inner = a_side ? p.K : p.N;  // elements per (batch, row) of A or (batch, k) of B
    const int64_t elems = numel_of(a_side ? p.a_dims : p.b_dims);
    std::vector<int64_t> per(static_cast<size_t>(elems));
    for (int64_t e = 0; e < elems; ++e) {
      // A element (batch, m, k) -> row entry (batch, m); B element (batch, k, n) -> column entry (batch, n).
      const int64_t key = a_side ? e / inner : (e / (p.K * p.N)) * p.N + e % p.N;
      per[static_cast<size_t>(e)] = rows[static_cast<size_t>(key)];
    }
    return per;
  };
  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> ai, expand(azp, true, azp_name));
  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> bi, expand(bzp, false, bzp_name));
  const std::vector<int32_t> a = shifted(A, azp, azp ? &ai : nullptr),
                             b = shifted(B, bzp, bzp ? &bi : nullptr);
  const int64_t M = p.M, K = p.K, N = p.N;
  r.sums.resize(p.a_batch.size() * static_cast<size_t>(M * N));
  for (size_t o = 0; o < p.a_batch.size(); ++o) {
    const int32_t* ap = a.data() + static_cast<size_t>(p.a_batch[o] * M * K);
    const int32_t* bp = b.data() + static_cast<size_t>(p.b_batch[o] * K * N);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        int64_t acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += int64_t{ap[m * K + k]} * bp[k * N + n];
        r.sums[o * static_cast<size_t>(M * N) + static_cast<size_t>(m * N + n)] = wrap_int32(acc);
      }
  }
  return r;
}

// ---- conv core ----

// The exact sums of a quantized conv, wrapped to int32: y[n, m, p] = sum over c in m's group and the
// window taps inside x of (x[n, c, tap] - x_zp) * (w[m, c, k] - w_zp[m]). Taps in the padding add
// nothing: the padding holds the zero point, i.e. zero once shifted.
struct IntConv {
  IntConvPlan plan;
  std::vector<int32_t> sums;
};

Result<IntConv> int_conv(const AttributeMap& attrs, const Tensor& X, const Tensor* xzp, const char* xzp_name,
                         const Tensor& W, const Tensor* wzp, const char* wzp_name) {
  IntConv r;
  GRAFT_ASSIGN_OR_RETURN(r.plan, int_conv_plan(attrs, X.dims(), W.dims()));
  const IntConvPlan& p = r.plan;
  if (xzp) GRAFT_RETURN_IF_ERROR(check_per_tensor(xzp->dims(), xzp_name));
  if (wzp) GRAFT_RETURN_IF_ERROR(check_per_channel(wzp->dims(), p.M, wzp_name));
  const std::vector<int64_t> in_sp(X.dims().begin() + 2, X.dims().end());
  const std::vector<int64_t> out_sp(p.out_dims.begin() + 2, p.out_dims.end());
  const int64_t in_area = numel_of(in_sp), out_area = numel_of(out_sp), k_area = numel_of(p.window.kernel);
  std::vector<int64_t> w_zp_index;
  if (wzp && wzp->numel() > 1) {
    w_zp_index.resize(static_cast<size_t>(W.numel()));
    for (int64_t i = 0; i < W.numel(); ++i) w_zp_index[static_cast<size_t>(i)] = i / (p.Cg * k_area);
  }
  const std::vector<int32_t> x = shifted(X, xzp),
                             w = shifted(W, wzp, w_zp_index.empty() ? nullptr : &w_zp_index);
  std::vector<int64_t> pb, pe;
  resolve_pads(p.window, in_sp, &pb, &pe);
  const std::vector<int64_t> in_st = contiguous_strides(in_sp);
  const size_t nsp = in_sp.size();
  const int64_t Mg = p.M / p.group;
  r.sums.assign(static_cast<size_t>(numel_of(p.out_dims)), 0);
  std::vector<int64_t> op, kp;
  std::vector<std::pair<int64_t, int64_t>> taps;  // (kernel offset, input offset) inside x
  for (int64_t o = 0; o < out_area; ++o) {
    unravel(o, out_sp, op);
    taps.clear();
    for (int64_t kk = 0; kk < k_area; ++kk) {
      unravel(kk, p.window.kernel, kp);
      int64_t off = 0;
      bool inside = true;
      for (size_t a = 0; a < nsp && inside; ++a) {
        const int64_t ip = op[a] * p.window.strides[a] - pb[a] + kp[a] * p.window.dilations[a];
        inside = ip >= 0 && ip < in_sp[a];
        off += ip * in_st[a];
      }
      if (inside) taps.emplace_back(kk, off);
    }
    for (int64_t n = 0; n < p.N; ++n)
      for (int64_t m = 0; m < p.M; ++m) {
        const int64_t g = m / Mg;
        int64_t acc = 0;
        for (int64_t c = 0; c < p.Cg; ++c) {
          const int32_t* xp = x.data() + static_cast<size_t>((n * p.C + g * p.Cg + c) * in_area);
          const int32_t* wp = w.data() + static_cast<size_t>((m * p.Cg + c) * k_area);
          for (const auto& [ko, io] : taps) acc += int64_t{xp[io]} * wp[ko];
        }
        r.sums[static_cast<size_t>((n * p.M + m) * out_area + o)] = wrap_int32(acc);
      }
  }
  return r;
}

Status check_output(const ExecContext& ctx, const Tensor& y, const std::vector<int64_t>& dims, DataType dt) {
  if (y.dims() != dims || y.dtype() != dt)
    return error(StatusCode::kInternal, op_name(ctx), ": output ", dtype_name(y.dtype()),
                 ints_to_string(y.dims()), " inconsistent with the inputs (", dtype_name(dt),
                 ints_to_string(dims), ")");
  return Status::ok();
}

}  // namespace

// ---- kernels -------------------------------------------------------------------------------------

Status matmul_integer(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 2));
  const Tensor* A = ctx.inputs[0];
  const Tensor* B = ctx.inputs[1];
  const Tensor* azp = input_or_null(ctx, 2);
  const Tensor* bzp = input_or_null(ctx, 3);
  GRAFT_RETURN_IF_ERROR(require_8bit(A, "A"));
  GRAFT_RETURN_IF_ERROR(require_8bit(B, "B"));
  GRAFT_RETURN_IF_ERROR(require_zero_point(azp, "a_zero_point", *A, "A"));
  GRAFT_RETURN_IF_ERROR(require_zero_point(bzp, "b_zero_point", *B, "B"));
  GRAFT_ASSIGN_OR_RETURN(IntMatMul r, int_matmul(*A, azp, "a_zero_point", *B, bzp, "b_zero_point"));
  Tensor& Y = *ctx.outputs[0];
  GRAFT_RETURN_IF_ERROR(check_output(ctx, Y, r.plan.out_dims, DataType::kInt32));
  int32_t* y = Y.data_as<int32_t>();
  std::copy(r.sums.begin(), r.sums.end(), y);
  return Status::ok();
}

Status conv_integer(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 2));
  const Tensor* X = ctx.inputs[0];
  const Tensor* W = ctx.inputs[1];
  const Tensor* xzp = input_or_null(ctx, 2);
  const Tensor* wzp = input_or_null(ctx, 3);
  GRAFT_RETURN_IF_ERROR(require_8bit(X, "x"));
  GRAFT_RETURN_IF_ERROR(require_8bit(W, "w"));
  GRAFT_RETURN_IF_ERROR(require_zero_point(xzp, "x_zero_point", *X, "x"));
  GRAFT_RETURN_IF_ERROR(require_zero_point(wzp, "w_zero_point", *W, "w"));
  GRAFT_ASSIGN_OR_RETURN(IntConv r,
                         int_conv(attrs_of(ctx), *X, xzp, "x_zero_point", *W, wzp, "w_zero_point"));
  Tensor& Y = *ctx.outputs[0];
  GRAFT_RETURN_IF_ERROR(check_output(ctx, Y, r.plan.out_dims, DataType::kInt32));
  std::copy(r.sums.begin(), r.sums.end(), Y.data_as<int32_t>());
  return Status::ok();
}

Status qlinear_matmul(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 8));
  const Tensor *A = ctx.inputs[0], *as = ctx.inputs[1], *azp = ctx.inputs[2];
  const Tensor *B = ctx.inputs[3], *bs = ctx.inputs[4], *bzp = ctx.inputs[5];
  const Tensor *ys = ctx.inputs[6], *yzp = ctx.inputs[7];
  GRAFT_RETURN_IF_ERROR(require_8bit(A, "a"));
  GRAFT_RETURN_IF_ERROR(require_8bit(B, "b"));
  GRAFT_RETURN_IF_ERROR(require_zero_point(azp, "a_zero_point", *A, "a"));
  GRAFT_RETURN_IF_ERROR(require_zero_point(bzp, "b_zero_point", *B, "b"));
  GRAFT_RETURN_IF_ERROR(require_8bit(yzp, "y_zero_point"));
  GRAFT_RETURN_IF_ERROR(require_scales({{as, "a_scale"}, {bs, "b_scale"}, {ys, "y_scale"}}));
  GRAFT_RETURN_IF_ERROR(check_per_tensor(ys->dims(), "y_scale"));
  GRAFT_RETURN_IF_ERROR(check_per_tensor(yzp->dims(), "y_zero_point"));
  GRAFT_ASSIGN_OR_RETURN(IntMatMul r, int_matmul(*A, azp, "a_zero_point", *B, bzp, "b_zero_point"));
  const IntMatMulPlan& p = r.plan;
  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> ai, matmul_param_index(p, true, as->dims(), "a_scale"));
  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> bi, matmul_param_index(p, false, bs->dims(), "b_scale"));
  Tensor& Y = *ctx.outputs[0];
  GRAFT_RETURN_IF_ERROR(check_output(ctx, Y, p.out_dims, yzp->dtype()));
  const float y_scale = static_cast<float>(ys->get(0)), zp = static_cast<float>(yzp->get(0));
  const QRange range = range_of(Y.dtype());
  const int64_t M = p.M, N = p.N;
  for (size_t o = 0; o < p.a_batch.size(); ++o)
    for (int64_t m = 0; m < M; ++m) {
      const float sa = static_cast<float>(as->get(ai[static_cast<size_t>(p.a_batch[o] * M + m)]));
      for (int64_t n = 0; n < N; ++n) {
        const float sb = static_cast<float>(bs->get(bi[static_cast<size_t>(p.b_batch[o] * N + n)]));
        const float sab = sa * sb;
        const size_t at = o * static_cast<size_t>(M * N) + static_cast<size_t>(m * N + n);
        Y.set(static_cast<int64_t>(at), requantize(r.sums[at], sab / y_scale, zp, range));
      }
    }
  return Status::ok();
}

Status qlinear_conv(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 8));
  const Tensor *X = ctx.inputs[0], *xs = ctx.inputs[1], *xzp = ctx.inputs[2];
  const Tensor *W = ctx.inputs[3], *ws = ctx.inputs[4], *wzp = ctx.inputs[5];
  const Tensor *ys = ctx.inputs[6], *yzp = ctx.inputs[7];
  const Tensor* bias = input_or_null(ctx, 8);
  GRAFT_RETURN_IF_ERROR(require_8bit(X, "x"));
  GRAFT_RETURN_IF_ERROR(require_8bit(W, "w"));
  GRAFT_RETURN_IF_ERROR(require_zero_point(xzp, "x_zero_point", *X, "x"));
  GRAFT_RETURN_IF_ERROR(require_zero_point(wzp, "w_zero_point", *W, "w"));
  GRAFT_RETURN_IF_ERROR(require_8bit(yzp, "y_zero_point"));
  GRAFT_RETURN_IF_ERROR(require_scales({{xs, "x_scale"}, {ws, "w_scale"}, {ys, "y_scale"}}));
  GRAFT_RETURN_IF_ERROR(check_per_tensor(xs->dims(), "x_scale"));
  GRAFT_RETURN_IF_ERROR(check_per_tensor(ys->dims(), "y_scale"));
  GRAFT_RETURN_IF_ERROR(check_per_tensor(yzp->dims(), "y_zero_point"));
  GRAFT_ASSIGN_OR_RETURN(IntConv r,
                         int_conv(attrs_of(ctx), *X, xzp, "x_zero_point", *W, wzp, "w_zero_point"));
  const IntConvPlan& p = r.plan;
  GRAFT_RETURN_IF_ERROR(check_per_channel(ws->dims(), p.M, "w_scale"));
  if (bias) GRAFT_RETURN_IF_ERROR(check_conv_bias(bias->dtype(), bias->dims(), p.M));
  Tensor& Y = *ctx.outputs[0];
  GRAFT_RETURN_IF_ERROR(check_output(ctx, Y, p.out_dims, yzp->dtype()));
  const float x_scale = static_cast<float>(xs->get(0)), y_scale = static_cast<float>(ys->get(0));
  const float zp = static_cast<float>(yzp->get(0));
  const QRange range = range_of(Y.dtype());
  const int64_t area = numel_of(p.out_dims) / std::max<int64_t>(1, p.N * p.M);
  for (int64_t n = 0; n < p.N; ++n)
    for (int64_t m = 0; m < p.M; ++m) {
      const float sw = static_cast<float>(ws->get(ws->numel() == 1 ? 0 : m));
      const float multiplier = x_scale * sw / y_scale;
      // The bias is int32 at scale x_scale * w_scale: it joins the int32 sum before requantizing.
      const int64_t b = bias ? static_cast<int64_t>(bias->get(m)) : 0;
      for (int64_t o = 0; o < area; ++o) {
        const int64_t at = (n * p.M + m) * area + o;
        Y.set(at, requantize(wrap_int32(r.sums[static_cast<size_t>(at)] + b), multiplier, zp, range));
      }
    }
  return Status::ok();
}

}  // namespace graft::cpu
