#include "graft/tensor.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <string>

#include "core/checked_math.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace graft {

const char* device_name(DeviceType d) { return d == DeviceType::kCUDA ? "cuda" : "cpu"; }

std::string TensorDesc::to_string() const {
  std::string s = dtype_name(dtype);
  s += shape ? shape_to_string(*shape) : "[?]";
  switch (kind) {
    case ValueKind::kTensor: return s;
    case ValueKind::kSequence: return "seq(" + s + ")";
    case ValueKind::kOptionalTensor: return "optional(" + s + ")";
    case ValueKind::kOptionalSequence: return "optional(seq(" + s + "))";
  }
  return s;
}

const char* value_kind_name(ValueKind k) {
  switch (k) {
    case ValueKind::kTensor: return "tensor";
    case ValueKind::kSequence: return "sequence";
    case ValueKind::kOptionalTensor: return "optional tensor";
    case ValueKind::kOptionalSequence: return "optional sequence";
  }
  return "?";
}

int64_t numel_of(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int64_t i = static_cast<int64_t>(dims.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * dims[i + 1];
  return s;
}

// Device allocation hooks are provided by the CUDA backend when it is linked in.
namespace cuda_alloc {
void* (*allocate)(size_t) = nullptr;
void (*release)(void*) = nullptr;
bool (*copy_to_host)(void* dst, const void* src, size_t bytes) = nullptr;  // false on a CUDA error
bool (*copy_to_device)(void* dst, const void* src, size_t bytes) = nullptr;  // false on a CUDA error
}  // namespace cuda_alloc

Status check_concrete_shape(const std::vector<int64_t>& dims, DataType dtype, const std::string& what) {
  if (static_cast<int64_t>(dims.size()) > kMaxRank)
    return error(StatusCode::kInvalidArgument, what, " has rank ", static_cast<uint64_t>(dims.size()),
                 ", more than graft's limit of ", kMaxRank);
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] < 0)
      return error(StatusCode::kInvalidArgument, what, " has a negative dimension ", dims[i], " (dimension ",
                   static_cast<uint64_t>(i), " of ", shape_to_string(shape_from_values(dims)), ")");
  if (!checked_nbytes(dims, dtype_size(dtype) ? dtype_size(dtype) : 1))
    return error(StatusCode::kInvalidArgument, what, " ", dtype_name(dtype), shape_to_string(shape_from_values(dims)),
                 " has more elements or bytes than fit in a 64-bit integer");
  return Status::ok();
}

int64_t max_host_allocation_bytes() {
  // One tensor larger than the machine's physical memory can never be used: refuse it up front with
  // a message, instead of letting an overcommitted allocation succeed and the OOM killer end the
  // process when the tensor is written.
  static const int64_t limit = [] {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    int64_t bytes = 0;
    if (pages <= 0 || page <= 0 || !checked_mul(pages, page, &bytes)) return std::numeric_limits<int64_t>::max();
    return bytes;
  }();
  return limit;
}

struct MemoryLimit::Budget {
  int64_t limit = 0;
  std::atomic<int64_t> in_use{0}, peak{0};
};

namespace {
thread_local std::shared_ptr<MemoryLimit::Budget> t_memory_budget;
}  // namespace

MemoryLimit::MemoryLimit(int64_t max_bytes) : budget_(std::make_shared<Budget>()), previous_(t_memory_budget) {
  budget_->limit = max_bytes;
  t_memory_budget = max_bytes > 0 ? budget_ : nullptr;
}
MemoryLimit::~MemoryLimit() { t_memory_budget = previous_; }
int64_t MemoryLimit::limit() const { return budget_->limit; }
int64_t MemoryLimit::in_use() const { return budget_->in_use.load(); }
int64_t MemoryLimit::peak() const { return budget_->peak.load(); }

