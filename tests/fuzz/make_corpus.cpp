// Writes the seed corpus of every fuzz target from graft's own writers, so the seeds are always in
// the current formats and nobody has to keep binary blobs:
//   onnx/          small models over many builtin ops (opsets 17 to 21) and every registered custom op
//                  (tests/unit/onnx_model_builder.h); make_corpus.sh adds the ONNX backend tests'
//                  models and the fuzz regression inputs
//   plan/          the plans graft writes for those models (and for the ONNX tests' models)
//   plan_payload/  the same plans without their header: the bytes behind the checksum
//   timing_cache/  timing cache files (TacticTable::save_cache_file) and near misses
//   tensor/        .npy (format versions 1.0, 2.0, 3.0) and .pb files of every dtype and rank 0..4
//   attributes/    serialized attributes of every registered op's examples, and of every type
//
// Usage: graft_fuzz_corpus OUT_DIR [MODEL.onnx...]   (extra models also become plans)
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "graft/engine.h"
#include "graft/log.h"
#include "graft/op.h"
#include "graft/registry.h"
#include "graph/passes.h"
#include "io/tensor_io.h"
#include "plan/plan.h"
#include "plan/tactics.h"
#include "tests/unit/onnx_model_builder.h"
#include "tests/unit/image_encoders.h"
#include "tests/unit/stored_png.h"

namespace fs = std::filesystem;
using graft::DataType;
using graft::Tensor;
using graft::testing::OnnxModelBuilder;

