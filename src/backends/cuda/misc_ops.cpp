// CUDA ops for builtin ops that ran only on the CPU reference (with host<->device copies around
// them in a CUDA engine): InstanceNormalization, MeanVarianceNormalization, LRN, BitShift, EyeLike,
// HannWindow/HammingWindow/BlackmanWindow, ReverseSequence, Einsum and Det
// (src/backends/cpu/misc.cpp). Attributes and layouts are validated with the CPU reference's own
// readers (mvn_axes, lrn_attrs, ...), so errors read the same on both backends.
// Kernels live in misc_kernels.cu.
#include <algorithm>
#include <string>
#include <vector>

#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/misc_kernels.cuh"
#include "ops/attr_util.h"
#include "ops/einsum.h"
#include "ops/misc_attrs.h"

namespace graft::cuda {
namespace {

using namespace util;

constexpr std::initializer_list<DataType> kFloats = {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16,
                                                     DataType::kFloat64};

std::string dims_str(const std::vector<int64_t>& d) { return graft::ints_to_string(d); }




// ---- Normalizations -------------------------------------------------------------------------------

bool float_x(const Node& n, std::string* why) {
  if (!has_input(n, 0)) return reject(why, "input 0 is missing");
  return require_dtype(n, 0, kFloats, why);
}

bool instance_norm_supports(const Node& n, std::string* why) {
  if (!float_x(n, why)) return false;
  for (size_t i = 1; i < 3; ++i) {
    if (!has_input(n, i)) return reject(why, "needs scale and B");
    if (in_dtype(n, i) != in_dtype(n, 0)) return reject(why, "scale and B must have the input's dtype");
  }
  return true;
}

Status same_shape_output(const CudaExec& ex, const Tensor& x, const Tensor& y) {
  if (y.numel() != x.numel() || y.dtype() != x.dtype())
    return fail(ex, StatusCode::kInternal, "output must have the input's size and dtype");
  return Status::ok();
}

Status instance_norm_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  const Tensor* scale = input_or_null(ex, 1);
  const Tensor* bias = input_or_null(ex, 2);
  if (!x || !scale || !bias) return fail(ex, StatusCode::kInvalidModel, "needs input, scale and B");
  Tensor& y = *ex.ctx->outputs[0];
  GRAFT_RETURN_IF_ERROR(same_shape_output(ex, *x, y));
  if (scale->dtype() != x->dtype() || bias->dtype() != x->dtype())
    return fail(ex, StatusCode::kInvalidModel, "scale and B must have the input's dtype");
  auto eps = graft::instance_norm_epsilon(attrs_of(ex));
  if (!eps) return with_node(ex, eps.status());
  if (x->rank() < 2)
    return fail(ex, StatusCode::kInvalidModel, "input must have rank >= 2 (N, C, ...), got ", dims_str(x->dims()));
  const int64_t c = x->dims()[1];
  if (scale->dims() != std::vector<int64_t>{c} || bias->dims() != std::vector<int64_t>{c})
    return fail(ex, StatusCode::kInvalidModel, "scale ", dims_str(scale->dims()), " and B ", dims_str(bias->dims()),
                " must be [", c, "] for input ", dims_str(x->dims()));
  const graft::AxisView v = graft::axis_view(x->dims(), 1, false);
  return launch_status(k::launch_instance_norm(ktype(x->dtype()), x->data(), scale->data(), bias->data(), y.data(),
                                               v.outer * v.n, c, v.inner, static_cast<double>(eps.value()),
                                               stream_of(ex)), ex);
}

bool mvn_supports(const Node& n, std::string* why) {
  if (!float_x(n, why)) return false;
  const Value* x = n.input(0);
  if (x->desc.shape && x->desc.shape->size() > static_cast<size_t>(k::kMaxRank))
    return reject(why, "input rank exceeds the CUDA kernel's " + std::to_string(k::kMaxRank));
  return true;
}

Status mvn_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  if (!x) return fail(ex, StatusCode::kInvalidModel, "input 0 is missing");
  Tensor& y = *ex.ctx->outputs[0];
  GRAFT_RETURN_IF_ERROR(same_shape_output(ex, *x, y));
  auto axes = graft::mvn_axes(attrs_of(ex), x->rank());
  if (!axes) return with_node(ex, axes.status());
  const int64_t rank = x->rank();
  if (rank > k::kMaxRank)
    return fail(ex, StatusCode::kUnsupported, "input rank ", rank, " exceeds the CUDA kernel's ", k::kMaxRank);
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t a : axes.value()) reduced[static_cast<size_t>(a)] = true;
  // Kept and reduced axes, each with its row-major stride in x: a group's elements are its base
  // offset plus every combination of the reduced axes.
  k::Strided kept, red;
  int64_t stride = 1, groups = 1, count = 1;
  std::vector<int64_t> strides(static_cast<size_t>(rank));
  for (int64_t d = rank - 1; d >= 0; --d) {
    strides[static_cast<size_t>(d)] = stride;
    stride *= x->dims()[static_cast<size_t>(d)];
  }
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t extent = x->dims()[static_cast<size_t>(d)];
    k::Strided& s = reduced[static_cast<size_t>(d)] ? red : kept;
    s.dims[s.rank] = extent;
    s.strides[s.rank] = strides[static_cast<size_t>(d)];
    ++s.rank;
    (reduced[static_cast<size_t>(d)] ? count : groups) *= extent;
  }
  return launch_status(k::launch_mvn(ktype(x->dtype()), x->data(), y.data(), kept, red, groups, count, stream_of(ex)),
                       ex);
}

