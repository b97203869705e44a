// BitShift: its direction reader (misc.h), naive CPU reference and schema. CUDA: bit_shift.cu.
#include "ops/misc/misc.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backends/cpu/element_traits.h"
#include "backends/cpu/broadcast_walker.h"
#include "backends/cpu/kernel_util.h"
#include "backends/cpu/unary_kernel.h"
#include "core/checked_math.h"
#include "graft/status.h"
#include "ops/attr_util.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {

Result<bool> bit_shift_left(const AttributeMap& attrs) {
  if (!attrs.has("direction")) return attr_error("direction", "is required (LEFT or RIGHT)");
  auto d = attrs.get_string("direction", "");
  if (!d) return Status(d.status()).with_attribute("direction");
  if (d.value() != "LEFT" && d.value() != "RIGHT")
    return attr_error("direction", "must be LEFT or RIGHT, got '", d.value(), "'");
  return d.value() == "LEFT";
}

// ---- CPU reference --------------------------------------------------------------------------
// Unsigned integers shifted in their own width.

namespace cpu {

// A shift by the bit width or more gives 0.
Status bit_shift(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 2));
  const Tensor& x = *ctx.inputs[0];
  const Tensor& s = *ctx.inputs[1];
  Tensor& y = *ctx.outputs[0];
  GRAFT_ASSIGN_OR_RETURN(bool left, bit_shift_left(attrs_of(ctx)));
  if (x.dtype() != s.dtype() || y.dtype() != x.dtype())
    return error(StatusCode::kInvalidModel, "BitShift: X and Y must share a dtype, got ", dtype_name(x.dtype()), " and ",
                 dtype_name(s.dtype()));
  GRAFT_ASSIGN_OR_RETURN(detail::BroadcastWalker w, detail::BroadcastWalker::make(y.dims(), {x.dims(), s.dims()}));
  auto shift = [&](auto zero) -> Status {
    using T = decltype(zero);
    constexpr uint64_t kBits = sizeof(T) * 8;
    const T* xp = static_cast<const T*>(x.data());
    const T* sp = static_cast<const T*>(s.data());
    T* yp = static_cast<T*>(y.data());
    for (int64_t i = 0, n = y.numel(); i < n; ++i, w.next()) {
      // Widened to 64 bits so that narrow types do not promote to signed int; shifting by the
      // width or more is undefined in C++, and ONNX's answer is that every bit is shifted out.
      const uint64_t v = xp[w.offset(0)], by = sp[w.offset(1)];
      yp[i] = by >= kBits ? T{0} : static_cast<T>(left ? (v << by) : (v >> by));
    }
    return Status::ok();
  };
  switch (x.dtype()) {
    case DataType::kUInt8: return shift(uint8_t{0});
    case DataType::kUInt16: return shift(uint16_t{0});
    case DataType::kUInt32: return shift(uint32_t{0});
    case DataType::kUInt64: return shift(uint64_t{0});
    default: return bad_dtype(ctx, x.dtype());
  }
}

}  // namespace cpu

// ---- schema ---------------------------------------------------------------------------------

namespace {

using namespace infer;

Status infer_bit_shift(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(bit_shift_left(ctx.attrs()).status());
  return infer_broadcast_binary(ctx, kUnsignedIntTypes);
}

}  // namespace

void append_bit_shift_ops(std::vector<OpEntry>& out) {
  out.push_back(OpEntry{"BitShift", 11, infer_bit_shift, cpu::bit_shift});
}

}  // namespace graft
