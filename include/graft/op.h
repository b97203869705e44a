// graft/op.h — the custom-op SDK: define a layer once, run it everywhere.
//
// One OpDef carries everything every backend needs: identity, typed attributes, inputs/outputs
// with their dtypes, a shape function over symbolic dimensions (TensorRT IExprBuilder algebra),
// the output-dtype rule, supported dtype combinations, workspace size, and forward/backward kernels
// per backend. graft's engine, the PyTorch extension and the TensorRT adapter are generated from it.
//
//   graft::OpDef def("CustomLayer");
//   def.domain("ai.onnx.contrib").version("1")
//      .attr_float("beta", 1.0f).range(0.0, 1e6)
//      .input("x", {DataType::kFloat32, DataType::kFloat16})
//      .output("y")
//      .shape_fn([](ShapeContext& c) { c.set_output(0, c.input_shape(0)); return Status::ok(); })
//      .kernel(Backend::kCPU, &my_cpu_kernel);
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graft/attribute.h"
#include "graft/dim.h"
#include "graft/dtype.h"
#include "graft/status.h"
#include "graft/tensor.h"

namespace graft {

enum class Backend : int { kCPU = 0, kCUDA = 1 };
const char* backend_name(Backend b);

// ---------------------------------------------------------------------------------------------
// Identity. `version` and `plugin_namespace` are strings because TensorRT's are
// (getPluginVersion/getPluginNamespace), and the ONNX node carries them as string attributes.
struct OpIdentity {
  std::string name;                         // ONNX op_type == TensorRT plugin name
  std::string domain = "ai.onnx.contrib";   // ONNX node domain
  std::string version = "1";                // TensorRT plugin_version
  std::string plugin_namespace;             // TensorRT plugin_namespace ("" by default)
  std::string to_string() const;            // "ai.onnx.contrib::CustomLayer v1 ns ''"
};

// ---------------------------------------------------------------------------------------------
// Attributes
struct AttrSpec {
  std::string name;
  AttrType type = AttrType::kFloat;
  bool required = false;
  std::optional<AttrValue> default_value;
  std::optional<double> min_value, max_value;  // inclusive; applies to each element of lists
  std::vector<std::string> allowed_strings;    // empty: any
  std::vector<int64_t> allowed_ints;           // empty: any
  std::string doc;
};

struct IOSpec {
  std::string name;
  std::vector<DataType> dtypes;  // allowed; empty means "as the type combinations say"
  bool optional = false;
  std::string doc;
};

// ---------------------------------------------------------------------------------------------
// Shape functions over symbolic dimensions.
//
// The expression handles are opaque: graft's engine backs them with graft::Dim, the TensorRT adapter
// with nvinfer1::IDimensionExpr, the PyTorch Meta kernel with concrete integers.
class ShapeExprBuilder {
 public:
  virtual ~ShapeExprBuilder() = default;
  virtual const void* constant(int64_t value) = 0;
  virtual const void* operation(DimOp op, const void* a, const void* b) = 0;
  // The value if the expression is a known constant.
  virtual std::optional<int64_t> constant_value(const void* expr) = 0;
};

class SymDim {
 public:
  SymDim() = default;
  SymDim(ShapeExprBuilder* b, const void* e) : builder_(b), expr_(e) {}
  const void* expr() const { return expr_; }
  ShapeExprBuilder* builder() const { return builder_; }
  std::optional<int64_t> constant_value() const { return builder_->constant_value(expr_); }
  SymDim op(DimOp o, const SymDim& rhs) const { return SymDim(builder_, builder_->operation(o, expr_, rhs.expr_)); }
  SymDim op(DimOp o, int64_t rhs) const { return op(o, SymDim(builder_, builder_->constant(rhs))); }

