#include "plugin_v2.h"

#if !GRAFT_TRT_PLUGIN_V3
#include <cstring>

namespace graft::trt {

GraftPluginV2::GraftPluginV2(AdaptedOp op, AttributeMap attrs)
    : def_(std::move(op.def)), plugin_name_(std::move(op.plugin_name)), attrs_(std::move(attrs)),
      serialized_(serialize_attributes(attrs_)),
      namespace_(def_->identity().plugin_namespace) {}

nvinfer1::IPluginV2DynamicExt* GraftPluginV2::clone() const noexcept {
  try {
    auto* p = new GraftPluginV2({def_, plugin_name_}, attrs_);
    p->namespace_ = namespace_;
    p->nb_inputs_ = nb_inputs_;
    return p;
  } catch (...) {
    return nullptr;
  }
}

nvinfer1::DimsExprs GraftPluginV2::getOutputDimensions(int32_t output_index, const nvinfer1::DimsExprs* inputs,
                                                       int32_t nb_inputs, nvinfer1::IExprBuilder& builder) noexcept {
  nvinfer1::DimsExprs bad{};
  bad.nbDims = -1;
  try {
    std::vector<nvinfer1::DimsExprs> out;
    Status st = shapes_from_exprs(*def_, attrs_, inputs, nb_inputs, builder, out);
    if (!st.is_ok()) {
      log_error(plugin_name_, "getOutputDimensions: " + st.to_string());
      return bad;
    }
    if (output_index < 0 || output_index >= static_cast<int32_t>(out.size())) return bad;
    return out[output_index];
  } catch (...) {
    return bad;
  }
}

bool GraftPluginV2::supportsFormatCombination(int32_t pos, const nvinfer1::PluginTensorDesc* in_out,
                                              int32_t nb_inputs, int32_t nb_outputs) noexcept {
  try {
    std::vector<const nvinfer1::PluginTensorDesc*> descs;
    for (int32_t i = 0; i < nb_inputs + nb_outputs; ++i) descs.push_back(&in_out[i]);
    return supports_combination(*def_, pos, descs.data(), nb_inputs, nb_outputs);
  } catch (...) {
    return false;
  }
}

void GraftPluginV2::configurePlugin(const nvinfer1::DynamicPluginTensorDesc*, int32_t nb_in,
                                    const nvinfer1::DynamicPluginTensorDesc*, int32_t) noexcept {
  nb_inputs_ = nb_in;
}

size_t GraftPluginV2::getWorkspaceSize(const nvinfer1::PluginTensorDesc* inputs, int32_t nb_inputs,
                                       const nvinfer1::PluginTensorDesc* outputs, int32_t nb_outputs) const noexcept {
  try {
    std::vector<ConcreteDesc> in, out;
    for (int32_t i = 0; i < nb_inputs; ++i) in.push_back(concrete_desc(inputs[i].type, inputs[i].dims));
    for (int32_t i = 0; i < nb_outputs; ++i) out.push_back(concrete_desc(outputs[i].type, outputs[i].dims));
    return workspace_for(*def_, attrs_, std::move(in), out);
  } catch (...) {
    return 0;
  }
}

int32_t GraftPluginV2::enqueue(const nvinfer1::PluginTensorDesc* input_desc,
                               const nvinfer1::PluginTensorDesc* output_desc, const void* const* inputs,
                               void* const* outputs, void* workspace, cudaStream_t stream) noexcept {
  try {
    int32_t nb_in = nb_inputs_ > 0 ? nb_inputs_ : static_cast<int32_t>(def_->inputs().size());
    auto ctx = kernel_context(*def_, attrs_, input_desc, nb_in, output_desc, getNbOutputs(), inputs, outputs,
                              workspace, stream);
    if (!ctx.is_ok()) {
      log_error(plugin_name_, "enqueue: " + ctx.status().to_string());
      return 1;
    }
    Status st = def_->run(Backend::kCUDA, *ctx);
    if (!st.is_ok()) {
      log_error(plugin_name_, "enqueue: " + st.to_string());
      return 1;
    }
    return 0;
  } catch (...) {
    return 1;
  }
}

nvinfer1::DataType GraftPluginV2::getOutputDataType(int32_t index, const nvinfer1::DataType* input_types,
                                                    int32_t nb_inputs) const noexcept {
  try {
    std::vector<DataType> in;
    for (int32_t i = 0; i < nb_inputs; ++i) in.push_back(from_trt(input_types[i]).value_or(DataType::kUndefined));
    auto out = def_->infer_dtypes(in, attrs_);
    if (out.is_ok() && index >= 0 && index < static_cast<int32_t>(out->size()))
      if (auto t = to_trt((*out)[index])) return *t;
    log_error(plugin_name_, "getOutputDataType: " + (out.is_ok() ? std::string("bad index") : out.status().to_string()));
  } catch (...) {
  }
  return nvinfer1::DataType::kFLOAT;
}

const char* GraftPluginV2::getPluginType() const noexcept { return plugin_name_.c_str(); }
const char* GraftPluginV2::getPluginVersion() const noexcept { return def_->identity().version.c_str(); }
int32_t GraftPluginV2::getNbOutputs() const noexcept { return static_cast<int32_t>(def_->outputs().size()); }
size_t GraftPluginV2::getSerializationSize() const noexcept { return serialized_.size(); }
void GraftPluginV2::serialize(void* buffer) const noexcept { std::memcpy(buffer, serialized_.data(), serialized_.size()); }
void GraftPluginV2::setPluginNamespace(const char* ns) noexcept { namespace_ = ns ? ns : ""; }
const char* GraftPluginV2::getPluginNamespace() const noexcept { return namespace_.c_str(); }

GraftCreatorV2::GraftCreatorV2(AdaptedOp op)
    : op_(std::move(op)), fields_(*op_.def), namespace_(op_.def->identity().plugin_namespace) {}
const char* GraftCreatorV2::getPluginName() const noexcept { return op_.plugin_name.c_str(); }
const char* GraftCreatorV2::getPluginVersion() const noexcept { return op_.def->identity().version.c_str(); }
const nvinfer1::PluginFieldCollection* GraftCreatorV2::getFieldNames() noexcept { return fields_.collection(); }

nvinfer1::IPluginV2* GraftCreatorV2::createPlugin(const char* name, const nvinfer1::PluginFieldCollection* fc) noexcept {
  try {
    auto attrs = attributes_from_fields(*op_.def, fc);
    if (!attrs.is_ok()) {
      log_error(op_.plugin_name + " (layer '" + std::string(name ? name : "") + "')", "createPlugin: " + attrs.status().to_string());
      return nullptr;
    }
    auto* p = new GraftPluginV2(op_, std::move(attrs).value());
    p->setPluginNamespace(namespace_.c_str());
    return p;
  } catch (...) {
    return nullptr;
  }
}

nvinfer1::IPluginV2* GraftCreatorV2::deserializePlugin(const char* name, const void* data, size_t length) noexcept {
  try {
    if (!data) return nullptr;
    auto attrs = deserialize_attributes(std::string(static_cast<const char*>(data), length));
    Status st = attrs.is_ok() ? op_.def->validate_attributes(*attrs) : attrs.status();
    if (!st.is_ok()) {
      log_error(op_.plugin_name + " (layer '" + std::string(name ? name : "") + "')", "deserializePlugin: " + st.to_string());
      return nullptr;
    }
    auto* p = new GraftPluginV2(op_, std::move(attrs).value());
    p->setPluginNamespace(namespace_.c_str());
    return p;
  } catch (...) {
    return nullptr;
  }
}

void GraftCreatorV2::setPluginNamespace(const char* ns) noexcept { namespace_ = ns ? ns : ""; }
const char* GraftCreatorV2::getPluginNamespace() const noexcept { return namespace_.c_str(); }

}  // namespace graft::trt
#endif
