// The CUDA builder's "layout" pass: regions of convolutions and the layout-free ops between them run
// channels-last (NHWC), entered and left through GraftChannelsLast copies, with strided stems over
// an image reading its space-to-depth rearrangement. The internal ops are defined in
// src/ops/fused_conv/fused_conv.h.
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "graph/pass_util.h"
#include "graph/passes.h"
#include "ops/custom_kernel_call.h"
#include "ops/internal_ops.h"
#include "ops/layout.h"
#include "ops/operator.h"
#include "ops/window_attrs.h"

namespace graft {
namespace {

// The op's layout trait (src/ops/operator.h), builtin or custom alike.
bool has_layout_trait(const Node* n, LayoutTrait t) {
  const OpEntry* op = find_op_entry(*n);
  return op && op->layout == t;
}
// Elementwise traits apply to a node with one output.
bool is_layout_free_unary(const Node* n) {
  return n->outputs.size() == 1 && has_layout_trait(n, LayoutTrait::kElementwiseUnary);
}
bool is_layout_free_binary(const Node* n) {
  return n->outputs.size() == 1 && has_layout_trait(n, LayoutTrait::kElementwiseBinary);
}

bool is_pool(const Node* n) {
  if (!is_onnx(*n) || n->inputs.empty()) return false;
  if (n->op_type == "MaxPool") return n->outputs.size() == 1 || !n->outputs[1];
  return n->op_type == "AveragePool" || n->op_type == "GlobalAveragePool" || n->op_type == "GlobalMaxPool";
}

bool is_scalar(const Value* v) {
  std::vector<int64_t> d;
  return v && static_dims_of(v, &d) && numel_of(d) == 1;
}

// The int8 record of an OIHW filter (Value::quantized) for its OHWI copy: the integers permuted the
// same way, the scales unchanged (per tensor, or per output channel, which stays axis 0); null
// for scales along another axis.
std::shared_ptr<const QuantizedOrigin> ohwi_origin(const QuantizedOrigin* o) {
  if (!o || (!o->per_tensor() && o->axis != 0) || o->q.rank() != 4) return nullptr;
  auto out = std::make_shared<QuantizedOrigin>(*o);
  out->q = permute_rank4(o->q, kNchwToNhwc);
  out->axis = 0;
  return out;
}

// A copy of `t` with its last axis zero-padded to `size` elements.
Tensor pad_last_axis(const Tensor& t, int64_t size) {
  std::vector<int64_t> dims = t.dims();
  const int64_t inner = dims.back();
  dims.back() = size;
  Tensor out = Tensor::empty(t.dtype(), dims);
  std::memset(out.data(), 0, out.nbytes());
  const size_t es = dtype_size(t.dtype());
  const int64_t rows = inner ? t.numel() / inner : 0;
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(static_cast<char*>(out.data()) + static_cast<size_t>(r * size) * es,
                static_cast<const char*>(t.data()) + static_cast<size_t>(r * inner) * es, static_cast<size_t>(inner) * es);
  return out;
}

// A strided stem over few channels (an image's 3) as a stride-1 convolution over the image's
// space-to-depth rearrangement: each s x s block of pixels becomes one pixel of s*s*C channels, the
// k x k filter a ceil(k/s) x ceil(k/s) one over them (taps past k zero). cuDNN ran ResNet-18's
// 7x7 stride-2 stem over the 8-channel padded image in 203 us of 653 at batch 32 on an H200 (ncu,
// 23e31f2), an untiled kernel for a reduction that is 63% padding; the rearranged problem is an
// ordinary 16-channel stride-1 convolution. GraftChannelsLast does the rearranging in the pass
// it already made over the image, so it costs no extra pass.
struct StemSpaceToDepth {
  int64_t block = 0;          // s
  std::vector<int64_t> pads;  // GraftChannelsLast's [top, left, bottom, right] around the image
  int64_t kh = 0, kw = 0;     // the stride-1 filter
  int64_t channels = 0;       // s*s*C rounded up to a multiple of 8
};

// The rearrangement for stem `n` (an NCHW GraftConv with a constant OIHW filter), or false where
// it does not apply: strides equal and >= 2, no dilation, one group, explicit pads, constant image
// extents, a filter at least s wide, and at most 64 rearranged channels. Counting the copy that
// makes the stem's input (the rearranged image is half the bytes of the one padded to 8 channels),
// every stem measured gained or broke even at batch 32 on an H200 (ncu, 91e3eb8 against 6d3cffe):
// ResNet-18's 7x7/2 223.6 -> 101 us, MobileNetV2's 3x3/2 with its ReLU6 pass 67.5 -> 50.5 us,
// MobileNetV3-Small's 3x3/2 (16 filters) 52.4 -> 50.9 us.
bool plan_stem_space_to_depth(const Node& n, StemSpaceToDepth* p) {
  const Value* x = n.input(0);
  const Value* w = n.input(1);
  if (!x || !x->desc.shape || x->desc.rank() != 4 || !w || !w->constant || w->constant->rank() != 4) return false;
  const Shape& xs = *x->desc.shape;
  if (!xs[2].is_const() || !xs[3].is_const()) return false;
  auto grp = n.attrs.get_int("group", 1);
  if (!grp || *grp != 1) return false;
  const auto& wd = w->constant->dims();  // [M, C, kh, kw]
  std::vector<int64_t> wk{wd[2], wd[3]};
  auto wa = parse_window_attrs(n.attrs, 2, &wk, false);
  if (!wa || (wa->auto_pad != AutoPad::kNotSet && wa->auto_pad != AutoPad::kValid)) return false;
  const int64_t s = wa->strides[0];
  if (s < 2 || wa->strides[1] != s || wa->dilations[0] != 1 || wa->dilations[1] != 1) return false;
  if (wd[2] < s || wd[3] < s || s * s * wd[1] > 64) return false;
  const int64_t kh2 = (wd[2] + s - 1) / s, kw2 = (wd[3] + s - 1) / s, rearranged = (s * s * wd[1] + 7) / 8 * 8;
  const int64_t top = wa->pads.size() == 4 ? wa->pads[0] : 0, left = wa->pads.size() == 4 ? wa->pads[1] : 0;
  p->block = s;
  p->kh = kh2;
  p->kw = kw2;
  p->channels = rearranged;
  // The rearranged image is oh + kh - 1 rows, so that the stride-1 filter gives the stem's oh rows.
  const Dim oh = window_output_dim(*wa, 0, xs[2]), ow = window_output_dim(*wa, 1, xs[3]);
  if (!oh.is_const() || !ow.is_const() || oh.value() < 1 || ow.value() < 1) return false;
  const int64_t bottom = s * (oh.value() + p->kh - 1) - xs[2].value() - top;
  const int64_t right = s * (ow.value() + p->kw - 1) - xs[3].value() - left;
  p->pads = {top, left, bottom, right};
  return true;
}

// The OIHW filter `w` of a stem as the OHWI filter of its space-to-depth convolution: tap (a, b)
// over rearranged channel (dy * s + dx) * C + c is the stem's tap (s*a + dy, s*b + dx) over c.
Tensor space_to_depth_filter(const Tensor& w, const StemSpaceToDepth& p) {
  const auto& d = w.dims();
  const int64_t m = d[0], c = d[1], kh = d[2], kw = d[3], s = p.block;
  Tensor out = Tensor::empty(w.dtype(), {m, p.kh, p.kw, p.channels});
  std::memset(out.data(), 0, out.nbytes());
  for (int64_t o = 0; o < m; ++o)
    for (int64_t a = 0; a < p.kh; ++a)
      for (int64_t b = 0; b < p.kw; ++b)
        for (int64_t q = 0; q < s * s * c; ++q) {
          const int64_t dy = q / c / s, dx = q / c % s, ch = q % c, r = s * a + dy, col = s * b + dx;
          if (r < kh && col < kw)
            out.set(((o * p.kh + a) * p.kw + b) * p.channels + q, w.get(((o * c + ch) * kh + r) * kw + col));
        }
  return out;
}

}  // namespace

Result<int> convert_conv_regions_to_nhwc(Graph& g, const std::function<bool(const Node&)>& wanted,
                                         const std::function<int64_t(const Node&)>& stem_channels,
                                         bool stem_space_to_depth) {
  std::set<const Value*> nhwc;            // values now stored channels-last
  std::map<const Value*, Value*> to_nhwc;  // NCHW value -> its transposed copy
  std::map<const Value*, Value*> to_nchw;  // NHWC value -> its NCHW copy
  std::map<const Value*, Value*> weights;  // OIHW weight -> OHWI copy
  NodeNamer unique_name(g);
  const int opset = default_domain_opset(g);
  auto transpose = [&](Value* from, const std::vector<int64_t>& perm, const std::string& suffix) {
    Value* to = g.new_value(from->name + suffix);
    Node* t = g.add_node(unique_name(from->name + suffix), "Transpose");
    t->opset = opset;
    t->attrs.set("perm", perm);
    t->inputs = {from};
    t->outputs = {to};
    to->producer = t;
    to->desc = TensorDesc(from->desc.dtype, Shape{});
    to->desc.shape.reset();
    return to;
  };
  auto nhwc_of = [&](Value* v) {
    if (nhwc.count(v)) return v;
    auto it = to_nhwc.find(v);
    if (it != to_nhwc.end()) return it->second;
    Value* t = transpose(v, kNchwToNhwc, "_nhwc");
    to_nhwc[v] = t;
    nhwc.insert(t);
    return t;
  };
  auto nchw_of = [&](Value* v) {
    auto it = to_nchw.find(v);
    if (it != to_nchw.end()) return it->second;
    Value* t = transpose(v, kNhwcToNchw, "_nchw");
    to_nchw[v] = t;
    return t;
  };

  // A constant operand of a binary op in a region, as NHWC: numpy broadcasting pads its shape on the
  // left to rank 4, and the same permutation as the other operand's keeps the broadcast meaning.
  std::map<const Value*, Value*> constants;
  auto nhwc_constant = [&](Value* v) {
    auto it = constants.find(v);
    if (it != constants.end()) return it->second;
    std::vector<int64_t> dims = v->constant->dims();
    dims.insert(dims.begin(), 4 - dims.size(), 1);
    Value* c = g.new_constant(v->name + "_nhwc", permute_rank4(v->constant->reshaped(dims), kNchwToNhwc));
    constants[v] = c;
    return c;
  };
  // Explicit layout changes in the model (ConvNeXt permutes to channels-last around its LayerNorm
  // and MLP, and back) cost nothing next to a region: a Transpose to NHWC of a region value *is* the
  // region value's storage, and a Transpose to NCHW of a plain [N,H,W,C] value has that value as its
  // NHWC storage. `same_as` maps such a Transpose's output to the value it becomes; `stored_as`
  // maps an NCHW value to its free NHWC storage.
  std::map<Value*, Value*> same_as;
  std::map<const Value*, Value*> stored_as;
  auto consumers = g.consumers();
  auto sole_reader = [&](const Value* v, const Node* n) {
    auto it = consumers.find(v);
    return !v->is_graph_output && it != consumers.end() && it->second.size() == 1 && it->second[0] == n;
  };
  // The NHWC storage of v that costs no copy, or nullptr.
  auto free_nhwc = [&](Value* v) -> Value* {
    if (!v) return nullptr;
    if (nhwc.count(v)) return v;
    auto it = stored_as.find(v);
    return it == stored_as.end() ? nullptr : it->second;
  };
  auto is_transpose = [](const Node* n, const std::vector<int64_t>& perm) {
    if (!n->domain.empty() || n->op_type != "Transpose" || n->inputs.size() != 1 || n->outputs.size() != 1 ||
        !n->inputs[0] || n->inputs[0]->desc.rank() != 4)
      return false;
    auto p = n->attrs.get_ints("perm", {});
    return p && *p == perm;
  };
  auto is_nchw = [](const Node& n) {
    auto layout = n.attrs.get_string("layout", "NCHW");
    return layout && *layout == "NCHW";
  };
  auto spatial_1x1 = [](const Value* v) {
    if (!v || v->desc.rank() != 4) return false;
    const Shape& s = *v->desc.shape;
    return s[2].is_const() && s[3].is_const() && s[2].value() == 1 && s[3].value() == 1;
  };

  std::vector<Node*> order;
  for (auto& n : g.nodes()) order.push_back(n.get());
  int moved = 0;
  std::set<const Node*> absorbed;  // Transposes whose output became another value
  for (Node* n : order) {
    bool in_region = false;
    if (is_transpose(n, kNchwToNhwc) && free_nhwc(n->inputs[0]) && !n->outputs[0]->is_graph_output) {
      same_as[n->outputs[0]] = free_nhwc(n->inputs[0]);
      absorbed.insert(n);
      continue;
    }
    if (is_transpose(n, kNhwcToNchw) && !nhwc.count(n->inputs[0]) && sole_reader(n->inputs[0], n) &&
        !n->outputs[0]->is_graph_output) {
      // Kept for readers that want NCHW; region readers take the input itself (then this is dead).
      stored_as[n->outputs[0]] = n->inputs[0];
      nhwc.insert(n->inputs[0]);
      continue;
    }
    // A 1x1 convolution over a 1x1 image (a squeeze-excitation gate's) is the same in both
    // layouts, so it stays in the region whatever its channel counts.
    const bool gate_conv = is_internal(n, "GraftConv") && free_nhwc(n->input(0)) && spatial_1x1(n->input(0)) &&
                           n->input(1) && n->input(1)->constant && n->input(1)->constant->rank() == 4 &&
                           n->input(1)->constant->dims()[2] == 1 && n->input(1)->constant->dims()[3] == 1;
    if (is_internal(n, "GraftConv") && n->input(1) && n->input(1)->constant &&
        n->input(1)->constant->rank() == 4 && n->input(0)->desc.rank() == 4 && (gate_conv || wanted(*n))) {
      auto layout = n->attrs.get_string("layout", "NCHW");
      if (layout && *layout == "NCHW") {
        n->inputs[0] = free_nhwc(n->inputs[0]) ? free_nhwc(n->inputs[0]) : nhwc_of(n->inputs[0]);
        if (n->inputs.size() > 3 && n->inputs[3])
          n->inputs[3] = free_nhwc(n->inputs[3]) ? free_nhwc(n->inputs[3]) : nhwc_of(n->inputs[3]);
        Value* w = n->inputs[1];
        auto wit = weights.find(w);
        if (wit == weights.end()) {
          wit = weights.emplace(w, g.new_constant(w->name + "_ohwi", permute_rank4(*w->constant, kNchwToNhwc))).first;
          wit->second->quantized = ohwi_origin(w->quantized.get());
        }
        n->inputs[1] = wit->second;
        n->attrs.set("layout", std::string("NHWC"));
        in_region = true;
      }
    } else if (stem_channels && is_internal(n, "GraftConv") && !free_nhwc(n->input(0)) &&
               n->input(0)->desc.rank() == 4 && n->input(1) && n->input(1)->constant &&
               n->input(1)->constant->rank() == 4 && is_nchw(*n) &&
               stem_channels(*n) > n->input(1)->constant->dims()[1]) {
      // A stem: its NCHW input is laid out channels-last and padded once, by GraftChannelsLast,
      // which reads the model's float32 input itself when a Cast to float16 fed only this conv.
      const int64_t channels = stem_channels(*n);
      Value* x = n->inputs[0];
      Value* source = x;
      Node* cast = x->producer;
      if (is_onnx_op(cast, "Cast") && sole_reader(x, n) && cast->input(0) &&
          cast->input(0)->desc.dtype == DataType::kFloat32 && x->desc.dtype == DataType::kFloat16) {
        source = cast->inputs[0];
        absorbed.insert(cast);
      }
      Value* xp = g.new_value(x->name + "_channels_last");
      Node* pad = g.add_node(unique_name(x->name + "_channels_last"), "GraftChannelsLast", kInternalDomain);
      pad->opset = opset;
      pad->attrs.set("to", static_cast<int64_t>(x->desc.dtype));
      pad->inputs = {source};
      pad->outputs = {xp};
      xp->producer = pad;
      xp->desc = TensorDesc(x->desc.dtype, Shape{});
      xp->desc.shape.reset();
      nhwc.insert(xp);
      StemSpaceToDepth s2d;
      const bool rearranged = stem_space_to_depth && plan_stem_space_to_depth(*n, &s2d);
      n->inputs[0] = xp;
      if (rearranged) {
        pad->attrs.set("channels", s2d.channels);
        pad->attrs.set("block", s2d.block);
        pad->attrs.set("pads", s2d.pads);
        n->inputs[1] = g.new_constant(n->inputs[1]->name + "_space_to_depth",
                                      space_to_depth_filter(*n->inputs[1]->constant, s2d));
        n->attrs.set("kernel_shape", std::vector<int64_t>{s2d.kh, s2d.kw});
        n->attrs.set("strides", std::vector<int64_t>{1, 1});
        n->attrs.set("dilations", std::vector<int64_t>{1, 1});
        n->attrs.set("pads", std::vector<int64_t>{0, 0, 0, 0});
        n->attrs.set("auto_pad", std::string("NOTSET"));
      } else {
        pad->attrs.set("channels", channels);
        n->inputs[1] = g.new_constant(n->inputs[1]->name + "_ohwi_padded",
                                      pad_last_axis(permute_rank4(*n->inputs[1]->constant, kNchwToNhwc), channels));
      }
      n->attrs.set("layout", std::string("NHWC"));
      in_region = true;
    } else if (has_layout_trait(n, LayoutTrait::kChannelsLastIo) && !n->outputs.empty() && n->outputs[0] &&
               free_nhwc(n->input(0)) && n->input(0)->desc.rank() == 4) {
      // A custom op whose kernels read input 0 and write output 0 channels-last
      // (OpDef::channels_last_io): it stays in the region through those two; its other inputs and
      // outputs keep their layout (custom_kernel_call.h).
      n->inputs[0] = free_nhwc(n->inputs[0]);
      n->attrs.set(kChannelsLastIoAttr, int64_t{1});
      for (size_t i = 1; i < n->inputs.size(); ++i)
        if (n->inputs[i] && nhwc.count(n->inputs[i])) n->inputs[i] = nchw_of(n->inputs[i]);
      nhwc.insert(n->outputs[0]);
      ++moved;
      continue;
    } else if (is_pool(n) && free_nhwc(n->input(0)) && n->input(0)->desc.rank() == 4) {
      n->inputs[0] = free_nhwc(n->inputs[0]);
      n->attrs.set("pool", n->op_type);
      n->attrs.set("layout", std::string("NHWC"));
      n->op_type = "GraftPool";
      n->domain = kInternalDomain;
      n->outputs.resize(1);
      in_region = true;
    } else if (is_onnx_op(n, "Concat") && n->outputs.size() == 1 && !n->inputs.empty()) {
      // Inception and Fire modules and DenseNet's blocks concatenate branches along the channels:
      // in NHWC that is the last axis, so a region flows through instead of leaving (one
      // transpose per branch) and coming back after. Every input rank 4, at least one already NHWC.
      auto axis = n->attrs.get_int("axis", 1);
      bool any = false, ok = axis.is_ok() && *axis >= -4 && *axis <= 3;
      for (Value* v : n->inputs) {
        if (!v || v->desc.rank() != 4 || (v->constant && !free_nhwc(v))) ok = false;
        else if (free_nhwc(v)) any = true;
      }
      in_region = ok && any;
      if (in_region) {
        static const int64_t kNhwcAxisOf[4] = {0, 3, 1, 2};  // NCHW axis -> its position in NHWC
        n->attrs.set("axis", kNhwcAxisOf[*axis < 0 ? *axis + 4 : *axis]);
        for (Value*& v : n->inputs) v = free_nhwc(v) ? free_nhwc(v) : nhwc_of(v);
      }
    } else if (is_layout_free_unary(n) && free_nhwc(n->input(0))) {
      // Extra inputs (Clip's bounds) are scalars; the rest of the op is per element.
      in_region = true;
      for (size_t i = 1; i < n->inputs.size(); ++i) in_region &= !n->inputs[i] || is_scalar(n->inputs[i]);
      if (in_region) n->inputs[0] = free_nhwc(n->inputs[0]);
    } else if (is_layout_free_binary(n)) {
      // Broadcasting commutes with permuting both operands the same way, so rank-4 NHWC operands,
      // scalars and constants of rank <= 4 (a per-channel [C,1,1] scale, permuted once) may meet;
      // any other operand ends the region.
      bool any = false, ok = true;
      for (Value* v : n->inputs) {
        if (free_nhwc(v) && v->desc.rank() == 4) any = true;
        else if (!is_scalar(v) && !(v && v->constant && v->constant->rank() <= 4)) ok = false;
      }
      in_region = any && ok;
      if (in_region)
        for (Value*& v : n->inputs) {
          if (free_nhwc(v) && v->desc.rank() == 4) v = free_nhwc(v);
          else if (!is_scalar(v)) v = nhwc_constant(v);
        }
    }
    if (in_region) {
      for (Value* o : n->outputs)
        if (o) nhwc.insert(o);
      ++moved;
      continue;
    }
    for (Value*& v : n->inputs)
      if (v && nhwc.count(v)) v = nchw_of(v);
  }
  // Readers of an absorbed Transpose read the value it became (chains of them included); then the
  // absorbed Transposes, and the kept NCHW ones no reader is left for, go.
  auto resolved = [&](Value* v) {
    for (auto it = same_as.find(v); it != same_as.end(); it = same_as.find(v)) v = it->second;
    return v;
  };
  for (auto& n : g.nodes())
    for (Value*& v : n->inputs) v = resolved(v);
  consumers = g.consumers();
  g.remove_nodes_if([&](const Node* n) {
    if (absorbed.count(n)) return true;
    const Value* o = n->outputs.size() == 1 ? n->outputs[0] : nullptr;
    return o && stored_as.count(o) && !o->is_graph_output && !consumers.count(o);
  });
  // Graph outputs keep their names and NCHW layout: the producer writes a new NHWC value that a
  // final Transpose turns back into the output.
  for (Value* out : g.outputs()) {
    if (!nhwc.count(out)) continue;
    Value* inner = g.new_value(out->name + "_nhwc");
    Node* p = out->producer;
    for (Value*& o : p->outputs)
      if (o == out) o = inner;
    inner->producer = p;
    inner->desc = out->desc;
    for (auto& n : g.nodes())
      for (Value*& v : n->inputs)
        if (v == out) v = inner;
    Node* t = g.add_node(unique_name(out->name + "_to_nchw"), "Transpose");
    t->opset = opset;
    t->attrs.set("perm", kNhwcToNchw);
    t->inputs = {inner};
    t->outputs = {out};
    out->producer = t;
  }
  GRAFT_RETURN_IF_ERROR(g.topological_sort());
  g.prune_values();
  return moved;
}

}  // namespace graft
