#include "graft/dim.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "core/checked_math.h"

namespace graft {

struct DimNode {
  enum Kind { kConst, kSymbol, kBinary } kind = kConst;
  int64_t value = 0;
  std::string name;
  DimOp op = DimOp::kSum;
  // Operands of a binary node. optional<> so that building a leaf never builds a Dim (which would
  // recurse through Dim's default constructor).
  std::optional<Dim> a, b;
  // Constant arithmetic in this expression overflowed int64 (or divided by zero): the Dim cannot be
  // folded to a number and must be reported, never wrapped into a small "valid" extent.
  bool invalid = false;
};

const char* dim_op_name(DimOp op) {
  switch (op) {
    case DimOp::kSum: return "+";
    case DimOp::kProd: return "*";
    case DimOp::kMax: return "max";
    case DimOp::kMin: return "min";
    case DimOp::kSub: return "-";
    case DimOp::kEqual: return "==";
    case DimOp::kLess: return "<";
    case DimOp::kFloorDiv: return "floordiv";
    case DimOp::kCeilDiv: return "ceildiv";
  }
  return "?";
}

namespace {
// Constants are shared per value for the common small ones to keep allocations down.
std::shared_ptr<const DimNode> make_const(int64_t v) {
  auto n = std::make_shared<DimNode>();
  n->kind = DimNode::kConst;
  n->value = v;
  return n;
}

// b != 0 and not (a == INT64_MIN && b == -1): the callers check.
int64_t floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t ceildiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) == (b < 0))) ++q;
  return q;
}

// nullopt when the result is not an int64: overflow, or division by zero.
std::optional<int64_t> apply(DimOp op, int64_t a, int64_t b) {
  int64_t r = 0;
  switch (op) {
    case DimOp::kSum: if (!checked_add(a, b, &r)) return std::nullopt; return r;
    case DimOp::kProd: if (!checked_mul(a, b, &r)) return std::nullopt; return r;
    case DimOp::kMax: return std::max(a, b);
    case DimOp::kMin: return std::min(a, b);
    case DimOp::kSub: if (!checked_sub(a, b, &r)) return std::nullopt; return r;
    case DimOp::kEqual: return a == b ? 1 : 0;
    case DimOp::kLess: return a < b ? 1 : 0;
    case DimOp::kFloorDiv:
    case DimOp::kCeilDiv:
      if (b == 0 || (a == std::numeric_limits<int64_t>::min() && b == -1)) return std::nullopt;
      return op == DimOp::kFloorDiv ? floordiv(a, b) : ceildiv(a, b);
  }
  return std::nullopt;
}
bool commutative(DimOp op) {
  return op == DimOp::kSum || op == DimOp::kProd || op == DimOp::kMax || op == DimOp::kMin ||
         op == DimOp::kEqual;
}
}  // namespace

Dim::Dim(int64_t value) : node_(make_const(value)) {}

Dim Dim::symbol(const std::string& name) {
  auto n = std::make_shared<DimNode>();
  n->kind = DimNode::kSymbol;
  n->name = name;
  return Dim(std::shared_ptr<const DimNode>(std::move(n)));
}

Dim Dim::binary(DimOp op, const Dim& a, const Dim& b) {
  if (a.is_const() && b.is_const()) {
    auto r = apply(op, a.value(), b.value());
    if (r) return Dim(*r);
  }
  // Identities that keep shapes readable: x+0, x-0, x*1, x*0, max/min(x,x), x floordiv 1.
  if (op == DimOp::kSum) {
    if (a == 0) return b;
    if (b == 0) return a;
  }
  if (op == DimOp::kSub && b == 0) return a;
  if (op == DimOp::kSub && a.same_as(b)) return Dim(0);
  if (op == DimOp::kProd) {
    if (a == 1) return b;
    if (b == 1) return a;
    if (a == 0 || b == 0) return Dim(0);
  }
  if ((op == DimOp::kFloorDiv || op == DimOp::kCeilDiv) && b == 1) return a;
  if ((op == DimOp::kMax || op == DimOp::kMin) && a.same_as(b)) return a;
  if (op == DimOp::kEqual && a.same_as(b)) return Dim(1);
  // (x*c) floordiv c == x for a positive constant c.
  if (op == DimOp::kFloorDiv && b.is_const() && b.value() > 0 && a.node()->kind == DimNode::kBinary &&
      a.node()->op == DimOp::kProd) {
    if (*a.node()->b == b.value()) return *a.node()->a;
    if (*a.node()->a == b.value()) return *a.node()->b;
  }
  auto n = std::make_shared<DimNode>();
  n->kind = DimNode::kBinary;
  n->op = op;
  // Two constants that did not fold above overflowed (or divided by zero); invalidity spreads to
  // every expression built on top.
  n->invalid = (a.is_const() && b.is_const()) || a.is_invalid() || b.is_invalid();
  // Canonical order for commutative ops: constants last, then by printed form.
  if (commutative(op) && ((a.is_const() && !b.is_const()) ||
                          (!a.is_const() && !b.is_const() && a.to_string() > b.to_string()))) {
    n->a = b;
    n->b = a;
  } else {
    n->a = a;
    n->b = b;
  }
  // Fold constant chains: (x + c1) + c2 -> x + (c1+c2), same for *.
  if ((op == DimOp::kSum || op == DimOp::kProd) && n->b->is_const() &&
      n->a->node()->kind == DimNode::kBinary && n->a->node()->op == op && n->a->node()->b->is_const()) {
    // Only when the two constants combine without overflow; otherwise the expression stays as is.
    if (auto folded = apply(op, n->a->node()->b->value(), n->b->value()))
      return Dim::binary(op, *n->a->node()->a, Dim(*folded));
  }
  return Dim(std::shared_ptr<const DimNode>(std::move(n)));
}

