// Host helpers shared by the CUDA op files (elementwise, reduce/norm, shape, nn, the op families):
// dtype checks for supports(), kernel errors turned into a Status naming the node, broadcast stride
// computation.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "backends/cuda/cuda_kernel_common.cuh"
#include "backends/cuda/owned_handle.h"
#include "backends/cuda/cuda_ops.h"
#include "graft/status.h"
#include "ops/attr_util.h"
#include "plan/tactics.h"
#include "runtime/tactic_timing.h"

namespace graft::cuda::util {

inline k::KType ktype(DataType t) { return static_cast<k::KType>(static_cast<int>(t)); }

inline cudaStream_t stream_of(const CudaExec& e) { return static_cast<cudaStream_t>(e.ctx->stream); }

inline const char* op_name(const CudaExec& e) { return e.ctx && e.ctx->node ? e.ctx->node->op_type.c_str() : "op"; }

// An error with the running node named (e.g. one from the CPU reference's attribute readers, whose
// message stays as it is); an OK status passes through.
inline Status with_node(const CudaExec& ex, Status st) {
  if (!st.is_ok() && ex.ctx && ex.ctx->node) st.with_node(ex.ctx->node->name, ex.ctx->node->op_type);
  return st;
}

// Input i, or nullptr when the node omits it (an optional input past the end or left empty).
inline const Tensor* input_or_null(const CudaExec& ex, size_t i) {
  return ex.ctx->inputs.size() > i ? ex.ctx->inputs[i] : nullptr;
}

// A failed launch becomes kRuntimeError naming the op and the node, with the CUDA error text.
inline Status launch_status(cudaError_t e, const CudaExec& ex, const char* what = "kernel launch") {
  if (e == cudaSuccess) return Status::ok();
  (void)cudaGetLastError();
  return with_node(ex, error(StatusCode::kRuntimeError, "CUDA ", op_name(ex), ": ", what, " failed: ",
                             cudaGetErrorName(e), " (", cudaGetErrorString(e), ")"));
}

template <typename... Args>
Status fail(const CudaExec& ex, StatusCode code, Args&&... parts) {
  return with_node(ex, error(code, "CUDA ", op_name(ex), ": ", std::forward<Args>(parts)...));
}

// dtype of input/output `i` as known at build time (kUndefined when absent).
inline DataType in_dtype(const Node& n, size_t i) {
  const Value* v = n.input(i);
  return v ? v->desc.dtype : DataType::kUndefined;
}
inline DataType out_dtype(const Node& n, size_t i) {
  const Value* v = n.output(i);
  return v ? v->desc.dtype : DataType::kUndefined;
}
inline bool has_input(const Node& n, size_t i) { return n.input(i) != nullptr; }

inline bool is_half_or_float(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kBFloat16;
}

// Rejects unless input `i` has one of `allowed`; `why` names the input and the dtype.
inline bool require_dtype(const Node& n, size_t i, std::initializer_list<DataType> allowed, std::string* why) {
  DataType t = in_dtype(n, i);
  for (DataType a : allowed)
    if (t == a) return true;
  if (why) *why = "input " + std::to_string(i) + " has dtype " + dtype_name(t) + ", which the CUDA kernel does not handle";
  return false;
}

inline bool reject(std::string* why, const std::string& reason) {
  if (why) *why = reason;
  return false;
}

// "sm90": the current device's compute capability, for tactic keys (read once per process).
inline const std::string& device_arch_tag() {
  static const std::string tag = [] {
    int dev = 0, major = 0, minor = 0;
    (void)cudaGetDevice(&dev);
    (void)cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    (void)cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
    return "sm" + std::to_string(major * 10 + minor);
  }();
  return tag;
}

// Every present input among `idx` has input 0's dtype (which the op's kernel key checks).
inline bool inputs_share_dtype(const Node& n, std::initializer_list<size_t> idx, std::string* why) {
  for (size_t i : idx) {
    if (!has_input(n, i)) continue;
    if (in_dtype(n, i) != in_dtype(n, 0))
      return reject(why, "input " + std::to_string(i) + " has dtype " + dtype_name(in_dtype(n, i)) + ", input 0 " +
                             dtype_name(in_dtype(n, 0)) + ": the kernels take one dtype");
  }
  return true;
}

// The dtype lists most CUDA ops accept: the float types the kernels compute in float, and those
// plus the 32- and 64-bit integers.
constexpr std::initializer_list<DataType> kGpuFloats = {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16};
constexpr std::initializer_list<DataType> kGpuFloatsInts = {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16,
                                                            DataType::kInt32, DataType::kInt64};
// 32- and 64-bit integers (lengths, axes, indices read as host scalars or on the device).
constexpr std::initializer_list<DataType> kGpuInts = {DataType::kInt32, DataType::kInt64};
// The float types with float64, for ops whose kernels compute in double as their CPU references do.
constexpr std::initializer_list<DataType> kGpuFloats64 = {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16,
                                                          DataType::kFloat64};
// Those and int32/int64 (CumSum, the integer reductions, Pow's base).
constexpr std::initializer_list<DataType> kGpuFloats64Ints = {DataType::kFloat32, DataType::kFloat16,
                                                              DataType::kBFloat16, DataType::kFloat64,
                                                              DataType::kInt32,   DataType::kInt64};
// Every integer type (the Bitwise ops, Mod with fmod=0).
constexpr std::initializer_list<DataType> kGpuIntegers = {DataType::kInt8,  DataType::kUInt8,  DataType::kInt16,
                                                          DataType::kUInt16, DataType::kInt32, DataType::kUInt32,
                                                          DataType::kInt64, DataType::kUInt64};

// Every dtype the CUDA backend keeps on the device: the byte-moving ops' key (they copy elements
// of 1, 2, 4 or 8 bytes whatever they hold). gpu_supports refuses the others (strings; int16,
// uint16, uint32 and uint64, except in the ops whose keys list them: the binary arithmetic and
// comparisons).
constexpr std::initializer_list<DataType> kGpuEveryDtype = {
    DataType::kFloat32,     DataType::kFloat16,        DataType::kBFloat16,    DataType::kFloat64,
    DataType::kInt8,        DataType::kUInt8,          DataType::kInt32,       DataType::kInt64,
    DataType::kBool,        DataType::kInt4,           DataType::kUInt4,       DataType::kFloat8E4M3FN,
    DataType::kFloat8E4M3FNUZ, DataType::kFloat8E5M2,  DataType::kFloat8E5M2FNUZ};

// Input 0 is present: the whole check of an op whose kernel key (input 0's dtype) says the rest.
inline bool input0_given(const Node& n, std::string* why) {
  if (!has_input(n, 0)) return reject(why, "input 0 is missing");
  return true;
}

// Input 0 (X) present and of rank 4: what the ops over an NCHW or NHWC image take whole (GraftPool,
// GraftChannelsLast; their key: float32/float16/bfloat16).
inline bool rank4_input0(const Node& n, std::string* why) {
  if (!has_input(n, 0)) return reject(why, "input X is missing");
  if (n.input(0)->desc.rank() != 4) return reject(why, "X must have rank 4");
  return true;
}

// The single value of a host input (an axis, K, depth, k).
inline Result<int64_t> host_scalar(const CudaExec& ex, size_t i, const char* what) {
  const Tensor* t = ex.ctx->inputs.size() > i ? ex.ctx->inputs[i] : nullptr;
  if (!t) return fail(ex, StatusCode::kInvalidModel, what, " is missing");
  if (t->device() != DeviceType::kCPU) return fail(ex, StatusCode::kInternal, what, " must be a host input");
  const auto v = t->to_int64_vector();
  if (v.size() != 1) return fail(ex, StatusCode::kInvalidModel, what, " must hold one value, got ", static_cast<int64_t>(v.size()));
  return v[0];
}

// ---- the byte-moving ops' checks (shape ops, Pad, Resize) ----

inline int esize(const Tensor& t) { return static_cast<int>(dtype_size(t.dtype())); }

inline std::string dims_str(const std::vector<int64_t>& d) { return graft::ints_to_string(d); }

// An element size the byte movers handle (1, 2, 4 or 8 bytes): every dtype of kGpuEveryDtype.
inline bool elem_size_fits(DataType t) {
  const size_t es = dtype_size(t);
  return es == 1 || es == 2 || es == 4 || es == 8;
}

// Every dtype of the kernels' KType numbering (so its element size is known on the device side): the
// key of kernels that switch on KType to move elements (EyeLike, ReverseSequence, the scatters).
constexpr std::initializer_list<DataType> kGpuKTypes = {
    DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kFloat64, DataType::kInt8,
    DataType::kUInt8,   DataType::kInt32,   DataType::kInt64,    DataType::kBool};

// Input `i` has a known rank of at most kMaxRank (the per-axis parameter arrays' size).
inline bool rank_fits(const Node& n, size_t i, std::string* why) {
  const Value* v = n.input(i);
  if (!v || !v->desc.shape) return reject(why, "input " + std::to_string(i) + " has an unknown rank");
  if (v->desc.rank() > k::kMaxRank)
    return reject(why, "input " + std::to_string(i) + " has rank " + std::to_string(v->desc.rank()) +
                           "; the CUDA kernel handles up to " + std::to_string(k::kMaxRank));
  return true;
}

inline bool output_dtype_matches(const Node& n, std::string* why) {
  for (size_t i = 0; i < n.outputs.size(); ++i)
    if (n.outputs[i] && out_dtype(n, i) != in_dtype(n, 0))
      return reject(why, "output " + std::to_string(i) + " dtype differs from input 0");
  return true;
}

// A byte mover's check (its key: input 0 in kGpuEveryDtype): input 0 given, the outputs of its dtype.
inline bool same_bytes_ok(const Node& n, std::string* why) { return input0_given(n, why) && output_dtype_matches(n, why); }

inline Status check_same_dtype(const CudaExec& ex, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype())
    return fail(ex, StatusCode::kInternal, "dtype ", dtype_name(b.dtype()), " differs from ", dtype_name(a.dtype()));
  return Status::ok();
}

