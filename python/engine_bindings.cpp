// graft._engine: Python bindings of graft's engine (include/graft/engine.h) and op registry.
//
// Errors cross into Python as graft.GraftError (python/graft/_errors.py) carrying the engine's
// message; nothing here lets a C++ exception or a crash reach the interpreter. Numpy inputs are
// wrapped without copying (buffer protocol); outputs are numpy arrays that own graft's tensors.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdio>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "graft/cuda_engine.h"
#include "graft/engine.h"
#include "graft/log.h"
#include "graft/op.h"
#include "graft/registry.h"
#include "onnx/mark_outputs.h"
#include "runtime/compare.h"

namespace py = pybind11;

namespace {

// Raised from C++, translated into graft.GraftError(message, code_name).
struct StatusError {
  std::string message;
  std::string code;
};

[[noreturn]] void raise(const graft::Status& st) { throw StatusError{st.to_string(), graft::status_code_name(st.code())}; }
void check(const graft::Status& st) {
  if (!st.is_ok()) raise(st);
}
template <typename T>
T unwrap(graft::Result<T> r) {
  if (!r.is_ok()) raise(r.status());
  return std::move(r).value();
}
[[noreturn]] void raise_invalid(const std::string& msg) {
  throw StatusError{msg, graft::status_code_name(graft::StatusCode::kInvalidArgument)};
}

// ---- dtypes -------------------------------------------------------------------------------------
std::string numpy_dtype_name(graft::DataType t) {
  using graft::DataType;
  switch (t) {
    case DataType::kFloat32: return "float32";
    case DataType::kFloat16: return "float16";
    case DataType::kFloat64: return "float64";
    // int4/uint4 (held one a byte) come back as int8/uint8 arrays: NumPy has no 4-bit type.
    case DataType::kUInt8:
    case DataType::kUInt4: return "uint8";
    case DataType::kInt8:
    case DataType::kInt4: return "int8";
    case DataType::kInt32: return "int32";
    case DataType::kInt64: return "int64";
    case DataType::kInt16: return "int16";
    case DataType::kUInt16: return "uint16";
    case DataType::kUInt32: return "uint32";
    case DataType::kUInt64: return "uint64";
    case DataType::kBool: return "bool";
    default: return "";
  }
}

graft::DataType dtype_from_numpy(const py::dtype& dt, const std::string& name_for_errors) {
  using graft::DataType;
  const DataType candidates[] = {DataType::kFloat32, DataType::kFloat16, DataType::kFloat64, DataType::kUInt8,
                                 DataType::kInt8,    DataType::kInt32,   DataType::kInt64,   DataType::kBool,
                                 DataType::kInt16,   DataType::kUInt16,  DataType::kUInt32,  DataType::kUInt64};
  for (DataType c : candidates)
    if (dt.is(py::dtype(numpy_dtype_name(c)))) return c;
  raise_invalid("input '" + name_for_errors + "': numpy dtype " + std::string(py::str(py::handle(dt))) +
                " is not supported by graft");
}

// Text arrays: numpy 'U' (unicode), 'S' (bytes) and 'O' (objects holding str or bytes). graft's
// string tensors hold UTF-8 bytes: str elements are encoded, bytes taken as they are.
bool is_text_array(const py::array& arr) {
  const char kind = arr.dtype().kind();
  return kind == 'U' || kind == 'S' || kind == 'O';
}

graft::Tensor strings_from_numpy(const py::array& arr, const std::string& name) {
  std::vector<int64_t> dims(arr.shape(), arr.shape() + arr.ndim());
  graft::Tensor t = unwrap(graft::Tensor::allocate(graft::DataType::kString, dims));
  py::list items = arr.attr("ravel")().attr("tolist")();
  auto* out = t.data_as<std::string>();
  for (size_t i = 0; i < items.size(); ++i) {
    py::handle v = items[i];
    if (py::isinstance<py::str>(v)) out[i] = v.cast<std::string>();
    else if (py::isinstance<py::bytes>(v)) out[i] = std::string(py::reinterpret_borrow<py::bytes>(v));
    else
      raise_invalid("input '" + name + "': element " + std::to_string(i) + " is a " +
                    std::string(py::str(py::type::handle_of(v).attr("__name__"))) +
                    "; a string tensor takes str or bytes");
  }
  return t;
}

// A string tensor as a numpy object array of str (bytes for an element that is not UTF-8).
py::object strings_to_numpy(const graft::Tensor& t) {
  py::list items;
  const auto* s = t.data_as<std::string>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    PyObject* text = PyUnicode_DecodeUTF8(s[i].data(), static_cast<py::ssize_t>(s[i].size()), nullptr);
    if (text) {
      items.append(py::reinterpret_steal<py::object>(text));
    } else {
      PyErr_Clear();
      items.append(py::bytes(s[i]));
    }
  }
  py::tuple shape(t.dims().size());
  for (size_t i = 0; i < t.dims().size(); ++i) shape[i] = t.dims()[i];
  py::module_ np = py::module_::import("numpy");
  return np.attr("array")(items, py::arg("dtype") = "object").attr("reshape")(shape);
}

