// graft/engine.h — build an engine from ONNX, save/load plans, run it.
//
// The TensorRT workflow: a BuilderConfig (optimization profiles with min/opt/max shapes per dynamic
// input, precision, device, plugin libraries) turns an ONNX model into an Engine; an Engine is
// serialized to a plan file and loaded back; an ExecutionContext runs it for input shapes inside
// the profile it has selected (profile 0 unless set_profile chose another).
//
// Threading contract (what may be shared across threads):
// - Engine: immutable once built or loaded. Every const method (inputs, outputs, describe,
//   describe_json, serialize, save_plan, create_context) may be called from any number of threads
//   at once; share one Engine (std::shared_ptr) between threads rather than building one per thread.
// - ExecutionContext: create one per thread. A context may be passed between threads, but its
//   run() must not be called from two threads at once unless the backend says otherwise: a CUDA
//   context owns a stream, activation buffers and captured CUDA graphs. The CPU context keeps no
//   state between runs, so concurrent run() calls on one CPU context are safe (tested), but code
//   that may also run on CUDA should keep one context per thread.
// - Tensors: inputs are only read during run(), so one input tensor may feed concurrent runs; an
//   output tensor given to run() to write in place must not be used by another concurrent run.
//   Outputs run() allocates own their memory (never an alias of an input), so they outlive inputs.
// - Plugins and the op registry: load_plugin_library and the registry are internally locked, but
//   load plugins before building engines that use their ops.
// - Python (graft.Engine): one Engine may be shared by any number of Python threads; run() releases
//   the GIL for the run and serializes runs on that engine's shared context. For parallel runs,
//   give each thread its own graft.Engine (loading the same plan is cheap).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graft/status.h"
#include "graft/tensor.h"

namespace graft {

class Graph;

// Shapes for one dynamic input: the optimization profile's minimum, optimum and maximum (TensorRT's
// optimization profile; `graft build --min-shapes/--opt-shapes/--max-shapes`).
struct ProfileRange {
  std::vector<int64_t> min, opt, max;
};

// One optimization profile: a range per dynamic input, by input name.
using OptimizationProfile = std::map<std::string, ProfileRange>;

struct IOInfo {
  std::string name;
  DataType dtype = DataType::kUndefined;
  std::string shape;  // symbolic, e.g. "[batch,3,224,224]"
  std::vector<int64_t> static_dims;  // -1 for dynamic dims
  std::optional<ProfileRange> profile;  // the input's range in profile 0 (Engine::profile for the others)
};

struct BuilderConfig {
  DeviceType device = DeviceType::kCPU;
  bool fp16 = false;
  std::map<std::string, ProfileRange> profile;     // per input name; static inputs need none
  // Several optimization profiles, as TensorRT's IBuilderConfig::addOptimizationProfile: profile k
  // is profiles[k], and a context selects one at run time (ExecutionContext::set_profile). When this
  // is empty, `profile` alone is profile 0 (the single-profile form); setting both is an error.
  // Every profile must give a range to the same dynamic inputs (ranges may overlap); an input none
  // of them names gets its fixed shape from `sample_shapes` or `unspecified_shape` in every profile.
  // A dimension stays dynamic in the engine unless every profile fixes it to the same value.
  std::vector<OptimizationProfile> profiles;
  std::vector<std::string> plugin_libraries;        // loaded before import
  std::string timing_cache_path;                    // CUDA tactic timing cache ("" = none)
  // CUDA engines: capture each input shape set once as a CUDA graph and replay it (where every
  // layer runs on the GPU). The environment variable GRAFT_CUDA_GRAPHS=0 also turns it off.
  bool cuda_graphs = true;
  // CUDA engines: fuse layers (Conv+bias+residual+Relu, GEMM epilogues, elementwise chains).
  bool fusion = true;
  // CUDA engines: tensor layout of convolutions: "auto", "nchw" or "nhwc". With "auto" and fusion
  // on, a model with convolutions is built as several engines (NCHW fused, NHWC regions for the
  // convolutions whose channel counts suit the tensor cores (float16 only), NCHW unfused), each is
  // timed at the profile's opt shapes and the fastest is kept (remembered in the timing cache).
  std::string layout = "auto";
  // CUDA engines in float16: an explicitly quantized (Q/DQ) convolution over int8 activations and
  // filters with zero points 0 runs on its integers (graft's INT8 kernel, exact sums, the scales
  // applied once in float32) instead of in float16 on the dequantized values. With layout "auto",
  // a model holding DequantizeLinear is also built and timed without it, and the faster kept.
  bool int8 = true;
  // CUDA engines: refuse to build (an error naming each such layer and why) when a layer would run
  // on the CPU reference over tensor data. Shape arithmetic on the host (Shape, Gather of a shape,
  // Concat of dims) is not counted: it reads dims, never tensor data.
  bool strict_device = false;
  // Layers held to a precision, as trtexec's --layerPrecisions with --precisionConstraints. Keys are
  // names of the model's nodes (of its main graph), or patterns in which '*' stands for any run of characters
  // ("/layer4/*", "*Softmax*"); values are DataType::kFloat32 (the FP16 pass leaves the layer in
  // float32) or DataType::kFloat16 (it runs in float16, even an op graft would otherwise keep in
  // float32; a node that writes no float32 tensor, such as Shape, is left as it is). A node named
  // exactly by a key takes that key's precision; otherwise the longest
  // pattern matching it decides. A key that matches no node of the model, another dtype, or
  // float16 in a build that is not FP16 (or is for the CPU, which has no float16 kernels) is an
  // error naming the key. Where a pass makes one layer of several (a convolution with its
  // activation, a GEMM with its bias), float32 wins over float16. The nodes of an If, Loop or Scan
  // body follow the node that holds it.
  std::map<std::string, DataType> layer_precisions;
  // What happens to a layer held to float16 that cannot run in float16: "obey" (an error naming it
  // and why), "prefer" (a warning; it stays float32) or "none" (the layer precisions are checked
  // against the model's node names and otherwise ignored), as trtexec's --precisionConstraints.
  std::string precision_constraints = "obey";
  // Shapes of sample inputs (`graft run --inputs`, graft.Engine.build(inputs=...)): a dynamic input
  // that `profile` does not name is built for exactly its sample's shape (min = opt = max), the way
  // ONNX Runtime and Polygraphy take shapes from the data. Static inputs are not affected (a sample
  // of the wrong shape is refused when the engine runs). A sample whose rank or fixed dimensions
  // disagree with the model's input is an error naming the input.
  std::map<std::string, std::vector<int64_t>> sample_shapes;
  // Called for each input that would stay dynamic with no shape from `profile` or `sample_shapes`
  // (its IOInfo: name, dtype, symbolic shape, static_dims with -1 where dynamic). It returns the
  // fixed shape to build that input for, or an error that stops the build. Unset, the build fails
  // naming the input. The command line sets every dynamic dimension to 1 with a warning (trtexec's
  // rule); Python names the profile= argument.
  std::function<Result<std::vector<int64_t>>(const IOInfo& input)> unspecified_shape;
  // Progress reports ("import", "shape inference", "fold constants", ...); may be empty.
  std::function<void(const std::string& stage, const std::string& detail)> progress;
};

// The precisions a layer can be held to (BuilderConfig::layer_precisions) by name: "fp32" or "float32",
// "fp16" or "float16"; an error naming the spelling otherwise.
Result<DataType> layer_precision_from_name(const std::string& name);

class Engine;
class ExecutionContext {
 public:
  virtual ~ExecutionContext() = default;
  // Runs with the given inputs (host or device tensors); every graph input is required. Output
  // tensors are allocated on the host unless `outputs` already holds a tensor of the right
  // shape/dtype for a name, which is then written in place. Errors name the input and the profile.
  virtual Status run(const std::map<std::string, Tensor>& inputs,
                     std::map<std::string, Tensor>& outputs) = 0;

