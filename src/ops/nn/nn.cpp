// The nn family's definitions and CPU references (see nn.h): the reference kernels first, then the
// schemas (type and symbolic shape inference).
#include "ops/nn/nn.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/kernel_util.h"
#include "ops/attr_util.h"
#include "ops/operator.h"
#include "ops/window_attrs.h"

// ---- CPU references ------------------------------------------------------------------------

namespace graft::cpu {

namespace {

std::vector<int64_t> tail(const std::vector<int64_t>& v, size_t from) {
  return std::vector<int64_t>(v.begin() + static_cast<std::ptrdiff_t>(std::min(from, v.size())), v.end());
}

// One output position of a sliding window: the input positions it reads (row-major spatial offset,
// and the column-major one for MaxPool's storage_order=1) and how many window taps fall inside the
// padded extent (AveragePool count_include_pad's divisor).
struct WindowTaps {
  std::vector<std::pair<int64_t, int64_t>> kernel_and_input;  // (kernel offset, input offset)
  std::vector<int64_t> input_col_major;
  int64_t padded_count = 0;
};

class WindowWalker {
 public:
  WindowWalker(const WindowAttrs& w, std::vector<int64_t> in_sp, std::vector<int64_t> out_sp)
      : w_(w), in_(std::move(in_sp)), out_(std::move(out_sp)) {
    resolve_pads(w_, in_, &pb_, &pe_);
    in_strides_ = contiguous_strides(in_);
    col_strides_.assign(in_.size(), 1);
    for (size_t a = 1; a < in_.size(); ++a) col_strides_[a] = col_strides_[a - 1] * in_[a - 1];
  }
  int64_t in_area() const { return numel_of(in_); }
  int64_t out_area() const { return numel_of(out_); }
  int64_t kernel_area() const { return numel_of(w_.kernel); }

  void taps_at(int64_t out_flat, WindowTaps& t) {
    unravel(out_flat, out_, op_);
    t.kernel_and_input.clear();
    t.input_col_major.clear();
    t.padded_count = 1;
    for (size_t a = 0; a < in_.size(); ++a) {
      int64_t inside_padded = 0;
      for (int64_t k = 0; k < w_.kernel[a]; ++k) {
        int64_t ip = op_[a] * w_.strides[a] - pb_[a] + k * w_.dilations[a];
        if (ip >= -pb_[a] && ip < in_[a] + pe_[a]) ++inside_padded;
      }
      t.padded_count *= inside_padded;
    }
    int64_t k_area = kernel_area();
    for (int64_t kk = 0; kk < k_area; ++kk) {
      unravel(kk, w_.kernel, kidx_);
      int64_t off = 0, col = 0;
      bool inside = true;
      for (size_t a = 0; a < in_.size() && inside; ++a) {
        int64_t ip = op_[a] * w_.strides[a] - pb_[a] + kidx_[a] * w_.dilations[a];
        inside = ip >= 0 && ip < in_[a];
        off += ip * in_strides_[a];
        col += ip * col_strides_[a];
      }
      if (!inside) continue;
      t.kernel_and_input.emplace_back(kk, off);
      t.input_col_major.push_back(col);
    }
  }

