// graft/tensor.h — tensor descriptions (symbolic) and tensors (concrete buffers).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graft/dim.h"
#include "graft/dtype.h"
#include "graft/status.h"

namespace graft {

enum class DeviceType : int { kCPU = 0, kCUDA = 1 };
const char* device_name(DeviceType d);

// What a value is: a tensor, or one of ONNX's containers: a sequence of tensors of one dtype
// (SequenceProto), an optional that holds a tensor or nothing, an optional that holds a sequence
// or nothing (OptionalProto). Containers live on the host (a CUDA engine runs the layers that make
// or read them on its CPU reference).
enum class ValueKind : uint8_t { kTensor = 0, kSequence = 1, kOptionalTensor = 2, kOptionalSequence = 3 };
const char* value_kind_name(ValueKind k);  // "tensor", "sequence", "optional tensor", "optional sequence"
inline bool is_optional_kind(ValueKind k) { return k == ValueKind::kOptionalTensor || k == ValueKind::kOptionalSequence; }
// What an optional of kind `k` holds (kTensor or kSequence); `k` itself for a non-optional kind.
inline ValueKind optional_content(ValueKind k) {
  return k == ValueKind::kOptionalTensor ? ValueKind::kTensor : k == ValueKind::kOptionalSequence ? ValueKind::kSequence : k;
}

// What the graph knows about a value at build time: dtype and (possibly symbolic) shape.
// `shape == nullopt` means even the rank is unknown. For a container (kind != kTensor), dtype and
// shape describe the tensors it holds: every element of a sequence (shape nullopt when they may
// differ), or what an optional holds.
struct TensorDesc {
  DataType dtype = DataType::kUndefined;
  std::optional<Shape> shape;
  ValueKind kind = ValueKind::kTensor;

  TensorDesc() = default;
  TensorDesc(DataType t, Shape s) : dtype(t), shape(std::move(s)) {}
  bool has_shape() const { return shape.has_value(); }
  bool is_tensor() const { return kind == ValueKind::kTensor; }
  int64_t rank() const { return shape ? static_cast<int64_t>(shape->size()) : -1; }
  std::string to_string() const;  // "float32[batch,3,224,224]", "seq(float32[?])", "optional(seq(int64[2]))"
};

int64_t numel_of(const std::vector<int64_t>& dims);  // 1 for rank 0
// Row-major strides in elements.
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& dims);

// Non-owning view of a dense row-major buffer; what kernels see. No framework types, so the same
// kernel runs under graft's engine, the PyTorch extension and the TensorRT adapter.
struct TensorView {
  void* data = nullptr;
  DataType dtype = DataType::kUndefined;
  std::vector<int64_t> dims;
  DeviceType device = DeviceType::kCPU;

  int64_t numel() const { return numel_of(dims); }
  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }
  template <typename T> T* as() const { return static_cast<T*>(data); }
};

// A limit on the host memory that graft's tensors may hold (`graft build/run --max-memory`, Python
// `max_memory=`, the fuzz targets). While a MemoryLimit is alive on a thread, every host tensor that
// thread allocates is counted against it until the tensor is freed (on whichever thread frees it),
// and an allocation that would take the bytes held above the limit fails: Tensor::allocate returns
// kOutOfMemory naming the limit, Tensor::empty throws std::bad_alloc (which the engine turns into an
// error naming the node). The innermost limit of a thread applies; 0 or less means no limit. The
// engine's kernels run on the calling thread, so a limit around a build or a run covers the weights,
// folded constants, activations and outputs it allocates. Device (CUDA) memory is not counted.
class MemoryLimit {
 public:
  explicit MemoryLimit(int64_t max_bytes);
  ~MemoryLimit();
  MemoryLimit(const MemoryLimit&) = delete;
  MemoryLimit& operator=(const MemoryLimit&) = delete;
  int64_t limit() const;
  int64_t in_use() const;  // bytes held now by tensors counted against this limit
  int64_t peak() const;    // the most held at once
  struct Budget;

 private:
  std::shared_ptr<Budget> budget_;
  std::shared_ptr<Budget> previous_;
};