  // Selects the optimization profile that later runs check their input shapes against (TensorRT's
  // setOptimizationProfileAsync); a new context is on profile 0. An index outside
  // [0, Engine::num_profiles()) is an error naming the index and the count, and leaves the
  // selection unchanged. A switch on the context rather than one context per profile: what a
  // context holds (a CUDA stream, library handles, activation memory, per-shape-set plans and
  // CUDA graphs) does not depend on the profile, since plans and tactics are keyed by concrete
  // shapes, so one context serves every profile (a prefill and a decode regime, say) without a
  // second copy of that state. Not to be called while a run() on this context is in progress.
  virtual Status set_profile(int index) = 0;
  virtual int profile() const = 0;
};

class Engine {
 public:
  virtual ~Engine() = default;

  static Result<std::shared_ptr<Engine>> build_from_onnx_file(const std::string& path,
                                                              const BuilderConfig& config);
  static Result<std::shared_ptr<Engine>> build_from_onnx_bytes(const std::string& bytes,
                                                               const BuilderConfig& config,
                                                               const std::string& name_for_errors);
  static Result<std::shared_ptr<Engine>> load_plan(const std::string& path);
  static Result<std::shared_ptr<Engine>> deserialize(const std::string& bytes,
                                                     const std::string& name_for_errors);

  virtual Result<std::string> serialize() const = 0;
  // Atomic: writes a temporary file beside `path`, then renames it over.
  virtual Status save_plan(const std::string& path) const = 0;

  virtual std::vector<IOInfo> inputs() const = 0;
  virtual std::vector<IOInfo> outputs() const = 0;
  // Optimization profiles: at least one (an engine without dynamic inputs has one, empty).
  virtual int num_profiles() const = 0;
  // The ranges of profile `index` by dynamic input; an error naming the index and the count when
  // there is no such profile.
  virtual Result<OptimizationProfile> profile(int index) const = 0;
  virtual DeviceType device() const = 0;
  // Human-readable and JSON descriptions (graft inspect).
  virtual std::string describe() const = 0;
  virtual std::string describe_json() const = 0;

  virtual Result<std::unique_ptr<ExecutionContext>> create_context() const = 0;
};

// Version of the graft library (also written into plans).
const char* version_string();

}  // namespace graft
