#include "backends/cuda/cuda_engine.h"

#include <cublasLt.h>
#include <cuda_runtime.h>
#ifdef GRAFT_WITH_CUDNN
#include <cudnn.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <list>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/device_memory.h"
#include "backends/cuda/profiling_kernels.cuh"
#include "graft/log.h"
#include "graph/passes.h"
#include "ops/random/random.h"
#include "plan/plan.h"
#include "plan/tactics.h"
#include "runtime/cpu_executor.h"
#include "runtime/engine_description.h"
#include "runtime/memory_plan.h"
#include "runtime/tactic_timing.h"

namespace graft::cuda {

namespace {

enum class Where {
  kGpu,          // CUDA kernel
  kCpuFallback,  // no CUDA kernel for this node: CPU reference with copies
  kCpuHost,      // shape subgraph: every output is read on the host
  kCpuMeta,      // Shape/Size: reads only the input's dims, wherever it lives
};

const char* where_name(Where w) {
  switch (w) {
    case Where::kGpu: return "cuda";
    case Where::kCpuFallback: return "cpu (fallback)";
    case Where::kCpuHost: return "cpu (host shape layer)";
    case Where::kCpuMeta: return "cpu (metadata)";
  }
  return "?";
}

struct Layer {
  const Node* node = nullptr;
  Where where = Where::kGpu;
  const CudaOp* op = nullptr;     // builtin kernel on the GPU
  std::string why;                // why it is on the CPU
  std::vector<bool> host_input;   // per input: read on the host
  bool alias = false;             // a view (Reshape-like): the output aliases input 0's device buffer
  // Output 0's size (Unique: several outputs' sizes) is known only after the kernel ran (op->counted,
  // cuda_ops.h): the kernel writes into buffers of the bound's size and the context reads back the
  // count (read_count).
  bool counted = false;
  // If, Loop, Scan (CudaOp::makes_outputs): the kernel runs a subgraph and hands over its outputs as
  // device tensors it owns; the context takes them as they are, with their dims.
  bool makes_outputs = false;
  // The output shapes are a function of the engine's input shapes alone (no data-dependent shape
  // upstream, every host input a constant or shape arithmetic): a shape set's first run records
  // them and later runs of that shape set skip shape inference.
  bool dims_from_shapes = false;
  // Every reader of its outputs reads only their dims (Shape/Size, or another such layer), as when
  // compose_view_chains has composed a data-movement chain past a value whose Shape the dynamo
  // export's attention reads: the outputs' shapes are inferred, but no kernel runs and no memory is
  // taken for them.
  bool dims_only = false;
};

struct ValueUse {
  int first_step = 0;
  int last_step = 0;
  bool device_buffer = false;  // gets an arena buffer (GPU output or uploaded copy)
  bool graph_output = false;
};

std::string dims_text(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

bool env_off(const char* name) {
  const char* v = std::getenv(name);
  return v && (std::strcmp(v, "0") == 0 || std::strcmp(v, "off") == 0 || std::strcmp(v, "false") == 0);
}
bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

class CudaEngine;

struct ShapePlan {
  bool planned = false;          // offsets valid (arena mode)
  bool dirty = false;            // a buffer outgrew its slot: plan again after this run
  std::vector<size_t> offset, size;  // per value id
  MemoryPlan plan;
  // The most kernel workspace any layer asks for with these shapes. Known from the static shapes at
  // context creation, else measured by an eager run; a graph is captured only once it is known and
  // allocated, because cudaMalloc is not allowed inside a capture.
  size_t workspace = 0;
  bool workspace_known = false;
  cudaGraphExec_t graph_exec = nullptr;
  bool graph_failed = false;
  struct OutDesc { int vid; DataType dtype; std::vector<int64_t> dims; };
  std::vector<OutDesc> graph_outputs;  // where a replay leaves the graph outputs
  std::vector<std::pair<int, Tensor>> graph_host_outputs;  // outputs that are shape arithmetic on the host
  // A graph of the leading layers only (CudaEngine::graph_layers): every value it leaves for the
  // layers after it (device buffers in the arena, host shape values), restored after each replay.
  std::vector<std::pair<int, Tensor>> graph_live_dev, graph_live_host;
  // Per layer, what this shape set gives, each once a run recorded it, so the eager path infers
  // shapes and asks workspaces once per shape set, not once per run: its outputs' (dtype, dims),
  // and the kernel workspace its op asks for (an op's workspace_bytes may plan as much as its run
  // does: GraftAttention's chains).
  struct LayerOut { DataType dtype; std::vector<int64_t> dims; };
  struct LayerMemo {
    std::optional<std::vector<LayerOut>> outs;
    std::optional<size_t> workspace;
  };
  std::vector<LayerMemo> layers;
  // The host bytes of values uploaded inside a capture (shape arithmetic a GPU layer reads, e.g. a
  // scale computed from a dynamic dim): the captured copy reads its source at every replay, long
  // after the run that captured it has dropped its host values. They are functions of the shape
  // set, the plan's key, so the same bytes serve every replay.
  std::list<std::vector<char>> captured_uploads;
};

class CudaContext final : public CudaExecutionContext {
 public:
  CudaContext(std::shared_ptr<const CudaEngine> e, int device) : engine_(std::move(e)), device_(device) {}
  ~CudaContext() override;
  Status init();

  Status run(const std::map<std::string, Tensor>& inputs, std::map<std::string, Tensor>& outputs) override {
    return execute_in_order(inputs, outputs, stream_, true);
  }
  Status enqueue(const std::map<std::string, Tensor>& inputs, std::map<std::string, Tensor>& outputs,
                 CUstream_st* stream) override {
    return execute_in_order(inputs, outputs, stream ? stream : stream_, false);
  }
  void set_profiling(bool on) override { profiling_ = on; }
  // Only the input check reads the selection: plans, arena and captured graphs are keyed by the
  // input shapes, which two profiles may share, so switching keeps every cached plan.
  Status set_profile(int index) override;
  int profile() const override { return profile_; }
  std::vector<LayerTiming> layer_timings() const override { return timings_; }
  void set_cuda_graphs(bool on) override { graphs_on_ = on; }
  bool last_run_used_cuda_graph() const override { return last_graph_layers_ > 0; }
  size_t last_run_graph_layers() const override { return last_graph_layers_; }
  void set_graph_cache_size(size_t n) override;
  size_t graph_cache_size() const override { return graph_cache_size_; }
  size_t captured_graphs() const override {
    size_t n = 0;
    for (const auto& [k, e] : plans_) n += e.plan.graph_exec != nullptr;
    return n;
  }
  MemoryPlanInfo memory_plan() const override { return last_plan_info_; }
  // While set, kernels may time their tactics (the builder's tuning run; eager, synchronizing).
  void set_tuning(TacticTuning* t) { tuning_ = t; }

 private:
  struct Slot {
    Tensor host, dev;
    Tensor counted_buffer;  // a counted output's bound-sized buffer, of which `dev` is a prefix
  };
  // The context's arena and workspace are reused by every run: a run on another stream than the
  // last one first waits for the last one's work (an enqueue returns before its kernels finish).
  Status execute_in_order(const std::map<std::string, Tensor>& inputs, std::map<std::string, Tensor>& outputs,
                          cudaStream_t stream, bool sync);
  Status execute(const std::map<std::string, Tensor>& inputs, std::map<std::string, Tensor>& outputs,
                 cudaStream_t stream, bool sync);
  Status bind_inputs(const std::map<std::string, Tensor>& inputs, cudaStream_t stream, bool into_arena);
  // Layers [begin, end) in order; `capturing`: inside a CUDA graph capture.
  Status run_layers(cudaStream_t stream, bool capturing, size_t begin, size_t end);
  Status run_layer(size_t i, cudaStream_t stream);
  // A kernel's view of this context for `ec`: library handles, tactics, the prepared cache, and the
  // tuning run's timer while one is on (never inside a capture).
  CudaExec exec_for(ExecContext& ec);
  // A makes_outputs layer (If, Loop, Scan): its kernel sets the outputs, which become the values.
  Status run_control_flow_layer(size_t i, const std::vector<const Tensor*>& ins, cudaStream_t stream);
  // Layer i's kernels get the invalid-data word when they can report (reports_).
  void give_fault_word(CudaExec& ex, size_t i) {
    if (!fault_host_ || !reports_[i]) return;
    ex.fault = k::DataFault{fault_dev_.data_as<int64_t>(), static_cast<int64_t>(i) + 1};
    ex.subgraph_faults = &subgraph_faults_;
  }
  // After a counted layer's kernel: copy its count to the host and give each output its real dims
  // (`count_axes[o]`: the axis of output o that takes the count, -1 for none).
  Status read_count(const Layer& L, const std::vector<int>& count_axes, std::vector<Tensor>& outs, cudaStream_t stream);
  Result<void*> workspace_for(size_t bytes);
  Status replay_graph_failure(ShapePlan& plan, cudaError_t e, const std::map<std::string, Tensor>& inputs,
                              std::map<std::string, Tensor>& outputs, cudaStream_t stream, bool sync);
  // A device buffer for value `vid`: its arena slot when the plan has one that fits, else (outside a
  // capture) a fresh allocation. `v` and `layer` name it in errors (layer nullptr: a graph input or
  // an upload).
  Result<Tensor> acquire(int vid, DataType dt, const std::vector<int64_t>& dims, const Value* v, const Node* layer);
  Result<const Tensor*> on_host(const Value* v, cudaStream_t stream);
  Result<const Tensor*> on_device(const Value* v, cudaStream_t stream);
  Status ensure_workspace(size_t bytes);
  Status replan(ShapePlan& p);
  void print_trace_op_host();
  void drop_graphs();
  // New cuBLASLt and cuDNN handles (at init, and after a failed capture), and an empty PreparedCache.
  Status reset_library_handles();
  // The plan of one input shape set, most recently used first; past graph_cache_size_ the least
  // recently used one (never `keep`) is dropped with its captured graph.
  ShapePlan& plan_for(const std::string& key);
  void evict_plans(const ShapePlan* keep);

  std::shared_ptr<const CudaEngine> engine_;
  int device_ = 0;
  int profile_ = 0;  // the optimization profile inputs are checked against (set_profile)
  cudaStream_t stream_ = nullptr;
  cudaStream_t last_stream_ = nullptr;   // the stream of the last run, whose end run_done_ marks
  cudaEvent_t run_done_ = nullptr;
  cublasLtHandle_t cublaslt_ = nullptr;
  void* cudnn_ = nullptr;
  Tensor arena_, workspace_;
  struct PlanEntry {
    ShapePlan plan;
    std::list<std::string>::iterator recency;
  };
  std::unordered_map<std::string, PlanEntry> plans_;
  std::list<std::string> recency_;  // shape keys, most recently used first
  size_t graph_cache_size_ = 16;
  ShapePlan* cur_ = nullptr;
  cudaEvent_t caller_ready_ = nullptr;  // the caller's stream reached this run (legacy-stream detour)
  cudaStream_t cudnn_stream_ = nullptr;  // the stream the cuDNN handle is on
  bool cudnn_stream_set_ = false;
  bool external_capture_ = false;       // this run is being captured into the caller's own CUDA graph
  cudaStreamCaptureMode capture_mode_ = cudaStreamCaptureModeThreadLocal;
  std::vector<Slot> slots_;
  bool slots_clean_ = false;  // slots_ is num_values empty slots (left so by a graph replay)
  std::vector<size_t> recorded_;  // bytes asked per value id this run
  size_t run_workspace_ = 0;      // most workspace bytes a layer asked for this run
  bool graphs_on_ = true, profiling_ = false, sync_check_ = false;
  // GRAFT_CUDA_GRAPH_TRACE=1: one line per run on stderr (graph replayed, captured or why not;
  // host time of the call) and a line whenever a plan, the arena or the workspace is made again,
  // naming the values that outgrew the plan: why a shape set keeps running eagerly.
  bool trace_ = false;
  std::vector<std::string> trace_outgrown_;
  std::chrono::steady_clock::time_point trace_t0_;  // when this run's call came in
  // An eager run's host time per op type (the trace's "eager host time by op" line): where issue
  // 14's per-layer cost goes, split into the op's own call (L.op->run: descriptors, library calls,
  // launches) and the engine's part around it (inputs, output shapes, arena buffers).
  struct TraceOpHost {
    int layers = 0;
    double total_us = 0, op_run_us = 0;
  };
  std::map<std::string, TraceOpHost> trace_op_host_;
  double trace_op_run_us_ = 0;  // set by run_layer: this layer's time inside L.op->run
  size_t last_graph_layers_ = 0;  // layers the last run replayed from a CUDA graph
  bool capturing_ = false;     // inside cudaStreamBeginCapture/EndCapture: no allocation, no sync
  bool check_layers_ = false;  // this run: synchronize after every layer (finding a failing layer)
  std::vector<cudaEvent_t> events_;
  // The profiler's gate (profiling_kernels.cuh): a host word mapped into the device.
  uint64_t* gate_host_ = nullptr;
  const uint64_t* gate_dev_ = nullptr;
  uint64_t gate_generation_ = 0;
  std::vector<double> cpu_ms_;
  std::vector<LayerTiming> timings_;
  std::vector<std::string> ran_tactics_;  // while profiling: what each layer's op says it ran (CudaExec::ran_tactic)
  MemoryPlanInfo last_plan_info_;
  TacticTuning* tuning_ = nullptr;
  cudaEvent_t profile_start_ = nullptr;  // set by run_layers while profiling, recorded by run_layer
  std::vector<ShapePlan::LayerOut> scratch_outs_;  // a layer's output shapes when they are not memoized
  std::vector<Slot> released_in_capture_;  // buffers whose last reader ran inside a capture
  PreparedCache prepared_;  // kernels' descriptors and algorithm choices per problem (cuda_ops.h)
  // A counted layer's output count (CudaExec::output_count) and its pinned host copy; allocated at
  // init only when the engine has such a layer. One suffices: each is read before the next layer.
  Tensor count_dev_;
  int64_t* count_host_ = nullptr;
  // Unseeded random layers' run counters (CudaExec::random_counter), one uint64 each, zeroed, and
  // their base seeds; made with the context so a first run that captures finds them.
  Tensor random_counters_;
  std::vector<int> random_slot_;  // per layer: its counter's index, or -1
  std::vector<uint64_t> random_base_;
  // Invalid input data found by a kernel (CudaExec::fault, CudaOp::invalid_data): the device word
  // holds the first reporting layer's index + 1 and stays set until a check reports it; every run
  // copies it to the pinned host word after its layers (inside a whole-engine graph, in the graph).
  // Allocated at init only when a GPU layer can report (may_report_invalid_data: its op, or a
  // node in its subgraphs, whose tags are past the layers' and kept in subgraph_faults_).
  Tensor fault_dev_;
  int64_t* fault_host_ = nullptr;
  std::vector<bool> reports_;  // per layer: its kernels get the word
  SubgraphFaultTags subgraph_faults_;
  // Queues the device word's copy to the host (after a run's layers).
  Status copy_fault(cudaStream_t stream);
  // After the copy has completed: the run's error when a layer reported invalid data (clearing both
  // words), else ok. `earlier`: the copy was an earlier, unwaited run's, and this run did not start.
  Status check_fault(cudaStream_t stream, bool earlier);
};

class CudaEngine final : public Engine, public std::enable_shared_from_this<CudaEngine> {
 public:
  Status init(EngineState state, const BuilderConfig* config);
  // Build time: one eager run at the profile's opt shapes in which layers with several
  // implementations time them and record the fastest in the engine's tactic table (and the timing
  // cache file, when the config names one).
  Status time_tactics(const BuilderConfig& config);

  Result<std::string> serialize() const override { return write_plan_bytes(*state_); }
  Status save_plan(const std::string& path) const override { return save_engine_plan(*state_, path); }
  std::vector<IOInfo> inputs() const override { return engine_inputs(*state_); }
  std::vector<IOInfo> outputs() const override { return engine_outputs(*state_); }
  int num_profiles() const override { return static_cast<int>(state_->profiles.size()); }
  Result<OptimizationProfile> profile(int index) const override { return engine_profile(*state_, index); }
  DeviceType device() const override { return DeviceType::kCUDA; }
  std::string describe() const override;
  std::string describe_json() const override;
  // "CUDA graphs on", "CUDA graphs for the first N of M layers (then: reason)" or "CUDA graphs off (reason)".
  std::string graphs_text() const {
    if (graph_eligible_) return "CUDA graphs on";
    if (graph_layers_ > 0)
      return "CUDA graphs for the first " + std::to_string(graph_layers_) + " of " + std::to_string(layers_.size()) +
             " layers (then: " + graph_reason_ + ")";
    return "CUDA graphs off (" + graph_reason_ + ")";
  }
  Result<std::unique_ptr<ExecutionContext>> create_context() const override {
    auto ctx = std::make_unique<CudaContext>(shared_from_this(), device_);
    GRAFT_RETURN_IF_ERROR(ctx->init());
    return std::unique_ptr<ExecutionContext>(std::move(ctx));
  }

  const EngineState& state() const { return *state_; }
  const Graph& graph() const { return *state_->graph; }
  const std::vector<Layer>& layers() const { return layers_; }
  int value_id(const Value* v) const {
    auto it = vid_.find(v);
    return it == vid_.end() ? -1 : it->second;
  }
  const std::vector<ValueUse>& uses() const { return uses_; }
  size_t num_values() const { return uses_.size(); }
  const Tensor* device_constant(const Value* v) const {
    auto it = dconst_.find(v);
    return it == dconst_.end() ? nullptr : &it->second;
  }
  bool graph_eligible() const { return graph_eligible_; }
  const std::string& graph_reason() const { return graph_reason_; }
  // How many leading layers one CUDA graph per shape set can hold: every layer when the engine is
  // graph-eligible; else the layers before the first one that stops capture (a counted layer, a
  // host read of tensor data, the CPU reference), when they include at least two GPU layers; else 0.
  size_t graph_layers() const { return graph_layers_; }
  const std::optional<MemoryPlan>& static_plan() const { return static_plan_; }
  const std::vector<size_t>& static_sizes() const { return static_sizes_; }
  std::string static_key() const { return static_key_; }
  const std::optional<size_t>& static_workspace() const { return static_workspace_; }
  std::vector<const Value*> fallbacks() const {
    std::vector<const Value*> r;
    return r;
  }

 private:
  EngineState own_state_;
  const EngineState* state_ = &own_state_;
  int device_ = 0;
  cudaDeviceProp props_{};
  std::vector<Layer> layers_;
  std::map<const Value*, int> vid_;
  std::vector<ValueUse> uses_;
  std::map<const Value*, Tensor> dconst_;  // weights on the GPU, shared by all contexts
  bool graph_eligible_ = true;
  std::string graph_reason_;
  size_t graph_layers_ = 0;
  std::optional<MemoryPlan> static_plan_;
  std::vector<size_t> static_sizes_;
  std::string static_key_;
  std::optional<size_t> static_workspace_;
};

// The most kernel workspace any GPU layer asks for when every shape it sees is static; nullopt when
// some shape is known only at run time (then the first run of each shape set measures it).
std::optional<size_t> static_workspace_bytes(const std::vector<Layer>& layers) {
  static char stand_in = 0;  // workspace sizes read dims and dtypes only, never data
  auto static_dims = [](const Value* v, std::vector<int64_t>* dims) {
    if (!v->desc.shape || !shape_is_static(*v->desc.shape)) return false;
    *dims = shape_values(*v->desc.shape);
    return true;
  };
  size_t most = 0;
  for (const Layer& L : layers) {
    if (L.where != Where::kGpu) continue;
    const Node& node = *L.node;
    std::vector<Tensor> held(node.inputs.size());
    std::vector<const Tensor*> ins(node.inputs.size(), nullptr);
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const Value* v = node.inputs[k];
      if (!v) continue;
      if (v->constant) {
        ins[k] = &*v->constant;
        continue;
      }
      std::vector<int64_t> dims;
      if (!static_dims(v, &dims)) return std::nullopt;
      held[k] = Tensor::wrap(&stand_in, v->desc.dtype, dims, DeviceType::kCUDA);
      ins[k] = &held[k];
    }
    if (!L.op || !L.op->workspace_bytes) continue;
    // Outputs whose shapes are static, for an op whose scratch depends on them (a custom op's).
    std::vector<Tensor> outs(node.outputs.size());
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      std::vector<int64_t> dims;
      if (node.outputs[o] && static_dims(node.outputs[o], &dims))
        outs[o] = Tensor::wrap(&stand_in, node.outputs[o]->desc.dtype, dims, DeviceType::kCUDA);
    }
    const size_t ws = L.op->workspace_bytes(node, ins, outs);
    if (ws == kUnknownWorkspace) return std::nullopt;
    most = std::max(most, ws);
  }
  return most;
}

std::string shape_key(const std::vector<std::vector<int64_t>>& dims) {
  std::string k;
  for (const auto& d : dims) k += dims_text(d) + "|";
  return k;
}

// ------------------------------------------------------------------------------------------------
// Engine

Status CudaEngine::init(EngineState state, const BuilderConfig* config) {
  init_cuda_backend();
  GRAFT_ASSIGN_OR_RETURN(int ngpu, visible_gpus());
  (void)ngpu;
  GRAFT_CUDA_RETURN(cudaGetDevice(&device_), "querying the current CUDA device");
  GRAFT_CUDA_RETURN(cudaGetDeviceProperties(&props_, device_), "querying CUDA device ", device_);
  const int cc = props_.major * 10 + props_.minor;
  if (state.cuda_compute_capability && state.cuda_compute_capability != cc)
    return error(StatusCode::kUnsupported, "the plan was built for compute capability sm_",
                 state.cuda_compute_capability, " (", state.cuda_device_name.empty() ? "unknown GPU" : state.cuda_device_name,
                 ") but this GPU (", props_.name, ") is sm_", cc, "; rebuild the plan on this machine");
  state.cuda_compute_capability = cc;
  state.cuda_device_name = props_.name;
  if (!state.graph) return error(StatusCode::kInternal, "the engine state has no graph");
  own_state_ = std::move(state);
  const Graph& g = *state_->graph;
  const int n = static_cast<int>(g.nodes().size());

  for (const Value* v : g.inputs()) vid_.emplace(v, static_cast<int>(vid_.size()));
  for (const auto& node : g.nodes())
    for (const Value* v : node->outputs)
      if (v && !v->constant) vid_.emplace(v, static_cast<int>(vid_.size()));
  uses_.assign(vid_.size(), ValueUse{});
  for (const auto& [v, id] : vid_) uses_[id].first_step = uses_[id].last_step = 0;
  for (int i = 0; i < n; ++i)
    for (const Value* v : g.nodes()[i]->outputs)
      if (v && vid_.count(v)) uses_[vid_[v]].first_step = uses_[vid_[v]].last_step = i;
  for (int i = 0; i < n; ++i)
    for (const Value* v : g.nodes()[i]->inputs)
      if (v && vid_.count(v)) uses_[vid_[v]].last_step = std::max(uses_[vid_[v]].last_step, i);
  for (const Value* v : g.outputs())
    if (vid_.count(v)) {
      uses_[vid_[v]].last_step = n;
      uses_[vid_[v]].graph_output = true;
    }

  // Placement, last layer first, so a node knows whether its consumers read it on the host.
  auto consumers = g.consumers();
  layers_.resize(n);
  for (int i = n - 1; i >= 0; --i) {
    const Node& node = *g.nodes()[i];
    Layer& L = layers_[i];
    L.node = &node;
    if (reads_dims_only(node)) {
      L.where = Where::kCpuMeta;
    } else if (touches_containers(node)) {
      // Sequences and optionals are host objects holding tensors. Their ops run on the GPU's side
      // (src/ops/control_flow/control_flow_cuda.cpp) with the tensors in device memory; a node no CUDA op takes (a custom
      // op) runs on the CPU reference, with the tensors copied to the host.
      std::string why;
      if (gpu_supports(node, &L.op, &why)) {
        L.where = Where::kGpu;
      } else {
        L.where = Where::kCpuFallback;
        L.why = "it makes or reads sequence or optional values and " + why;
      }
    } else {
      // Read only on the host by its consumers (and not a graph output): keep it on the host.
      bool host_only = true, any_use = false;
      for (const Value* o : node.outputs) {
        if (!o) continue;
        if (o->is_graph_output) host_only = false;
        for (const Node* c : consumers[o]) {
          size_t ci = 0;
          while (ci < layers_.size() && layers_[ci].node != c) ++ci;
          if (ci >= layers_.size() || !layers_[ci].node) { host_only = false; continue; }
          for (size_t k = 0; k < c->inputs.size(); ++k)
            if (c->inputs[k] == o) {
              any_use = true;
              const Layer& CL = layers_[ci];
              bool host_read = CL.where != Where::kGpu || (k < CL.host_input.size() && CL.host_input[k]);
              if (CL.where == Where::kCpuMeta) host_read = true;
              host_only &= host_read;
            }
        }
      }
      // Only small integer values are worth keeping on the host (shape arithmetic).
      bool small_int = true;
      for (const Value* o : node.outputs)
        if (o && (dtype_is_float(o->desc.dtype) || !o->desc.shape || o->desc.shape->size() > 1)) small_int = false;
      std::string why;
      // A random node stays a layer of its own (GPU or CPU reference) even when only the host reads
      // it: a host layer over constants counts as shape arithmetic, memoized per shape set and
      // left out of graph replays, which would freeze its draw.
      if (host_only && any_use && small_int && !node_is_random(node)) {
        L.where = Where::kCpuHost;
      } else if (gpu_supports(node, &L.op, &why)) {
        L.where = Where::kGpu;
      } else {
        L.where = Where::kCpuFallback;
        L.why = why;
      }
    }
    L.host_input.assign(node.inputs.size(), L.where != Where::kGpu);
    L.counted = L.where == Where::kGpu && L.op && L.op->counted.is_counted() && output_shape_from_kernel(node);
    L.makes_outputs = L.where == Where::kGpu && L.op && L.op->makes_outputs_for(node);
    if (L.where == Where::kGpu && L.op)
      for (int k : L.op->host_inputs)
        if (k >= 0 && static_cast<size_t>(k) < L.host_input.size()) L.host_input[k] = true;
  }

  // Which values need a device buffer; weights the GPU reads are uploaded once, here.
  for (int i = 0; i < n; ++i) {
    const Layer& L = layers_[i];
    const Node& node = *L.node;
    if (L.where == Where::kGpu && !L.makes_outputs)
      for (const Value* o : node.outputs)
        if (o && vid_.count(o)) uses_[vid_[o]].device_buffer = true;
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const Value* v = node.inputs[k];
      if (!v || L.where != Where::kGpu || L.host_input[k]) continue;
      if (v->constant) {
        if (dconst_.count(v)) continue;
        const Tensor& h = *v->constant;
        auto d = device_empty(h.dtype(), h.dims(), "weight '" + v->name + "' of layer '" + node.name + "'");
        if (!d) return std::move(d).take_status();
        GRAFT_CUDA_RETURN(cudaMemcpy(d->data(), h.data(), h.nbytes(), cudaMemcpyHostToDevice),
                          "uploading weight '", v->name, "' (", h.nbytes(), " bytes)");
        dconst_[v] = std::move(d).value();
      } else if (vid_.count(v) && v->desc.is_tensor()) {
        uses_[vid_[v]].device_buffer = true;
      }
    }
  }
  // cudaMemcpy from pageable memory may return before its DMA lands, and the contexts' streams are
  // non-blocking (they do not wait for the legacy default stream): the weights are whole before a
  // context can read them.
  if (!dconst_.empty()) GRAFT_CUDA_RETURN(cudaDeviceSynchronize(), "waiting for the weights' upload");
  // Layers whose outputs only Shape/Size (or other such layers) read: dims, no kernel, no buffer.
  {
    std::map<const Node*, int> index;
    for (int i = 0; i < n; ++i) index[layers_[i].node] = i;
    for (int i = n - 1; i >= 0; --i) {
      Layer& L = layers_[i];
      if (L.where != Where::kGpu || L.counted || L.makes_outputs || L.node->outputs.empty()) continue;
      bool only_dims = true, any_use = false;
      for (const Value* o : L.node->outputs) {
        if (!o || !vid_.count(o)) continue;
        if (o->is_graph_output) only_dims = false;
        for (const Node* c : consumers[o]) {
          auto it = index.find(c);
          const Layer* CL = it == index.end() ? nullptr : &layers_[it->second];
          any_use = true;
          only_dims &= CL && (CL->where == Where::kCpuMeta || CL->dims_only);
        }
      }
      if (!only_dims || !any_use) continue;
      L.dims_only = true;
      for (const Value* o : L.node->outputs)
        if (o && vid_.count(o)) uses_[vid_[o]].device_buffer = false;
    }
  }
  // Reshape-like layers move no data: their output aliases the input's device buffer, which then
  // lives as long as the alias is read. They cost neither a kernel nor arena memory.
  {
    std::vector<int> root(uses_.size());
    for (size_t id = 0; id < root.size(); ++id) root[id] = static_cast<int>(id);
    for (int i = 0; i < n; ++i) {
      Layer& L = layers_[i];
      const Node& node = *L.node;
      if (L.where != Where::kGpu || L.dims_only || !is_reshape_view(node) || node.outputs.size() != 1)
        continue;
      const Value* in = node.input(0);
      const Value* out = node.output(0);
      if (!in || !out || in->constant || out->is_graph_output || L.host_input[0] || !vid_.count(in) || !vid_.count(out))
        continue;
      L.alias = true;
      const int src = root[vid_[in]];
      root[vid_[out]] = src;
      uses_[vid_[out]].device_buffer = false;
      uses_[src].last_step = std::max(uses_[src].last_step, uses_[vid_[out]].last_step);
    }
  }
  // Host values that depend only on the input shapes (Shape, Size and host arithmetic over them and
  // constants, as exporters emit for a dynamic batch) are the same for every run of one shape set,
  // and a captured graph is kept per shape set: they do not stop capture. A host value computed
  // from tensor data does (it needs a copy to the host and a synchronization), as does a layer on
  // the CPU reference. `shaped` marks values whose shape is a function of the input shapes.
  std::set<const Value*> shape_only, shaped;
  for (const Value* v : g.inputs()) shaped.insert(v);
  auto known = [](const std::set<const Value*>& set, const Value* v) { return !v || v->constant || set.count(v); };
  for (int i = 0; i < n; ++i) {
    Layer& L = layers_[i];
    const Node& node = *L.node;
    bool values_from_shapes = L.where == Where::kCpuMeta;  // Shape/Size read dims, never data
    if (L.where == Where::kCpuHost) {
      values_from_shapes = true;
      for (const Value* v : node.inputs) values_from_shapes &= known(shape_only, v);
    }
    bool inputs_shaped = true;
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const Value* v = node.inputs[k];
      inputs_shaped &= known(shaped, v);
      if (L.where == Where::kGpu && L.host_input[k]) inputs_shaped &= known(shape_only, v);
    }
    // A counted layer's output shape depends on the data, so it is never memoized and does not make
    // its consumers' shapes a function of the input shapes.
    L.dims_from_shapes = L.where == Where::kGpu && inputs_shaped && !L.counted && !L.makes_outputs;
    for (const Value* o : node.outputs) {
      if (!o) continue;
      if (values_from_shapes) shape_only.insert(o);
      if (values_from_shapes || L.dims_from_shapes) shaped.insert(o);
    }
    const bool eligible_before = graph_eligible_;
    if (L.where == Where::kCpuFallback || (L.where == Where::kCpuHost && !values_from_shapes)) {
      graph_eligible_ = false;
      if (graph_reason_.empty())
        graph_reason_ = "layer '" + node.name + "' runs on the CPU" +
                        (L.where == Where::kCpuHost ? " over tensor data" : " reference (" + L.why + ")");
    }
    // A layer with a counted output (NonZero, NonMaxSuppression on the GPU) turns CUDA graphs off
    // for the engine: its count must reach the host (a copy and a stream synchronization, which a
    // capture cannot contain) before the layers after it can be sized, and those sizes change from
    // run to run within one input-shape set, while a captured graph bakes every launch's size. The
    // count is the only tensor data this copies to the host: the output stays on the GPU.
    if (L.counted) {
      graph_eligible_ = false;
      if (graph_reason_.empty())
        graph_reason_ = "layer '" + node.name + "' (" + node.op_type +
                        ") has an output size known only after its kernel runs; the engine reads that count back";
    }
    // A control-flow layer decides on the host (which branch, whether to go on) and allocates as
    // it goes: a capture could hold neither.
    if (L.makes_outputs) {
      graph_eligible_ = false;
      if (graph_reason_.empty())
        graph_reason_ = "layer '" + node.name + "' (" + node.op_type +
                        ") runs its subgraphs on the GPU step by step, deciding on the host";
    }
    if (L.where == Where::kGpu)
      for (size_t k = 0; k < node.inputs.size(); ++k)
        if (L.host_input[k] && !known(shape_only, node.inputs[k])) {
          graph_eligible_ = false;
          if (graph_reason_.empty())
            graph_reason_ = "layer '" + node.name + "' reads '" + node.inputs[k]->name + "' (tensor data) on the host";
        }
    if (eligible_before && !graph_eligible_) graph_layers_ = static_cast<size_t>(i);
  }
  if (graph_eligible_) graph_layers_ = static_cast<size_t>(n);
  // A leading part with fewer than two GPU layers is not worth a graph launch of its own.
  int leading_gpu = 0;
  for (size_t i = 0; i < graph_layers_; ++i) leading_gpu += layers_[i].where == Where::kGpu;
  if (!graph_eligible_ && leading_gpu < 2) graph_layers_ = 0;
  if (!state_->cuda_graphs) {
    graph_eligible_ = false;
    graph_reason_ = "disabled when the engine was built";
    graph_layers_ = 0;
  }

  // A memory plan at build time when every buffer has a static shape.
  bool all_static = true;
  std::vector<BufferRequest> reqs;
  std::vector<int> req_vid;
  static_sizes_.assign(uses_.size(), 0);
  for (const auto& [v, id] : vid_) {
    if (!uses_[id].device_buffer) continue;
    if (!v->desc.shape || !shape_is_static(*v->desc.shape)) { all_static = false; break; }
    static_sizes_[id] = static_cast<size_t>(numel_of(shape_values(*v->desc.shape))) * dtype_size(v->desc.dtype);
  }
  if (all_static) {
    std::vector<std::vector<int64_t>> in_dims;
    for (const Value* v : g.inputs())
      in_dims.push_back(v->desc.is_tensor() ? shape_values(*v->desc.shape) : std::vector<int64_t>{});
    static_key_ = shape_key(in_dims);
    std::vector<BufferRequest> rq;
    for (size_t id = 0; id < uses_.size(); ++id)
      rq.push_back({uses_[id].device_buffer ? static_sizes_[id] : 0, uses_[id].first_step, uses_[id].last_step});
    static_plan_ = plan_memory(rq);
    static_workspace_ = static_workspace_bytes(layers_);
  }

  // Where the layers run, and why a layer is not on the GPU: the build's summary, and with
  // strict_device an error when tensor data would leave the GPU.
  int on_gpu = 0, host_shape = 0, fallback = 0;
  std::map<std::string, int> fallback_ops;
  std::string fallback_list;
  for (const Layer& L : layers_) {
    if (L.where == Where::kGpu) ++on_gpu;
    else if (L.where == Where::kCpuFallback) {
      ++fallback;
      ++fallback_ops[L.node->op_type];
      if (fallback <= 8) fallback_list += "\n  layer '" + L.node->name + "' (" + L.node->op_type + "): " + L.why;
    } else {
      ++host_shape;
    }
  }
  if (config && config->strict_device && fallback)
    return error(StatusCode::kUnsupported, fallback, " of ", n, " layers would run on the CPU reference (strict device "
                 "placement refuses them)", fallback_list, fallback > 8 ? "\n  ..." : "");
  if (config && config->progress) {
    for (const Layer& L : layers_)
      if (L.where == Where::kCpuFallback)
        config->progress("warning", "layer '" + L.node->name + "' (" + L.node->op_type +
                                        ") runs on the CPU reference with host<->device copies: " + L.why);
    std::string where = std::to_string(on_gpu) + " of " + std::to_string(n) + " layers on the GPU";
    const auto dims_only = std::count_if(layers_.begin(), layers_.end(), [](const Layer& L) { return L.dims_only; });
    if (dims_only) where += " (" + std::to_string(dims_only) + " of them only give Shape/Size their dims: no kernel)";
    if (host_shape) where += ", " + std::to_string(host_shape) + " host shape layers (dims arithmetic, no tensor data)";
    if (fallback) {
      where += ", " + std::to_string(fallback) + " on the CPU reference (";
      bool first = true;
      for (const auto& [op, count] : fallback_ops) {
        where += (first ? "" : ", ") + op + " x" + std::to_string(count);
        first = false;
      }
      where += ": no CUDA kernel for these nodes)";
    }
    where += "; " + graphs_text();
    config->progress("cuda", std::string(props_.name) + " sm_" + std::to_string(cc) + ", " + where +
                                 (static_plan_ ? ", activation arena " + std::to_string(static_plan_->peak_bytes) + " bytes" : ""));
  }
  if (config) GRAFT_RETURN_IF_ERROR(time_tactics(*config));
  return Status::ok();
}