// The tactic for `key`: the engine's table; else, while the builder tunes, the timing cache or
// `time()` (a Result<Tactic>), recorded in both. nullopt when the engine was not tuned for this
// problem (a shape met only at run time): the caller falls back to its heuristic.
template <typename TimeFn>
Result<std::optional<Tactic>> find_or_time_tactic(const CudaExec& ex, const std::string& key, TimeFn&& time) {
  // While tuning, the table also learns which layer asked (an engine description names each layer's tactics).
  if (ex.tuning && ex.tactics && ex.ctx && ex.ctx->node) ex.tactics->note_layer(ex.ctx->node->name, key);
  std::optional<Tactic> t = ex.tactics ? ex.tactics->find(key) : std::nullopt;
  if (t || !ex.tuning) return t;
  t = ex.tuning->cache ? ex.tuning->cache->find(key) : std::nullopt;
  if (t) {
    ++ex.tuning->stats.from_cache;
  } else {
    GRAFT_ASSIGN_OR_RETURN(Tactic best, time());
    t = best;
    ++ex.tuning->stats.timed;
    if (ex.tuning->cache) ex.tuning->cache->put(key, best);
  }
  if (ex.tactics) ex.tactics->put(key, *t);
  return t;
}

// Tactic timing: the GPU time (ms) of one `call` (which enqueues work on `s` and returns false when
// it refuses), or -1 when it cannot be timed. Several calls are captured into a CUDA graph and the
// graph is timed: timed eagerly, the events would also enclose the host's work between the kernels
// (cuDNN's legacy API spends up to a millisecond per call on descriptors and plans, far more than
// most of its kernels take), so the fastest-looking tactic would be the one with the least host
// overhead, which the engine's own CUDA graph never pays. A call that cannot be captured is timed
// eagerly instead. `t0`/`t1` are the caller's events (created once per timing loop).
inline float gpu_ms_per_call(cudaStream_t s, const std::function<bool()>& call, cudaEvent_t t0, cudaEvent_t t1) {
  constexpr int kReps = 5;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  bool captured = false;
  if (cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess) {
    bool ok = true;
    for (int r = 0; r < kReps && ok; ++r) ok = call();
    captured = cudaStreamEndCapture(s, &graph) == cudaSuccess && ok && graph &&
               cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess;
  }
  if (graph) (void)cudaGraphDestroy(graph);
  (void)cudaGetLastError();  // a refused capture leaves its error behind
  // The first launch uploads the graph; the second is timed.
  const bool use_graph = captured && cudaGraphLaunch(exec, s) == cudaSuccess;
  (void)cudaEventRecord(t0, s);
  bool ran = true;  // a call refused eagerly is not timed
  for (int r = 0; r < (use_graph ? 1 : kReps); ++r) {
    if (use_graph) ran = cudaGraphLaunch(exec, s) == cudaSuccess && ran;
    else ran = call() && ran;
  }
  (void)cudaEventRecord(t1, s);
  float ms = -1;
  if (cudaEventSynchronize(t1) != cudaSuccess || cudaEventElapsedTime(&ms, t0, t1) != cudaSuccess || !ran) ms = -1;
  else ms /= kReps;
  if (exec) (void)cudaGraphExecDestroy(exec);
  (void)cudaGetLastError();
  return ms;
}

