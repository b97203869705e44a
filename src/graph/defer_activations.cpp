// The CUDA builder's "defer activations" pass (after "layout"): a convolution's activation moves
// into its depthwise reader, which applies it to the elements it reads.
#include "graph/pass_util.h"
#include "graph/passes.h"
#include "ops/internal_ops.h"
#include "ops/layout.h"

namespace graft {

// A convolution's activation that its only reader, an NHWC depthwise convolution, can apply to the
// elements it reads instead, leaving the producer an activation cuDNN's fused call applies (Relu
// for Clip from 0, none for HardSwish and Silu). MobileNetV2's ReLU6 expansions ran on cuDNN with a
// separate epilogue pass each (21 passes, 158 us of 833 at batch 32 on an H200, ncu at 56b03a2);
// the depthwise kernels apply the activation as they stage their inputs. Its reader then runs on
// graft's depthwise kernels only (cuDNN has no input activation); timing still picks among them.
Result<int> defer_activations_to_depthwise(Graph& g) {
  auto consumers = g.consumers();
  int moved = 0;
  for (auto& up : g.nodes()) {
    Node* p = up.get();
    if (!is_internal(p, "GraftConv") || p->outputs.size() != 1) continue;
    bool nhwc = false;
    ConvEpilogueActivation act;
    if (!read_layout(p->attrs, &nhwc).is_ok() || !nhwc || !read_activation(p->attrs, &act).is_ok()) continue;
    const bool clip_from_zero = act.kind == ConvActivation::kClip && act.lo == 0.f && act.hi > 0.f;
    if (!clip_from_zero && act.kind != ConvActivation::kHardSwish && act.kind != ConvActivation::kSilu) continue;
    Node* c = single_use_reader(consumers, p->outputs[0]);
    if (!c || !is_internal(c, "GraftConv") || c->input(0) != p->outputs[0] || c->attrs.has("input_activation")) continue;
    // Depthwise from the filter alone ([M, kh, kw, C / group] with one input channel per group and
    // M groups, so C = M): the layout pass leaves its values' shapes to be inferred again later.
    bool c_nhwc = false;
    const Value* w = c->input(1);
    if (!read_layout(c->attrs, &c_nhwc).is_ok() || !c_nhwc || !w || !w->constant || w->constant->rank() != 4) continue;
    auto group = c->attrs.get_int("group", 1);
    const auto& wd = w->constant->dims();
    if (!group || *group != wd[0] || wd[3] != 1 || wd[0] < 2) continue;
    c->attrs.set("input_activation", *p->attrs.get_string("activation", ""));
    if (act.kind == ConvActivation::kClip) {
      c->attrs.set("input_clip_min", act.lo);
      c->attrs.set("input_clip_max", act.hi);
    }
    p->attrs.set("activation", std::string(clip_from_zero ? "Relu" : ""));
    p->attrs.erase("clip_min");
    p->attrs.erase("clip_max");
    ++moved;
  }
  return moved;
}

}  // namespace graft
