// CPU reference kernels for the spectral ops of src/ops/spectral_ops.cpp: DFT (opset 17, and
// opset 20's form with the axis as input 2) and STFT (opset 17).
//
// Both are one naive O(n^2) sum per output bin, accumulated in double and rounded once into the
// output dtype. The layouts and attributes they sum over are read by src/ops/spectral_attrs.h.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "graft/status.h"
#include "ops/operator.h"
#include "ops/spectral_attrs.h"

namespace graft::cpu {

// The naive sum of `lay` over host tensors (x, window may be null, y [out_numel] of x's dtype).
Status spectral_sum(const SpectralLayout& lay, const Tensor& x, const Tensor* window, Tensor& y);

Status dft(ExecContext& ctx);
Status stft(ExecContext& ctx);

}  // namespace graft::cpu
