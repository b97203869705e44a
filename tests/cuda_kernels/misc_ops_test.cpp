// CUDA kernels of src/ops/quantize/ and src/ops/misc/ (one .cu per op) vs the CPU reference:
// QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear (integer outputs compared exactly:
// saturation, .5 ties and NaN included), InstanceNormalization, MeanVarianceNormalization, LRN,
// BitShift, EyeLike, the Hann/Hamming/Blackman windows, ReverseSequence and Einsum. Fresh random
// data every run.
#include <cmath>
#include <limits>

#include "cuda_kernel_harness.h"

namespace graft::testing {
namespace {

constexpr DataType kF32 = DataType::kFloat32;
constexpr DataType kF16 = DataType::kFloat16;
constexpr DataType kBF16 = DataType::kBFloat16;
constexpr DataType kF64 = DataType::kFloat64;
constexpr DataType kU8 = DataType::kUInt8;
constexpr DataType kI8 = DataType::kInt8;
constexpr DataType kI32 = DataType::kInt32;
constexpr DataType kI64 = DataType::kInt64;
constexpr DataType kBool = DataType::kBool;

Tensor ints(std::mt19937& rng, std::vector<int64_t> dims, int64_t lo, int64_t hi, DataType dt) {
  Tensor t = Tensor::empty(dt, std::move(dims));
  std::uniform_int_distribution<int64_t> d(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, static_cast<double>(d(rng)));
  return t;
}

// Powers of two as scales keep x / scale exact, so half-integers in x / scale are real ties.
Tensor pow2_scales(std::mt19937& rng, std::vector<int64_t> dims) {
  Tensor t = Tensor::empty(kF32, std::move(dims));
  std::uniform_int_distribution<int> e(-3, 2);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, std::ldexp(1.0, e(rng)));
  return t;
}

// x = (k / 2) * scale[channel]: every other value a .5 tie, many beyond the int8/uint8 range.
Tensor tie_values(std::mt19937& rng, const std::vector<int64_t>& dims, const Tensor& scale, int64_t axis) {
  Tensor x = Tensor::empty(kF32, dims);
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(axis) + 1; d < dims.size(); ++d) inner *= dims[d];
  std::uniform_int_distribution<int64_t> k(-700, 700);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = scale.numel() == 1 ? 0 : (i / inner) % scale.numel();
    x.set(i, static_cast<double>(k(rng)) / 2.0 * scale.get(c));
  }
  return x;
}

struct QuantLayoutCase {
  std::vector<int64_t> dims;
  int64_t axis;
  bool per_axis;
};
const std::vector<QuantLayoutCase> kLayouts = {
    {{3, 5, 7}, 1, false}, {{3, 5, 7}, 1, true}, {{4, 33}, 0, true}, {{2, 3, 4, 5}, -1, true}, {{1027}, 0, false},
    {{6, 1, 9}, 0, true},
};

// ---- QuantizeLinear ------------------------------------------------------------------------------

TEST(CudaMisc, QuantizeLinearTiesAndSaturation) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (const auto& l : kLayouts)
    for (int zp_kind = 0; zp_kind < 3; ++zp_kind) {  // none (uint8), uint8, int8
      const int64_t rank = static_cast<int64_t>(l.dims.size());
      const int64_t axis = l.axis < 0 ? l.axis + rank : l.axis;
      const int64_t ch = l.per_axis ? l.dims[static_cast<size_t>(axis)] : 1;
      Tensor scale = pow2_scales(rng, l.per_axis ? std::vector<int64_t>{ch} : std::vector<int64_t>{});
      Tensor x = tie_values(rng, l.dims, scale, axis);
      x.set(0, std::numeric_limits<double>::quiet_NaN());  // NaN quantizes to the zero point
      if (x.numel() > 2) x.set(2, std::numeric_limits<double>::infinity());
      KernelCase c;
      c.op = "QuantizeLinear";
      c.opset = 19;
      c.inputs = {x, scale};
      if (zp_kind == 1) c.inputs.push_back(ints(rng, scale.dims(), 0, 255, kU8));
      if (zp_kind == 2) c.inputs.push_back(ints(rng, scale.dims(), -128, 127, kI8));
      c.attrs.set("axis", l.axis);
      c.label = "dims " + std::to_string(x.numel()) + " axis " + std::to_string(l.axis) +
                (l.per_axis ? " per-axis" : " per-tensor") + " zp " + std::to_string(zp_kind);
      run_float_dtypes(c, seed, /*bf16=*/true);
      // A float32 scale with a float16 x (mixed dtypes as QuantizeLinear 19 allows).
      KernelCase mixed = c;
      mixed.keep_f32 = {1};
      run_kernel_case(mixed, kF16, seed);
    }
}

