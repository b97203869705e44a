// graft_trt_harness: plays TensorRT's part against libgraft_tensorrt.so.
//
// It loads the library as trtexec --dynamicPlugins does (dlopen + getCreators/getPluginCreators +
// setLoggerFinder), creates every plugin from a field collection the way TensorRT's ONNX parser
// builds it (INT -> kINT32, FLOAT -> kFLOAT32, STRING -> kCHAR), and drives each interface method:
// output shapes through an implementation of IExprBuilder (backed by graft's symbolic dims), output
// dtypes, supportsFormatCombination over every dtype/format combination, configurePlugin with
// dynamic ranges, workspace size, onShapeChange, enqueue on the GPU against the CPU reference,
// serialization then re-creation at runtime phase (same output), and clone.
// Prints one line per check and ends with "N passed, M failed".
#include <NvInfer.h>
#include <NvInferImpl.h>
#include <NvInferVersion.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "graft/dim.h"
#include "graft/op.h"
#include "graft/registry.h"
#include "trt_common.h"

#if NV_TENSORRT_MAJOR >= 10
#define HARNESS_V3 1
using DimValue = int64_t;
#else
#define HARNESS_V3 0
using DimValue = int32_t;
#endif

namespace {

int g_passed = 0, g_failed = 0;
void check(bool ok, const std::string& what) {
  (ok ? g_passed : g_failed)++;
  std::printf("[%s] %s\n", ok ? " OK " : "FAIL", what.c_str());
}

// The graft op a creator stands for, found as TensorRT's parser finds it: by name (the op's own or
// an alias), version and namespace. Null when none is registered.
std::shared_ptr<const graft::OpDef> registered_op(const std::string& name, const std::string& version,
                                                  const std::string& plugin_namespace) {
  auto def = graft::OpRegistry::global().find("", name, version, plugin_namespace);
  return def.is_ok() ? *def : nullptr;
}

// ---- logger ---------------------------------------------------------------------------------
struct Logger final : nvinfer1::ILogger {
  std::vector<std::string> errors;
  void log(Severity s, const char* msg) noexcept override {
    if (s <= Severity::kWARNING) errors.push_back(msg);
  }
};
struct LoggerFinder final : nvinfer1::ILoggerFinder {
  Logger logger;
  nvinfer1::ILogger* findLogger() override { return &logger; }
};
LoggerFinder g_finder;

// ---- an IExprBuilder over graft::Dim ----------------------------------------------------------
// TensorRT's public expression classes forward to implementation objects (apiv::V*); the harness
// supplies those, so the plugin sees exactly the interface it would see inside TensorRT.
class DimExpr;
class DimExprImpl final : public nvinfer1::apiv::VDimensionExpr {
 public:
  explicit DimExprImpl(graft::Dim d) : dim(std::move(d)) {}
  bool isConstant() const override { return dim.is_const(); }
#if NV_TENSORRT_MAJOR >= 10
  int64_t getConstantValue() const override { return dim.is_const() ? dim.value() : INT64_MIN; }
  bool isSizeTensor() const override { return false; }
#else
  int32_t getConstantValue() const override { return dim.is_const() ? static_cast<int32_t>(dim.value()) : INT32_MIN; }
#endif
  graft::Dim dim;
};
class DimExpr final : public nvinfer1::IDimensionExpr {
 public:
  explicit DimExpr(graft::Dim d) : impl_(std::move(d)) { mImpl = &impl_; }
  const graft::Dim& dim() const { return impl_.dim; }

 private:
  DimExprImpl impl_;
};

graft::DimOp from_trt_op(nvinfer1::DimensionOperation op) {
  using O = nvinfer1::DimensionOperation;
  switch (op) {
    case O::kSUM: return graft::DimOp::kSum;
    case O::kPROD: return graft::DimOp::kProd;
    case O::kMAX: return graft::DimOp::kMax;
    case O::kMIN: return graft::DimOp::kMin;
    case O::kSUB: return graft::DimOp::kSub;
    case O::kEQUAL: return graft::DimOp::kEqual;
    case O::kLESS: return graft::DimOp::kLess;
    case O::kFLOOR_DIV: return graft::DimOp::kFloorDiv;
    case O::kCEIL_DIV: return graft::DimOp::kCeilDiv;
  }
  return graft::DimOp::kSum;
}

class ExprBuilderImpl final : public nvinfer1::apiv::VExprBuilder {
 public:
  const nvinfer1::IDimensionExpr* constant(DimValue v) override { return make(graft::Dim(static_cast<int64_t>(v))); }
  const nvinfer1::IDimensionExpr* operation(nvinfer1::DimensionOperation op, const nvinfer1::IDimensionExpr& a,
                                            const nvinfer1::IDimensionExpr& b) override {
    return make(graft::Dim::binary(from_trt_op(op), static_cast<const DimExpr&>(a).dim(),
                                   static_cast<const DimExpr&>(b).dim()));
  }
#if NV_TENSORRT_MAJOR >= 10
  const nvinfer1::IDimensionExpr* declareSizeTensor(int32_t, const nvinfer1::IDimensionExpr&,
                                                    const nvinfer1::IDimensionExpr&) override {
    return nullptr;  // graft ops have no data-dependent output sizes
  }
#endif
  const DimExpr* make(graft::Dim d) {
    pool_.emplace_back(std::move(d));
    return &pool_.back();
  }

 private:
  std::deque<DimExpr> pool_;
};
class ExprBuilder final : public nvinfer1::IExprBuilder {
 public:
  ExprBuilder() { mImpl = &impl_; }
  ~ExprBuilder() noexcept override = default;
  const DimExpr* make(graft::Dim d) { return impl_.make(std::move(d)); }

