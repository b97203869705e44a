#include "runtime/input_checks.h"

#include <optional>
#include <string>

#include "core/checked_math.h"
#include "runtime/engine_description.h"

namespace graft {

namespace {

std::string dims_to_string(const std::vector<int64_t>& d) { return shape_to_string(shape_from_values(d)); }

}  // namespace

Status check_profile_index(int index, size_t count) {
  if (index >= 0 && static_cast<size_t>(index) < count) return Status::ok();
  const std::string has = count == 1 ? std::string("1 profile (index 0)")
                                     : std::to_string(count) + " profiles (indices 0 to " + std::to_string(count - 1) + ")";
  return error(StatusCode::kInvalidArgument, "optimization profile ", index, " does not exist: this engine has ", has);
}

Status check_input_in_profile(const EngineState& st, int index, const Value& v, const std::vector<int64_t>& dims) {
  GRAFT_RETURN_IF_ERROR(check_profile_index(index, st.profiles.size()));
  const Shape& s = *v.desc.shape;
  // The dimensions of `dims` outside range `r` (only those the graph leaves dynamic: a fixed one was
  // checked against the model's shape already).
  auto outside = [&](const ProfileRange& r) -> std::optional<size_t> {
    for (size_t i = 0; i < s.size() && i < dims.size(); ++i)
      if (!s[i].is_const() && i < r.min.size() && i < r.max.size() && (dims[i] < r.min[i] || dims[i] > r.max[i]))
        return i;
    return std::nullopt;
  };
  const OptimizationProfile& selected = st.profiles[static_cast<size_t>(index)];
  auto it = selected.find(v.name);
  if (it == selected.end()) return Status::ok();
  const ProfileRange& r = it->second;
  const std::optional<size_t> bad = outside(r);
  if (!bad) return Status::ok();
  const bool several = st.profiles.size() > 1;
  std::string advice = "; rebuild with a profile whose min and max cover it";
  for (size_t k = 0; several && k < st.profiles.size(); ++k) {
    auto other = st.profiles[k].find(v.name);
    if (k != static_cast<size_t>(index) && other != st.profiles[k].end() && !outside(other->second)) {
      advice = "; profile " + std::to_string(k) + " covers it: select profile " + std::to_string(k);
      break;
    }
  }
  const size_t i = *bad;
  // One profile keeps the wording engines had before there were several.
  const std::string which = several ? "optimization profile " + std::to_string(index) : "the optimization profile";
  const std::string gives = several ? "profile " + std::to_string(index) + " gives '" + v.name + "' " : "profile ";
  return error(StatusCode::kInvalidArgument, "input '", v.name, "' has shape ", dims_to_string(dims), ": dimension ",
               static_cast<uint64_t>(i), " is ", dims[i], ", outside ", which, " [min ", r.min[i], ", max ", r.max[i],
               "] (", gives, range_text(r), ")", advice);
}

Status check_input(const Value& v, const Tensor& t, const EngineState& st, int profile, SymbolBindings& bindings) {
  const TensorDesc& d = v.desc;
  if (t.kind() != d.kind)
    return error(StatusCode::kInvalidArgument, "input '", v.name, "' expects a ", value_kind_name(d.kind), " (",
                 d.to_string(), ") but was given a ", value_kind_name(t.kind()));
  if (!d.is_tensor()) {
    // A container's tensors may have any shape (profiles cover tensors); dtype and rank as declared.
    if (d.dtype != DataType::kUndefined && t.dtype() != d.dtype)
      return error(StatusCode::kInvalidArgument, "input '", v.name, "' expects a ", value_kind_name(d.kind), " of ",
                   dtype_name(d.dtype), " but was given one of ", dtype_name(t.dtype()));
    // Inference took the declared shape for every tensor inside: each must have its rank and fixed dims.
    const std::vector<Tensor>* held = &t.items();
    if (t.kind() == ValueKind::kOptionalSequence && !held->empty()) held = &(*held)[0].items();
    for (size_t k = 0; d.shape && k < held->size(); ++k) {
      const std::vector<int64_t>& dims = (*held)[k].dims();
      bool ok = dims.size() == d.shape->size();
      for (size_t i = 0; ok && i < dims.size(); ++i) ok = !(*d.shape)[i].is_const() || (*d.shape)[i].value() == dims[i];
      if (!ok)
        return error(StatusCode::kInvalidArgument, "input '", v.name, "' expects ", d.to_string(), " but tensor ",
                     static_cast<uint64_t>(k), " it holds has shape ", dims_to_string(dims));
    }
    return Status::ok();
  }
  if (t.dtype() != d.dtype)
    return error(StatusCode::kInvalidArgument, "input '", v.name, "' expects dtype ", dtype_name(d.dtype),
                 " but was given ", dtype_name(t.dtype()));
  const Shape& s = *d.shape;
  // A caller's tensor (Tensor::wrap) may claim any dims: one whose element or byte count overflows
  // int64 would make every size computed from it wrap.
  if (!checked_nbytes(t.dims(), dtype_size(t.dtype())))
    return error(StatusCode::kInvalidArgument, "input '", v.name, "' has shape ", dims_to_string(t.dims()),
                 ", with a negative dimension or more elements or bytes than fit in a 64-bit integer");
  if (static_cast<size_t>(t.rank()) != s.size())
    return error(StatusCode::kInvalidArgument, "input '", v.name, "' expects rank ",
                 static_cast<uint64_t>(s.size()), " (shape ", shape_to_string(s), ") but was given shape ",
                 dims_to_string(t.dims()));
  for (size_t i = 0; i < s.size(); ++i) {
    int64_t given = t.dims()[i];
    if (s[i].is_const()) {
      if (given != s[i].value())
        return error(StatusCode::kInvalidArgument, "input '", v.name, "' dimension ", static_cast<uint64_t>(i),
                     " must be ", s[i].value(), " (shape ", shape_to_string(s), ") but was given ", given,
                     " (shape ", dims_to_string(t.dims()), ")");
      continue;
    }
    if (s[i].is_symbol()) {
      auto [it, inserted] = bindings.emplace(s[i].symbol_name(), given);
      if (!inserted && it->second != given)
        return error(StatusCode::kInvalidArgument, "input '", v.name, "' dimension ", static_cast<uint64_t>(i),
                     " ('", s[i].symbol_name(), "') is ", given, " but another input set '",
                     s[i].symbol_name(), "' to ", it->second);
    }
  }
  return check_input_in_profile(st, profile, v, t.dims());
}

}  // namespace graft
