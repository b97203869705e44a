#include "ops/loss_attrs.h"

#include "ops/attr_util.h"

namespace graft {

Result<LossAttrs> loss_attrs(const AttributeMap& attrs) {
  LossAttrs a;
  auto r = attrs.get_string("reduction", "mean");
  if (!r) return Status(r.status()).with_attribute("reduction");
  if (r.value() == "none") a.reduction = LossReduction::kNone;
  else if (r.value() == "sum") a.reduction = LossReduction::kSum;
  else if (r.value() == "mean") a.reduction = LossReduction::kMean;
  else return attr_error("reduction", "must be none, sum or mean, got '", r.value(), "'");
  if (attrs.has("ignore_index")) {
    auto ii = attrs.get_int("ignore_index", 0);
    if (!ii) return Status(ii.status()).with_attribute("ignore_index");
    a.ignore_index = ii.value();
  }
  return a;
}

Result<LossGeometry> loss_geometry(const std::string& op, const std::vector<int64_t>& x, DataType x_dtype,
                                   DataType target_dtype, const std::vector<int64_t>& target,
                                   const std::vector<int64_t>* weight_dims, DataType weight_dtype) {
  if (x.size() < 2)
    return error(StatusCode::kInvalidModel, op, ": input must have rank >= 2 (N, C, ...), got ", ints_to_string(x));
  if (target_dtype != DataType::kInt32 && target_dtype != DataType::kInt64)
    return error(StatusCode::kUnsupported, op, ": target has dtype ", dtype_name(target_dtype),
                 "; expected int32 or int64");
  std::vector<int64_t> want{x[0]};
  for (size_t d = 2; d < x.size(); ++d) want.push_back(x[d]);
  if (target != want)
    return error(StatusCode::kInvalidModel, op, ": target ", ints_to_string(target), " does not match input ",
                 ints_to_string(x), " (expected ", ints_to_string(want), ")");
  LossGeometry g;
  g.n = x[0];
  g.c = x[1];
  for (size_t d = 2; d < x.size(); ++d) g.inner *= x[d];
  if (weight_dims && (weight_dtype != x_dtype || weight_dims->size() != 1 || (*weight_dims)[0] != g.c))
    return error(StatusCode::kInvalidModel, op, ": weight ", dtype_name(weight_dtype), " ",
                 ints_to_string(*weight_dims), " must be ", dtype_name(x_dtype), " [", g.c, "]");
  return g;
}

}  // namespace graft
