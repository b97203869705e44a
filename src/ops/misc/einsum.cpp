// Einsum: its equation parser and layout (misc.h), the naive CPU reference (double for floats,
// wrapping int64 for integers) and the schema. CUDA: einsum.cu.
#include "ops/misc/misc.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backends/cpu/element_traits.h"
#include "backends/cpu/broadcast_walker.h"
#include "backends/cpu/kernel_util.h"
#include "backends/cpu/unary_kernel.h"
#include "core/checked_math.h"
#include "graft/status.h"
#include "ops/attr_util.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {

// ---- Einsum's equation (misc.h) ------------------------------------------------------------

namespace {

// One term of the equation: its letters, and where its ellipsis stands (-1: none).
struct Term {
  std::string letters;
  int ellipsis_at = -1;  // index into letters before which the ellipsis stands
};

Result<Term> parse_term(const std::string& text, const std::string& equation) {
  Term t;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ') continue;
    if (c == '.') {
      if (text.compare(i, 3, "...") != 0 || t.ellipsis_at >= 0)
        return error(StatusCode::kInvalidModel, "equation '", equation, "': a term may hold one '...' and no lone '.'");
      t.ellipsis_at = static_cast<int>(t.letters.size());
      i += 2;
      continue;
    }
    if (!std::isalpha(static_cast<unsigned char>(c)))
      return error(StatusCode::kInvalidModel, "equation '", equation, "': unexpected character '", std::string(1, c), "'");
    t.letters += c;
  }
  return t;
}

}  // namespace

Result<EinsumSpec> parse_einsum(const std::string& equation, const std::vector<int64_t>& ranks) {
  const size_t arrow = equation.find("->");
  const std::string lhs = equation.substr(0, arrow);
  if (arrow != std::string::npos && equation.find("->", arrow + 2) != std::string::npos)
    return error(StatusCode::kInvalidModel, "equation '", equation, "' has more than one '->'");
  std::vector<Term> terms;
  size_t start = 0;
  while (true) {
    const size_t comma = lhs.find(',', start);
    GRAFT_ASSIGN_OR_RETURN(Term t, parse_term(lhs.substr(start, comma - start), equation));
    terms.push_back(std::move(t));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != ranks.size())
    return error(StatusCode::kInvalidModel, "equation '", equation, "' has ", terms.size(), " operand terms but the node has ",
                 ranks.size(), " inputs");
  // Ellipsis lengths from the ranks, and the broadcast length.
  std::vector<int64_t> ell(terms.size(), 0);
  int64_t max_ell = 0;
  for (size_t k = 0; k < terms.size(); ++k) {
    const int64_t n = static_cast<int64_t>(terms[k].letters.size());
    ell[k] = ranks[k] - n;
    if ((terms[k].ellipsis_at < 0 && ell[k] != 0) || ell[k] < 0)
      return error(StatusCode::kInvalidModel, "equation '", equation, "': operand ", k, " has rank ", ranks[k],
                   " but its term names ", n, " axes", terms[k].ellipsis_at >= 0 ? " and an ellipsis" : "");
    max_ell = std::max(max_ell, ell[k]);
  }
  EinsumSpec spec;
  std::map<char, int> letter_id;
  std::map<char, int> count;
  for (const Term& t : terms)
    for (char c : t.letters) {
      if (!letter_id.count(c)) letter_id.emplace(c, static_cast<int>(letter_id.size()));
      ++count[c];
    }
  const int letters = static_cast<int>(letter_id.size());
  spec.num_labels = letters + static_cast<int>(max_ell);
  spec.ellipsis_label.assign(static_cast<size_t>(spec.num_labels), false);
  for (int64_t j = 0; j < max_ell; ++j) spec.ellipsis_label[static_cast<size_t>(letters + j)] = true;
  for (size_t k = 0; k < terms.size(); ++k) {
    std::vector<int> labels;
    const Term& t = terms[k];
    for (size_t i = 0; i <= t.letters.size(); ++i) {
      if (static_cast<int>(i) == t.ellipsis_at)
        for (int64_t j = 0; j < ell[k]; ++j) labels.push_back(letters + static_cast<int>(max_ell - ell[k] + j));
      if (i < t.letters.size()) labels.push_back(letter_id[t.letters[i]]);
    }
    spec.in_labels.push_back(std::move(labels));
  }
  if (arrow == std::string::npos) {
    for (int64_t j = 0; j < max_ell; ++j) spec.out_labels.push_back(letters + static_cast<int>(j));
    for (const auto& [c, n] : count)  // std::map: alphabetical (upper case before lower, as in ASCII)
      if (n == 1) spec.out_labels.push_back(letter_id[c]);
    return spec;
  }
  GRAFT_ASSIGN_OR_RETURN(Term out, parse_term(equation.substr(arrow + 2), equation));
  if (out.ellipsis_at < 0 && max_ell > 0)
    return error(StatusCode::kInvalidModel, "equation '", equation, "': the inputs have an ellipsis but the output does not");
  std::vector<bool> seen(static_cast<size_t>(letters), false);
  for (size_t i = 0; i <= out.letters.size(); ++i) {
    if (static_cast<int>(i) == out.ellipsis_at)
      for (int64_t j = 0; j < max_ell; ++j) spec.out_labels.push_back(letters + static_cast<int>(j));
    if (i == out.letters.size()) break;
    const char c = out.letters[i];
    auto it = letter_id.find(c);
    if (it == letter_id.end())
      return error(StatusCode::kInvalidModel, "equation '", equation, "': output label '", std::string(1, c),
                   "' names no input axis");
    if (seen[static_cast<size_t>(it->second)])
      return error(StatusCode::kInvalidModel, "equation '", equation, "': output label '", std::string(1, c), "' repeats");
    seen[static_cast<size_t>(it->second)] = true;
    spec.out_labels.push_back(it->second);
  }
  return spec;
}