namespace {

int g_written = 0;

void write(const fs::path& dir, const std::string& name, const std::string& bytes) {
  fs::create_directories(dir);
  std::ofstream out(dir / name, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ++g_written;
}

Tensor filled(DataType dt, std::vector<int64_t> dims, std::mt19937& rng) {
  Tensor t = Tensor::empty(dt, std::move(dims));
  std::uniform_int_distribution<int> v(-3, 3);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, dt == DataType::kUInt8 ? v(rng) + 3 : v(rng));
  return t;
}

// ---- models ------------------------------------------------------------------------------------
std::map<std::string, std::string> builtin_models(std::mt19937& rng) {
  std::map<std::string, std::string> m;
  const DataType f = DataType::kFloat32;
  {
    OnnxModelBuilder b;
    b.input("x", f, {"batch", 5});
    b.initializer("b", filled(f, {5}, rng));
    b.node("Add", {"x", "b"}, {"s"});
    b.node("Relu", {"s"}, {"y"});
    b.output("y", f);
    m["add_relu_dynamic"] = b.bytes();
  }
  {
    OnnxModelBuilder b;
    b.input("x", f, {2, 3, 8, 8});
    b.initializer("w", filled(f, {4, 3, 3, 3}, rng));
    b.initializer("bias", filled(f, {4}, rng));
    auto& c = b.node("Conv", {"x", "w", "bias"}, {"c"});
    OnnxModelBuilder::attr(c, "pads", std::vector<int64_t>{1, 1, 1, 1});
    OnnxModelBuilder::attr(c, "strides", std::vector<int64_t>{2, 2});
    for (const char* n : {"scale", "B", "mean", "var"}) b.initializer(n, filled(f, {4}, rng));
    b.node("BatchNormalization", {"c", "scale", "B", "mean", "var"}, {"bn"});
    b.node("Relu", {"bn"}, {"r"});
    auto& p = b.node("MaxPool", {"r"}, {"p"});
    OnnxModelBuilder::attr(p, "kernel_shape", std::vector<int64_t>{2, 2});
    b.node("GlobalAveragePool", {"p"}, {"g"});
    b.node("Flatten", {"g"}, {"fl"});
    b.initializer("fc", filled(f, {4, 3}, rng));
    b.node("MatMul", {"fl", "fc"}, {"mm"});
    auto& s = b.node("Softmax", {"mm"}, {"y"});
    OnnxModelBuilder::attr(s, "axis", int64_t{-1});
    b.output("y", f);
    m["convnet"] = b.bytes();
  }
  {
    OnnxModelBuilder b;
    b.input("x", f, {"n", 4, 6});
    b.node("Shape", {"x"}, {"shp"});
    b.initializer("idx", Tensor::vector_int64({0}));
    auto& g = b.node("Gather", {"shp", "idx"}, {"n0"});
    OnnxModelBuilder::attr(g, "axis", int64_t{0});
    b.initializer("rest", Tensor::vector_int64({24}));
    auto& c = b.node("Concat", {"n0", "rest"}, {"newshape"});
    OnnxModelBuilder::attr(c, "axis", int64_t{0});
    b.node("Reshape", {"x", "newshape"}, {"r"});
    b.initializer("starts", Tensor::vector_int64({2}));
    b.initializer("ends", Tensor::vector_int64({20}));
    b.initializer("axes", Tensor::vector_int64({1}));
    b.node("Slice", {"r", "starts", "ends", "axes"}, {"sl"});
    b.initializer("split", Tensor::vector_int64({8, 10}));
    auto& sp = b.node("Split", {"sl", "split"}, {"a", "bb"});
    OnnxModelBuilder::attr(sp, "axis", int64_t{1});
    auto& t = b.node("Transpose", {"a"}, {"at"});
    OnnxModelBuilder::attr(t, "perm", std::vector<int64_t>{1, 0});
    b.initializer("uaxes", Tensor::vector_int64({0}));
    b.node("Unsqueeze", {"at", "uaxes"}, {"u"});
    b.initializer("raxes", Tensor::vector_int64({2}));
    b.node("ReduceSum", {"u", "raxes"}, {"rs"});
    b.output("rs", f);
    b.output("bb", f);
    m["shape_ops"] = b.bytes();
  }
  {
    OnnxModelBuilder b;
    b.input("x", f, {3, 4});
    b.initializer("pads", Tensor::vector_int64({1, 0, 1, 2}));
    b.node("Pad", {"x", "pads"}, {"p"});
    b.initializer("shape", Tensor::vector_int64({2, 5, 6}));
    b.node("Expand", {"p", "shape"}, {"e"});
    b.initializer("start", Tensor::scalar_int64(0));
    b.initializer("limit", Tensor::scalar_int64(6));
    b.initializer("delta", Tensor::scalar_int64(1));
    b.node("Range", {"start", "limit", "delta"}, {"rg"});
    auto& cast = b.node("Cast", {"rg"}, {"rgf"});
    OnnxModelBuilder::attr(cast, "to", int64_t{1});
    b.node("Mul", {"e", "rgf"}, {"m"});
    b.node("Sigmoid", {"m"}, {"sg"});
    b.initializer("cshape", Tensor::vector_int64({2, 5, 6}));
    b.node("ConstantOfShape", {"cshape"}, {"zeros"});
    b.node("Greater", {"sg", "zeros"}, {"gt"});
    b.node("Where", {"gt", "sg", "m"}, {"y"});
    b.output("y", f);
    m["pad_expand_range_where"] = b.bytes();
  }
  {
    OnnxModelBuilder b;
    b.input("x", f, {1, 2, 4, 4});
    b.initializer("roi", Tensor::empty(f, {0}));
    Tensor scales = Tensor::empty(f, {4});
    for (int i = 0; i < 4; ++i) scales.set(i, i < 2 ? 1.0 : 2.0);
    b.initializer("scales", scales);
    auto& r = b.node("Resize", {"x", "roi", "scales"}, {"r"});
    OnnxModelBuilder::attr(r, "mode", "linear");
    auto& ap = b.node("AveragePool", {"r"}, {"y"});
    OnnxModelBuilder::attr(ap, "kernel_shape", std::vector<int64_t>{3, 3});
    OnnxModelBuilder::attr(ap, "pads", std::vector<int64_t>{1, 1, 1, 1});
    b.output("y", f);
    m["resize_pool"] = b.bytes();
  }
  {
    // The Lp-norm family: LpPool with padding, LpNormalization, GlobalLpPool.
    OnnxModelBuilder b;
    b.input("x", f, {"n", 3, 6, 5});
    auto& lp = b.node("LpPool", {"x"}, {"lp"});
    OnnxModelBuilder::attr(lp, "kernel_shape", std::vector<int64_t>{3, 2});
    OnnxModelBuilder::attr(lp, "pads", std::vector<int64_t>{1, 0, 1, 1});
    OnnxModelBuilder::attr(lp, "p", int64_t{3});
    auto& ln = b.node("LpNormalization", {"lp"}, {"ln"});
    OnnxModelBuilder::attr(ln, "axis", int64_t{1});
    OnnxModelBuilder::attr(ln, "p", int64_t{1});
    b.node("GlobalLpPool", {"ln"}, {"y"});
    b.output("y", f);
    m["lp_norm"] = b.bytes();
  }
  {
    OnnxModelBuilder b;
    b.input("q", f, {"b", 8, 16});
    b.initializer("wq", filled(f, {16, 16}, rng));
    b.node("MatMul", {"q", "wq"}, {"qw"});
    auto& t = b.node("Transpose", {"qw"}, {"kt"});
    OnnxModelBuilder::attr(t, "perm", std::vector<int64_t>{0, 2, 1});
    b.node("MatMul", {"qw", "kt"}, {"s"});
    b.initializer("scale", Tensor::from_doubles(f, {}, {0.25}));
    b.node("Mul", {"s", "scale"}, {"ss"});
    auto& sm = b.node("Softmax", {"ss"}, {"p"});
    OnnxModelBuilder::attr(sm, "axis", int64_t{-1});
    b.node("MatMul", {"p", "qw"}, {"o"});
    b.initializer("g", filled(f, {16}, rng));
    b.initializer("beta", filled(f, {16}, rng));
    auto& ln = b.node("LayerNormalization", {"o", "g", "beta"}, {"y"});
    OnnxModelBuilder::attr(ln, "axis", int64_t{-1});
    b.output("y", f);
    m["attention"] = b.bytes();
  }
  {
    OnnxModelBuilder b;
    b.input("x", DataType::kInt64, {6});
    b.initializer("k", Tensor::vector_int64({3}));
    b.node("TopK", {"x", "k"}, {"v", "i"});
    b.initializer("ax", Tensor::scalar_int64(0));
    b.node("CumSum", {"v", "ax"}, {"c"});
    b.node("ArgMax", {"x"}, {"am"});
    b.output("c", DataType::kInt64);
    b.output("i", DataType::kInt64);
    b.output("am", DataType::kInt64);
    m["int_ops"] = b.bytes();
  }
  // Ops of opsets 18 to 21: the Bitwise ops, GroupNormalization, DeformConv without a mask (rewritten on
  // import into ModulatedDeformConv2d), the 8-bit float Q/DQ, and the string ops with RE2's pattern.
  {
    OnnxModelBuilder b(21, 10);  // 21: GroupNormalization's scale and bias per channel
    b.input("a", DataType::kInt32, {3, 4});
    b.input("c", DataType::kInt32, {4});
    b.node("BitwiseAnd", {"a", "c"}, {"and"});
    b.node("BitwiseNot", {"and"}, {"not"});
    b.node("BitwiseXor", {"not", "a"}, {"xor"});
    b.output("xor", DataType::kInt32);
    b.input("x", f, {1, 4, 5, 5});
    b.initializer("gs", filled(f, {4}, rng));
    b.initializer("gb", filled(f, {4}, rng));
    auto& gn = b.node("GroupNormalization", {"x", "gs", "gb"}, {"gn"});
    OnnxModelBuilder::attr(gn, "num_groups", int64_t{2});
    b.initializer("w", filled(f, {2, 4, 3, 3}, rng));
    b.input("offset", f, {1, 18, 5, 5});
    auto& dc = b.node("DeformConv", {"gn", "w", "offset"}, {"dc"});
    OnnxModelBuilder::attr(dc, "pads", std::vector<int64_t>{1, 1, 1, 1});
    b.initializer("qs", Tensor::from_doubles(f, {}, {0.5}));
    Tensor zp = Tensor::empty(DataType::kFloat8E4M3FN, {});
    zp.set(0, 0.0);
    b.initializer("qz", zp);
    b.node("QuantizeLinear", {"dc", "qs", "qz"}, {"q8"});
    b.node("DequantizeLinear", {"q8", "qs", "qz"}, {"dq"});
    b.output("dq", f);
    b.input("text", DataType::kString, {3});
    b.node("StringConcat", {"text", "text"}, {"twice"});
    auto& sp = b.node("StringSplit", {"twice"}, {"words", "counts"});
    OnnxModelBuilder::attr(sp, "maxsplit", int64_t{2});
    auto& re = b.node("RegexFullMatch", {"text"}, {"match"});
    OnnxModelBuilder::attr(re, "pattern", "(a|b)+c?");
    b.output("words", DataType::kString);
    b.output("counts", DataType::kInt64);
    b.output("match", DataType::kBool);
    m["opset18_to_21"] = b.bytes();
  }
  // ImageDecoder over a constant PNG (so the fuzzer's mutations reach libpng through the decoder) and
  // over a graph input.
  {
    OnnxModelBuilder b(20, 9);
    std::vector<uint8_t> pixels(4 * 5 * 3);
    for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 37);
    const std::vector<uint8_t> png = graft::testing::stored_png(4, 5, 3, pixels);
    Tensor stream = Tensor::empty(DataType::kUInt8, {static_cast<int64_t>(png.size())});
    for (size_t i = 0; i < png.size(); ++i) stream.set(static_cast<int64_t>(i), png[i]);
    b.initializer("png", stream);
    auto& d = b.node("ImageDecoder", {"png"}, {"img"});
    OnnxModelBuilder::attr(d, "pixel_format", "BGR");
    b.input("bytes", DataType::kUInt8, {static_cast<int64_t>(png.size())});
    auto& g = b.node("ImageDecoder", {"bytes"}, {"gray"});
    OnnxModelBuilder::attr(g, "pixel_format", "Grayscale");
    b.output("img", DataType::kUInt8);
    b.output("gray", DataType::kUInt8);
    m["image_decoder"] = b.bytes();
  }
  // ImageDecoder over a constant BMP (8-bit palette: header, palette and rows for the mutations to
  // reach) and a constant PPM, both read by graft's own parsers.
  {
    OnnxModelBuilder b(20, 9);
    std::vector<uint8_t> bmp = {'B', 'M', 0x5A, 0, 0, 0, 0, 0, 0, 0, 0x3E, 0, 0, 0, 40, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0,
                                1, 0, 8, 0, 0, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0,
                                10, 20, 30, 0, 200, 100, 50, 0};  // 54-byte header, 2-entry palette
    for (uint8_t v : {0, 1, 0, 0, 1, 1, 0, 0}) bmp.push_back(v);  // two rows of 3 indices, padded to 4
    const std::string ppm = "P6\n# seed\n2 2\n255\n";
    std::vector<uint8_t> pnm(ppm.begin(), ppm.end());
    for (int i = 0; i < 12; ++i) pnm.push_back(static_cast<uint8_t>(i * 21));
    for (auto [name, bytes] : {std::pair<const char*, const std::vector<uint8_t>*>{"bmp", &bmp}, {"pnm", &pnm}}) {
      Tensor stream = Tensor::empty(DataType::kUInt8, {static_cast<int64_t>(bytes->size())});
      for (size_t i = 0; i < bytes->size(); ++i) stream.set(static_cast<int64_t>(i), (*bytes)[i]);
      b.initializer(name, stream);
      b.node("ImageDecoder", {name}, {std::string(name) + "_img"});
      b.output(std::string(name) + "_img", DataType::kUInt8);
    }
    m["image_decoder_bmp_pnm"] = b.bytes();
  }
  // ImageDecoder over constant TIFF, WebP and JPEG 2000 streams (where the build has their
  // libraries), so the mutations reach graft's glue to libtiff, libwebp and OpenJPEG: the memory
  // readers, the size checks and the conversions.
  {
    OnnxModelBuilder b(20, 9);
    std::vector<uint8_t> rgb(4 * 3 * 3);
    for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<uint8_t>(i * 37);
    std::vector<std::pair<std::string, std::vector<uint8_t>>> streams;
#if GRAFT_WITH_TIFF
    streams.emplace_back("tiff", graft::testing::encode_tiff(4, 3, 3, rgb));
#endif
#if GRAFT_WITH_WEBP
    streams.emplace_back("webp", graft::testing::encode_webp(4, 3, rgb));
#endif
#if GRAFT_WITH_OPENJPEG
    streams.emplace_back("jp2", graft::testing::encode_jp2(4, 3, rgb));
#endif
    for (const auto& [name, bytes] : streams) {
      Tensor stream = Tensor::empty(DataType::kUInt8, {static_cast<int64_t>(bytes.size())});
      for (size_t i = 0; i < bytes.size(); ++i) stream.set(static_cast<int64_t>(i), bytes[i]);
      b.initializer(name, stream);
      b.node("ImageDecoder", {name}, {name + "_img"});
      b.output(name + "_img", DataType::kUInt8);
    }
    if (!streams.empty()) m["image_decoder_libraries"] = b.bytes();
  }
  return m;
}

