// Sequences and optionals in a CUDA engine. They are host objects holding tensors; their ops run on
// the GPU's side (src/ops/control_flow/control_flow_cuda.cpp), with the tensors in device memory the
// engine does not reuse, so a strict build accepts them. Each model is checked against the CPU engine
// on fresh random data, with host and with device inputs, several runs in a row: sequences built from
// GPU results, a sequence given as an input, optionals, SplitToSequence / SequenceInsert /
// SequenceErase / ConcatFromSequence with their positions and splits, and SequenceMap.
#ifdef GRAFT_WITH_CUDA

#include <gtest/gtest.h>

#include "cuda_engine_fixture.h"

namespace graft_cuda_test {
namespace {

// A graph value of a container type: seq(float32) or optional(float32[dims]).
void container_value(onnx::ValueInfoProto* vi, const std::string& name, graft::ValueKind kind, DataType dt,
                     const std::vector<int64_t>& dims = {}) {
  vi->set_name(name);
  onnx::TypeProto* tp = vi->mutable_type();
  if (graft::is_optional_kind(kind)) tp = tp->mutable_optional_type()->mutable_elem_type();
  if (kind == graft::ValueKind::kSequence || kind == graft::ValueKind::kOptionalSequence)
    tp = tp->mutable_sequence_type()->mutable_elem_type();
  auto* tt = tp->mutable_tensor_type();
  tt->set_elem_type(static_cast<int>(dt));
  for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
}

// x [batch, 8]: three GPU layers, then a sequence of two of their results on the host, one item
// taken back out and added on the GPU; the sequence (through an Identity) and its length are
// outputs too.
OnnxModelBuilder sequence_model() {
  OnnxModelBuilder m(17);
  m.input("x", DataType::kFloat32, {"batch", 8});
  m.node("Relu", {"x"}, {"r"});
  m.node("Neg", {"r"}, {"nr"});
  m.node("Mul", {"nr", "x"}, {"m"});
  m.node("SequenceConstruct", {"m", "x"}, {"s"});
  m.constant("one", graft::Tensor::scalar_int64(1));
  m.node("SequenceAt", {"s", "one"}, {"back"});
  m.node("Add", {"back", "m"}, {"y"});
  m.node("Identity", {"s"}, {"si"});
  m.node("SequenceLength", {"si"}, {"n"});
  m.output("y", DataType::kFloat32, {"batch", 8});
  m.output("n", DataType::kInt64, {});
  container_value(m.model().mutable_graph()->add_output(), "si", graft::ValueKind::kSequence, DataType::kFloat32);
  return m;
}

// A sequence given as an input: its item 0 squared on the GPU.
OnnxModelBuilder sequence_input_model() {
  OnnxModelBuilder m(17);
  container_value(m.model().mutable_graph()->add_input(), "xs", graft::ValueKind::kSequence, DataType::kFloat32);
  m.constant("zero", graft::Tensor::scalar_int64(0));
  m.node("SequenceAt", {"xs", "zero"}, {"t"});
  m.node("Mul", {"t", "t"}, {"sq"});
  m.node("Relu", {"sq"}, {"y"});
  m.output("y", DataType::kFloat32);
  return m;
}

// An optional wrapping a GPU result, passed through an Identity, unwrapped and used again on the GPU.
OnnxModelBuilder optional_model() {
  OnnxModelBuilder m(18);
  m.input("x", DataType::kFloat32, {4, 5});
  m.node("Sigmoid", {"x"}, {"sg"});
  m.node("Optional", {"sg"}, {"o"});
  m.node("OptionalHasElement", {"o"}, {"has"});
  m.node("Identity", {"o"}, {"oi"});
  m.node("OptionalGetElement", {"oi"}, {"g"});
  m.node("Mul", {"g", "x"}, {"y"});
  m.output("y", DataType::kFloat32, {4, 5});
  m.output("has", DataType::kBool, {});
  return m;
}

class CudaContainersTest : public CudaEngineTest {
 protected:
  // sequence_model's dynamic batch: 1 to 8.
  static std::map<std::string, graft::ProfileRange> batch_profile() { return {{"x", {{1, 8}, {4, 8}, {8, 8}}}}; }