graft::DataType dtype_from_string(const std::string& s, const std::string& name_for_errors) {
  graft::DataType t;
  if (!graft::dtype_from_name(s, &t)) raise_invalid("input '" + name_for_errors + "': unknown dtype '" + s + "'");
  return t;
}

// ---- device outputs -----------------------------------------------------------------------------
// A CUDA output the engine allocated, handed to Python without a copy: torch.as_tensor (and CuPy,
// Numba) read it through __cuda_array_interface__ and keep this object, so the memory, alive.
struct DeviceArray {
  graft::Tensor tensor;

  py::dict cuda_array_interface() const {
    std::string typestr = numpy_dtype_name(tensor.dtype());
    if (typestr.empty())
      raise_invalid(std::string("output dtype ") + graft::dtype_name(tensor.dtype()) +
                    " has no __cuda_array_interface__ type; pass a preallocated output instead");
    py::dict d;
    py::tuple shape(tensor.dims().size());
    for (size_t i = 0; i < tensor.dims().size(); ++i) shape[i] = tensor.dims()[i];
    d["shape"] = shape;
    d["typestr"] = py::dtype(typestr).attr("str");
    d["data"] = py::make_tuple(reinterpret_cast<uintptr_t>(tensor.data()), false);
    d["strides"] = py::none();  // C-contiguous
    d["version"] = 2;           // no stream key: the work that wrote it is already on the caller's stream
    return d;
  }
};

// ---- engine wrapper ------------------------------------------------------------------------------
using PyProfile = std::map<std::string, std::vector<std::vector<int64_t>>>;  // input -> [min, opt, max]

// One profile from Python's {input: (min, opt, max)}; `where` names the argument in errors.
graft::OptimizationProfile to_profile(const PyProfile& given, const std::string& where) {
  graft::OptimizationProfile profile;
  for (const auto& [name, ranges] : given) {
    if (ranges.size() != 3)
      raise_invalid(where + " for input '" + name + "' must be (min, opt, max) shapes, got " +
                    std::to_string(ranges.size()) + " shapes");
    profile[name] = graft::ProfileRange{ranges[0], ranges[1], ranges[2]};
  }
  return profile;
}

class PyEngine {
 public:
  explicit PyEngine(std::shared_ptr<graft::Engine> e, int64_t max_memory = 0)
      : engine_(std::move(e)), max_memory_(max_memory) {}

