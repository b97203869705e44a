// CUDA ops for MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv (kernels:
// integer_kernels.cu), which a CUDA engine otherwise ran on the CPU reference with host<->device
// copies around them. Shapes, attributes, zero-point and scale layouts are read by the CPU
// reference's own readers (src/ops/integer_attrs.h), so a bad layout is refused in the same
// words on both backends; the kernels then index the parameters through the strides those readers
// give instead of the reference's per-element index tables.
#include <algorithm>
#include <string>
#include <vector>

#include "ops/integer_attrs.h"
#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/integer_kernels.cuh"
#include "ops/attr_util.h"
#include "ops/window_attrs.h"

namespace graft::cuda {
namespace {

using namespace util;

constexpr std::initializer_list<DataType> k8Bit = {DataType::kUInt8, DataType::kInt8};
constexpr std::initializer_list<DataType> kScaleTypes = {DataType::kFloat32, DataType::kFloat16,
                                                         DataType::kBFloat16};

// Input indices of the operands and parameters: MatMulInteger/ConvInteger take (a, b, a_zp, b_zp),
// the QLinear ops (a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp[, bias]).
struct Inputs {
  size_t a, b, a_zp, b_zp;
};
constexpr Inputs kIntegerInputs{0, 1, 2, 3};
constexpr Inputs kQLinearInputs{0, 3, 2, 5};

std::string input_name(size_t i) { return "input " + std::to_string(i); }

// ---- supports ----

// An optional zero point has its operand's dtype.
bool zero_point_ok(const Node& n, size_t zp, size_t of, std::string* why) {
  if (!has_input(n, zp) || in_dtype(n, zp) == in_dtype(n, of)) return true;
  return reject(why, input_name(zp) + " (a zero point) has dtype " + dtype_name(in_dtype(n, zp)) + " but " +
                         input_name(of) + " has " + dtype_name(in_dtype(n, of)));
}

bool operands_ok(const Node& n, const Inputs& io, std::string* why) {
  if (!has_input(n, io.a) || !has_input(n, io.b)) return reject(why, "needs both operands");
  return require_dtype(n, io.a, k8Bit, why) && require_dtype(n, io.b, k8Bit, why) &&
         zero_point_ok(n, io.a_zp, io.a, why) && zero_point_ok(n, io.b_zp, io.b, why);
}

bool output_is(const Node& n, DataType t, std::string* why) {
  if (out_dtype(n, 0) == t) return true;
  return reject(why, std::string("output 0 has dtype ") + dtype_name(out_dtype(n, 0)) + "; the kernel writes " +
                         dtype_name(t));
}

// The QLinear ops' three scales (inputs 1, 4, 6: one float dtype) and output zero point (input 7,
// whose dtype the output has).
bool qlinear_params_ok(const Node& n, std::string* why) {
  for (size_t i : {1, 4, 6}) {
    if (!has_input(n, i)) return reject(why, "needs its three scales (inputs 1, 4 and 6)");
    if (!require_dtype(n, i, kScaleTypes, why)) return false;
    if (in_dtype(n, i) != in_dtype(n, 1)) return reject(why, "the three scales differ in dtype");
  }
  if (!has_input(n, 7)) return reject(why, "needs y_zero_point (input 7)");
  if (!require_dtype(n, 7, k8Bit, why)) return false;
  return output_is(n, in_dtype(n, 7), why);
}

// Both operand ranks known, the batch within what the kernel's stride tables hold.
bool matmul_ranks_ok(const Node& n, const Inputs& io, std::string* why) {
  for (size_t i : {io.a, io.b}) {
    const int64_t r = n.input(i)->desc.rank();
    if (r < 1) return reject(why, input_name(i) + " has no known rank at build time");
    if (r > k::kMaxRank + 2)
      return reject(why, input_name(i) + " has rank " + std::to_string(r) + "; the kernel handles " +
                             std::to_string(k::kMaxRank) + " batch axes");
  }
  return true;
}

bool conv_rank_ok(const Node& n, std::string* why) {
  const int64_t r = n.input(0)->desc.rank();
  if (r < 3 || r > 2 + k::kIntConvMaxSpatial)
    return reject(why, "x must have a known rank of 3 to " + std::to_string(2 + k::kIntConvMaxSpatial) +
                           " (1-D to 3-D convolution), got " + (r < 0 ? std::string("unknown") : std::to_string(r)));
  return true;
}

bool matmul_integer_supports(const Node& n, std::string* why) {
  return operands_ok(n, kIntegerInputs, why) && output_is(n, DataType::kInt32, why) &&
         matmul_ranks_ok(n, kIntegerInputs, why);
}

bool qlinear_matmul_supports(const Node& n, std::string* why) {
  return operands_ok(n, kQLinearInputs, why) && qlinear_params_ok(n, why) && matmul_ranks_ok(n, kQLinearInputs, why);
}

bool conv_integer_supports(const Node& n, std::string* why) {
  return operands_ok(n, kIntegerInputs, why) && output_is(n, DataType::kInt32, why) && conv_rank_ok(n, why);
}

bool qlinear_conv_supports(const Node& n, std::string* why) {
  if (!operands_ok(n, kQLinearInputs, why) || !qlinear_params_ok(n, why) || !conv_rank_ok(n, why)) return false;
  return !has_input(n, 8) || require_dtype(n, 8, {DataType::kInt32}, why);
}

// ---- run ----

// The dtypes the kernels assume, checked again on the concrete tensors.
Status check_operands(const CudaExec& ex, const Inputs& io) {
  const Tensor* a = input_or_null(ex, io.a);
  const Tensor* b = input_or_null(ex, io.b);
  if (!a || !b) return fail(ex, StatusCode::kInvalidModel, "needs both operands");
  for (const Tensor* t : {a, b})
    if (t->dtype() != DataType::kInt8 && t->dtype() != DataType::kUInt8)
      return fail(ex, StatusCode::kUnsupported, "an operand has dtype ", dtype_name(t->dtype()),
                  "; expected int8 or uint8");
  const Tensor* az = input_or_null(ex, io.a_zp);
  const Tensor* bz = input_or_null(ex, io.b_zp);
  if ((az && az->dtype() != a->dtype()) || (bz && bz->dtype() != b->dtype()))
    return fail(ex, StatusCode::kInvalidModel, "a zero point has the dtype of its tensor");
  return Status::ok();
}

// The QLinear ops' scales (one float dtype), y_scale and y_zero_point per tensor, and the output's
// dtype that of y_zero_point.
Status check_qlinear_params(const CudaExec& ex) {
  const Tensor* s0 = input_or_null(ex, 1);
  for (size_t i : {1, 4, 6}) {
    const Tensor* s = input_or_null(ex, i);
    if (!s) return fail(ex, StatusCode::kInvalidModel, "required input ", static_cast<int64_t>(i), " (a scale) is missing");
    if ((s->dtype() != DataType::kFloat32 && s->dtype() != DataType::kFloat16 && s->dtype() != DataType::kBFloat16) ||
        s->dtype() != s0->dtype())
      return fail(ex, StatusCode::kUnsupported, "the scales must share one dtype of float32, float16 or bfloat16");
  }
  const Tensor* yzp = input_or_null(ex, 7);
  if (!yzp) return fail(ex, StatusCode::kInvalidModel, "required input y_zero_point is missing");
  if (yzp->dtype() != DataType::kInt8 && yzp->dtype() != DataType::kUInt8)
    return fail(ex, StatusCode::kUnsupported, "y_zero_point has dtype ", dtype_name(yzp->dtype()),
                "; expected int8 or uint8");
  GRAFT_RETURN_IF_ERROR(with_node(ex, check_per_tensor(input_or_null(ex, 6)->dims(), "y_scale")));
  GRAFT_RETURN_IF_ERROR(with_node(ex, check_per_tensor(yzp->dims(), "y_zero_point")));
  return Status::ok();
}

Status check_output(const CudaExec& ex, const Tensor& y, const std::vector<int64_t>& dims, DataType dt) {
  if (y.dims() != dims || y.dtype() != dt)
    return fail(ex, StatusCode::kInternal, "output ", dtype_name(y.dtype()), ints_to_string(y.dims()),
                " inconsistent with the inputs (", dtype_name(dt), ints_to_string(dims), ")");
  return Status::ok();
}

// Per output batch axis, the stride of an operand whose own batch axes (right-aligned against the
// output's `rank` axes) advance by `own` (0 where it broadcasts).
void place_strides(const std::vector<int64_t>& own, size_t rank, int64_t (&dst)[k::kMaxRank]) {
  const size_t lead = rank - own.size();
  for (size_t j = 0; j < rank; ++j) dst[j] = j < lead ? 0 : own[j - lead];
}

// An operand's own batch strides in elements: contiguous over its batch dims, times the matrix size.
std::vector<int64_t> operand_batch_strides(const std::vector<int64_t>& dims) {
  const size_t nb = dims.size() - 2;
  std::vector<int64_t> st(nb, 0);
  int64_t step = dims[nb] * dims[nb + 1];
  for (size_t a = nb; a-- > 0;) {
    st[a] = dims[a] == 1 ? 0 : step;
    step *= dims[a];
  }
  return st;
}

Status matmul_run(CudaExec& ex, bool qlinear) {
  const Inputs& io = qlinear ? kQLinearInputs : kIntegerInputs;
  GRAFT_RETURN_IF_ERROR(check_operands(ex, io));
  if (qlinear) GRAFT_RETURN_IF_ERROR(check_qlinear_params(ex));
  const Tensor& A = *input_or_null(ex, io.a);
  const Tensor& B = *input_or_null(ex, io.b);
  const Tensor* azp = input_or_null(ex, io.a_zp);
  const Tensor* bzp = input_or_null(ex, io.b_zp);
  auto plan_or = int_matmul_plan(A.dims(), B.dims());
  if (!plan_or) return with_node(ex, plan_or.status());
  const IntMatMulPlan& p = plan_or.value();
  const size_t rank = p.batch.size();
  if (rank > static_cast<size_t>(k::kMaxRank))
    return fail(ex, StatusCode::kUnsupported, "the broadcast batch has ", static_cast<int64_t>(rank),
                " axes; the kernel handles ", static_cast<int64_t>(k::kMaxRank));

  k::IntMatMulArgs args;
  args.M = p.M;
  args.K = p.K;
  args.N = p.N;
  args.batch_rank = static_cast<int>(rank);
  int64_t batch = 1;
  for (size_t j = 0; j < rank; ++j) {
    args.batch_dims[j] = p.batch[j];
    batch *= p.batch[j];
  }
  place_strides(operand_batch_strides(p.a_dims), rank, args.batch_strides[k::kIntA]);
  place_strides(operand_batch_strides(p.b_dims), rank, args.batch_strides[k::kIntB]);
  // A parameter's layout (zero point or scale) as strides; errors in the reference's words.
  auto place_param = [&](const Tensor* t, bool a_side, const char* name, k::IntMatMulOperand slot) -> Status {
    if (!t) return Status::ok();
    auto st = matmul_param_strides(p, a_side, t->dims(), name);
    if (!st) return with_node(ex, st.status());
    place_strides(st.value().batch, rank, args.batch_strides[slot]);
    args.vary_stride[slot] = st.value().vary;
    return Status::ok();
  };
  GRAFT_RETURN_IF_ERROR(place_param(azp, true, "a_zero_point", k::kIntAZp));
  GRAFT_RETURN_IF_ERROR(place_param(bzp, false, "b_zero_point", k::kIntBZp));
  args.a = A.data();
  args.b = B.data();
  args.a_zp = azp ? azp->data() : nullptr;
  args.b_zp = bzp ? bzp->data() : nullptr;
  DataType out_t = DataType::kInt32;
  if (qlinear) {
    const Tensor* as = input_or_null(ex, 1);
    const Tensor* bs = input_or_null(ex, 4);
    GRAFT_RETURN_IF_ERROR(place_param(as, true, "a_scale", k::kIntAScale));
    GRAFT_RETURN_IF_ERROR(place_param(bs, false, "b_scale", k::kIntBScale));
    args.scale_t = ktype(as->dtype());
    args.a_scale = as->data();
    args.b_scale = bs->data();
    args.y_scale = input_or_null(ex, 6)->data();
    args.y_zp = input_or_null(ex, 7)->data();
    out_t = input_or_null(ex, 7)->dtype();
  }
  Tensor& Y = *ex.ctx->outputs[0];
  GRAFT_RETURN_IF_ERROR(check_output(ex, Y, p.out_dims, out_t));
  return launch_status(
      k::launch_int_matmul(ktype(A.dtype()), ktype(B.dtype()), ktype(out_t), args, batch, Y.data(), stream_of(ex)),
      ex);
}

Status conv_run(CudaExec& ex, bool qlinear) {
  const Inputs& io = qlinear ? kQLinearInputs : kIntegerInputs;
  GRAFT_RETURN_IF_ERROR(check_operands(ex, io));
  if (qlinear) {
    GRAFT_RETURN_IF_ERROR(check_qlinear_params(ex));
    GRAFT_RETURN_IF_ERROR(with_node(ex, check_per_tensor(input_or_null(ex, 1)->dims(), "x_scale")));
  }
  const Tensor& X = *input_or_null(ex, io.a);
  const Tensor& W = *input_or_null(ex, io.b);
  const Tensor* xzp = input_or_null(ex, io.a_zp);
  const Tensor* wzp = input_or_null(ex, io.b_zp);
  auto plan_or = int_conv_plan(attrs_of(ex), X.dims(), W.dims());
  if (!plan_or) return with_node(ex, plan_or.status());
  const IntConvPlan& p = plan_or.value();
  if (xzp) GRAFT_RETURN_IF_ERROR(with_node(ex, check_per_tensor(xzp->dims(), "x_zero_point")));
  if (wzp) GRAFT_RETURN_IF_ERROR(with_node(ex, check_per_channel(wzp->dims(), p.M, "w_zero_point")));
  const size_t nsp = X.dims().size() - 2;
  if (nsp > static_cast<size_t>(k::kIntConvMaxSpatial))
    return fail(ex, StatusCode::kUnsupported, "a ", static_cast<int64_t>(nsp), "-D convolution; the kernel handles up to ",
                static_cast<int64_t>(k::kIntConvMaxSpatial), "-D");

  k::IntConvArgs args;
  args.N = p.N;
  args.C = p.C;
  args.M = p.M;
  args.Cg = p.Cg;
  args.Mg = p.M / p.group;
  const std::vector<int64_t> in_sp(X.dims().begin() + 2, X.dims().end());
  std::vector<int64_t> pb, pe;
  resolve_pads(p.window, in_sp, &pb, &pe);
  // Fewer spatial axes than the kernel's take the leading slots' extent-1 defaults.
  const size_t shift = static_cast<size_t>(k::kIntConvMaxSpatial) - nsp;
  for (size_t a = 0; a < nsp; ++a) {
    args.in[shift + a] = in_sp[a];
    args.out[shift + a] = p.out_dims[2 + a];
    args.kernel[shift + a] = p.window.kernel[a];
    args.stride[shift + a] = p.window.strides[a];
    args.pad[shift + a] = pb[a];
    args.dilation[shift + a] = p.window.dilations[a];
  }
  args.x = X.data();
  args.w = W.data();
  args.x_zp = xzp ? xzp->data() : nullptr;
  args.w_zp = wzp ? wzp->data() : nullptr;
  args.w_zp_per_channel = wzp && wzp->numel() > 1;
  DataType out_t = DataType::kInt32;
  if (qlinear) {
    const Tensor* ws = input_or_null(ex, 4);
    GRAFT_RETURN_IF_ERROR(with_node(ex, check_per_channel(ws->dims(), p.M, "w_scale")));
    const Tensor* bias = input_or_null(ex, 8);
    if (bias) GRAFT_RETURN_IF_ERROR(with_node(ex, check_conv_bias(bias->dtype(), bias->dims(), p.M)));
    args.scale_t = ktype(ws->dtype());
    args.x_scale = input_or_null(ex, 1)->data();
    args.w_scale = ws->data();
    args.w_scale_per_channel = ws->numel() > 1;
    args.y_scale = input_or_null(ex, 6)->data();
    args.y_zp = input_or_null(ex, 7)->data();
    args.bias = bias ? static_cast<const int32_t*>(bias->data()) : nullptr;
    out_t = input_or_null(ex, 7)->dtype();
  }
  Tensor& Y = *ex.ctx->outputs[0];
  GRAFT_RETURN_IF_ERROR(check_output(ex, Y, p.out_dims, out_t));
  return launch_status(k::launch_int_conv(ktype(X.dtype()), ktype(W.dtype()), ktype(out_t), args, Y.data(), stream_of(ex)),
                       ex);
}

Status matmul_integer_run(CudaExec& ex) { return matmul_run(ex, false); }
Status qlinear_matmul_run(CudaExec& ex) { return matmul_run(ex, true); }
Status conv_integer_run(CudaExec& ex) { return conv_run(ex, false); }
Status qlinear_conv_run(CudaExec& ex) { return conv_run(ex, true); }

}  // namespace

void append_cuda_integer_ops(std::vector<CudaOp>& out) {
  out.push_back(CudaOp{"MatMulInteger", &matmul_integer_supports, &matmul_integer_run, {}, nullptr});
  out.push_back(CudaOp{"ConvInteger", &conv_integer_supports, &conv_integer_run, {}, nullptr});
  out.push_back(CudaOp{"QLinearMatMul", &qlinear_matmul_supports, &qlinear_matmul_run, {}, nullptr});
  out.push_back(CudaOp{"QLinearConv", &qlinear_conv_supports, &qlinear_conv_run, {}, nullptr});
}

}  // namespace graft::cuda