  // Runs `m` on the CPU engine and on a CUDA engine (host inputs, then device tensors where the
  // input is a tensor), `runs` times each, and checks every output against the CPU engine's.
  void check(const OnnxModelBuilder& m, const std::map<std::string, Tensor>& in,
             const std::map<std::string, graft::ProfileRange>& profile = {}, int runs = 3) {
    SCOPED_TRACE("random seed " + std::to_string(seed_));
    auto cpu = build(m, graft::DeviceType::kCPU, false, profile);
    std::vector<std::string> warnings;
    auto gpu = build(m, graft::DeviceType::kCUDA, false, profile, &warnings);
    ASSERT_TRUE(cpu && gpu);
    EXPECT_EQ(gpu->device(), graft::DeviceType::kCUDA);
    auto cctx = cpu->create_context();
    auto gctx = gpu->create_context();
    ASSERT_TRUE(cctx.is_ok() && gctx.is_ok());
    const auto want = run(**cctx, in);
    std::map<std::string, Tensor> din;
    for (const auto& [k, v] : in) din[k] = v.is_tensor() ? to_device(v) : v;
    for (int r = 0; r < 2 * runs; ++r) {
      const bool device_inputs = r >= runs;
      std::map<std::string, Tensor> got;
      auto st = (*gctx)->run(device_inputs ? din : in, got);
      ASSERT_TRUE(st.is_ok()) << st.to_string();
      for (const auto& [name, w] : want) {
        ASSERT_TRUE(got.count(name)) << name;
        const Tensor& g = got.at(name);
        ASSERT_EQ(g.kind(), w.kind()) << name;
        const std::vector<Tensor> gi = g.is_tensor() ? std::vector<Tensor>{g} : g.items();
        const std::vector<Tensor> wi = w.is_tensor() ? std::vector<Tensor>{w} : w.items();
        ASSERT_EQ(gi.size(), wi.size()) << name;
        for (size_t k = 0; k < wi.size(); ++k) {
          const Tensor h = to_host(gi[k]);
          ASSERT_EQ(h.dtype(), wi[k].dtype()) << name << " item " << k;
          ASSERT_EQ(h.dims(), wi[k].dims()) << name << " item " << k;
          EXPECT_LT(rel_err(h, wi[k]), 1e-6) << name << " item " << k << " run " << r;
        }
      }
    }
  }
};

TEST_F(CudaContainersTest, SequenceBetweenGpuLayers) {
  REQUIRE_GPU();
  for (int64_t batch : {3, 5}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    check(sequence_model(), {{"x", rand_t({batch, 8}, rng_)}}, batch_profile());
  }
}

TEST_F(CudaContainersTest, SequenceInput) {
  REQUIRE_GPU();
  auto xs = graft::Tensor::sequence(DataType::kFloat32, {rand_t({2, 7}, rng_),
                                                         rand_t({3}, rng_)});
  ASSERT_TRUE(xs.is_ok()) << xs.status().to_string();
  check(sequence_input_model(), {{"xs", *xs}});
  // A tensor where the sequence belongs: refused naming the input, as by the CPU engine.
  auto gpu = build(sequence_input_model(), graft::DeviceType::kCUDA);
  ASSERT_TRUE(gpu);
  auto ctx = gpu->create_context();
  ASSERT_TRUE(ctx.is_ok());
  std::map<std::string, Tensor> out;
  auto st = (*ctx)->run({{"xs", rand_t({2}, rng_)}}, out);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.to_string().find("input 'xs' expects a sequence"), std::string::npos) << st.to_string();
}

TEST_F(CudaContainersTest, OptionalAroundAGpuResult) {
  REQUIRE_GPU();
  check(optional_model(), {{"x", rand_t({4, 5}, rng_)}});
}

// A sequence cut from a GPU result, grown, shrunk and joined again, then mapped: SplitToSequence
// (split sizes as an input), SequenceInsert and SequenceErase at given positions, SequenceAt with a
// negative position, ConcatFromSequence along an axis and stacked along a new one, SequenceMap whose
// body reads a main-graph value.
OnnxModelBuilder sequence_ops_model() {
  OnnxModelBuilder m(17);
  m.input("x", DataType::kFloat32, {"batch", 6});
  m.input("w", DataType::kFloat32, {6});
  m.node("Tanh", {"x"}, {"tx"});
  m.constant("split", graft::Tensor::vector_int64({2, 1, 3}));
  auto& sp = m.node("SplitToSequence", {"tx", "split"}, {"parts"});
  OnnxModelBuilder::attr(sp, "axis", int64_t{1});
  m.node("Neg", {"tx"}, {"ntx"});
  m.constant("one", graft::Tensor::scalar_int64(1));
  m.node("Slice", {"ntx", "zero_s", "one_s", "one_axis"}, {"col"});
  m.constant("zero_s", graft::Tensor::vector_int64({0}));
  m.constant("one_s", graft::Tensor::vector_int64({1}));
  m.constant("one_axis", graft::Tensor::vector_int64({1}));
  m.node("SequenceInsert", {"parts", "col", "one"}, {"grown"});
  m.constant("last", graft::Tensor::scalar_int64(-1));
  m.node("SequenceErase", {"grown", "last"}, {"shrunk"});
  auto& cat = m.node("ConcatFromSequence", {"shrunk"}, {"joined"});
  OnnxModelBuilder::attr(cat, "axis", int64_t{1});
  m.node("SequenceAt", {"grown", "last"}, {"tail"});
  m.node("Mul", {"tail", "tail"}, {"tail2"});
  m.node("SplitToSequence", {"x"}, {"rows"});  // one item per row, axis 0 kept
  auto& stack = m.node("ConcatFromSequence", {"rows"}, {"stacked"});
  OnnxModelBuilder::attr(stack, "axis", int64_t{0});
  OnnxModelBuilder::attr(stack, "new_axis", int64_t{1});
  auto& map = m.node("SequenceMap", {"rows"}, {"mapped"}, "map_rows");
  graft::testing::graph_attr(map, "body")
      .input("r", DataType::kFloat32)
      .node("Mul", {"r", "w"}, {"rw"})
      .node("Relu", {"rw"}, {"out"})
      .output("out");
  auto& mcat = m.node("ConcatFromSequence", {"mapped"}, {"mapped_cat"});
  OnnxModelBuilder::attr(mcat, "axis", int64_t{0});
  m.node("SequenceLength", {"grown"}, {"n"});
  m.output("joined", DataType::kFloat32);
  m.output("tail2", DataType::kFloat32);
  m.output("stacked", DataType::kFloat32);
  m.output("mapped_cat", DataType::kFloat32);
  m.output("n", DataType::kInt64, {});
  return m;
}

TEST_F(CudaContainersTest, SequenceOpsOnTheGpu) {
  REQUIRE_GPU();
  std::map<std::string, graft::ProfileRange> profile = {{"x", {{1, 6}, {3, 6}, {5, 6}}}};
  for (int64_t batch : {3, 1, 5}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    check(sequence_ops_model(), {{"x", rand_t({batch, 6}, rng_)}, {"w", rand_t({6}, rng_)}}, profile);
  }
}

// Every container layer runs on the GPU's side: a strict build (no CPU-reference layer) accepts
// each model.
TEST_F(CudaContainersTest, ContainerLayersRunOnTheGpu) {
  REQUIRE_GPU();
  struct Case {
    const char* what;
    OnnxModelBuilder model;
    std::map<std::string, graft::ProfileRange> profile;
  };
  const std::vector<Case> cases = {{"sequence", sequence_model(), batch_profile()},
                                   {"sequence input", sequence_input_model(), {}},
                                   {"optional", optional_model(), {}},
                                   {"sequence ops", sequence_ops_model(), {{"x", {{1, 6}, {3, 6}, {5, 6}}}}}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    graft::BuilderConfig strict;
    strict.device = graft::DeviceType::kCUDA;
    strict.strict_device = true;
    strict.profile = c.profile;
    auto e = graft::Engine::build_from_onnx_bytes(c.model.bytes(), strict, "seq.onnx");
    EXPECT_TRUE(e.is_ok()) << e.status().to_string();
  }
}

}  // namespace
}  // namespace graft_cuda_test

#endif  // GRAFT_WITH_CUDA
