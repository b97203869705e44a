// The CUDA backend's builtin-op kernels: the contract between the CUDA runtime (executor, memory,
// graphs) and the kernel files. Compiled only with GRAFT_ENABLE_CUDA.
//
// A CudaOp runs one node on the GPU. Its ExecContext holds device tensors (DeviceType::kCUDA) for
// every input and output, except the inputs listed in `host_inputs` (shape-like int64 tensors such
// as Reshape's shape or Slice's starts), which the runtime passes as host tensors; ctx.stream is the
// cudaStream_t to enqueue on. Kernels never allocate device memory on the enqueue path: scratch
// comes from `workspace` (sized by `workspace_bytes` at build time) and never synchronize.
#pragma once

#include <initializer_list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/cuda/cuda_kernel_common.cuh"
#include "graph/graph.h"
#include "ops/operator.h"

namespace graft {
class TacticTable;
struct TacticTuning;
}  // namespace graft

namespace graft::cuda {

// What kernels prepare for one problem (cuDNN descriptors, cuBLASLt layouts, the chosen algorithm),
// kept by the execution context: made on the first run of a shape and reused by every later run,
// so the eager path creates no descriptor and queries no heuristic per layer per run, and a CUDA
// graph capture calls none of those APIs. A context runs on one thread at a time, so no lock.
class PreparedCache {
 public:
  // `key` is the problem's identity as bytes (see key_of); T is the op's own prepared state.
  template <typename T>
  T* find(const std::string& key) const {
    auto it = entries_.find(key);
    return it == entries_.end() ? nullptr : static_cast<T*>(it->second.get());
  }
  // find(), sharing ownership: for state that must outlive a put() that clears the cache while
  // the caller still uses it (a control-flow node whose subgraph's kernels prepare their own).
  template <typename T>
  std::shared_ptr<T> find_shared(const std::string& key) const {
    auto it = entries_.find(key);
    return it == entries_.end() ? nullptr : std::static_pointer_cast<T>(it->second);
  }
  template <typename T>
  T* put(const std::string& key, std::shared_ptr<T> value) {
    // A bound against a stream of ever-new shapes: start over rather than grow without limit.
    if (entries_.size() >= kMaxEntries) entries_.clear();
    T* raw = value.get();
    entries_[key] = std::move(value);
    return raw;
  }
  size_t size() const { return entries_.size(); }
  // The bytes of `tag` and each number, as a key (no formatting, so a lookup costs one hash).
  static std::string key_of(const char* tag, std::initializer_list<int64_t> fields) {
    std::string k(tag);
    k.push_back('\0');
    k.append(reinterpret_cast<const char*>(fields.begin()), fields.size() * sizeof(int64_t));
    return k;
  }
  template <typename Dims>
  static void append_dims(std::string* key, const Dims& dims) {
    const int64_t rank = static_cast<int64_t>(dims.size());
    key->append(reinterpret_cast<const char*>(&rank), sizeof rank);
    key->append(reinterpret_cast<const char*>(dims.data()), dims.size() * sizeof(int64_t));
  }

 private:
  static constexpr size_t kMaxEntries = 1 << 16;
  std::unordered_map<std::string, std::shared_ptr<void>> entries_;
};

// The invalid-data tags of nodes inside control-flow layers' subgraphs (If, Loop, Scan, SequenceMap
// bodies; k::DataFault). An engine layer's tag is its index + 1; a subgraph node gets the next tag
// past the engine's layers the first time it runs and keeps it, so a tag names one node whichever
// run wrote it. Kept by names, since a control-flow plan's node copies may be rebuilt. Owned by the
// engine's execution context, which runs one run at a time.
class SubgraphFaultTags {
 public:
  struct Named {
    std::string node, op_type;        // the subgraph node whose kernels report
    std::string parent, parent_type;  // the control-flow node whose subgraph holds it
    int64_t layer_tag = 0;            // the engine layer (its tag) that holds them, maybe nested
    const char* what = nullptr;       // its op's CudaOp::invalid_data
  };
  void reset(int64_t first_tag) {
    first_ = first_tag;
    named_.clear();
    tags_.clear();
  }
  int64_t tag_for(const Node& node, const Node& parent, int64_t layer_tag, const char* what);
  // nullptr for a tag that is not a subgraph node's
  const Named* find(int64_t tag) const;

