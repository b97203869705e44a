// The quantize family: QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear. Definitions and
// CPU references: quantize.cpp; CUDA kernels and ops: quantize.cu. This header holds the
// scale/zero-point layout and the block_size check, read one way by the schemas, the CPU references
// and the CUDA ops. (The integer and quantized-linear algebra, MatMulInteger to QLinearConv, is the
// integer family: src/ops/integer.)
#pragma once

#include <cstdint>
#include <vector>

#include "graft/attribute.h"
#include "graft/status.h"

namespace graft {

// The scale/zero-point layout of a (De)QuantizeLinear node for input shape `x_dims`: per-tensor
// (channels == 1: a scalar or one-element scale) or per-axis along `axis` (a 1-D scale with one
// entry per index of that axis). The errors name the inputs or the axis attribute.
struct QuantLayout {
  int64_t axis = 0;      // normalized; meaningful when channels > 1
  int64_t channels = 1;  // scale/zero-point entries
  int64_t inner = 1;     // elements after `axis` (the channel of flat index i is (i / inner) % channels)
};
Result<QuantLayout> quant_layout(const AttributeMap& attrs, const std::vector<int64_t>& x_dims,
                                 const std::vector<int64_t>& scale_dims, const std::vector<int64_t>* zp_dims);

// block_size (opset 21) must be absent or 0: blocked quantization is not supported.
Status check_no_block_size(const AttributeMap& attrs);

}  // namespace graft
