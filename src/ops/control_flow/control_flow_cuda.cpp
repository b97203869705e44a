// If, Loop and Scan on the GPU. The ONNX semantics are the shared drivers' (control_flow.h); this
// file is their CUDA side: a subgraph runs node by node through the CUDA kernel table, its
// tensors stay in device memory, and only what decides control comes back to the host (If's
// condition, a Loop condition the body computes on the GPU: one bool and one synchronization per
// iteration). A Loop without a cond input reads nothing back.
//
// Each subgraph is placed once per node, like the engine places the main graph: Shape and Size read
// dims only, small integer arithmetic that only the host reads (iteration counters, trip counts,
// shape values) runs on the host, and every other node needs a CUDA kernel. A node that has none
// (a sequence op, an op whose output size its kernel decides, a custom op) makes the whole
// control-flow node refuse the GPU, naming that node: the engine then runs it on the CPU reference
// as before. Nested If/Loop/Scan nodes are placed and run the same way, one level down.
//
// The subgraph's values come from a buffer pool per node and execution context: a buffer is lent
// as a tensor and is free again when the last tensor holding it is gone, so after the first
// iteration a loop allocates nothing. All work is on the layer's stream, so a buffer freed by one
// iteration is reused in stream order by the next.
#include "ops/control_flow/control_flow.h"

#include <cuda_runtime.h>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/device_memory.h"
#include "graph/passes.h"
#include "graph/subgraph.h"
#include "ops/random/random.h"
#include "runtime/cpu_executor.h"

namespace graft::cuda {
namespace {

using util::fail;

// Device buffers lent out as tensors (Tensor::wrap_shared): free once no tensor holds one.
class BufferPool {
 public:
  Result<Tensor> take(DataType dt, const std::vector<int64_t>& dims, const std::string& what) {
    const size_t bytes = std::max<size_t>(static_cast<size_t>(numel_of(dims)) * dtype_size(dt), 256);
    Buf* best = nullptr;
    for (Buf& b : bufs_)
      if (b.owner.use_count() == 1 && b.bytes >= bytes && (!best || b.bytes < best->bytes)) best = &b;
    if (!best) {
      GRAFT_ASSIGN_OR_RETURN(Tensor t, device_bytes(bytes, what));
      auto holder = std::make_shared<Tensor>(std::move(t));
      bufs_.push_back(Buf{std::shared_ptr<void>(holder), holder->data(), bytes});
      best = &bufs_.back();
    }
    return Tensor::wrap_shared(best->owner, best->data, dt, dims, DeviceType::kCUDA);
  }

