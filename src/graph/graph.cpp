#include "graph/graph.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <set>

namespace graft {

Value* Graph::add_value(const std::string& name) {
  auto it = values_.find(name);
  if (it != values_.end()) return it->second.get();
  auto v = std::make_unique<Value>();
  v->name = name;
  Value* raw = v.get();
  values_.emplace(name, std::move(v));
  return raw;
}

Value* Graph::find_value(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? nullptr : it->second.get();
}

Value* Graph::new_value(const std::string& hint) {
  std::string name;
  do {
    name = hint + "__" + std::to_string(fresh_counter_++);
  } while (values_.count(name));
  return add_value(name);
}

Value* Graph::new_constant(const std::string& hint, Tensor t) {
  Value* v = new_value(hint);
  v->desc = TensorDesc(t.dtype(), shape_from_values(t.dims()));
  v->constant = std::move(t);
  return v;
}

bool static_dims_of(const Value* v, std::vector<int64_t>* dims) {
  if (!v || !v->desc.shape || !shape_is_static(*v->desc.shape)) return false;
  *dims = shape_values(*v->desc.shape);
  return true;
}

bool touches_containers(const Node& n) {
  for (const Value* v : n.inputs)
    if (v && !v->desc.is_tensor()) return true;
  for (const Value* v : n.outputs)
    if (v && !v->desc.is_tensor()) return true;
  return false;
}

Node* Graph::add_node(std::string name, std::string op_type, std::string domain) {
  auto n = std::make_unique<Node>();
  n->name = std::move(name);
  n->op_type = std::move(op_type);
  n->domain = std::move(domain);
  nodes_.push_back(std::move(n));
  return nodes_.back().get();
}

NodeNamer::NodeNamer(const Graph& g) {
  for (const auto& n : g.nodes()) names_.insert(n->name);
}

std::string NodeNamer::operator()(const std::string& base) {
  std::string name = base;
  for (int k = 1; names_.count(name); ++k) name = base + "_" + std::to_string(k);
  names_.insert(name);
  return name;
}

int default_domain_opset(const Graph& g) {
  auto it = g.opset_imports.find("");
  return it == g.opset_imports.end() ? 17 : static_cast<int>(it->second);
}

void Graph::remove_nodes_if(const std::function<bool(const Node*)>& dead) {
  std::vector<std::unique_ptr<Node>> keep;
  for (auto& n : nodes_) {
    if (dead(n.get())) {
      for (Value* o : n->outputs)
        if (o && o->producer == n.get()) o->producer = nullptr;
    } else {
      keep.push_back(std::move(n));
    }
  }
  nodes_ = std::move(keep);
}

void Graph::prune_values() {
  std::set<const Value*> used;
  for (auto& n : nodes_) {
    for (Value* v : n->inputs) used.insert(v);
    for (Value* v : n->outputs) used.insert(v);
  }
  for (Value* v : inputs_) used.insert(v);
  for (Value* v : outputs_) used.insert(v);
  for (Value* v : captures) used.insert(v);
  for (auto it = values_.begin(); it != values_.end();) {
    if (!used.count(it->second.get()))
      it = values_.erase(it);
    else
      ++it;
  }
}

std::map<const Value*, std::vector<Node*>> Graph::consumers() const {
  std::map<const Value*, std::vector<Node*>> c;
  for (auto& n : nodes_)
    for (Value* v : n->inputs)
      if (v) c[v].push_back(n.get());
  return c;
}

Status Graph::topological_sort() {
  // Kahn's algorithm, stable with respect to the model's order.
  std::map<const Node*, int> pending;
  std::map<const Value*, std::vector<Node*>> users;
  std::vector<Node*> ready;
  for (auto& n : nodes_) {
    int deps = 0;
    for (Value* v : n->inputs) {
      if (!v) continue;
      if (v->producer) {
        ++deps;
        users[v].push_back(n.get());
      } else if (!v->constant && !v->is_graph_input && !v->is_captured) {
        return error(StatusCode::kInvalidModel, "input '", v->name,
                     "' is not produced by any node, is not a graph input and has no initializer")
            .with_node(n->name, n->op_type);
      }
    }
    pending[n.get()] = deps;
  }
  std::vector<Node*> order;
  std::vector<Node*> queue;
  for (auto& n : nodes_)
    if (pending[n.get()] == 0) queue.push_back(n.get());
  size_t head = 0;
  while (head < queue.size()) {
    Node* n = queue[head++];
    order.push_back(n);
    for (Value* o : n->outputs) {
      if (!o) continue;
      for (Node* u : users[o])
        if (--pending[u] == 0) queue.push_back(u);
    }
  }
  if (order.size() != nodes_.size()) {
    std::string names;
    int count = 0;
    for (auto& n : nodes_) {
      if (pending[n.get()] > 0) {
        if (count++ < 8) names += (names.empty() ? "" : ", ") + ("'" + n->name + "' (" + n->op_type + ")");
      }
    }
    return error(StatusCode::kInvalidModel, "the graph has a cycle; nodes on or after it: ", names,
                 count > 8 ? " ..." : "");
  }
  std::map<const Node*, size_t> pos;
  for (size_t i = 0; i < order.size(); ++i) pos[order[i]] = i;
  std::stable_sort(nodes_.begin(), nodes_.end(),
                   [&](const std::unique_ptr<Node>& a, const std::unique_ptr<Node>& b) {
                     return pos[a.get()] < pos[b.get()];
                   });
  return Status::ok();
}

bool clip_bounds(const Node& clip, float* lo, float* hi) {
  *lo = -std::numeric_limits<float>::infinity();
  *hi = std::numeric_limits<float>::infinity();
  if (clip.opset < 11) {
    auto a = clip.attrs.get_float("min", *lo);
    auto b = clip.attrs.get_float("max", *hi);
    if (!a || !b) return false;
    *lo = *a;
    *hi = *b;
  }
  for (size_t i = 1; i < clip.inputs.size() && i < 3; ++i) {
    const Value* v = clip.inputs[i];
    if (!v) continue;
    if (!v->constant || v->constant->numel() != 1 || !dtype_is_float(v->constant->dtype())) return false;
    (i == 1 ? *lo : *hi) = static_cast<float>(v->constant->get(0));
  }
  return true;
}

}  // namespace graft
