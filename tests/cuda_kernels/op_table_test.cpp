// The CUDA op table as the generated family list (src/CMakeLists.txt) builds it: each op type once
// (the engine takes the first row of a name), and each a builtin op of the table the builder reads.
// Needs no GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "backends/cuda/cuda_ops.h"
#include "graft/op.h"
#include "graph/graph.h"
#include "onnx/builtin_schema.h"
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

// Every builtin CUDA op declares the dtypes its kernels are built for (its kernel keys), except the
// ops whose values are sequences, optionals or subgraph results. Each key lists each dtype once and,
// where the op's ONNX schema (opset 17, libonnx's newest) has the value, shares a dtype with what the
// schema allows there, so a key on the wrong value shows. (A key may list more than the schema: graft's kernels take
// float16 Range or bfloat16 TopK, which the opset-17 schemas predate or leave out.)
TEST(CudaOpTable, EveryBuiltinKernelDeclaresItsDtypes) {
  for (const CudaOp& op : cuda_ops()) {
    if (op.makes_outputs) {
      EXPECT_TRUE(op.dtypes.empty()) << op.op_type;
      continue;
    }
    ASSERT_FALSE(op.dtypes.empty()) << op.op_type << " declares no kernel dtypes";
    std::optional<BuiltinSchema> schema = find_onnx_op(op.op_type) ? onnx_op_schema(op.op_type, newest_schema_opset())
                                                                    : std::nullopt;
    std::set<std::pair<bool, int>> keyed;
    for (const KernelDtypes& key : op.dtypes) {
      EXPECT_TRUE(keyed.insert({key.output, key.index}).second) << op.op_type << ": " << key.value_name() << " twice";
      EXPECT_GE(key.index, 0) << op.op_type;
      EXPECT_FALSE(key.dtypes.empty()) << op.op_type << ": " << key.value_name();
      std::set<DataType> once(key.dtypes.begin(), key.dtypes.end());
      EXPECT_EQ(once.size(), key.dtypes.size()) << op.op_type << ": " << key.value_name() << " lists a dtype twice";
      if (!schema) continue;
      const std::vector<IOSpec>& specs = key.output ? schema->outputs : schema->inputs;
      const bool variadic = !specs.empty() && specs.back().doc.rfind("variadic", 0) == 0;
      // A value past the schema's: one a later opset added (ReduceMean's axes input, opset 18),
      // which the opset-17 schema cannot speak for.
      if (key.index >= static_cast<int>(specs.size()) && !variadic) continue;
      const IOSpec& spec = specs[std::min<size_t>(key.index, specs.size() - 1)];
      if (spec.dtypes.empty()) continue;
      const bool shares = std::any_of(key.dtypes.begin(), key.dtypes.end(), [&](DataType t) {
        return std::find(spec.dtypes.begin(), spec.dtypes.end(), t) != spec.dtypes.end();
      });
      EXPECT_TRUE(shares) << op.op_type << ": " << key.value_name() << " ('" << spec.name
                          << "') keys no dtype its schema allows there";
    }
  }
}

// gpu_supports checks the keys before the op's own checks: a dtype outside a key is refused with
// the value, its dtype and the key's dtypes named; a key on an optional input the node leaves out
// says nothing.
TEST(CudaOpTable, KeysRefuseOtherDtypesNamingTheValue) {
  Graph g;
  Value* x = g.add_value("x");
  Value* y = g.add_value("y");
  Node* softmax = g.add_node("sm", "Softmax");
  softmax->inputs = {x};
  softmax->outputs = {y};
  x->desc.dtype = y->desc.dtype = DataType::kInt32;
  x->desc.shape = y->desc.shape = Shape{2, 3};
  const CudaOp* op = nullptr;
  std::string why;
  EXPECT_FALSE(gpu_supports(*softmax, &op, &why));
  EXPECT_NE(why.find("input 0 ('x')"), std::string::npos) << why;
  EXPECT_NE(why.find("not int32"), std::string::npos) << why;
  EXPECT_NE(why.find("float16"), std::string::npos) << why;
  x->desc.dtype = y->desc.dtype = DataType::kFloat16;
  EXPECT_TRUE(gpu_supports(*softmax, &op, &why)) << why;
  EXPECT_EQ(op, find_cuda_op("Softmax"));
  // The free function on its own: an omitted optional input is not checked.
  const std::vector<KernelDtypes> keys = {input_dtypes(0, {DataType::kFloat16}), input_dtypes(5, {DataType::kInt64})};
  EXPECT_EQ(unmet_kernel_dtypes(*softmax, keys, "CUDA"), "");
}

}  // namespace
}  // namespace graft::cuda