 private:
  int64_t first_ = 1;
  std::vector<Named> named_;
  std::unordered_map<std::string, int64_t> tags_;
};

// Whether the GPU kernels of `n` may report invalid input data: its CUDA op does (CudaOp::
// invalid_data), or a node of one of its subgraphs does.
bool may_report_invalid_data(const Node& n);

struct CudaExec {
  ExecContext* ctx = nullptr;       // node, attrs, opset, inputs, outputs, stream
  void* workspace = nullptr;        // device scratch of workspace_bytes(...) bytes
  size_t workspace_size = 0;
  void* cublaslt = nullptr;         // cublasLtHandle_t owned by the execution context
  void* cudnn = nullptr;            // cudnnHandle_t owned by the execution context (nullptr if none)
  TacticTable* tactics = nullptr;   // the engine's chosen tactics (src/plan/tactics.h)
  TacticTuning* tuning = nullptr;   // set only while tactics are timed (may synchronize)
  PreparedCache* prepared = nullptr;  // the context's; nullptr: prepare on every call
  int64_t* output_count = nullptr;    // device int64 for an op with a CountedOutput (below), else null
  // An unseeded random layer's run counter (device uint64, zeroed when the context was made) and
  // base seed, owned by the engine's context so that they exist before any capture; null outside
  // an engine (src/ops/random/random.cu then keeps a counter in `prepared`).
  uint64_t* random_counter = nullptr;
  uint64_t random_base = 0;
  // Set while the engine profiles layers (graft run --profile): an op that chooses among
  // implementations (GraftConv's tactics) names the one it ran here, for the table's tactic column.
  std::string* ran_tactic = nullptr;
  // Where this layer's kernels report input data they cannot compute on (k::DataFault; the op sets
  // CudaOp::invalid_data). The engine reads it back after the run and fails the run naming the
  // layer; with no word (outside an engine) nothing is reported. A control-flow layer whose
  // subgraphs hold such nodes gets the word too, and tags its nodes through `subgraph_faults`.
  k::DataFault fault{};
  SubgraphFaultTags* subgraph_faults = nullptr;
};

// An op whose output 0 has a size known only once its kernel has run (NonZero, NonMaxSuppression;
// Unique, whose other outputs too: see `outputs` below).
// The runtime allocates output 0 with the dims `bound` returns, the most the concrete input shapes
// and the node's constant inputs allow (device data cannot be read here). The kernel writes the
// real output as the contiguous tensor whose dims are the bound's with `count_axis` replaced by the
// count, i.e. a prefix of the buffer, and writes that count to CudaExec::output_count; the runtime
// reads back the count alone and gives the output its real dims (cuda_engine.cpp). A negative count
// means the kernel found the input data invalid where the CPU reference fails; `invalid_data` says
// how.
//
// An op with several outputs, or whose count axis depends on the node (Unique: Y, indices and
// counts have the count, inverse_indices the input's size), sets `outputs` instead: one CountedDims
// per node output (an omitted optional output's entry is ignored), which the runtime then uses for
// every output instead of `bound` and `count_axis` (then unset); each output's real dims are its
// bound's with its count_axis (if any) replaced by the one count.
struct CountedDims {
  std::vector<int64_t> dims;
  int count_axis = -1;  // -1: the dims are final
};
struct CountedOutput {
  Result<std::vector<int64_t>> (*bound)(const Node& node, const std::vector<const Tensor*>& inputs) = nullptr;
  int count_axis = 0;
  const char* invalid_data = nullptr;
  Result<std::vector<CountedDims>> (*outputs)(const Node& node, const std::vector<const Tensor*>& inputs) = nullptr;
  bool is_counted() const { return bound || outputs; }
};

struct CudaOp {
  const char* op_type;
  // Whether this node (its attributes and input/output dtypes, known at build time) is handled;
  // when not, `why` says what is missing, so the builder can name it.
  bool (*supports)(const Node& node, std::string* why);
  Status (*run)(CudaExec& exec);
  std::vector<int> host_inputs;  // input indices read on the host
  // Device scratch needed for these concrete input shapes (nullptr: none). `outputs` are the node's
  // outputs as the run allocated them; when the engine sizes its workspace at build time, an output
  // whose shape is not static yet is undefined there, and an op whose scratch depends on it answers
  // kUnknownWorkspace (the engine then sizes the workspace per run). Only a custom op's does.
  size_t (*workspace_bytes)(const Node& node, const std::vector<const Tensor*>& inputs,
                            const std::vector<Tensor>& outputs) = nullptr;
  CountedOutput counted{};  // set (is_counted()) only for ops with a data-dependent output size
  // The kernel makes its outputs itself (If, Loop, Scan: which branch and how many iterations are
  // known only as it runs): the runtime passes empty output tensors, which the kernel sets to
  // device tensors it owns, and never reuses an output's memory for another value.
  bool makes_outputs = false;
  // Passes a sequence or optional on as well as a tensor (Identity): a node over a container runs as
  // a makes_outputs layer (makes_outputs_for), whose kernel hands the container on as it is.
  bool passes_containers = false;
  // Set when the kernels report invalid input data through CudaExec::fault (where the CPU reference
  // fails: an index out of range, an integer division by zero): what the data's fault is, for the
  // error that fails the run.
  const char* invalid_data = nullptr;
  // `supports` checks every input and output dtype itself (a custom op's kernels are registered per
  // dtype combination), so the dtypes that no builtin kernel's switch has are not refused first.
  bool checks_every_dtype = false;
  // The dtypes its kernels are instantiated for, per keyed value (input 0, and any other value whose
  // dtype selects a kernel); set with kernel_dtypes() below. gpu_supports checks them before
  // `supports`, which then checks only what is not a key (attributes, ranks, dtypes that must match
  // the key's). Every builtin op has them; the custom ops' entry has none (checks_every_dtype).
  std::vector<KernelDtypes> dtypes{};

