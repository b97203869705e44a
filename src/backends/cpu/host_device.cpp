#include "backends/cpu/host_device.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <string>

#include "graph/subgraph.h"
#include "runtime/cpu_executor.h"

namespace graft::cpu {
namespace {

// Runs subgraph `attr` of `node` on host tensors. Values live in a table of this call, never in the
// subgraph, which every run of the node shares.
Result<std::vector<Tensor>> run_subgraph(const Node& node, const std::string& attr, const Graph& sub,
                                         const std::vector<Tensor>& inputs, const std::vector<const Tensor*>& captures) {
  std::map<const Value*, Tensor> live;
  for (size_t i = 0; i < inputs.size() && i < sub.inputs().size(); ++i) live[sub.inputs()[i]] = inputs[i];
  for (size_t i = 0; i < captures.size() && i < sub.captures.size(); ++i)
    if (captures[i]) live[sub.captures[i]] = *captures[i];
  auto lookup = [&](const Value* v) -> const Tensor* {
    if (v->constant) return &*v->constant;
    auto it = live.find(v);
    return it == live.end() ? nullptr : &it->second;
  };
  for (const auto& up : sub.nodes()) {
    const Node& n = *up;
    std::vector<const Tensor*> ins;
    for (const Value* v : n.inputs) {
      if (!v) { ins.push_back(nullptr); continue; }
      const Tensor* t = lookup(v);
      if (!t)
        return subgraph_error(node, attr, error(StatusCode::kInternal, "value '", v->name, "' was not computed before use")
                                              .with_node(n.name, n.op_type));
      ins.push_back(t);
    }
    auto outs = run_node_cpu(n, ins);
    if (!outs) return subgraph_error(node, attr, outs.status());
    for (size_t o = 0; o < n.outputs.size(); ++o)
      if (n.outputs[o]) live[n.outputs[o]] = std::move((*outs)[o]);
  }
  std::vector<Tensor> result;
  for (const Value* v : sub.outputs()) {
    const Tensor* t = lookup(v);
    if (!t) return error(StatusCode::kInternal, "subgraph '", attr, "' output '", v->name, "' was not computed")
                   .with_node(node.name, node.op_type);
    result.push_back(*t);
  }
  return result;
}

// Rows and row bytes around `axis`: a tensor is [outer, dims[axis], inner] with inner in bytes.
void split_at(const std::vector<int64_t>& dims, size_t axis, size_t elem, int64_t* outer, size_t* inner_bytes) {
  *outer = 1;
  for (size_t i = 0; i < axis; ++i) *outer *= dims[i];
  size_t inner = elem;
  for (size_t i = axis + 1; i < dims.size(); ++i) inner *= static_cast<size_t>(dims[i]);
  *inner_bytes = inner;
}

// Copies `bytes` bytes of elements of `dtype`: element by element for strings (std::string objects
// must not be copied bytewise), else memcpy.
void copy_run(DataType dtype, char* dst, const char* src, size_t bytes) {
  if (dtype == DataType::kString) {
    std::copy_n(reinterpret_cast<const std::string*>(src), bytes / sizeof(std::string), reinterpret_cast<std::string*>(dst));
  } else {
    std::memcpy(dst, src, bytes);
  }
}

}  // namespace

Result<std::vector<Tensor>> HostDevice::run_subgraph(const std::string& attr, const Graph& sub,
                                                     const std::vector<Tensor>& inputs) {
  const std::vector<const Tensor*> captures(ctx_.inputs.begin() + static_cast<ptrdiff_t>(ctx_.node->explicit_inputs()),
                                            ctx_.inputs.end());
  return cpu::run_subgraph(*ctx_.node, attr, sub, inputs, captures);
}

Result<Tensor> HostDevice::slice(const Tensor& x, size_t axis, int64_t begin, int64_t len, bool drop) {
  const std::vector<int64_t>& dims = x.dims();
  int64_t outer;
  size_t inner;
  split_at(dims, axis, dtype_size(x.dtype()), &outer, &inner);
  std::vector<int64_t> out_dims = dims;
  out_dims[axis] = len;
  if (drop) out_dims.erase(out_dims.begin() + static_cast<ptrdiff_t>(axis));
  GRAFT_ASSIGN_OR_RETURN(Tensor y, Tensor::allocate(x.dtype(), out_dims));
  const size_t row = static_cast<size_t>(len) * inner;
  const char* src = static_cast<const char*>(x.data());
  char* dst = static_cast<char*>(y.data());
  for (int64_t o = 0; o < outer && row; ++o)
    copy_run(x.dtype(), dst + static_cast<size_t>(o) * row, src + (static_cast<size_t>(o * dims[axis] + begin)) * inner, row);
  return y;
}

Status HostDevice::place(Tensor& y, size_t axis, int64_t offset, const Tensor& src) {
  const int64_t extent = src.rank() == y.rank() ? src.dims()[axis] : 1;
  int64_t outer;
  size_t inner;
  split_at(y.dims(), axis, dtype_size(y.dtype()), &outer, &inner);
  const size_t row = static_cast<size_t>(extent) * inner;
  const char* s = static_cast<const char*>(src.data());
  char* d = static_cast<char*>(y.data());
  for (int64_t o = 0; o < outer && row; ++o)
    copy_run(y.dtype(), d + (static_cast<size_t>(o * y.dims()[axis] + offset)) * inner, s + static_cast<size_t>(o) * row, row);
  return Status::ok();
}

Result<Tensor*> HostDevice::allocate_output(size_t o, DataType dtype, std::vector<int64_t> dims) {
  if (o >= ctx_.outputs.size() || !ctx_.outputs[o]) return nullptr;
  return graft::allocate_output(ctx_, o, dtype, std::move(dims));
}

}  // namespace graft::cpu
