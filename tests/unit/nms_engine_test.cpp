// graft's NMS ops with fixed-size outputs (ops/efficient_nms, ops/batched_nms) through the engine,
// as exports write them: TensorRT's EfficientNMS_TRT and BatchedNMSDynamic_TRT as op_types only
// (TensorRT's parser ignores the domain), mmdeploy's TRTBatchedNMS in the mmdeploy domain with two
// outputs. The kernels' cases are in tests/ops/cases_efficient_nms.cpp and cases_batched_nms.cpp.
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


// Boxes 0 and 1 overlap (IoU 0.6), box 2 is apart. Class 0 scores 0.9, 0.8, 0.1; class 1 0.3, 0.2, 0.7.
// With threshold 0.25 and IoU 0.5: class 0 keeps box 0 (box 1 suppressed), class 1 keeps boxes 2
// and 0; best first across classes: (box 0, class 0), (box 2, class 1), (box 0, class 1).
const std::vector<float> kScores = {0.9f, 0.3f, 0.8f, 0.2f, 0.1f, 0.7f};
std::vector<float> boxes_scaled(float s) {
  std::vector<float> v = {0, 0, 0.4f, 0.4f, 0, 0.1f, 0.4f, 0.5f, 0.5f, 0.5f, 0.6f, 0.6f};
  for (float& x : v) x *= s;
  return v;
}

// BatchedNMSDynamic_TRT's required fields for the boxes and scores below: 2 classes, 4 of each kept.
void batched_nms_trt_attrs(onnx::NodeProto& n) {
  using B = testing::OnnxModelBuilder;
  B::attr(n, "shareLocation", int64_t{1});
  B::attr(n, "backgroundLabelId", int64_t{-1});
  B::attr(n, "numClasses", int64_t{2});
  B::attr(n, "topK", int64_t{4});
  B::attr(n, "keepTopK", int64_t{4});
  B::attr(n, "scoreThreshold", 0.25f);
  B::attr(n, "iouThreshold", 0.5f);
}

TEST(BatchedNmsEngine, TensorRTNodeByOpTypeWithDynamicBatch) {
  testing::OnnxModelBuilder b(13);
  b.input("boxes", DataType::kFloat32, {"batch", 3, 1, 4});
  b.input("scores", DataType::kFloat32, {"batch", 3, 2});
  auto& n = b.node("BatchedNMSDynamic_TRT", {"boxes", "scores"}, {"num", "nms_boxes", "nms_scores", "nms_classes"},
                   "nms");
  batched_nms_trt_attrs(n);
  testing::OnnxModelBuilder::attr(n, "isNormalized", int64_t{1});
  b.output("num", DataType::kInt32);
  b.output("nms_boxes", DataType::kFloat32);
  b.output("nms_scores", DataType::kFloat32);
  b.output("nms_classes", DataType::kFloat32);
  BuilderConfig cfg;
  cfg.profile["boxes"] = {{1, 3, 1, 4}, {2, 3, 1, 4}, {2, 3, 1, 4}};
  cfg.profile["scores"] = {{1, 3, 2}, {2, 3, 2}, {2, 3, 2}};
  auto eng = Engine::build_from_onnx_bytes(b.bytes(), cfg, "batched_nms.onnx");
  ASSERT_TRUE(eng.is_ok()) << eng.status().to_string();
  auto ctx = (*eng)->create_context();
  ASSERT_TRUE(ctx.is_ok());
  std::vector<float> two_boxes = boxes_scaled(1.0f), two_scores = kScores;
  two_boxes.insert(two_boxes.end(), two_boxes.begin(), two_boxes.end());
  two_scores.insert(two_scores.end(), kScores.begin(), kScores.end());
  two_scores[6] = 0.1f;  // image 1: class 0 of box 0 fails the threshold, so box 1 is class 0's best
  std::map<std::string, Tensor> in, out;
  in["boxes"] = floats({2, 3, 1, 4}, two_boxes);
  in["scores"] = floats({2, 3, 2}, two_scores);
  ASSERT_TRUE((*ctx)->run(in, out).is_ok());
  EXPECT_EQ(out["num"].get(0), 3.0);
  EXPECT_EQ(out["num"].get(1), 3.0);
  const std::vector<double> scores = {0.9, 0.7, 0.3, 0.0, 0.8, 0.7, 0.3, 0.0};
  const std::vector<double> classes = {0, 1, 1, -1, 0, 1, 1, -1};
  for (int k = 0; k < 8; ++k) {
    EXPECT_NEAR(out["nms_scores"].get(k), scores[k], 1e-6) << k;
    EXPECT_EQ(out["nms_classes"].get(k), classes[k]) << k;
  }
  EXPECT_NEAR(out["nms_boxes"].get(4), 0.5, 1e-6);   // image 0's second detection is box 2
  EXPECT_NEAR(out["nms_boxes"].get(19), 0.5, 1e-6);  // image 1's first is box 1 (y2 = 0.5)
  EXPECT_EQ(out["nms_boxes"].get(15), 0.0);          // padding
}

