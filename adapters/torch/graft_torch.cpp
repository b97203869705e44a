// libgraft_torch.so: every op in graft's registry becomes a PyTorch operator, with no per-op code.
//
// Loaded from Python with torch.ops.load_library(path). Loading defines nothing by itself except
// the management ops below; python/graft calls torch.ops.graft._define_ops([plugin paths]) which
//   1. loads graft plugin libraries into OpRegistry::global() (so plugin ops become torch ops too),
//   2. walks the registry and, for each op not yet defined, declares
//        graft::<Name>(Tensor in0, Tensor? opt1, *, float beta=1.0, ...) -> Tensor
//        graft::<Name>_backward(<forward inputs>, Tensor grad_<out0>, *, <attrs>) -> <grads>
//      and registers ONE generic boxed kernel for CPU, CUDA (when torch has CUDA) and Meta.
// Exceptions never escape into graft: graft errors (Status) become c10::Error at this boundary,
// carrying the op's own message (which names the attribute, input or dtype at fault).
#include <torch/library.h>
#include <torch/torch.h>
#include <torch/version.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#if defined(GRAFT_TORCH_WITH_CUDA)
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "graft/op.h"
#include "graft/registry.h"

namespace {

constexpr const char* kNamespace = "graft";

// ---- dtype mapping ------------------------------------------------------------------------------
bool to_graft_dtype(at::ScalarType t, graft::DataType* out) {
  using graft::DataType;
  switch (t) {
    case at::kFloat: *out = DataType::kFloat32; return true;
    case at::kHalf: *out = DataType::kFloat16; return true;
    case at::kDouble: *out = DataType::kFloat64; return true;
    case at::kBFloat16: *out = DataType::kBFloat16; return true;
    case at::kByte: *out = DataType::kUInt8; return true;
    case at::kChar: *out = DataType::kInt8; return true;
    case at::kInt: *out = DataType::kInt32; return true;
    case at::kLong: *out = DataType::kInt64; return true;
    case at::kBool: *out = DataType::kBool; return true;
    default: return false;
  }
}

bool to_torch_dtype(graft::DataType t, at::ScalarType* out) {
  using graft::DataType;
  switch (t) {
    case DataType::kFloat32: *out = at::kFloat; return true;
    case DataType::kFloat16: *out = at::kHalf; return true;
    case DataType::kFloat64: *out = at::kDouble; return true;
    case DataType::kBFloat16: *out = at::kBFloat16; return true;
    case DataType::kUInt8: *out = at::kByte; return true;
    case DataType::kInt8: *out = at::kChar; return true;
    case DataType::kInt32: *out = at::kInt; return true;
    case DataType::kInt64: *out = at::kLong; return true;
    case DataType::kBool: *out = at::kBool; return true;
    default: return false;
  }
}

// ---- schema generation --------------------------------------------------------------------------
// Float defaults must parse back as floats: always keep a '.' or an exponent.
std::string float_literal(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// Returns false when the attribute kind has no torch schema spelling (tensor attributes).
bool attr_schema(const graft::AttrSpec& a, std::string* out) {
  using graft::AttrType;
  std::string type;
  switch (a.type) {
    case AttrType::kFloat: type = "float"; break;
    case AttrType::kInt: type = "int"; break;
    case AttrType::kString: type = "str"; break;
    case AttrType::kFloats: type = "float[]"; break;
    case AttrType::kInts: type = "int[]"; break;
    case AttrType::kStrings: type = "str[]"; break;
    case AttrType::kTensor: return false;
  }
  std::string s = type + " " + a.name;
  if (a.default_value) {
    const graft::AttrValue& v = *a.default_value;
    std::string lit;
    bool ok = true;
    switch (a.type) {
      case AttrType::kFloat: {
        float f = std::get<float>(v);
        ok = std::isfinite(f);
        lit = float_literal(f);
        break;
      }
      case AttrType::kInt: lit = std::to_string(std::get<int64_t>(v)); break;
      case AttrType::kString: lit = quoted(std::get<std::string>(v)); break;
      case AttrType::kFloats: {
        lit = "[";
        for (float f : std::get<std::vector<float>>(v)) {
          ok = ok && std::isfinite(f);
          lit += (lit.size() > 1 ? ", " : "") + float_literal(f);
        }
        lit += "]";
        break;
      }
      case AttrType::kInts: {
        lit = "[";
        for (int64_t i : std::get<std::vector<int64_t>>(v)) lit += (lit.size() > 1 ? ", " : "") + std::to_string(i);
        lit += "]";
        break;
      }
      case AttrType::kStrings: {
        lit = "[";
        for (auto& x : std::get<std::vector<std::string>>(v)) lit += (lit.size() > 1 ? ", " : "") + quoted(x);
        lit += "]";
        break;
      }
      case AttrType::kTensor: ok = false; break;
    }
    if (ok) {
      s += "=" + lit;
    } else {
      // No literal spelling (inf, NaN): optional, and graft's validate_attributes fills the default.
      s = type + "? " + a.name + "=None";
    }
  }
  *out = s;
  return true;
}

struct OpSchemas {
  std::string forward, backward;  // backward empty when the op has no backward kernel
};

bool make_schemas(const graft::OpDef& def, const std::string& torch_name, OpSchemas* out, std::string* why) {
  std::string attrs;
  for (const auto& a : def.attrs()) {
    std::string s;
    if (!attr_schema(a, &s)) {
      *why = "attribute '" + a.name + "' is a tensor attribute, which has no torch schema type";
      return false;
    }
    attrs += ", " + s;
  }
  std::string ins;
  for (const auto& i : def.inputs()) ins += (ins.empty() ? "" : ", ") + std::string(i.optional ? "Tensor? " : "Tensor ") + i.name;
  auto with_attrs = [&](const std::string& tensors) {
    if (attrs.empty()) return tensors;
    return (tensors.empty() ? std::string("*") : tensors + ", *") + attrs;
  };
  auto returns = [](size_t n) {
    if (n == 1) return std::string("Tensor");
    std::string r = "(";
    for (size_t i = 0; i < n; ++i) r += (i ? ", " : "") + std::string("Tensor");
    return r + ")";
  };
  out->forward = torch_name + "(" + with_attrs(ins) + ") -> " + returns(def.outputs().size());
  out->backward.clear();
  if (def.has_backward(graft::Backend::kCPU)) {
    std::string bins = ins;
    for (const auto& o : def.outputs()) bins += (bins.empty() ? "" : ", ") + std::string("Tensor grad_") + o.name;
    size_t n_grads = def.differentiable_input_indices().empty() ? def.inputs().size()
                                                                : def.differentiable_input_indices().size();
    // An absent optional input yields an undefined gradient: declare grads as optional tensors.
    std::string r;
    if (n_grads == 1) {
      r = "Tensor";
    } else {
      r = "(";
      for (size_t i = 0; i < n_grads; ++i) r += (i ? ", " : "") + std::string("Tensor");
      r += ")";
    }
    out->backward = torch_name + "_backward(" + with_attrs(bins) + ") -> " + r;
  }
  return true;
}

// ---- the generic boxed kernel -------------------------------------------------------------------
[[noreturn]] void fail(const graft::OpDef& def, const graft::Status& st) {
  TORCH_CHECK(false, "graft op ", def.name(), ": ", st.to_string());
}

graft::AttrValue attr_from_ivalue(const graft::AttrSpec& a, const c10::IValue& v) {
  using graft::AttrType;
  switch (a.type) {
    case AttrType::kFloat: return static_cast<float>(v.toDouble());
    case AttrType::kInt: return static_cast<int64_t>(v.toInt());
    case AttrType::kString: return v.toStringRef();
    case AttrType::kFloats: {
      std::vector<float> f;
      for (double d : v.toDoubleVector()) f.push_back(static_cast<float>(d));
      return f;
    }
    case AttrType::kInts: return v.toIntVector();
    case AttrType::kStrings: {
      std::vector<std::string> s;
      for (const auto& e : v.toListRef()) s.push_back(e.toStringRef());
      return s;
    }
    case AttrType::kTensor: break;
  }
  return 0.0f;
}

class GraftKernel final : public c10::OperatorKernel {
 public:
  GraftKernel(std::shared_ptr<const graft::OpDef> def, bool backward, bool meta)
      : def_(std::move(def)), backward_(backward), meta_(meta) {}

  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
    const graft::OpDef& def = *def_;
    size_t n_tensors = def.inputs().size() + (backward_ ? def.outputs().size() : 0);
    size_t n_args = op.schema().arguments().size();
    auto args = torch::jit::last(*stack, n_args);

    // Attributes: what the caller passed (None = the op's default), validated by the op itself.
    graft::AttributeMap attrs;
    for (size_t i = 0; i < def.attrs().size(); ++i) {
      const c10::IValue& v = args[n_tensors + i];
      if (!v.isNone()) attrs.set(def.attrs()[i].name, attr_from_ivalue(def.attrs()[i], v));
    }
    if (auto st = def.validate_attributes(attrs); !st.is_ok()) fail(def, st);

    // Tensors, made contiguous (kernels see dense row-major views).
    std::vector<at::Tensor> tensors(n_tensors);
    std::optional<c10::Device> device;
    std::vector<graft::DataType> in_dtypes;
    std::vector<std::optional<std::vector<int64_t>>> in_dims;
    for (size_t i = 0; i < n_tensors; ++i) {
      const c10::IValue& v = args[i];
      std::string name = i < def.inputs().size() ? def.inputs()[i].name
                                                 : "grad_" + def.outputs()[i - def.inputs().size()].name;
      if (v.isNone()) {
        if (i >= def.inputs().size() || !def.inputs()[i].optional)
          TORCH_CHECK(false, "graft op ", def.name(), ": input '", name, "' is required");
        in_dtypes.push_back(graft::DataType::kUndefined);
        in_dims.emplace_back(std::nullopt);
        continue;
      }
      at::Tensor t = v.toTensor();
      TORCH_CHECK(t.defined(), "graft op ", def.name(), ": input '", name, "' is undefined");
      if (!device) device = t.device();
      TORCH_CHECK(t.device() == *device, "graft op ", def.name(), ": input '", name, "' is on ", t.device(),
                  " but other inputs are on ", *device);
      graft::DataType dt;
      TORCH_CHECK(to_graft_dtype(t.scalar_type(), &dt), "graft op ", def.name(), ": input '", name,
                  "' has dtype ", t.scalar_type(), ", which graft does not support");
      tensors[i] = t.contiguous();
      in_dtypes.push_back(dt);
      in_dims.emplace_back(t.sizes().vec());
    }
    TORCH_CHECK(device.has_value(), "graft op ", def.name(), ": needs at least one tensor input");

    std::vector<at::Tensor> outs;
    size_t n_fwd_in = def.inputs().size();
    if (!backward_) {
      auto dts = def.infer_dtypes(in_dtypes, attrs);
      if (!dts.is_ok()) fail(def, dts.status());
      auto shapes = graft::infer_concrete_shapes(def, in_dims, attrs);
      if (!shapes.is_ok()) fail(def, shapes.status());
      for (size_t o = 0; o < def.outputs().size(); ++o) {
        at::ScalarType st;
        TORCH_CHECK(to_torch_dtype(dts.value()[o], &st), "graft op ", def.name(), ": output dtype ",
                    graft::dtype_name(dts.value()[o]), " has no torch equivalent");
        outs.push_back(at::empty(shapes.value()[o], at::TensorOptions().dtype(st).device(*device)));
      }
    } else {
      // Gradients have the shape and dtype of the forward inputs they belong to.
      std::vector<int> diff = def.differentiable_input_indices();
      if (diff.empty())
        for (size_t i = 0; i < n_fwd_in; ++i) diff.push_back(static_cast<int>(i));
      for (int i : diff) {
        if (!tensors[i].defined()) {
          outs.push_back(at::Tensor());
          continue;
        }
        outs.push_back(at::empty_like(tensors[i]));
      }
      // Validate the forward shapes so a bad call fails with the op's message, not in the kernel.
      std::vector<std::optional<std::vector<int64_t>>> fwd_dims(in_dims.begin(), in_dims.begin() + n_fwd_in);
      auto shapes = graft::infer_concrete_shapes(def, fwd_dims, attrs);
      if (!shapes.is_ok()) fail(def, shapes.status());
      for (size_t o = 0; o < def.outputs().size(); ++o) {
        const auto& g = tensors[n_fwd_in + o];
        TORCH_CHECK(g.sizes().vec() == shapes.value()[o], "graft op ", def.name(), "_backward: grad_",
                    def.outputs()[o].name, " has shape ", g.sizes(), ", expected ",
                    c10::IntArrayRef(shapes.value()[o]));
      }
    }

    if (!meta_) run(*device, tensors, in_dtypes, outs, attrs);

    torch::jit::drop(*stack, n_args);
    for (auto& o : outs) torch::jit::push(*stack, o);
  }

 private:
  void run(c10::Device device, std::vector<at::Tensor>& tensors, const std::vector<graft::DataType>& dts,
           std::vector<at::Tensor>& outs, const graft::AttributeMap& attrs) {
    const graft::OpDef& def = *def_;
    graft::Backend backend = device.is_cuda() ? graft::Backend::kCUDA : graft::Backend::kCPU;
    graft::DeviceType dev = device.is_cuda() ? graft::DeviceType::kCUDA : graft::DeviceType::kCPU;
    graft::KernelContext ctx;
    ctx.attrs = &attrs;
    for (size_t i = 0; i < tensors.size(); ++i) {
      graft::TensorView v;
      v.device = dev;
      v.dtype = dts[i];
      if (tensors[i].defined()) {
        v.data = tensors[i].data_ptr();
        v.dims = tensors[i].sizes().vec();
      }
      ctx.inputs.push_back(v);
    }
    for (auto& o : outs) {
      graft::TensorView v;
      v.device = dev;
      if (o.defined()) {
        to_graft_dtype(o.scalar_type(), &v.dtype);
        v.data = o.data_ptr();
        v.dims = o.sizes().vec();
      }
      ctx.outputs.push_back(v);
    }
#if defined(GRAFT_TORCH_WITH_CUDA)
    std::optional<c10::cuda::CUDAGuard> guard;
    if (device.is_cuda()) {
      guard.emplace(device);
      ctx.stream = c10::cuda::getCurrentCUDAStream(device.index()).stream();
    }
#else
    TORCH_CHECK(!device.is_cuda(), "graft op ", def.name(), ": libgraft_torch was built without CUDA");
#endif
    at::Tensor workspace;
    if (!backward_) {
      std::vector<graft::ConcreteDesc> in, out;
      for (size_t i = 0; i < tensors.size(); ++i) in.push_back({dts[i], ctx.inputs[i].dims});
      for (auto& o : ctx.outputs) out.push_back({o.dtype, o.dims});
      size_t ws = def.workspace_size(in, out, attrs);
      if (ws > 0) {
        workspace = at::empty({static_cast<int64_t>(ws)}, at::TensorOptions().dtype(at::kByte).device(device));
        ctx.workspace = workspace.data_ptr();
        ctx.workspace_size = ws;
      }
    }
    graft::Status st;
    try {
      st = backward_ ? def.run_backward(backend, ctx) : def.run(backend, ctx);
    } catch (const std::exception& e) {
      TORCH_CHECK(false, "graft op ", def.name(), ": kernel threw: ", e.what());
    }
    if (!st.is_ok()) fail(def, st);
  }

  std::shared_ptr<const graft::OpDef> def_;
  bool backward_, meta_;
};

// ---- registration -------------------------------------------------------------------------------
struct Defined {
  std::string torch_name;
  graft::OpIdentity id;
  std::string forward_schema, backward_schema;
  bool has_backward = false;
};

std::mutex g_mu;
std::vector<std::unique_ptr<torch::Library>> g_libraries;  // kept alive: dropping one unregisters
std::vector<Defined> g_defined;

std::string sanitize(const std::string& s) {
  std::string o;
  for (char c : s) o += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  return o;
}

bool same_id(const graft::OpIdentity& a, const graft::OpIdentity& b) {
  return a.domain == b.domain && a.name == b.name && a.version == b.version &&
         a.plugin_namespace == b.plugin_namespace;
}

void register_kernels(torch::Library& lib, const std::string& name,
                      const std::shared_ptr<const graft::OpDef>& def, bool backward) {
  auto kernel = [&](bool meta) {
    return torch::CppFunction::makeFromBoxedFunctor(std::make_unique<GraftKernel>(def, backward, meta));
  };
  lib.impl(name.c_str(), torch::dispatch(c10::DispatchKey::CPU, kernel(false)));
  lib.impl(name.c_str(), torch::dispatch(c10::DispatchKey::Meta, kernel(true)));
#if TORCH_VERSION_MAJOR < 2
  // torch 1.x has no autograd fallthrough for meta tensors; autograd lives in Python anyway.
  lib.impl(name.c_str(), torch::dispatch(c10::DispatchKey::AutogradMeta, torch::CppFunction::makeFallthrough()));
#endif
#if defined(GRAFT_TORCH_WITH_CUDA)
  lib.impl(name.c_str(), torch::dispatch(c10::DispatchKey::CUDA, kernel(false)));
#endif
}

// Defines every registry op not defined yet. Returns one line per problem (empty: all fine).
std::vector<std::string> define_registry_ops() {
  std::lock_guard<std::mutex> lock(g_mu);
  std::vector<std::string> problems;
  auto ops = graft::OpRegistry::global().all();
  for (const auto& r : ops) {
    const graft::OpIdentity& id = r.def->identity();
    bool done = false;
    for (auto& d : g_defined) done = done || same_id(d.id, id);
    if (done) continue;
    // The plain name goes to the first version seen; others get a version/namespace suffix.
    std::string torch_name = sanitize(id.name);
    for (auto& d : g_defined)
      if (d.torch_name == torch_name) {
        torch_name += "_v" + sanitize(id.version) + (id.plugin_namespace.empty() ? "" : "_" + sanitize(id.plugin_namespace));
        break;
      }
    OpSchemas schemas;
    std::string why;
    if (!make_schemas(*r.def, torch_name, &schemas, &why)) {
      problems.push_back(id.to_string() + ": " + why);
      continue;
    }
    try {
      auto lib = std::make_unique<torch::Library>(torch::Library::FRAGMENT, kNamespace, c10::nullopt,
                                                  __FILE__, static_cast<uint32_t>(__LINE__));
      lib->def(schemas.forward.c_str());
      register_kernels(*lib, torch_name, r.def, false);
      if (!schemas.backward.empty()) {
        lib->def(schemas.backward.c_str());
        register_kernels(*lib, torch_name + "_backward", r.def, true);
      }
      g_libraries.push_back(std::move(lib));
      g_defined.push_back(Defined{torch_name, id, schemas.forward, schemas.backward, !schemas.backward.empty()});
    } catch (const std::exception& e) {
      problems.push_back(id.to_string() + ": " + e.what());
    }
  }
  return problems;
}

// ---- management ops (callable as torch.ops.graft.*) ---------------------------------------------
// Loads plugins, defines ops; returns the problems (empty when all went well).
std::vector<std::string> define_ops(const std::vector<std::string>& plugin_paths) {
  std::vector<std::string> problems;
  for (const auto& p : plugin_paths) {
    graft::Status st = graft::load_plugin_library(p);
    TORCH_CHECK(st.is_ok(), "graft: ", st.to_string());
  }
  for (auto& s : define_registry_ops()) problems.push_back(s);
  return problems;
}

std::string attr_type_text(graft::AttrType t) { return graft::attr_type_name(t); }

// JSON-free metadata for the Python side: one string per op, fields separated by '\x1f', records
// by '\x1e'. Python parses it into dataclasses (graft/_registry.py).
std::string op_metadata() {
  std::lock_guard<std::mutex> lock(g_mu);
  auto ops = graft::OpRegistry::global().all();
  std::ostringstream os;
  const char US = '\x1f', RS = '\x1e';
  for (const auto& d : g_defined) {
    std::shared_ptr<const graft::OpDef> def;
    for (auto& r : ops)
      if (same_id(r.def->identity(), d.id)) def = r.def;
    if (!def) continue;
    os << "op" << US << d.torch_name << US << d.id.name << US << d.id.domain << US << d.id.version << US
       << d.id.plugin_namespace << US << (d.has_backward ? 1 : 0) << US << def->outputs().size() << RS;
    // in: name, optional, allowed dtypes (comma-separated graft names; empty = any). Lets generic
    // Python code tell index/integer inputs from float ones.
    for (size_t k = 0; k < def->inputs().size(); ++k) {
      const auto& i = def->inputs()[k];
      std::vector<graft::DataType> dts = i.dtypes;
      if (dts.empty())
        for (const auto& combo : def->type_combinations())
          if (k < combo.size() && std::find(dts.begin(), dts.end(), combo[k]) == dts.end()) dts.push_back(combo[k]);
      os << "in" << US << i.name << US << (i.optional ? 1 : 0) << US;
      for (size_t j = 0; j < dts.size(); ++j) os << (j ? "," : "") << graft::dtype_name(dts[j]);
      os << RS;
    }
    for (const auto& o : def->outputs()) os << "out" << US << o.name << RS;
    for (int i : def->differentiable_input_indices()) os << "diff" << US << i << RS;
    for (const auto& a : def->attrs()) {
      os << "attr" << US << a.name << US << attr_type_text(a.type) << US << (a.required ? 1 : 0) << US
         << (a.default_value ? graft::attr_value_to_string(*a.default_value) : "") << US
         << (a.min_value ? float_literal(*a.min_value) : "") << US << (a.max_value ? float_literal(*a.max_value) : "")
         << RS;
    }
    // ex: one example call (OpDef::example), its attributes as graft's JSON; then exin per input:
    // index, "absent" / "random" (with the range of its draw) / "fixed" (dtype, then the values).
    for (const graft::OpDef::Example& ex : def->examples()) {
      os << "ex" << US << graft::serialize_attributes(ex.attrs) << RS;
      for (size_t k = 0; k < ex.input_dims.size(); ++k) {
        const int i = static_cast<int>(k);
        os << "exin" << US << i << US;
        if (!ex.input_dims[k]) {
          os << "absent" << RS;
          continue;
        }
        const auto fixed = ex.values.find(i);
        os << (fixed == ex.values.end() ? "random" : "fixed") << US;
        for (size_t d = 0; d < ex.input_dims[k]->size(); ++d) os << (d ? "," : "") << (*ex.input_dims[k])[d];
        const auto [lo, hi] = ex.range_of(i);
        os << US << float_literal(lo) << US << float_literal(hi);
        if (fixed != ex.values.end()) {
          const graft::Tensor& t = fixed->second;
          os << US << graft::dtype_name(t.dtype()) << US;
          for (int64_t e = 0; e < t.numel(); ++e) {
            char buf[32];
            std::snprintf(buf, sizeof buf, "%.17g", t.get(e));
            os << (e ? "," : "") << buf;
          }
        }
        os << RS;
      }
    }
    os << "doc" << US << def->doc_text() << RS << "end" << RS;
  }
  return os.str();
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(graft, m) {
  m.def("_define_ops(str[] plugin_paths) -> str[]",
        [](std::vector<std::string> paths) -> std::vector<std::string> { return define_ops(paths); });
  m.def("_op_metadata() -> str", []() -> std::string { return op_metadata(); });
  m.def("_has_cuda() -> bool", []() -> bool {
#if defined(GRAFT_TORCH_WITH_CUDA)
    return true;
#else
    return false;
#endif
  });
}
