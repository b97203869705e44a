// NonZero's definition and CPU reference (CUDA: non_zero.cu). Its count dimension is a fresh symbol
// at build time and at run time alike; the CPU kernel allocates its output once it has counted.
#include "ops/data_dependent/data_dependent.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cpu/element_traits.h"
#include "backends/cpu/kernel_util.h"
#include "backends/cpu/unary_kernel.h"
#include "core/checked_math.h"
#include "graph/graph.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {

// ---- CPU reference --------------------------------------------------------------------------
// The kernel allocates its outputs with allocate_output once it has counted.

namespace cpu {

Status non_zero(ExecContext& ctx) {
  const Tensor* x = input_or_null(ctx, 0);
  if (!x || ctx.outputs.empty() || !ctx.outputs[0])
    return error(StatusCode::kInternal, "NonZero kernel called without its input or output");
  const int64_t n = x->numel();
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < n; ++i)
    if (x->get(i) != 0.0) hits.push_back(i);  // NaN is nonzero; -0.0 is zero
  const int64_t rank = x->rank();
  const int64_t rows = std::max<int64_t>(rank, 1);
  const int64_t count = static_cast<int64_t>(hits.size());
  GRAFT_ASSIGN_OR_RETURN(Tensor * y, allocate_output(ctx, 0, DataType::kInt64, {rows, count}));
  int64_t* out = y->data_as<int64_t>();
  if (rank == 0) {
    for (int64_t k = 0; k < count; ++k) out[k] = 0;
    return Status::ok();
  }
  const std::vector<int64_t>& dims = x->dims();
  for (int64_t k = 0; k < count; ++k) {
    int64_t rest = hits[static_cast<size_t>(k)];
    for (int64_t a = rank - 1; a >= 0; --a) {
      const int64_t d = dims[static_cast<size_t>(a)];
      out[a * count + k] = rest % d;  // d > 0: an element exists
      rest /= d;
    }
  }
  return Status::ok();
}

}  // namespace cpu

// ---- schema ---------------------------------------------------------------------------------

namespace {

using namespace infer;

// NonZero (opset 9/13): int64 [rank, count], the indices of the nonzero elements in row-major order.
// A scalar is read as a one-element vector (NumPy and ONNX Runtime do the same): [1, count].
Status infer_non_zero(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kAllTypes));
  const TensorDesc& x = ctx.input(0);
  if (!x.shape) {
    ctx.set_output(0, TensorDesc(kI64, Shape{ctx.unknown_dim(), ctx.unknown_dim()}));
    return Status::ok();
  }
  const int64_t rows = std::max<int64_t>(x.rank(), 1);
  // No elements at all: the count is 0 whatever the data.
  bool empty = false;
  for (const Dim& d : *x.shape) empty = empty || (d.is_const() && d.value() == 0);
  ctx.set_output(0, TensorDesc(kI64, Shape{Dim(rows), empty ? Dim(0) : ctx.unknown_dim()}));
  return Status::ok();
}

}  // namespace

void append_non_zero_ops(std::vector<OpEntry>& out) {
  out.push_back(keeps_float32({"NonZero", 9, infer_non_zero, cpu::non_zero, /*output_shape_from_kernel=*/true}));
}

}  // namespace graft
