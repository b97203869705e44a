// The gather-scatter family's definition: naive CPU references (every index checked, an index out
// of range is an error naming it) and the schemas with their inference.
#include "ops/gather_scatter/gather_scatter.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/element_traits.h"
#include "backends/cpu/kernel_util.h"
#include "backends/cpu/unary_kernel.h"  // bad_dtype, check_io
#include "core/checked_math.h"
#include "ops/infer_util.h"

namespace graft {

// ---- CPU references -------------------------------------------------------------------------------

namespace cpu {
namespace {

// The offset into data of every element of `ind` (GatherElements' and ScatterElements' indices):
// the element's own position with its coordinate along axis `a` replaced by its index (negative
// ones count from the end). An index outside the axis, or an indices shape beyond data's, fails
// naming `op`.
Result<std::vector<int64_t>> element_offsets(const char* op, const Tensor& data, const Tensor& ind, int64_t a) {
  const std::vector<int64_t> idx = ind.to_int64_vector();
  const int64_t extent = data.dims()[a];
  std::vector<int64_t> strides(data.rank(), 1);
  for (int64_t d = data.rank() - 1; d > 0; --d) strides[d - 1] = strides[d] * data.dims()[d];
  std::vector<int64_t> offsets(static_cast<size_t>(ind.numel()));
  std::vector<int64_t> pos;
  for (int64_t i = 0; i < ind.numel(); ++i) {
    unravel(i, ind.dims(), pos);
    const int64_t k = idx[i] < 0 ? idx[i] + extent : idx[i];
    if (k < 0 || k >= extent)
      return error(StatusCode::kRuntimeError, op, " index ", idx[i], " is out of range for axis ", a, " of size ",
                   extent);
    int64_t off = 0;
    for (int64_t d = 0; d < data.rank(); ++d) {
      const int64_t c = d == a ? k : pos[d];
      if (c >= data.dims()[d])
        return error(StatusCode::kRuntimeError, op, " indices shape ", ints_to_string(ind.dims()),
                     " exceeds data shape ", ints_to_string(data.dims()), " on axis ", d);
      off += c * strides[d];
    }
    offsets[i] = off;
  }
  return offsets;
}

// y[dest[i]] = combine(y[dest[i]], upd[i]) for every update element, in order (later duplicates win
// for "none"). Shared by ScatterElements and ScatterND.
Status apply_updates(const ExecContext& ctx, Tensor& y, const Tensor& upd, const std::vector<int64_t>& dest,
                     const std::string& red) {
  if (red == "none") {
    const size_t es = dtype_size(y.dtype());
    for (size_t i = 0; i < dest.size(); ++i)
      std::memcpy(static_cast<char*>(y.data()) + dest[i] * es, static_cast<const char*>(upd.data()) + i * es, es);
    return Status::ok();
  }
  if (red != "add" && red != "mul" && red != "max" && red != "min")
    return attr_error("reduction", "must be none, add, mul, max or min, got '", red, "'");
  return visit_numeric(y.dtype(), [&](auto tr) -> Status {
    using Tr = decltype(tr);
    using C = decltype(Tr::load(nullptr, 0));
    for (size_t i = 0; i < dest.size(); ++i) {
      const C cur = Tr::load(y.data(), dest[i]), u = Tr::load(upd.data(), static_cast<int64_t>(i));
      // Integer add/mul wrap in an unsigned type of at least int's width (uint16 * uint16 would
      // otherwise promote to int and could overflow it).
      using W = wrap_t<C>;
      const C r = red == "add" ? static_cast<C>(static_cast<W>(cur) + static_cast<W>(u))
                  : red == "mul" ? static_cast<C>(static_cast<W>(cur) * static_cast<W>(u))
                  : red == "max" ? std::max(cur, u) : std::min(cur, u);
      Tr::store(y.data(), dest[i], r);
    }
    return Status::ok();
  }, [&](DataType t) { return bad_dtype(ctx, t); });
}

}  // namespace

Status gather_elements(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 2));
  const Tensor& data = *ctx.inputs[0];
  const Tensor& ind = *ctx.inputs[1];
  Tensor& y = *ctx.outputs[0];
  GRAFT_ASSIGN_OR_RETURN(int64_t axis_attr, attrs_of(ctx).get_int("axis", 0));
  if (data.rank() != ind.rank())
    return error(StatusCode::kInvalidModel, "GatherElements data rank ", data.rank(), " differs from indices rank ",
                 ind.rank());
  auto axis = normalize_axis(axis_attr, data.rank());
  if (!axis) return Status(axis.status()).with_attribute("axis");
  GRAFT_CHECK(y.numel() == ind.numel() && y.dtype() == data.dtype());
  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> src, element_offsets("GatherElements", data, ind, axis.value()));
  const size_t esize = dtype_size(data.dtype());
  for (int64_t i = 0; i < ind.numel(); ++i)
    std::memcpy(static_cast<char*>(y.data()) + i * esize, static_cast<const char*>(data.data()) + src[i] * esize, esize);
  return Status::ok();
}

