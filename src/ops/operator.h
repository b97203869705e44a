// The engine's view of an op (builtin ONNX or custom SDK op): a schema that infers output types and
// (symbolic) shapes, kept apart from the kernels that backends provide (src/backends/*).
//
// The same infer function runs twice: at build time over symbolic shapes (values known only for
// constants and symbolic shape tensors), and at run time over concrete shapes with every input value
// on the host available, so data-dependent shapes (Reshape, Range, Tile...) resolve there too.
#pragma once

#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "graft/attribute.h"
#include "graft/status.h"
#include "graft/tensor.h"
#include "graph/graph.h"
#include "ops/elementwise_opcode.h"
#include "ops/internal_ops.h"

namespace graft {

class InferContext {
 public:
  struct InputInfo {
    const TensorDesc* desc = nullptr;              // nullptr: omitted optional input
    const Tensor* value = nullptr;                 // known host contents, or nullptr
    const std::vector<Dim>* sym_value = nullptr;   // known symbolic int contents, or nullptr
  };

  InferContext(const Node& node, std::vector<InputInfo> inputs, int opset);

  const Node& node() const { return node_; }
  const AttributeMap& attrs() const { return node_.attrs; }
  int opset() const { return opset_; }
  size_t num_inputs() const { return inputs_.size(); }
  size_t num_outputs() const { return outputs_.size(); }
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i].desc != nullptr; }
  const TensorDesc& input(size_t i) const { return *inputs_[i].desc; }
  const Tensor* input_value(size_t i) const { return i < inputs_.size() ? inputs_[i].value : nullptr; }
  const std::vector<Dim>* input_sym_value(size_t i) const {
    return i < inputs_.size() ? inputs_[i].sym_value : nullptr;
  }
  // Integer contents as Dims if known either way (constant or symbolic), else nullopt.
  std::optional<std::vector<Dim>> input_dims_value(size_t i) const;
  // Input rank and static shape helpers; errors name the input.
  Result<Shape> input_shape(size_t i) const;  // error if rank unknown

  void set_output(size_t i, TensorDesc desc);
  void set_output_sym_value(size_t i, std::vector<Dim> v);
  // A fresh symbol for a dimension that cannot be known at build time.
  Dim unknown_dim();

  const std::vector<TensorDesc>& outputs() const { return outputs_; }
  std::vector<std::optional<std::vector<Dim>>>& output_sym_values() { return out_sym_; }

  // An error of kind `code` about this node (name and op type added by the caller).
  template <typename... Args>
  Status fail(Args&&... parts) const { return error(StatusCode::kInvalidModel, std::forward<Args>(parts)...); }

 private:
  const Node& node_;
  std::vector<InputInfo> inputs_;
  int opset_;
  std::vector<TensorDesc> outputs_;
  std::vector<std::optional<std::vector<Dim>>> out_sym_;
};

// Kernel context for builtin ops on a backend. Outputs are allocated by the runtime to the shapes
// inference produced (for the concrete input shapes), except the outputs of an op whose shape comes
// from its kernel (OpEntry::output_shape_from_kernel): the runtime leaves an output whose inferred
// shape is not static undefined, and the kernel allocates it with allocate_output.
struct ExecContext {
  const Node* node = nullptr;
  const AttributeMap* attrs = nullptr;
  int opset = 0;
  std::vector<const Tensor*> inputs;  // nullptr: omitted optional input
  std::vector<Tensor*> outputs;       // nullptr: omitted optional output
  void* stream = nullptr;             // CUDA stream for GPU backends
};

using InferFn = Status (*)(InferContext&);
using CpuKernelFn = Status (*)(ExecContext&);

// Output i of a kernel whose output shape is data-dependent, allocated (and poisoned) now that the
// kernel knows its dims. An output the runtime already allocated (its shape was static after
// inference) is returned as it is when dtype and dims agree; otherwise kInternal naming the output.
// A failed allocation is kOutOfMemory naming the output.
Result<Tensor*> allocate_output(ExecContext& ctx, size_t i, DataType dtype, std::vector<int64_t> dims);

// Output i of a kernel that returns a sequence or optional value (built with Tensor::sequence or
// Tensor::optional), stored as it is; or a tensor it already holds whole (a sequence item, a
// subgraph's result), copied into the output (allocated as allocate_output does, with its checks).
// Nothing happens for an output the node omits; the executor checks kind and dtype against
// inference afterwards.
Status set_output_value(ExecContext& ctx, size_t i, Tensor value);

