// Small helpers shared by the CPU reference kernels. The readers the CUDA ops share with them
// (attr_error, ints_to_string, axis_view, int_input) are in src/ops/attr_util.h.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/index_math.h"
#include "graft/status.h"
#include "ops/attr_util.h"
#include "ops/operator.h"

namespace graft::cpu {

// The node's attributes (an empty map when the kernel runs without any).
inline const AttributeMap& attrs_of(const ExecContext& ctx) {
  static const AttributeMap kEmpty;
  return ctx.attrs ? *ctx.attrs : kEmpty;
}

// Input i, or nullptr when it is omitted (an optional input past the end or left empty).
inline const Tensor* input_or_null(const ExecContext& ctx, size_t i) {
  return i < ctx.inputs.size() ? ctx.inputs[i] : nullptr;
}

// Output i, or nullptr when the node leaves it out (an optional output past the end or unnamed).
inline Tensor* output_or_null(const ExecContext& ctx, size_t i) {
  return i < ctx.outputs.size() ? ctx.outputs[i] : nullptr;
}

// A tensor as doubles, element by element, and back (each value rounded once into t's dtype).
std::vector<double> load_doubles(const Tensor& t);
void store_doubles(Tensor& t, const std::vector<double>& v);
// Error unless `t` is a host tensor of a floating dtype (float16/bfloat16/float32/float64).
Status require_float_tensor(const Tensor* t, const char* what);
// Error unless `t` is a host tensor of a floating or integer dtype.
Status require_float_or_int(const Tensor* t, const char* what);


}  // namespace graft::cpu
