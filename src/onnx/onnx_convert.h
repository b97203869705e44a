// Tensor <-> onnx::TensorProto conversions shared by the importer and the plan writer, and the
// attribute reader the importer and the builtin schemas (a schema's defaults) share.
#pragma once

#include <string>

#include "graft/tensor.h"

#include "graft/attribute.h"

namespace onnx {
class AttributeProto;
class TensorProto;
}

namespace graft {

// Reads raw_data, typed fields or external data (relative to base_dir). Errors name the tensor.
Result<Tensor> tensor_from_proto(const onnx::TensorProto& tp, const std::string& base_dir);
// Always writes raw_data (little-endian, as ONNX specifies).
void tensor_to_proto(const Tensor& t, const std::string& name, onnx::TensorProto* tp);
// An attribute's value (an untyped one read by the field it sets; a tensor through
// tensor_from_proto). Graph, sparse and list-of-tensor kinds are errors: the importer reads graphs
// as subgraphs.
Result<AttrValue> attribute_from_proto(const onnx::AttributeProto& ap, const std::string& base_dir);

}  // namespace graft
