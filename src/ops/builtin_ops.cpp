// The explicit table of builtin ops: the ONNX ops, and graft's internal ops in their own domain. Each group
// file appends its ops; nothing registers itself through static initializers, so a static link cannot
// drop an op silently.
#include <algorithm>
#include <mutex>

#include "ops/internal_ops.h"
#include "ops/operator.h"

namespace graft {

// The families, each defined in its own file or folder (src/ops/<family>_ops.cpp, src/ops/<family>/):
// a new family is its declaration here and its call in the table below.
void append_elementwise_ops(std::vector<OpEntry>& out);   // unary, binary, Where, Cast, Clip...
void append_nn_ops(std::vector<OpEntry>& out);            // Conv, pools, BN, MatMul, Gemm
void append_reduce_norm_ops(std::vector<OpEntry>& out);   // ReduceMean/Sum/Max..., Softmax, LogSoftmax, LayerNormalization
void append_shape_ops(std::vector<OpEntry>& out);         // Reshape, Transpose, Concat, ..., Shape, Range, Tile
void append_selection_ops(std::vector<OpEntry>& out);      // ArgMax, ArgMin, Hardmax, TopK
void append_gather_scatter_ops(std::vector<OpEntry>& out);  // GatherElements, ScatterElements, GatherND, ScatterND
void append_resize_pad_ops(std::vector<OpEntry>& out);    // Resize, Pad
void append_sampling_ops(std::vector<OpEntry>& out);      // RoiAlign, GridSample
void append_data_dependent_ops(std::vector<OpEntry>& out);  // NonZero, NonMaxSuppression, Unique (data-dependent output shapes)
void append_loss_ops(std::vector<OpEntry>& out);          // NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss
void append_quantize_ops(std::vector<OpEntry>& out);      // QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear
void append_misc_ops(std::vector<OpEntry>& out);          // InstanceNormalization, LRN, MVN, EyeLike, BitShift, ReverseSequence, windows, Det
void append_spectral_ops(std::vector<OpEntry>& out);      // DFT, STFT, MelWeightMatrix
void append_lp_norm_ops(std::vector<OpEntry>& out);       // LpNormalization, LpPool, GlobalLpPool
void append_roi_pool_ops(std::vector<OpEntry>& out);      // MaxRoiPool
void append_integer_ops(std::vector<OpEntry>& out);       // MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv
void append_tfidf_ops(std::vector<OpEntry>& out);         // TfIdfVectorizer
void append_strings_ops(std::vector<OpEntry>& out);       // StringNormalizer (string tensors, CPU only)
void append_random_ops(std::vector<OpEntry>& out);        // RandomUniform/Normal(Like), Bernoulli, Multinomial
void append_unpool_ops(std::vector<OpEntry>& out);        // MaxUnpool
void append_recurrent_ops(std::vector<OpEntry>& out);     // RNN, LSTM, GRU
void append_control_flow_ops(std::vector<OpEntry>& out);  // If, Loop, Scan (subgraphs: Node::subgraphs)
void append_sequence_ops(std::vector<OpEntry>& out);      // Sequence*, SplitToSequence, ConcatFromSequence, SequenceMap, Optional*
// graft's internal ops, made only by the builder's fusion and layout passes (names start with
// "Graft"); each has a CPU reference built from the builtin kernels it replaces.
void append_fused_conv_ops(std::vector<OpEntry>& out);         // GraftConv (+bias, residual, activation; NCHW/NHWC), GraftPool (NHWC), GraftChannelsLast
void append_transformer_ops(std::vector<OpEntry>& out);  // GEMM epilogues, elementwise chains, attention
void append_views_ops(std::vector<OpEntry>& out);               // GraftStridedCopy (composed data-movement chains)
void append_quantize_internal_ops(std::vector<OpEntry>& out);  // GraftQuantizeDequantize (a folded QuantizeLinear -> DequantizeLinear pair)

const std::vector<OpEntry>& builtin_ops() {
  static const std::vector<OpEntry> table = [] {
    std::vector<OpEntry> t;
    append_elementwise_ops(t);
    append_nn_ops(t);
    append_reduce_norm_ops(t);
    append_shape_ops(t);
    append_selection_ops(t);
    append_gather_scatter_ops(t);
    append_resize_pad_ops(t);
    append_sampling_ops(t);
    append_data_dependent_ops(t);
    append_loss_ops(t);
    append_quantize_ops(t);
    append_misc_ops(t);
    append_spectral_ops(t);
    append_lp_norm_ops(t);
    append_roi_pool_ops(t);
    append_integer_ops(t);
    append_tfidf_ops(t);
    append_strings_ops(t);
    append_random_ops(t);
    append_unpool_ops(t);
    append_recurrent_ops(t);
    append_control_flow_ops(t);
    append_sequence_ops(t);
    const size_t onnx_ops = t.size();
    append_fused_conv_ops(t);
    append_transformer_ops(t);
    append_views_ops(t);
    append_quantize_internal_ops(t);
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
