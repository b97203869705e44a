// The cuDNN layer's functions (cudnn_wrap.h).
#include "backends/cuda/cudnn_wrap.h"

#ifdef GRAFT_WITH_CUDNN

#include <algorithm>
#include <array>
#include <iterator>

#include "backends/cuda/cuda_op_util.h"

namespace graft::cuda {

namespace {

int i32(int64_t v) { return static_cast<int>(v); }

template <typename Owner, typename Handle>
Status create_into(Owner* d, cudnnStatus_t (*create)(Handle*), const CudaExec& ex, const char* what) {
  Handle h = nullptr;
  GRAFT_RETURN_IF_ERROR(dnn_status(create(&h), ex, what));
  d->reset(h);
  return Status::ok();
}

}  // namespace

Status dnn_status(cudnnStatus_t s, const CudaExec& ex, const char* what) {
  if (s == CUDNN_STATUS_SUCCESS) return Status::ok();
  return util::fail(ex, StatusCode::kRuntimeError, what, " failed: ", cudnnGetErrorString(s));
}

cudnnDataType_t dnn_data_type(DataType t) {
  return t == DataType::kFloat16 ? CUDNN_DATA_HALF : t == DataType::kBFloat16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
}

cudnnMathType_t dnn_math_type(DataType t) { return t == DataType::kFloat32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH; }

Status dnn_create(DnnTensor* d, const CudaExec& ex) {
  return create_into(d, &cudnnCreateTensorDescriptor, ex, "cudnnCreateTensorDescriptor");
}
Status dnn_create(DnnFilter* d, const CudaExec& ex) {
  return create_into(d, &cudnnCreateFilterDescriptor, ex, "cudnnCreateFilterDescriptor");
}
Status dnn_create(DnnConvolution* d, const CudaExec& ex) {
  return create_into(d, &cudnnCreateConvolutionDescriptor, ex, "cudnnCreateConvolutionDescriptor");
}
Status dnn_create(DnnActivation* d, const CudaExec& ex) {
  return create_into(d, &cudnnCreateActivationDescriptor, ex, "cudnnCreateActivationDescriptor");
}

Status dnn_set_tensor_4d(const DnnTensor& d, cudnnTensorFormat_t format, cudnnDataType_t type, int64_t n, int64_t c,
                         int64_t h, int64_t w, const CudaExec& ex, const char* what) {
  return dnn_status(cudnnSetTensor4dDescriptor(d.get(), format, type, i32(n), i32(c), i32(h), i32(w)), ex, what);
}

Status dnn_set_filter_4d(const DnnFilter& d, cudnnDataType_t type, cudnnTensorFormat_t format, int64_t k, int64_t c,
                         int64_t h, int64_t w, const CudaExec& ex, const char* what) {
  return dnn_status(cudnnSetFilter4dDescriptor(d.get(), type, format, i32(k), i32(c), i32(h), i32(w)), ex, what);
}

Status dnn_set_convolution_2d(const DnnConvolution& d, int64_t ph, int64_t pw, int64_t sh, int64_t sw, int64_t dh,
                              int64_t dw, int64_t group, DataType dt, const CudaExec& ex, const char* what) {
  GRAFT_RETURN_IF_ERROR(dnn_status(cudnnSetConvolution2dDescriptor(d.get(), i32(ph), i32(pw), i32(sh), i32(sw), i32(dh),
                                                                   i32(dw), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                                   ex, what));
  GRAFT_RETURN_IF_ERROR(dnn_status(cudnnSetConvolutionGroupCount(d.get(), i32(group)), ex, "cudnnSetConvolutionGroupCount"));
  return dnn_status(cudnnSetConvolutionMathType(d.get(), dnn_math_type(dt)), ex, "cudnnSetConvolutionMathType");
}

Status dnn_forward_algos(const CudaExec& ex, const DnnTensor& x, const DnnFilter& w, const DnnConvolution& conv,
                         const DnnTensor& y, DnnForwardAlgos* out) {
  return dnn_status(cudnnGetConvolutionForwardAlgorithm_v7(dnn_handle(ex), x.get(), w.get(), conv.get(), y.get(),
                                                           CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &out->count, out->perf),
                    ex, "cudnnGetConvolutionForwardAlgorithm_v7");
}

bool dnn_usable_forward_algo(const cudnnConvolutionFwdAlgoPerf_t& p, size_t workspace) {
  return p.status == CUDNN_STATUS_SUCCESS && p.memory <= workspace && p.algo != CUDNN_CONVOLUTION_FWD_ALGO_FFT &&
         p.algo != CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING;
}

// ---- graph API ----

namespace {

// The ids the graph's tensors have in a variant pack; virtual intermediates from kVirtual up.
enum : int64_t { kIdX = 1, kIdW, kIdY, kIdB, kIdZ, kIdVirtual = 100 };

Status backend_create(DnnBackend* d, cudnnBackendDescriptorType_t type, const CudaExec& ex) {
  cudnnBackendDescriptor_t h = nullptr;
  GRAFT_RETURN_IF_ERROR(dnn_status(cudnnBackendCreateDescriptor(type, &h), ex, "cudnnBackendCreateDescriptor"));
  d->reset(h);
  return Status::ok();
}

template <typename T>
Status backend_set(const DnnBackend& d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                   int64_t count, const T* values, const CudaExec& ex, const char* what) {
  return dnn_status(cudnnBackendSetAttribute(d.get(), name, type, count, values), ex, what);
}

Status backend_set_desc(const DnnBackend& d, cudnnBackendAttributeName_t name, const DnnBackend& value,
                        const CudaExec& ex, const char* what) {
  cudnnBackendDescriptor_t v = value.get();
  return backend_set(d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v, ex, what);
}

Status backend_finalize(const DnnBackend& d, const CudaExec& ex, const char* what) {
  return dnn_status(cudnnBackendFinalize(d.get()), ex, what);
}

// A 4-D tensor with logical dims (n, c, h, w) laid out NCHW or NHWC.
Status graph_tensor(DnnBackend* t, int64_t id, cudnnDataType_t type, const std::array<int64_t, 4>& dims, bool nhwc,
                    bool is_virtual, const CudaExec& ex) {
  const int64_t c = dims[1], h = dims[2], w = dims[3];
  const std::array<int64_t, 4> strides =
      nhwc ? std::array<int64_t, 4>{h * w * c, 1, w * c, c} : std::array<int64_t, 4>{c * h * w, h * w, w, 1};
  const int64_t align = kDnnGraphAlignment;
  const bool v = is_virtual;
  GRAFT_RETURN_IF_ERROR(backend_create(t, CUDNN_BACKEND_TENSOR_DESCRIPTOR, ex));
  GRAFT_RETURN_IF_ERROR(backend_set(*t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type, ex, "tensor dtype"));
  GRAFT_RETURN_IF_ERROR(backend_set(*t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data(), ex, "tensor dims"));
  GRAFT_RETURN_IF_ERROR(backend_set(*t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data(), ex, "tensor strides"));
  GRAFT_RETURN_IF_ERROR(backend_set(*t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &id, ex, "tensor id"));
  GRAFT_RETURN_IF_ERROR(backend_set(*t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align, ex, "tensor alignment"));
  GRAFT_RETURN_IF_ERROR(backend_set(*t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &v, ex, "tensor virtual"));
  return backend_finalize(*t, ex, "finalizing a graph tensor");
}

// y = mode(x[, b]) in float.
Status graph_pointwise(DnnBackend* op, DnnBackend* pw, cudnnPointwiseMode_t mode, const DnnBackend& x, const DnnBackend* b,
                       const DnnBackend& y, const CudaExec& ex) {
  const cudnnDataType_t prec = CUDNN_DATA_FLOAT;
  GRAFT_RETURN_IF_ERROR(backend_create(pw, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, ex));
  GRAFT_RETURN_IF_ERROR(backend_set(*pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode, ex, "pointwise mode"));
  GRAFT_RETURN_IF_ERROR(backend_set(*pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec, ex, "pointwise precision"));
  GRAFT_RETURN_IF_ERROR(backend_finalize(*pw, ex, "finalizing a pointwise descriptor"));
  GRAFT_RETURN_IF_ERROR(backend_create(op, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, ex));
  GRAFT_RETURN_IF_ERROR(backend_set_desc(*op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, *pw, ex, "pointwise op"));
  GRAFT_RETURN_IF_ERROR(backend_set_desc(*op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x, ex, "pointwise x"));
  if (b) GRAFT_RETURN_IF_ERROR(backend_set_desc(*op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b, ex, "pointwise b"));
  GRAFT_RETURN_IF_ERROR(backend_set_desc(*op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y, ex, "pointwise y"));
  return backend_finalize(*op, ex, "finalizing a pointwise operation");
}

// The spec's operation graph; `keep` holds every descriptor the graph refers to.
Status conv_operation_graph(const CudaExec& ex, const DnnConvGraphSpec& s, DnnBackend* graph, std::vector<DnnBackend>* keep) {
  keep->clear();
  keep->reserve(24);  // the pointers below stay valid: nothing is added past this
  auto fresh = [&]() -> DnnBackend* { return &keep->emplace_back(); };
  const bool epilogue = s.bias || s.residual || s.relu;
  DnnBackend* x = fresh();
  DnnBackend* w = fresh();
  DnnBackend* y = fresh();
  GRAFT_RETURN_IF_ERROR(graph_tensor(x, kIdX, s.io, {s.n, s.c, s.h, s.w}, s.nhwc, false, ex));
  GRAFT_RETURN_IF_ERROR(graph_tensor(w, kIdW, s.io, {s.m, s.c / std::max<int64_t>(1, s.group), s.kh, s.kw}, s.nhwc, false, ex));
  GRAFT_RETURN_IF_ERROR(graph_tensor(y, kIdY, s.io, {s.n, s.m, s.oh, s.ow}, s.nhwc, false, ex));
  int64_t next_virtual = kIdVirtual;
  auto intermediate = [&](DnnBackend** t) -> Status {
    *t = fresh();
    return graph_tensor(*t, next_virtual++, CUDNN_DATA_FLOAT, {s.n, s.m, s.oh, s.ow}, s.nhwc, true, ex);
  };
  // The convolution writes Y, or a float intermediate the epilogue reads.
  DnnBackend* acc = y;
  if (epilogue) GRAFT_RETURN_IF_ERROR(intermediate(&acc));
  DnnBackend* conv = fresh();
  const cudnnDataType_t comp = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const int64_t spatial = 2;
  const int64_t dil[2] = {s.dh, s.dw}, str[2] = {s.sh, s.sw}, pad[2] = {s.ph, s.pw};
  GRAFT_RETURN_IF_ERROR(backend_create(conv, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, ex));
  GRAFT_RETURN_IF_ERROR(backend_set(*conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp, ex, "conv compute type"));
  GRAFT_RETURN_IF_ERROR(backend_set(*conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode, ex, "conv mode"));
  GRAFT_RETURN_IF_ERROR(backend_set(*conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial, ex, "conv dims"));
  GRAFT_RETURN_IF_ERROR(backend_set(*conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dil, ex, "conv dilations"));
  GRAFT_RETURN_IF_ERROR(backend_set(*conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, str, ex, "conv strides"));
  GRAFT_RETURN_IF_ERROR(backend_set(*conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad, ex, "conv pads"));
  GRAFT_RETURN_IF_ERROR(backend_set(*conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad, ex, "conv pads"));
  GRAFT_RETURN_IF_ERROR(backend_finalize(*conv, ex, "finalizing the convolution descriptor"));
  std::vector<cudnnBackendDescriptor_t> ops;
  DnnBackend* conv_op = fresh();
  const float alpha = 1.f, beta = 0.f;
  GRAFT_RETURN_IF_ERROR(backend_create(conv_op, CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, ex));
  GRAFT_RETURN_IF_ERROR(backend_set(*conv_op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha, ex, "conv alpha"));
  GRAFT_RETURN_IF_ERROR(backend_set(*conv_op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta, ex, "conv beta"));
  GRAFT_RETURN_IF_ERROR(backend_set_desc(*conv_op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, *conv, ex, "conv op"));
  GRAFT_RETURN_IF_ERROR(backend_set_desc(*conv_op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, *x, ex, "conv op x"));
  GRAFT_RETURN_IF_ERROR(backend_set_desc(*conv_op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, *w, ex, "conv op w"));
  GRAFT_RETURN_IF_ERROR(backend_set_desc(*conv_op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, *acc, ex, "conv op y"));
  GRAFT_RETURN_IF_ERROR(backend_finalize(*conv_op, ex, "finalizing the convolution operation"));
  ops.push_back(conv_op->get());
  // The epilogue: each step reads the last result and writes the next intermediate, the last Y.
  struct Step {
    cudnnPointwiseMode_t mode;
    int64_t operand_id;  // 0: unary
  };
  std::vector<Step> steps;
  if (s.bias) steps.push_back({CUDNN_POINTWISE_ADD, kIdB});
  if (s.residual) steps.push_back({CUDNN_POINTWISE_ADD, kIdZ});
  if (s.relu) steps.push_back({CUDNN_POINTWISE_RELU_FWD, 0});
  for (size_t i = 0; i < steps.size(); ++i) {
    DnnBackend* operand = nullptr;
    if (steps[i].operand_id == kIdB) {
      operand = fresh();
      GRAFT_RETURN_IF_ERROR(graph_tensor(operand, kIdB, s.io, {1, s.m, 1, 1}, s.nhwc, false, ex));
    } else if (steps[i].operand_id == kIdZ) {
      operand = fresh();
      GRAFT_RETURN_IF_ERROR(graph_tensor(operand, kIdZ, s.io, {s.n, s.m, s.oh, s.ow}, s.nhwc, false, ex));
    }
    DnnBackend* out = y;
    if (i + 1 < steps.size()) GRAFT_RETURN_IF_ERROR(intermediate(&out));
    DnnBackend* op = fresh();
    DnnBackend* pw = fresh();
    GRAFT_RETURN_IF_ERROR(graph_pointwise(op, pw, steps[i].mode, *acc, operand, *out, ex));
    ops.push_back(op->get());
    acc = out;
  }
  cudnnHandle_t handle = dnn_handle(ex);
  GRAFT_RETURN_IF_ERROR(backend_create(graph, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, ex));
  GRAFT_RETURN_IF_ERROR(backend_set(*graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle, ex, "graph handle"));
  GRAFT_RETURN_IF_ERROR(backend_set(*graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                    static_cast<int64_t>(ops.size()), ops.data(), ex, "graph operations"));
  return backend_finalize(*graph, ex, "finalizing the operation graph");
}

// Whether an engine configuration's kernel is compiled when its plan is finalized (NVRTC): that
// took about 100 ms per float16 depthwise convolution of mobilenet_v3_large (cuDNN 9.19, H100),
// seconds for one first run; such configurations are left out, and the legacy API serves them.
bool compiles_at_run_time(cudnnBackendDescriptor_t config) {
  DnnBackend engine;
  cudnnBackendDescriptor_t raw = nullptr;
  if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &raw) != CUDNN_STATUS_SUCCESS) return true;
  engine.reset(raw);
  int64_t n = 0;
  if (cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &raw) !=
      CUDNN_STATUS_SUCCESS)
    return true;
  cudnnBackendBehaviorNote_t notes[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
  int64_t count = 0;
  if (cudnnBackendGetAttribute(raw, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                               CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &count, notes) != CUDNN_STATUS_SUCCESS)
    return true;
  for (int64_t i = 0; i < count && i < CUDNN_BEHAVIOR_NOTE_TYPE_COUNT; ++i)
    if (notes[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION) return true;
  return false;
}

}  // namespace

Status dnn_conv_graph_plans(const CudaExec& ex, const DnnConvGraphSpec& spec, size_t max_workspace, int max_plans,
                            int only_index, std::vector<DnnConvPlan>* out) {
  out->clear();
  std::vector<DnnBackend> keep;
  DnnBackend graph;
  GRAFT_RETURN_IF_ERROR(conv_operation_graph(ex, spec, &graph, &keep));
  DnnBackend heur;
  const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
  GRAFT_RETURN_IF_ERROR(backend_create(&heur, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, ex));
  GRAFT_RETURN_IF_ERROR(backend_set_desc(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph, ex, "heuristic graph"));
  GRAFT_RETURN_IF_ERROR(backend_set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode, ex, "heuristic mode"));
  // No engine for the graph (a fused epilogue cuDNN cannot run for these shapes): no plans.
  if (cudnnBackendFinalize(heur.get()) != CUDNN_STATUS_SUCCESS) return Status::ok();
  int64_t count = 0;
  GRAFT_RETURN_IF_ERROR(dnn_status(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                            CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr),
                                   ex, "counting the heuristic's engine configurations"));
  if (count <= 0) return Status::ok();
  std::vector<DnnBackend> configs(static_cast<size_t>(count));
  std::vector<cudnnBackendDescriptor_t> raw;
  for (auto& c : configs) {
    GRAFT_RETURN_IF_ERROR(backend_create(&c, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, ex));
    raw.push_back(c.get());
  }
  int64_t got = 0;
  GRAFT_RETURN_IF_ERROR(dnn_status(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                            CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, raw.data()),
                                   ex, "reading the heuristic's engine configurations"));
  cudnnHandle_t handle = dnn_handle(ex);
  for (int64_t i = 0; i < got && static_cast<int>(out->size()) < max_plans; ++i) {
    if (only_index >= 0 && i != only_index) continue;
    if (compiles_at_run_time(configs[static_cast<size_t>(i)].get())) continue;
    DnnConvPlan p;
    p.index = static_cast<int>(i);
    GRAFT_RETURN_IF_ERROR(backend_create(&p.plan, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, ex));
    GRAFT_RETURN_IF_ERROR(backend_set(p.plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle, ex, "plan handle"));
    GRAFT_RETURN_IF_ERROR(backend_set_desc(p.plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, configs[static_cast<size_t>(i)],
                                           ex, "plan engine configuration"));
    if (cudnnBackendFinalize(p.plan.get()) != CUDNN_STATUS_SUCCESS) continue;  // this configuration cannot run it
    int64_t n = 0;
    if (cudnnBackendGetAttribute(p.plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n,
                                 &p.workspace) != CUDNN_STATUS_SUCCESS ||
        p.workspace < 0 || static_cast<size_t>(p.workspace) > max_workspace)
      continue;
    out->push_back(std::move(p));
  }
  return Status::ok();
}

