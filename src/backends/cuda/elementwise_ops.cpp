// CUDA elementwise ops: unary activations and math, broadcasting binary ops and comparisons, Where,
// Not, Cast/CastLike, Identity. Kernels live in elementwise_kernels.cu; this file checks dtypes and
// attributes (supports) and turns the node into launcher arguments (run).
#include <cmath>
#include <cstring>
#include <string>

#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/elementwise_kernels.cuh"

namespace graft::cuda {
namespace {

using k::BinaryOp;
using k::UnaryOp;
using namespace util;

constexpr std::initializer_list<DataType> kFloats = {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16};

bool is_float_unary(UnaryOp op) {
  return op != UnaryOp::kRelu && op != UnaryOp::kNeg && op != UnaryOp::kAbs && op != UnaryOp::kNot &&
         op != UnaryOp::kSign && op != UnaryOp::kShrink;
}

template <UnaryOp kOp>
bool unary_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0)) return reject(why, "input 0 is missing");
  if constexpr (kOp == UnaryOp::kNot) return require_dtype(n, 0, {DataType::kBool}, why);
  if constexpr (kOp == UnaryOp::kGeluErf) {
    auto a = n.attrs.get_string("approximate", "none");
    if (!a || (a.value() != "none" && a.value() != "tanh"))
      return reject(why, "attribute 'approximate' must be \"none\" or \"tanh\"");
  }
  if constexpr (kOp == UnaryOp::kClip) {
    for (size_t i = 1; i < 3; ++i)
      if (has_input(n, i) && in_dtype(n, i) != in_dtype(n, 0))
        return reject(why, "Clip min/max dtype differs from the input dtype");
  }
  if (is_float_unary(kOp)) return require_dtype(n, 0, kFloats, why);
  return require_dtype(n, 0,
                       {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kInt8,
                        DataType::kInt32, DataType::kInt64},
                       why);
}

template <UnaryOp kOp>
Status unary_run(CudaExec& ex) {
  ExecContext& ctx = *ex.ctx;
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  if (x.numel() != y.numel() || x.dtype() != y.dtype())
    return fail(ex, StatusCode::kInternal, "output ", dtype_name(y.dtype()), " does not match input ", dtype_name(x.dtype()));
  const AttributeMap& attrs = attrs_of(ex);
  UnaryOp op = kOp;
  float a = 0.f, b = 0.f;
  switch (kOp) {
    case UnaryOp::kLeakyRelu: { GRAFT_ASSIGN_OR_RETURN(a, attrs.get_float("alpha", 0.01f)); break; }
    case UnaryOp::kElu: { GRAFT_ASSIGN_OR_RETURN(a, attrs.get_float("alpha", 1.0f)); break; }
    case UnaryOp::kThresholdedRelu: { GRAFT_ASSIGN_OR_RETURN(a, attrs.get_float("alpha", 1.0f)); break; }
    case UnaryOp::kSelu: {
      GRAFT_ASSIGN_OR_RETURN(a, attrs.get_float("alpha", 1.67326319217681884765625f));
      GRAFT_ASSIGN_OR_RETURN(b, attrs.get_float("gamma", 1.05070102214813232421875f));
      break;
    }
    case UnaryOp::kShrink: {
      GRAFT_ASSIGN_OR_RETURN(a, attrs.get_float("lambd", 0.5f));
      GRAFT_ASSIGN_OR_RETURN(b, attrs.get_float("bias", 0.0f));
      break;
    }
    case UnaryOp::kHardSigmoid: {
      GRAFT_ASSIGN_OR_RETURN(a, attrs.get_float("alpha", 0.2f));
      GRAFT_ASSIGN_OR_RETURN(b, attrs.get_float("beta", 0.5f));
      break;
    }
    case UnaryOp::kGeluErf: {
      GRAFT_ASSIGN_OR_RETURN(std::string approx, attrs.get_string("approximate", "none"));
      if (approx == "tanh") op = UnaryOp::kGeluTanh;
      else if (approx != "none") return fail(ex, StatusCode::kInvalidModel, "attribute 'approximate' is \"", approx, "\"");
      break;
    }
    case UnaryOp::kClip: {
      // Bounds are host inputs (opset 11+) or attributes (before); absent means unbounded.
      const Tensor* lo = ctx.inputs.size() > 1 ? ctx.inputs[1] : nullptr;
      const Tensor* hi = ctx.inputs.size() > 2 ? ctx.inputs[2] : nullptr;
      for (const Tensor* t : {lo, hi})
        if (t && (t->numel() != 1 || t->device() != DeviceType::kCPU))
          return fail(ex, StatusCode::kInvalidModel, "Clip min/max must be host scalars");
      if (lo) a = static_cast<float>(lo->get(0));
      else { GRAFT_ASSIGN_OR_RETURN(a, attrs.get_float("min", -INFINITY)); }
      if (hi) b = static_cast<float>(hi->get(0));
      else { GRAFT_ASSIGN_OR_RETURN(b, attrs.get_float("max", INFINITY)); }
      break;
    }
    default: break;
  }
  return launch_status(k::launch_unary(op, ktype(x.dtype()), x.data(), y.data(), x.numel(), a, b, stream_of(ex)), ex);
}