 private:
  ExprBuilderImpl impl_;
};

// ---- fields as TensorRT's ONNX parser builds them --------------------------------------------
struct Fields {
  std::deque<std::string> names;
  std::deque<std::vector<int32_t>> ints;
  std::deque<std::vector<float>> floats;
  std::deque<std::string> strings;
  std::vector<nvinfer1::PluginField> list;
  nvinfer1::PluginFieldCollection fc{};
  void add(const std::string& name, const graft::AttrValue& v) {
    names.push_back(name);
    const char* n = names.back().c_str();
    switch (graft::attr_type_of(v)) {
      case graft::AttrType::kFloat:
        floats.push_back({std::get<float>(v)});
        list.emplace_back(n, floats.back().data(), nvinfer1::PluginFieldType::kFLOAT32, 1);
        break;
      case graft::AttrType::kFloats:
        floats.push_back(std::get<std::vector<float>>(v));
        list.emplace_back(n, floats.back().data(), nvinfer1::PluginFieldType::kFLOAT32,
                          static_cast<int32_t>(floats.back().size()));
        break;
      case graft::AttrType::kInt:
        ints.push_back({static_cast<int32_t>(std::get<int64_t>(v))});  // the parser narrows to int32
        list.emplace_back(n, ints.back().data(), nvinfer1::PluginFieldType::kINT32, 1);
        break;
      case graft::AttrType::kInts: {
        std::vector<int32_t> x;
        for (int64_t i : std::get<std::vector<int64_t>>(v)) x.push_back(static_cast<int32_t>(i));
        ints.push_back(x);
        list.emplace_back(n, ints.back().data(), nvinfer1::PluginFieldType::kINT32,
                          static_cast<int32_t>(ints.back().size()));
        break;
      }
      case graft::AttrType::kString:
        strings.push_back(std::get<std::string>(v));
        list.emplace_back(n, strings.back().data(), nvinfer1::PluginFieldType::kCHAR,
                          static_cast<int32_t>(strings.back().size()));
        break;
      default:
        break;
    }
  }
  const nvinfer1::PluginFieldCollection* get() {
    fc.nbFields = static_cast<int32_t>(list.size());
    fc.fields = list.data();
    return &fc;
  }
};

// ---- tensors ----------------------------------------------------------------------------------
bool g_has_gpu = false;

struct DeviceBuffer {
  void* ptr = nullptr;
  size_t bytes = 0;
  explicit DeviceBuffer(size_t n) : bytes(n) {
    if (cudaMalloc(&ptr, n ? n : 1) != cudaSuccess) ptr = nullptr;
  }
  ~DeviceBuffer() {
    if (ptr) cudaFree(ptr);
  }
};

std::vector<nvinfer1::DataType> all_trt_types() {
  using T = nvinfer1::DataType;
  std::vector<T> v = {T::kFLOAT, T::kHALF, T::kINT8, T::kINT32, T::kBOOL, T::kUINT8};
#if NV_TENSORRT_MAJOR >= 9
  v.push_back(T::kBF16);
#endif
#if NV_TENSORRT_MAJOR >= 10
  v.push_back(T::kINT64);
#endif
  return v;
}
nvinfer1::DataType to_trt(graft::DataType t) {
  using T = nvinfer1::DataType;
  switch (t) {
    case graft::DataType::kFloat16: return T::kHALF;
    case graft::DataType::kInt32: return T::kINT32;
    case graft::DataType::kInt8: return T::kINT8;
#if NV_TENSORRT_MAJOR >= 10
    case graft::DataType::kInt64: return T::kINT64;
#endif
    default: return T::kFLOAT;
  }
}
graft::DataType from_trt(nvinfer1::DataType t) {
  using T = nvinfer1::DataType;
  switch (t) {
    case T::kFLOAT: return graft::DataType::kFloat32;
    case T::kHALF: return graft::DataType::kFloat16;
    case T::kINT8: return graft::DataType::kInt8;
    case T::kINT32: return graft::DataType::kInt32;
    case T::kBOOL: return graft::DataType::kBool;
    case T::kUINT8: return graft::DataType::kUInt8;
#if NV_TENSORRT_MAJOR >= 9
    case T::kBF16: return graft::DataType::kBFloat16;
#endif
#if NV_TENSORRT_MAJOR >= 10
    case T::kINT64: return graft::DataType::kInt64;
#endif
    default: return graft::DataType::kUndefined;
  }
}

nvinfer1::Dims to_dims(const std::vector<int64_t>& v) {
  nvinfer1::Dims d{};
  d.nbDims = static_cast<int32_t>(v.size());
  for (size_t i = 0; i < v.size(); ++i) d.d[i] = static_cast<DimValue>(v[i]);
  return d;
}

// Runs the op on the CPU reference for the given host inputs; returns host outputs.
std::vector<graft::Tensor> cpu_reference(const graft::OpDef& def, const graft::AttributeMap& attrs,
                                         const std::vector<graft::Tensor>& in,
                                         const std::vector<std::vector<int64_t>>& out_dims,
                                         const std::vector<graft::DataType>& out_types) {
  graft::KernelContext ctx;
  ctx.attrs = &attrs;
  for (auto& t : in) ctx.inputs.push_back(t.view());
  // Absent trailing optional inputs as empty views, as the adapter's enqueue passes them.
  while (ctx.inputs.size() < def.inputs().size()) ctx.inputs.push_back(graft::TensorView{});
  std::vector<graft::Tensor> outs;
  for (size_t o = 0; o < out_dims.size(); ++o) {
    outs.push_back(graft::Tensor::empty(out_types[o], out_dims[o]));
    outs.back().poison();
    ctx.outputs.push_back(outs.back().view());
  }
  std::vector<graft::ConcreteDesc> ci, co;
  for (auto& t : in) ci.push_back({t.dtype(), t.dims()});
  while (ci.size() < def.inputs().size()) ci.push_back(graft::ConcreteDesc{});
  for (auto& t : outs) co.push_back({t.dtype(), t.dims()});
  std::vector<uint8_t> ws(def.workspace_size(ci, co, attrs) + 1);
  ctx.workspace = ws.data();
  ctx.workspace_size = ws.size() - 1;
  graft::Status st = def.run(graft::Backend::kCPU, ctx);
  if (!st.is_ok()) std::printf("  CPU reference failed: %s\n", st.to_string().c_str());
  return outs;
}

double rel_error(const graft::Tensor& got, const graft::Tensor& ref) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    double g = got.get(i), r = ref.get(i);
    if (std::isnan(g) != std::isnan(r)) return INFINITY;
    num += (g - r) * (g - r);
    den += r * r;
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// A plugin under test, whichever interface version.
struct Enqueuer {
  std::function<int32_t(const nvinfer1::PluginTensorDesc*, const nvinfer1::PluginTensorDesc*, const void* const*,
                        void* const*, void*, cudaStream_t)>
      enqueue;
};

// Enqueue once on the GPU with the given host inputs; returns host outputs or empty on failure.
std::vector<graft::Tensor> run_on_gpu(const Enqueuer& e, const std::vector<graft::Tensor>& in,
                                      const std::vector<std::vector<int64_t>>& out_dims,
                                      const std::vector<graft::DataType>& out_types, size_t workspace) {
  std::vector<std::unique_ptr<DeviceBuffer>> bufs;
  std::vector<nvinfer1::PluginTensorDesc> in_desc, out_desc;
  std::vector<const void*> in_ptrs;
  std::vector<void*> out_ptrs;
  for (auto& t : in) {
    bufs.push_back(std::make_unique<DeviceBuffer>(t.nbytes()));
    cudaMemcpy(bufs.back()->ptr, t.data(), t.nbytes(), cudaMemcpyHostToDevice);
    nvinfer1::PluginTensorDesc d{};
    d.dims = to_dims(t.dims());
    d.type = to_trt(t.dtype());
    d.format = nvinfer1::TensorFormat::kLINEAR;
    in_desc.push_back(d);
    in_ptrs.push_back(bufs.back()->ptr);
  }
  for (size_t o = 0; o < out_dims.size(); ++o) {
    size_t bytes = static_cast<size_t>(graft::numel_of(out_dims[o])) * graft::dtype_size(out_types[o]);
    bufs.push_back(std::make_unique<DeviceBuffer>(bytes));
    cudaMemset(bufs.back()->ptr, 0xFF, bytes);  // poison: NaN for floats
    nvinfer1::PluginTensorDesc d{};
    d.dims = to_dims(out_dims[o]);
    d.type = to_trt(out_types[o]);
    d.format = nvinfer1::TensorFormat::kLINEAR;
    out_desc.push_back(d);
    out_ptrs.push_back(bufs.back()->ptr);
  }
  DeviceBuffer ws(workspace);
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  int32_t rc = e.enqueue(in_desc.data(), out_desc.data(), in_ptrs.data(), out_ptrs.data(), ws.ptr, stream);
  cudaError_t ce = cudaStreamSynchronize(stream);
  cudaStreamDestroy(stream);
  std::vector<graft::Tensor> outs;
  if (rc != 0 || ce != cudaSuccess) {
    std::printf("  enqueue rc=%d cuda=%s\n", rc, cudaGetErrorString(ce));
    return outs;
  }
  for (size_t o = 0; o < out_dims.size(); ++o) {
    outs.push_back(graft::Tensor::empty(out_types[o], out_dims[o]));
    cudaMemcpy(outs.back().data(), out_ptrs[o], outs.back().nbytes(), cudaMemcpyDeviceToHost);
  }
  return outs;
}

bool same_bits(const std::vector<graft::Tensor>& a, const std::vector<graft::Tensor>& b) {
  if (a.size() != b.size() || a.empty()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].nbytes() != b[i].nbytes() || std::memcmp(a[i].data(), b[i].data(), a[i].nbytes()) != 0) return false;
  return true;
}

