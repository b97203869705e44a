// See random_outputs.h.
#include "tests/conformance/random_outputs.h"

#include <cmath>
#include <set>

#include <fmt/format.h>

namespace graft::conformance {
namespace {

const std::set<std::string> kRandomOps = {"RandomUniform", "RandomNormal", "RandomUniformLike",
                                          "RandomNormalLike", "Bernoulli", "Multinomial"};

float float_attr(const onnx::NodeProto& n, const std::string& name, float def) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return a.f();
  return def;
}

const Tensor* value_of(const std::map<std::string, Tensor>& values, const onnx::NodeProto& n, int i) {
  if (i >= n.input_size() || n.input(i).empty()) return nullptr;
  auto it = values.find(n.input(i));
  return it == values.end() ? nullptr : &it->second;
}

// Dropout's ratio when the node draws a mask (training_mode true, ratio > 0); nullopt when it is
// the identity. A training_mode or ratio whose value is not in `values` counts as random.
std::optional<double> dropout_ratio(const onnx::NodeProto& n, const std::map<std::string, Tensor>& values) {
  if (n.input_size() < 3 || n.input(2).empty()) return std::nullopt;
  const Tensor* t = value_of(values, n, 2);
  if (t && t->numel() == 1 && t->get(0) == 0) return std::nullopt;
  const Tensor* r = value_of(values, n, 1);
  const double ratio = n.input_size() < 2 || n.input(1).empty() ? 0.5 : r && r->numel() == 1 ? r->get(0) : NAN;
  if (ratio == 0) return std::nullopt;
  return ratio;
}

bool is_random(const onnx::NodeProto& n, const std::map<std::string, Tensor>& values) {
  if (!n.domain().empty() && n.domain() != "ai.onnx") return false;
  return kRandomOps.count(n.op_type()) || (n.op_type() == "Dropout" && dropout_ratio(n, values));
}

std::string first_bad(const Tensor& got, const std::string& name, const std::string& rule, bool (*ok)(double, const void*),
                      const void* arg) {
  for (int64_t i = 0; i < got.numel(); ++i)
    if (!ok(got.get(i), arg))
      return fmt::format("output '{}' (random: {}): element {} is {:.9g}", name, rule, i, got.get(i));
  return "";
}

}  // namespace

std::optional<std::string> check_random_output(const onnx::GraphProto& graph, const std::string& name,
                                               const Tensor& got, const Tensor& want,
                                               const std::map<std::string, Tensor>& values, double rtol, double atol) {
  // Which values depend on a random draw, in node order (ONNX graphs are topologically sorted).
  std::set<std::string> tainted;
  std::map<std::string, const onnx::NodeProto*> producer;
  for (const auto& n : graph.node()) {
    bool t = is_random(n, values);
    for (const auto& in : n.input()) t = t || tainted.count(in);
    for (const auto& out : n.output()) {
      producer[out] = &n;
      if (t) tainted.insert(out);
    }
  }
  if (!tainted.count(name)) return std::nullopt;
  if (got.dtype() != want.dtype() || got.dims() != want.dims())
    return fmt::format("output '{}' is {} but the reference is {}", name, desc_of_value(got).to_string(),
                       desc_of_value(want).to_string());
  const onnx::NodeProto& p = *producer.at(name);
  auto from_random = [&](int i) {
    auto it = i < p.input_size() ? producer.find(p.input(i)) : producer.end();
    return it != producer.end() && kRandomOps.count(it->second->op_type());
  };
  auto binary = [](double v, const void*) { return v == 0 || v == 1; };
  const bool expanded_bernoulli = p.op_type() == "Cast" && p.input_size() == 1 && [&] {
    auto it = producer.find(p.input(0));
    if (it == producer.end()) return false;
    const onnx::NodeProto& cmp = *it->second;
    if (cmp.op_type() != "Greater" && cmp.op_type() != "Less") return false;
    for (const auto& in : cmp.input()) {
      auto src = producer.find(in);
      if (src != producer.end() &&
          (src->second->op_type() == "RandomUniformLike" || src->second->op_type() == "RandomUniform"))
        return true;
    }
    return false;
  }();
  if (p.op_type() == "Bernoulli" || expanded_bernoulli) return first_bad(got, name, "0 or 1", binary, nullptr);
  if (p.op_type() == "RandomUniform" || p.op_type() == "RandomUniformLike") {
    const std::pair<double, double> lh{float_attr(p, "low", 0.0f), float_attr(p, "high", 1.0f)};
    return first_bad(got, name, fmt::format("in [{}, {})", lh.first, lh.second),
                     [](double v, const void* a) {
                       const auto& b = *static_cast<const std::pair<double, double>*>(a);
                       return (v >= b.first && v < b.second) || (b.first == b.second && v == b.first);
                     },
                     &lh);
  }
  if (p.op_type() == "RandomNormal" || p.op_type() == "RandomNormalLike")
    return first_bad(got, name, "finite", [](double v, const void*) { return std::isfinite(v); }, nullptr);
  if (p.op_type() == "Multinomial") {
    const Tensor* x = value_of(values, p, 0);
    if (!x || x->rank() != 2) return fmt::format("output '{}' (random: Multinomial): its input's shape is unknown", name);
    const double classes = static_cast<double>(x->dims()[1]);
    return first_bad(got, name, fmt::format("a class index in [0, {})", classes),
                     [](double v, const void* c) { return v >= 0 && v < *static_cast<const double*>(c) && v == std::floor(v); },
                     &classes);
  }
  if (p.op_type() == "Dropout" && !from_random(0)) {
    const auto ratio = dropout_ratio(p, values);
    const Tensor* x = value_of(values, p, 0);
    if (!ratio || std::isnan(*ratio) || !x)
      return fmt::format("output '{}' (random: Dropout): its input or ratio is not a data-set input or initializer", name);
    auto y_it = p.output_size() > 0 ? values.find(p.output(0)) : values.end();
    auto m_it = p.output_size() > 1 && !p.output(1).empty() ? values.find(p.output(1)) : values.end();
    const Tensor* y = name == p.output(0) ? &got : y_it != values.end() ? &y_it->second : nullptr;
    const Tensor* mask = p.output_size() > 1 && name == p.output(1) ? &got : m_it != values.end() ? &m_it->second : nullptr;
    const double scale = 1.0 / (1.0 - *ratio);
    for (int64_t i = 0; i < x->numel(); ++i) {
      const double kept = x->get(i) * scale;
      const bool y_zero = y && y->get(i) == 0;
      const bool y_kept = y && std::fabs(y->get(i) - kept) <= atol + rtol * std::fabs(kept);
      if (y && !y_zero && !y_kept)
        return fmt::format("output '{}' (random: Dropout at ratio {}): element {} is {:.9g}, neither 0 nor x / (1 - ratio) = {:.9g}",
                           name, *ratio, i, y->get(i), kept);
      if (mask) {
        const double m = mask->get(i);
        if (m != 0 && m != 1)
          return fmt::format("output '{}' (random: Dropout mask): element {} is {:.9g}", name, i, m);
        if (y && ((m == 1 && !y_kept) || (m == 0 && !y_zero)))
          return fmt::format("output '{}' (random: Dropout at ratio {}): element {}: mask {} but output {:.9g} (x = {:.9g})",
                             name, *ratio, i, m, y->get(i), x->get(i));
      }
    }
    return "";
  }
  return fmt::format("output '{}' is computed from a random op by {} ('{}'), which the runner's random-output rule does "
                     "not cover (tests/conformance/random_outputs.h)",
                     name, p.op_type(), p.name());
}

}  // namespace graft::conformance
