#include "onnx/opset_conversion.h"

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/checked_math.h"
#include "graft/dtype.h"
#include "onnx/graph_references.h"
#include "onnx/graph_walk.h"
#include "onnx/guarded_shape_inference.h"
#include "onnx/importer.h"

namespace graft {

namespace {

namespace vc = onnx::version_conversion;
using onnx::Graph;
using onnx::Node;
using onnx::OpSetID;
using onnx::Symbol;
using onnx::Tensor;
using onnx::Value;

// ---- failures ----------------------------------------------------------------------------------
// Thrown inside the conversion (adapters run under ONNX's converter, which only knows exceptions);
// caught at the boundary in convert_to_supported_opset and turned into a Status there.
struct ConversionFailure : std::runtime_error {
  ConversionFailure(std::string op_, std::string node_, int64_t from_, int64_t to_, const std::string& why)
      : std::runtime_error(why), op(std::move(op_)), node(std::move(node_)), from(from_), to(to_) {}
  std::string op, node;
  int64_t from, to;
};

std::string node_label(const Node* n) { return n->has_name() ? n->name() : std::string(); }

[[noreturn]] void refuse(const std::string& why) { throw std::runtime_error(why); }

// ---- helpers on ONNX's IR ------------------------------------------------------------------------
// A Constant node before `before` holding `t`; returns its output, typed and shaped like `t`.
Value* add_constant(const std::shared_ptr<Graph>& graph, Node* before, const Tensor& t) {
  Node* c = graph->create(onnx::kConstant);
  c->t_(onnx::kvalue, t);
  c->insertBefore(before);
  c->output()->setElemType(t.elem_type());
  std::vector<onnx::Dimension> dims;
  for (int64_t d : t.sizes()) dims.emplace_back(d);
  c->output()->setSizes(dims);
  return c->output();
}

Tensor int64_vector(const std::vector<int64_t>& v) {
  Tensor t;
  t.elem_type() = onnx::TensorProto_DataType_INT64;
  t.sizes() = {static_cast<int64_t>(v.size())};
  t.int64s() = v;
  return t;
}

// `v` (a float attribute of the old opset) as an integer of [lo, hi]: saturated at the ends, so a
// bound past the type's range bounds nothing, and refused when NaN. A plain conversion of a value
// out of range is undefined (fuzzing found a Clip bound of 4.7e30 over int32).
int64_t saturated(double v, int64_t lo, int64_t hi) {
  if (std::isnan(v)) refuse("a NaN has no integer form");
  return std::clamp(saturating_int64(v), lo, hi);
}

// A scalar of `elem_type` (the data type of the tensor it will be combined with) holding `v`.
// Float types graft reads: float, double, float16, bfloat16; integers of every width.
Tensor typed_scalar(int32_t elem_type, double v) {
  Tensor t;
  t.sizes() = {};
  switch (elem_type) {
    case onnx::TensorProto_DataType_UNDEFINED:
    case onnx::TensorProto_DataType_FLOAT:
      t.elem_type() = onnx::TensorProto_DataType_FLOAT;
      t.floats().push_back(static_cast<float>(v));
      break;
    case onnx::TensorProto_DataType_DOUBLE:
      t.elem_type() = elem_type;
      t.doubles().push_back(v);
      break;
    case onnx::TensorProto_DataType_FLOAT16:
      t.elem_type() = elem_type;
      t.int32s().push_back(float_to_half(static_cast<float>(v)));
      break;
    case onnx::TensorProto_DataType_INT64:
      t.elem_type() = elem_type;
      t.int64s().push_back(saturated(v, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()));
      break;
    case onnx::TensorProto_DataType_INT32:
    case onnx::TensorProto_DataType_INT16:
    case onnx::TensorProto_DataType_INT8:
    case onnx::TensorProto_DataType_UINT16:
    case onnx::TensorProto_DataType_UINT8: {
      // The type's own range (int32_data holds the narrower ones too).
      const auto range = [&]() -> std::pair<int64_t, int64_t> {
        switch (elem_type) {
          case onnx::TensorProto_DataType_INT16: return {INT16_MIN, INT16_MAX};
          case onnx::TensorProto_DataType_INT8: return {INT8_MIN, INT8_MAX};
          case onnx::TensorProto_DataType_UINT16: return {0, UINT16_MAX};
          case onnx::TensorProto_DataType_UINT8: return {0, UINT8_MAX};
          default: return {INT32_MIN, INT32_MAX};
        }
      }();
      t.elem_type() = elem_type;
      t.int32s().push_back(static_cast<int32_t>(saturated(v, range.first, range.second)));
      break;
    }
    case onnx::TensorProto_DataType_BOOL:
      if (std::isnan(v)) refuse("a NaN has no bool form");
      t.elem_type() = elem_type;
      t.int32s().push_back(v != 0.0 ? 1 : 0);
      break;
    default:
      refuse("the data type " + std::to_string(elem_type) + " has no scalar form here");
  }
  return t;
}

// What shape inference found for every value of the model, by (work) name, in any graph. ONNX's IR
// gives a subgraph's reference to an outer value no type or shape; adapters fall back on this.
struct KnownValue {
  int32_t elem_type = onnx::TensorProto_DataType_UNDEFINED;
  bool has_shape = false;
  std::vector<onnx::Dimension> dims;
};
using KnownValues = std::unordered_map<std::string, KnownValue>;
thread_local const KnownValues* t_known = nullptr;  // set for the duration of one conversion

const KnownValue* known(const Value* v) {
  if (!t_known || !v->has_unique_name()) return nullptr;
  auto it = t_known->find(v->uniqueName());
  return it == t_known->end() ? nullptr : &it->second;
}
// libonnx's Dimension() sets only is_unknown, leaving is_int and dim unset (reading them is undefined,
// and UBSan reports the bool, as fuzzing found): dims are read through dim_is, unknown ones are made
// by unknown_dim, and lists are copied by copied_dims, which never reads an unknown dim's other fields.
bool dim_is(const onnx::Dimension& d, int64_t value) { return !d.is_unknown && d.is_int && d.dim == value; }
onnx::Dimension unknown_dim() {
  onnx::Dimension d;
  d.is_int = false;
  d.dim = -1;
  return d;
}
std::vector<onnx::Dimension> copied_dims(const std::vector<onnx::Dimension>& d, size_t from = 0) {
  std::vector<onnx::Dimension> out;
  for (size_t a = from; a < d.size(); ++a) out.push_back(d[a].is_unknown ? unknown_dim() : d[a]);
  return out;
}

// The value's dims, or nullptr when its rank is unknown.
const std::vector<onnx::Dimension>* dims_of(const Value* v) {
  if (v->has_sizes()) return &v->sizes();
  const KnownValue* k = known(v);
  return k && k->has_shape ? &k->dims : nullptr;
}
int32_t elem_type_of(const Value* v) {
  if (v->elemType() != onnx::TensorProto_DataType_UNDEFINED) return v->elemType();
  const KnownValue* k = known(v);
  return k ? k->elem_type : onnx::TensorProto_DataType_UNDEFINED;
}

void add_known(const onnx::ValueInfoProto& vi, KnownValues* out) {
  if (!vi.type().has_tensor_type()) return;
  const auto& tt = vi.type().tensor_type();
  KnownValue k;
  k.elem_type = tt.elem_type();
  k.has_shape = tt.has_shape();
  for (const auto& d : tt.shape().dim())
    k.dims.push_back(d.has_dim_value() ? onnx::Dimension(d.dim_value())
                     : d.has_dim_param() ? onnx::Dimension(d.dim_param())
                                         : unknown_dim());
  auto [it, inserted] = out->emplace(vi.name(), k);
  if (!inserted && !it->second.has_shape && k.has_shape) it->second = k;
}

// ---- graft's adapters ----------------------------------------------------------------------------
// Each adapts one node across one opset step, in place (ONNX's Adapter interface).
class FnAdapter final : public vc::Adapter {
 public:
  using Fn = std::function<void(const std::shared_ptr<Graph>&, Node*)>;
  FnAdapter(const std::string& op, int64_t from, int64_t to, Fn fn)
      : Adapter(op, OpSetID(from), OpSetID(to)), fn_(std::move(fn)) {}
  Node* adapt(std::shared_ptr<Graph> graph, Node* node) const override {
    fn_(graph, node);
    return node;
  }