// An owning, dense, row-major tensor. Copies share storage (like a shared_ptr); use clone() for a
// deep copy. Device memory is allocated through the CUDA backend when it is built.
class Tensor {
 public:
  Tensor() = default;
  // Allocates uninitialised memory. Fails with kInvalidArgument for a negative dim, a rank above
  // 64, or an element/byte count that overflows int64; with kOutOfMemory when the allocation fails
  // or a host tensor would be larger than the machine's physical memory. Use this for any size that
  // comes from a file, a user or a computed shape.
  static Result<Tensor> allocate(DataType dtype, std::vector<int64_t> dims, DeviceType device = DeviceType::kCPU);
  // allocate() for sizes the caller already validated (or knows to be small): for host tensors it
  // throws std::bad_alloc where allocate() returns an error, so a failed allocation is never written
  // through as NULL; a failed device allocation returns a tensor whose data() is null (the CUDA
  // backend checks it and reports the CUDA error).
  static Tensor empty(DataType dtype, std::vector<int64_t> dims, DeviceType device = DeviceType::kCPU);
  // Wraps external memory without owning it (caller keeps it alive).
  static Tensor wrap(void* data, DataType dtype, std::vector<int64_t> dims,
                     DeviceType device = DeviceType::kCPU);
  // Wraps memory that `owner` keeps alive: every copy of the tensor holds a reference to it, so a
  // pool that lends out its buffers sees one as free again once the last such tensor is gone.
  static Tensor wrap_shared(std::shared_ptr<void> owner, void* data, DataType dtype, std::vector<int64_t> dims,
                            DeviceType device = DeviceType::kCPU);
  // Host tensor from values (converted to dtype).
  static Tensor from_doubles(DataType dtype, std::vector<int64_t> dims, const std::vector<double>& v);
  // Host string tensor (DataType::kString) holding `v`, which must have numel_of(dims) elements.
  static Tensor from_strings(std::vector<int64_t> dims, const std::vector<std::string>& v);
  static Tensor scalar_int64(int64_t v);
  static Tensor vector_int64(const std::vector<int64_t>& v);
  // ONNX containers (see ValueKind). They own no buffer: data() is null, dims() empty, numel() 0;
  // dtype() is the dtype of the tensors they hold and device() where those live (the host when it
  // holds none; the GPU only inside a CUDA engine's run). A sequence's items all have `dtype` and one
  // device (kInvalidArgument naming the first that does not). An optional holds `content` (a
  // tensor, or a sequence for kOptionalSequence), or nothing when `content` is undefined or left out.
  static Result<Tensor> sequence(DataType dtype, std::vector<Tensor> items);
  static Result<Tensor> optional(ValueKind kind, DataType dtype, Tensor content);
  static Result<Tensor> optional(ValueKind kind, DataType dtype);

  bool defined() const { return static_cast<bool>(storage_) || data_ != nullptr || kind_ != ValueKind::kTensor; }
  ValueKind kind() const { return kind_; }
  bool is_tensor() const { return kind_ == ValueKind::kTensor; }
  // A sequence's tensors, or what an optional holds (none or one); empty for a tensor.
  const std::vector<Tensor>& items() const;
  bool has_element() const { return is_optional_kind(kind_) && !items().empty(); }  // an optional that holds a value
  DataType dtype() const { return dtype_; }
  const std::vector<int64_t>& dims() const { return dims_; }
  int64_t rank() const { return static_cast<int64_t>(dims_.size()); }
  int64_t numel() const { return kind_ == ValueKind::kTensor ? numel_of(dims_) : 0; }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  DeviceType device() const { return device_; }
  void* data() const { return data_; }
  template <typename T> T* data_as() const { return static_cast<T*>(data_); }
  TensorView view() const { return TensorView{data_, dtype_, dims_, device_}; }

  // Element access through double (host only; slow, for references and tests).
  double get(int64_t flat_index) const { return load_as_double(dtype_, data_, flat_index); }
  void set(int64_t flat_index, double v) { store_from_double(dtype_, data_, flat_index, v); }
  std::vector<int64_t> to_int64_vector() const;  // host integer/bool tensors

  // Copies src's elements into this tensor's buffer (same dtype and element count, both on the
  // host): a memcpy, or an element-wise assignment for strings. kInvalidArgument when they differ.
  Status copy_data_from(const Tensor& src) const;
  // Same kind, dtype, dims and elements, bit for bit (NaNs with the same bits are equal; strings
  // compare by text, not by the std::string objects' bytes); containers item by item. Host values
  // only: false when either holds device memory.
  bool same_contents(const Tensor& other) const;
  Tensor clone() const;                      // deep copy, same device (host only for now); throws like empty()
  Result<Tensor> try_clone() const;          // clone() reporting a failed allocation as an error
  // A host copy (this tensor itself when already on the host); device tensors need the CUDA backend.
  Result<Tensor> to_host() const;
  // A copy in GPU memory (this tensor itself when already there); needs a graft built with CUDA and
  // a CUDA engine created in this process (which installs the device allocator).
  Result<Tensor> to_device() const;
  Tensor reshaped(std::vector<int64_t> dims) const;  // same storage, new dims (numel must match)
  Result<Tensor> cast(DataType to) const;    // host only
  // Fill every byte with a pattern (NaN for floats) so unwritten elements are detectable; a string
  // tensor's elements become kPoisonString.
  void poison();
  static constexpr const char* kPoisonString = "<graft: unwritten>";

 private:
  std::shared_ptr<void> storage_;
  void* data_ = nullptr;
  DataType dtype_ = DataType::kUndefined;
  std::vector<int64_t> dims_;
  DeviceType device_ = DeviceType::kCPU;
  ValueKind kind_ = ValueKind::kTensor;
  std::shared_ptr<const std::vector<Tensor>> items_;  // containers only
};

// The description of a concrete value: a tensor's dtype and dims; for a sequence, its dtype and the
// dims its items share (rank unknown when they differ or there is none); for an optional, what it
// holds (shape unknown when it holds nothing).
TensorDesc desc_of_value(const Tensor& t);

}  // namespace graft
