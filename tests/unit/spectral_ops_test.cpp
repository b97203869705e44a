// DFT and STFT (definition and CPU reference: src/ops/spectral/spectral.cpp)
// against sums written here with std::complex and std::polar on fresh random data: known spectra,
// every axis, real and complex input, inverse, onesided, dft_length padding and truncation, opset
// 20's axis input, STFT frames with and without a window; then bad attributes and inputs (errors
// name the node and the attribute) and absurd sizes refused before any work.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "ops/spectral/spectral.h"
#include "graft/engine.h"
#include "onnx_model_builder.h"
#include "op_test_util.h"

namespace graft {
namespace {

using testing::attrs_of;
using testing::expect_values_close;
using testing::OnnxModelBuilder;
using testing::random_tensor;
using testing::run_op;
using cd = std::complex<double>;

constexpr double kTwoPi = 6.283185307179586476925286766559;

uint32_t seed() {
  static const uint32_t s = std::random_device{}();
  return s;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

Tensor scalar(DataType dt, int64_t v) { return Tensor::from_doubles(dt, {}, {static_cast<double>(v)}); }

int64_t ravel(const std::vector<int64_t>& idx, const std::vector<int64_t>& dims) {
  int64_t f = 0;
  for (size_t a = 0; a < dims.size(); ++a) f = f * dims[a] + idx[a];
  return f;
}

// Advances a row-major multi-index; false once it wraps.
bool next_index(std::vector<int64_t>& idx, const std::vector<int64_t>& dims) {
  for (size_t a = dims.size(); a-- > 0;) {
    if (++idx[a] < dims[a]) return true;
    idx[a] = 0;
  }
  return false;
}

// The DFT of x ([signal dims..., 1 or 2]) along `axis` (non-negative) as the ONNX spec writes it:
// zero padded or truncated to n, e^{-+2 pi j k m / n} summed directly, 1/n for the inverse, the
// first n/2 + 1 bins when onesided. Returns the output's values and dims.
std::vector<double> naive_dft(const Tensor& x, size_t axis, int64_t n, bool inverse, bool onesided,
                              std::vector<int64_t>* out_dims) {
  const std::vector<int64_t> xd(x.dims().begin(), x.dims().end() - 1);
  const int64_t c = x.dims().back();
  std::vector<int64_t> od = xd;
  od[axis] = onesided ? n / 2 + 1 : n;
  int64_t count = 1;
  for (int64_t d : od) count *= d;
  std::vector<double> out(static_cast<size_t>(2 * count), 0.0);
  std::vector<int64_t> idx(od.size(), 0);
  if (count > 0) do {
      const int64_t k = idx[axis];
      cd acc = 0;
      std::vector<int64_t> in = idx;
      for (int64_t m = 0; m < std::min(n, xd[axis]); ++m) {
        in[axis] = m;
        const int64_t f = ravel(in, xd) * c;
        const cd v(x.get(f), c == 2 ? x.get(f + 1) : 0.0);
        acc += v * std::polar(1.0, (inverse ? 1 : -1) * kTwoPi * static_cast<double>(k) *
                                       static_cast<double>(m) / static_cast<double>(n));
      }
      if (inverse) acc /= static_cast<double>(n);
      const int64_t o = ravel(idx, od);
      out[static_cast<size_t>(2 * o)] = acc.real();
      out[static_cast<size_t>(2 * o + 1)] = acc.imag();
    } while (next_index(idx, od));
  od.push_back(2);
  if (out_dims) *out_dims = od;
  return out;
}

// The inverse onesided DFT as ONNX's reference defines it (numpy's irfft): x's bins along `axis`
// are the first half of a spectrum Hermitian over n (zero beyond them, those past n/2 unused), the
// spectrum is completed (Y[n - k] = conj(Y[k])) and inverted, and the real part kept: [..., n, ..., 1].
std::vector<double> naive_irfft(const Tensor& x, size_t axis, int64_t n, std::vector<int64_t>* out_dims) {
  const std::vector<int64_t> xd(x.dims().begin(), x.dims().end() - 1);
  const int64_t c = x.dims().back();
  std::vector<int64_t> od = xd;
  od[axis] = n;
  int64_t count = 1;
  for (int64_t d : od) count *= d;
  std::vector<double> out(static_cast<size_t>(count), 0.0);
  std::vector<int64_t> idx(od.size(), 0);
  if (count > 0) do {
      std::vector<cd> full(static_cast<size_t>(n), cd(0, 0));
      std::vector<int64_t> in = idx;
      for (int64_t k = 0; k <= n / 2 && k < xd[axis]; ++k) {
        in[axis] = k;
        const int64_t f = ravel(in, xd) * c;
        const cd v(x.get(f), c == 2 ? x.get(f + 1) : 0.0);
        full[static_cast<size_t>(k)] = v;
        if (k > 0 && n - k > n / 2) full[static_cast<size_t>(n - k)] = std::conj(v);
      }
      cd acc = 0;
      for (int64_t k = 0; k < n; ++k)
        acc += full[static_cast<size_t>(k)] *
               std::polar(1.0, kTwoPi * static_cast<double>(k) * static_cast<double>(idx[axis]) / static_cast<double>(n));
      out[static_cast<size_t>(ravel(idx, od))] = acc.real() / static_cast<double>(n);
    } while (next_index(idx, od));
  od.push_back(1);
  if (out_dims) *out_dims = od;
  return out;
}

// STFT of signal [batch, length, c] per the spec: frame f starts at f * step, frames of
// frame_length samples weighted by the window, a DFT of frame_length each.
std::vector<double> naive_stft(const Tensor& x, int64_t step, const Tensor* window, int64_t fl, bool onesided,
                               std::vector<int64_t>* out_dims) {
  const int64_t batch = x.dims()[0], len = x.dims()[1], c = x.dims()[2];
  const int64_t frames = (len - fl) / step + 1, bins = onesided ? fl / 2 + 1 : fl;
  std::vector<double> out;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t f = 0; f < frames; ++f)
      for (int64_t k = 0; k < bins; ++k) {
        cd acc = 0;
        for (int64_t m = 0; m < fl; ++m) {
          const int64_t at = (b * len + f * step + m) * c;
          cd v(x.get(at), c == 2 ? x.get(at + 1) : 0.0);
          if (window) v *= window->get(m);
          acc += v * std::polar(1.0, -kTwoPi * static_cast<double>(k * m) / static_cast<double>(fl));
        }
        out.push_back(acc.real());
        out.push_back(acc.imag());
      }
  *out_dims = {batch, frames, bins, 2};
  return out;
}

double tol_of(DataType dt) { return dt == DataType::kFloat64 ? 1e-12 : 1e-5; }

// ---- DFT ------------------------------------------------------------------------------------------

TEST(SpectralDft, KnownSpectra) {
  // A cosine of 3 cycles over 16 samples: 8 at bins 3 and 13, 0 elsewhere.
  Tensor x = Tensor::empty(DataType::kFloat64, {1, 16, 1});
  for (int64_t t = 0; t < 16; ++t) x.set(t, std::cos(kTwoPi * 3 * static_cast<double>(t) / 16));
  auto r = run_op("DFT", {x}, attrs_of({{"axis", int64_t{1}}}));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r.value()[0].dims(), (std::vector<int64_t>{1, 16, 2}));
  for (int64_t k = 0; k < 16; ++k) {
    EXPECT_NEAR(r.value()[0].get(2 * k), (k == 3 || k == 13) ? 8.0 : 0.0, 1e-12) << "bin " << k;
    EXPECT_NEAR(r.value()[0].get(2 * k + 1), 0.0, 1e-12) << "bin " << k;
  }
  // A complex exponential e^{2 pi j 5 t / 12}: 12 at bin 5 only. Its inverse,
  // (1/12) sum_t e^{2 pi j (5 + k) t / 12}, is 1 at k = 7 (5 + 7 = 12) and 0 elsewhere.
  Tensor z = Tensor::empty(DataType::kFloat32, {12, 2});
  for (int64_t t = 0; t < 12; ++t) {
    z.set(2 * t, std::cos(kTwoPi * 5 * static_cast<double>(t) / 12));
    z.set(2 * t + 1, std::sin(kTwoPi * 5 * static_cast<double>(t) / 12));
  }
  r = run_op("DFT", {z}, attrs_of({{"axis", int64_t{0}}}));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  for (int64_t k = 0; k < 12; ++k) {
    EXPECT_NEAR(r.value()[0].get(2 * k), k == 5 ? 12.0 : 0.0, 1e-5) << "bin " << k;
    EXPECT_NEAR(r.value()[0].get(2 * k + 1), 0.0, 1e-5) << "bin " << k;
  }
  r = run_op("DFT", {z}, attrs_of({{"axis", int64_t{0}}, {"inverse", int64_t{1}}}));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  for (int64_t k = 0; k < 12; ++k) {
    EXPECT_NEAR(r.value()[0].get(2 * k), k == 7 ? 1.0 : 0.0, 1e-6) << "bin " << k;
    EXPECT_NEAR(r.value()[0].get(2 * k + 1), 0.0, 1e-6) << "bin " << k;
  }
}

TEST(SpectralDft, RandomAgainstNaiveEveryAxis) {
  std::mt19937 rng(seed());
  SCOPED_TRACE("seed " + std::to_string(seed()));
  for (DataType dt : {DataType::kFloat32, DataType::kFloat64})
    for (int64_t c : {1, 2})
      for (int64_t axis : {0, 1, 2, -2, -3, -4})
        for (int inverse : {0, 1})
          for (int onesided : {0, 1}) {
            if (onesided && c == 2 && !inverse) continue;  // a onesided forward DFT takes real input
            const bool irfft = inverse && onesided;
            Tensor x = random_tensor(dt, {3, 7, 4, c}, rng);
            const size_t ax = static_cast<size_t>(axis < 0 ? axis + 4 : axis);
            for (int len_kind = 0; len_kind < 4; ++len_kind) {
              std::vector<Tensor> in = {x};
              int64_t n = irfft && !len_kind ? 2 * (x.dims()[ax] - 1) : x.dims()[ax];
              if (len_kind == 1) n = n + 3;                        // zero padded
              if (len_kind == 2) n = std::max<int64_t>(1, n - 2);  // truncated
              if (len_kind == 3) n = 1;
              if (len_kind) in.push_back(scalar(len_kind == 2 ? DataType::kInt32 : DataType::kInt64, n));
              auto r = run_op(
                  "DFT", in,
                  attrs_of({{"axis", axis}, {"inverse", int64_t{inverse}}, {"onesided", int64_t{onesided}}}));
              const std::string what = std::string(dtype_name(dt)) + " c " + std::to_string(c) + " axis " +
                                       std::to_string(axis) + " inverse " + std::to_string(inverse) +
                                       " onesided " + std::to_string(onesided) + " n " + std::to_string(n);
              ASSERT_TRUE(r.is_ok()) << what << ": " << r.status().to_string();
              std::vector<int64_t> od;
              auto want = irfft ? naive_irfft(x, ax, n, &od) : naive_dft(x, ax, n, inverse, onesided, &od);
              EXPECT_EQ(r.value()[0].dims(), od) << what;
              EXPECT_EQ(r.value()[0].dtype(), dt) << what;
              expect_values_close(r.value()[0], want, tol_of(dt), what);
            }
          }
}

TEST(SpectralDft, InverseOfForwardIsIdentity) {
  std::mt19937 rng(seed());
  SCOPED_TRACE("seed " + std::to_string(seed()));
  for (int64_t n : {1, 2, 9, 16, 33}) {
    Tensor x = random_tensor(DataType::kFloat64, {2, n, 3, 2}, rng);
    auto fwd = run_op("DFT", {x}, attrs_of({{"axis", int64_t{1}}}));
    ASSERT_TRUE(fwd.is_ok()) << fwd.status().to_string();
    auto back = run_op("DFT", {fwd.value()[0]}, attrs_of({{"axis", int64_t{1}}, {"inverse", int64_t{1}}}));
    ASSERT_TRUE(back.is_ok()) << back.status().to_string();
    expect_values_close(back.value()[0], testing::values(x), 1e-12, "n " + std::to_string(n));
  }
}

TEST(SpectralDft, OnesidedIsTheFirstHalfOfTheFullSpectrum) {
  std::mt19937 rng(seed());
  SCOPED_TRACE("seed " + std::to_string(seed()));
  for (int64_t n : {1, 2, 9, 10}) {
    Tensor x = random_tensor(DataType::kFloat32, {2, n, 1}, rng);
    auto full = run_op("DFT", {x}, attrs_of({{"axis", int64_t{1}}}));
    auto half = run_op("DFT", {x}, attrs_of({{"axis", int64_t{1}}, {"onesided", int64_t{1}}}));
    ASSERT_TRUE(full.is_ok() && half.is_ok());
    const int64_t bins = n / 2 + 1;
    ASSERT_EQ(half.value()[0].dims(), (std::vector<int64_t>{2, bins, 2}));
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t k = 0; k < bins; ++k)
        for (int64_t p = 0; p < 2; ++p) {
          EXPECT_EQ(half.value()[0].get((b * bins + k) * 2 + p), full.value()[0].get((b * n + k) * 2 + p));
          // Conjugate symmetry of a real signal's spectrum: X[n - k] = conj(X[k]).
          const int64_t mirror = (n - k) % n;
          const double sym = full.value()[0].get((b * n + mirror) * 2 + p) * (p ? -1 : 1);
          EXPECT_NEAR(sym, full.value()[0].get((b * n + k) * 2 + p), 1e-5);
        }
  }
}

