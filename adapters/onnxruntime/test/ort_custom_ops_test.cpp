// End-to-end test of libgraft_onnxruntime.so: for a few registered graft ops it writes a one-node ONNX
// model in the op's domain, runs it in ONNX Runtime (loaded with dlopen, the custom ops registered with
// RegisterCustomOpsLibrary) and in graft's own CPU engine on the same random inputs, and compares the
// outputs; then checks that a node missing a required attribute gives an ONNX Runtime error naming the
// attribute instead of a crash.
//
//   graft_ort_test <libonnxruntime.so> <libgraft_onnxruntime.so>
#include <dlfcn.h>
#include <onnxruntime_c_api.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "graft/engine.h"
#include "onnx_model_builder.h"

namespace {

using graft::DataType;
using graft::Tensor;
using graft::testing::OnnxModelBuilder;

const OrtApi* g_api = nullptr;
std::string g_library;
int g_failures = 0;

void check(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "[ OK ]" : "[FAIL]", what.c_str());
  if (!ok) ++g_failures;
}

// The error text of a status (empty on success); releases it.
std::string take(OrtStatus* st) {
  if (!st) return "";
  std::string msg = g_api->GetErrorMessage(st);
  g_api->ReleaseStatus(st);
  return msg.empty() ? "(error without a message)" : msg;
}

struct Case {
  std::string label, op, domain;
  std::vector<std::pair<std::string, std::vector<int64_t>>> inputs;  // float32 inputs
  std::vector<std::string> outputs;
  std::function<void(onnx::NodeProto&)> attrs;
  float lo = -1.f, hi = 1.f;  // range of the random inputs
  std::vector<DataType> output_types = {};  // per output; empty: all float32
};

DataType output_type(const Case& c, size_t o) {
  return o < c.output_types.size() ? c.output_types[o] : DataType::kFloat32;
}

std::string model_bytes(const Case& c) {
  OnnxModelBuilder b;
  b.opset(c.domain, 1);
  std::vector<std::string> ins;
  for (auto& [name, dims] : c.inputs) {
    std::vector<graft::testing::DimSpec> spec(dims.begin(), dims.end());
    b.input(name, DataType::kFloat32, spec);
    ins.push_back(name);
  }
  auto& n = b.node(c.op, ins, c.outputs, c.label + "_node", c.domain);
  if (c.attrs) c.attrs(n);
  for (size_t o = 0; o < c.outputs.size(); ++o) b.output(c.outputs[o], output_type(c, o));
  return b.bytes();
}

// Runs the model in ONNX Runtime. Returns "" or the error; fills `outs` on success.
std::string run_ort(OrtEnv* env, const std::string& bytes, const std::map<std::string, Tensor>& inputs,
                    const std::vector<std::string>& out_names, std::vector<Tensor>& outs) {
  OrtSessionOptions* so = nullptr;
  OrtSession* session = nullptr;
  OrtMemoryInfo* mem = nullptr;
  void* handle = nullptr;
  std::vector<OrtValue*> in_values, out_values(out_names.size(), nullptr);
  std::string err = take(g_api->CreateSessionOptions(&so));
  if (err.empty()) err = take(g_api->RegisterCustomOpsLibrary(so, g_library.c_str(), &handle));
  if (err.empty()) err = take(g_api->CreateSessionFromArray(env, bytes.data(), bytes.size(), so, &session));
  if (err.empty()) err = take(g_api->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &mem));
  std::vector<const char*> in_names;
  for (auto& [name, t] : inputs) {
    if (!err.empty()) break;
    OrtValue* v = nullptr;
    err = take(g_api->CreateTensorWithDataAsOrtValue(mem, t.data(), t.nbytes(), t.dims().data(), t.dims().size(),
                                                     ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &v));
    in_values.push_back(v);
    in_names.push_back(name.c_str());
  }
  std::vector<const char*> on;
  for (auto& n : out_names) on.push_back(n.c_str());
  if (err.empty())
    err = take(g_api->Run(session, nullptr, in_names.data(), in_values.data(), in_values.size(), on.data(), on.size(),
                          out_values.data()));
  for (size_t o = 0; err.empty() && o < out_values.size(); ++o) {
    OrtTensorTypeAndShapeInfo* info = nullptr;
    size_t rank = 0;
    err = take(g_api->GetTensorTypeAndShape(out_values[o], &info));
    if (err.empty()) err = take(g_api->GetDimensionsCount(info, &rank));
    std::vector<int64_t> dims(rank);
    if (err.empty() && rank) err = take(g_api->GetDimensions(info, dims.data(), rank));
    ONNXTensorElementDataType et = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
    if (err.empty()) err = take(g_api->GetTensorElementType(info, &et));
    g_api->ReleaseTensorTypeAndShapeInfo(info);
    DataType dt = DataType::kUndefined;
    if (err.empty() && (!graft::dtype_from_onnx_numeric(static_cast<int32_t>(et), &dt) ||
                        (dt != DataType::kFloat32 && dt != DataType::kInt32)))
      err = "output " + out_names[o] + " has ONNX element type " + std::to_string(static_cast<int>(et)) +
            ", which this test does not read";
    void* data = nullptr;
    if (err.empty()) err = take(g_api->GetTensorMutableData(out_values[o], &data));
    if (err.empty()) {
      Tensor t = Tensor::empty(dt, dims);
      std::memcpy(t.data(), data, t.nbytes());
      outs.push_back(t);
    }
  }
  for (OrtValue* v : in_values) g_api->ReleaseValue(v);
  for (OrtValue* v : out_values) g_api->ReleaseValue(v);
  g_api->ReleaseMemoryInfo(mem);
  g_api->ReleaseSession(session);
  g_api->ReleaseSessionOptions(so);
  return err;
}

