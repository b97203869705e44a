// Internal ops of the transformer fusions (src/graph/fuse_gemm_epilogues.cpp, fold_gemm_scales.cpp and
// fuse_elementwise_chains.cpp build them). One file per op: gemm_epilogue (GraftGemm),
// elementwise_program (GraftElementwise) and attention (GraftAttention), each a .cpp (schema and CPU
// reference) and a _cuda.cpp (the CUDA op's host code); GraftElementwise's interpreter kernel is
// elementwise_program.cu, GraftAttention's fused kernel flash_attention.cu. Shared here: the
// GraftElementwise instruction set, so the pass, the reference and the kernel agree on one encoding,
// GraftAttention's view attributes, and the two helpers the CPU references share.
//
// GraftGemm(X[..., K], W, bias?, R?) -> Y[..., N]
//   attrs: transB (0: W is [K, N]; 1: W is [N, K]), alpha (float, default 1),
//          activation ("" | "Relu" | "Gelu"; Gelu is the exact erf form).
//   Y = act(alpha * X.W + bias + R); leading dimensions of X are folded into M. The residual R
//   has Y's shape; the pass only adds it when there is no activation (Y = X.W + bias + R).
//
// GraftAttention(Q[..., S, D], Kt[..., D, S2], V[..., S2, Dv] [, bias[P, S, S2]]) -> Y[..., S, Dv]
//   attrs: scale (float). Y = softmax(scale * Q.Kt + bias, last axis) . V; the leading dimensions
//   of the three inputs are equal (no broadcasting). The optional bias is periodic over the
//   flattened leading dimensions: batch entry b adds bias[b % P] (P divides the batch; Swin's
//   relative position bias over heads, with its shifted-window mask over windows and heads).
//   Optional view attributes (fold_views_into_attention sets them; all or none): the operands are
//   strided views of the input tensors and Y a strided view of the output tensor, batch two-level:
//     dims = [outer, inner, S, D, S2, Dv];  y_shape = the output tensor's dims;
//     q_view, kt_view, v_view, y_view = [offset, outer stride, inner stride, row stride, col stride]
//   so that Q[o, i, r, c] = input0.flat[offset + o*outer + i*inner + r*row + c*col] (Q rows S,
//   cols D; Kt D x S2; V S2 x Dv; Y S x Dv). Y's view must cover the output exactly once.
//   Or, over a dynamic batch, the chain form (never together with `dims`): operand k is a chain of
//   view steps of input k (GraftViewChain's attributes, views.h, under the prefix "q_", "kt_"
//   or "v_"; absent: the input itself), planned for each run's dims; y_perm (ints) writes Y
//   transposed by that permutation, whose last axis stays last.
//
// GraftElementwise(x0, ..., xk) -> y, every input and the output of one shape.
//   attrs: program (ints, kEwFields per instruction: opcode, dst, a, b, c),
//          immediates (floats), output_register (int), to (int, the output's DataType).
//   Registers 0..k hold the inputs (converted to float32); instruction i writes register dst.
//   An operand r >= 0 names a register, r < 0 the immediate -r-1. Every instruction computes in
//   float32 (the reference: in double, rounded to float32 after each instruction, so it equals
//   the unfused float32 chain up to the last bit of each step); kRoundHalf stands for a Cast to
//   float16 inside the chain and rounds to float16 precision.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include "graft/attribute.h"
#include "graft/dim.h"
#include "graft/dtype.h"
#include "graft/status.h"
#include "ops/elementwise_opcode.h"
#include "ops/views/views.h"

namespace graft {

inline constexpr int kEwFields = 5;        // opcode, dst, a, b, c
inline constexpr int kEwMaxInputs = 8;     // limits of the CUDA kernel's parameter block
inline constexpr int kEwMaxInstr = 32;
inline constexpr int kEwMaxImm = 32;
inline constexpr int kEwMaxRegs = kEwMaxInputs + kEwMaxInstr;

// GraftAttention's optional view attributes, parsed and checked once for the shape function, the
// CPU reference and the CUDA kernel.
struct AttentionViews {
  int64_t outer = 1, inner = 1, S = 0, D = 0, S2 = 0, Dv = 0;
  std::array<int64_t, 5> q{}, kt{}, v{}, y{};  // offset, outer, inner, row, col strides (elements)
  std::vector<int64_t> y_shape;
};
// *present = false (and OK) when the node has no view attributes; errors name the attribute.
Status read_attention_views(const AttributeMap& attrs, bool* present, AttentionViews* views);
// Every element a view addresses lies inside its tensor (numels of input 0..2 and the output), and
// Y's view covers the output tensor exactly once (so no output element is left unwritten).
Status check_attention_views(const AttentionViews& v, int64_t q_numel, int64_t kt_numel, int64_t v_numel,
                             int64_t y_numel);

// The chain form of the views (fold_views_into_attention over a dynamic batch).
struct AttentionChains {
  std::optional<std::vector<ViewStep>> steps[3];  // Q, Kt, V; nullopt: the input as it is
  std::vector<int64_t> y_perm;                   // empty: Y written as it is
};
inline const char* const kAttentionChainPrefixes[3] = {"q_", "kt_", "v_"};
// *present = false (and OK) when the node has no chain attributes; errors name the attribute.
Status read_attention_chains(const AttributeMap& attrs, bool* present, AttentionChains* chains);
void write_attention_chains(const AttentionChains& chains, AttributeMap* attrs);
// The output tensor's dims for Y's dims `y` (logical, [..., S, Dv]) written through `y_perm`, and
// the strides Y's axes step by in it (elements); an error names y_perm when it does not fit.
Status attention_output_layout(const std::vector<int64_t>& y, const std::vector<int64_t>& y_perm,
                               std::vector<int64_t>* out_dims, std::vector<int64_t>* y_strides);

// ---- the CPU references' shared helpers (gemm_epilogue.cpp, attention.cpp, elementwise_program.cpp) ----

// GraftGemm's and GraftAttention's input types.
inline bool float16_or_32(DataType t) { return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kBFloat16; }

// The exact erf GELU in double (GraftGemm's Gelu, GraftElementwise's kGeluErf).
// 1 + erf(z) as erfc(-z): for negative z the sum cancels, erfc keeps full precision there.
inline double gelu_erf(double v) { return 0.5 * v * std::erfc(v * -0.70710678118654752440); }

}  // namespace graft
