#include "onnx/importer.h"

#include <fcntl.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/checked_math.h"
#include "core/json_checked.h"
#include "core/utf8.h"
#include "graft/registry.h"
#include "io/tensor_io.h"
#include "onnx/builtin_schema.h"
#include "onnx/deform_conv_rewrite.h"
#include "onnx/graph_references.h"
#include "onnx/onnx_convert.h"
#include "onnx/opset_conversion.h"
#include "ops/custom_kernel_call.h"
#include "ops/internal_ops.h"
#include "ops/operator.h"
#include "ops/control_flow/control_flow.h"

namespace graft {

namespace fs = std::filesystem;

namespace {

Result<std::string> read_file(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    return error(StatusCode::kNotFound, "file not found").with_file(path);
  return io::read_file(path);
}

// Parses a non-negative decimal external_data value (offset, length); the whole string must be a number.
Result<int64_t> external_int(const onnx::TensorProto& tp, const std::string& key, const std::string& value) {
  int64_t v = 0;
  const char* end = value.data() + value.size();
  auto [p, ec] = std::from_chars(value.data(), end, v);
  if (ec != std::errc() || p != end || v < 0)
    return error(StatusCode::kInvalidModel, "initializer '", tp.name(), "': external data ", key, " '", value,
                 "' is not a non-negative integer");
  return v;
}

// Resolves an external-data location against the model's directory. ONNX requires the location to
// be a relative path under that directory; anything else would let a downloaded model read any
// file the user can read (/etc/passwd, ~/.ssh/...) into its weights, its plan and its outputs. So:
// no absolute path, no '..' component, and a path that, with symbolic links resolved, still lies
// inside the directory.
Result<fs::path> confined_external_path(const onnx::TensorProto& tp, const std::string& location,
                                        const std::string& base_dir) {
  auto fail = [&](StatusCode code, auto&&... why) {
    return error(code, "initializer '", tp.name(), "': external data location '", location, "' ", why...);
  };
  if (base_dir.empty())
    return fail(StatusCode::kInvalidModel, "cannot be read: this model has no directory (plans embed every weight)");
  if (location.find('\0') != std::string::npos) return fail(StatusCode::kInvalidModel, "contains a NUL character");
  const fs::path loc(location);
  if (loc.is_absolute() || loc.has_root_name() || loc.has_root_directory())
    return fail(StatusCode::kInvalidModel,
                "is an absolute path; ONNX requires a path relative to the model's directory");
  for (const fs::path& part : loc)
    if (part == "..")
      return fail(StatusCode::kInvalidModel, "contains '..'; ONNX requires a path inside the model's directory");
  std::error_code ec;
  const fs::path dir = fs::weakly_canonical(fs::absolute(base_dir, ec), ec);
  if (ec) return fail(StatusCode::kIoError, "cannot be resolved: the model directory '", base_dir, "': ", ec.message());
  const fs::path full = fs::weakly_canonical(dir / loc, ec);
  if (ec) return fail(StatusCode::kIoError, "cannot be resolved: ", ec.message());
  // Symbolic links are resolved by weakly_canonical: the result must still be below `dir`.
  const fs::path rel = full.lexically_relative(dir);
  if (rel.empty() || rel == "." || *rel.begin() == "..")
    return fail(StatusCode::kInvalidModel, "resolves to '", full.string(),
                "', outside the model's directory '", dir.string(), "' (through a symbolic link)");
  if (!fs::exists(full, ec))
    return fail(StatusCode::kNotFound, "does not exist (looked for '", full.string(), "')");
  if (!fs::is_regular_file(full, ec))
    return fail(StatusCode::kInvalidModel, "is not a regular file ('", full.string(), "')");
  return full;
}

// Reads the `expected` bytes of an initializer stored outside the model (external_data: location,
// offset, length), relative to the model's directory. Sizes are checked against the file before
// anything is allocated.
Status load_external(const onnx::TensorProto& tp, const std::string& base_dir, uint64_t expected, std::string* out) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : tp.external_data()) {
    if (kv.key() == "location") {
      location = kv.value();
    } else if (kv.key() == "offset") {
      GRAFT_ASSIGN_OR_RETURN(offset, external_int(tp, "offset", kv.value()));
    } else if (kv.key() == "length") {
      GRAFT_ASSIGN_OR_RETURN(length, external_int(tp, "length", kv.value()));
    }
  }
  if (location.empty())
    return error(StatusCode::kInvalidModel, "initializer '", tp.name(),
                 "' uses external data but gives no location");
  GRAFT_ASSIGN_OR_RETURN(fs::path p, confined_external_path(tp, location, base_dir));
  std::error_code ec;
  const uint64_t size = fs::file_size(p, ec);
  if (ec) return error(StatusCode::kIoError, "cannot stat external data file '", p.string(), "' of initializer '", tp.name(), "'");
  if (static_cast<uint64_t>(offset) > size)
    return error(StatusCode::kInvalidModel, "external data of initializer '", tp.name(), "': offset ",
                 offset, " is beyond the end of '", p.string(), "' (", size, " bytes)");
  if (length < 0) length = static_cast<int64_t>(size - static_cast<uint64_t>(offset));
  if (static_cast<uint64_t>(length) > size - static_cast<uint64_t>(offset))
    return error(StatusCode::kInvalidModel, "external data of initializer '", tp.name(), "': offset ",
                 offset, " + length ", length, " is beyond the end of '", p.string(), "' (", size, " bytes)");
  if (static_cast<uint64_t>(length) != expected)
    return error(StatusCode::kInvalidModel, "initializer '", tp.name(), "' needs ", expected,
                 " bytes but its external data in '", location, "' has ", length);
  std::ifstream in(p, std::ios::binary);
  if (!in) return error(StatusCode::kIoError, "cannot open external data file '", p.string(), "'");
  in.seekg(offset);
  out->resize(static_cast<size_t>(length));
  in.read(out->data(), length);
  if (in.gcount() != length)
    return error(StatusCode::kIoError, "short read from external data file '", p.string(), "'");
  return Status::ok();
}

template <typename Src>
void copy_converted(const Src& src, Tensor& t) {
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, static_cast<double>(src.Get(static_cast<int>(i))));
}

}  // namespace

