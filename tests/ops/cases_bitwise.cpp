// Cases for ONNX's BitwiseAnd, BitwiseOr, BitwiseXor and BitwiseNot (opset 18), over integer inputs
// of their own dtypes (the run's float dtype does not enter). The formula reads each value as the
// two's-complement bits of a 64-bit integer, which is each signed type's pattern sign-extended and
// each unsigned one's zero-extended, so one formula serves every width: for the binary ops the
// result's bits are the operand bits' and/or/xor, read back in the type's width by the value.
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "case_util.h"
#include "harness.h"

namespace graft::optest {

namespace {

OpCaseTable bitwise_binary_cases(const char* name, int64_t (*op)(int64_t, int64_t)) {
  OpCaseTable t = builtin_table(name, [op](const Values& in, const DimsList& dims, const AttributeMap&) {
    return Values{broadcast_apply(in, dims, [op](const std::vector<double>& v) {
      return static_cast<double>(op(static_cast<int64_t>(v[0]), static_cast<int64_t>(v[1])));
    })};
  }, 18);
  // Values over each type's whole range, negative ones included, and numpy broadcasting; uint8 and
  // int8 run on CUDA too, the 16-bit and uint32 types on the CPU only.
  t.cases.push_back(make_case("int32_same_shape", {typed({3, 5}, DataType::kInt32, -2e9, 2e9),
                                                   typed({3, 5}, DataType::kInt32, -2e9, 2e9)}, {{3, 5}}));
  t.cases.push_back(make_case("uint8_broadcast_rows", {typed({4, 6}, DataType::kUInt8, 0, 255),
                                                       typed({6}, DataType::kUInt8, 0, 255)}, {{4, 6}}));
  t.cases.push_back(make_case("int8_broadcast_both", {typed({2, 1, 5}, DataType::kInt8, -128, 127),
                                                      typed({3, 1}, DataType::kInt8, -128, 127)}, {{2, 3, 5}}));
  t.cases.push_back(make_case("int64_scalar", {typed({7}, DataType::kInt64, -4e15, 4e15),
                                               typed({}, DataType::kInt64, -4e15, 4e15)}, {{7}}));
  for (auto [label, type, lo, hi] : {std::tuple<const char*, DataType, double, double>{"int16", DataType::kInt16, -32768, 32767},
                                     {"uint16", DataType::kUInt16, 0, 65535},
                                     {"uint32", DataType::kUInt32, 0, 4294967295.0}}) {
    t.cases.push_back(
        make_case(std::string(label) + "_broadcast", {typed({3, 4}, type, lo, hi), typed({4}, type, lo, hi)}, {{3, 4}}));
  }
  return t;
}

// ~x of a signed type is -x - 1 in every width. (An unsigned type's ~x depends on its width, which
// the formula cannot see: BitwiseNot of uint8 to uint64 is checked in tests/unit, Bitwise.NotOfUnsigned.)
OpCaseTable bitwise_not_cases() {
  OpCaseTable t = builtin_table("BitwiseNot", [](const Values& in, const DimsList&, const AttributeMap&) {
    std::vector<double> y;
    for (double v : in[0]) y.push_back(-v - 1.0);
    return Values{y};
  }, 18);
  t.cases.push_back(make_case("int8", {typed({3, 7}, DataType::kInt8, -128, 127)}, {{3, 7}}));
  t.cases.push_back(make_case("int32", {typed({4, 5}, DataType::kInt32, -2e9, 2e9)}, {{4, 5}}));
  t.cases.push_back(make_case("int64", {typed({9}, DataType::kInt64, -4e15, 4e15)}, {{9}}));
  t.cases.push_back(make_case("int16", {typed({2, 6}, DataType::kInt16, -32768, 32767)}, {{2, 6}}));
  return t;
}

}  // namespace

std::vector<OpCaseTable> bitwise_case_tables() {
  return {bitwise_binary_cases("BitwiseAnd", [](int64_t a, int64_t b) { return a & b; }),
          bitwise_binary_cases("BitwiseOr", [](int64_t a, int64_t b) { return a | b; }),
          bitwise_binary_cases("BitwiseXor", [](int64_t a, int64_t b) { return a ^ b; }),
          bitwise_not_cases()};
}

}  // namespace graft::optest