Status CudaContext::set_profile(int index) {
  GRAFT_RETURN_IF_ERROR(check_profile_index(index, engine_->state().profiles.size()));
  profile_ = index;
  return Status::ok();
}

Status CudaEngine::time_tactics(const BuilderConfig& config) {
  int tunable = 0;
  for (const Layer& L : layers_) tunable += L.where == Where::kGpu && L.node->op_type == "GraftConv";
  if (!tunable) return Status::ok();
  auto progress = [&](const std::string& detail) {
    if (config.progress) config.progress("tactics", detail);
  };
  // Every distinct point of every profile (opt, min, max): a dynamic batch runs at all of them, and
  // a convolution tuned at the opt batch alone runs cuDNN's heuristic choice at the others (at
  // batch 32 of a 1..8..32 profile that made resnet50 2.2 times slower than torch.compile). Tactics
  // are keyed by concrete shapes, so each profile's points get their own choices.
  const std::vector<TimingPoint> points = distinct_profile_points(*this);
  auto cache = config.timing_cache_path.empty() ? Result<TacticTable>(TacticTable{})
                                                : TacticTable::load_cache_file(config.timing_cache_path);
  if (!cache) return std::move(cache).take_status();
  TacticTuning tuning;
  tuning.cache = &*cache;
  progress("timing " + std::to_string(tunable) + " convolution layers at " + std::to_string(points.size()) +
           " profile point(s)" +
           (num_profiles() > 1 ? " of " + std::to_string(num_profiles()) + " profiles" : std::string()) +
           (config.timing_cache_path.empty() ? "" : " (timing cache " + config.timing_cache_path + ", " +
                                                        std::to_string(cache->size()) + " entries)"));
  auto ctx = create_context();
  if (!ctx) return std::move(ctx).take_status();
  auto* c = static_cast<CudaContext*>(ctx->get());
  c->set_cuda_graphs(false);
  c->set_tuning(&tuning);
  const auto t0 = std::chrono::steady_clock::now();
  for (TimingPoint point : points) {
    // A later profile's points lie outside profile 0: the run checks them against their own profile.
    GRAFT_RETURN_IF_ERROR(c->set_profile(point.profile));
    auto inputs = timing_inputs(*this, point);
    if (!inputs) {
      progress("skipped: " + inputs.status().message());
      return Status::ok();
    }
    std::map<std::string, Tensor> outs;
    Status s = c->run(*inputs, outs);
    if (!s && (s.code() == StatusCode::kOutOfMemory || s.code() == StatusCode::kInternal))
      return error(s.code(), "tactic timing run failed: ", s.message());
    if (!s && config.progress) {
      // The timing inputs are random floats and zero integers: data a model may refuse (a zero
      // integer divisor, a Range step of zero, an index past an axis of one) although the model is
      // sound. Only the tactics depend on this run, so the build goes on: the convolutions it did
      // not time take their default tactic, and the same data fails a run with the same error.
      const char* at = point.point == ProfilePoint::kMin ? "min" : point.point == ProfilePoint::kMax ? "max" : "opt";
      config.progress("warning", std::string("tactic timing on synthetic inputs (zero integers) at the ") + at +
                                     " shapes of profile " + std::to_string(point.profile) + " stopped: " +
                                     s.to_string() + "; the convolutions it did not time take their default tactic");
    }
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  progress(std::to_string(tuning.stats.timed) + " layers timed, " + std::to_string(tuning.stats.from_cache) +
           " from the timing cache, " + std::to_string(state_->tactics->size()) + " tactics in the engine (" +
           std::to_string(static_cast<int>(ms)) + " ms)");
  if (!config.timing_cache_path.empty() && tuning.stats.timed > 0) {
    GRAFT_RETURN_IF_ERROR(cache->save_cache_file(config.timing_cache_path));
    progress("timing cache written: " + config.timing_cache_path);
  }
  return Status::ok();
}

std::string CudaEngine::describe() const {
  std::ostringstream os;
  os << describe_engine(*state_);
  const int cc = state_->cuda_compute_capability;
  os << "cuda: " << state_->cuda_device_name << " (sm_" << cc << "), " << graphs_text() << "\n";
  std::vector<const Layer*> fb, host;
  for (const Layer& L : layers_) {
    if (L.where == Where::kCpuFallback) fb.push_back(&L);
    if (L.where == Where::kCpuHost || L.where == Where::kCpuMeta) host.push_back(&L);
  }
  const auto dims_only = std::count_if(layers_.begin(), layers_.end(), [](const Layer& L) { return L.dims_only; });
  os << "placement: " << layers_.size() - fb.size() - host.size() << " layers on the GPU (" << dims_only
     << " dims only), " << host.size() << " host shape layers, " << fb.size() << " CPU fallback layers\n";
  if (!fb.empty()) {
    os << "CPU fallback layers (" << fb.size() << "):\n";
    for (const Layer* L : fb) os << "  " << L->node->name << " [" << L->node->op_type << "]: " << L->why << "\n";
  }
  if (static_plan_)
    os << "memory plan: activation arena " << static_plan_->peak_bytes << " bytes (without reuse "
       << static_plan_->total_bytes << " bytes)\n";
  else
    os << "memory plan: made per input shape set at run time (dynamic shapes)\n";
  return os.str();
}

std::string CudaEngine::describe_json() const {
  nlohmann::json j = nlohmann::json::parse(describe_engine_json(*state_), nullptr, false);
  if (j.is_discarded()) j = nlohmann::json::object();
  nlohmann::json c;
  c["device_name"] = state_->cuda_device_name;
  c["compute_capability"] = state_->cuda_compute_capability;
  c["cuda_graphs"] = graph_eligible_;
  c["cuda_graph_layers"] = graph_layers_;
  if (!graph_eligible_) c["cuda_graphs_off_reason"] = graph_reason_;
  c["layers"] = nlohmann::json::array();
  c["fallback_layers"] = nlohmann::json::array();
  for (const Layer& L : layers_) {
    nlohmann::json l = {{"name", L.node->name}, {"op_type", L.node->op_type}, {"device", where_name(L.where)}};
    if (!L.why.empty()) l["reason"] = L.why;
    c["layers"].push_back(l);
    if (L.where == Where::kCpuFallback) c["fallback_layers"].push_back({{"name", L.node->name}, {"reason", L.why}});
  }
  if (static_plan_)
    c["memory_plan"] = {{"peak_bytes", static_plan_->peak_bytes}, {"total_bytes", static_plan_->total_bytes}};
  else
    c["memory_plan"] = "per input shape set at run time";
  j["cuda"] = c;
  return j.dump(2);
}

// ------------------------------------------------------------------------------------------------
// Context

CudaContext::~CudaContext() {
  (void)cudaSetDevice(device_);
  if (run_done_) {
    (void)cudaEventSynchronize(run_done_);  // an enqueued run may still be using the arena
    (void)cudaEventDestroy(run_done_);
  }
  if (caller_ready_) (void)cudaEventDestroy(caller_ready_);
  drop_graphs();
  for (cudaEvent_t e : events_) (void)cudaEventDestroy(e);
  if (gate_host_) (void)cudaFreeHost(gate_host_);
  if (count_host_) (void)cudaFreeHost(count_host_);
  if (fault_host_) (void)cudaFreeHost(fault_host_);
  // The kernels' prepared state first: GraftConv's cuDNN execution plans were made on the handle.
  prepared_ = PreparedCache{};
  if (cublaslt_) cublasLtDestroy(cublaslt_);
#ifdef GRAFT_WITH_CUDNN
  if (cudnn_) cudnnDestroy(static_cast<cudnnHandle_t>(cudnn_));
#endif
  if (stream_) (void)cudaStreamDestroy(stream_);
}

void CudaContext::drop_graphs() {
  for (auto& [k, e] : plans_)
    if (e.plan.graph_exec) {
      (void)cudaGraphExecDestroy(e.plan.graph_exec);
      e.plan.graph_exec = nullptr;
    }
}

Status CudaContext::reset_library_handles() {
  prepared_ = PreparedCache{};
  if (cublaslt_) cublasLtDestroy(cublaslt_);
  cublaslt_ = nullptr;
  const cublasStatus_t bs = cublasLtCreate(&cublaslt_);
  if (bs != CUBLAS_STATUS_SUCCESS)
    return error(StatusCode::kRuntimeError, "cublasLtCreate failed with status ", static_cast<int>(bs), ": ",
                 cublasLtGetStatusString(bs));
#ifdef GRAFT_WITH_CUDNN
  if (cudnn_) cudnnDestroy(static_cast<cudnnHandle_t>(cudnn_));
  cudnn_ = nullptr;
  cudnn_stream_set_ = false;
  cudnnHandle_t h = nullptr;
  const cudnnStatus_t ds = cudnnCreate(&h);
  if (ds != CUDNN_STATUS_SUCCESS) return error(StatusCode::kRuntimeError, "cudnnCreate failed: ", cudnnGetErrorString(ds));
  cudnn_ = h;
#endif
  return Status::ok();
}

ShapePlan& CudaContext::plan_for(const std::string& key) {
  auto it = plans_.find(key);
  if (it != plans_.end()) {
    recency_.splice(recency_.begin(), recency_, it->second.recency);
    return it->second.plan;
  }
  recency_.push_front(key);
  PlanEntry& e = plans_[key];
  e.recency = recency_.begin();
  evict_plans(&e.plan);
  return e.plan;
}

void CudaContext::evict_plans(const ShapePlan* keep) {
  while (plans_.size() > graph_cache_size_ && !recency_.empty()) {
    auto victim = std::prev(recency_.end());
    auto it = plans_.find(*victim);
    if (&it->second.plan == keep) {
      if (victim == recency_.begin()) break;
      recency_.splice(recency_.begin(), recency_, victim);  // the plan in use stays
      continue;
    }
    if (it->second.plan.graph_exec) (void)cudaGraphExecDestroy(it->second.plan.graph_exec);
    if (cur_ == &it->second.plan) cur_ = nullptr;
    plans_.erase(it);
    recency_.erase(victim);
  }
}

void CudaContext::set_graph_cache_size(size_t n) {
  graph_cache_size_ = std::max<size_t>(n, 1);
  evict_plans(cur_);
}

Status CudaContext::init() {
  GRAFT_CUDA_RETURN(cudaSetDevice(device_), "selecting CUDA device ", device_);
  GRAFT_CUDA_RETURN(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "creating the context's CUDA stream");
  GRAFT_CUDA_RETURN(cudaEventCreateWithFlags(&run_done_, cudaEventDisableTiming), "creating the context's run event");
  GRAFT_CUDA_RETURN(cudaEventCreateWithFlags(&caller_ready_, cudaEventDisableTiming), "creating the context's input event");
  // The cuBLASLt and cuDNN handles: created where a failed capture recreates them, so both paths
  // make them alike.
  GRAFT_RETURN_IF_ERROR(reset_library_handles());
  for (const Layer& L : engine_->layers()) {
    if (!L.counted || count_host_) continue;
    auto c = device_bytes(sizeof(int64_t), "the output count of layer '" + L.node->name + "'");
    if (!c) return std::move(c).take_status();
    count_dev_ = std::move(c).value();
    void* h = nullptr;
    GRAFT_CUDA_RETURN(cudaHostAlloc(&h, sizeof(int64_t), cudaHostAllocDefault), "allocating the host output count");
    count_host_ = static_cast<int64_t*>(h);
  }
  reports_.assign(engine_->layers().size(), false);
  for (size_t i = 0; i < engine_->layers().size(); ++i) {
    const Layer& L = engine_->layers()[i];
    reports_[i] = L.where == Where::kGpu && L.op && may_report_invalid_data(*L.node);
  }
  subgraph_faults_.reset(static_cast<int64_t>(engine_->layers().size()) + 1);
  if (std::find(reports_.begin(), reports_.end(), true) != reports_.end()) {
    auto f = device_bytes(sizeof(int64_t), "the invalid-data word");
    if (!f) return std::move(f).take_status();
    fault_dev_ = std::move(f).value();
    void* h = nullptr;
    GRAFT_CUDA_RETURN(cudaHostAlloc(&h, sizeof(int64_t), cudaHostAllocDefault), "allocating the host invalid-data word");
    fault_host_ = static_cast<int64_t*>(h);
    *fault_host_ = 0;
    // Waited for, as the run counters below: the runs' streams do not wait for the legacy stream.
    GRAFT_CUDA_RETURN(cudaMemsetAsync(fault_dev_.data(), 0, sizeof(int64_t), stream_), "zeroing the invalid-data word");
    GRAFT_CUDA_RETURN(cudaStreamSynchronize(stream_), "zeroing the invalid-data word");
  }
  random_slot_.assign(engine_->layers().size(), -1);
  for (size_t i = 0; i < engine_->layers().size(); ++i) {
    const Layer& L = engine_->layers()[i];
    // Dropout too when its training_mode is computed at run time (node_is_random cannot tell): it
    // draws only when that flag is true, and its counter must exist before a first run captures.
    const bool draws = node_is_random(*L.node) || is_onnx(*L.node, "Dropout");
    if (L.where != Where::kGpu || !draws) continue;
    random_slot_[i] = static_cast<int>(random_base_.size());
    random_base_.push_back(fresh_random_base_seed());
  }
  if (!random_base_.empty()) {
    auto c = device_bytes(random_base_.size() * sizeof(uint64_t), "the random layers' run counters");
    if (!c) return std::move(c).take_status();
    random_counters_ = std::move(c).value();
    // Waited for: a run's stream (the context's or the caller's) is non-blocking, so a plain
    // memset on the legacy stream could land after the first run's draws.
    GRAFT_CUDA_RETURN(cudaMemsetAsync(random_counters_.data(), 0, random_counters_.nbytes(), stream_),
                      "zeroing the run counters");
    GRAFT_CUDA_RETURN(cudaStreamSynchronize(stream_), "zeroing the run counters");
  }
  graphs_on_ = !env_off("GRAFT_CUDA_GRAPHS");
  // How strictly the capture refuses unsafe CUDA calls from other code while graft captures:
  // thread_local (default: only this thread's), global, or relaxed (none refused).
  if (const char* m = std::getenv("GRAFT_CUDA_CAPTURE_MODE")) {
    const std::string mode = m;
    if (mode == "global") capture_mode_ = cudaStreamCaptureModeGlobal;
    else if (mode == "relaxed") capture_mode_ = cudaStreamCaptureModeRelaxed;
    else if (mode == "thread_local" || mode.empty()) capture_mode_ = cudaStreamCaptureModeThreadLocal;
    else return error(StatusCode::kInvalidArgument, "GRAFT_CUDA_CAPTURE_MODE must be thread_local, global or relaxed, not '",
                      mode, "'");
  }
  sync_check_ = env_on("GRAFT_CUDA_SYNC_CHECK");
  trace_ = env_on("GRAFT_CUDA_GRAPH_TRACE");
  if (const char* c = std::getenv("GRAFT_CUDA_GRAPH_CACHE")) {
    char* end = nullptr;
    const unsigned long long n = std::strtoull(c, &end, 10);
    if (end == c || *end || n == 0)
      return error(StatusCode::kInvalidArgument, "GRAFT_CUDA_GRAPH_CACHE must be a positive count of shape sets, not '",
                   c, "'");
    graph_cache_size_ = static_cast<size_t>(n);
  }
  if (engine_->static_plan()) {
    const MemoryPlan& mp = *engine_->static_plan();
    auto a = device_bytes(mp.peak_bytes, "the activation arena (" + std::to_string(mp.peak_bytes) + " bytes)");
    if (!a) return std::move(a).take_status();
    arena_ = std::move(a).value();
    ShapePlan& p = plan_for(engine_->static_key());
    p.planned = true;
    p.plan = mp;
    p.offset = mp.offsets;
    p.size = engine_->static_sizes();
    if (engine_->static_workspace()) {
      // One workspace for the context, sized for the hungriest layer, so the first run can be captured.
      p.workspace = *engine_->static_workspace();
      p.workspace_known = true;
      if (p.workspace) GRAFT_RETURN_IF_ERROR(ensure_workspace(p.workspace));
    }
  }
  return Status::ok();
}

Result<void*> CudaContext::workspace_for(size_t bytes) {
  run_workspace_ = std::max(run_workspace_, bytes);
  if (capturing_) {
    const size_t have = workspace_.defined() ? workspace_.nbytes() : 0;
    if (have < bytes)
      return error(StatusCode::kInternal, "the layer needs ", static_cast<uint64_t>(bytes),
                   " bytes of kernel workspace but only ", static_cast<uint64_t>(have),
                   " were allocated before CUDA graph capture (GPU memory cannot be allocated while capturing)");
    return workspace_.data();
  }
  GRAFT_RETURN_IF_ERROR(ensure_workspace(bytes));
  return workspace_.data();
}

Status CudaContext::ensure_workspace(size_t bytes) {
  if (bytes <= workspace_.nbytes() && workspace_.defined()) return Status::ok();
  if (trace_)
    std::fprintf(stderr, "graft: cuda trace: kernel workspace grows to %zu bytes (captured graphs dropped)\n", bytes);
  workspace_ = Tensor();
  drop_graphs();  // captured graphs hold the old address
  auto w = device_bytes(bytes, "the kernel workspace (the most any layer asks for)");
  if (!w) return std::move(w).take_status();
  workspace_ = std::move(w).value();
  return Status::ok();
}

Result<Tensor> CudaContext::acquire(int vid, DataType dt, const std::vector<int64_t>& dims, const Value* v,
                                    const Node* layer) {
  const size_t bytes = static_cast<size_t>(numel_of(dims)) * dtype_size(dt);
  if (vid >= 0) recorded_[vid] = std::max(recorded_[vid], bytes);
  // An empty tensor needs no bytes: any arena address does, and it outgrows nothing. (It used to
  // mark the plan dirty, as its slot has size 0: Faster R-CNN, whose small FPN levels often get no
  // boxes, planned again and captured its graph again on every run, 22 ms of host time a run.)
  if (bytes == 0 && arena_.defined()) return Tensor::wrap(arena_.data(), dt, dims, DeviceType::kCUDA);
  if (cur_ && cur_->planned && vid >= 0 && static_cast<size_t>(vid) < cur_->size.size() && bytes <= cur_->size[vid] &&
      cur_->size[vid] > 0)
    return Tensor::wrap(static_cast<char*>(arena_.data()) + cur_->offset[vid], dt, dims, DeviceType::kCUDA);
  if (cur_ && cur_->planned) cur_->dirty = true;  // data-dependent size: plan again after this run
  if (trace_ && trace_outgrown_.size() < 4)
    trace_outgrown_.push_back("'" + v->name + "' " + std::to_string(bytes) + " bytes > " +
                              std::to_string(cur_ && vid >= 0 && static_cast<size_t>(vid) < cur_->size.size()
                                                 ? cur_->size[vid]
                                                 : size_t{0}));
  const std::string what = layer ? "output '" + v->name + "' of layer '" + layer->name + "'" : "'" + v->name + "'";
  if (capturing_)
    return error(StatusCode::kInternal, what, " needs ", static_cast<uint64_t>(bytes),
                 " bytes, more than the memory plan gave it, and GPU memory cannot be allocated during CUDA graph capture");
  return device_empty(dt, dims, what);
}

Result<const Tensor*> CudaContext::on_host(const Value* v, cudaStream_t stream) {
  if (v->constant) return &*v->constant;
  const int id = engine_->value_id(v);
  if (id < 0) return error(StatusCode::kInternal, "value '", v->name, "' has no slot");
  Slot& s = slots_[id];
  if (s.host.defined()) return &s.host;
  if (!s.dev.defined()) return error(StatusCode::kInternal, "value '", v->name, "' was not computed before use");
  if (!s.dev.is_tensor()) {  // a sequence or optional whose tensors are on the GPU
    auto h = container_to(s.dev, DeviceType::kCPU, stream);
    if (!h) return std::move(h).take_status();
    s.host = std::move(h).value();
    return &s.host;
  }
  Tensor h = Tensor::empty(s.dev.dtype(), s.dev.dims());
  GRAFT_CUDA_RETURN(cudaMemcpyAsync(h.data(), s.dev.data(), h.nbytes(), cudaMemcpyDeviceToHost, stream),
                    "copying '", v->name, "' to the host");
  GRAFT_CUDA_RETURN(cudaStreamSynchronize(stream), "waiting for '", v->name,
                    "' (an earlier layer failed; set GRAFT_CUDA_SYNC_CHECK=1 to find which)");
  s.host = std::move(h);
  return &s.host;
}

Result<const Tensor*> CudaContext::on_device(const Value* v, cudaStream_t stream) {
  if (v->constant) {
    const Tensor* d = engine_->device_constant(v);
    if (!d) return error(StatusCode::kInternal, "weight '", v->name, "' was not uploaded");
    return d;
  }
  const int id = engine_->value_id(v);
  if (id < 0) return error(StatusCode::kInternal, "value '", v->name, "' has no slot");
  Slot& s = slots_[id];
  if (s.dev.defined()) return &s.dev;
  if (!s.host.defined()) return error(StatusCode::kInternal, "value '", v->name, "' was not computed before use");
  if (!s.host.is_tensor()) {  // a sequence or optional from the host (an input, a CPU layer)
    if (capturing_)
      return error(StatusCode::kInternal, "sequence or optional '", v->name, "' would be uploaded inside a capture");
    GRAFT_ASSIGN_OR_RETURN(s.dev, container_to(s.host, DeviceType::kCUDA, stream));
    return &s.dev;
  }
  GRAFT_ASSIGN_OR_RETURN(Tensor d, acquire(id, s.host.dtype(), s.host.dims(), v, nullptr));
  const void* src = s.host.data();
  if (capturing_) {
    if (!cur_)
      return error(StatusCode::kInternal, "value '", v->name, "' would be uploaded inside a capture with no plan to "
                   "keep its bytes");
    // The same bytes again (the caller capturing this shape set into graphs of its own, again and
    // again) reuse the kept copy, so the list stays as long as the distinct values.
    const char* bytes = static_cast<const char*>(s.host.data());
    std::vector<char> copy(bytes, bytes + s.host.nbytes());
    auto kept = std::find(cur_->captured_uploads.begin(), cur_->captured_uploads.end(), copy);
    if (kept == cur_->captured_uploads.end()) kept = cur_->captured_uploads.insert(kept, std::move(copy));
    src = kept->data();
  }
  GRAFT_CUDA_RETURN(cudaMemcpyAsync(d.data(), src, s.host.nbytes(), cudaMemcpyHostToDevice, stream),
                    "copying '", v->name, "' to the GPU");
  s.dev = std::move(d);
  return &s.dev;
}

Status CudaContext::run_layer(size_t i, cudaStream_t stream) {
  const Layer& L = engine_->layers()[i];
  const Node& node = *L.node;
  std::vector<const Tensor*> ins(node.inputs.size(), nullptr);
  std::vector<Tensor> meta(node.inputs.size());
  for (size_t k = 0; k < node.inputs.size(); ++k) {
    const Value* v = node.inputs[k];
    if (!v) continue;
    if (L.where == Where::kCpuMeta && !v->constant) {
      const int id = engine_->value_id(v);
      Slot& s = slots_[id];
      if (s.host.defined()) {
        ins[k] = &s.host;
      } else {
        // Shape/Size read dims only: a host stand-in with the device tensor's dims, no copy.
        static char dims_only = 0;
        meta[k] = Tensor::wrap(&dims_only, s.dev.dtype(), s.dev.dims());
        ins[k] = &meta[k];
      }
      continue;
    }
    auto t = L.host_input[k] ? on_host(v, stream) : on_device(v, stream);
    if (!t) return std::move(t).take_status().with_node(node.name, node.op_type);
    ins[k] = *t;
  }
  if (L.where != Where::kGpu) {
    auto outs = run_node_cpu(node, ins);
    if (!outs) return std::move(outs).take_status();
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      const int id = node.outputs[o] ? engine_->value_id(node.outputs[o]) : -1;
      if (id >= 0) slots_[id].host = std::move((*outs)[o]);
    }
    return Status::ok();
  }
  if (L.makes_outputs) return run_control_flow_layer(i, ins, stream);
  // Output shapes: inferred once per shape set where they depend on the input shapes alone.
  const bool memo = L.dims_from_shapes && cur_;
  if (memo && cur_->layers.size() != engine_->layers().size()) cur_->layers.assign(engine_->layers().size(), {});
  std::vector<int> count_axes;  // a counted layer's, per output (never memoized: always set here)
  if (!memo || !cur_->layers[i].outs) {
    std::vector<ShapePlan::LayerOut> shapes;
    if (L.counted && L.op->counted.outputs) {
      // Several outputs (Unique): the op sizes each one and names the axis its count replaces.
      auto all = L.op->counted.outputs(node, ins);
      if (!all) return std::move(all).take_status().with_node(node.name, node.op_type);
      if (all->size() != node.outputs.size())
        return error(StatusCode::kInternal, "the op sized ", static_cast<uint64_t>(all->size()), " of its ",
                     static_cast<uint64_t>(node.outputs.size()), " outputs")
            .with_node(node.name, node.op_type);
      for (size_t o = 0; o < node.outputs.size(); ++o) {
        const Value* v = node.outputs[o];
        shapes.push_back({v ? v->desc.dtype : DataType::kUndefined, std::move((*all)[o].dims)});
        count_axes.push_back((*all)[o].count_axis);
      }
    } else if (L.counted) {
      // Inference cannot size it (its count is a fresh symbol): the op's bound sizes the buffer.
      auto bound = L.op->counted.bound(node, ins);
      if (!bound) return std::move(bound).take_status().with_node(node.name, node.op_type);
      shapes.push_back({node.outputs[0]->desc.dtype, std::move(bound).value()});
      count_axes.push_back(L.op->counted.count_axis);
    } else {
      auto descs = infer_node_concrete(node, ins);
      if (!descs) return std::move(descs).take_status();
      for (size_t o = 0; o < node.outputs.size(); ++o)
        shapes.push_back(o < descs->size() && (*descs)[o].shape
                             ? ShapePlan::LayerOut{(*descs)[o].dtype, shape_values(*(*descs)[o].shape)}
                             : ShapePlan::LayerOut{DataType::kUndefined, {}});
    }
    if (!memo) {
      scratch_outs_ = std::move(shapes);
    } else {
      cur_->layers[i].outs = std::move(shapes);
    }
  }
  const std::vector<ShapePlan::LayerOut>& shapes = memo ? *cur_->layers[i].outs : scratch_outs_;
  if (L.dims_only) {
    // Only Shape/Size read these outputs: a stand-in with the dims and no bytes behind it.
    static char no_data = 0;
    for (size_t o = 0; o < node.outputs.size(); ++o)
      if (node.outputs[o] && o < shapes.size())
        slots_[engine_->value_id(node.outputs[o])].dev =
            Tensor::wrap(&no_data, shapes[o].dtype, shapes[o].dims, DeviceType::kCUDA);
    return Status::ok();
  }
  if (L.alias) {
    slots_[engine_->value_id(node.outputs[0])].dev =
        Tensor::wrap(ins[0]->data(), shapes[0].dtype, shapes[0].dims, DeviceType::kCUDA);
    return Status::ok();
  }
  std::vector<Tensor> outs(node.outputs.size());
  for (size_t o = 0; o < node.outputs.size(); ++o) {
    const Value* v = node.outputs[o];
    if (!v) continue;
    auto t = acquire(engine_->value_id(v), shapes[o].dtype, shapes[o].dims, v, &node);
    if (!t) return std::move(t).take_status().with_node(node.name, node.op_type);
    outs[o] = std::move(t).value();
  }
  // Profiling: the layer's start event goes here, after the host-side preparation above, so the
  // table shows GPU time rather than the gap while the GPU waited for the host.
  if (profile_start_) {
    (void)cudaEventRecord(profile_start_, stream);
    profile_start_ = nullptr;
  }
  Status st;
  if (!L.counted && outputs_all_empty(node, outs)) {
    // nothing to write (runtime/cpu_executor.h)
  } else {
    ExecContext ec = exec_context_for(node, ins, outs, stream);
    CudaExec ex = exec_for(ec);
    if (profiling_ && !capturing_ && i < ran_tactics_.size()) ex.ran_tactic = &ran_tactics_[i];
    if (L.counted) ex.output_count = count_dev_.data_as<int64_t>();
    give_fault_word(ex, i);
    if (const int r = random_slot_[i]; r >= 0) {
      ex.random_counter = static_cast<uint64_t*>(random_counters_.data()) + r;
      ex.random_base = random_base_[static_cast<size_t>(r)];
    }
    size_t ws = 0;
    if (L.op->workspace_bytes && memo && cur_->layers[i].workspace) {
      ws = *cur_->layers[i].workspace;
    } else if (L.op->workspace_bytes) {
      ws = L.op->workspace_bytes(node, ins, outs);
      if (memo) cur_->layers[i].workspace = ws;
    }
    if (ws) {
      auto w = workspace_for(ws);
      if (!w) return std::move(w).take_status().with_node(node.name, node.op_type);
      ex.workspace = *w;
      ex.workspace_size = ws;
    }
    const auto r0 = trace_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    try {
      st = L.op->run(ex);
    } catch (const std::exception& e) {
      st = error(StatusCode::kRuntimeError, "CUDA kernel threw an exception: ", e.what());
    }
    if (trace_)
      trace_op_run_us_ = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - r0).count();
  }
  if (!st) return st.with_node(node.name, node.op_type);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return cuda_status(e, "CUDA error launching the kernel").with_node(node.name, node.op_type);
  if ((sync_check_ || check_layers_) && !capturing_) {
    e = cudaStreamSynchronize(stream);
    if (e != cudaSuccess) return cuda_status(e, "CUDA error while running the kernel").with_node(node.name, node.op_type);
  }
  if (L.counted) return read_count(L, count_axes, outs, stream).with_node(node.name, node.op_type);
  for (size_t o = 0; o < node.outputs.size(); ++o) {
    const int id = node.outputs[o] ? engine_->value_id(node.outputs[o]) : -1;
    if (id >= 0) slots_[id].dev = std::move(outs[o]);
  }
  return Status::ok();
}

