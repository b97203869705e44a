// CPU references of Unique (src/ops/data_dependent), MaxUnpool (src/ops/unpool) and Celu
// (src/ops/elementwise) against naive computations written here, on fresh random data each
// run (the seed is in the failure trace). Nodes run through the runtime's executor (run_node_cpu),
// so Unique's kernel-allocated outputs and the errors' node names are exercised as in an engine.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "op_test_util.h"
#include "ops/operator.h"
#include "runtime/cpu_executor.h"

namespace graft::testing {
namespace {

constexpr DataType kF32 = DataType::kFloat32;
constexpr DataType kI64 = DataType::kInt64;

// One node fed by graph inputs (not constants), run with run_node_cpu; an empty output name omits
// that output.
struct SelNode {
  Graph graph;
  Node* node = nullptr;
  SelNode(const std::string& op, const std::vector<Tensor>& in, const std::vector<bool>& outs,
          AttributeMap attrs, int opset) {
    node = graph.add_node("sel_" + op, op);
    node->opset = opset;
    node->attrs = std::move(attrs);
    for (size_t i = 0; i < in.size(); ++i) {
      if (!in[i].defined()) {
        node->inputs.push_back(nullptr);
        continue;
      }
      Value* v = graph.add_value("in" + std::to_string(i));
      v->desc = TensorDesc(in[i].dtype(), shape_from_values(in[i].dims()));
      node->inputs.push_back(v);
    }
    for (size_t o = 0; o < outs.size(); ++o) {
      if (!outs[o]) {
        node->outputs.push_back(nullptr);
        continue;
      }
      Value* v = graph.add_value("out" + std::to_string(o));
      v->producer = node;
      node->outputs.push_back(v);
    }
  }
  Result<std::vector<Tensor>> run(const std::vector<Tensor>& in) {
    std::vector<const Tensor*> p;
    for (const Tensor& t : in) p.push_back(t.defined() ? &t : nullptr);
    return run_node_cpu(*node, p);
  }
};

Result<std::vector<Tensor>> run_sel(const std::string& op, const std::vector<Tensor>& in, AttributeMap attrs,
                                    size_t n_out = 1, int opset = 17) {
  SelNode n(op, in, std::vector<bool>(n_out, true), std::move(attrs), opset);
  return n.run(in);
}

std::vector<int64_t> i64s(const Tensor& t) {
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  if (!v.empty()) std::memcpy(v.data(), t.data(), v.size() * sizeof(int64_t));
  return v;
}

void expect_error_mentions(const Status& st, const std::vector<std::string>& parts) {
  ASSERT_FALSE(st.is_ok());
  const std::string s = st.to_string();
  for (const std::string& p : parts) EXPECT_NE(s.find(p), std::string::npos) << "'" << p << "' not in: " << s;
}

// ---- Unique: naive reference ----------------------------------------------------------------------

// The "items" Unique compares: each element (flattened) or each slice along the axis, as a vector of
// keys in row-major order of the other axes. NaN keys are mapped to +inf + 1 stand-ins by the
// comparison below, never compared with ==.
template <typename K>
struct NaiveUnique {
  std::vector<std::vector<K>> y;  // the distinct items, in output order
  std::vector<int64_t> indices, inverse, counts;
};

template <typename K>
bool key_eq(K a, K b) {
  if constexpr (std::is_floating_point_v<K>)
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b;
}
template <typename K>
bool key_lt(K a, K b) {  // NaN last
  if constexpr (std::is_floating_point_v<K>) {
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
  }
  return a < b;
}

template <typename K>
NaiveUnique<K> naive_unique(const std::vector<std::vector<K>>& items, bool sorted) {
  auto same = [](const std::vector<K>& a, const std::vector<K>& b) {
    for (size_t k = 0; k < a.size(); ++k)
      if (!key_eq(a[k], b[k])) return false;
    return true;
  };
  auto less = [](const std::vector<K>& a, const std::vector<K>& b) {
    for (size_t k = 0; k < a.size(); ++k) {
      if (key_lt(a[k], b[k])) return true;
      if (key_lt(b[k], a[k])) return false;
    }
    return false;
  };
  // Distinct items in order of first occurrence, by a quadratic scan.
  NaiveUnique<K> r;
  for (size_t i = 0; i < items.size(); ++i) {
    bool seen = false;
    for (const auto& y : r.y) seen = seen || same(y, items[i]);
    if (!seen) {
      r.y.push_back(items[i]);
      r.indices.push_back(static_cast<int64_t>(i));
    }
  }
  if (sorted) {  // selection sort, carrying the first-occurrence index along
    for (size_t a = 0; a < r.y.size(); ++a)
      for (size_t b = a + 1; b < r.y.size(); ++b)
        if (less(r.y[b], r.y[a])) {
          std::swap(r.y[a], r.y[b]);
          std::swap(r.indices[a], r.indices[b]);
        }
  }
  r.counts.assign(r.y.size(), 0);
  for (const auto& it : items)
    for (size_t p = 0; p < r.y.size(); ++p)
      if (same(r.y[p], it)) {
        r.inverse.push_back(static_cast<int64_t>(p));
        ++r.counts[p];
        break;
      }
  return r;
}

// Items of x (dims `dims`, values `v`) along `axis` (nullopt: every element).
template <typename K>
std::vector<std::vector<K>> items_of(const std::vector<K>& v, const std::vector<int64_t>& dims,
                                     std::optional<int64_t> axis) {
  std::vector<std::vector<K>> items;
  if (!axis) {
    for (K k : v) items.push_back({k});
    return items;
  }
  int64_t outer = 1, inner = 1;
  const int64_t n = dims[static_cast<size_t>(*axis)];
  for (int64_t d = 0; d < *axis; ++d) outer *= dims[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(*axis) + 1; d < dims.size(); ++d) inner *= dims[d];
  for (int64_t j = 0; j < n; ++j) {
    std::vector<K> s;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) s.push_back(v[static_cast<size_t>((o * n + j) * inner + i)]);
    items.push_back(s);
  }
  return items;
}

// Y rebuilt from the naive items: slice p of Y along the axis is item p.
std::vector<double> y_from_items(const std::vector<std::vector<double>>& y, const std::vector<int64_t>& dims,
                                 std::optional<int64_t> axis) {
  if (!axis) {
    std::vector<double> out;
    for (const auto& it : y) out.push_back(it[0]);
    return out;
  }
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < *axis; ++d) outer *= dims[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(*axis) + 1; d < dims.size(); ++d) inner *= dims[d];
  const int64_t u = static_cast<int64_t>(y.size());
  std::vector<double> out(static_cast<size_t>(outer * u * inner));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t p = 0; p < u; ++p)
      for (int64_t i = 0; i < inner; ++i)
        out[static_cast<size_t>((o * u + p) * inner + i)] =
            y[static_cast<size_t>(p)][static_cast<size_t>(o * inner + i)];
  return out;
}

