// The launcher of GraftElementwise's CUDA kernel (elementwise_program.cu), which runs its programs.
// Plain device pointers and a by-value parameter block; no framework types.
#pragma once

#include <cstdint>

#include "backends/cuda/cuda_kernel_common.cuh"
#include "ops/transformer/transformer.h"

namespace graft::cuda::k {

// A GraftElementwise program as the kernel reads it (passed by value: ~0.6 KB of kernel
// parameters, read from the constant bank). Instruction j writes register n_in + j; an operand
// r >= 0 is a register, r < 0 the immediate -r-1 (src/ops/transformer/transformer.h).
struct EwKernelProgram {
  int n_in = 0;
  int n_instr = 0;
  int out_reg = 0;
  unsigned in_half = 0;  // bit i: input i is float16 (else float32)
  int out_half = 0;      // output float16 (else float32)
  int16_t code[kEwMaxInstr][4] = {};  // opcode, a, b, c
  float imm[kEwMaxImm] = {};
  const void* in[kEwMaxInputs] = {};
  void* out = nullptr;
};

// Runs the program over n elements (every input and the output have n elements).
cudaError_t launch_elementwise_program(const EwKernelProgram& p, int64_t n, cudaStream_t s);

}  // namespace graft::cuda::k
