#include "backends/cuda/device_memory.h"

#include <cuda_runtime.h>

#include <mutex>
#include <vector>

#include "backends/cuda/cuda_check.h"

namespace graft {
namespace cuda_alloc {
extern void* (*allocate)(size_t);
extern void (*release)(void*);
extern bool (*copy_to_host)(void* dst, const void* src, size_t bytes);
extern bool (*copy_to_device)(void* dst, const void* src, size_t bytes);
}  // namespace cuda_alloc

namespace cuda {

namespace {
// Why this thread's last cudaMalloc failed, so device_empty can tell a full GPU from an allocation
// made where none is allowed (inside a CUDA graph capture).
thread_local cudaError_t last_alloc_error = cudaSuccess;

void* hook_allocate(size_t n) {
  void* p = nullptr;
  last_alloc_error = cudaMalloc(&p, n);
  if (last_alloc_error != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return p;
}
void hook_release(void* p) {
  if (p) (void)cudaFree(p);
}
bool hook_copy_to_host(void* dst, const void* src, size_t n) {
  if (cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost) == cudaSuccess) return true;
  (void)cudaGetLastError();
  return false;
}
bool hook_copy_to_device(void* dst, const void* src, size_t n) {
  // From pageable memory cudaMemcpy may return before its DMA lands, and the engines' streams are
  // non-blocking (they do not wait for the legacy stream the copy is on): the tensor to_device
  // hands back is whole.
  if (cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice) == cudaSuccess &&
      cudaStreamSynchronize(cudaStreamLegacy) == cudaSuccess)
    return true;
  (void)cudaGetLastError();
  return false;
}
}  // namespace

void init_cuda_backend() {
  static std::once_flag once;
  std::call_once(once, [] {
    cuda_alloc::allocate = &hook_allocate;
    cuda_alloc::release = &hook_release;
    cuda_alloc::copy_to_host = &hook_copy_to_host;
    cuda_alloc::copy_to_device = &hook_copy_to_device;
  });
}

Result<Tensor> device_empty(DataType dtype, std::vector<int64_t> dims, const std::string& what) {
  init_cuda_backend();
  last_alloc_error = cudaSuccess;
  Tensor t = Tensor::empty(dtype, std::move(dims), DeviceType::kCUDA);
  if (!t.data()) {
    const cudaError_t why = last_alloc_error;
    if (why == cudaErrorStreamCaptureUnsupported || why == cudaErrorStreamCaptureImplicit ||
        why == cudaErrorStreamCaptureInvalidated || why == cudaErrorStreamCaptureWrongThread)
      return error(StatusCode::kInternal, "cannot allocate ", static_cast<uint64_t>(t.nbytes()), " bytes of GPU memory for ",
                   what, " while a CUDA graph is being captured (cudaMalloc: ", cudaGetErrorName(why),
                   "); device memory must be allocated before capture");
    if (why != cudaSuccess && why != cudaErrorMemoryAllocation)
      return cuda_status(why, "allocating ", static_cast<uint64_t>(t.nbytes()), " bytes of GPU memory for ", what);
    size_t free_b = 0, total_b = 0;
    (void)cudaMemGetInfo(&free_b, &total_b);
    (void)cudaGetLastError();
    return error(StatusCode::kOutOfMemory, "out of GPU memory allocating ", static_cast<uint64_t>(t.nbytes()),
                 " bytes for ", what, " (", static_cast<uint64_t>(free_b >> 20), " MiB free of ",
                 static_cast<uint64_t>(total_b >> 20), " MiB)");
  }
  return t;
}

Result<Tensor> device_bytes(size_t bytes, const std::string& what) {
  return device_empty(DataType::kUInt8, {static_cast<int64_t>(bytes)}, what);
}

Result<int> visible_gpus() {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return error(StatusCode::kUnsupported, "no usable CUDA GPU: cudaGetDeviceCount failed with ", cudaGetErrorName(e),
                 " (", cudaGetErrorString(e), ")");
  }
  if (n == 0) return error(StatusCode::kUnsupported, "no CUDA GPU is visible (cudaGetDeviceCount returned 0)");
  return n;
}

Result<Tensor> container_to(const Tensor& container, DeviceType to, void* stream) {
  const auto st = static_cast<cudaStream_t>(stream);
  std::vector<Tensor> items;
  for (const Tensor& item : container.items()) {
    if (!item.is_tensor()) {  // an optional sequence's sequence
      GRAFT_ASSIGN_OR_RETURN(Tensor inner, container_to(item, to, stream));
      items.push_back(std::move(inner));
      continue;
    }
    Tensor copy;
    if (to == DeviceType::kCUDA) {
      GRAFT_ASSIGN_OR_RETURN(copy, device_empty(item.dtype(), item.dims(), "a tensor a sequence or optional holds"));
    } else {
      GRAFT_ASSIGN_OR_RETURN(copy, Tensor::allocate(item.dtype(), item.dims()));
    }
    if (item.nbytes()) {
      const bool from_dev = item.device() == DeviceType::kCUDA, to_dev = to == DeviceType::kCUDA;
      const cudaMemcpyKind kind = from_dev ? (to_dev ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost)
                                           : (to_dev ? cudaMemcpyHostToDevice : cudaMemcpyHostToHost);
      GRAFT_CUDA_RETURN(cudaMemcpyAsync(copy.data(), item.data(), item.nbytes(), kind, st),
                        "copying a tensor a sequence or optional holds");
    }
    items.push_back(std::move(copy));
  }
  if (to == DeviceType::kCPU) GRAFT_CUDA_RETURN(cudaStreamSynchronize(st), "waiting for a sequence's tensors");
  if (container.kind() == ValueKind::kSequence) return Tensor::sequence(container.dtype(), std::move(items));
  if (items.empty()) return Tensor::optional(container.kind(), container.dtype());
  return Tensor::optional(container.kind(), container.dtype(), std::move(items[0]));
}

}  // namespace cuda
}  // namespace graft
