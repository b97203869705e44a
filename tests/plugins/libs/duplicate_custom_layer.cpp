// Tries to register CustomLayer v1 in ai.onnx.contrib, which graft itself already provides.
#include "graft/plugin.h"
#include "test_op.h"

namespace {
graft::Status register_ops(graft::OpRegistry& r, const char* source) {
  return r.add(graft_test::define_scale_op("ai.onnx.contrib", "CustomLayer"), source);
}
}  // namespace

GRAFT_DEFINE_PLUGIN("duplicate_custom_layer", register_ops)