bool Dim::is_const() const { return node_->kind == DimNode::kConst; }
int64_t Dim::value() const { return node_->value; }
bool Dim::is_symbol() const { return node_->kind == DimNode::kSymbol; }
bool Dim::is_invalid() const { return node_->invalid; }
const std::string& Dim::symbol_name() const { return node_->name; }

std::optional<int64_t> Dim::evaluate(const SymbolBindings& bindings) const {
  switch (node_->kind) {
    case DimNode::kConst: return node_->value;
    case DimNode::kSymbol: {
      auto it = bindings.find(node_->name);
      if (it == bindings.end()) return std::nullopt;
      return it->second;
    }
    case DimNode::kBinary: {
      auto a = node_->a->evaluate(bindings);
      auto b = node_->b->evaluate(bindings);
      if (!a || !b) return std::nullopt;
      return apply(node_->op, *a, *b);
    }
  }
  return std::nullopt;
}

void Dim::collect_symbols(std::vector<std::string>& out) const {
  if (node_->kind == DimNode::kSymbol) {
    if (std::find(out.begin(), out.end(), node_->name) == out.end()) out.push_back(node_->name);
  } else if (node_->kind == DimNode::kBinary) {
    node_->a->collect_symbols(out);
    node_->b->collect_symbols(out);
  }
}

bool Dim::same_as(const Dim& o) const {
  if (node_ == o.node_) return true;
  if (node_->kind != o.node_->kind) return false;
  switch (node_->kind) {
    case DimNode::kConst: return node_->value == o.node_->value;
    case DimNode::kSymbol: return node_->name == o.node_->name;
    case DimNode::kBinary:
      return node_->op == o.node_->op && node_->a->same_as(*o.node_->a) && node_->b->same_as(*o.node_->b);
  }
  return false;
}

std::string Dim::to_string() const {
  switch (node_->kind) {
    case DimNode::kConst: return std::to_string(node_->value);
    case DimNode::kSymbol: return node_->name;
    case DimNode::kBinary: {
      const char* op = dim_op_name(node_->op);
      if (node_->op == DimOp::kSum || node_->op == DimOp::kProd || node_->op == DimOp::kSub ||
          node_->op == DimOp::kEqual || node_->op == DimOp::kLess)
        return "(" + node_->a->to_string() + op + node_->b->to_string() + ")";
      return std::string(op) + "(" + node_->a->to_string() + "," + node_->b->to_string() + ")";
    }
  }
  return "?";
}

std::string shape_to_string(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) r += ",";
    r += s[i].to_string();
  }
  return r + "]";
}
bool shape_is_static(const Shape& s) {
  return std::all_of(s.begin(), s.end(), [](const Dim& d) { return d.is_const(); });
}
std::vector<int64_t> shape_values(const Shape& s) {
  std::vector<int64_t> v;
  v.reserve(s.size());
  for (auto& d : s) v.push_back(d.is_const() ? d.value() : -1);
  return v;
}
Shape shape_from_values(const std::vector<int64_t>& v) { return Shape(v.begin(), v.end()); }
bool shapes_same(const Shape& a, const Shape& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!a[i].same_as(b[i])) return false;
  return true;
}
Dim shape_numel(const Shape& s) {
  Dim n(1);
  for (auto& d : s) n = n * d;
  return n;
}
std::optional<std::vector<int64_t>> shape_evaluate(const Shape& s, const SymbolBindings& b) {
  std::vector<int64_t> out;
  for (auto& d : s) {
    auto v = d.evaluate(b);
    if (!v) return std::nullopt;
    out.push_back(*v);
  }
  return out;
}

}  // namespace graft
