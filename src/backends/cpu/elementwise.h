// CPU reference kernels for the elementwise builtin ops (unary math, broadcasting binary ops,
// comparisons, Where, Cast, Clip).
//
// These are the executable specification: straightforward loops, no vectorization. Half-precision
// types are computed in float and rounded once on store; float64 computes in double; integers
// compute natively. Outputs arrive allocated to the shapes inference produced; each kernel checks
// that its inputs broadcast to those shapes and fails with a Status otherwise.
#pragma once

#include <cstdint>
#include <vector>

#include "graft/status.h"
#include "ops/operator.h"

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

namespace detail {

// Walks a row-major output of `out_dims` and keeps, for each operand, the element offset that
// multidirectional broadcasting maps the current output element to.
class BroadcastWalker {
 public:
  // Fails when an operand's dims are not broadcastable to out_dims (names both shapes).
  static Result<BroadcastWalker> make(const std::vector<int64_t>& out_dims,
                                      const std::vector<std::vector<int64_t>>& operand_dims);
  int64_t offset(size_t operand) const { return offsets_[operand]; }
  // Advance to the next output element (row-major order).
  void next();

 private:
  std::vector<int64_t> dims_;
  std::vector<std::vector<int64_t>> strides_;  // per operand, per output axis; 0 when broadcast
  std::vector<int64_t> index_;
  std::vector<int64_t> offsets_;
};

}  // namespace detail
}  // namespace graft::cpu
