// graft's internal ops: the fused and layout forms its optimization passes make (GraftConv,
// GraftGemm, GraftStridedCopy, ...; rows marked internal_op() in their family folders,
// src/ops/fused_conv, transformer, views, quantize and reduce_norm). They are builtin ops with
// CPU references, but not ONNX ops, so they live in a domain of their own: a model's
// default-domain node named GraftConv is an unknown ONNX op, a model's node in this domain is
// refused at import, and only plans hold such nodes.
#pragma once

#include <string>

namespace graft {

struct Node;

inline constexpr char kInternalDomain[] = "graft.internal";

// Whether `op_type` names one of the internal ops (whatever the domain a node gives it).
bool is_internal_op(const std::string& op_type);
// Whether node n is the internal op `op_type` (its domain included).
bool is_internal(const Node& n, const char* op_type);
inline bool is_internal(const Node* n, const char* op_type) { return n && is_internal(*n, op_type); }

}  // namespace graft
