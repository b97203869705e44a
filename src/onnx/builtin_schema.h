// The ONNX ops' schemas, as libonnx's registry states them (the specification graft implements),
// in the terms a custom op declares its own (graft/op.h's AttrSpec and IOSpec): `graft ops` lists
// builtin and custom ops alike from these, and the importer checks a node's attribute names
// against them as OpDef::validate_attributes does a custom node's.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "graft/op.h"
#include "graft/status.h"

namespace onnx {
class GraphProto;
}

namespace graft {

struct BuiltinSchema {
  int since_version = 0;  // the version of the op's definition in effect at the opset asked for
  std::vector<AttrSpec> attrs;  // default_value set where ONNX gives one
  std::vector<std::string> graph_attrs;  // subgraph-valued attributes (If's branches, Loop's body)
  // IOSpec::dtypes: the tensor types graft knows among those ONNX allows there (none for a
  // sequence- or optional-typed one); IOSpec::doc says "variadic" for a variadic one.
  std::vector<IOSpec> inputs, outputs;
};

// The newest default-domain opset whose schemas libonnx knows (17 for Debian's onnx 1.12).
int newest_schema_opset();

// The schema of default-domain op `op_type` at `opset`; nullopt when libonnx has none (an op
// newer than its registry, or not an ONNX op) or `opset` is past newest_schema_opset().
std::optional<BuiltinSchema> onnx_op_schema(const std::string& op_type, int opset);

// A user's graph (and its subgraphs) against the schemas: an attribute a default-domain node's op
// does not have, or one of another type than the schema's, is kInvalidModel naming the node and the
// attribute, as onnx.checker and ONNX Runtime refuse them (graft would otherwise ignore an unknown
// one, and run the node as if it were not there, and find a mistyped one only where a kernel reads it).
// Ops or opsets the registry does not know are left to the importer.
Status check_attribute_names(const onnx::GraphProto& graph, int opset);

}  // namespace graft
