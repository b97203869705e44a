// The reduce axes of the ReduceXxx ops (those of src/ops/reduce_ops.cpp and src/ops/extra_ops.cpp),
// read one way by the schemas, the CPU references and the CUDA ops.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "graft/attribute.h"
#include "graft/status.h"

namespace graft {

// The reduce axes of a ReduceXxx node at `opset`, normalized and sorted, from the `axes` input or
// attribute. An empty result with `noop` true means "copy the input"; empty with `noop` false
// means "reduce every axis". Shared by the schema and the kernel so both read the node one way.
struct ReduceAxes {
  std::vector<int64_t> axes;
  bool noop = false;
  bool known = true;  // false: the axes input exists but its contents are not known yet
};
// `axes_input` is the axes tensor contents (nullopt when absent or unknown); `axes_input_present`
// says whether the node has a second input at all.
Result<ReduceAxes> resolve_reduce_axes(const AttributeMap& attrs, int64_t rank, bool axes_input_present,
                                       const std::optional<std::vector<int64_t>>& axes_input);

}  // namespace graft