// Inputs for an example: fixed values where the example gives them (index tables), random data
// elsewhere (uniform in the example's range for the input), in the given float dtype for float inputs.
std::vector<graft::Tensor> make_inputs(const graft::OpDef& def, const graft::OpDef::Example& ex,
                                       graft::DataType float_type, std::mt19937& rng) {
  std::vector<graft::Tensor> in;
  for (size_t i = 0; i < ex.input_dims.size(); ++i) {
    if (!ex.input_dims[i]) break;  // trailing optional inputs absent
    auto fixed = ex.values.find(static_cast<int>(i));
    if (fixed != ex.values.end()) {
      graft::Tensor v = fixed->second.clone();
#if NV_TENSORRT_MAJOR < 10
      // TensorRT 8.x has no int64 tensors: give index tables as int32, as its parser would.
      if (v.dtype() == graft::DataType::kInt64) v = v.cast(graft::DataType::kInt32).value();
#endif
      // Fixed float values (e.g. rois) come in the precision under test, as the graph would give them.
      const auto& allowed = def.inputs()[i].dtypes;
      if (graft::dtype_is_float(v.dtype()) && v.dtype() != float_type &&
          (allowed.empty() || std::find(allowed.begin(), allowed.end(), float_type) != allowed.end()))
        v = v.cast(float_type).value();
      in.push_back(v);
      continue;
    }
    graft::DataType t = float_type;
    const auto& allowed = def.inputs()[i].dtypes;
    if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), float_type) == allowed.end()) t = allowed.front();
    graft::Tensor x = graft::Tensor::empty(t, *ex.input_dims[i]);
    const auto [lo, hi] = ex.range_of(static_cast<int>(i));
    std::uniform_real_distribution<double> u(lo, hi);
    for (int64_t k = 0; k < x.numel(); ++k) x.set(k, graft::dtype_is_integer(t) ? std::floor(u(rng) - lo) : u(rng));
    in.push_back(x);
  }
  return in;
}