// What the float16 pass (src/graph/precision.cpp) may do with an op.
enum class PrecisionTrait : uint8_t {
  kAny,      // float16 wherever the backend has a float16 kernel for it
  kFloat32,  // stays float32 whatever the backend says: its range or accumulated error needs it
             // (exp/log/pow overflow, long sums), its output's size depends on exact values
             // (NonZero, Unique), or it makes shapes, sizes or draws (Shape, Range, random ops)
};

// How an op meets layouts (the NHWC regions of src/graph/nhwc_regions.cpp).
enum class LayoutTrait : uint8_t {
  kFixed,              // reads its inputs in the layout their shapes describe
  kElementwiseUnary,   // output element i from data input element i alone: any layout will do
  kElementwiseBinary,  // two operands broadcast elementwise: any layout, with the operands permuted alike
  // Input 0 and output 0 may be channels-last, the op's kernels seeing them as (N, C, H, W): a custom
  // op that declares OpDef::channels_last_io (its other inputs and outputs keep their layout).
  kChannelsLastIo,
};

// One op as the builder and the engines see it, whoever defined it: its inference, its CPU reference
// kernel and the traits the passes read. The builtin ONNX ops and graft's internal ops are entries of
// the table below; every custom-op node (an OpDef of graft's own or a plugin's) resolves to one more
// entry, custom_op_entry(def), whose functions call the node's OpDef. Code that runs or infers a node asks
// find_op_entry(node) and never chooses between the two; the CUDA backend does the same with its
// CudaOp table (cuda_op_for, src/backends/cuda/cuda_ops.h).
struct OpEntry {
  const char* op_type;  // in `domain` (custom_op_entry(def): "", its nodes name their own op)
  int min_opset;  // first opset version graft supports for it (11 for most)
  InferFn infer;
  CpuKernelFn cpu;
  // Data-dependent output shape (NonZero, NonMaxSuppression): some output dimension is known only
  // after the kernel has run. Inference leaves it a fresh symbol (InferContext::unknown_dim) even
  // over concrete inputs; the executor (run_node_cpu) does not pre-allocate such an output, and the
  // kernel allocates it (allocate_output) once it has counted. Downstream nodes see the real shape,
  // since run-time inference reads the shapes of the tensors actually produced.
  bool output_shape_from_kernel = false;
  // Takes or returns sequence/optional values (ValueKind). Inference refuses a container input of
  // any other op, naming the input, so no other kernel ever sees one.
  bool takes_containers = false;
  // Takes or makes string tensors (DataType::kString): Cast, CastLike, Constant, Identity,
  // StringNormalizer. Inference refuses a string input or output of any other op, naming it, so no
  // byte-copying kernel ever sees one (set with takes_strings() below).
  bool takes_strings = false;
  PrecisionTrait precision = PrecisionTrait::kAny;
  LayoutTrait layout = LayoutTrait::kFixed;
  // The GraftElementwise instruction this op is, whatever its attributes (Relu, Add, Exp...), so
  // the chain fusion can take it into a fused elementwise program; ops whose instruction depends on
  // attributes (Clip, Gelu, HardSigmoid, Cast) are mapped by the fusion itself.
  std::optional<EwOp> elementwise_opcode = std::nullopt;
  // "" (ONNX) or kInternalDomain (ops/internal_ops.h), set by wrapping the row in internal_op().
  const char* domain = "";
  // Whether a node may leave out its first output too (RNN, LSTM, GRU: every output optional).
  // Every other op writes output 0, and its kernels assume the slot; the importer refuses a node
  // without one.
  bool first_output_optional = false;
  // Output 0 is input 0's elements in the same order under other dims (Reshape, Flatten, Squeeze,
  // Unsqueeze, Identity): a backend may alias input 0's buffer instead of copying it, and the view
  // passes may fold it into a chain of views. Set with reshapes_in_place() below.
  bool reshape_view = false;
};

