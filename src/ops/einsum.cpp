#include "ops/einsum.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <map>

namespace graft {

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

}  // namespace graft

