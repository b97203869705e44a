// A graft plugin library used by the Python tests: it exercises what graft's own ops may not
// (an optional input, string and list attributes, two differentiable inputs) and plugin loading.
//
// PyTestAffine: y = alpha * f(x) + bias (bias broadcast over the last axis, optional)
//   f(x) = x ("plain") or x*x ("square"); attributes alpha (float in [-10, 10]), mode, tags (unused).
#include <cmath>

#include "graft/plugin.h"

namespace {

template <typename T>
graft::Status forward(const graft::KernelContext& c) {
  float alpha = std::get<float>(*c.attrs->find("alpha"));
  bool square = std::get<std::string>(*c.attrs->find("mode")) == "square";
  const T* x = c.inputs[0].as<T>();
  const T* b = c.inputs[1].data ? c.inputs[1].as<T>() : nullptr;
  int64_t last = c.inputs[0].dims.empty() ? 1 : c.inputs[0].dims.back();
  T* y = c.outputs[0].as<T>();
  for (int64_t i = 0, n = c.inputs[0].numel(); i < n; ++i) {
    T v = square ? x[i] * x[i] : x[i];
    y[i] = static_cast<T>(alpha) * v + (b ? b[i % last] : T(0));
  }
  return graft::Status::ok();
}

// inputs: x, bias (maybe absent), grad_y; outputs: grad_x, grad_bias (absent when bias is).
template <typename T>
graft::Status backward(const graft::KernelContext& c) {
  float alpha = std::get<float>(*c.attrs->find("alpha"));
  bool square = std::get<std::string>(*c.attrs->find("mode")) == "square";
  const T* x = c.inputs[0].as<T>();
  const T* gy = c.inputs[2].as<T>();
  int64_t last = c.inputs[0].dims.empty() ? 1 : c.inputs[0].dims.back();
  T* gx = c.outputs[0].as<T>();
  T* gb = c.outputs.size() > 1 && c.outputs[1].data ? c.outputs[1].as<T>() : nullptr;
  if (gb)
    for (int64_t j = 0; j < last; ++j) gb[j] = 0;
  for (int64_t i = 0, n = c.inputs[0].numel(); i < n; ++i) {
    gx[i] = gy[i] * static_cast<T>(alpha) * (square ? T(2) * x[i] : T(1));
    if (gb) gb[i % last] += gy[i];
  }
  return graft::Status::ok();
}

graft::Status kernel(const graft::KernelContext& c) {
  return c.inputs[0].dtype == graft::DataType::kFloat64 ? forward<double>(c) : forward<float>(c);
}
graft::Status kernel_backward(const graft::KernelContext& c) {
  return c.inputs[0].dtype == graft::DataType::kFloat64 ? backward<double>(c) : backward<float>(c);
}

graft::Status register_ops(graft::OpRegistry& r, const char* source) {
  using graft::DataType;
  graft::OpDef def("PyTestAffine");
  def.domain("graft.test").version("1")
      .doc("alpha * f(x) + bias; a test op for the Python adapter")
      .attr_float("alpha", 1.0f).range(-10.0, 10.0)
      .attr_string("mode", std::string("plain")).allowed(std::vector<std::string>{"plain", "square"})
      .attr_ints("tags", std::vector<int64_t>{})
      .input("x", {DataType::kFloat32, DataType::kFloat64})
      .optional_input("bias", {DataType::kFloat32, DataType::kFloat64})
      .output("y")
      .shape_fn([](graft::ShapeContext& c) {
        if (c.input_rank(0) < 1)
          return graft::error(graft::StatusCode::kInvalidArgument, "PyTestAffine: x must have rank >= 1, got rank ",
                              c.input_rank(0));
        if (c.has_input(1)) {
          if (c.input_rank(1) != 1)
            return graft::error(graft::StatusCode::kInvalidArgument, "PyTestAffine: bias must have rank 1, got rank ",
                                c.input_rank(1));
          auto a = c.input_dim(0, -1).constant_value(), b = c.input_dim(1, 0).constant_value();
          if (a && b && *a != *b)
            return graft::error(graft::StatusCode::kInvalidArgument, "PyTestAffine: bias has ", *b,
                                " elements, x's last axis has ", *a);
        }
        c.set_output(0, c.input_shape(0));
        return graft::Status::ok();
      })
      .kernel(graft::Backend::kCPU, kernel)
      .differentiable_inputs({0, 1})
      .backward(graft::Backend::kCPU, kernel_backward);
  graft::AttributeMap square, plain;
  square.set("alpha", 1.5f);
  square.set("mode", std::string("square"));
  plain.set("alpha", -0.5f);
  def.example({std::vector<int64_t>{3, 5}, std::vector<int64_t>{5}}, square)
      .example({std::vector<int64_t>{2, 2, 4}, std::nullopt}, plain);
  return r.add(std::move(def), source);
}

}  // namespace

GRAFT_DEFINE_PLUGIN("graft_python_test_ops", register_ops)
