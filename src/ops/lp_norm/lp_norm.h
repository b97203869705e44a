// The Lp-norm family (LpNormalization, LpPool, GlobalLpPool): what its definitions
// (lp_normalization.cpp, lp_pool.cpp: schemas, inference, CPU references) and its CUDA ops
// (lp_normalization.cu, lp_pool.cu) share, so a node is accepted, and its errors are worded, the
// same way on every side.
//
// LpNormalization (opset 1): y = x / ||x||_p along `axis` (default -1), p 1 or 2 (default 2); a
// zero norm gives 0/0 = NaN, as in ONNX's reference. LpPool (opset 11; ceil_mode and dilations from
// opset 18): per window of kernel_shape (strides, pads, auto_pad as the other pools), y =
// (sum |x|^p)^(1/p) over the taps inside the input (a tap in the padding adds 0), p >= 1 (default
// 2). GlobalLpPool (opset 2): the same over every spatial position. Float types only.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "graft/attribute.h"
#include "graft/status.h"
#include "ops/window_attrs.h"

namespace graft {

// The attribute p: 1 or 2 when `one_or_two` (LpNormalization), else any integer >= 1 (the pools);
// default 2. Errors name the attribute.
Result<int64_t> lp_order(const AttributeMap& attrs, bool one_or_two);

// LpNormalization over input dims `x`: the axis (errors name the attribute) and the input viewed
// as [outer, len, inner] around it.
struct LpNormGeometry {
  int64_t outer = 1, len = 1, inner = 1;
  int64_t p = 2;
};
Result<LpNormGeometry> lp_norm_geometry(const AttributeMap& attrs, const std::vector<int64_t>& x);

// LpPool's window (as the other pools read it) and p, for `spatial` spatial axes.
struct LpPoolAttrs {
  WindowAttrs window;
  int64_t p = 2;
};
Result<LpPoolAttrs> lp_pool_attrs(const AttributeMap& attrs, size_t spatial);

// A pool over x [N, C, in...] into y [N, C, out...] as plain numbers: for spatial axis a, output
// position o reads input positions o * stride[a] - pad[a] + t * dilation[a] for taps t <
// kernel[a], those inside [0, in[a]). GlobalLpPool is the window of the whole input.
struct LpPoolGeometry {
  int64_t planes = 0;  // N * C
  std::vector<int64_t> in, out, kernel, stride, pad, dilation;
  int64_t p = 2;
};
// x's dims; y's dims as inference made them. `global` ignores the window attributes.
Result<LpPoolGeometry> lp_pool_geometry(const AttributeMap& attrs, const std::vector<int64_t>& x,
                                        const std::vector<int64_t>& y, bool global);

// The arithmetic both backends share, written once (host and device).
#if defined(__CUDACC__)
#define GRAFT_LP_HD __host__ __device__
#else
#define GRAFT_LP_HD
#endif

// |v|^p, without pow's rounding for the common orders.
GRAFT_LP_HD inline double lp_abs_pow(double v, int64_t p) {
  const double a = fabs(v);
  return p == 1 ? a : p == 2 ? a * a : pow(a, static_cast<double>(p));
}

// The p-th root of a sum of |v|^p.
GRAFT_LP_HD inline double lp_root(double sum, int64_t p) {
  return p == 1 ? sum : p == 2 ? sqrt(sum) : pow(sum, 1.0 / static_cast<double>(p));
}

// The taps [*first, *last) of a window starting at input position `start` (dilation d, `kernel`
// taps) that fall inside an axis of `in` positions: start + t * d in [0, in).
GRAFT_LP_HD inline void lp_taps_inside(int64_t start, int64_t d, int64_t kernel, int64_t in, int64_t* first,
                                       int64_t* last) {
  *first = start >= 0 ? 0 : (-start + d - 1) / d;
  const int64_t past = in - 1 - start;
  const int64_t reach = past / d + 1;  // taps up to the input's end
  *last = past < 0 ? 0 : reach < kernel ? reach : kernel;
  if (*last < *first) *last = *first;
}

#undef GRAFT_LP_HD

}  // namespace graft