Result<Tensor> Tensor::allocate(DataType dtype, std::vector<int64_t> dims, DeviceType device) {
  GRAFT_RETURN_IF_ERROR(check_concrete_shape(dims, dtype, "a tensor"));
  const int64_t bytes = *checked_nbytes(dims, dtype_size(dtype));
  auto describe = [&] { return std::string(dtype_name(dtype)) + shape_to_string(shape_from_values(dims)); };
  if (device == DeviceType::kCPU && bytes > max_host_allocation_bytes())
    return error(StatusCode::kOutOfMemory, "a ", describe(), " tensor needs ", bytes,
                 " bytes, more than this machine's memory (", max_host_allocation_bytes(), " bytes)");
  // Never allocate zero bytes (keeps data() non-null for empty tensors); 64-byte alignment for SIMD.
  // `bytes` is at most the physical memory (host) or below 2^63 (device), so this cannot wrap.
  const size_t alloc = ((static_cast<size_t>(bytes) + 63) / 64) * 64 + 64;
  std::shared_ptr<MemoryLimit::Budget> budget = device == DeviceType::kCPU ? t_memory_budget : nullptr;
  if (budget) {
    const int64_t n = static_cast<int64_t>(alloc);
    const int64_t held = budget->in_use.fetch_add(n) + n;
    if (held > budget->limit) {
      budget->in_use.fetch_sub(n);
      return error(StatusCode::kOutOfMemory, "a ", describe(), " tensor needs ", bytes,
                   " bytes, over the memory limit of ", budget->limit, " bytes (", held - n,
                   " bytes already held; raise --max-memory / max_memory=)");
    }
    for (int64_t peak = budget->peak.load(); held > peak && !budget->peak.compare_exchange_weak(peak, held);) {
    }
  }
  if (dtype == DataType::kString && device != DeviceType::kCPU)
    return error(StatusCode::kUnsupported, "a ", describe(), " tensor cannot live on the GPU: ",
                 "string tensors run on the CPU engine only");
  Tensor t;
  t.dtype_ = dtype;
  t.dims_ = std::move(dims);
  t.device_ = device;
  void* p = nullptr;
  if (device == DeviceType::kCUDA && cuda_alloc::allocate) {
    p = cuda_alloc::allocate(alloc);
    if (p) t.storage_ = std::shared_ptr<void>(p, [](void* q) { cuda_alloc::release(q); });
  } else {
    p = std::aligned_alloc(64, alloc);
    if (p) {
      if (budget)
        t.storage_ = std::shared_ptr<void>(p, [budget, alloc](void* q) {
          std::free(q);
          budget->in_use.fetch_sub(static_cast<int64_t>(alloc));
        });
      else
        t.storage_ = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
    } else if (budget) {
      budget->in_use.fetch_sub(static_cast<int64_t>(alloc));
    }
  }
  if (!p)
    return error(StatusCode::kOutOfMemory, "out of ", device == DeviceType::kCUDA ? "GPU" : "host",
                 " memory allocating a ", describe(), " tensor (", bytes, " bytes)");
  t.data_ = p;
  if (dtype == DataType::kString) {
    // Construct the strings in the buffer; an aliasing owner destroys them before the buffer goes.
    auto* strings = static_cast<std::string*>(p);
    const size_t n = static_cast<size_t>(numel_of(t.dims_));
    std::uninitialized_default_construct_n(strings, n);
    std::shared_ptr<void> buffer = std::move(t.storage_);
    t.storage_ = std::shared_ptr<void>(p, [buffer, n](void* q) { std::destroy_n(static_cast<std::string*>(q), n); });
  }
  return t;
}

Tensor Tensor::empty(DataType dtype, std::vector<int64_t> dims, DeviceType device) {
  if (device == DeviceType::kCUDA) {
    // Device callers (the CUDA backend's device_empty) check data() and turn a null into an error
    // with the CUDA reason (out of memory, allocation during graph capture): keep that contract
    // (host code never writes through a device pointer). New code should use allocate().
    auto t = allocate(dtype, dims, device);
    if (t) return std::move(t).value();
    Tensor failed;
    failed.dtype_ = dtype;
    failed.dims_ = std::move(dims);
    failed.device_ = device;
    return failed;
  }
  auto t = allocate(dtype, std::move(dims), device);
  // Callers of empty() pass sizes that are already validated (or small); a failure here must still
  // never hand out a NULL buffer that the caller then writes. Kernels run inside try/catch, which
  // turns this into an error naming the node.
  if (!t) throw std::bad_alloc();
  return std::move(t).value();
}

Tensor Tensor::wrap(void* data, DataType dtype, std::vector<int64_t> dims, DeviceType device) {
  Tensor t;
  t.data_ = data;
  t.dtype_ = dtype;
  t.dims_ = std::move(dims);
  t.device_ = device;
  return t;
}

Tensor Tensor::wrap_shared(std::shared_ptr<void> owner, void* data, DataType dtype, std::vector<int64_t> dims,
                           DeviceType device) {
  Tensor t = wrap(data, dtype, std::move(dims), device);
  t.storage_ = std::move(owner);
  return t;
}

