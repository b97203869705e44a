// ai.example::ClampedSwish — an example graft plugin op.
//
//   y = min(x * sigmoid(beta * x), limit)
//
// Swish (SiLU when beta = 1) with an upper clamp, the way ReLU6 clamps ReLU: bounded activations
// quantize better. Everything graft, the PyTorch extension and the TensorRT adapter need is in the
// one OpDef below: identity, typed attributes with ranges, I/O dtypes, the shape function, and the
// CPU kernels. Nothing else is written per backend.
#include <cmath>
#include <cstdint>

#include "graft/op.h"
#include "graft/plugin.h"

namespace {

using graft::DataType;
using graft::KernelContext;
using graft::Status;
using graft::StatusCode;

struct Params {
  double beta = 1.0;
  double limit = 6.0;
};

// Attributes arrive validated (types, defaults filled, ranges checked) from OpDef::validate_attributes.
graft::Result<Params> read_params(const KernelContext& ctx) {
  Params p;
  GRAFT_ASSIGN_OR_RETURN(float beta, ctx.attrs->get_float("beta", 1.0f));
  GRAFT_ASSIGN_OR_RETURN(float limit, ctx.attrs->get_float("limit", 6.0f));
  p.beta = beta;
  p.limit = limit;
  return p;
}

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// The naive CPU reference: computes in double, loads and stores any float dtype. It is the
// executable specification that faster kernels are tested against.
Status clamped_swish_cpu(const KernelContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(Params p, read_params(ctx));
  GRAFT_RETURN_IF_ERROR(graft::check_kernel_io(ctx, "ClampedSwish", 1, 1));
  const graft::TensorView& x = ctx.inputs[0];
  const graft::TensorView& y = ctx.outputs[0];
  if (x.numel() != y.numel())
    return graft::error(StatusCode::kInvalidArgument, "ClampedSwish: output has ", y.numel(),
                        " elements, input has ", x.numel());
  for (int64_t i = 0; i < x.numel(); ++i) {
    double v = graft::load_as_double(x.dtype, x.data, i);
    double f = v * sigmoid(p.beta * v);
    graft::store_from_double(y.dtype, y.data, i, f < p.limit ? f : p.limit);
  }
  return Status::ok();
}

// Backward: inputs (x, dy), output dx.
//   d/dx [x * s(beta x)] = s + beta * x * s * (1 - s); zero where the clamp is active.
Status clamped_swish_backward_cpu(const KernelContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(Params p, read_params(ctx));
  GRAFT_RETURN_IF_ERROR(graft::check_kernel_io(ctx, "ClampedSwish", 2, 1, "backward kernel (x, dy) -> dx"));
  const graft::TensorView& x = ctx.inputs[0];
  const graft::TensorView& dy = ctx.inputs[1];
  const graft::TensorView& dx = ctx.outputs[0];
  if (x.numel() != dy.numel() || x.numel() != dx.numel())
    return graft::error(StatusCode::kInvalidArgument, "ClampedSwish backward: x, dy and dx sizes differ (",
                        x.numel(), ", ", dy.numel(), ", ", dx.numel(), ")");
  for (int64_t i = 0; i < x.numel(); ++i) {
    double v = graft::load_as_double(x.dtype, x.data, i);
    double s = sigmoid(p.beta * v);
    double f = v * s;
    double grad = f < p.limit ? s + p.beta * v * s * (1.0 - s) : 0.0;
    graft::store_from_double(dx.dtype, dx.data, i, grad * graft::load_as_double(dy.dtype, dy.data, i));
  }
  return Status::ok();
}

graft::OpDef define_clamped_swish() {
  graft::OpDef def("ClampedSwish");
  def.domain("ai.example")
      .version("1")
      .doc("y = min(x * sigmoid(beta * x), limit), elementwise")
      .attr_float("beta", 1.0f, "slope of the gate; 1 gives SiLU, 0 gives x/2").range(0.0, 100.0)
      .attr_float("limit", 6.0f, "upper clamp of the output").range(0.0, 1e30)
      .input("x", {DataType::kFloat32, DataType::kFloat16, DataType::kFloat64})
      .output("y")
      .type_combination({DataType::kFloat32, DataType::kFloat32})
      .type_combination({DataType::kFloat16, DataType::kFloat16})
      .type_combination({DataType::kFloat64, DataType::kFloat64})
      // Elementwise: the output has the input's (possibly symbolic) shape.
      .shape_fn([](graft::ShapeContext& c) {
        c.set_output(0, c.input_shape(0));
        return Status::ok();
      })
      .kernel(graft::Backend::kCPU, clamped_swish_cpu)
      .differentiable_inputs({0})
      .backward(graft::Backend::kCPU, clamped_swish_backward_cpu);
  graft::AttributeMap ex;
  ex.set("beta", 2.0f);
  ex.set("limit", 2.5f);
  def.example({std::vector<int64_t>{2, 3, 5}}, ex)  // a small valid call for generic tools
      .example_range(0, -4.0, 4.0);                  // x drawn in [-4, 4): some beyond the limit
  return def;
}

// Called once by graft when the library is loaded; `source` is the library path (used in errors).
Status register_example_ops(graft::OpRegistry& registry, const char* source) {
  return registry.add(define_clamped_swish(), source);
}

}  // namespace

GRAFT_DEFINE_PLUGIN("graft_plugin_example", register_example_ops)
