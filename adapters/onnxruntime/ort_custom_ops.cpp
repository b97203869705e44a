// ONNX Runtime custom-op adapter: libgraft_onnxruntime.so makes every op in graft's registry (and every
// alias) an ONNX Runtime custom op, so that a model graft exported (nodes in `ai.onnx.contrib`, or an
// alias domain such as mmdeploy's) runs in ONNX Runtime on the CPU execution provider and gives what
// graft's own engine gives: both run the op's one CPU kernel.
//
// Why the C API only: ONNX Runtime loads the library (SessionOptions.register_custom_ops_library /
// RegisterCustomOpsLibrary) and calls RegisterCustomOps with its OrtApiBase; every function is reached
// through that table, so the library links no libonnxruntime and works with any runtime whose API
// version is at least the header's (the C API only grows). The header is the one given by
// GRAFT_ONNXRUNTIME_INCLUDE_DIR; nothing of ONNX Runtime is part of this repository.
//
// Errors: the OrtCustomOp of API versions before 16 has no status-returning callbacks, so CreateKernel and
// KernelCompute report by throwing std::runtime_error, which ONNX Runtime turns into the OrtStatus of
// session creation or of Run (with the node's name added). Nothing else may throw across the boundary.
#include <onnxruntime_c_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "graft/dtype.h"
#include "graft/op.h"
#include "graft/registry.h"