void run_case(OrtEnv* env, const Case& c, std::mt19937& rng) {
  std::string bytes = model_bytes(c);
  std::uniform_real_distribution<float> dist(c.lo, c.hi);
  std::map<std::string, Tensor> inputs;
  for (auto& [name, dims] : c.inputs) {
    Tensor t = Tensor::empty(DataType::kFloat32, dims);
    for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = dist(rng);
    inputs[name] = t;
  }
  std::vector<Tensor> ort_outs;
  std::string err = run_ort(env, bytes, inputs, c.outputs, ort_outs);
  check(err.empty(), c.label + ": ONNX Runtime ran the model" + (err.empty() ? "" : ": " + err));
  if (!err.empty()) return;

  auto engine = graft::Engine::build_from_onnx_bytes(bytes, graft::BuilderConfig{}, c.label);
  check(engine.is_ok(), c.label + ": graft built the model" + (engine.is_ok() ? "" : ": " + engine.status().to_string()));
  if (!engine.is_ok()) return;
  auto ctx = (*engine)->create_context();
  std::map<std::string, Tensor> graft_outs;
  graft::Status st = ctx.is_ok() ? (*ctx)->run(inputs, graft_outs) : ctx.status();
  check(st.is_ok(), c.label + ": graft ran the model" + (st.is_ok() ? "" : ": " + st.to_string()));
  if (!st.is_ok()) return;

  for (size_t o = 0; o < c.outputs.size(); ++o) {
    const Tensor& a = ort_outs[o];
    const Tensor& b = graft_outs[c.outputs[o]];
    bool same_shape = a.dims() == b.dims();
    double max_diff = 0;
    for (int64_t i = 0; same_shape && i < a.numel(); ++i)
      max_diff = std::max(max_diff, std::fabs(a.get(i) - b.get(i)) / (1.0 + std::fabs(b.get(i))));
    char buf[160];
    std::snprintf(buf, sizeof buf, ": output '%s' %s, %lld elements, max relative difference %.3g", c.outputs[o].c_str(),
                  same_shape ? "same shape" : "SHAPE DIFFERS", static_cast<long long>(a.numel()), max_diff);
    check(same_shape && max_diff <= 1e-5, c.label + buf);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s <libonnxruntime.so> <libgraft_onnxruntime.so>\n", argv[0]);
    return 2;
  }
  void* ort = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!ort) {
    std::fprintf(stderr, "cannot load %s: %s\n", argv[1], dlerror());
    return 2;
  }
  using GetApiBase = const OrtApiBase* (*)();
  auto get_base = reinterpret_cast<GetApiBase>(dlsym(ort, "OrtGetApiBase"));
  const OrtApiBase* base = get_base ? get_base() : nullptr;
  g_api = base ? base->GetApi(ORT_API_VERSION) : nullptr;
  if (!g_api) {
    std::fprintf(stderr, "%s offers no C API version %d\n", argv[1], ORT_API_VERSION);
    return 2;
  }
  std::printf("ONNX Runtime %s, C API version %d requested\n", base->GetVersionString(), ORT_API_VERSION);
  g_library = argv[2];
  OrtEnv* env = nullptr;
  if (std::string e = take(g_api->CreateEnv(ORT_LOGGING_LEVEL_ERROR, "graft_ort_test", &env)); !e.empty()) {
    std::fprintf(stderr, "CreateEnv: %s\n", e.c_str());
    return 2;
  }

  std::mt19937 rng(20240611);
  std::vector<Case> cases;
  cases.push_back({"CustomLayer", "CustomLayer", "ai.onnx.contrib", {{"x", {2, 3, 5}}}, {"y"},
                   [](onnx::NodeProto& n) { OnnxModelBuilder::attr(n, "beta", 0.7f); }, -4.f, 4.f});
  cases.push_back({"GroupNorm", "GroupNorm", "ai.onnx.contrib", {{"x", {2, 6, 4, 4}}, {"scale", {6}}, {"bias", {6}}},
                   {"y"}, [](onnx::NodeProto& n) {
                     OnnxModelBuilder::attr(n, "num_groups", int64_t{3});
                     OnnxModelBuilder::attr(n, "epsilon", 1e-4f);
                   }});
  cases.push_back({"grid_sampler", "grid_sampler", "mmdeploy", {{"input", {1, 2, 5, 6}}, {"grid", {1, 3, 4, 2}}},
                   {"output"}, [](onnx::NodeProto& n) {
                     OnnxModelBuilder::attr(n, "align_corners", int64_t{1});
                     OnnxModelBuilder::attr(n, "padding_mode", int64_t{1});
                   }, -1.1f, 1.1f});
  // mmdeploy's batched NMS as its export writes it: two outputs, the optional index left out; then
  // with the index. Boxes and scores in [0, 1); ONNX Runtime's outputs must equal graft's exactly.
  auto nms_attrs = [](int64_t return_index) {
    return [return_index](onnx::NodeProto& n) {
      OnnxModelBuilder::attr(n, "num_classes", int64_t{3});
      OnnxModelBuilder::attr(n, "topk", int64_t{10});
      OnnxModelBuilder::attr(n, "keep_topk", int64_t{8});
      OnnxModelBuilder::attr(n, "score_threshold", 0.2f);
      OnnxModelBuilder::attr(n, "iou_threshold", 0.5f);
      OnnxModelBuilder::attr(n, "clip_boxes", int64_t{0});
      OnnxModelBuilder::attr(n, "return_index", return_index);
    };
  };
  cases.push_back({"TRTBatchedNMS_two_outputs", "TRTBatchedNMS", "mmdeploy", {{"boxes", {2, 20, 4}}, {"scores", {2, 20, 3}}},
                   {"dets", "labels"}, nms_attrs(0), 0.f, 1.f, {DataType::kFloat32, DataType::kInt32}});
  cases.push_back({"TRTBatchedNMS_with_index", "TRTBatchedNMS", "mmdeploy", {{"boxes", {2, 20, 4}}, {"scores", {2, 20, 3}}},
                   {"dets", "labels", "index"}, nms_attrs(1), 0.f, 1.f,
                   {DataType::kFloat32, DataType::kInt32, DataType::kInt32}});
  for (const Case& c : cases) run_case(env, c, rng);

  // Error cases: the session must fail cleanly with a message naming the attribute.
  struct Bad {
    std::string label, attr;
    std::function<void(onnx::NodeProto&)> attrs;
  };
  const Bad bad[] = {
      {"GroupNorm without its required num_groups", "num_groups",
       [](onnx::NodeProto& n) { OnnxModelBuilder::attr(n, "epsilon", 1e-4f); }},
      {"GroupNorm with num_groups given as a float", "num_groups",
       [](onnx::NodeProto& n) { OnnxModelBuilder::attr(n, "num_groups", 3.0f); }},
  };
  for (const Bad& b : bad) {
    Case c = cases[1];
    c.attrs = b.attrs;
    std::map<std::string, Tensor> inputs;
    for (auto& [name, dims] : c.inputs) {
      inputs[name] = Tensor::empty(DataType::kFloat32, dims);
      std::memset(inputs[name].data(), 0, inputs[name].nbytes());
    }
    std::vector<Tensor> outs;
    std::string err = run_ort(env, model_bytes(c), inputs, c.outputs, outs);
    std::printf("       ONNX Runtime said: %s\n", err.c_str());
    check(!err.empty() && err.find(b.attr) != std::string::npos && err.find("GroupNorm") != std::string::npos,
          b.label + ": ONNX Runtime error naming the op and '" + b.attr + "'");
  }
  g_api->ReleaseEnv(env);
  std::printf("%s (%d failure%s)\n", g_failures ? "FAILED" : "PASSED", g_failures, g_failures == 1 ? "" : "s");
  return g_failures ? 1 : 0;
}
