// Guarded kernel calls of the op-test harness (guarded_run.h).
#include "guarded_run.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#ifdef GRAFT_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace graft::optest {

namespace {

// Guard bytes before and after every buffer; 256 keeps the data 256-byte aligned like cudaMalloc.
constexpr size_t kGuard = 256;
uint8_t guard_byte(size_t i) { return static_cast<uint8_t>(0xA5 ^ (i * 29)); }
std::vector<uint8_t> guard_pattern() {
  std::vector<uint8_t> g(kGuard);
  for (size_t i = 0; i < kGuard; ++i) g[i] = guard_byte(i);
  return g;
}

// One buffer of the run: host or device memory with guards, data at kGuard.
class GuardedBuffer {
 public:
  GuardedBuffer(Backend b, size_t nbytes) : backend_(b), nbytes_(nbytes) {}
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;
  ~GuardedBuffer() {
    if (backend_ == Backend::kCPU) {
      std::free(base_);
    } else {
#ifdef GRAFT_WITH_CUDA
      if (base_) (void)cudaFree(base_);
#endif
    }
  }

  // Allocates and writes the guards; `fill` is copied in, else the data bytes are set to `pattern`.
  Status init(const void* fill, uint8_t pattern) {
    const size_t total = nbytes_ + 2 * kGuard;
    std::vector<uint8_t> host(total);
    auto g = guard_pattern();
    std::memcpy(host.data(), g.data(), kGuard);
    std::memcpy(host.data() + kGuard + nbytes_, g.data(), kGuard);
    if (fill && nbytes_)
      std::memcpy(host.data() + kGuard, fill, nbytes_);
    else
      std::memset(host.data() + kGuard, pattern, nbytes_);
    if (backend_ == Backend::kCPU) {
      base_ = std::aligned_alloc(kGuard, (total + kGuard - 1) / kGuard * kGuard);
      if (!base_) return error(StatusCode::kOutOfMemory, "host allocation of ", total, " bytes failed");
      std::memcpy(base_, host.data(), total);
      return Status::ok();
    }
#ifdef GRAFT_WITH_CUDA
    if (cudaError_t e = cudaMalloc(&base_, total); e != cudaSuccess)
      return error(StatusCode::kRuntimeError, "cudaMalloc(", total, "): ", cudaGetErrorString(e));
    if (cudaError_t e = cudaMemcpy(base_, host.data(), total, cudaMemcpyHostToDevice); e != cudaSuccess)
      return error(StatusCode::kRuntimeError, "cudaMemcpy to device: ", cudaGetErrorString(e));
    return Status::ok();
#else
    return error(StatusCode::kUnsupported, "CUDA buffer without CUDA");
#endif
  }

  void* data() const { return static_cast<uint8_t*>(base_) + kGuard; }

  // Copies everything back to the host.
  Result<std::vector<uint8_t>> read_all() const {
    const size_t total = nbytes_ + 2 * kGuard;
    std::vector<uint8_t> host(total);
    if (backend_ == Backend::kCPU) {
      std::memcpy(host.data(), base_, total);
      return host;
    }
#ifdef GRAFT_WITH_CUDA
    if (cudaError_t e = cudaMemcpy(host.data(), base_, total, cudaMemcpyDeviceToHost); e != cudaSuccess)
      return error(StatusCode::kRuntimeError, "cudaMemcpy to host: ", cudaGetErrorString(e));
#endif
    return host;
  }

  // "" when both guards are intact, else where they were overwritten.
  static std::string check_guards(const std::vector<uint8_t>& all, size_t nbytes) {
    std::string out;
    for (size_t i = 0; i < kGuard; ++i) {
      if (all[i] != guard_byte(i)) {
        out += "written before the buffer at byte -" + std::to_string(kGuard - i) + "; ";
        break;
      }
    }
    for (size_t i = 0; i < kGuard; ++i) {
      if (all[kGuard + nbytes + i] != guard_byte(i)) {
        out += "written past the end at byte +" + std::to_string(i) + "; ";
        break;
      }
    }
    return out;
  }

  size_t nbytes() const { return nbytes_; }

 private:
  Backend backend_;
  size_t nbytes_;
  void* base_ = nullptr;
};

}  // namespace