Result<std::vector<int64_t>> einsum_extents(const EinsumSpec& spec, const std::vector<std::vector<int64_t>>& dims) {
  std::vector<int64_t> ext(static_cast<size_t>(spec.num_labels), -1);
  for (size_t k = 0; k < spec.in_labels.size(); ++k) {
    if (dims[k].size() != spec.in_labels[k].size())
      return error(StatusCode::kInvalidModel, "operand ", k, " has rank ", dims[k].size(), ", the equation gives it ",
                   spec.in_labels[k].size(), " axes");
    for (size_t a = 0; a < dims[k].size(); ++a) {
      const int label = spec.in_labels[k][a];
      int64_t& e = ext[static_cast<size_t>(label)];
      const int64_t d = dims[k][a];
      if (e < 0 || e == d) {
        e = d;
      } else if (spec.ellipsis_label[static_cast<size_t>(label)] && (e == 1 || d == 1)) {
        e = std::max(e, d);
      } else {
        return error(StatusCode::kInvalidModel, "operand ", k, " axis ", a, " has extent ", d, " where another axis with ",
                     "the same label has ", e);
      }
    }
  }
  for (int64_t& e : ext)
    if (e < 0) e = 1;  // an ellipsis position no operand reaches (cannot happen; kept well-defined)
  return ext;
}