TEST(SpectralDft, DftLengthPadsAndTruncates) {
  std::mt19937 rng(seed());
  SCOPED_TRACE("seed " + std::to_string(seed()));
  Tensor x = random_tensor(DataType::kFloat64, {2, 6, 2}, rng);
  // Padded to 11: the same as the DFT of x with five zero samples appended.
  Tensor padded = Tensor::empty(DataType::kFloat64, {2, 11, 2});
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t t = 0; t < 11; ++t)
      for (int64_t p = 0; p < 2; ++p)
        padded.set((b * 11 + t) * 2 + p, t < 6 ? x.get((b * 6 + t) * 2 + p) : 0.0);
  auto a = run_op("DFT", {x, scalar(DataType::kInt64, 11)}, attrs_of({{"axis", int64_t{1}}}));
  auto b = run_op("DFT", {padded}, attrs_of({{"axis", int64_t{1}}}));
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  expect_values_close(a.value()[0], testing::values(b.value()[0]), 1e-12, "padded");
  // Truncated to 4: the DFT of the first four samples.
  Tensor cut = Tensor::empty(DataType::kFloat64, {2, 4, 2});
  for (int64_t bb = 0; bb < 2; ++bb)
    for (int64_t t = 0; t < 4; ++t)
      for (int64_t p = 0; p < 2; ++p) cut.set((bb * 4 + t) * 2 + p, x.get((bb * 6 + t) * 2 + p));
  a = run_op("DFT", {x, scalar(DataType::kInt32, 4)}, attrs_of({{"axis", int64_t{1}}}));
  b = run_op("DFT", {cut}, attrs_of({{"axis", int64_t{1}}}));
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  expect_values_close(a.value()[0], testing::values(b.value()[0]), 1e-12, "truncated");
  // An empty axis with dft_length: all zeros.
  Tensor empty = Tensor::empty(DataType::kFloat32, {2, 0, 1});
  a = run_op("DFT", {empty, scalar(DataType::kInt64, 3)}, attrs_of({{"axis", int64_t{1}}}));
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  expect_values_close(a.value()[0], std::vector<double>(12, 0.0), 0, "empty axis");
}

