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

// Every forward algorithm on a resnet50-like first convolution (1x3x224x224, 64 7x7 filters, stride
// 2, pad 3): run once eagerly with a workspace, then once inside a capture.
void algos_in_capture(cudnnDataType_t t, cudnnTensorFormat_t f, const char* label) {
  cudnnHandle_t h = nullptr;
  cudnnCreate(&h);
  cudaStream_t s = nullptr;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudnnSetStream(h, s);
  cudnnTensorDescriptor_t x, y;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t c;
  cudnnCreateTensorDescriptor(&x);
  cudnnCreateTensorDescriptor(&y);
  cudnnCreateFilterDescriptor(&w);
  cudnnCreateConvolutionDescriptor(&c);
  cudnnSetTensor4dDescriptor(x, f, t, 1, 3, 224, 224);
  cudnnSetTensor4dDescriptor(y, f, t, 1, 64, 112, 112);
  cudnnSetFilter4dDescriptor(w, t, f, 64, 3, 7, 7);
  cudnnSetConvolution2dDescriptor(c, 3, 3, 2, 2, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
  if (t == CUDNN_DATA_HALF) cudnnSetConvolutionMathType(c, CUDNN_TENSOR_OP_MATH);
  void *dx, *dy, *dw, *ws;
  const size_t ws_bytes = size_t(64) << 20;
  cudaMalloc(&dx, 3 * 224 * 224 * 4);
  cudaMalloc(&dy, 64 * 112 * 112 * 4);
  cudaMalloc(&dw, 64 * 3 * 49 * 4);
  cudaMalloc(&ws, ws_bytes);
  const float one = 1, zero = 0;
  for (int a = 0; a < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; ++a) {
    const auto algo = static_cast<cudnnConvolutionFwdAlgo_t>(a);
    size_t need = 0;
    if (cudnnGetConvolutionForwardWorkspaceSize(h, x, w, c, y, algo, &need) != CUDNN_STATUS_SUCCESS || need > ws_bytes)
      continue;
    cudnnStatus_t eager = cudnnConvolutionForward(h, &one, x, dx, w, dw, c, algo, ws, ws_bytes, &zero, y, dy);
    cudaStreamSynchronize(s);
    (void)cudaGetLastError();
    if (eager != CUDNN_STATUS_SUCCESS) continue;
    cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
    cudnnStatus_t cap = cudnnConvolutionForward(h, &one, x, dx, w, dw, c, algo, ws, ws_bytes, &zero, y, dy);
    const cudaError_t last = cudaPeekAtLastError();
    cudaGraph_t g = nullptr;
    cudaError_t end = cudaStreamEndCapture(s, &g);
    (void)cudaGetLastError();
    std::printf("%s algo %d: in capture %s (CUDA last error %s), end capture %s\n", label, a, cudnnGetErrorString(cap),
                cudaGetErrorName(last), cudaGetErrorName(end));
    if (g) cudaGraphDestroy(g);
  }
  cudaFree(dx);
  cudaFree(dy);
  cudaFree(dw);
  cudaFree(ws);
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
  algos_in_capture(CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, "fp32 NCHW");
  algos_in_capture(CUDNN_DATA_HALF, CUDNN_TENSOR_NHWC, "fp16 NHWC");
  return 0;
}