CudaExec CudaContext::exec_for(ExecContext& ec) {
  CudaExec ex;
  ex.ctx = &ec;
  ex.cublaslt = cublaslt_;
  ex.cudnn = cudnn_;
  ex.tactics = engine_->state().tactics.get();
  ex.tuning = capturing_ ? nullptr : tuning_;
  ex.prepared = &prepared_;
  return ex;
}

Status CudaContext::run_control_flow_layer(size_t i, const std::vector<const Tensor*>& ins, cudaStream_t stream) {
  const Layer& L = engine_->layers()[i];
  const Node& node = *L.node;
  if (profile_start_) {
    (void)cudaEventRecord(profile_start_, stream);
    profile_start_ = nullptr;
  }
  std::vector<Tensor> outs(node.outputs.size());
  ExecContext ec = exec_context_for(node, ins, outs, stream);
  CudaExec ex = exec_for(ec);
  give_fault_word(ex, i);
  Status st;
  try {
    st = L.op->run(ex);
  } catch (const std::exception& e) {
    st = error(StatusCode::kRuntimeError, "CUDA kernel threw an exception: ", e.what());
  }
  if (!st) return st.with_node(node.name, node.op_type);
  for (size_t o = 0; o < outs.size(); ++o) {
    if (!node.outputs[o]) continue;
    // A tensor must be on the GPU; a sequence or optional holds device tensors or none.
    if (!outs[o].defined() || (outs[o].is_tensor() && outs[o].device() != DeviceType::kCUDA))
      return error(StatusCode::kInternal, "the kernel left output ", static_cast<uint64_t>(o), " ('",
                   node.outputs[o]->name, "') without a device tensor")
          .with_node(node.name, node.op_type);
    slots_[engine_->value_id(node.outputs[o])].dev = std::move(outs[o]);
  }
  return Status::ok();
}

