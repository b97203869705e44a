// TensorRT 10/11: any graft op as IPluginV3 (OneCore + OneBuild + OneRuntime) with an
// IPluginCreatorV3One creator. No per-op code: everything comes from the OpDef.
#pragma once

#include "trt_common.h"

#if GRAFT_TRT_PLUGIN_V3
namespace graft::trt {

class GraftPluginV3 final : public nvinfer1::IPluginV3,
                            public nvinfer1::IPluginV3OneCore,
                            public nvinfer1::IPluginV3OneBuild,
                            public nvinfer1::IPluginV3OneRuntime {
 public:
  GraftPluginV3(AdaptedOp op, AttributeMap attrs, std::string layer_name);
  const AttributeMap& attributes() const { return attrs_; }

  // IPluginV3
  nvinfer1::IPluginCapability* getCapabilityInterface(nvinfer1::PluginCapabilityType type) noexcept override;
  nvinfer1::IPluginV3* clone() noexcept override;
  // IPluginV3OneCore
  const char* getPluginName() const noexcept override;
  const char* getPluginVersion() const noexcept override;
  const char* getPluginNamespace() const noexcept override;
  // IPluginV3OneBuild
  int32_t configurePlugin(const nvinfer1::DynamicPluginTensorDesc* in, int32_t nb_in,
                          const nvinfer1::DynamicPluginTensorDesc* out, int32_t nb_out) noexcept override;
  int32_t getOutputDataTypes(nvinfer1::DataType* output_types, int32_t nb_outputs,
                             const nvinfer1::DataType* input_types, int32_t nb_inputs) const noexcept override;
  int32_t getOutputShapes(const nvinfer1::DimsExprs* inputs, int32_t nb_inputs,
                          const nvinfer1::DimsExprs* shape_inputs, int32_t nb_shape_inputs,
                          nvinfer1::DimsExprs* outputs, int32_t nb_outputs,
                          nvinfer1::IExprBuilder& builder) noexcept override;
  bool supportsFormatCombination(int32_t pos, const nvinfer1::DynamicPluginTensorDesc* in_out,
                                 int32_t nb_inputs, int32_t nb_outputs) noexcept override;
  int32_t getNbOutputs() const noexcept override;
  size_t getWorkspaceSize(const nvinfer1::DynamicPluginTensorDesc* inputs, int32_t nb_inputs,
                          const nvinfer1::DynamicPluginTensorDesc* outputs, int32_t nb_outputs) const noexcept override;
  // IPluginV3OneRuntime
  int32_t onShapeChange(const nvinfer1::PluginTensorDesc* in, int32_t nb_in,
                        const nvinfer1::PluginTensorDesc* out, int32_t nb_out) noexcept override;
  int32_t enqueue(const nvinfer1::PluginTensorDesc* input_desc, const nvinfer1::PluginTensorDesc* output_desc,
                  const void* const* inputs, void* const* outputs, void* workspace,
                  cudaStream_t stream) noexcept override;
  nvinfer1::IPluginV3* attachToContext(nvinfer1::IPluginResourceContext* context) noexcept override;
  const nvinfer1::PluginFieldCollection* getFieldsToSerialize() noexcept override;

 private:
  void report(const std::string& what, const Status& st) const noexcept;
  std::shared_ptr<const OpDef> def_;
  std::string plugin_name_;  // the creator's: the op's name or an alias
  AttributeMap attrs_;
  std::string layer_name_;
  std::string serialized_;
  nvinfer1::PluginField serialized_field_;
  nvinfer1::PluginFieldCollection serialized_fc_{};
  nvinfer1::IErrorRecorder* recorder_ = nullptr;
  int32_t nb_inputs_ = 0;  // set by configurePlugin / onShapeChange
};

class GraftCreatorV3 final : public nvinfer1::IPluginCreatorV3One {
 public:
  explicit GraftCreatorV3(AdaptedOp op);
  nvinfer1::IPluginV3* createPlugin(const char* name, const nvinfer1::PluginFieldCollection* fc,
                                    nvinfer1::TensorRTPhase phase) noexcept override;
  const nvinfer1::PluginFieldCollection* getFieldNames() noexcept override;
  const char* getPluginName() const noexcept override;
  const char* getPluginVersion() const noexcept override;
  const char* getPluginNamespace() const noexcept override;

 private:
  AdaptedOp op_;
  FieldList fields_;
};

}  // namespace graft::trt
#endif