Status scatter_elements(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 3));
  const Tensor& data = *ctx.inputs[0];
  const Tensor& ind = *ctx.inputs[1];
  const Tensor& upd = *ctx.inputs[2];
  Tensor& y = *ctx.outputs[0];
  const AttributeMap& attrs = attrs_of(ctx);
  GRAFT_ASSIGN_OR_RETURN(int64_t axis_attr, attrs.get_int("axis", 0));
  GRAFT_ASSIGN_OR_RETURN(std::string red, attrs.get_string("reduction", "none"));
  if (data.rank() != ind.rank() || ind.dims() != upd.dims() || upd.dtype() != data.dtype())
    return error(StatusCode::kInvalidModel, "ScatterElements: data ", ints_to_string(data.dims()), ", indices ",
                 ints_to_string(ind.dims()), " and updates ", ints_to_string(upd.dims()), " do not fit");
  auto axis = normalize_axis(axis_attr, data.rank());
  if (!axis) return Status(axis.status()).with_attribute("axis");
  GRAFT_CHECK(y.nbytes() == data.nbytes() && y.dtype() == data.dtype());
  if (data.nbytes()) std::memcpy(y.data(), data.data(), data.nbytes());
  // Output offsets first, so a bad index fails before anything is combined.
  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> dest, element_offsets("ScatterElements", data, ind, axis.value()));
  return apply_updates(ctx, y, upd, dest, red);
}

Status gather_nd(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 2));
  const Tensor& data = *ctx.inputs[0];
  const Tensor& ind = *ctx.inputs[1];
  Tensor& y = *ctx.outputs[0];
  GRAFT_ASSIGN_OR_RETURN(int64_t b, attrs_of(ctx).get_int("batch_dims", 0));
  const int64_t r = data.rank(), q = ind.rank();
  if (q < 1 || b < 0 || b >= std::min(r, q))
    return attr_error("batch_dims", "GatherND batch_dims ", b, " does not fit data rank ", r, " and indices rank ", q);
  const int64_t m = ind.dims().back();
  if (m < 1 || m > r - b)
    return error(StatusCode::kInvalidModel, "GatherND indices address ", m, " dims of data ", ints_to_string(data.dims()));
  for (int64_t d = 0; d < b; ++d)
    if (data.dims()[d] != ind.dims()[d])
      return error(StatusCode::kInvalidModel, "GatherND batch dim ", d, " differs: data ", ints_to_string(data.dims()),
                   ", indices ", ints_to_string(ind.dims()));
  int64_t batches = 1, slice = 1;
  for (int64_t d = 0; d < b; ++d) batches *= data.dims()[d];
  for (int64_t d = b + m; d < r; ++d) slice *= data.dims()[d];
  const int64_t tuples_per_batch = batches ? ind.numel() / m / batches : 0;
  const int64_t batch_stride = batches ? data.numel() / batches : 0;
  const auto st = contiguous_strides(data.dims());
  const auto idx = ind.to_int64_vector();
  const size_t es = dtype_size(data.dtype());
  GRAFT_CHECK(y.numel() == batches * tuples_per_batch * slice && y.dtype() == data.dtype());
  for (int64_t bt = 0; bt < batches; ++bt)
    for (int64_t t = 0; t < tuples_per_batch; ++t) {
      const int64_t tuple = bt * tuples_per_batch + t;
      int64_t off = bt * batch_stride;
      for (int64_t j = 0; j < m; ++j) {
        const int64_t extent = data.dims()[b + j];
        int64_t k = idx[tuple * m + j];
        if (k < 0) k += extent;
        if (k < 0 || k >= extent)
          return error(StatusCode::kRuntimeError, "GatherND index ", idx[tuple * m + j], " is out of range for data dim ",
                       b + j, " of size ", extent);
        off += k * st[b + j];
      }
      std::memcpy(static_cast<char*>(y.data()) + tuple * slice * es, static_cast<const char*>(data.data()) + off * es,
                  slice * es);
    }
  return Status::ok();
}

