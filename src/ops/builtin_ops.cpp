// The explicit table of builtin ops: the ONNX ops, and graft's internal ops in their own domain. Each group
// file appends its ops; nothing registers itself through static initializers, so a static link cannot
// drop an op silently.
#include <algorithm>
#include <mutex>

#include "ops/internal_ops.h"
#include "ops/operator.h"

namespace graft {

const std::vector<OpEntry>& builtin_ops() {
  static const std::vector<OpEntry> table = [] {
    std::vector<OpEntry> t;
    append_elementwise_ops(t);
    append_nn_ops(t);
    append_reduce_ops(t);
    append_shape_ops(t);
    append_resize_pad_ops(t);
    append_extra_ops(t);
    append_sampling_ops(t);
    append_detection_ops(t);
    append_loss_ops(t);
    append_quantize_ops(t);
    append_misc_ops(t);
    append_spectral_ops(t);
    append_integer_ops(t);
    append_tfidf_ops(t);
    append_string_ops(t);
    append_random_ops(t);
    append_selection_ops(t);
    append_recurrent_ops(t);
    append_control_flow_ops(t);
    append_sequence_ops(t);
    const size_t onnx_ops = t.size();
    append_fused_conv_ops(t);
    append_fused_transformer_ops(t);
    append_view_ops(t);
    for (size_t i = onnx_ops; i < t.size(); ++i) t[i].domain = kInternalDomain;
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
  return node.custom_op ? &custom_op_entry() : find_builtin_op(node.domain, node.op_type);
}

bool is_internal(const Node& n, const char* op_type) { return n.domain == kInternalDomain && n.op_type == op_type; }

bool is_internal_op(const std::string& op_type) { return find_builtin_op(kInternalDomain, op_type) != nullptr; }

bool output_shape_from_kernel(const Node& node) {
  const OpEntry* op = find_op_entry(node);
  return op && op->output_shape_from_kernel;
}

}  // namespace graft