namespace graft::ort {
namespace {

// The API table of the runtime that loaded us (set once in RegisterCustomOps; one runtime per process).
const OrtApi* g_api = nullptr;

// graft's DataType values are ONNX TensorProto numbers, as are ONNX Runtime's element types.
ONNXTensorElementDataType to_ort(DataType t) { return static_cast<ONNXTensorElementDataType>(static_cast<int>(t)); }

// The dtypes one input or output may take: its own list, else those the type combinations use there.
std::vector<DataType> allowed_dtypes(const OpDef& def, bool output, size_t index) {
  const IOSpec& spec = output ? def.outputs()[index] : def.inputs()[index];
  if (!spec.dtypes.empty()) return spec.dtypes;
  std::vector<DataType> out;
  const size_t slot = output ? def.inputs().size() + index : index;
  for (const auto& combo : def.type_combinations())
    if (slot < combo.size()) {
      bool seen = false;
      for (DataType d : out) seen = seen || d == combo[slot];
      if (!seen) out.push_back(combo[slot]);
    }
  return out;
}

// One OrtCustomOp per (domain, name). ONNX Runtime hands the OrtCustomOp pointer back to every callback;
// the base must be the first member so the callbacks can find the graft definition from it.
struct GraftOrtOp {
  OrtCustomOp base{};
  std::shared_ptr<const OpDef> def;
  std::string domain, name;
  std::vector<ONNXTensorElementDataType> input_types, output_types;
};

const GraftOrtOp& self(const OrtCustomOp* op) { return *reinterpret_cast<const GraftOrtOp*>(op); }

std::string op_label(const GraftOrtOp& op) { return "graft op " + op.domain + "::" + op.name; }

// The node's attributes for one kernel, validated against the op's schema.
struct Kernel {
  const GraftOrtOp* op = nullptr;
  AttributeMap attrs;
};

// Releases an OrtStatus and says whether it was an error.
bool failed(OrtStatus* st) {
  if (!st) return false;
  g_api->ReleaseStatus(st);
  return true;
}

[[noreturn]] void fail(const GraftOrtOp& op, const std::string& message) {
  throw std::runtime_error(op_label(op) + ": " + message);
}

// Which attribute kind the node carries under `name`, probing each getter ONNX Runtime offers (v13 has
// no attribute enumeration). Used only to tell "missing" from "wrong type" in error messages.
const char* present_kind(const OrtKernelInfo* info, const char* name) {
  float f;
  int64_t i;
  size_t n = 0;
  if (!failed(g_api->KernelInfoGetAttribute_float(info, name, &f))) return "float";
  if (!failed(g_api->KernelInfoGetAttribute_int64(info, name, &i))) return "int";
  if (!failed(g_api->KernelInfoGetAttribute_string(info, name, nullptr, &n))) return "string";
  n = 0;
  if (!failed(g_api->KernelInfoGetAttributeArray_float(info, name, nullptr, &n))) return "floats";
  n = 0;
  if (!failed(g_api->KernelInfoGetAttributeArray_int64(info, name, nullptr, &n))) return "ints";
  return nullptr;
}

// Reads each attribute of the op's schema with the getter of its declared type. A value of another
// type is an error naming the attribute; an absent one is left to validate_attributes (default or
// "required attribute missing", also naming it).
AttributeMap read_attributes(const GraftOrtOp& op, const OrtKernelInfo* info) {
  AttributeMap attrs;
  for (const AttrSpec& spec : op.def->attrs()) {
    const char* name = spec.name.c_str();
    bool ok = false;
    switch (spec.type) {
      case AttrType::kFloat: {
        float v = 0;
        if ((ok = !failed(g_api->KernelInfoGetAttribute_float(info, name, &v)))) attrs.set(spec.name, v);
        break;
      }
      case AttrType::kInt: {
        int64_t v = 0;
        if ((ok = !failed(g_api->KernelInfoGetAttribute_int64(info, name, &v)))) attrs.set(spec.name, v);
        break;
      }
      case AttrType::kString: {
        size_t n = 0;
        if ((ok = !failed(g_api->KernelInfoGetAttribute_string(info, name, nullptr, &n)))) {
          std::string s(n, '\0');  // n counts the terminating NUL
          if (n > 0 && failed(g_api->KernelInfoGetAttribute_string(info, name, s.data(), &n)))
            fail(op, "attribute '" + spec.name + "': could not be read");
          while (!s.empty() && s.back() == '\0') s.pop_back();
          attrs.set(spec.name, s);
        }
        break;
      }
      case AttrType::kFloats: {
        size_t n = 0;
        if ((ok = !failed(g_api->KernelInfoGetAttributeArray_float(info, name, nullptr, &n)))) {
          std::vector<float> v(n);
          if (n > 0 && failed(g_api->KernelInfoGetAttributeArray_float(info, name, v.data(), &n)))
            fail(op, "attribute '" + spec.name + "': could not be read");
          attrs.set(spec.name, v);
        }
        break;
      }
      case AttrType::kInts: {
        size_t n = 0;
        if ((ok = !failed(g_api->KernelInfoGetAttributeArray_int64(info, name, nullptr, &n)))) {
          std::vector<int64_t> v(n);
          if (n > 0 && failed(g_api->KernelInfoGetAttributeArray_int64(info, name, v.data(), &n)))
            fail(op, "attribute '" + spec.name + "': could not be read");
          attrs.set(spec.name, v);
        }
        break;
      }
      default:
        // strings and tensor attributes have no getter in this API version: only their defaults work.
        if (const char* kind = present_kind(info, name))
          fail(op, "attribute '" + spec.name + "' (" + kind + "): attributes of type " + attr_type_name(spec.type) +
                       " cannot be read through ONNX Runtime's custom-op API");
        continue;
    }
    if (!ok) {
      if (const char* kind = present_kind(info, name))
        fail(op, std::string("attribute '") + spec.name + "' has type " + kind + ", expected " +
                     attr_type_name(spec.type));
    }
  }
  Status st = op.def->validate_attributes(attrs);
  if (!st.is_ok()) fail(op, st.to_string());
  return attrs;
}

// ---- OrtCustomOp callbacks (C linkage boundary) -----------------------------------------------
void* ORT_API_CALL create_kernel(const OrtCustomOp* op, const OrtApi*, const OrtKernelInfo* info) {
  const GraftOrtOp& o = self(op);
  auto k = std::make_unique<Kernel>();
  k->op = &o;
  k->attrs = read_attributes(o, info);  // throws std::runtime_error on a bad node
  return k.release();
}

const char* ORT_API_CALL get_name(const OrtCustomOp* op) { return self(op).name.c_str(); }
const char* ORT_API_CALL get_ep(const OrtCustomOp*) { return nullptr; }  // CPU execution provider
ONNXTensorElementDataType ORT_API_CALL get_input_type(const OrtCustomOp* op, size_t i) {
  const auto& t = self(op).input_types;
  return i < t.size() ? t[i] : ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
}
size_t ORT_API_CALL get_input_count(const OrtCustomOp* op) { return self(op).input_types.size(); }
ONNXTensorElementDataType ORT_API_CALL get_output_type(const OrtCustomOp* op, size_t i) {
  const auto& t = self(op).output_types;
  return i < t.size() ? t[i] : ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
}
size_t ORT_API_CALL get_output_count(const OrtCustomOp* op) { return self(op).output_types.size(); }
OrtCustomOpInputOutputCharacteristic ORT_API_CALL get_input_characteristic(const OrtCustomOp* op, size_t i) {
  const auto& ins = self(op).def->inputs();
  return i < ins.size() && ins[i].optional ? INPUT_OUTPUT_OPTIONAL : INPUT_OUTPUT_REQUIRED;
}
OrtCustomOpInputOutputCharacteristic ORT_API_CALL get_output_characteristic(const OrtCustomOp* op, size_t i) {
  const auto& outs = self(op).def->outputs();
  return i < outs.size() && outs[i].optional ? INPUT_OUTPUT_OPTIONAL : INPUT_OUTPUT_REQUIRED;
}
OrtMemType ORT_API_CALL get_input_memory_type(const OrtCustomOp*, size_t) { return OrtMemTypeDefault; }
void ORT_API_CALL kernel_destroy(void* k) { delete static_cast<Kernel*>(k); }

// Type and dims of a tensor value.
void describe(const GraftOrtOp& op, const OrtValue* v, const std::string& what, DataType* dtype,
              std::vector<int64_t>* dims) {
  OrtTensorTypeAndShapeInfo* info = nullptr;
  if (failed(g_api->GetTensorTypeAndShape(v, &info))) fail(op, what + " is not a tensor");
  ONNXTensorElementDataType et = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  size_t rank = 0;
  bool bad = failed(g_api->GetTensorElementType(info, &et)) || failed(g_api->GetDimensionsCount(info, &rank));
  dims->assign(rank, 0);
  bad = bad || (rank > 0 && failed(g_api->GetDimensions(info, dims->data(), rank)));
  g_api->ReleaseTensorTypeAndShapeInfo(info);
  if (bad) fail(op, what + ": could not read its type and shape");
  if (!dtype_from_onnx_numeric(static_cast<int32_t>(et), dtype))
    fail(op, what + " has ONNX element type " + std::to_string(static_cast<int>(et)) + ", which graft does not support");
}

void ORT_API_CALL kernel_compute(void* kernel, OrtKernelContext* ctx) {
  const Kernel& k = *static_cast<const Kernel*>(kernel);
  const GraftOrtOp& op = *k.op;
  const OpDef& def = *op.def;
  size_t n_in = 0, n_out = 0;
  if (failed(g_api->KernelContext_GetInputCount(ctx, &n_in)) || failed(g_api->KernelContext_GetOutputCount(ctx, &n_out)))
    fail(op, "could not read the node's input/output counts");
  size_t required_out = 0;  // only trailing outputs may be optional
  while (required_out < def.outputs().size() && !def.outputs()[required_out].optional) ++required_out;
  if (n_in > def.inputs().size() || n_out < required_out || n_out > def.outputs().size())
    fail(op, "node has " + std::to_string(n_in) + " inputs and " + std::to_string(n_out) +
                 " outputs; the op takes at most " + std::to_string(def.inputs().size()) + " and gives " +
                 std::to_string(required_out) + " to " + std::to_string(def.outputs().size()));

  KernelContext kc;
  kc.attrs = &k.attrs;
  std::vector<std::optional<std::vector<int64_t>>> in_dims;
  std::vector<DataType> in_types;
  std::vector<ConcreteDesc> in_desc;
  for (size_t i = 0; i < def.inputs().size(); ++i) {
    const OrtValue* v = nullptr;
    if (i < n_in && failed(g_api->KernelContext_GetInput(ctx, i, &v)))
      fail(op, "input " + std::to_string(i) + " ('" + def.inputs()[i].name + "') could not be read");
    TensorView view;
    if (v) {
      describe(op, v, "input '" + def.inputs()[i].name + "'", &view.dtype, &view.dims);
      void* data = nullptr;
      if (failed(g_api->GetTensorMutableData(const_cast<OrtValue*>(v), &data)))
        fail(op, "input '" + def.inputs()[i].name + "': no data");
      view.data = data;
      in_dims.emplace_back(view.dims);
    } else {
      if (!def.inputs()[i].optional) fail(op, "required input '" + def.inputs()[i].name + "' is missing");
      in_dims.emplace_back(std::nullopt);
    }
    in_types.push_back(view.dtype);
    in_desc.push_back(ConcreteDesc{view.dtype, view.dims});
    kc.inputs.push_back(std::move(view));
  }

  // The op's own rules on the concrete shapes and dtypes, exactly as graft's engine applies them.
  auto shapes = infer_concrete_shapes(def, in_dims, k.attrs);
  if (!shapes.is_ok()) fail(op, "shape inference: " + shapes.status().to_string());
  auto types = def.infer_dtypes(in_types, k.attrs);
  if (!types.is_ok()) fail(op, "dtype inference: " + types.status().to_string());
  std::vector<DataType> combo = in_types;
  combo.insert(combo.end(), types->begin(), types->end());
  if (!def.supports(Backend::kCPU, combo)) {
    std::string list;
    for (DataType t : combo) list += std::string(list.empty() ? "" : ", ") + dtype_name(t);
    fail(op, "no CPU kernel for the dtypes (" + list + ") (inputs then outputs)");
  }

  std::vector<ConcreteDesc> out_desc;
  for (size_t o = 0; o < n_out; ++o) {
    const std::vector<int64_t>& dims = (*shapes)[o];
    OrtValue* v = nullptr;
    if (failed(g_api->KernelContext_GetOutput(ctx, o, dims.data(), dims.size(), &v)) || !v)
      fail(op, "output '" + def.outputs()[o].name + "' could not be allocated");
    TensorView view;
    std::vector<int64_t> got;
    describe(op, v, "output '" + def.outputs()[o].name + "'", &view.dtype, &got);
    // ONNX Runtime allocated the output with the type its graph resolution gave it; it must be the
    // type graft's dtype rule gives, or the kernel would write the wrong element size.
    if (view.dtype != (*types)[o])
      fail(op, "output '" + def.outputs()[o].name + "' is " + dtype_name(view.dtype) + " in the graph but the op gives " +
                   dtype_name((*types)[o]));
    void* data = nullptr;
    if (failed(g_api->GetTensorMutableData(v, &data))) fail(op, "output '" + def.outputs()[o].name + "': no data");
    view.data = data;
    view.dims = dims;
    out_desc.push_back(ConcreteDesc{view.dtype, view.dims});
    kc.outputs.push_back(std::move(view));
  }
  std::vector<unsigned char> workspace(def.workspace_size(in_desc, out_desc, k.attrs));
  kc.workspace = workspace.empty() ? nullptr : workspace.data();
  kc.workspace_size = workspace.size();
  Status st = def.run(Backend::kCPU, kc);
  if (!st.is_ok()) fail(op, st.to_string());
}

// ---- the op table --------------------------------------------------------------------------------
std::unique_ptr<GraftOrtOp> make_op(std::shared_ptr<const OpDef> def, const std::string& domain,
                                    const std::string& name) {
  auto op = std::make_unique<GraftOrtOp>();
  op->def = std::move(def);
  op->domain = domain;
  op->name = name;
  // One declared dtype: ONNX Runtime checks it. Several: UNDEFINED, and compute checks the combination.
  std::vector<std::vector<DataType>> in_allowed, out_allowed;
  size_t dynamic_inputs = 0;
  bool dynamic_outputs = false;
  for (size_t i = 0; i < op->def->inputs().size(); ++i) {
    in_allowed.push_back(allowed_dtypes(*op->def, false, i));
    op->input_types.push_back(in_allowed.back().size() == 1 ? to_ort(in_allowed.back()[0])
                                                           : ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED);
    dynamic_inputs += op->input_types.back() == ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  }
  for (size_t i = 0; i < op->def->outputs().size(); ++i) {
    out_allowed.push_back(allowed_dtypes(*op->def, true, i));
    op->output_types.push_back(out_allowed.back().size() == 1 ? to_ort(out_allowed.back()[0])
                                                             : ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED);
    dynamic_outputs = dynamic_outputs || op->output_types.back() == ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  }
  // ONNX Runtime (1.16+) can type a dynamically typed output only from a single dynamically typed input
  // (or through an output-type callback this API version lacks), and refuses the whole domain otherwise.
  // Such ops are pinned to one dtype per slot: float32 where allowed, else the first one declared.
  if (dynamic_outputs && dynamic_inputs != 1) {
    auto pin = [](std::vector<ONNXTensorElementDataType>& types, const std::vector<std::vector<DataType>>& allowed) {
      for (size_t i = 0; i < types.size(); ++i) {
        if (types[i] != ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED || allowed[i].empty()) continue;
        DataType pick = allowed[i][0];
        for (DataType d : allowed[i]) pick = d == DataType::kFloat32 ? d : pick;
        types[i] = to_ort(pick);
      }
    };
    pin(op->input_types, in_allowed);
    pin(op->output_types, out_allowed);
  }
  OrtCustomOp& b = op->base;
  b.version = ORT_API_VERSION;
  b.CreateKernel = create_kernel;
  b.GetName = get_name;
  b.GetExecutionProviderType = get_ep;
  b.GetInputType = get_input_type;
  b.GetInputTypeCount = get_input_count;
  b.GetOutputType = get_output_type;
  b.GetOutputTypeCount = get_output_count;
  b.KernelCompute = kernel_compute;
  b.KernelDestroy = kernel_destroy;
  b.GetInputCharacteristic = get_input_characteristic;
  b.GetOutputCharacteristic = get_output_characteristic;
  b.GetInputMemoryType = get_input_memory_type;
  return op;
}

// Plugin libraries named in GRAFT_PLUGIN_LIBRARIES (colon-separated), as the TensorRT adapter loads them.
void load_env_plugins() {
  const char* libs = std::getenv("GRAFT_PLUGIN_LIBRARIES");
  if (!libs) return;
  for (const Status& st : load_plugin_libraries(libs))
    std::fprintf(stderr, "[graft_onnxruntime] %s\n", st.to_string().c_str());
}

// Ops and domains are built once and live as long as the process: ONNX Runtime keeps pointers to both
// for as long as any session uses them, and a domain may be added to any number of session options.
struct Table {
  std::vector<std::unique_ptr<GraftOrtOp>> ops;
  std::map<std::string, OrtCustomOpDomain*> domains;
};

OrtStatus* build_table(Table& t) {
  load_env_plugins();
  OpRegistry& reg = OpRegistry::global();
  std::map<std::pair<std::string, std::string>, bool> seen;
  auto add = [&](std::shared_ptr<const OpDef> def, const std::string& domain, const std::string& name) {
    // Several versions or namespaces of one name map to one ONNX node type; the first (lowest version,
    // as the registry sorts) answers, as graft's importer picks version "1" by default.
    if (seen[{domain, name}]) return;
    seen[{domain, name}] = true;
    t.ops.push_back(make_op(std::move(def), domain, name));
  };
  for (const RegisteredOp& r : reg.all()) add(r.def, r.def->identity().domain, r.def->name());
  for (const OpRegistry::Alias& a : reg.aliases())
    if (auto def = reg.find_exact(a.target)) add(def, a.domain, a.name);
  for (auto& op : t.ops) {
    OrtCustomOpDomain*& d = t.domains[op->domain];
    if (!d)
      if (OrtStatus* st = g_api->CreateCustomOpDomain(op->domain.c_str(), &d)) return st;
    if (OrtStatus* st = g_api->CustomOpDomain_Add(d, &op->base)) return st;
  }
  return nullptr;
}

OrtStatus* register_all(OrtSessionOptions* options) {
  static std::mutex mu;
  static Table* table = nullptr;
  std::lock_guard<std::mutex> lock(mu);
  if (!table) {
    auto t = std::make_unique<Table>();
    if (OrtStatus* st = build_table(*t)) return st;  // partial domains leak; the process is failing anyway
    table = t.release();
  }
  for (auto& [name, domain] : table->domains)
    if (OrtStatus* st = g_api->AddCustomOpDomain(options, domain)) return st;
  return nullptr;
}

}  // namespace
}  // namespace graft::ort

extern "C" __attribute__((visibility("default"))) OrtStatus* ORT_API_CALL
RegisterCustomOps(OrtSessionOptions* options, const OrtApiBase* api_base) {
  using graft::ort::g_api;
  const OrtApi* api = api_base ? api_base->GetApi(ORT_API_VERSION) : nullptr;
  if (!api) {
    // Without an API table there is no way to build an OrtStatus; say why on stderr.
    std::fprintf(stderr, "[graft_onnxruntime] ONNX Runtime does not offer C API version %d (the header this library "
                         "was built with); register nothing\n", ORT_API_VERSION);
    return nullptr;
  }
  g_api = api;
  try {
    return graft::ort::register_all(options);
  } catch (const std::exception& e) {
    return api->CreateStatus(ORT_FAIL, (std::string("graft_onnxruntime: ") + e.what()).c_str());
  } catch (...) {
    return api->CreateStatus(ORT_FAIL, "graft_onnxruntime: unknown error while registering ops");
  }
}