Tensor Tensor::from_doubles(DataType dtype, std::vector<int64_t> dims, const std::vector<double>& v) {
  Tensor t = empty(dtype, std::move(dims));
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, v[static_cast<size_t>(i)]);
  return t;
}

Tensor Tensor::from_strings(std::vector<int64_t> dims, const std::vector<std::string>& v) {
  Tensor t = empty(DataType::kString, std::move(dims));
  std::copy_n(v.begin(), std::min<size_t>(v.size(), static_cast<size_t>(t.numel())), t.data_as<std::string>());
  return t;
}

Tensor Tensor::scalar_int64(int64_t v) {
  Tensor t = empty(DataType::kInt64, {});
  *t.data_as<int64_t>() = v;
  return t;
}

Tensor Tensor::vector_int64(const std::vector<int64_t>& v) {
  Tensor t = empty(DataType::kInt64, {static_cast<int64_t>(v.size())});
  if (!v.empty()) std::memcpy(t.data(), v.data(), v.size() * sizeof(int64_t));
  return t;
}

std::vector<int64_t> Tensor::to_int64_vector() const {
  std::vector<int64_t> out(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) {
    switch (dtype_) {
      case DataType::kInt64: out[i] = data_as<int64_t>()[i]; break;
      case DataType::kInt32: out[i] = data_as<int32_t>()[i]; break;
      default: out[i] = saturating_int64(get(i)); break;  // float data: NaN or huge must not be UB
    }
  }
  return out;
}

Result<Tensor> Tensor::sequence(DataType dtype, std::vector<Tensor> items) {
  const DeviceType device = items.empty() ? DeviceType::kCPU : items[0].device();
  for (size_t i = 0; i < items.size(); ++i) {
    const Tensor& t = items[i];
    if (!t.is_tensor() || t.dtype() != dtype || t.device() != device)
      return error(StatusCode::kInvalidArgument, "sequence item ", static_cast<uint64_t>(i), " is ",
                   t.is_tensor() ? std::string(dtype_name(t.dtype())) : std::string(value_kind_name(t.kind())), " on ",
                   device_name(t.device()), "; the sequence holds ", dtype_name(dtype), " tensors on ",
                   device_name(device));
  }
  Tensor s;
  s.dtype_ = dtype;
  s.device_ = device;
  s.kind_ = ValueKind::kSequence;
  s.items_ = std::make_shared<const std::vector<Tensor>>(std::move(items));
  return s;
}

Result<Tensor> Tensor::optional(ValueKind kind, DataType dtype, Tensor content) {
  if (!is_optional_kind(kind))
    return error(StatusCode::kInvalidArgument, "Tensor::optional takes an optional kind, not ", value_kind_name(kind));
  std::vector<Tensor> items;
  if (content.defined()) {
    if (content.kind() != optional_content(kind) || content.dtype() != dtype)
      return error(StatusCode::kInvalidArgument, "an ", value_kind_name(kind), " of ", dtype_name(dtype),
                   " cannot hold a ", value_kind_name(content.kind()), " of ", dtype_name(content.dtype()));
    items.push_back(std::move(content));
  }
  Tensor o;
  o.dtype_ = dtype;
  o.device_ = items.empty() ? DeviceType::kCPU : items[0].device();
  o.kind_ = kind;
  o.items_ = std::make_shared<const std::vector<Tensor>>(std::move(items));
  return o;
}

Result<Tensor> Tensor::optional(ValueKind kind, DataType dtype) { return optional(kind, dtype, Tensor()); }

const std::vector<Tensor>& Tensor::items() const {
  static const std::vector<Tensor> kNone;
  return items_ ? *items_ : kNone;
}

TensorDesc desc_of_value(const Tensor& t) {
  TensorDesc d;
  d.dtype = t.dtype();
  d.kind = t.kind();
  if (t.is_tensor()) {
    d.shape = shape_from_values(t.dims());
    return d;
  }
  // What the container holds, flattened to its tensors (an optional's sequence: the sequence's).
  const std::vector<Tensor>* tensors = &t.items();
  if (t.kind() == ValueKind::kOptionalSequence && !tensors->empty()) tensors = &(*tensors)[0].items();
  for (size_t i = 0; i < tensors->size(); ++i) {
    const std::vector<int64_t>& dims = (*tensors)[i].dims();
    if (i == 0) d.shape = shape_from_values(dims);
    else if (shape_values(*d.shape) != dims) {
      d.shape.reset();
      break;
    }
  }
  return d;
}