Result<Tensor> tensor_from_proto(const onnx::TensorProto& tp, const std::string& base_dir) {
  DataType dt;
  if (!dtype_from_onnx(tp.data_type(), &dt))
    return error(StatusCode::kUnsupported, "tensor '", tp.name(), "' has ONNX data type ",
                 static_cast<int64_t>(tp.data_type()), ", which graft does not support");
  std::vector<int64_t> dims(tp.dims().begin(), tp.dims().end());
  // Rank, signs and the element/byte counts are checked (no int64 wrap) before anything else, and
  // the bytes present are compared with the declared size BEFORE allocating: a 60-byte file must
  // not be able to ask for terabytes.
  {
    Status st = check_concrete_shape(dims, dt, "tensor '" + tp.name() + "'");
    if (!st) return Status(StatusCode::kInvalidModel, st.message());
  }
  const int64_t n = *checked_numel(dims);
  const uint64_t nbytes = static_cast<uint64_t>(*checked_nbytes(dims, dtype_size(dt)));
  auto size_error = [&](uint64_t have, const char* what) {
    return error(StatusCode::kInvalidModel, "tensor '", tp.name(), "' (", dtype_name(dt),
                 shape_to_string(shape_from_values(dims)), ") needs ", nbytes, " bytes but its ", what, " has ", have);
  };
  auto count_error = [&](int64_t have, const char* field) {
    return error(StatusCode::kInvalidModel, "tensor '", tp.name(), "' has ", n, " elements but ",
                 field, " holds ", have);
  };
  auto allocate = [&]() -> Result<Tensor> {
    auto t = Tensor::allocate(dt, dims);
    if (!t) return error(t.status().code(), "tensor '", tp.name(), "': ", t.status().message());
    return t;
  };

  if (dt == DataType::kString) {
    // ONNX keeps strings in string_data only (raw_data and external data hold fixed-size elements).
    if (tp.data_location() == onnx::TensorProto::EXTERNAL || tp.has_raw_data())
      return error(StatusCode::kInvalidModel, "tensor '", tp.name(), "' holds strings, which ONNX keeps in ",
                   "string_data, not in ", tp.has_raw_data() ? "raw_data" : "external data");
    if (tp.string_data_size() != n) return count_error(tp.string_data_size(), "string_data");
    GRAFT_ASSIGN_OR_RETURN(Tensor t, allocate());
    std::copy(tp.string_data().begin(), tp.string_data().end(), t.data_as<std::string>());
    return t;
  }
  if (dtype_is_4bit(dt)) {
    // Packed two a byte in external data, raw_data or int32_data (one packed byte an entry);
    // graft holds one value a byte (dtype.h).
    std::string bytes;
    if (tp.data_location() == onnx::TensorProto::EXTERNAL) {
      GRAFT_RETURN_IF_ERROR(load_external(tp, base_dir, static_cast<uint64_t>(packed_4bit_bytes(n)), &bytes));
    } else {
      auto b = io::packed_4bit_of(tp, n);
      if (!b) return Status(StatusCode::kInvalidModel, b.status().message());
      bytes = std::move(b).value();
    }
    GRAFT_ASSIGN_OR_RETURN(Tensor t, allocate());
    unpack_4bit(dt, reinterpret_cast<const uint8_t*>(bytes.data()), n, t.data());
    return t;
  }
  if (tp.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string bytes;
    GRAFT_RETURN_IF_ERROR(load_external(tp, base_dir, nbytes, &bytes));
    GRAFT_ASSIGN_OR_RETURN(Tensor t, allocate());
    if (nbytes) std::memcpy(t.data(), bytes.data(), nbytes);
    return t;
  }
  if (tp.has_raw_data()) {
    if (tp.raw_data().size() != nbytes) return size_error(tp.raw_data().size(), "raw_data");
    GRAFT_ASSIGN_OR_RETURN(Tensor t, allocate());
    if (nbytes) std::memcpy(t.data(), tp.raw_data().data(), nbytes);
    return t;
  }
  int64_t have = 0;
  const char* field = "";
  switch (dt) {
    case DataType::kFloat32: have = tp.float_data_size(); field = "float_data"; break;
    case DataType::kFloat64: have = tp.double_data_size(); field = "double_data"; break;
    case DataType::kInt64: have = tp.int64_data_size(); field = "int64_data"; break;
    case DataType::kFloat16:
    case DataType::kBFloat16:  // 16- and 8-bit floats travel as their bit patterns in int32_data
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ:
    case DataType::kInt32:
    case DataType::kInt8:
    case DataType::kUInt8:
    case DataType::kInt16:
    case DataType::kUInt16:
    case DataType::kBool: have = tp.int32_data_size(); field = "int32_data"; break;
    case DataType::kUInt32:  // onnx.proto keeps uint32 and uint64 in uint64_data
    case DataType::kUInt64: have = tp.uint64_data_size(); field = "uint64_data"; break;
    default:
      return error(StatusCode::kUnsupported, "tensor '", tp.name(), "': unsupported data type");
  }
  if (have != n) return count_error(have, field);
  GRAFT_ASSIGN_OR_RETURN(Tensor t, allocate());
  switch (dt) {
    case DataType::kFloat32:
      if (n) std::memcpy(t.data(), tp.float_data().data(), nbytes);
      break;
    case DataType::kFloat64:
      if (n) std::memcpy(t.data(), tp.double_data().data(), nbytes);
      break;
    case DataType::kInt64:
      if (n) std::memcpy(t.data(), tp.int64_data().data(), nbytes);
      break;
    case DataType::kUInt64:
      if (n) std::memcpy(t.data(), tp.uint64_data().data(), nbytes);
      break;
    case DataType::kUInt32: {
      auto* p = t.data_as<uint32_t>();
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<uint32_t>(tp.uint64_data(static_cast<int>(i)));
      break;
    }
    case DataType::kFloat16:
    case DataType::kBFloat16: {
      auto* p = t.data_as<uint16_t>();
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<uint16_t>(tp.int32_data(static_cast<int>(i)));
      break;
    }
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ: {
      auto* p = t.data_as<uint8_t>();
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(tp.int32_data(static_cast<int>(i)));
      break;
    }
    default:
      copy_converted(tp.int32_data(), t);
      break;
  }
  return t;
}

