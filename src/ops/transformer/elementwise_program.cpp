// GraftElementwise, a chain of elementwise nodes as one program (src/graph/fuse_elementwise_chains.cpp
// makes it): the program's checks, the schema and the CPU interpreter. Encoding: transformer.h;
// CUDA: elementwise_program_cuda.cpp (host) and elementwise_program.cu (the interpreter kernel).
#include "ops/transformer/transformer.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "backends/cpu/kernel_util.h"
#include "ops/operator.h"

namespace graft {

namespace {

// ---- GraftElementwise ----

struct EwProgram {
  std::vector<int64_t> code;
  std::vector<float> imm;
  int64_t out_reg = 0;
  DataType to = DataType::kFloat32;
};

template <typename... Args>
Status program_error(Args&&... parts) {
  Status st = error(StatusCode::kInvalidModel, std::forward<Args>(parts)...);
  st.with_attribute("program");
  return st;
}

// Checks the program against `num_inputs`: opcodes known, every operand defined before use,
// destinations fresh registers in order, the output register written. Errors name the attribute.
Result<EwProgram> ew_program(const AttributeMap& at, size_t num_inputs) {
  EwProgram p;
  GRAFT_ASSIGN_OR_RETURN(p.code, at.get_ints("program", {}));
  GRAFT_ASSIGN_OR_RETURN(p.imm, at.get_floats("immediates", {}));
  GRAFT_ASSIGN_OR_RETURN(p.out_reg, at.get_int("output_register", -1));
  GRAFT_ASSIGN_OR_RETURN(int64_t to, at.get_int("to", static_cast<int64_t>(DataType::kFloat32)));
  p.to = static_cast<DataType>(to);
  if (p.to != DataType::kFloat32 && p.to != DataType::kFloat16) {
    Status st = error(StatusCode::kInvalidModel, "'to' must be float32 or float16, got ", to);
    st.with_attribute("to");
    return st;
  }
  if (p.code.empty() || p.code.size() % kEwFields != 0)
    return program_error("program must hold ", kEwFields, " ints per instruction, got ", p.code.size());
  const int64_t n_instr = static_cast<int64_t>(p.code.size()) / kEwFields;
  if (p.imm.size() > static_cast<size_t>(kEwMaxImm)) {
    Status st = error(StatusCode::kInvalidModel, "at most ", kEwMaxImm, " immediates, got ", p.imm.size());
    st.with_attribute("immediates");
    return st;
  }
  if (num_inputs < 1 || num_inputs > static_cast<size_t>(kEwMaxInputs) || n_instr > kEwMaxInstr)
    return program_error("program exceeds the limits (", kEwMaxInputs, " inputs, ", kEwMaxInstr, " instructions, ",
                         kEwMaxImm, " immediates): ", num_inputs, " inputs, ", n_instr, " instructions, ",
                         p.imm.size(), " immediates");
  const int64_t n_in = static_cast<int64_t>(num_inputs);
  for (int64_t i = 0; i < n_instr; ++i) {
    const int64_t* f = &p.code[static_cast<size_t>(i * kEwFields)];
    if (f[0] < 0 || f[0] >= static_cast<int64_t>(EwOp::kCount)) return program_error("instruction ", i, ": unknown opcode ", f[0]);
    if (f[1] != n_in + i) return program_error("instruction ", i, ": destination must be register ", n_in + i, ", got ", f[1]);
    const int arity = ew_arity(static_cast<EwOp>(f[0]));
    for (int k = 0; k < arity; ++k) {
      const int64_t r = f[2 + k];
      if (r >= 0 ? r >= n_in + i : -r - 1 >= static_cast<int64_t>(p.imm.size()))
        return program_error("instruction ", i, ": operand ", k, " (", r, ") is not defined");
    }
  }
  if (p.out_reg < 0 || p.out_reg >= n_in + n_instr) {
    Status st = error(StatusCode::kInvalidModel, "output_register ", p.out_reg, " is not a register of the program");
    st.with_attribute("output_register");
    return st;
  }
  return p;
}

Status infer_graft_elementwise(InferContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(EwProgram p, ew_program(ctx.attrs(), ctx.num_inputs()));
  GRAFT_ASSIGN_OR_RETURN(Shape s, ctx.input_shape(0));
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) return ctx.fail("input ", i, " is missing");
    const DataType t = ctx.input(i).dtype;
    if (t != DataType::kFloat32 && t != DataType::kFloat16)
      return ctx.fail("input ", i, " has dtype ", dtype_name(t), "; expected float32 or float16");
    GRAFT_ASSIGN_OR_RETURN(Shape si, ctx.input_shape(i));
    if (si.size() != s.size()) return ctx.fail("input ", i, " has shape ", shape_to_string(si), ", input 0 ", shape_to_string(s));
    for (size_t d = 0; d < s.size(); ++d)
      if (si[d].is_const() && s[d].is_const() && si[d].value() != s[d].value())
        return ctx.fail("input ", i, " has shape ", shape_to_string(si), ", input 0 ", shape_to_string(s));
  }
  ctx.set_output(0, TensorDesc(p.to, s));
  return Status::ok();
}

