// MaxUnpool's definition and CPU reference (CUDA: unpool.cu). Its output shape comes from the
// attributes or from its output_shape input, whose value run-time inference has.
#include "ops/unpool/unpool.h"

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "backends/cpu/kernel_util.h"
#include "core/checked_math.h"
#include "core/index_math.h"
#include "graft/status.h"
#include "ops/attr_util.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {

// ---- attributes and shapes (unpool.h) -------------------------------------------------------
// See unpool.h.

Result<MaxUnpoolAttrs> max_unpool_attrs(const AttributeMap& attrs, int64_t spatial) {
  MaxUnpoolAttrs a;
  if (!attrs.has("kernel_shape")) return attr_error("kernel_shape", "is required");
  auto k = attrs.get_ints("kernel_shape", {});
  if (!k) return Status(k.status()).with_attribute("kernel_shape");
  a.kernel = k.value();
  if (static_cast<int64_t>(a.kernel.size()) != spatial)
    return attr_error("kernel_shape", "must have one entry per spatial axis (", spatial, "), got ",
                      ints_to_string(a.kernel));
  for (int64_t v : a.kernel)
    if (v <= 0) return attr_error("kernel_shape", "entries must be positive, got ", ints_to_string(a.kernel));
  auto s = attrs.get_ints("strides", std::vector<int64_t>(static_cast<size_t>(spatial), 1));
  if (!s) return Status(s.status()).with_attribute("strides");
  a.strides = s.value();
  if (static_cast<int64_t>(a.strides.size()) != spatial)
    return attr_error("strides", "must have one entry per spatial axis (", spatial, "), got ",
                      ints_to_string(a.strides));
  for (int64_t v : a.strides)
    if (v <= 0) return attr_error("strides", "entries must be positive, got ", ints_to_string(a.strides));
  auto p = attrs.get_ints("pads", std::vector<int64_t>(static_cast<size_t>(2 * spatial), 0));
  if (!p) return Status(p.status()).with_attribute("pads");
  a.pads = p.value();
  if (static_cast<int64_t>(a.pads.size()) != 2 * spatial)
    return attr_error("pads", "must have two entries per spatial axis (", 2 * spatial, "), got ",
                      ints_to_string(a.pads));
  for (int64_t v : a.pads)
    if (v < 0) return attr_error("pads", "entries must be >= 0, got ", ints_to_string(a.pads));
  return a;
}

Result<int64_t> max_unpool_extent(const MaxUnpoolAttrs& a, size_t d, int64_t in) {
  if (in <= 0) return int64_t{0};  // nothing to unpool along an empty axis
  const size_t spatial = a.kernel.size();
  int64_t v = 0;
  if (!checked_mul(in - 1, a.strides[d], &v) || !checked_add(v, a.kernel[d], &v) ||
      !checked_sub(v, a.pads[d], &v) || !checked_sub(v, a.pads[d + spatial], &v))
    return attr_error("strides", "the unpooled extent of spatial axis ", static_cast<uint64_t>(d), " (input ",
                      in, ", stride ", a.strides[d], ") overflows int64");
  if (v < 0)
    return attr_error("pads", "pads ", ints_to_string(a.pads), " exceed the unpooled extent of spatial axis ",
                      static_cast<uint64_t>(d), " (input ", in, ", kernel ", a.kernel[d], ", stride ",
                      a.strides[d], ")");
  return v;
}

Result<MaxUnpoolShape> max_unpool_shape(const MaxUnpoolAttrs& a, const std::vector<int64_t>& x,
                                        const std::optional<std::vector<int64_t>>& output_shape) {
  const size_t spatial = a.kernel.size();
  if (x.size() != spatial + 2)
    return error(StatusCode::kInvalidModel, "X must be (N, C, spatial...) with ",
                 static_cast<uint64_t>(spatial), " spatial axes for this kernel_shape, got dims ",
                 ints_to_string(x));
  MaxUnpoolShape r;
  r.unpooled = {x[0], x[1]};
  for (size_t d = 0; d < spatial; ++d) {
    GRAFT_ASSIGN_OR_RETURN(int64_t v, max_unpool_extent(a, d, x[d + 2]));
    r.unpooled.push_back(v);
  }
  if (!checked_numel(r.unpooled))
    return error(StatusCode::kInvalidModel, "the unpooled dims ", ints_to_string(r.unpooled),
                 " have too many elements");
  if (!output_shape) {
    r.out = r.unpooled;
    return r;
  }
  const std::vector<int64_t>& o = *output_shape;
  bool ok = o.size() == x.size() && o[0] == x[0] && o[1] == x[1];
  for (size_t d = 2; ok && d < o.size(); ++d) ok = o[d] >= r.unpooled[d];
  if (!ok)
    return error(StatusCode::kInvalidModel, "input 2 (output_shape) ", ints_to_string(o),
                 " must have X's rank, N and C and at least the unpooled extent along every spatial axis ",
                 ints_to_string(r.unpooled), " (X dims ", ints_to_string(x), ")");
  if (!checked_numel(o))
    return error(StatusCode::kInvalidModel, "input 2 (output_shape) ", ints_to_string(o),
                 " has too many elements");
  r.out = o;
  return r;
}