Status CudaContext::copy_fault(cudaStream_t stream) {
  GRAFT_CUDA_RETURN(cudaMemcpyAsync(fault_host_, fault_dev_.data(), sizeof(int64_t), cudaMemcpyDeviceToHost, stream),
                    "copying the invalid-data word to the host");
  return Status::ok();
}

Status CudaContext::check_fault(cudaStream_t stream, bool earlier) {
  const int64_t tag = *static_cast<volatile int64_t*>(fault_host_);
  if (tag == 0) return Status::ok();
  // Cleared before the next run starts, so one report is given once.
  *fault_host_ = 0;
  GRAFT_CUDA_RETURN(cudaMemsetAsync(fault_dev_.data(), 0, sizeof(int64_t), stream), "clearing the invalid-data word");
  GRAFT_CUDA_RETURN(cudaStreamSynchronize(stream), "clearing the invalid-data word");
  const char* when = earlier ? " (found on the GPU by an earlier run that was not waited for: that run's outputs "
                               "are not valid, and this run did not start)"
                             : " (found on the GPU: the run's outputs are not valid)";
  const auto& layers = engine_->layers();
  // A subgraph node's report names the engine layer that holds it, as the CPU reference's error does,
  // and says which node inside found it.
  if (const SubgraphFaultTags::Named* n = subgraph_faults_.find(tag)) {
    const int64_t layer = n->layer_tag;
    if (layer < 1 || static_cast<size_t>(layer) > layers.size())
      return error(StatusCode::kInternal, "the invalid-data word holds ", tag, ", whose layer ", layer, " is unknown");
    const Layer& L = layers[static_cast<size_t>(layer - 1)];
    return error(StatusCode::kInvalidArgument, "invalid input data in node '", n->node, "' (", n->op_type,
                 ") of a subgraph of node '", n->parent, "' (", n->parent_type, "): ", n->what, when)
        .with_node(L.node->name, L.node->op_type);
  }
  if (tag < 1 || static_cast<size_t>(tag) > layers.size() || !layers[tag - 1].op || !layers[tag - 1].op->invalid_data)
    return error(StatusCode::kInternal, "the invalid-data word holds ", tag, ", which names no reporting layer");
  const Layer& L = layers[static_cast<size_t>(tag - 1)];
  return error(StatusCode::kInvalidArgument, "invalid input data: ", L.op->invalid_data, when)
      .with_node(L.node->name, L.node->op_type);
}