TEST(SelectionUnique, EveryAttributeCombinationMatchesNaive) {
  const uint32_t seed = std::random_device{}();
  std::mt19937 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  const std::vector<std::vector<int64_t>> shapes = {{17}, {4, 6}, {3, 5, 2}, {2, 3, 2, 3}, {1, 7}};
  for (const auto& dims : shapes)
    for (int sorted = -1; sorted <= 1; ++sorted) {  // -1: attribute absent (default 1)
      std::vector<std::optional<int64_t>> axes = {std::nullopt};
      for (int64_t a = -static_cast<int64_t>(dims.size()); a < static_cast<int64_t>(dims.size()); ++a)
        axes.push_back(a);
      for (const auto& axis : axes) {
        SCOPED_TRACE("dims " + std::to_string(dims.size()) + "-D sorted " + std::to_string(sorted) +
                     " axis " + (axis ? std::to_string(*axis) : std::string("none")));
        // Few distinct values, so elements repeat; along an axis, rows are copied so slices repeat.
        Tensor x = Tensor::empty(kF32, dims);
        std::uniform_int_distribution<int> val(-3, 3);
        for (int64_t i = 0; i < x.numel(); ++i) x.set(i, val(rng) * 0.5);
        const int64_t naxis = axis ? (*axis < 0 ? *axis + static_cast<int64_t>(dims.size()) : *axis) : 0;
        if (axis && dims[static_cast<size_t>(naxis)] > 2) {
          // Copy slice 0 over a random later slice.
          std::uniform_int_distribution<int64_t> pick(1, dims[static_cast<size_t>(naxis)] - 1);
          const int64_t dst = pick(rng);
          int64_t outer = 1, inner = 1, n = dims[static_cast<size_t>(naxis)];
          for (int64_t d = 0; d < naxis; ++d) outer *= dims[static_cast<size_t>(d)];
          for (size_t d = static_cast<size_t>(naxis) + 1; d < dims.size(); ++d) inner *= dims[d];
          for (int64_t o = 0; o < outer; ++o)
            for (int64_t i = 0; i < inner; ++i) x.set((o * n + dst) * inner + i, x.get((o * n) * inner + i));
        }
        AttributeMap attrs;
        if (sorted >= 0) attrs.set("sorted", int64_t{sorted});
        if (axis) attrs.set("axis", *axis);
        auto r = run_sel("Unique", {x}, attrs, 4, 11);
        ASSERT_TRUE(r.is_ok()) << r.status().to_string();
        const auto& out = r.value();
        std::optional<int64_t> na = axis ? std::optional<int64_t>(naxis) : std::nullopt;
        auto want = naive_unique(items_of(values(x), dims, na), sorted != 0);
        std::vector<int64_t> ydims = axis ? dims : std::vector<int64_t>{static_cast<int64_t>(want.y.size())};
        if (axis) ydims[static_cast<size_t>(naxis)] = static_cast<int64_t>(want.y.size());
        EXPECT_EQ(out[0].dims(), ydims);
        EXPECT_EQ(values(out[0]), y_from_items(want.y, dims, na));
        EXPECT_EQ(i64s(out[1]), want.indices);
        EXPECT_EQ(i64s(out[2]), want.inverse);
        EXPECT_EQ(i64s(out[3]), want.counts);
      }
    }
}

