// Runs one builtin op node on the CPU reference backend, the way the runtime does: infer with
// concrete shapes and host values, allocate and poison outputs, run the kernel.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "ops/internal_ops.h"
#include "ops/operator.h"

namespace graft::testing {

struct OneNode {
  Graph graph;
  Node* node = nullptr;
  std::vector<Tensor> inputs;  // undefined Tensor = omitted optional input

  OneNode(const std::string& op_type, std::vector<Tensor> in, size_t num_outputs = 1)
      : inputs(std::move(in)) {
    // graft's internal ops (GraftConv, ...) are in their own domain, as the passes make them.
    node = graph.add_node("test_" + op_type, op_type, is_internal_op(op_type) ? kInternalDomain : "");
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i].defined()) {
        node->inputs.push_back(nullptr);
        continue;
      }
      Value* v = graph.add_value("in" + std::to_string(i));
      v->desc = desc_of_value(inputs[i]);  // a tensor's dtype and dims; a container's kind too
      v->constant = inputs[i];
      node->inputs.push_back(v);
    }
    for (size_t i = 0; i < num_outputs; ++i) {
      Value* v = graph.add_value("out" + std::to_string(i));
      v->producer = node;
      node->outputs.push_back(v);
    }
  }

  // Type and shape inference over the concrete inputs (their values known, as at run time); the
  // output descs are set on the node's outputs too, as the builder leaves them.
  Result<std::vector<TensorDesc>> infer(int opset = 17) {
    const OpEntry* op = find_op_entry(*node);
    if (!op) return error(StatusCode::kUnsupported, "no builtin op ", node->op_type);
    node->opset = opset;
    std::vector<InferContext::InputInfo> infos;
    for (size_t i = 0; i < node->inputs.size(); ++i) {
      InferContext::InputInfo info;
      if (node->inputs[i]) {
        info.desc = &node->inputs[i]->desc;
        info.value = &inputs[i];
      }
      infos.push_back(info);
    }
    InferContext ictx(*node, infos, opset);
    GRAFT_RETURN_IF_ERROR(op->infer(ictx));
    for (size_t i = 0; i < node->outputs.size(); ++i) {
      const TensorDesc& d = ictx.outputs()[i];
      // An op that sizes its outputs in its kernel (NonZero, Unique) leaves the counted dims unknown,
      // and a container's items may have no one shape.
      const bool may_be_unknown = op->output_shape_from_kernel || !d.is_tensor();
      if (!may_be_unknown && (!d.shape || !shape_is_static(*d.shape)))
        return error(StatusCode::kInternal, "output ", static_cast<int64_t>(i), " shape not concrete: ", d.to_string());
      node->outputs[i]->desc = d;
    }
    return ictx.outputs();
  }

  // Infer + run; returns the outputs or the error.
  Result<std::vector<Tensor>> run(int opset = 17) {
    GRAFT_ASSIGN_OR_RETURN(std::vector<TensorDesc> descs, infer(opset));
    const OpEntry* op = find_op_entry(*node);
    std::vector<Tensor> outs;
    for (const TensorDesc& d : descs) {
      if (!d.is_tensor() || !d.shape || !shape_is_static(*d.shape)) {  // the kernel makes it
        outs.emplace_back();
        continue;
      }
      Tensor t = Tensor::empty(d.dtype, shape_values(*d.shape));
      t.poison();
      outs.push_back(t);
    }
    ExecContext ectx;
    ectx.node = node;
    ectx.attrs = &node->attrs;
    ectx.opset = opset;
    for (auto& t : inputs) ectx.inputs.push_back(t.defined() ? &t : nullptr);
    for (auto& t : outs) ectx.outputs.push_back(&t);
    GRAFT_RETURN_IF_ERROR(op->cpu(ectx));
    return outs;
  }
};

// One random seed per test process, fresh per run; print it with SCOPED_TRACE, and
// GRAFT_TEST_SEED=N replays the run a failure printed.
inline uint32_t process_seed() {
  static const uint32_t s = [] {
    const char* given = std::getenv("GRAFT_TEST_SEED");
    return given && *given ? static_cast<uint32_t>(std::strtoul(given, nullptr, 10)) : std::random_device{}();
  }();
  return s;
}

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

