// Graph IR: values (tensors) and nodes (ops), owned by a Graph.
//
// The importer builds it from ONNX; passes (shape inference, constant folding, dead-node
// elimination, Conv+BatchNormalization folding) rewrite it; the builder freezes it into an Engine
// and the plan format serializes it.
#pragma once

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "graft/attribute.h"
#include "graft/op.h"
#include "graft/status.h"
#include "graft/tensor.h"

namespace graft {

struct Node;

// Where a float constant came from when constant folding made it out of DequantizeLinear of 8-bit
// integers with zero point 0 (an explicitly quantized model's weights): those integers and their
// float32 scales, one (per tensor) or one per index of `axis`. The float constant is
// DequantizeLinear(q, scale) to the bit; a pass that derives a new constant from such a one (fold_batchnorm
// scaling the filters per output channel) gives the new value a record only where its values are
// q * the record's scales up to the float rounding of that derivation. What an INT8 kernel runs on
// in place of the float values; nothing else reads it.
struct QuantizedOrigin {
  Tensor q;      // int8 or uint8, the constant's shape
  Tensor scale;  // float32: one element, or q.dims()[axis] of them (negative after a BatchNormalization with a negative scale)
  int64_t axis = 0;
  bool per_tensor() const { return scale.numel() == 1; }
};

struct Value {
  std::string name;
  TensorDesc desc;                 // dtype + (symbolic) shape, filled by the importer/shape inference
  Node* producer = nullptr;        // nullptr for graph inputs and constants
  std::optional<Tensor> constant;  // initializer, Constant output, or folded value (host)
  // Known contents of a small integer tensor whose elements may be symbolic (e.g. the output of
  // Shape on a tensor with a dynamic batch). Lets Shape->Gather->Concat->Reshape resolve at build time.
  std::optional<std::vector<Dim>> sym_value;
  bool is_graph_input = false;
  bool is_graph_output = false;
  // In a subgraph (If/Loop/Scan body): a value of an enclosing graph, read by name (Graph::captures).
  bool is_captured = false;
  // Set on some float constants (QuantizedOrigin above); shared, as the tensors are.
  std::shared_ptr<const QuantizedOrigin> quantized;
  // A vector constant (rank 0 or 1: a bias, a scale) the float16 pass rounded from float32: the
  // float32 values. The int8 convs pass gives GraftConvInt8, whose epilogue is float32, the bias the
  // model had: float16's rounding of it (2^-11 relative) would move values before the next
  // quantizer across its step boundaries. Nothing else reads it; a pass that changes `constant`
  // in place must reset it (none between the float16 pass and the int8 convs pass does).
  std::shared_ptr<const Tensor> float32_origin;
};

class Graph;

struct Node {
  std::string name;    // unique within the graph (the importer invents one if the model has none)
  std::string op_type;
  std::string domain;  // "" for the default ONNX domain
  int opset = 0;       // opset version of the node's domain in the model
  AttributeMap attrs;
  std::vector<Value*> inputs;   // nullptr for an omitted optional input ("" in ONNX)
  std::vector<Value*> outputs;  // nullptr for an omitted optional output
  // Set for custom (registered SDK) ops during import.
  std::shared_ptr<const OpDef> custom_op;
  // Control flow (If, Loop, Scan): graph-valued attributes by attribute name. The last
  // `implicit_inputs` entries of `inputs` are the enclosing-scope values the subgraphs read; every
  // subgraph's `captures` lists its stand-ins for them in the same order, so binding is positional
  // and survives passes that rewire or rename the outer values.
  std::map<std::string, std::shared_ptr<Graph>> subgraphs;
  size_t implicit_inputs = 0;
  // The precision the user holds this layer to (BuilderConfig::layer_precisions): kFloat32 keeps it
  // out of the float16 pass, kFloat16 makes that pass convert it or fail; kUndefined leaves the
  // choice to the pass. Set on the imported nodes before any pass; a pass that makes one node of
  // several gives it theirs (inherit_precision, graph/pass_util.h).
  DataType precision = DataType::kUndefined;

  bool is_custom() const { return custom_op != nullptr; }
  size_t explicit_inputs() const { return inputs.size() - std::min(implicit_inputs, inputs.size()); }
  Value* input(size_t i) const { return i < inputs.size() ? inputs[i] : nullptr; }
  Value* output(size_t i) const { return i < outputs.size() ? outputs[i] : nullptr; }
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Values are found by name; a name is created once.
  Value* add_value(const std::string& name);
  Value* find_value(const std::string& name) const;
  // Creates a fresh value with a unique name derived from `hint`.
  Value* new_value(const std::string& hint);
  // A fresh value holding the constant `t` (dtype and static shape from the tensor).
  Value* new_constant(const std::string& hint, Tensor t);
  Node* add_node(std::string name, std::string op_type, std::string domain = "");
  // Removes nodes for which `dead` is true (caller must have rewired their consumers).
  void remove_nodes_if(const std::function<bool(const Node*)>& dead);
  // Drop values no node or graph I/O references.
  void prune_values();

  std::vector<std::unique_ptr<Node>>& nodes() { return nodes_; }
  const std::vector<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  std::vector<Value*>& inputs() { return inputs_; }
  const std::vector<Value*>& inputs() const { return inputs_; }
  std::vector<Value*>& outputs() { return outputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  const std::map<std::string, std::unique_ptr<Value>>& values() const { return values_; }

  // Consumers of each value, recomputed on demand.
  std::map<const Value*, std::vector<Node*>> consumers() const;
  // Reorders nodes_ topologically; error naming the nodes on a cycle or an input nothing produces.
  Status topological_sort();

  std::map<std::string, int64_t> opset_imports;  // domain -> version ("" = default)
  std::string name;
  std::string source_path;  // file the graph came from, for error messages
  int64_t ir_version = 0;
  std::string producer_name;
  // For a subgraph: its stand-ins (is_captured) for the owning node's implicit inputs, in order.
  std::vector<Value*> captures;

 private:
  std::map<std::string, std::unique_ptr<Value>> values_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<Value*> inputs_, outputs_;
  int64_t fresh_counter_ = 0;
};

// Unique names for the nodes a pass adds: `base`, else `base_1`, `base_2`, ... (names taken by the
// graph's nodes when the namer was made, or handed out by it since, are skipped).
class NodeNamer {
 public:
  explicit NodeNamer(const Graph& g);
  std::string operator()(const std::string& base);

 private:
  std::set<std::string> names_;
};

// The dims of `v`'s shape when every dimension is static; false when it has no shape or a
// symbolic dimension.
bool static_dims_of(const Value* v, std::vector<int64_t>* dims);

// Whether the node makes or reads a sequence or optional value in its own inputs and outputs
// (subgraphs not looked into). Such a node keeps its declared element types (the FP16 pass) and
// runs on the CPU reference in a CUDA engine, which keeps containers on the host.
bool touches_containers(const Node& n);

// A Clip node's bounds when both are known at build time: attributes before opset 11, scalar float
// constant inputs since; an absent bound is infinite. False when a bound is computed at run time
// or not a float scalar. (NaN and crossed bounds are returned as they are.)
bool clip_bounds(const Node& clip, float* lo, float* hi);

// Opset of the default ONNX domain, for nodes a pass adds (17 when the graph imports none).
int default_domain_opset(const Graph& g);

}  // namespace graft