// Inputs whose leading dim is the batch: input 0, and every other non-fixed input whose leading dim
// equals input 0's (the example is chosen so that no other dim collides with it).
std::vector<bool> batch_inputs(const graft::OpDef::Example& ex) {
  std::vector<bool> b(ex.input_dims.size(), false);
  if (ex.input_dims.empty() || !ex.input_dims[0] || ex.input_dims[0]->empty()) return b;
  int64_t n = (*ex.input_dims[0])[0];
  for (size_t i = 0; i < ex.input_dims.size(); ++i)
    b[i] = ex.input_dims[i] && !ex.input_dims[i]->empty() && (*ex.input_dims[i])[0] == n &&
           !ex.values.count(static_cast<int>(i));
  return b;
}

// Expected dtype combinations the CUDA kernels accept (inputs then outputs), from the definition.
bool cuda_supports(const graft::OpDef& def, const std::vector<graft::DataType>& combo) {
  return def.supports(graft::Backend::kCUDA, combo);
}

// Checks supportsFormatCombination against the definition over every dtype and two formats.
template <typename Call>
void check_format_combinations(const graft::OpDef& def, int32_t nb_in, int32_t nb_out, Call&& call,
                               const std::string& tag) {
  const int32_t n = nb_in + nb_out;
  std::vector<nvinfer1::PluginTensorDesc> descs(n);
  int mismatches = 0, accepted = 0, asked = 0;
  // Depth-first over positions: TensorRT asks pos with 0..pos-1 already fixed to accepted choices.
  std::function<void(int32_t)> walk = [&](int32_t pos) {
    if (pos == n) return;
    for (auto fmt : {nvinfer1::TensorFormat::kLINEAR, nvinfer1::TensorFormat::kCHW32}) {
      for (auto t : all_trt_types()) {
        descs[pos] = nvinfer1::PluginTensorDesc{};
        descs[pos].type = t;
        descs[pos].format = fmt;
        descs[pos].dims = to_dims({2, 3});
        bool got = call(pos, descs.data());
        ++asked;
        std::vector<graft::DataType> combo(def.inputs().size() + def.outputs().size(), graft::DataType::kUndefined);
        for (int32_t i = 0; i <= pos; ++i)
          combo[i < nb_in ? i : def.inputs().size() + (i - nb_in)] = from_trt(descs[i].type);
        bool want = fmt == nvinfer1::TensorFormat::kLINEAR && from_trt(t) != graft::DataType::kUndefined &&
                    cuda_supports(def, combo);
        if (got != want) ++mismatches;
        if (got) {
          ++accepted;
          walk(pos + 1);
        }
      }
    }
  };
  walk(0);
  check(mismatches == 0, tag + " supportsFormatCombination: " + std::to_string(asked) + " queries, " +
                             std::to_string(accepted) + " accepted, " + std::to_string(mismatches) +
                             " disagree with the declared CUDA kernels");
}

// Output shapes through the expression builder, with the batch dimension symbolic.
template <typename ShapeCall>
void check_output_shapes(const graft::OpDef& def, const graft::OpDef::Example& ex, ShapeCall&& shapes,
                         const std::string& tag) {
  ExprBuilder builder;
  std::vector<nvinfer1::DimsExprs> in;
  const auto batch = batch_inputs(ex);
  for (size_t i = 0; i < ex.input_dims.size(); ++i) {
    const auto& d = ex.input_dims[i];
    if (!d) break;
    nvinfer1::DimsExprs e{};
    e.nbDims = static_cast<int32_t>(d->size());
    for (size_t k = 0; k < d->size(); ++k)
      e.d[k] = builder.make(k == 0 && batch[i] ? graft::Dim::symbol("N") : graft::Dim((*d)[k]));
    in.push_back(e);
  }
  // The batch dim ("N") is symbolic; weights and tables stay static.
  std::vector<nvinfer1::DimsExprs> out(def.outputs().size());
  bool ok = shapes(in, out, builder);
  check(ok, tag + " getOutputShapes returns");
  if (!ok) return;
  for (int64_t n : {(*ex.input_dims[0])[0], (*ex.input_dims[0])[0] * 3 + 1}) {
    auto dims = ex.input_dims;
    for (size_t i = 0; i < dims.size(); ++i)
      if (batch[i]) (*dims[i])[0] = n;
    auto expect = graft::infer_concrete_shapes(def, dims, ex.attrs);
    bool match = expect.is_ok() && expect->size() == out.size();
    for (size_t o = 0; match && o < out.size(); ++o) {
      if (static_cast<size_t>(out[o].nbDims) != (*expect)[o].size()) match = false;
      for (int32_t k = 0; match && k < out[o].nbDims; ++k) {
        auto v = static_cast<const DimExpr*>(out[o].d[k])->dim().evaluate({{"N", n}});
        if (!v || *v != (*expect)[o][k]) match = false;
      }
    }
    check(match, tag + " symbolic output shape evaluated at N=" + std::to_string(n) + " matches the shape function");
  }
}