TEST(SpectralDft, Opset20TakesTheAxisAsAnInput) {
  std::mt19937 rng(seed());
  SCOPED_TRACE("seed " + std::to_string(seed()));
  Tensor x = random_tensor(DataType::kFloat32, {3, 5, 4, 1}, rng);
  // Default axis -2 (the last signal axis).
  auto d = run_op("DFT", {x}, {}, 20);
  ASSERT_TRUE(d.is_ok()) << d.status().to_string();
  std::vector<int64_t> od;
  expect_values_close(d.value()[0], naive_dft(x, 2, 4, false, false, &od), 1e-5, "default axis");
  EXPECT_EQ(d.value()[0].dims(), od);
  // Axis 1 as input 2, with and without dft_length.
  auto a =
      run_op("DFT", {x, Tensor(), scalar(DataType::kInt64, 1)}, attrs_of({{"onesided", int64_t{1}}}), 20);
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  expect_values_close(a.value()[0], naive_dft(x, 1, 5, false, true, &od), 1e-5, "axis input");
  a = run_op("DFT", {x, scalar(DataType::kInt64, 7), scalar(DataType::kInt64, -3)}, {}, 20);
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  expect_values_close(a.value()[0], naive_dft(x, 1, 7, false, false, &od), 1e-5, "axis input and dft_length");
  // The same model form as opset 17's attribute.
  auto b = run_op("DFT", {x, scalar(DataType::kInt64, 7)}, attrs_of({{"axis", int64_t{1}}}), 17);
  ASSERT_TRUE(b.is_ok());
  expect_values_close(a.value()[0], testing::values(b.value()[0]), 0, "opset 17 vs 20");
}