  static std::unique_ptr<PyEngine> build(const py::object& model, bool fp16, const std::string& device,
                                         const PyProfile& profile, const std::vector<PyProfile>& profiles,
                                         const std::vector<std::string>& plugins, const std::string& timing_cache,
                                         bool fusion, const std::string& layout, bool strict,
                                         const std::map<std::string, std::vector<int64_t>>& sample_shapes,
                                         int64_t max_memory, const std::map<std::string, std::string>& layer_precisions,
                                         const std::string& precision_constraints, bool int8) {
    graft::BuilderConfig cfg;
    cfg.fp16 = fp16;
    cfg.int8 = int8;
    cfg.strict_device = strict;
    for (const auto& [layer, precision] : layer_precisions) {
      auto dtype = graft::layer_precision_from_name(precision);
      if (!dtype) raise_invalid("layer_precisions['" + layer + "']: " + dtype.status().message());
      cfg.layer_precisions[layer] = *dtype;
    }
    cfg.precision_constraints = precision_constraints;
    // Warnings (each once) and the build's summary lines on stderr; all stages at log level
    // verbose, nothing at quiet (graft.set_log_level). Called without the GIL: stdio only.
    cfg.progress = [](const std::string& stage, const std::string& detail) {
      if (graft::log_shows_stage(stage, false))
        std::fprintf(stderr, "graft: %s%s%s\n", stage.c_str(), detail.empty() ? "" : ": ", detail.c_str());
    };
    cfg.timing_cache_path = timing_cache;
    cfg.fusion = fusion;
    cfg.layout = layout;
    if (device == "cpu") {
      cfg.device = graft::DeviceType::kCPU;
    } else if (device == "cuda" || device.rfind("cuda:", 0) == 0) {
      cfg.device = graft::DeviceType::kCUDA;
    } else {
      raise_invalid("device must be 'cpu' or 'cuda', got '" + device + "'");
    }
    cfg.profile = to_profile(profile, "profile");
    for (size_t k = 0; k < profiles.size(); ++k)
      cfg.profiles.push_back(to_profile(profiles[k], "profiles[" + std::to_string(k) + "]"));
    cfg.sample_shapes = sample_shapes;
    // A dynamic input with no shape: the error names the Python arguments that give one.
    cfg.unspecified_shape = [](const graft::IOInfo& in) -> graft::Result<std::vector<int64_t>> {
      std::string example;
      for (int64_t d : in.static_dims) example += (example.empty() ? "" : ", ") + (d < 0 ? std::string("N") : std::to_string(d));
      if (in.static_dims.size() == 1) example += ",";
      return graft::error(graft::StatusCode::kInvalidArgument, "input '", in.name, "' has dynamic shape ", in.shape,
                          ": give Engine.build profile={'", in.name, "': (min, opt, max)} with three shapes like (",
                          example, "), shapes={'", in.name, "': (", example, ")} for one fixed shape, or inputs={'",
                          in.name, "': sample} to build for a sample's shape");
    };
    cfg.plugin_libraries = plugins;
    std::shared_ptr<graft::Engine> e;
    if (py::isinstance<py::bytes>(model)) {
      std::string bytes = model.cast<std::string>();
      py::gil_scoped_release release;
      graft::MemoryLimit limit(max_memory);  // on this thread, for the build (weights, folded constants)
      e = unwrap(graft::Engine::build_from_onnx_bytes(bytes, cfg, "<bytes>"));
    } else {
      std::string path = py::str(model);  // str or os.PathLike
      py::gil_scoped_release release;
      graft::MemoryLimit limit(max_memory);
      e = unwrap(graft::Engine::build_from_onnx_file(path, cfg));
    }
    return std::make_unique<PyEngine>(std::move(e), max_memory);
  }

  static std::unique_ptr<PyEngine> load(const py::object& plan, int64_t max_memory) {
    std::shared_ptr<graft::Engine> e;
    graft::MemoryLimit limit(max_memory);
    if (py::isinstance<py::bytes>(plan)) {
      std::string bytes = plan.cast<std::string>();
      e = unwrap(graft::Engine::deserialize(bytes, "<bytes>"));
    } else {
      e = unwrap(graft::Engine::load_plan(std::string(py::str(plan))));
    }
    return std::make_unique<PyEngine>(std::move(e), max_memory);
  }

  void save(const std::string& path) const { check(engine_->save_plan(path)); }
  py::bytes serialize() const { return py::bytes(unwrap(engine_->serialize())); }