 private:
  Fn fn_;
};

void remove_attr(Node* n, const Symbol& s) {
  if (n->hasAttribute(s)) n->removeAttribute(s);
}

// Binary ops before opset 7: `broadcast` (default 0: same shapes) and `axis` (where B's dims start
// in A's; default: B's dims are A's trailing dims). From 7 on, numpy broadcasting. Equal shapes and
// trailing alignment mean the same under both; another axis needs B padded with trailing 1s.
void legacy_broadcast(const std::shared_ptr<Graph>& graph, Node* node) {
  const bool broadcast = node->hasAttribute(onnx::kbroadcast) && node->i(onnx::kbroadcast) != 0;
  if (broadcast && node->hasAttribute(onnx::kaxis) && node->inputs().size() == 2) {
    Value* a = node->inputs()[0];
    Value* b = node->inputs()[1];
    const std::vector<onnx::Dimension>* da = dims_of(a);
    const std::vector<onnx::Dimension>* db = dims_of(b);
    if (!da || !db)
      refuse("broadcast=1 with an axis needs the ranks of both inputs, and shape inference did not find them");
    const int64_t ra = static_cast<int64_t>(da->size());
    const int64_t rb = static_cast<int64_t>(db->size());
    int64_t axis = node->i(onnx::kaxis);
    if (axis < 0) axis += ra;
    if (axis < 0 || axis + rb > ra)
      refuse("axis " + std::to_string(node->i(onnx::kaxis)) + " does not place a rank-" + std::to_string(rb) +
             " B inside a rank-" + std::to_string(ra) + " A");
    const int64_t trailing = ra - axis - rb;
    if (trailing > 0) {
      std::vector<int64_t> axes;
      std::vector<onnx::Dimension> dims = copied_dims(*db);
      for (int64_t i = 0; i < trailing; ++i) {
        axes.push_back(rb + i);
        dims.emplace_back(int64_t{1});
      }
      Node* u = graph->create(onnx::kUnsqueeze);
      u->addInput(b);
      u->is_(onnx::kaxes, std::move(axes));  // Unsqueeze before opset 13: axes is an attribute
      u->insertBefore(node);
      u->output()->setElemType(elem_type_of(b));
      u->output()->setSizes(dims);
      node->replaceInput(1, u->output());
    }
  }
  remove_attr(node, onnx::kbroadcast);
  remove_attr(node, onnx::kaxis);
}

// Reshape-1..4: the target shape is an attribute (and consumed_inputs); from 5 an int64 input.
void reshape_4_5(const std::shared_ptr<Graph>& graph, Node* node) {
  remove_attr(node, onnx::kconsumed_inputs);
  if (!node->hasAttribute(onnx::kshape)) refuse("Reshape before opset 5 needs its shape attribute");
  std::vector<int64_t> shape = node->is(onnx::kshape);
  node->removeAttribute(onnx::kshape);
  node->addInput(add_constant(graph, node, int64_vector(shape)));
}

// Pad-1 names its pads `paddings`.
void pad_1_2(const std::shared_ptr<Graph>&, Node* node) {
  const Symbol paddings("paddings");
  if (node->hasAttribute(paddings)) {
    std::vector<int64_t> p = node->is(paddings);
    node->removeAttribute(paddings);
    node->is_(onnx::kpads, std::move(p));
  }
}

// Pad-2..10: pads and value are attributes; from 11 inputs (pads int64, constant_value a scalar of
// the data's type, default 0).
void pad_10_11(const std::shared_ptr<Graph>& graph, Node* node) {
  if (!node->hasAttribute(onnx::kpads)) refuse("Pad needs its pads attribute");
  std::vector<int64_t> pads = node->is(onnx::kpads);
  node->removeAttribute(onnx::kpads);
  node->addInput(add_constant(graph, node, int64_vector(pads)));
  const std::string mode = node->hasAttribute(onnx::kmode) ? node->s(onnx::kmode) : "constant";
  double value = 0;
  if (node->hasAttribute(onnx::kvalue)) {
    value = node->f(onnx::kvalue);
    node->removeAttribute(onnx::kvalue);
  }
  if (mode == "constant") node->addInput(add_constant(graph, node, typed_scalar(elem_type_of(node->inputs()[0]), value)));
}

// Clip-6..10: min and max are attributes (defaults: the float range); from 11 optional scalar inputs
// of the data's type.
void clip_10_11(const std::shared_ptr<Graph>& graph, Node* node) {
  const bool has_min = node->hasAttribute(onnx::kmin), has_max = node->hasAttribute(onnx::kmax);
  const int32_t et = elem_type_of(node->inputs()[0]);
  if (has_min || has_max) {
    const double lo = has_min ? node->f(onnx::kmin) : -INFINITY;
    node->addInput(add_constant(graph, node, typed_scalar(et, lo)));
  }
  if (has_max) node->addInput(add_constant(graph, node, typed_scalar(et, node->f(onnx::kmax))));
  remove_attr(node, onnx::kmin);
  remove_attr(node, onnx::kmax);
}

// Cast-1: `to` is the type's name ("FLOAT"); from 6 its TensorProto number.
void cast_5_6(const std::shared_ptr<Graph>&, Node* node) {
  remove_attr(node, onnx::kconsumed_inputs);
  if (!node->hasAttribute(onnx::kto) || node->kindOf(onnx::kto) != onnx::AttributeKind::s) return;
  const std::string name = node->s(onnx::kto);
  onnx::TensorProto_DataType dt{};
  if (!onnx::TensorProto_DataType_Parse(name, &dt)) refuse("'" + name + "' is not an ONNX data type name");
  node->removeAttribute(onnx::kto);
  node->i_(onnx::kto, static_cast<int64_t>(dt));
}

// Split-1 may take the split sizes as a second input; Split-2 only as an attribute.
void split_1_2(const std::shared_ptr<Graph>&, Node* node) {
  if (node->inputs().size() > 1)
    refuse("Split-1 with the split sizes as a second input is not converted (Split-2 takes them as an attribute)");
}

// Scan-8 scans [batch, sequence, ...] tensors (with optional per-batch lengths); Scan-9 has no batch
// axis, and ONNX's own 8->9 adapter only rewrites the declarations. With a batch of 1 known from the
// shapes and no sequence_lens, Scan-8 is Scan-9 between a Squeeze and an Unsqueeze of axis 0 on
// every state and scan tensor (the body is the same: it never sees the batch). Other batches would
// need a loop over the batch around the Scan: refused with the reason.
void scan_8_9(const std::shared_ptr<Graph>& graph, Node* node) {
  const std::string why =
      "Scan before opset 9 scans a batch axis that Scan-9 does not have; graft converts it only for a batch of 1 "
      "known from the input shapes and no sequence_lens (re-export the model with opset 9 or later)";
  if (node->inputs().empty()) refuse(why);
  Value* lens = node->inputs()[0];
  if (lens && lens->node()->kind() != onnx::kUndefined) refuse(why + ": this node has sequence_lens");
  for (size_t i = 1; i < node->inputs().size(); ++i) {
    const std::vector<onnx::Dimension>* d = dims_of(node->inputs()[i]);
    if (!d || d->empty() || !dim_is((*d)[0], 1)) refuse(why + ": input " + std::to_string(i) +
                                                                          " has no batch of 1 in its shape");
  }
  auto drop_batch = [](const std::vector<onnx::Dimension>& d) { return copied_dims(d, 1); };
  for (size_t i = 1; i < node->inputs().size(); ++i) {
    Value* v = node->inputs()[i];
    Node* sq = graph->create(onnx::kSqueeze);
    sq->addInput(v);
    sq->is_(onnx::kaxes, {0});  // Squeeze before opset 13: axes is an attribute
    sq->insertBefore(node);
    sq->output()->setElemType(elem_type_of(v));
    sq->output()->setSizes(drop_batch(*dims_of(v)));
    node->replaceInput(i, sq->output());
  }
  node->removeInput(0);
  const Symbol directions("directions"), scan_input_directions("scan_input_directions");
  if (node->hasAttribute(directions)) {
    std::vector<int64_t> dirs = node->is(directions);
    node->removeAttribute(directions);
    node->is_(scan_input_directions, std::move(dirs));
  }
  // Each output gets its batch axis back; the Unsqueeze's output takes over the output's name, so
  // the graph's outputs and the nodes reading them see what they saw.
  for (Value* out : std::vector<Value*>(node->outputs().begin(), node->outputs().end())) {
    const std::string name = out->uniqueName();
    const int32_t et = elem_type_of(out);
    const std::vector<onnx::Dimension>* known_dims = dims_of(out);  // read before the rename below
    const std::optional<std::vector<onnx::Dimension>> dims =
        known_dims ? std::optional<std::vector<onnx::Dimension>>(copied_dims(*known_dims)) : std::nullopt;
    Node* un = graph->create(onnx::kUnsqueeze);
    un->is_(onnx::kaxes, {0});
    un->insertAfter(node);
    out->replaceAllUsesWith(un->output());
    un->addInput(out);
    out->setUniqueName(name + "_graft_scan9");
    un->output()->setUniqueName(name);
    un->output()->setElemType(et);
    if (dims) {
      un->output()->setSizes(*dims);
      if (!dims->empty()) out->setSizes(drop_batch(*dims));
    }
  }
}

// Upsample-1 (experimental): height_scale/width_scale of a 4-D input, mode nearest or bilinear.
void upsample_6_7(const std::shared_ptr<Graph>&, Node* node) {
  const Symbol hs("height_scale"), ws("width_scale");
  if (!node->hasAttribute(hs) || !node->hasAttribute(ws))
    refuse("Upsample-1 needs its height_scale and width_scale attributes");
  std::vector<double> scales = {1.0, 1.0, node->f(hs), node->f(ws)};
  node->removeAttribute(hs);
  node->removeAttribute(ws);
  node->fs_(onnx::kscales, std::move(scales));
  if (node->hasAttribute(onnx::kmode) && node->s(onnx::kmode) == "bilinear") node->s_(onnx::kmode, "linear");
}

// Resize-10 (and Upsample, which becomes it): inputs (X, scales); output coordinate x maps to
// x / scale (asymmetric), nearest takes floor. Resize-11: inputs (X, roi, scales[, sizes]) and
// half_pixel/round_prefer_floor by default, so both are said explicitly.
void resize_10_11(const std::shared_ptr<Graph>& graph, Node* node) {
  if (node->inputs().size() != 2) refuse("Resize-10 takes 2 inputs (X, scales)");
  Tensor roi;
  roi.elem_type() = onnx::TensorProto_DataType_FLOAT;
  roi.sizes() = {0};
  Value* scales = node->inputs()[1];
  node->replaceInput(1, add_constant(graph, node, roi));
  node->addInput(scales);
  node->s_(Symbol("coordinate_transformation_mode"), "asymmetric");
  const std::string mode = node->hasAttribute(onnx::kmode) ? node->s(onnx::kmode) : "nearest";
  if (mode == "nearest") node->s_(Symbol("nearest_mode"), "floor");
}

// PRelu before 7: a slope of C values (1-D) applies per channel, along axis 1 of the data (what
// PyTorch's exporter meant and the suite's multiparam cases expect); from 7 the slope broadcasts
// numpy-style, so it is given trailing 1s to stay on axis 1.
void prelu_6_7(const std::shared_ptr<Graph>& graph, Node* node) {
  if (node->inputs().size() != 2) return;
  Value* x = node->inputs()[0];
  Value* slope = node->inputs()[1];
  const std::vector<onnx::Dimension>* ds = dims_of(slope);
  if (!ds) refuse("the shape of the slope is unknown; before opset 7 it decides the broadcast axis");
  if (ds->size() != 1) return;
  const onnx::Dimension& c = (*ds)[0];
  if (dim_is(c, 1)) return;  // one slope for every element
  const std::vector<onnx::Dimension>* dx = dims_of(x);
  if (!dx) refuse("the rank of the data is unknown; a per-channel slope needs it");
  const int64_t rank = static_cast<int64_t>(dx->size());
  if (rank < 3) return;  // [N, C]: the slope already lines up with C
  std::vector<int64_t> axes;
  std::vector<onnx::Dimension> dims = copied_dims(*ds);
  for (int64_t i = 1; i <= rank - 2; ++i) {
    axes.push_back(i);
    dims.emplace_back(int64_t{1});
  }
  Node* u = graph->create(onnx::kUnsqueeze);
  u->addInput(slope);
  u->is_(onnx::kaxes, std::move(axes));
  u->insertBefore(node);
  u->output()->setElemType(elem_type_of(slope));
  u->output()->setSizes(dims);
  node->replaceInput(1, u->output());
}

// Gemm before 7: `broadcast` says whether C broadcasts; from 7 C always broadcasts
// (unidirectionally), which covers both.
void gemm_6_7(const std::shared_ptr<Graph>&, Node* node) { remove_attr(node, onnx::kbroadcast); }

// Dropout before 10: the mask output has the data's type; from 10 it is bool. Inference never
// drops, so the output passes through either way; a model that reads the mask is refused.
void dropout_9_10(const std::shared_ptr<Graph>&, Node* node) {
  if (node->outputs().size() > 1 && !node->outputs()[1]->uses().empty())
    refuse("the mask output is used, and its type changes from the data's to bool at opset 10");
}

// ---- the converter -------------------------------------------------------------------------------
// Wraps an adapter so that a failure inside it names the op, the node and the step.
class NamedAdapter final : public vc::Adapter {
 public:
  explicit NamedAdapter(std::unique_ptr<vc::Adapter> inner)
      : Adapter(inner->name(), inner->initial_version(), inner->target_version()), inner_(std::move(inner)) {}
  Node* adapt(std::shared_ptr<Graph> graph, Node* node) const override {
    try {
      return inner_->adapt(std::move(graph), node);
    } catch (const ConversionFailure&) {
      throw;
    } catch (const std::exception& e) {
      throw ConversionFailure(name(), node_label(node), initial_version().version(), target_version().version(),
                              e.what());
    }
  }

