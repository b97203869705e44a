// A trivial valid op definition for the test plugins: y = x * scale.
#pragma once

#include <string>

#include "graft/op.h"

namespace graft_test {

inline graft::OpDef define_scale_op(const std::string& domain, const std::string& name,
                                    const std::string& version = "1") {
  graft::OpDef def(name);
  def.domain(domain)
      .version(version)
      .attr_float("scale", 1.0f)
      .input("x", {graft::DataType::kFloat32})
      .output("y")
      .shape_fn([](graft::ShapeContext& c) {
        c.set_output(0, c.input_shape(0));
        return graft::Status::ok();
      })
      .kernel(graft::Backend::kCPU, [](const graft::KernelContext& ctx) -> graft::Status {
        GRAFT_ASSIGN_OR_RETURN(float scale, ctx.attrs->get_float("scale", 1.0f));
        const float* x = ctx.inputs[0].as<float>();
        float* y = ctx.outputs[0].as<float>();
        for (int64_t i = 0; i < ctx.inputs[0].numel(); ++i) y[i] = x[i] * scale;
        return graft::Status::ok();
      });
  return def;
}

}  // namespace graft_test
