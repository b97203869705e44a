// The builtin op table as the generated family list (src/CMakeLists.txt) builds it: one row per
// domain and op type, graft's internal ops in their own domain and only there, and every family
// folder present.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "ops/internal_ops.h"
#include "ops/operator.h"

namespace graft {
namespace {

TEST(OpTables, EveryDomainAndOpTypeOnce) {
  std::set<std::string> seen;
  for (const OpEntry& op : builtin_ops())
    EXPECT_TRUE(seen.insert(std::string(op.domain) + "::" + op.op_type).second)
        << "two rows for " << op.domain << "::" << op.op_type;
}

TEST(OpTables, InternalOpsAreGraftNamedAndOnlyInTheirDomain) {
  int internal = 0;
  for (const OpEntry& op : builtin_ops()) {
    const std::string type = op.op_type, domain = op.domain;
    const bool graft_named = type.rfind("Graft", 0) == 0;
    if (domain == kInternalDomain) {
      ++internal;
      EXPECT_TRUE(graft_named) << "internal op " << type << " does not start with Graft";
      EXPECT_EQ(find_onnx_op(type), nullptr) << type << " is also an ONNX op";
    } else {
      EXPECT_EQ(domain, "") << type;
      EXPECT_FALSE(graft_named) << type << " is in the ONNX domain: wrap its row in internal_op()";
    }
  }
  // The internal ops of the fused_conv, transformer, views, quantize and reduce_norm families.
  for (const char* type : {"GraftConv", "GraftPool", "GraftChannelsLast", "GraftGemm", "GraftElementwise",
                           "GraftAttention", "GraftStridedCopy", "GraftViewChain", "GraftConcatSlices",
                           "GraftQuantizeDequantize", "GraftL2Normalize"})
    EXPECT_NE(find_builtin_op(kInternalDomain, type), nullptr) << type;
  EXPECT_EQ(internal, 11) << "an internal op was added: list it above";
}

// Each folder of src/ops with a <family>.cpp is a family in the list CMake generated, whose
// functions the tables call; and a few ops of every family are in the table.
TEST(OpTables, EveryFamilyFolderIsRegistered) {
  const std::filesystem::path ops = std::filesystem::path(GRAFT_SOURCE_DIR) / "src" / "ops";
  std::ifstream in(std::filesystem::path(GRAFT_BINARY_DIR) / "src" / "generated" / "ops" / "op_families.inc");
  ASSERT_TRUE(in.good()) << "no generated family list in the build folder";
  std::set<std::string> listed;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("GRAFT_OP_FAMILY(", 0) == 0) listed.insert(line.substr(16, line.size() - 17));
  int families = 0;
  for (const auto& dir : std::filesystem::directory_iterator(ops)) {
    const std::string family = dir.path().filename().string();
    if (!dir.is_directory() || !std::filesystem::exists(dir.path() / (family + ".cpp"))) continue;
    ++families;
    EXPECT_TRUE(listed.count(family)) << "family folder " << family << " is not in the generated list";
  }
  EXPECT_EQ(listed.size(), static_cast<size_t>(families));
  for (const char* type : {"Relu", "Conv", "ReduceMean", "Reshape", "TopK", "GatherND", "Resize", "GridSample",
                           "NonZero", "NegativeLogLikelihoodLoss", "QuantizeLinear", "Det", "DFT", "LpPool",
                           "MaxRoiPool", "QLinearConv", "TfIdfVectorizer", "StringNormalizer", "RandomNormal",
                           "MaxUnpool", "LSTM", "Loop", "SequenceAt", "ConvTranspose"})
    EXPECT_NE(find_onnx_op(type), nullptr) << type;
}

}  // namespace
}  // namespace graft