template <BinaryOp kOp>
bool binary_supports(const Node& n, std::string* why) {
  if (n.inputs.size() < 2 && kOp != BinaryOp::kMax && kOp != BinaryOp::kMin) return reject(why, "needs two inputs");
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (!has_input(n, i)) return reject(why, "input " + std::to_string(i) + " is missing");
    if (in_dtype(n, i) != in_dtype(n, 0)) return reject(why, "inputs of different dtypes (mixed-type Pow is not handled)");
  }
  switch (kOp) {
    case BinaryOp::kDiv:
    case BinaryOp::kPow:
      return require_dtype(n, 0, kFloats, why);  // integer division by zero must fail: CPU does that
    case BinaryOp::kAnd:
    case BinaryOp::kOr:
    case BinaryOp::kXor:
      return require_dtype(n, 0, {DataType::kBool}, why);
    case BinaryOp::kMod: {
      // fmod=0 (the default) on floats is an error in the CPU reference; integer fmod=0 is Python's %.
      auto fmod = n.attrs.get_int("fmod", 0);
      if (!fmod) return reject(why, "attribute 'fmod' is not an int");
      if (fmod.value() != 0 && fmod.value() != 1) return reject(why, "attribute 'fmod' must be 0 or 1");
      if (fmod.value() == 0)
        return require_dtype(n, 0, {DataType::kInt32, DataType::kInt64}, why) ||
               reject(why, "Mod with fmod=0 needs int32/int64 inputs (floating inputs need fmod=1), got " +
                               std::string(dtype_name(in_dtype(n, 0))));
      return require_dtype(n, 0, {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kInt32,
                                  DataType::kInt64}, why);
    }
    case BinaryOp::kEqual:
      return require_dtype(n, 0, {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kInt32,
                                  DataType::kInt64, DataType::kBool}, why);
    default:
      return require_dtype(n, 0, {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kInt32,
                                  DataType::kInt64}, why);
  }
}

Status binary_once(CudaExec& ex, BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  k::Bcast p;
  std::string why;
  if (!make_bcast(out.dims(), {a.dims(), b.dims()}, &p, &why)) return fail(ex, StatusCode::kRuntimeError, why);
  return launch_status(k::launch_binary(op, ktype(a.dtype()), a.data(), b.data(), out.data(), p, out.numel(), stream_of(ex)), ex);
}

template <BinaryOp kOp>
Status binary_run(CudaExec& ex) {
  ExecContext& ctx = *ex.ctx;
  Tensor& out = *ctx.outputs[0];
  const DataType want = k::binary_writes_bool(kOp) ? DataType::kBool : ctx.inputs[0]->dtype();
  if (out.dtype() != want) return fail(ex, StatusCode::kInternal, "output dtype ", dtype_name(out.dtype()));
  if constexpr (kOp == BinaryOp::kMod) {
    GRAFT_ASSIGN_OR_RETURN(int64_t fmod, attrs_of(ex).get_int("fmod", 0));
    if (ctx.inputs.size() != 2) return fail(ex, StatusCode::kInvalidModel, "Mod needs two inputs");
    return binary_once(ex, fmod ? BinaryOp::kFmod : BinaryOp::kMod, *ctx.inputs[0], *ctx.inputs[1], out);
  }
  if (ctx.inputs.size() == 1) {  // variadic Max/Min of one input: a broadcast copy
    k::Bcast p;
    std::string why;
    if (!make_bcast(out.dims(), {ctx.inputs[0]->dims()}, &p, &why)) return fail(ex, StatusCode::kRuntimeError, why);
    return launch_status(k::launch_broadcast_copy(ctx.inputs[0]->data(), out.data(), static_cast<int>(dtype_size(out.dtype())),
                                                  p, out.numel(), stream_of(ex)), ex);
  }
  GRAFT_RETURN_IF_ERROR(binary_once(ex, kOp, *ctx.inputs[0], *ctx.inputs[1], out));
  // Variadic Max/Min fold the rest into the output (same index read and written per element).
  for (size_t i = 2; i < ctx.inputs.size(); ++i) GRAFT_RETURN_IF_ERROR(binary_once(ex, kOp, out, *ctx.inputs[i], out));
  return Status::ok();
}