// The two events of one tactic-timing loop, destroyed with it (an early return included).
class TimingEvents {
 public:
  // cudaSuccess, or the error of the creation that failed.
  cudaError_t create() {
    cudaEvent_t a = nullptr, b = nullptr;
    cudaError_t e = cudaEventCreate(&a);
    if (e != cudaSuccess) return e;
    t0_.reset(a);
    e = cudaEventCreate(&b);
    if (e == cudaSuccess) t1_.reset(b);
    return e;
  }
  // gpu_ms_per_call over these events.
  float ms_per_call(cudaStream_t s, const std::function<bool()>& call) const {
    return gpu_ms_per_call(s, call, t0_.get(), t1_.get());
  }

 private:
  OwnedHandle<cudaEvent_t, cudaEventDestroy> t0_, t1_;
};

inline const AttributeMap& attrs_of(const CudaExec& e) { return *e.ctx->attrs; }

// Broadcast strides of every operand (`ins`, each at most out's rank) against `out`. Size-1 output
// axes are dropped and adjacent axes merged where every operand walks them as one (stride[prev] ==
// stride[d] * dims[d]; both broadcast, 0 == 0, also merges), so most real shapes fit in kMaxRank.
// Fills the merged dims and, per operand, its strides; false (with `why`) on a non-broadcastable
// operand or a rank that still exceeds kMaxRank.
inline bool merge_broadcast(const std::vector<int64_t>& out, const std::vector<const std::vector<int64_t>*>& ins,
                            std::vector<int64_t>* dims, std::vector<std::vector<int64_t>>* strides, std::string* why) {
  const size_t rank = out.size();
  const size_t nops = ins.size();
  std::vector<std::vector<int64_t>> st(nops, std::vector<int64_t>(rank, 0));
  for (size_t k = 0; k < nops; ++k) {
    const auto& in = *ins[k];
    if (in.size() > rank) return reject(why, "operand rank exceeds output rank");
    int64_t stride = 1;
    for (size_t j = 0; j < in.size(); ++j) {
      const size_t ia = in.size() - 1 - j, oa = rank - 1 - j;
      if (in[ia] == out[oa]) {
        st[k][oa] = in[ia] == 1 ? 0 : stride;
      } else if (in[ia] == 1) {
        st[k][oa] = 0;
      } else {
        return reject(why, "operand shape cannot be broadcast to the output shape");
      }
      stride *= in[ia];
    }
  }
  dims->clear();
  strides->assign(nops, {});
  auto& ks = *strides;
  for (size_t d = 0; d < rank; ++d) {
    if (out[d] == 1) continue;
    bool merge = !dims->empty();
    for (size_t k = 0; k < nops && merge; ++k) merge = ks[k].back() == st[k][d] * out[d];
    if (merge) {
      dims->back() *= out[d];
      for (size_t k = 0; k < nops; ++k) ks[k].back() = st[k][d];
    } else {
      dims->push_back(out[d]);
      for (size_t k = 0; k < nops; ++k) ks[k].push_back(st[k][d]);
    }
  }
  if (dims->size() > static_cast<size_t>(k::kMaxRank))
    return reject(why, "broadcast needs " + std::to_string(dims->size()) + " axes; the CUDA kernel handles " +
                           std::to_string(k::kMaxRank));
  return true;
}

// merge_broadcast for up to three operands, as the fixed-arity kernels take it.
inline bool make_bcast(const std::vector<int64_t>& out, const std::vector<std::vector<int64_t>>& ins, k::Bcast* p,
                       std::string* why) {
  std::vector<const std::vector<int64_t>*> ptrs;
  for (const auto& in : ins) ptrs.push_back(&in);
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> ks;
  if (!merge_broadcast(out, ptrs, &dims, &ks, why)) return false;
  *p = k::Bcast{};
  p->rank = static_cast<int>(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    p->dims[d] = dims[d];
    for (size_t k = 0; k < ins.size(); ++k) p->strides[k][d] = ks[k][d];
  }
  return true;
}

// True when the broadcast is the identity for every operand (flat fast path).
inline bool bcast_is_flat(const k::Bcast& p, int nops) {
  if (p.rank == 0) return true;
  if (p.rank != 1) return false;
  for (int k = 0; k < nops; ++k)
    if (p.strides[k][0] != 1) return false;
  return true;
}

}  // namespace graft::cuda::util
