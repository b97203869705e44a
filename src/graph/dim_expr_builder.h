// ShapeExprBuilder backed by graft::Dim: lets custom ops' shape functions (written against the
// TensorRT-like SymDim algebra) run inside graft's shape inference, over symbolic or concrete dims.
#pragma once

#include <deque>

#include "graft/dim.h"
#include "graft/op.h"

namespace graft {

class DimExprBuilder final : public ShapeExprBuilder {
 public:
  const void* constant(int64_t value) override { return intern(Dim(value)); }
  const void* operation(DimOp op, const void* a, const void* b) override {
    return intern(Dim::binary(op, *as_dim(a), *as_dim(b)));
  }
  std::optional<int64_t> constant_value(const void* expr) override {
    const Dim* d = as_dim(expr);
    if (d && d->is_const()) return d->value();
    return std::nullopt;
  }

  // Handles stay valid for the builder's lifetime (deque never moves its elements).
  const void* intern(const Dim& d) {
    dims_.push_back(d);
    return &dims_.back();
  }
  static const Dim* as_dim(const void* expr) { return static_cast<const Dim*>(expr); }

 private:
  std::deque<Dim> dims_;
};

}  // namespace graft