Status dnn_conv_graph_execute(const CudaExec& ex, const DnnConvPlan& p, const void* x, const void* w, void* y,
                              const void* b, const void* z, void* workspace) {
  const void* pointers[6] = {x, w, y, b, z, workspace};
  if (!p.pack.get() || !std::equal(std::begin(pointers), std::end(pointers), std::begin(p.pack_pointers))) {
    int64_t ids[5] = {kIdX, kIdW, kIdY, 0, 0};
    void* ptrs[5] = {const_cast<void*>(x), const_cast<void*>(w), y, nullptr, nullptr};
    int64_t n = 3;
    if (b) {
      ids[n] = kIdB;
      ptrs[n++] = const_cast<void*>(b);
    }
    if (z) {
      ids[n] = kIdZ;
      ptrs[n++] = const_cast<void*>(z);
    }
    DnnBackend pack;
    GRAFT_RETURN_IF_ERROR(backend_create(&pack, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, ex));
    GRAFT_RETURN_IF_ERROR(backend_set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, ids, ex, "variant pack ids"));
    GRAFT_RETURN_IF_ERROR(backend_set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, ptrs, ex,
                                      "variant pack pointers"));
    GRAFT_RETURN_IF_ERROR(backend_set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace, ex,
                                      "variant pack workspace"));
    GRAFT_RETURN_IF_ERROR(backend_finalize(pack, ex, "finalizing the variant pack"));
    p.pack = std::move(pack);
    std::copy(std::begin(pointers), std::end(pointers), std::begin(p.pack_pointers));
  }
  return dnn_status(cudnnBackendExecute(dnn_handle(ex), p.plan.get(), p.pack.get()), ex, "cudnnBackendExecute");
}

}  // namespace graft::cuda

#endif  // GRAFT_WITH_CUDNN
