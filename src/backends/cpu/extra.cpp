#include "backends/cpu/extra.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

#include "backends/cpu/element_traits.h"
#include "backends/cpu/broadcast_walker.h"
#include "backends/cpu/kernel_util.h"
#include "backends/cpu/unary_kernel.h"
#include "ops/reduce_norm/reduce_norm.h"
#include "core/checked_math.h"

namespace graft::cpu {
namespace {

using detail::BroadcastWalker;


}  // namespace


Status trilu(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1));
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  GRAFT_ASSIGN_OR_RETURN(int64_t upper, attrs_of(ctx).get_int("upper", 1));
  int64_t k = 0;
  if (ctx.inputs.size() > 1 && ctx.inputs[1]) {
    auto kv = ctx.inputs[1]->to_int64_vector();
    if (kv.size() != 1)
      return error(StatusCode::kInvalidModel, "Trilu input k must hold one value, got ", static_cast<int64_t>(kv.size()));
    k = kv[0];
  }
  if (x.rank() < 2) return error(StatusCode::kInvalidModel, "Trilu input must have rank >= 2, got ", x.rank());
  GRAFT_CHECK(x.nbytes() == y.nbytes() && x.dtype() == y.dtype());
  const int64_t rows = x.dims()[x.rank() - 2], cols = x.dims()[x.rank() - 1];
  const size_t esize = dtype_size(x.dtype());
  if (y.nbytes()) std::memset(y.data(), 0, y.nbytes());  // zero is all-bits-zero for every graft dtype
  const int64_t plane = rows * cols;
  const int64_t planes = plane != 0 ? x.numel() / plane : 0;
  for (int64_t m = 0; m < planes; ++m)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const bool keep = upper ? c - r >= k : c - r <= k;
        if (!keep) continue;
        const int64_t off = (m * rows + r) * cols + c;
        std::memcpy(static_cast<char*>(y.data()) + off * esize, static_cast<const char*>(x.data()) + off * esize, esize);
      }
  return Status::ok();
}

Status size(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1));
  Tensor& y = *ctx.outputs[0];
  GRAFT_CHECK(y.dtype() == DataType::kInt64 && y.numel() == 1);
  y.data_as<int64_t>()[0] = ctx.inputs[0]->numel();
  return Status::ok();
}

Status one_hot(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 3));
  const Tensor& ind = *ctx.inputs[0];
  const Tensor& depth_t = *ctx.inputs[1];
  const Tensor& vals = *ctx.inputs[2];
  Tensor& y = *ctx.outputs[0];
  GRAFT_ASSIGN_OR_RETURN(int64_t axis_attr, attrs_of(ctx).get_int("axis", -1));
  if (depth_t.numel() != 1 || vals.numel() != 2)
    return error(StatusCode::kInvalidModel, "OneHot needs a one-value depth and two values (off, on), got ",
                 depth_t.numel(), " and ", vals.numel());
  const auto depth_v = checked_int64(depth_t.get(0));  // may be a float (NaN, 1e30): checked
  if (!depth_v || *depth_v < 1)
    return error(StatusCode::kInvalidModel, "OneHot depth must be a positive integer, got ", depth_t.get(0));
  const int64_t depth = *depth_v;
  auto axis = normalize_axis(axis_attr, ind.rank() + 1);
  if (!axis) return Status(axis.status()).with_attribute("axis");
  // Output viewed as [outer, depth, inner] where outer*inner enumerates the indices.
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < ind.rank(); ++d) (d < axis.value() ? outer : inner) *= ind.dims()[d];
  GRAFT_CHECK(y.numel() == outer * depth * inner && y.dtype() == vals.dtype());
  const size_t es = dtype_size(vals.dtype());
  const char* off_v = static_cast<const char*>(vals.data());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      // Indices may be float; they are truncated (saturating: NaN or huge floats, and int64 indices
      // near its limits, whose double is 2^63, must not convert with UB), negative ones count from
      // the end.
      int64_t k = saturating_int64(ind.get(o * inner + i));
      if (k < 0 && k >= -depth) k += depth;
      for (int64_t d = 0; d < depth; ++d)
        std::memcpy(static_cast<char*>(y.data()) + ((o * depth + d) * inner + i) * es, off_v + (d == k ? es : 0), es);
    }
  return Status::ok();
}

namespace {

Status depth_space(ExecContext& ctx, bool to_space) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 1));
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  GRAFT_ASSIGN_OR_RETURN(int64_t b, attrs_of(ctx).get_int("blocksize", 0));
  GRAFT_ASSIGN_OR_RETURN(std::string mode, attrs_of(ctx).get_string("mode", "DCR"));
  if (x.rank() != 4 || b < 1) return error(StatusCode::kInvalidModel, op_name(ctx), " needs 4-D input and blocksize >= 1");
  GRAFT_CHECK(x.numel() == y.numel() && x.dtype() == y.dtype() && y.rank() == 4);
  // Walk the depth (fewer channels, larger space) side; `space` is the other tensor.
  const Tensor& deep = to_space ? x : y;
  const Tensor& space = to_space ? y : x;
  const int64_t N = space.dims()[0], C = space.dims()[1], H = deep.dims()[2], W = deep.dims()[3];
  const int64_t SH = space.dims()[2], SW = space.dims()[3];
  const bool crd = to_space && mode == "CRD";
  const size_t es = dtype_size(x.dtype());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w)
          for (int64_t i = 0; i < b; ++i)
            for (int64_t j = 0; j < b; ++j) {
              const int64_t dc = crd ? (c * b + i) * b + j : (i * b + j) * C + c;
              const int64_t d_off = ((n * C * b * b + dc) * H + h) * W + w;
              const int64_t s_off = ((n * C + c) * SH + h * b + i) * SW + w * b + j;
              const int64_t src = to_space ? d_off : s_off, dst = to_space ? s_off : d_off;
              std::memcpy(static_cast<char*>(y.data()) + dst * es, static_cast<const char*>(x.data()) + src * es, es);
            }
  return Status::ok();
}

}  // namespace

Status depth_to_space(ExecContext& ctx) { return depth_space(ctx, true); }
Status space_to_depth(ExecContext& ctx) { return depth_space(ctx, false); }

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

}  // namespace graft::cpu