Result<Tensor> Tensor::try_clone() const {
  if (!is_tensor()) {
    std::vector<Tensor> items;
    for (const Tensor& t : this->items()) {
      GRAFT_ASSIGN_OR_RETURN(Tensor c, t.try_clone());
      items.push_back(std::move(c));
    }
    Tensor c = *this;
    c.items_ = std::make_shared<const std::vector<Tensor>>(std::move(items));
    return c;
  }
  GRAFT_ASSIGN_OR_RETURN(Tensor t, allocate(dtype_, dims_, device_));
  GRAFT_RETURN_IF_ERROR(t.copy_data_from(*this));
  return t;
}

Tensor Tensor::clone() const {
  if (!is_tensor()) {
    std::vector<Tensor> items;
    for (const Tensor& t : this->items()) items.push_back(t.clone());
    Tensor c = *this;
    c.items_ = std::make_shared<const std::vector<Tensor>>(std::move(items));
    return c;
  }
  Tensor t = empty(dtype_, dims_, device_);
  if (dtype_ == DataType::kString) std::copy_n(data_as<std::string>(), numel(), t.data_as<std::string>());
  else if (nbytes()) std::memcpy(t.data(), data_, nbytes());
  return t;
}

Status Tensor::copy_data_from(const Tensor& src) const {
  if (!is_tensor() || !src.is_tensor() || src.dtype_ != dtype_ || src.numel() != numel() ||
      device_ != DeviceType::kCPU || src.device_ != DeviceType::kCPU)
    return error(StatusCode::kInvalidArgument, "cannot copy a ", dtype_name(src.dtype_), " ",
                 device_name(src.device_), " tensor of ", src.numel(), " elements into a ", dtype_name(dtype_), " ",
                 device_name(device_), " tensor of ", numel(), " elements");
  if (data_ == src.data_) return Status::ok();
  if (dtype_ == DataType::kString) std::copy_n(src.data_as<std::string>(), numel(), data_as<std::string>());
  else if (nbytes()) std::memcpy(data_, src.data_, nbytes());
  return Status::ok();
}

bool Tensor::same_contents(const Tensor& other) const {
  if (kind_ != other.kind_ || dtype_ != other.dtype_ || dims_ != other.dims_ || device_ != DeviceType::kCPU ||
      other.device_ != DeviceType::kCPU)
    return false;
  if (!is_tensor()) {
    const std::vector<Tensor>&a = items(), &b = other.items();
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!a[i].same_contents(b[i])) return false;
    return true;
  }
  if (dtype_ == DataType::kString)
    return std::equal(data_as<std::string>(), data_as<std::string>() + numel(), other.data_as<std::string>());
  return nbytes() == 0 || std::memcmp(data_, other.data_, nbytes()) == 0;
}

Result<Tensor> Tensor::to_host() const {
  if (device_ == DeviceType::kCPU) return *this;
  if (!cuda_alloc::copy_to_host)
    return error(StatusCode::kUnsupported, "a device tensor cannot be copied to the host: graft was built without CUDA");
  GRAFT_ASSIGN_OR_RETURN(Tensor h, allocate(dtype_, dims_));
  if (nbytes() && !cuda_alloc::copy_to_host(h.data(), data_, nbytes()))
    return error(StatusCode::kRuntimeError, "copying a ", dtype_name(dtype_), " tensor of ",
                 static_cast<unsigned long long>(nbytes()), " bytes from the GPU failed");
  return h;
}

Result<Tensor> Tensor::to_device() const {
  if (device_ == DeviceType::kCUDA) return *this;
  if (!is_tensor())
    return error(StatusCode::kUnsupported, "a ", value_kind_name(kind_), " cannot be copied to the GPU: ",
                 "sequence and optional values run on the CPU engine only");
  if (!cuda_alloc::copy_to_device || !cuda_alloc::allocate)
    return error(StatusCode::kUnsupported, "a tensor cannot be copied to the GPU: the CUDA backend is not initialised");
  auto allocated = allocate(dtype_, dims_, DeviceType::kCUDA);
  if (!allocated)
    return error(StatusCode::kOutOfMemory, "out of GPU memory copying a ", dtype_name(dtype_), " tensor of ",
                 static_cast<unsigned long long>(nbytes()), " bytes to the GPU");
  Tensor d = std::move(allocated).value();
  if (nbytes() && !cuda_alloc::copy_to_device(d.data(), data_, nbytes()))
    return error(StatusCode::kRuntimeError, "copying a ", dtype_name(dtype_), " tensor of ",
                 static_cast<unsigned long long>(nbytes()), " bytes to the GPU failed");
  return d;
}

