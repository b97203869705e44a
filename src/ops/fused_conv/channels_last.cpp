// GraftChannelsLast (fused_conv.h), a stem's input as padded channels-last, or rearranged space to
// depth: its schema, CPU reference and attribute reader (src/ops/layout.h). CUDA:
// channels_last_cuda.cpp.
#include <vector>

#include "ops/layout.h"
#include "ops/operator.h"

namespace graft {

namespace {

// ---- GraftChannelsLast ----

// Y's spatial extent along one axis: (extent + pads) / block, floored.
Dim channels_last_extent(const ChannelsLastAttrs& a, const Dim& in, int64_t pad_begin, int64_t pad_end) {
  return floor_div(in + Dim(pad_begin + pad_end), Dim(a.block));
}

Status infer_graft_channels_last(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(ChannelsLastAttrs a, read_channels_last(ctx.attrs()));
  const TensorDesc& x = ctx.input(0);
  if (x.dtype != DataType::kFloat32 && x.dtype != DataType::kFloat16)
    return ctx.fail("X must be float32 or float16, got ", dtype_name(x.dtype));
  if (x.rank() != 4) return ctx.fail("X must have rank 4 [N, C, H, W], got ", x.to_string());
  const Shape& s = *x.shape;
  if (s[1].is_const() && s[1].value() * a.block * a.block > a.channels)
    return ctx.fail("channels ", a.channels, " is fewer than X's ", s[1].value(), " times block^2 (", a.block * a.block,
                    ")");
  const Dim h = channels_last_extent(a, s[2], a.pads[0], a.pads[2]), w = channels_last_extent(a, s[3], a.pads[1], a.pads[3]);
  if ((h.is_const() && h.value() < 1) || (w.is_const() && w.value() < 1))
    return ctx.fail("pads and block leave no rows or columns of X ", x.to_string());
  ctx.set_output(0, TensorDesc(a.to == DataType::kUndefined ? x.dtype : a.to, Shape{s[0], h, w, Dim(a.channels)}));
  return Status::ok();
}

Status graft_channels_last_cpu(ExecContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(ChannelsLastAttrs a, read_channels_last(*ctx.attrs));
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  if (x.rank() != 4 || x.dims()[1] * a.block * a.block > a.channels)
    return error(StatusCode::kInvalidModel, "X must be [N, C, H, W] with C * block^2 <= channels (", a.channels, ")");
  const auto& d = x.dims();
  const int64_t n = d[0], c = d[1], h = d[2], w = d[3], s = a.block;
  const int64_t oh = y.dims()[1], ow = y.dims()[2];
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j)
        for (int64_t k = 0; k < a.channels; ++k) {
          double v = 0.0;
          if (k < s * s * c) {
            const int64_t dy = k / c / s, dx = k / c % s, ch = k % c;
            const int64_t r = s * i + dy - a.pads[0], col = s * j + dx - a.pads[1];
            if (r >= 0 && r < h && col >= 0 && col < w) v = x.get(((b * c + ch) * h + r) * w + col);
          }
          y.set(((b * oh + i) * ow + j) * a.channels + k, v);
        }
  return Status::ok();
}

}  // namespace

Result<ChannelsLastAttrs> read_channels_last(const AttributeMap& a) {
  ChannelsLastAttrs r;
  auto ch = a.require_int("channels");
  if (!ch) return Status(ch.status()).with_attribute("channels");
  r.channels = *ch;
  if (r.channels < 1 || r.channels > (int64_t{1} << 20))
    return error(StatusCode::kInvalidModel, "channels must lie in 1..2^20, got ", r.channels).with_attribute("channels");
  auto to = a.get_int("to", -1);
  if (!to) return Status(to.status()).with_attribute("to");
  if (*to != -1) {
    r.to = static_cast<DataType>(*to);
    if (r.to != DataType::kFloat32 && r.to != DataType::kFloat16)
      return error(StatusCode::kInvalidModel, "'to' must be float32 or float16, got ", *to).with_attribute("to");
  }
  auto block = a.get_int("block", 1);
  if (!block) return Status(block.status()).with_attribute("block");
  if (*block < 1 || *block > 64)
    return error(StatusCode::kInvalidModel, "block must lie in 1..64, got ", *block).with_attribute("block");
  r.block = *block;
  auto pads = a.get_ints("pads", {0, 0, 0, 0});
  if (!pads) return Status(pads.status()).with_attribute("pads");
  if (pads->size() != 4)
    return error(StatusCode::kInvalidModel, "pads must hold 4 values [top, left, bottom, right], got ", pads->size())
        .with_attribute("pads");
  for (int64_t p : *pads)
    if (p < -r.block * 64 || p > r.block * 64)
      return error(StatusCode::kInvalidModel, "pads must lie in -64*block..64*block, got ", p).with_attribute("pads");
  r.pads = *pads;
  return r;
}

void append_channels_last_ops(std::vector<OpEntry>& out) {
  out.push_back(internal_op(OpEntry{"GraftChannelsLast", 11, infer_graft_channels_last, graft_channels_last_cpu}));
}

}  // namespace graft