  static py::list io_list(const std::vector<graft::IOInfo>& infos) {
    py::list l;
    for (const auto& i : infos) {
      py::dict d;
      d["name"] = i.name;
      d["dtype"] = std::string(graft::dtype_name(i.dtype));
      d["shape"] = i.shape;
      d["static_dims"] = i.static_dims;
      if (i.profile) d["profile"] = py::make_tuple(i.profile->min, i.profile->opt, i.profile->max);
      l.append(d);
    }
    return l;
  }
  py::list inputs() const { return io_list(engine_->inputs()); }
  int num_profiles() const { return engine_->num_profiles(); }
  // Every profile as {input: (min, opt, max)}, profile k at index k.
  py::list profiles() const {
    py::list all;
    for (int k = 0; k < engine_->num_profiles(); ++k) {
      py::dict d;
      for (const auto& [name, r] : unwrap(engine_->profile(k))) d[py::str(name)] = py::make_tuple(r.min, r.opt, r.max);
      all.append(d);
    }
    return all;
  }
  py::list outputs() const { return io_list(engine_->outputs()); }
  std::string device() const { return graft::device_name(engine_->device()); }
  std::string describe() const { return engine_->describe(); }
  std::string describe_json() const { return engine_->describe_json(); }

  // inputs: name -> numpy array, or ("ptr", address, dtype name, shape, "cpu"|"cuda") for memory the
  // caller keeps alive (torch tensors, wrapped by python/graft/engine.py without copying).
  // outputs: name -> ("ptr", ...) descriptors the engine writes in place when shape and dtype fit.
  // stream: a cudaStream_t as an integer (torch.cuda.current_stream().cuda_stream). With a stream,
  // a CUDA engine enqueues on it and returns without waiting, so work the caller queued on that
  // stream before (its inputs) runs first and work queued after sees the outputs; device outputs
  // come back as DeviceArray (__cuda_array_interface__), or None for an output written in place.
  // Without a stream the call is synchronous and every output comes back as a host numpy array.
  // profile: the optimization profile this run checks its inputs against (the shared context is
  // switched to it under the engine's lock, so concurrent runs may each name their own).
  py::dict run(const py::dict& feeds, const py::dict& given_outputs, uintptr_t stream, int profile) {
    std::map<std::string, graft::Tensor> in;
    std::vector<py::object> keep_alive;
    for (auto item : feeds) {
      std::string name = py::str(item.first);
      py::handle v = item.second;
      if (py::isinstance<py::tuple>(v)) {
        in[name] = from_pointer_descriptor(v, "input '" + name + "'");
        continue;
      }
      // C-contiguous numpy view (copies only when the caller's array is not contiguous already).
      py::array arr = py::array::ensure(v, py::array::c_style);
      if (!arr) raise_invalid("input '" + name + "' is not an array (numpy array or torch tensor expected)");
      if (is_text_array(arr)) {  // copied: std::string elements, not numpy's fixed-width text
        in[name] = strings_from_numpy(arr, name);
        continue;
      }
      graft::DataType dt = dtype_from_numpy(arr.dtype(), name);
      std::vector<int64_t> dims(arr.shape(), arr.shape() + arr.ndim());
      in[name] = graft::Tensor::wrap(const_cast<void*>(arr.data()), dt, dims);
      keep_alive.push_back(arr);
    }
    std::map<std::string, graft::Tensor> out;
    std::map<std::string, const void*> in_place;
    for (auto item : given_outputs) {
      std::string name = py::str(item.first);
      out[name] = from_pointer_descriptor(item.second, "output '" + name + "'");
      in_place[name] = out[name].data();
    }
    graft::CudaExecutionContext* cuda_context = nullptr;
    {
      // Lock order: the GIL is released BEFORE the engine mutex is taken, and the mutex is released
      // (end of the inner scope) before the GIL is taken back. Taking the mutex with the GIL held,
      // or re-taking the GIL with the mutex held, deadlocks two Python threads on one engine: each
      // holds one lock and waits for the other. Nothing in this block touches Python objects; an
      // error thrown here unwinds the lock first, then re-takes the GIL in ~gil_scoped_release.
      py::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mu_);
      // max_memory=: the host tensors this run allocates (activations, outputs) stay under it.
      graft::MemoryLimit limit(max_memory_);
      if (!context_) context_ = unwrap(engine_->create_context());
      graft::Status selected = context_->set_profile(profile);
      if (!selected) check(graft::Status(selected.code(), "run(profile=...): " + selected.message()));
      if (stream) {
        cuda_context = dynamic_cast<graft::CudaExecutionContext*>(context_.get());
        if (!cuda_context)
          raise_invalid(std::string("run(stream=...) needs a CUDA engine; this engine runs on ") +
                        graft::device_name(engine_->device()));
      }
      if (cuda_context) check(cuda_context->enqueue(in, out, reinterpret_cast<CUstream_st*>(stream)));
      else check(context_->run(in, out));
    }
    py::dict result;
    for (auto& [name, t] : out) {
      auto given = in_place.find(name);
      if (given != in_place.end() && given->second == t.data()) result[py::str(name)] = py::none();
      else if (cuda_context && t.device() == graft::DeviceType::kCUDA) result[py::str(name)] = DeviceArray{t};
      else result[py::str(name)] = to_numpy(t, in);
    }
    return result;
  }

 private:
  static graft::Tensor from_pointer_descriptor(py::handle v, const std::string& what) {
    if (!py::isinstance<py::tuple>(v)) raise_invalid(what + ": expected a (\"ptr\", address, dtype, shape, device) tuple");
    auto t = v.cast<py::tuple>();
    if (t.size() != 5 || std::string(py::str(t[0])) != "ptr") raise_invalid(what + ": bad pointer descriptor");
    auto addr = t[1].cast<uintptr_t>();
    graft::DataType dt = dtype_from_string(t[2].cast<std::string>(), what);
    auto dims = t[3].cast<std::vector<int64_t>>();
    std::string dev = t[4].cast<std::string>();
    return graft::Tensor::wrap(reinterpret_cast<void*>(addr), dt, dims,
                               dev == "cuda" ? graft::DeviceType::kCUDA : graft::DeviceType::kCPU);
  }

  static py::object to_numpy(const graft::Tensor& output, const std::map<std::string, graft::Tensor>& inputs) {
    // A sequence is a list of arrays; an optional is None or what it holds.
    if (output.kind() == graft::ValueKind::kSequence) {
      py::list items;
      for (const graft::Tensor& item : output.items()) items.append(to_numpy(item, inputs));
      return items;
    }
    if (graft::is_optional_kind(output.kind()))
      return output.has_element() ? to_numpy(output.items()[0], inputs) : py::object(py::none());
    // Host arrays for synchronous calls (graft.Engine moves them to the caller's torch device).
    graft::Tensor t = unwrap(output.to_host());
    // The array must own what it points at: an output that still shares memory with an input (the
    // engines copy those, this guards any engine that does not) would dangle once the caller drops
    // its input array.
    for (const auto& [name, in] : inputs) {
      const char* lo = static_cast<const char*>(t.data());
      const char* ilo = static_cast<const char*>(in.data());
      if (t.nbytes() && in.nbytes() && ilo && lo < ilo + in.nbytes() && ilo < lo + t.nbytes()) {
        t = t.clone();
        break;
      }
    }
    if (t.dtype() == graft::DataType::kString) return strings_to_numpy(t);
    std::string dn = numpy_dtype_name(t.dtype());
    if (dn.empty()) raise_invalid(std::string("output dtype ") + graft::dtype_name(t.dtype()) + " has no numpy equivalent");
    // The capsule owns a copy of the (shared-storage) Tensor, so the array keeps the buffer alive.
    auto* owner = new graft::Tensor(t);
    py::capsule cap(owner, [](void* p) { delete static_cast<graft::Tensor*>(p); });
    std::vector<py::ssize_t> shape(t.dims().begin(), t.dims().end());
    return py::array(py::dtype(dn), shape, t.data(), cap);
  }

  std::shared_ptr<graft::Engine> engine_;
  int64_t max_memory_ = 0;  // bytes of host tensors one run may hold (0: no limit)
  std::unique_ptr<graft::ExecutionContext> context_;  // reused; an error leaves it usable
  std::mutex mu_;
};

