#include "build/device_passes.h"

#include <cstdlib>
#include <set>
#include <sstream>
#include <string>

#include "graph/passes.h"
#include "graph/precision.h"

namespace graft {

namespace {

bool fusion(const BuilderConfig& c) { return c.fusion; }
bool fp16(const BuilderConfig& c) { return c.fp16; }
bool layout(const BuilderConfig& c) { return c.layout != "nchw"; }
bool int8_convs_on(const BuilderConfig& c) { return c.fusion && c.fp16 && c.int8; }

// A pass that reports "<n> <what>" when it changed something (or always, with `always_report`).
template <Result<int> (*Pass)(Graph&)>
Result<std::string> counted(Graph& g, const char* what, bool always_report) {
  GRAFT_ASSIGN_OR_RETURN(int n, Pass(g));
  return n || always_report ? std::to_string(n) + " " + what : std::string();
}

Result<std::string> fixed_loops(Graph& g, const DevicePassContext&) {
  GRAFT_ASSIGN_OR_RETURN(int n, unroll_fixed_loops(g));
  if (n) GRAFT_RETURN_IF_ERROR(infer_shapes(g));  // the iterations' values, before the fusion passes match them
  return n ? std::to_string(n) + " Loops with a fixed trip count unrolled" : std::string();
}
Result<std::string> unit_transposes(Graph& g, const DevicePassContext&) {
  return counted<unit_axis_transposes_to_reshapes>(g, "that only move unit axes run as reshapes", false);
}
Result<std::string> reshape_pairs(Graph& g, const DevicePassContext&) {
  return counted<merge_reshape_chains>(g, "reshape pairs merged", false);
}
Result<std::string> patchify(Graph& g, const DevicePassContext&) {
  return counted<lower_patchify_convs>(g, "patch-embedding Conv layers as a GEMM", false);
}
Result<std::string> gemm_transposes(Graph& g, const DevicePassContext&) {
  return counted<move_transposes_behind_gemms>(g, "Transposes moved behind a GEMM into its readers' view chains", false);
}
Result<std::string> gemm_row_transposes(Graph& g, const DevicePassContext&) {
  return counted<move_transposes_ahead_of_gemms>(g, "Transposes of a GEMM's output rows moved ahead of it", false);
}
Result<std::string> batchnorm_convs(Graph& g, const DevicePassContext&) {
  return counted<batchnorm_activations_as_convs>(g, "BatchNormalization layers before an activation as 1x1 depthwise Conv", false);
}
Result<std::string> einsum_matmuls(Graph& g, const DevicePassContext&) {
  GRAFT_ASSIGN_OR_RETURN(int n, lower_einsum_matmuls(g));
  if (n) GRAFT_RETURN_IF_ERROR(infer_shapes(g));  // the new MatMuls and Transposes, before the fusions match them
  return n ? std::to_string(n) + " Einsum layers as MatMul" : std::string();
}
Result<std::string> qdq_pairs(Graph& g, const DevicePassContext&) {
  return counted<fold_quantize_dequantize_pairs>(g, "QuantizeLinear -> DequantizeLinear pairs as one layer", false);
}
Result<std::string> l2_normalize(Graph& g, const DevicePassContext&) {
  return counted<fuse_l2_normalize>(g, "L2 normalizations (ReduceL2, Clip, Expand, Div) as one layer", false);
}
Result<std::string> conv_epilogues(Graph& g, const DevicePassContext&) {
  return counted<fuse_conv_epilogues>(g, "Conv layers with fused bias/residual/activation", true);
}
Result<std::string> gemm_epilogues(Graph& g, const DevicePassContext&) {
  GRAFT_ASSIGN_OR_RETURN(std::string detail, (counted<fuse_gemm_epilogues>(g, "GEMM layers with fused epilogues", true)));
  GRAFT_RETURN_IF_ERROR(infer_shapes(g));
  return detail;
}

// Float16 wherever the device runs the node in float16 and the op's range allows it.
Result<std::string> float16(Graph& g, const DevicePassContext& ctx) {
  PrecisionPolicy policy;
  policy.supports_fp16 = ctx.device.runs;
  policy.keep_inputs = ctx.device.host_inputs;
  policy.obey_float16 = ctx.config.precision_constraints != "prefer";
  GRAFT_ASSIGN_OR_RETURN(int n, convert_to_fp16(g, policy));
  return std::to_string(n) + " layers in float16";
}

// NHWC regions. "auto": float16 convolutions whose channel counts suit the tensor cores (multiples
// of 8); "nhwc": every convolution.
Result<std::string> nhwc_regions(Graph& g, const DevicePassContext& ctx) {
  const bool all = ctx.config.layout == "nhwc";
  // The constant rank-4 filter of a float16 convolution, or null.
  auto fp16_filter = [](const Node& n) -> const Tensor* {
    const Value* x = n.input(0);
    const Value* w = n.input(1);
    if (!x || x->desc.dtype != DataType::kFloat16 || !w || !w->constant || w->constant->rank() != 4) return nullptr;
    return &*w->constant;
  };
  auto wanted = [all, fp16_filter](const Node& n) {
    if (all) return true;
    const Tensor* w = fp16_filter(n);
    if (!w) return false;
    const auto& wd = w->dims();
    auto grp = n.attrs.get_int("group", 1);
    const int64_t group = grp ? *grp : 1;
    const int64_t cin = wd[1] * group, cout = wd[0];
    return cin % 8 == 0 && cout % 8 == 0;
  };
  // A float16 stem over fewer than 8 channels (an image's 3) joins the region with its input and
  // filter zero-padded to 8 channels: cuDNN's NHWC tensor-core kernels then take it, and one
  // GraftChannelsLast pass over the image replaces the input Cast, the NCHW stem and the
  // transpose of its (much wider) output. At batch 32 those cost ResNet-50 0.34 ms of 2.9.
  auto stem_channels = [all, fp16_filter](const Node& n) -> int64_t {
    if (all) return 0;
    const Tensor* w = fp16_filter(n);
    if (!w) return 0;
    auto grp = n.attrs.get_int("group", 1);
    if (!grp || *grp != 1) return 0;
    const auto& wd = w->dims();
    return wd[1] < 8 && wd[0] % 8 == 0 ? 8 : 0;
  };
  // Strided stems read the image rearranged space to depth (nhwc_regions.cpp); GRAFT_STEM_SPACE_TO_DEPTH=0
  // keeps them strided, to compare the two.
  const char* s2d = std::getenv("GRAFT_STEM_SPACE_TO_DEPTH");
  const bool space_to_depth = !s2d || std::string(s2d) != "0";
  GRAFT_ASSIGN_OR_RETURN(int moved, convert_conv_regions_to_nhwc(g, wanted, stem_channels, space_to_depth));
  return std::to_string(moved) + " layers in NHWC";
}

Result<std::string> int8_convs(Graph& g, const DevicePassContext&) {
  return counted<quantized_convs_to_int8>(g, "quantized convolutions on their int8 integers", false);
}

Result<std::string> deferred_activations(Graph& g, const DevicePassContext&) {
  return counted<defer_activations_to_depthwise>(g, "activations deferred to depthwise readers", false);
}

Result<std::string> gemm_folds(Graph& g, const DevicePassContext&) {
  GRAFT_RETURN_IF_ERROR(infer_shapes(g));  // the layout pass's new values, before matching shapes
  return counted<fold_gemm_scales_and_residuals>(g, "GEMMs absorbed a channel scale or residual", false);
}
Result<std::string> elementwise_chains(Graph& g, const DevicePassContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(int n, fuse_elementwise_chains(g, ctx.device.runs));
  GRAFT_RETURN_IF_ERROR(infer_shapes(g));  // the chains' static shapes, for the view passes
  return std::to_string(n) + " chains fused";
}
Result<std::string> concat_slices(Graph& g, const DevicePassContext&) {
  return counted<fuse_concat_slices>(g, "Concat layers reading their Slices in place", false);
}
Result<std::string> view_chains(Graph& g, const DevicePassContext&) {
  return counted<compose_view_chains>(g, "data-movement chains as one strided copy", true);
}
Result<std::string> attention_views(Graph& g, const DevicePassContext&) {
  return counted<fold_views_into_attention>(g, "attention layers read and write in place", false);
}

}  // namespace

const std::vector<DevicePass>& cuda_device_passes() {
  static const std::vector<DevicePass> passes = {
      {"unroll loops", fusion, fixed_loops},
      {"transposes", fusion, unit_transposes},
      {"reshapes", fusion, reshape_pairs},
      {"patchify", fusion, patchify},
      {"batchnorm as conv", fusion, batchnorm_convs},
      {"einsum", fusion, einsum_matmuls},
      {"fold qdq", fusion, qdq_pairs},
      {"l2 normalize", fusion, l2_normalize},
      {"fuse conv", fusion, conv_epilogues},
      {"gemm row transposes", fusion, gemm_row_transposes},
      {"fuse gemm", fusion, gemm_epilogues},
      {"gemm transposes", fusion, gemm_transposes},
      {"fp16", fp16, float16},
      {"layout", layout, nhwc_regions},
      {"int8 convs", int8_convs_on, int8_convs},
      {"defer activations", fusion, deferred_activations},
      {"fold gemm", fusion, gemm_folds},
      {"concat slices", fusion, concat_slices},
      {"fuse elementwise", fusion, elementwise_chains},
      {"compose views", fusion, view_chains},
      {"attention views", fusion, attention_views},
  };
  return passes;
}

namespace {

// The passes GRAFT_DISABLE_PASSES names (see device_passes.h).
Result<std::set<std::string>> disabled_passes(const std::vector<DevicePass>& passes) {
  std::set<std::string> out;
  const char* env = std::getenv("GRAFT_DISABLE_PASSES");
  if (!env) return out;
  std::string names;
  for (const DevicePass& p : passes) names += std::string(names.empty() ? "" : ", ") + p.name;
  std::stringstream list(env);
  for (std::string name; std::getline(list, name, ',');) {
    if (name.empty()) continue;
    bool known = false;
    for (const DevicePass& p : passes) known = known || name == p.name;
    if (!known)
      return error(StatusCode::kInvalidArgument, "GRAFT_DISABLE_PASSES names '", name, "', which is not one of this target's passes (",
                   names, ")");
    out.insert(name);
  }
  return out;
}

}  // namespace

Status run_device_pass_list(Graph& g, const std::vector<DevicePass>& passes, const BuilderConfig& config,
                            const DeviceQueries& device) {
  if (config.layout != "auto" && config.layout != "nchw" && config.layout != "nhwc")
    return error(StatusCode::kInvalidArgument, "layout must be auto, nchw or nhwc, got '", config.layout, "'");
  GRAFT_ASSIGN_OR_RETURN(const std::set<std::string> disabled, disabled_passes(passes));
  const DevicePassContext ctx{config, device};
  for (const DevicePass& p : passes) {
    if (!p.enabled(config)) continue;
    if (disabled.count(p.name)) {
      if (config.progress) config.progress(p.name, "skipped (GRAFT_DISABLE_PASSES)");
      continue;
    }
    GRAFT_ASSIGN_OR_RETURN(std::string detail, p.run(g, ctx));
    if (!detail.empty() && config.progress) config.progress(p.name, detail);
  }
  return infer_shapes(g);
}

namespace {

// String tensors hold std::string objects on the host; a device engine has no place for them and
// no kernel that reads them, so such a model is refused before any device work, naming the value.
// ImageDecoder, a host decoder (libjpeg, libpng) over a byte stream, is refused the same way,
// naming the node, rather than run on the CPU inside a CUDA engine.
Status refuse_host_only(const Graph& g) {
  for (const auto& n : g.nodes()) {
    if (is_onnx(*n) && n->op_type == "ImageDecoder")  // a host decoder (libjpeg, libpng), as strings are host data
      return error(StatusCode::kUnsupported, "ImageDecoder runs on the CPU engine only; build this model for the CPU")
          .with_node(n->name, n->op_type);
    for (const Value* v : n->outputs)
      if (v && v->desc.dtype == DataType::kString)
        return error(StatusCode::kUnsupported, "output '", v->name, "' holds strings (", v->desc.to_string(),
                     "): string tensors run on the CPU engine only; build this model for the CPU")
            .with_node(n->name, n->op_type);
    for (const auto& [attr, sub] : n->subgraphs)
      if (Status st = refuse_host_only(*sub); !st) return st.with_attribute(attr);
  }
  for (const auto& [name, v] : g.values())
    if (v->desc.dtype == DataType::kString)
      return error(StatusCode::kUnsupported, v->constant ? "constant '" : "input '", name, "' holds strings (",
                   v->desc.to_string(), "): string tensors run on the CPU engine only; build this model for the CPU");
  return Status::ok();
}

}  // namespace

Status run_device_passes(EngineState& state, const BuilderConfig& config) {
  if (state.device == DeviceType::kCPU) return Status::ok();
  GRAFT_RETURN_IF_ERROR(refuse_host_only(*state.graph));
  GRAFT_ASSIGN_OR_RETURN(DeviceQueries device, query_device(state));
  return run_device_pass_list(*state.graph, cuda_device_passes(), config, device);
}

}  // namespace graft
