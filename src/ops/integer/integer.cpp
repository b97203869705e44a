// The integer and quantized linear-algebra family, defined whole here (opset 10): the layout
// readers (integer.h), the CPU reference kernels, and the schema rows with their inference. The CUDA
// ops are in integer.cu.
#include "ops/integer/integer.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "backends/cpu/kernel_util.h"
#include "backends/cpu/unary_kernel.h"
#include "core/index_math.h"
#include "graft/tensor.h"
#include "ops/attr_util.h"
#include "ops/infer_util.h"
#include "ops/operator.h"
#include "ops/quantize/quantize.h"

namespace graft {

// ---- attributes and shapes (integer.h) ------------------------------------------------------

// ---- layouts -----------------------------------------------------------------------------------

Result<IntMatMulPlan> int_matmul_plan(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  if (a.empty() || b.empty())
    return error(StatusCode::kInvalidModel, "operands must have rank >= 1, got A ", ints_to_string(a),
                 " and B ", ints_to_string(b));
  IntMatMulPlan p;
  p.a_dims = a;
  p.b_dims = b;
  if (a.size() == 1) p.a_dims.insert(p.a_dims.begin(), 1);
  if (b.size() == 1) p.b_dims.push_back(1);
  p.M = p.a_dims[p.a_dims.size() - 2];
  p.K = p.a_dims.back();
  p.N = p.b_dims.back();
  if (p.b_dims[p.b_dims.size() - 2] != p.K)
    return error(StatusCode::kInvalidModel, "inner dimensions differ: A ", ints_to_string(a),
                 " has K = ", p.K, " but B ", ints_to_string(b), " has K = ", p.b_dims[p.b_dims.size() - 2]);
  const std::vector<int64_t> ba(p.a_dims.begin(), p.a_dims.end() - 2),
      bb(p.b_dims.begin(), p.b_dims.end() - 2);
  std::vector<int64_t> batch(std::max(ba.size(), bb.size()), 1);
  for (size_t i = 0; i < batch.size(); ++i) {
    const int64_t da = i + ba.size() >= batch.size() ? ba[i + ba.size() - batch.size()] : 1;
    const int64_t db = i + bb.size() >= batch.size() ? bb[i + bb.size() - batch.size()] : 1;
    if (da != db && da != 1 && db != 1)
      return error(StatusCode::kInvalidModel, "batch dimensions of A ", ints_to_string(a), " and B ",
                   ints_to_string(b), " cannot be broadcast");
    batch[i] = da == 1 ? db : da;
  }
  p.out_dims = batch;
  p.batch = batch;
  if (a.size() > 1) p.out_dims.push_back(p.M);
  if (b.size() > 1) p.out_dims.push_back(p.N);
  p.a_batch = broadcast_batch_offsets(batch, ba);
  p.b_batch = broadcast_batch_offsets(batch, bb);
  return p;
}

Result<MatMulParamStrides> matmul_param_strides(const IntMatMulPlan& plan, bool a_side,
                                                const std::vector<int64_t>& param_dims, const char* what) {
  const std::vector<int64_t>& od = a_side ? plan.a_dims : plan.b_dims;
  const size_t r = od.size();
  const size_t vary = a_side ? r - 2 : r - 1, reduced = a_side ? r - 1 : r - 2;
  MatMulParamStrides st;
  st.batch.assign(r - 2, 0);
  if (numel_of(param_dims) == 1) return st;  // per tensor, whatever its rank
  // The parameter's shape aligned to the operand's: a 1-D one runs along the rows (A) or columns (B);
  // a longer one broadcasts against the operand, right-aligned, with extent 1 on the K axis.
  std::vector<int64_t> pd(r, 1);
  bool fits = true;
  if (param_dims.size() == 1) {
    pd[vary] = param_dims[0];
    fits = param_dims[0] == od[vary];
  } else if (param_dims.size() >= 2 && param_dims.size() <= r) {
    std::copy(param_dims.begin(), param_dims.end(),
              pd.begin() + static_cast<std::ptrdiff_t>(r - param_dims.size()));
    for (size_t i = 0; i < r; ++i) fits = fits && (pd[i] == 1 || pd[i] == od[i]);
    fits = fits && pd[reduced] == 1;
  } else {
    fits = false;
  }
  if (!fits) {
    std::vector<int64_t> want = od;
    want[reduced] = 1;
    return error(StatusCode::kInvalidModel, "input ", what, " ", ints_to_string(param_dims), " does not fit ",
                 a_side ? "A " : "B ", ints_to_string(a_side ? plan.a_dims : plan.b_dims),
                 ": expected one element (per tensor), [", od[vary], "] (per ", a_side ? "row" : "column",
                 ") or a shape that broadcasts to ", ints_to_string(want));
  }
  const std::vector<int64_t> ps = contiguous_strides(pd);
  for (size_t a = 0; a + 2 < r; ++a) st.batch[a] = pd[a] != 1 ? ps[a] : 0;
  st.vary = pd[vary] != 1 ? ps[vary] : 0;
  return st;
}

Result<std::vector<int64_t>> matmul_param_index(const IntMatMulPlan& plan, bool a_side,
                                                const std::vector<int64_t>& param_dims, const char* what) {
  GRAFT_ASSIGN_OR_RETURN(MatMulParamStrides st, matmul_param_strides(plan, a_side, param_dims, what));
  const std::vector<int64_t>& od = a_side ? plan.a_dims : plan.b_dims;
  const std::vector<int64_t> batch(od.begin(), od.end() - 2);
  const int64_t nb = numel_of(batch), extent = od[a_side ? od.size() - 2 : od.size() - 1];
  std::vector<int64_t> result(static_cast<size_t>(nb * extent), 0);
  std::vector<int64_t> idx;
  for (int64_t b = 0; b < nb; ++b) {
    unravel(b, batch, idx);
    int64_t base = 0;
    for (size_t a = 0; a < batch.size(); ++a) base += idx[a] * st.batch[a];
    for (int64_t v = 0; v < extent; ++v) result[static_cast<size_t>(b * extent + v)] = base + v * st.vary;
  }
  return result;
}

Result<IntConvPlan> int_conv_plan(const AttributeMap& attrs, const std::vector<int64_t>& x,
                                  const std::vector<int64_t>& w) {
  if (x.size() < 3)
    return error(StatusCode::kInvalidModel, "input x must have rank >= 3 (N, C, spatial...), got ",
                 ints_to_string(x));
  if (w.size() != x.size())
    return error(StatusCode::kInvalidModel, "weight w ", ints_to_string(w), " must have the rank of x ",
                 ints_to_string(x));
  IntConvPlan p;
  const size_t n = x.size() - 2;
  const std::vector<int64_t> wk(w.begin() + 2, w.end());
  GRAFT_ASSIGN_OR_RETURN(p.window, parse_window_attrs(attrs, n, &wk, false));
  auto group = attrs.get_int("group", 1);
  if (!group) return Status(group.status()).with_attribute("group");
  p.group = group.value();
  if (p.group < 1) return attr_error("group", "must be >= 1, got ", p.group);
  p.N = x[0];
  p.C = x[1];
  p.M = w[0];
  p.Cg = w[1];
  if (p.Cg * p.group != p.C)
    return error(StatusCode::kInvalidModel, "channel mismatch: x ", ints_to_string(x), " has ", p.C,
                 " channels but w ", ints_to_string(w), " with group ", p.group, " expects ", p.Cg * p.group);
  if (p.M % p.group != 0)
    return attr_error("group", "w ", ints_to_string(w), " has ", p.M,
                      " output channels, not divisible by group ", p.group);
  p.out_dims = {p.N, p.M};
  for (size_t i = 0; i < n; ++i) {
    const Dim d = window_output_dim(p.window, i, Dim(x[i + 2]));
    if (d.value() < 1)
      return error(StatusCode::kInvalidModel, "input x ", ints_to_string(x),
                   " is too small for the window on spatial axis ", static_cast<int64_t>(i),
                   " (output extent ", d.value(), ")");
    p.out_dims.push_back(d.value());
  }
  return p;
}

Status check_per_tensor(const std::vector<int64_t>& dims, const char* what) {
  if (numel_of(dims) != 1)
    return error(StatusCode::kInvalidModel, "input ", what, " must be one element (per tensor), got ",
                 ints_to_string(dims));
  return Status::ok();
}

Status check_per_channel(const std::vector<int64_t>& dims, int64_t M, const char* what) {
  if (numel_of(dims) == 1 || (dims.size() == 1 && dims[0] == M)) return Status::ok();
  return error(StatusCode::kInvalidModel, "input ", what, " ", ints_to_string(dims),
               " must be one element (per tensor) or 1-D with one entry per output channel (", M, ")");
}

Status check_conv_bias(DataType dtype, const std::vector<int64_t>& dims, int64_t M) {
  if (dtype != DataType::kInt32)
    return error(StatusCode::kUnsupported, "input B has dtype ", dtype_name(dtype), "; expected int32");
  if (dims.size() != 1 || numel_of(dims) != M)
    return error(StatusCode::kInvalidModel, "input B ", ints_to_string(dims),
                 " must be 1-D with one entry per output channel (", M, ")");
  return Status::ok();
}

// ---- CPU reference --------------------------------------------------------------------------
// MatMulInteger and ConvInteger (int32 output), QLinearMatMul and QLinearConv (requantized
// int8/uint8 output).
//
// Integer sums are exact: every (x - zero_point) * (w - zero_point) product is accumulated in
// int64 and the sum is then wrapped to int32, which is what an int32 accumulator gives (the spec
// lets accumulation overflow only in 32 bits). The QLinear ops then requantize as ONNX Runtime's
// kernels do, so ties land where theirs do: multiplier = float32(a_scale * b_scale / y_scale) (per
// row/column/channel where the scales are), y = saturate(round_half_even(float32(sum) * multiplier)
// + y_zero_point), the same float32 rounding graft's QuantizeLinear does (quantize_linear.cpp).
//
// The layout readers (integer.h) are shared by the schemas and the kernels of both
// backends, so inference and execution refuse a bad zero point or scale with the same words.

namespace cpu {

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

using cpu::QRange;
// The output's 8-bit range (its dtype was checked against uint8/int8 by the schema).
QRange range_of(DataType t) { return t == DataType::kUInt8 ? QRange{0.0f, 255.0f} : QRange{-128.0f, 127.0f}; }

// round_half_even(sum * multiplier) + zp saturated to the output's range, in float32 as ONNX Runtime
// requantizes: QuantizeLinear's own step (cpu::quantize_one), so a NaN (a zero y_scale over a zero
// sum) gives the zero point as QuantizeLinear gives it for NaN.
float requantize(int32_t sum, float multiplier, float zp, QRange r) {
  return cpu::quantize_one(static_cast<float>(sum) * multiplier, zp, r);
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

}  // namespace cpu

// ---- schema: inference and the table rows ---------------------------------------------------
// The schemas: MatMulInteger and ConvInteger
// (int8/uint8 operands with optional zero points, int32 output), QLinearMatMul and QLinearConv
// (operands, scales and zero points in, an int8/uint8 output of the output zero point's dtype).
// Zero points and scales of A and B may be per tensor, per row of A / per column of B; those of a
// conv's weight per tensor or per output channel; the rest per tensor. Inference runs the layout
// checks the kernels run, so a bad zero point or scale is refused at build time where the shapes
// are known, in the kernel's words.

namespace {

using namespace infer;

const std::vector<DataType> k8Bit{kU8, kI8};
const std::vector<DataType> kScaleTypes{kF32, kF16, kBF16};

// Input i (the spec calls it `role`) is present and of one of `allowed`; errors name the role and
// the value.
Status check_input(const InferContext& ctx, size_t i, const char* role,
                   const std::vector<DataType>& allowed) {
  if (!ctx.has_input(i))
    return ctx.fail("required input ", static_cast<int64_t>(i), " (", role, ") is missing");
  const DataType t = ctx.input(i).dtype;
  if (std::find(allowed.begin(), allowed.end(), t) == allowed.end())
    return error(StatusCode::kUnsupported, "input ", role, " ('", ctx.node().inputs[i]->name, "') has dtype ",
                 dtype_name(t), "; ", ctx.node().op_type, " supports ", dtype_list(allowed));
  return Status::ok();
}

// Input i's dims when its shape is known and static.
std::optional<std::vector<int64_t>> static_dims(const InferContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return std::nullopt;
  const TensorDesc& d = ctx.input(i);
  if (!d.shape || !shape_is_static(*d.shape)) return std::nullopt;
  return shape_values(*d.shape);
}

// Optional zero point `zp` (when present) has the dtype of input `of`.
Status check_zero_point_dtype(const InferContext& ctx, size_t zp, const char* zp_name, size_t of,
                              const char* of_name) {
  if (!ctx.has_input(zp)) return Status::ok();
  GRAFT_RETURN_IF_ERROR(check_input(ctx, zp, zp_name, k8Bit));
  if (ctx.input(zp).dtype != ctx.input(of).dtype)
    return ctx.fail("input ", zp_name, " ('", ctx.node().inputs[zp]->name, "') has dtype ",
                    dtype_name(ctx.input(zp).dtype), " but ", of_name, " has ",
                    dtype_name(ctx.input(of).dtype), "; a zero point has the dtype of its tensor");
  return Status::ok();
}

// The three scales are float32 (float16/bfloat16 from opset 21) and share one dtype.
Status check_scale_dtypes(const InferContext& ctx,
                          const std::vector<std::pair<size_t, const char*>>& scales) {
  for (const auto& [i, name] : scales) {
    GRAFT_RETURN_IF_ERROR(check_input(ctx, i, name, kScaleTypes));
    const auto& [first, first_name] = scales[0];
    if (ctx.input(i).dtype != ctx.input(first).dtype)
      return ctx.fail("input ", name, " has dtype ", dtype_name(ctx.input(i).dtype), " but ", first_name,
                      " has ", dtype_name(ctx.input(first).dtype), "; the scales share one dtype");
  }
  return Status::ok();
}

// A per-tensor parameter (one element) where its shape is static.
Status check_per_tensor_input(const InferContext& ctx, size_t i, const char* name) {
  if (auto d = static_dims(ctx, i)) GRAFT_RETURN_IF_ERROR(check_per_tensor(*d, name));
  return Status::ok();
}

// numpy matmul's output shape over symbolic shapes (A input `ai`, B input `bi`); nullopt when a
// rank is unknown. With both shapes static the kernel's own plan decides, and each listed
// parameter (input index, name, A side?) is checked against it.
Result<std::optional<Shape>> matmul_shape(const InferContext& ctx, size_t ai, size_t bi,
                                          const std::vector<std::tuple<size_t, const char*, bool>>& params) {
  const TensorDesc& a = ctx.input(ai);
  const TensorDesc& b = ctx.input(bi);
  if (!a.shape || !b.shape) return std::optional<Shape>();
  auto ad = static_dims(ctx, ai), bd = static_dims(ctx, bi);
  if (ad && bd) {
    GRAFT_ASSIGN_OR_RETURN(IntMatMulPlan plan, int_matmul_plan(*ad, *bd));
    for (const auto& [i, name, a_side] : params)
      if (auto pd = static_dims(ctx, i))
        GRAFT_RETURN_IF_ERROR(matmul_param_index(plan, a_side, *pd, name).status());
    return std::optional<Shape>(shape_from_values(plan.out_dims));
  }
  if (a.shape->empty() || b.shape->empty())
    return ctx.fail("operands must have rank >= 1, got A ", a.to_string(), " and B ", b.to_string());
  Shape a2 = *a.shape, b2 = *b.shape;
  if (a2.size() == 1) a2.insert(a2.begin(), Dim(1));
  if (b2.size() == 1) b2.push_back(Dim(1));
  const Dim& ka = a2.back();
  const Dim& kb = b2[b2.size() - 2];
  if (ka.is_const() && kb.is_const() && ka.value() != kb.value())
    return ctx.fail("inner dimensions differ: A ", a.to_string(), " has K = ", ka.value(), " but B ",
                    b.to_string(), " has K = ", kb.value());
  auto batch = broadcast_shapes(Shape(a2.begin(), a2.end() - 2), Shape(b2.begin(), b2.end() - 2));
  if (!batch.is_ok())
    return ctx.fail("batch dimensions of A ", a.to_string(), " and B ", b.to_string(),
                    " cannot be broadcast: ", batch.status().message());
  Shape out = batch.value();
  if (a.shape->size() > 1) out.push_back(a2[a2.size() - 2]);
  if (b.shape->size() > 1) out.push_back(b2.back());
  return std::optional<Shape>(out);
}

// Conv's output shape over symbolic shapes (x input `xi`, w input `wi`); nullopt when a rank is
// unknown. With both shapes static the kernel's own plan decides, and the weight's per-channel
// parameters (`per_channel`) are checked against its output channels.
Result<std::optional<Shape>> conv_shape(const InferContext& ctx, size_t xi, size_t wi,
                                        const std::vector<std::pair<size_t, const char*>>& per_channel) {
  const TensorDesc& x = ctx.input(xi);
  const TensorDesc& w = ctx.input(wi);
  if (!x.shape || !w.shape) return std::optional<Shape>();
  auto xd = static_dims(ctx, xi), wd = static_dims(ctx, wi);
  if (xd && wd) {
    GRAFT_ASSIGN_OR_RETURN(IntConvPlan plan, int_conv_plan(ctx.attrs(), *xd, *wd));
    for (const auto& [i, name] : per_channel)
      if (auto pd = static_dims(ctx, i)) GRAFT_RETURN_IF_ERROR(check_per_channel(*pd, plan.M, name));
    return std::optional<Shape>(shape_from_values(plan.out_dims));
  }
  const Shape& xs = *x.shape;
  const Shape& ws = *w.shape;
  if (xs.size() < 3) return ctx.fail("input x must have rank >= 3 (N, C, spatial...), got ", x.to_string());
  if (ws.size() != xs.size())
    return ctx.fail("weight w ", w.to_string(), " must have the rank of x ", x.to_string());
  std::vector<int64_t> wk;
  bool kernel_known = true;
  for (size_t i = 2; i < ws.size(); ++i) {
    if (ws[i].is_const())
      wk.push_back(ws[i].value());
    else
      kernel_known = false;
  }
  if (!kernel_known && !ctx.attrs().has("kernel_shape"))
    return error(StatusCode::kUnsupported, "the kernel shape is unknown: weight w ", w.to_string(),
                 " has symbolic spatial dims and kernel_shape is absent");
  GRAFT_ASSIGN_OR_RETURN(WindowAttrs wa, parse_window_attrs(ctx.attrs(), xs.size() - 2,
                                                                      kernel_known ? &wk : nullptr, false));
  Shape out{xs[0], ws[0]};
  for (size_t i = 0; i + 2 < xs.size(); ++i) {
    Dim d = window_output_dim(wa, i, xs[i + 2]);
    if (d.is_const() && d.value() < 1)
      return ctx.fail("input x ", x.to_string(), " is too small for the window on spatial axis ",
                      static_cast<int64_t>(i), " (output extent ", d.value(), ")");
    out.push_back(d);
  }
  return std::optional<Shape>(out);
}

Status infer_matmul_integer(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_input(ctx, 0, "A", k8Bit));
  GRAFT_RETURN_IF_ERROR(check_input(ctx, 1, "B", k8Bit));
  GRAFT_RETURN_IF_ERROR(check_zero_point_dtype(ctx, 2, "a_zero_point", 0, "A"));
  GRAFT_RETURN_IF_ERROR(check_zero_point_dtype(ctx, 3, "b_zero_point", 1, "B"));
  GRAFT_ASSIGN_OR_RETURN(std::optional<Shape> out,
                         matmul_shape(ctx, 0, 1, {{2, "a_zero_point", true}, {3, "b_zero_point", false}}));
  ctx.set_output(0, desc_of(kI32, out));
  return Status::ok();
}

Status infer_conv_integer(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_input(ctx, 0, "x", k8Bit));
  GRAFT_RETURN_IF_ERROR(check_input(ctx, 1, "w", k8Bit));
  GRAFT_RETURN_IF_ERROR(check_zero_point_dtype(ctx, 2, "x_zero_point", 0, "x"));
  GRAFT_RETURN_IF_ERROR(check_zero_point_dtype(ctx, 3, "w_zero_point", 1, "w"));
  GRAFT_RETURN_IF_ERROR(check_per_tensor_input(ctx, 2, "x_zero_point"));
  GRAFT_ASSIGN_OR_RETURN(std::optional<Shape> out, conv_shape(ctx, 0, 1, {{3, "w_zero_point"}}));
  ctx.set_output(0, desc_of(kI32, out));
  return Status::ok();
}

Status infer_qlinear_matmul(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_input(ctx, 0, "a", k8Bit));
  GRAFT_RETURN_IF_ERROR(check_input(ctx, 2, "a_zero_point", k8Bit));
  GRAFT_RETURN_IF_ERROR(check_input(ctx, 3, "b", k8Bit));
  GRAFT_RETURN_IF_ERROR(check_input(ctx, 5, "b_zero_point", k8Bit));
  GRAFT_RETURN_IF_ERROR(check_input(ctx, 7, "y_zero_point", k8Bit));
  GRAFT_RETURN_IF_ERROR(check_zero_point_dtype(ctx, 2, "a_zero_point", 0, "a"));
  GRAFT_RETURN_IF_ERROR(check_zero_point_dtype(ctx, 5, "b_zero_point", 3, "b"));
  GRAFT_RETURN_IF_ERROR(check_scale_dtypes(ctx, {{1, "a_scale"}, {4, "b_scale"}, {6, "y_scale"}}));
  GRAFT_RETURN_IF_ERROR(check_per_tensor_input(ctx, 6, "y_scale"));
  GRAFT_RETURN_IF_ERROR(check_per_tensor_input(ctx, 7, "y_zero_point"));
  GRAFT_ASSIGN_OR_RETURN(std::optional<Shape> out, matmul_shape(ctx, 0, 3,
                                                                {{1, "a_scale", true},
                                                                 {2, "a_zero_point", true},
                                                                 {4, "b_scale", false},
                                                                 {5, "b_zero_point", false}}));
  ctx.set_output(0, desc_of(ctx.input(7).dtype, out));
  return Status::ok();
}

