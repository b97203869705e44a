// Cases for ONNX control flow (If, Loop, Scan, SequenceMap): each table attaches the same bodies to
// every node the harness makes (OpCaseTable::attach_subgraphs), built in graft's IR with descs that
// follow the run's dtype, the outer values they read passed as the node's last (implicit) inputs;
// each table's independent formula mirrors its bodies in plain double loops.
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <utility>

#include "case_util.h"
#include "harness.h"

namespace graft::optest {

namespace {

// A subgraph under construction: its inputs, captured stand-ins, nodes (at `opset`, as the importer
// sets each inner node's), one output per node, and its outputs.
class Body {
 public:
  explicit Body(int opset) : opset_(opset) {}

  // A body input of `dtype` (its shape left to the values the node passes in).
  Value* input(const std::string& name, DataType dtype) {
    Value* v = g_->add_value(name);
    v->desc.dtype = dtype;
    v->is_graph_input = true;
    g_->inputs().push_back(v);
    return v;
  }
  // The stand-in for the node's outer value `outer` (an implicit input), bound in capture order.
  Value* capture(const Value* outer) {
    Value* v = g_->add_value(outer->name);
    v->desc = outer->desc;
    v->is_captured = true;
    g_->captures.push_back(v);
    return v;
  }
  Value* op(const std::string& type, std::vector<Value*> ins, AttributeMap attrs = {}) {
    Node* n = g_->add_node("body_" + std::to_string(g_->nodes().size()) + "_" + type, type);
    n->opset = opset_;
    n->inputs = std::move(ins);
    n->attrs = std::move(attrs);
    Value* out = g_->add_value(n->name + "_out");
    out->producer = n;
    n->outputs.push_back(out);
    return out;
  }
  void output(Value* v) {
    v->is_graph_output = true;
    g_->outputs().push_back(v);
  }
  std::shared_ptr<Graph> graph() const { return g_; }

