// Overflow-checked integer arithmetic for shapes, element counts and byte sizes.
//
// Every product of dimensions that comes from a file (ONNX model, plan, .npy/.pb tensor) or from a
// shape computed by an op goes through these: a wrapped product would let a tiny file claim a
// "small" tensor whose real extent is huge, and kernels then index far out of bounds. One helper
// set, used everywhere, so the rule cannot drift between the importer, the plan loader, Tensor and
// the shape functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graft/dtype.h"
#include "graft/status.h"

namespace graft {

// The largest rank graft accepts anywhere (inputs, initializers, shapes computed by ops, plans).
// ONNX Runtime and TensorRT cap ranks between 8 and 64; a declared rank beyond this is a malformed
// (or hostile) file, and bounding it keeps a shape tensor of declared length 1e12 from making 1e12
// symbolic dimensions.
inline constexpr int64_t kMaxRank = 64;

// a * b, a + b, a - b; false (and *out untouched) on int64 overflow.
inline bool checked_mul(int64_t a, int64_t b, int64_t* out) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return false;
  *out = r;
  return true;
}
inline bool checked_add(int64_t a, int64_t b, int64_t* out) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return false;
  *out = r;
  return true;
}
inline bool checked_sub(int64_t a, int64_t b, int64_t* out) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return false;
  *out = r;
  return true;
}

// double -> int64 for values that come from a file or from arithmetic on one (scales, roi, float
// indices): a C++ cast of NaN or of a value outside int64's range is undefined behaviour.
// checked_int64 says nullopt for those (after truncation toward zero, as the cast does);
// saturating_int64 gives 0 for NaN and the nearest end of the range beyond it.
inline std::optional<int64_t> checked_int64(double v) {
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) return std::nullopt;
  return static_cast<int64_t>(v);
}
inline int64_t saturating_int64(double v) {
  if (v != v) return 0;
  if (v >= 9223372036854775808.0) return INT64_MAX;
  if (v <= -9223372036854775808.0) return INT64_MIN;
  return static_cast<int64_t>(v);
}

// Product of dims (1 for rank 0); nullopt when a dim is negative or the product overflows int64.
inline std::optional<int64_t> checked_numel(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0 || !checked_mul(n, d, &n)) return std::nullopt;
  }
  return n;
}

// numel(dims) * element size; nullopt on a negative dim or overflow of int64 (which also keeps the
// result representable as size_t on every platform graft builds for).
inline std::optional<int64_t> checked_nbytes(const std::vector<int64_t>& dims, size_t elem_size) {
  auto n = checked_numel(dims);
  int64_t bytes;
  if (!n || !checked_mul(*n, static_cast<int64_t>(elem_size), &bytes)) return std::nullopt;
  return bytes;
}

// Validates a concrete shape: rank at most kMaxRank, no negative dim, numel * element size fits in
// int64. `what` names the tensor for the error ("initializer 'W'", "output 0 of node 'n'").
Status check_concrete_shape(const std::vector<int64_t>& dims, DataType dtype, const std::string& what);

}  // namespace graft