float round_f32(double v) { return static_cast<float>(v); }

// One instruction in double, rounded to float32 (the unfused float32 node's result).
float ew_apply(EwOp op, double a, double b, double c) {
  switch (op) {
    case EwOp::kCopy: return round_f32(a);
    case EwOp::kAdd: return round_f32(a + b);
    case EwOp::kSub: return round_f32(a - b);
    case EwOp::kMul: return round_f32(a * b);
    case EwOp::kDiv: return round_f32(a / b);
    case EwOp::kPow: return round_f32(std::pow(a, b));
    case EwOp::kRelu: return round_f32(a > 0 ? a : 0.0);
    case EwOp::kSigmoid: return round_f32(1.0 / (1.0 + std::exp(-a)));
    case EwOp::kTanh: return round_f32(std::tanh(a));
    case EwOp::kErf: return round_f32(std::erf(a));
    case EwOp::kSqrt: return round_f32(std::sqrt(a));
    case EwOp::kNeg: return round_f32(-a);
    case EwOp::kAbs: return round_f32(std::fabs(a));
    case EwOp::kExp: return round_f32(std::exp(a));
    case EwOp::kLog: return round_f32(std::log(a));
    case EwOp::kReciprocal: return round_f32(1.0 / a);
    case EwOp::kHardSigmoid: return round_f32(std::max(0.0, std::min(1.0, b * a + c)));
    case EwOp::kHardSwish: return round_f32(a * std::max(0.0, std::min(1.0, a / 6.0 + 0.5)));
    case EwOp::kClip: {  // min(max(a, b), c): c wherever b > c; NaN stays
      const double up = a < b ? b : a;
      return round_f32(up > c ? c : up);
    }
    case EwOp::kGeluErf: return round_f32(gelu_erf(a));
    case EwOp::kGeluTanh:
      return round_f32(0.5 * a * (1.0 + std::tanh(0.79788456080286535588 * (a + 0.044715 * a * a * a))));
    case EwOp::kRoundHalf: return half_to_float(float_to_half(static_cast<float>(a)));
    case EwOp::kMax: return round_f32(std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b));
    case EwOp::kMin: return round_f32(std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b));
    case EwOp::kCount: break;
  }
  return NAN;
}

Status cpu_graft_elementwise(ExecContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(EwProgram p, ew_program(*ctx.attrs, ctx.inputs.size()));
  Tensor& Y = *ctx.outputs[0];
  const size_t n_in = ctx.inputs.size();
  for (size_t i = 0; i < n_in; ++i) {
    GRAFT_RETURN_IF_ERROR(cpu::require_float_tensor(ctx.inputs[i], "input"));
    if (ctx.inputs[i]->numel() != Y.numel())
      return error(StatusCode::kInvalidModel, "GraftElementwise: input ", i, " has ", ctx.inputs[i]->numel(),
                   " elements, the output ", Y.numel());
  }
  const size_t n_instr = p.code.size() / kEwFields;
  std::vector<float> r(n_in + n_instr);
  auto operand = [&](int64_t k) -> double {
    return k >= 0 ? static_cast<double>(r[static_cast<size_t>(k)]) : static_cast<double>(p.imm[static_cast<size_t>(-k - 1)]);
  };
  for (int64_t e = 0; e < Y.numel(); ++e) {
    for (size_t i = 0; i < n_in; ++i) r[i] = static_cast<float>(ctx.inputs[i]->get(e));
    for (size_t i = 0; i < n_instr; ++i) {
      const int64_t* f = &p.code[i * kEwFields];
      const EwOp op = static_cast<EwOp>(f[0]);
      const int arity = ew_arity(op);
      r[static_cast<size_t>(f[1])] = ew_apply(op, operand(f[2]), arity > 1 ? operand(f[3]) : 0.0, arity > 2 ? operand(f[4]) : 0.0);
    }
    Y.set(e, static_cast<double>(r[static_cast<size_t>(p.out_reg)]));
  }
  return Status::ok();
}

}  // namespace

void append_elementwise_program_ops(std::vector<OpEntry>& out) {
  out.push_back(internal_op(OpEntry{"GraftElementwise", 1, infer_graft_elementwise, cpu_graft_elementwise}));
}

}  // namespace graft
