// graft/attribute.h — typed node attributes (the ONNX attribute kinds graft supports).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "graft/status.h"
#include "graft/tensor.h"

namespace graft {

enum class AttrType : int { kFloat, kInt, kString, kTensor, kFloats, kInts, kStrings };
const char* attr_type_name(AttrType t);  // "float", "int", "string", "tensor", "floats", ...

// Index order matches AttrType.
using AttrValue = std::variant<float, int64_t, std::string, Tensor, std::vector<float>,
                               std::vector<int64_t>, std::vector<std::string>>;

inline AttrType attr_type_of(const AttrValue& v) { return static_cast<AttrType>(v.index()); }
std::string attr_value_to_string(const AttrValue& v);  // "0.5", "[1,2]", "\"abc\"", "tensor float32[3]"

// Ordered map so serialization and printing are deterministic.
class AttributeMap {
 public:
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  const AttrValue* find(const std::string& name) const;
  void set(const std::string& name, AttrValue v) { values_[name] = std::move(v); }
  void erase(const std::string& name) { values_.erase(name); }
  const std::map<std::string, AttrValue>& all() const { return values_; }
  size_t size() const { return values_.size(); }

  // Typed getters: error (naming the attribute) when present with another type; `def` when absent.
  Result<int64_t> get_int(const std::string& name, int64_t def) const;
  Result<float> get_float(const std::string& name, float def) const;
  Result<std::string> get_string(const std::string& name, const std::string& def) const;
  Result<std::vector<int64_t>> get_ints(const std::string& name, std::vector<int64_t> def) const;
  Result<std::vector<float>> get_floats(const std::string& name, std::vector<float> def) const;
  Result<std::vector<std::string>> get_strings(const std::string& name,
                                               std::vector<std::string> def) const;
  Result<Tensor> get_tensor(const std::string& name) const;  // error when absent
  // Required forms: error when absent.
  Result<int64_t> require_int(const std::string& name) const;
  Result<float> require_float(const std::string& name) const;

 private:
  std::map<std::string, AttrValue> values_;
};

}  // namespace graft
