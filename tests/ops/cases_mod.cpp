// Cases for ONNX Mod (opset 13): fmod=1, C's remainder (the dividend's sign), for floats and
// integers; fmod=0, Python's (the divisor's sign), for integers only. Both with numpy broadcasting.
// Divisors never come near zero: an integer one fails the run (on CUDA too: the engine's
// invalid-data test), and a float one makes the remainder of a tiny divisor, where dtype rounding
// decides everything.
#include <algorithm>
#include <cmath>

#include "case_util.h"
#include "harness.h"

namespace graft::optest {

namespace {

AttributeMap fmod_attr(int64_t fmod) {
  AttributeMap a;
  a.set("fmod", fmod);
  return a;
}

// Moves the divisor (input 1) away from zero: |d| at least `least`, keeping its sign.
void divisor_away_from_zero(std::vector<Tensor>& ins, double least) {
  Tensor& d = ins[1];
  for (int64_t i = 0; i < d.numel(); ++i) {
    const double v = d.get(i);
    if (std::fabs(v) < least) d.set(i, v < 0 ? -least : least);
  }
}

OpCase mod_case(std::string label, std::vector<int64_t> a, std::vector<int64_t> b, std::vector<int64_t> out,
                int64_t fmod, std::optional<DataType> dtype) {
  OpCase c;
  c.label = std::move(label);
  const bool integer = dtype.has_value();
  c.inputs = {{a, integer ? -40.0 : -6.0, integer ? 40.0 : 6.0}, {b, integer ? -9.0 : -3.0, integer ? 9.0 : 3.0}};
  c.inputs[0].dtype = c.inputs[1].dtype = dtype;
  c.attrs = fmod_attr(fmod);
  c.output_dims = {std::move(out)};
  c.adjust_inputs = [integer](std::vector<Tensor>& ins) { divisor_away_from_zero(ins, integer ? 1.0 : 0.25); };
  return c;
}

}  // namespace

OpCaseTable mod_cases() {
  OpCaseTable t = builtin_table("Mod", nullptr, 13);
  t.cpu_dtypes = {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16};
  t.cuda_dtypes = {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16};
  t.cases.push_back(mod_case("float_same_shape", {2, 3, 4}, {2, 3, 4}, {2, 3, 4}, 1, std::nullopt));
  t.cases.push_back(mod_case("float_broadcast_rows", {2, 3, 5}, {5}, {2, 3, 5}, 1, std::nullopt));
  t.cases.push_back(mod_case("float_broadcast_both", {4, 1, 6}, {3, 1}, {4, 3, 6}, 1, std::nullopt));
  t.cases.push_back(mod_case("int64_python_sign", {3, 7}, {3, 7}, {3, 7}, 0, DataType::kInt64));
  t.cases.push_back(mod_case("int64_c_sign_broadcast", {2, 3, 4}, {1, 4}, {2, 3, 4}, 1, DataType::kInt64));
  t.cases.push_back(mod_case("int32_python_sign_broadcast", {5, 6}, {5, 1}, {5, 6}, 0, DataType::kInt32));
  // What exporters compute a shifted window's padding with: (w - W % w) % w on scalars.
  t.cases.push_back(mod_case("int64_scalars", {}, {}, {}, 0, DataType::kInt64));
  t.cases.push_back(mod_case("int8_python_sign_broadcast", {4, 5}, {5}, {4, 5}, 0, DataType::kInt8));
  t.cases.push_back(mod_case("int16_c_sign", {3, 6}, {3, 6}, {3, 6}, 1, DataType::kInt16));
  // Unsigned: both signs agree, so fmod 0 and 1 are the same %; divisors 1 to 9.
  for (DataType dt : {DataType::kUInt8, DataType::kUInt16, DataType::kUInt32, DataType::kUInt64}) {
    OpCase c = mod_case(std::string(dtype_name(dt)) + "_broadcast", {3, 7}, {7}, {3, 7}, 0, dt);
    c.inputs[0].lo = 0;
    c.inputs[0].hi = 200;
    c.inputs[1].lo = 1;
    c.inputs[1].hi = 9;
    t.cases.push_back(std::move(c));
  }

  t.bad_attributes.push_back({"fmod_not_0_or_1", fmod_attr(2), {}, "fmod"});
  t.bad_attributes.push_back({"float_needs_fmod_1", fmod_attr(0), {}, "fmod"});

  // fmod=1: x - d * trunc(x / d); fmod=0: x - d * floor(x / d). Exact in float64 for these values.
  t.reference = [](const std::vector<std::vector<double>>& in, const std::vector<std::vector<int64_t>>& dims,
                   const AttributeMap& attrs) {
    auto fmod = attrs.get_int("fmod", 0);
    const bool c_style = fmod.is_ok() && fmod.value() == 1;
    auto rem = [c_style](const std::vector<double>& v) {
      const double q = v[0] / v[1];
      return v[0] - v[1] * (c_style ? std::trunc(q) : std::floor(q));
    };
    return std::vector<std::vector<double>>{broadcast_apply(in, dims, rem)};
  };
  return t;
}

std::vector<OpCaseTable> mod_case_tables() { return {mod_cases()}; }

}  // namespace graft::optest