// ---- CPU reference --------------------------------------------------------------------------

namespace cpu {

namespace {

std::string dims_text(DataType t, const std::vector<int64_t>& d) {
  return TensorDesc(t, shape_from_values(d)).to_string();
}

}  // namespace

// Y = 0, then Y[position of unpooled flat index I[i]] = X.flat[i] in order (a repeated index keeps
// the last value written). An index outside [0, numel(unpooled)) is kInvalidArgument naming the
// element; nothing is written then.
Status max_unpool(ExecContext& ctx) {
  const Tensor* x = input_or_null(ctx, 0);
  const Tensor* ind = input_or_null(ctx, 1);
  const Tensor* shape = input_or_null(ctx, 2);
  Tensor* y = output_or_null(ctx, 0);
  if (!x || !ind || !y || !y->defined())
    return error(StatusCode::kInternal, "MaxUnpool kernel called without X, I or its output");
  if (ind->dtype() != DataType::kInt64 || ind->dims() != x->dims())
    return error(StatusCode::kInvalidModel, "input 1 (I) must be int64 with X's dims ",
                 dims_text(x->dtype(), x->dims()), ", got ", dims_text(ind->dtype(), ind->dims()));
  if (x->rank() < 3)
    return error(StatusCode::kInvalidModel, "input 0 (X) must be (N, C, spatial...), got ",
                 dims_text(x->dtype(), x->dims()));
  GRAFT_ASSIGN_OR_RETURN(MaxUnpoolAttrs a, max_unpool_attrs(attrs_of(ctx), x->rank() - 2));
  std::optional<std::vector<int64_t>> os;
  if (shape) {
    if (shape->dtype() != DataType::kInt64 || shape->rank() != 1)
      return error(StatusCode::kInvalidModel, "input 2 (output_shape) must be a 1-D int64 tensor, got ",
                   dims_text(shape->dtype(), shape->dims()));
    os = shape->to_int64_vector();
  }
  GRAFT_ASSIGN_OR_RETURN(MaxUnpoolShape sh, max_unpool_shape(a, x->dims(), os));
  if (y->dims() != sh.out || y->dtype() != x->dtype())
    return error(StatusCode::kInternal, "MaxUnpool output was allocated as ",
                 dims_text(y->dtype(), y->dims()), " but the kernel computed ",
                 dims_text(x->dtype(), sh.out));
  const int64_t n = x->numel(), total = numel_of(sh.unpooled);
  const int64_t* idx = ind->data_as<const int64_t>();
  // Every index is checked before anything is written: a bad one leaves no half-scattered output.
  for (int64_t i = 0; i < n; ++i)
    if (idx[i] < 0 || idx[i] >= total)
      return error(StatusCode::kInvalidArgument, "input 1 (I) element ", i, " is ", idx[i],
                   ", outside the unpooled tensor's ", total, " elements ", ints_to_string(sh.unpooled));
  // All-zero bytes are +0 in every float type (and 0 in every integer one).
  const size_t es = dtype_size(x->dtype());
  if (y->numel() > 0) std::memset(y->data(), 0, y->nbytes());
  const auto* src = static_cast<const unsigned char*>(x->data());
  auto* dst = static_cast<unsigned char*>(y->data());
  const bool same = sh.out == sh.unpooled;
  std::vector<int64_t> pos;
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = idx[i];
    if (!same) {  // the same multi-index in the larger output
      unravel(idx[i], sh.unpooled, pos);
      off = 0;
      for (size_t d = 0; d < pos.size(); ++d) off = off * sh.out[d] + pos[d];
    }
    std::memcpy(dst + static_cast<size_t>(off) * es, src + static_cast<size_t>(i) * es, es);
  }
  return Status::ok();
}

}  // namespace cpu