 private:
  struct Buf {
    std::shared_ptr<void> owner;
    void* data;
    size_t bytes;
  };
  std::vector<Buf> bufs_;
};

enum class Place { kGpu, kHost, kMeta };

struct ControlFlowPlan;

// One node of a subgraph, as it runs: a twin of the subgraph's node whose values carry the dtypes
// and shapes inference found for this control-flow node (the subgraph's own Values stay as the
// importer left them, shared by every node and context).
struct Step {
  Node* node = nullptr;
  Place where = Place::kGpu;
  const CudaOp* op = nullptr;
  std::vector<bool> host_input;
  std::shared_ptr<ControlFlowPlan> nested;  // a nested If/Loop/Scan
  std::vector<const Value*> last_read;      // values no later step and no output reads
};

struct CompiledSubgraph {
  std::vector<std::unique_ptr<Value>> values;
  std::vector<std::unique_ptr<Node>> nodes;
  std::vector<const Value*> inputs, captures, outputs;  // twins
  std::vector<Step> steps;
};

struct ControlFlowPlan {
  const Node* node = nullptr;
  std::map<std::string, CompiledSubgraph> subgraphs;
  BufferPool pool;
  Tensor workspace;
  std::unordered_map<const Value*, Tensor> device_constants;  // a subgraph's weights, uploaded once
};

Result<std::shared_ptr<ControlFlowPlan>> compile_plan(const Node& node);

std::string place_error(const Node& owner, const std::string& attr, const Node& inner, const std::string& why) {
  return "subgraph '" + attr + "' of '" + owner.name + "': node '" + inner.name + "' (" + inner.op_type + ") " + why;
}

// The descs a subgraph of `node` sees for its inputs (every subgraph of one node sees the same).
Result<std::vector<TensorDesc>> subgraph_input_descs(const Node& node) {
  std::vector<TensorDesc> d;
  if (node.op_type == "If") return d;
  if (node.op_type == "SequenceMap") {
    // Each sequence passes one tensor at a time: its desc is the one its tensors share.
    for (size_t j = 0; j < node.explicit_inputs(); ++j) {
      TensorDesc x = node.inputs[j] ? node.inputs[j]->desc : TensorDesc();
      if (x.kind == ValueKind::kSequence) x.kind = ValueKind::kTensor;
      d.push_back(x);
    }
    return d;
  }
  if (node.op_type == "Loop") {
    d.emplace_back(DataType::kInt64, Shape{});
    d.emplace_back(DataType::kBool, Shape{});
    for (size_t j = 2; j < node.explicit_inputs(); ++j) d.push_back(node.inputs[j] ? node.inputs[j]->desc : TensorDesc());
    return d;
  }
  GRAFT_ASSIGN_OR_RETURN(ScanLayout lay, scan_layout(node));
  for (size_t j = 0; j < lay.n; ++j) d.push_back(node.inputs[j]->desc);
  for (size_t j = 0; j < lay.m; ++j) {
    TensorDesc x = node.inputs[lay.n + j]->desc;
    if (x.shape) {
      GRAFT_ASSIGN_OR_RETURN(int64_t a, normalize_axis(lay.in_axes[j], static_cast<int64_t>(x.shape->size())));
      x.shape->erase(x.shape->begin() + a);
    }
    d.push_back(x);
  }
  return d;
}

Result<CompiledSubgraph> compile_subgraph(const Node& node, const std::string& attr, const Graph& g) {
  GRAFT_ASSIGN_OR_RETURN(std::vector<TensorDesc> in_descs, subgraph_input_descs(node));
  if (in_descs.size() != g.inputs().size())
    return error(StatusCode::kInvalidModel, "subgraph '", attr, "' has ", static_cast<uint64_t>(g.inputs().size()),
                 " inputs but the node passes it ", static_cast<uint64_t>(in_descs.size()));
  std::vector<InferContext::InputInfo> ins(in_descs.size()), caps;
  for (size_t i = 0; i < in_descs.size(); ++i) ins[i].desc = &in_descs[i];
  for (size_t i = node.explicit_inputs(); i < node.inputs.size(); ++i) {
    InferContext::InputInfo c;
    const Value* v = node.inputs[i];
    if (v) {
      c.desc = &v->desc;
      if (v->constant) c.value = &*v->constant;
      if (v->sym_value) c.sym_value = &*v->sym_value;
    }
    caps.push_back(c);
  }
  std::vector<SubgraphInfo> outs;
  std::map<const Value*, TensorDesc> descs;
  GRAFT_RETURN_IF_ERROR(infer_subgraph(node, attr, g, ins, caps, &outs, &descs));

  CompiledSubgraph cs;
  std::unordered_map<const Value*, Value*> twin;
  auto twin_of = [&](const Value* v) -> Value* {
    if (!v) return nullptr;
    auto it = twin.find(v);
    if (it != twin.end()) return it->second;
    auto t = std::make_unique<Value>();
    t->name = v->name;
    auto d = descs.find(v);
    t->desc = d != descs.end() ? d->second : v->desc;
    t->constant = v->constant;
    t->is_captured = v->is_captured;
    Value* raw = t.get();
    cs.values.push_back(std::move(t));
    twin[v] = raw;
    return raw;
  };
  for (const Value* v : g.inputs()) cs.inputs.push_back(twin_of(v));
  for (const Value* v : g.captures) cs.captures.push_back(twin_of(v));
  for (const auto& up : g.nodes()) {
    const Node& n = *up;
    auto t = std::make_unique<Node>();
    t->name = n.name;
    t->op_type = n.op_type;
    t->domain = n.domain;
    t->opset = n.opset;
    t->attrs = n.attrs;
    t->custom_op = n.custom_op;
    t->subgraphs = n.subgraphs;
    t->implicit_inputs = n.implicit_inputs;
    for (const Value* v : n.inputs) t->inputs.push_back(twin_of(v));
    for (const Value* v : n.outputs) t->outputs.push_back(twin_of(v));
    for (Value* o : t->outputs)
      if (o) o->producer = t.get();
    cs.nodes.push_back(std::move(t));
  }
  for (const Value* v : g.outputs()) cs.outputs.push_back(twin_of(v));

  // Placement, last node first, so a node knows whether its readers read it on the host. The
  // driver reads a Loop body's output 0 (the condition) on the host, every other output on the GPU.
  const size_t n = cs.nodes.size();
  cs.steps.resize(n);
  std::unordered_map<const Value*, bool> host_read, device_read;
  if (node.op_type == "Loop" && !cs.outputs.empty() && cs.outputs[0]) host_read[cs.outputs[0]] = true;
  for (size_t o = node.op_type == "Loop" ? 1 : 0; o < cs.outputs.size(); ++o)
    if (cs.outputs[o]) device_read[cs.outputs[o]] = true;
  for (size_t r = n; r-- > 0;) {
    Node& tn = *cs.nodes[r];
    Step& s = cs.steps[r];
    s.node = &tn;
    bool host_only = true, any_use = false, small_int = true;
    for (const Value* o : tn.outputs) {
      if (!o) continue;
      any_use |= host_read.count(o) || device_read.count(o);
      host_only &= !device_read.count(o);
      if (dtype_is_float(o->desc.dtype) || !o->desc.shape || o->desc.shape->size() > 1) small_int = false;
    }
    if (reads_dims_only(tn)) {
      s.where = Place::kMeta;
    } else if (host_only && any_use && small_int && !node_is_random(tn) && !touches_containers(tn)) {
      s.where = Place::kHost;
    } else {
      std::string why;
      if (!gpu_supports(tn, &s.op, &why))
        return error(StatusCode::kUnsupported, place_error(node, attr, tn, "cannot run on the GPU: " + why));
      if (s.op->counted.is_counted())
        return error(StatusCode::kUnsupported,
                     place_error(node, attr, tn, "has an output size its kernel counts, which a subgraph does not read back"));
      if (s.op->makes_outputs && !tn.subgraphs.empty()) {
        auto nested = compile_plan(tn);
        if (!nested) return std::move(nested).take_status();
        s.nested = std::move(nested).value();
      }
    }
    s.host_input.assign(tn.inputs.size(), s.where != Place::kGpu);
    if (s.where == Place::kGpu)
      for (int k : s.op->host_inputs)
        if (k >= 0 && static_cast<size_t>(k) < s.host_input.size()) s.host_input[static_cast<size_t>(k)] = true;
    for (size_t k = 0; k < tn.inputs.size(); ++k)
      if (const Value* v = tn.inputs[k]; v && !v->constant) (s.host_input[k] ? host_read : device_read)[v] = true;
  }
  // Values dropped after their last reader, so their buffers go back to the pool within a run.
  std::unordered_map<const Value*, size_t> last;
  for (size_t r = 0; r < n; ++r)
    for (const Value* v : cs.nodes[r]->inputs)
      if (v && !v->constant) last[v] = r;
  for (const Value* v : cs.outputs) last.erase(v);
  for (const auto& [v, r] : last) cs.steps[r].last_read.push_back(v);
  return cs;
}

Result<std::shared_ptr<ControlFlowPlan>> compile_plan(const Node& node) {
  auto plan = std::make_shared<ControlFlowPlan>();
  plan->node = &node;
  for (const auto& [attr, g] : node.subgraphs) {
    if (!g) continue;
    GRAFT_ASSIGN_OR_RETURN(CompiledSubgraph cs, compile_subgraph(node, attr, *g));
    plan->subgraphs.emplace(attr, std::move(cs));
  }
  return plan;
}

// Rows and row bytes around `axis`: a tensor is [outer, dims[axis], inner] in bytes.
void split_at(const std::vector<int64_t>& dims, size_t axis, size_t elem, size_t* outer, size_t* inner_bytes) {
  *outer = 1;
  for (size_t i = 0; i < axis; ++i) *outer *= static_cast<size_t>(dims[i]);
  size_t inner = elem;
  for (size_t i = axis + 1; i < dims.size(); ++i) inner *= static_cast<size_t>(dims[i]);
  *inner_bytes = inner;
}

// The GPU's side of the drivers for one run of one control-flow or container node.
class CudaSubgraphDevice final : public SubgraphDevice {
 public:
  CudaSubgraphDevice(CudaExec& ex, ControlFlowPlan& plan) : ex_(ex), plan_(plan) {}