 private:
  const WindowAttrs& w_;
  std::vector<int64_t> in_, out_, pb_, pe_, in_strides_, col_strides_, op_, kidx_;
};

Status check_pool_io(const ExecContext& ctx, const char* op) {
  if (ctx.inputs.empty() || ctx.outputs.empty() || !ctx.outputs[0])
    return error(StatusCode::kInternal, op, ": missing input or output");
  GRAFT_RETURN_IF_ERROR(require_float_or_int(ctx.inputs[0], "X"));
  if (ctx.inputs[0]->rank() < 3)
    return error(StatusCode::kInvalidModel, op, ": input X must have rank >= 3 (N, C, spatial...), got ",
                 ints_to_string(ctx.inputs[0]->dims()));
  return Status::ok();
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Conv: Y[n, m, o] = B[m] + sum_{c in group(m), k} X[n, c, o*stride - pad_begin + k*dilation] * W[m, c, k]

Status conv(ExecContext& ctx) {
  const Tensor* X = ctx.inputs.size() > 0 ? ctx.inputs[0] : nullptr;
  const Tensor* W = ctx.inputs.size() > 1 ? ctx.inputs[1] : nullptr;
  const Tensor* B = ctx.inputs.size() > 2 ? ctx.inputs[2] : nullptr;
  GRAFT_RETURN_IF_ERROR(require_float_tensor(X, "X"));
  GRAFT_RETURN_IF_ERROR(require_float_tensor(W, "W"));
  if (B) GRAFT_RETURN_IF_ERROR(require_float_tensor(B, "B"));
  if (ctx.outputs.empty() || !ctx.outputs[0]) return error(StatusCode::kInternal, "Conv: output Y missing");
  Tensor& Y = *ctx.outputs[0];
  if (X->rank() < 3 || W->rank() != X->rank())
    return error(StatusCode::kInvalidModel, "Conv: X ", ints_to_string(X->dims()), " and W ",
                 ints_to_string(W->dims()), " must have the same rank >= 3");
  const size_t n = static_cast<size_t>(X->rank() - 2);
  std::vector<int64_t> wk = tail(W->dims(), 2);
  GRAFT_ASSIGN_OR_RETURN(WindowAttrs w, parse_window_attrs(*ctx.attrs, n, &wk, false));
  GRAFT_ASSIGN_OR_RETURN(int64_t group, ctx.attrs->get_int("group", 1));
  const int64_t N = X->dims()[0], C = X->dims()[1], M = W->dims()[0], Cg = W->dims()[1];
  if (group < 1 || M % group != 0 || Cg * group != C)
    return error(StatusCode::kInvalidModel, "Conv: X ", ints_to_string(X->dims()), " has ", C,
                 " channels but W ", ints_to_string(W->dims()), " with group ", group, " expects ", Cg * group);
  if (B && B->numel() != M)
    return error(StatusCode::kInvalidModel, "Conv: bias B has ", B->numel(), " elements; expected ", M);
  if (Y.rank() != X->rank() || Y.dims()[0] != N || Y.dims()[1] != M)
    return error(StatusCode::kInternal, "Conv: output shape ", ints_to_string(Y.dims()), " inconsistent with inputs");

  WindowWalker walker(w, tail(X->dims(), 2), tail(Y.dims(), 2));
  const int64_t in_area = walker.in_area(), out_area = walker.out_area(), k_area = walker.kernel_area();
  const int64_t Mg = M / group;
  std::vector<double> x = load_doubles(*X), wt = load_doubles(*W), y(static_cast<size_t>(Y.numel()));
  std::vector<double> bias = B ? load_doubles(*B) : std::vector<double>(static_cast<size_t>(M), 0.0);
  WindowTaps taps;
  for (int64_t p = 0; p < out_area; ++p) {
    walker.taps_at(p, taps);
    for (int64_t b = 0; b < N; ++b) {
      for (int64_t m = 0; m < M; ++m) {
        const int64_t g = m / Mg;
        double acc = bias[static_cast<size_t>(m)];
        for (int64_t c = 0; c < Cg; ++c) {
          const double* xp = x.data() + static_cast<size_t>((b * C + g * Cg + c) * in_area);
          const double* wp = wt.data() + static_cast<size_t>((m * Cg + c) * k_area);
          for (const auto& [ko, io] : taps.kernel_and_input) acc += xp[io] * wp[ko];
        }
        y[static_cast<size_t>((b * M + m) * out_area + p)] = acc;
      }
    }
  }
  store_doubles(Y, y);
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------
// ConvTranspose: the adjoint of Conv. Every input element scatters X[n, c, i] * W[c, m, k] to
// output position i*stride - pad_begin + k*dilation of channel m in c's group.

Status conv_transpose(ExecContext& ctx) {
  const Tensor* X = ctx.inputs.size() > 0 ? ctx.inputs[0] : nullptr;
  const Tensor* W = ctx.inputs.size() > 1 ? ctx.inputs[1] : nullptr;
  const Tensor* B = ctx.inputs.size() > 2 ? ctx.inputs[2] : nullptr;
  GRAFT_RETURN_IF_ERROR(require_float_tensor(X, "X"));
  GRAFT_RETURN_IF_ERROR(require_float_tensor(W, "W"));
  if (B) GRAFT_RETURN_IF_ERROR(require_float_tensor(B, "B"));
  Tensor& Y = *ctx.outputs[0];
  if (X->rank() < 3 || W->rank() != X->rank())
    return error(StatusCode::kInvalidModel, "ConvTranspose: X ", ints_to_string(X->dims()), " and W ",
                 ints_to_string(W->dims()), " must have the same rank >= 3");
  const size_t n = static_cast<size_t>(X->rank() - 2);
  std::vector<int64_t> wk = tail(W->dims(), 2);
  GRAFT_ASSIGN_OR_RETURN(ConvTransposeAttrs a, parse_conv_transpose_attrs(*ctx.attrs, n, &wk));
  const int64_t N = X->dims()[0], C = X->dims()[1], Mg = W->dims()[1], M = Mg * a.group;
  if (W->dims()[0] != C || C % a.group != 0)
    return error(StatusCode::kInvalidModel, "ConvTranspose: X ", ints_to_string(X->dims()), " has ", C,
                 " channels but W ", ints_to_string(W->dims()), " with group ", a.group, " expects ", W->dims()[0]);
  if (B && B->numel() != M)
    return error(StatusCode::kInvalidModel, "ConvTranspose: bias B has ", B->numel(), " elements; expected ", M);
  if (Y.rank() != X->rank() || Y.dims()[0] != N || Y.dims()[1] != M)
    return error(StatusCode::kInternal, "ConvTranspose: output shape ", ints_to_string(Y.dims()),
                 " inconsistent with inputs");
  const std::vector<int64_t> in_sp = tail(X->dims(), 2), out_sp = tail(Y.dims(), 2);
  const std::vector<int64_t> pb = conv_transpose_pad_begins(a, in_sp, out_sp);
  const std::vector<int64_t> out_strides = contiguous_strides(out_sp);
  const int64_t in_area = numel_of(in_sp), out_area = numel_of(out_sp), k_area = numel_of(wk);
  const int64_t Cg = C / a.group;
  std::vector<double> x = load_doubles(*X), wt = load_doubles(*W), y(static_cast<size_t>(Y.numel()), 0.0);
  std::vector<int64_t> ii, kk;
  for (int64_t p = 0; p < in_area; ++p) {
    unravel(p, in_sp, ii);
    for (int64_t k = 0; k < k_area; ++k) {
      unravel(k, wk, kk);
      int64_t off = 0;
      bool inside = true;
      for (size_t d = 0; d < n && inside; ++d) {
        int64_t o = ii[d] * a.window.strides[d] - pb[d] + kk[d] * a.window.dilations[d];
        inside = o >= 0 && o < out_sp[d];
        off += o * out_strides[d];
      }
      if (!inside) continue;
      for (int64_t b = 0; b < N; ++b)
        for (int64_t c = 0; c < C; ++c) {
          const int64_t g = c / Cg;
          const double xv = x[static_cast<size_t>((b * C + c) * in_area + p)];
          for (int64_t m = 0; m < Mg; ++m)
            y[static_cast<size_t>((b * M + g * Mg + m) * out_area + off)] +=
                xv * wt[static_cast<size_t>((c * Mg + m) * k_area + k)];
        }
    }
  }
  if (B)
    for (int64_t b = 0; b < N; ++b)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t q = 0; q < out_area; ++q) y[static_cast<size_t>((b * M + m) * out_area + q)] += B->get(m);
  store_doubles(Y, y);
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------
// BatchNormalization: Y = (X - mean[c]) / sqrt(var[c] + epsilon) * scale[c] + B[c]. Inference takes
// mean and var from the inputs. Training mode (opset 14) takes them from the batch (over every axis
// but 1; the variance is the population one, divided by the count, as ONNX's reference computes it)
// and also returns running_mean = input_mean * momentum + mean * (1 - momentum), and running_var
// alike.

Status batch_normalization(ExecContext& ctx) {
  const char* names[5] = {"X", "scale", "B", "input_mean", "input_var"};
  for (size_t i = 0; i < 5; ++i)
    GRAFT_RETURN_IF_ERROR(require_float_tensor(i < ctx.inputs.size() ? ctx.inputs[i] : nullptr, names[i]));
  GRAFT_ASSIGN_OR_RETURN(int64_t training, ctx.attrs->get_int("training_mode", 0));
  if (training != 0 && training != 1) return attr_error("training_mode", "must be 0 or 1, got ", training);
  GRAFT_ASSIGN_OR_RETURN(float eps, ctx.attrs->get_float("epsilon", 1e-5f));
  GRAFT_ASSIGN_OR_RETURN(float momentum, ctx.attrs->get_float("momentum", 0.9f));
  const Tensor& X = *ctx.inputs[0];
  if (X.rank() < 2)
    return error(StatusCode::kInvalidModel, "BatchNormalization: X must have rank >= 2, got ", ints_to_string(X.dims()));
  const int64_t N = X.dims()[0], C = X.dims()[1], inner = numel_of(tail(X.dims(), 2));
  for (size_t i = 1; i < 5; ++i)
    if (ctx.inputs[i]->numel() != C)
      return error(StatusCode::kInvalidModel, "BatchNormalization: input ", names[i], " has ",
                   ctx.inputs[i]->numel(), " elements; expected C = ", C);
  std::vector<double> x = load_doubles(X), scale = load_doubles(*ctx.inputs[1]), bias = load_doubles(*ctx.inputs[2]),
                      mean = load_doubles(*ctx.inputs[3]), var = load_doubles(*ctx.inputs[4]);
  if (training == 1) {
    const double count = static_cast<double>(N * inner);
    std::vector<double> bmean(static_cast<size_t>(C), 0.0), bvar(static_cast<size_t>(C), 0.0);
    for (int64_t b = 0; b < N; ++b)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < inner; ++i) bmean[static_cast<size_t>(c)] += x[static_cast<size_t>((b * C + c) * inner + i)];
    for (double& m : bmean) m = count > 0 ? m / count : 0.0;
    // Two passes (mean, then squared deviations) keep the variance exact for data far from 0.
    for (int64_t b = 0; b < N; ++b)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < inner; ++i) {
          const double d = x[static_cast<size_t>((b * C + c) * inner + i)] - bmean[static_cast<size_t>(c)];
          bvar[static_cast<size_t>(c)] += d * d;
        }
    for (double& v : bvar) v = count > 0 ? v / count : 0.0;
    const double m = static_cast<double>(momentum);
    for (size_t o = 1; o < 3; ++o) {
      Tensor* out = o < ctx.outputs.size() ? ctx.outputs[o] : nullptr;
      if (!out) continue;
      const std::vector<double>& running = o == 1 ? mean : var;
      const std::vector<double>& batch = o == 1 ? bmean : bvar;
      std::vector<double> r(static_cast<size_t>(C));
      for (size_t c = 0; c < r.size(); ++c) r[c] = running[c] * m + batch[c] * (1.0 - m);
      store_doubles(*out, r);
    }
    mean = std::move(bmean);
    var = std::move(bvar);
  }
  std::vector<double> y(x.size());
  for (int64_t b = 0; b < N; ++b)
    for (int64_t c = 0; c < C; ++c) {
      const size_t ci = static_cast<size_t>(c);
      const double inv = 1.0 / std::sqrt(var[ci] + static_cast<double>(eps));
      for (int64_t i = 0; i < inner; ++i) {
        size_t k = static_cast<size_t>((b * C + c) * inner + i);
        y[k] = (x[k] - mean[ci]) * inv * scale[ci] + bias[ci];
      }
    }
  store_doubles(*ctx.outputs[0], y);
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------
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

// ---------------------------------------------------------------------------------------------
// Pools

namespace {

// MaxPool values without indices, one spatial axis at a time. The max over a (dilated) box is the
// max along each axis in turn, so the cost is out_elements x (k0 + k1 + ...) instead of
// out_elements x (k0 * k1 * ...): a 60x80 window over a 1000x1000 image took 11 s through the
// per-window walk and takes milliseconds here. The result is the same, bit for bit: each pass keeps
// the first of equal values and the first NaN in kernel order, and running the innermost axis first
// composes into the row-major kernel order of the per-window walk. A window with no tap inside the
// input yields -inf, as there.
std::vector<double> max_pool_separable(std::vector<double> cur, int64_t nc, const std::vector<int64_t>& in_sp,
                                       const std::vector<int64_t>& out_sp, const WindowAttrs& w) {
  std::vector<int64_t> pb, pe;
  resolve_pads(w, in_sp, &pb, &pe);
  const size_t n = in_sp.size();
  std::vector<int64_t> dims = {nc};
  dims.insert(dims.end(), in_sp.begin(), in_sp.end());
  for (size_t a = n; a-- > 0;) {
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d <= a; ++d) outer *= dims[d];
    for (size_t d = a + 2; d < dims.size(); ++d) inner *= dims[d];
    const int64_t len_in = dims[a + 1], len_out = out_sp[a];
    std::vector<std::vector<int64_t>> taps(static_cast<size_t>(len_out));  // valid input positions, kernel order
    for (int64_t o = 0; o < len_out; ++o)
      for (int64_t k = 0; k < w.kernel[a]; ++k) {
        const int64_t ip = o * w.strides[a] - pb[a] + k * w.dilations[a];
        if (ip >= 0 && ip < len_in) taps[static_cast<size_t>(o)].push_back(ip);
      }
    std::vector<double> next(static_cast<size_t>(outer * len_out * inner));
    for (int64_t ob = 0; ob < outer; ++ob)
      for (int64_t o = 0; o < len_out; ++o) {
        double* dst = next.data() + (ob * len_out + o) * inner;
        const auto& tp = taps[static_cast<size_t>(o)];
        if (tp.empty()) {
          std::fill(dst, dst + inner, -std::numeric_limits<double>::infinity());
          continue;
        }
        const double* first = cur.data() + (ob * len_in + tp[0]) * inner;
        std::copy(first, first + inner, dst);
        for (size_t t = 1; t < tp.size(); ++t) {
          const double* src = cur.data() + (ob * len_in + tp[t]) * inner;
          for (int64_t i = 0; i < inner; ++i) {
            // As in the per-window walk: a larger value or a NaN replaces the best, unless the best
            // is already NaN (the first NaN propagates).
            const double v = src[i], b = dst[i];
            if ((v > b || std::isnan(v)) && !std::isnan(b)) dst[i] = v;
          }
        }
      }
    cur.swap(next);
    dims[a + 1] = len_out;
  }
  return cur;
}

}  // namespace

Status max_pool(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_pool_io(ctx, "MaxPool"));
  const Tensor& X = *ctx.inputs[0];
  Tensor& Y = *ctx.outputs[0];
  Tensor* I = output_or_null(ctx, 1);
  const size_t n = static_cast<size_t>(X.rank() - 2);
  GRAFT_ASSIGN_OR_RETURN(WindowAttrs w, parse_window_attrs(*ctx.attrs, n, nullptr, true));
  GRAFT_ASSIGN_OR_RETURN(int64_t storage_order, ctx.attrs->get_int("storage_order", 0));
  if (storage_order != 0 && storage_order != 1)
    return attr_error("storage_order", "must be 0 (row major) or 1 (column major), got ", storage_order);
  if (!I) {  // values only: the separable form (indices need the winning tap of each whole window)
    std::vector<double> y = max_pool_separable(load_doubles(X), X.dims()[0] * X.dims()[1], tail(X.dims(), 2),
                                               tail(Y.dims(), 2), w);
    if (static_cast<int64_t>(y.size()) != Y.numel())
      return error(StatusCode::kInternal, "MaxPool: output shape ", ints_to_string(Y.dims()), " does not match");
    store_doubles(Y, y);
    return Status::ok();
  }
  WindowWalker walker(w, tail(X.dims(), 2), tail(Y.dims(), 2));
  const int64_t NC = X.dims()[0] * X.dims()[1], in_area = walker.in_area(), out_area = walker.out_area();
  std::vector<double> x = load_doubles(X), y(static_cast<size_t>(Y.numel()));
  std::vector<int64_t> idx(I ? y.size() : 0);
  WindowTaps taps;
  for (int64_t p = 0; p < out_area; ++p) {
    walker.taps_at(p, taps);
    for (int64_t nc = 0; nc < NC; ++nc) {
      double best = -std::numeric_limits<double>::infinity();
      int64_t best_at = -1;
      for (size_t t = 0; t < taps.kernel_and_input.size(); ++t) {
        double v = x[static_cast<size_t>(nc * in_area + taps.kernel_and_input[t].second)];
        if (best_at < 0 || v > best || std::isnan(v)) {
          if (best_at >= 0 && std::isnan(best)) continue;  // NaN propagates
          best = v;
          best_at = static_cast<int64_t>(t);
        }
      }
      size_t o = static_cast<size_t>(nc * out_area + p);
      y[o] = best;
      if (I) {
        int64_t sp = best_at < 0 ? 0
                     : storage_order ? taps.input_col_major[static_cast<size_t>(best_at)]
                                     : taps.kernel_and_input[static_cast<size_t>(best_at)].second;
        idx[o] = nc * in_area + sp;
      }
    }
  }
  store_doubles(Y, y);
  if (I) {
    if (I->dtype() != DataType::kInt64 || I->numel() != Y.numel())
      return error(StatusCode::kInternal, "MaxPool: Indices output must be int64 shaped like Y");
    std::copy(idx.begin(), idx.end(), I->data_as<int64_t>());
  }
  return Status::ok();
}

Status average_pool(ExecContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_pool_io(ctx, "AveragePool"));
  const Tensor& X = *ctx.inputs[0];
  Tensor& Y = *ctx.outputs[0];
  const size_t n = static_cast<size_t>(X.rank() - 2);
  GRAFT_ASSIGN_OR_RETURN(WindowAttrs w, parse_window_attrs(*ctx.attrs, n, nullptr, true));
  GRAFT_ASSIGN_OR_RETURN(int64_t include_pad, ctx.attrs->get_int("count_include_pad", 0));
  WindowWalker walker(w, tail(X.dims(), 2), tail(Y.dims(), 2));
  const int64_t NC = X.dims()[0] * X.dims()[1], in_area = walker.in_area(), out_area = walker.out_area();
  std::vector<double> x = load_doubles(X), y(static_cast<size_t>(Y.numel()));
  WindowTaps taps;
  for (int64_t p = 0; p < out_area; ++p) {
    walker.taps_at(p, taps);
    // count_include_pad counts taps on explicit/SAME padding, never past it (the ceil_mode overhang).
    const double count = include_pad ? static_cast<double>(taps.padded_count)
                                     : static_cast<double>(taps.kernel_and_input.size());
    for (int64_t nc = 0; nc < NC; ++nc) {
      double sum = 0.0;
      for (const auto& t : taps.kernel_and_input) sum += x[static_cast<size_t>(nc * in_area + t.second)];
      y[static_cast<size_t>(nc * out_area + p)] =
          count > 0 ? sum / count : std::numeric_limits<double>::quiet_NaN();
    }
  }
  store_doubles(Y, y);
  return Status::ok();
}