void tensor_to_proto(const Tensor& t, const std::string& name, onnx::TensorProto* tp) {
  tp->set_name(name);
  tp->set_data_type(static_cast<int32_t>(t.dtype()));
  for (int64_t d : t.dims()) tp->add_dims(d);
  if (t.dtype() == DataType::kString) {
    for (int64_t i = 0; i < t.numel(); ++i) tp->add_string_data(t.data_as<std::string>()[i]);
    return;
  }
  if (dtype_is_4bit(t.dtype())) {
    std::string packed(static_cast<size_t>(packed_4bit_bytes(t.numel())), '\0');
    pack_4bit(t.data(), t.numel(), reinterpret_cast<uint8_t*>(packed.data()));
    tp->set_raw_data(std::move(packed));
    return;
  }
  tp->set_raw_data(std::string(static_cast<const char*>(t.data()), t.nbytes()));
}

Result<AttrValue> attribute_from_proto(const onnx::AttributeProto& ap, const std::string& base_dir) {
  using A = onnx::AttributeProto;
  A::AttributeType type = ap.type();
  if (type == A::UNDEFINED) {
    // Very old exporters leave `type` unset; deduce it from the field that is present.
    if (ap.has_f()) type = A::FLOAT;
    else if (ap.has_i()) type = A::INT;
    else if (ap.has_s()) type = A::STRING;
    else if (ap.has_t()) type = A::TENSOR;
    else if (ap.floats_size()) type = A::FLOATS;
    else if (ap.ints_size()) type = A::INTS;
    else if (ap.strings_size()) type = A::STRINGS;
    else if (ap.has_g() || ap.graphs_size()) type = A::GRAPH;
  }
  switch (type) {
    case A::FLOAT: return AttrValue(ap.f());
    case A::INT: return AttrValue(static_cast<int64_t>(ap.i()));
    case A::STRING: return AttrValue(ap.s());
    case A::TENSOR: {
      auto t = tensor_from_proto(ap.t(), base_dir);
      if (!t) return std::move(t).take_status();
      return AttrValue(std::move(t).value());
    }
    case A::FLOATS: return AttrValue(std::vector<float>(ap.floats().begin(), ap.floats().end()));
    case A::INTS: return AttrValue(std::vector<int64_t>(ap.ints().begin(), ap.ints().end()));
    case A::STRINGS: return AttrValue(std::vector<std::string>(ap.strings().begin(), ap.strings().end()));
    case A::GRAPH:  // imported as Node::subgraphs, never as an AttrValue
    case A::GRAPHS:
      return error(StatusCode::kUnsupported, "graph-list attributes are not supported (single graphs are)");
    case A::SPARSE_TENSOR:
    case A::SPARSE_TENSORS:
      return error(StatusCode::kUnsupported, "sparse tensor attributes are not supported");
    case A::TYPE_PROTO: {
      // Optional's `type`: a tensor or a sequence of tensors, kept as INTS (ops/control_flow/control_flow.h).
      const onnx::TypeProto* tp = &ap.tp();
      int64_t kind = kOptionalTypeTensor;
      if (tp->has_sequence_type() && tp->sequence_type().has_elem_type()) {
        kind = kOptionalTypeSequence;
        tp = &tp->sequence_type().elem_type();
      }
      if (!tp->has_tensor_type())
        return error(StatusCode::kUnsupported, "a type attribute names a tensor or a sequence of tensors; "
                     "maps, optionals and nested sequences are not supported");
      std::vector<int64_t> enc{kind, static_cast<int64_t>(tp->tensor_type().elem_type()), -1};
      if (tp->tensor_type().has_shape()) {
        enc[2] = tp->tensor_type().shape().dim_size();
        for (const auto& d : tp->tensor_type().shape().dim())
          enc.push_back(d.has_dim_value() ? static_cast<int64_t>(d.dim_value()) : -1);
      }
      return AttrValue(std::move(enc));
    }
    case A::TYPE_PROTOS:
      return error(StatusCode::kUnsupported, "type-proto-list attributes are not supported");
    case A::TENSORS:
      return error(StatusCode::kUnsupported, "tensor-list attributes are not supported");
    default:
      return error(StatusCode::kInvalidModel, "attribute has an unknown type ", static_cast<int64_t>(type));
  }
}

