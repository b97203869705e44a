// Attribute serialization and concrete shape evaluation for op definitions.
#include <cstring>
#include <deque>
#include <nlohmann/json.hpp>

#include "core/checked_math.h"
#include "core/json_checked.h"
#include "core/utf8.h"
#include "graft/op.h"

namespace graft {

// Format: {"name": {"type": "float", "value": ...}}. Floats are stored as their IEEE bits as well so
// they round-trip exactly regardless of the JSON library's float printing.
std::string serialize_attributes(const AttributeMap& attrs) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, v] : attrs.all()) {
    nlohmann::json e;
    e["type"] = attr_type_name(attr_type_of(v));
    switch (attr_type_of(v)) {
      case AttrType::kFloat: {
        float f = std::get<float>(v);
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        e["value"] = f;
        e["bits"] = bits;
        break;
      }
      case AttrType::kInt: e["value"] = std::get<int64_t>(v); break;
      case AttrType::kString: {
        // A string attribute may hold any bytes; JSON strings must be UTF-8. Other bytes are kept
        // losslessly in "bytes" (read back first), with a readable "value" beside them.
        const std::string& str = std::get<std::string>(v);
        if (is_valid_utf8(str)) {
          e["value"] = str;
        } else {
          e["value"] = std::string();
          e["bytes"] = std::vector<uint8_t>(str.begin(), str.end());
        }
        break;
      }
      case AttrType::kFloats: {
        nlohmann::json bits = nlohmann::json::array();
        for (float f : std::get<std::vector<float>>(v)) {
          uint32_t b;
          std::memcpy(&b, &f, 4);
          bits.push_back(b);
        }
        e["value"] = std::get<std::vector<float>>(v);
        e["bits"] = bits;
        break;
      }
      case AttrType::kInts: e["value"] = std::get<std::vector<int64_t>>(v); break;
      case AttrType::kStrings: {
        const auto& strs = std::get<std::vector<std::string>>(v);
        bool all_utf8 = true;
        for (const auto& str : strs) all_utf8 = all_utf8 && is_valid_utf8(str);
        if (all_utf8) {
          e["value"] = strs;
        } else {
          e["value"] = nlohmann::json::array();
          nlohmann::json bytes = nlohmann::json::array();
          for (const auto& str : strs) bytes.push_back(std::vector<uint8_t>(str.begin(), str.end()));
          e["bytes"] = bytes;
        }
        break;
      }
      case AttrType::kTensor: {
        const Tensor& t = std::get<Tensor>(v);
        e["dtype"] = static_cast<int>(t.dtype());
        e["dims"] = t.dims();
        std::vector<uint8_t> bytes(static_cast<const uint8_t*>(t.data()),
                                   static_cast<const uint8_t*>(t.data()) + t.nbytes());
        e["value"] = bytes;
        break;
      }
    }
    j[name] = e;
  }
  // Names are UTF-8 (checked at import) and string values are stored above: `replace` only guards
  // this std::string API against throwing if a name ever is not.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<AttributeMap> deserialize_attributes(const std::string& text) {
  // Untrusted text (a plan, a TensorRT engine's serialized fields): every value is read with its
  // kind and range checked (core/json_checked.h), never with a bare get<T>() whose conversion of
  // an out-of-range number is undefined behaviour.
  namespace jc = json_checked;
  AttributeMap m;
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return error(StatusCode::kCorruptPlan, "serialized attributes are not a JSON object");
  for (auto it = j.begin(); it != j.end(); ++it) {
    const auto& e = it.value();
    auto malformed = [&] { return error(StatusCode::kCorruptPlan, "serialized attribute '", it.key(), "' is malformed"); };
    if (!e.is_object() || !e.contains("type") || !e.contains("value") || !e["type"].is_string()) return malformed();
    const std::string& type = e["type"].get_ref<const std::string&>();
    const nlohmann::json& value = e["value"];
    auto bytes_of = [&](const nlohmann::json& arr, std::string* out) {
      std::vector<uint8_t> b;
      if (!jc::get_int_vector(arr, &b)) return false;
      out->assign(b.begin(), b.end());
      return true;
    };
    auto float_of_bits = [](uint32_t bits) {
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    };
    try {
      if (type == "float") {
        uint32_t bits;
        if (!e.contains("bits") || !jc::get_int(e["bits"], &bits)) return malformed();
        m.set(it.key(), float_of_bits(bits));
      } else if (type == "int") {
        int64_t v;
        if (!jc::get_int(value, &v)) return malformed();
        m.set(it.key(), v);
      } else if (type == "string") {
        std::string str;
        if (e.contains("bytes")) {
          if (!bytes_of(e["bytes"], &str)) return malformed();
        } else {
          if (!value.is_string()) return malformed();
          str = value.get<std::string>();
        }
        m.set(it.key(), str);
      } else if (type == "floats") {
        std::vector<uint32_t> bits;
        if (!e.contains("bits") || !jc::get_int_vector(e["bits"], &bits)) return malformed();
        std::vector<float> v;
        for (uint32_t b : bits) v.push_back(float_of_bits(b));
        m.set(it.key(), v);
      } else if (type == "ints") {
        std::vector<int64_t> v;
        if (!jc::get_int_vector(value, &v)) return malformed();
        m.set(it.key(), v);
      } else if (type == "strings") {
        std::vector<std::string> strs;
        if (e.contains("bytes")) {
          if (!e["bytes"].is_array()) return malformed();
          for (const auto& b : e["bytes"]) {
            std::string str;
            if (!bytes_of(b, &str)) return malformed();
            strs.push_back(std::move(str));
          }
        } else {
          if (!value.is_array()) return malformed();
          for (const auto& v : value) {
            if (!v.is_string()) return malformed();
            strs.push_back(v.get<std::string>());
          }
        }
        m.set(it.key(), strs);
      } else if (type == "tensor") {
        int32_t dtype_code;
        std::vector<int64_t> dims;
        std::string bytes;
        if (!e.contains("dtype") || !jc::get_int(e["dtype"], &dtype_code) || !e.contains("dims") ||
            !jc::get_int_vector(e["dims"], &dims) || !bytes_of(value, &bytes))
          return malformed();
        const DataType dt = static_cast<DataType>(dtype_code);
        if (dtype_size(dt) == 0) return malformed();
        Status shape_ok = check_concrete_shape(dims, dt, "serialized tensor attribute '" + it.key() + "'");
        if (!shape_ok) return Status(StatusCode::kCorruptPlan, shape_ok.message());
        if (static_cast<int64_t>(bytes.size()) != *checked_nbytes(dims, dtype_size(dt)))
          return error(StatusCode::kCorruptPlan, "serialized tensor attribute '", it.key(), "' holds ",
                       static_cast<uint64_t>(bytes.size()), " bytes for its ", dtype_name(dt),
                       shape_to_string(shape_from_values(dims)), " shape");
        GRAFT_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(dt, dims));
        if (!bytes.empty()) std::memcpy(t.data(), bytes.data(), bytes.size());
        m.set(it.key(), t);
      } else {
        return error(StatusCode::kCorruptPlan, "serialized attribute '", it.key(), "' has unknown type '", type, "'");
      }
    } catch (const std::exception& ex) {
      return error(StatusCode::kCorruptPlan, "serialized attribute '", it.key(), "' is malformed: ", ex.what());
    }
  }
  return m;
}

