// See random_attrs.h.
#include "ops/random_attrs.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops/attr_util.h"

namespace graft {
namespace {

bool is_one_of(DataType t, std::initializer_list<DataType> allowed) {
  return std::find(allowed.begin(), allowed.end(), t) != allowed.end();
}

std::string names_of(std::initializer_list<DataType> ts) {
  std::string s;
  for (DataType t : ts) s += (s.empty() ? "" : ", ") + std::string(dtype_name(t));
  return s;
}

Result<double> finite_float(const AttributeMap& attrs, const char* name, float def) {
  auto v = attrs.get_float(name, def);
  if (!v) return Status(v.status()).with_attribute(name);
  if (!std::isfinite(v.value())) return attr_error(name, "must be finite, got ", static_cast<double>(v.value()));
  return static_cast<double>(v.value());
}

}  // namespace

Result<std::optional<uint64_t>> seed_attr(const AttributeMap& attrs) {
  const AttrValue* v = attrs.find("seed");
  if (!v) return std::optional<uint64_t>();
  if (const int64_t* i = std::get_if<int64_t>(v)) return std::optional<uint64_t>(static_cast<uint64_t>(*i));
  const float* f = std::get_if<float>(v);
  if (!f) return attr_error("seed", "must be a float or an int, got a ", attr_type_name(attr_type_of(*v)));
  if (!std::isfinite(*f)) return attr_error("seed", "must be finite, got ", static_cast<double>(*f));
  if (*f == std::trunc(*f) && std::fabs(*f) < 9.2e18)
    return std::optional<uint64_t>(static_cast<uint64_t>(static_cast<int64_t>(*f)));
  uint32_t bits;
  std::memcpy(&bits, f, sizeof bits);
  return std::optional<uint64_t>(bits);
}

Result<RandomAttrs> random_attrs(const std::string& op_type, const AttributeMap& attrs, DataType input_dtype) {
  RandomAttrs a;
  GRAFT_ASSIGN_OR_RETURN(a.seed, seed_attr(attrs));
  const bool like = op_type == "RandomUniformLike" || op_type == "RandomNormalLike";
  const bool source = op_type == "RandomUniform" || op_type == "RandomNormal";
  const bool uniform = op_type == "RandomUniform" || op_type == "RandomUniformLike";
  const bool normal = op_type == "RandomNormal" || op_type == "RandomNormalLike";

  // dtype: an ONNX type code; default float for the source ops, int32 for Multinomial, the input's otherwise.
  const std::initializer_list<DataType> kFloat3 = {DataType::kFloat16, DataType::kFloat32, DataType::kFloat64};
  const std::initializer_list<DataType> kBernoulliOut = {
      DataType::kFloat16, DataType::kFloat32, DataType::kFloat64, DataType::kBFloat16, DataType::kUInt8,
      DataType::kUInt16,  DataType::kUInt32,  DataType::kUInt64,  DataType::kInt8,     DataType::kInt16,
      DataType::kInt32,   DataType::kInt64,   DataType::kBool};
  const std::initializer_list<DataType> kIndex = {DataType::kInt32, DataType::kInt64};
  const std::initializer_list<DataType> allowed =
      op_type == "Bernoulli" ? kBernoulliOut : op_type == "Multinomial" ? kIndex : kFloat3;
  if (attrs.has("dtype")) {
    auto code = attrs.get_int("dtype", 0);
    if (!code) return Status(code.status()).with_attribute("dtype");
    DataType t;
    if (code.value() < INT32_MIN || code.value() > INT32_MAX || !dtype_from_onnx_numeric(static_cast<int32_t>(code.value()), &t))
      return Status(error(StatusCode::kUnsupported, "ONNX data type ", code.value(), " is not one graft supports"))
          .with_attribute("dtype");
    a.dtype = t;
  } else if (source) {
    a.dtype = DataType::kFloat32;
  } else if (op_type == "Multinomial") {
    a.dtype = DataType::kInt32;
  } else {
    a.dtype = input_dtype;
  }
  if (a.dtype != DataType::kUndefined && !is_one_of(a.dtype, allowed)) {
    if (like && !attrs.has("dtype"))
      return attr_error("dtype", "is absent, so the output would take input 0's dtype ", dtype_name(a.dtype), ", but ",
                        op_type, " outputs only ", names_of(allowed), "; give the dtype attribute");
    return attr_error("dtype", op_type, " outputs ", names_of(allowed), ", not ", dtype_name(a.dtype));
  }

  if (uniform) {
    GRAFT_ASSIGN_OR_RETURN(a.low, finite_float(attrs, "low", 0.0f));
    GRAFT_ASSIGN_OR_RETURN(a.high, finite_float(attrs, "high", 1.0f));
    if (a.high < a.low) return attr_error("high", "must be >= low (", a.low, "), got ", a.high);
  }
  if (normal) {
    GRAFT_ASSIGN_OR_RETURN(a.mean, finite_float(attrs, "mean", 0.0f));
    GRAFT_ASSIGN_OR_RETURN(a.scale, finite_float(attrs, "scale", 1.0f));
    if (a.scale < 0) return attr_error("scale", "is a standard deviation and must be >= 0, got ", a.scale);
  }
  if (source) {
    if (!attrs.has("shape")) return attr_error("shape", "is required");
    auto shape = attrs.get_ints("shape", {});
    if (!shape) return Status(shape.status()).with_attribute("shape");
    for (int64_t d : shape.value())
      if (d < 0) return attr_error("shape", "dimensions must be >= 0, got ", ints_to_string(shape.value()));
    a.shape = shape.value();
  }
  if (op_type == "Multinomial") {
    auto n = attrs.get_int("sample_size", 1);
    if (!n) return Status(n.status()).with_attribute("sample_size");
    if (n.value() < 1) return attr_error("sample_size", "must be >= 1, got ", n.value());
    a.sample_size = n.value();
  }
  return a;
}

bool node_is_random(const Node& n) {
  if (n.custom_op || !n.domain.empty()) return false;
  static const char* const kOps[] = {"RandomUniform", "RandomNormal", "RandomUniformLike",
                                     "RandomNormalLike", "Bernoulli", "Multinomial"};
  for (const char* op : kOps)
    if (n.op_type == op) return true;
  if (n.op_type != "Dropout" || n.opset < 12 || n.inputs.size() < 3 || !n.inputs[2] || !n.inputs[2]->constant)
    return false;
  const Tensor& t = *n.inputs[2]->constant;
  if (t.numel() != 1 || t.get(0) == 0) return false;
  const Value* r = n.inputs.size() > 1 ? n.inputs[1] : nullptr;
  return !(r && r->constant && r->constant->numel() == 1 && r->constant->get(0) == 0);
}

Status check_dropout_ratio(double ratio) {
  if (ratio >= 0.0 && ratio < 1.0) return Status::ok();
  return error(StatusCode::kInvalidModel, "input 1 (ratio) must be in [0, 1) in training mode, got ", ratio);
}

}  // namespace graft
