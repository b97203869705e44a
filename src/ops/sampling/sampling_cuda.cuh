// What the sampling family's CUDA backward launchers share (roi_align.cu, grid_sample.cu): the float
// accumulator their kernels add a gradient into, rounded into a float16 dx by the elementwise family's
// Cast launcher.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/cuda_kernel_common.cuh"
#include "backends/cuda/cuda_kernel_device.cuh"
#include "ops/elementwise/elementwise.h"  // launch_cast

namespace graft::cuda::k {

// A backward's dx as the kernels add into it: float, zeroed. For float32 dx itself; for float16 a
// stream-ordered float scratch, rounded into dx once at the end (finish): FP16 atomic adds would
// round at every one of a pixel's many shares (a roi's adaptive sampling gives dozens). The
// backward runs in training, outside engines and their graph captures, so it may allocate.
class FloatGradient {
 public:
  FloatGradient(KType t, void* dx, int64_t count, cudaStream_t s) : t_(t), dx_(dx), count_(count), s_(s) {
    if (t != KType::kF32 && t != KType::kF16) {
      err_ = cudaErrorInvalidValue;
      return;
    }
    if (count <= 0) return;
    const size_t bytes = static_cast<size_t>(count) * sizeof(float);
    if (t == KType::kF32) acc_ = static_cast<float*>(dx);
    else err_ = cudaMallocAsync(reinterpret_cast<void**>(&acc_), bytes, s);
    if (err_ == cudaSuccess) err_ = cudaMemsetAsync(acc_, 0, bytes, s);
  }
  ~FloatGradient() {
    if (t_ == KType::kF16 && acc_) (void)cudaFreeAsync(acc_, s_);
  }
  cudaError_t error() const { return err_; }
  float* data() const { return acc_; }
  // After the kernel: float16 dx from the float sums.
  cudaError_t finish() {
    if (err_ != cudaSuccess || t_ != KType::kF16 || count_ <= 0) return err_;
    return launch_cast(KType::kF32, KType::kF16, acc_, dx_, count_, s_);
  }

 private:
  KType t_;
  void* dx_;
  int64_t count_;
  cudaStream_t s_;
  float* acc_ = nullptr;
  cudaError_t err_ = cudaSuccess;
};

}  // namespace graft::cuda::k