// ---- registry and symbolic shapes ----------------------------------------------------------------
// A shape-expression builder whose expressions are Python objects (ints or torch SymInts), so the
// C++ shape function of an op runs unchanged under torch.export's symbolic shapes.
class PyExprBuilder final : public graft::ShapeExprBuilder {
 public:
  explicit PyExprBuilder(py::object combine) : combine_(std::move(combine)) {}
  const void* wrap(py::object o) {
    objs_.push_back(std::move(o));
    return &objs_.back();
  }
  const void* constant(int64_t v) override { return wrap(py::int_(v)); }
  const void* operation(graft::DimOp op, const void* a, const void* b) override {
    return wrap(combine_(graft::dim_op_name(op), obj(a), obj(b)));
  }
  std::optional<int64_t> constant_value(const void* e) override {
    const py::object& o = obj(e);
    if (py::isinstance<py::int_>(o)) return o.cast<int64_t>();
    return std::nullopt;
  }
  static const py::object& obj(const void* e) { return *static_cast<const py::object*>(e); }

 private:
  py::object combine_;
  std::deque<py::object> objs_;
};

std::shared_ptr<const graft::OpDef> find_op(const std::string& domain, const std::string& name,
                                            const std::string& version, const std::string& ns) {
  return unwrap(graft::OpRegistry::global().find(domain, name, version, ns));
}

