// The builtin op table as the generated list of table functions (src/CMakeLists.txt) builds it: one
// row per domain and op type, graft's internal ops in their own domain and only there, and every
// table function of the op folders called.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
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
  for (const char* type : {"GraftConv", "GraftConvInt8", "GraftPool", "GraftChannelsLast", "GraftGemm", "GraftElementwise",
                           "GraftAttention", "GraftStridedCopy", "GraftViewChain", "GraftConcatSlices",
                           "GraftQuantizeDequantize", "GraftL2Normalize"})
    EXPECT_NE(find_builtin_op(kInternalDomain, type), nullptr) << type;
  EXPECT_EQ(internal, 12) << "an internal op was added: list it above";
}

// The table functions CMake listed (src/CMakeLists.txt) are exactly those the op folders define,
// each once: every `append_<name>_ops` of an ops/<family>/*.cpp and every `append_cuda_<name>_ops`
// of an ops/<family>/*.cu or *_cuda.cpp, read here with a regex of the test's own; every family
// folder defines at least one; and a few ops of every family are in the table.
std::multiset<std::string> generated_list(const char* file, const std::string& macro) {
  std::ifstream in(std::filesystem::path(GRAFT_BINARY_DIR) / "src" / "generated" / "ops" / file);
  EXPECT_TRUE(in.good()) << "no generated " << file << " in the build folder";
  std::multiset<std::string> listed;
  for (std::string line; std::getline(in, line);)
    if (line.rfind(macro + "(", 0) == 0) listed.insert(line.substr(macro.size() + 1, line.size() - macro.size() - 2));
  return listed;
}

TEST(OpTables, EveryTableFunctionOfTheOpFoldersIsListedOnce) {
  const std::filesystem::path ops = std::filesystem::path(GRAFT_SOURCE_DIR) / "src" / "ops";
  const std::regex cpu_fn(R"(^void append_([a-z0-9_]+)_ops\(std::vector<OpEntry>& [a-z_]+\) \{)");
  const std::regex cuda_fn(R"(^void append_cuda_([a-z0-9_]+)_ops\(std::vector<CudaOp>& [a-z_]+\) \{)");
  // A definition CMake would not recognize (another spelling of the signature, a line break inside
  // it) would leave its ops out of the tables: every `void append_..._ops(` line must be one of the two.
  const std::regex any_fn(R"(^void append_[A-Za-z0-9_]*_ops\()");
  const std::regex declaration(R"(\)\s*;\s*(//.*)?$)");
  std::multiset<std::string> cpu_defined, cuda_defined;
  int families = 0;
  for (const auto& dir : std::filesystem::directory_iterator(ops)) {
    if (!dir.is_directory()) continue;
    ++families;
    size_t functions = 0;
    for (const auto& file : std::filesystem::directory_iterator(dir.path())) {
      const std::string ext = file.path().extension().string();
      if (ext != ".cpp" && ext != ".cu") continue;
      std::ifstream in(file.path());
      std::smatch m;
      for (std::string line; std::getline(in, line);) {
        if (std::regex_search(line, m, cuda_fn)) cuda_defined.insert(m[1]), ++functions;
        else if (std::regex_search(line, m, cpu_fn)) cpu_defined.insert(m[1]), ++functions;
        else if (std::regex_search(line, any_fn) && !std::regex_search(line, declaration))
          ADD_FAILURE() << file.path() << ": '" << line << "' is not the signature CMake's scan reads: "
                        << "void append_<name>_ops(std::vector<OpEntry>& out) { (or append_cuda_..., CudaOp)";
      }
    }
    EXPECT_GT(functions, 0u) << "op folder " << dir.path().filename() << " defines no table function";
  }
  EXPECT_GT(families, 20);
  const auto cpu_listed = generated_list("op_tables.inc", "GRAFT_OP_TABLE");
  const auto cuda_listed = generated_list("cuda_op_tables.inc", "GRAFT_CUDA_OP_TABLE");
  EXPECT_EQ(cpu_listed, cpu_defined) << "rerun CMake: the generated list is stale";
  EXPECT_EQ(cuda_listed, cuda_defined) << "rerun CMake: the generated list is stale";
  for (const auto& name : cpu_listed) EXPECT_EQ(cpu_listed.count(name), 1u) << "append_" << name << "_ops twice";
  for (const auto& name : cuda_listed) EXPECT_EQ(cuda_listed.count(name), 1u) << "append_cuda_" << name << "_ops twice";
  for (const char* type : {"Relu", "Conv", "ReduceMean", "Reshape", "TopK", "GatherND", "Resize", "GridSample",
                           "NonZero", "NegativeLogLikelihoodLoss", "QuantizeLinear", "Det", "DFT", "LpPool",
                           "MaxRoiPool", "QLinearConv", "TfIdfVectorizer", "StringNormalizer", "RandomNormal",
                           "MaxUnpool", "LSTM", "Loop", "SequenceAt", "ConvTranspose"})
    EXPECT_NE(find_onnx_op(type), nullptr) << type;
}

}  // namespace
}  // namespace graft