// ---- schema: inference and the table rows ---------------------------------------------------
namespace {

using namespace infer;

// MaxUnpool (opset 9/11): X (N, C, spatial...), I (int64, X's shape), optional output_shape (int64
// [rank]) -> Y of X's dtype.
Status infer_max_unpool(InferContext& ctx) {
  if (ctx.num_inputs() < 2 || ctx.num_inputs() > 3)
    return ctx.fail("takes 2 or 3 inputs (X, I, output_shape), got ",
                    static_cast<uint64_t>(ctx.num_inputs()));
  // bfloat16 joined the type list in opset 22.
  std::vector<DataType> types = {kF16, kF32, kF64};
  if (ctx.opset() >= 22) types.push_back(kBF16);
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, types));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, {kI64}));
  if (ctx.has_input(2)) GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 2, {kI64}));
  const TensorDesc& x = ctx.input(0);
  const TensorDesc& ind = ctx.input(1);

  // The number of spatial axes: X's rank - 2, or kernel_shape's length when the rank is unknown.
  int64_t spatial = -1;
  if (x.shape) {
    if (x.rank() < 3) return ctx.fail("input 0 (X) must be (N, C, spatial...), got ", x.to_string());
    spatial = x.rank() - 2;
  } else {
    auto k = ctx.attrs().get_ints("kernel_shape", {});
    if (!k) return Status(k.status()).with_attribute("kernel_shape");
    spatial = static_cast<int64_t>(k.value().size());
  }
  GRAFT_ASSIGN_OR_RETURN(MaxUnpoolAttrs a, max_unpool_attrs(ctx.attrs(), spatial));
  if (x.shape && ind.shape) {
    bool same = ind.rank() == x.rank();
    for (size_t d = 0; same && d < x.shape->size(); ++d) {
      const Dim &p = (*x.shape)[d], &q = (*ind.shape)[d];
      same = !(p.is_const() && q.is_const() && p.value() != q.value());
    }
    if (!same) return ctx.fail("input 1 (I) ", ind.to_string(), " must have X's shape ", x.to_string());
  }

  const int64_t rank = spatial + 2;
  Shape out;
  if (ctx.has_input(2)) {
    const TensorDesc& os = ctx.input(2);
    if (os.shape && (os.rank() != 1 || ((*os.shape)[0].is_const() && (*os.shape)[0].value() != rank)))
      return ctx.fail("input 2 (output_shape) must be a 1-D tensor of ", rank, " entries, got ",
                      os.to_string());
    if (auto v = ctx.input_dims_value(2)) {
      // Fully known: the shared reader checks it against X (rank, N, C, no negative entry).
      bool all_const = x.shape && shape_is_static(*x.shape);
      for (const Dim& d : *v) all_const = all_const && d.is_const();
      if (all_const) {
        std::vector<int64_t> o;
        for (const Dim& d : *v) o.push_back(d.value());
        auto dims = max_unpool_shape(a, shape_values(*x.shape), o);
        if (!dims) return dims.status();
      }
      if (static_cast<int64_t>(v->size()) != rank)
        return ctx.fail("input 2 (output_shape) has ", static_cast<uint64_t>(v->size()),
                        " entries, X has rank ", rank);
      out = *v;
    } else {
      for (int64_t d = 0; d < rank; ++d) out.push_back(ctx.unknown_dim());
    }
  } else if (x.shape) {
    out = {(*x.shape)[0], (*x.shape)[1]};
    for (int64_t d = 0; d < spatial; ++d) {
      const Dim& in = (*x.shape)[static_cast<size_t>(d + 2)];
      if (!in.is_const()) {
        out.push_back(ctx.unknown_dim());
        continue;
      }
      GRAFT_ASSIGN_OR_RETURN(int64_t e, max_unpool_extent(a, static_cast<size_t>(d), in.value()));
      out.push_back(Dim(e));
    }
  } else {
    for (int64_t d = 0; d < rank; ++d) out.push_back(ctx.unknown_dim());
  }
  ctx.set_output(0, desc_of(x.dtype, out));
  return Status::ok();
}

}  // namespace

void append_unpool_ops(std::vector<OpEntry>& out) {
  const std::vector<OpEntry> ops = {
      {"MaxUnpool", 9, infer_max_unpool, cpu::max_unpool},
  };
  out.insert(out.end(), ops.begin(), ops.end());
}

}  // namespace graft
