// The nn family: Conv, ConvTranspose, BatchNormalization, MatMul, Gemm, MaxPool, AveragePool and the
// global pools, one file per op (the matrix products and the pools one file each): the schema and
// CPU reference in <op>.cpp (conv.cpp, conv_transpose.cpp, batch_norm.cpp, matmul.cpp, pool.cpp,
// sharing nn_util.h), the CUDA op in <op>_cuda.cpp (MatMul/Gemm through cuBLASLt, Conv through the
// backend's cuDNN convolution, ConvTranspose through cuDNN's backward data, pools and
// BatchNormalization on nn_kernels.cu, which graft's fused convolution shares). Each file's table
// function is called from the list CMake writes. Both backends read the window attributes with
// src/ops/window_attrs.h.
//
// The CPU references are the executable specification: every value is loaded as double,
// accumulated in double and rounded once into the output dtype (so float16 results are the correctly
// rounded float16 of a high-precision result). Clarity first; loops are only arranged so that
// node-test sizes run in milliseconds. GraftConv's reference (src/ops/fused_conv/fused_conv.cpp) calls
// cpu::conv.
#pragma once

#include "ops/operator.h"
#include "ops/window_attrs.h"


namespace graft::cpu {

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
