// Tensor <-> onnx::TensorProto conversions shared by the importer and the plan writer.
#pragma once

#include <string>

#include "graft/tensor.h"

namespace onnx {
class TensorProto;
}

namespace graft {

// Reads raw_data, typed fields or external data (relative to base_dir). Errors name the tensor.
Result<Tensor> tensor_from_proto(const onnx::TensorProto& tp, const std::string& base_dir);
// Always writes raw_data (little-endian, as ONNX specifies).
void tensor_to_proto(const Tensor& t, const std::string& name, onnx::TensorProto* tp);

}  // namespace graft