inline Tensor random_tensor(DataType dt, std::vector<int64_t> dims, std::mt19937& rng, double lo = -1.0,
                            double hi = 1.0) {
  Tensor t = Tensor::empty(dt, std::move(dims));
  std::uniform_real_distribution<double> d(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, dtype_is_integer(dt) ? std::floor(d(rng)) : d(rng));
  return t;
}

// An int8 or uint8 tensor uniform over the dtype's whole range, never all zeros (a zero tensor would
// hide zero-point bugs in the integer ops' kernels).
inline Tensor random_int8(DataType dt, std::vector<int64_t> dims, std::mt19937& rng) {
  std::uniform_int_distribution<int> d(dt == DataType::kUInt8 ? 0 : -128, dt == DataType::kUInt8 ? 255 : 127);
  Tensor t = Tensor::empty(dt, std::move(dims));
  bool any = false;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const int v = d(rng);
    any = any || v != 0;
    t.set(i, v);
  }
  if (!any && t.numel() > 0) t.set(0, 7);
  return t;
}

// Type and shape inference of the builtin op `op` alone, its inputs described by `descs`.
inline Result<std::vector<TensorDesc>> infer(const std::string& op, std::vector<TensorDesc> descs,
                                             const AttributeMap& attrs, int opset, size_t num_outputs = 1) {
  Graph g;
  Node* n = g.add_node("n", op, is_internal_op(op) ? kInternalDomain : "");
  n->attrs = attrs;
  std::vector<InferContext::InputInfo> infos;
  for (size_t i = 0; i < descs.size(); ++i) {
    Value* v = g.add_value("in" + std::to_string(i));
    v->desc = descs[i];
    n->inputs.push_back(v);
    InferContext::InputInfo info;
    info.desc = &descs[i];
    infos.push_back(info);
  }
  for (size_t o = 0; o < num_outputs; ++o) n->outputs.push_back(g.add_value("out" + std::to_string(o)));
  InferContext ctx(*n, infos, opset);
  const OpEntry* op_def = find_op_entry(*n);
  if (!op_def) return error(StatusCode::kUnsupported, "no builtin op ", op);
  GRAFT_RETURN_IF_ERROR(op_def->infer(ctx));
  return ctx.outputs();
}

// Runs builtin `op` alone on `in` with `attrs`.
inline Result<std::vector<Tensor>> run_op(const std::string& op, std::vector<Tensor> in, AttributeMap attrs = {},
                                          int opset = 17, size_t num_outputs = 1) {
  OneNode n(op, std::move(in), num_outputs);
  n.node->attrs = std::move(attrs);
  return n.run(opset);
}

// The tensor's elements as stored (after rounding to its dtype), in double.
inline std::vector<double> values(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.get(i);
  return v;
}

// |got - want| <= tol * (1 + |want|) elementwise; NaN matches NaN, and an infinity itself. Reports the
// first five misses.
inline void expect_values_close(const Tensor& got, const std::vector<double>& want, double tol,
                                const std::string& what) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size())) << what;
  int bad = 0;
  for (int64_t i = 0; i < got.numel() && bad < 5; ++i) {
    const double g = got.get(i);
    if ((std::isnan(want[static_cast<size_t>(i)]) && std::isnan(g)) || g == want[static_cast<size_t>(i)]) continue;
    if (!(std::fabs(g - want[static_cast<size_t>(i)]) <= tol * (1 + std::fabs(want[static_cast<size_t>(i)])))) {
      ADD_FAILURE() << what << " [" << i << "]: got " << g << ", want " << want[static_cast<size_t>(i)];
      ++bad;
    }
  }
}

inline AttributeMap attrs_of(std::vector<std::pair<std::string, AttrValue>> kv) {
  AttributeMap m;
  for (auto& [k, v] : kv) m.set(k, v);
  return m;
}

}  // namespace graft::testing
