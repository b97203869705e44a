// The nn family: Conv, ConvTranspose, BatchNormalization, MatMul, Gemm, MaxPool, AveragePool, the
// global pools and Col2Im (col2im.cpp, col2im.cu), one file per op (the matrix products and the
// pools one file each): the schema and CPU reference in <op>.cpp (conv.cpp, conv_transpose.cpp, batch_norm.cpp, matmul.cpp, pool.cpp,
// sharing nn_util.h), the CUDA op in <op>_cuda.cpp (MatMul/Gemm through cuBLASLt, Conv through the
// backend's cuDNN convolution, ConvTranspose through cuDNN's backward data, pools and
// BatchNormalization on nn_kernels.cu, which graft's fused convolution shares). Each file's table
// function is called from the list CMake writes. Both backends read the window attributes with
// src/ops/window_attrs.h.
//
// The CPU references are the executable specification: every value is loaded as double,
// accumulated in double and rounded once into the output dtype (so float16 results are the correctly
// rounded float16 of a high-precision result). Clarity first; loops are only arranged so that
// node-test sizes run in milliseconds. GraftConv's reference (src/ops/fused_conv/graft_conv.cpp) calls
// cpu::conv.
#pragma once

#include <cstdint>
#include <vector>

#include "graft/attribute.h"
#include "graft/status.h"
#include "ops/operator.h"
#include "ops/window_attrs.h"

namespace graft {

// Col2Im (opset 18): input (N, C * prod(block_shape), L) -> (N, C, image_shape...), every column
// value added at image position l * stride - pad_begin + k * dilation. What its CPU reference and
// CUDA op (col2im.cpp, col2im.cu) read one way; errors name the attribute or input.
struct Col2ImGeometry {
  int64_t batch = 0, channels = 0;
  std::vector<int64_t> image, block, dilations, pads_begin, strides;
  std::vector<int64_t> blocks;  // sliding positions per spatial axis; their product is L
  int64_t kernel_size = 1;      // prod(block)
};
Result<Col2ImGeometry> col2im_geometry(const AttributeMap& attrs, const std::vector<int64_t>& input_dims,
                                       const std::vector<int64_t>& image_shape, const std::vector<int64_t>& block_shape);

}  // namespace graft

namespace graft::cpu {

Status conv(ExecContext& ctx);
Status conv_transpose(ExecContext& ctx);
Status batch_normalization(ExecContext& ctx);
Status matmul(ExecContext& ctx);
Status gemm(ExecContext& ctx);
Status max_pool(ExecContext& ctx);
Status average_pool(ExecContext& ctx);
Status global_average_pool(ExecContext& ctx);
Status col2im(ExecContext& ctx);
Status global_max_pool(ExecContext& ctx);

}  // namespace graft::cpu