// One model per registered custom op, from its first example (inputs of the example's dims, the
// values it fixes as initializers, its attributes).
std::map<std::string, std::string> custom_op_models(std::mt19937& rng) {
  std::map<std::string, std::string> m;
  for (const graft::RegisteredOp& op : graft::OpRegistry::global().all()) {
    const graft::OpDef& def = *op.def;
    if (def.examples().empty()) continue;
    const auto& ex = def.examples().front();
    OnnxModelBuilder b;
    b.opset(def.identity().domain, 1);
    std::vector<std::string> ins;
    for (size_t i = 0; i < ex.input_dims.size(); ++i) {
      if (!ex.input_dims[i]) {
        ins.push_back("");
        continue;
      }
      const std::string name = "in" + std::to_string(i);
      DataType dt = DataType::kFloat32;
      if (i < def.inputs().size() && !def.inputs()[i].dtypes.empty()) dt = def.inputs()[i].dtypes.front();
      auto v = ex.values.find(static_cast<int>(i));
      if (v != ex.values.end()) b.initializer(name, v->second);
      else b.input(name, dt, std::vector<graft::testing::DimSpec>(ex.input_dims[i]->begin(), ex.input_dims[i]->end()));
      ins.push_back(name);
    }
    std::vector<std::string> outs;
    for (size_t o = 0; o < def.outputs().size(); ++o) outs.push_back("out" + std::to_string(o));
    auto& n = b.node(def.name(), ins, outs, "", def.identity().domain);
    for (const auto& [name, value] : ex.attrs.all()) {
      if (auto* x = std::get_if<int64_t>(&value)) OnnxModelBuilder::attr(n, name, *x);
      else if (auto* x = std::get_if<float>(&value)) OnnxModelBuilder::attr(n, name, *x);
      else if (auto* x = std::get_if<std::string>(&value)) OnnxModelBuilder::attr(n, name, *x);
      else if (auto* x = std::get_if<std::vector<int64_t>>(&value)) OnnxModelBuilder::attr(n, name, *x);
      else if (auto* x = std::get_if<std::vector<float>>(&value)) OnnxModelBuilder::attr(n, name, *x);
      else if (auto* x = std::get_if<Tensor>(&value)) OnnxModelBuilder::attr(n, name, *x);
    }
    for (const auto& o : outs) b.output(o, DataType::kFloat32);
    (void)rng;
    m["custom_" + def.name()] = b.bytes();
  }
  return m;
}

