// The one thin layer over cuDNN's legacy descriptor API that every convolution uses (GraftConv in
// src/ops/fused_conv/fused_conv_cuda.cpp, Conv in src/ops/nn/nn_cuda.cpp, ConvTranspose in src/ops/nn/conv_transpose_cuda.cpp): owning descriptor
// handles, the status-to-Status conversion (one error text for every caller), setters for the 4-D
// descriptors from the numbers the callers compute, and the forward algorithm query. It sets only
// what the callers ask for; which algorithm runs and with what epilogue stays with each caller.
#pragma once

#ifdef GRAFT_WITH_CUDNN

#include <cudnn.h>

#include <cstddef>
#include <cstdint>

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

}  // namespace graft::cuda

#endif  // GRAFT_WITH_CUDNN