namespace {
// Shape-expression builder over plain integers (PyTorch Meta kernels, tests, run-time shapes).
class ConcreteExprBuilder final : public ShapeExprBuilder {
 public:
  const void* constant(int64_t v) override {
    values_.push_back(v);
    return &values_.back();
  }
  const void* operation(DimOp op, const void* a, const void* b) override {
    Dim r = Dim::binary(op, Dim(*static_cast<const int64_t*>(a)), Dim(*static_cast<const int64_t*>(b)));
    if (!r.is_const()) {  // division by zero or int64 overflow: remember and report after the shape function returns
      failed_ = true;
      return constant(0);
    }
    return constant(r.value());
  }
  std::optional<int64_t> constant_value(const void* e) override { return *static_cast<const int64_t*>(e); }
  bool failed() const { return failed_; }

 private:
  std::deque<int64_t> values_;  // deque: pointers stay valid as it grows
  bool failed_ = false;
};
}  // namespace

Result<std::vector<std::vector<int64_t>>> infer_concrete_shapes(
    const OpDef& def, const std::vector<std::optional<std::vector<int64_t>>>& input_dims,
    const AttributeMap& attrs) {
  ConcreteExprBuilder b;
  std::vector<std::optional<std::vector<const void*>>> ins;
  for (auto& d : input_dims) {
    if (!d) {
      ins.emplace_back(std::nullopt);
      continue;
    }
    std::vector<const void*> e;
    for (int64_t x : *d) e.push_back(b.constant(x));
    ins.emplace_back(std::move(e));
  }
  ShapeContext ctx(&b, &attrs, std::move(ins), static_cast<int>(def.outputs().size()));
  GRAFT_RETURN_IF_ERROR(def.infer_shapes(ctx));
  if (b.failed())
    return error(StatusCode::kInvalidArgument, "op ", def.name(),
                 ": shape function divided by zero or overflowed a 64-bit integer");
  std::vector<std::vector<int64_t>> out;
  for (auto& o : ctx.outputs()) {
    std::vector<int64_t> dims;
    for (const void* e : *o) {
      int64_t v = *static_cast<const int64_t*>(e);
      if (v < 0) return error(StatusCode::kInvalidArgument, "op ", def.name(), ": shape function produced a negative dimension ", v);
      dims.push_back(v);
    }
    out.push_back(std::move(dims));
  }
  return out;
}

}  // namespace graft