  Result<std::vector<Tensor>> run_subgraph(const std::string& attr, const Graph& sub,
                                           const std::vector<Tensor>& inputs) override;
  Result<bool> read_bool(const Tensor& t) override {
    if (t.device() == DeviceType::kCPU) return t.get(0) != 0;
    bool b = false;
    GRAFT_RETURN_IF_ERROR(check(cudaMemcpyAsync(&b, t.data(), 1, cudaMemcpyDeviceToHost, stream()), "reading a condition"));
    GRAFT_RETURN_IF_ERROR(check(cudaStreamSynchronize(stream()), "waiting for a condition"));
    return b;
  }
  // A container as it is (its tensors are the pool's already); a tensor copied into the pool.
  Result<Tensor> keep(const Tensor& t) override {
    if (!t.is_tensor()) return t;
    GRAFT_ASSIGN_OR_RETURN(Tensor out, plan_.pool.take(t.dtype(), t.dims(), "a tensor a sequence or optional holds"));
    GRAFT_RETURN_IF_ERROR(copy(out, t, "keeping a tensor"));
    return out;
  }
  Result<Tensor> slice(const Tensor& x, size_t axis, int64_t begin, int64_t len, bool drop) override {
    GRAFT_ASSIGN_OR_RETURN(Tensor dx, on_device(x, "a tensor to slice"));
    std::vector<int64_t> dims = dx.dims();
    const size_t full = static_cast<size_t>(dims[axis]);
    size_t outer, inner;
    split_at(dims, axis, dtype_size(dx.dtype()), &outer, &inner);
    dims[axis] = len;
    if (drop) dims.erase(dims.begin() + static_cast<ptrdiff_t>(axis));
    GRAFT_ASSIGN_OR_RETURN(Tensor s, plan_.pool.take(dx.dtype(), dims, "a slice"));
    const size_t row = static_cast<size_t>(len) * inner;
    if (outer && row)
      GRAFT_RETURN_IF_ERROR(check(cudaMemcpy2DAsync(s.data(), row, static_cast<const char*>(dx.data()) + begin * inner,
                                                    full * inner, row, outer, cudaMemcpyDeviceToDevice, stream()),
                                  "slicing a tensor"));
    return s;
  }
  Status place(Tensor& y, size_t axis, int64_t offset, const Tensor& src) override {
    GRAFT_ASSIGN_OR_RETURN(Tensor ds, on_device(src, "a tensor to place"));
    const int64_t extent = ds.rank() == y.rank() ? ds.dims()[axis] : 1;
    const size_t full = static_cast<size_t>(y.dims()[axis]);
    size_t outer, inner;
    split_at(y.dims(), axis, dtype_size(y.dtype()), &outer, &inner);
    const size_t row = static_cast<size_t>(extent) * inner;
    if (!outer || !row) return Status::ok();
    return check(cudaMemcpy2DAsync(static_cast<char*>(y.data()) + offset * inner, full * inner, ds.data(), row, row,
                                   outer, cudaMemcpyDeviceToDevice, stream()),
                 "placing a tensor");
  }
  Result<Tensor*> allocate_output(size_t o, DataType dtype, std::vector<int64_t> dims) override {
    if (o >= ex_.ctx->outputs.size() || !ex_.ctx->outputs[o]) return nullptr;
    GRAFT_ASSIGN_OR_RETURN(*ex_.ctx->outputs[o], plan_.pool.take(dtype, dims, output_name(o)));
    return ex_.ctx->outputs[o];
  }
  // A tensor is always copied: a subgraph may return an outer value or a weight as it is, and the
  // engine must never take memory it plans (an arena slot) or owns (a weight) as this layer's
  // output. A container is taken as it is: its tensors are this pool's.
  Status set_output(size_t o, Tensor value) override {
    if (o >= ex_.ctx->outputs.size() || !ex_.ctx->outputs[o]) return Status::ok();
    if (!value.is_tensor()) {
      *ex_.ctx->outputs[o] = std::move(value);
      return Status::ok();
    }
    GRAFT_ASSIGN_OR_RETURN(Tensor out, plan_.pool.take(value.dtype(), value.dims(), output_name(o)));
    GRAFT_RETURN_IF_ERROR(copy(out, value, "copying an output"));
    *ex_.ctx->outputs[o] = std::move(out);
    return Status::ok();
  }