TEST(SpectralDft, Float16AndBFloat16) {
  std::mt19937 rng(seed());
  SCOPED_TRACE("seed " + std::to_string(seed()));
  for (DataType dt : {DataType::kFloat16, DataType::kBFloat16}) {
    Tensor x = random_tensor(dt, {2, 12, 2}, rng);
    auto r = run_op("DFT", {x}, attrs_of({{"axis", int64_t{1}}, {"inverse", int64_t{1}}}));
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_EQ(r.value()[0].dtype(), dt);
    expect_values_close(r.value()[0], naive_dft(x, 1, 12, true, false, nullptr),
                        dt == DataType::kFloat16 ? 2e-3 : 1e-2, dtype_name(dt));
  }
}

TEST(SpectralDft, InferenceKeepsSymbolsAndMarksUnknownLengths) {
  const Dim t = Dim::symbol("T");
  TensorDesc x(DataType::kFloat32, Shape{Dim::symbol("batch"), t, Dim(1)});
  auto r = testing::infer("DFT", {x}, attrs_of({{"axis", int64_t{1}}, {"onesided", int64_t{1}}}), 17);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const Shape& s = *r.value()[0].shape;
  ASSERT_EQ(s.size(), 3u);
  EXPECT_TRUE(s[0].same_as(Dim::symbol("batch")));
  EXPECT_TRUE(s[1].same_as(floor_div(t, Dim(2)) + Dim(1))) << s[1].to_string();
  EXPECT_EQ(s[2], 2);
  // dft_length of unknown value: the axis' extent is a fresh symbol; the rest is kept.
  TensorDesc len(DataType::kInt64, Shape{});
  r = testing::infer("DFT", {x, len}, attrs_of({{"axis", int64_t{1}}}), 17);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_FALSE(r.value()[0].shape->at(1).is_const());
  EXPECT_FALSE(r.value()[0].shape->at(1).same_as(t));
  // Opset 20 with an axis of unknown value: only the rank and the re/im axis are known.
  TensorDesc ax(DataType::kInt64, Shape{});
  r = testing::infer("DFT", {x, TensorDesc(DataType::kInt64, Shape{}), ax}, {}, 20);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r.value()[0].rank(), 3);
  EXPECT_EQ(r.value()[0].shape->at(2), 2);
}