Status lrn_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  if (!x) return fail(ex, StatusCode::kInvalidModel, "input 0 is missing");
  Tensor& y = *ex.ctx->outputs[0];
  GRAFT_RETURN_IF_ERROR(same_shape_output(ex, *x, y));
  auto a = graft::lrn_attrs(attrs_of(ex));
  if (!a) return with_node(ex, a.status());
  if (x->rank() < 2)
    return fail(ex, StatusCode::kInvalidModel, "input must have rank >= 2 (N, C, ...), got ", dims_str(x->dims()));
  const graft::AxisView v = graft::axis_view(x->dims(), 1, false);
  const int64_t size = a.value().size;
  // floor((size - 1) / 2) channels before, ceil after; `after` clamped to the channel count so
  // ch + after cannot overflow for a huge size.
  const int64_t before = (size - 1) / 2;
  const int64_t after = std::min(size - 1 - before, v.n);
  const double alpha_over_size = static_cast<double>(a.value().alpha) / static_cast<double>(size);
  return launch_status(k::launch_lrn(ktype(x->dtype()), x->data(), y.data(), v.outer, v.n, v.inner, before, after,
                                     alpha_over_size, static_cast<double>(a.value().bias),
                                     static_cast<double>(a.value().beta), stream_of(ex)), ex);
}

// ---- BitShift -----------------------------------------------------------------------------------

bool bit_shift_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0) || !has_input(n, 1)) return reject(why, "needs X and Y");
  // uint8 is the one integer type of BitShift graft has (its schema takes nothing else).
  return require_dtype(n, 0, {DataType::kUInt8}, why) && require_dtype(n, 1, {DataType::kUInt8}, why);
}

Status bit_shift_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  const Tensor* s = input_or_null(ex, 1);
  if (!x || !s) return fail(ex, StatusCode::kInvalidModel, "needs X and Y");
  Tensor& y = *ex.ctx->outputs[0];
  auto left = graft::bit_shift_left(attrs_of(ex));
  if (!left) return with_node(ex, left.status());
  if (x->dtype() != s->dtype() || y.dtype() != x->dtype())
    return fail(ex, StatusCode::kInvalidModel, "X and Y must share a dtype, got ", dtype_name(x->dtype()), " and ",
                dtype_name(s->dtype()));
  if (x->dtype() != DataType::kUInt8) return fail(ex, StatusCode::kUnsupported, "dtype ", dtype_name(x->dtype()));
  k::Bcast p;
  std::string why;
  if (!make_bcast(y.dims(), {x->dims(), s->dims()}, &p, &why)) return fail(ex, StatusCode::kInvalidModel, why);
  return launch_status(k::launch_bit_shift(left.value(), static_cast<const uint8_t*>(x->data()),
                                           static_cast<const uint8_t*>(s->data()), p, static_cast<uint8_t*>(y.data()),
                                           y.numel(), stream_of(ex)), ex);
}

// ---- EyeLike ------------------------------------------------------------------------------------

