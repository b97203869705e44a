// CUDA kernel of the ONNX builtin ConvTranspose (2-D, NCHW, and 1-D as 2-D with a height of 1),
// through cuDNN.
//
// A transposed convolution is the data gradient of the convolution whose filter is W: that
// convolution maps an [N, M, OH, OW] tensor to [N, C, H, W] with the filter [C, M/group, kH, kW]
// (W's own ONNX layout), so cudnnConvolutionBackwardData with dy = X and dx = Y computes
// ConvTranspose's Y. The bias is added afterwards by graft's per-channel epilogue kernel.
//
// Which pads cuDNN can express: y[i] gathers x[o] * w[k] over i = o*s - pb + k*d, 0 <= i < OH
// (pb the effective begin pad, however the attributes resolve it). cuDNN's backward data computes
// exactly that sum for a convolution with the symmetric pad pb over an input OH long, as long as
// that convolution's output is H long: floor((OH + 2 pb - eff) / s) + 1 == H (eff = d (k-1) + 1).
// With pe = s (H-1) + eff - pb - OH, the pad the output leaves off at the end (negative where
// output_padding or output_shape lengthen it), the condition reads 0 <= pb - pe < s. So symmetric
// pads are handled, and so is output_padding below the stride on top of them (the extra rows and
// columns are ones no forward window reaches); SAME_LOWER, SAME_UPPER and output_shape are handled
// when the pads they imply satisfy it. Every other form (asymmetric pads, output_padding >= the
// stride, a negative begin pad), 3-D, and bfloat16 or float64 data, runs on the direct kernel
// (conv_transpose_direct.cu) instead, as does every ConvTranspose of a build without cuDNN.
#include <climits>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/cudnn_wrap.h"
#include "ops/nn/nn_kernels.cuh"
#include "ops/attr_util.h"
#include "ops/window_attrs.h"