// Every output of TensorRT's form is required: a node that leaves one out is refused naming it.
TEST(BatchedNmsEngine, ANodeMissingARequiredOutputIsRefused) {
  testing::OnnxModelBuilder b(13);
  b.input("boxes", DataType::kFloat32, {1, 3, 1, 4});
  b.input("scores", DataType::kFloat32, {1, 3, 2});
  auto& n = b.node("BatchedNMSDynamic_TRT", {"boxes", "scores"}, {"num", "nms_boxes", "nms_scores"}, "nms");
  batched_nms_trt_attrs(n);
  b.output("num", DataType::kInt32);
  b.output("nms_boxes", DataType::kFloat32);
  b.output("nms_scores", DataType::kFloat32);
  auto eng = Engine::build_from_onnx_bytes(b.bytes(), BuilderConfig{}, "batched_nms.onnx");
  ASSERT_FALSE(eng.is_ok());
  EXPECT_NE(eng.status().to_string().find("'nmsed_classes') is not optional"), std::string::npos)
      << eng.status().to_string();
}

TEST(BatchedNmsEngine, MmdeployNodeWithTwoOutputsAndReturnIndexNeedsAThird) {
  auto model = [](int64_t return_index) {
    testing::OnnxModelBuilder b(13);
    b.opset("mmdeploy", 1);
    b.input("boxes", DataType::kFloat32, {1, 3, 4});
    b.input("scores", DataType::kFloat32, {1, 3, 2});
    auto& n = b.node("TRTBatchedNMS", {"boxes", "scores"}, {"dets", "labels"}, "nms", "mmdeploy");
    using B = testing::OnnxModelBuilder;
    B::attr(n, "num_classes", int64_t{2});
    B::attr(n, "background_label_id", int64_t{-1});
    B::attr(n, "topk", int64_t{-1});
    B::attr(n, "keep_topk", int64_t{4});
    B::attr(n, "score_threshold", 0.25f);
    B::attr(n, "iou_threshold", 0.5f);
    B::attr(n, "is_normalized", int64_t{0});
    B::attr(n, "clip_boxes", int64_t{0});
    B::attr(n, "return_index", return_index);
    b.output("dets", DataType::kFloat32);
    b.output("labels", DataType::kInt32);
    return b.bytes();
  };
  auto eng = Engine::build_from_onnx_bytes(model(0), BuilderConfig{}, "trt_batched_nms.onnx");
  ASSERT_TRUE(eng.is_ok()) << eng.status().to_string();
  auto ctx = (*eng)->create_context();
  ASSERT_TRUE(ctx.is_ok());
  std::map<std::string, Tensor> in, out;
  in["boxes"] = floats({1, 3, 4}, boxes_scaled(10.0f));
  in["scores"] = floats({1, 3, 2}, kScores);
  Status st = (*ctx)->run(in, out);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  const std::vector<double> labels = {0, 1, 1, -1};
  const std::vector<double> scores = {0.9, 0.7, 0.3, 0.0};
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(out["labels"].get(k), labels[k]) << k;
    EXPECT_NEAR(out["dets"].get(k * 5 + 4), scores[k], 1e-6) << k;
  }
  EXPECT_NEAR(out["dets"].get(5), 5.0, 1e-5);  // second detection: box 2, not clipped
  auto refused = Engine::build_from_onnx_bytes(model(1), BuilderConfig{}, "trt_batched_nms.onnx");
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().to_string().find("return_index"), std::string::npos) << refused.status().to_string();
}

}  // namespace
}  // namespace graft
