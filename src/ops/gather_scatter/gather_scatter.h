// The gather-scatter family: ONNX's GatherElements, ScatterElements, GatherND and ScatterND, the ops
// that read or write data at positions an index tensor gives (Gather itself, a slice along one axis,
// is a shape op). Indices may be negative (counted from the end); ScatterElements and ScatterND
// combine updates with none, add, mul, max or min. gather_scatter.cpp: CPU references and schemas;
// gather_scatter.cu: kernels and the CUDA ops, which skip a bad index read on the device (gathers
// write zeros) and report it, failing the run as the CPU reference does (CudaOp::invalid_data).
#pragma once

#include "ops/operator.h"

namespace graft::cpu {

Status gather_elements(ExecContext& ctx);
Status scatter_elements(ExecContext& ctx);  // later duplicates win for reduction "none"
Status gather_nd(ExecContext& ctx);
Status scatter_nd(ExecContext& ctx);

}  // namespace graft::cpu
