// TensorRT 8.x: any graft op as IPluginV2DynamicExt with an IPluginCreator (the interface the
// seed names). Same mapping as the V3 path; serialization is the attribute JSON.
#pragma once

#include "trt_common.h"

#if !GRAFT_TRT_PLUGIN_V3
namespace graft::trt {

class GraftPluginV2 final : public nvinfer1::IPluginV2DynamicExt {
 public:
  GraftPluginV2(AdaptedOp op, AttributeMap attrs);
  const AttributeMap& attributes() const { return attrs_; }

  // IPluginV2DynamicExt
  nvinfer1::IPluginV2DynamicExt* clone() const noexcept override;
  nvinfer1::DimsExprs getOutputDimensions(int32_t output_index, const nvinfer1::DimsExprs* inputs,
                                          int32_t nb_inputs, nvinfer1::IExprBuilder& builder) noexcept override;
  bool supportsFormatCombination(int32_t pos, const nvinfer1::PluginTensorDesc* in_out, int32_t nb_inputs,
                                 int32_t nb_outputs) noexcept override;
  void configurePlugin(const nvinfer1::DynamicPluginTensorDesc* in, int32_t nb_in,
                       const nvinfer1::DynamicPluginTensorDesc* out, int32_t nb_out) noexcept override;
  size_t getWorkspaceSize(const nvinfer1::PluginTensorDesc* inputs, int32_t nb_inputs,
                          const nvinfer1::PluginTensorDesc* outputs, int32_t nb_outputs) const noexcept override;
  int32_t enqueue(const nvinfer1::PluginTensorDesc* input_desc, const nvinfer1::PluginTensorDesc* output_desc,
                  const void* const* inputs, void* const* outputs, void* workspace,
                  cudaStream_t stream) noexcept override;
  // IPluginV2Ext
  nvinfer1::DataType getOutputDataType(int32_t index, const nvinfer1::DataType* input_types,
                                       int32_t nb_inputs) const noexcept override;
  // IPluginV2
  const char* getPluginType() const noexcept override;
  const char* getPluginVersion() const noexcept override;
  int32_t getNbOutputs() const noexcept override;
  int32_t initialize() noexcept override { return 0; }
  void terminate() noexcept override {}
  size_t getSerializationSize() const noexcept override;
  void serialize(void* buffer) const noexcept override;
  void destroy() noexcept override { delete this; }
  void setPluginNamespace(const char* ns) noexcept override;
  const char* getPluginNamespace() const noexcept override;

 private:
  std::shared_ptr<const OpDef> def_;
  std::string plugin_name_;  // the creator's: the op's name or an alias
  AttributeMap attrs_;
  std::string serialized_;
  std::string namespace_;
  int32_t nb_inputs_ = 0;
};

class GraftCreatorV2 final : public nvinfer1::IPluginCreator {
 public:
  explicit GraftCreatorV2(AdaptedOp op);
  const char* getPluginName() const noexcept override;
  const char* getPluginVersion() const noexcept override;
  const nvinfer1::PluginFieldCollection* getFieldNames() noexcept override;
  nvinfer1::IPluginV2* createPlugin(const char* name, const nvinfer1::PluginFieldCollection* fc) noexcept override;
  nvinfer1::IPluginV2* deserializePlugin(const char* name, const void* data, size_t length) noexcept override;
  void setPluginNamespace(const char* ns) noexcept override;
  const char* getPluginNamespace() const noexcept override;

 private:
  AdaptedOp op_;
  FieldList fields_;
  std::string namespace_;
};

}  // namespace graft::trt
#endif
