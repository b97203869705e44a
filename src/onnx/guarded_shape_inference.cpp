#include "onnx/guarded_shape_inference.h"

#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>

namespace graft {
namespace {

// The ops whose libonnx inference assumes the kernel's rank matches the data's: the input that
// holds the weight (-1: none, kernel_shape is an attribute).
int weight_input(const std::string& op) {
  if (op == "Conv" || op == "ConvInteger" || op == "ConvTranspose") return 1;
  if (op == "QLinearConv") return 3;
  return -1;
}
bool guarded_op(const std::string& op) {
  static const std::set<std::string> ops = {"Conv",    "ConvInteger", "QLinearConv", "ConvTranspose",
                                            "MaxPool", "AveragePool", "LpPool",      "MaxUnpool"};
  return ops.count(op) != 0;
}

const onnx::TensorShapeProto* input_shape(onnx::InferenceContext& ctx, size_t i) {
  if (i >= ctx.getNumInputs()) return nullptr;
  const onnx::TypeProto* t = ctx.getInputType(i);
  if (!t || !t->has_tensor_type() || !t->tensor_type().has_shape()) return nullptr;
  return &t->tensor_type().shape();
}

void check_ints_size(onnx::InferenceContext& ctx, const char* name, int64_t expected, const std::string& op) {
  const onnx::AttributeProto* a = ctx.getAttribute(name);
  if (a && a->ints_size() != expected)
    fail_shape_inference(op, ": attribute ", name, " has ", a->ints_size(), " values; the input's rank needs ",
                         expected);
}

// What convPoolShapeInference and convTransposeShapeInference index without checking.
void check_conv_pool(onnx::InferenceContext& ctx, const std::string& op) {
  const onnx::TensorShapeProto* x = input_shape(ctx, 0);
  if (!x) return;  // the original needs it too, and returns
  const int64_t rank = x->dim_size();
  if (rank < 2) fail_shape_inference(op, ": the input has rank ", rank, "; at least 2 is needed");
  const int64_t spatial = rank - 2;
  const int w = weight_input(op);
  if (w >= 0)
    if (const onnx::TensorShapeProto* ws = input_shape(ctx, static_cast<size_t>(w)); ws && ws->dim_size() != rank)
      fail_shape_inference(op, ": the weight has rank ", ws->dim_size(), " but the input has rank ", rank);
  check_ints_size(ctx, "kernel_shape", spatial, op);
  check_ints_size(ctx, "strides", spatial, op);
  check_ints_size(ctx, "dilations", spatial, op);
  check_ints_size(ctx, "pads", 2 * spatial, op);
  check_ints_size(ctx, "output_padding", spatial, op);
  if (const onnx::AttributeProto* g = ctx.getAttribute("group"); g && g->i() <= 0)
    fail_shape_inference(op, ": group must be positive, got ", g->i());
}

// What every libonnx inference function may dereference without checking: its schema's required
// attributes (libonnx 1.12's Scan-8 inference reads `num_scan_inputs` through a null pointer when
// the attribute is missing: FZ20 in docs/results/fuzzing.md). A wrongly typed one reads as the
// protobuf default, which is harmless here and which old models' untyped attributes rely on.
void check_required_attributes(onnx::InferenceContext& ctx, const onnx::OpSchema& schema) {
  for (const auto& [name, spec] : schema.attributes())
    if (spec.required && !ctx.getAttribute(name))
      fail_shape_inference(schema.Name(), ": the required attribute '", name, "' is missing");
}

// Scan's inference splits its inputs by num_scan_inputs (after Scan-8's leading sequence_lens)
// with unsigned arithmetic: a count past the inputs wraps around.
void check_scan_counts(onnx::InferenceContext& ctx, int since_version) {
  const onnx::AttributeProto* a = ctx.getAttribute("num_scan_inputs");
  if (!a) return;  // check_required_attributes has refused it
  const int64_t inputs = static_cast<int64_t>(ctx.getNumInputs()) - (since_version < 9 ? 1 : 0);
  if (a->i() < 1 || a->i() > inputs)
    fail_shape_inference("Scan: num_scan_inputs is ", a->i(), " but the node has ", inputs, " state and scan inputs");
}

// STFT-17's inference in libonnx 1.12 reads the signal's dims 0 and 1 without checking its rank (a
// rank-1 signal read past the dims: FZ23 in docs/results/fuzzing.md). ONNX's signal is
// [batch, length, 1 or 2].
void check_stft_signal(onnx::InferenceContext& ctx) {
  const onnx::TensorShapeProto* s = input_shape(ctx, 0);
  if (s && s->dim_size() != 3)
    fail_shape_inference("STFT: the signal has rank ", s->dim_size(), "; [batch, signal_length, 1 or 2] is needed");
}

// MaxUnpool's inference in libonnx 1.12 (without output_shape) reads dim 1 of the indices input I
// without checking that I has a type, a shape or that rank (an I of rank 0: FZ24 in
// docs/results/fuzzing.md). ONNX's I has X's dims.
void check_max_unpool_indices(onnx::InferenceContext& ctx) {
  if (ctx.getNumInputs() != 2 || !input_shape(ctx, 0)) return;  // where libonnx stops before reading I
  const onnx::TensorShapeProto* ind = input_shape(ctx, 1);
  if (!ind || ind->dim_size() < 2)
    fail_shape_inference("MaxUnpool: the indices input I needs a known shape of X's rank, got ",
                         ind ? "rank " + std::to_string(ind->dim_size()) : std::string("no shape"));
}

// Every default-domain schema's inference runs behind the checks above (and the convolutions' and
// pools' behind check_conv_pool), on a copy of the schema made once per op and version.
class GuardedRegistry final : public onnx::ISchemaRegistry {
 public:
  const onnx::OpSchema* GetSchema(const std::string& key, const int max_version,
                                  const std::string& domain) const override {
    const onnx::OpSchema* s = onnx::OpSchemaRegistry::Schema(key, max_version, domain);
    if (!s || !(domain.empty() || domain == "ai.onnx")) return s;
    std::lock_guard<std::mutex> lock(mu_);
    auto& slot = guarded_[std::make_tuple(key, s->since_version(), domain)];
    if (!slot) {
      slot = std::make_unique<onnx::OpSchema>(*s);
      onnx::InferenceFunction inner = s->GetTypeAndShapeInferenceFunction();
      const onnx::OpSchema* original = s;
      slot->TypeAndShapeInferenceFunction([inner, key, original](onnx::InferenceContext& ctx) {
        check_required_attributes(ctx, *original);
        if (guarded_op(key)) check_conv_pool(ctx, key);
        if (key == "Scan") check_scan_counts(ctx, original->since_version());
        if (key == "STFT") check_stft_signal(ctx);
        if (key == "MaxUnpool") check_max_unpool_indices(ctx);
        if (inner) inner(ctx);
      });
    }
    return slot.get();
  }

 private:
  mutable std::mutex mu_;
  mutable std::map<std::tuple<std::string, int, std::string>, std::unique_ptr<onnx::OpSchema>> guarded_;
};

}  // namespace

void infer_shapes_guarded(onnx::ModelProto& model) {
  static const GuardedRegistry registry;
  onnx::shape_inference::InferShapes(model, &registry);
}

}  // namespace graft
