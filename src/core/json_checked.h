// Checked reads of JSON values from untrusted files (plans, timing caches, serialized attributes).
//
// nlohmann-json's get<T>() converts whatever number it holds with static_cast: a float out of the
// target's range (1e20 read as uint32) is undefined behaviour, and an integer out of range is
// silently narrowed. These read only a value of the right kind whose value fits, and say false
// otherwise, so the caller reports the file as malformed.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

namespace graft::json_checked {

// An integer JSON value (not a float, not a bool) within Int's range.
template <typename Int>
bool get_int(const nlohmann::json& j, Int* out) {
  static_assert(std::is_integral_v<Int> && !std::is_same_v<Int, bool>);
  if (j.is_number_unsigned()) {
    const uint64_t v = j.get<uint64_t>();
    if (v > static_cast<uint64_t>(std::numeric_limits<Int>::max())) return false;
    *out = static_cast<Int>(v);
    return true;
  }
  if (!j.is_number_integer()) return false;
  const int64_t v = j.get<int64_t>();
  if constexpr (std::is_signed_v<Int>) {
    if (v < static_cast<int64_t>(std::numeric_limits<Int>::min()) ||
        v > static_cast<int64_t>(std::numeric_limits<Int>::max()))
      return false;
  } else {
    if (v < 0 || static_cast<uint64_t>(v) > static_cast<uint64_t>(std::numeric_limits<Int>::max())) return false;
  }
  *out = static_cast<Int>(v);
  return true;
}

// Any JSON number whose value a float can hold (finite and within range, or an infinity).
inline bool get_float(const nlohmann::json& j, float* out) {
  if (!j.is_number()) return false;
  double d;
  if (j.is_number_float()) d = j.get<double>();
  else if (j.is_number_unsigned()) d = static_cast<double>(j.get<uint64_t>());
  else d = static_cast<double>(j.get<int64_t>());
  if (std::isfinite(d) && std::fabs(d) > static_cast<double>(std::numeric_limits<float>::max())) return false;
  *out = static_cast<float>(d);
  return true;
}

// A JSON array of integers, each within Int's range.
template <typename Int>
bool get_int_vector(const nlohmann::json& j, std::vector<Int>* out) {
  if (!j.is_array()) return false;
  std::vector<Int> v;
  v.reserve(j.size());
  for (const auto& e : j) {
    Int x;
    if (!get_int(e, &x)) return false;
    v.push_back(x);
  }
  *out = std::move(v);
  return true;
}

}  // namespace graft::json_checked
