#include "ops/integer_attrs.h"

#include <algorithm>
#include <string>

#include "core/index_math.h"
#include "graft/tensor.h"
#include "ops/attr_util.h"

namespace graft {

// ---- layouts -----------------------------------------------------------------------------------

Result<IntMatMulPlan> int_matmul_plan(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  if (a.empty() || b.empty())
    return error(StatusCode::kInvalidModel, "operands must have rank >= 1, got A ", ints_to_string(a),
                 " and B ", ints_to_string(b));
  IntMatMulPlan p;
  p.a_dims = a;
  p.b_dims = b;
  if (a.size() == 1) p.a_dims.insert(p.a_dims.begin(), 1);
  if (b.size() == 1) p.b_dims.push_back(1);
  p.M = p.a_dims[p.a_dims.size() - 2];
  p.K = p.a_dims.back();
  p.N = p.b_dims.back();
  if (p.b_dims[p.b_dims.size() - 2] != p.K)
    return error(StatusCode::kInvalidModel, "inner dimensions differ: A ", ints_to_string(a),
                 " has K = ", p.K, " but B ", ints_to_string(b), " has K = ", p.b_dims[p.b_dims.size() - 2]);
  const std::vector<int64_t> ba(p.a_dims.begin(), p.a_dims.end() - 2),
      bb(p.b_dims.begin(), p.b_dims.end() - 2);
  std::vector<int64_t> batch(std::max(ba.size(), bb.size()), 1);
  for (size_t i = 0; i < batch.size(); ++i) {
    const int64_t da = i + ba.size() >= batch.size() ? ba[i + ba.size() - batch.size()] : 1;
    const int64_t db = i + bb.size() >= batch.size() ? bb[i + bb.size() - batch.size()] : 1;
    if (da != db && da != 1 && db != 1)
      return error(StatusCode::kInvalidModel, "batch dimensions of A ", ints_to_string(a), " and B ",
                   ints_to_string(b), " cannot be broadcast");
    batch[i] = da == 1 ? db : da;
  }
  p.out_dims = batch;
  p.batch = batch;
  if (a.size() > 1) p.out_dims.push_back(p.M);
  if (b.size() > 1) p.out_dims.push_back(p.N);
  p.a_batch = broadcast_batch_offsets(batch, ba);
  p.b_batch = broadcast_batch_offsets(batch, bb);
  return p;
}

Result<MatMulParamStrides> matmul_param_strides(const IntMatMulPlan& plan, bool a_side,
                                                const std::vector<int64_t>& param_dims, const char* what) {
  const std::vector<int64_t>& od = a_side ? plan.a_dims : plan.b_dims;
  const size_t r = od.size();
  const size_t vary = a_side ? r - 2 : r - 1, reduced = a_side ? r - 1 : r - 2;
  MatMulParamStrides st;
  st.batch.assign(r - 2, 0);
  if (numel_of(param_dims) == 1) return st;  // per tensor, whatever its rank
  // The parameter's shape aligned to the operand's: a 1-D one runs along the rows (A) or columns (B);
  // a longer one broadcasts against the operand, right-aligned, with extent 1 on the K axis.
  std::vector<int64_t> pd(r, 1);
  bool fits = true;
  if (param_dims.size() == 1) {
    pd[vary] = param_dims[0];
    fits = param_dims[0] == od[vary];
  } else if (param_dims.size() >= 2 && param_dims.size() <= r) {
    std::copy(param_dims.begin(), param_dims.end(),
              pd.begin() + static_cast<std::ptrdiff_t>(r - param_dims.size()));
    for (size_t i = 0; i < r; ++i) fits = fits && (pd[i] == 1 || pd[i] == od[i]);
    fits = fits && pd[reduced] == 1;
  } else {
    fits = false;
  }
  if (!fits) {
    std::vector<int64_t> want = od;
    want[reduced] = 1;
    return error(StatusCode::kInvalidModel, "input ", what, " ", ints_to_string(param_dims), " does not fit ",
                 a_side ? "A " : "B ", ints_to_string(a_side ? plan.a_dims : plan.b_dims),
                 ": expected one element (per tensor), [", od[vary], "] (per ", a_side ? "row" : "column",
                 ") or a shape that broadcasts to ", ints_to_string(want));
  }
  const std::vector<int64_t> ps = contiguous_strides(pd);
  for (size_t a = 0; a + 2 < r; ++a) st.batch[a] = pd[a] != 1 ? ps[a] : 0;
  st.vary = pd[vary] != 1 ? ps[vary] : 0;
  return st;
}

Result<std::vector<int64_t>> matmul_param_index(const IntMatMulPlan& plan, bool a_side,
                                                const std::vector<int64_t>& param_dims, const char* what) {
  GRAFT_ASSIGN_OR_RETURN(MatMulParamStrides st, matmul_param_strides(plan, a_side, param_dims, what));
  const std::vector<int64_t>& od = a_side ? plan.a_dims : plan.b_dims;
  const std::vector<int64_t> batch(od.begin(), od.end() - 2);
  const int64_t nb = numel_of(batch), extent = od[a_side ? od.size() - 2 : od.size() - 1];
  std::vector<int64_t> result(static_cast<size_t>(nb * extent), 0);
  std::vector<int64_t> idx;
  for (int64_t b = 0; b < nb; ++b) {
    unravel(b, batch, idx);
    int64_t base = 0;
    for (size_t a = 0; a < batch.size(); ++a) base += idx[a] * st.batch[a];
    for (int64_t v = 0; v < extent; ++v) result[static_cast<size_t>(b * extent + v)] = base + v * st.vary;
  }
  return result;
}

Result<IntConvPlan> int_conv_plan(const AttributeMap& attrs, const std::vector<int64_t>& x,
                                  const std::vector<int64_t>& w) {
  if (x.size() < 3)
    return error(StatusCode::kInvalidModel, "input x must have rank >= 3 (N, C, spatial...), got ",
                 ints_to_string(x));
  if (w.size() != x.size())
    return error(StatusCode::kInvalidModel, "weight w ", ints_to_string(w), " must have the rank of x ",
                 ints_to_string(x));
  IntConvPlan p;
  const size_t n = x.size() - 2;
  const std::vector<int64_t> wk(w.begin() + 2, w.end());
  GRAFT_ASSIGN_OR_RETURN(p.window, parse_window_attrs(attrs, n, &wk, false));
  auto group = attrs.get_int("group", 1);
  if (!group) return Status(group.status()).with_attribute("group");
  p.group = group.value();
  if (p.group < 1) return attr_error("group", "must be >= 1, got ", p.group);
  p.N = x[0];
  p.C = x[1];
  p.M = w[0];
  p.Cg = w[1];
  if (p.Cg * p.group != p.C)
    return error(StatusCode::kInvalidModel, "channel mismatch: x ", ints_to_string(x), " has ", p.C,
                 " channels but w ", ints_to_string(w), " with group ", p.group, " expects ", p.Cg * p.group);
  if (p.M % p.group != 0)
    return attr_error("group", "w ", ints_to_string(w), " has ", p.M,
                      " output channels, not divisible by group ", p.group);
  p.out_dims = {p.N, p.M};
  for (size_t i = 0; i < n; ++i) {
    const Dim d = window_output_dim(p.window, i, Dim(x[i + 2]));
    if (d.value() < 1)
      return error(StatusCode::kInvalidModel, "input x ", ints_to_string(x),
                   " is too small for the window on spatial axis ", static_cast<int64_t>(i),
                   " (output extent ", d.value(), ")");
    p.out_dims.push_back(d.value());
  }
  return p;
}

Status check_per_tensor(const std::vector<int64_t>& dims, const char* what) {
  if (numel_of(dims) != 1)
    return error(StatusCode::kInvalidModel, "input ", what, " must be one element (per tensor), got ",
                 ints_to_string(dims));
  return Status::ok();
}

Status check_per_channel(const std::vector<int64_t>& dims, int64_t M, const char* what) {
  if (numel_of(dims) == 1 || (dims.size() == 1 && dims[0] == M)) return Status::ok();
  return error(StatusCode::kInvalidModel, "input ", what, " ", ints_to_string(dims),
               " must be one element (per tensor) or 1-D with one entry per output channel (", M, ")");
}

Status check_conv_bias(DataType dtype, const std::vector<int64_t>& dims, int64_t M) {
  if (dtype != DataType::kInt32)
    return error(StatusCode::kUnsupported, "input B has dtype ", dtype_name(dtype), "; expected int32");
  if (dims.size() != 1 || numel_of(dims) != M)
    return error(StatusCode::kInvalidModel, "input B ", ints_to_string(dims),
                 " must be 1-D with one entry per output channel (", M, ")");
  return Status::ok();
}

}  // namespace graft
