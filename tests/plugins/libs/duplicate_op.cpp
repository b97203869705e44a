// Registers ai.test::TestDuplicate v1. Built twice (test_plugin_dup_a, test_plugin_dup_b): the second
// library to load must be refused with an error naming both libraries.
#include "graft/plugin.h"
#include "test_op.h"

namespace {
graft::Status register_ops(graft::OpRegistry& r, const char* source) {
  return r.add(graft_test::define_scale_op("ai.test", "TestDuplicate"), source);
}
}  // namespace

GRAFT_DEFINE_PLUGIN("duplicate_op", register_ops)
