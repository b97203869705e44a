// The explicit table of builtin ops: the ONNX ops, and graft's internal ops in their own domain. Each group
// file appends its ops; nothing registers itself through static initializers, so a static link cannot
// drop an op silently.
#include <algorithm>
#include <mutex>

#include "ops/internal_ops.h"
#include "ops/operator.h"

namespace graft {

// Every table function of the op folders, src/ops/<family>/: append_<name>_ops appends the rows of
// a family's file, or of one op's file (the ONNX ops, and graft's internal ops wrapped in
// internal_op(): made only by the builder's passes, names starting with "Graft", each with a CPU
// reference built from the builtin kernels it replaces). CMake writes the list from the files'
// definitions (src/CMakeLists.txt), so a new op file or family folder registers itself.
#define GRAFT_OP_TABLE(name) void append_##name##_ops(std::vector<OpEntry>& out);
#include "ops/op_tables.inc"
#undef GRAFT_OP_TABLE

const std::vector<OpEntry>& builtin_ops() {
  static const std::vector<OpEntry> table = [] {
    std::vector<OpEntry> t;
#define GRAFT_OP_TABLE(name) append_##name##_ops(t);
#include "ops/op_tables.inc"
#undef GRAFT_OP_TABLE
    std::sort(t.begin(), t.end(), [](const OpEntry& a, const OpEntry& b) {
      return std::string(a.op_type) < b.op_type;
    });
    return t;
  }();
  return table;
}

const OpEntry* find_builtin_op(const std::string& domain, const std::string& op_type) {
  const bool onnx = domain.empty() || domain == "ai.onnx";
  for (const auto& op : builtin_ops())
    if (op_type == op.op_type && (onnx ? *op.domain == '\0' : domain == op.domain)) return &op;
  return nullptr;
}

const OpEntry* find_op_entry(const Node& node) {
  // The one place that tells a custom-op node from a builtin one (the importer resolved its OpDef).
  return node.custom_op ? &custom_op_entry(*node.custom_op) : find_builtin_op(node.domain, node.op_type);
}

bool is_internal(const Node& n, const char* op_type) { return n.domain == kInternalDomain && n.op_type == op_type; }

bool is_internal_op(const std::string& op_type) { return find_builtin_op(kInternalDomain, op_type) != nullptr; }

bool output_shape_from_kernel(const Node& node) {
  const OpEntry* op = find_op_entry(node);
  return op && op->output_shape_from_kernel;
}

bool is_reshape_view(const Node& node) {
  const OpEntry* op = find_op_entry(node);
  return op && op->reshape_view;
}

std::string unmet_kernel_dtypes(const Node& node, const std::vector<KernelDtypes>& keys, const char* backend) {
  for (const KernelDtypes& key : keys) {
    const Value* v = key.output ? node.output(key.index) : node.input(key.index);
    if (!v) continue;
    if (std::find(key.dtypes.begin(), key.dtypes.end(), v->desc.dtype) != key.dtypes.end()) continue;
    std::string have;
    for (DataType t : key.dtypes) have += (have.empty() ? "" : ", ") + std::string(dtype_name(t));
    return std::string("the ") + backend + " " + node.op_type + " kernels take " + key.value_name() + " ('" + v->name + "') as " + have + ", not " + dtype_name(v->desc.dtype);
  }
  return {};
}

}  // namespace graft
