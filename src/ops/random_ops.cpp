// Schemas of the random ops: RandomUniform and RandomNormal (opset 1; output shape and dtype from
// the attributes), RandomUniformLike and RandomNormalLike (opset 1; input 0's shape, and its dtype
// unless the dtype attribute is given), Bernoulli (opset 15; input 0 holds probabilities, output
// its shape) and Multinomial (opset 7; [batch, classes] log probabilities to [batch, sample_size]
// class indices). Attributes are checked here, so a bad node fails at build time naming the
// attribute (src/ops/random_attrs.h). Kernels: src/backends/cpu/random.cpp and
// src/backends/cuda/random_ops.cpp. Constant folding never runs these nodes (node_is_random).
#include <vector>

#include "backends/cpu/random.h"
#include "ops/infer_util.h"
#include "ops/operator.h"
#include "ops/random_attrs.h"

namespace graft {
namespace {

using namespace infer;

Status infer_random_source(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(RandomAttrs a, random_attrs(ctx.node().op_type, ctx.attrs(), DataType::kUndefined));
  ctx.set_output(0, desc_of(a.dtype, shape_from_values(a.shape)));
  return Status::ok();
}

// RandomUniformLike, RandomNormalLike and Bernoulli: output 0 has input 0's shape.
Status infer_random_like(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(require_input(ctx, 0));
  if (ctx.node().op_type == "Bernoulli") GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, {kF16, kF32, kF64}));
  else GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kAllTypes));
  const TensorDesc& x = ctx.input(0);
  GRAFT_ASSIGN_OR_RETURN(RandomAttrs a, random_attrs(ctx.node().op_type, ctx.attrs(), x.dtype));
  ctx.set_output(0, desc_of(a.dtype, x.shape));
  return Status::ok();
}

Status infer_multinomial(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, {kF16, kF32, kF64}));
  const TensorDesc& x = ctx.input(0);
  GRAFT_ASSIGN_OR_RETURN(RandomAttrs a, random_attrs("Multinomial", ctx.attrs(), x.dtype));
  if (!x.shape) {
    ctx.set_output(0, desc_of(a.dtype, Shape{ctx.unknown_dim(), Dim(a.sample_size)}));
    return Status::ok();
  }
  if (x.rank() != 2) return ctx.fail("input 0 must be [batch_size, class_size], got ", x.to_string());
  ctx.set_output(0, desc_of(a.dtype, Shape{(*x.shape)[0], Dim(a.sample_size)}));
  return Status::ok();
}

}  // namespace

void append_random_ops(std::vector<OpEntry>& out) {
  out.insert(out.end(), {
      keeps_float32({"RandomUniform", 1, infer_random_source, cpu::random_uniform}),
      keeps_float32({"RandomNormal", 1, infer_random_source, cpu::random_normal}),
      keeps_float32({"RandomUniformLike", 1, infer_random_like, cpu::random_uniform_like}),
      keeps_float32({"RandomNormalLike", 1, infer_random_like, cpu::random_normal_like}),
      {"Bernoulli", 15, infer_random_like, cpu::bernoulli},
      {"Multinomial", 7, infer_multinomial, cpu::multinomial},
  });
}

}  // namespace graft
