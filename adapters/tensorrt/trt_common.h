// Shared pieces of the TensorRT adapter: dtype mapping, the shape-expression bridge, plugin fields
// <-> graft attributes, and logging. Everything here is noexcept-safe: callers sit on TensorRT's
// interface boundary and must never let an exception escape.
#pragma once

#include <NvInfer.h>
#include <NvInferVersion.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graft/op.h"
#include "graft/registry.h"

#if NV_TENSORRT_MAJOR >= 10
#define GRAFT_TRT_PLUGIN_V3 1
#else
#define GRAFT_TRT_PLUGIN_V3 0
#endif

namespace graft::trt {

// TensorRT's int64 dims exist from 10.0; 8.x uses int32 everywhere.
#if NV_TENSORRT_MAJOR >= 10
using DimValue = int64_t;
#else
using DimValue = int32_t;
#endif

// graft dtype <-> TensorRT dtype. nullopt when one side lacks the type.
std::optional<nvinfer1::DataType> to_trt(DataType t);
std::optional<DataType> from_trt(nvinfer1::DataType t);

// graft's shape functions over TensorRT's IExprBuilder: one to one, same operations.
class ExprBridge final : public ShapeExprBuilder {
 public:
  explicit ExprBridge(nvinfer1::IExprBuilder& b) : builder_(b) {}
  const void* constant(int64_t v) override;
  const void* operation(DimOp op, const void* a, const void* b) override;
  std::optional<int64_t> constant_value(const void* e) override;

 private:
  nvinfer1::IExprBuilder& builder_;
};

// Runs the op's shape function over TensorRT expressions for one (or every) output.
Status shapes_from_exprs(const OpDef& def, const AttributeMap& attrs, const nvinfer1::DimsExprs* inputs,
                         int32_t nb_inputs, nvinfer1::IExprBuilder& builder,
                         std::vector<nvinfer1::DimsExprs>& outputs);

// The field list a creator advertises (getFieldNames): one per attribute, typed as TensorRT's ONNX
// parser produces them (FLOAT -> kFLOAT32, INT/INTS -> kINT32, STRING -> kCHAR).
class FieldList {
 public:
  explicit FieldList(const OpDef& def);
  const nvinfer1::PluginFieldCollection* collection() const { return &collection_; }

 private:
  std::vector<std::string> names_;
  std::vector<nvinfer1::PluginField> fields_;
  nvinfer1::PluginFieldCollection collection_{};
};

// The single field carrying the serialized attributes (getFieldsToSerialize / runtime phase).
inline constexpr const char* kSerializedField = "graft_attributes";

// Plugin fields -> validated attributes. Accepts kINT32 and kINT64 for int attributes (the ONNX parser
// narrows to kINT32), kFLOAT32/kFLOAT64/kFLOAT16 for floats, kCHAR for strings, and the serialized
// field. Unknown field names, wrong types and out-of-range values are errors naming the field.
Result<AttributeMap> attributes_from_fields(const OpDef& def, const nvinfer1::PluginFieldCollection* fc);

// Kernel context from TensorRT's tensor descriptions (dims copied, dtypes mapped).
Result<KernelContext> kernel_context(const OpDef& def, const AttributeMap& attrs,
                                     const nvinfer1::PluginTensorDesc* in, int32_t nb_in,
                                     const nvinfer1::PluginTensorDesc* out, int32_t nb_out,
                                     const void* const* inputs, void* const* outputs, void* workspace,
                                     void* stream);

// The op's workspace for these TensorRT descriptions (dims given separately: V3 sizes for the
// profile's max, V2 for the dims it is called with). Missing trailing optional inputs are padded.
ConcreteDesc concrete_desc(nvinfer1::DataType type, const nvinfer1::Dims& dims);
size_t workspace_for(const OpDef& def, const AttributeMap& attrs, std::vector<ConcreteDesc> in,
                     const std::vector<ConcreteDesc>& out);

// Whether position `pos` of a format combination is supported: linear format and a CUDA kernel
// declared for the dtypes at positions 0..pos. Only what kernels really support is accepted.
bool supports_combination(const OpDef& def, int32_t pos, const nvinfer1::PluginTensorDesc* const* descs,
                          int32_t nb_inputs, int32_t nb_outputs);

// Logging: through the logger TensorRT handed over with setLoggerFinder, else stderr.
void set_logger_finder(nvinfer1::ILoggerFinder* finder);
void log_error(const std::string& plugin, const std::string& message) noexcept;
void log_info(const std::string& message) noexcept;

// One creator's worth: an op and the plugin name TensorRT finds it under, the op's own name or one
// of its registry aliases (mmdeploy's MMCVModulatedDeformConv2d for ModulatedDeformConv2d). Version
// and namespace are the op's. A plugin keeps the name its creator has, so that an engine TensorRT
// serialized finds the same creator again at deserialization.
struct AdaptedOp {
  std::shared_ptr<const OpDef> def;
  std::string plugin_name;
};

// Every registered graft op with a CUDA kernel (graft's own, plus plugin libraries named in
// GRAFT_PLUGIN_LIBRARIES, a colon-separated list, loaded once), once under its own name and once
// under each alias name. An op with CPU kernels only is left out (a TensorRT plugin runs on the
// GPU), and so are EfficientNMS_TRT and BatchedNMSDynamic_TRT, which graft defines for its own
// engine under the names of plugins TensorRT ships: a creator of ours would shadow TensorRT's. An
// alias whose name, version and namespace an op already has gets no second creator.
std::vector<AdaptedOp> adapted_ops();
// Whether `name` is one of those TensorRT plugins graft defines for its own engine only (header-only,
// so the harness can count the creators it should find).
inline bool is_tensorrt_own_plugin(const std::string& name) {
  return name == "EfficientNMS_TRT" || name == "BatchedNMSDynamic_TRT";
}
bool has_cuda_kernel(const OpDef& def);

}  // namespace graft::trt
