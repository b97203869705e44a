// The one thin layer over cuDNN (its legacy descriptor API, and its graph API for GraftConv's
// variants 10 and 11, below) that every convolution uses (GraftConv in
// src/ops/fused_conv/graft_conv_cuda.cpp, Conv in src/ops/nn/conv_cuda.cpp, ConvTranspose in src/ops/nn/conv_transpose_cuda.cpp): owning descriptor
// handles, the status-to-Status conversion (one error text for every caller), setters for the 4-D
// descriptors from the numbers the callers compute, and the forward algorithm query. It sets only
// what the callers ask for; which algorithm runs and with what epilogue stays with each caller.
#pragma once

#ifdef GRAFT_WITH_CUDNN

#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/owned_handle.h"
#include "graft/status.h"

namespace graft::cuda {

// OK for CUDNN_STATUS_SUCCESS, else kRuntimeError "CUDA <op>: <what> failed: <cuDNN's text>" naming
// the node.
Status dnn_status(cudnnStatus_t s, const CudaExec& ex, const char* what);

inline cudnnHandle_t dnn_handle(const CudaExec& ex) { return static_cast<cudnnHandle_t>(ex.cudnn); }

// float16 -> HALF, bfloat16 -> BFLOAT16, anything else -> FLOAT.
cudnnDataType_t dnn_data_type(DataType t);

// FP32 stays FP32 (no TF32: the engine promises 1e-4 against PyTorch), so FMA math only; half
// types may use tensor cores.
cudnnMathType_t dnn_math_type(DataType t);

// Move-only owners of one descriptor each; empty until dnn_create.
using DnnTensor = OwnedHandle<cudnnTensorDescriptor_t, &cudnnDestroyTensorDescriptor>;
using DnnFilter = OwnedHandle<cudnnFilterDescriptor_t, &cudnnDestroyFilterDescriptor>;
using DnnConvolution = OwnedHandle<cudnnConvolutionDescriptor_t, &cudnnDestroyConvolutionDescriptor>;
using DnnActivation = OwnedHandle<cudnnActivationDescriptor_t, &cudnnDestroyActivationDescriptor>;

// A new descriptor into *d (the one it held is destroyed); errors name the cuDNN create call.
Status dnn_create(DnnTensor* d, const CudaExec& ex);
Status dnn_create(DnnFilter* d, const CudaExec& ex);
Status dnn_create(DnnConvolution* d, const CudaExec& ex);
Status dnn_create(DnnActivation* d, const CudaExec& ex);

// cudnnSetTensor4dDescriptor / cudnnSetFilter4dDescriptor with the extents as cuDNN's ints; `what`
// names the descriptor in errors.
Status dnn_set_tensor_4d(const DnnTensor& d, cudnnTensorFormat_t format, cudnnDataType_t type, int64_t n, int64_t c,
                         int64_t h, int64_t w, const CudaExec& ex, const char* what);
Status dnn_set_filter_4d(const DnnFilter& d, cudnnDataType_t type, cudnnTensorFormat_t format, int64_t k, int64_t c,
                         int64_t h, int64_t w, const CudaExec& ex, const char* what);

// A 2-D cross-correlation with symmetric pads, then its group count, then dnn_math_type(dt). float16
// data accumulates in float32 (CUDNN_DATA_FLOAT compute), like every other graft kernel. `what`
// names the descriptor in errors.
Status dnn_set_convolution_2d(const DnnConvolution& d, int64_t ph, int64_t pw, int64_t sh, int64_t sw, int64_t dh,
                              int64_t dw, int64_t group, DataType dt, const CudaExec& ex, const char* what);

// cuDNN's forward algorithms for one problem, best first by its heuristic.
struct DnnForwardAlgos {
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int count = 0;
};
Status dnn_forward_algos(const CudaExec& ex, const DnnTensor& x, const DnnFilter& w, const DnnConvolution& conv,
                         const DnnTensor& y, DnnForwardAlgos* out);

// A forward algorithm graft runs: it succeeded, fits the workspace and is not one of the FFT
// algorithms. Those are never the fast choice for float16 on tensor-core GPUs, and FFT_TILING on a
// strided depthwise convolution (mobilenet_v3_large, 240 channels, stride 2, cuDNN 9.19, H200)
// never returned while being timed, hanging the build.
bool dnn_usable_forward_algo(const cudnnConvolutionFwdAlgoPerf_t& p, size_t workspace);

// ---- cuDNN's graph (backend) API: one forward convolution, its epilogue optionally fused ----
//
// Each legacy cudnnConvolutionForward or cudnnConvolutionBiasActivationForward call cost about 95
// microseconds of host time (cuDNN 9.19, H100: resnet50's 53 GraftConv layers took 5.1 of an eager
// run's 5.7 ms, bench/eager_host_cost.py at 75a6b66). An execution plan is made once per problem
// (prepared with the layer) and each run is one cudnnBackendExecute over a variant pack of pointers.
using DnnBackend = OwnedHandle<cudnnBackendDescriptor_t, &cudnnBackendDestroyDescriptor>;

// One forward convolution as a graph: X (n, c, h, w) * W (m, c / group, kh, kw) -> Y (n, m, oh, ow),
// every tensor in the io type and in NCHW or NHWC (filters OHWI) memory order, float accumulation.
// With bias / residual / relu, the graph continues y = relu(conv + bias + z) in float, written once.
struct DnnConvGraphSpec {
  cudnnDataType_t io = CUDNN_DATA_HALF;
  bool nhwc = false;
  int64_t n = 0, c = 0, h = 0, w = 0, m = 0, oh = 0, ow = 0, kh = 1, kw = 1, group = 1;
  int64_t ph = 0, pw = 0, sh = 1, sw = 1, dh = 1, dw = 1;
  bool bias = false, residual = false, relu = false;
};

// An execution plan of one engine configuration and the workspace it needs.
struct DnnConvPlan {
  DnnBackend plan;
  int64_t workspace = 0;
  int index = -1;  // the configuration's position in cuDNN's heuristic list (a tactic's algo)
  // The variant pack of the last call and the pointers it holds (x, w, y, b, z, workspace): an
  // eager run of the same shape set passes the same arena pointers again, and reusing the pack
  // saves creating and finalizing one per call. Touched only by the context's one thread.
  mutable DnnBackend pack;
  mutable const void* pack_pointers[6] = {};
};

// The plans of cuDNN's engine configurations for the spec, best first by its heuristic (mode A):
// at most max_plans, leaving out configurations that do not finalize or want more than
// max_workspace bytes. With only_index >= 0, the plan of that position of the list alone (none if
// it does not finalize or fit). An empty list is not an error: cuDNN has no engine for the graph.
Status dnn_conv_graph_plans(const CudaExec& ex, const DnnConvGraphSpec& spec, size_t max_workspace, int max_plans,
                            int only_index, std::vector<DnnConvPlan>* out);

// Runs a plan on ex's handle (and so its stream): b and z only where the spec has them; workspace
// holds the plan's workspace bytes. Reuses the plan's variant pack when the pointers are its own.
Status dnn_conv_graph_execute(const CudaExec& ex, const DnnConvPlan& p, const void* x, const void* w, void* y,
                              const void* b, const void* z, void* workspace);

// The byte alignment the graph's tensors are declared with: a pointer off it must not reach a plan.
constexpr int64_t kDnnGraphAlignment = 16;

}  // namespace graft::cuda

#endif  // GRAFT_WITH_CUDNN
