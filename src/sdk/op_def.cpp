// OpDef: the one definition every backend is generated from (include/graft/op.h).
#include <algorithm>
#include <cmath>
#include <limits>

#include "graft/op.h"

namespace graft {

const char* backend_name(Backend b) { return b == Backend::kCUDA ? "cuda" : "cpu"; }

std::string OpIdentity::to_string() const {
  return domain + "::" + name + " version " + version + " namespace '" + plugin_namespace + "'";
}

// ---- ShapeContext --------------------------------------------------------------------------
ShapeContext::ShapeContext(ShapeExprBuilder* builder, const AttributeMap* attrs,
                           std::vector<std::optional<std::vector<const void*>>> input_shapes,
                           int num_outputs)
    : builder_(builder), attrs_(attrs), inputs_(std::move(input_shapes)), outputs_(num_outputs) {}

int ShapeContext::input_rank(int i) const {
  return has_input(i) ? static_cast<int>(inputs_[i]->size()) : -1;
}

SymDim ShapeContext::input_dim(int i, int d) const {
  int r = input_rank(i);
  if (d < 0) d += r;
  // Out-of-range access is a bug in the op's shape function; return a constant 0 rather than crash.
  // The op's validate step (rank checks in the shape fn) is expected to guard this.
  if (i < 0 || r < 0 || d < 0 || d >= r) return constant(0);
  return SymDim(builder_, (*inputs_[i])[d]);
}

std::vector<SymDim> ShapeContext::input_shape(int i) const {
  std::vector<SymDim> out;
  for (int d = 0; d < input_rank(i); ++d) out.push_back(input_dim(i, d));
  return out;
}

void ShapeContext::set_output(int o, const std::vector<SymDim>& dims) {
  if (o < 0 || o >= static_cast<int>(outputs_.size())) return;
  std::vector<const void*> e;
  for (auto& d : dims) e.push_back(d.expr());
  outputs_[o] = std::move(e);
}

// ---- definition builders --------------------------------------------------------------------
namespace {
OpDef& add_attr(OpDef& def, std::vector<AttrSpec>& attrs, const std::string& name, AttrType type,
                std::optional<AttrValue> def_value, std::string doc) {
  AttrSpec s;
  s.name = name;
  s.type = type;
  s.required = !def_value.has_value();
  s.default_value = std::move(def_value);
  s.doc = std::move(doc);
  attrs.push_back(std::move(s));
  return def;
}
template <typename T>
std::optional<AttrValue> opt_value(std::optional<T> v) {
  if (!v) return std::nullopt;
  return AttrValue(std::move(*v));
}
}  // namespace

OpDef& OpDef::attr_float(const std::string& n, std::optional<float> d, std::string doc) {
  return add_attr(*this, attrs_, n, AttrType::kFloat, opt_value(d), std::move(doc));
}
OpDef& OpDef::attr_int(const std::string& n, std::optional<int64_t> d, std::string doc) {
  return add_attr(*this, attrs_, n, AttrType::kInt, opt_value(d), std::move(doc));
}
OpDef& OpDef::attr_string(const std::string& n, std::optional<std::string> d, std::string doc) {
  return add_attr(*this, attrs_, n, AttrType::kString, opt_value(std::move(d)), std::move(doc));
}
OpDef& OpDef::attr_floats(const std::string& n, std::optional<std::vector<float>> d, std::string doc) {
  return add_attr(*this, attrs_, n, AttrType::kFloats, opt_value(std::move(d)), std::move(doc));
}
OpDef& OpDef::attr_ints(const std::string& n, std::optional<std::vector<int64_t>> d, std::string doc) {
  return add_attr(*this, attrs_, n, AttrType::kInts, opt_value(std::move(d)), std::move(doc));
}
OpDef& OpDef::attr_strings(const std::string& n, std::optional<std::vector<std::string>> d, std::string doc) {
  return add_attr(*this, attrs_, n, AttrType::kStrings, opt_value(std::move(d)), std::move(doc));
}
OpDef& OpDef::range(double lo, double hi) {
  if (!attrs_.empty()) {
    attrs_.back().min_value = lo;
    attrs_.back().max_value = hi;
  }
  return *this;
}
OpDef& OpDef::allowed(std::vector<int64_t> v) {
  if (!attrs_.empty()) attrs_.back().allowed_ints = std::move(v);
  return *this;
}
OpDef& OpDef::allowed(std::vector<std::string> v) {
  if (!attrs_.empty()) attrs_.back().allowed_strings = std::move(v);
  return *this;
}
OpDef& OpDef::input(std::string name, std::vector<DataType> dtypes, std::string doc) {
  inputs_.push_back(IOSpec{std::move(name), std::move(dtypes), false, std::move(doc)});
  return *this;
}
OpDef& OpDef::optional_input(std::string name, std::vector<DataType> dtypes, std::string doc) {
  inputs_.push_back(IOSpec{std::move(name), std::move(dtypes), true, std::move(doc)});
  return *this;
}
OpDef& OpDef::output(std::string name, std::vector<DataType> dtypes, std::string doc) {
  outputs_.push_back(IOSpec{std::move(name), std::move(dtypes), false, std::move(doc)});
  return *this;
}
OpDef& OpDef::optional_output(std::string name, std::vector<DataType> dtypes, std::string doc) {
  outputs_.push_back(IOSpec{std::move(name), std::move(dtypes), true, std::move(doc)});
  return *this;
}
OpDef& OpDef::type_combination(std::vector<DataType> c) {
  combos_.push_back(std::move(c));
  return *this;
}
OpDef& OpDef::kernel(Backend b, KernelFn fn, std::vector<std::vector<DataType>> combos) {
  kernels_.push_back(KernelEntry{b, std::move(combos), std::move(fn)});
  return *this;
}
OpDef& OpDef::backward(Backend b, KernelFn fn, std::vector<std::vector<DataType>> combos) {
  backward_kernels_.push_back(KernelEntry{b, std::move(combos), std::move(fn)});
  return *this;
}

const AttrSpec* OpDef::find_attr(const std::string& name) const {
  for (auto& a : attrs_)
    if (a.name == name) return &a;
  return nullptr;
}

bool OpDef::has_backward(Backend b) const {
  return std::any_of(backward_kernels_.begin(), backward_kernels_.end(),
                     [&](const KernelEntry& k) { return k.backend == b; });
}

// ---- validation ----------------------------------------------------------------------------
namespace {
Status attr_error(const std::string& attr, const std::string& msg) {
  Status st(StatusCode::kInvalidArgument, msg);
  st.with_attribute(attr);
  return st;
}

Status check_number(const AttrSpec& s, double v) {
  if (std::isnan(v)) return attr_error(s.name, "value is NaN");
  if (s.min_value && v < *s.min_value)
    return attr_error(s.name, "value " + attr_value_to_string(AttrValue(static_cast<float>(v))) +
                                  " is below the minimum " + std::to_string(*s.min_value));
  if (s.max_value && v > *s.max_value)
    return attr_error(s.name, "value " + attr_value_to_string(AttrValue(static_cast<float>(v))) +
                                  " is above the maximum " + std::to_string(*s.max_value));
  return Status::ok();
}
Status check_int(const AttrSpec& s, int64_t v) {
  if (!s.allowed_ints.empty() &&
      std::find(s.allowed_ints.begin(), s.allowed_ints.end(), v) == s.allowed_ints.end())
    return attr_error(s.name, "value " + std::to_string(v) + " is not one of the allowed values " +
                                  attr_value_to_string(AttrValue(s.allowed_ints)));
  if (s.min_value && static_cast<double>(v) < *s.min_value)
    return attr_error(s.name, "value " + std::to_string(v) + " is below the minimum " +
                                  std::to_string(static_cast<int64_t>(*s.min_value)));
  if (s.max_value && static_cast<double>(v) > *s.max_value)
    return attr_error(s.name, "value " + std::to_string(v) + " is above the maximum " +
                                  std::to_string(static_cast<int64_t>(*s.max_value)));
  return Status::ok();
}
Status check_string(const AttrSpec& s, const std::string& v) {
  if (!s.allowed_strings.empty() &&
      std::find(s.allowed_strings.begin(), s.allowed_strings.end(), v) == s.allowed_strings.end())
    return attr_error(s.name, "value \"" + v + "\" is not one of the allowed values " +
                                  attr_value_to_string(AttrValue(s.allowed_strings)));
  return Status::ok();
}
}  // namespace

Status OpDef::validate_attributes(AttributeMap& attrs) const {
  // TensorRT's ONNX parser reads these two to find the plugin; they are identity, not fields.
  attrs.erase("plugin_version");
  attrs.erase("plugin_namespace");
  for (const auto& [name, value] : attrs.all()) {
    if (!find_attr(name)) {
      std::string known;
      for (auto& a : attrs_) known += (known.empty() ? "" : ", ") + a.name;
      return attr_error(name, "unknown attribute for op " + id_.name + " (known: " +
                                  (known.empty() ? "none" : known) + ")");
    }
  }
  for (const auto& s : attrs_) {
    const AttrValue* v = attrs.find(s.name);
    if (!v) {
      if (s.required) return attr_error(s.name, "required attribute is missing");
      attrs.set(s.name, *s.default_value);
      continue;
    }
    AttrType t = attr_type_of(*v);
    // An integer given where a float is expected is exact for small values; accept it (TensorRT
    // fields and Python callers often pass 1 for 1.0). The reverse would lose data: refuse.
    if (s.type == AttrType::kFloat && t == AttrType::kInt) {
      attrs.set(s.name, static_cast<float>(std::get<int64_t>(*v)));
      v = attrs.find(s.name);
      t = AttrType::kFloat;
    }
    if (t != s.type)
      return attr_error(s.name, std::string("expected type ") + attr_type_name(s.type) + ", got " +
                                    attr_type_name(t));
    switch (t) {
      case AttrType::kFloat: GRAFT_RETURN_IF_ERROR(check_number(s, std::get<float>(*v))); break;
      case AttrType::kInt: GRAFT_RETURN_IF_ERROR(check_int(s, std::get<int64_t>(*v))); break;
      case AttrType::kString: GRAFT_RETURN_IF_ERROR(check_string(s, std::get<std::string>(*v))); break;
      case AttrType::kFloats:
        for (float f : std::get<std::vector<float>>(*v)) GRAFT_RETURN_IF_ERROR(check_number(s, f));
        break;
      case AttrType::kInts:
        for (int64_t i : std::get<std::vector<int64_t>>(*v)) GRAFT_RETURN_IF_ERROR(check_int(s, i));
        break;
      case AttrType::kStrings:
        for (auto& x : std::get<std::vector<std::string>>(*v)) GRAFT_RETURN_IF_ERROR(check_string(s, x));
        break;
      case AttrType::kTensor: break;
    }
  }
  return Status::ok();
}

Status OpDef::validate_definition() const {
  auto bad = [&](const std::string& m) {
    return error(StatusCode::kInvalidArgument, "op definition ", id_.to_string(), ": ", m);
  };
  if (id_.name.empty()) return bad("empty name");
  if (id_.version.empty()) return bad("empty version");
  if (outputs_.empty()) return bad("no outputs");
  if (!shape_fn_) return bad("no shape function");
  if (!std::any_of(kernels_.begin(), kernels_.end(), [](const KernelEntry& k) { return k.backend == Backend::kCPU; }))
    return bad("no CPU reference kernel (every op needs one: it is the executable specification)");
  size_t n = inputs_.size() + outputs_.size();
  for (auto& c : combos_)
    if (c.size() != n) return bad("a type combination has " + std::to_string(c.size()) + " entries, expected " + std::to_string(n));
  for (auto& k : kernels_)
    for (auto& c : k.combinations)
      if (c.size() != n) return bad("a kernel's type combination has the wrong size");
  for (int i : diff_inputs_)
    if (i < 0 || i >= static_cast<int>(inputs_.size())) return bad("differentiable input index out of range");
  for (size_t o = 1; o < outputs_.size(); ++o)
    if (outputs_[o - 1].optional && !outputs_[o].optional)
      return bad("output '" + outputs_[o].name + "' follows an optional output: only trailing outputs can be optional");
  for (auto& a : attrs_) {
    if (a.default_value && attr_type_of(*a.default_value) != a.type) return bad("attribute '" + a.name + "' default has the wrong type");
    if (a.name == "plugin_version" || a.name == "plugin_namespace") return bad("attribute name '" + a.name + "' is reserved");
  }
  return Status::ok();
}

Status OpDef::infer_shapes(ShapeContext& ctx) const {
  if (ctx.num_inputs() > static_cast<int>(inputs_.size()))
    return error(StatusCode::kInvalidModel, "op ", id_.name, " takes at most ", static_cast<int64_t>(inputs_.size()),
                 " inputs, got ", static_cast<int64_t>(ctx.num_inputs()));
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (!inputs_[i].optional && !ctx.has_input(static_cast<int>(i)))
      return error(StatusCode::kInvalidModel, "op ", id_.name, ": required input ", static_cast<int64_t>(i), " ('",
                   inputs_[i].name, "') is missing");
  if (ctx.outputs().size() > outputs_.size())
    return error(StatusCode::kInvalidModel, "op ", id_.name, " has at most ", static_cast<int64_t>(outputs_.size()),
                 " outputs, the node has ", static_cast<int64_t>(ctx.outputs().size()));
  for (size_t o = ctx.outputs().size(); o < outputs_.size(); ++o)
    if (!outputs_[o].optional)
      return error(StatusCode::kInvalidModel, "op ", id_.name, ": the node has ", static_cast<int64_t>(ctx.outputs().size()),
                   " outputs, but output ", static_cast<int64_t>(o), " ('", outputs_[o].name, "') is not optional");
  GRAFT_RETURN_IF_ERROR(shape_fn_(ctx));
  for (size_t o = 0; o < ctx.outputs().size(); ++o)
    if (!ctx.outputs()[o])
      return error(StatusCode::kInternal, "op ", id_.name, ": shape function did not set output ",
                   static_cast<int64_t>(o), " ('", outputs_[o].name, "')");
  return Status::ok();
}

Result<std::vector<DataType>> OpDef::infer_dtypes(const std::vector<DataType>& in, const AttributeMap& attrs) const {
  for (size_t i = 0; i < in.size() && i < inputs_.size(); ++i) {
    if (in[i] == DataType::kUndefined || inputs_[i].dtypes.empty()) continue;
    if (std::find(inputs_[i].dtypes.begin(), inputs_[i].dtypes.end(), in[i]) == inputs_[i].dtypes.end()) {
      std::string allowed;
      for (auto t : inputs_[i].dtypes) allowed += (allowed.empty() ? "" : ", ") + std::string(dtype_name(t));
      return error(StatusCode::kInvalidArgument, "op ", id_.name, ": input ", static_cast<int64_t>(i), " ('",
                   inputs_[i].name, "') has dtype ", dtype_name(in[i]), "; allowed: ", allowed);
    }
  }
  std::vector<DataType> out;
  if (dtype_fn_) {
    GRAFT_ASSIGN_OR_RETURN(out, dtype_fn_(in, attrs));
  } else {
    out.assign(outputs_.size(), in.empty() ? DataType::kUndefined : in[0]);
  }
  if (out.size() != outputs_.size())
    return error(StatusCode::kInternal, "op ", id_.name, ": dtype rule returned ", static_cast<int64_t>(out.size()),
                 " dtypes for ", static_cast<int64_t>(outputs_.size()), " outputs");
  // Kernels see raw buffers (TensorView); a string tensor holds std::string objects.
  for (size_t o = 0; o < out.size(); ++o)
    if (out[o] == DataType::kString)
      return error(StatusCode::kUnsupported, "op ", id_.name, ": output ", static_cast<int64_t>(o), " ('",
                   outputs_[o].name, "') would be a string tensor, which custom ops cannot make");
  std::vector<DataType> combo = in;
  combo.resize(inputs_.size(), DataType::kUndefined);
  combo.insert(combo.end(), out.begin(), out.end());
  if (!combos_.empty() && !supports(Backend::kCPU, combo)) {
    std::string got;
    for (auto t : combo) got += (got.empty() ? "" : ", ") + std::string(dtype_name(t));
    return error(StatusCode::kUnsupported, "op ", id_.name, " has no kernel for dtypes (", got, ")");
  }
  return out;
}

namespace {
// Omitted optional inputs and outputs (kUndefined) match any declared type.
bool combo_matches(const std::vector<DataType>& declared, const std::vector<DataType>& actual) {
  if (declared.size() != actual.size()) return false;
  for (size_t i = 0; i < declared.size(); ++i)
    if (actual[i] != DataType::kUndefined && declared[i] != actual[i]) return false;
  return true;
}
}  // namespace

const KernelEntry* OpDef::pick(const std::vector<KernelEntry>& from, Backend b,
                               const std::vector<DataType>& given) const {
  // A node that leaves out trailing optional outputs gives a shorter combination; they match any type.
  std::vector<DataType> combo = given;
  if (combo.size() < inputs_.size() + outputs_.size()) combo.resize(inputs_.size() + outputs_.size(), DataType::kUndefined);
  for (auto& k : from) {
    if (k.backend != b) continue;
    const auto& list = k.combinations.empty() ? combos_ : k.combinations;
    if (list.empty()) return &k;
    for (auto& c : list)
      if (combo_matches(c, combo)) return &k;
  }
  return nullptr;
}

bool OpDef::supports(Backend b, const std::vector<DataType>& combination) const {
  return pick(kernels_, b, combination) != nullptr;
}

size_t OpDef::workspace_size(const std::vector<ConcreteDesc>& in, const std::vector<ConcreteDesc>& out,
                             const AttributeMap& attrs) const {
  return workspace_fn_ ? workspace_fn_(in, out, attrs) : 0;
}

namespace {
std::vector<DataType> combo_of(const KernelContext& ctx, size_t n_in) {
  std::vector<DataType> c;
  for (size_t i = 0; i < n_in; ++i) c.push_back(i < ctx.inputs.size() && ctx.inputs[i].data ? ctx.inputs[i].dtype : DataType::kUndefined);
  for (auto& o : ctx.outputs) c.push_back(o.dtype);
  return c;
}
std::string combo_text(const std::vector<DataType>& c) {
  std::string s;
  for (auto t : c) s += (s.empty() ? "" : ", ") + std::string(dtype_name(t));
  return "(" + s + ")";
}
}  // namespace

Status OpDef::run(Backend b, const KernelContext& ctx) const {
  auto combo = combo_of(ctx, inputs_.size());
  const KernelEntry* k = pick(kernels_, b, combo);
  if (!k)
    return error(StatusCode::kUnsupported, "op ", id_.name, " has no ", backend_name(b), " kernel for dtypes ",
                 combo_text(combo));
  return k->fn(ctx);
}

Status OpDef::run_backward(Backend b, const KernelContext& ctx) const {
  // Backward contexts hold forward inputs + output gradients; match on the forward inputs' dtypes.
  std::vector<DataType> fwd;
  for (size_t i = 0; i < inputs_.size(); ++i)
    fwd.push_back(i < ctx.inputs.size() && ctx.inputs[i].data ? ctx.inputs[i].dtype : DataType::kUndefined);
  for (size_t o = 0; o < outputs_.size(); ++o) {
    size_t gi = inputs_.size() + o;
    fwd.push_back(gi < ctx.inputs.size() ? ctx.inputs[gi].dtype : DataType::kUndefined);
  }
  const KernelEntry* k = pick(backward_kernels_, b, fwd);
  if (!k)
    return error(StatusCode::kUnsupported, "op ", id_.name, " has no ", backend_name(b),
                 " backward kernel for dtypes ", combo_text(fwd));
  return k->fn(ctx);
}

}  // namespace graft