// ---- plans ---------------------------------------------------------------------------------------
void write_plan_and_payload(const fs::path& out, const std::string& name, const std::string& plan) {
  write(out / "plan", name + ".plan", plan);
  uint32_t ver_len = 0;
  std::memcpy(&ver_len, plan.data() + 12, 4);
  const size_t payload_at = 16 + static_cast<size_t>(ver_len) + 8 + 4;
  if (payload_at <= plan.size()) write(out / "plan_payload", name + ".payload", plan.substr(payload_at));
}

// A CPU build times no tactics: this plan carries a CUDA engine's tactic table and the layers' keys
// (made from `plan`'s state), so the plan targets start from those sections too.
void write_plan_with_tactics(const fs::path& out, const std::string& name, const std::string& plan) {
  auto st = graft::read_plan_bytes(plan, name + ".plan");
  if (!st || st->graph->nodes().empty()) return;
  const std::string key = "conv2d;sm90;cudnn91900;float16;nhwc;x8x8x224x224;w64x7x7;g1;p3,3;s2,2;d1,1;bias";
  st->tactics->put(key, graft::Tactic{0, 9, 0.05});
  st->tactics->put("lt;float16;m8;n1000;k512", graft::Tactic{2, 0, 0.01});
  st->tactics->note_layer(st->graph->nodes().front()->name, key);
  st->tactics->note_layer(st->graph->nodes().back()->name, "lt;float16;m8;n1000;k512");
  auto bytes = graft::write_plan_bytes(*st);
  if (bytes && bytes->size() >= 16) write_plan_and_payload(out, name + "_with_tactics", *bytes);
}