bool is_kernel_type(DataType t) {
  switch (t) {
    case DataType::kFloat32: case DataType::kFloat16: case DataType::kBFloat16: case DataType::kFloat64:
    case DataType::kInt8: case DataType::kUInt8: case DataType::kInt32: case DataType::kInt64: case DataType::kBool:
      return true;
    default: return false;
  }
}

bool eye_like_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0)) return reject(why, "input 0 is missing");
  if (!is_kernel_type(out_dtype(n, 0)))
    return reject(why, std::string("output dtype ") + dtype_name(out_dtype(n, 0)) + " is not handled");
  return true;
}

// Only x's shape is used: its values are never read.
Status eye_like_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  if (!x) return fail(ex, StatusCode::kInvalidModel, "input 0 is missing");
  Tensor& y = *ex.ctx->outputs[0];
  GRAFT_ASSIGN_OR_RETURN(int64_t kdiag, attrs_of(ex).get_int("k", 0));
  if (x->rank() != 2) return fail(ex, StatusCode::kInvalidModel, "input must be 2-D, got ", dims_str(x->dims()));
  if (y.dims() != x->dims()) return fail(ex, StatusCode::kInternal, "output shape differs from the input's");
  // The bytes of 1 in y's dtype, made by the same store the CPU reference uses.
  uint64_t one = 0;
  store_from_double(y.dtype(), &one, 0, 1.0);
  return launch_status(k::launch_eye_like(static_cast<int>(dtype_size(y.dtype())), one, x->dims()[0], x->dims()[1],
                                          kdiag, y.data(), stream_of(ex)), ex);
}

// ---- Windows ------------------------------------------------------------------------------------

bool window_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0)) return reject(why, "input size is missing");
  if (!require_dtype(n, 0, {DataType::kInt32, DataType::kInt64}, why)) return false;
  const DataType t = out_dtype(n, 0);
  if (t == DataType::kBool || !is_kernel_type(t))
    return reject(why, std::string("output dtype ") + dtype_name(t) + " is not handled");
  return true;
}

// The size is a host input: the output's length is that value, which the engine needs on the host
// anyway to shape the output; the samples are computed on the device.
template <int kKind>
Status window_run(CudaExec& ex) {
  const Tensor* size = input_or_null(ex, 0);
  Tensor& y = *ex.ctx->outputs[0];
  if (!size || size->numel() != 1 || !dtype_is_integer(size->dtype()))
    return fail(ex, StatusCode::kInvalidModel, "input size must be one integer, got ",
                size ? dtype_name(size->dtype()) : "nothing", " ", size ? dims_str(size->dims()) : "");
  if (size->device() != DeviceType::kCPU) return fail(ex, StatusCode::kInternal, "size must be a host input");
  const int64_t n = size->to_int64_vector()[0];
  if (n < 0 || n > graft::kMaxWindowLength)
    return fail(ex, StatusCode::kInvalidModel, "size ", n, " is outside [0, ", graft::kMaxWindowLength, "]");
  if (y.numel() != n) return fail(ex, StatusCode::kInternal, "output has ", y.numel(), " elements, size is ", n);
  GRAFT_ASSIGN_OR_RETURN(int64_t periodic, attrs_of(ex).get_int("periodic", 1));
  return launch_status(k::launch_window(ktype(y.dtype()), kKind, periodic != 0, y.data(), n, stream_of(ex)), ex);
}

// ---- Det ----------------------------------------------------------------------------------------

bool det_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0)) return reject(why, "needs X");
  return require_dtype(n, 0, {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kFloat64}, why);
}

// Each matrix is eliminated in a double copy of its own in the workspace.
size_t det_workspace(const Node&, const std::vector<const Tensor*>& inputs, const std::vector<Tensor>& /*outputs*/) {
  if (inputs.empty() || !inputs[0] || inputs[0]->rank() < 2) return 0;
  return static_cast<size_t>(inputs[0]->numel()) * sizeof(double);
}

Status det_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  if (!x) return fail(ex, StatusCode::kInvalidModel, "needs X");
  Tensor& y = *ex.ctx->outputs[0];
  if (x->rank() < 2 || x->dims()[x->rank() - 1] != x->dims()[x->rank() - 2])
    return fail(ex, StatusCode::kInvalidModel, "input must be [..., M, M], got ", dims_str(x->dims()));
  const int64_t m = x->dims()[x->rank() - 1];
  // An empty matrix (m = 0) has determinant 1: the kernel's elimination then does nothing.
  const int64_t batches = m == 0 ? y.numel() : x->numel() / (m * m);
  if (y.numel() != batches || y.dtype() != x->dtype())
    return fail(ex, StatusCode::kInternal, "output must hold one determinant per matrix, in the input's dtype");
  if (ex.workspace_size < static_cast<size_t>(x->numel()) * sizeof(double))
    return fail(ex, StatusCode::kInternal, "Det workspace missing");
  return launch_status(k::launch_det(ktype(x->dtype()), x->data(), batches, m, static_cast<double*>(ex.workspace),
                                     y.data(), stream_of(ex)), ex);
}

