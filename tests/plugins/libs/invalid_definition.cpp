// A plugin whose op definition is incomplete (no CPU kernel): registration validates it.
#include "graft/plugin.h"

namespace {
graft::Status register_ops(graft::OpRegistry& r, const char* source) {
  graft::OpDef def("NoKernelOp");
  def.domain("ai.test").input("x").output("y").shape_fn([](graft::ShapeContext& c) {
    c.set_output(0, c.input_shape(0));
    return graft::Status::ok();
  });
  return r.add(std::move(def), source);
}
}  // namespace

GRAFT_DEFINE_PLUGIN("invalid_definition", register_ops)
