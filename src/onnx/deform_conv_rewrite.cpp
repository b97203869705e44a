// See deform_conv_rewrite.h.
#include "onnx/deform_conv_rewrite.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "onnx/graph_walk.h"

namespace graft {

namespace {

// graft's op (ops/modulated_deform_conv2d), as its OpDef names it; the importer resolves the node
// through the registry like any custom node, so a rename there fails DeformConv's tests here.
constexpr const char* kTargetOp = "ModulatedDeformConv2d";
constexpr const char* kTargetDomain = "ai.onnx.contrib";

bool is_deform_conv(const onnx::NodeProto& n) {
  return n.op_type() == "DeformConv" && (n.domain().empty() || n.domain() == "ai.onnx");
}

bool any_deform_conv(const onnx::GraphProto& root) {
  bool found = false;
  for_each_graph(root, [&](const onnx::GraphProto& g) {
    for (const auto& n : g.node()) found = found || is_deform_conv(n);
  });
  return found;
}

// An error naming the node (by its first output where the model left it unnamed; the importer's
// invented names come later) and the attribute.
Status node_error(const onnx::NodeProto& n, const char* attribute, const std::string& what) {
  Status st = error(StatusCode::kUnsupported, what);
  st.with_node(!n.name().empty() || n.output_size() == 0 ? n.name() : n.output(0), "DeformConv");
  if (attribute) st.with_attribute(attribute);
  return st;
}

onnx::AttributeProto ints_attr(const std::string& name, const std::vector<int64_t>& v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a.add_ints(x);
  return a;
}

onnx::AttributeProto int_attr(const std::string& name, int64_t v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(v);
  return a;
}

// The weight's dims where it is an initializer of this graph, else empty.
std::vector<int64_t> initializer_dims(const onnx::GraphProto& g, const std::string& name) {
  for (const auto& t : g.initializer())
    if (t.name() == name) return std::vector<int64_t>(t.dims().begin(), t.dims().end());
  return {};
}

// A default-domain node named and with its one output named `name`, reading `inputs`.
onnx::NodeProto make_node(const char* op_type, const std::string& name, std::initializer_list<std::string> inputs) {
  onnx::NodeProto node;
  node.set_op_type(op_type);
  node.set_name(name);
  for (const std::string& in : inputs) node.add_input(in);
  node.add_output(name);
  return node;
}

// A Constant node holding `values` as a 1-D int64 tensor.
onnx::NodeProto int64_constant(const std::string& name, std::initializer_list<int64_t> values) {
  onnx::NodeProto node = make_node("Constant", name, {});
  auto* value = node.add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::INT64);
  value->mutable_t()->add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) value->mutable_t()->add_int64_data(v);
  return node;
}

// The nodes that make a mask of ones for the DeformConv node `n` (whose offset is input 2), named
// after its first output; returns the mask's name.
std::string add_ones_mask(const onnx::NodeProto& n, std::vector<onnx::NodeProto>* out) {
  const std::string base = n.output(0) + "/graft_deform_conv_mask";
  const std::string& offset = n.input(2);
  out->push_back(make_node("Shape", base + "/offset_shape", {offset}));
  // The offset's channels are (dy, dx) pairs: the mask has half as many.
  out->push_back(int64_constant(base + "/halve_channels", {1, 2, 1, 1}));
  out->push_back(make_node("Div", base + "/mask_shape", {base + "/offset_shape", base + "/halve_channels"}));
  onnx::NodeProto ones = make_node("ConstantOfShape", base + "/ones", {base + "/mask_shape"});
  auto* one = ones.add_attribute();
  one->set_name("value");
  one->set_type(onnx::AttributeProto::TENSOR);
  one->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  one->mutable_t()->add_dims(1);
  one->mutable_t()->add_float_data(1.0f);
  out->push_back(std::move(ones));
  out->push_back(make_node("CastLike", base, {base + "/ones", offset}));  // in the offset's type, which is X's
  return base;
}

// Pad(X) by what an asymmetric `pads` (top, left, bottom, right) has beyond the symmetric `padding`
// (rows, columns) graft's op applies; returns the padded value's name.
std::string add_extra_padding(const onnx::NodeProto& n, const std::vector<int64_t>& pads,
                              const std::vector<int64_t>& padding, std::vector<onnx::NodeProto>* out) {
  const std::string base = n.output(0) + "/graft_deform_conv_pad";
  out->push_back(int64_constant(base + "/amounts", {0, 0, pads[0] - padding[0], pads[1] - padding[1], 0, 0,
                                                    pads[2] - padding[0], pads[3] - padding[1]}));
  out->push_back(make_node("Pad", base, {n.input(0), base + "/amounts"}));
  return base;
}

