// Launchers for the elementwise CUDA kernels: unary math, broadcasting binary ops and comparisons,
// Where, Cast. Plain device pointers, no framework types; each returns the launch's cudaError_t.
#pragma once

#include "backends/cuda/cuda_kernel_common.cuh"

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
// out = op(a, b) with broadcasting (operands 0 and 1 of `p`); `t` is the operand type.
// Integer kMod/kFmod by zero cannot fail per element on the GPU: they write 0 there (the CPU
// reference returns an error instead).
cudaError_t launch_binary(BinaryOp op, KType t, const void* a, const void* b, void* out, const Bcast& p,
                          int64_t n, cudaStream_t s);

// out = cond ? x : y with broadcasting (operands 0, 1, 2 of `p`); any element size in {1,2,4,8}.
cudaError_t launch_where(const void* cond, const void* x, const void* y, void* out, int elem_size, const Bcast& p,
                         int64_t n, cudaStream_t s);

// y = (to)x; float to integer truncates toward zero, NaN -> 0, out-of-range saturates (as the CPU
// reference does); anything to bool is x != 0.
cudaError_t launch_cast(KType from, KType to, const void* x, void* y, int64_t n, cudaStream_t s);

// out = broadcast of src (operand 0 of `p`); element size in {1,2,4,8}. Used by Expand and Gemm's C.
cudaError_t launch_broadcast_copy(const void* src, void* out, int elem_size, const Bcast& p, int64_t n,
                                  cudaStream_t s);

}  // namespace graft::cuda::k