TEST(SelectionUnique, Int64ComparesExactlyBeyondDoublePrecision) {
  const uint32_t seed = std::random_device{}();
  std::mt19937 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  // 2^60 + k for small k: distinct int64 values that round to the same double.
  Tensor x = Tensor::empty(kI64, {40});
  std::uniform_int_distribution<int64_t> k(-4, 4);
  std::vector<int64_t> raw;
  for (int64_t i = 0; i < 40; ++i) raw.push_back((int64_t{1} << 60) + k(rng));
  std::memcpy(x.data(), raw.data(), raw.size() * sizeof(int64_t));
  for (int sorted = 0; sorted <= 1; ++sorted) {
    auto r = run_sel("Unique", {x}, attrs_of({{"sorted", int64_t{sorted}}}), 4, 11);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    auto want = naive_unique(items_of(raw, {40}, std::nullopt), sorted != 0);
    std::vector<int64_t> wy;
    for (const auto& it : want.y) wy.push_back(it[0]);
    EXPECT_EQ(i64s(r.value()[0]), wy);
    EXPECT_EQ(i64s(r.value()[1]), want.indices);
    EXPECT_EQ(i64s(r.value()[2]), want.inverse);
    EXPECT_EQ(i64s(r.value()[3]), want.counts);
  }
}