// The count is the one piece of tensor data a counted layer sends to the host: 8 bytes and a
// synchronization, after which the output is a prefix view of its bound-sized buffer (arena slot,
// planned for the bound, so it never outgrows the plan) with the real dims. The layers after it
// are inferred from those dims, per run.
Status CudaContext::read_count(const Layer& L, const std::vector<int>& count_axes, std::vector<Tensor>& outs,
                               cudaStream_t stream) {
  GRAFT_CUDA_RETURN(cudaMemcpyAsync(count_host_, count_dev_.data(), sizeof(int64_t), cudaMemcpyDeviceToHost, stream),
                    "copying the output count to the host");
  GRAFT_CUDA_RETURN(cudaStreamSynchronize(stream),
                    "waiting for the output count (this layer or an earlier one failed; set GRAFT_CUDA_SYNC_CHECK=1 "
                    "to find which)");
  const int64_t count = *count_host_;
  const CountedOutput& c = L.op->counted;
  if (count < 0)
    return error(StatusCode::kInvalidArgument, c.invalid_data ? c.invalid_data : "the kernel found its input data invalid");
  // Every output's real dims are checked before any slot changes.
  const Node& node = *L.node;
  std::vector<std::vector<int64_t>> dims(outs.size());
  auto present = [&](size_t o) { return o < node.outputs.size() && node.outputs[o]; };
  for (size_t o = 0; o < outs.size(); ++o) {
    if (!present(o)) continue;
    if (engine_->value_id(node.outputs[o]) < 0) return error(StatusCode::kInternal, "counted output has no slot");
    dims[o] = outs[o].dims();
    const int axis = o < count_axes.size() ? count_axes[o] : -1;
    if (axis < 0) continue;
    const size_t a = static_cast<size_t>(axis);
    if (a >= dims[o].size() || count > dims[o][a])
      return error(StatusCode::kInternal, "the kernel counted ", count, " elements along axis ", axis, " of output ",
                   static_cast<uint64_t>(o), ", allocated as ", dims_text(dims[o]));
    dims[o][a] = count;
  }
  for (size_t o = 0; o < outs.size(); ++o) {
    if (!present(o)) continue;
    Slot& slot = slots_[engine_->value_id(node.outputs[o])];
    if ((o < count_axes.size() ? count_axes[o] : -1) < 0) {  // dims final: the buffer is the output
      slot.dev = std::move(outs[o]);
      slot.counted_buffer = Tensor();
      continue;
    }
    slot.dev = Tensor::wrap(outs[o].data(), outs[o].dtype(), std::move(dims[o]), DeviceType::kCUDA);
    slot.counted_buffer = std::move(outs[o]);  // owns the buffer when it was allocated outside the arena
  }
  return Status::ok();
}

