// lower_patchify_convs: a "patchify" convolution (kernel == stride, no padding or dilation, one
// group: ViT's patch embedding, 16x16 stride 16 over the image) is a matrix product over
// non-overlapping patches. cuDNN runs it as a general convolution and takes ~0.1 ms for vit_b_16's
// one image (0.3 ms for 32), while the same work as
//   Reshape [N, C, H/kh, kh, W/kw, kw] -> Transpose -> Reshape [N*H/kh*W/kw, C*kh*kw]
//   -> Gemm with the weight read as [M, C*kh*kw] (transB) + bias
//   -> Reshape [N, H/kh, W/kw, M] -> Transpose to NCHW
// is one gather and one tensor-core GEMM (the output Transpose usually merges with the model's
// own flatten/permute in compose_view_chains). C, H and W must be static; the batch may be dynamic
// (the reshape targets say -1 for it), so an engine with a batch profile lowers it too.
#include <algorithm>
#include <string>
#include <vector>

#include "graph/passes.h"

namespace graft {

namespace {

bool all_equal(const std::vector<int64_t>& v, int64_t x) {
  for (int64_t e : v)
    if (e != x) return false;
  return true;
}

// The kernel size when `n` is a patchify Conv over a 4-D input whose C, H and W are static, else
// false. x_dims[0] is -1 when the batch is dynamic.
bool patchify(const Node& n, std::vector<int64_t>* x_dims, int64_t* kh, int64_t* kw) {
  if (n.op_type != "Conv" || !n.domain.empty() || n.outputs.size() != 1 || !n.outputs[0]) return false;
  const Value* x = n.input(0);
  const Value* w = n.input(1);
  const Value* b = n.input(2);
  if (!x || !w || !w->constant || w->constant->rank() != 4 || x->desc.rank() != 4) return false;
  if (b && (!b->constant || b->constant->numel() != w->constant->dims()[0])) return false;
  if (!x->desc.shape) return false;
  *x_dims = shape_values(*x->desc.shape);
  for (size_t i = 1; i < 4; ++i)
    if ((*x_dims)[i] < 0) return false;
  const auto& wd = w->constant->dims();
  *kh = wd[2];
  *kw = wd[3];
  if (*kh * *kw < 2 || wd[1] != (*x_dims)[1]) return false;
  auto group = n.attrs.get_int("group", 1);
  auto strides = n.attrs.get_ints("strides", {1, 1});
  auto dil = n.attrs.get_ints("dilations", {1, 1});
  auto pads = n.attrs.get_ints("pads", {0, 0, 0, 0});
  auto kshape = n.attrs.get_ints("kernel_shape", {*kh, *kw});
  auto auto_pad = n.attrs.get_string("auto_pad", "NOTSET");
  if (!group || *group != 1 || !strides || !dil || !pads || !kshape || !auto_pad) return false;
  if (*auto_pad != "NOTSET" && *auto_pad != "VALID") return false;
  if (*strides != std::vector<int64_t>{*kh, *kw} || *kshape != std::vector<int64_t>{*kh, *kw}) return false;
  if (!all_equal(*dil, 1) || !all_equal(*pads, 0)) return false;
  return (*x_dims)[2] % *kh == 0 && (*x_dims)[3] % *kw == 0;
}

}  // namespace

Result<int> lower_patchify_convs(Graph& g) {
  std::vector<Node*> convs;
  for (const auto& n : g.nodes()) convs.push_back(n.get());
  NodeNamer unique_name(g);
  const int opset = default_domain_opset(g);
  std::vector<const Node*> lowered;
  for (Node* n : convs) {
    std::vector<int64_t> xd;
    int64_t kh = 0, kw = 0;
    if (!patchify(*n, &xd, &kh, &kw)) continue;
    Value* x = n->inputs[0];
    Value* out = n->outputs[0];
    const Tensor& w = *n->input(1)->constant;
    const DataType dt = x->desc.dtype;
    const int64_t C = xd[1], Hp = xd[2] / kh, Wp = xd[3] / kw, M = w.dims()[0];
    const Dim N = (*x->desc.shape)[0];
    const int64_t n_target = N.is_const() ? N.value() : -1;  // a dynamic batch: Reshape infers it
    // Descriptions carry the batch as x has it (a number or a symbol); shape inference redoes them.
    auto value = [&](const std::string& suffix, DataType t, const Dim& lead, const std::vector<int64_t>& rest) {
      Value* v = g.new_value(out->name + suffix);
      Shape shape{lead};
      for (int64_t d : rest) shape.push_back(Dim(d));
      v->desc = TensorDesc(t, shape);
      return v;
    };
    auto constant = [&](const std::string& suffix, Tensor t) { return g.new_constant(out->name + suffix, std::move(t)); };
    auto add = [&](const char* op, const std::string& suffix, std::vector<Value*> ins, Value* result) {
      Node* k = g.add_node(unique_name(n->name + suffix), op);
      k->opset = opset;
      k->inputs = std::move(ins);
      k->outputs = {result};
      result->producer = k;
      k->precision = n->precision;
      return k;
    };
    Value* x6 = value("_patches6d", dt, N, {C, Hp, kh, Wp, kw});
    add("Reshape", "_patch_split",
        {x, constant("_patch_split_shape", Tensor::vector_int64({n_target, C, Hp, kh, Wp, kw}))}, x6);
    Value* xt = value("_patches_t", dt, N, {Hp, Wp, C, kh, kw});
    add("Transpose", "_patch_gather", {x6}, xt)->attrs.set("perm", std::vector<int64_t>{0, 2, 4, 1, 3, 5});
    Value* a = value("_patch_rows", dt, N * Dim(Hp * Wp), {C * kh * kw});
    add("Reshape", "_patch_rows",
        {xt, constant("_patch_rows_shape", Tensor::vector_int64({N.is_const() ? n_target * Hp * Wp : -1, C * kh * kw}))},
        a);
    Value* wm = constant("_patch_weight", w.reshaped({M, C * kh * kw}));
    std::vector<Value*> gemm_in{a, wm};
    if (n->input(2)) gemm_in.push_back(n->inputs[2]);
    Value* y2 = value("_patch_gemm", dt, N * Dim(Hp * Wp), {M});
    add("Gemm", "_patch_gemm", gemm_in, y2)->attrs.set("transB", int64_t{1});
    Value* y4 = value("_patch_nhwc", dt, N, {Hp, Wp, M});
    add("Reshape", "_patch_unrows", {y2, constant("_patch_unrows_shape", Tensor::vector_int64({n_target, Hp, Wp, M}))}, y4);
    add("Transpose", "_patch_to_nchw", {y4}, out)->attrs.set("perm", std::vector<int64_t>{0, 3, 1, 2});
    lowered.push_back(n);
  }
  if (lowered.empty()) return 0;
  g.remove_nodes_if([&](const Node* k) { return std::find(lowered.begin(), lowered.end(), k) != lowered.end(); });
  g.prune_values();
  GRAFT_RETURN_IF_ERROR(g.topological_sort());
  return static_cast<int>(lowered.size());
}

}  // namespace graft