 private:
  struct Slot {
    Tensor host, dev;
  };
  cudaStream_t stream() const { return util::stream_of(ex_); }
  Status check(cudaError_t e, const char* what) const { return util::launch_status(e, ex_, what); }
  std::string output_name(size_t o) const {
    const Value* v = ex_.ctx->node->output(o);
    return "output '" + (v ? v->name : std::to_string(o)) + "' of '" + ex_.ctx->node->name + "'";
  }
  // dst = src (same dtype and dims; dst on the GPU, src on either side).
  Status copy(Tensor& dst, const Tensor& src, const char* what) {
    if (!src.nbytes()) return Status::ok();
    return check(cudaMemcpyAsync(dst.data(), src.data(), src.nbytes(),
                                 src.device() == DeviceType::kCPU ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToDevice,
                                 stream()),
                 what);
  }
  // A device copy of a host tensor (a tensor already on the GPU as it is).
  Result<Tensor> on_device(const Tensor& t, const char* what) {
    if (t.device() == DeviceType::kCUDA) return t;
    GRAFT_ASSIGN_OR_RETURN(Tensor d, plan_.pool.take(t.dtype(), t.dims(), what));
    // From pageable memory the copy returns once the bytes are staged, so `t` may go at once.
    if (t.nbytes()) GRAFT_RETURN_IF_ERROR(check(cudaMemcpyAsync(d.data(), t.data(), t.nbytes(), cudaMemcpyHostToDevice, stream()), what));
    return d;
  }
  Result<const Tensor*> read(Slot& s, bool host);
  Result<const Tensor*> weight(const Value* v, bool host);
  Status run_step(const Step& st, std::unordered_map<const Value*, Slot>& live);