// ---- V3 -------------------------------------------------------------------------------------
#if HARNESS_V3
void test_creator(nvinfer1::IPluginCreatorInterface* iface) {
  auto* creator = static_cast<nvinfer1::IPluginCreatorV3One*>(iface);
  std::string tag = std::string(creator->getPluginName()) + " v" + creator->getPluginVersion();
  std::shared_ptr<const graft::OpDef> def =
      registered_op(creator->getPluginName(), creator->getPluginVersion(), creator->getPluginNamespace());
  check(def != nullptr, tag + " creator names a registered graft op or alias");
  if (!def) return;
  const auto* names = creator->getFieldNames();
  check(names && names->nbFields == static_cast<int32_t>(def->attrs().size()),
        tag + " getFieldNames lists every attribute");
  check(!def->examples().empty(), tag + " has an example call to test with");

  std::mt19937 rng(std::random_device{}());
  int idx = 0;
  for (const auto& ex : def->examples()) {
    std::string etag = tag + " example " + std::to_string(idx++);
    Fields f;
    for (auto& [k, v] : ex.attrs.all()) f.add(k, v);
    std::unique_ptr<nvinfer1::IPluginV3> plugin(creator->createPlugin("layer0", f.get(), nvinfer1::TensorRTPhase::kBUILD));
    check(plugin != nullptr, etag + " createPlugin(kBUILD) from ONNX-parser fields");
    if (!plugin) continue;
    auto* core = static_cast<nvinfer1::IPluginV3OneCore*>(plugin->getCapabilityInterface(nvinfer1::PluginCapabilityType::kCORE));
    auto* build = static_cast<nvinfer1::IPluginV3OneBuild*>(plugin->getCapabilityInterface(nvinfer1::PluginCapabilityType::kBUILD));
    auto* runtime = static_cast<nvinfer1::IPluginV3OneRuntime*>(plugin->getCapabilityInterface(nvinfer1::PluginCapabilityType::kRUNTIME));
    check(core && build && runtime, etag + " exposes core, build and runtime capabilities");
    if (!core || !build || !runtime) continue;
    check(std::string(core->getPluginName()) == creator->getPluginName() &&
              std::string(core->getPluginVersion()) == def->identity().version &&
              std::string(core->getPluginNamespace()) == def->identity().plugin_namespace,
          etag + " name/version/namespace match the ONNX node's op_type/plugin_version/plugin_namespace");
    int32_t nb_in = 0;
    for (auto& d : ex.input_dims) if (d) ++nb_in;
    int32_t nb_out = build->getNbOutputs();
    check(nb_out == static_cast<int32_t>(def->outputs().size()), etag + " getNbOutputs");

    check_output_shapes(*def, ex, [&](std::vector<nvinfer1::DimsExprs>& in, std::vector<nvinfer1::DimsExprs>& out, ExprBuilder& b) {
      return build->getOutputShapes(in.data(), static_cast<int32_t>(in.size()), nullptr, 0, out.data(), nb_out, b) == 0;
    }, etag);
    check_format_combinations(*def, nb_in, nb_out, [&](int32_t pos, const nvinfer1::PluginTensorDesc* descs) {
      std::vector<nvinfer1::DynamicPluginTensorDesc> dyn(nb_in + nb_out);
      for (int32_t i = 0; i <= pos; ++i) dyn[i].desc = descs[i];
      return build->supportsFormatCombination(pos, dyn.data(), nb_in, nb_out);
    }, etag);

    for (graft::DataType ft : {graft::DataType::kFloat32, graft::DataType::kFloat16}) {
      auto in = make_inputs(*def, ex, ft, rng);
      std::vector<nvinfer1::DataType> in_types;
      std::vector<graft::DataType> in_g;
      for (auto& t : in) { in_types.push_back(to_trt(t.dtype())); in_g.push_back(t.dtype()); }
      std::vector<nvinfer1::DataType> out_types(nb_out);
      bool dt_ok = build->getOutputDataTypes(out_types.data(), nb_out, in_types.data(), nb_in) == 0;
      auto want_types = def->infer_dtypes(in_g, ex.attrs);
      bool types_match = dt_ok && want_types.is_ok();
      std::vector<graft::DataType> out_g;
      for (int32_t o = 0; types_match && o < nb_out; ++o) {
        out_g.push_back(from_trt(out_types[o]));
        types_match = out_g.back() == (*want_types)[o];
      }
      std::string dtag = etag + " " + graft::dtype_name(ft);
      check(types_match, dtag + " getOutputDataTypes follows the op's dtype rule");
      if (!types_match) continue;
      std::vector<graft::DataType> combo = in_g;
      combo.resize(def->inputs().size(), graft::DataType::kUndefined);
      combo.insert(combo.end(), out_g.begin(), out_g.end());
      if (!def->supports(graft::Backend::kCUDA, combo)) {
        std::printf("  (%s: no CUDA kernel for this dtype combination in this build: enqueue not tested)\n", dtag.c_str());
        continue;
      }
      auto out_dims = graft::infer_concrete_shapes(*def, ex.input_dims, ex.attrs);
      check(out_dims.is_ok(), dtag + " concrete shapes");
      if (!out_dims.is_ok()) continue;
      // configurePlugin with a dynamic range on the leading dim of input 0.
      std::vector<nvinfer1::DynamicPluginTensorDesc> din(nb_in), dout(nb_out);
      for (int32_t i = 0; i < nb_in; ++i) {
        din[i].desc.type = in_types[i];
        din[i].desc.format = nvinfer1::TensorFormat::kLINEAR;
        din[i].desc.dims = to_dims(in[i].dims());
        din[i].min = din[i].opt = din[i].max = din[i].desc.dims;
        if (i == 0) { din[i].desc.dims.d[0] = -1; din[i].min.d[0] = 1; din[i].max.d[0] = in[i].dims()[0] * 4; }
      }
      for (int32_t o = 0; o < nb_out; ++o) {
        dout[o].desc.type = out_types[o];
        dout[o].desc.format = nvinfer1::TensorFormat::kLINEAR;
        dout[o].desc.dims = to_dims((*out_dims)[o]);
        dout[o].min = dout[o].opt = dout[o].max = dout[o].desc.dims;
      }
      check(build->configurePlugin(din.data(), nb_in, dout.data(), nb_out) == 0, dtag + " configurePlugin with a dynamic range");
      size_t ws = build->getWorkspaceSize(din.data(), nb_in, dout.data(), nb_out);
      check(true, dtag + " getWorkspaceSize = " + std::to_string(ws) + " bytes");
      std::vector<nvinfer1::PluginTensorDesc> pin(nb_in), pout(nb_out);
      for (int32_t i = 0; i < nb_in; ++i) { pin[i] = din[i].desc; pin[i].dims = to_dims(in[i].dims()); }
      for (int32_t o = 0; o < nb_out; ++o) pout[o] = dout[o].desc;
      check(runtime->onShapeChange(pin.data(), nb_in, pout.data(), nb_out) == 0, dtag + " onShapeChange");
      if (!g_has_gpu) {
        std::printf("  (%s: no GPU here: enqueue skipped)\n", dtag.c_str());
        continue;
      }
      auto ref = cpu_reference(*def, ex.attrs, in, *out_dims, out_g);
      Enqueuer e{[&](auto... a) { return runtime->enqueue(a...); }};
      auto got = run_on_gpu(e, in, *out_dims, out_g, ws);
      double tol = ft == graft::DataType::kFloat16 ? 5e-3 : 1e-5;
      bool ok = got.size() == ref.size();
      double worst = 0;
      for (size_t o = 0; ok && o < got.size(); ++o) {
        worst = std::max(worst, rel_error(got[o], ref[o]));
        ok = worst <= tol;
      }
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.3g", worst);
      check(ok, dtag + " enqueue on the GPU matches the CPU reference (rel err " + buf + ")");
      // Serialize, re-create at runtime phase, enqueue again: same bits.
      const auto* ser = runtime->getFieldsToSerialize();
      std::unique_ptr<nvinfer1::IPluginV3> again(ser ? creator->createPlugin("layer0", ser, nvinfer1::TensorRTPhase::kRUNTIME) : nullptr);
      check(again != nullptr, dtag + " getFieldsToSerialize -> createPlugin(kRUNTIME)");
      if (again) {
        auto* rt2 = static_cast<nvinfer1::IPluginV3OneRuntime*>(again->getCapabilityInterface(nvinfer1::PluginCapabilityType::kRUNTIME));
        rt2->onShapeChange(pin.data(), nb_in, pout.data(), nb_out);
        Enqueuer e2{[&](auto... a) { return rt2->enqueue(a...); }};
        check(same_bits(run_on_gpu(e2, in, *out_dims, out_g, ws), got), dtag + " deserialized plugin gives the same output");
      }
      std::unique_ptr<nvinfer1::IPluginV3> cl(plugin->clone());
      auto* rt3 = cl ? static_cast<nvinfer1::IPluginV3OneRuntime*>(cl->getCapabilityInterface(nvinfer1::PluginCapabilityType::kRUNTIME)) : nullptr;
      std::unique_ptr<nvinfer1::IPluginV3> attached(rt3 ? rt3->attachToContext(nullptr) : nullptr);
      auto* rt4 = attached ? static_cast<nvinfer1::IPluginV3OneRuntime*>(attached->getCapabilityInterface(nvinfer1::PluginCapabilityType::kRUNTIME)) : nullptr;
      check(rt4 != nullptr, dtag + " clone + attachToContext");
      if (rt4) {
        rt4->onShapeChange(pin.data(), nb_in, pout.data(), nb_out);
        Enqueuer e4{[&](auto... a) { return rt4->enqueue(a...); }};
        check(same_bits(run_on_gpu(e4, in, *out_dims, out_g, ws), got), dtag + " cloned plugin gives the same output");
      }
    }
  }
  // Bad fields: an unknown field, and a float attribute given as text, are refused with a message.
  {
    Fields f;
    f.add("no_such_attribute", graft::AttrValue(int64_t{1}));
    size_t before = g_finder.logger.errors.size();
    std::unique_ptr<nvinfer1::IPluginV3> p(creator->createPlugin("bad", f.get(), nvinfer1::TensorRTPhase::kBUILD));
    bool named = g_finder.logger.errors.size() > before &&
                 g_finder.logger.errors.back().find("no_such_attribute") != std::string::npos;
    check(p == nullptr && named, tag + " unknown field refused, error names it");
  }
  for (auto& a : def->attrs()) {
    if (a.type != graft::AttrType::kFloat && a.type != graft::AttrType::kInt) continue;
    Fields f;
    f.add(a.name, graft::AttrValue(std::string("text")));
    size_t before = g_finder.logger.errors.size();
    std::unique_ptr<nvinfer1::IPluginV3> p(creator->createPlugin("bad", f.get(), nvinfer1::TensorRTPhase::kBUILD));
    bool named = g_finder.logger.errors.size() > before && g_finder.logger.errors.back().find(a.name) != std::string::npos;
    check(p == nullptr && named, tag + " field '" + a.name + "' of the wrong type refused, error names it");
    if (a.max_value) {
      Fields g;
      if (a.type == graft::AttrType::kFloat) g.add(a.name, graft::AttrValue(static_cast<float>(*a.max_value * 2 + 1)));
      else g.add(a.name, graft::AttrValue(static_cast<int64_t>(*a.max_value) + 1));
      std::unique_ptr<nvinfer1::IPluginV3> q(creator->createPlugin("bad", g.get(), nvinfer1::TensorRTPhase::kBUILD));
      check(q == nullptr, tag + " field '" + a.name + "' out of range refused");
    }
  }
}
#else
// ---- V2 (TensorRT 8.x) -------------------------------------------------------------------------
struct V2Deleter {
  void operator()(nvinfer1::IPluginV2* p) const { if (p) p->destroy(); }
};
using V2Ptr = std::unique_ptr<nvinfer1::IPluginV2DynamicExt, V2Deleter>;

