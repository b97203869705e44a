// See reduce_axes.h.
#include "ops/reduce_axes.h"

#include <algorithm>

#include "ops/operator.h"

namespace graft {

Result<ReduceAxes> resolve_reduce_axes(const AttributeMap& attrs, int64_t rank, bool axes_input_present,
                                       const std::optional<std::vector<int64_t>>& axes_input) {
  ReduceAxes r;
  auto noop = attrs.get_int("noop_with_empty_axes", 0);
  if (!noop) return Status(noop.status()).with_attribute("noop_with_empty_axes");
  std::vector<int64_t> raw;
  if (axes_input_present) {
    if (!axes_input) {
      r.known = false;
      return r;
    }
    raw = *axes_input;
  } else {
    auto a = attrs.get_ints("axes", {});
    if (!a) return Status(a.status()).with_attribute("axes");
    raw = a.value();
  }
  for (int64_t ax : raw) {
    auto n = normalize_axis(ax, rank);
    if (!n) return Status(n.status()).with_attribute("axes");
    if (std::find(r.axes.begin(), r.axes.end(), n.value()) != r.axes.end())
      return Status(error(StatusCode::kInvalidModel, "axis ", ax, " appears more than once")).with_attribute("axes");
    r.axes.push_back(n.value());
  }
  std::sort(r.axes.begin(), r.axes.end());
  r.noop = r.axes.empty() && noop.value() != 0;
  return r;
}

}  // namespace graft