bool where_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0) || !has_input(n, 1) || !has_input(n, 2)) return reject(why, "Where needs three inputs");
  if (in_dtype(n, 0) != DataType::kBool) return reject(why, "condition must be bool");
  if (in_dtype(n, 1) != in_dtype(n, 2)) return reject(why, "X and Y dtypes differ");
  size_t es = dtype_size(in_dtype(n, 1));
  if (es != 1 && es != 2 && es != 4 && es != 8) return reject(why, "unsupported element size");
  return true;
}

Status where_run(CudaExec& ex) {
  ExecContext& ctx = *ex.ctx;
  const Tensor &c = *ctx.inputs[0], &x = *ctx.inputs[1], &y = *ctx.inputs[2];
  Tensor& out = *ctx.outputs[0];
  if (out.dtype() != x.dtype()) return fail(ex, StatusCode::kInternal, "output dtype differs from X");
  k::Bcast p;
  std::string why;
  if (!make_bcast(out.dims(), {c.dims(), x.dims(), y.dims()}, &p, &why)) return fail(ex, StatusCode::kRuntimeError, why);
  return launch_status(k::launch_where(c.data(), x.data(), y.data(), out.data(), static_cast<int>(dtype_size(x.dtype())), p,
                                       out.numel(), stream_of(ex)), ex);
}

bool castable(DataType t) {
  switch (t) {
    case DataType::kFloat32: case DataType::kFloat16: case DataType::kBFloat16: case DataType::kFloat64:
    case DataType::kInt8: case DataType::kUInt8: case DataType::kInt32: case DataType::kInt64: case DataType::kBool:
      return true;
    default: return false;
  }
}

bool cast_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0)) return reject(why, "input 0 is missing");
  if (!castable(in_dtype(n, 0))) return reject(why, std::string("cannot cast from ") + dtype_name(in_dtype(n, 0)));
  DataType to = out_dtype(n, 0);
  if (to != DataType::kUndefined && !castable(to)) return reject(why, std::string("cannot cast to ") + dtype_name(to));
  return true;
}

Status copy_bytes(CudaExec& ex, const Tensor& x, Tensor& y) {
  if (x.nbytes() != y.nbytes()) return fail(ex, StatusCode::kInternal, "output size differs from input size");
  if (x.nbytes() == 0 || x.data() == y.data()) return Status::ok();
  return launch_status(cudaMemcpyAsync(y.data(), x.data(), x.nbytes(), cudaMemcpyDeviceToDevice, stream_of(ex)), ex,
                       "cudaMemcpyAsync");
}

Status cast_run(CudaExec& ex) {
  const Tensor& x = *ex.ctx->inputs[0];
  Tensor& y = *ex.ctx->outputs[0];
  if (x.numel() != y.numel()) return fail(ex, StatusCode::kInternal, "output size differs from input size");
  if (x.dtype() == y.dtype()) return copy_bytes(ex, x, y);
  return launch_status(k::launch_cast(ktype(x.dtype()), ktype(y.dtype()), x.data(), y.data(), x.numel(), stream_of(ex)), ex);
}

bool identity_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0)) return reject(why, "input 0 is missing");
  return true;
}

Status identity_run(CudaExec& ex) { return copy_bytes(ex, *ex.ctx->inputs[0], *ex.ctx->outputs[0]); }

template <UnaryOp kOp>
CudaOp unary(const char* name) {
  return CudaOp{name, &unary_supports<kOp>, &unary_run<kOp>, {}, nullptr};
}
template <BinaryOp kOp>
CudaOp binary(const char* name) {
  return CudaOp{name, &binary_supports<kOp>, &binary_run<kOp>, {}, nullptr};
}

}  // namespace