namespace {

Result<Tensor> constant_node_value(const onnx::NodeProto& np, const std::string& base_dir) {
  for (const auto& a : np.attribute()) {
    const std::string& n = a.name();
    if (n == "value") return tensor_from_proto(a.t(), base_dir);
    if (n == "value_float") return Tensor::from_doubles(DataType::kFloat32, {}, {a.f()});
    if (n == "value_int") return Tensor::scalar_int64(a.i());
    if (n == "value_floats") {
      std::vector<double> v(a.floats().begin(), a.floats().end());
      return Tensor::from_doubles(DataType::kFloat32, {static_cast<int64_t>(v.size())}, v);
    }
    if (n == "value_ints") return Tensor::vector_int64(std::vector<int64_t>(a.ints().begin(), a.ints().end()));
    if (n == "value_string") return Tensor::from_strings({}, {a.s()});
    if (n == "value_strings")
      return Tensor::from_strings({static_cast<int64_t>(a.strings_size())},
                                  std::vector<std::string>(a.strings().begin(), a.strings().end()));
    return error(StatusCode::kUnsupported, "Constant attribute '", n, "' is not supported").with_attribute(n);
  }
  return error(StatusCode::kInvalidModel, "Constant node has no value attribute");
}

// The seed's parameter convention: an int tensor of character codes spelling a JSON object.
Result<AttributeMap> attrs_from_json_codes(const Tensor& codes, const OpDef& def) {
  std::string text;
  for (int64_t i = 0; i < codes.numel(); ++i) {
    double c = codes.get(i);
    if (!(c >= 0 && c <= 255))  // NaN fails too (its int conversion would be undefined)
      return error(StatusCode::kInvalidModel, "parameter tensor holds a non-character code");
    text.push_back(static_cast<char>(static_cast<int>(c)));
  }
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return error(StatusCode::kInvalidModel, "parameter tensor is not a JSON object: '", text, "'");
  AttributeMap out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    std::string key = it.key();
    const AttrSpec* spec = def.find_attr(key);
    if (!spec && key == "param") {
      for (const auto& s : def.attrs())
        if (s.type == AttrType::kFloat) { spec = &s; break; }
    }
    if (!spec)
      return error(StatusCode::kInvalidArgument, "JSON parameter '", key, "' is not an attribute of ",
                   def.name()).with_attribute(key);
    const nlohmann::json& v = it.value();
    auto bad = [&]() {
      return error(StatusCode::kInvalidArgument, "JSON parameter '", key, "' = ",
                   v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                   " does not fit attribute type ", attr_type_name(spec->type)).with_attribute(spec->name);
    };
    switch (spec->type) {
      case AttrType::kFloat: {
        float f;  // range-checked: a double beyond float's range converts with undefined behaviour
        if (!json_checked::get_float(v, &f)) return bad();
        out.set(spec->name, f);
        break;
      }
      case AttrType::kInt:
        if (!v.is_number_integer() && !v.is_boolean()) return bad();
        out.set(spec->name, v.is_boolean() ? int64_t(v.get<bool>()) : v.get<int64_t>());
        break;
      case AttrType::kString:
        if (!v.is_string()) return bad();
        out.set(spec->name, v.get<std::string>());
        break;
      case AttrType::kFloats: {
        if (!v.is_array()) return bad();
        std::vector<float> fs;
        for (auto& e : v) {
          float f;
          if (!json_checked::get_float(e, &f)) return bad();
          fs.push_back(f);
        }
        out.set(spec->name, fs);
        break;
      }
      case AttrType::kInts: {
        if (!v.is_array()) return bad();
        std::vector<int64_t> is;
        for (auto& e : v) { if (!e.is_number_integer()) return bad(); is.push_back(e.get<int64_t>()); }
        out.set(spec->name, is);
        break;
      }
      case AttrType::kStrings: {
        if (!v.is_array()) return bad();
        std::vector<std::string> ss;
        for (auto& e : v) { if (!e.is_string()) return bad(); ss.push_back(e.get<std::string>()); }
        out.set(spec->name, ss);
        break;
      }
      default:
        return bad();
    }
  }
  return out;
}

// Names end up in JSON (graft inspect --json, the plan's profiles and tactics) and must survive a
// plan round trip unchanged, so they must be valid UTF-8 (ONNX's own checker requires it too).
// Checked once here, with an error naming where the name is, instead of a JSON exception later.
Status check_names_utf8(const onnx::GraphProto& gp) {
  auto bad = [](const std::string& what, const std::string& name) {
    std::string shown;  // printable ASCII kept, every other byte as \xHH, so the message is one clean line
    for (unsigned char c : name) {
      if (c >= 0x20 && c < 0x7F) {
        shown += static_cast<char>(c);
      } else {
        static const char* hex = "0123456789abcdef";
        shown += "\\x";
        shown += hex[c >> 4];
        shown += hex[c & 15];
      }
    }
    return error(StatusCode::kInvalidModel, what, " '", shown, "' is not valid UTF-8 (ONNX names must be UTF-8)");
  };
  for (const auto& t : gp.initializer())
    if (!is_valid_utf8(t.name())) return bad("initializer name", t.name());
  for (const auto& v : gp.input())
    if (!is_valid_utf8(v.name())) return bad("graph input name", v.name());
  for (const auto& v : gp.output())
    if (!is_valid_utf8(v.name())) return bad("graph output name", v.name());
  int index = 0;
  for (const auto& np : gp.node()) {
    const std::string node = "node " + std::to_string(index++);
    if (!is_valid_utf8(np.name())) return bad(node + ": node name", np.name());
    auto named = [&](const std::string& what) {
      return node + (np.name().empty() ? std::string() : " ('" + np.name() + "')") + ": " + what;
    };
    if (!is_valid_utf8(np.op_type())) return bad(named("op_type"), np.op_type());
    if (!is_valid_utf8(np.domain())) return bad(named("domain"), np.domain());
    for (const auto& in : np.input())
      if (!is_valid_utf8(in)) return bad(named("input name"), in);
    for (const auto& out : np.output())
      if (!is_valid_utf8(out)) return bad(named("output name"), out);
    for (const auto& a : np.attribute())
      if (!is_valid_utf8(a.name())) return bad(named("attribute name"), a.name());
  }
  return Status::ok();
}

std::string string_attr_or(const AttributeMap& a, const std::string& name, const std::string& def) {
  if (const AttrValue* v = a.find(name))
    if (attr_type_of(*v) == AttrType::kString) return std::get<std::string>(*v);
  return def;
}

// Initializers are constants, even when also listed as graph inputs.
Status import_initializers(const onnx::GraphProto& gp, Graph* g, const std::string& base_dir) {
  for (const auto& init : gp.initializer()) {
    if (init.name().empty()) return error(StatusCode::kInvalidModel, "an initializer has no name");
    if (g->find_value(init.name()))
      return error(StatusCode::kInvalidModel, "initializer '", init.name(), "' is defined twice");
    auto t = tensor_from_proto(init, base_dir);
    if (!t) return std::move(t).take_status();
    Value* v = g->add_value(init.name());
    v->desc = TensorDesc(t->dtype(), shape_from_values(t->dims()));
    v->constant = std::move(t).value();
  }
  return Status::ok();
}

// The graphs around a subgraph, innermost first; ONNX lets a subgraph read any name they define.
struct OuterScope {
  const std::unordered_set<std::string>* names = nullptr;
  const OuterScope* parent = nullptr;
  bool defines(const std::string& name) const {
    for (const OuterScope* s = this; s; s = s->parent)
      if (s->names->count(name)) return true;
    return false;
  }
};

Status import_nodes(const onnx::GraphProto& gp, Graph* g, const std::string& base_dir, const OuterScope* outer,
                    std::vector<std::string>* unsupported);