  CudaExec& ex_;
  ControlFlowPlan& plan_;
};

Result<const Tensor*> CudaSubgraphDevice::weight(const Value* v, bool host) {
  if (host) return &*v->constant;
  auto it = plan_.device_constants.find(v);
  if (it == plan_.device_constants.end()) {
    const Tensor& h = *v->constant;
    GRAFT_ASSIGN_OR_RETURN(Tensor d, device_empty(h.dtype(), h.dims(), "weight '" + v->name + "'"));
    // On the run's stream: cudaMemcpy goes through the legacy default stream, which the engine's
    // non-blocking stream does not wait for, and from pageable memory it may return before the DMA
    // lands, so the first iteration's kernels read the weight half-written (ONNX's test_loop11
    // summed 0 for x[0]). The host constant lives as long as the graph.
    if (h.nbytes())
      GRAFT_RETURN_IF_ERROR(
          check(cudaMemcpyAsync(d.data(), h.data(), h.nbytes(), cudaMemcpyHostToDevice, stream()), "uploading a weight"));
    it = plan_.device_constants.emplace(v, std::move(d)).first;
  }
  return &it->second;
}

Result<const Tensor*> CudaSubgraphDevice::read(Slot& s, bool host) {
  if (host) {
    if (s.host.defined()) return &s.host;
    if (!s.dev.is_tensor()) {
      GRAFT_ASSIGN_OR_RETURN(s.host, container_to(s.dev, DeviceType::kCPU, stream()));
      return &s.host;
    }
    Tensor h = Tensor::empty(s.dev.dtype(), s.dev.dims());
    if (h.nbytes()) {
      GRAFT_RETURN_IF_ERROR(check(cudaMemcpyAsync(h.data(), s.dev.data(), h.nbytes(), cudaMemcpyDeviceToHost, stream()),
                                  "copying a value to the host"));
      GRAFT_RETURN_IF_ERROR(check(cudaStreamSynchronize(stream()), "waiting for a value"));
    }
    s.host = std::move(h);
    return &s.host;
  }
  if (!s.dev.defined() && !s.host.is_tensor()) {
    GRAFT_ASSIGN_OR_RETURN(s.dev, container_to(s.host, DeviceType::kCUDA, stream()));
  } else if (!s.dev.defined()) {
    GRAFT_ASSIGN_OR_RETURN(s.dev, on_device(s.host, "a host value a GPU layer reads"));
  }
  return &s.dev;
}

Status CudaSubgraphDevice::run_step(const Step& st, std::unordered_map<const Value*, Slot>& live) {
  const Node& node = *st.node;
  std::vector<const Tensor*> ins(node.inputs.size(), nullptr);
  std::vector<Tensor> meta(node.inputs.size());
  for (size_t k = 0; k < node.inputs.size(); ++k) {
    const Value* v = node.inputs[k];
    if (!v) continue;
    if (v->constant) {
      auto w = weight(v, st.host_input[k]);
      if (!w) return std::move(w).take_status();
      ins[k] = *w;
      continue;
    }
    auto it = live.find(v);
    if (it == live.end())
      return error(StatusCode::kInternal, "value '", v->name, "' was not computed before use").with_node(node.name, node.op_type);
    if (st.where == Place::kMeta && !it->second.host.defined()) {
      // Shape/Size read dims only: a host stand-in with the device tensor's dims, no copy.
      static char dims_only = 0;
      meta[k] = Tensor::wrap(&dims_only, it->second.dev.dtype(), it->second.dev.dims());
      ins[k] = &meta[k];
      continue;
    }
    auto r = read(it->second, st.host_input[k]);
    if (!r) return std::move(r).take_status();
    ins[k] = *r;
  }
  std::vector<Tensor> outs(node.outputs.size());
  if (st.where != Place::kGpu) {
    GRAFT_ASSIGN_OR_RETURN(outs, run_node_cpu(node, ins));
    for (size_t o = 0; o < node.outputs.size(); ++o)
      if (node.outputs[o]) live[node.outputs[o]].host = std::move(outs[o]);
    return Status::ok();
  }
  ExecContext ec = exec_context_for(node, ins, outs, ex_.ctx->stream);
  CudaExec ex = ex_;
  ex.ctx = &ec;
  ex.tuning = nullptr;  // no tactic timing inside a subgraph: the ops take their defaults
  ex.output_count = nullptr;
  ex.random_counter = nullptr;
  ex.workspace = nullptr;
  ex.workspace_size = 0;
  // A nested control-flow node passes the word on as it got it, with the engine layer's tag; a
  // reporting node gets a tag of its own.
  if (!st.nested) {
    const bool reports = st.op->invalid_data && ex_.fault.word && ex_.subgraph_faults;
    ex.fault = reports ? k::DataFault{ex_.fault.word, ex_.subgraph_faults->tag_for(node, *ex_.ctx->node, ex_.fault.tag,
                                                                                   st.op->invalid_data)}
                       : k::DataFault{};
  }
  if (!st.nested && !st.op->makes_outputs_for(node)) {
    GRAFT_ASSIGN_OR_RETURN(std::vector<TensorDesc> descs, infer_node_concrete(node, ins));
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      if (!node.outputs[o]) continue;
      GRAFT_ASSIGN_OR_RETURN(outs[o], plan_.pool.take(descs[o].dtype, shape_values(*descs[o].shape),
                                                      "output '" + node.outputs[o]->name + "' of '" + node.name + "'"));
    }
    const size_t ws = st.op->workspace_bytes ? st.op->workspace_bytes(node, ins, outs) : 0;
    if (ws > plan_.workspace.nbytes()) {
      plan_.workspace = Tensor();  // cudaFree synchronizes: no kernel still uses the old one
      GRAFT_ASSIGN_OR_RETURN(plan_.workspace, device_bytes(ws, "the kernel workspace of a subgraph"));
    }
    if (ws) {
      ex.workspace = plan_.workspace.data();
      ex.workspace_size = plan_.workspace.nbytes();
    }
  }
  Status s;
  if (st.nested) {
    CudaSubgraphDevice dev(ex, *st.nested);
    if (node.op_type == "If") s = run_if(ec, dev);
    else if (node.op_type == "Loop") s = run_loop(ec, dev);
    else if (node.op_type == "Scan") s = run_scan(ec, dev);
    else s = run_sequence_map(ec, dev);
  } else {
    s = st.op->run(ex);
  }
  if (!s) return s.with_node(node.name, node.op_type);
  GRAFT_RETURN_IF_ERROR(check(cudaGetLastError(), "kernel launch"));
  for (size_t o = 0; o < node.outputs.size(); ++o)
    if (node.outputs[o]) live[node.outputs[o]].dev = std::move(outs[o]);
  return Status::ok();
}

Result<std::vector<Tensor>> CudaSubgraphDevice::run_subgraph(const std::string& attr, const Graph& sub,
                                                             const std::vector<Tensor>& inputs) {
  (void)sub;
  auto found = plan_.subgraphs.find(attr);
  if (found == plan_.subgraphs.end()) return error(StatusCode::kInternal, "subgraph '", attr, "' was not compiled");
  const CompiledSubgraph& cs = found->second;
  std::unordered_map<const Value*, Slot> live;
  auto bind = [&](const Value* v, const Tensor& t) {
    if (!v || !t.defined()) return;
    Slot& s = live[v];
    (t.device() == DeviceType::kCUDA ? s.dev : s.host) = t;
  };
  for (size_t i = 0; i < inputs.size() && i < cs.inputs.size(); ++i) bind(cs.inputs[i], inputs[i]);
  const size_t first_capture = ex_.ctx->node->explicit_inputs();
  for (size_t i = 0; i < cs.captures.size() && first_capture + i < ex_.ctx->inputs.size(); ++i)
    if (const Tensor* t = ex_.ctx->inputs[first_capture + i]) bind(cs.captures[i], *t);
  for (const Step& st : cs.steps) {
    Status s = run_step(st, live);
    if (!s) return subgraph_error(*ex_.ctx->node, attr, s);
    for (const Value* v : st.last_read) live.erase(v);
  }
  std::vector<Tensor> result;
  for (const Value* v : cs.outputs) {
    if (v && v->constant) {
      result.push_back(*v->constant);
      continue;
    }
    auto it = v ? live.find(v) : live.end();
    if (it == live.end())
      return error(StatusCode::kInternal, "subgraph '", attr, "' output '", v ? v->name : "", "' was not computed")
          .with_node(ex_.ctx->node->name, ex_.ctx->node->op_type);
    result.push_back(it->second.dev.defined() ? it->second.dev : it->second.host);
  }
  return result;
}

// The node's plan: compiled on its first run in an execution context and kept there with its pool
// (shared, since the subgraph's kernels put entries of their own, which may clear the cache).
Result<std::shared_ptr<ControlFlowPlan>> plan_for(CudaExec& ex) {
  const Node& node = *ex.ctx->node;
  const std::string key = PreparedCache::key_of("control-flow", {reinterpret_cast<intptr_t>(&node)});
  if (ex.prepared)
    if (auto p = ex.prepared->find_shared<ControlFlowPlan>(key); p && p->node == &node) return p;
  GRAFT_ASSIGN_OR_RETURN(std::shared_ptr<ControlFlowPlan> plan, compile_plan(node));
  if (ex.prepared) ex.prepared->put(key, plan);
  return plan;
}

template <Status (*Drive)(const ExecContext&, SubgraphDevice&)>
Status control_flow_run(CudaExec& ex) {
  GRAFT_ASSIGN_OR_RETURN(std::shared_ptr<ControlFlowPlan> plan, plan_for(ex));
  CudaSubgraphDevice dev(ex, *plan);
  return Drive(*ex.ctx, dev);
}


// A sequence or optional op: no subgraph, only the node's pool for the tensors it keeps.
template <Status (*Drive)(const ExecContext&, ContainerDevice&)>
Status container_run(CudaExec& ex) {
  GRAFT_ASSIGN_OR_RETURN(std::shared_ptr<ControlFlowPlan> plan, plan_for(ex));
  CudaSubgraphDevice dev(ex, *plan);
  return Drive(*ex.ctx, dev);
}

// Tensors of the dtypes the device holds: every one the CUDA backend has (the int16/uint16/
// uint32/uint64 ones gpu_supports refuses first) is just bytes to copy here.
bool container_supports(const Node&, std::string*) { return true; }

bool control_flow_supports(const Node& node, std::string* why) {
  auto plan = compile_plan(node);
  if (plan) return true;
  if (why) *why = plan.status().message();
  return false;
}

}  // namespace