Result<std::vector<Tensor>> run_guarded(Backend backend, const std::vector<Tensor>& inputs,
                                        const std::vector<OutSpec>& outs, size_t workspace_bytes,
                                        const std::vector<int>& host_inputs, const GuardedCall& call) {
  std::vector<std::unique_ptr<GuardedBuffer>> in_bufs, out_bufs;
  GuardedArgs args;
  const DeviceType dev = backend == Backend::kCUDA ? DeviceType::kCUDA : DeviceType::kCPU;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!t.defined()) {
      in_bufs.push_back(nullptr);
      args.inputs.push_back(TensorView{});
      continue;
    }
    const bool on_host =
        std::find(host_inputs.begin(), host_inputs.end(), static_cast<int>(i)) != host_inputs.end();
    const Backend where = on_host ? Backend::kCPU : backend;
    auto buf = std::make_unique<GuardedBuffer>(where, t.nbytes());
    GRAFT_RETURN_IF_ERROR(buf->init(t.data(), 0));
    args.inputs.push_back(TensorView{buf->data(), t.dtype(), t.dims(), on_host ? DeviceType::kCPU : dev});
    in_bufs.push_back(std::move(buf));
  }
  for (const OutSpec& o : outs) {
    for (int64_t d : o.dims)
      if (d < 0) return error(StatusCode::kInvalidArgument, "an output of unknown dims (", d, ") cannot be allocated");
    auto buf = std::make_unique<GuardedBuffer>(backend, static_cast<size_t>(numel_of(o.dims)) * dtype_size(o.dtype));
    GRAFT_RETURN_IF_ERROR(buf->init(nullptr, 0xFF));  // NaN for every float type
    args.outputs.push_back(TensorView{buf->data(), o.dtype, o.dims, dev});
    out_bufs.push_back(std::move(buf));
  }
  std::unique_ptr<GuardedBuffer> ws;
  if (workspace_bytes > 0) {
    ws = std::make_unique<GuardedBuffer>(backend, workspace_bytes);
    GRAFT_RETURN_IF_ERROR(ws->init(nullptr, 0xCD));  // garbage: kernels must not assume zeros
    args.workspace = ws->data();
    args.workspace_size = workspace_bytes;
  }

  Status run_st;
#ifdef GRAFT_WITH_CUDA
  cudaStream_t stream = nullptr;
  if (backend == Backend::kCUDA) {
    if (cudaError_t e = cudaStreamCreate(&stream); e != cudaSuccess)
      return error(StatusCode::kRuntimeError, "cudaStreamCreate: ", cudaGetErrorString(e));
    args.stream = stream;
  }
#endif
  run_st = call(args);
#ifdef GRAFT_WITH_CUDA
  if (backend == Backend::kCUDA) {
    cudaError_t sync = cudaStreamSynchronize(stream);
    cudaError_t destroy = cudaStreamDestroy(stream);
    if (run_st.is_ok() && sync != cudaSuccess)
      run_st = error(StatusCode::kRuntimeError, "kernel execution: ", cudaGetErrorString(sync));
    if (run_st.is_ok() && destroy != cudaSuccess)
      run_st = error(StatusCode::kRuntimeError, "cudaStreamDestroy: ", cudaGetErrorString(destroy));
  }
#endif
  GRAFT_RETURN_IF_ERROR(run_st);

  for (size_t i = 0; i < in_bufs.size(); ++i) {
    if (!in_bufs[i]) continue;
    GRAFT_ASSIGN_OR_RETURN(std::vector<uint8_t> all, in_bufs[i]->read_all());
    std::string g = GuardedBuffer::check_guards(all, in_bufs[i]->nbytes());
    EXPECT_EQ(g, "") << "input " << i << " guard bytes: " << g;
    EXPECT_EQ(std::memcmp(all.data() + kGuard, inputs[i].data(), inputs[i].nbytes()), 0)
        << "the kernel modified input " << i;
  }
  if (ws) {
    GRAFT_ASSIGN_OR_RETURN(std::vector<uint8_t> all, ws->read_all());
    std::string g = GuardedBuffer::check_guards(all, ws->nbytes());
    EXPECT_EQ(g, "") << "workspace guard bytes: " << g;
  }
  std::vector<Tensor> result;
  for (size_t o = 0; o < out_bufs.size(); ++o) {
    GRAFT_ASSIGN_OR_RETURN(std::vector<uint8_t> all, out_bufs[o]->read_all());
    std::string g = GuardedBuffer::check_guards(all, out_bufs[o]->nbytes());
    EXPECT_EQ(g, "") << "output " << o << " guard bytes: " << g;
    Tensor t = Tensor::empty(outs[o].dtype, outs[o].dims);
    if (t.nbytes()) std::memcpy(t.data(), all.data() + kGuard, t.nbytes());
    result.push_back(t);
  }
  return result;
}

}  // namespace graft::optest