graft::AttrValue attr_from_python(const graft::AttrSpec* spec, const std::string& name, const py::handle& v) {
  using graft::AttrType;
  AttrType want = spec ? spec->type : AttrType::kFloat;
  try {
    if (!spec) {  // unknown attribute: keep a best-effort type; validate_attributes reports it
      if (py::isinstance<py::float_>(v)) return v.cast<float>();
      if (py::isinstance<py::int_>(v)) return v.cast<int64_t>();
      return py::str(v).cast<std::string>();
    }
    switch (want) {
      case AttrType::kFloat: return v.cast<float>();
      case AttrType::kInt:
        if (py::isinstance<py::float_>(v)) raise_invalid("attribute '" + name + "': expected an int, got a float");
        return v.cast<int64_t>();
      case AttrType::kString: return v.cast<std::string>();
      case AttrType::kFloats: return v.cast<std::vector<float>>();
      case AttrType::kInts: return v.cast<std::vector<int64_t>>();
      case AttrType::kStrings: return v.cast<std::vector<std::string>>();
      case AttrType::kTensor: break;
    }
  } catch (const py::cast_error&) {
    raise_invalid("attribute '" + name + "': expected " + graft::attr_type_name(want) + ", got " +
                  std::string(py::str(py::type::of(v))));
  }
  raise_invalid("attribute '" + name + "': tensor attributes are not supported from Python");
}

