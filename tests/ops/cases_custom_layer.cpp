// Cases for CustomLayer: y = x * sigmoid(beta * x).
#include <cmath>

#include "harness.h"

namespace graft::optest {

OpCaseTable custom_layer_cases() {
  OpCaseTable t;
  t.name = "CustomLayer";
  auto with_beta = [](float beta) {
    AttributeMap a;
    a.set("beta", beta);
    return a;
  };
  auto make = [](std::string label, std::vector<int64_t> dims, double lo, double hi, AttributeMap attrs) {
    OpCase c;
    c.label = std::move(label);
    c.inputs = {CaseInput{dims, lo, hi}};
    c.attrs = std::move(attrs);
    c.output_dims = {dims};
    return c;
  };
  // Odd sizes leave a tail after the 16-byte packs of the CUDA kernel.
  t.cases.push_back(make("default_beta_4d", {2, 3, 5, 7}, -4.0, 4.0, AttributeMap()));
  t.cases.push_back(make("beta_1_7_vector", {1031}, -6.0, 6.0, with_beta(1.7f)));
  t.cases.push_back(make("negative_beta", {4, 33}, -3.0, 3.0, with_beta(-0.6f)));
  t.cases.push_back(make("scalar", {}, -2.0, 2.0, with_beta(2.0f)));
  {
    // Saturated gates: large |beta x| must not produce NaN or inf.
    OpCase c = make("saturated", {3, 64}, -30.0, 30.0, with_beta(50.0f));
    c.fd_tolerance = 1e-5;  // the gate is steep: finite differences are less exact
    t.cases.push_back(c);
  }
  t.cases.push_back(make("large_1d", {65536 + 5}, -4.0, 4.0, with_beta(1.0f)));

  {
    BadAttributeCase b;
    b.label = "integer_beta_out_of_range";  // ints convert to float, then the range applies
    b.attrs.set("beta", int64_t{100000});
    b.attribute = "beta";
    t.bad_attributes.push_back(b);
  }

  t.reference = [](const std::vector<std::vector<double>>& in, const std::vector<std::vector<int64_t>>&,
                   const AttributeMap& attrs) {
    const double beta = attrs.get_float("beta", 1.0f).value();
    std::vector<double> y;
    for (double x : in[0]) y.push_back(x / (1.0 + std::exp(-beta * x)));
    return std::vector<std::vector<double>>{y};
  };
  return t;
}

std::vector<OpCaseTable> custom_layer_case_tables() { return {custom_layer_cases()}; }

}  // namespace graft::optest