// The plan of a model, and its payload (after the header: magic, format, version, length, CRC).
// `with_tactics`: also its form with tactic sections (write_plan_with_tactics).
bool write_plan(const fs::path& out, const std::string& name, const std::string& model, bool with_tactics) {
  graft::BuilderConfig config;
  config.unspecified_shape = [](const graft::IOInfo& in) -> graft::Result<std::vector<int64_t>> {
    std::vector<int64_t> dims = in.static_dims;
    for (int64_t& d : dims)
      if (d < 0) d = 2;
    return dims;
  };
  auto e = graft::Engine::build_from_onnx_bytes(model, config, name + ".onnx");
  if (!e) return false;
  auto plan = (*e)->serialize();
  if (!plan || plan->size() < 16) return false;
  write_plan_and_payload(out, name, *plan);
  if (with_tactics) write_plan_with_tactics(out, name, *plan);
  return true;
}

// A CPU build makes no internal ops; this plan's graph holds what the CUDA passes make of an image
// model's stem and inverted-residual block (a space-to-depth GraftChannelsLast, NHWC GraftConvs, a
// depthwise one with an input activation), so the plan targets reach those ops' attribute checks.
void write_plan_with_internal_ops(const fs::path& out, std::mt19937& rng) {
  const DataType f = DataType::kFloat32;
  OnnxModelBuilder b;
  b.input("x", f, {2, 3, 15, 14});
  b.initializer("ws", filled(f, {16, 3, 7, 7}, rng));
  b.initializer("we", filled(f, {32, 16, 1, 1}, rng));
  b.initializer("wd", filled(f, {32, 1, 3, 3}, rng));
  b.initializer("wp", filled(f, {8, 32, 1, 1}, rng));
  b.initializer("lo", Tensor::from_doubles(f, {}, {0.}));
  b.initializer("hi", Tensor::from_doubles(f, {}, {6.}));
  auto& stem = b.node("Conv", {"x", "ws"}, {"s"}, "stem");
  OnnxModelBuilder::attr(stem, "pads", std::vector<int64_t>{3, 3, 3, 3});
  OnnxModelBuilder::attr(stem, "strides", std::vector<int64_t>{2, 2});
  b.node("Relu", {"s"}, {"r"}, "stem_relu");
  b.node("Conv", {"r", "we"}, {"e"}, "expand");
  b.node("Clip", {"e", "lo", "hi"}, {"ea"}, "expand_relu6");
  auto& dw = b.node("Conv", {"ea", "wd"}, {"d"}, "depthwise");
  OnnxModelBuilder::attr(dw, "group", int64_t{32});
  OnnxModelBuilder::attr(dw, "pads", std::vector<int64_t>{1, 1, 1, 1});
  b.node("Conv", {"d", "wp"}, {"y"}, "project");
  b.output("y", f);
  auto e = graft::Engine::build_from_onnx_bytes(b.bytes(), graft::BuilderConfig{}, "internal_ops.onnx");
  if (!e) return;
  auto plan = (*e)->serialize();
  if (!plan) return;
  auto st = graft::read_plan_bytes(*plan, "internal_ops.plan");
  if (!st) return;
  graft::Graph& g = *st->graph;
  // As the CUDA builder's layout pass picks them: convolutions over multiples of 8 channels, and the
  // stem over 3.
  auto wide = [](const graft::Node& n) {
    const auto& w = n.input(1)->constant->dims();
    auto group = n.attrs.get_int("group", 1);
    return (w[1] * (group ? *group : 1)) % 8 == 0;
  };
  auto stem8 = [](const graft::Node& n) -> int64_t { return n.input(1)->constant->dims()[1] < 8 ? 8 : 0; };
  if (!graft::fuse_conv_epilogues(g) || !graft::convert_conv_regions_to_nhwc(g, wide, stem8, true) ||
      !graft::defer_activations_to_depthwise(g) || !graft::infer_shapes(g))
    return;
  auto bytes = graft::write_plan_bytes(*st);
  if (bytes && bytes->size() >= 16) write_plan_and_payload(out, "internal_ops", *bytes);
}