Status CudaContext::run_layers(cudaStream_t stream, bool capturing, size_t begin, size_t end) {
  const auto& layers = engine_->layers();
  const auto& uses = engine_->uses();
  const bool timing = profiling_ && !capturing;
  if (timing) {
    while (events_.size() < 2 * layers.size()) {
      cudaEvent_t ev;
      GRAFT_CUDA_RETURN(cudaEventCreate(&ev), "creating profiling events");
      events_.push_back(ev);
    }
    cpu_ms_.assign(layers.size(), -1.0);
    ran_tactics_.assign(layers.size(), std::string());
    if (!gate_host_) {
      void* h = nullptr;
      void* d = nullptr;
      GRAFT_CUDA_RETURN(cudaHostAlloc(&h, sizeof(uint64_t), cudaHostAllocMapped), "allocating the profiler's gate");
      gate_host_ = static_cast<uint64_t*>(h);
      *gate_host_ = gate_generation_ = 0;
      GRAFT_CUDA_RETURN(cudaHostGetDevicePointer(&d, h, 0), "mapping the profiler's gate");
      gate_dev_ = static_cast<const uint64_t*>(d);
    }
  }
  for (size_t i = begin; i < end; ++i) {
    // Timed on the host: CPU layers, and counted layers, which synchronize inside run_layer and so
    // cannot sit behind the profiler's gate (the gate waits for the host, the host for the stream).
    const bool cpu = layers[i].where != Where::kGpu || layers[i].counted;
    std::chrono::steady_clock::time_point t0;
    if (timing) {
      if (cpu) {
        GRAFT_CUDA_RETURN(cudaStreamSynchronize(stream), "profiling layer '", layers[i].node->name, "'");
        t0 = std::chrono::steady_clock::now();
      } else {
        // Hold the stream until this layer is fully enqueued: its events then time the GPU only.
        GRAFT_CUDA_RETURN(k::launch_profiling_gate(gate_dev_, ++gate_generation_, 200, stream), "profiling layer '",
                          layers[i].node->name, "'");
        profile_start_ = events_[2 * i];  // recorded by run_layer just before the kernel
      }
    }
    const bool trace_host = trace_ && !capturing && !timing;
    std::chrono::steady_clock::time_point h0;
    if (trace_host) {
      trace_op_run_us_ = 0;
      h0 = std::chrono::steady_clock::now();
    }
    Status layer_status = run_layer(i, stream);
    if (trace_host) {
      TraceOpHost& t = trace_op_host_[layers[i].where == Where::kGpu ? layers[i].node->op_type
                                                                     : layers[i].node->op_type + " (CPU)"];
      ++t.layers;
      t.total_us += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - h0).count();
      t.op_run_us += trace_op_run_us_;
    }
    if (profile_start_) {  // the layer launched nothing (or failed before launching)
      (void)cudaEventRecord(profile_start_, stream);
      profile_start_ = nullptr;
    }
    if (timing && !cpu && layer_status) {
      const cudaError_t e = cudaEventRecord(events_[2 * i + 1], stream);
      if (e != cudaSuccess) layer_status = cuda_status(e, "profiling layer '", layers[i].node->name, "'");
    }
    if (timing && !cpu) *static_cast<volatile uint64_t*>(gate_host_) = gate_generation_;  // open the gate
    GRAFT_RETURN_IF_ERROR(layer_status);
    if (timing && cpu) {
      GRAFT_CUDA_RETURN(cudaStreamSynchronize(stream), "profiling layer '", layers[i].node->name, "'");
      cpu_ms_[i] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }
    // Release what no later layer reads (arena bytes are reused by the plan).
    for (const Value* v : layers[i].node->inputs) {
      const int id = v ? engine_->value_id(v) : -1;
      if (id < 0 || uses[id].graph_output || uses[id].last_step != static_cast<int>(i)) continue;
      // Inside a capture a buffer allocated outside the arena must not be freed (cudaFree is not
      // allowed while capturing): it is kept until the capture ends.
      if (capturing) released_in_capture_.push_back(std::move(slots_[id]));
      slots_[id] = Slot{};
    }
  }
  return Status::ok();
}

// One line after an eager run: its layers' host time per op type, the costliest first, each as
// "op layers total_us (us in the op's call)". A replayed run has no entries and prints nothing.
void CudaContext::print_trace_op_host() {
  if (trace_op_host_.empty()) return;
  std::vector<std::pair<std::string, TraceOpHost>> rows(trace_op_host_.begin(), trace_op_host_.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.total_us > b.second.total_us; });
  int layers = 0;
  double total = 0, op_run = 0;
  std::string by_op;
  for (const auto& [op, t] : rows) {
    layers += t.layers;
    total += t.total_us;
    op_run += t.op_run_us;
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s%s %d %.1f (%.1f)", by_op.empty() ? "" : "; ", op.c_str(), t.layers, t.total_us,
                  t.op_run_us);
    by_op += buf;
  }
  std::fprintf(stderr,
               "graft: cuda trace: eager host time by op: %d layers, %.1f us, %.1f us in the ops' calls; "
               "op layers us (us in the op's call): %s\n",
               layers, total, op_run, by_op.c_str());
  trace_op_host_.clear();
}