 private:
  ShapeExprBuilder* builder_ = nullptr;
  const void* expr_ = nullptr;
};

inline SymDim operator+(const SymDim& a, const SymDim& b) { return a.op(DimOp::kSum, b); }
inline SymDim operator+(const SymDim& a, int64_t b) { return a.op(DimOp::kSum, b); }
inline SymDim operator-(const SymDim& a, const SymDim& b) { return a.op(DimOp::kSub, b); }
inline SymDim operator-(const SymDim& a, int64_t b) { return a.op(DimOp::kSub, b); }
inline SymDim operator*(const SymDim& a, const SymDim& b) { return a.op(DimOp::kProd, b); }
inline SymDim operator*(const SymDim& a, int64_t b) { return a.op(DimOp::kProd, b); }
inline SymDim max(const SymDim& a, const SymDim& b) { return a.op(DimOp::kMax, b); }
inline SymDim min(const SymDim& a, const SymDim& b) { return a.op(DimOp::kMin, b); }
inline SymDim floor_div(const SymDim& a, const SymDim& b) { return a.op(DimOp::kFloorDiv, b); }
inline SymDim floor_div(const SymDim& a, int64_t b) { return a.op(DimOp::kFloorDiv, b); }
inline SymDim ceil_div(const SymDim& a, const SymDim& b) { return a.op(DimOp::kCeilDiv, b); }
inline SymDim ceil_div(const SymDim& a, int64_t b) { return a.op(DimOp::kCeilDiv, b); }
inline SymDim equal(const SymDim& a, const SymDim& b) { return a.op(DimOp::kEqual, b); }
inline SymDim less(const SymDim& a, const SymDim& b) { return a.op(DimOp::kLess, b); }

class ShapeContext {
 public:
  ShapeContext(ShapeExprBuilder* builder, const AttributeMap* attrs,
               std::vector<std::optional<std::vector<const void*>>> input_shapes,
               int num_outputs);
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  bool has_input(int i) const { return i < num_inputs() && inputs_[i].has_value(); }
  int input_rank(int i) const;  // -1 when absent
  SymDim input_dim(int i, int d) const;  // negative d counts from the end
  std::vector<SymDim> input_shape(int i) const;
  SymDim constant(int64_t v) const { return SymDim(builder_, builder_->constant(v)); }
  const AttributeMap& attrs() const { return *attrs_; }
  void set_output(int o, const std::vector<SymDim>& dims);

  // Results, read by the backend that called the shape function.
  const std::vector<std::optional<std::vector<const void*>>>& outputs() const { return outputs_; }

 private:
  ShapeExprBuilder* builder_;
  const AttributeMap* attrs_;
  std::vector<std::optional<std::vector<const void*>>> inputs_;
  std::vector<std::optional<std::vector<const void*>>> outputs_;
};

using ShapeFn = std::function<Status(ShapeContext&)>;
// Output dtypes from input dtypes (absent optional inputs are kUndefined).
using DtypeFn = std::function<Result<std::vector<DataType>>(const std::vector<DataType>& inputs,
                                                            const AttributeMap& attrs)>;

// Concrete shapes, for workspace sizing.
struct ConcreteDesc {
  DataType dtype = DataType::kUndefined;
  std::vector<int64_t> dims;
};
using WorkspaceFn = std::function<size_t(const std::vector<ConcreteDesc>& inputs,
                                         const std::vector<ConcreteDesc>& outputs,
                                         const AttributeMap& attrs)>;

// ---------------------------------------------------------------------------------------------
// Kernels. Plain functions over views: no framework types, so one kernel serves every host.
struct KernelContext {
  const AttributeMap* attrs = nullptr;
  std::vector<TensorView> inputs;    // an absent optional input has data == nullptr
  std::vector<TensorView> outputs;
  void* workspace = nullptr;
  size_t workspace_size = 0;
  void* stream = nullptr;            // cudaStream_t for Backend::kCUDA, nullptr on the CPU
  // Only for an op declared channels_last_io(): input 0 and output 0 are stored channels-last
  // (N, H, W, C), their views' dims still (N, C, H, W). Set by an engine that keeps them inside a
  // channels-last region (graft's CUDA builder); never set for other ops.
  bool channels_last_io = false;
};
using KernelFn = std::function<Status(const KernelContext&)>;

// Whether a kernel got the views it was written for: exactly n_in inputs and n_out outputs (an
// absent optional input is still a view, with no data). Else kInvalidArgument naming the op and
// the kernel, "<op>: backward kernel expects 3 inputs and 2 outputs, got 2 and 2". Engines, the
// torch op and the plugin adapters pass the views the definition declares, so a mismatch is a
// caller's bug, reported before any view is read. Kernels check it first.
inline Status check_kernel_io(const KernelContext& ctx, std::string_view op, size_t n_in, size_t n_out,
                              std::string_view kernel = "kernel") {
  if (ctx.inputs.size() == n_in && ctx.outputs.size() == n_out) return Status::ok();
  return error(StatusCode::kInvalidArgument, std::string(op), ": ", std::string(kernel), " expects ", n_in, n_in == 1 ? " input" : " inputs",
               " and ", n_out, n_out == 1 ? " output" : " outputs", ", got ", ctx.inputs.size(), " and ",
               ctx.outputs.size());
}

// One kernel: backend plus the dtype combinations (inputs then outputs) it handles.
struct KernelEntry {
  Backend backend = Backend::kCPU;
  std::vector<std::vector<DataType>> combinations;  // empty: every combination the op declares
  KernelFn fn;
};

// ---------------------------------------------------------------------------------------------
class OpDef {
 public:
  OpDef() = default;
  explicit OpDef(std::string name) { id_.name = std::move(name); }