// ---- STFT -----------------------------------------------------------------------------------------

TEST(SpectralStft, FramesMatchTheNaiveSumWithAndWithoutWindow) {
  std::mt19937 rng(seed());
  SCOPED_TRACE("seed " + std::to_string(seed()));
  for (DataType dt : {DataType::kFloat32, DataType::kFloat64})
    for (int64_t c : {1, 2})
      for (int onesided : {0, 1})
        for (int variant = 0; variant < 4; ++variant) {  // no window / window / frame_length / both
          if (onesided && c == 2) continue;
          const int64_t len = 37, fl = variant == 0 ? len : 8, step = 3;
          Tensor x = random_tensor(dt, {2, len, c}, rng);
          Tensor w = random_tensor(dt, {fl}, rng, 0.0, 1.0);
          std::vector<Tensor> in = {x, scalar(DataType::kInt64, step)};
          const bool has_w = variant == 1 || variant == 3, has_fl = variant == 2 || variant == 3;
          in.push_back(has_w ? w : Tensor());
          if (has_fl) in.push_back(scalar(variant == 2 ? DataType::kInt32 : DataType::kInt64, fl));
          auto r = run_op("STFT", in, attrs_of({{"onesided", int64_t{onesided}}}));
          const std::string what = std::string(dtype_name(dt)) + " c " + std::to_string(c) + " onesided " +
                                   std::to_string(onesided) + " variant " + std::to_string(variant);
          ASSERT_TRUE(r.is_ok()) << what << ": " << r.status().to_string();
          std::vector<int64_t> od;
          auto want = naive_stft(x, step, has_w ? &w : nullptr, fl, onesided, &od);
          EXPECT_EQ(r.value()[0].dims(), od) << what;
          expect_values_close(r.value()[0], want, tol_of(dt), what);
        }
}