Result<EinsumLayout> einsum_layout(const EinsumSpec& spec, const std::vector<std::vector<int64_t>>& dims) {
  GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> ext, einsum_extents(spec, dims));
  EinsumLayout lay;
  lay.order = spec.out_labels;
  lay.n_out = spec.out_labels.size();
  std::vector<bool> in_out(static_cast<size_t>(spec.num_labels), false);
  for (int l : spec.out_labels) in_out[static_cast<size_t>(l)] = true;
  for (int l = 0; l < spec.num_labels; ++l)
    if (!in_out[static_cast<size_t>(l)]) lay.order.push_back(l);
  std::vector<size_t> pos_of(static_cast<size_t>(spec.num_labels));
  for (size_t p = 0; p < lay.order.size(); ++p) {
    pos_of[static_cast<size_t>(lay.order[p])] = p;
    lay.ext.push_back(ext[static_cast<size_t>(lay.order[p])]);
  }
  for (size_t k = 0; k < dims.size(); ++k) {
    std::vector<int64_t> st(lay.order.size(), 0);
    int64_t s = 1;
    for (size_t a = dims[k].size(); a-- > 0;) {
      const int label = spec.in_labels[k][a];
      if (dims[k][a] != 1 || ext[static_cast<size_t>(label)] == 1) st[pos_of[static_cast<size_t>(label)]] += s;
      s *= dims[k][a];
    }
    lay.stride.push_back(std::move(st));
  }
  for (size_t p = lay.n_out; p < lay.order.size(); ++p) {
    if (lay.ext[p] != 0 && lay.inner > INT64_MAX / lay.ext[p]) {
      lay.inner = INT64_MAX;
      break;
    }
    lay.inner *= lay.ext[p];
  }
  return lay;
}

// ---- CPU reference --------------------------------------------------------------------------
// Values are loaded as double, statistics and sums accumulate in double, and each result is rounded
// once into the output dtype.

namespace cpu {

namespace {

// Einsum refuses (kUnsupported) more than this many products.
inline constexpr int64_t kMaxEinsumTerms = int64_t{1} << 32;

// Exact integer element access (double would round int64 beyond 2^53); a uint64 travels as its
// bit pattern, and two's-complement products and sums of those bits are the uint64 results.
int64_t load_integer(const Tensor& t, int64_t i) { return load_as_int64(t.dtype(), t.data(), i); }
// Wraps to the output's width, as integer arithmetic in that type would.
void store_integer(Tensor& t, int64_t i, int64_t v) { store_from_int64(t.dtype(), t.data(), i, v); }

}  // namespace

// Every output element sums the products over the labels the output lacks (double for floats,
// wrapping int64 for integers).
Status einsum(ExecContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(std::string eq, ctx.attrs->get_string("equation", ""));
  const size_t n = ctx.inputs.size();
  if (n == 0 || ctx.outputs.size() != 1) return error(StatusCode::kInvalidModel, "Einsum takes inputs and one output");
  std::vector<int64_t> ranks;
  std::vector<std::vector<int64_t>> dims;
  for (const Tensor* t : ctx.inputs) {
    if (!t) return error(StatusCode::kInvalidModel, "Einsum inputs are all required");
    ranks.push_back(t->rank());
    dims.push_back(t->dims());
  }
  auto spec = parse_einsum(eq, ranks);
  if (!spec) return Status(spec.status()).with_attribute("equation");
  GRAFT_ASSIGN_OR_RETURN(EinsumLayout lay, einsum_layout(*spec, dims));
  Tensor& y = *ctx.outputs[0];
  if (y.dims() != std::vector<int64_t>(lay.ext.begin(), lay.ext.begin() + static_cast<int64_t>(lay.n_out)))
    return error(StatusCode::kInternal, "Einsum output has dims that do not match the equation");
  const size_t L = lay.order.size(), out_rank = lay.n_out;
  const auto& ext = lay.ext;
  const auto& stride = lay.stride;
  const int64_t outer = y.numel(), inner = lay.inner;
  int64_t terms = 0;
  if (!checked_mul(outer, inner, &terms) || terms > kMaxEinsumTerms)
    return error(StatusCode::kUnsupported, "Einsum '", eq, "' needs more than ", kMaxEinsumTerms,
                 " products, more than graft's reference computes");
  const bool integer = dtype_is_integer(y.dtype());
  std::vector<int64_t> idx(L, 0);
  for (int64_t o = 0; o < outer; ++o) {
    // idx[0..out_rank) is output element o (row-major); the summed labels run from 0 each time.
    int64_t rem = o;
    for (size_t p = out_rank; p-- > 0;) {
      const int64_t e = ext[p];
      idx[p] = rem % e;
      rem /= e;
    }
    for (size_t p = out_rank; p < L; ++p) idx[p] = 0;
    double acc = 0;
    uint64_t iacc = 0;
    for (int64_t t = 0; t < inner; ++t) {
      double prod = 1;
      uint64_t iprod = 1;
      for (size_t k = 0; k < n; ++k) {
        int64_t off = 0;
        for (size_t p = 0; p < L; ++p) off += idx[p] * stride[k][p];
        if (integer) iprod *= static_cast<uint64_t>(load_integer(*ctx.inputs[k], off));
        else prod *= ctx.inputs[k]->get(off);
      }
      acc += prod;
      iacc += iprod;
      for (size_t p = L; p-- > out_rank;) {  // next combination of the summed labels
        if (++idx[p] < ext[p]) break;
        idx[p] = 0;
      }
    }
    if (integer) store_integer(y, o, static_cast<int64_t>(iacc));
    else y.set(o, acc);
  }
  return Status::ok();
}

}  // namespace cpu