namespace {
template <typename Reduce>
Status global_pool(ExecContext& ctx, const char* op, double init, Reduce reduce, bool mean) {
  GRAFT_RETURN_IF_ERROR(check_pool_io(ctx, op));
  const Tensor& X = *ctx.inputs[0];
  const int64_t NC = X.dims()[0] * X.dims()[1], area = numel_of(tail(X.dims(), 2));
  std::vector<double> x = load_doubles(X), y(static_cast<size_t>(NC));
  for (int64_t nc = 0; nc < NC; ++nc) {
    double acc = init;
    for (int64_t i = 0; i < area; ++i) acc = reduce(acc, x[static_cast<size_t>(nc * area + i)]);
    y[static_cast<size_t>(nc)] = mean ? acc / static_cast<double>(area) : acc;
  }
  if (ctx.outputs[0]->numel() != NC)
    return error(StatusCode::kInternal, op, ": output shape inconsistent with input");
  store_doubles(*ctx.outputs[0], y);
  return Status::ok();
}
}  // namespace

Status global_average_pool(ExecContext& ctx) {
  return global_pool(ctx, "GlobalAveragePool", 0.0, [](double a, double v) { return a + v; }, true);
}

Status global_max_pool(ExecContext& ctx) {
  return global_pool(
      ctx, "GlobalMaxPool", -std::numeric_limits<double>::infinity(),
      [](double a, double v) { return std::isnan(a) || std::isnan(v) ? std::numeric_limits<double>::quiet_NaN() : std::max(a, v); },
      false);
}

}  // namespace graft::cpu