// ---- ReverseSequence ----------------------------------------------------------------------------

bool reverse_sequence_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0) || !has_input(n, 1)) return reject(why, "needs input and sequence_lens");
  if (!is_kernel_type(in_dtype(n, 0)))
    return reject(why, std::string("input dtype ") + dtype_name(in_dtype(n, 0)) + " is not handled");
  return require_dtype(n, 1, {DataType::kInt64}, why);
}

// sequence_lens stays on the device (the kernel reads it), so a length out of range cannot fail
// the run as on the CPU: see launch_reverse_sequence.
Status reverse_sequence_run(CudaExec& ex) {
  const Tensor* x = input_or_null(ex, 0);
  const Tensor* lens = input_or_null(ex, 1);
  if (!x || !lens) return fail(ex, StatusCode::kInvalidModel, "needs input and sequence_lens");
  Tensor& y = *ex.ctx->outputs[0];
  auto axes = graft::reverse_sequence_axes(attrs_of(ex));
  if (!axes) return with_node(ex, axes.status());
  if (x->rank() < 2) return fail(ex, StatusCode::kInvalidModel, "input must have rank >= 2, got ", dims_str(x->dims()));
  if (y.dims() != x->dims() || y.dtype() != x->dtype())
    return fail(ex, StatusCode::kInternal, "output must have the input's shape and dtype");
  const bool batch0 = axes.value().first == 0;
  const int64_t batch = x->dims()[batch0 ? 0 : 1];
  if (lens->dtype() != DataType::kInt64 || lens->dims() != std::vector<int64_t>{batch})
    return fail(ex, StatusCode::kInvalidModel, "sequence_lens must be int64 [", batch, "], got ",
                dtype_name(lens->dtype()), " ", dims_str(lens->dims()));
  int64_t block = 1;
  for (int64_t d = 2; d < x->rank(); ++d) block *= x->dims()[static_cast<size_t>(d)];
  return launch_status(k::launch_reverse_sequence(static_cast<int>(dtype_size(x->dtype())), x->data(),
                                                  static_cast<const int64_t*>(lens->data()), y.data(), batch0,
                                                  x->dims()[0], x->dims()[1], block, stream_of(ex)), ex);
}

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
    if (!is_kernel_type(in_dtype(n, i)) || in_dtype(n, i) == DataType::kBool)
      return reject(why, std::string("dtype ") + dtype_name(in_dtype(n, i)) + " is not handled");
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

void append_cuda_misc_ops(std::vector<CudaOp>& out) {
  out.push_back(CudaOp{"InstanceNormalization", &instance_norm_supports, &instance_norm_run, {}, nullptr});
  out.push_back(CudaOp{"MeanVarianceNormalization", &mvn_supports, &mvn_run, {}, nullptr});
  out.push_back(CudaOp{"LRN", &float_x, &lrn_run, {}, nullptr});
  out.push_back(CudaOp{"BitShift", &bit_shift_supports, &bit_shift_run, {}, nullptr});
  out.push_back(CudaOp{"EyeLike", &eye_like_supports, &eye_like_run, {}, nullptr});
  out.push_back(CudaOp{"HannWindow", &window_supports, &window_run<0>, {0}, nullptr});
  out.push_back(CudaOp{"HammingWindow", &window_supports, &window_run<1>, {0}, nullptr});
  out.push_back(CudaOp{"BlackmanWindow", &window_supports, &window_run<2>, {0}, nullptr});
  out.push_back(CudaOp{"ReverseSequence", &reverse_sequence_supports, &reverse_sequence_run, {}, nullptr});
  out.push_back(CudaOp{"Einsum", &einsum_supports, &einsum_run, {}, nullptr});
  out.push_back(CudaOp{"Det", &det_supports, &det_run, {}, &det_workspace});
}

}  // namespace graft::cuda