 private:
  std::unique_ptr<vc::Adapter> inner_;
};

class GraftConverter final : public vc::DefaultVersionConverter {
 public:
  GraftConverter() {
    for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Equal", "Greater", "Less"})
      own(op, 6, 7, legacy_broadcast);
    own("Gemm", 6, 7, gemm_6_7);
    own("PRelu", 6, 7, prelu_6_7);
    own("Dropout", 9, 10, dropout_9_10);
    own("Reshape", 4, 5, reshape_4_5);
    own("Pad", 1, 2, pad_1_2);
    own("Pad", 10, 11, pad_10_11);
    own("Clip", 10, 11, clip_10_11);
    own("Cast", 5, 6, cast_5_6);
    own("Split", 1, 2, split_1_2);
    own("Scan", 8, 9, scan_8_9);
    own("Upsample", 6, 7, upsample_6_7);
    own("Resize", 10, 11, resize_10_11);
    for (auto& [op, from_map] : adapters)
      for (auto& [from, to_map] : from_map)
        for (auto& [to, adapter] : to_map) adapter = std::make_unique<NamedAdapter>(std::move(adapter));
  }

  // The first step in [from, to) at which `op` changes and no adapter exists, or 0.
  int64_t missing_step(const std::string& op, int64_t from, int64_t to) const {
    auto s = all_schemas.find(op);
    if (s == all_schemas.end()) return 0;
    auto d = s->second.find("");
    if (d == s->second.end()) return 0;
    auto a = adapters.find(op);
    for (int64_t v = from; v < to; ++v) {
      if (!d->second.count(v + 1)) continue;
      if (a == adapters.end()) return v;
      auto f = a->second.find(OpSetID(v).toString());
      if (f == a->second.end() || !f->second.count(OpSetID(v + 1).toString())) return v;
    }
    return 0;
  }
  // Whether ONNX's schemas define `op` in the default domain at `opset` (the converter looks every
  // default-domain node up, fails on names it does not know and on ops newer than the model).
  bool knows(const std::string& op, int64_t opset) const {
    auto s = all_schemas.find(op);
    if (s == all_schemas.end()) return false;
    auto d = s->second.find("");
    return d != s->second.end() && !d->second.empty() && d->second.begin()->first <= opset;
  }