// Registration helpers, so that an op's traits are written where the op is defined.
inline OpEntry keeps_float32(OpEntry op) {
  op.precision = PrecisionTrait::kFloat32;
  return op;
}
inline OpEntry elementwise_unary(OpEntry op) {
  op.layout = LayoutTrait::kElementwiseUnary;
  return op;
}
inline OpEntry elementwise_binary(OpEntry op) {
  op.layout = LayoutTrait::kElementwiseBinary;
  return op;
}
inline OpEntry fuses_as(EwOp code, OpEntry op) {
  op.elementwise_opcode = code;
  return op;
}
inline OpEntry takes_strings(OpEntry op) {
  op.takes_strings = true;
  return op;
}
inline OpEntry reshapes_in_place(OpEntry op) {
  op.reshape_view = true;
  return op;
}
inline OpEntry every_output_optional(OpEntry op) {
  op.first_output_optional = true;
  return op;
}
// One of graft's internal ops (ops/internal_ops.h): made by the builder's passes, never named by a model.
inline OpEntry internal_op(OpEntry op) {
  op.domain = kInternalDomain;
  return op;
}

// One dtype key of a backend's kernels for an op, as ONNX Runtime registers a kernel with its type
// constraints: the dtypes that input (or output) `index` of a node may have for the backend to run it.
// A backend checks a node's keys before anything else it asks of the node and refuses another dtype
// there, naming the value and the dtypes it has; `graft ops` lists them. A key on an optional input
// the node leaves out says nothing.
struct KernelDtypes {
  bool output = false;  // the key is output `index`, else input `index`
  int index = 0;
  std::vector<DataType> dtypes;
  // "input 0" or "output 1": how errors and `graft ops` name the value.
  std::string value_name() const { return (output ? "output " : "input ") + std::to_string(index); }
};
inline KernelDtypes input_dtypes(int index, std::initializer_list<DataType> dtypes) { return {false, index, dtypes}; }
inline KernelDtypes output_dtypes(int index, std::initializer_list<DataType> dtypes) { return {true, index, dtypes}; }
// An empty string when `node` meets every key in `keys`; otherwise why not, naming the kernels
// ("the CUDA Relu kernels", with `backend` "CUDA"), the value, its dtype and the dtypes they have.
std::string unmet_kernel_dtypes(const Node& node, const std::vector<KernelDtypes>& keys, const char* backend);

// True for a node whose op sets output_shape_from_kernel (never a custom op's).
bool output_shape_from_kernel(const Node& node);

// The entry of a custom-op node (src/ops/custom_op_entry.cpp): inference through the OpDef's shape
// and dtype functions, the CPU kernel through OpDef::run with a host workspace of the size its
// workspace_fn asks. Its layout trait is the OpDef's (kChannelsLastIo where it declares
// channels_last_io); no other trait is set: a custom op keeps the dtypes its kernels are registered for.
const OpEntry& custom_op_entry(const OpDef& def);
// Every entry custom_op_entry may return (one per layout trait), so that a backend keys its kernel for
// custom-op nodes by entry, as it keys a builtin op's.
std::vector<const OpEntry*> custom_op_entries();
// The entry a node runs and infers with: custom_op_entry(def) for a node with an OpDef, else the builtin
// table's entry for its domain and op type; nullptr for an op graft does not know.
const OpEntry* find_op_entry(const Node& node);

// Whether a node is an ONNX op (the default domain, no OpDef): passes that look for ONNX's Shape,
// Relu or Dropout ask this, so a custom op of the same name is never taken for one.
inline bool is_onnx(const Node& n) { return !n.custom_op && n.domain.empty(); }
inline bool is_onnx(const Node& n, const char* op_type) { return is_onnx(n) && n.op_type == op_type; }
// ONNX's Shape and Size read only their input's dims, never its data: a float16 twin, a view or a
// value still on the GPU answers them as well.
inline bool reads_dims_only(const Node& n) { return is_onnx(n, "Shape") || is_onnx(n, "Size"); }
// Whether a node's op sets the reshape_view trait (never a custom op's).
bool is_reshape_view(const Node& n);

// The explicit table of builtin ops (src/ops/builtin_ops.cpp). No static initializers.
const std::vector<OpEntry>& builtin_ops();
// The builtin op `op_type` of `domain` ("" or "ai.onnx": the ONNX ops; kInternalDomain: graft's
// internal ops), or nullptr.
const OpEntry* find_builtin_op(const std::string& domain, const std::string& op_type);
// The ONNX op `op_type`, or nullptr.
inline const OpEntry* find_onnx_op(const std::string& op_type) { return find_builtin_op("", op_type); }

// Helpers shared by inference functions.
// Multidirectional (numpy) broadcasting of two symbolic shapes; error names both shapes.
Result<Shape> broadcast_shapes(const Shape& a, const Shape& b);
// Normalizes a possibly negative axis against rank; error names the axis.
Result<int64_t> normalize_axis(int64_t axis, int64_t rank);

}  // namespace graft