Status scatter_nd(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_io(ctx, 3));
  const Tensor& data = *ctx.inputs[0];
  const Tensor& ind = *ctx.inputs[1];
  const Tensor& upd = *ctx.inputs[2];
  Tensor& y = *ctx.outputs[0];
  GRAFT_ASSIGN_OR_RETURN(std::string red, attrs_of(ctx).get_string("reduction", "none"));
  const int64_t m = ind.rank() ? ind.dims().back() : 0;
  if (ind.rank() < 1 || m > data.rank() || upd.dtype() != data.dtype())
    return error(StatusCode::kInvalidModel, "ScatterND indices ", ints_to_string(ind.dims()), " do not fit data ",
                 ints_to_string(data.dims()));
  std::vector<int64_t> want_upd(ind.dims().begin(), ind.dims().end() - 1);
  want_upd.insert(want_upd.end(), data.dims().begin() + m, data.dims().end());
  if (upd.dims() != want_upd)
    return error(StatusCode::kInvalidModel, "ScatterND updates have shape ", ints_to_string(upd.dims()), ", expected ",
                 ints_to_string(want_upd));
  GRAFT_CHECK(y.nbytes() == data.nbytes() && y.dtype() == data.dtype());
  if (data.nbytes()) std::memcpy(y.data(), data.data(), data.nbytes());
  int64_t slice = 1;
  for (int64_t d = m; d < data.rank(); ++d) slice *= data.dims()[d];
  const auto st = contiguous_strides(data.dims());
  const auto idx = ind.to_int64_vector();
  const int64_t tuples = m ? ind.numel() / m : 0;
  std::vector<int64_t> dest;
  dest.reserve(static_cast<size_t>(upd.numel()));
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = 0;
    for (int64_t j = 0; j < m; ++j) {
      int64_t k = idx[t * m + j];
      if (k < 0) k += data.dims()[j];
      if (k < 0 || k >= data.dims()[j])
        return error(StatusCode::kRuntimeError, "ScatterND index ", idx[t * m + j], " is out of range for data dim ", j,
                     " of size ", data.dims()[j]);
      off += k * st[j];
    }
    for (int64_t e = 0; e < slice; ++e) dest.push_back(off + e);
  }
  return apply_updates(ctx, y, upd, dest, red);
}

}  // namespace cpu

// ---- schemas: inference and the table rows -------------------------------------------------------

namespace {

using namespace infer;

Status check_scatter_reduction(const InferContext& ctx) {
  auto red = ctx.attrs().get_string("reduction", "none");
  if (!red) return Status(red.status()).with_attribute("reduction");
  const std::string& r = red.value();
  if (r != "none" && r != "add" && r != "mul" && r != "max" && r != "min")
    return Status(ctx.fail("must be none, add, mul, max or min, got '", r, "'")).with_attribute("reduction");
  if (r != "none" && ctx.input(0).dtype == kBool)
    return Status(ctx.fail("'", r, "' is not defined for bool data")).with_attribute("reduction");
  return Status::ok();
}

Status infer_gather_elements(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kAllTypes));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, {kI32, kI64}));
  auto axis = ctx.attrs().get_int("axis", 0);
  if (!axis) return Status(axis.status()).with_attribute("axis");
  const TensorDesc& data = ctx.input(0);
  const TensorDesc& idx = ctx.input(1);
  if (data.shape && idx.shape) {
    if (data.rank() != idx.rank())
      return ctx.fail("data ", data.to_string(), " and indices ", idx.to_string(), " must have the same rank");
    if (data.rank() == 0) return ctx.fail("data must have rank >= 1, got a scalar");
    auto a = normalize_axis(axis.value(), data.rank());
    if (!a) return Status(a.status()).with_attribute("axis");
  }
  ctx.set_output(0, desc_of(data.dtype, idx.shape));
  return Status::ok();
}

