// Cases for the ONNX data-movement ops (opset 17; shape-like operands are int64 inputs with fixed
// values): Transpose, Concat, Slice, Gather, Tile, Pad, Expand, Reshape, Flatten, Squeeze, Unsqueeze,
// Split and Where. Each independent formula says, for every output element, which input element it
// is (or the padding value), from row-major coordinates.
#include <functional>
#include <string>
#include <utility>

#include "case_util.h"
#include "harness.h"

namespace graft::optest {

namespace {

Ints coords_of(int64_t i, const Ints& d) {
  Ints c(d.size());
  for (size_t k = d.size(); k-- > 0;) {
    c[k] = i % d[k];
    i /= d[k];
  }
  return c;
}

int64_t flat_of(const Ints& c, const Ints& d) {
  int64_t i = 0;
  for (size_t k = 0; k < d.size(); ++k) i = i * d[k] + c[k];
  return i;
}

// Output element values from a function of the output coordinates.
std::vector<double> gather_each(const Ints& out, const std::function<double(const Ints&)>& at) {
  std::vector<double> y(static_cast<size_t>(count(out)));
  for (int64_t i = 0; i < count(out); ++i) y[static_cast<size_t>(i)] = at(coords_of(i, out));
  return y;
}

OpCaseTable shape_table(std::string name, ReferenceFn f) { return builtin_table(std::move(name), std::move(f)); }

OpCaseTable transpose_cases() {
  OpCaseTable t = shape_table("Transpose", [](const Values& in, const DimsList& dims, const AttributeMap& a) {
    const Ints perm = a.get_ints("perm", {}).value();
    Ints out;
    for (int64_t p : perm) out.push_back(dims[0][p]);
    return Values{gather_each(out, [&](const Ints& c) {
      Ints src(c.size());
      for (size_t k = 0; k < c.size(); ++k) src[perm[k]] = c[k];
      return in[0][flat_of(src, dims[0])];
    })};
  });
  t.cases.push_back(make_case("nchw_to_nhwc", {data({2, 3, 4, 5})}, {{2, 4, 5, 3}}, attr("perm", Ints{0, 2, 3, 1})));
  t.cases.push_back(make_case("matrix", {data({33, 17})}, {{17, 33}}, attr("perm", Ints{1, 0})));
  t.cases.push_back(make_case("head_split", {data({2, 7, 3, 8})}, {{2, 3, 7, 8}}, attr("perm", Ints{0, 2, 1, 3})));
  t.cases.push_back(make_case("reverse_rank5", {data({2, 3, 2, 4, 3})}, {{3, 4, 2, 3, 2}}, attr("perm", Ints{4, 3, 2, 1, 0})));
  return t;
}

OpCaseTable concat_cases() {
  OpCaseTable t = shape_table("Concat", [](const Values& in, const DimsList& dims, const AttributeMap& a) {
    const int64_t axis = axis_in(a.get_int("axis", 0).value(), dims[0].size());
    Ints out = dims[0];
    out[axis] = 0;
    for (const auto& d : dims) out[axis] += d[axis];
    return Values{gather_each(out, [&](const Ints& c) {
      Ints src = c;
      for (size_t k = 0; k < dims.size(); ++k) {
        if (src[axis] < dims[k][axis]) return in[k][flat_of(src, dims[k])];
        src[axis] -= dims[k][axis];
      }
      return 0.0;
    })};
  });
  t.cases.push_back(make_case("channels", {data({2, 3, 4}), data({2, 5, 4}), data({2, 1, 4})}, {{2, 9, 4}}, attr("axis", int64_t{1})));
  t.cases.push_back(make_case("last_axis", {data({3, 2}), data({3, 7})}, {{3, 9}}, attr("axis", int64_t{-1})));
  t.cases.push_back(make_case("first_axis", {data({1, 4, 2}), data({3, 4, 2})}, {{4, 4, 2}}, attr("axis", int64_t{0})));
  return t;
}

OpCaseTable slice_cases() {
  // Inputs: data, starts, ends, axes, steps (every one given).
  OpCaseTable t = shape_table("Slice", [](const Values& in, const DimsList& dims, const AttributeMap&) {
    const Ints& d = dims[0];
    Ints start(d.size(), 0), step(d.size(), 1), out = d;
    for (size_t j = 0; j < in[1].size(); ++j) {
      const int64_t axis = axis_in(static_cast<int64_t>(in[3][j]), d.size());
      const int64_t s = static_cast<int64_t>(in[4][j]), n = d[axis];
      int64_t b = static_cast<int64_t>(in[1][j]), e = static_cast<int64_t>(in[2][j]);
      if (b < 0) b += n;
      if (e < 0) e += n;
      if (s > 0) {
        b = std::clamp<int64_t>(b, 0, n);
        e = std::clamp<int64_t>(e, 0, n);
        out[axis] = std::max<int64_t>(0, (e - b + s - 1) / s);
      } else {
        b = std::clamp<int64_t>(b, 0, n - 1);
        e = std::clamp<int64_t>(e, -1, n - 1);
        out[axis] = std::max<int64_t>(0, (b - e - s - 1) / -s);
      }
      start[axis] = b;
      step[axis] = s;
    }
    return Values{gather_each(out, [&](const Ints& c) {
      Ints src(c.size());
      for (size_t k = 0; k < c.size(); ++k) src[k] = start[k] + c[k] * step[k];
      return in[0][flat_of(src, d)];
    })};
  });
  auto slice = [](std::string label, Ints dims, Ints starts, Ints ends, Ints axes, Ints steps, Ints out) {
    return make_case(std::move(label),
                      {data(std::move(dims)), int64_values(starts), int64_values(ends), int64_values(axes), int64_values(steps)},
                      {std::move(out)});
  };
  t.cases.push_back(slice("crop_two_axes", {2, 6, 8}, {1, 2}, {5, 7}, {1, 2}, {1, 1}, {2, 4, 5}));
  t.cases.push_back(slice("strided", {3, 10}, {1}, {10}, {1}, {3}, {3, 3}));
  t.cases.push_back(slice("negative_step", {4, 7}, {-1, 5}, {-100, 0}, {0, 1}, {-1, -2}, {4, 3}));
  t.cases.push_back(slice("past_the_end", {5, 4}, {-3}, {1000}, {0}, {1}, {3, 4}));
  return t;
}

OpCaseTable gather_cases() {
  OpCaseTable t = shape_table("Gather", [](const Values& in, const DimsList& dims, const AttributeMap& a) {
    const Ints& d = dims[0];
    const int64_t axis = axis_in(a.get_int("axis", 0).value(), d.size());
    Ints out(d.begin(), d.begin() + axis);
    out.insert(out.end(), dims[1].begin(), dims[1].end());
    out.insert(out.end(), d.begin() + axis + 1, d.end());
    const size_t q = dims[1].size();
    return Values{gather_each(out, [&](const Ints& c) {
      Ints ic(c.begin() + axis, c.begin() + axis + static_cast<int64_t>(q));
      int64_t idx = static_cast<int64_t>(in[1][flat_of(ic, dims[1])]);
      if (idx < 0) idx += d[axis];
      Ints src(c.begin(), c.begin() + axis);
      src.push_back(idx);
      src.insert(src.end(), c.begin() + axis + static_cast<int64_t>(q), c.end());
      return in[0][flat_of(src, d)];
    })};
  });
  auto indices = [](Ints dims, int64_t extent) {
    CaseInput in{std::move(dims), static_cast<double>(-extent), static_cast<double>(extent - 1)};
    in.dtype = DataType::kInt64;  // negative indices count from the end
    return in;
  };
  t.cases.push_back(make_case("embedding_rows", {data({11, 6}), indices({2, 5}, 11)}, {{2, 5, 6}}, attr("axis", int64_t{0})));
  t.cases.push_back(make_case("middle_axis", {data({2, 7, 3}), indices({4}, 7)}, {{2, 4, 3}}, attr("axis", int64_t{1})));
  t.cases.push_back(make_case("scalar_index", {data({3, 5}), indices({}, 5)}, {{3}}, attr("axis", int64_t{-1})));
  return t;
}

OpCaseTable tile_cases() {
  OpCaseTable t = shape_table("Tile", [](const Values& in, const DimsList& dims, const AttributeMap&) {
    Ints out = dims[0];
    for (size_t k = 0; k < out.size(); ++k) out[k] *= static_cast<int64_t>(in[1][k]);
    return Values{gather_each(out, [&](const Ints& c) {
      Ints src(c.size());
      for (size_t k = 0; k < c.size(); ++k) src[k] = c[k] % dims[0][k];
      return in[0][flat_of(src, dims[0])];
    })};
  });
  t.cases.push_back(make_case("rows_and_columns", {data({2, 3}), int64_values({3, 2})}, {{6, 6}}));
  t.cases.push_back(make_case("one_axis", {data({2, 3, 4}), int64_values({1, 4, 1})}, {{2, 12, 4}}));
  return t;
}

OpCaseTable pad_cases() {
  // Inputs: data, pads (begins then ends), constant value; attribute mode.
  OpCaseTable t = shape_table("Pad", [](const Values& in, const DimsList& dims, const AttributeMap& a) {
    const Ints& d = dims[0];
    const std::string mode = a.get_string("mode", "constant").value();
    const size_t r = d.size();
    Ints out = d;
    for (size_t k = 0; k < r; ++k) out[k] += static_cast<int64_t>(in[1][k] + in[1][r + k]);
    const double value = in.size() > 2 && !in[2].empty() ? in[2][0] : 0.0;
    return Values{gather_each(out, [&](const Ints& c) {
      Ints src(r);
      for (size_t k = 0; k < r; ++k) {
        int64_t v = c[k] - static_cast<int64_t>(in[1][k]);
        const int64_t n = d[k];
        if (v < 0 || v >= n) {
          if (mode == "constant") return value;
          if (mode == "edge") v = std::clamp<int64_t>(v, 0, n - 1);
          if (mode == "reflect") v = v < 0 ? -v : 2 * (n - 1) - v;  // the cases pad less than n - 1
          if (mode == "wrap") v = v < 0 ? v + n : v - n;              // and less than n
        }
        src[k] = v;
      }
      return in[0][flat_of(src, d)];
    })};
  });
  auto mode = [](const char* m) {
    AttributeMap a;
    a.set("mode", std::string(m));
    return a;
  };
  CaseInput fill{{}, 0.5, 1.5};
  t.cases.push_back(make_case("constant_value", {data({2, 3, 4}), int64_values({0, 1, 2, 0, 2, 1}), fill}, {{2, 6, 7}},
                               mode("constant")));
  t.cases.push_back(make_case("reflect", {data({1, 2, 5, 6}), int64_values({0, 0, 2, 1, 0, 0, 1, 3})}, {{1, 2, 8, 10}},
                               mode("reflect")));
  t.cases.push_back(make_case("edge", {data({3, 4}), int64_values({2, 0, 1, 3})}, {{6, 7}}, mode("edge")));
  t.cases.push_back(make_case("wrap", {data({2, 3, 5}), int64_values({1, 2, 4, 0, 1, 3})}, {{3, 6, 12}}, mode("wrap")));
  // Negative pads crop one side of an axis while the other side is reflected.
  t.cases.push_back(make_case("reflect_crop", {data({2, 6, 5}), int64_values({0, -2, 3, 0, 2, -1})}, {{2, 6, 7}},
                               mode("reflect")));
  return t;
}

// Ops whose output is the input's elements in order (Reshape, Flatten, Squeeze, Unsqueeze).
OpCaseTable same_elements_table(const char* name) {
  return shape_table(name, [](const Values& in, const DimsList&, const AttributeMap&) { return Values{in[0]}; });
}

OpCaseTable reshape_cases() {
  OpCaseTable t = same_elements_table("Reshape");
  t.cases.push_back(make_case("infer_one_axis", {data({2, 3, 4}), int64_values({4, -1})}, {{4, 6}}));
  t.cases.push_back(make_case("copy_axis", {data({2, 3, 4}), int64_values({0, 12})}, {{2, 12}}));
  return t;
}

OpCaseTable flatten_cases() {
  OpCaseTable t = same_elements_table("Flatten");
  t.cases.push_back(make_case("axis2", {data({2, 3, 4, 5})}, {{6, 20}}, attr("axis", int64_t{2})));
  t.cases.push_back(make_case("axis0", {data({2, 3})}, {{1, 6}}, attr("axis", int64_t{0})));
  return t;
}

OpCaseTable squeeze_cases() {
  OpCaseTable t = same_elements_table("Squeeze");
  t.cases.push_back(make_case("given_axes", {data({1, 3, 1, 4}), int64_values({0, -2})}, {{3, 4}}));
  return t;
}

OpCaseTable unsqueeze_cases() {
  OpCaseTable t = same_elements_table("Unsqueeze");
  t.cases.push_back(make_case("two_axes", {data({3, 4}), int64_values({0, 3})}, {{1, 3, 4, 1}}));
  return t;
}

OpCaseTable expand_cases() {
  OpCaseTable t = shape_table("Expand", [](const Values& in, const DimsList& dims, const AttributeMap&) {
    Ints shape;
    for (double v : in[1]) shape.push_back(static_cast<int64_t>(v));
    return Values{broadcast_apply({in[0], std::vector<double>(static_cast<size_t>(count(shape)))}, {dims[0], shape},
                                  [](const std::vector<double>& v) { return v[0]; })};
  });
  t.cases.push_back(make_case("rows", {data({3, 1}), int64_values({3, 5})}, {{3, 5}}));
  t.cases.push_back(make_case("new_leading_axes", {data({1, 4}), int64_values({2, 3, 4})}, {{2, 3, 4}}));
  return t;
}

OpCaseTable split_cases() {
  OpCaseTable t = shape_table("Split", [](const Values& in, const DimsList& dims, const AttributeMap& a) {
    const int64_t axis = axis_in(a.get_int("axis", 0).value(), dims[0].size());
    Values outs;
    int64_t offset = 0;
    for (double part : in[1]) {
      Ints out = dims[0];
      out[axis] = static_cast<int64_t>(part);
      outs.push_back(gather_each(out, [&](const Ints& c) {
        Ints src = c;
        src[axis] += offset;
        return in[0][flat_of(src, dims[0])];
      }));
      offset += out[axis];
    }
    return outs;
  });
  t.cases.push_back(make_case("three_parts", {data({2, 9, 3}), int64_values({2, 3, 4})}, {{2, 2, 3}, {2, 3, 3}, {2, 4, 3}},
                               attr("axis", int64_t{1})));
  t.cases.push_back(make_case("last_axis", {data({4, 6}), int64_values({5, 1})}, {{4, 5}, {4, 1}}, attr("axis", int64_t{-1})));
  return t;
}

// Constant: the one value its attribute holds (no inputs; host-side, no CUDA kernel).
OpCaseTable constant_cases() {
  OpCaseTable t = builtin_table("Constant", [](const Values&, const DimsList&, const AttributeMap& a) {
    if (auto v = a.get_tensor("value"); v.is_ok()) {
      std::vector<double> y;
      for (int64_t i = 0; i < v->numel(); ++i) y.push_back(v->get(i));
      return Values{y};
    }
    if (a.has("value_float")) return Values{{a.get_float("value_float", 0.0f).value()}};
    if (a.has("value_int")) return Values{{static_cast<double>(a.get_int("value_int", 0).value())}};
    if (a.has("value_floats")) {
      const std::vector<float> f = a.get_floats("value_floats", {}).value();
      return Values{std::vector<double>(f.begin(), f.end())};
    }
    const Ints v = a.get_ints("value_ints", {}).value();
    return Values{std::vector<double>(v.begin(), v.end())};
  }, 13);
  t.cuda_dtypes = {};
  Tensor v = Tensor::empty(DataType::kFloat32, {2, 3});
  for (int64_t i = 0; i < 6; ++i) v.set(i, 0.37 * static_cast<double>(i * i) - 1.1);
  t.cases.push_back(make_case("float_tensor", {}, {{2, 3}}, attr("value", v)));
  t.cases.push_back(make_case("value_float", {}, {{}}, attr("value_float", -2.75f)));
  t.cases.push_back(make_case("value_floats", {}, {{3}}, attr("value_floats", std::vector<float>{1.5f, -0.25f, 8.0f})));
  t.cases.push_back(make_case("value_int", {}, {{}}, attr("value_int", int64_t{-9})));
  t.cases.push_back(make_case("value_ints", {}, {{4}}, attr("value_ints", Ints{3, -1, 7, 1LL << 40})));
  AttributeMap two;
  two.set("value_int", int64_t{1});
  two.set("value_float", 1.0f);
  t.bad_attributes.push_back({"two_values", two, {}, "value"});
  return t;
}

OpCaseTable where_cases() {
  OpCaseTable t = shape_table("Where", [](const Values& in, const DimsList& dims, const AttributeMap&) {
    return Values{broadcast_apply(in, dims, [](const std::vector<double>& v) { return v[0] != 0 ? v[1] : v[2]; })};
  });
  auto cond = [](Ints dims) {
    CaseInput c{std::move(dims), 0, 1};
    c.dtype = DataType::kBool;
    return c;
  };
  t.cases.push_back(make_case("same_shape", {cond({3, 5}), data({3, 5}), data({3, 5})}, {{3, 5}}));
  t.cases.push_back(make_case("broadcast", {cond({2, 1, 4}), data({3, 1}), data({4})}, {{2, 3, 4}}));
  return t;
}

}  // namespace

std::vector<OpCaseTable> shape_case_tables() {
  std::vector<OpCaseTable> out = {transpose_cases(), concat_cases(), slice_cases(),     gather_cases(),
                                  tile_cases(),      pad_cases(),    reshape_cases(),   flatten_cases(),
                                  squeeze_cases(),   unsqueeze_cases(), expand_cases(), split_cases(),
                                  where_cases(),     constant_cases()};
  return out;
}

}  // namespace graft::optest
