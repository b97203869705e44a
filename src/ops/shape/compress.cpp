// Compress: its naive CPU reference and schema (CUDA: compress.cu).
#include "ops/shape/shape.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

#include "backends/cpu/element_traits.h"
#include "backends/cpu/kernel_util.h"
#include "backends/cpu/unary_kernel.h"  // check_io(ctx, inputs), op_name, bad_dtype
#include "core/checked_math.h"
#include "graft/attribute.h"
#include "graft/status.h"
#include "graft/tensor.h"
#include "ops/attr_util.h"  // int_input
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {

// ---- CPU reference ---------------------------------------------------------------------------------

namespace cpu {

Status compress(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 2));
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  const auto cond = ctx.inputs[1]->to_int64_vector();
  const AttributeMap& attrs = attrs_of(ctx);
  const bool has_axis = attrs.find("axis") != nullptr;
  GRAFT_ASSIGN_OR_RETURN(int64_t axis_attr, attrs.get_int("axis", 0));
  std::vector<int64_t> dims = has_axis ? x.dims() : std::vector<int64_t>{x.numel()};
  auto axis = normalize_axis(has_axis ? axis_attr : 0, static_cast<int64_t>(dims.size()));
  if (!axis) return Status(axis.status()).with_attribute("axis");
  const AxisView v = axis_view(dims, axis.value(), false);
  if (static_cast<int64_t>(cond.size()) > v.n)
    return error(StatusCode::kInvalidModel, "Compress condition has ", static_cast<int64_t>(cond.size()),
                 " entries but the axis has ", v.n);
  std::vector<int64_t> keep;
  for (int64_t t = 0; t < static_cast<int64_t>(cond.size()); ++t)
    if (cond[t]) keep.push_back(t);
  const int64_t kn = static_cast<int64_t>(keep.size());
  GRAFT_CHECK(y.numel() == v.outer * kn * v.inner && y.dtype() == x.dtype());
  const size_t es = dtype_size(x.dtype());
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t t = 0; t < kn; ++t)
      std::memcpy(static_cast<char*>(y.data()) + (o * kn + t) * v.inner * es,
                  static_cast<const char*>(x.data()) + (o * v.n + keep[t]) * v.inner * es, v.inner * es);
  return Status::ok();
}

}  // namespace cpu

// ---- schema ----------------------------------------------------------------------------------------

namespace {

using namespace infer;

Status infer_compress(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kAllTypes));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, {kBool}));
  const TensorDesc& x = ctx.input(0);
  const TensorDesc& cond = ctx.input(1);
  if (cond.shape && cond.rank() != 1) return ctx.fail("condition must be 1-D, got ", cond.to_string());
  const AttrValue* axis_attr = ctx.attrs().find("axis");
  if (!x.shape) {
    ctx.set_output(0, desc_of(x.dtype, std::nullopt));
    return Status::ok();
  }
  Dim n = ctx.unknown_dim();
  if (const Tensor* c = ctx.input_value(1); c && c->device() == DeviceType::kCPU) {
    const auto v = c->to_int64_vector();
    n = Dim(static_cast<int64_t>(std::count_if(v.begin(), v.end(), [](int64_t e) { return e != 0; })));
  }
  if (!axis_attr) {  // no axis: the input is flattened first
    ctx.set_output(0, desc_of(x.dtype, Shape{n}));
    return Status::ok();
  }
  auto axis = ctx.attrs().get_int("axis", 0);
  if (!axis) return Status(axis.status()).with_attribute("axis");
  auto a = normalize_axis(axis.value(), x.rank());
  if (!a) return Status(a.status()).with_attribute("axis");
  Shape s = *x.shape;
  s[a.value()] = n;
  ctx.set_output(0, desc_of(x.dtype, s));
  return Status::ok();
}

}  // namespace

void append_compress_ops(std::vector<OpEntry>& out) { out.push_back({"Compress", 11, infer_compress, cpu::compress}); }

}  // namespace graft