void append_cuda_control_flow_ops(std::vector<CudaOp>& out) {
  const std::vector<CudaOp> ops = {
      {"If", control_flow_supports, control_flow_run<run_if>, {0}},
      {"Loop", control_flow_supports, control_flow_run<run_loop>, {0, 1}},
      {"Scan", control_flow_supports, control_flow_run<run_scan>, {}},
      {"SequenceMap", control_flow_supports, control_flow_run<run_sequence_map>, {}},
      {"SequenceEmpty", container_supports, container_run<run_sequence_empty>, {}},
      {"SequenceConstruct", container_supports, container_run<run_sequence_construct>, {}},
      {"SequenceInsert", container_supports, container_run<run_sequence_insert>, {2}},
      {"SequenceAt", container_supports, container_run<run_sequence_at>, {1}},
      {"SequenceErase", container_supports, container_run<run_sequence_erase>, {1}},
      {"SequenceLength", container_supports, container_run<run_sequence_length>, {}},
      {"SplitToSequence", container_supports, container_run<run_split_to_sequence>, {1}},
      {"ConcatFromSequence", container_supports, container_run<run_concat_from_sequence>, {}},
      {"Optional", container_supports, container_run<run_optional>, {}},
      {"OptionalHasElement", container_supports, container_run<run_optional_has_element>, {}},
      {"OptionalGetElement", container_supports, container_run<run_optional_get_element>, {}},
  };
  for (CudaOp op : ops) {
    op.makes_outputs = true;
    out.push_back(op);
  }
}

}  // namespace graft::cuda
