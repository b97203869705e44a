// Einsum's CUDA kernel and op: one thread per output element over the layout misc.h's parser gives,
// summing in the CPU reference's order (einsum.cpp).
#include "ops/misc/misc.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/cuda_kernel_common.cuh"
#include "backends/cuda/cuda_kernel_device.cuh"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "ops/attr_util.h"
#include "ops/misc/misc_cuda.h"

namespace graft::cuda {

// ---- kernels --------------------------------------------------------------------------------

namespace k {

// Launchers: plain device pointers, no framework types; each returns the launch's cudaError_t
// (cudaErrorInvalidValue for a type the launcher does not handle).
//
// The arithmetic follows the CPU reference step by step (double for the normalizations and the
// windows; results stored as graft's store_from_double does) so that integer outputs match it
// exactly.


// ---- Einsum ----------------------------------------------------------------------------------------

inline constexpr int kEinsumMaxInputs = 3;
inline constexpr int kEinsumMaxLabels = 12;
// Labels in output-first order: the first n_out index y's axes, the rest are summed. stride[k][l] is
// input k's stride for label l (0 where it lacks the label or broadcasts it; a diagonal adds).
struct EinsumArgs {
  int n_in = 0, n_labels = 0, n_out = 0;
  const void* in[kEinsumMaxInputs] = {};
  int64_t stride[kEinsumMaxInputs][kEinsumMaxLabels] = {};
  int64_t ext[kEinsumMaxLabels] = {};
  int64_t inner = 1;  // product of the summed labels' extents
};
// One thread per output element, summing in double (floats) or wrapping int64 (integers), in the
// CPU reference's order. All inputs and y have type t.
cudaError_t launch_einsum(KType t, const EinsumArgs& a, void* y, int64_t n, cudaStream_t s);

namespace {

template <typename T>
__global__ void einsum_kernel(EinsumArgs a, T* y, int64_t n) {
  constexpr bool kInt = std::is_integral_v<T>;
  GRAFT_GRID_STRIDE(o, n) {
    int64_t idx[kEinsumMaxLabels];
    int64_t rem = o;
    for (int p = a.n_out - 1; p >= 0; --p) {
      idx[p] = rem % a.ext[p];
      rem /= a.ext[p];
    }
    for (int p = a.n_out; p < a.n_labels; ++p) idx[p] = 0;
    double acc = 0;
    uint64_t iacc = 0;
    for (int64_t t = 0; t < a.inner; ++t) {
      double prod = 1;
      uint64_t iprod = 1;
      for (int k = 0; k < a.n_in; ++k) {
        int64_t off = 0;
        for (int p = 0; p < a.n_labels; ++p) off += idx[p] * a.stride[k][p];
        const T v = static_cast<const T*>(a.in[k])[off];
        if constexpr (kInt) iprod *= static_cast<uint64_t>(static_cast<int64_t>(v));
        else prod *= as_double(v);
      }
      acc += prod;
      iacc += iprod;
      for (int p = a.n_labels - 1; p >= a.n_out; --p) {
        if (++idx[p] < a.ext[p]) break;
        idx[p] = 0;
      }
    }
    if constexpr (kInt) y[o] = static_cast<T>(static_cast<int64_t>(iacc));
    else y[o] = store_from_double<T>(acc);
  }
}

}  // namespace

cudaError_t launch_einsum(KType t, const EinsumArgs& a, void* y, int64_t n, cudaStream_t s) {
  if (a.n_in < 1 || a.n_in > kEinsumMaxInputs || a.n_labels > kEinsumMaxLabels || a.n_out > a.n_labels)
    return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  GRAFT_EVERY_NUMERIC_DISPATCH(t, (einsum_kernel<T><<<grid_for(n), kThreads, 0, s>>>(a, static_cast<T*>(y), n)));
  return cudaGetLastError();
}

}  // namespace k

// ---- CUDA op --------------------------------------------------------------------------------

namespace {

using namespace util;

// ---- Einsum ---------------------------------------------------------------------------------------
// A direct kernel (one thread per output element), so no Einsum leaves the GPU; a contraction big
// enough for its speed to matter wants a MatMul lowering instead (not done yet).

Result<EinsumSpec> einsum_spec_of(const AttributeMap& attrs, const std::vector<int64_t>& ranks) {
  GRAFT_ASSIGN_OR_RETURN(std::string eq, attrs.get_string("equation", ""));
  auto spec = parse_einsum(eq, ranks);
  if (!spec) return Status(spec.status()).with_attribute("equation");
  return spec;
}

bool einsum_supports(const Node& n, std::string* why) {
  if (n.inputs.empty() || n.inputs.size() > static_cast<size_t>(k::kEinsumMaxInputs))
    return reject(why, "the CUDA kernel takes 1 to " + std::to_string(k::kEinsumMaxInputs) + " operands");
  std::vector<int64_t> ranks;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (!has_input(n, i)) return reject(why, "input " + std::to_string(i) + " is missing");
    // Input 0's dtype is the key; every operand has it.
    if (in_dtype(n, i) != in_dtype(n, 0)) return reject(why, "inputs have different dtypes");
    if (n.input(i)->desc.rank() < 0) return reject(why, "an input's rank is unknown at build time");
    ranks.push_back(n.input(i)->desc.rank());
  }
  auto spec = einsum_spec_of(n.attrs, ranks);
  if (!spec) return reject(why, spec.status().message());
  if (spec->num_labels > k::kEinsumMaxLabels)
    return reject(why, "the equation has " + std::to_string(spec->num_labels) + " labels, the kernel at most " +
                           std::to_string(k::kEinsumMaxLabels));
  return true;
}

Status einsum_run(CudaExec& ex) {
  const auto& in = ex.ctx->inputs;
  std::vector<int64_t> ranks;
  std::vector<std::vector<int64_t>> dims;
  for (const Tensor* t : in) {
    if (!t) return fail(ex, StatusCode::kInvalidModel, "Einsum inputs are all required");
    ranks.push_back(t->rank());
    dims.push_back(t->dims());
  }
  auto spec = einsum_spec_of(attrs_of(ex), ranks);
  if (!spec) return with_node(ex, spec.status());
  auto lay = einsum_layout(*spec, dims);
  if (!lay) return with_node(ex, lay.status());
  Tensor& y = *ex.ctx->outputs[0];
  if (y.dims() != std::vector<int64_t>(lay->ext.begin(), lay->ext.begin() + static_cast<int64_t>(lay->n_out)))
    return fail(ex, StatusCode::kInternal, "output dims do not match the equation");
  if (in.size() > static_cast<size_t>(k::kEinsumMaxInputs) || lay->order.size() > static_cast<size_t>(k::kEinsumMaxLabels))
    return fail(ex, StatusCode::kUnsupported, "more operands or labels than the CUDA kernel takes");
  k::EinsumArgs a;
  a.n_in = static_cast<int>(in.size());
  a.n_labels = static_cast<int>(lay->order.size());
  a.n_out = static_cast<int>(lay->n_out);
  a.inner = lay->inner;
  for (size_t p = 0; p < lay->order.size(); ++p) a.ext[p] = lay->ext[p];
  for (size_t k = 0; k < in.size(); ++k) {
    a.in[k] = in[k]->data();
    for (size_t p = 0; p < lay->order.size(); ++p) a.stride[k][p] = lay->stride[k][p];
  }
  return launch_status(k::launch_einsum(ktype(y.dtype()), a, y.data(), y.numel(), stream_of(ex)), ex);
}

}  // namespace

void append_cuda_einsum_ops(std::vector<CudaOp>& out) {
  out.push_back(kernel_dtypes({input_dtypes(0, kMiscNumericTypes)},
                              CudaOp{"Einsum", &einsum_supports, &einsum_run, {}, nullptr}));
}

}  // namespace graft::cuda
