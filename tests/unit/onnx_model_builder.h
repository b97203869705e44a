// A tiny helper to write ONNX models in tests with onnx::ModelProto (protobuf), no Python needed.
//
//   graft::testing::OnnxModelBuilder b;               // opset 17, IR 8
//   b.input("x", DataType::kFloat32, {"batch", 4});
//   b.initializer("w", some_tensor);
//   auto& n = b.node("Add", {"x", "w"}, {"y"});
//   b.attr(n, "alpha", 0.5f);
//   b.output("y", DataType::kFloat32);
//   std::string bytes = b.bytes();
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "graft/tensor.h"
#include "onnx/onnx_convert.h"

namespace graft::testing {

// One dimension of a declared shape: a number, a named symbol, or (default) unnamed dynamic.
struct DimSpec {
  int64_t value = -1;
  std::string param;
  bool unnamed = false;
  DimSpec(int64_t v) : value(v) {}          // NOLINT(implicit)
  DimSpec(int v) : value(v) {}              // NOLINT(implicit)
  DimSpec(const char* p) : param(p) {}      // NOLINT(implicit)
  static DimSpec dynamic() { DimSpec d(int64_t{-1}); d.unnamed = true; return d; }
};

class OnnxModelBuilder {
 public:
  explicit OnnxModelBuilder(int64_t opset = 17, int64_t ir_version = 8) {
    model_.set_ir_version(ir_version);
    model_.set_producer_name("graft-test");
    auto* os = model_.add_opset_import();
    os->set_domain("");
    os->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }

  OnnxModelBuilder& opset(const std::string& domain, int64_t version) {
    for (auto& os : *model_.mutable_opset_import())
      if (os.domain() == domain) { os.set_version(version); return *this; }
    auto* os = model_.add_opset_import();
    os->set_domain(domain);
    os->set_version(version);
    return *this;
  }

  OnnxModelBuilder& input(const std::string& name, DataType dt, const std::vector<DimSpec>& dims) {
    fill(model_.mutable_graph()->add_input(), name, dt, &dims);
    return *this;
  }
  // Output with or without a declared shape.
  OnnxModelBuilder& output(const std::string& name, DataType dt) {
    fill(model_.mutable_graph()->add_output(), name, dt, nullptr);
    return *this;
  }
  OnnxModelBuilder& output(const std::string& name, DataType dt, const std::vector<DimSpec>& dims) {
    fill(model_.mutable_graph()->add_output(), name, dt, &dims);
    return *this;
  }
  OnnxModelBuilder& value_info(const std::string& name, DataType dt, const std::vector<DimSpec>& dims) {
    fill(model_.mutable_graph()->add_value_info(), name, dt, &dims);
    return *this;
  }

  // As graft writes tensors (strings in string_data, int4/uint4 packed two a byte).
  static void to_proto(const Tensor& t, const std::string& name, onnx::TensorProto* tp) {
    tensor_to_proto(t, name, tp);
  }
  onnx::TensorProto& initializer(const std::string& name, const Tensor& t) {
    auto* tp = model_.mutable_graph()->add_initializer();
    to_proto(t, name, tp);
    return *tp;
  }

  onnx::NodeProto& node(const std::string& op_type, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name = "",
                        const std::string& domain = "") {
    auto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op_type);
    n->set_name(name.empty() ? op_type + "_" + std::to_string(model_.graph().node_size() - 1) : name);
    if (!domain.empty()) n->set_domain(domain);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return *n;
  }
  // Constant node holding `t`.
  onnx::NodeProto& constant(const std::string& output, const Tensor& t) {
    auto& n = node("Constant", {}, {output}, "const_" + output);
    auto* a = n.add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    to_proto(t, output, a->mutable_t());
    return n;
  }

