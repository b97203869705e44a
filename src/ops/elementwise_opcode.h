// GraftElementwise's instruction set (src/ops/transformer/transformer.h runs programs of these):
// one opcode per float operation a fused elementwise chain can hold. It lives apart from the fused
// op because op definitions name it too: an ONNX op that is one of these operations whatever its
// attributes says so where it is registered (OpEntry::elementwise_opcode, src/ops/operator.h),
// and the chain fusion (src/graph/fuse_elementwise_chains.cpp) reads it from there.
#pragma once

#include <cstdint>

namespace graft {

enum class EwOp : int32_t {
  kCopy = 0,        // a
  kAdd = 1,         // a + b
  kSub = 2,         // a - b
  kMul = 3,         // a * b
  kDiv = 4,         // a / b
  kPow = 5,         // pow(a, b)
  kRelu = 6,        // max(a, 0)
  kSigmoid = 7,     // 1 / (1 + exp(-a))
  kTanh = 8,
  kErf = 9,
  kSqrt = 10,
  kNeg = 11,
  kAbs = 12,
  kExp = 13,
  kLog = 14,
  kReciprocal = 15,
  kHardSigmoid = 16,  // max(0, min(1, b * a + c))   (b = alpha, c = beta)
  kHardSwish = 17,    // a * max(0, min(1, a / 6 + 0.5))
  kClip = 18,         // min(max(a, b), c): c wherever b > c (NaN stays)
  kGeluErf = 19,      // 0.5 a (1 + erf(a / sqrt 2))
  kGeluTanh = 20,     // 0.5 a (1 + tanh(sqrt(2/pi) (a + 0.044715 a^3)))
  kRoundHalf = 21,    // float16(a) back to float32
  kMax = 22,          // max(a, b)
  kMin = 23,          // min(a, b)
  kCount = 24,
};

// Number of operands (a, b, c) an opcode reads.
inline constexpr int ew_arity(EwOp op) {
  switch (op) {
    case EwOp::kAdd: case EwOp::kSub: case EwOp::kMul: case EwOp::kDiv: case EwOp::kPow:
    case EwOp::kMax: case EwOp::kMin:
      return 2;
    case EwOp::kHardSigmoid: case EwOp::kClip:
      return 3;
    default:
      return 1;
  }
}

// The opcode's name as `graft ops --json` lists it.
inline constexpr const char* ew_op_name(EwOp op) {
  switch (op) {
    case EwOp::kCopy: return "copy";
    case EwOp::kAdd: return "add";
    case EwOp::kSub: return "sub";
    case EwOp::kMul: return "mul";
    case EwOp::kDiv: return "div";
    case EwOp::kPow: return "pow";
    case EwOp::kRelu: return "relu";
    case EwOp::kSigmoid: return "sigmoid";
    case EwOp::kTanh: return "tanh";
    case EwOp::kErf: return "erf";
    case EwOp::kSqrt: return "sqrt";
    case EwOp::kNeg: return "neg";
    case EwOp::kAbs: return "abs";
    case EwOp::kExp: return "exp";
    case EwOp::kLog: return "log";
    case EwOp::kReciprocal: return "reciprocal";
    case EwOp::kHardSigmoid: return "hard_sigmoid";
    case EwOp::kHardSwish: return "hard_swish";
    case EwOp::kClip: return "clip";
    case EwOp::kGeluErf: return "gelu_erf";
    case EwOp::kGeluTanh: return "gelu_tanh";
    case EwOp::kRoundHalf: return "round_half";
    case EwOp::kMax: return "max";
    case EwOp::kMin: return "min";
    case EwOp::kCount: break;
  }
  return "?";
}

}  // namespace graft