// ---- timing caches ---------------------------------------------------------------------------------
void timing_caches(const fs::path& out) {
  const fs::path dir = out / "timing_cache";
  fs::create_directories(dir);
  graft::TacticTable t;
  t.put("conv|sm90|cudnn9|n1c64h56w56|k64r3s3|fp16", graft::Tactic{1, 0, 0.042});
  t.put("conv|sm90|cudnn9|n8c3h224w224|k64r7s7|fp32", graft::Tactic{6, 1, 1.5});
  t.put("layout|model|b1", graft::Tactic{2, 0, 12.0});
  if (t.save_cache_file((dir / "three_entries.json").string()).is_ok()) ++g_written;
  graft::TacticTable empty;
  if (empty.save_cache_file((dir / "empty.json").string()).is_ok()) ++g_written;
  write(dir, "version2.json", R"({"format":"graft-timing-cache","version":2,"entries":{}})");
  write(dir, "bad_entry.json", R"({"format":"graft-timing-cache","version":1,"entries":{"k":{"algo":"x"}}})");
  write(dir, "big_numbers.json",
        R"({"format":"graft-timing-cache","version":1,"entries":{"k":{"algo":4294967296,"variant":-1,"ms":1e308}}})");
}

// ---- tensor files --------------------------------------------------------------------------------------
void tensor_files(const fs::path& out, std::mt19937& rng) {
  const fs::path dir = out / "tensor";
  const std::vector<std::vector<int64_t>> shapes = {{}, {5}, {2, 3}, {1, 2, 3}, {2, 1, 2, 2}, {0, 3}};
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16, DataType::kFloat64, DataType::kInt8, DataType::kUInt8,
                      DataType::kInt32, DataType::kInt64, DataType::kBool, DataType::kBFloat16}) {
    for (size_t s = 0; s < shapes.size(); ++s) {
      Tensor t = filled(dt, shapes[s], rng);
      const std::string stem = std::string(graft::dtype_name(dt)) + "_r" + std::to_string(shapes[s].size()) + "_" +
                               std::to_string(s);
      if (auto npy = graft::io::encode_npy(t); npy.is_ok()) {
        write(dir, stem + ".npy", *npy);
        // The same header in format versions 2.0 and 3.0 (a 4-byte header length).
        const std::string& v1 = *npy;
        const uint16_t hlen = static_cast<uint16_t>(static_cast<unsigned char>(v1[8]) | (static_cast<unsigned char>(v1[9]) << 8));
        for (char major : {'\x02', '\x03'}) {
          std::string v = v1.substr(0, 6);
          v += major;
          v += '\x00';
          const uint32_t len = hlen;
          v.append(reinterpret_cast<const char*>(&len), 4);
          v += v1.substr(10);
          write(dir, stem + "_v" + std::to_string(static_cast<int>(major)) + ".npy", v);
        }
      }
      if (auto pb = graft::io::encode_tensor_pb(t, "t_" + stem); pb.is_ok()) write(dir, stem + ".pb", *pb);
    }
  }
  // Typed-field TensorProtos (float_data, int64_data, ...), as the ONNX tests' .pb files have.
  {
    onnx::TensorProto tp;
    tp.set_name("typed_float");
    tp.set_data_type(onnx::TensorProto::FLOAT);
    tp.add_dims(3);
    for (float v : {1.0f, -2.5f, 3.25f}) tp.add_float_data(v);
    write(dir, "typed_float.pb", tp.SerializeAsString());
    onnx::TensorProto ti;
    ti.set_name("typed_int64");
    ti.set_data_type(onnx::TensorProto::INT64);
    ti.add_dims(2);
    ti.add_dims(2);
    for (int64_t v : {int64_t{1}, int64_t{-2}, int64_t{3}, int64_t{1} << 40}) ti.add_int64_data(v);
    write(dir, "typed_int64.pb", ti.SerializeAsString());
    onnx::TensorProto td;
    td.set_name("typed_double");
    td.set_data_type(onnx::TensorProto::DOUBLE);
    td.add_dims(2);
    for (double v : {0.5, -1e300}) td.add_double_data(v);
    write(dir, "typed_double.pb", td.SerializeAsString());
  }
}

