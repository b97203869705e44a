// See attr_util.h.
#include "ops/attr_util.h"

namespace graft {

Result<std::vector<int64_t>> int_input(const ExecContext& ctx, size_t i, const char* what) {
  const Tensor* t = i < ctx.inputs.size() ? ctx.inputs[i] : nullptr;
  if (!t) return error(StatusCode::kInvalidModel, "input ", static_cast<int64_t>(i), " (", what, ") is missing");
  if (!dtype_is_integer(t->dtype()))
    return error(StatusCode::kInvalidModel, "input ", static_cast<int64_t>(i), " (", what,
                 ") must be an integer tensor, got ", dtype_name(t->dtype()));
  return t->to_int64_vector();
}

}  // namespace graft
