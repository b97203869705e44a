// EfficientNMS_TRT (ops/efficient_nms) through the engine: a node written as TensorRT's ONNX parser
// reads it, fixed-size padded outputs. The kernel's cases are in tests/ops/cases_efficient_nms.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "graft/engine.h"
#include "onnx_model_builder.h"

namespace graft {
namespace {

Tensor floats(std::vector<int64_t> dims, const std::vector<float>& v) {
  Tensor t = Tensor::empty(DataType::kFloat32, std::move(dims));
  EXPECT_EQ(static_cast<size_t>(t.numel()), v.size());
  std::copy(v.begin(), v.end(), t.data_as<float>());
  return t;
}

}  // namespace
}  // namespace graft

namespace graft {
namespace {

// EfficientNMS_TRT as TensorRT's ONNX parser sees it: op_type only, plugin_version, INT/FLOAT fields.
// Its outputs are static (padded), unlike NonMaxSuppression's.
TEST(EfficientNmsEngine, TensorRTStyleNodeRunsWithStaticPaddedOutputs) {
  testing::OnnxModelBuilder b(13);
  b.opset("ai.onnx.contrib", 1);
  b.input("boxes", DataType::kFloat32, {1, 3, 4});
  b.input("scores", DataType::kFloat32, {1, 3, 2});
  auto& n = b.node("EfficientNMS_TRT", {"boxes", "scores"}, {"num", "det_boxes", "det_scores", "det_classes"},
                   "nms", "ai.onnx.contrib");
  testing::OnnxModelBuilder::attr(n, "plugin_version", "1");
  testing::OnnxModelBuilder::attr(n, "score_threshold", 0.25f);
  testing::OnnxModelBuilder::attr(n, "iou_threshold", 0.5f);
  testing::OnnxModelBuilder::attr(n, "max_output_boxes", int64_t{4});
  testing::OnnxModelBuilder::attr(n, "background_class", int64_t{-1});
  testing::OnnxModelBuilder::attr(n, "box_coding", int64_t{0});
  testing::OnnxModelBuilder::attr(n, "score_activation", int64_t{0});
  testing::OnnxModelBuilder::attr(n, "class_agnostic", int64_t{0});
  b.output("num", DataType::kInt32);
  b.output("det_boxes", DataType::kFloat32);
  b.output("det_scores", DataType::kFloat32);
  b.output("det_classes", DataType::kInt32);
  auto eng = Engine::build_from_onnx_bytes(b.bytes(), BuilderConfig{}, "efficient_nms.onnx");
  ASSERT_TRUE(eng.is_ok()) << eng.status().to_string();
  for (const IOInfo& io : (*eng)->outputs())
    if (io.name == "det_boxes") EXPECT_EQ(io.static_dims, (std::vector<int64_t>{1, 4, 4}));
  auto ctx = (*eng)->create_context();
  ASSERT_TRUE(ctx.is_ok());
  // Boxes 0 and 1 overlap (IoU 0.6), box 2 is apart. Class 0: 0.9, 0.8, 0.1; class 1: 0.3, 0.2, 0.7.
  std::map<std::string, Tensor> in, out;
  in["boxes"] = floats({1, 3, 4}, {0, 0, 2, 2, 0, 0.5f, 2, 2.5f, 5, 5, 6, 6});
  in["scores"] = floats({1, 3, 2}, {0.9f, 0.3f, 0.8f, 0.2f, 0.1f, 0.7f});
  ASSERT_TRUE((*ctx)->run(in, out).is_ok());
  EXPECT_EQ(out["num"].get(0), 3.0);  // (0, class 0), (2, class 1), (0, class 1); box 1 suppressed
  const std::vector<double> scores = {0.9, 0.7, 0.3, 0.0};
  const std::vector<double> classes = {0, 1, 1, 0};
  for (int k = 0; k < 4; ++k) {
    EXPECT_NEAR(out["det_scores"].get(k), scores[k], 1e-6) << k;
    EXPECT_EQ(out["det_classes"].get(k), classes[k]) << k;
  }
  EXPECT_EQ(out["det_boxes"].get(4), 5.0);   // second detection is box 2
  EXPECT_EQ(out["det_boxes"].get(15), 0.0);  // padding
}

}  // namespace
}  // namespace graft
