// BitwiseAnd, BitwiseOr, BitwiseXor and BitwiseNot (opset 18): their naive CPU references and
// schemas. The binary three broadcast as numpy does; all four take every integer type, operand
// dtypes equal, and keep it. CUDA: bitwise.cu.
#include "ops/misc/misc.h"

#include <cstdint>
#include <type_traits>
#include <vector>

#include "backends/cpu/broadcast_walker.h"
#include "backends/cpu/element_traits.h"
#include "backends/cpu/kernel_util.h"
#include "backends/cpu/unary_kernel.h"
#include "graft/status.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {

namespace {

// The integer types these ops take (ONNX's T for all four).
const std::vector<DataType>& bitwise_types() {
  static const std::vector<DataType> types = {DataType::kInt8,  DataType::kUInt8,  DataType::kInt16,
                                              DataType::kUInt16, DataType::kInt32, DataType::kUInt32,
                                              DataType::kInt64, DataType::kUInt64};
  return types;
}

}  // namespace

// ---- CPU reference --------------------------------------------------------------------------
// Each element's bits, in the element's own width (computed in the unsigned type of that width, so
// no operand promotes to a signed int).

namespace cpu {

template <BitwiseOp kOp>
Status bitwise_binary(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 2));
  const Tensor& a = *ctx.inputs[0];
  const Tensor& b = *ctx.inputs[1];
  Tensor& y = *ctx.outputs[0];
  if (a.dtype() != b.dtype() || y.dtype() != a.dtype())
    return error(StatusCode::kInvalidModel, "A and B must share a dtype, got ", dtype_name(a.dtype()), " and ",
                 dtype_name(b.dtype()));
  GRAFT_ASSIGN_OR_RETURN(detail::BroadcastWalker w, detail::BroadcastWalker::make(y.dims(), {a.dims(), b.dims()}));
  return visit_integer(a.dtype(), [&](auto tr) -> Status {
    using T = typename decltype(tr)::storage;
    using U = std::make_unsigned_t<T>;
    const T* ap = static_cast<const T*>(a.data());
    const T* bp = static_cast<const T*>(b.data());
    T* yp = static_cast<T*>(y.data());
    for (int64_t i = 0, n = y.numel(); i < n; ++i, w.next()) {
      const U u = static_cast<U>(ap[w.offset(0)]), v = static_cast<U>(bp[w.offset(1)]);
      const U r = kOp == BitwiseOp::kAnd ? U(u & v) : kOp == BitwiseOp::kOr ? U(u | v) : U(u ^ v);
      yp[i] = static_cast<T>(r);
    }
    return Status::ok();
  }, [&](DataType other) { return bad_dtype(ctx, other); });
}

Status bitwise_not(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1));
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  if (y.dtype() != x.dtype() || y.numel() != x.numel())
    return error(StatusCode::kInternal, "BitwiseNot: the output must be the input's dtype and size");
  return visit_integer(x.dtype(), [&](auto tr) -> Status {
    using T = typename decltype(tr)::storage;
    using U = std::make_unsigned_t<T>;
    const T* xp = static_cast<const T*>(x.data());
    T* yp = static_cast<T*>(y.data());
    for (int64_t i = 0, n = x.numel(); i < n; ++i) yp[i] = static_cast<T>(static_cast<U>(~static_cast<U>(xp[i])));
    return Status::ok();
  }, [&](DataType other) { return bad_dtype(ctx, other); });
}

}  // namespace cpu

// ---- schema ---------------------------------------------------------------------------------

namespace {

using namespace infer;

Status infer_bitwise_binary(InferContext& ctx) { return infer_broadcast_binary(ctx, bitwise_types()); }

Status infer_bitwise_not(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, bitwise_types()));
  ctx.set_output(0, ctx.input(0));
  return Status::ok();
}

}  // namespace

void append_bitwise_ops(std::vector<OpEntry>& out) {
  out.push_back(elementwise_binary(OpEntry{"BitwiseAnd", 18, infer_bitwise_binary, cpu::bitwise_binary<BitwiseOp::kAnd>}));
  out.push_back(elementwise_binary(OpEntry{"BitwiseOr", 18, infer_bitwise_binary, cpu::bitwise_binary<BitwiseOp::kOr>}));
  out.push_back(elementwise_binary(OpEntry{"BitwiseXor", 18, infer_bitwise_binary, cpu::bitwise_binary<BitwiseOp::kXor>}));
  out.push_back(elementwise_unary(OpEntry{"BitwiseNot", 18, infer_bitwise_not, cpu::bitwise_not}));
}

}  // namespace graft
