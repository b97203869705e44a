// CPU reference kernels for the "nn" builtin ops (Conv, pools, BatchNormalization, MatMul, Gemm),
// whose window attributes are parsed by src/ops/window_attrs.h.
//
// These kernels are the executable specification: every value is loaded as double, accumulated in
// double and rounded once into the output dtype (so float16 results are the correctly rounded
// float16 of a high-precision result). Clarity first; loops are only arranged so that node-test
// sizes run in milliseconds.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/operator.h"
#include "ops/window_attrs.h"

namespace graft::cpu {

// ---- host helpers shared by the reference kernels ----
std::vector<double> load_doubles(const Tensor& t);
void store_doubles(Tensor& t, const std::vector<double>& v);
// Error unless `t` is a host tensor of a floating dtype (float16/bfloat16/float32/float64).
Status require_float_tensor(const Tensor* t, const char* what);
// Error unless `t` is a host tensor of a floating or integer dtype.
Status require_float_or_int(const Tensor* t, const char* what);

// ---- kernels ----
Status conv(ExecContext& ctx);
Status conv_transpose(ExecContext& ctx);
Status batch_normalization(ExecContext& ctx);
Status matmul(ExecContext& ctx);
Status gemm(ExecContext& ctx);
Status max_pool(ExecContext& ctx);
Status average_pool(ExecContext& ctx);
Status global_average_pool(ExecContext& ctx);
Status global_max_pool(ExecContext& ctx);

}  // namespace graft::cpu