void append_cuda_elementwise_ops(std::vector<CudaOp>& out) {
  out.push_back(unary<UnaryOp::kRelu>("Relu"));
  out.push_back(unary<UnaryOp::kLeakyRelu>("LeakyRelu"));
  out.push_back(unary<UnaryOp::kSigmoid>("Sigmoid"));
  out.push_back(unary<UnaryOp::kTanh>("Tanh"));
  out.push_back(unary<UnaryOp::kErf>("Erf"));
  out.push_back(unary<UnaryOp::kGeluErf>("Gelu"));  // approximate="tanh" picks kGeluTanh at run
  out.push_back(unary<UnaryOp::kHardSigmoid>("HardSigmoid"));
  out.push_back(unary<UnaryOp::kHardSwish>("HardSwish"));
  out.push_back(CudaOp{"Clip", &unary_supports<UnaryOp::kClip>, &unary_run<UnaryOp::kClip>, {1, 2}, nullptr});
  out.push_back(unary<UnaryOp::kExp>("Exp"));
  out.push_back(unary<UnaryOp::kLog>("Log"));
  out.push_back(unary<UnaryOp::kSqrt>("Sqrt"));
  out.push_back(unary<UnaryOp::kReciprocal>("Reciprocal"));
  out.push_back(unary<UnaryOp::kNeg>("Neg"));
  out.push_back(unary<UnaryOp::kAbs>("Abs"));
  out.push_back(unary<UnaryOp::kFloor>("Floor"));
  out.push_back(unary<UnaryOp::kCeil>("Ceil"));
  out.push_back(unary<UnaryOp::kSin>("Sin"));
  out.push_back(unary<UnaryOp::kCos>("Cos"));
  out.push_back(unary<UnaryOp::kSoftplus>("Softplus"));
  out.push_back(unary<UnaryOp::kElu>("Elu"));
  out.push_back(unary<UnaryOp::kNot>("Not"));
  out.push_back(unary<UnaryOp::kTan>("Tan"));
  out.push_back(unary<UnaryOp::kAsin>("Asin"));
  out.push_back(unary<UnaryOp::kAcos>("Acos"));
  out.push_back(unary<UnaryOp::kAtan>("Atan"));
  out.push_back(unary<UnaryOp::kSinh>("Sinh"));
  out.push_back(unary<UnaryOp::kCosh>("Cosh"));
  out.push_back(unary<UnaryOp::kAsinh>("Asinh"));
  out.push_back(unary<UnaryOp::kAcosh>("Acosh"));
  out.push_back(unary<UnaryOp::kAtanh>("Atanh"));
  out.push_back(unary<UnaryOp::kRound>("Round"));
  out.push_back(unary<UnaryOp::kSoftsign>("Softsign"));
  out.push_back(unary<UnaryOp::kSign>("Sign"));
  out.push_back(unary<UnaryOp::kSelu>("Selu"));
  out.push_back(unary<UnaryOp::kShrink>("Shrink"));
  out.push_back(unary<UnaryOp::kThresholdedRelu>("ThresholdedRelu"));
  out.push_back(unary<UnaryOp::kMish>("Mish"));
  out.push_back(binary<BinaryOp::kAdd>("Add"));
  out.push_back(binary<BinaryOp::kSub>("Sub"));
  out.push_back(binary<BinaryOp::kMul>("Mul"));
  out.push_back(binary<BinaryOp::kDiv>("Div"));
  out.push_back(binary<BinaryOp::kPow>("Pow"));
  out.push_back(binary<BinaryOp::kMax>("Max"));
  out.push_back(binary<BinaryOp::kMin>("Min"));
  out.push_back(binary<BinaryOp::kPRelu>("PRelu"));
  out.push_back(binary<BinaryOp::kEqual>("Equal"));
  out.push_back(binary<BinaryOp::kLess>("Less"));
  out.push_back(binary<BinaryOp::kGreater>("Greater"));
  out.push_back(binary<BinaryOp::kLessEq>("LessOrEqual"));
  out.push_back(binary<BinaryOp::kGreaterEq>("GreaterOrEqual"));
  out.push_back(binary<BinaryOp::kAnd>("And"));
  out.push_back(binary<BinaryOp::kOr>("Or"));
  out.push_back(binary<BinaryOp::kXor>("Xor"));
  out.push_back(binary<BinaryOp::kMod>("Mod"));
  out.push_back(CudaOp{"Where", &where_supports, &where_run, {}, nullptr});
  out.push_back(CudaOp{"Cast", &cast_supports, &cast_run, {}, nullptr});
  out.push_back(CudaOp{"CastLike", &cast_supports, &cast_run, {}, nullptr});
  out.push_back(CudaOp{"Identity", &identity_supports, &identity_run, {}, nullptr});
}

}  // namespace graft::cuda