TEST(SelectionUnique, NanAndSignedZeroCollapse) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor x = Tensor::from_doubles(kF32, {8}, {nan, 1.0, -0.0, nan, 0.0, -2.0, 1.0, nan});
  auto r = run_sel("Unique", {x}, {}, 4, 11);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const auto y = values(r.value()[0]);
  ASSERT_EQ(y.size(), 4u);  // -2, 0 (first seen as -0), 1, NaN
  EXPECT_EQ(y[0], -2.0);
  EXPECT_TRUE(y[1] == 0.0 && std::signbit(y[1]));
  EXPECT_EQ(y[2], 1.0);
  EXPECT_TRUE(std::isnan(y[3]));
  EXPECT_EQ(i64s(r.value()[1]), (std::vector<int64_t>{5, 2, 1, 0}));
  EXPECT_EQ(i64s(r.value()[2]), (std::vector<int64_t>{3, 2, 1, 3, 1, 0, 2, 3}));
  EXPECT_EQ(i64s(r.value()[3]), (std::vector<int64_t>{1, 2, 2, 3}));
}

TEST(SelectionUnique, OptionalOutputsOmittedAndEmptyInput) {
  const uint32_t seed = std::random_device{}();
  std::mt19937 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  Tensor x = random_tensor(kF32, {5, 4}, rng, -2.0, 2.0);
  for (int64_t i = 0; i < x.numel(); ++i) x.set(i, std::round(x.get(i)));
  // Y and counts only (indices and inverse_indices omitted).
  SelNode n("Unique", {x}, {true, false, false, true}, {}, 11);
  auto r = n.run({x});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  auto want = naive_unique(items_of(values(x), {5, 4}, std::nullopt), true);
  EXPECT_FALSE(r.value()[1].defined());
  EXPECT_FALSE(r.value()[2].defined());
  EXPECT_EQ(i64s(r.value()[3]), want.counts);
  // No elements: every output is empty (inference already knows the count is 0).
  Tensor e = Tensor::empty(kF32, {0, 3});
  auto re = run_sel("Unique", {e}, attrs_of({{"axis", int64_t{0}}}), 4, 11);
  ASSERT_TRUE(re.is_ok()) << re.status().to_string();
  EXPECT_EQ(re.value()[0].dims(), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(re.value()[2].numel(), 0);
}

TEST(SelectionUnique, BadAttributesNameThem) {
  Tensor x = Tensor::from_doubles(kF32, {2, 2}, {1, 2, 1, 2});
  expect_error_mentions(run_sel("Unique", {x}, attrs_of({{"sorted", int64_t{2}}}), 1, 11).status(),
                        {"sel_Unique", "sorted"});
  expect_error_mentions(run_sel("Unique", {x}, attrs_of({{"axis", int64_t{2}}}), 1, 11).status(),
                        {"sel_Unique", "axis"});
  expect_error_mentions(run_sel("Unique", {x}, attrs_of({{"axis", int64_t{-3}}}), 1, 11).status(),
                        {"sel_Unique", "axis"});
}

// ---- MaxUnpool: naive reference -------------------------------------------------------------------

struct Unpool2dCase {
  int64_t n, c, ph, pw;  // pooled (X) dims
  int64_t kh, kw, sh, sw;
  int64_t pt, pl, pb, pr;    // pads: top, left, bottom, right
  int64_t extra_h, extra_w;  // output_shape beyond the unpooled extent (-1: no output_shape)
};

// X random; I picks, for each pooled position, one position of its window inside the unpooled
// plane (as MaxPool's indices would); the expected output is built with explicit 4-D loops.
void check_unpool2d(const Unpool2dCase& k, std::mt19937& rng) {
  const int64_t uh = (k.ph - 1) * k.sh + k.kh - k.pt - k.pb, uw = (k.pw - 1) * k.sw + k.kw - k.pl - k.pr;
  ASSERT_GT(uh, 0);
  ASSERT_GT(uw, 0);
  Tensor x = random_tensor(kF32, {k.n, k.c, k.ph, k.pw}, rng, 0.5, 2.0);
  Tensor ind = Tensor::empty(kI64, {k.n, k.c, k.ph, k.pw});
  std::vector<std::vector<std::vector<std::vector<double>>>> plane(
      static_cast<size_t>(k.n),
      std::vector<std::vector<std::vector<double>>>(
          static_cast<size_t>(k.c),
          std::vector<std::vector<double>>(static_cast<size_t>(uh),
                                           std::vector<double>(static_cast<size_t>(uw), 0.0))));
  int64_t e = 0;
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t c = 0; c < k.c; ++c)
      for (int64_t i = 0; i < k.ph; ++i)
        for (int64_t j = 0; j < k.pw; ++j, ++e) {
          const int64_t h0 = std::max<int64_t>(i * k.sh - k.pt, 0), h1 = std::min(i * k.sh - k.pt + k.kh, uh);
          const int64_t w0 = std::max<int64_t>(j * k.sw - k.pl, 0), w1 = std::min(j * k.sw - k.pl + k.kw, uw);
          ASSERT_LT(h0, h1);
          ASSERT_LT(w0, w1);
          const int64_t h = std::uniform_int_distribution<int64_t>(h0, h1 - 1)(rng);
          const int64_t w = std::uniform_int_distribution<int64_t>(w0, w1 - 1)(rng);
          ind.data_as<int64_t>()[e] = ((n * k.c + c) * uh + h) * uw + w;
          plane[n][c][h][w] = x.get(e);  // in order: a window sharing a position overwrites
        }
  const bool with_shape = k.extra_h >= 0;
  const int64_t oh = with_shape ? uh + k.extra_h : uh, ow = with_shape ? uw + k.extra_w : uw;
  std::vector<double> want;
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t c = 0; c < k.c; ++c)
      for (int64_t h = 0; h < oh; ++h)
        for (int64_t w = 0; w < ow; ++w) want.push_back(h < uh && w < uw ? plane[n][c][h][w] : 0.0);
  AttributeMap attrs = attrs_of({{"kernel_shape", std::vector<int64_t>{k.kh, k.kw}},
                                 {"strides", std::vector<int64_t>{k.sh, k.sw}},
                                 {"pads", std::vector<int64_t>{k.pt, k.pl, k.pb, k.pr}}});
  std::vector<Tensor> in = {x, ind};
  if (with_shape) in.push_back(Tensor::vector_int64({k.n, k.c, oh, ow}));
  for (int opset : {9, 11}) {
    auto r = run_sel("MaxUnpool", in, attrs, 1, opset);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_EQ(r.value()[0].dims(), (std::vector<int64_t>{k.n, k.c, oh, ow}));
    EXPECT_EQ(values(r.value()[0]), want);
  }
}