namespace graft::cuda {

using namespace util;  // NOLINT(build/namespaces)

namespace {

#ifdef GRAFT_WITH_CUDNN

// cuDNN may use up to this much scratch per call; algorithms that want more are skipped.
constexpr size_t kConvTransposeWorkspace = size_t(64) << 20;

// A 1-D transposed convolution's attributes as a 2-D one's whose first axis is a unit: kernel,
// stride and dilation 1, no pads, no output padding, output extent 1 (the tensors get a height of
// 1, which moves no byte of their contiguous storage). 2-D attributes are returned as they are.
graft::ConvTransposeAttrs lifted_to_2d(graft::ConvTransposeAttrs a) {
  if (a.window.kernel.size() != 1) return a;
  graft::WindowAttrs& w = a.window;
  w.kernel.insert(w.kernel.begin(), 1);
  w.strides.insert(w.strides.begin(), 1);
  w.dilations.insert(w.dilations.begin(), 1);
  if (w.pads.size() == 2) w.pads = {0, w.pads[0], 0, w.pads[1]};
  if (a.output_padding.size() == 1) a.output_padding.insert(a.output_padding.begin(), 0);
  if (a.output_shape.size() == 1) a.output_shape.insert(a.output_shape.begin(), 1);
  return a;
}

// dims of rank 3 ([N, C, L]) as rank 4 ([N, C, 1, L]); rank 4 as they are.
std::vector<int64_t> as_4d(std::vector<int64_t> d) {
  if (d.size() == 3) d.insert(d.begin() + 2, 1);
  return d;
}

// The symmetric cuDNN pad of each spatial axis for input extents `in` and output extents `out`, or
// false where cuDNN cannot express the problem (the direct kernel then runs it): cuDNN pads
// symmetrically, so the end pad (output_padding counted as a negative end pad) must be at most the
// begin pad and short of it by less than the stride.
bool cudnn_pads(const graft::ConvTransposeAttrs& a, const std::vector<int64_t>& in, const std::vector<int64_t>& out,
                int64_t pads[2]) {
  const std::vector<int64_t> begins = graft::conv_transpose_pad_begins(a, in, out);
  for (size_t i = 0; i < 2; ++i) {
    const int64_t s = a.window.strides[i];
    const int64_t eff = a.window.dilations[i] * (a.window.kernel[i] - 1) + 1;
    const int64_t pb = begins[i];
    const int64_t pe = s * (in[i] - 1) + eff - pb - out[i];
    if (pb < 0 || pb - pe < 0 || pb - pe >= s) return false;
    pads[i] = pb;
  }
  return true;
}

#endif  // GRAFT_WITH_CUDNN

// Every transposed convolution of 1 to 3 spatial axes: cuDNN's where it can express the pads
// (cudnn_pads, at run time, when the extents are known), the direct kernel otherwise.
bool conv_transpose_supports(const Node& n, std::string* why) {
  if (!has_input(n, 0) || !has_input(n, 1)) return reject(why, "ConvTranspose needs X and W");
  if (!inputs_share_dtype(n, {1, 2}, why)) return false;  // W and B have X's dtype (its key)
  const TensorDesc& xd = n.input(0)->desc;
  const TensorDesc& wd = n.input(1)->desc;
  const int64_t rank = xd.rank();
  if (rank < 3 || rank > 5)
    return reject(why, "only 1-D, 2-D and 3-D transposed convolutions (X of rank 3 to 5) are handled; X is " +
                           xd.to_string());
  if (wd.rank() >= 0 && wd.rank() != rank) return reject(why, "W must have X's rank; W is " + wd.to_string());
  const size_t spatial = static_cast<size_t>(rank - 2);
  std::vector<int64_t> wk;  // the kernel extent from W's shape, where the graph knows it
  if (wd.rank() == rank) {
    for (size_t i = 0; i < spatial && (*wd.shape)[2 + i].is_const(); ++i) wk.push_back((*wd.shape)[2 + i].value());
    if (wk.size() != spatial) wk.clear();
  }
  auto parsed = graft::parse_conv_transpose_attrs(n.attrs, spatial, wk.empty() ? nullptr : &wk);
  if (!parsed.is_ok()) return reject(why, parsed.status().message());
  return true;
}

size_t conv_transpose_workspace(const Node&, const std::vector<const Tensor*>&, const std::vector<Tensor>& /*outputs*/) {
#ifdef GRAFT_WITH_CUDNN
  return kConvTransposeWorkspace;
#else
  return 0;
#endif
}

// One ConvTranspose problem made ready to run, once per (node, shapes, dtype, workspace), so the
// attributes are parsed and checked against the tensors here and not per run: cuDNN's descriptors
// and algorithm where it can express the problem, else the direct kernel's geometry.
struct PreparedConvTranspose {
  int64_t m = 0, group = 1;  // Y's channels; the groups
  bool direct = true;
  k::Window3d g;  // direct: X's and Y's geometry over three spatial axes (leading ones 1 for fewer)
#ifdef GRAFT_WITH_CUDNN
  DnnTensor dy, dx;  // X and Y
  DnnFilter w;
  DnnConvolution conv;
  cudnnConvolutionBwdDataAlgo_t algo = CUDNN_CONVOLUTION_BWD_DATA_ALGO_0;
  int64_t inner = 0;  // OH * OW, for the bias
#endif
};

// The attributes of the node running, for X's spatial rank; errors name the node.
Result<graft::ConvTransposeAttrs> attrs_for(CudaExec& ex, const Tensor& W, size_t spatial) {
  const std::vector<int64_t> wk(W.dims().begin() + 2, W.dims().end());
  auto parsed = graft::parse_conv_transpose_attrs(*ex.ctx->attrs, spatial, &wk);
  if (!parsed.is_ok()) return with_node(ex, parsed.status());
  return parsed.value();
}

#ifdef GRAFT_WITH_CUDNN

// cuDNN's part of prepare(): false, leaving `p` to the direct kernel, where cuDNN's backward data
// cannot compute the problem (not 1-D or 2-D, not float32 or float16, or pads cudnn_pads refuses).
// `parsed` has been checked against the tensors.
Result<bool> prepare_cudnn(CudaExec& ex, const graft::ConvTransposeAttrs& parsed, const Tensor& X, const Tensor& W,
                           const Tensor& Y, PreparedConvTranspose* p) {
  if (!ex.cudnn || X.rank() > 4 || (X.dtype() != DataType::kFloat32 && X.dtype() != DataType::kFloat16)) return false;
  // A 1-D problem runs as 2-D with a height of 1 (lifted_to_2d).
  const graft::ConvTransposeAttrs a = lifted_to_2d(parsed);
  const std::vector<int64_t> x = as_4d(X.dims()), w = as_4d(W.dims()), y = as_4d(Y.dims());
  int64_t pads[2];
  if (!cudnn_pads(a, {x[2], x[3]}, {y[2], y[3]}, pads)) return false;
  // cuDNN's 4-D descriptors take int extents and int strides.
  for (const Tensor* t : {&X, &W, &Y})
    if (t->numel() > INT_MAX)
      return fail(ex, StatusCode::kUnsupported, "tensor ", graft::ints_to_string(t->dims()),
                  " has more elements than cuDNN's 4-D descriptors index");
  const int64_t n = x[0], c = x[1], mg = w[1], m = p->m;
  p->direct = false;
  p->inner = y[2] * y[3];
  const DataType dt = X.dtype();
  const cudnnDataType_t t = dnn_data_type(dt);
  GRAFT_RETURN_IF_ERROR(dnn_create(&p->dy, ex));
  GRAFT_RETURN_IF_ERROR(dnn_create(&p->dx, ex));
  GRAFT_RETURN_IF_ERROR(dnn_create(&p->w, ex));
  GRAFT_RETURN_IF_ERROR(dnn_create(&p->conv, ex));
  GRAFT_RETURN_IF_ERROR(dnn_set_tensor_4d(p->dy, CUDNN_TENSOR_NCHW, t, n, c, x[2], x[3], ex, "X (dy) descriptor"));
  GRAFT_RETURN_IF_ERROR(dnn_set_tensor_4d(p->dx, CUDNN_TENSOR_NCHW, t, n, m, y[2], y[3], ex, "Y (dx) descriptor"));
  // The forward convolution's filter is [out = C, in per group = M/group, kH, kW]: W as stored.
  GRAFT_RETURN_IF_ERROR(dnn_set_filter_4d(p->w, t, CUDNN_TENSOR_NCHW, c, mg, w[2], w[3], ex, "W descriptor"));
  GRAFT_RETURN_IF_ERROR(dnn_set_convolution_2d(p->conv, pads[0], pads[1], a.window.strides[0], a.window.strides[1],
                                               a.window.dilations[0], a.window.dilations[1], a.group, dt, ex,
                                               "convolution descriptor"));
  // cuDNN checks that the forward convolution of Y's shape gives X's shape; say so by name here
  // rather than let the call fail with a bare CUDNN_STATUS_BAD_PARAM.
  int fn = 0, fc = 0, fh = 0, fw = 0;
  GRAFT_RETURN_IF_ERROR(dnn_status(cudnnGetConvolution2dForwardOutputDim(p->conv.get(), p->dx.get(), p->w.get(), &fn, &fc,
                                                                         &fh, &fw),
                                   ex, "cudnnGetConvolution2dForwardOutputDim"));
  if (fn != n || fc != c || fh != x[2] || fw != x[3])
    return fail(ex, StatusCode::kInternal, "cuDNN maps Y ", graft::ints_to_string(y), " to [", fn, ",", fc, ",", fh, ",", fw,
                "], not to X ", graft::ints_to_string(x), " (pads ", pads[0], ",", pads[1], ")");

  // cuDNN's heuristic candidates, best first: the first that runs within the workspace (and, for
  // float32, without tensor-op math, which would mean TF32).
  cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
  int count = 0;
  GRAFT_RETURN_IF_ERROR(dnn_status(cudnnGetConvolutionBackwardDataAlgorithm_v7(dnn_handle(ex), p->w.get(), p->dy.get(),
                                                                               p->conv.get(), p->dx.get(),
                                                                               CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &count,
                                                                               perf),
                                   ex, "cudnnGetConvolutionBackwardDataAlgorithm_v7"));
  const cudnnConvolutionBwdDataAlgoPerf_t* pick = nullptr;
  for (int i = 0; i < count && !pick; ++i) {
    const auto& q = perf[i];
    if (q.status != CUDNN_STATUS_SUCCESS || q.memory > ex.workspace_size) continue;
    if (dt == DataType::kFloat32 && (q.mathType == CUDNN_TENSOR_OP_MATH || q.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION))
      continue;
    pick = &q;
  }
  if (!pick)
    return fail(ex, StatusCode::kUnsupported, "cuDNN offers no backward-data algorithm for this transposed convolution ",
                "within ", static_cast<uint64_t>(ex.workspace_size), " bytes of workspace (", count, " candidates)");
  p->algo = pick->algo;
  // float16: the math type the heuristic ranked this algorithm with (float32 keeps FMA math).
  if (dt == DataType::kFloat16) {
    GRAFT_RETURN_IF_ERROR(dnn_status(cudnnSetConvolutionMathType(p->conv.get(), pick->mathType), ex, "cudnnSetConvolutionMathType"));
  }
  return true;
}

#endif  // GRAFT_WITH_CUDNN

// Checks the shapes against the attributes (errors name the node), then prepares cuDNN's call or,
// where cuDNN cannot express the problem, the direct kernel's (conv_transpose_direct.cu) geometry.
Result<std::shared_ptr<PreparedConvTranspose>> prepare(CudaExec& ex, const Tensor& X, const Tensor& W, const Tensor* B,
                                                       const Tensor& Y) {
  const int64_t rank = X.rank();
  if (rank < 3 || rank > 5 || W.rank() != rank || Y.rank() != rank)
    return fail(ex, StatusCode::kInvalidModel, "X ", graft::ints_to_string(X.dims()), ", W ", graft::ints_to_string(W.dims()),
                " and Y ", graft::ints_to_string(Y.dims()), " must all have one rank from 3 to 5");
  const size_t spatial = static_cast<size_t>(rank - 2);
  GRAFT_ASSIGN_OR_RETURN(graft::ConvTransposeAttrs a, attrs_for(ex, W, spatial));
  const int64_t c = X.dims()[1], mg = W.dims()[1], m = mg * a.group;
  if (W.dims()[0] != c || c % a.group != 0)
    return fail(ex, StatusCode::kInvalidModel, "X ", graft::ints_to_string(X.dims()), " has ", c, " channels but W ",
                graft::ints_to_string(W.dims()), " with group ", a.group, " expects ", W.dims()[0],
                " (a multiple of the group)");
  if (B && B->numel() != m) return fail(ex, StatusCode::kInvalidModel, "bias B has ", B->numel(), " elements; expected ", m);
  if (Y.dims()[0] != X.dims()[0] || Y.dims()[1] != m)
    return fail(ex, StatusCode::kInternal, "output ", graft::ints_to_string(Y.dims()), " inconsistent with X ",
                graft::ints_to_string(X.dims()), " and W ", graft::ints_to_string(W.dims()));
  std::vector<int64_t> in(spatial), out(spatial);
  for (size_t i = 0; i < spatial; ++i) {
    in[i] = X.dims()[2 + i];
    out[i] = Y.dims()[2 + i];
    const Dim o = graft::conv_transpose_output_dim(a, i, Dim(in[i]));
    if (!o.is_const() || o.value() != out[i])
      return fail(ex, StatusCode::kInternal, "output ", graft::ints_to_string(Y.dims()), " does not match the extent ",
                  o.to_string(), " the attributes give on spatial axis ", static_cast<int64_t>(i));
  }
  auto p = std::make_shared<PreparedConvTranspose>();
  p->m = m;
  p->group = a.group;
#ifdef GRAFT_WITH_CUDNN
  GRAFT_ASSIGN_OR_RETURN(const bool on_cudnn, prepare_cudnn(ex, a, X, W, Y, p.get()));
  if (on_cudnn) return p;
#endif
  const std::vector<int64_t> begins = graft::conv_transpose_pad_begins(a, in, out);
  k::Window3d& g = p->g;
  g.n = X.dims()[0];
  g.c = c;
  const size_t lead = 3 - spatial;  // unit axes before the real ones
  for (size_t i = 0; i < spatial; ++i) {
    g.in[lead + i] = in[i];
    g.out[lead + i] = out[i];
    g.k[lead + i] = W.dims()[2 + i];
    g.s[lead + i] = a.window.strides[i];
    g.d[lead + i] = a.window.dilations[i];
    g.pb[lead + i] = begins[i];
  }
  return p;
}

Status conv_transpose_run(CudaExec& ex) {
  const auto& in = ex.ctx->inputs;
  if (in.size() < 2 || !in[0] || !in[1]) return fail(ex, StatusCode::kInvalidModel, "ConvTranspose needs X and W");
  const Tensor& X = *in[0];
  const Tensor& W = *in[1];
  const Tensor* B = in.size() > 2 ? in[2] : nullptr;
  Tensor& Y = *ex.ctx->outputs[0];
  if (W.dtype() != X.dtype() || Y.dtype() != X.dtype() || (B && B->dtype() != X.dtype()))
    return fail(ex, StatusCode::kInvalidModel, "X, W, B and Y must share one dtype");
  if (Y.numel() == 0) return Status::ok();
  const cudaStream_t s = stream_of(ex);
  if (X.numel() == 0) {
    // An empty spatial input reaches no output element, so Y is the bias alone (cuDNN takes no
    // zero extents, so it is not asked).
    if (Y.rank() < 3 || Y.rank() > 5)
      return fail(ex, StatusCode::kInvalidModel, "Y ", graft::ints_to_string(Y.dims()), " must have rank 3 to 5");
    if (B && B->numel() != Y.dims()[1])
      return fail(ex, StatusCode::kInvalidModel, "bias B has ", B->numel(), " elements; expected ", Y.dims()[1]);
    GRAFT_RETURN_IF_ERROR(launch_status(cudaMemsetAsync(Y.data(), 0, Y.nbytes(), s), ex, "cudaMemsetAsync"));
    if (!B) return Status::ok();
    return launch_status(k::launch_conv_epilogue(ktype(Y.dtype()), Y.data(), B->data(), nullptr, Y.dims()[1],
                                                 Y.numel() / (Y.dims()[0] * Y.dims()[1]), k::Epilogue{}, Y.numel(), s),
                         ex, "bias");
  }
  // Prepared once per (node, shapes, dtype, workspace): the node fixes the attributes.
  std::string key = PreparedCache::key_of("ConvTranspose", {reinterpret_cast<intptr_t>(ex.ctx->node),
                                                            static_cast<int64_t>(X.dtype()), B != nullptr,
                                                            static_cast<int64_t>(ex.workspace_size)});
  PreparedCache::append_dims(&key, X.dims());
  PreparedCache::append_dims(&key, W.dims());
  PreparedCache::append_dims(&key, Y.dims());
  PreparedConvTranspose* p = ex.prepared ? ex.prepared->find<PreparedConvTranspose>(key) : nullptr;
  std::shared_ptr<PreparedConvTranspose> owned;
  if (!p) {
    GRAFT_ASSIGN_OR_RETURN(owned, prepare(ex, X, W, B, Y));
    p = ex.prepared ? ex.prepared->put(key, owned) : owned.get();
  }
  if (p->direct)
    return launch_status(k::launch_conv_transpose_direct(ktype(X.dtype()), X.data(), W.data(), B ? B->data() : nullptr,
                                                         Y.data(), p->g, p->m, p->group, s),
                         ex, "direct kernel");
#ifdef GRAFT_WITH_CUDNN
  // The handle is on the run's stream already: the execution context sets it once per run,
  // outside any capture (cuda_engine.cpp), so this call is capturable into the run's graph.
  const float one = 1.f, zero = 0.f;
  GRAFT_RETURN_IF_ERROR(dnn_status(cudnnConvolutionBackwardData(dnn_handle(ex), &one, p->w.get(), W.data(), p->dy.get(),
                                                                X.data(), p->conv.get(), p->algo, ex.workspace,
                                                                ex.workspace_size, &zero, p->dx.get(), Y.data()),
                                   ex, "cudnnConvolutionBackwardData"));
  if (!B) return Status::ok();
  return launch_status(k::launch_conv_epilogue(ktype(Y.dtype()), Y.data(), B->data(), nullptr, p->m, p->inner,
                                               k::Epilogue{}, Y.numel(), s),
                       ex, "bias");
#else
  return fail(ex, StatusCode::kInternal, "cuDNN chosen in a build without it");
#endif
}

}  // namespace

void append_cuda_conv_transpose_ops(std::vector<CudaOp>& out) {
  // cuDNN takes float32 and float16; the direct kernel bfloat16 and float64 too.
  out.push_back(kernel_dtypes({input_dtypes(0, kGpuFloats64)},
                              CudaOp{"ConvTranspose", &conv_transpose_supports, &conv_transpose_run, {},
                                     &conv_transpose_workspace}));
}

}  // namespace graft::cuda