Status infer_scatter_elements(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kAllTypes));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, {kI32, kI64}));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 2, kAllTypes));
  if (ctx.input(2).dtype != ctx.input(0).dtype)
    return ctx.fail("updates dtype ", dtype_name(ctx.input(2).dtype), " differs from data dtype ",
                    dtype_name(ctx.input(0).dtype));
  auto axis = ctx.attrs().get_int("axis", 0);
  if (!axis) return Status(axis.status()).with_attribute("axis");
  GRAFT_RETURN_IF_ERROR(check_scatter_reduction(ctx));
  const TensorDesc& data = ctx.input(0);
  const TensorDesc& idx = ctx.input(1);
  if (data.shape && idx.shape) {
    if (data.rank() != idx.rank())
      return ctx.fail("data ", data.to_string(), " and indices ", idx.to_string(), " must have the same rank");
    if (data.rank() == 0) return ctx.fail("data must have rank >= 1, got a scalar");
    auto a = normalize_axis(axis.value(), data.rank());
    if (!a) return Status(a.status()).with_attribute("axis");
  }
  if (idx.shape && ctx.input(2).shape && idx.rank() != ctx.input(2).rank())
    return ctx.fail("indices ", idx.to_string(), " and updates ", ctx.input(2).to_string(), " must have the same shape");
  ctx.set_output(0, data);
  return Status::ok();
}

Status infer_gather_nd(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kAllTypes));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, {kI64}));
  auto bd = ctx.attrs().get_int("batch_dims", 0);
  if (!bd) return Status(bd.status()).with_attribute("batch_dims");
  const TensorDesc& data = ctx.input(0);
  const TensorDesc& ind = ctx.input(1);
  if (!data.shape || !ind.shape) {
    ctx.set_output(0, desc_of(data.dtype, std::nullopt));
    return Status::ok();
  }
  const int64_t b = bd.value(), r = data.rank(), q = ind.rank();
  if (q < 1) return ctx.fail("indices must have rank >= 1, got a scalar");
  if (b < 0 || b >= std::min(r, q)) return Status(ctx.fail("must be in [0, min(rank(data), rank(indices))), got ", b)).with_attribute("batch_dims");
  const Dim& last = ind.shape->back();
  if (!last.is_const()) return ctx.fail("the last dimension of indices must be static, got ", ind.to_string());
  const int64_t m = last.value();
  if (m < 1 || m > r - b)
    return ctx.fail("indices ", ind.to_string(), " address ", m, " dims but data ", data.to_string(), " has ", r - b,
                    " after batch_dims");
  Shape s(ind.shape->begin(), ind.shape->end() - 1);
  s.insert(s.end(), data.shape->begin() + b + m, data.shape->end());
  ctx.set_output(0, desc_of(data.dtype, s));
  return Status::ok();
}

Status infer_scatter_nd(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, kAllTypes));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 1, {kI64}));
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 2, kAllTypes));
  if (ctx.input(2).dtype != ctx.input(0).dtype)
    return ctx.fail("updates dtype ", dtype_name(ctx.input(2).dtype), " differs from data dtype ",
                    dtype_name(ctx.input(0).dtype));
  GRAFT_RETURN_IF_ERROR(check_scatter_reduction(ctx));
  const TensorDesc& data = ctx.input(0);
  const TensorDesc& ind = ctx.input(1);
  const TensorDesc& upd = ctx.input(2);
  if (data.shape && ind.shape && upd.shape && ind.rank() >= 1 && ind.shape->back().is_const()) {
    const int64_t m = ind.shape->back().value();
    if (m > data.rank())
      return ctx.fail("indices ", ind.to_string(), " address ", m, " dims but data has rank ", data.rank());
    if (upd.rank() != ind.rank() - 1 + data.rank() - m)
      return ctx.fail("updates ", upd.to_string(), " must have rank ", ind.rank() - 1 + data.rank() - m,
                      " for data ", data.to_string(), " and indices ", ind.to_string());
  }
  ctx.set_output(0, data);
  return Status::ok();
}

}  // namespace

void append_gather_scatter_ops(std::vector<OpEntry>& out) {
  const std::vector<OpEntry> ops = {
      {"GatherElements", 11, infer_gather_elements, cpu::gather_elements},
      {"ScatterElements", 11, infer_scatter_elements, cpu::scatter_elements},
      {"GatherND", 12, infer_gather_nd, cpu::gather_nd},
      {"ScatterND", 11, infer_scatter_nd, cpu::scatter_nd},
  };
  out.insert(out.end(), ops.begin(), ops.end());
}

}  // namespace graft
