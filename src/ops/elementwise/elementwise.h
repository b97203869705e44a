// The elementwise family: ONNX's unary math (Relu, Sigmoid, Tanh, Erf, Gelu, HardSigmoid,
// HardSwish, Exp, Log, Sqrt, Floor, Ceil, Sin, Cos, Softplus, Elu, Neg, Abs, Not, ...), the
// broadcasting binary ops and comparisons (Add, Sub, Mul, Div, Pow, PRelu, Max, Min, Equal, Less,
// Greater, And, Or, Mod, Xor, ...), Sum, Mean, Where, Cast/CastLike, Clip, Identity, and the suite's
// rarer math (trig and hyperbolic, Sign, Round, Selu, Celu, Shrink, ThresholdedRelu, Softsign, Mish,
// IsNaN, IsInf). The CPU references are the
// executable specification: plain loops, half types computed in float and rounded once on store,
// float64 in double, integers natively; outputs arrive allocated to the inferred shapes and each
// kernel checks that its inputs broadcast to them. This header declares them and, in CUDA builds,
// the kernel launchers that other CUDA code reuses (the fused transformer ops, Expand, Gemm's C).
// elementwise.cpp: CPU references and schemas; elementwise.cu: kernels and the CUDA ops.
#pragma once

#include <cstdint>
#include <vector>

#include "graft/attribute.h"
#include "graft/status.h"
#include "ops/operator.h"

#ifdef GRAFT_WITH_CUDA
#include <cuda_runtime_api.h>

#include "backends/cuda/cuda_kernel_common.cuh"
#endif

namespace graft::cpu {

// Unary float math (float16/bfloat16/float32/float64).
Status relu(ExecContext& ctx);  // also int32/int64/int8
Status leaky_relu(ExecContext& ctx);
Status sigmoid(ExecContext& ctx);
Status tanh(ExecContext& ctx);
Status erf(ExecContext& ctx);
Status gelu(ExecContext& ctx);
Status hard_sigmoid(ExecContext& ctx);
Status hard_swish(ExecContext& ctx);
Status exp(ExecContext& ctx);
Status log(ExecContext& ctx);
Status sqrt(ExecContext& ctx);
Status reciprocal(ExecContext& ctx);
Status floor(ExecContext& ctx);
Status ceil(ExecContext& ctx);
Status sin(ExecContext& ctx);
Status cos(ExecContext& ctx);
Status softplus(ExecContext& ctx);
Status elu(ExecContext& ctx);
// Unary numeric (floats and integers).
Status neg(ExecContext& ctx);
Status abs(ExecContext& ctx);
Status clip(ExecContext& ctx);
// Boolean / type / copy.
Status logical_not(ExecContext& ctx);
Status cast(ExecContext& ctx);  // also CastLike: the target is the output's dtype
Status identity(ExecContext& ctx);

// Broadcasting binary ops.
Status add(ExecContext& ctx);
Status sub(ExecContext& ctx);
Status mul(ExecContext& ctx);
Status div(ExecContext& ctx);
Status pow(ExecContext& ctx);
Status prelu(ExecContext& ctx);
Status max(ExecContext& ctx);  // variadic
Status min(ExecContext& ctx);  // variadic
Status equal(ExecContext& ctx);
Status less(ExecContext& ctx);
Status greater(ExecContext& ctx);
Status less_or_equal(ExecContext& ctx);
Status greater_or_equal(ExecContext& ctx);
Status logical_and(ExecContext& ctx);
Status logical_or(ExecContext& ctx);
Status sum(ExecContext& ctx);  // variadic
Status where(ExecContext& ctx);

// The suite's rarer elementwise ops (float math unless noted).
Status mod(ExecContext& ctx);
Status logical_xor(ExecContext& ctx);
Status tan(ExecContext& ctx);
Status asin(ExecContext& ctx);
Status acos(ExecContext& ctx);
Status atan(ExecContext& ctx);
Status sinh(ExecContext& ctx);
Status cosh(ExecContext& ctx);
Status asinh(ExecContext& ctx);
Status acosh(ExecContext& ctx);
Status atanh(ExecContext& ctx);
Status sign(ExecContext& ctx);     // also integers
Status round(ExecContext& ctx);    // half to even
Status selu(ExecContext& ctx);
// Celu: max(0, x) + min(0, alpha * (exp(x / alpha) - 1)); alpha is read by celu_alpha (below).
Status celu(ExecContext& ctx);
Status shrink(ExecContext& ctx);   // also integers
Status thresholded_relu(ExecContext& ctx);
Status softsign(ExecContext& ctx);
Status mish(ExecContext& ctx);
Status is_nan(ExecContext& ctx);
Status is_inf(ExecContext& ctx);
Status mean(ExecContext& ctx);

}  // namespace graft::cpu

namespace graft {

// Celu's alpha (default 1), which must be finite and nonzero; the error names the attribute.
Result<float> celu_alpha(const AttributeMap& attrs);

}  // namespace graft