// Returns the output shapes as lists of Python objects (ints or SymInts) and the output dtype names.
py::tuple infer_shapes(const std::string& domain, const std::string& name, const std::string& version,
                       const std::string& ns, const py::list& input_shapes, const std::vector<std::string>& input_dtypes,
                       const py::dict& attrs_in, const py::object& combine) {
  auto def = find_op(domain, name, version, ns);
  graft::AttributeMap attrs;
  for (auto item : attrs_in) {
    std::string an = py::str(item.first);
    if (item.second.is_none()) continue;
    attrs.set(an, attr_from_python(def->find_attr(an), an, item.second));
  }
  check(def->validate_attributes(attrs));
  PyExprBuilder b(combine);
  std::vector<std::optional<std::vector<const void*>>> ins;
  for (auto s : input_shapes) {
    if (s.is_none()) {
      ins.emplace_back(std::nullopt);
      continue;
    }
    std::vector<const void*> dims;
    for (auto d : s) dims.push_back(b.wrap(py::reinterpret_borrow<py::object>(d)));
    ins.emplace_back(std::move(dims));
  }
  graft::ShapeContext ctx(&b, &attrs, std::move(ins), static_cast<int>(def->outputs().size()));
  check(def->infer_shapes(ctx));
  py::list shapes;
  for (const auto& o : ctx.outputs()) {
    py::list dims;
    for (const void* e : *o) dims.append(PyExprBuilder::obj(e));
    shapes.append(dims);
  }
  std::vector<graft::DataType> dts;
  for (const auto& s : input_dtypes) dts.push_back(s.empty() ? graft::DataType::kUndefined : dtype_from_string(s, "?"));
  auto out_dts = unwrap(def->infer_dtypes(dts, attrs));
  py::list dnames;
  for (auto t : out_dts) dnames.append(std::string(graft::dtype_name(t)));
  return py::make_tuple(shapes, dnames);
}

py::list registered_ops() {
  py::list l;
  for (const auto& r : graft::OpRegistry::global().all()) {
    const auto& id = r.def->identity();
    py::dict d;
    d["name"] = id.name;
    d["domain"] = id.domain;
    d["version"] = id.version;
    d["plugin_namespace"] = id.plugin_namespace;
    d["source"] = r.source;
    l.append(d);
  }
  return l;
}

// ---- comparisons (graft.compare; runtime/compare.h) ----------------------------------------------
// mark_all_outputs(model bytes, name) -> (marked bytes, [(layer, op_type, [outputs])])
py::tuple mark_all_outputs(const py::bytes& model, const std::string& name) {
  graft::MarkedModel marked = unwrap(graft::mark_all_outputs(std::string(model), name));
  py::list layers;
  for (const graft::MarkedLayer& l : marked.layers) layers.append(py::make_tuple(l.name, l.op_type, l.outputs));
  return py::make_tuple(py::bytes(marked.bytes), layers);
}

std::map<std::string, graft::Tensor> host_tensors(const py::dict& arrays, std::vector<py::object>& keep_alive) {
  std::map<std::string, graft::Tensor> out;
  for (auto item : arrays) {
    const std::string name = py::str(item.first);
    py::array arr = py::array::ensure(item.second, py::array::c_style);
    if (!arr) raise_invalid("tensor '" + name + "' is not an array");
    if (is_text_array(arr)) {
      out[name] = strings_from_numpy(arr, name);
      continue;
    }
    std::vector<int64_t> dims(arr.shape(), arr.shape() + arr.ndim());
    out[name] = graft::Tensor::wrap(const_cast<void*>(arr.data()), dtype_from_numpy(arr.dtype(), name), dims);
    keep_alive.push_back(arr);
  }
  return out;
}

// compare_tensors(candidate {name: array}, reference {name: array}, layers, order, rtol, atol,
// {name: rtol}, {name: atol}, candidate label, reference label) -> (report JSON, text table)
py::tuple compare_tensors(const py::dict& candidate, const py::dict& reference, const py::list& layers,
                          const std::vector<std::string>& order, double rtol, double atol,
                          const std::map<std::string, double>& rtols, const std::map<std::string, double>& atols,
                          const std::string& candidate_label, const std::string& reference_label) {
  std::vector<py::object> keep_alive;
  std::vector<graft::MarkedLayer> marked;
  for (auto l : layers) {
    auto t = l.cast<py::tuple>();
    marked.push_back({t[0].cast<std::string>(), t[1].cast<std::string>(), t[2].cast<std::vector<std::string>>()});
  }
  graft::Tolerances tol;
  tol.fallback = {rtol, atol};
  tol.rtol = rtols;
  tol.atol = atols;
  graft::ComparisonReport r = graft::compare_tensor_sets(host_tensors(candidate, keep_alive),
                                                         host_tensors(reference, keep_alive), marked, order, tol);
  r.candidate = candidate_label;
  r.reference = reference_label;
  return py::make_tuple(graft::comparison_json(r), graft::format_comparison(r));
}

}  // namespace

