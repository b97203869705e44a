// CPU reference kernels for Resize and Pad; their attributes and output extents are read by
// src/ops/resize_pad_attrs.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ops/operator.h"
#include "ops/resize_pad_attrs.h"

namespace graft::cpu {

Status resize(ExecContext& ctx);
Status pad(ExecContext& ctx);

}  // namespace graft::cpu