TEST(SpectralStft, EachFrameIsTheDftOfTheWindowedFrame) {
  std::mt19937 rng(seed());
  SCOPED_TRACE("seed " + std::to_string(seed()));
  const int64_t len = 50, fl = 16, step = 5, frames = (len - fl) / step + 1;
  Tensor x = random_tensor(DataType::kFloat64, {1, len, 1}, rng);
  Tensor w = random_tensor(DataType::kFloat64, {fl}, rng, 0.0, 1.0);
  auto s = run_op("STFT", {x, scalar(DataType::kInt64, step), w});  // onesided by default
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  const int64_t bins = fl / 2 + 1;
  ASSERT_EQ(s.value()[0].dims(), (std::vector<int64_t>{1, frames, bins, 2}));
  for (int64_t f = 0; f < frames; ++f) {
    Tensor frame = Tensor::empty(DataType::kFloat64, {fl, 1});
    for (int64_t m = 0; m < fl; ++m) frame.set(m, x.get(f * step + m) * w.get(m));
    auto d = run_op("DFT", {frame}, attrs_of({{"axis", int64_t{0}}, {"onesided", int64_t{1}}}));
    ASSERT_TRUE(d.is_ok()) << d.status().to_string();
    for (int64_t i = 0; i < 2 * bins; ++i)
      EXPECT_NEAR(s.value()[0].get(f * 2 * bins + i), d.value()[0].get(i), 1e-12)
          << "frame " << f << " value " << i;
  }
}

TEST(SpectralStft, InferenceWithSymbolicLengthAndUnknownStep) {
  const Dim t = Dim::symbol("T");
  TensorDesc x(DataType::kFloat32, Shape{Dim(2), t, Dim(1)});
  TensorDesc w(DataType::kFloat32, Shape{Dim(8)});
  TensorDesc step(DataType::kInt64, Shape{});
  auto r = testing::infer("STFT", {x, step, w}, {}, 17);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const Shape& s = *r.value()[0].shape;
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0], 2);
  EXPECT_FALSE(s[1].is_const());  // the step is not known at build time
  EXPECT_EQ(s[2], 5);             // onesided: 8 / 2 + 1
  EXPECT_EQ(s[3], 2);
}

// ---- errors ---------------------------------------------------------------------------------------

TEST(SpectralErrors, BadAttributesNameTheAttribute) {
  Tensor real = Tensor::empty(DataType::kFloat32, {2, 8, 1});
  Tensor cplx = Tensor::empty(DataType::kFloat32, {2, 8, 2});
  for (Tensor* t : {&real, &cplx})
    for (int64_t i = 0; i < t->numel(); ++i) t->set(i, 0.25);
  struct Bad {
    std::vector<Tensor> in;
    AttributeMap attrs;
    int opset;
    std::string attr, text;
  };
  const std::vector<Bad> bad = {
      {{real}, attrs_of({{"axis", int64_t{2}}}), 17, "axis", "outside"},
      {{real}, attrs_of({{"axis", int64_t{-1}}}), 17, "axis", "real and imaginary"},
      {{real}, attrs_of({{"axis", int64_t{-4}}}), 17, "axis", "outside"},
      {{real}, attrs_of({{"inverse", int64_t{2}}}), 17, "inverse", "0 or 1"},
      {{real}, attrs_of({{"onesided", int64_t{-1}}}), 17, "onesided", "0 or 1"},
      {{cplx}, attrs_of({{"onesided", int64_t{1}}}), 17, "onesided", "complex"},
      {{real}, attrs_of({{"axis", int64_t{1}}}), 20, "axis", "input 2"},
  };
  for (const Bad& b : bad) {
    auto r = run_op("DFT", b.in, b.attrs, b.opset);
    ASSERT_FALSE(r.is_ok()) << b.attr << " " << b.text;
    EXPECT_EQ(r.status().attribute(), b.attr) << r.status().to_string();
    EXPECT_TRUE(contains(r.status().to_string(), b.text)) << r.status().to_string();
  }
  auto s = run_op("STFT", {cplx, scalar(DataType::kInt64, 2)});  // onesided defaults to 1
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.status().attribute(), "onesided") << s.status().to_string();
  s = run_op("STFT", {real, scalar(DataType::kInt64, 2)}, attrs_of({{"onesided", int64_t{3}}}));
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.status().attribute(), "onesided") << s.status().to_string();
}