// ---- schema ---------------------------------------------------------------------------------

namespace {

using namespace infer;

// Output dims: each output label's extent, taken from an input axis with that label (a broadcast
// ellipsis position prefers an extent other than 1). Extents are checked against each other when
// they are numbers; the kernels check the concrete ones again.
Status infer_einsum(InferContext& ctx) {
  auto eq = ctx.attrs().get_string("equation", "");
  if (!eq) return Status(eq.status()).with_attribute("equation");
  if (eq->empty()) return Status(ctx.fail("is required")).with_attribute("equation");
  if (ctx.num_inputs() == 0) return ctx.fail("needs at least one input");
  std::vector<int64_t> ranks;
  bool ranks_known = true;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    GRAFT_RETURN_IF_ERROR(require_input(ctx, i));
    GRAFT_RETURN_IF_ERROR(check_dtype(ctx, i, kNumericTypes));
    if (ctx.input(i).dtype != ctx.input(0).dtype)
      return ctx.fail("input ", static_cast<int64_t>(i), " has dtype ", dtype_name(ctx.input(i).dtype), ", input 0 ",
                      dtype_name(ctx.input(0).dtype), ": Einsum takes one dtype");
    ranks_known &= ctx.input(i).shape.has_value();
    ranks.push_back(ctx.input(i).rank());
  }
  const DataType dt = ctx.input(0).dtype;
  if (!ranks_known) {
    ctx.set_output(0, desc_of(dt, std::nullopt));
    return Status::ok();
  }
  auto spec = parse_einsum(*eq, ranks);
  if (!spec) return Status(ctx.fail(spec.status().message())).with_attribute("equation");
  std::vector<std::optional<Dim>> ext(static_cast<size_t>(spec->num_labels));
  for (size_t k = 0; k < ranks.size(); ++k)
    for (size_t a = 0; a < spec->in_labels[k].size(); ++a) {
      const Dim& d = (*ctx.input(k).shape)[a];
      auto& e = ext[static_cast<size_t>(spec->in_labels[k][a])];
      const bool ell = spec->ellipsis_label[static_cast<size_t>(spec->in_labels[k][a])];
      if (!e || (ell && *e == 1)) {
        e = d;
      } else if (e->is_const() && d.is_const() && e->value() != d.value() && !(ell && d.value() == 1)) {
        return Status(ctx.fail("input ", static_cast<int64_t>(k), " axis ", static_cast<int64_t>(a), " has extent ",
                               d.value(), " where another axis with the same label has ", e->value()))
            .with_attribute("equation");
      }
    }
  Shape out;
  for (int label : spec->out_labels) out.push_back(ext[static_cast<size_t>(label)].value_or(Dim(1)));
  ctx.set_output(0, desc_of(dt, out));
  return Status::ok();
}

}  // namespace

void append_einsum_ops(std::vector<OpEntry>& out) {
  out.push_back(OpEntry{"Einsum", 12, infer_einsum, cpu::einsum});
}

}  // namespace graft