TEST(CudaMisc, QuantizeLinearRandomScalesAndInt32) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (const auto& l : kLayouts) {
    const int64_t rank = static_cast<int64_t>(l.dims.size());
    const int64_t axis = l.axis < 0 ? l.axis + rank : l.axis;
    const int64_t ch = l.per_axis ? l.dims[static_cast<size_t>(axis)] : 1;
    const std::vector<int64_t> sdims = l.per_axis ? std::vector<int64_t>{ch} : std::vector<int64_t>{1};
    KernelCase c;
    c.op = "QuantizeLinear";
    c.opset = 19;
    c.inputs = {rnd(rng, l.dims, -40, 40), rnd(rng, sdims, 0.05, 0.4), ints(rng, sdims, -128, 127, kI8)};
    c.attrs.set("axis", l.axis);
    c.label = "random float x";
    run_float_dtypes(c, seed, true);
    // int32 x: converted to float32 before the division, as on the CPU.
    KernelCase ci = c;
    ci.inputs[0] = ints(rng, l.dims, -50000, 50000, kI32);
    ci.inputs[1] = rnd(rng, sdims, 10, 400);
    ci.inputs[2] = ints(rng, sdims, 0, 255, kU8);
    ci.label = "int32 x";
    run_kernel_case(ci, kF32, seed);
    // A float64 scale.
    KernelCase cd = c;
    cd.inputs[1] = rnd(rng, sdims, 0.05, 0.4, kF64);
    cd.label = "float64 scale";
    run_kernel_case(cd, kF32, seed);
  }
}

// ---- DequantizeLinear ----------------------------------------------------------------------------

TEST(CudaMisc, DequantizeLinear) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (const auto& l : kLayouts)
    for (DataType xt : {kU8, kI8, kI32})
      for (bool with_zp : {false, true}) {
        const int64_t rank = static_cast<int64_t>(l.dims.size());
        const int64_t axis = l.axis < 0 ? l.axis + rank : l.axis;
        const int64_t ch = l.per_axis ? l.dims[static_cast<size_t>(axis)] : 1;
        const std::vector<int64_t> sdims = l.per_axis ? std::vector<int64_t>{ch} : std::vector<int64_t>{};
        // int32 kept small enough that (x - zp) * scale stays finite in float16.
        const int64_t lo = xt == kU8 ? 0 : xt == kI8 ? -128 : -10000;
        const int64_t hi = xt == kU8 ? 255 : xt == kI8 ? 127 : 10000;
        KernelCase c;
        c.op = "DequantizeLinear";
        c.opset = 19;
        c.inputs = {ints(rng, l.dims, lo, hi, xt), rnd(rng, sdims, 0.01, 2.0)};
        if (with_zp) c.inputs.push_back(ints(rng, sdims, lo, hi, xt));
        c.attrs.set("axis", l.axis);
        c.label = std::string("x ") + dtype_name(xt) + (l.per_axis ? " per-axis" : " per-tensor") +
                  (with_zp ? " zp" : "");
        run_float_dtypes(c, seed, true);
        KernelCase cd = c;  // float64 scale and output
        cd.inputs[1] = rnd(rng, sdims, 0.01, 2.0, kF64);
        run_kernel_case(cd, kF32, seed);
      }
}