// A graph-valued attribute (If's branches, Loop's and Scan's body) as a graft Graph. A name the
// subgraph reads but does not define must be defined by an enclosing graph: it becomes a captured
// value (Graph::captures), bound at run time to the owning node's implicit input of that name.
Result<std::shared_ptr<Graph>> import_subgraph(const onnx::GraphProto& gp, const Graph& parent,
                                               const std::string& base_dir, const OuterScope& outer,
                                               std::vector<std::string>* unsupported) {
  GRAFT_RETURN_IF_ERROR(check_names_utf8(gp));
  auto g = std::make_shared<Graph>();
  g->name = gp.name();
  g->source_path = parent.source_path;
  g->ir_version = parent.ir_version;
  g->opset_imports = parent.opset_imports;
  GRAFT_RETURN_IF_ERROR(import_initializers(gp, g.get(), base_dir));
  for (const auto& in : gp.input()) {
    Value* existing = g->find_value(in.name());
    if (existing && existing->constant) continue;
    if (existing) return error(StatusCode::kInvalidModel, "subgraph input '", in.name(), "' is listed twice");
    Value* v = g->add_value(in.name());
    // A body's input types may be left out (the node's inputs give them); a declared one is kept
    // so that inference can check it against what the node passes in.
    if (in.has_type()) {
      auto d = desc_from_type(in.type(), in.name());
      if (!d) return std::move(d).take_status();
      v->desc = std::move(d).value();
    }
    v->is_graph_input = true;
    g->inputs().push_back(v);
  }
  GRAFT_RETURN_IF_ERROR(import_nodes(gp, g.get(), base_dir, &outer, unsupported));
  for (const auto& out : gp.output()) {
    Value* v = g->add_value(out.name());
    if (v->is_graph_output)
      return error(StatusCode::kInvalidModel, "subgraph output '", out.name(), "' is listed twice");
    v->is_graph_output = true;
    g->outputs().push_back(v);
  }
  // What nothing here defines is read from outside (in name order, so the binding is deterministic).
  for (const auto& [name, v] : g->values()) {
    if (v->producer || v->constant || v->is_graph_input) continue;
    if (!outer.defines(name))
      return error(StatusCode::kInvalidModel, "subgraph '", gp.name(), "' reads '", name,
                   "', which neither it nor an enclosing graph defines");
    v->is_captured = true;
    g->captures.push_back(v.get());
  }
  GRAFT_RETURN_IF_ERROR(g->topological_sort());
  g->prune_values();
  return g;
}

// A node's graph-valued attributes become Node::subgraphs; the union of what they capture becomes
// the node's implicit inputs (so topological order, liveness and dead-node elimination see them),
// and every subgraph gets a stand-in for each, in the same order.
Status import_subgraph_attributes(const onnx::NodeProto& np, Node* n, Graph* g, const std::string& base_dir,
                                  const OuterScope& scope, std::vector<std::string>* unsupported) {
  using A = onnx::AttributeProto;
  for (const auto& ap : np.attribute()) {
    const bool graph_typed = ap.type() == A::GRAPH || (ap.type() == A::UNDEFINED && ap.has_g());
    if (!graph_typed) continue;
    // Only control flow runs subgraphs; one on any other node would be silently ignored.
    const bool known = np.domain().empty() &&
                       ((np.op_type() == "If" && (ap.name() == "then_branch" || ap.name() == "else_branch")) ||
                        ((np.op_type() == "Loop" || np.op_type() == "Scan" || np.op_type() == "SequenceMap") &&
                         ap.name() == "body"));
    if (!known)
      return error(StatusCode::kUnsupported, "graph attribute '", ap.name(), "' is not one graft runs (If: ",
                   "then_branch, else_branch; Loop, Scan and SequenceMap: body)")
          .with_attribute(ap.name());
    auto sub = import_subgraph(ap.g(), *g, base_dir, scope, unsupported);
    if (!sub) return std::move(sub).take_status().with_attribute(ap.name());
    n->subgraphs[ap.name()] = std::move(sub).value();
  }
  if (n->subgraphs.empty()) return Status::ok();
  std::set<std::string> outer_names;
  for (const auto& [attr, sub] : n->subgraphs)
    for (const Value* c : sub->captures) outer_names.insert(c->name);
  for (const auto& [attr, sub] : n->subgraphs) {
    std::vector<Value*> captures;
    for (const std::string& name : outer_names) {
      Value* c = sub->add_value(name);  // one it does not read is a stand-in nothing uses
      c->is_captured = true;
      captures.push_back(c);
    }
    sub->captures = std::move(captures);
  }
  for (const std::string& name : outer_names) n->inputs.push_back(g->add_value(name));
  n->implicit_inputs = outer_names.size();
  return Status::ok();
}

// Seed-style JSON parameter input, then attribute validation, for the custom nodes of `g`.
Status finish_custom_nodes(Graph* g) {
  for (auto& up : g->nodes()) {
    Node* n = up.get();
    if (!n->custom_op) continue;
    const OpDef& def = *n->custom_op;
    if (n->inputs.size() == def.inputs().size() + 1 && n->inputs.back() && n->inputs.back()->constant &&
        dtype_is_integer(n->inputs.back()->constant->dtype())) {
      auto json_attrs = attrs_from_json_codes(*n->inputs.back()->constant, def);
      if (!json_attrs) return std::move(json_attrs).take_status().with_node(n->name, n->op_type);
      for (const auto& [k, v] : json_attrs->all()) {
        if (!n->attrs.has(k)) n->attrs.set(k, v);
      }
      n->inputs.pop_back();
    }
    if (n->inputs.size() > def.inputs().size())
      return error(StatusCode::kInvalidModel, def.name(), " takes at most ",
                   static_cast<uint64_t>(def.inputs().size()), " inputs, the node has ",
                   static_cast<uint64_t>(n->inputs.size()))
          .with_node(n->name, n->op_type);
    // A plan's node the CUDA builder kept channels-last carries graft's marker (models cannot:
    // refuse_internal_ops): it is no attribute of the op, so it stays out of the validation.
    std::optional<AttrValue> marker;
    if (const AttrValue* v = n->attrs.find(kChannelsLastIoAttr); v && def.supports_channels_last_io()) {
      marker = *v;
      n->attrs.erase(kChannelsLastIoAttr);
    }
    Status st = def.validate_attributes(n->attrs);
    if (!st) return st.with_node(n->name, n->op_type);
    if (marker) n->attrs.set(kChannelsLastIoAttr, *marker);
  }
  return Status::ok();
}