Status CudaContext::replan(ShapePlan& p) {
  const auto& uses = engine_->uses();
  // Sizes only grow within a shape set: a value the last plan sized keeps at least that size. The
  // sizes after a counted layer change from run to run, and a run that replays a leading-part graph
  // records nothing for the replayed layers' values.
  std::vector<BufferRequest> rq;
  std::vector<size_t> sizes(uses.size(), 0);
  for (size_t id = 0; id < uses.size(); ++id) {
    sizes[id] = std::max(recorded_[id], id < p.size.size() ? p.size[id] : size_t{0});
    rq.push_back({sizes[id], uses[id].first_step, uses[id].last_step});
  }
  p.plan = plan_memory(rq);
  p.offset = p.plan.offsets;
  p.size = std::move(sizes);
  p.dirty = false;
  if (p.graph_exec) {
    (void)cudaGraphExecDestroy(p.graph_exec);
    p.graph_exec = nullptr;
  }
  if (trace_) {
    std::string why;
    for (const auto& o : trace_outgrown_) why += (why.empty() ? "" : ", ") + o;
    std::fprintf(stderr, "graft: cuda trace: memory plan made again (%s)%s\n", why.empty() ? "first run" : why.c_str(),
                 !arena_.defined() || arena_.nbytes() < p.plan.peak_bytes ? "; the arena grows: captured graphs dropped" : "");
  }
  if (!arena_.defined() || arena_.nbytes() < p.plan.peak_bytes) {
    drop_graphs();
    arena_ = Tensor();
    auto a = device_bytes(std::max<size_t>(p.plan.peak_bytes, 1),
                          "the activation arena (" + std::to_string(p.plan.peak_bytes) + " bytes)");
    if (!a) {
      for (auto& [k, other] : plans_) other.plan.planned = false;
      return std::move(a).take_status();
    }
    arena_ = std::move(a).value();
  }
  p.planned = true;
  return Status::ok();
}

// Graph inputs: device tensors are read in place; host tensors are copied when a GPU layer reads
// them. Under a CUDA graph every input is copied into its arena slot (the graph bakes addresses).
Status CudaContext::bind_inputs(const std::map<std::string, Tensor>& inputs, cudaStream_t stream, bool into_arena) {
  for (const Value* v : engine_->graph().inputs()) {
    const int id = engine_->value_id(v);
    const Tensor& t = inputs.at(v->name);
    if (!t.is_tensor()) {  // a sequence or optional: where its tensors are
      (t.device() == DeviceType::kCUDA ? slots_[id].dev : slots_[id].host) = t;
      continue;
    }
    if (into_arena && engine_->uses()[id].device_buffer) {
      auto d = acquire(id, t.dtype(), t.dims(), v, nullptr);
      if (!d) return std::move(d).take_status();
      GRAFT_CUDA_RETURN(cudaMemcpyAsync(d->data(), t.data(), t.nbytes(),
                                        t.device() == DeviceType::kCUDA ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice,
                                        stream),
                        "copying input '", v->name, "' to the GPU");
      slots_[id].dev = std::move(d).value();
      if (t.device() == DeviceType::kCPU) slots_[id].host = t;
    } else if (t.device() == DeviceType::kCUDA) {
      slots_[id].dev = t;
      // Read in place this run, but a captured run copies it into the arena (a graph bakes
      // addresses): the plan made from this run must give it a slot. Without one, the capturing
      // run allocated the copy outside the plan and freed it inside the capture, which the CUDA
      // runtime refuses (cudaErrorStreamCaptureUnsupported): the capture was invalidated and the
      // next library call (cuDNN) failed, so every dynamic-shape engine ran eagerly for good.
      if (engine_->uses()[id].device_buffer) recorded_[id] = std::max(recorded_[id], t.nbytes());
    } else {
      slots_[id].host = t;
    }
  }
  return Status::ok();
}

// A replayed graph failed. A graph has no layer boundaries, so run the same inputs again eagerly,
// synchronizing after every layer, to name the layer; the graph stays off for this shape set.
Status CudaContext::replay_graph_failure(ShapePlan& plan, cudaError_t e, const std::map<std::string, Tensor>& inputs,
                                         std::map<std::string, Tensor>& outputs, cudaStream_t stream, bool sync) {
  (void)cudaGetLastError();
  slots_.clear();
  if (plan.graph_exec) (void)cudaGraphExecDestroy(plan.graph_exec);
  plan.graph_exec = nullptr;
  plan.graph_failed = true;
  const cudaError_t after = cudaStreamSynchronize(stream);
  (void)cudaGetLastError();
  if (after != cudaSuccess)  // sticky: every later call fails the same way, so replaying names nothing
    return cuda_status(e, "CUDA error while replaying the CUDA graph (the CUDA context cannot recover, so the layer "
                          "cannot be found by an eager replay; run with GRAFT_CUDA_GRAPHS=0 GRAFT_CUDA_SYNC_CHECK=1 to "
                          "find it)");
  log_warning_once(std::string("CUDA error ") + cudaGetErrorName(e) +
                   " while replaying the CUDA graph; replaying eagerly layer by layer");
  check_layers_ = true;
  Status st = execute(inputs, outputs, stream, sync);
  check_layers_ = false;
  return st;
}

Status CudaContext::execute_in_order(const std::map<std::string, Tensor>& inputs,
                                     std::map<std::string, Tensor>& outputs, cudaStream_t caller, bool sync) {
  if (trace_) trace_t0_ = std::chrono::steady_clock::now();
  GRAFT_CUDA_RETURN(cudaSetDevice(device_), "selecting CUDA device ", device_);
  // The legacy default stream (what torch runs on unless told otherwise) and the per-thread default
  // stream cannot be captured into a CUDA graph. Such a caller's run goes to the context's own
  // stream, after everything the caller queued before (its inputs) and before everything it queues
  // after (reading the outputs), through two events.
  const bool detour = caller == cudaStreamLegacy || caller == cudaStreamPerThread;
  cudaStream_t stream = caller;
  if (detour) {
    GRAFT_CUDA_RETURN(cudaEventRecord(caller_ready_, caller), "marking the caller's stream before this run");
    GRAFT_CUDA_RETURN(cudaStreamWaitEvent(stream_, caller_ready_, 0), "ordering this run after the caller's work");
    stream = stream_;
  }
  // A caller capturing its own CUDA graph (torch.cuda.graph around graft) gets this run recorded
  // into it: no graph of graft's own, no allocation, no synchronization.
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  GRAFT_CUDA_RETURN(cudaStreamIsCapturing(stream, &capture), "querying the stream's capture state");
  external_capture_ = capture == cudaStreamCaptureStatusActive;
  if (external_capture_ && sync)
    return error(StatusCode::kInvalidArgument,
                 "the stream is being captured into a CUDA graph: use enqueue (a synchronous run cannot be captured)");
  if (last_stream_ && last_stream_ != stream && !external_capture_)
    GRAFT_CUDA_RETURN(cudaStreamWaitEvent(stream, run_done_, 0), "ordering this run after the previous one");
  // An earlier run nobody waited for may have found invalid data: reported now, if it has finished
  // (a run still in flight is checked by a later call).
  if (fault_host_ && !external_capture_ && last_stream_ && cudaEventQuery(run_done_) == cudaSuccess)
    GRAFT_RETURN_IF_ERROR(check_fault(stream, true));
#ifdef GRAFT_WITH_CUDNN
  // The handle follows the run's stream here, once per change, not in every convolution call:
  // kernels never touch handle state, and nothing but kernel launches happens inside a capture.
  if (cudnn_ && (!cudnn_stream_set_ || cudnn_stream_ != stream)) {
    const cudnnStatus_t ds = cudnnSetStream(static_cast<cudnnHandle_t>(cudnn_), stream);
    if (ds != CUDNN_STATUS_SUCCESS)
      return error(StatusCode::kRuntimeError, "cudnnSetStream failed: ", cudnnGetErrorString(ds),
                   external_capture_ ? " (the stream is being captured into a CUDA graph: run once on this stream "
                                       "before capturing)"
                                     : "");
    cudnn_stream_ = stream;
    cudnn_stream_set_ = true;
  }
#endif
  Status st = execute(inputs, outputs, stream, sync);
  if (external_capture_) {
    external_capture_ = false;
    return st;
  }
  // Recorded after a failed run too: whatever it left queued is covered.
  if (cudaEventRecord(run_done_, stream) == cudaSuccess) last_stream_ = stream;
  else (void)cudaGetLastError();
  if (detour) GRAFT_CUDA_RETURN(cudaStreamWaitEvent(caller, run_done_, 0), "ordering the caller's later work after this run");
  return st;
}