  // Whether this node's kernel sets its outputs itself: always for makes_outputs, and for a
  // passes_containers op over a sequence or optional.
  bool makes_outputs_for(const Node& node) const {
    return makes_outputs || (passes_containers && touches_containers(node));
  }
};

// `op` with its kernels' dtype keys, as a table row writes it:
//   kernel_dtypes({input_dtypes(0, kGpuFloats)}, CudaOp{"Softmax", ...}).
inline CudaOp kernel_dtypes(std::initializer_list<KernelDtypes> keys, CudaOp op) {
  op.dtypes = keys;
  return op;
}

// `op` whose kernels report invalid input data, `what` saying what is invalid (CudaOp::invalid_data):
//   reports_invalid_data("an index is out of range", kernel_dtypes({...}, CudaOp{"Gather", ...})).
inline CudaOp reports_invalid_data(const char* what, CudaOp op) {
  op.invalid_data = what;
  return op;
}

// The kernel context of `node` over `inputs`, writing `outputs` (one per node output; an omitted
// output gets a null pointer), on `stream`.
inline ExecContext exec_context_for(const Node& node, const std::vector<const Tensor*>& inputs,
                                    std::vector<Tensor>& outputs, void* stream) {
  ExecContext ec;
  ec.node = &node;
  ec.attrs = &node.attrs;
  ec.opset = node.opset;
  ec.inputs = inputs;
  for (size_t o = 0; o < outputs.size(); ++o) ec.outputs.push_back(node.output(o) ? &outputs[o] : nullptr);
  ec.stream = stream;
  return ec;
}

// What a CudaOp's workspace_bytes answers when the outputs it was given do not say enough.
inline constexpr size_t kUnknownWorkspace = static_cast<size_t>(-1);

// The CudaOp of every custom-op node: `supports` asks the node's OpDef for a CUDA kernel of its
// dtypes, `run` calls OpDef::run(Backend::kCUDA) on the engine's stream and workspace, and the
// workspace is the one the OpDef's workspace_fn asks for the concrete input and output shapes.
const CudaOp& custom_cuda_op();
// The CudaOp of the node's op entry (find_op_entry, cuda_op_of): custom_cuda_op() for a node with an
// OpDef, else the CUDA op registered for its builtin definition (its domain and op type), so a
// default-domain node never finds an internal op's kernel; nullptr when there is none. Whether it
// takes this node is gpu_supports'.
const CudaOp* cuda_op_for(const Node& n);

// Whether the GPU runs this node with its current dtypes; its CudaOp is set in `op_out`, and `why`
// says what is missing otherwise.
bool gpu_supports(const Node& n, const CudaOp** op_out, std::string* why);

// The one cuDNN convolution (defined with GraftConv, src/ops/fused_conv/graft_conv_cuda.cpp): GraftConv runs it, and ONNX's Conv
// (src/ops/nn/conv_cuda.cpp) hands it every problem it takes (2-D, float32 or float16, symmetric pads), so both
// ops get the same algorithms, graft's own kernels and tactic timing. A node without GraftConv's
// attributes is an NCHW convolution with no epilogue beyond its bias.
bool cudnn_conv_supports(const Node& n, std::string* why);
Status cudnn_conv_run(CudaExec& ex);
size_t cudnn_conv_workspace(const Node& n, const std::vector<const Tensor*>& inputs, const std::vector<Tensor>& outputs);

// A fresh base seed for an unseeded random layer's stream (src/ops/random/random.cu).
uint64_t fresh_random_base_seed();

// The explicit table (src/backends/cuda/cuda_ops.cpp, which lists the families it is made of).
const std::vector<CudaOp>& cuda_ops();
const CudaOp* find_cuda_op(const std::string& op_type);
// The CUDA op of an op entry: a builtin's (an entry of builtin_ops()) or a custom-op entry's
// (custom_op_entries(): custom_cuda_op()); nullptr for a builtin without a CUDA kernel.
const CudaOp* cuda_op_of(const OpEntry& op);

}  // namespace graft::cuda
