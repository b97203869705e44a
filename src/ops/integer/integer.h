// The integer and quantized linear-algebra family (MatMulInteger, ConvInteger, QLinearMatMul,
// QLinearConv): what its definition (integer.cpp: schemas, inference, CPU references) and its CUDA
// ops (integer.cu) share. The layouts (matmul and conv geometry, where each zero point and scale
// applies) are read one way by all of them, so inference and execution refuse a bad zero point or
// scale with the same words (each names the input at fault).
#pragma once

#include <cstdint>
#include <vector>
#include "graft/attribute.h"
#include "graft/dtype.h"
#include "graft/status.h"
#include "ops/window_attrs.h"

namespace graft {

// ---- matmul geometry --------------------------------------------------------------------------

// A numpy-style matmul of A by B: 1-D operands promoted ([K] -> [1, K] for A, [K] -> [K, 1] for B),
// batch dims broadcast. Errors name both shapes.
struct IntMatMulPlan {
  std::vector<int64_t> a_dims, b_dims;  // promoted, rank >= 2
  int64_t M = 1, K = 1, N = 1;
  std::vector<int64_t> out_dims;          // the ONNX output shape (promoted axes dropped again)
  std::vector<int64_t> batch;             // the broadcast batch dims (out_dims without M and N)
  std::vector<int64_t> a_batch, b_batch;  // per flat output batch: A's and B's own batch index
};
Result<IntMatMulPlan> int_matmul_plan(const std::vector<int64_t>& a_dims, const std::vector<int64_t>& b_dims);

// Where a zero point or scale of a matmul operand applies. A's parameters may vary along its rows
// (per row: a 1-D tensor of M entries, or [..., M, 1] broadcasting against A), B's along its columns
// (a 1-D tensor of N entries, or [..., 1, N]); one element is per tensor. Returns, for each of the
// operand's (batch, row) pairs (A) or (batch, column) pairs (B), row-major, the parameter's flat
// index. `what` names the input in errors ("a_zero_point").
Result<std::vector<int64_t>> matmul_param_index(const IntMatMulPlan& plan, bool a_side,
                                                const std::vector<int64_t>& param_dims, const char* what);

// The strided view behind matmul_param_index, for kernels that index on the fly (the CUDA ops): the
// parameter's flat index for the operand's batch multi-index b (over its own batch dims) and row or
// column v is sum_a b[a] * batch[a] + v * vary, a stride being 0 along an axis the parameter
// broadcasts over (all 0 per tensor). Same checks and errors as matmul_param_index.
struct MatMulParamStrides {
  std::vector<int64_t> batch;  // one per batch axis of the promoted operand
  int64_t vary = 0;            // along A's rows or B's columns
};
Result<MatMulParamStrides> matmul_param_strides(const IntMatMulPlan& plan, bool a_side,
                                                const std::vector<int64_t>& param_dims, const char* what);

// ---- conv geometry -----------------------------------------------------------------------------

// Conv's attributes and shapes for x [N, C, spatial...] and w [M, C/group, kernel...], with the
// window helpers of window_attrs.h. Errors name the attribute or the inputs.
struct IntConvPlan {
  WindowAttrs window;
  int64_t group = 1;
  int64_t N = 0, C = 0, M = 0, Cg = 0;
  std::vector<int64_t> out_dims;  // [N, M, out spatial...]
};
Result<IntConvPlan> int_conv_plan(const AttributeMap& attrs, const std::vector<int64_t>& x_dims,
                                  const std::vector<int64_t>& w_dims);

// A per-tensor parameter: one element (a scalar or any shape of one element).
Status check_per_tensor(const std::vector<int64_t>& dims, const char* what);
// A weight parameter of a conv: one element, or a 1-D tensor of M (output channel) entries.
Status check_per_channel(const std::vector<int64_t>& dims, int64_t M, const char* what);
// QLinearConv's optional bias B: int32, 1-D with one entry per output channel (M).
Status check_conv_bias(DataType dtype, const std::vector<int64_t>& dims, int64_t M);

}  // namespace graft
