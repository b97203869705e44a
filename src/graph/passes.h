// Graph passes run by the builder, in this order: identity removal, shape inference (with the
// declared-output check), constant folding, Conv+BatchNormalization folding, dead-node
// elimination, and shape inference again.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "graph/graph.h"
#include "ops/operator.h"

namespace graft {

// Infers one node's output descs (and symbolic int contents) from its inputs' infos. Handles both
// builtin ops (OpEntry::infer) and custom ops (OpDef::infer_shapes / infer_dtypes). Errors carry
// the node's name and op type.
Status infer_node(const Node& node, const std::vector<InferContext::InputInfo>& inputs,
                  std::vector<TensorDesc>* out_descs,
                  std::vector<std::optional<std::vector<Dim>>>* out_sym_values);

// Runs infer_node over the graph in topological order, writing each output Value's desc and
// sym_value, and checks that declared graph-output dtypes and (constant) dims agree.
Status infer_shapes(Graph& graph);

// Concrete dims of a node's outputs over concrete inputs, without running it (size limits before
// a kernel allocates). An output whose size its kernel decides (output_shape_from_kernel) may stay
// symbolic. Errors carry the node's name and op type.
Result<std::vector<TensorDesc>> infer_node_concrete(const Node& node, const std::vector<const Tensor*>& inputs);

// Runs one node over constant inputs and returns its outputs (an undefined Tensor for an omitted
// one), as the runtime's CPU executor does (run_node_cpu, runtime/cpu_executor.h). Folding takes it
// as a parameter because the graph layer includes no runtime: the builder passes it in.
using NodeEvaluator =
    std::function<Result<std::vector<Tensor>>(const Node& node, const std::vector<const Tensor*>& inputs)>;

// Nodes whose inputs are all constant are run through `evaluate` at build time; values whose
// sym_value is fully constant become constants. Outputs above kMaxFoldElements elements are left
// alone. A node `evaluate` answers kUnsupported for stays in the graph.
inline constexpr int64_t kMaxFoldElements = int64_t{16} << 20;
Result<int> fold_constants(Graph& graph, const NodeEvaluator& evaluate);

// Holds the main graph's nodes to the precisions `pins` names (BuilderConfig::layer_precisions:
// node name or '*' pattern -> kFloat32 or kFloat16), setting Node::precision: an exact name first,
// else the longest matching pattern. `float16_allowed` is false for builds that have no float16
// (not FP16, or for the CPU). Errors name the key: one matching no node (with a few of the model's
// node names), a dtype other than float32/float16, float16 where it is not allowed. Returns the
// number of nodes held.
Result<int> apply_layer_precisions(Graph& graph, const std::map<std::string, DataType>& pins, bool float16_allowed);

// Conv followed by BatchNormalization (constant weights and statistics) becomes one Conv.
Result<int> fold_batchnorm(Graph& graph);

// QuantizeLinear -> DequantizeLinear over the same scalar constant scale and zero point becomes one
// GraftQuantizeDequantize (equal to the pair to the bit; the QuantizeLinear stays while something
// else reads its integers). A CUDA builder pass: an NHWC region flows through the fused op.
Result<int> fold_quantize_dequantize_pairs(Graph& graph);

// F.normalize over the last axis, Div(x, [Expand(] Clip(ReduceL2(x, last axis, keepdims), eps) [)]),
// becomes one GraftL2Normalize(x; eps) (src/graph/fuse_l2_normalize.cpp). A CUDA builder pass.
Result<int> fuse_l2_normalize(Graph& graph);

// A BatchNormalization (inference form, constant statistics) whose only reader is an activation the
// convolution epilogue applies (Relu, Clip, HardSwish, Sigmoid, HardSigmoid), and that no Conv
// precedes (fold_batchnorm took those), becomes a 1x1 depthwise Conv with the statistics in its
// weight and bias, so fuse_conv_epilogues makes the pair one GraftConv: DenseNet's 58 pre-activation
// BatchNormalization -> Relu pairs as 58 kernels instead of 116. A CUDA builder pass.
Result<int> batchnorm_activations_as_convs(Graph& graph);

// A float16 NHWC GraftConv over a folded int8 Q/DQ pair (zero point 0) with a filter folded from
// int8 DequantizeLinear (Value::quantized) becomes GraftConvInt8 over the integers, its input
// quantized once per pair by a QuantizeLinear (src/graph/int8_convs.cpp). A CUDA builder pass, after
// the layout pass. Returns the number of convolutions converted.
Result<int> quantized_convs_to_int8(Graph& graph);

// Identity, inference Dropout, same-type Cast, a Pad by zero and a Slice that keeps whole axes (known
// extents) are bypassed (kept only when both sides are graph I/O).
int remove_identities(Graph& graph);

// Removes nodes none of whose outputs reach a graph output; then prunes unused values.
int eliminate_dead_nodes(Graph& graph);

// ---- optimization passes of the CUDA builder (each also runs on the CPU, for tests) ----

// Conv [+ Add(residual)] [+ Relu] becomes one GraftConv (bias, residual and activation in the
// convolution's epilogue). Returns the number of Conv nodes rewritten.
Result<int> fuse_conv_epilogues(Graph& graph);

// Moves regions of 2-D GraftConv/pool/elementwise nodes to NHWC (channels last): weights are
// reordered once, a Transpose is inserted where a region is entered or left. `wanted` picks the
// convolutions to start a region from (e.g. float16 ones). `stem_channels`, when given, may bring
// in a convolution over too few input channels for `wanted` (an image's 3): it returns the channel
// count to zero-pad that convolution's input and filter to (0: leave it out). Such a stem reads its
// NCHW input through one GraftChannelsLast, which also takes over a float32 -> float16 Cast that
// only the stem read. With `stem_space_to_depth`, a strided stem reads the image rearranged into
// s x s blocks instead and becomes a stride-1 convolution (nhwc_regions.cpp says when and why).
// Returns the number of nodes moved.
Result<int> convert_conv_regions_to_nhwc(Graph& graph, const std::function<bool(const Node&)>& wanted,
                                         const std::function<int64_t(const Node&)>& stem_channels = nullptr,
                                         bool stem_space_to_depth = false);

// A GraftConv's Clip-from-0, HardSwish or Silu activation moves to its only reader when that is an
// NHWC depthwise GraftConv (its `input_activation`); the producer keeps Relu (for Clip) or nothing,
// which cuDNN's fused call applies. Returns the number of activations moved.
Result<int> defer_activations_to_depthwise(Graph& graph);

// MatMul/Gemm with a constant weight, followed by a bias Add and an activation, becomes one
// GEMM with a fused epilogue (src/graph/fuse_gemm_epilogues.cpp).
Result<int> fuse_gemm_epilogues(Graph& graph);

// Transpose(X) -> GraftGemm (no residual) becomes GraftGemm(X) -> Transpose where the permutation
// keeps the last axis and only data-movement nodes read the GEMM's output, so that the Transpose
// joins their view chain (src/graph/move_transposes_behind_gemms.cpp). Returns the number moved.
Result<int> move_transposes_behind_gemms(Graph& graph);

// Gemm/MatMul over [M, K] rows -> Reshape [d..., N] -> Transpose keeping the last axis becomes
// Reshape [d..., K] -> Transpose -> Reshape [M, K] -> the GEMM -> Reshape, the Transpose's output
// shape: the batch-first attention's out_proj, whose Transpose then joins the attention output's view
// chain and whose residual Add the GEMM's epilogue can take (src/graph/move_transposes_ahead_of_gemms.cpp).
// Returns the number moved.
Result<int> move_transposes_ahead_of_gemms(Graph& graph);

// A GraftGemm without activation or residual, followed by a Mul with a constant of N elements along
// the last axis and/or an Add of a tensor of its output's shape, absorbs them: the scale into W's
// columns and the bias, the Add as its residual (ConvNeXt's layer scale and block residual, which
// meet the GEMM only once the layout pass has removed the block's permute). Returns the number of
// GEMMs that absorbed something.
Result<int> fold_gemm_scales_and_residuals(Graph& graph);

// Chains of elementwise nodes on one shape become one fused elementwise node
// (src/graph/fuse_elementwise_chains.cpp). `supported` says which nodes the target backend can fuse.
Result<int> fuse_elementwise_chains(Graph& graph, const std::function<bool(const Node&)>& supported);

// A patchify Conv (kernel == stride, no padding/dilation, one group, static input) becomes a
// patch gather and a Gemm (src/graph/lower_patch_conv.cpp). Returns the number lowered.
Result<int> lower_patchify_convs(Graph& graph);

// An Einsum of two operands that is a batched matrix product (batch labels leading, one summed and
// one kept label trailing in each operand, in either order) becomes MatMul, with Transposes of the
// last two axes where needed (src/graph/lower_einsum.cpp). Returns the number lowered.
Result<int> lower_einsum_matmuls(Graph& graph);

// A Concat whose inputs include Slices of one axis (the concatenation axis, step 1, constant
// bounds) read only by it becomes one GraftConcatSlices reading the sliced tensors in place
// (src/graph/fuse_concat_slices.cpp; torch.roll). Every input's extent along the axis must be
// static. Returns the number of Concats rewritten.
Result<int> fuse_concat_slices(Graph& graph);

// Chains of Transpose / single-index Gather / Reshape-like nodes with static shapes become one
// GraftStridedCopy of the value they start from (src/graph/compose_views.cpp). Returns the number
// of chains rewritten.
Result<int> compose_view_chains(Graph& graph);

// A Transpose (static shapes) that only moves axes of extent 1 becomes a Reshape: same bytes, same
// order, which the CUDA engine runs as an alias of its input (vit at batch 1: two per block).
// Returns the number changed.
Result<int> unit_axis_transposes_to_reshapes(Graph& graph);

// Reshape(Reshape(x)) with static shapes becomes one Reshape of x (when the inner one has no other
// reader), so the GEMM fusions see Gemm -> Reshape -> Add. Returns the number merged.
Result<int> merge_reshape_chains(Graph& graph);

// GraftAttention nodes (float16/bfloat16, head sizes the fused kernel takes, static shapes) read
// operands made by GraftStridedCopy in place and write their result straight into a following
// Transpose's output, through GraftAttention's view attributes (src/graph/compose_views.cpp).
// Returns the number of attention nodes changed.
Result<int> fold_views_into_attention(Graph& graph);

// Loop nodes with a trip count known at build time (1 to 64) that cannot stop early and whose body
// has no nested subgraphs become one copy of the body per iteration, scan outputs concatenated
// (src/graph/unroll_loops.cpp): a CUDA engine can then capture them and fuse their layers. Returns
// the number of Loops unrolled.
Result<int> unroll_fixed_loops(Graph& graph);

// If nodes whose condition is a one-element constant, and whose taken branch has no nested
// subgraphs, become that branch's nodes (src/graph/inline_constant_ifs.cpp): the untaken branch is
// dropped unseen, and a CUDA engine can capture and fuse the rest. Returns the number inlined.
Result<int> inline_constant_ifs(Graph& graph);

}  // namespace graft