// The nodes of `gp` (and, recursively, their subgraphs) into `g`. `outer` is the scope around `g`
// (nullptr for the model's main graph). Nodes no op implements are added to `unsupported`.
Status import_nodes(const onnx::GraphProto& gp, Graph* g, const std::string& base_dir, const OuterScope* outer,
                    std::vector<std::string>* unsupported_out) {
  const std::unordered_set<std::string> here = names_defined_in(gp);
  const OuterScope scope{&here, outer};
  const int64_t opset = g->opset_imports.at("");
  std::set<std::string> node_names;
  std::vector<std::string>& unsupported = *unsupported_out;
  int index = 0;
  for (const auto& np : gp.node()) {
    std::string name = np.name().empty() ? np.op_type() + "_" + std::to_string(index) : np.name();
    while (node_names.count(name)) name += "_" + std::to_string(index);
    node_names.insert(name);
    ++index;
    std::string domain = np.domain() == "ai.onnx" ? "" : np.domain();

    // Output names must be unique across the graph.
    for (const auto& out : np.output()) {
      if (out.empty()) continue;
      Value* v = g->find_value(out);
      if (v && (v->producer || v->constant || v->is_graph_input))
        return error(StatusCode::kInvalidModel, "output name '", out,
                          "' is produced more than once (or is also a graph input or initializer)")
                        .with_node(name, np.op_type());
    }

    if (domain.empty() && np.op_type() == "Constant") {
      if (np.output_size() != 1)
        return error(StatusCode::kInvalidModel, "Constant must have one output").with_node(name, np.op_type());
      auto t = constant_node_value(np, base_dir);
      if (!t) return std::move(t).take_status().with_node(name, np.op_type());
      Value* v = g->add_value(np.output(0));
      v->desc = TensorDesc(t->dtype(), shape_from_values(t->dims()));
      v->constant = std::move(t).value();
      continue;
    }

    Node* n = g->add_node(name, np.op_type(), domain);
    // An internal op's semantics are those of the ONNX ops it was made from: it keeps the default
    // domain's opset (its own domain has one version).
    auto git = g->opset_imports.find(domain == kInternalDomain ? std::string() : domain);
    n->opset = static_cast<int>(git == g->opset_imports.end() ? 1 : git->second);
    for (const auto& ap : np.attribute()) {
      if (ap.type() == onnx::AttributeProto::GRAPH || (ap.type() == onnx::AttributeProto::UNDEFINED && ap.has_g()))
        continue;  // import_subgraph_attributes, once the explicit inputs are in place
      auto v = attribute_from_proto(ap, base_dir);
      if (!v) return std::move(v).take_status().with_attribute(ap.name()).with_node(name, np.op_type());
      n->attrs.set(ap.name(), std::move(v).value());
    }
    for (const auto& in : np.input()) {
      if (in.empty()) { n->inputs.push_back(nullptr); continue; }
      n->inputs.push_back(g->add_value(in));
    }
    for (const auto& out : np.output()) {
      if (out.empty()) { n->outputs.push_back(nullptr); continue; }
      Value* v = g->add_value(out);
      v->producer = n;
      n->outputs.push_back(v);
    }
    if (Status st = import_subgraph_attributes(np, n, g, base_dir, scope, unsupported_out); !st)
      return st.with_node(name, np.op_type());

    // Resolve the op: the builtin table for the default and internal domains, then the custom-op
    // registry.
    const OpEntry* builtin = find_builtin_op(domain, np.op_type());
    if (builtin && builtin->min_opset <= opset) {
      // Its kernels write output 0 (ONNX's schemas require it of every op but the recurrent ones).
      if (!builtin->first_output_optional && (np.output_size() == 0 || np.output(0).empty()))
        return error(StatusCode::kInvalidModel, "the node has no output 0, which ", np.op_type(), " always has")
            .with_node(name, np.op_type());
      continue;
    }
    if (domain == kInternalDomain) {
      unsupported.push_back("'" + name + "' (" + domain + "::" + np.op_type() + "): no internal op of that name");
      continue;
    }
    std::string version = string_attr_or(n->attrs, "plugin_version", "1");
    std::string ns = string_attr_or(n->attrs, "plugin_namespace", "");
    auto found = OpRegistry::global().find(domain, np.op_type(), version, ns);
    if (!found) {
      std::string why;
      if (builtin)
        why = "needs opset >= " + std::to_string(builtin->min_opset) + ", model has " + std::to_string(opset);
      else if (domain.empty())
        why = "no builtin op of that name";
      else
        why = found.status().message();
      unsupported.push_back("'" + name + "' (" + (domain.empty() ? "" : domain + "::") + np.op_type() + "): " + why);
      continue;
    }
    n->custom_op = found.value();
  }
  return finish_custom_nodes(g);
}

}  // namespace

Result<TensorDesc> desc_from_type(const onnx::TypeProto& tp, const std::string& value_name) {
  TensorDesc d;
  // Containers: sequence(tensor), optional(tensor), optional(sequence(tensor)). The desc keeps the
  // kind and describes the tensors inside.
  const onnx::TypeProto* inner = &tp;
  ValueKind kind = ValueKind::kTensor;
  if (inner->has_optional_type()) {
    if (!inner->optional_type().has_elem_type())
      return error(StatusCode::kInvalidModel, "value '", value_name, "' is an optional with no element type");
    inner = &inner->optional_type().elem_type();
    kind = inner->has_sequence_type() ? ValueKind::kOptionalSequence : ValueKind::kOptionalTensor;
  }
  if (inner->has_sequence_type()) {
    if (!inner->sequence_type().has_elem_type())
      return error(StatusCode::kInvalidModel, "value '", value_name, "' is a sequence with no element type");
    inner = &inner->sequence_type().elem_type();
    if (kind == ValueKind::kTensor) kind = ValueKind::kSequence;
  }
  if (!inner->has_tensor_type())
    return error(StatusCode::kUnsupported, "value '", value_name, "' is not a tensor, a sequence of tensors or an ",
                 "optional of either (maps, sparse tensors and nested sequences are not supported)");
  d.kind = kind;
  const auto& tt = inner->tensor_type();
  if (tt.elem_type() != 0 && !dtype_from_onnx(tt.elem_type(), &d.dtype))
    return error(StatusCode::kUnsupported, "value '", value_name, "' has ONNX element type ",
                 static_cast<int64_t>(tt.elem_type()), ", which graft does not support");
  if (tt.has_shape()) {
    if (tt.shape().dim_size() > kMaxRank)
      return error(StatusCode::kInvalidModel, "value '", value_name, "' is declared with rank ",
                   static_cast<int64_t>(tt.shape().dim_size()), ", more than graft's limit of ", kMaxRank);
    Shape s;
    int i = 0;
    for (const auto& dim : tt.shape().dim()) {
      if (dim.has_dim_value() && dim.dim_value() >= 0) s.push_back(Dim(static_cast<int64_t>(dim.dim_value())));
      else if (dim.has_dim_param() && !dim.dim_param().empty()) s.push_back(Dim::symbol(dim.dim_param()));
      else s.push_back(Dim::symbol(value_name + "__dim" + std::to_string(i)));
      ++i;
    }
    d.shape = std::move(s);
  }
  return d;
}

