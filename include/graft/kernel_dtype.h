// graft/kernel_dtype.h — helpers for writing the CPU kernels of custom ops: float storage types
// (load/store one element, computing in `C`) and a dispatcher over float32/float16/float64.
//
//   return kernel::visit_float_dtype("MyOp", x.dtype, [&](auto tr) {
//     using T = decltype(tr);
//     for (int64_t i = 0; i < n; ++i) T::store(y.data, i, f(T::load(x.data, i)));
//     return Status::ok();
//   });
#pragma once

#include <cstdint>
#include <utility>

#include "graft/dtype.h"
#include "graft/status.h"

namespace graft::kernel {

struct F64 {
  using C = double;
  static C load(const void* p, int64_t i) { return static_cast<const double*>(p)[i]; }
  static void store(void* p, int64_t i, C v) { static_cast<double*>(p)[i] = v; }
};
struct F32 {
  using C = float;
  static C load(const void* p, int64_t i) { return static_cast<const float*>(p)[i]; }
  static void store(void* p, int64_t i, C v) { static_cast<float*>(p)[i] = v; }
};
// float16 is computed in float and rounded once on store.
struct F16 {
  using C = float;
  static C load(const void* p, int64_t i) { return half_to_float(static_cast<const uint16_t*>(p)[i]); }
  static void store(void* p, int64_t i, C v) { static_cast<uint16_t*>(p)[i] = float_to_half(v); }
};

// Calls fn(F64{}), fn(F32{}) or fn(F16{}) for the dtype; kUnsupported naming the op otherwise.
template <typename Fn>
Status visit_float_dtype(const char* op, DataType t, Fn&& fn) {
  switch (t) {
    case DataType::kFloat64: return fn(F64{});
    case DataType::kFloat32: return fn(F32{});
    case DataType::kFloat16: return fn(F16{});
    default: return error(StatusCode::kUnsupported, op, ": no kernel for dtype ", dtype_name(t));
  }
}

}  // namespace graft::kernel
