#include "ops/control_flow_attrs.h"

#include <string>

namespace graft {

Result<ScanLayout> scan_layout(const Node& node) {
  auto fail = [&](const char* attr, auto&&... parts) {
    return error(StatusCode::kInvalidModel, parts...).with_attribute(attr).with_node(node.name, node.op_type);
  };
  ScanLayout lay;
  auto m = node.attrs.require_int("num_scan_inputs");
  if (!m) return std::move(m).take_status().with_attribute("num_scan_inputs").with_node(node.name, node.op_type);
  const size_t explicit_in = node.explicit_inputs();
  if (*m < 1 || static_cast<uint64_t>(*m) > explicit_in)
    return fail("num_scan_inputs", "num_scan_inputs is ", *m, " but the node has ",
                static_cast<uint64_t>(explicit_in), " inputs");
  lay.m = static_cast<size_t>(*m);
  lay.n = explicit_in - lay.m;
  if (node.outputs.size() < lay.n)
    return fail("num_scan_inputs", "the node has ", static_cast<uint64_t>(node.outputs.size()),
                " outputs, fewer than its ", static_cast<uint64_t>(lay.n), " state inputs");
  lay.k = node.outputs.size() - lay.n;
  auto list = [&](const char* attr, size_t count, bool direction, std::vector<int64_t>* out) -> Status {
    auto v = node.attrs.get_ints(attr, std::vector<int64_t>(count, 0));
    if (!v) return std::move(v).take_status().with_attribute(attr).with_node(node.name, node.op_type);
    if (v->size() != count)
      return fail(attr, attr, " has ", static_cast<uint64_t>(v->size()), " entries; the node needs ",
                  static_cast<uint64_t>(count));
    for (int64_t x : *v)
      if (direction && x != 0 && x != 1) return fail(attr, attr, " holds ", x, "; a direction is 0 or 1");
    *out = std::move(v).value();
    return Status::ok();
  };
  GRAFT_RETURN_IF_ERROR(list("scan_input_axes", lay.m, false, &lay.in_axes));
  GRAFT_RETURN_IF_ERROR(list("scan_input_directions", lay.m, true, &lay.in_reverse));
  GRAFT_RETURN_IF_ERROR(list("scan_output_axes", lay.k, false, &lay.out_axes));
  GRAFT_RETURN_IF_ERROR(list("scan_output_directions", lay.k, true, &lay.out_reverse));
  return lay;
}

}  // namespace graft