Result<std::unique_ptr<Graph>> import_onnx_model(const onnx::ModelProto& model,
                                                 const std::string& name_for_errors,
                                                 const std::string& base_dir) {
  auto fail = [&](Status st) { return st.with_file(name_for_errors); };
  if (!model.has_graph())
    return fail(error(StatusCode::kInvalidModel, "not an ONNX model: it has no graph"));
  if (model.ir_version() < kMinIrVersion || model.ir_version() > kMaxIrVersion)
    return fail(error(StatusCode::kUnsupported, "ONNX IR version ", static_cast<int64_t>(model.ir_version()),
                      " is not supported (graft supports IR versions ", kMinIrVersion, " to ",
                      kMaxIrVersion, ")"));
  if (needs_opset_conversion(model)) {  // opsets 1..kMinOpset-1: converted, then read as usual
    onnx::ModelProto converted;
    if (Status st = convert_to_supported_opset(model, &converted); !st) return fail(st);
    return import_onnx_model(converted, name_for_errors, base_dir);
  }
  if (has_deform_conv(model)) {  // ONNX's DeformConv: graft's ModulatedDeformConv2d (deform_conv_rewrite.h)
    onnx::ModelProto rewritten;
    if (Status st = rewrite_deform_conv(model, &rewritten); !st) return fail(st);
    return import_onnx_model(rewritten, name_for_errors, base_dir);
  }
  auto g = std::make_unique<Graph>();
  g->source_path = name_for_errors;
  g->ir_version = model.ir_version();
  g->producer_name = model.producer_name();
  g->name = model.graph().name();
  for (const auto& os : model.opset_import()) {
    std::string d = os.domain() == "ai.onnx" ? "" : os.domain();
    g->opset_imports[d] = os.version();
  }
  auto it = g->opset_imports.find("");
  if (it == g->opset_imports.end())
    return fail(error(StatusCode::kInvalidModel, "the model imports no default-domain (ai.onnx) opset"));
  const int64_t opset = it->second;
  if (opset < kMinOpset || opset > kMaxOpset)
    return fail(error(StatusCode::kUnsupported, "default-domain opset ", opset,
                      " is not supported (graft supports opsets 1 to ", kMaxOpset, "; those before ", kMinOpset,
                      " are converted to ", kMinOpset, " on import)"));

  GRAFT_RETURN_IF_ERROR(register_graft_ops(OpRegistry::global()));
  const onnx::GraphProto& gp = model.graph();
  if (Status st = check_names_utf8(gp); !st) return fail(st);

  if (Status st = import_initializers(gp, g.get(), base_dir); !st) return fail(st);
  for (const auto& in : gp.input()) {
    Value* existing = g->find_value(in.name());
    if (existing && existing->constant) continue;  // initializer: a constant with a default
    if (existing)
      return fail(error(StatusCode::kInvalidModel, "graph input '", in.name(), "' is listed twice"));
    auto d = desc_from_type(in.type(), in.name());
    if (!d) return fail(std::move(d).take_status());
    if (d->dtype == DataType::kUndefined)
      return fail(error(StatusCode::kInvalidModel, "graph input '", in.name(), "' has no element type"));
    if (!d->is_tensor()) {  // a sequence's or optional's tensors may have any shape: no profile
      Value* v = g->add_value(in.name());
      v->desc = std::move(d).value();
      v->is_graph_input = true;
      g->inputs().push_back(v);
      continue;
    }
    if (!d->shape)
      return fail(error(StatusCode::kUnsupported, "graph input '", in.name(), "' has no shape (unknown rank)"));
    {
      // The fixed part of an input's shape must have an element and byte count that fit in int64,
      // or every size computed from it later would wrap.
      int64_t numel = 1, bytes = 0;
      bool overflow = false;
      for (const Dim& dim : *d->shape)
        if (dim.is_const()) overflow = overflow || !checked_mul(numel, dim.value(), &numel);
      if (overflow || !checked_mul(numel, static_cast<int64_t>(std::max<size_t>(dtype_size(d->dtype), 1)), &bytes))
        return fail(error(StatusCode::kInvalidModel, "graph input '", in.name(), "' has shape ",
                          shape_to_string(*d->shape), ", more elements or bytes than fit in a 64-bit integer"));
    }
    Value* v = g->add_value(in.name());
    v->desc = std::move(d).value();
    v->is_graph_input = true;
    g->inputs().push_back(v);
  }

  std::vector<std::string> unsupported;
  if (Status st = import_nodes(gp, g.get(), base_dir, nullptr, &unsupported); !st) return fail(st);
  if (!unsupported.empty()) {
    std::string msg = std::to_string(unsupported.size()) + " unsupported node" +
                      (unsupported.size() > 1 ? "s" : "") + ":";
    for (const auto& u : unsupported) msg += "\n  " + u;
    return fail(Status(StatusCode::kUnsupported, msg));
  }

  // value_info: what the exporter knew about intermediates (shape inference refines it).
  for (const auto& vi : gp.value_info()) {
    Value* v = g->find_value(vi.name());
    if (!v || v->constant || v->is_graph_input) continue;
    auto d = desc_from_type(vi.type(), vi.name());
    if (d) v->desc = std::move(d).value();
  }

  // Every node input must come from somewhere.
  for (auto& up : g->nodes()) {
    for (Value* v : up->inputs) {
      if (v && !v->producer && !v->constant && !v->is_graph_input)
        return fail(error(StatusCode::kInvalidModel, "input '", v->name,
                          "' is not produced by any node, is not a graph input and has no initializer")
                        .with_node(up->name, up->op_type));
    }
  }

  for (const auto& out : gp.output()) {
    Value* v = g->find_value(out.name());
    if (!v || (!v->producer && !v->constant && !v->is_graph_input))
      return fail(error(StatusCode::kInvalidModel, "graph output '", out.name(), "' is not produced by any node"));
    if (v->is_graph_output)
      return fail(error(StatusCode::kInvalidModel, "graph output '", out.name(), "' is listed twice"));
    if (out.has_type()) {
      auto d = desc_from_type(out.type(), out.name());
      if (!d) return fail(std::move(d).take_status());
      if (!v->constant && !v->is_graph_input) v->desc = std::move(d).value();
    }
    v->is_graph_output = true;
    g->outputs().push_back(v);
  }
  if (g->outputs().empty()) return fail(error(StatusCode::kInvalidModel, "the graph has no outputs"));

  Status st = g->topological_sort();
  if (!st) return fail(st);
  g->prune_values();
  return g;
}