Status infer_qlinear_conv(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_input(ctx, 0, "x", k8Bit));
  GRAFT_RETURN_IF_ERROR(check_input(ctx, 2, "x_zero_point", k8Bit));
  GRAFT_RETURN_IF_ERROR(check_input(ctx, 3, "w", k8Bit));
  GRAFT_RETURN_IF_ERROR(check_input(ctx, 5, "w_zero_point", k8Bit));
  GRAFT_RETURN_IF_ERROR(check_input(ctx, 7, "y_zero_point", k8Bit));
  GRAFT_RETURN_IF_ERROR(check_zero_point_dtype(ctx, 2, "x_zero_point", 0, "x"));
  GRAFT_RETURN_IF_ERROR(check_zero_point_dtype(ctx, 5, "w_zero_point", 3, "w"));
  GRAFT_RETURN_IF_ERROR(check_scale_dtypes(ctx, {{1, "x_scale"}, {4, "w_scale"}, {6, "y_scale"}}));
  GRAFT_RETURN_IF_ERROR(check_per_tensor_input(ctx, 1, "x_scale"));
  GRAFT_RETURN_IF_ERROR(check_per_tensor_input(ctx, 2, "x_zero_point"));
  GRAFT_RETURN_IF_ERROR(check_per_tensor_input(ctx, 6, "y_scale"));
  GRAFT_RETURN_IF_ERROR(check_per_tensor_input(ctx, 7, "y_zero_point"));
  GRAFT_ASSIGN_OR_RETURN(std::optional<Shape> out,
                         conv_shape(ctx, 0, 3, {{4, "w_scale"}, {5, "w_zero_point"}}));
  if (ctx.has_input(8)) {
    GRAFT_RETURN_IF_ERROR(check_input(ctx, 8, "B", {kI32}));
    const TensorDesc& b = ctx.input(8);
    if (b.shape && (b.rank() != 1 || (out && (*out)[1].is_const() && (*b.shape)[0].is_const() &&
                                      (*b.shape)[0].value() != (*out)[1].value())))
      return ctx.fail("input B ", b.to_string(), " must be 1-D with one entry per output channel",
                      out ? " (" + (*out)[1].to_string() + ")" : std::string());
  }
  ctx.set_output(0, desc_of(ctx.input(7).dtype, out));
  return Status::ok();
}

}  // namespace

void append_integer_ops(std::vector<OpEntry>& out) {
  const std::vector<OpEntry> ops = {
      {"MatMulInteger", 10, infer_matmul_integer, cpu::matmul_integer},
      {"ConvInteger", 10, infer_conv_integer, cpu::conv_integer},
      {"QLinearMatMul", 10, infer_qlinear_matmul, cpu::qlinear_matmul},
      {"QLinearConv", 10, infer_qlinear_conv, cpu::qlinear_conv},
  };
  out.insert(out.end(), ops.begin(), ops.end());
}

}  // namespace graft