 private:
  void own(const char* op, int64_t from, int64_t to, FnAdapter::Fn fn) {
    registerAdapter(std::make_unique<FnAdapter>(op, from, to, std::move(fn)));
  }
};

// ---- model walks ---------------------------------------------------------------------------------

// Renames every value (graph inputs/outputs, initializers, value_info, node inputs/outputs, in
// every subgraph) through `fn`; empty names (omitted optional inputs) stay empty.
void rename_values(onnx::ModelProto* m, const std::function<std::string(const std::string&)>& fn) {
  for_each_graph(m->mutable_graph(), [&](onnx::GraphProto* g) {
    auto r = [&](std::string* s) {
      if (!s->empty()) *s = fn(*s);
    };
    for (auto& v : *g->mutable_input()) r(v.mutable_name());
    for (auto& v : *g->mutable_output()) r(v.mutable_name());
    for (auto& v : *g->mutable_value_info()) r(v.mutable_name());
    for (auto& t : *g->mutable_initializer()) r(t.mutable_name());
    for (auto& n : *g->mutable_node()) {
      for (auto& s : *n.mutable_input()) r(&s);
      for (auto& s : *n.mutable_output()) r(&s);
    }
  });
}

bool is_default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

// A copy of `in` for the converter without the weights: no forward adapter reads them, ONNX's IR
// drops external data, and the converter copies a model twice. Main-graph initializers that are
// large, or stored outside the model, keep their name, type and dims only; the small ones keep
// their data, which shape inference reads (Reshape's shape, Upsample's scales).
onnx::ModelProto copy_without_weights(const onnx::ModelProto& in) {
  onnx::ModelProto work;
  work.set_ir_version(in.ir_version());
  *work.mutable_opset_import() = in.opset_import();
  work.set_producer_name(in.producer_name());
  work.set_producer_version(in.producer_version());
  work.set_domain(in.domain());
  work.set_model_version(in.model_version());
  work.set_doc_string(in.doc_string());
  *work.mutable_metadata_props() = in.metadata_props();
  const onnx::GraphProto& g = in.graph();
  onnx::GraphProto* w = work.mutable_graph();
  w->set_name(g.name());
  w->set_doc_string(g.doc_string());
  *w->mutable_node() = g.node();
  *w->mutable_input() = g.input();
  *w->mutable_output() = g.output();
  *w->mutable_value_info() = g.value_info();
  for (const auto& t : g.initializer()) {
    constexpr int64_t kSmall = 4096;
    int64_t numel = 1;
    for (int64_t d : t.dims()) {
      if (d < 0 || (d > 0 && numel > kSmall / d)) {
        numel = kSmall + 1;
        break;
      }
      numel *= d;
    }
    if (t.data_location() != onnx::TensorProto::EXTERNAL && numel <= kSmall) {
      *w->add_initializer() = t;
      continue;
    }
    onnx::TensorProto* stub = w->add_initializer();
    stub->set_name(t.name());
    stub->set_data_type(t.data_type());
    *stub->mutable_dims() = t.dims();
  }
  return work;
}

constexpr const char* kHiddenPrefix = "graft.opset_conversion.hidden.";

}  // namespace

int64_t default_domain_opset_of(const onnx::ModelProto& model) {
  for (const auto& os : model.opset_import())
    if (is_default_domain(os.domain())) return os.version();
  return -1;
}

bool needs_opset_conversion(const onnx::ModelProto& model) {
  const int64_t v = default_domain_opset_of(model);
  return v >= 0 && v < kMinOpset;
}

Status convert_to_supported_opset(const onnx::ModelProto& in, onnx::ModelProto* out) {
  const int64_t from = default_domain_opset_of(in);
  const int64_t to = kMinOpset;
  auto refused = [&](const std::string& why) {
    return error(StatusCode::kUnsupported, "default-domain opset ", from, " cannot be converted to opset ", to,
                 " (graft converts opsets 1 to ", to - 1, " on import): ", why);
  };
  auto refused_op = [&](const std::string& node, const std::string& op, int64_t step_from, int64_t step_to,
                        const std::string& why) {
    Status st = refused(op + " from opset " + std::to_string(step_from) + " to " + std::to_string(step_to) + ": " + why);
    return st.with_node(node.empty() ? "(unnamed)" : node, op);
  };
  if (from < 1 || from >= to) return refused("opset " + std::to_string(from) + " is not an older ONNX opset");
  // libonnx's converter trusts the graph (names defined, nodes as their schemas say): check first.
  GRAFT_RETURN_IF_ERROR(check_model_for_libonnx(in, from));
  try {
    // Building a converter copies every schema libonnx knows (about 20 ms under sanitizers, most of
    // an old model's import), so one serves the process. libonnx does not say its converter may be
    // used by two threads at once: conversions take turns.
    static std::mutex converter_mutex;
    std::lock_guard<std::mutex> hold(converter_mutex);
    static const GraftConverter converter;

    onnx::ModelProto work = copy_without_weights(in);
    // ONNX's IR names the values an adapter adds by number ("12"), which can be the name of an
    // existing value (PyTorch's exporter numbers its values). So every value is renamed to a name no
    // adapter makes, and back afterwards; added values get fresh names.
    std::unordered_map<std::string, std::string> to_work, from_work;
    rename_values(&work, [&](const std::string& s) {
      auto it = to_work.find(s);
      if (it != to_work.end()) return it->second;
      std::string w = "graft.v" + std::to_string(to_work.size());
      to_work.emplace(s, w);
      from_work.emplace(w, s);
      return w;
    });
    std::set<std::string> declared;  // value_info the model carried (work names), in any graph
    for_each_graph(work.mutable_graph(), [&](onnx::GraphProto* g) {
      for (const auto& vi : g->value_info()) declared.insert(vi.name());
    });

    // Shapes: only the 6->7 broadcast (broadcast=1 with an axis) and PRelu adapters need ranks, and
    // libonnx 1.12's inference of old opsets indexes malformed nodes unchecked (fuzz findings FZ7,
    // FZ8), so it runs only for a model that has such a node. Inference problems are not fatal here;
    // an adapter that needs a rank it does not get says so.
    bool needs_ranks = false;
    if (from < 7)
      for_each_graph(work.mutable_graph(), [&](onnx::GraphProto* g) {
        for (const auto& n : g->node()) {
          bool broadcast = false, axis = false;
          for (const auto& a : n.attribute()) {
            if (a.name() == "broadcast" && a.i() != 0) broadcast = true;
            if (a.name() == "axis") axis = true;
          }
          if ((broadcast && axis) || n.op_type() == "PRelu") needs_ranks = true;
        }
      });
    if (needs_ranks) {
      try {
        infer_shapes_guarded(work);  // libonnx's, each op's inference behind the checks of guarded_shape_inference.cpp
      } catch (...) {
      }
    }
    KnownValues known_values;
    for_each_graph(work.mutable_graph(), [&](onnx::GraphProto* g) {
      for (const auto& vi : g->input()) add_known(vi, &known_values);
      for (const auto& vi : g->output()) add_known(vi, &known_values);
      for (const auto& vi : g->value_info()) add_known(vi, &known_values);
      for (const auto& t : g->initializer()) {
        KnownValue k;
        k.elem_type = t.data_type();
        k.has_shape = true;
        for (int64_t d : t.dims()) k.dims.emplace_back(d);
        known_values[t.name()] = k;
      }
    });
    struct KnownScope {
      explicit KnownScope(const KnownValues* k) { t_known = k; }
      ~KnownScope() { t_known = nullptr; }
    } known_scope(&known_values);
    // ONNX's IR wants IR 3's initializers listed as graph inputs too (graft does not); from IR 4
    // it does not either. The model keeps its own IR version.
    if (work.ir_version() < 4) work.set_ir_version(4);
    // Every main-graph initializer gets its original contents back afterwards (the weights were
    // left out of `work`).
    std::unordered_map<std::string, const onnx::TensorProto*> weights;  // by original name
    for (const auto& t : in.graph().initializer()) weights.emplace(t.name(), &t);

    std::string external_attr;
    for_each_graph(work.mutable_graph(), [&](onnx::GraphProto* g) {
      for (const auto& n : g->node())
        for (const auto& a : n.attribute())
          if (a.has_t() && a.t().data_location() == onnx::TensorProto::EXTERNAL && external_attr.empty())
            external_attr = n.op_type() + " node '" + n.name() + "' keeps its attribute '" + a.name() +
                            "' in external data, which ONNX's converter would drop";
    });
    if (!external_attr.empty()) return refused(external_attr);

    // Nodes ONNX's converter cannot look up (other domains, names it does not know, ops newer than
    // the model's opset, which graft then reads as it would at opset 11) are hidden behind an op
    // that no step touches (Identity changes first at 13) and restored afterwards.
    struct Hidden {
      std::string op_type, domain, name;
      bool had_name;
    };
    std::vector<Hidden> hidden;
    struct Missing {
      std::string node, op;
      int64_t step = 0;
    } missing;
    for_each_graph(work.mutable_graph(), [&](onnx::GraphProto* g) {
      for (auto& n : *g->mutable_node()) {
        if (is_default_domain(n.domain()) && converter.knows(n.op_type(), from)) {
          if (missing.step == 0)
            if (int64_t v = converter.missing_step(n.op_type(), from, to)) missing = {n.name(), n.op_type(), v};
          continue;
        }
        hidden.push_back({n.op_type(), n.domain(), n.name(), !n.name().empty()});
        n.set_op_type("Identity");
        n.set_domain("");
        n.set_name(kHiddenPrefix + std::to_string(hidden.size() - 1));
      }
    });
    if (missing.step)
      return refused_op(missing.node, missing.op, missing.step, missing.step + 1,
                        "the operator changed there and neither ONNX's converter nor graft has an adapter for it");

    onnx::ModelProto res = converter.convert_version(work, OpSetID(from), OpSetID(to));
    res.set_ir_version(in.ir_version());

    // Restore hidden nodes, names and the value_info the model had.
    std::set<std::string> taken;
    for (const auto& [orig, w] : to_work) taken.insert(orig);
    int64_t fresh = 0;
    std::unordered_map<std::string, std::string> added;
    rename_values(&res, [&](const std::string& s) {
      auto it = from_work.find(s);
      if (it != from_work.end()) return it->second;
      auto a = added.find(s);
      if (a != added.end()) return a->second;
      std::string name;
      do name = "opset_conversion_" + std::to_string(fresh++);
      while (taken.count(name));
      taken.insert(name);
      added.emplace(s, name);
      return name;
    });
    for (auto& t : *res.mutable_graph()->mutable_initializer()) {
      auto w = weights.find(t.name());
      if (w != weights.end()) t = *w->second;  // its original type, dims and data
    }
    std::string restore_error;
    for_each_graph(res.mutable_graph(), [&](onnx::GraphProto* g) {
      google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> kept;
      for (auto& vi : *g->mutable_value_info()) {
        auto w = to_work.find(vi.name());
        if (w != to_work.end() && declared.count(w->second)) *kept.Add() = std::move(vi);
      }
      g->mutable_value_info()->Swap(&kept);
      for (auto& n : *g->mutable_node()) {
        if (n.name().rfind(kHiddenPrefix, 0) != 0) continue;
        const size_t i = std::stoul(n.name().substr(std::string(kHiddenPrefix).size()));
        if (i >= hidden.size()) {
          restore_error = "a node hidden from the converter came back unrecognized";
          continue;
        }
        n.set_op_type(hidden[i].op_type);
        n.set_domain(hidden[i].domain);
        if (hidden[i].had_name) n.set_name(hidden[i].name);
        else n.clear_name();
      }
    });
    if (!restore_error.empty()) return refused(restore_error);
    // One default-domain import, at the target opset (the converter writes its own).
    bool seen = false;
    google::protobuf::RepeatedPtrField<onnx::OperatorSetIdProto> imports;
    for (const auto& os : res.opset_import()) {
      if (is_default_domain(os.domain())) {
        if (seen) continue;
        seen = true;
        auto* o = imports.Add();
        o->set_domain(os.domain());
        o->set_version(to);
        continue;
      }
      *imports.Add() = os;
    }
    res.mutable_opset_import()->Swap(&imports);
    *out = std::move(res);
    return Status::ok();
  } catch (const ConversionFailure& f) {
    return refused_op(f.node, f.op, f.from, f.to, f.what());
  } catch (const std::exception& e) {
    return refused(e.what());
  } catch (...) {
    return refused("ONNX's version converter failed with an unknown exception");
  }
}

}  // namespace graft