Tensor Tensor::reshaped(std::vector<int64_t> dims) const {
  Tensor t = *this;
  t.dims_ = std::move(dims);
  return t;
}

namespace {

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GRAFT_HAVE_F16C_PATH 1
// VCVTPS2PH rounds to nearest even, overflows to infinity and keeps NaN a NaN, as float_to_half
// does; the unit tests compare the two on every kind of value.
__attribute__((target("avx,f16c"))) void floats_to_halves_f16c(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
  for (; i < n; ++i) dst[i] = float_to_half(src[i]);
}

__attribute__((target("avx,f16c"))) void halves_to_floats_f16c(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  for (; i < n; ++i) dst[i] = half_to_float(src[i]);
}

// CPUID leaf 1 (ECX bit 29 F16C, bit 28 AVX, bit 27 OSXSAVE) and XGETBV (the OS saves the YMM
// state): portable across GCC and clang, whose __builtin_cpu_supports does not know "f16c" before
// clang 16.
bool cpu_has_f16c() {
  static const bool yes = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
    const bool f16c = ecx & (1u << 29), avx = ecx & (1u << 28), osxsave = ecx & (1u << 27);
    if (!(f16c && avx && osxsave)) return false;
    unsigned xcr0_lo = 0, xcr0_hi = 0;
    __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    return (xcr0_lo & 0x6u) == 0x6u;  // XMM and YMM state enabled
  }();
  return yes;
}
#endif

void floats_to_halves(const float* src, uint16_t* dst, int64_t n) {
#ifdef GRAFT_HAVE_F16C_PATH
  if (cpu_has_f16c()) return floats_to_halves_f16c(src, dst, n);
#endif
  for (int64_t i = 0; i < n; ++i) dst[i] = float_to_half(src[i]);
}

void halves_to_floats(const uint16_t* src, float* dst, int64_t n) {
#ifdef GRAFT_HAVE_F16C_PATH
  if (cpu_has_f16c()) return halves_to_floats_f16c(src, dst, n);
#endif
  for (int64_t i = 0; i < n; ++i) dst[i] = half_to_float(src[i]);
}

}  // namespace

Result<Tensor> Tensor::cast(DataType to) const {
  if (device_ != DeviceType::kCPU) return error(StatusCode::kInternal, "Tensor::cast on a device tensor");
  if (!is_tensor()) return error(StatusCode::kInternal, "Tensor::cast on a ", value_kind_name(kind_));
  GRAFT_ASSIGN_OR_RETURN(Tensor t, allocate(to, dims_));
  int64_t n = numel();
  if (to == dtype_) {
    GRAFT_RETURN_IF_ERROR(t.copy_data_from(*this));
  } else if (to == DataType::kString || dtype_ == DataType::kString) {
    return error(StatusCode::kInternal, "Tensor::cast between ", dtype_name(dtype_), " and ", dtype_name(to),
                 ": strings convert through the Cast op");
  } else if (to == DataType::kInt64 && dtype_ == DataType::kInt32) {
    for (int64_t i = 0; i < n; ++i) t.data_as<int64_t>()[i] = data_as<int32_t>()[i];
  } else if (to == DataType::kFloat16 && dtype_ == DataType::kFloat32) {
    // The FP16 pass converts every weight (vit_b_16: 86M): the CPU's conversion instructions where
    // it has them (~10x the scalar loop), else a direct loop instead of the per-element dtype switch.
    floats_to_halves(data_as<float>(), t.data_as<uint16_t>(), n);
  } else if (to == DataType::kFloat32 && dtype_ == DataType::kFloat16) {
    halves_to_floats(data_as<uint16_t>(), t.data_as<float>(), n);
  } else {
    for (int64_t i = 0; i < n; ++i) t.set(i, get(i));
  }
  return t;
}

void Tensor::poison() {
  if (!data_ || device_ != DeviceType::kCPU) return;
  if (dtype_ == DataType::kString) {
    std::fill_n(data_as<std::string>(), numel(), std::string(kPoisonString));
    return;
  }
  // 0xFF bytes are NaN for every float type and -1 / 255 / true for the integer types.
  std::memset(data_, 0xFF, nbytes());
}

}  // namespace graft