// ---- attributes -----------------------------------------------------------------------------------------
void attributes(const fs::path& out, std::mt19937& rng) {
  const fs::path dir = out / "attributes";
  int i = 0;
  for (const graft::RegisteredOp& op : graft::OpRegistry::global().all()) {
    for (const auto& ex : op.def->examples()) {
      graft::AttributeMap a = ex.attrs;
      (void)op.def->validate_attributes(a);  // with the defaults filled in
      write(dir, op.def->name() + "_" + std::to_string(i++) + ".json", graft::serialize_attributes(a));
      write(dir, op.def->name() + "_" + std::to_string(i++) + "_given.json", graft::serialize_attributes(ex.attrs));
    }
  }
  graft::AttributeMap all;
  all.set("f", 0.5f);
  all.set("i", int64_t{-7});
  all.set("s", std::string("linear"));
  all.set("bytes", std::string("\xff\xfe\x00z", 4));
  all.set("fs", std::vector<float>{1.0f, -0.0f, 1e30f});
  all.set("is", std::vector<int64_t>{0, 1, -1, 1LL << 62});
  all.set("ss", std::vector<std::string>{"a", "bc"});
  all.set("ss_bytes", std::vector<std::string>{"a", std::string("\x80", 1)});
  all.set("t", filled(DataType::kFloat32, {2, 2}, rng));
  all.set("t_i64", filled(DataType::kInt64, {3}, rng));
  write(dir, "every_type.json", graft::serialize_attributes(all));
  write(dir, "empty.json", graft::serialize_attributes(graft::AttributeMap{}));
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR [MODEL.onnx...]\n", argv[0]);
    return 2;
  }
  graft::set_log_level(graft::LogLevel::kQuiet);
  const fs::path out = argv[1];
  std::mt19937 rng(20261201);
  int models = 0, plans = 0;
  auto add_model = [&](const std::string& name, const std::string& bytes, bool write_model) {
    if (write_model) write(out / "onnx", name + ".onnx", bytes);
    ++models;
    // The first model that makes a plan also gives the plan with tactic sections.
    const bool ok = write_plan(out, name, bytes, plans == 0);
    plans += ok ? 1 : 0;
  };
  for (const auto& [name, bytes] : builtin_models(rng)) add_model(name, bytes, true);

  for (const auto& [name, bytes] : custom_op_models(rng)) add_model(name, bytes, true);
  // Extra models (the ONNX backend tests', copied into onnx/ by make_corpus.sh): their plans.
  for (int i = 2; i < argc; ++i) {
    const fs::path p = argv[i];
    std::string name = p.parent_path().filename().string();
    if (name.empty()) name = p.stem().string();
    add_model(name + "_" + std::to_string(i), read_file(p), false);
  }
  write_plan_with_internal_ops(out, rng);
  timing_caches(out);
  tensor_files(out, rng);
  attributes(out, rng);
  std::printf("graft_fuzz_corpus: %d files in %s (%d models, %d plans)\n", g_written, out.string().c_str(), models,
              plans);
  return 0;
}