TEST(SpectralErrors, BadInputsAreClearErrors) {
  Tensor real = Tensor::empty(DataType::kFloat32, {2, 8, 1});
  for (int64_t i = 0; i < real.numel(); ++i) real.set(i, 1.0);
  struct Bad {
    std::string op;
    std::vector<Tensor> in;
    int opset;
    std::string text;
  };
  const std::vector<Bad> bad = {
      {"DFT", {Tensor::empty(DataType::kFloat32, {8})}, 17, "rank >= 2"},
      {"DFT", {Tensor::empty(DataType::kFloat32, {2, 8, 3})}, 17, "1 (real) or 2 (complex)"},
      {"DFT", {Tensor::empty(DataType::kInt32, {2, 8, 1})}, 17, "dtype"},
      {"DFT", {real, scalar(DataType::kInt64, 0)}, 17, "dft_length must be >= 1"},
      {"DFT", {real, scalar(DataType::kInt64, -5)}, 17, "dft_length must be >= 1"},
      {"DFT", {real, Tensor::from_doubles(DataType::kInt64, {2}, {4, 4})}, 17, "scalar"},
      {"DFT", {real, scalar(DataType::kFloat32, 4)}, 17, "dtype"},
      {"DFT", {real, Tensor(), scalar(DataType::kInt64, 1)}, 17, "opset 20"},
      {"DFT", {real, Tensor(), scalar(DataType::kInt64, 5)}, 20, "outside"},
      {"DFT", {real, Tensor(), scalar(DataType::kInt32, 1)}, 20, "dtype"},
      {"DFT", {Tensor::empty(DataType::kFloat32, {2, 0, 1})}, 17, "empty"},
      {"STFT", {real, scalar(DataType::kInt64, 0)}, 17, "frame_step must be >= 1"},
      {"STFT",
       {real, scalar(DataType::kInt64, 1), Tensor(), scalar(DataType::kInt64, 9)},
       17,
       "exceeds the signal"},
      {"STFT", {real, scalar(DataType::kInt64, 1), Tensor(), scalar(DataType::kInt64, 0)}, 17, ">= 1"},
      {"STFT",
       {real, scalar(DataType::kInt64, 1), Tensor::empty(DataType::kFloat32, {4}),
        scalar(DataType::kInt64, 5)},
       17,
       "must agree"},
      {"STFT", {real, scalar(DataType::kInt64, 1), Tensor::empty(DataType::kFloat64, {4})}, 17, "dtype"},
      {"STFT", {real, scalar(DataType::kInt64, 1), Tensor::empty(DataType::kFloat32, {2, 2})}, 17, "1-D"},
      {"STFT",
       {Tensor::empty(DataType::kFloat32, {8, 1}), scalar(DataType::kInt64, 1)},
       17,
       "[batch, length"},
  };
  for (const Bad& b : bad) {
    auto r = run_op(b.op, b.in, {}, b.opset);
    ASSERT_FALSE(r.is_ok()) << b.op << " " << b.text;
    EXPECT_TRUE(contains(r.status().to_string(), b.text)) << r.status().to_string();
  }
}