void test_creator(nvinfer1::IPluginCreator* creator) {
  std::string tag = std::string(creator->getPluginName()) + " v" + creator->getPluginVersion();
  std::shared_ptr<const graft::OpDef> def =
      registered_op(creator->getPluginName(), creator->getPluginVersion(), creator->getPluginNamespace());
  check(def != nullptr, tag + " creator names a registered graft op or alias");
  if (!def) return;
  check(!def->examples().empty(), tag + " has an example call to test with");
  std::mt19937 rng(std::random_device{}());
  int idx = 0;
  for (const auto& ex : def->examples()) {
    std::string etag = tag + " example " + std::to_string(idx++);
    Fields f;
    for (auto& [k, v] : ex.attrs.all()) f.add(k, v);
    V2Ptr plugin(static_cast<nvinfer1::IPluginV2DynamicExt*>(creator->createPlugin("layer0", f.get())));
    check(plugin != nullptr, etag + " createPlugin from ONNX-parser fields");
    if (!plugin) continue;
    check(std::string(plugin->getPluginType()) == creator->getPluginName() &&
              std::string(plugin->getPluginVersion()) == creator->getPluginVersion(),
          etag + " the plugin's type and version are its creator's (deserialization finds the same creator)");
    int32_t nb_in = 0;
    for (auto& d : ex.input_dims) if (d) ++nb_in;
    int32_t nb_out = plugin->getNbOutputs();
    check_output_shapes(*def, ex, [&](std::vector<nvinfer1::DimsExprs>& in, std::vector<nvinfer1::DimsExprs>& out, ExprBuilder& b) {
      for (int32_t o = 0; o < nb_out; ++o) {
        out[o] = plugin->getOutputDimensions(o, in.data(), static_cast<int32_t>(in.size()), b);
        if (out[o].nbDims < 0) return false;
      }
      return true;
    }, etag);
    check_format_combinations(*def, nb_in, nb_out, [&](int32_t pos, const nvinfer1::PluginTensorDesc* descs) {
      return plugin->supportsFormatCombination(pos, descs, nb_in, nb_out);
    }, etag);
    for (graft::DataType ft : {graft::DataType::kFloat32, graft::DataType::kFloat16}) {
      auto in = make_inputs(*def, ex, ft, rng);
      std::vector<nvinfer1::DataType> in_types;
      std::vector<graft::DataType> in_g;
      for (auto& t : in) { in_types.push_back(to_trt(t.dtype())); in_g.push_back(t.dtype()); }
      std::vector<graft::DataType> out_g;
      for (int32_t o = 0; o < nb_out; ++o) out_g.push_back(from_trt(plugin->getOutputDataType(o, in_types.data(), nb_in)));
      std::string dtag = etag + " " + graft::dtype_name(ft);
      std::vector<graft::DataType> combo = in_g;
      combo.resize(def->inputs().size(), graft::DataType::kUndefined);
      combo.insert(combo.end(), out_g.begin(), out_g.end());
      if (!def->supports(graft::Backend::kCUDA, combo)) {
        std::printf("  (%s: no CUDA kernel for this dtype combination in this build: enqueue not tested)\n", dtag.c_str());
        continue;
      }
      auto out_dims = graft::infer_concrete_shapes(*def, ex.input_dims, ex.attrs);
      if (!out_dims.is_ok()) { check(false, dtag + " concrete shapes"); continue; }
      std::vector<nvinfer1::DynamicPluginTensorDesc> din(nb_in), dout(nb_out);
      std::vector<nvinfer1::PluginTensorDesc> pin(nb_in), pout(nb_out);
      for (int32_t i = 0; i < nb_in; ++i) {
        pin[i].type = in_types[i]; pin[i].format = nvinfer1::TensorFormat::kLINEAR; pin[i].dims = to_dims(in[i].dims());
        din[i].desc = pin[i]; din[i].min = din[i].max = pin[i].dims;
      }
      for (int32_t o = 0; o < nb_out; ++o) {
        pout[o].type = to_trt(out_g[o]); pout[o].format = nvinfer1::TensorFormat::kLINEAR; pout[o].dims = to_dims((*out_dims)[o]);
        dout[o].desc = pout[o]; dout[o].min = dout[o].max = pout[o].dims;
      }
      plugin->configurePlugin(din.data(), nb_in, dout.data(), nb_out);
      size_t ws = plugin->getWorkspaceSize(pin.data(), nb_in, pout.data(), nb_out);
      if (!g_has_gpu) { std::printf("  (%s: no GPU here: enqueue skipped)\n", dtag.c_str()); continue; }
      auto ref = cpu_reference(*def, ex.attrs, in, *out_dims, out_g);
      Enqueuer e{[&](auto... a) { return plugin->enqueue(a...); }};
      auto got = run_on_gpu(e, in, *out_dims, out_g, ws);
      double tol = ft == graft::DataType::kFloat16 ? 5e-3 : 1e-5;
      bool ok = got.size() == ref.size();
      for (size_t o = 0; ok && o < got.size(); ++o) ok = rel_error(got[o], ref[o]) <= tol;
      check(ok, dtag + " enqueue on the GPU matches the CPU reference");
      std::vector<char> blob(plugin->getSerializationSize());
      plugin->serialize(blob.data());
      V2Ptr again(static_cast<nvinfer1::IPluginV2DynamicExt*>(creator->deserializePlugin("layer0", blob.data(), blob.size())));
      check(again != nullptr, dtag + " serialize -> deserializePlugin");
      if (again) {
        again->configurePlugin(din.data(), nb_in, dout.data(), nb_out);
        Enqueuer e2{[&](auto... a) { return again->enqueue(a...); }};
        check(same_bits(run_on_gpu(e2, in, *out_dims, out_g, ws), got), dtag + " deserialized plugin gives the same output");
      }
      V2Ptr cl(plugin->clone());
      check(cl != nullptr, dtag + " clone");
      if (cl) {
        Enqueuer e3{[&](auto... a) { return cl->enqueue(a...); }};
        check(same_bits(run_on_gpu(e3, in, *out_dims, out_g, ws), got), dtag + " cloned plugin gives the same output");
      }
    }
  }
}
#endif

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: graft_trt_harness libgraft_tensorrt.so\n");
    return 2;
  }
  std::printf("graft TensorRT harness: headers %d.%d.%d, interface %s\n", NV_TENSORRT_MAJOR, NV_TENSORRT_MINOR,
              NV_TENSORRT_PATCH, HARNESS_V3 ? "IPluginV3" : "IPluginV2DynamicExt");
  int count = 0;
  g_has_gpu = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  cudaGetLastError();
  std::printf("GPU: %s\n", g_has_gpu ? "present (enqueue is tested)" : "none (enqueue is skipped)");
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  check(lib != nullptr, std::string("dlopen ") + argv[1] + (lib ? "" : std::string(": ") + dlerror()));
  if (!lib) return 1;
  check(dlsym(lib, "getInferLibVersion") == nullptr, "library does not define libnvinfer symbols");
  auto set_finder = reinterpret_cast<void (*)(nvinfer1::ILoggerFinder*)>(dlsym(lib, "setLoggerFinder"));
  check(set_finder != nullptr, "exports setLoggerFinder");
  if (set_finder) set_finder(&g_finder);
