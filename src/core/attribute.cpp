#include "graft/attribute.h"

#include <cstdio>

namespace graft {

const char* attr_type_name(AttrType t) {
  switch (t) {
    case AttrType::kFloat: return "float";
    case AttrType::kInt: return "int";
    case AttrType::kString: return "string";
    case AttrType::kTensor: return "tensor";
    case AttrType::kFloats: return "floats";
    case AttrType::kInts: return "ints";
    case AttrType::kStrings: return "strings";
  }
  return "?";
}

namespace {
std::string fmt_float(float f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(f));
  return buf;
}
template <typename T, typename F>
std::string join(const std::vector<T>& v, F f) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + f(v[i]);
  return s + "]";
}
}  // namespace

std::string attr_value_to_string(const AttrValue& v) {
  switch (attr_type_of(v)) {
    case AttrType::kFloat: return fmt_float(std::get<float>(v));
    case AttrType::kInt: return std::to_string(std::get<int64_t>(v));
    case AttrType::kString: return "\"" + std::get<std::string>(v) + "\"";
    case AttrType::kTensor: {
      const Tensor& t = std::get<Tensor>(v);
      std::string s = "tensor ";
      s += dtype_name(t.dtype());
      s += shape_to_string(shape_from_values(t.dims()));
      return s;
    }
    case AttrType::kFloats: return join(std::get<std::vector<float>>(v), fmt_float);
    case AttrType::kInts:
      return join(std::get<std::vector<int64_t>>(v), [](int64_t x) { return std::to_string(x); });
    case AttrType::kStrings:
      return join(std::get<std::vector<std::string>>(v), [](const std::string& x) { return "\"" + x + "\""; });
  }
  return "?";
}

const AttrValue* AttributeMap::find(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? nullptr : &it->second;
}

namespace {
template <typename T>
Result<T> get_typed(const AttributeMap& m, const std::string& name, AttrType want, std::optional<T> def) {
  const AttrValue* v = m.find(name);
  if (!v) {
    if (def) return *def;
    Status st = error(StatusCode::kInvalidModel, "required attribute is missing");
    st.with_attribute(name);
    return st;
  }
  if (attr_type_of(*v) != want) {
    Status st = error(StatusCode::kInvalidModel, "expected type ", attr_type_name(want), ", got ",
                      attr_type_name(attr_type_of(*v)));
    st.with_attribute(name);
    return st;
  }
  return std::get<T>(*v);
}
}  // namespace

Result<int64_t> AttributeMap::get_int(const std::string& n, int64_t def) const {
  return get_typed<int64_t>(*this, n, AttrType::kInt, def);
}
Result<float> AttributeMap::get_float(const std::string& n, float def) const {
  return get_typed<float>(*this, n, AttrType::kFloat, def);
}
Result<std::string> AttributeMap::get_string(const std::string& n, const std::string& def) const {
  return get_typed<std::string>(*this, n, AttrType::kString, def);
}
Result<std::vector<int64_t>> AttributeMap::get_ints(const std::string& n, std::vector<int64_t> def) const {
  return get_typed<std::vector<int64_t>>(*this, n, AttrType::kInts, std::move(def));
}
Result<std::vector<float>> AttributeMap::get_floats(const std::string& n, std::vector<float> def) const {
  return get_typed<std::vector<float>>(*this, n, AttrType::kFloats, std::move(def));
}
Result<std::vector<std::string>> AttributeMap::get_strings(const std::string& n,
                                                           std::vector<std::string> def) const {
  return get_typed<std::vector<std::string>>(*this, n, AttrType::kStrings, std::move(def));
}
Result<Tensor> AttributeMap::get_tensor(const std::string& n) const {
  return get_typed<Tensor>(*this, n, AttrType::kTensor, std::nullopt);
}
Result<int64_t> AttributeMap::require_int(const std::string& n) const {
  return get_typed<int64_t>(*this, n, AttrType::kInt, std::nullopt);
}
Result<float> AttributeMap::require_float(const std::string& n) const {
  return get_typed<float>(*this, n, AttrType::kFloat, std::nullopt);
}

}  // namespace graft