Status CudaContext::execute(const std::map<std::string, Tensor>& inputs, std::map<std::string, Tensor>& outputs,
                            cudaStream_t stream, bool sync) {
  const Graph& g = engine_->graph();
  const EngineState& es = engine_->state();
  // The device is selected by execute_in_order, the only way in.
  // Inputs: known names, all given, dtypes and shapes inside the profile.
  GRAFT_RETURN_IF_ERROR(check_input_names(g, inputs));
  trace_outgrown_.clear();
  trace_op_host_.clear();
  std::vector<std::vector<int64_t>> in_dims;
  bool all_device = !g.inputs().empty();
  SymbolBindings bindings;
  for (const Value* v : g.inputs()) {
    auto it = inputs.find(v->name);
    if (it == inputs.end())
      return error(StatusCode::kInvalidArgument, "input '", v->name, "' (", v->desc.to_string(), ") was not given");
    const Tensor& t = it->second;
    if (!t.defined()) return error(StatusCode::kInvalidArgument, "input '", v->name, "' is an empty tensor handle");
    // The CPU context's checks (kind, dtype, shape, symbols, the selected profile's range), so both
    // refuse the same inputs with the same words.
    GRAFT_RETURN_IF_ERROR(check_input(*v, t, es, profile_, bindings));
    if (!t.is_tensor()) {
      // A sequence or optional stays on the host for the layers that read it (the CPU reference:
      // see CudaEngine::init); its tensors' shapes do not key the plan, which sizes device buffers.
      all_device = false;
      in_dims.emplace_back();
      continue;
    }
    all_device &= t.device() == DeviceType::kCUDA;
    in_dims.push_back(t.dims());
  }

  cur_ = &plan_for(shape_key(in_dims));
  ShapePlan& plan = *cur_;
  if (external_capture_ && !engine_->graph_eligible())
    return error(StatusCode::kUnsupported, "this engine cannot be captured into a CUDA graph: ", engine_->graph_reason());
  if (external_capture_ && !(plan.planned && !plan.dirty && plan.workspace_known))
    return error(StatusCode::kInvalidArgument, "this input shape set has not run on this context yet, so its memory is "
                 "not planned and it cannot be captured into the caller's CUDA graph: run it once before capturing");
  if (external_capture_ && plan.workspace) GRAFT_RETURN_IF_ERROR(ensure_workspace(plan.workspace));
  // Empty slots for every value. A graph replay fills only the inputs' and outputs' slots and
  // empties them again at its end, so the next run reuses the vector as it is: constructing every
  // value's slot again is host time before the launch, which small batches see as latency.
  if (!slots_clean_ || slots_.size() != engine_->num_values()) slots_.assign(engine_->num_values(), Slot{});
  slots_clean_ = false;
  recorded_.assign(engine_->num_values(), 0);
  run_workspace_ = 0;
  timings_.clear();
  last_graph_layers_ = 0;
  // The graph holds every layer, or only the leading ones (an engine with a counted layer, such as
  // a detector's NonMaxSuppression: the backbone before it is the same launches every run of a
  // shape set; the layers from the counted one on run eagerly after the replay, sized per run).
  const size_t n_layers = engine_->layers().size(), graph_layers = engine_->graph_layers();
  const bool partial = graph_layers < n_layers;
  // A graph needs a settled plan for this shape set (arena offsets and kernel workspace known);
  // otherwise this run is the eager warm-up and the next one captures. Per-layer synchronization
  // (GRAFT_CUDA_SYNC_CHECK, profiling) is impossible inside a capture, so those runs stay eager.
  bool use_graph = graphs_on_ && graph_layers > 0 && !profiling_ && !sync_check_ && !check_layers_ &&
                   !external_capture_ && plan.planned && !plan.dirty && plan.workspace_known && !plan.graph_failed;
  std::string trace_what;
  if (trace_ && !use_graph)
    trace_what = std::string("eager: ") +
                 (!graphs_on_                        ? "CUDA graphs off"
                  : graph_layers == 0                ? "no layers a graph can hold"
                  : profiling_                       ? "profiling"
                  : sync_check_ || check_layers_     ? "synchronizing after every layer"
                  : external_capture_                ? "recorded into the caller's capture"
                  : !plan.planned                    ? "first run of this shape set (planning it)"
                  : plan.dirty                       ? "the plan is being made again"
                  : !plan.workspace_known            ? "kernel workspace not known yet"
                  : plan.graph_failed                ? "capture failed before for this shape set"
                                                     : "?");
  if (use_graph && !plan.graph_exec && plan.workspace) {
    // Allocated here, before capture begins: cudaMalloc is not allowed inside a capture.
    GRAFT_RETURN_IF_ERROR(ensure_workspace(plan.workspace));
  }
  GRAFT_RETURN_IF_ERROR(bind_inputs(inputs, stream, use_graph));
  if (use_graph && plan.dirty) {
    // An input outgrew its arena slot (a plan made before inputs were recorded): run eagerly this
    // time, plan again after it, and capture on the next run.
    use_graph = false;
    trace_what = "eager: an input outgrew its arena slot";
    slots_.assign(engine_->num_values(), Slot{});
    GRAFT_RETURN_IF_ERROR(bind_inputs(inputs, stream, false));
  }

  Status st;
  bool ran = false;
  // The trace splits a replay's host time: what comes before the launch delays the GPU's start.
  std::chrono::steady_clock::time_point launch_t0, launch_t1;
  if (use_graph && plan.graph_exec) {
    if (trace_) launch_t0 = std::chrono::steady_clock::now();
    cudaError_t e = cudaGraphLaunch(plan.graph_exec, stream);
    if (trace_) launch_t1 = std::chrono::steady_clock::now();
    if (e == cudaSuccess && sync && !partial) e = cudaStreamSynchronize(stream);
    if (e != cudaSuccess) return replay_graph_failure(plan, e, inputs, outputs, stream, sync);
    last_graph_layers_ = graph_layers;
    trace_what = "replayed";
    if (partial) {
      for (const auto& [vid, t] : plan.graph_live_dev) slots_[vid].dev = t;
      for (const auto& [vid, t] : plan.graph_live_host) slots_[vid].host = t;
      st = run_layers(stream, false, graph_layers, n_layers);
    } else {
      for (const auto& od : plan.graph_outputs)
        slots_[od.vid].dev = Tensor::wrap(static_cast<char*>(arena_.data()) + plan.offset[od.vid], od.dtype, od.dims,
                                          DeviceType::kCUDA);
      for (const auto& [vid, t] : plan.graph_host_outputs) slots_[vid].host = t;
    }
    ran = true;
  } else if (use_graph) {
    // Capture once for this shape set; any failure falls back to eager execution for good.
    cudaGraph_t graph = nullptr;
    std::string fail;
    cudaError_t e = cudaStreamBeginCapture(stream, capture_mode_);
    if (e != cudaSuccess) {
      fail = std::string("begin capture: ") + cudaGetErrorString(e);
    } else {
      capturing_ = true;
      Status cs = run_layers(stream, true, 0, graph_layers);
      if (cs && fault_host_ && !partial) cs = copy_fault(stream);
      capturing_ = false;
      // What the CUDA runtime last refused, and whether the capture was still valid: a library
      // call that failed inside the capture often hides the runtime error that caused it.
      const cudaError_t last = cudaPeekAtLastError();
      cudaStreamCaptureStatus cst = cudaStreamCaptureStatusNone;
      (void)cudaStreamIsCapturing(stream, &cst);
      // Always end the capture, even after a failure, so the stream leaves capture mode.
      e = cudaStreamEndCapture(stream, &graph);
      released_in_capture_.clear();
      if (!cs)
        fail = cs.to_string() + " [CUDA last error " + cudaGetErrorName(last) + ", capture " +
               (cst == cudaStreamCaptureStatusActive ? "active" : cst == cudaStreamCaptureStatusInvalidated ? "invalidated" : "none") + "]";
      else if (e != cudaSuccess || !graph) fail = std::string("end capture: ") + cudaGetErrorString(e);
      else if (plan.dirty) fail = "a buffer outgrew the memory plan during capture";
    }
    if (fail.empty()) {
      e = cudaGraphInstantiate(&plan.graph_exec, graph, 0);
      if (e != cudaSuccess) {
        fail = std::string("instantiate: ") + cudaGetErrorString(e);
        plan.graph_exec = nullptr;
      }
    }
    if (graph) (void)cudaGraphDestroy(graph);
    (void)cudaGetLastError();  // an invalidated capture leaves its error behind; the context is fine
    if (fail.empty()) {
      plan.graph_outputs.clear();
      plan.graph_host_outputs.clear();
      plan.graph_live_dev.clear();
      plan.graph_live_host.clear();
      if (partial) {
        // What the captured layers leave for the rest: arena views (the graph writes them at these
        // addresses every replay) and host shape values (functions of the shape set, the plan's
        // key). Graph inputs are bound by every run itself.
        std::vector<char> is_input(slots_.size(), 0);
        for (const Value* v : g.inputs()) is_input[static_cast<size_t>(engine_->value_id(v))] = 1;
        for (size_t id = 0; id < slots_.size(); ++id) {
          if (is_input[id]) continue;
          if (slots_[id].dev.defined()) plan.graph_live_dev.emplace_back(static_cast<int>(id), slots_[id].dev);
          if (slots_[id].host.defined()) plan.graph_live_host.emplace_back(static_cast<int>(id), slots_[id].host.clone());
        }
      } else {
        for (const Value* v : g.outputs()) {
          const int id = engine_->value_id(v);
          if (id >= 0 && slots_[id].dev.defined() && !slots_[id].host.defined())
            plan.graph_outputs.push_back({id, slots_[id].dev.dtype(), slots_[id].dev.dims()});
          else if (id >= 0 && slots_[id].host.defined())
            plan.graph_host_outputs.emplace_back(id, slots_[id].host.clone());
        }
      }
      e = cudaGraphLaunch(plan.graph_exec, stream);
      if (e == cudaSuccess && sync && !partial) e = cudaStreamSynchronize(stream);
      if (e != cudaSuccess) return replay_graph_failure(plan, e, inputs, outputs, stream, sync);
      last_graph_layers_ = graph_layers;
      trace_what = "captured";
      if (partial) st = run_layers(stream, false, graph_layers, n_layers);
      ran = true;
    } else {
      log_warning_once("CUDA graph capture failed (" + fail + "); this input shape set runs eagerly");
      trace_what = "eager: capture failed (" + fail + ")";
      plan.graph_failed = true;
      plan.dirty = false;
      // A library call that failed inside the capture may leave its handle unusable: start the
      // eager run with fresh handles and nothing prepared on the old ones.
      GRAFT_RETURN_IF_ERROR(reset_library_handles());
      // Start over from the caller's inputs: the capture consumed the slots (inputs included, once
      // their last reader was recorded) and nothing it recorded has run.
      slots_.assign(engine_->num_values(), Slot{});
      GRAFT_RETURN_IF_ERROR(bind_inputs(inputs, stream, false));
#ifdef GRAFT_WITH_CUDNN
      if (cudnn_) {
        const cudnnStatus_t ds = cudnnSetStream(static_cast<cudnnHandle_t>(cudnn_), stream);
        if (ds != CUDNN_STATUS_SUCCESS)
          return error(StatusCode::kRuntimeError, "cudnnSetStream failed: ", cudnnGetErrorString(ds));
        cudnn_stream_ = stream;
        cudnn_stream_set_ = true;
      }
#endif
    }
  }
  if (!ran) {
    capturing_ = external_capture_;
    st = run_layers(stream, external_capture_, 0, n_layers);
    capturing_ = false;
    released_in_capture_.clear();
  }
  // A whole-engine graph copies the invalid-data word itself; eager and partial runs queue the copy.
  if (st && fault_host_ && !(ran && !partial)) st = copy_fault(stream);
  if (!st) {
    slots_.clear();
    (void)cudaStreamSynchronize(stream);
    (void)cudaGetLastError();
    return st;
  }

  // Outputs: into the caller's tensors when they fit, else new tensors on the inputs' device.
  for (const Value* v : g.outputs()) {
    const Tensor* src = nullptr;
    if (v->constant) {
      src = &*v->constant;
    } else {
      const int id = engine_->value_id(v);
      if (id < 0 || (!slots_[id].dev.defined() && !slots_[id].host.defined()))
        return error(StatusCode::kInternal, "graph output '", v->name, "' was not computed");
      src = slots_[id].dev.defined() ? &slots_[id].dev : &slots_[id].host;
    }
    if (!src->is_tensor()) {  // a sequence or optional: a host copy the caller owns
      GRAFT_ASSIGN_OR_RETURN(outputs[v->name], container_to(*src, DeviceType::kCPU, stream));
      continue;
    }
    auto oit = outputs.find(v->name);
    Tensor dst;
    if (oit != outputs.end() && oit->second.defined() && oit->second.dtype() == src->dtype() &&
        oit->second.dims() == src->dims()) {
      dst = oit->second;
    } else if (all_device) {
      auto d = device_empty(src->dtype(), src->dims(), "output '" + v->name + "'");
      if (!d) return std::move(d).take_status();
      dst = std::move(d).value();
    } else {
      dst = Tensor::empty(src->dtype(), src->dims());
    }
    cudaMemcpyKind kind = src->device() == DeviceType::kCUDA
                              ? (dst.device() == DeviceType::kCUDA ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost)
                              : (dst.device() == DeviceType::kCUDA ? cudaMemcpyHostToDevice : cudaMemcpyHostToHost);
    if (src->nbytes()) {
      if (kind == cudaMemcpyHostToHost) std::memcpy(dst.data(), src->data(), src->nbytes());
      else GRAFT_CUDA_RETURN(cudaMemcpyAsync(dst.data(), src->data(), src->nbytes(), kind, stream),
                             "copying output '", v->name, "'");
    }
    if (dst.device() == DeviceType::kCPU) sync = true;
    outputs[v->name] = dst;
  }
  Status data_fault;
  if (sync || plan.dirty || !plan.planned || profiling_) {
    cudaError_t e = cudaStreamSynchronize(stream);
    if (e != cudaSuccess) {
      slots_.clear();
      return cuda_status(e, "CUDA error while running the engine (set GRAFT_CUDA_SYNC_CHECK=1 to find the layer)");
    }
    // Reported at the end, once the run's bookkeeping (slots, memory plan) is done as for any run.
    if (fault_host_) data_fault = check_fault(stream, false);
  }
  if (profiling_) {
    const auto& layers = engine_->layers();
    double total = 0;
    for (size_t i = 0; i < layers.size(); ++i) {
      double ms = cpu_ms_[i];
      if (layers[i].where == Where::kGpu && !layers[i].counted) {
        float f = 0;
        GRAFT_CUDA_RETURN(cudaEventElapsedTime(&f, events_[2 * i], events_[2 * i + 1]), "reading profiling events");
        ms = f;
      }
      LayerTiming t;
      t.name = layers[i].node->name;
      t.op_type = layers[i].node->op_type;
      t.device = layers[i].where == Where::kGpu ? "cuda" : "cpu";
      t.ms = ms;
      if (i < ran_tactics_.size()) t.tactic = ran_tactics_[i];
      timings_.push_back(std::move(t));
      total += ms;
    }
    for (auto& t : timings_) t.percent = total > 0 ? 100.0 * t.ms / total : 0;
  }
  if (last_graph_layers_ == n_layers && n_layers > 0) {  // only these slots were filled (see above)
    for (const Value* v : g.inputs()) slots_[static_cast<size_t>(engine_->value_id(v))] = Slot{};
    for (const auto& od : plan.graph_outputs) slots_[static_cast<size_t>(od.vid)] = Slot{};
    for (const auto& [vid, t] : plan.graph_host_outputs) slots_[static_cast<size_t>(vid)] = Slot{};
    slots_clean_ = true;
  } else {
    slots_.clear();
  }
  plan.workspace = std::max(plan.workspace, run_workspace_);
  plan.workspace_known = true;
  if (!plan.planned || plan.dirty) GRAFT_RETURN_IF_ERROR(replan(plan));
  if (trace_) {
    using us = std::chrono::duration<double, std::micro>;
    std::string split;
    if (launch_t1 != std::chrono::steady_clock::time_point{})
      split = " (" + std::to_string(us(launch_t0 - trace_t0_).count()) + " us before cudaGraphLaunch, " +
              std::to_string(us(launch_t1 - launch_t0).count()) + " us in it)";
    std::fprintf(stderr, "graft: cuda trace: run %s, %zu of %zu layers from a graph, %.3f ms on the host%s\n",
                 trace_what.c_str(), last_graph_layers_, n_layers,
                 std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - trace_t0_).count(),
                 split.c_str());
    print_trace_op_host();
  }
  last_plan_info_.peak_bytes = plan.plan.peak_bytes;
  last_plan_info_.total_bytes = plan.plan.total_bytes;
  last_plan_info_.num_buffers = 0;
  for (size_t s : plan.size) last_plan_info_.num_buffers += s > 0;
  last_plan_info_.workspace_bytes = workspace_.defined() ? workspace_.nbytes() : 0;
  return data_fault;
}

}  // namespace

Result<DeviceQueries> query_cuda_device(EngineState& state) {
  init_cuda_backend();
  GRAFT_ASSIGN_OR_RETURN(int ngpu, visible_gpus());
  (void)ngpu;
  int dev = 0;
  cudaDeviceProp p{};
  GRAFT_CUDA_RETURN(cudaGetDevice(&dev), "querying the current CUDA device");
  GRAFT_CUDA_RETURN(cudaGetDeviceProperties(&p, dev), "querying CUDA device ", dev);
  state.cuda_compute_capability = p.major * 10 + p.minor;
  state.cuda_device_name = p.name;
  DeviceQueries q;
  q.runs = [](const Node& n) {
    const CudaOp* op = nullptr;
    std::string why;
    return gpu_supports(n, &op, &why);
  };
  q.host_inputs = [](const Node& n) {
    const CudaOp* op = cuda_op_for(n);
    return op ? op->host_inputs : std::vector<int>{};
  };
  return q;
}

Status select_device(int ordinal) {
  int count = 0;
  GRAFT_CUDA_RETURN(cudaGetDeviceCount(&count), "counting CUDA devices");
  if (ordinal < 0 || ordinal >= count)
    return error(StatusCode::kInvalidArgument, "CUDA device ", ordinal, " does not exist: this machine has ", count,
                 count == 1 ? " device (0)" : " devices (0 to " + std::to_string(count - 1) + ")");
  GRAFT_CUDA_RETURN(cudaSetDevice(ordinal), "selecting CUDA device ", ordinal);
  return Status::ok();
}

Result<std::shared_ptr<Engine>> make_cuda_engine(EngineState state, const BuilderConfig* config) {
  auto e = std::make_shared<CudaEngine>();
  GRAFT_RETURN_IF_ERROR(e->init(std::move(state), config));
  return std::shared_ptr<Engine>(e);
}

}  // namespace graft::cuda
