// graft/dim.h — tensor dimensions that may be symbolic.
//
// A Dim is an immutable expression over named symbols (e.g. "batch") and integer constants, built
// with exactly the operations TensorRT's IExprBuilder offers (sum, difference, product, max, min,
// floor-div, ceil-div, equal, less), so an op's shape function maps one to one onto TensorRT.
// Constant sub-expressions fold eagerly; a fully constant Dim is just a number.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace graft {

// Same set and meaning as nvinfer1::DimensionOperation.
enum class DimOp : int { kSum, kProd, kMax, kMin, kSub, kEqual, kLess, kFloorDiv, kCeilDiv };
const char* dim_op_name(DimOp op);

struct DimNode;  // defined in dim.cpp

using SymbolBindings = std::map<std::string, int64_t>;

class Dim {
 public:
  Dim() : Dim(int64_t{0}) {}
  Dim(int64_t value);  // NOLINT(implicit): constants convert freely
  Dim(int value) : Dim(static_cast<int64_t>(value)) {}  // NOLINT(implicit)
  static Dim symbol(const std::string& name);
  static Dim binary(DimOp op, const Dim& a, const Dim& b);  // folds constants

  bool is_const() const;
  int64_t value() const;  // only valid when is_const()
  bool is_symbol() const;
  // True when constant arithmetic inside this expression overflowed int64 or divided by zero
  // (e.g. a product of huge extents): such a Dim is not a constant and evaluates to nullopt.
  bool is_invalid() const;
  const std::string& symbol_name() const;  // only valid when is_symbol()

  // Substitute symbols; nullopt when a symbol is unbound or arithmetic is invalid (div by 0).
  std::optional<int64_t> evaluate(const SymbolBindings& bindings) const;
  // Collects every symbol name this expression mentions.
  void collect_symbols(std::vector<std::string>& out) const;

  // Structural equality after canonicalization (commutative operands ordered).
  bool same_as(const Dim& other) const;
  bool operator==(int64_t v) const { return is_const() && value() == v; }
  bool operator!=(int64_t v) const { return !(*this == v); }

  std::string to_string() const;  // "batch", "3", "(batch*3)"

  const DimNode* node() const { return node_.get(); }

 private:
  explicit Dim(std::shared_ptr<const DimNode> n) : node_(std::move(n)) {}
  std::shared_ptr<const DimNode> node_;
};

inline Dim operator+(const Dim& a, const Dim& b) { return Dim::binary(DimOp::kSum, a, b); }
inline Dim operator-(const Dim& a, const Dim& b) { return Dim::binary(DimOp::kSub, a, b); }
inline Dim operator*(const Dim& a, const Dim& b) { return Dim::binary(DimOp::kProd, a, b); }
inline Dim dim_max(const Dim& a, const Dim& b) { return Dim::binary(DimOp::kMax, a, b); }
inline Dim dim_min(const Dim& a, const Dim& b) { return Dim::binary(DimOp::kMin, a, b); }
inline Dim floor_div(const Dim& a, const Dim& b) { return Dim::binary(DimOp::kFloorDiv, a, b); }
inline Dim ceil_div(const Dim& a, const Dim& b) { return Dim::binary(DimOp::kCeilDiv, a, b); }
inline Dim dim_eq(const Dim& a, const Dim& b) { return Dim::binary(DimOp::kEqual, a, b); }
inline Dim dim_lt(const Dim& a, const Dim& b) { return Dim::binary(DimOp::kLess, a, b); }

using Shape = std::vector<Dim>;

std::string shape_to_string(const Shape& s);                 // "[batch,3,224,224]"
bool shape_is_static(const Shape& s);
std::vector<int64_t> shape_values(const Shape& s);           // requires shape_is_static
Shape shape_from_values(const std::vector<int64_t>& v);
bool shapes_same(const Shape& a, const Shape& b);
// Product of all dims (symbolic if needed).
Dim shape_numel(const Shape& s);
// Evaluate each dim; nullopt when any is unbound.
std::optional<std::vector<int64_t>> shape_evaluate(const Shape& s, const SymbolBindings& b);

}  // namespace graft
