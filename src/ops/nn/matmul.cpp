// MatMul and Gemm, the matrix products: their schemas and CPU references (the nn family, nn.h).
#include "ops/nn/nn.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/kernel_util.h"
#include "ops/attr_util.h"
#include "ops/nn/nn_util.h"
#include "ops/operator.h"
#include "ops/window_attrs.h"

namespace graft::cpu {

// MatMul (numpy.matmul): 1-D operands are promoted (A to [1,K], B to [K,1]) and the added axis
// removed from the result; leading (batch) axes broadcast.

Status matmul(ExecContext& ctx) {
  const Tensor* A = ctx.inputs.size() > 0 ? ctx.inputs[0] : nullptr;
  const Tensor* Bt = ctx.inputs.size() > 1 ? ctx.inputs[1] : nullptr;
  GRAFT_RETURN_IF_ERROR(require_float_or_int(A, "A"));
  GRAFT_RETURN_IF_ERROR(require_float_or_int(Bt, "B"));
  std::vector<int64_t> a = A->dims(), b = Bt->dims();
  if (a.empty() || b.empty())
    return error(StatusCode::kInvalidModel, "MatMul: operands must have rank >= 1, got A ", ints_to_string(a),
                 " and B ", ints_to_string(b));
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  const int64_t M = a[a.size() - 2], K = a.back(), N = b.back();
  if (b[b.size() - 2] != K)
    return error(StatusCode::kInvalidModel, "MatMul: inner dimensions differ: A ", ints_to_string(A->dims()),
                 " and B ", ints_to_string(Bt->dims()));
  std::vector<int64_t> ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  std::vector<int64_t> batch(std::max(ba.size(), bb.size()), 1);
  for (size_t i = 0; i < batch.size(); ++i) {
    int64_t da = i + ba.size() >= batch.size() ? ba[i + ba.size() - batch.size()] : 1;
    int64_t db = i + bb.size() >= batch.size() ? bb[i + bb.size() - batch.size()] : 1;
    if (da != db && da != 1 && db != 1)
      return error(StatusCode::kInvalidModel, "MatMul: batch dimensions of A ", ints_to_string(A->dims()),
                   " and B ", ints_to_string(Bt->dims()), " cannot be broadcast");
    batch[i] = std::max(da, db);
  }
  Tensor& Y = *ctx.outputs[0];
  if (Y.numel() != numel_of(batch) * M * N)
    return error(StatusCode::kInternal, "MatMul: output shape ", ints_to_string(Y.dims()), " inconsistent with inputs");
  std::vector<int64_t> offa = broadcast_batch_offsets(batch, ba), offb = broadcast_batch_offsets(batch, bb);
  std::vector<double> x = load_doubles(*A), w = load_doubles(*Bt), y(static_cast<size_t>(Y.numel()));
  for (size_t bi = 0; bi < offa.size(); ++bi) {
    const double* ap = x.data() + static_cast<size_t>(offa[bi] * M * K);
    const double* bp = w.data() + static_cast<size_t>(offb[bi] * K * N);
    double* yp = &y[bi * static_cast<size_t>(M * N)];
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0.0;
        for (int64_t k = 0; k < K; ++k) acc += ap[i * K + k] * bp[k * N + j];
        yp[i * N + j] = acc;
      }
  }
  store_doubles(Y, y);
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------
// Gemm: Y = alpha * op(A) @ op(B) + beta * C, op = transpose when transA/transB; C broadcasts to [M, N].

Status gemm(ExecContext& ctx) {
  const Tensor* A = ctx.inputs.size() > 0 ? ctx.inputs[0] : nullptr;
  const Tensor* Bt = ctx.inputs.size() > 1 ? ctx.inputs[1] : nullptr;
  const Tensor* Ct = ctx.inputs.size() > 2 ? ctx.inputs[2] : nullptr;
  GRAFT_RETURN_IF_ERROR(require_float_or_int(A, "A"));
  GRAFT_RETURN_IF_ERROR(require_float_or_int(Bt, "B"));
  if (Ct) GRAFT_RETURN_IF_ERROR(require_float_or_int(Ct, "C"));
  GRAFT_ASSIGN_OR_RETURN(float alpha, ctx.attrs->get_float("alpha", 1.0f));
  GRAFT_ASSIGN_OR_RETURN(float beta, ctx.attrs->get_float("beta", 1.0f));
  GRAFT_ASSIGN_OR_RETURN(int64_t ta, ctx.attrs->get_int("transA", 0));
  GRAFT_ASSIGN_OR_RETURN(int64_t tb, ctx.attrs->get_int("transB", 0));
  if (A->rank() != 2 || Bt->rank() != 2)
    return error(StatusCode::kInvalidModel, "Gemm: A ", ints_to_string(A->dims()), " and B ",
                 ints_to_string(Bt->dims()), " must be 2-D");
  const int64_t M = ta ? A->dims()[1] : A->dims()[0], K = ta ? A->dims()[0] : A->dims()[1];
  const int64_t Kb = tb ? Bt->dims()[1] : Bt->dims()[0], N = tb ? Bt->dims()[0] : Bt->dims()[1];
  if (K != Kb)
    return error(StatusCode::kInvalidModel, "Gemm: inner dimensions differ: A ", ints_to_string(A->dims()),
                 " (transA=", ta, ") and B ", ints_to_string(Bt->dims()), " (transB=", tb, ")");
  // C's row/column strides: 0 along a broadcast axis.
  int64_t c_row = 0, c_col = 0;
  if (Ct) {
    std::vector<int64_t> cd = Ct->dims();
    if (cd.size() > 2) return error(StatusCode::kInvalidModel, "Gemm: C ", ints_to_string(cd), " has rank > 2");
    while (cd.size() < 2) cd.insert(cd.begin(), 1);
    if ((cd[0] != 1 && cd[0] != M) || (cd[1] != 1 && cd[1] != N))
      return error(StatusCode::kInvalidModel, "Gemm: C ", ints_to_string(Ct->dims()),
                   " cannot be broadcast to [", M, ",", N, "]");
    c_col = cd[1] == 1 ? 0 : 1;
    c_row = cd[0] == 1 ? 0 : cd[1];
  }
  std::vector<double> a = load_doubles(*A), bm = load_doubles(*Bt);
  std::vector<double> c = Ct ? load_doubles(*Ct) : std::vector<double>();
  std::vector<double> y(static_cast<size_t>(M * N));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0.0;
      for (int64_t k = 0; k < K; ++k) {
        double av = ta ? a[static_cast<size_t>(k * M + i)] : a[static_cast<size_t>(i * K + k)];
        double bv = tb ? bm[static_cast<size_t>(j * K + k)] : bm[static_cast<size_t>(k * N + j)];
        acc += av * bv;
      }
      double v = static_cast<double>(alpha) * acc;
      if (Ct) v += static_cast<double>(beta) * c[static_cast<size_t>(i * c_row + j * c_col)];
      y[static_cast<size_t>(i * N + j)] = v;
    }
  Tensor& Y = *ctx.outputs[0];
  if (Y.numel() != M * N)
    return error(StatusCode::kInternal, "Gemm: output shape ", ints_to_string(Y.dims()), " inconsistent with inputs");
  store_doubles(Y, y);
  return Status::ok();
}

}  // namespace graft::cpu

