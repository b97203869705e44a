#include "runtime/compare.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "graft/dim.h"

namespace graft {

Tolerance Tolerances::of(const std::string& tensor) const {
  Tolerance t = fallback;
  if (auto it = rtol.find(tensor); it != rtol.end()) t.rtol = it->second;
  if (auto it = atol.find(tensor); it != atol.end()) t.atol = it->second;
  return t;
}

std::vector<std::string> Tolerances::unknown_names(const std::vector<std::string>& known) const {
  const std::set<std::string> names(known.begin(), known.end());
  std::set<std::string> unknown;
  for (const auto* m : {&rtol, &atol})
    for (const auto& [name, _] : *m)
      if (!names.count(name)) unknown.insert(name);
  return {unknown.begin(), unknown.end()};
}

namespace {

std::string type_of(const Tensor& t) { return TensorDesc(t.dtype(), shape_from_values(t.dims())).to_string(); }

std::vector<int64_t> unravel(int64_t flat, const std::vector<int64_t>& dims) {
  std::vector<int64_t> at(dims.size(), 0);
  for (size_t k = dims.size(); k-- > 0;) {
    if (dims[k] > 0) {
      at[k] = flat % dims[k];
      flat /= dims[k];
    }
  }
  return at;
}

const char* status_name(TensorComparison::Status s) {
  switch (s) {
    case TensorComparison::Status::kMatch: return "match";
    case TensorComparison::Status::kMismatch: return "mismatch";
    case TensorComparison::Status::kNotCompared: return "not_compared";
  }
  return "?";
}

std::string index_text(const std::vector<int64_t>& at) {
  std::string s;
  for (int64_t i : at) s += (s.empty() ? "" : ",") + std::to_string(i);
  return "[" + s + "]";
}

// NaN and infinities have no JSON number: they are written as strings.
nlohmann::json number(double v) {
  if (std::isfinite(v)) return v;
  return std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf";
}

}  // namespace

void compare_values(const Tensor& candidate, const Tensor& reference, TensorComparison* c) {
  c->elements = candidate.numel();
  if (candidate.dtype() == DataType::kString || reference.dtype() == DataType::kString) {
    // Text is equal or not: every differing element counts, and the first is reported (its values
    // stay 0, as the report's numbers have no text).
    const bool both = candidate.dtype() == reference.dtype();
    for (int64_t i = 0; i < candidate.numel(); ++i)
      if (!both || candidate.data_as<std::string>()[i] != reference.data_as<std::string>()[i]) {
        if (!c->has_worst) {
          c->has_worst = true;
          c->worst_at = unravel(i, candidate.dims());
        }
        ++c->beyond;
      }
    c->status = c->beyond ? TensorComparison::Status::kMismatch : TensorComparison::Status::kMatch;
    return;
  }
  int64_t worst = -1;
  double worst_diff = -1;
  for (int64_t i = 0; i < candidate.numel(); ++i) {
    const double g = candidate.get(i), w = reference.get(i);
    if (std::isnan(g) && std::isnan(w)) continue;
    if (std::isinf(w) && g == w) continue;
    double diff = std::fabs(g - w);
    if (std::isnan(diff)) diff = INFINITY;  // NaN against a number, or opposite infinities
    if (diff > worst_diff) {
      worst_diff = diff;
      worst = i;
    }
    c->max_abs = std::max(c->max_abs, diff);
    if (w != 0) c->max_rel = std::max(c->max_rel, diff / std::fabs(w));
    if (!(diff <= c->tolerance.atol + c->tolerance.rtol * std::fabs(w))) ++c->beyond;
  }
  if (worst >= 0) {
    c->has_worst = true;
    c->worst_at = unravel(worst, candidate.dims());
    c->candidate_value = candidate.get(worst);
    c->reference_value = reference.get(worst);
  }
  c->status = c->beyond ? TensorComparison::Status::kMismatch : TensorComparison::Status::kMatch;
}

ComparisonReport compare_tensor_sets(const std::map<std::string, Tensor>& candidate,
                                     const std::map<std::string, Tensor>& reference,
                                     const std::vector<MarkedLayer>& layers, const std::vector<std::string>& order,
                                     const Tolerances& tolerances) {
  ComparisonReport r;
  r.layers = layers;
  r.tolerances = tolerances;
  // Reporting order: each layer's outputs, then the given order, then whatever either side has
  // besides (so nothing one side computed goes unmentioned).
  std::vector<std::pair<std::string, int>> names;
  std::set<std::string> seen;
  for (size_t l = 0; l < layers.size(); ++l)
    for (const std::string& o : layers[l].outputs)
      if (seen.insert(o).second) names.emplace_back(o, static_cast<int>(l));
  for (const std::string& o : order)
    if (seen.insert(o).second) names.emplace_back(o, -1);
  for (const auto* side : {&candidate, &reference})
    for (const auto& [o, _] : *side)
      if (seen.insert(o).second) names.emplace_back(o, -1);

  for (const auto& [name, layer] : names) {
    TensorComparison c;
    c.tensor = name;
    c.layer = layer;
    c.tolerance = tolerances.of(name);
    auto got = candidate.find(name);
    auto want = reference.find(name);
    if (got != candidate.end()) c.candidate_type = type_of(got->second);
    if (want != reference.end()) c.reference_type = type_of(want->second);
    if (got == candidate.end() || want == reference.end()) {
      c.reason = got == candidate.end() && want == reference.end() ? "neither side computed it"
                 : got == candidate.end()                          ? "only the reference has it"
                                                                   : "only the candidate has it";
    } else if (got->second.dims() != want->second.dims()) {
      c.status = TensorComparison::Status::kMismatch;
      c.reason = fmt::format("shapes differ: {} against {}", c.candidate_type, c.reference_type);
      c.elements = got->second.numel();
    } else {
      compare_values(got->second, want->second, &c);
    }
    switch (c.status) {
      case TensorComparison::Status::kMatch: ++r.matched; break;
      case TensorComparison::Status::kMismatch:
        ++r.mismatched;
        if (r.first_divergence < 0) r.first_divergence = static_cast<int>(r.tensors.size());
        break;
      case TensorComparison::Status::kNotCompared: ++r.not_compared; break;
    }
    r.tensors.push_back(std::move(c));
  }
  return r;
}

std::string comparison_json(const ComparisonReport& r) {
  nlohmann::json j;
  j["format"] = "graft-compare";
  j["version"] = 1;
  j["candidate"] = r.candidate;
  j["reference"] = r.reference;
  j["layerwise"] = !r.layers.empty();
  j["tolerance"] = {{"rtol", r.tolerances.fallback.rtol}, {"atol", r.tolerances.fallback.atol}};
  nlohmann::json per = nlohmann::json::object();
  for (const auto& [name, v] : r.tolerances.rtol) per[name]["rtol"] = v;
  for (const auto& [name, v] : r.tolerances.atol) per[name]["atol"] = v;
  j["tolerance"]["per_tensor"] = per;
  j["passed"] = r.passed();
  j["summary"] = {{"tensors", r.tensors.size()},
                  {"matched", r.matched},
                  {"mismatched", r.mismatched},
                  {"not_compared", r.not_compared}};
  nlohmann::json tensors = nlohmann::json::array();
  for (const TensorComparison& c : r.tensors) {
    nlohmann::json t = {{"tensor", c.tensor}, {"status", status_name(c.status)}};
    if (c.layer >= 0) {
      const MarkedLayer& l = r.layers[static_cast<size_t>(c.layer)];
      t["layer"] = l.name;
      t["op_type"] = l.op_type;
      t["layer_index"] = c.layer;
    } else {
      t["layer"] = nullptr;
    }
    t["candidate_type"] = c.candidate_type.empty() ? nlohmann::json() : nlohmann::json(c.candidate_type);
    t["reference_type"] = c.reference_type.empty() ? nlohmann::json() : nlohmann::json(c.reference_type);
    if (!c.reason.empty()) t["reason"] = c.reason;
    if (c.status != TensorComparison::Status::kNotCompared) {
      t["rtol"] = c.tolerance.rtol;
      t["atol"] = c.tolerance.atol;
      t["elements"] = c.elements;
      t["beyond_tolerance"] = c.beyond;
      t["max_abs_error"] = number(c.max_abs);
      t["max_rel_error"] = number(c.max_rel);
      if (c.has_worst) {
        t["worst_at"] = c.worst_at;
        t["candidate_value"] = number(c.candidate_value);
        t["reference_value"] = number(c.reference_value);
      }
    }
    tensors.push_back(std::move(t));
  }
  j["tensors"] = std::move(tensors);
  j["first_divergence"] = r.first_divergence < 0 ? nlohmann::json() : j["tensors"][static_cast<size_t>(r.first_divergence)];
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string describe_first_divergence(const ComparisonReport& r) {
  if (r.first_divergence < 0) return "";
  const TensorComparison& c = r.tensors[static_cast<size_t>(r.first_divergence)];
  std::string where = c.layer >= 0 ? fmt::format("layer '{}' ({}), output '{}'", r.layers[static_cast<size_t>(c.layer)].name,
                                                 r.layers[static_cast<size_t>(c.layer)].op_type, c.tensor)
                                   : fmt::format("output '{}'", c.tensor);
  if (!c.reason.empty()) return fmt::format("{}: {}", where, c.reason);
  return fmt::format("{}: {} of {} elements beyond rtol {:g}, atol {:g}; max abs error {:.6g}, max rel error {:.6g}; "
                     "at {}: {:.8g} against {:.8g}",
                     where, c.beyond, c.elements, c.tolerance.rtol, c.tolerance.atol, c.max_abs, c.max_rel,
                     index_text(c.worst_at), c.candidate_value, c.reference_value);
}

std::string format_comparison(const ComparisonReport& r) {
  std::string s = fmt::format("comparing {}\n     with {}\n", r.candidate, r.reference);
  const bool layerwise = !r.layers.empty();
  s += layerwise ? fmt::format("{:>4}  {:<28} {:<16} {:<28}", "#", "layer", "op", "tensor")
                 : fmt::format("{:<28}", "output");
  s += fmt::format(" {:>12} {:>12} {:>14}  {}\n", "max abs", "max rel", "beyond tol", "result");
  auto cut = [](const std::string& t, size_t w) { return t.size() <= w ? t : t.substr(0, w - 3) + "..."; };
  for (const TensorComparison& c : r.tensors) {
    if (layerwise) {
      if (c.layer >= 0) {
        const MarkedLayer& l = r.layers[static_cast<size_t>(c.layer)];
        s += fmt::format("{:>4}  {:<28} {:<16} {:<28}", c.layer, cut(l.name, 28), cut(l.op_type, 16), cut(c.tensor, 28));
      } else {
        s += fmt::format("{:>4}  {:<28} {:<16} {:<28}", "-", "(no layer)", "", cut(c.tensor, 28));
      }
    } else {
      s += fmt::format("{:<28}", cut(c.tensor, 28));
    }
    if (c.status == TensorComparison::Status::kNotCompared) {
      s += fmt::format(" {:>12} {:>12} {:>14}  not compared: {}\n", "-", "-", "-", c.reason);
      continue;
    }
    s += fmt::format(" {:>12.4g} {:>12.4g} {:>14}  {}{}\n", c.max_abs, c.max_rel,
                     fmt::format("{}/{}", c.beyond, c.elements),
                     c.status == TensorComparison::Status::kMatch ? "ok" : "MISMATCH",
                     c.reason.empty() ? "" : ": " + c.reason);
  }
  s += fmt::format("summary: {} tensors, {} match, {} mismatch, {} not compared\n", r.tensors.size(), r.matched,
                   r.mismatched, r.not_compared);
  if (r.first_divergence >= 0)
    s += "first divergence: " + describe_first_divergence(r) + "\n";
  else
    s += r.matched ? "every compared tensor is within tolerance\n" : "nothing was compared\n";
  return s;
}

}  // namespace graft