TEST(SelectionMaxUnpool, MatchesNaiveWithAndWithoutOutputShape) {
  const uint32_t seed = std::random_device{}();
  std::mt19937 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  const std::vector<Unpool2dCase> cases = {
      {1, 1, 2, 2, 2, 2, 2, 2, 0, 0, 0, 0, -1, -1},  // the classic 2x2/2
      {2, 3, 3, 4, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1},    // output_shape one larger (odd input to MaxPool)
      {1, 2, 4, 3, 3, 2, 1, 1, 0, 0, 0, 0, -1, -1},  // overlapping windows (stride < kernel)
      {2, 2, 3, 3, 3, 3, 2, 2, 1, 1, 1, 1, -1, -1},  // pads
      {1, 3, 2, 5, 3, 2, 3, 1, 1, 0, 0, 1, 2, 0},    // pads, unequal strides, output_shape
      {1, 1, 5, 4, 1, 1, 1, 1, 0, 0, 0, 0, 0, 3},    // 1x1 kernel
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    check_unpool2d(cases[i], rng);
  }
}

TEST(SelectionMaxUnpool, OneAndThreeSpatialAxes) {
  const uint32_t seed = std::random_device{}();
  std::mt19937 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  // 1-D, kernel 3 stride 2 pad 1/0: unpooled length (4-1)*2+3-1 = 8.
  Tensor x = random_tensor(kF32, {2, 1, 4}, rng, 0.5, 2.0);
  Tensor ind = Tensor::vector_int64({0, 3, 4, 7, 8, 9, 12, 15}).reshaped({2, 1, 4});
  auto r = run_sel("MaxUnpool", {x, ind},
                   attrs_of({{"kernel_shape", std::vector<int64_t>{3}},
                             {"strides", std::vector<int64_t>{2}},
                             {"pads", std::vector<int64_t>{1, 0}}}));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  std::vector<double> want(16, 0.0);
  for (int64_t i = 0; i < 8; ++i) want[static_cast<size_t>(ind.data_as<int64_t>()[i])] = x.get(i);
  EXPECT_EQ(r.value()[0].dims(), (std::vector<int64_t>{2, 1, 8}));
  EXPECT_EQ(values(r.value()[0]), want);
  // 3-D, 2x2x2 / 2 over a 1x1x1 pool, output_shape larger along the last axis: index 7 is
  // (1,1,1) of the 2x2x2 unpooled block, which lands at (1,1,1) of 2x2x3 = 10.
  Tensor x3 = random_tensor(kF32, {1, 1, 1, 1, 1}, rng, 0.5, 2.0);
  Tensor i3 = Tensor::vector_int64({7}).reshaped({1, 1, 1, 1, 1});
  auto r3 = run_sel("MaxUnpool", {x3, i3, Tensor::vector_int64({1, 1, 2, 2, 3})},
                    attrs_of({{"kernel_shape", std::vector<int64_t>{2, 2, 2}},
                              {"strides", std::vector<int64_t>{2, 2, 2}}}));
  ASSERT_TRUE(r3.is_ok()) << r3.status().to_string();
  std::vector<double> w3(12, 0.0);
  w3[10] = x3.get(0);
  EXPECT_EQ(values(r3.value()[0]), w3);
}