Status rewrite_node(const onnx::GraphProto& g, onnx::NodeProto* n, std::vector<onnx::NodeProto>* before) {
  if (n->input_size() < 3 || n->input(0).empty() || n->input(1).empty() || n->input(2).empty())
    return node_error(*n, nullptr, "needs inputs X, W and offset");
  if (n->output_size() < 1 || n->output(0).empty()) return node_error(*n, nullptr, "has no output");
  std::vector<int64_t> stride{1, 1}, pads{0, 0, 0, 0}, dilation{1, 1};
  int64_t groups = 1, deform_groups = 1;
  std::vector<int64_t> kernel_shape;
  for (const auto& a : n->attribute()) {
    const std::string& name = a.name();
    auto two = [&](std::vector<int64_t>* to) -> Status {
      if (a.type() != onnx::AttributeProto::INTS || a.ints_size() != 2)
        return node_error(*n, name.c_str(), "'" + name + "' must be 2 ints: graft runs the 2-D DeformConv only");
      *to = {a.ints(0), a.ints(1)};
      return Status::ok();
    };
    if (name == "strides") {
      GRAFT_RETURN_IF_ERROR(two(&stride));
    } else if (name == "dilations") {
      GRAFT_RETURN_IF_ERROR(two(&dilation));
    } else if (name == "kernel_shape") {
      GRAFT_RETURN_IF_ERROR(two(&kernel_shape));
    } else if (name == "pads") {
      if (a.type() != onnx::AttributeProto::INTS || a.ints_size() != 4)
        return node_error(*n, "pads", "'pads' must be 4 ints (top, left, bottom, right): graft runs the 2-D DeformConv only");
      for (int k = 0; k < 4; ++k)
        if (a.ints(k) < 0) return node_error(*n, "pads", "pads must be >= 0, got " + std::to_string(a.ints(k)));
      pads = {a.ints(0), a.ints(1), a.ints(2), a.ints(3)};
    } else if (name == "group" || name == "offset_group") {
      if (a.type() != onnx::AttributeProto::INT) return node_error(*n, name.c_str(), "'" + name + "' must be an int");
      (name == "group" ? groups : deform_groups) = a.i();
    } else {
      return node_error(*n, name.c_str(), "unknown attribute '" + name + "' for op DeformConv-19");
    }
  }
  const std::vector<int64_t> w = initializer_dims(g, n->input(1));
  if (!kernel_shape.empty() && w.size() == 4 && (w[2] != kernel_shape[0] || w[3] != kernel_shape[1]))
    return node_error(*n, "kernel_shape", "kernel_shape [" + std::to_string(kernel_shape[0]) + ", " +
                                              std::to_string(kernel_shape[1]) + "] differs from W's kernel [" +
                                              std::to_string(w[2]) + ", " + std::to_string(w[3]) + "]");
  std::string x = n->input(0);
  const std::string weight = n->input(1), offset = n->input(2);
  // graft's op pads both sides of an axis alike (by the smaller of the two); the rest of an
  // asymmetric padding is zeros added to X first, which samples read as they read the padding.
  const std::vector<int64_t> padding{std::min(pads[0], pads[2]), std::min(pads[1], pads[3])};
  if (pads[0] != pads[2] || pads[1] != pads[3]) x = add_extra_padding(*n, pads, padding, before);
  const std::string bias = n->input_size() > 3 ? n->input(3) : std::string();
  std::string mask = n->input_size() > 4 ? n->input(4) : std::string();
  if (mask.empty()) mask = add_ones_mask(*n, before);
  n->clear_input();
  for (const std::string& in : {x, offset, mask, weight}) n->add_input(in);
  if (!bias.empty()) n->add_input(bias);
  n->set_op_type(kTargetOp);
  n->set_domain(kTargetDomain);
  n->clear_attribute();
  *n->add_attribute() = ints_attr("stride", stride);
  *n->add_attribute() = ints_attr("padding", padding);
  *n->add_attribute() = ints_attr("dilation", dilation);
  *n->add_attribute() = int_attr("groups", groups);
  *n->add_attribute() = int_attr("deform_groups", deform_groups);
  return Status::ok();
}

}  // namespace

const ImportRewrite& deform_conv_import_rewrite() {
  static const ImportRewrite r{"DeformConv", 19, "ai.onnx.contrib::ModulatedDeformConv2d",
                               "inputs reordered, attributes renamed, a mask of ones where the node has none, "
                               "asymmetric pads as a Pad before it"};
  return r;
}

bool has_deform_conv(const onnx::ModelProto& model) { return model.has_graph() && any_deform_conv(model.graph()); }

Status rewrite_deform_conv(const onnx::ModelProto& in, onnx::ModelProto* out) {
  *out = in;
  Status result = Status::ok();
  for_each_graph(out->mutable_graph(), [&](onnx::GraphProto* g) {
    if (!result) return;  // an earlier node was refused
    std::vector<onnx::NodeProto> nodes;
    for (auto& n : *g->mutable_node()) {
      if (is_deform_conv(n)) {
        std::vector<onnx::NodeProto> before;
        if (Status st = rewrite_node(*g, &n, &before); !st) {
          result = st;
          return;
        }
        for (auto& b : before) nodes.push_back(std::move(b));
      }
      nodes.push_back(std::move(n));
    }
    g->clear_node();
    for (auto& n : nodes) *g->add_node() = std::move(n);
  });
  GRAFT_RETURN_IF_ERROR(result);
  bool imported = false;
  for (const auto& os : out->opset_import()) imported = imported || os.domain() == kTargetDomain;
  if (!imported) {
    auto* os = out->add_opset_import();
    os->set_domain(kTargetDomain);
    os->set_version(1);
  }
  return Status::ok();
}

}  // namespace graft