// ---- DynamicQuantizeLinear -----------------------------------------------------------------------

TEST(CudaMisc, DynamicQuantizeLinear) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  struct Range {
    double lo, hi;
  };
  for (const auto& dims : std::vector<std::vector<int64_t>>{{7}, {3, 5, 7}, {100003}, {1 << 20}})
    for (Range r : {Range{-3, 5}, Range{1, 2}, Range{-4, -0.5}, Range{-1e4, 1e4}}) {
      KernelCase c;
      c.op = "DynamicQuantizeLinear";
      c.num_outputs = 3;
      c.inputs = {rnd(rng, dims, r.lo, r.hi)};
      if (dims.size() > 1) c.inputs[0].set(3, std::numeric_limits<double>::quiet_NaN());  // left out of the range
      c.label = "range " + std::to_string(r.lo) + ".." + std::to_string(r.hi) + " n " + std::to_string(c.inputs[0].numel());
      run_kernel_case(c, kF32, seed);
    }
  // The one input the formula cannot take (scale 0): all zeros.
  KernelCase z;
  z.op = "DynamicQuantizeLinear";
  z.num_outputs = 3;
  z.inputs = {Tensor::from_doubles(kF32, {5}, {0, 0, 0, 0, 0})};
  z.label = "all zero";
  run_kernel_case(z, kF32, seed);
}

// ---- Normalizations ------------------------------------------------------------------------------

TEST(CudaMisc, InstanceNormalization) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (const auto& dims : std::vector<std::vector<int64_t>>{{2, 3, 5, 7}, {1, 4, 1000}, {3, 2, 1}, {2, 5, 3, 4, 3}}) {
    const int64_t c = dims[1];
    KernelCase k;
    k.op = "InstanceNormalization";
    k.inputs = {rnd(rng, dims, -2, 3), rnd(rng, {c}, 0.5, 1.5), rnd(rng, {c}, -1, 1)};
    k.attrs.set("epsilon", 1e-3f);
    k.label = "numel " + std::to_string(k.inputs[0].numel());
    run_float_dtypes(k, seed, true);
    KernelCase d = k;
    for (auto& t : d.inputs) t = t.cast(kF64).value();
    d.label += " float64";
    run_kernel_case(d, kF32, seed);
  }
}

TEST(CudaMisc, MeanVarianceNormalization) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  struct Case {
    std::vector<int64_t> dims;
    std::vector<int64_t> axes;  // empty: the default [0, 2, 3]
  };
  for (const Case& m : std::vector<Case>{{{2, 3, 4, 5}, {}},
                                         {{3, 5, 7}, {1}},
                                         {{3, 5, 7}, {0, 2}},
                                         {{2, 3, 4, 5}, {0, 1, 2, 3}},
                                         {{4, 9, 11}, {-1}},
                                         {{2, 3, 1, 5}, {}}}) {
    KernelCase k;
    k.op = "MeanVarianceNormalization";
    k.inputs = {rnd(rng, m.dims, -3, 2)};
    if (!m.axes.empty()) k.attrs.set("axes", m.axes);
    k.label = "numel " + std::to_string(k.inputs[0].numel()) + " axes " + std::to_string(m.axes.size());
    run_float_dtypes(k, seed, true);
  }
}

TEST(CudaMisc, Lrn) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (int64_t size : {1, 3, 4, 5, 20})
    for (const auto& dims : std::vector<std::vector<int64_t>>{{2, 7, 3, 5}, {1, 13, 9}, {3, 2}}) {
      KernelCase k;
      k.op = "LRN";
      k.inputs = {rnd(rng, dims, -3, 3)};
      k.attrs.set("size", size);
      k.attrs.set("alpha", 0.02f);
      k.attrs.set("beta", 0.75f);
      k.attrs.set("bias", 1.5f);
      k.label = "size " + std::to_string(size) + " numel " + std::to_string(k.inputs[0].numel());
      run_float_dtypes(k, seed, true);
    }
}

