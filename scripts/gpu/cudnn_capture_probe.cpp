// Diagnostic for the GPU suite (not a test): which cuDNN calls are refused inside a CUDA graph
// capture, on a handle that has or has not run work before. The engine's rule (cuda_engine.cpp:
// set the handle's stream outside any capture, prepare descriptors and algorithms before capture)
// rests on what this prints. Build: g++ -std=c++17 probe.cpp -I/usr/local/cuda/include -lcudnn -lcudart
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstdio>

namespace {

struct Conv {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t c = nullptr;
  void *dx = nullptr, *dy = nullptr, *dw = nullptr;
  Conv() {
    cudnnCreateTensorDescriptor(&x);
    cudnnCreateTensorDescriptor(&y);
    cudnnCreateFilterDescriptor(&w);
    cudnnCreateConvolutionDescriptor(&c);
    cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 8, 16, 16);
    cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 8, 16, 16);
    cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 8, 8, 3, 3);
    cudnnSetConvolution2dDescriptor(c, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
    cudaMalloc(&dx, 2 * 8 * 16 * 16 * 4);
    cudaMalloc(&dy, 2 * 8 * 16 * 16 * 4);
    cudaMalloc(&dw, 8 * 8 * 9 * 4);
  }
  cudnnStatus_t run(cudnnHandle_t h) {
    const float one = 1, zero = 0;
    return cudnnConvolutionForward(h, &one, x, dx, w, dw, c, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0,
                                   &zero, y, dy);
  }
};

void trial(const char* label, bool warm, bool set_stream_in_capture, bool query_in_capture) {
  cudnnHandle_t h = nullptr;
  cudnnCreate(&h);
  cudaStream_t s = nullptr;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  Conv conv;
  cudnnSetStream(h, s);
  if (warm) {
    cudnnStatus_t r = conv.run(h);
    cudaStreamSynchronize(s);
    if (r != CUDNN_STATUS_SUCCESS) std::printf("  warm-up conv: %s\n", cudnnGetErrorString(r));
  }
  cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
  cudnnStatus_t set = CUDNN_STATUS_SUCCESS, query = CUDNN_STATUS_SUCCESS;
  if (set_stream_in_capture) set = cudnnSetStream(h, s);
  if (query_in_capture) {
    cudnnConvolutionFwdAlgoPerf_t perf[8];
    int n = 0;
    query = cudnnGetConvolutionForwardAlgorithm_v7(h, conv.x, conv.w, conv.c, conv.y, 8, &n, perf);
  }
  cudnnStatus_t run = conv.run(h);
  cudaGraph_t g = nullptr;
  cudaError_t end = cudaStreamEndCapture(s, &g);
  (void)cudaGetLastError();
  std::printf("%-58s setStream=%s query=%s conv=%s endCapture=%s\n", label, cudnnGetErrorString(set),
              cudnnGetErrorString(query), cudnnGetErrorString(run), cudaGetErrorName(end));
  if (g) cudaGraphDestroy(g);
  cudaStreamDestroy(s);
  cudnnDestroy(h);
}

}  // namespace

int main() {
  std::printf("cuDNN %zu, capture probe\n", cudnnGetVersion());
  trial("fresh handle, cudnnSetStream inside capture", false, true, false);
  trial("warm handle (ran a conv), cudnnSetStream inside capture", true, true, false);
  trial("warm handle, heuristic query inside capture", true, false, true);
  trial("warm handle, stream set before capture (graft's rule)", true, false, false);
  return 0;
}