 private:
  int opset_;
  std::shared_ptr<Graph> g_ = std::make_shared<Graph>();
};

OpCaseTable control_table(std::string name, ContainerReferenceFn reference, std::function<void(Node&)> attach) {
  OpCaseTable t = container_table(std::move(name), std::move(reference));
  t.attach_subgraphs = std::move(attach);
  return t;
}

CaseInput boolean(bool b) { return fixed({}, DataType::kBool, {b ? 1.0 : 0.0}); }

// f elementwise over broadcast items.
Item broadcast(const std::vector<const Item*>& xs, const std::function<double(const std::vector<double>&)>& f) {
  std::vector<std::vector<double>> values;
  std::vector<std::vector<int64_t>> dims;
  for (const Item* x : xs) {
    values.push_back(x->values);
    dims.push_back(x->dims);
  }
  return Item{broadcast_dims(dims), broadcast_apply(values, dims, f)};
}

// ---- If ----
// then_branch: (x + y, Concat(x, y) along axis 0); else_branch: (x * y, x - y). Output 1's shape
// depends on the branch taken. x and y are the node's implicit inputs 1 and 2.
OpCaseTable if_cases() {
  OpCaseTable t = control_table(
      "If",
      [](const std::vector<Items>& in, const AttributeMap&) {
        const bool go = in[0][0].values[0] != 0;
        const Item& x = in[1][0];
        const Item& y = in[2][0];
        Item a, b;
        if (go) {
          a = broadcast({&x, &y}, [](const std::vector<double>& v) { return v[0] + v[1]; });
          b.dims = x.dims;
          b.dims[0] += y.dims[0];
          b.values = x.values;
          b.values.insert(b.values.end(), y.values.begin(), y.values.end());
        } else {
          a = broadcast({&x, &y}, [](const std::vector<double>& v) { return v[0] * v[1]; });
          b = broadcast({&x, &y}, [](const std::vector<double>& v) { return v[0] - v[1]; });
        }
        return std::vector<Items>{Items{a}, Items{b}};
      },
      [](Node& node) {
        node.implicit_inputs = 2;
        const size_t first = node.inputs.size() - 2;
        Body then_b(17), else_b(17);
        {
          Value* x = then_b.capture(node.inputs[first]);
          Value* y = then_b.capture(node.inputs[first + 1]);
          then_b.output(then_b.op("Add", {x, y}));
          then_b.output(then_b.op("Concat", {x, y}, attr("axis", int64_t{0})));
        }
        {
          Value* x = else_b.capture(node.inputs[first]);
          Value* y = else_b.capture(node.inputs[first + 1]);
          else_b.output(else_b.op("Mul", {x, y}));
          else_b.output(else_b.op("Sub", {x, y}));
        }
        node.subgraphs["then_branch"] = then_b.graph();
        node.subgraphs["else_branch"] = else_b.graph();
      });
  t.cases.push_back(container_case("then_taken", {boolean(true), data({2, 3}), data({2, 3})},
                                 {tensor_out({2, 3}), tensor_out({4, 3})}));
  t.cases.push_back(container_case("else_taken", {boolean(false), data({2, 3}), data({2, 3})},
                                 {tensor_out({2, 3}), tensor_out({2, 3})}));
  t.cases.push_back(container_case("then_broadcast", {boolean(true), data({2, 4}), data({1, 4})},
                                 {tensor_out({2, 4}), tensor_out({3, 4})}));
  t.cases.push_back(container_case("else_broadcast", {boolean(false), data({3, 2, 4}), data({1, 2, 4})},
                                 {tensor_out({3, 2, 4}), tensor_out({3, 2, 4})}));
  return t;
}

// ---- Loop ----
// Inputs: M, cond, v (carried); implicit a, b (float) and limit (int64). Body (iteration i):
// v' = v * a + b + i, cond' = i < limit, scan output v' - v. Without a cond input the body's
// condition is ignored (a for loop, ONNX Loop).
OpCaseTable loop_cases() {
  OpCaseTable t = control_table(
      "Loop",
      [](const std::vector<Items>& in, const AttributeMap&) {
        const int64_t trips = in[0].empty() ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(in[0][0].values[0]);
        const bool has_cond = !in[1].empty();
        bool go = has_cond ? in[1][0].values[0] != 0 : true;
        Item v = in[2][0];
        const Item& a = in[3][0];
        const Item& b = in[4][0];
        const int64_t limit = static_cast<int64_t>(in[5][0].values[0]);
        Item scan;
        scan.dims = v.dims;
        scan.dims.insert(scan.dims.begin(), 0);
        for (int64_t i = 0; i < trips && go; ++i) {
          const double di = static_cast<double>(i);
          Item next = broadcast({&v, &a, &b}, [di](const std::vector<double>& x) { return x[0] * x[1] + x[2] + di; });
          for (size_t e = 0; e < next.values.size(); ++e) scan.values.push_back(next.values[e] - v.values[e]);
          ++scan.dims[0];
          v = std::move(next);
          if (has_cond) go = i < limit;
        }
        return std::vector<Items>{Items{v}, Items{scan}};
      },
      [](Node& node) {
        node.implicit_inputs = 3;
        const size_t first = node.inputs.size() - 3;
        Body body(17);
        Value* iter = body.input("iter", DataType::kInt64);
        body.input("cond_in", DataType::kBool);
        Value* v = body.input("v_in", node.inputs[2]->desc.dtype);
        Value* a = body.capture(node.inputs[first]);
        Value* b = body.capture(node.inputs[first + 1]);
        Value* limit = body.capture(node.inputs[first + 2]);
        Value* next = body.op("Add", {body.op("Add", {body.op("Mul", {v, a}), b}), body.op("CastLike", {iter, v})});
        body.output(body.op("Less", {iter, limit}));
        body.output(next);
        body.output(body.op("Sub", {next, v}));
        node.subgraphs["body"] = body.graph();
      });
  const CaseInput a = data({3}, -1.2, 1.2);
  // M only: the body's condition turns false after iteration 1 but a for loop ignores it.
  t.cases.push_back(container_case("trip_count_only", {int64_scalar(4), omitted(), data({2, 3}), a, data({2, 3}), int64_scalar(1)},
                                 {tensor_out({2, 3}), tensor_out({4, 2, 3})}));
  // M and cond: the body stops the loop after iteration 2 (2 < 2 is false), before M.
  t.cases.push_back(container_case("early_exit", {int64_scalar(6), boolean(true), data({2, 3}), a, data({1, 3}), int64_scalar(2)},
                                 {tensor_out({2, 3}), tensor_out({3, 2, 3})}));
  // M and cond: M ends the loop before the body's condition does.
  t.cases.push_back(container_case("trip_count_first", {int64_scalar(2), boolean(true), data({4}), data({4}, -1.2, 1.2), data({4}),
                                  int64_scalar(5)},
                                 {tensor_out({4}), tensor_out({2, 4})}));
  // cond only (no M): a while loop, ended by the body after iteration 3.
  t.cases.push_back(container_case("cond_only", {omitted(), boolean(true), data({3}), a, data({3}), int64_scalar(3)},
                                 {tensor_out({3}), tensor_out({4, 3})}));
  t.cases.push_back(container_case("zero_trips", {int64_scalar(0), omitted(), data({2, 3}), a, data({2, 3}), int64_scalar(1)},
                                 {tensor_out({2, 3}), tensor_out({0, 2, 3})}));
  t.cases.push_back(container_case("cond_false_at_entry", {int64_scalar(3), boolean(false), data({2, 3}), a, data({2, 3}),
                                  int64_scalar(1)},
                                 {tensor_out({2, 3}), tensor_out({0, 2, 3})}));
  return t;
}

// ---- Scan ----
// Inputs: state s, scanned x and w (num_scan_inputs 2); implicit c. Body: s' = s + x_t,
// y_t = s' * w_t + c. Outputs: the final state and the stacked y.
Item slice_at(const Item& x, size_t axis, int64_t j) {
  const int64_t outer = count(x.dims, 0, axis), n = x.dims[axis], inner = count(x.dims, axis + 1);
  Item y;
  y.dims = x.dims;
  y.dims.erase(y.dims.begin() + static_cast<ptrdiff_t>(axis));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) y.values.push_back(x.values[static_cast<size_t>((o * n + j) * inner + i)]);
  return y;
}

OpCaseTable scan_cases() {
  OpCaseTable t = control_table(
      "Scan",
      [](const std::vector<Items>& in, const AttributeMap& attrs) {
        auto ints = [&](const char* name) { return attrs.get_ints(name, {0, 0}).value(); };
        const std::vector<int64_t> in_axes = ints("scan_input_axes"), in_dirs = ints("scan_input_directions");
        const int64_t out_axis_attr = attrs.get_ints("scan_output_axes", {0}).value()[0];
        const bool out_reverse = attrs.get_ints("scan_output_directions", {0}).value()[0] != 0;
        Item s = in[0][0];
        const Item& x = in[1][0];
        const Item& w = in[2][0];
        const Item& c = in[3][0];
        const size_t ax = static_cast<size_t>(axis_in(in_axes[0], x.dims.size()));
        const size_t aw = static_cast<size_t>(axis_in(in_axes[1], w.dims.size()));
        const int64_t len = x.dims[ax];
        std::vector<Item> ys;
        for (int64_t t = 0; t < len; ++t) {
          const Item xt = slice_at(x, ax, in_dirs[0] ? len - 1 - t : t);
          const Item wt = slice_at(w, aw, in_dirs[1] ? len - 1 - t : t);
          s = broadcast({&s, &xt}, [](const std::vector<double>& v) { return v[0] + v[1]; });
          ys.push_back(broadcast({&s, &wt, &c}, [](const std::vector<double>& v) { return v[0] * v[1] + v[2]; }));
        }
        // The y_t stacked along the output axis, position t (or len - 1 - t reversed).
        std::vector<int64_t> one = s.dims;  // y_t's dims: s, w_t and c broadcast (the cases keep them s's)
        const size_t oa = static_cast<size_t>(axis_in(out_axis_attr, one.size() + 1));
        Item y;
        y.dims = one;
        y.dims.insert(y.dims.begin() + static_cast<ptrdiff_t>(oa), len);
        y.values.assign(static_cast<size_t>(count(y.dims)), 0.0);
        const int64_t outer = count(one, 0, oa), inner = count(one, oa);
        for (int64_t t = 0; t < len; ++t) {
          const int64_t p = out_reverse ? len - 1 - t : t;
          for (int64_t o = 0; o < outer; ++o)
            for (int64_t i = 0; i < inner; ++i)
              y.values[static_cast<size_t>((o * len + p) * inner + i)] = ys[static_cast<size_t>(t)].values[static_cast<size_t>(o * inner + i)];
        }
        return std::vector<Items>{Items{s}, Items{y}};
      },
      [](Node& node) {
        node.implicit_inputs = 1;
        Body body(17);
        Value* s = body.input("s_in", node.inputs[0]->desc.dtype);
        Value* x = body.input("x_t", node.inputs[1]->desc.dtype);
        Value* w = body.input("w_t", node.inputs[2]->desc.dtype);
        Value* c = body.capture(node.inputs.back());
        Value* next = body.op("Add", {s, x});
        body.output(next);
        body.output(body.op("Add", {body.op("Mul", {next, w}), c}));
        node.subgraphs["body"] = body.graph();
      });
  auto attrs = [](std::vector<int64_t> in_axes, std::vector<int64_t> in_dirs, int64_t out_axis, int64_t out_dir) {
    AttributeMap a;
    a.set("num_scan_inputs", int64_t{2});
    if (!in_axes.empty()) a.set("scan_input_axes", std::move(in_axes));
    if (!in_dirs.empty()) a.set("scan_input_directions", std::move(in_dirs));
    a.set("scan_output_axes", std::vector<int64_t>{out_axis});
    a.set("scan_output_directions", std::vector<int64_t>{out_dir});
    return a;
  };
  AttributeMap plain;
  plain.set("num_scan_inputs", int64_t{2});
  t.cases.push_back(container_case("defaults", {data({2, 3}), data({4, 2, 3}), data({4, 2, 3}), data({3})},
                                 {tensor_out({2, 3}), tensor_out({4, 2, 3})}, plain));
  t.cases.push_back(container_case("input_and_output_axes", {data({2, 3}), data({2, 5, 3}), data({2, 3, 5}), data({2, 1})},
                                 {tensor_out({2, 3}), tensor_out({2, 3, 5})}, attrs({1, -1}, {}, 2, 0)));
  t.cases.push_back(container_case("reversed_input", {data({3}), data({5, 3}), data({3, 5}), data({3})},
                                 {tensor_out({3}), tensor_out({5, 3})}, attrs({0, 1}, {1, 0}, 0, 0)));
  t.cases.push_back(container_case("reversed_output_axis_minus_1", {data({2, 2}), data({3, 2, 2}), data({3, 2, 2}), data({2})},
                                 {tensor_out({2, 2}), tensor_out({2, 2, 3})}, attrs({0, 0}, {0, 1}, -1, 1)));
  t.cases.push_back(container_case("empty_sequence", {data({2, 3}), data({0, 2, 3}), data({0, 2, 3}), data({3})},
                                 {tensor_out({2, 3}), tensor_out({0, 2, 3})}, plain));
  AttributeMap long_axes = plain;
  long_axes.set("scan_input_axes", std::vector<int64_t>{0, 0, 0});
  AttributeMap bad_direction = plain;
  bad_direction.set("scan_output_directions", std::vector<int64_t>{2});
  AttributeMap too_many = plain;
  too_many.set("num_scan_inputs", int64_t{4});
  t.bad_attributes = {{"input_axes_too_long", long_axes, {}, "scan_input_axes"},
                      {"output_direction_2", bad_direction, {}, "scan_output_directions"},
                      {"more_scan_inputs_than_inputs", too_many, {}, "num_scan_inputs"},
                      {"no_num_scan_inputs", AttributeMap{}, {}, "num_scan_inputs"}};
  return t;
}

// ---- SequenceMap ----
// Inputs: a sequence, and c (a tensor passed whole, or a sequence of the same length, passed item by
// item); implicit k, a float scalar. Body over item x (and c_i): (x + c_i, ReduceSum(x) * k,
// Shape(x)), each collected into a sequence.
OpCaseTable sequence_map_cases() {
  OpCaseTable t = control_table(
      "SequenceMap",
      [](const std::vector<Items>& in, const AttributeMap&) {
        const Items& seq = in[0];
        const double k = in[2][0].values[0];
        Items sums, totals, shapes;
        for (size_t i = 0; i < seq.size(); ++i) {
          const Item& x = seq[i];
          const Item& c = in[1].size() == seq.size() ? in[1][i] : in[1][0];
          sums.push_back(broadcast({&x, &c}, [](const std::vector<double>& v) { return v[0] + v[1]; }));
          double total = 0.0;
          for (double e : x.values) total += e;
          totals.push_back(Item{{}, {total * k}});
          shapes.push_back(Item{{static_cast<int64_t>(x.dims.size())}, std::vector<double>(x.dims.begin(), x.dims.end())});
        }
        return std::vector<Items>{sums, totals, shapes};
      },
      [](Node& node) {
        node.implicit_inputs = 1;
        Body body(17);
        Value* x = body.input("item", node.inputs[0]->desc.dtype);
        Value* c = body.input("c", node.inputs[1]->desc.dtype);
        Value* k = body.capture(node.inputs.back());
        body.output(body.op("Add", {x, c}));
        body.output(body.op("Mul", {body.op("ReduceSum", {x}, attr("keepdims", int64_t{0})), k}));
        body.output(body.op("Shape", {x}));
        node.subgraphs["body"] = body.graph();
      });
  t.cases.push_back(container_case("tensor_passed_whole", {sequence_of({{2, 3}, {4, 3}, {3}}), data({3}), data({})},
                                 {sequence_out({{2, 3}, {4, 3}, {3}}), sequence_out({{}, {}, {}}),
                                  sequence_out({{2}, {2}, {1}})}));
  t.cases.push_back(container_case("paired_sequences", {sequence_of({{2, 3}, {1, 4}}), sequence_of({{3}, {2, 1}}), data({})},
                                 {sequence_out({{2, 3}, {2, 4}}), sequence_out({{}, {}}), sequence_out({{2}, {2}})}));
  t.cases.push_back(container_case("one_item", {sequence_of({{2, 2, 2}}), data({1, 2}), data({})},
                                 {sequence_out({{2, 2, 2}}), sequence_out({{}}), sequence_out({{3}})}));
  t.cases.push_back(container_case("empty", {sequence_of({}), data({3}), data({})},
                                 {sequence_out({}), sequence_out({}), sequence_out({})}));
  return t;
}

}  // namespace

std::vector<OpCaseTable> control_flow_case_tables() { return {if_cases(), loop_cases(), scan_cases(), sequence_map_cases()}; }

}  // namespace graft::optest
