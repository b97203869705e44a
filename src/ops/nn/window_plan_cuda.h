// The geometry of a Conv or pool window for the concrete input and output shapes, as the nn
// family's CUDA kernels take it (nn_kernels.cuh): shared by conv_cuda.cpp, pool_cuda.cpp and
// GraftConvInt8's graft_conv_int8_cuda.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backends/cuda/cuda_op_util.h"
#include "backends/cuda/cuda_ops.h"
#include "ops/nn/nn_kernels.cuh"
#include "ops/window_attrs.h"

namespace graft::cuda {

struct WindowPlan {
  k::Window2d g;
  int64_t M = 0, group = 1;
};

// Geometry of a 1-D or 2-D Conv/pool for the concrete input and output shapes.
inline Status plan_window(const CudaExec& ex, const std::vector<int64_t>& x, const std::vector<int64_t>& y,
                          const std::vector<int64_t>* kernel_from_weights, bool pool, WindowPlan* p) {
  const size_t n = x.size() - 2;
  if (n < 1 || n > 2) return util::fail(ex, StatusCode::kUnsupported, "only 1-D and 2-D windows are handled");
  GRAFT_ASSIGN_OR_RETURN(graft::WindowAttrs w, graft::parse_window_attrs(util::attrs_of(ex), n, kernel_from_weights, pool));
  std::vector<int64_t> in(x.begin() + 2, x.end()), begins, ends;
  graft::resolve_pads(w, in, &begins, &ends);
  k::Window2d& g = p->g;
  g.n = x[0];
  g.c = x[1];
  const size_t o = n == 2 ? 0 : 1;  // 1-D: the single axis is the width, height is 1
  if (n == 2) {
    g.h = x[2]; g.oh = y[2]; g.kh = w.kernel[0]; g.sh = w.strides[0]; g.dh = w.dilations[0]; g.ph = begins[0]; g.peh = ends[0];
  }
  const size_t wi = 1 - o;
  g.w = x[2 + wi];
  g.ow = y[2 + wi];
  g.kw = w.kernel[wi];
  g.sw = w.strides[wi];
  g.dw = w.dilations[wi];
  g.pw = begins[wi];
  g.pew = ends[wi];
  return Status::ok();
}

// Geometry of a Conv/pool over 1 to 3 spatial axes (x [n, c, spatial...]) for the concrete input and
// output shapes, as a Window3d: fewer spatial axes take its last ones, the leading ones left at 1.
inline Status plan_window3d(const CudaExec& ex, const std::vector<int64_t>& x, const std::vector<int64_t>& y,
                            const std::vector<int64_t>* kernel_from_weights, bool pool, k::Window3d* g) {
  if (x.size() < 3 || x.size() > 5 || y.size() != x.size())
    return util::fail(ex, StatusCode::kInvalidModel, "X and Y must have one rank, 3 to 5");
  const size_t n = x.size() - 2, lead = 3 - n;
  GRAFT_ASSIGN_OR_RETURN(graft::WindowAttrs w, graft::parse_window_attrs(util::attrs_of(ex), n, kernel_from_weights, pool));
  std::vector<int64_t> in(x.begin() + 2, x.end()), begins, ends;
  graft::resolve_pads(w, in, &begins, &ends);
  g->n = x[0];
  g->c = x[1];
  for (size_t a = 0; a < n; ++a) {
    g->in[lead + a] = x[2 + a];
    g->out[lead + a] = y[2 + a];
    g->k[lead + a] = w.kernel[a];
    g->s[lead + a] = w.strides[a];
    g->d[lead + a] = w.dilations[a];
    g->pb[lead + a] = begins[a];
    g->pe[lead + a] = ends[a];
  }
  return Status::ok();
}

}  // namespace graft::cuda