namespace {

// graft's internal ops (GraftConv, GraftGemm, ...; ops/internal_ops.h) are made only by its passes
// and kept in plans, whose graphs come back through import_onnx_model. A user's model that names
// their domain is refused here, at the entry points for models, so no model reaches graft's fused
// forms with attributes the passes did not set. (A default-domain node of such a name is just an
// unknown ONNX op.)
Status refuse_internal_ops(const onnx::GraphProto& gp, int depth = 0) {
  if (depth > 64) return Status::ok();  // deeper nesting is the importer's own error
  for (const auto& np : gp.node()) {
    if (np.domain() == kInternalDomain)
      return error(StatusCode::kUnsupported, "'", np.op_type(), "' is in domain ", kInternalDomain,
                   ", graft's internal ops (made by its optimization passes, kept in plans): a model cannot use it")
          .with_node(np.name(), np.op_type());
    for (const auto& a : np.attribute()) {
      if (a.name() == kChannelsLastIoAttr)
        return error(StatusCode::kUnsupported, "attribute '", kChannelsLastIoAttr,
                     "' is graft's own marker (set by its CUDA builder, kept in plans): a model cannot use it")
            .with_node(np.name(), np.op_type())
            .with_attribute(kChannelsLastIoAttr);
      if (a.has_g()) GRAFT_RETURN_IF_ERROR(refuse_internal_ops(a.g(), depth + 1));
      for (const auto& sub : a.graphs()) GRAFT_RETURN_IF_ERROR(refuse_internal_ops(sub, depth + 1));
    }
  }
  return Status::ok();
}

// What a user's model must meet before it is read, beyond what reading it checks: no internal ops,
// and only the attributes each default-domain op's schema has (at the model's own opset, before any
// conversion).
Status check_user_model(const onnx::ModelProto& model) {
  GRAFT_RETURN_IF_ERROR(refuse_internal_ops(model.graph()));
  for (const auto& os : model.opset_import())
    if (os.domain().empty() || os.domain() == "ai.onnx")
      return check_attribute_names(model.graph(), static_cast<int>(std::clamp<int64_t>(os.version(), 0, 1 << 20)));
  return Status::ok();  // no default-domain opset: import_onnx_model refuses it
}

}  // namespace

Result<std::unique_ptr<Graph>> import_onnx_bytes(const std::string& bytes, const std::string& name_for_errors,
                                                 const std::string& base_dir) {
  onnx::ModelProto model;
  if (bytes.empty())
    return error(StatusCode::kInvalidModel, "the file is empty, not an ONNX model").with_file(name_for_errors);
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    return error(StatusCode::kUnsupported, "models over 2 GiB must keep their weights in external data")
        .with_file(name_for_errors);
  if (!model.ParseFromString(bytes))
    return error(StatusCode::kInvalidModel,
                 "not a valid ONNX model: protobuf parsing failed (not protobuf, or truncated)")
        .with_file(name_for_errors);
  std::string dir = base_dir;
  if (dir.empty()) {
    dir = fs::path(name_for_errors).parent_path().string();
    if (dir.empty()) dir = ".";
  }
  if (!model.has_graph() && model.ir_version() == 0)
    return error(StatusCode::kInvalidModel, "not an ONNX model (no ir_version and no graph)").with_file(name_for_errors);
  if (Status st = check_user_model(model); !st) return st.with_file(name_for_errors);
  return import_onnx_model(model, name_for_errors, dir);
}

Result<std::unique_ptr<Graph>> import_onnx_file(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return error(StatusCode::kNotFound, "file not found").with_file(path);
  const auto size = fs::file_size(path, ec);
  if (ec || size == 0 || size > static_cast<uintmax_t>(std::numeric_limits<int>::max())) {
    // Empty, oversized or unreadable: the byte path gives each case its message.
    auto bytes = read_file(path);
    if (!bytes) return std::move(bytes).take_status();
    return import_onnx_bytes(bytes.value(), path, "");
  }
  // Parsed straight from the file: a model's weights are copied once (into the protobuf), not
  // first into a buffer of the whole file.
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return error(StatusCode::kIoError, "cannot open file: ", std::strerror(errno)).with_file(path);
  onnx::ModelProto model;
  bool parsed = false;
  {
    google::protobuf::io::FileInputStream stream(fd);
    parsed = model.ParseFromZeroCopyStream(&stream);
  }
  ::close(fd);
  if (!parsed)
    return error(StatusCode::kInvalidModel, "not a valid ONNX model: protobuf parsing failed (not protobuf, or truncated)")
        .with_file(path);
  if (!model.has_graph() && model.ir_version() == 0)
    return error(StatusCode::kInvalidModel, "not an ONNX model (no ir_version and no graph)").with_file(path);
  if (Status st = check_user_model(model); !st) return st.with_file(path);
  std::string dir = fs::path(path).parent_path().string();
  return import_onnx_model(model, path, dir.empty() ? "." : dir);
}

}  // namespace graft