PYBIND11_MODULE(_engine, m) {
  m.doc() = "graft engine bindings (see python/graft/engine.py for the documented API)";

  // graft.GraftError lives in pure Python so it exists even when this module is not built.
  static py::object graft_error = py::module_::import("graft._errors").attr("GraftError");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      py::object exc = graft_error(e.message, e.code);
      PyErr_SetObject(graft_error.ptr(), exc.ptr());
    }
  });

  m.def("set_log_level", [](const std::string& level) { graft::set_log_level(unwrap(graft::parse_log_level(level))); },
        py::arg("level"), "quiet, default or verbose: what graft prints on its own (warnings, build progress)");
  m.def("log_level", [] { return std::string(graft::log_level_name(graft::log_level())); });

  py::class_<PyEngine>(m, "Engine")
      .def_static("build", &PyEngine::build, py::arg("model"), py::arg("fp16") = false, py::arg("device") = "cpu",
                  py::arg("profile") = PyProfile{}, py::arg("profiles") = std::vector<PyProfile>{},
                  py::arg("plugins") = std::vector<std::string>{}, py::arg("timing_cache") = "",
                  py::arg("fusion") = true, py::arg("layout") = "auto", py::arg("strict") = false,
                  py::arg("sample_shapes") = std::map<std::string, std::vector<int64_t>>{},
                  py::arg("max_memory") = 0, py::arg("layer_precisions") = std::map<std::string, std::string>{},
                  py::arg("precision_constraints") = "obey", py::arg("int8") = true)
      .def_static("load", &PyEngine::load, py::arg("plan"), py::arg("max_memory") = 0)
      .def("save", &PyEngine::save, py::arg("path"))
      .def("serialize", &PyEngine::serialize)
      .def_property_readonly("inputs", &PyEngine::inputs)
      .def_property_readonly("outputs", &PyEngine::outputs)
      .def_property_readonly("device", &PyEngine::device)
      .def_property_readonly("num_profiles", &PyEngine::num_profiles)
      .def_property_readonly("profiles", &PyEngine::profiles)
      .def("describe", &PyEngine::describe)
      .def("describe_json", &PyEngine::describe_json)
      .def("run", &PyEngine::run, py::arg("feeds"), py::arg("outputs") = py::dict(), py::arg("stream") = 0,
           py::arg("profile") = 0);

  py::class_<DeviceArray>(m, "DeviceArray")
      .def_property_readonly("__cuda_array_interface__", &DeviceArray::cuda_array_interface)
      .def_property_readonly("shape", [](const DeviceArray& a) { return a.tensor.dims(); })
      .def_property_readonly("dtype", [](const DeviceArray& a) { return std::string(graft::dtype_name(a.tensor.dtype())); });

  m.def("load_plugin", [](const std::string& path) { check(graft::load_plugin_library(path)); }, py::arg("path"));
  m.def("registered_ops", &registered_ops);
  m.def("infer_shapes", &infer_shapes, py::arg("domain"), py::arg("name"), py::arg("version"),
        py::arg("plugin_namespace"), py::arg("input_shapes"), py::arg("input_dtypes"), py::arg("attrs"),
        py::arg("combine"));
  m.def("version", []() { return std::string(graft::version_string()); });
  m.def("mark_all_outputs", &mark_all_outputs, py::arg("model"), py::arg("name"));
  m.def("compare_tensors", &compare_tensors, py::arg("candidate"), py::arg("reference"), py::arg("layers"),
        py::arg("order"), py::arg("rtol"), py::arg("atol"), py::arg("rtols"), py::arg("atols"),
        py::arg("candidate_label"), py::arg("reference_label"));
}
