#include "trt_common.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

#include "graft/dtype.h"

namespace graft::trt {

using nvinfer1::DataType;
namespace gd = graft;

std::optional<nvinfer1::DataType> to_trt(gd::DataType t) {
  switch (t) {
    case gd::DataType::kFloat32: return DataType::kFLOAT;
    case gd::DataType::kFloat16: return DataType::kHALF;
    case gd::DataType::kInt8: return DataType::kINT8;
    case gd::DataType::kInt32: return DataType::kINT32;
    case gd::DataType::kBool: return DataType::kBOOL;
    case gd::DataType::kUInt8: return DataType::kUINT8;
#if NV_TENSORRT_MAJOR >= 9
    case gd::DataType::kBFloat16: return DataType::kBF16;
#endif
#if NV_TENSORRT_MAJOR >= 10
    case gd::DataType::kInt64: return DataType::kINT64;
#endif
    default: return std::nullopt;
  }
}

std::optional<gd::DataType> from_trt(nvinfer1::DataType t) {
  switch (t) {
    case DataType::kFLOAT: return gd::DataType::kFloat32;
    case DataType::kHALF: return gd::DataType::kFloat16;
    case DataType::kINT8: return gd::DataType::kInt8;
    case DataType::kINT32: return gd::DataType::kInt32;
    case DataType::kBOOL: return gd::DataType::kBool;
    case DataType::kUINT8: return gd::DataType::kUInt8;
#if NV_TENSORRT_MAJOR >= 9
    case DataType::kBF16: return gd::DataType::kBFloat16;
#endif
#if NV_TENSORRT_MAJOR >= 10
    case DataType::kINT64: return gd::DataType::kInt64;
#endif
    default: return std::nullopt;
  }
}

// ---- expressions ----------------------------------------------------------------------------
namespace {
nvinfer1::DimensionOperation to_trt_op(DimOp op) {
  using O = nvinfer1::DimensionOperation;
  switch (op) {
    case DimOp::kSum: return O::kSUM;
    case DimOp::kProd: return O::kPROD;
    case DimOp::kMax: return O::kMAX;
    case DimOp::kMin: return O::kMIN;
    case DimOp::kSub: return O::kSUB;
    case DimOp::kEqual: return O::kEQUAL;
    case DimOp::kLess: return O::kLESS;
    case DimOp::kFloorDiv: return O::kFLOOR_DIV;
    case DimOp::kCeilDiv: return O::kCEIL_DIV;
  }
  return O::kSUM;
}
}  // namespace

const void* ExprBridge::constant(int64_t v) { return builder_.constant(static_cast<DimValue>(v)); }
const void* ExprBridge::operation(DimOp op, const void* a, const void* b) {
  return builder_.operation(to_trt_op(op), *static_cast<const nvinfer1::IDimensionExpr*>(a),
                            *static_cast<const nvinfer1::IDimensionExpr*>(b));
}
std::optional<int64_t> ExprBridge::constant_value(const void* e) {
  auto* d = static_cast<const nvinfer1::IDimensionExpr*>(e);
  if (d->isConstant()) return static_cast<int64_t>(d->getConstantValue());
  return std::nullopt;
}

Status shapes_from_exprs(const OpDef& def, const AttributeMap& attrs, const nvinfer1::DimsExprs* inputs,
                         int32_t nb_inputs, nvinfer1::IExprBuilder& builder,
                         std::vector<nvinfer1::DimsExprs>& outputs) {
  ExprBridge bridge(builder);
  std::vector<std::optional<std::vector<const void*>>> ins;
  for (int32_t i = 0; i < nb_inputs; ++i) {
    std::vector<const void*> dims;
    for (int32_t d = 0; d < inputs[i].nbDims; ++d) dims.push_back(inputs[i].d[d]);
    ins.emplace_back(std::move(dims));
  }
  ShapeContext ctx(&bridge, &attrs, std::move(ins), static_cast<int>(def.outputs().size()));
  GRAFT_RETURN_IF_ERROR(def.infer_shapes(ctx));
  outputs.clear();
  for (auto& o : ctx.outputs()) {
    nvinfer1::DimsExprs e{};
    if (o->size() > static_cast<size_t>(nvinfer1::Dims::MAX_DIMS))
      return error(StatusCode::kUnsupported, "output rank ", static_cast<int64_t>(o->size()),
                   " exceeds TensorRT's maximum of ", static_cast<int64_t>(nvinfer1::Dims::MAX_DIMS));
    e.nbDims = static_cast<int32_t>(o->size());
    for (size_t d = 0; d < o->size(); ++d) e.d[d] = static_cast<const nvinfer1::IDimensionExpr*>((*o)[d]);
    outputs.push_back(e);
  }
  return Status::ok();
}

// ---- fields ---------------------------------------------------------------------------------
FieldList::FieldList(const OpDef& def) {
  names_.reserve(def.attrs().size());
  for (auto& a : def.attrs()) names_.push_back(a.name);
  for (size_t i = 0; i < def.attrs().size(); ++i) {
    nvinfer1::PluginFieldType t = nvinfer1::PluginFieldType::kUNKNOWN;
    int32_t len = 1;
    switch (def.attrs()[i].type) {
      case AttrType::kFloat: t = nvinfer1::PluginFieldType::kFLOAT32; break;
      case AttrType::kFloats: t = nvinfer1::PluginFieldType::kFLOAT32; len = 0; break;
      case AttrType::kInt: t = nvinfer1::PluginFieldType::kINT32; break;
      case AttrType::kInts: t = nvinfer1::PluginFieldType::kINT32; len = 0; break;
      case AttrType::kString: t = nvinfer1::PluginFieldType::kCHAR; len = 0; break;
      default: t = nvinfer1::PluginFieldType::kUNKNOWN; len = 0; break;
    }
    fields_.emplace_back(names_[i].c_str(), nullptr, t, len);
  }
  collection_.nbFields = static_cast<int32_t>(fields_.size());
  collection_.fields = fields_.data();
}

namespace {
Status field_error(const std::string& field, const std::string& msg) {
  Status st(StatusCode::kInvalidArgument, msg);
  st.with_attribute(field);
  return st;
}

const char* field_type_name(nvinfer1::PluginFieldType t) {
  using T = nvinfer1::PluginFieldType;
  switch (t) {
    case T::kFLOAT16: return "kFLOAT16";
    case T::kFLOAT32: return "kFLOAT32";
    case T::kFLOAT64: return "kFLOAT64";
    case T::kINT8: return "kINT8";
    case T::kINT16: return "kINT16";
    case T::kINT32: return "kINT32";
    case T::kCHAR: return "kCHAR";
#if NV_TENSORRT_MAJOR >= 10
    case T::kINT64: return "kINT64";
#endif
    default: return "other";
  }
}

// Numbers of a field as double (exact for int32/int64 within 2^53, and for float32/float16).
Result<std::vector<double>> numbers(const nvinfer1::PluginField& f) {
  using T = nvinfer1::PluginFieldType;
  std::vector<double> v;
  if (f.length < 0 || (f.length > 0 && !f.data)) return field_error(f.name, "field has no data");
  for (int32_t i = 0; i < f.length; ++i) {
    switch (f.type) {
      case T::kFLOAT32: v.push_back(static_cast<const float*>(f.data)[i]); break;
      case T::kFLOAT64: v.push_back(static_cast<const double*>(f.data)[i]); break;
      case T::kFLOAT16: v.push_back(half_to_float(static_cast<const uint16_t*>(f.data)[i])); break;
      case T::kINT32: v.push_back(static_cast<const int32_t*>(f.data)[i]); break;
      case T::kINT16: v.push_back(static_cast<const int16_t*>(f.data)[i]); break;
      case T::kINT8: v.push_back(static_cast<const int8_t*>(f.data)[i]); break;
#if NV_TENSORRT_MAJOR >= 10
      case T::kINT64: v.push_back(static_cast<double>(static_cast<const int64_t*>(f.data)[i])); break;
#endif
      default: return field_error(f.name, std::string("field type ") + field_type_name(f.type) + " is not numeric");
    }
  }
  return v;
}
bool is_int_field(nvinfer1::PluginFieldType t) {
  using T = nvinfer1::PluginFieldType;
#if NV_TENSORRT_MAJOR >= 10
  if (t == T::kINT64) return true;
#endif
  return t == T::kINT32 || t == T::kINT16 || t == T::kINT8;
}
}  // namespace

Result<AttributeMap> attributes_from_fields(const OpDef& def, const nvinfer1::PluginFieldCollection* fc) {
  AttributeMap attrs;
  if (fc) {
    if (fc->nbFields < 0 || (fc->nbFields > 0 && !fc->fields))
      return error(StatusCode::kInvalidArgument, "malformed plugin field collection");
    // The serialized field carries every attribute exactly; when present it is the whole story.
    for (int32_t i = 0; i < fc->nbFields; ++i) {
      const auto& f = fc->fields[i];
      if (f.name && std::strcmp(f.name, kSerializedField) == 0) {
        if (f.type != nvinfer1::PluginFieldType::kCHAR || !f.data || f.length <= 0)
          return field_error(kSerializedField, "serialized attribute field is malformed");
        std::string text(static_cast<const char*>(f.data), static_cast<size_t>(f.length));
        while (!text.empty() && text.back() == '\0') text.pop_back();
        GRAFT_ASSIGN_OR_RETURN(attrs, deserialize_attributes(text));
        GRAFT_RETURN_IF_ERROR(def.validate_attributes(attrs));
        return attrs;
      }
    }
    for (int32_t i = 0; i < fc->nbFields; ++i) {
      const auto& f = fc->fields[i];
      if (!f.name) return error(StatusCode::kInvalidArgument, "plugin field ", static_cast<int64_t>(i), " has no name");
      std::string name = f.name;
      // The parser forwards these only if listed; tolerate them if a caller passes them anyway.
      if (name == "plugin_version" || name == "plugin_namespace") continue;
      const AttrSpec* spec = def.find_attr(name);
      if (!spec) {
        attrs.set(name, int64_t{0});  // let validate_attributes produce the "unknown attribute" error
        continue;
      }
      switch (spec->type) {
        case AttrType::kFloat:
        case AttrType::kInt: {
          GRAFT_ASSIGN_OR_RETURN(auto v, numbers(f));
          if (v.size() != 1)
            return field_error(name, "expected one value, got " + std::to_string(v.size()));
          if (spec->type == AttrType::kInt) {
            if (!is_int_field(f.type))
              return field_error(name, std::string("expected an integer field, got ") + field_type_name(f.type));
            attrs.set(name, static_cast<int64_t>(v[0]));
          } else {
            attrs.set(name, static_cast<float>(v[0]));
          }
          break;
        }
        case AttrType::kFloats:
        case AttrType::kInts: {
          GRAFT_ASSIGN_OR_RETURN(auto v, numbers(f));
          if (spec->type == AttrType::kInts) {
            if (!is_int_field(f.type))
              return field_error(name, std::string("expected an integer field, got ") + field_type_name(f.type));
            attrs.set(name, std::vector<int64_t>(v.begin(), v.end()));
          } else {
            attrs.set(name, std::vector<float>(v.begin(), v.end()));
          }
          break;
        }
        case AttrType::kString: {
          if (f.type != nvinfer1::PluginFieldType::kCHAR)
            return field_error(name, std::string("expected a kCHAR field, got ") + field_type_name(f.type));
          std::string s(static_cast<const char*>(f.data), f.data ? static_cast<size_t>(f.length) : 0);
          while (!s.empty() && s.back() == '\0') s.pop_back();
          attrs.set(name, s);
          break;
        }
        default:
          return field_error(name, std::string("attributes of type ") + attr_type_name(spec->type) +
                                       " cannot be passed as TensorRT plugin fields");
      }
    }
  }
  GRAFT_RETURN_IF_ERROR(def.validate_attributes(attrs));
  return attrs;
}

// ---- kernels --------------------------------------------------------------------------------
Result<KernelContext> kernel_context(const OpDef& def, const AttributeMap& attrs,
                                     const nvinfer1::PluginTensorDesc* in, int32_t nb_in,
                                     const nvinfer1::PluginTensorDesc* out, int32_t nb_out,
                                     const void* const* inputs, void* const* outputs, void* workspace,
                                     void* stream) {
  KernelContext ctx;
  ctx.attrs = &attrs;
  ctx.stream = stream;
  ctx.workspace = workspace;
  auto view = [](const nvinfer1::PluginTensorDesc& d, void* data) -> Result<TensorView> {
    auto t = from_trt(d.type);
    if (!t) return error(StatusCode::kUnsupported, "TensorRT dtype ", static_cast<int64_t>(d.type), " has no graft equivalent");
    TensorView v;
    v.data = data;
    v.dtype = *t;
    v.device = DeviceType::kCUDA;
    for (int32_t i = 0; i < d.dims.nbDims; ++i) v.dims.push_back(d.dims.d[i]);
    return v;
  };
  std::vector<ConcreteDesc> cin, cout;
  for (int32_t i = 0; i < nb_in; ++i) {
    GRAFT_ASSIGN_OR_RETURN(TensorView v, view(in[i], const_cast<void*>(inputs[i])));
    cin.push_back(ConcreteDesc{v.dtype, v.dims});
    ctx.inputs.push_back(std::move(v));
  }
  // Absent trailing optional inputs are passed as empty views.
  while (ctx.inputs.size() < def.inputs().size()) {
    ctx.inputs.push_back(TensorView{});
    cin.push_back(ConcreteDesc{});
  }
  for (int32_t i = 0; i < nb_out; ++i) {
    GRAFT_ASSIGN_OR_RETURN(TensorView v, view(out[i], outputs[i]));
    cout.push_back(ConcreteDesc{v.dtype, v.dims});
    ctx.outputs.push_back(std::move(v));
  }
  ctx.workspace_size = def.workspace_size(cin, cout, attrs);
  return ctx;
}

ConcreteDesc concrete_desc(nvinfer1::DataType type, const nvinfer1::Dims& dims) {
  ConcreteDesc c;
  c.dtype = from_trt(type).value_or(gd::DataType::kUndefined);
  for (int32_t i = 0; i < dims.nbDims; ++i) c.dims.push_back(dims.d[i]);
  return c;
}

size_t workspace_for(const OpDef& def, const AttributeMap& attrs, std::vector<ConcreteDesc> in,
                     const std::vector<ConcreteDesc>& out) {
  in.resize(def.inputs().size());
  return def.workspace_size(in, out, attrs);
}

bool supports_combination(const OpDef& def, int32_t pos, const nvinfer1::PluginTensorDesc* const* descs,
                          int32_t nb_inputs, int32_t nb_outputs) {
  if (pos < 0 || pos >= nb_inputs + nb_outputs) return false;
  if (descs[pos]->format != nvinfer1::TensorFormat::kLINEAR) return false;
  const size_t n_in = def.inputs().size();
  std::vector<gd::DataType> combo(n_in + def.outputs().size(), gd::DataType::kUndefined);
  for (int32_t i = 0; i <= pos; ++i) {
    auto t = from_trt(descs[i]->type);
    if (!t) return false;
    size_t slot = i < nb_inputs ? static_cast<size_t>(i) : n_in + static_cast<size_t>(i - nb_inputs);
    if (slot >= combo.size()) return false;
    combo[slot] = *t;
  }
  return def.supports(Backend::kCUDA, combo);
}

// ---- logging --------------------------------------------------------------------------------
namespace {
std::mutex g_log_mu;
nvinfer1::ILoggerFinder* g_finder = nullptr;
void log_at(nvinfer1::ILogger::Severity sev, const std::string& msg) noexcept {
  try {
    std::lock_guard<std::mutex> lock(g_log_mu);
    nvinfer1::ILogger* logger = g_finder ? g_finder->findLogger() : nullptr;
    if (logger) {
      logger->log(sev, msg.c_str());
    } else if (sev <= nvinfer1::ILogger::Severity::kWARNING) {
      std::fprintf(stderr, "[graft_tensorrt] %s\n", msg.c_str());
    }
  } catch (...) {
  }
}
}  // namespace

void set_logger_finder(nvinfer1::ILoggerFinder* finder) {
  std::lock_guard<std::mutex> lock(g_log_mu);
  g_finder = finder;
}
void log_error(const std::string& plugin, const std::string& message) noexcept {
  log_at(nvinfer1::ILogger::Severity::kERROR, "graft plugin " + plugin + ": " + message);
}
void log_info(const std::string& message) noexcept { log_at(nvinfer1::ILogger::Severity::kINFO, message); }

std::vector<AdaptedOp> adapted_ops() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (const char* libs = std::getenv("GRAFT_PLUGIN_LIBRARIES"))
      for (const Status& st : load_plugin_libraries(libs)) log_error("(library)", st.to_string());
  });
  // Ops graft defines under the name of a plugin TensorRT itself ships, for graft's own engine: a
  // creator of ours would shadow TensorRT's (same name, version and namespace).
  const OpRegistry& registry = OpRegistry::global();
  std::vector<AdaptedOp> out;
  const auto taken = [&out](const std::string& name, const OpIdentity& id) {
    for (const AdaptedOp& a : out)
      if (a.plugin_name == name && a.def->identity().version == id.version &&
          a.def->identity().plugin_namespace == id.plugin_namespace)
        return true;
    return false;
  };
  for (auto& r : registry.all())
    if (has_cuda_kernel(*r.def) && !is_tensorrt_own_plugin(r.def->name())) out.push_back({r.def, r.def->name()});
  for (const OpRegistry::Alias& a : registry.aliases()) {
    std::shared_ptr<const OpDef> def = registry.find_exact(a.target);
    if (def && has_cuda_kernel(*def) && !is_tensorrt_own_plugin(a.name) && !is_tensorrt_own_plugin(def->name()) &&
        !taken(a.name, def->identity()))
      out.push_back({def, a.name});
  }
  return out;
}

bool has_cuda_kernel(const OpDef& def) {
  for (const KernelEntry& k : def.kernels())
    if (k.backend == Backend::kCUDA) return true;
  return false;
}

}  // namespace graft::trt
