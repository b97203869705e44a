// The per-layer profile table (graft run --profile): columns, the tactic column only when a layer
// names its tactic, the total line.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graft/cuda_engine.h"

namespace graft {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < text.size()) {
    const size_t nl = text.find('\n', at);
    out.push_back(text.substr(at, nl - at));
    at = nl == std::string::npos ? text.size() : nl + 1;
  }
  return out;
}

TEST(LayerTimings, TableHasATacticColumnOnlyWhenALayerNamesOne) {
  LayerTiming conv{"/conv1/Conv", "GraftConv", "cuda", 0.0685, 60.0, "tensor-core NHWC (variant 7)"};
  LayerTiming pool{"/pool/GlobalAveragePool", "GraftPool", "cuda", 0.0124, 40.0, ""};
  const auto with = lines_of(format_layer_timings({conv, pool}));
  ASSERT_EQ(with.size(), 4u);  // header, two layers, total
  EXPECT_NE(with[0].find("tactic"), std::string::npos) << with[0];
  EXPECT_NE(with[1].find("0.0685"), std::string::npos) << with[1];
  EXPECT_EQ(with[1].substr(with[1].size() - conv.tactic.size()), conv.tactic) << "the tactic ends its row";
  EXPECT_EQ(with[2].find("variant"), std::string::npos) << "a layer without a tactic leaves the column empty";
  EXPECT_EQ(with[3].rfind("total", 0), 0u) << with[3];
  EXPECT_NE(with[3].find("0.0809"), std::string::npos) << with[3];

  pool.tactic.clear();
  conv.tactic.clear();
  const auto without = lines_of(format_layer_timings({conv, pool}));
  ASSERT_EQ(without.size(), 4u);
  EXPECT_EQ(without[0].find("tactic"), std::string::npos) << "no tactic column when no layer has one";
  EXPECT_EQ(without[1].substr(0, conv.name.size()), conv.name);
}

}  // namespace
}  // namespace graft