TEST(SelectionMaxUnpool, BadIndicesAndAttributesAreErrors) {
  const uint32_t seed = std::random_device{}();
  std::mt19937 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  Tensor x = random_tensor(kF32, {1, 1, 2, 2}, rng, 0.5, 2.0);
  const AttributeMap good =
      attrs_of({{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}});
  for (int64_t bad : {int64_t{16}, int64_t{-1}, std::numeric_limits<int64_t>::max()}) {
    Tensor ind = Tensor::vector_int64({0, 5, bad, 15}).reshaped({1, 1, 2, 2});
    expect_error_mentions(run_sel("MaxUnpool", {x, ind}, good).status(),
                          {"sel_MaxUnpool", "element 2", "(I)"});
    // With a larger output_shape the bound is still the unpooled tensor's 16 elements.
    expect_error_mentions(run_sel("MaxUnpool", {x, ind, Tensor::vector_int64({1, 1, 5, 5})}, good).status(),
                          {"sel_MaxUnpool", "element 2"});
  }
  Tensor ind = Tensor::vector_int64({0, 2, 8, 10}).reshaped({1, 1, 2, 2});
  auto attrs = [](std::vector<int64_t> k, std::vector<int64_t> s, std::vector<int64_t> p) {
    AttributeMap m;
    if (!k.empty()) m.set("kernel_shape", k);
    if (!s.empty()) m.set("strides", s);
    if (!p.empty()) m.set("pads", p);
    return m;
  };
  expect_error_mentions(run_sel("MaxUnpool", {x, ind}, attrs({}, {2, 2}, {})).status(),
                        {"sel_MaxUnpool", "kernel_shape"});
  expect_error_mentions(run_sel("MaxUnpool", {x, ind}, attrs({2}, {}, {})).status(), {"kernel_shape"});
  expect_error_mentions(run_sel("MaxUnpool", {x, ind}, attrs({2, 0}, {}, {})).status(), {"kernel_shape"});
  expect_error_mentions(run_sel("MaxUnpool", {x, ind}, attrs({2, 2}, {2, 0}, {})).status(), {"strides"});
  expect_error_mentions(run_sel("MaxUnpool", {x, ind}, attrs({2, 2}, {1, 1, 1}, {})).status(), {"strides"});
  expect_error_mentions(run_sel("MaxUnpool", {x, ind}, attrs({2, 2}, {}, {0, 0, -1, 0})).status(), {"pads"});
  expect_error_mentions(run_sel("MaxUnpool", {x, ind}, attrs({2, 2}, {}, {0, 0})).status(), {"pads"});
  expect_error_mentions(run_sel("MaxUnpool", {x, ind}, attrs({2, 2}, {}, {2, 2, 2, 2})).status(), {"pads"});
  // Strides whose extent overflows int64.
  expect_error_mentions(
      run_sel("MaxUnpool", {x, ind}, attrs({2, 2}, {std::numeric_limits<int64_t>::max(), 1}, {})).status(),
      {"sel_MaxUnpool", "strides"});
  // output_shape smaller than the unpooled extent, or with another N/C or rank.
  for (auto os :
       {std::vector<int64_t>{1, 1, 3, 4}, std::vector<int64_t>{1, 2, 4, 4}, std::vector<int64_t>{1, 1, 16}})
    expect_error_mentions(run_sel("MaxUnpool", {x, ind, Tensor::vector_int64(os)}, good).status(),
                          {"sel_MaxUnpool", "output_shape"});
  // I must match X's shape.
  expect_error_mentions(run_sel("MaxUnpool", {x, Tensor::vector_int64({0, 2, 8})}, good).status(),
                        {"sel_MaxUnpool"});
}

