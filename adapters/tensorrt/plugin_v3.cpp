#include "plugin_v3.h"

#if GRAFT_TRT_PLUGIN_V3
namespace graft::trt {

GraftPluginV3::GraftPluginV3(AdaptedOp op, AttributeMap attrs, std::string layer_name)
    : def_(std::move(op.def)), plugin_name_(std::move(op.plugin_name)), attrs_(std::move(attrs)),
      layer_name_(std::move(layer_name)) {}

void GraftPluginV3::report(const std::string& what, const Status& st) const noexcept {
  std::string msg = what + ": " + st.to_string();
  if (recorder_) {
    try {
      recorder_->reportError(nvinfer1::ErrorCode::kINTERNAL_ERROR, msg.c_str());
    } catch (...) {
    }
  }
  log_error(plugin_name_ + " (layer '" + layer_name_ + "')", msg);
}

nvinfer1::IPluginCapability* GraftPluginV3::getCapabilityInterface(nvinfer1::PluginCapabilityType type) noexcept {
  switch (type) {
    case nvinfer1::PluginCapabilityType::kCORE: return static_cast<nvinfer1::IPluginV3OneCore*>(this);
    case nvinfer1::PluginCapabilityType::kBUILD: return static_cast<nvinfer1::IPluginV3OneBuild*>(this);
    case nvinfer1::PluginCapabilityType::kRUNTIME: return static_cast<nvinfer1::IPluginV3OneRuntime*>(this);
  }
  return nullptr;
}

nvinfer1::IPluginV3* GraftPluginV3::clone() noexcept {
  try {
    auto* p = new GraftPluginV3({def_, plugin_name_}, attrs_, layer_name_);
    p->recorder_ = recorder_;
    p->nb_inputs_ = nb_inputs_;
    return p;
  } catch (...) {
    return nullptr;
  }
}

const char* GraftPluginV3::getPluginName() const noexcept { return plugin_name_.c_str(); }
const char* GraftPluginV3::getPluginVersion() const noexcept { return def_->identity().version.c_str(); }
const char* GraftPluginV3::getPluginNamespace() const noexcept { return def_->identity().plugin_namespace.c_str(); }

int32_t GraftPluginV3::configurePlugin(const nvinfer1::DynamicPluginTensorDesc* in, int32_t nb_in,
                                       const nvinfer1::DynamicPluginTensorDesc* out, int32_t nb_out) noexcept {
  // Validate the dtype combination TensorRT settled on; shapes are checked per run in onShapeChange.
  nb_inputs_ = nb_in;
  std::vector<DataType> combo;
  for (int32_t i = 0; i < nb_in; ++i) combo.push_back(from_trt(in[i].desc.type).value_or(DataType::kUndefined));
  combo.resize(def_->inputs().size(), DataType::kUndefined);
  for (int32_t i = 0; i < nb_out; ++i) combo.push_back(from_trt(out[i].desc.type).value_or(DataType::kUndefined));
  if (!def_->supports(Backend::kCUDA, combo)) {
    report("configurePlugin", error(StatusCode::kUnsupported, "no CUDA kernel for this dtype combination"));
    return 1;
  }
  return 0;
}

int32_t GraftPluginV3::getOutputDataTypes(nvinfer1::DataType* output_types, int32_t nb_outputs,
                                          const nvinfer1::DataType* input_types, int32_t nb_inputs) const noexcept {
  try {
    std::vector<DataType> in;
    for (int32_t i = 0; i < nb_inputs; ++i) {
      auto t = from_trt(input_types[i]);
      if (!t) {
        report("getOutputDataTypes", error(StatusCode::kUnsupported, "input ", static_cast<int64_t>(i), " has a dtype graft lacks"));
        return 1;
      }
      in.push_back(*t);
    }
    auto out = def_->infer_dtypes(in, attrs_);
    if (!out.is_ok()) {
      report("getOutputDataTypes", out.status());
      return 1;
    }
    if (static_cast<int32_t>(out->size()) != nb_outputs) return 1;
    for (int32_t i = 0; i < nb_outputs; ++i) {
      auto t = to_trt((*out)[i]);
      if (!t) return 1;
      output_types[i] = *t;
    }
    return 0;
  } catch (...) {
    return 1;
  }
}

int32_t GraftPluginV3::getOutputShapes(const nvinfer1::DimsExprs* inputs, int32_t nb_inputs,
                                       const nvinfer1::DimsExprs*, int32_t, nvinfer1::DimsExprs* outputs,
                                       int32_t nb_outputs, nvinfer1::IExprBuilder& builder) noexcept {
  try {
    std::vector<nvinfer1::DimsExprs> out;
    Status st = shapes_from_exprs(*def_, attrs_, inputs, nb_inputs, builder, out);
    if (!st.is_ok()) {
      report("getOutputShapes", st);
      return 1;
    }
    if (static_cast<int32_t>(out.size()) != nb_outputs) return 1;
    for (int32_t i = 0; i < nb_outputs; ++i) outputs[i] = out[i];
    return 0;
  } catch (...) {
    return 1;
  }
}

bool GraftPluginV3::supportsFormatCombination(int32_t pos, const nvinfer1::DynamicPluginTensorDesc* in_out,
                                              int32_t nb_inputs, int32_t nb_outputs) noexcept {
  try {
    std::vector<const nvinfer1::PluginTensorDesc*> descs;
    for (int32_t i = 0; i < nb_inputs + nb_outputs; ++i) descs.push_back(&in_out[i].desc);
    return supports_combination(*def_, pos, descs.data(), nb_inputs, nb_outputs);
  } catch (...) {
    return false;
  }
}

int32_t GraftPluginV3::getNbOutputs() const noexcept { return static_cast<int32_t>(def_->outputs().size()); }

size_t GraftPluginV3::getWorkspaceSize(const nvinfer1::DynamicPluginTensorDesc* inputs, int32_t nb_inputs,
                                       const nvinfer1::DynamicPluginTensorDesc* outputs,
                                       int32_t nb_outputs) const noexcept {
  try {
    // Size for the largest shapes of the profile: one allocation serves every shape in it.
    std::vector<ConcreteDesc> in, out;
    for (int32_t i = 0; i < nb_inputs; ++i) in.push_back(concrete_desc(inputs[i].desc.type, inputs[i].max));
    for (int32_t i = 0; i < nb_outputs; ++i) out.push_back(concrete_desc(outputs[i].desc.type, outputs[i].max));
    return workspace_for(*def_, attrs_, std::move(in), out);
  } catch (...) {
    return 0;
  }
}

int32_t GraftPluginV3::onShapeChange(const nvinfer1::PluginTensorDesc* in, int32_t nb_in,
                                     const nvinfer1::PluginTensorDesc* out, int32_t nb_out) noexcept {
  try {
    nb_inputs_ = nb_in;
    std::vector<std::optional<std::vector<int64_t>>> dims;
    for (int32_t i = 0; i < nb_in; ++i) dims.emplace_back(std::vector<int64_t>(in[i].dims.d, in[i].dims.d + in[i].dims.nbDims));
    while (dims.size() < def_->inputs().size()) dims.emplace_back(std::nullopt);
    auto expect = infer_concrete_shapes(*def_, dims, attrs_);
    if (!expect.is_ok()) {
      report("onShapeChange", expect.status());
      return 1;
    }
    for (int32_t o = 0; o < nb_out && o < static_cast<int32_t>(expect->size()); ++o) {
      std::vector<int64_t> got(out[o].dims.d, out[o].dims.d + out[o].dims.nbDims);
      if (got != (*expect)[o]) {
        report("onShapeChange", error(StatusCode::kInvalidArgument, "output ", static_cast<int64_t>(o),
                                      " shape does not match the op's shape function"));
        return 1;
      }
    }
    return 0;
  } catch (...) {
    return 1;
  }
}

int32_t GraftPluginV3::enqueue(const nvinfer1::PluginTensorDesc* input_desc,
                               const nvinfer1::PluginTensorDesc* output_desc, const void* const* inputs,
                               void* const* outputs, void* workspace, cudaStream_t stream) noexcept {
  try {
    // The node's input count (absent optional inputs come last) was given by onShapeChange.
    auto ctx = kernel_context(*def_, attrs_, input_desc, nb_inputs_, output_desc, getNbOutputs(), inputs, outputs,
                              workspace, stream);
    if (!ctx.is_ok()) {
      report("enqueue", ctx.status());
      return 1;
    }
    Status st = def_->run(Backend::kCUDA, *ctx);
    if (!st.is_ok()) {
      report("enqueue", st);
      return 1;
    }
    return 0;
  } catch (...) {
    return 1;
  }
}

nvinfer1::IPluginV3* GraftPluginV3::attachToContext(nvinfer1::IPluginResourceContext* context) noexcept {
  auto* p = static_cast<GraftPluginV3*>(clone());
  if (p && context) p->recorder_ = context->getErrorRecorder();
  return p;
}

const nvinfer1::PluginFieldCollection* GraftPluginV3::getFieldsToSerialize() noexcept {
  try {
    serialized_ = serialize_attributes(attrs_);
    serialized_field_ = nvinfer1::PluginField(kSerializedField, serialized_.c_str(), nvinfer1::PluginFieldType::kCHAR,
                                              static_cast<int32_t>(serialized_.size()));
    serialized_fc_.nbFields = 1;
    serialized_fc_.fields = &serialized_field_;
    return &serialized_fc_;
  } catch (...) {
    return nullptr;
  }
}

// ---- creator ---------------------------------------------------------------------------------
GraftCreatorV3::GraftCreatorV3(AdaptedOp op) : op_(std::move(op)), fields_(*op_.def) {}

nvinfer1::IPluginV3* GraftCreatorV3::createPlugin(const char* name, const nvinfer1::PluginFieldCollection* fc,
                                                  nvinfer1::TensorRTPhase phase) noexcept {
  try {
    auto attrs = attributes_from_fields(*op_.def, fc);
    if (!attrs.is_ok()) {
      log_error(op_.plugin_name + " (layer '" + std::string(name ? name : "") + "')",
                std::string(phase == nvinfer1::TensorRTPhase::kBUILD ? "createPlugin" : "deserialize") + ": " +
                    attrs.status().to_string());
      return nullptr;
    }
    return new GraftPluginV3(op_, std::move(attrs).value(), name ? name : "");
  } catch (...) {
    return nullptr;
  }
}

const nvinfer1::PluginFieldCollection* GraftCreatorV3::getFieldNames() noexcept { return fields_.collection(); }
const char* GraftCreatorV3::getPluginName() const noexcept { return op_.plugin_name.c_str(); }
const char* GraftCreatorV3::getPluginVersion() const noexcept { return op_.def->identity().version.c_str(); }
const char* GraftCreatorV3::getPluginNamespace() const noexcept { return op_.def->identity().plugin_namespace.c_str(); }

}  // namespace graft::trt
#endif