  static onnx::AttributeProto* new_attr(onnx::NodeProto& n, const std::string& name,
                                        onnx::AttributeProto::AttributeType type) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(type);
    return a;
  }
  static void attr(onnx::NodeProto& n, const std::string& name, int64_t v) {
    new_attr(n, name, onnx::AttributeProto::INT)->set_i(v);
  }
  static void attr(onnx::NodeProto& n, const std::string& name, int v) { attr(n, name, int64_t{v}); }
  static void attr(onnx::NodeProto& n, const std::string& name, float v) {
    new_attr(n, name, onnx::AttributeProto::FLOAT)->set_f(v);
  }
  static void attr(onnx::NodeProto& n, const std::string& name, const std::string& v) {
    new_attr(n, name, onnx::AttributeProto::STRING)->set_s(v);
  }
  static void attr(onnx::NodeProto& n, const std::string& name, const char* v) { attr(n, name, std::string(v)); }
  static void attr(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
    auto* a = new_attr(n, name, onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void attr(onnx::NodeProto& n, const std::string& name, const std::vector<std::string>& v) {
    auto* a = new_attr(n, name, onnx::AttributeProto::STRINGS);
    for (const std::string& s : v) a->add_strings(s);
  }
  static void attr(onnx::NodeProto& n, const std::string& name, const std::vector<float>& v) {
    auto* a = new_attr(n, name, onnx::AttributeProto::FLOATS);
    for (float x : v) a->add_floats(x);
  }
  static void attr(onnx::NodeProto& n, const std::string& name, const Tensor& t) {
    to_proto(t, name, new_attr(n, name, onnx::AttributeProto::TENSOR)->mutable_t());
  }

  onnx::ModelProto& model() { return model_; }
  std::string bytes() const {
    std::string s;
    model_.SerializeToString(&s);
    return s;
  }
  void save(const std::string& path) const {
    std::ofstream out(path, std::ios::binary);
    out << bytes();
  }

 private:
  static void fill(onnx::ValueInfoProto* vi, const std::string& name, DataType dt, const std::vector<DimSpec>* dims) {
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(static_cast<int32_t>(dt));
    if (!dims) return;
    auto* shape = tt->mutable_shape();
    for (const auto& d : *dims) {
      auto* dp = shape->add_dim();
      if (!d.param.empty()) dp->set_dim_param(d.param);
      else if (!d.unnamed && d.value >= 0) dp->set_dim_value(d.value);
    }
  }
  onnx::ModelProto model_;
};

// A subgraph (If branch, Loop or Scan body) under construction: nodes, inputs and outputs (each with
// an optional type) and initializers. A node is named `name`, or else by the graph name, the op type
// and a count.
struct SubgraphBuilder {
  onnx::GraphProto* g;
  SubgraphBuilder& node(const std::string& op, const std::vector<std::string>& in,
                        const std::vector<std::string>& out, std::vector<std::pair<std::string, int64_t>> int_attrs = {},
                        const std::string& name = "") {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? g->name() + "_" + op + "_" + std::to_string(g->node_size()) : name);
    for (const auto& i : in) n->add_input(i);
    for (const auto& o : out) n->add_output(o);
    for (const auto& [k, v] : int_attrs) OnnxModelBuilder::attr(*n, k, v);
    return *this;
  }
  SubgraphBuilder& input(const std::string& name, DataType dt = DataType::kUndefined) {
    auto* vi = g->add_input();
    vi->set_name(name);
    if (dt != DataType::kUndefined) vi->mutable_type()->mutable_tensor_type()->set_elem_type(static_cast<int>(dt));
    return *this;
  }
  SubgraphBuilder& output(const std::string& name) {
    g->add_output()->set_name(name);
    return *this;
  }
  SubgraphBuilder& constant(const std::string& name, const Tensor& t) {
    OnnxModelBuilder::to_proto(t, name, g->add_initializer());
    return *this;
  }
};

inline SubgraphBuilder graph_attr(onnx::NodeProto& n, const std::string& attr) {
  auto* g = OnnxModelBuilder::new_attr(n, attr, onnx::AttributeProto::GRAPH)->mutable_g();
  g->set_name(attr);
  return SubgraphBuilder{g};
}

}  // namespace graft::testing