// ---- schemas ----------------------------------------------------------------------------------

namespace graft {

namespace {

Status require_float_input(const InferContext& ctx, size_t i, const char* name) {
  DataType t = ctx.input(i).dtype;
  if (!dtype_is_float(t))
    return error(StatusCode::kUnsupported, "input ", name, " has dtype ", dtype_name(t), "; expected a floating type");
  return Status::ok();
}

Status require_numeric_input(const InferContext& ctx, size_t i, const char* name) {
  DataType t = ctx.input(i).dtype;
  if (!dtype_is_float(t) && !dtype_is_integer(t))
    return error(StatusCode::kUnsupported, "input ", name, " has dtype ", dtype_name(t), "; expected a numeric type");
  return Status::ok();
}

Status require_same_dtype(const InferContext& ctx, size_t i, const char* name) {
  if (ctx.input(i).dtype != ctx.input(0).dtype)
    return error(StatusCode::kInvalidModel, "input ", name, " has dtype ", dtype_name(ctx.input(i).dtype),
                 " but input 0 has ", dtype_name(ctx.input(0).dtype));
  return Status::ok();
}

bool output_requested(const InferContext& ctx, size_t i) {
  return i < ctx.node().outputs.size() && ctx.node().outputs[i] != nullptr;
}

// ---- Conv ----

Status infer_conv(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(Shape x, ctx.input_shape(0));
  GRAFT_ASSIGN_OR_RETURN(Shape w, ctx.input_shape(1));
  GRAFT_RETURN_IF_ERROR(require_float_input(ctx, 0, "X"));
  GRAFT_RETURN_IF_ERROR(require_same_dtype(ctx, 1, "W"));
  if (x.size() < 3)
    return ctx.fail("input X must have rank >= 3 (N, C, spatial...), got ", shape_to_string(x));
  if (w.size() != x.size())
    return ctx.fail("weight W ", shape_to_string(w), " must have the rank of X ", shape_to_string(x));
  const size_t n = x.size() - 2;
  std::vector<int64_t> wk;
  bool weight_kernel_known = true;
  for (size_t i = 2; i < w.size(); ++i) {
    if (!w[i].is_const()) weight_kernel_known = false;
    else wk.push_back(w[i].value());
  }
  if (!weight_kernel_known && !ctx.attrs().has("kernel_shape"))
    return error(StatusCode::kUnsupported, "the kernel shape is unknown: weight W ", shape_to_string(w),
                 " has symbolic spatial dims and kernel_shape is absent");
  GRAFT_ASSIGN_OR_RETURN(WindowAttrs wa,
                         parse_window_attrs(ctx.attrs(), n, weight_kernel_known ? &wk : nullptr, false));
  GRAFT_ASSIGN_OR_RETURN(int64_t group, ctx.attrs().get_int("group", 1));
  if (group < 1) return attr_error("group", "must be >= 1, got ", group);
  const Dim& C = x[1];
  const Dim& M = w[0];
  if (C.is_const() && w[1].is_const() && C.value() != w[1].value() * group)
    return ctx.fail("channel mismatch: X ", shape_to_string(x), " has ", C.value(), " channels but W ",
                    shape_to_string(w), " with group ", group, " expects ", w[1].value() * group);
  if (M.is_const() && M.value() % group != 0)
    return attr_error("group", "W ", shape_to_string(w), " has ", M.value(), " output channels, not divisible by group ", group);
  if (ctx.has_input(2)) {
    GRAFT_RETURN_IF_ERROR(require_same_dtype(ctx, 2, "B"));
    GRAFT_ASSIGN_OR_RETURN(Shape b, ctx.input_shape(2));
    if (b.size() != 1 || (b[0].is_const() && M.is_const() && b[0].value() != M.value()))
      return ctx.fail("bias B ", shape_to_string(b), " must be 1-D with ", M.to_string(), " elements (W ",
                      shape_to_string(w), ")");
  }
  GRAFT_ASSIGN_OR_RETURN(Shape out, window_output_shape(x, M, wa));
  ctx.set_output(0, TensorDesc(ctx.input(0).dtype, out));
  return Status::ok();
}

// ---- ConvTranspose ----

Status infer_conv_transpose(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(Shape x, ctx.input_shape(0));
  GRAFT_ASSIGN_OR_RETURN(Shape w, ctx.input_shape(1));
  GRAFT_RETURN_IF_ERROR(require_float_input(ctx, 0, "X"));
  GRAFT_RETURN_IF_ERROR(require_same_dtype(ctx, 1, "W"));
  if (x.size() < 3)
    return ctx.fail("input X must have rank >= 3 (N, C, spatial...), got ", shape_to_string(x));
  if (w.size() != x.size())
    return ctx.fail("weight W ", shape_to_string(w), " must have the rank of X ", shape_to_string(x));
  const size_t n = x.size() - 2;
  std::vector<int64_t> wk;
  for (size_t i = 2; i < w.size(); ++i) {
    if (!w[i].is_const())
      return error(StatusCode::kUnsupported, "weight W ", shape_to_string(w), " has symbolic spatial dims");
    wk.push_back(w[i].value());
  }
  GRAFT_ASSIGN_OR_RETURN(ConvTransposeAttrs a, parse_conv_transpose_attrs(ctx.attrs(), n, &wk));
  if (x[1].is_const() && w[0].is_const() && x[1].value() != w[0].value())
    return ctx.fail("channel mismatch: X ", shape_to_string(x), " has ", x[1].value(), " channels but W ",
                    shape_to_string(w), " expects ", w[0].value());
  if (w[0].is_const() && w[0].value() % a.group != 0)
    return attr_error("group", "W ", shape_to_string(w), " has ", w[0].value(), " input channels, not divisible by group ",
                      a.group);
  Dim M = w[1] * Dim(a.group);
  if (ctx.has_input(2)) {
    GRAFT_RETURN_IF_ERROR(require_same_dtype(ctx, 2, "B"));
    GRAFT_ASSIGN_OR_RETURN(Shape b, ctx.input_shape(2));
    if (b.size() != 1 || (b[0].is_const() && M.is_const() && b[0].value() != M.value()))
      return ctx.fail("bias B ", shape_to_string(b), " must be 1-D with ", M.to_string(), " elements");
  }
  Shape out{x[0], M};
  for (size_t i = 0; i < n; ++i) {
    Dim d = conv_transpose_output_dim(a, i, x[i + 2]);
    if (d.is_const() && d.value() < 1)
      return ctx.fail("output extent ", d.value(), " on spatial axis ", static_cast<int64_t>(i), " is < 1");
    out.push_back(d);
  }
  ctx.set_output(0, TensorDesc(ctx.input(0).dtype, out));
  return Status::ok();
}

// ---- pools ----

Status infer_pool_common(InferContext& ctx, bool is_max) {
  GRAFT_ASSIGN_OR_RETURN(Shape x, ctx.input_shape(0));
  if (is_max) GRAFT_RETURN_IF_ERROR(require_numeric_input(ctx, 0, "X"));
  else GRAFT_RETURN_IF_ERROR(require_float_input(ctx, 0, "X"));
  if (x.size() < 3)
    return ctx.fail("input X must have rank >= 3 (N, C, spatial...), got ", shape_to_string(x));
  GRAFT_ASSIGN_OR_RETURN(WindowAttrs wa, parse_window_attrs(ctx.attrs(), x.size() - 2, nullptr, true));
  if (is_max) {
    GRAFT_ASSIGN_OR_RETURN(int64_t so, ctx.attrs().get_int("storage_order", 0));
    if (so != 0 && so != 1) return attr_error("storage_order", "must be 0 or 1, got ", so);
  } else {
    GRAFT_ASSIGN_OR_RETURN(int64_t cip, ctx.attrs().get_int("count_include_pad", 0));
    (void)cip;
  }
  GRAFT_ASSIGN_OR_RETURN(Shape out, window_output_shape(x, x[1], wa));
  ctx.set_output(0, TensorDesc(ctx.input(0).dtype, out));
  if (is_max && output_requested(ctx, 1)) ctx.set_output(1, TensorDesc(DataType::kInt64, out));
  return Status::ok();
}

Status infer_max_pool(InferContext& ctx) { return infer_pool_common(ctx, true); }
Status infer_average_pool(InferContext& ctx) { return infer_pool_common(ctx, false); }

Status infer_global_pool(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(Shape x, ctx.input_shape(0));
  GRAFT_RETURN_IF_ERROR(require_float_input(ctx, 0, "X"));
  if (x.size() < 3)
    return ctx.fail("input X must have rank >= 3 (N, C, spatial...), got ", shape_to_string(x));
  Shape out{x[0], x[1]};
  out.resize(x.size(), Dim(1));
  ctx.set_output(0, TensorDesc(ctx.input(0).dtype, out));
  return Status::ok();
}

// ---- BatchNormalization (inference; training mode from opset 14) ----

Status infer_batch_norm(InferContext& ctx) {
  auto training_attr = ctx.attrs().get_int("training_mode", 0);
  if (!training_attr) return Status(training_attr.status()).with_attribute("training_mode");
  const int64_t training = training_attr.value();
  if (training != 0 && training != 1) return attr_error("training_mode", "must be 0 or 1, got ", training);
  // training_mode exists from opset 14, with outputs Y, running_mean, running_var; before it the
  // extra outputs (mean, var, saved_mean, saved_var) meant training, which graft does not run.
  if (training == 1 && ctx.opset() < 14)
    return attr_error("training_mode", "exists from opset 14; the model is opset ", static_cast<int64_t>(ctx.opset()));
  if (training == 0)
    for (size_t i = 1; i < ctx.node().outputs.size(); ++i)
      if (output_requested(ctx, i))
        return error(StatusCode::kUnsupported, "output ", static_cast<int64_t>(i),
                     " (running/saved mean or variance) exists only in training mode (training_mode = 1, "
                     "opset >= 14)");
  if (training == 1 && ctx.node().outputs.size() > 3)
    return ctx.fail("training mode has at most 3 outputs (Y, running_mean, running_var), got ",
                    static_cast<int64_t>(ctx.node().outputs.size()));
  auto momentum = ctx.attrs().get_float("momentum", 0.9f);
  if (!momentum) return Status(momentum.status()).with_attribute("momentum");
  GRAFT_ASSIGN_OR_RETURN(float eps, ctx.attrs().get_float("epsilon", 1e-5f));
  if (!(eps >= 0.0f)) return attr_error("epsilon", "must be >= 0, got ", static_cast<double>(eps));
  GRAFT_ASSIGN_OR_RETURN(Shape x, ctx.input_shape(0));
  GRAFT_RETURN_IF_ERROR(require_float_input(ctx, 0, "X"));
  if (x.size() < 2) return ctx.fail("input X must have rank >= 2 (N, C, ...), got ", shape_to_string(x));
  const char* names[5] = {"X", "scale", "B", "input_mean", "input_var"};
  for (size_t i = 1; i < 5; ++i) {
    GRAFT_ASSIGN_OR_RETURN(Shape p, ctx.input_shape(i));
    GRAFT_RETURN_IF_ERROR(require_float_input(ctx, i, names[i]));
    if (p.size() != 1 || (p[0].is_const() && x[1].is_const() && p[0].value() != x[1].value()))
      return ctx.fail("input ", names[i], " ", shape_to_string(p), " must be 1-D with C = ", x[1].to_string(),
                      " elements (X ", shape_to_string(x), ")");
  }
  ctx.set_output(0, TensorDesc(ctx.input(0).dtype, x));
  for (size_t i = 1; training == 1 && i < ctx.num_outputs(); ++i)
    ctx.set_output(i, TensorDesc(ctx.input(2 + i).dtype, Shape{x[1]}));
  return Status::ok();
}

// ---- MatMul ----

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

void append_nn_ops(std::vector<OpEntry>& out) {
  out.push_back(OpEntry{"AveragePool", 11, infer_average_pool, cpu::average_pool});
  out.push_back(OpEntry{"BatchNormalization", 11, infer_batch_norm, cpu::batch_normalization});
  out.push_back(OpEntry{"Conv", 11, infer_conv, cpu::conv});
  out.push_back(OpEntry{"ConvTranspose", 11, infer_conv_transpose, cpu::conv_transpose});
  out.push_back(OpEntry{"Gemm", 11, infer_gemm, cpu::gemm});
  out.push_back(OpEntry{"GlobalAveragePool", 11, infer_global_pool, cpu::global_average_pool});
  out.push_back(OpEntry{"GlobalMaxPool", 11, infer_global_pool, cpu::global_max_pool});
  out.push_back(OpEntry{"MatMul", 11, infer_matmul, cpu::matmul});
  out.push_back(OpEntry{"MaxPool", 11, infer_max_pool, cpu::max_pool});
}

}  // namespace graft
