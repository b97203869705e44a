// ONNX importer: ModelProto (protobuf, from libonnx-dev) -> graft Graph IR.
//
// What it accepts: IR versions 3..10, default-domain opset 1..21 (1..10 converted to 11 first,
// opset_conversion.h), initializers (raw or typed fields, external data), value_info, symbolic
// dims, the attribute kinds graft supports, builtin ops from the OpEntry table and custom ops
// from the OpRegistry (looked up as TensorRT's ONNX parser does: op_type + plugin_version +
// plugin_namespace).
//
// Conventions worth knowing:
// - Constant nodes become constant Values (no node remains for them).
// - Graph inputs that also have an initializer are constants, not runtime inputs.
// - A dim without dim_value/dim_param gets a fresh symbol "<input>__dim<i>".
// - The seed project's convention for custom-op parameters is accepted: when a custom node has one
//   more input than its OpDef declares and that input is a constant integer tensor holding a JSON
//   object as character codes (e.g. {"param": 0.5}), the JSON keys become typed attributes (typed by
//   the OpDef's AttrSpec) and the input is dropped. The key "param" maps to the op's first float
//   attribute when no attribute is named "param".
// - Every unsupported node is reported in one error (name and op type of each).
#pragma once

#include <memory>
#include <string>

#include "graft/status.h"
#include "graph/graph.h"

namespace onnx {
class ModelProto;
class TypeProto;
}

namespace graft {

// IR versions after 10 add data types (11: float4e2m1, 12: float8e8m0, later ones more) and
// metadata (11: multi-device configuration, a placement hint graft ignores); none changes what an
// operator means, and a tensor of a data type graft does not know is refused by name. onnx 1.23's
// helper.make_model writes IR 14 by default, so refusing those models would refuse most that
// people assemble by hand.
inline constexpr int64_t kMinIrVersion = 3;
inline constexpr int64_t kMaxIrVersion = 14;
// Opsets kMinOpset..kMaxOpset are read directly; older ones are converted first
// (opset_conversion.h). The op schemas take the semantics of 18..20 from the node's opset (Reduce*
// and Pad axes as inputs, Split num_outputs, Resize antialias/axes/keep_aspect_ratio_policy and
// half_pixel_symmetric, ScatterElements/ND max/min, pooling dilations) and refuse what their
// kernels lack. Opset 21 added blocked scales to QuantizeLinear and DequantizeLinear (block_size,
// read by both backends) and types (int4/uint4, float8), which graft refuses as types;
// GroupNormalization, whose meaning changed at 21, is not a graft op.
inline constexpr int64_t kMinOpset = 11;
inline constexpr int64_t kMaxOpset = 21;

// import_onnx_file and import_onnx_bytes take a user's model: one that names graft's internal ops
// (ops/internal_ops.h) is refused, naming the node. import_onnx_model takes what graft itself
// wrote (plans).
Result<std::unique_ptr<Graph>> import_onnx_file(const std::string& path);
// `base_dir` resolves external-data locations; empty means the directory of name_for_errors.
Result<std::unique_ptr<Graph>> import_onnx_bytes(const std::string& bytes,
                                                 const std::string& name_for_errors,
                                                 const std::string& base_dir = "");
// Import an already parsed model (plans reuse this path).
Result<std::unique_ptr<Graph>> import_onnx_model(const onnx::ModelProto& model,
                                                 const std::string& name_for_errors,
                                                 const std::string& base_dir);

// An ONNX value type as a graft desc: a tensor, a sequence of tensors, or an optional of either
// (TensorDesc::kind). Other types (maps, sparse tensors, nested sequences, unknown element types)
// are kUnsupported naming `value_name`. Also read by the conformance runner for its data files.
Result<TensorDesc> desc_from_type(const onnx::TypeProto& tp, const std::string& value_name);

// Graph -> ModelProto (used by the plan format). Constants become initializers; custom nodes keep
// domain, op_type, attributes and their plugin_version/plugin_namespace.
Status export_onnx_model(const Graph& graph, onnx::ModelProto* model);

}  // namespace graft