TEST(SpectralErrors, AbsurdSizesAreRefusedBeforeAnyWork) {
  Tensor x = Tensor::empty(DataType::kFloat32, {1, 4, 1});
  for (int64_t i = 0; i < 4; ++i) x.set(i, 1.0);
  // A transform length beyond the bound.
  auto r = run_op("DFT", {x, scalar(DataType::kInt64, int64_t{1} << 40)}, attrs_of({{"axis", int64_t{1}}}));
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported) << r.status().to_string();
  // Quadratic work beyond the bound on a modest tensor: 70000 bins of 70000 samples.
  auto work = dft_layout({1, 70000, 1}, 1, std::nullopt, DftAttrs{});
  ASSERT_FALSE(work.is_ok());
  EXPECT_EQ(work.status().code(), StatusCode::kUnsupported);
  EXPECT_TRUE(contains(work.status().to_string(), "multiply-adds")) << work.status().to_string();
  TensorDesc big(DataType::kFloat32, Shape{Dim(1), Dim(70000), Dim(1)});
  auto inf = testing::infer("DFT", {big}, attrs_of({{"axis", int64_t{1}}}), 17);
  ASSERT_FALSE(inf.is_ok());
  EXPECT_EQ(inf.status().code(), StatusCode::kUnsupported);
  auto st = stft_layout({64, 100000, 1}, 1, std::nullopt, int64_t{4096}, false);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.status().code(), StatusCode::kUnsupported);
  // A huge step is one frame; a step whose scalar offset (step * 2 for complex) overflows int64 is
  // refused, not wrapped.
  auto one = stft_layout({1, 8, 1}, INT64_MAX, std::nullopt, int64_t{4}, false);
  ASSERT_TRUE(one.is_ok()) << one.status().to_string();
  EXPECT_EQ(one.value().frames, 1);
  auto ov = stft_layout({1, 8, 2}, INT64_MAX, std::nullopt, int64_t{4}, false);
  ASSERT_FALSE(ov.is_ok());
}

TEST(SpectralErrors, ThroughTheEngineErrorsNameTheNode) {
  {
    OnnxModelBuilder b(17);
    b.input("x", DataType::kFloat32, {1, 8, 1});
    OnnxModelBuilder::attr(b.node("DFT", {"x"}, {"y"}, "spectrum"), "axis", int64_t{5});
    b.output("y", DataType::kFloat32);
    auto e = Engine::build_from_onnx_bytes(b.bytes(), BuilderConfig{}, "dft.onnx");
    ASSERT_FALSE(e.is_ok());
    EXPECT_EQ(e.status().node_name(), "spectrum") << e.status().to_string();
    EXPECT_EQ(e.status().attribute(), "axis") << e.status().to_string();
  }
  // STFT with the step and frame length as graph inputs (as the ONNX suite has them): shapes
  // resolve at run time, and a bad step fails the run naming the node.
  OnnxModelBuilder b(17);
  b.input("signal", DataType::kFloat32, {1, 32, 1});
  b.input("step", DataType::kInt64, {});
  b.input("fl", DataType::kInt64, {});
  b.node("STFT", {"signal", "step", "", "fl"}, {"y"}, "spectrogram");
  b.output("y", DataType::kFloat32);
  auto e = Engine::build_from_onnx_bytes(b.bytes(), BuilderConfig{}, "stft.onnx");
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  auto ctx = e.value()->create_context();
  ASSERT_TRUE(ctx.is_ok()) << ctx.status().to_string();
  std::mt19937 rng(seed());
  Tensor x = random_tensor(DataType::kFloat32, {1, 32, 1}, rng);
  std::map<std::string, Tensor> in = {
      {"signal", x}, {"step", scalar(DataType::kInt64, 4)}, {"fl", scalar(DataType::kInt64, 8)}};
  std::map<std::string, Tensor> out;
  Status st = ctx.value()->run(in, out);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  std::vector<int64_t> od;
  auto want = naive_stft(x, 4, nullptr, 8, true, &od);
  EXPECT_EQ(out["y"].dims(), od);
  expect_values_close(out["y"], want, 1e-5, "engine STFT");
  in["step"] = scalar(DataType::kInt64, 0);
  out.clear();
  st = ctx.value()->run(in, out);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.node_name(), "spectrogram") << st.to_string();
  EXPECT_TRUE(contains(st.to_string(), "frame_step")) << st.to_string();
}

}  // namespace
}  // namespace graft
