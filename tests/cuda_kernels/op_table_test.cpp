// The CUDA op table as the generated family list (src/CMakeLists.txt) builds it: each op type once
// (the engine takes the first row of a name), and each a builtin op of the table the builder reads.
// Needs no GPU.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>

#include "backends/cuda/cuda_ops.h"
#include "graft/op.h"
#include "ops/internal_ops.h"
#include "ops/operator.h"

namespace graft::cuda {
namespace {

TEST(CudaOpTable, EveryOpTypeOnceAndEachABuiltinOp) {
  std::set<std::string> seen;
  for (const CudaOp& op : cuda_ops()) {
    const std::string type = op.op_type;
    EXPECT_TRUE(seen.insert(type).second) << "two CUDA rows for " << type;
    EXPECT_TRUE(find_onnx_op(type) || find_builtin_op(kInternalDomain, type)) << type << " has no builtin row";
  }
  // One op of each family with CUDA code, so a family whose function the list dropped is noticed.
  for (const char* type : {"Loop", "NonZero", "Relu", "GraftConv", "ScatterND", "QLinearConv", "NegativeLogLikelihoodLoss",
                           "LpPool", "Det", "Conv", "ConvTranspose", "QuantizeLinear", "RandomNormal", "LSTM",
                           "Softmax", "Resize", "GridSample", "TopK", "Concat", "DFT", "TfIdfVectorizer",
                           "GraftAttention", "MaxUnpool", "GraftViewChain", "MaxRoiPool"})
    EXPECT_NE(find_cuda_op(type), nullptr) << type;
}

// A node finds the CUDA op of its builtin definition, domain included: a default-domain node named
// like an internal op finds none (the importer refuses such a model; this keeps the two lookups
// the same one).
TEST(CudaOpTable, NodesFindTheKernelOfTheirDefinition) {
  Node relu, internal, impostor, unknown;
  relu.op_type = "Relu";
  internal.op_type = impostor.op_type = "GraftConv";
  internal.domain = kInternalDomain;
  unknown.op_type = "NoSuchOp";
  EXPECT_EQ(cuda_op_for(relu), find_cuda_op("Relu"));
  ASSERT_NE(cuda_op_for(internal), nullptr);
  EXPECT_EQ(cuda_op_for(internal), find_cuda_op("GraftConv"));
  EXPECT_EQ(cuda_op_for(impostor), nullptr);
  EXPECT_EQ(cuda_op_for(unknown), nullptr);
  for (const OpEntry& e : builtin_ops())
    if (const CudaOp* c = cuda_op_of(e)) EXPECT_STREQ(c->op_type, e.op_type);
}

// A custom-op node finds its CUDA op the same way, through its op entry, whatever its layout trait:
// the one CUDA op that calls the node's OpDef.
TEST(CudaOpTable, CustomOpNodesFindTheirKernelThroughTheirEntry) {
  auto plain = std::make_shared<OpDef>("TableTestOp");
  auto nhwc = std::make_shared<OpDef>("TableTestOpNhwc");
  nhwc->channels_last_io();
  for (const auto& def : {plain, nhwc}) {
    Node n;
    n.op_type = def->name();
    n.domain = "ai.onnx.contrib";
    n.custom_op = def;
    EXPECT_EQ(cuda_op_for(n), &custom_cuda_op()) << def->name();
  }
  for (const OpEntry* e : custom_op_entries()) EXPECT_EQ(cuda_op_of(*e), &custom_cuda_op());
}

}  // namespace
}  // namespace graft::cuda