#ifdef GRAFT_WITH_CUDA
// ---- CUDA launchers (elementwise.cu) ---------------------------------------------------------------
namespace graft::cuda::k {

enum class UnaryOp : int {
  kRelu, kLeakyRelu, kSigmoid, kTanh, kErf, kGeluErf, kGeluTanh, kHardSigmoid, kHardSwish, kClip,
  kExp, kLog, kSqrt, kReciprocal, kNeg, kAbs, kFloor, kCeil, kSin, kCos, kSoftplus, kElu, kNot,
  kTan, kAsin, kAcos, kAtan, kSinh, kCosh, kAsinh, kAcosh, kAtanh, kRound, kSoftsign, kSign, kSelu, kShrink,
  kThresholdedRelu, kMish
};
// y = op(x) over n elements. a, b: LeakyRelu/Elu alpha; HardSigmoid alpha/beta; Clip min/max;
// Selu alpha/gamma; Shrink lambd/bias; ThresholdedRelu alpha.
// Float types (f32/f16/bf16) for every op; i8/i32/i64 for Relu/Neg/Abs/Sign/Shrink; bool for Not.
cudaError_t launch_unary(UnaryOp op, KType t, const void* x, void* y, int64_t n, float a, float b, cudaStream_t s);

enum class BinaryOp : int {
  kAdd, kSub, kMul, kDiv, kPow, kMax, kMin, kPRelu,
  kMod,   // integer Mod with fmod=0: the remainder takes the divisor's sign (Python's %)
  kFmod,  // fmod=1: the remainder takes the dividend's sign (C's fmod / %)
  kEqual, kLess, kGreater, kLessEq, kGreaterEq, kAnd, kOr, kXor  // these write bool
};
inline bool binary_writes_bool(BinaryOp op) { return static_cast<int>(op) >= static_cast<int>(BinaryOp::kEqual); }
// out = a^b with broadcasting (operands 0 and 1 of `p`): a of type ta (f32/f16/bf16/f64/i32/i64, the
// result's type too), b of type tb (f32/f16/bf16/f64/i32/i64/u32/u64), as the CPU reference's Pow
// of mixed types computes it.
cudaError_t launch_pow_mixed(KType ta, KType tb, const void* a, const void* b, void* out, const Bcast& p, int64_t n,
                             cudaStream_t s);
// out = op(a, b) with broadcasting (operands 0 and 1 of `p`); `t` is the operand type.
// Integer kDiv/kMod/kFmod by zero write 0 there: launch_report_zero_divisor reports the divisor
// (the CPU reference fails the run).
cudaError_t launch_binary(BinaryOp op, KType t, const void* a, const void* b, void* out, const Bcast& p,
                          int64_t n, cudaStream_t s);

// Reports invalid data through `f` when any of the n elements of the integer divisor `d` (each
// elem_size bytes: 1, 2, 4 or 8) is zero; float divisors of zero are no error, and the caller does
// not ask. Every element of a broadcast operand reaches the output when the output is not empty, so
// the divisor's own elements are what is checked.
cudaError_t launch_report_zero_divisor(int elem_size, const void* d, int64_t n, const DataFault& f, cudaStream_t s);

// out = cond ? x : y with broadcasting (operands 0, 1, 2 of `p`); any element size in {1,2,4,8}.
cudaError_t launch_where(const void* cond, const void* x, const void* y, void* out, int elem_size, const Bcast& p,
                         int64_t n, cudaStream_t s);

// y[i] += bias[i % period] in place over n elements (float types): a bias repeated along y's
// trailing elements. A matmul's row bias when cuBLASLt has no bias-epilogue kernel for its shape
// (Gemm, GraftGemm: period N), and the unfused attention's periodic score bias (GraftAttention).
cudaError_t launch_add_periodic_bias(KType t, void* y, const void* bias, int64_t period, int64_t n, cudaStream_t s);

// y = (to)x; float to integer truncates toward zero, NaN -> 0, out-of-range saturates (as the CPU
// reference does); anything to bool is x != 0.
cudaError_t launch_cast(KType from, KType to, const void* x, void* y, int64_t n, cudaStream_t s);
// y = x cast to int4 (is_signed) or uint4, held one value a byte as int8/uint8: clamped into the
// type's range [lo, hi] (dtype.h's four_bit_min/max) and rounded half to even, NaN -> 0 (ONNX
// Runtime's Cast; the CPU reference's).
cudaError_t launch_cast_to_4bit(KType from, bool is_signed, int lo, int hi, const void* x, void* y, int64_t n,
                                cudaStream_t s);
// y (one byte a value) = x as ONNX's 8-bit float `format` (17 to 20: float8e4m3fn, e4m3fnuz, e5m2,
// e5m2fnuz), rounded to nearest even, saturating when `saturate` (src/core/float8.h, as the CPU
// reference); and back: y (float32) = the 8-bit floats x, exactly.
cudaError_t launch_cast_to_float8(KType from, int format, bool saturate, const void* x, void* y, int64_t n,
                                  cudaStream_t s);
cudaError_t launch_float8_to_float(int format, const void* x, void* y, int64_t n, cudaStream_t s);

// out = broadcast of src (operand 0 of `p`); element size in {1,2,4,8}. Used by Expand and Gemm's C.
cudaError_t launch_broadcast_copy(const void* src, void* out, int elem_size, const Bcast& p, int64_t n,
                                  cudaStream_t s);

}  // namespace graft::cuda::k
#endif