// ---- BitShift, EyeLike, windows, ReverseSequence -------------------------------------------------

TEST(CudaMisc, BitShift) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  struct Shapes {
    std::vector<int64_t> a, b;
  };
  for (const Shapes& s : std::vector<Shapes>{{{3, 5, 7}, {3, 5, 7}}, {{2, 3, 4}, {4}}, {{5}, {2, 1, 5}}, {{1027}, {}}})
    for (const char* dir : {"LEFT", "RIGHT"}) {
      KernelCase k;
      k.op = "BitShift";
      k.inputs = {ints(rng, s.a, 0, 255, kU8), ints(rng, s.b, 0, 10, kU8)};  // shifts of 8 and more included
      k.attrs.set("direction", std::string(dir));
      k.label = dir;
      run_kernel_case(k, kF32, seed);
    }
}

TEST(CudaMisc, EyeLike) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (const auto& dims : std::vector<std::vector<int64_t>>{{5, 7}, {9, 4}, {1, 1}, {33, 33}})
    for (int64_t kd : {-2, 0, 3, 40}) {
      KernelCase k;
      k.op = "EyeLike";
      k.inputs = {rnd(rng, dims, -1, 1)};
      k.attrs.set("k", kd);
      k.label = "k " + std::to_string(kd);
      run_float_dtypes(k, seed, true);
      for (int64_t dt : {int64_t{7}, int64_t{9}, int64_t{2}, int64_t{11}}) {  // int64, bool, uint8, float64
        KernelCase t = k;
        t.attrs.set("dtype", dt);
        t.label += " dtype " + std::to_string(dt);
        run_kernel_case(t, kF32, seed);
      }
      KernelCase xi = k;  // an integer input, output of its type
      xi.inputs = {ints(rng, dims, -5, 5, kI32)};
      run_kernel_case(xi, kF32, seed);
    }
}

TEST(CudaMisc, Windows) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> len(2, 3000);
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"})
    for (int64_t n : {int64_t{1}, int64_t{10}, int64_t{33}, len(rng)})
      for (int64_t periodic : {0, 1}) {
        KernelCase k;
        k.op = op;
        k.inputs = {Tensor::scalar_int64(n)};
        k.attrs.set("periodic", periodic);
        k.label = "n " + std::to_string(n) + " periodic " + std::to_string(periodic);
        // Blackman's a0 - a1 + a2 is 0: its one-point (and periodic) windows hold a rounding-noise
        // value near 0, not a number a relative norm can compare.
        k.atol = 1e-6;
        run_float_dtypes(k, seed, true);
        for (int64_t odt : {int64_t{11}, int64_t{7}, int64_t{3}}) {  // float64, int64, int8
          KernelCase t = k;
          t.attrs.set("output_datatype", odt);
          t.label += " output_datatype " + std::to_string(odt);
          run_kernel_case(t, kF32, seed);
        }
        KernelCase s32 = k;  // an int32 size
        Tensor sz = Tensor::empty(kI32, {});
        sz.set(0, static_cast<double>(n));
        s32.inputs = {sz};
        run_kernel_case(s32, kF32, seed);
      }
}

