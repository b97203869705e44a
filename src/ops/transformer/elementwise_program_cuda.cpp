// GraftElementwise's CUDA op (elementwise_program.cpp defines it): the node's program checked and
// packed into the parameter block of the interpreter kernel in elementwise_program.cu.
#include <string>

#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "ops/transformer/elementwise_program.cuh"
#include "ops/transformer/transformer.h"

namespace graft::cuda {
namespace {

using namespace util;

// ---- GraftElementwise ---------------------------------------------------------------------------

bool ew_io_dtype(DataType t) { return t == DataType::kFloat32 || t == DataType::kFloat16; }

// The dtypes the interpreter kernel reads and writes, per value (the inputs may mix them): the key of
// every input (up to kEwMaxInputs, each named in the row below) and of the output.
constexpr std::initializer_list<DataType> kEwIoDtypes = {DataType::kFloat32, DataType::kFloat16};
static_assert(kEwMaxInputs == 8, "GraftElementwise's row keys inputs 0 to 7");

// Builds the kernel's parameter block from the node's attributes; errors name the attribute.
Status ew_program(const Node& n, size_t num_inputs, k::EwKernelProgram* p) {
  auto code = n.attrs.get_ints("program", {});
  auto imm = n.attrs.get_floats("immediates", {});
  auto out_reg = n.attrs.get_int("output_register", -1);
  if (!code || !imm || !out_reg) return error(StatusCode::kInvalidModel, "GraftElementwise: bad attribute types");
  const auto& c = code.value();
  const size_t n_instr = c.size() / kEwFields;
  if (c.empty() || c.size() % kEwFields || n_instr > static_cast<size_t>(kEwMaxInstr) || num_inputs < 1 ||
      num_inputs > static_cast<size_t>(kEwMaxInputs) || imm.value().size() > static_cast<size_t>(kEwMaxImm))
    return Status(error(StatusCode::kInvalidModel, "GraftElementwise program exceeds the kernel's limits")).with_attribute("program");
  const int64_t regs = static_cast<int64_t>(num_inputs + n_instr);
  const int64_t nimm = static_cast<int64_t>(imm.value().size());
  p->n_in = static_cast<int>(num_inputs);
  p->n_instr = static_cast<int>(n_instr);
  if (out_reg.value() < 0 || out_reg.value() >= regs)
    return Status(error(StatusCode::kInvalidModel, "bad output_register")).with_attribute("output_register");
  p->out_reg = static_cast<int>(out_reg.value());
  for (size_t j = 0; j < n_instr; ++j) {
    const int64_t* f = &c[j * kEwFields];
    if (f[0] < 0 || f[0] >= static_cast<int64_t>(EwOp::kCount))
      return Status(error(StatusCode::kInvalidModel, "unknown opcode ", f[0])).with_attribute("program");
    p->code[j][0] = static_cast<int16_t>(f[0]);
    for (int k = 0; k < 3; ++k) {
      const int64_t r = f[2 + k];
      // Registers must be written before they are read; unused operand slots hold 0 (input 0).
      const bool ok = r >= 0 ? r < static_cast<int64_t>(num_inputs + j) : -r - 1 < nimm;
      if (!ok && k < ew_arity(static_cast<EwOp>(f[0])))
        return Status(error(StatusCode::kInvalidModel, "instruction ", j, " reads an undefined operand")).with_attribute("program");
      p->code[j][1 + k] = ok ? static_cast<int16_t>(r) : int16_t{0};
    }
  }
  for (size_t i = 0; i < imm.value().size(); ++i) p->imm[i] = imm.value()[i];
  return Status::ok();
}

// Every input given (more than kEwMaxInputs are refused by ew_program), and the output.
bool ew_supports(const Node& n, std::string* why) {
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (!has_input(n, i)) return reject(why, "input " + std::to_string(i) + " is missing");
  if (!n.output(0)) return reject(why, "output 0 is missing");
  k::EwKernelProgram p;
  Status st = ew_program(n, n.inputs.size(), &p);
  if (!st.is_ok()) return reject(why, st.to_string());
  return true;
}

Status ew_run(CudaExec& ex) {
  const Node& n = *ex.ctx->node;
  Tensor& Y = *ex.ctx->outputs[0];
  k::EwKernelProgram p;
  Status st = ew_program(n, ex.ctx->inputs.size(), &p);
  if (!st.is_ok()) return st.with_node(n.name, n.op_type);
  for (size_t i = 0; i < ex.ctx->inputs.size(); ++i) {
    const Tensor* t = ex.ctx->inputs[i];
    if (!t || !ew_io_dtype(t->dtype())) return fail(ex, StatusCode::kInvalidModel, "input ", i, " must be float32/float16");
    if (t->numel() != Y.numel())
      return fail(ex, StatusCode::kInvalidModel, "input ", i, " has ", t->numel(), " elements, the output ", Y.numel());
    if (t->dtype() == DataType::kFloat16) p.in_half |= 1u << i;
    p.in[i] = t->data();
  }
  if (!ew_io_dtype(Y.dtype())) return fail(ex, StatusCode::kInvalidModel, "output must be float32/float16");
  p.out_half = Y.dtype() == DataType::kFloat16;
  p.out = Y.data();
  return launch_status(k::launch_elementwise_program(p, Y.numel(), stream_of(ex)), ex);
}

}  // namespace

void append_cuda_elementwise_program_ops(std::vector<CudaOp>& out) {
  out.push_back(kernel_dtypes(
      {input_dtypes(0, kEwIoDtypes), input_dtypes(1, kEwIoDtypes), input_dtypes(2, kEwIoDtypes),
       input_dtypes(3, kEwIoDtypes), input_dtypes(4, kEwIoDtypes), input_dtypes(5, kEwIoDtypes),
       input_dtypes(6, kEwIoDtypes), input_dtypes(7, kEwIoDtypes), output_dtypes(0, kEwIoDtypes)},
      CudaOp{"GraftElementwise", &ew_supports, &ew_run, {}, nullptr}));
}

}  // namespace graft::cuda