namespace graft {

namespace {

Status infer_matmul(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(Shape a, ctx.input_shape(0));
  GRAFT_ASSIGN_OR_RETURN(Shape b, ctx.input_shape(1));
  GRAFT_RETURN_IF_ERROR(require_numeric_input(ctx, 0, "A"));
  GRAFT_RETURN_IF_ERROR(require_same_dtype(ctx, 1, "B"));
  if (a.empty() || b.empty())
    return ctx.fail("operands must have rank >= 1, got A ", shape_to_string(a), " and B ", shape_to_string(b));
  Shape a2 = a, b2 = b;
  if (a2.size() == 1) a2.insert(a2.begin(), Dim(1));
  if (b2.size() == 1) b2.push_back(Dim(1));
  const Dim& ka = a2.back();
  const Dim& kb = b2[b2.size() - 2];
  if (ka.is_const() && kb.is_const() && ka.value() != kb.value())
    return ctx.fail("inner dimensions differ: A ", shape_to_string(a), " has K = ", ka.value(), " but B ",
                    shape_to_string(b), " has K = ", kb.value());
  Shape ba(a2.begin(), a2.end() - 2), bb(b2.begin(), b2.end() - 2);
  auto batch = broadcast_shapes(ba, bb);
  if (!batch.is_ok())
    return ctx.fail("batch dimensions of A ", shape_to_string(a), " and B ", shape_to_string(b),
                    " cannot be broadcast: ", batch.status().message());
  Shape out = batch.value();
  if (a.size() > 1) out.push_back(a2[a2.size() - 2]);
  if (b.size() > 1) out.push_back(b2.back());
  ctx.set_output(0, TensorDesc(ctx.input(0).dtype, out));
  return Status::ok();
}

// ---- Gemm ----

Status infer_gemm(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(Shape a, ctx.input_shape(0));
  GRAFT_ASSIGN_OR_RETURN(Shape b, ctx.input_shape(1));
  GRAFT_RETURN_IF_ERROR(require_numeric_input(ctx, 0, "A"));
  GRAFT_RETURN_IF_ERROR(require_same_dtype(ctx, 1, "B"));
  GRAFT_ASSIGN_OR_RETURN(int64_t ta, ctx.attrs().get_int("transA", 0));
  GRAFT_ASSIGN_OR_RETURN(int64_t tb, ctx.attrs().get_int("transB", 0));
  GRAFT_ASSIGN_OR_RETURN(float alpha, ctx.attrs().get_float("alpha", 1.0f));
  GRAFT_ASSIGN_OR_RETURN(float beta, ctx.attrs().get_float("beta", 1.0f));
  (void)alpha;
  (void)beta;
  if (a.size() != 2 || b.size() != 2)
    return ctx.fail("A ", shape_to_string(a), " and B ", shape_to_string(b), " must both be 2-D");
  Dim M = ta ? a[1] : a[0], K = ta ? a[0] : a[1];
  Dim Kb = tb ? b[1] : b[0], N = tb ? b[0] : b[1];
  if (K.is_const() && Kb.is_const() && K.value() != Kb.value())
    return ctx.fail("inner dimensions differ: A ", shape_to_string(a), " (transA=", ta, ") and B ",
                    shape_to_string(b), " (transB=", tb, ")");
  if (ctx.has_input(2)) {
    GRAFT_RETURN_IF_ERROR(require_same_dtype(ctx, 2, "C"));
    GRAFT_ASSIGN_OR_RETURN(Shape c, ctx.input_shape(2));
    // C broadcasts unidirectionally to [M, N]: each of its (right-aligned) dims is 1 or equal.
    bool ok = c.size() <= 2;
    Shape mn{M, N};
    for (size_t i = 0; ok && i < c.size(); ++i) {
      const Dim& want = mn[2 - c.size() + i];
      if (c[i].is_const() && want.is_const() && c[i].value() != 1 && c[i].value() != want.value()) ok = false;
    }
    if (!ok)
      return ctx.fail("C ", shape_to_string(c), " cannot be broadcast to the output [", M.to_string(), ",",
                      N.to_string(), "]");
  }
  ctx.set_output(0, TensorDesc(ctx.input(0).dtype, Shape{M, N}));
  return Status::ok();
}

}  // namespace

void append_matmul_ops(std::vector<OpEntry>& out) {
  out.push_back(OpEntry{"Gemm", 11, infer_gemm, cpu::gemm});
  out.push_back(OpEntry{"MatMul", 11, infer_matmul, cpu::matmul});
}

}  // namespace graft