  // identity
  OpDef& domain(std::string d) { id_.domain = std::move(d); return *this; }
  OpDef& version(std::string v) { id_.version = std::move(v); return *this; }
  OpDef& plugin_namespace(std::string ns) { id_.plugin_namespace = std::move(ns); return *this; }
  OpDef& doc(std::string d) { doc_ = std::move(d); return *this; }

  // attributes; the modifiers after them (range, allowed, required) apply to the last one added
  OpDef& attr_float(const std::string& name, std::optional<float> def = std::nullopt, std::string doc = "");
  OpDef& attr_int(const std::string& name, std::optional<int64_t> def = std::nullopt, std::string doc = "");
  OpDef& attr_string(const std::string& name, std::optional<std::string> def = std::nullopt, std::string doc = "");
  OpDef& attr_floats(const std::string& name, std::optional<std::vector<float>> def = std::nullopt, std::string doc = "");
  OpDef& attr_ints(const std::string& name, std::optional<std::vector<int64_t>> def = std::nullopt, std::string doc = "");
  OpDef& attr_strings(const std::string& name, std::optional<std::vector<std::string>> def = std::nullopt, std::string doc = "");
  OpDef& range(double min_value, double max_value);
  OpDef& allowed(std::vector<int64_t> values);
  OpDef& allowed(std::vector<std::string> values);

  // inputs and outputs
  OpDef& input(std::string name, std::vector<DataType> dtypes = {}, std::string doc = "");
  OpDef& optional_input(std::string name, std::vector<DataType> dtypes = {}, std::string doc = "");
  OpDef& output(std::string name, std::vector<DataType> dtypes = {}, std::string doc = "");
  // An output a node may leave out; only trailing outputs can be optional (a node's outputs are
  // positional), and the kernel then sees fewer outputs.
  OpDef& optional_output(std::string name, std::vector<DataType> dtypes = {}, std::string doc = "");

  // semantics
  OpDef& shape_fn(ShapeFn fn) { shape_fn_ = std::move(fn); return *this; }
  OpDef& dtype_fn(DtypeFn fn) { dtype_fn_ = std::move(fn); return *this; }  // default: all = input 0
  OpDef& type_combination(std::vector<DataType> inputs_then_outputs);
  OpDef& workspace_fn(WorkspaceFn fn) { workspace_fn_ = std::move(fn); return *this; }
  OpDef& kernel(Backend b, KernelFn fn, std::vector<std::vector<DataType>> combos = {});
  // Backward kernel: inputs = forward inputs followed by one gradient per forward output;
  // outputs = one gradient per differentiable input, in the order given here.
  OpDef& differentiable_inputs(std::vector<int> indices) { diff_inputs_ = std::move(indices); return *this; }
  OpDef& backward(Backend b, KernelFn fn, std::vector<std::vector<DataType>> combos = {});
  // Layout: every forward kernel of the op also runs with KernelContext::channels_last_io set,
  // reading a 4-D input 0 and writing a 4-D output 0 stored channels-last. An engine whose
  // convolutions run channels-last may then keep the op inside that region instead of copying its
  // input and output across layouts. Shape and workspace functions always see (N, C, H, W).
  OpDef& channels_last_io() { channels_last_io_ = true; return *this; }
  // A small valid call (input dims, absent optional inputs as nullopt, and attributes) that generic
  // tools use without per-op code: the TensorRT harness, the PyTorch tests (forward, gradcheck,
  // opcheck, Meta shapes), the fuzzers' corpus, documentation. It is an op's one table of example
  // calls: graft's own ops keep no second one for any of these tools.
  // `values` fixes the contents of inputs that must be consistent with the others (index tables,
  // shapes): host tensors keyed by input index; tools draw the remaining inputs at random, uniformly
  // in [-2, 2) unless example_range says otherwise.
  OpDef& example(std::vector<std::optional<std::vector<int64_t>>> input_dims, AttributeMap attrs = {},
                 std::map<int, Tensor> values = {}) {
    examples_.push_back(Example{std::move(input_dims), std::move(attrs), std::move(values), {}});
    return *this;
  }
  // For the last example: draw input `input` uniformly in [lo, hi) instead (a probability or a weight
  // in [0, 1); sampling offsets kept off the integers, where bilinear sampling has kinks that a
  // finite-difference step must not cross).
  OpDef& example_range(int input, double lo, double hi) {
    if (!examples_.empty()) examples_.back().ranges[input] = {lo, hi};
    return *this;
  }
  struct Example {
    std::vector<std::optional<std::vector<int64_t>>> input_dims;
    AttributeMap attrs;
    std::map<int, Tensor> values;
    std::map<int, std::pair<double, double>> ranges;  // input index -> [lo, hi) of its random draw
    // The range input i is drawn from: its entry in `ranges`, else [-2, 2).
    std::pair<double, double> range_of(int i) const {
      auto it = ranges.find(i);
      return it == ranges.end() ? std::pair<double, double>{-2.0, 2.0} : it->second;
    }
  };

