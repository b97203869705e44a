// QuantizeLinear -> DequantizeLinear pairs over the same scalar scale and zero point become one
// GraftQuantizeDequantize (src/ops/quantize). An explicitly quantized model (the Q/DQ form
// TensorRT's INT8 flow and PyTorch's fake quantizers export) puts such a pair before every
// quantized layer's input. Run as two layers the pair writes and reads the 8-bit tensor, and
// neither op is per element to the NHWC pass, so an NHWC float16 engine left each pair in NCHW
// between two transposes: ResNet-50 with a pair before each of its 54 layers ran at 5.6 ms at batch
// 32 on an H100 against 1.2 ms without them (bench/int8_qdq.py, 27149ee). The fused op computes the
// pair's own steps (float32 division and rounding, double products), so its result equals the
// pair's to the bit, keeps its scale float32 in a float16 engine (read on the host), and an NHWC
// region flows through it. Folded pairs that quantize one value the same way are merged into one.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "graph/pass_util.h"
#include "graph/passes.h"
#include "ops/internal_ops.h"

namespace graft {

namespace {

// The node's block_size is absent or 0 (blocked quantization is not a per-tensor pair).
bool unblocked(const Node& n) {
  auto bs = n.attrs.get_int("block_size", 0);
  return bs.is_ok() && *bs == 0;
}

// Whether `dq` dequantizes exactly what `q` quantized: both scalar constants, the same scale value
// and dtype, the same zero point (an absent one is 0), x of the scale's float dtype and an 8-bit
// integer in between.
bool same_quantization(const Node& q, const Node& dq) {
  if (q.inputs.size() < 2 || dq.inputs.size() < 2 || q.outputs.size() != 1 || dq.outputs.size() != 1) return false;
  if (!unblocked(q) || !unblocked(dq)) return false;
  const Value* x = q.input(0);
  const Value* mid = q.outputs[0];
  const Tensor* qs = scalar_constant(q.input(1));
  const Tensor* ds = scalar_constant(dq.input(1));
  if (!x || !mid || !dq.outputs[0] || !qs || !ds) return false;
  const DataType t = mid->desc.dtype;
  if (t != DataType::kUInt8 && t != DataType::kInt8) return false;
  if (!dtype_is_float(x->desc.dtype) || qs->dtype() != x->desc.dtype || ds->dtype() != qs->dtype()) return false;
  if (dq.outputs[0]->desc.dtype != x->desc.dtype) return false;
  if (qs->get(0) != ds->get(0) || !(qs->get(0) > 0.0)) return false;  // NaN and non-positive scales stay pairs
  const Value* qz = q.input(2);
  const Value* dz = dq.input(2);
  const Tensor* qzt = qz ? scalar_constant(qz) : nullptr;
  const Tensor* dzt = dz ? scalar_constant(dz) : nullptr;
  if ((qz && (!qzt || qzt->dtype() != t)) || (dz && (!dzt || dzt->dtype() != t))) return false;
  return (qzt ? qzt->get(0) : 0.0) == (dzt ? dzt->get(0) : 0.0);
}

// Two scalar operands that hold the same value in the same dtype (or are one value).
bool same_scalar(const Value* a, const Value* b) {
  if (a == b) return true;
  const Tensor* x = scalar_constant(a);
  const Tensor* y = scalar_constant(b);
  return x && y && x->dtype() == y->dtype() && x->get(0) == y->get(0);
}

// Folded pairs over one value with one scale and zero point compute one tensor. A value that
// several quantized layers read gets a fake quantizer per layer over one calibrated range (ResNet's
// block input before conv1 and the downsample): each a pass over the activation. The first is
// kept and the others' readers read it. Returns how many went.
int merge_equal_quantize_dequantize(Graph& g, std::set<const Node*>& dead) {
  std::vector<Node*> kept;
  int merged = 0;
  for (const auto& up : g.nodes()) {
    Node* n = up.get();
    if (!is_internal(*n, "GraftQuantizeDequantize") || n->inputs.size() != 3 || n->outputs.size() != 1 ||
        !n->outputs[0] || !n->inputs[0])
      continue;
    auto same = std::find_if(kept.begin(), kept.end(), [&](const Node* k) {
      return k->inputs[0] == n->inputs[0] && same_scalar(k->input(1), n->input(1)) &&
             same_scalar(k->input(2), n->input(2)) && k->outputs[0]->desc.dtype == n->outputs[0]->desc.dtype &&
             k->precision == n->precision;
    });
    if (same == kept.end()) {
      kept.push_back(n);
      continue;
    }
    if (n->outputs[0]->is_graph_output) continue;  // its name must stay
    // The kept node comes first in the graph's order, so before every reader of this one.
    replace_reads(g, n->outputs[0], (*same)->outputs[0]);
    dead.insert(n);
    ++merged;
  }
  return merged;
}

}  // namespace

Result<int> fold_quantize_dequantize_pairs(Graph& g) {
  Consumers consumers = g.consumers();
  std::set<const Node*> dead;
  int folded = 0;
  std::vector<Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  for (Node* dq : nodes) {
    if (!is_onnx(*dq, "DequantizeLinear") || !dq->input(0)) continue;
    Node* q = dq->inputs[0]->producer;
    if (!is_onnx_op(q, "QuantizeLinear") || !same_quantization(*q, *dq)) continue;
    Value* mid = q->outputs[0];
    // The zero point as the fused op reads it: the pair's, or a 0 of the integer type.
    Value* zp = q->input(2);
    if (!zp) {
      Tensor zero = Tensor::empty(mid->desc.dtype, {});
      zero.set(0, 0.0);
      zp = g.new_constant(q->name + "_zero_point", std::move(zero));
    }
    dq->inputs = {q->inputs[0], q->inputs[1], zp};
    dq->op_type = "GraftQuantizeDequantize";
    dq->domain = kInternalDomain;
    dq->attrs = AttributeMap();
    inherit_precision(dq, {q});
    ++folded;
    // The QuantizeLinear goes once nothing else reads its 8-bit output.
    auto& readers = consumers[mid];
    readers.erase(std::remove(readers.begin(), readers.end(), dq), readers.end());
    if (readers.empty() && !mid->is_graph_output) dead.insert(q);
  }
  if (!folded) return 0;
  merge_equal_quantize_dequantize(g, dead);
  GRAFT_RETURN_IF_ERROR(remove_replaced_nodes(g, dead));
  return folded;
}

}  // namespace graft