// ---- Celu ----------------------------------------------------------------------------------------

TEST(SelectionCelu, MatchesFormulaIncludingNegativeInputs) {
  const uint32_t seed = std::random_device{}();
  std::mt19937 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (float alpha : {1.0f, 2.5f, 0.3f, -1.5f}) {
    SCOPED_TRACE("alpha " + std::to_string(alpha));
    Tensor x = random_tensor(kF32, {3, 41}, rng, -6.0, 6.0);
    x.set(0, -1e-7);  // tiny negatives: exp(x / alpha) - 1 cancels; the result is ~x
    x.set(1, 0.0);
    AttributeMap attrs;
    if (alpha != 1.0f) attrs.set("alpha", alpha);
    auto r = run_sel("Celu", {x}, attrs, 1, 12);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    std::vector<double> want;
    for (double v : values(x)) {
      const double a = alpha;
      want.push_back(std::max(0.0, v) + std::min(0.0, a * (std::exp(v / a) - 1.0)));
    }
    expect_values_close(r.value()[0], want, 2e-6, "Celu");
    // No negative output is below -|alpha| (the lower asymptote for alpha > 0).
    if (alpha > 0)
      for (double v : values(r.value()[0])) EXPECT_GE(v, -alpha - 1e-6);
  }
  // NaN propagates.
  Tensor n = Tensor::from_doubles(kF32, {1}, {std::numeric_limits<double>::quiet_NaN()});
  auto rn = run_sel("Celu", {n}, {}, 1, 12);
  ASSERT_TRUE(rn.is_ok());
  EXPECT_TRUE(std::isnan(rn.value()[0].get(0)));
}

TEST(SelectionCelu, BadAlphaAndDtypeAreErrors) {
  Tensor x = Tensor::from_doubles(kF32, {2}, {-1.0, 1.0});
  expect_error_mentions(run_sel("Celu", {x}, attrs_of({{"alpha", 0.0f}}), 1, 12).status(),
                        {"sel_Celu", "alpha"});
  expect_error_mentions(
      run_sel("Celu", {x}, attrs_of({{"alpha", std::numeric_limits<float>::infinity()}}), 1, 12).status(),
      {"alpha"});
  expect_error_mentions(run_sel("Celu", {x}, attrs_of({{"alpha", int64_t{2}}}), 1, 12).status(), {"alpha"});
  // The specification constrains Celu to float32.
  Tensor d = Tensor::from_doubles(DataType::kFloat64, {2}, {-1.0, 1.0});
  expect_error_mentions(run_sel("Celu", {d}, {}, 1, 12).status(), {"float64"});
}

}  // namespace
}  // namespace graft::testing