  // introspection
  const OpIdentity& identity() const { return id_; }
  const std::string& name() const { return id_.name; }
  const std::string& doc_text() const { return doc_; }
  const std::vector<AttrSpec>& attrs() const { return attrs_; }
  const AttrSpec* find_attr(const std::string& name) const;
  const std::vector<IOSpec>& inputs() const { return inputs_; }
  const std::vector<IOSpec>& outputs() const { return outputs_; }
  const std::vector<std::vector<DataType>>& type_combinations() const { return combos_; }
  const std::vector<int>& differentiable_input_indices() const { return diff_inputs_; }
  const std::vector<Example>& examples() const { return examples_; }
  bool has_backward(Backend b) const;
  bool supports_channels_last_io() const { return channels_last_io_; }
  // The forward kernels: each one's backend and the dtype combinations it handles.
  const std::vector<KernelEntry>& kernels() const { return kernels_; }

  // Fills defaults, checks types, ranges, allowed values, required and unknown attributes.
  // Errors name the attribute. The reserved TensorRT attributes plugin_version/plugin_namespace
  // are accepted and removed.
  Status validate_attributes(AttributeMap& attrs) const;
  // Checks the definition itself (names, a CPU kernel, combinations sizes). Called at registration.
  Status validate_definition() const;

  Status infer_shapes(ShapeContext& ctx) const;
  Result<std::vector<DataType>> infer_dtypes(const std::vector<DataType>& inputs,
                                             const AttributeMap& attrs) const;
  // Whether some kernel of backend `b` handles this dtype combination (inputs then outputs).
  bool supports(Backend b, const std::vector<DataType>& combination) const;
  size_t workspace_size(const std::vector<ConcreteDesc>& in, const std::vector<ConcreteDesc>& out,
                        const AttributeMap& attrs) const;
  // Runs the forward (or backward) kernel for ctx's dtypes; error if none handles them.
  Status run(Backend b, const KernelContext& ctx) const;
  Status run_backward(Backend b, const KernelContext& ctx) const;

 private:
  const KernelEntry* pick(const std::vector<KernelEntry>& from, Backend b,
                          const std::vector<DataType>& combo) const;
  OpIdentity id_;
  std::string doc_;
  std::vector<AttrSpec> attrs_;
  std::vector<IOSpec> inputs_, outputs_;
  ShapeFn shape_fn_;
  DtypeFn dtype_fn_;
  WorkspaceFn workspace_fn_;
  std::vector<std::vector<DataType>> combos_;
  std::vector<KernelEntry> kernels_, backward_kernels_;
  std::vector<int> diff_inputs_;
  std::vector<Example> examples_;
  bool channels_last_io_ = false;
};

// Attribute serialization (a JSON object; floats round-trip exactly). Used by plan files, the
// TensorRT adapter's getFieldsToSerialize and the PyTorch extension.
std::string serialize_attributes(const AttributeMap& attrs);
Result<AttributeMap> deserialize_attributes(const std::string& text);

// Evaluate an op's shape function with concrete input dims (PyTorch Meta kernels, tests).
Result<std::vector<std::vector<int64_t>>> infer_concrete_shapes(
    const OpDef& def, const std::vector<std::optional<std::vector<int64_t>>>& input_dims,
    const AttributeMap& attrs);

}  // namespace graft
