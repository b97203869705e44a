// The cuDNN layer's functions (cudnn_wrap.h).
#include "backends/cuda/cudnn_wrap.h"

#ifdef GRAFT_WITH_CUDNN

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

}  // namespace graft::cuda

#endif  // GRAFT_WITH_CUDNN