#if HARNESS_V3
  using GetCreators = nvinfer1::IPluginCreatorInterface* const* (*)(int32_t&);
  auto get = reinterpret_cast<GetCreators>(dlsym(lib, "getCreators"));
  check(get != nullptr, "exports getCreators");
#else
  using GetCreators = nvinfer1::IPluginCreator* const* (*)(int32_t&);
  auto get = reinterpret_cast<GetCreators>(dlsym(lib, "getPluginCreators"));
  check(get != nullptr, "exports getPluginCreators");
#endif
  if (!get) return 1;
  int32_t n = 0;
  auto* const* list = get(n);
  // Ops with CPU kernels only get no creator, nor do the TensorRT plugins graft defines for its own
  // engine (trt_common.h, adapted_ops); every alias of an op that has one gets its own (mmdeploy's
  // names), so TensorRT's parser finds those nodes too.
  const auto on_gpu = [](const graft::OpDef& def) {
    if (graft::trt::is_tensorrt_own_plugin(def.name())) return false;
    for (const graft::KernelEntry& k : def.kernels())
      if (k.backend == graft::Backend::kCUDA) return true;
    return false;
  };
  int32_t with_cuda = 0, aliases = 0;
  for (auto& r : graft::OpRegistry::global().all()) with_cuda += on_gpu(*r.def);
  for (const auto& a : graft::OpRegistry::global().aliases()) {
    auto def = graft::OpRegistry::global().find_exact(a.target);
    aliases += def && on_gpu(*def) && !graft::trt::is_tensorrt_own_plugin(a.name);
  }
  check(list != nullptr && n == with_cuda + aliases,
        "one creator per registered graft op with a CUDA kernel and per alias of one (" + std::to_string(n) +
            " of " + std::to_string(with_cuda) + " + " + std::to_string(aliases) + ")");
  std::vector<std::string> alias_creators;
  for (int32_t i = 0; list && i < n; ++i)
    for (const auto& a : graft::OpRegistry::global().aliases())
#if HARNESS_V3
      if (a.name == static_cast<nvinfer1::IPluginCreatorV3One*>(list[i])->getPluginName())
#else
      if (a.name == list[i]->getPluginName())
#endif
        alias_creators.push_back(a.name);
  check(std::find(alias_creators.begin(), alias_creators.end(), "MMCVModulatedDeformConv2d") != alias_creators.end() &&
            std::find(alias_creators.begin(), alias_creators.end(), "MMCVMultiScaleDeformableAttention") !=
                alias_creators.end(),
        "mmdeploy's MMCVModulatedDeformConv2d and MMCVMultiScaleDeformableAttention have creators");
  for (int32_t i = 0; list && i < n; ++i) test_creator(list[i]);
  std::printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