TEST(CudaMisc, ReverseSequence) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  struct Case {
    std::vector<int64_t> dims;
    int64_t batch_axis, time_axis;
  };
  for (const Case& r : std::vector<Case>{{{5, 4, 3}, 1, 0}, {{4, 6, 2, 3}, 0, 1}, {{7, 3}, 1, 0}, {{3, 9}, 0, 1}}) {
    const int64_t batch = r.dims[static_cast<size_t>(r.batch_axis)];
    const int64_t steps = r.dims[static_cast<size_t>(r.time_axis)];
    KernelCase k;
    k.op = "ReverseSequence";
    k.inputs = {rnd(rng, r.dims, -4, 4), ints(rng, {batch}, 0, steps, kI64)};
    k.attrs.set("batch_axis", r.batch_axis);
    k.attrs.set("time_axis", r.time_axis);
    k.label = "batch_axis " + std::to_string(r.batch_axis);
    run_float_dtypes(k, seed, true);
    for (DataType t : {kI8, kI32, kI64, kBool, kF64}) {
      KernelCase i = k;
      i.inputs[0] = t == kBool ? rnd_bool(rng, r.dims) : t == kF64 ? rnd(rng, r.dims, -4, 4, kF64)
                                                                   : ints(rng, r.dims, -100, 100, t);
      i.label += std::string(" ") + dtype_name(t);
      run_kernel_case(i, kF32, seed);
    }
  }
}

// Einsum: contractions, a diagonal, a transpose, a full sum, broadcasting ellipses and three
// operands, in float32/float16 and exactly in int64 (wrapping products beyond 2^53 included).
TEST(CudaMisc, Einsum) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  struct Case {
    const char* eq;
    std::vector<std::vector<int64_t>> dims;
  };
  const Case cases[] = {
      {"bij,bjk->bik", {{2, 3, 7}, {2, 7, 5}}},
      {"bij,bjk", {{2, 3, 7}, {2, 7, 5}}},  // implicit: b summed too
      {"bii->bi", {{3, 4, 4}}},
      {"ij->ji", {{5, 9}}},
      {"ij->", {{33, 17}}},
      {"...ij,...jk->...ik", {{2, 1, 3, 4}, {3, 4, 2}}},
      {"i,j,ij->", {{3}, {4}, {3, 4}}},
  };
  for (const Case& c : cases) {
    KernelCase k{"Einsum", {}};
    for (const auto& d : c.dims) k.inputs.push_back(rnd(rng, d));
    k.attrs.set("equation", std::string(c.eq));
    k.opset = 12;
    k.tol32 = 1e-5;
    k.label = c.eq;
    run_float_dtypes(k, seed);
    KernelCase ki = k;
    ki.inputs.clear();
    for (const auto& d : c.dims) ki.inputs.push_back(ints(rng, d, -50, 50, kI64));
    run_kernel_case(ki, kI64, seed);
  }
  KernelCase big{"Einsum", {ints(rng, {3}, 3000000000LL, 3000000001LL, kI64), ints(rng, {3}, 3000000000LL, 3000000001LL, kI64)}};
  big.attrs.set("equation", std::string("i,i->"));
  big.opset = 12;
  big.label = "wrapping int64 products";
  run_kernel_case(big, kI64, seed);
}

// Det against the CPU reference: batches of random matrices (well away from singular at these sizes),
// one batch axis and two, 1x1 and larger, a singular matrix (two equal rows: exactly 0 in both),
// float32 and float16 (a determinant's relative error grows with m, so float16 gets room).
TEST(CudaMisc, DetMatchesTheReference) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{3, 3}, {5, 4, 4}, {2, 3, 1, 1}, {7, 6, 6}}) {
    KernelCase k{"Det", {rnd(rng, dims, -1, 1)}};
    k.opset = 11;
    k.tol32 = 1e-5;
    k.tol16 = 3e-2;
    k.label = "Det " + std::to_string(dims.back()) + "x" + std::to_string(dims.back()) + ", seed " + std::to_string(seed);
    run_float_dtypes(k, seed);
  }
  Tensor singular = rnd(rng, {4, 4}, -1, 1);
  for (int64_t c = 0; c < 4; ++c) singular.set(4 + c, singular.get(c));  // row 1 = row 0
  KernelCase k{"Det", {singular}};
  k.opset = 11;
  k.label = "singular, seed " + std::to_string(seed);
  k.atol = 1e-6;
  run_kernel_case(k, DataType::kFloat32, seed);
}

}  // namespace
}  // namespace graft::testing
