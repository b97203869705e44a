// graft/cuda_engine.h — what a CUDA engine's execution context adds to ExecutionContext.
//
// An Engine built with BuilderConfig::device == DeviceType::kCUDA creates contexts that are
// CudaExecutionContext (dynamic_cast the result of create_context()). Each context owns its CUDA
// stream, cuBLASLt/cuDNN handles, workspace and activation arena; several contexts of one engine may
// run at the same time from different threads. Declared in every build (so tools can test for it);
// only a graft built with CUDA creates one.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "graft/engine.h"

struct CUstream_st;  // cudaStream_t is CUstream_st*

namespace graft {

// One row of a per-layer profile.
struct LayerTiming {
  std::string name;
  std::string op_type;
  std::string device;   // "cuda", or "cpu" for a node that fell back to the CPU reference
  double ms = 0;        // CUDA-event time (wall time with copies for CPU nodes)
  double percent = 0;   // of the sum over layers
  std::string tactic;   // the implementation the layer ran, where it chooses one (GraftConv), else empty
};

// A fixed-width table: name, op type, device, time ms, % of total (and the tactic, when a row has
// one), and a total line.
std::string format_layer_timings(const std::vector<LayerTiming>& rows);

// The activation arena for the input shapes of the last run.
struct MemoryPlanInfo {
  size_t peak_bytes = 0;       // arena size: buffers with disjoint lifetimes share bytes
  size_t total_bytes = 0;      // sum of all activation buffers (no reuse)
  size_t num_buffers = 0;
  size_t workspace_bytes = 0;  // kernel scratch, shared by all layers
};

class CudaExecutionContext : public ExecutionContext {
 public:
  // Enqueues the whole network on `stream` (a cudaStream_t of the engine's device) and returns
  // without waiting, except where the host must see values: CPU-fallback layers, host outputs.
  // Inputs may be host or device tensors; outputs given as device tensors of the right
  // shape/dtype are written in place (no allocation), others are allocated on the inputs' device.
  virtual Status enqueue(const std::map<std::string, Tensor>& inputs, std::map<std::string, Tensor>& outputs,
                         CUstream_st* stream) = 0;
  // Per-layer timing with CUDA events (disables CUDA graphs while on).
  virtual void set_profiling(bool on) = 0;
  virtual std::vector<LayerTiming> layer_timings() const = 0;
  // CUDA graphs: captured once per input shape set and replayed (on by default; GRAFT_CUDA_GRAPHS=0
  // or BuilderConfig::cuda_graphs = false turn them off). When a layer stops capture (a counted
  // output such as NonMaxSuppression's, a host read of tensor data, the CPU reference), the graph
  // holds the layers before it and the rest run eagerly after each replay.
  virtual void set_cuda_graphs(bool on) = 0;
  virtual bool last_run_used_cuda_graph() const = 0;
  // How many of the engine's layers the last run replayed from a CUDA graph: all, the leading
  // part described above, or 0.
  virtual size_t last_run_graph_layers() const = 0;
  // How many input shape sets keep a captured CUDA graph (and their memory plan); the least
  // recently used one is dropped past this. Default 16, or GRAFT_CUDA_GRAPH_CACHE. At least 1.
  virtual void set_graph_cache_size(size_t n) = 0;
  virtual size_t graph_cache_size() const = 0;
  // Shape sets that hold a captured graph now (for tests and `graft run` reports).
  virtual size_t captured_graphs() const = 0;
  virtual MemoryPlanInfo memory_plan() const = 0;
};

}  // namespace graft
