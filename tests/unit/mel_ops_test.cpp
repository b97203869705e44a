// MelWeightMatrix (definition and CPU reference: src/ops/spectral/spectral.cpp) against
// the spec's recipe written here per weight on fresh random sizes and edges: shapes, the triangles'
// shape (rising to 1, falling to 0), output dtypes; then bad inputs and attributes, and run-time
// shapes through the engine (the sizes as graph inputs, as the ONNX suite has them).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "graft/engine.h"
#include "onnx_model_builder.h"
#include "op_test_util.h"

namespace graft {
namespace {

using testing::attrs_of;
using testing::OnnxModelBuilder;
using testing::run_op;

uint32_t seed() {
  static const uint32_t s = std::random_device{}();
  return s;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

Tensor iscalar(DataType dt, int64_t v) { return Tensor::from_doubles(dt, {}, {static_cast<double>(v)}); }
Tensor fscalar(double v) { return Tensor::from_doubles(DataType::kFloat32, {}, {v}); }

// The spec's weights: num_mel_bins + 2 edges evenly spaced on the mel scale (step: the range over
// num_mel_bins + 2), mapped to spectrogram bins; weight (j, i) on the triangle over edges i..i+2.
std::vector<double> naive_mel(int64_t mels, int64_t dft, int64_t rate, double lo, double hi) {
  const int64_t bins = dft / 2 + 1;
  auto mel = [](double f) { return 2595.0 * std::log10(1.0 + f / 700.0); };
  const double step = (mel(hi) - mel(lo)) / static_cast<double>(mels + 2);
  std::vector<int64_t> e;
  for (int64_t i = 0; i < mels + 2; ++i) {
    const double hz = 700.0 * (std::pow(10.0, (mel(lo) + step * static_cast<double>(i)) / 2595.0) - 1.0);
    e.push_back(
        static_cast<int64_t>(std::floor(static_cast<double>(dft + 1) * hz / static_cast<double>(rate))));
  }
  std::vector<double> w;
  for (int64_t j = 0; j < bins; ++j)
    for (int64_t i = 0; i < mels; ++i) {
      const int64_t l = e[static_cast<size_t>(i)], c = e[static_cast<size_t>(i + 1)],
                    r = e[static_cast<size_t>(i + 2)];
      double v = 0.0;
      if (j == c)
        v = 1.0;
      else if (l <= j && j < c)
        v = static_cast<double>(j - l) / static_cast<double>(c - l);
      else if (c < j && j < r)
        v = static_cast<double>(r - j) / static_cast<double>(r - c);
      w.push_back(v);
    }
  return w;
}

TEST(MelWeightMatrix, RandomSizesAgainstTheRecipe) {
  SCOPED_TRACE("seed " + std::to_string(seed()));
  std::mt19937 rng(seed());
  std::uniform_int_distribution<int64_t> mels_d(1, 40), dft_d(8, 1024);
  std::uniform_real_distribution<double> frac(0.0, 1.0);
  const int64_t rates[] = {8000, 16000, 22050, 44100};
  for (int trial = 0; trial < 30; ++trial) {
    const int64_t mels = mels_d(rng), dft = dft_d(rng), rate = rates[trial % 4];
    // Edges within [0, rate / 2]; float32 values, as the inputs carry them.
    double lo = static_cast<float>(frac(rng) * rate / 4),
           hi = static_cast<float>(rate / 4 + frac(rng) * rate / 4);
    const std::string what = "mels " + std::to_string(mels) + " dft " + std::to_string(dft) + " rate " +
                             std::to_string(rate) + " edges " + std::to_string(lo) + ".." +
                             std::to_string(hi);
    const DataType it = trial % 2 ? DataType::kInt64 : DataType::kInt32;
    auto r =
        run_op("MelWeightMatrix",
               {iscalar(it, mels), iscalar(it, dft), iscalar(it, rate), fscalar(lo), fscalar(hi)}, {}, 17);
    ASSERT_TRUE(r.is_ok()) << what << ": " << r.status().to_string();
    const Tensor& y = r.value()[0];
    EXPECT_EQ(y.dtype(), DataType::kFloat32);
    ASSERT_EQ(y.dims(), (std::vector<int64_t>{dft / 2 + 1, mels})) << what;
    testing::expect_values_close(y, naive_mel(mels, dft, rate, lo, hi), 1e-7, what);
    // Every band peaks at exactly 1.
    for (int64_t i = 0; i < mels; ++i) {
      double peak = 0;
      for (int64_t j = 0; j < dft / 2 + 1; ++j) peak = std::max(peak, y.get(j * mels + i));
      EXPECT_EQ(peak, 1.0) << what << " band " << i;
    }
  }
}

TEST(MelWeightMatrix, OutputDatatypes) {
  const std::vector<Tensor> in = {iscalar(DataType::kInt32, 8), iscalar(DataType::kInt32, 64),
                                  iscalar(DataType::kInt32, 16000), fscalar(100), fscalar(7000)};
  const auto want = naive_mel(8, 64, 16000, 100, 7000);
  auto d = run_op("MelWeightMatrix", in, attrs_of({{"output_datatype", int64_t{11}}}), 17);
  ASSERT_TRUE(d.is_ok()) << d.status().to_string();
  EXPECT_EQ(d.value()[0].dtype(), DataType::kFloat64);
  testing::expect_values_close(d.value()[0], want, 1e-15, "float64");
  auto h = run_op("MelWeightMatrix", in, attrs_of({{"output_datatype", int64_t{10}}}), 17);
  ASSERT_TRUE(h.is_ok()) << h.status().to_string();
  EXPECT_EQ(h.value()[0].dtype(), DataType::kFloat16);
  testing::expect_values_close(h.value()[0], want, 1e-3, "float16");
  // Integer weights truncate, as Cast does: only the peaks stay.
  auto i = run_op("MelWeightMatrix", in, attrs_of({{"output_datatype", int64_t{6}}}), 17);
  ASSERT_TRUE(i.is_ok()) << i.status().to_string();
  EXPECT_EQ(i.value()[0].dtype(), DataType::kInt32);
  std::vector<double> trunc;
  for (double v : want) trunc.push_back(std::trunc(v));
  testing::expect_values_close(i.value()[0], trunc, 0, "int32");
}

TEST(MelWeightMatrix, BadInputsAndAttributes) {
  const Tensor m = iscalar(DataType::kInt64, 8), n = iscalar(DataType::kInt64, 16),
               sr = iscalar(DataType::kInt64, 8000);
  struct Bad {
    std::vector<Tensor> in;
    AttributeMap attrs;
    std::string text;
  };
  const std::vector<Bad> bad = {
      {{iscalar(DataType::kInt64, -1), n, sr, fscalar(0), fscalar(4000)}, {}, "num_mel_bins must be >= 0"},
      {{m, iscalar(DataType::kInt64, 0), sr, fscalar(0), fscalar(4000)}, {}, "dft_length must be >= 1"},
      {{m, n, iscalar(DataType::kInt64, 0), fscalar(0), fscalar(4000)}, {}, "sample_rate must be >= 1"},
      {{m, n, sr, fscalar(0), fscalar(6000)}, {}, "upper_edge_hertz"},
      {{m, n, sr, fscalar(3000), fscalar(1000)}, {}, "upper_edge_hertz must be"},
      {{m, n, sr, fscalar(-5), fscalar(1000)}, {}, "lower_edge_hertz must be"},
      {{m, n, sr, fscalar(0), fscalar(NAN)}, {}, "upper_edge_hertz must be"},
      {{Tensor::from_doubles(DataType::kInt64, {2}, {8, 8}), n, sr, fscalar(0), fscalar(4000)}, {}, "scalar"},
      {{fscalar(8), n, sr, fscalar(0), fscalar(4000)}, {}, "dtype"},
      {{m, n, sr, iscalar(DataType::kInt32, 0), fscalar(4000)}, {}, "dtype"},
      {{m, n, sr, fscalar(0)}, {}, "missing"},
      {{iscalar(DataType::kInt64, int64_t{1} << 20), iscalar(DataType::kInt64, int64_t{1} << 20), sr,
        fscalar(0), fscalar(4000)},
       {},
       "exceeds"},
  };
  for (const Bad& b : bad) {
    auto r = run_op("MelWeightMatrix", b.in, b.attrs, 17);
    ASSERT_FALSE(r.is_ok()) << b.text;
    EXPECT_TRUE(contains(r.status().to_string(), b.text)) << r.status().to_string();
  }
  for (int64_t odt : {int64_t{9}, int64_t{8}, int64_t{-1}}) {
    auto r = run_op("MelWeightMatrix", {m, n, sr, fscalar(0), fscalar(4000)},
                    attrs_of({{"output_datatype", odt}}), 17);
    ASSERT_FALSE(r.is_ok()) << odt;
    EXPECT_EQ(r.status().attribute(), "output_datatype") << r.status().to_string();
  }
}

TEST(MelWeightMatrix, RunTimeSizesThroughTheEngine) {
  OnnxModelBuilder b(17);
  b.input("mels", DataType::kInt32, {});
  b.input("dft", DataType::kInt32, {});
  b.input("rate", DataType::kInt32, {});
  b.input("lo", DataType::kFloat32, {});
  b.input("hi", DataType::kFloat32, {});
  b.node("MelWeightMatrix", {"mels", "dft", "rate", "lo", "hi"}, {"w"}, "filterbank");
  b.output("w", DataType::kFloat32);
  auto e = Engine::build_from_onnx_bytes(b.bytes(), BuilderConfig{}, "mel.onnx");
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  auto ctx = e.value()->create_context();
  ASSERT_TRUE(ctx.is_ok()) << ctx.status().to_string();
  std::map<std::string, Tensor> in = {{"mels", iscalar(DataType::kInt32, 10)},
                                      {"dft", iscalar(DataType::kInt32, 128)},
                                      {"rate", iscalar(DataType::kInt32, 16000)},
                                      {"lo", fscalar(20)},
                                      {"hi", fscalar(8000)}};
  std::map<std::string, Tensor> out;
  Status st = ctx.value()->run(in, out);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(out["w"].dims(), (std::vector<int64_t>{65, 10}));
  testing::expect_values_close(out["w"], naive_mel(10, 128, 16000, 20, 8000), 1e-7, "engine");
  // Far past the Nyquist frequency, the top band leaves the matrix. (The top edge is the point
  // num_mel_bins + 1 of num_mel_bins + 2 steps, short of upper_edge_hertz: an edge a little past
  // the Nyquist frequency may still fit.)
  in["hi"] = fscalar(20000);
  out.clear();
  st = ctx.value()->run(in, out);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.node_name(), "filterbank") << st.to_string();
  EXPECT_TRUE(contains(st.to_string(), "upper_edge_hertz")) << st.to_string();
}

}  // namespace
}  // namespace graft
