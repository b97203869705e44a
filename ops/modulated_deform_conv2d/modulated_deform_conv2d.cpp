// ModulatedDeformConv2d (DCNv2, mmcv semantics): definition, shape function and CPU reference
// kernels (README.md has the math).
#include "ops/modulated_deform_conv2d/modulated_deform_conv2d.h"
#include "ops/op_folder.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "graft/kernel_dtype.h"

#ifdef GRAFT_WITH_CUDA
#include "ops/modulated_deform_conv2d/modulated_deform_conv2d_kernels.cuh"
#endif

namespace graft {
namespace {

constexpr const char* kOpName = "ModulatedDeformConv2d";

constexpr int kX = 0, kOffset = 1, kMask = 2, kWeight = 3, kBias = 4, kGradOut = 5;
const char* const kInputNames[] = {"x", "offset", "mask", "weight", "bias", "grad_output"};

// The attributes, checked beyond what validate_attributes does (list lengths).
struct Conv {
  int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, groups = 1, dg = 1;
};

Result<Conv> conv_of(const AttributeMap& attrs) {
  Conv c;
  auto pair = [&](const char* name, int64_t def, int64_t& h, int64_t& w) -> Status {
    GRAFT_ASSIGN_OR_RETURN(std::vector<int64_t> v, attrs.get_ints(name, {def, def}));
    if (v.size() != 2) {
      Status st = error(StatusCode::kInvalidArgument, kOpName, ": must have 2 values (h, w), got ", v.size());
      return st.with_attribute(name);
    }
    h = v[0], w = v[1];
    return Status::ok();
  };
  GRAFT_RETURN_IF_ERROR(pair("stride", 1, c.sh, c.sw));
  GRAFT_RETURN_IF_ERROR(pair("padding", 0, c.ph, c.pw));
  GRAFT_RETURN_IF_ERROR(pair("dilation", 1, c.dh, c.dw));
  GRAFT_ASSIGN_OR_RETURN(c.groups, attrs.get_int("groups", 1));
  GRAFT_ASSIGN_OR_RETURN(c.dg, attrs.get_int("deform_groups", 1));
  // validate_attributes has range-checked them already; kernels may be called with an unvalidated map.
  auto positive = [&](const char* name, int64_t v, int64_t lo) -> Status {
    if (v >= lo && v <= std::numeric_limits<int32_t>::max()) return Status::ok();
    Status st = error(StatusCode::kInvalidArgument, kOpName, ": value ", v, " is outside [", lo, ", 2^31-1]");
    return st.with_attribute(name);
  };
  GRAFT_RETURN_IF_ERROR(positive("stride", std::min(c.sh, c.sw), 1));
  GRAFT_RETURN_IF_ERROR(positive("stride", std::max(c.sh, c.sw), 1));
  GRAFT_RETURN_IF_ERROR(positive("padding", std::min(c.ph, c.pw), 0));
  GRAFT_RETURN_IF_ERROR(positive("padding", std::max(c.ph, c.pw), 0));
  GRAFT_RETURN_IF_ERROR(positive("dilation", std::min(c.dh, c.dw), 1));
  GRAFT_RETURN_IF_ERROR(positive("dilation", std::max(c.dh, c.dw), 1));
  GRAFT_RETURN_IF_ERROR(positive("groups", c.groups, 1));
  GRAFT_RETURN_IF_ERROR(positive("deform_groups", c.dg, 1));
  return c;
}

// Output size of one spatial axis: floor((in + 2*pad - dil*(k-1) - 1) / stride) + 1.
int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  const int64_t span = in + 2 * p - d * (k - 1) - 1;
  return span < 0 ? 0 : span / s + 1;
}

struct Sizes {
  int64_t n = 0, c = 0, h = 0, w = 0, co = 0, kh = 0, kw = 0, ho = 0, wo = 0;
  bool has_bias = false;
};

// Checks a kernel call: counts, ranks, matching sizes and dtypes, devices. Forward: 5 inputs (bias
// may be absent: data == nullptr) -> output; backward: those + grad_output -> grad_x, grad_offset,
// grad_mask, grad_weight, grad_bias (the last absent, data == nullptr, when bias is).
Result<Sizes> sizes_of(const KernelContext& ctx, const Conv& cv, bool backward, DeviceType device) {
  const size_t n_in = backward ? 6 : 5, n_out = backward ? 5 : 1;
  if (backward && ctx.channels_last_io)
    return error(StatusCode::kUnsupported, kOpName, ": the backward takes x in (N, C, H, W) only, not channels-last");
  GRAFT_RETURN_IF_ERROR(check_kernel_io(ctx, kOpName, n_in, n_out));
  auto bad = [&](int i, auto&&... parts) {
    return error(StatusCode::kInvalidArgument, kOpName, ": input '", kInputNames[i], "' ", parts...);
  };
  const TensorView &x = ctx.inputs[kX], &off = ctx.inputs[kOffset], &mask = ctx.inputs[kMask],
                   &wt = ctx.inputs[kWeight], &bias = ctx.inputs[kBias];
  if (x.rank() != 4) return bad(kX, "must have rank 4 (N, C, H, W), got rank ", x.rank());
  if (wt.rank() != 4) return bad(kWeight, "must have rank 4 (Co, C/groups, kh, kw), got rank ", wt.rank());
  Sizes z;
  z.n = x.dims[0], z.c = x.dims[1], z.h = x.dims[2], z.w = x.dims[3];
  z.co = wt.dims[0], z.kh = wt.dims[2], z.kw = wt.dims[3];
  if (z.c % cv.groups != 0 || wt.dims[1] * cv.groups != z.c)
    return bad(kWeight, "has ", wt.dims[1], " input channels per group, but x has C = ", z.c, " and groups = ",
               cv.groups);
  if (z.co % cv.groups != 0) return bad(kWeight, "has Co = ", z.co, ", not divisible by groups = ", cv.groups);
  if (z.c % cv.dg != 0) return bad(kX, "has C = ", z.c, ", not divisible by deform_groups = ", cv.dg);
  z.ho = out_size(z.h, z.kh, cv.sh, cv.ph, cv.dh);
  z.wo = out_size(z.w, z.kw, cv.sw, cv.pw, cv.dw);
  const int64_t k = z.kh * z.kw;
  if (off.dims != std::vector<int64_t>{z.n, 2 * cv.dg * k, z.ho, z.wo})
    return bad(kOffset, "must have shape (N, 2*deform_groups*kh*kw, Ho, Wo) = (", z.n, ", ", 2 * cv.dg * k, ", ",
               z.ho, ", ", z.wo, ")");
  if (mask.dims != std::vector<int64_t>{z.n, cv.dg * k, z.ho, z.wo})
    return bad(kMask, "must have shape (N, deform_groups*kh*kw, Ho, Wo) = (", z.n, ", ", cv.dg * k, ", ", z.ho, ", ",
               z.wo, ")");
  z.has_bias = bias.data != nullptr;
  if (z.has_bias && bias.dims != std::vector<int64_t>{z.co}) return bad(kBias, "must have shape (Co) = (", z.co, ")");
  const DataType ft = x.dtype;
  std::vector<const TensorView*> all = {&x, &off, &mask, &wt};
  if (z.has_bias) all.push_back(&bias);
  for (int i : {kOffset, kMask, kWeight})
    if (ctx.inputs[i].dtype != ft) return bad(i, "must have the dtype of 'x' (", dtype_name(ft), ")");
  if (z.has_bias && bias.dtype != ft) return bad(kBias, "must have the dtype of 'x' (", dtype_name(ft), ")");
  const std::vector<int64_t> out_dims = {z.n, z.co, z.ho, z.wo};
  if (backward) {
    const TensorView& g = ctx.inputs[kGradOut];
    if (g.dtype != ft || g.dims != out_dims)
      return bad(kGradOut, "must be ", dtype_name(ft), " of the output's shape (N, Co, Ho, Wo)");
    all.push_back(&g);
    const std::vector<int64_t>* want[] = {&x.dims, &off.dims, &mask.dims, &wt.dims, &bias.dims};
    for (size_t o = 0; o < 5; ++o) {
      const TensorView& t = ctx.outputs[o];
      if (o == 4 && !z.has_bias) continue;  // no bias: no gradient to write
      if (t.dtype != ft || t.dims != *want[o])
        return error(StatusCode::kInvalidArgument, kOpName, ": gradient output ", o, " ('grad_", kInputNames[o],
                     "') must be ", dtype_name(ft), " of the shape of input '", kInputNames[o], "'");
      all.push_back(&t);
    }
  } else {
    const TensorView& t = ctx.outputs[0];
    if (t.dtype != ft || t.dims != out_dims)
      return error(StatusCode::kInvalidArgument, kOpName, ": output must be ", dtype_name(ft),
                   " of shape (N, Co, Ho, Wo) = (", z.n, ", ", z.co, ", ", z.ho, ", ", z.wo, ")");
    all.push_back(&t);
  }
  for (const TensorView* t : all) {
    if (t->numel() > 0 && t->data == nullptr)
      return error(StatusCode::kInvalidArgument, kOpName, ": a tensor argument has no data");
    if (t->device != device)
      return error(StatusCode::kInvalidArgument, kOpName, ": a tensor argument is in ", device_name(t->device),
                   " memory, the kernel needs ", device_name(device));
  }
  return z;
}

// ---- CPU reference ------------------------------------------------------------------------------
// Bilinear sample of one (H, W) plane at (y, x) with mmcv's rule: no contribution unless
// -1 < y < H and -1 < x < W (which also rejects NaN); corners outside the plane read zero.
// Returns the value and its derivatives with respect to y and x.
struct Sample {
  double v = 0.0, dy = 0.0, dx = 0.0;
  int64_t y0 = 0, x0 = 0;
  double ly = 0.0, lx = 0.0;
  bool inside = false;
};

template <typename Load>
Sample bilinear(const Load& at, int64_t height, int64_t width, double y, double x) {
  Sample s;
  if (!(y > -1.0 && x > -1.0 && y < static_cast<double>(height) && x < static_cast<double>(width))) return s;
  s.inside = true;
  s.y0 = static_cast<int64_t>(std::floor(y));
  s.x0 = static_cast<int64_t>(std::floor(x));
  s.ly = y - std::floor(y);
  s.lx = x - std::floor(x);
  double c[4];  // (y0,x0), (y0,x0+1), (y0+1,x0), (y0+1,x0+1)
  for (int k = 0; k < 4; ++k) {
    const int64_t yy = s.y0 + (k >> 1), xx = s.x0 + (k & 1);
    c[k] = (yy >= 0 && xx >= 0 && yy < height && xx < width) ? at(yy * width + xx) : 0.0;
  }
  const double hy = 1.0 - s.ly, hx = 1.0 - s.lx;
  s.v = hy * hx * c[0] + hy * s.lx * c[1] + s.ly * hx * c[2] + s.ly * s.lx * c[3];
  s.dy = hx * (c[2] - c[0]) + s.lx * (c[3] - c[1]);
  s.dx = hy * (c[1] - c[0]) + s.ly * (c[3] - c[2]);
  return s;
}

// Index helpers over the row-major layouts.
struct Layout {
  const Sizes& z;
  const Conv& cv;
  bool channels_last = false;  // x and the output stored (N, H, W, C) (KernelContext::channels_last_io)
  // Element i = y*W + x of channel c of image n of x, and output (n, co, pos).
  int64_t x_at(int64_t n, int64_t c, int64_t i) const {
    return channels_last ? (n * z.h * z.w + i) * z.c + c : (n * z.c + c) * z.h * z.w + i;
  }
  int64_t out_at(int64_t n, int64_t co, int64_t pos) const {
    return channels_last ? (n * p() + pos) * z.co + co : (n * z.co + co) * p() + pos;
  }
  int64_t k() const { return z.kh * z.kw; }
  int64_t p() const { return z.ho * z.wo; }
  int64_t cg() const { return z.c / cv.groups; }    // input channels per conv group
  int64_t cog() const { return z.co / cv.groups; }  // output channels per conv group
  int64_t cpd() const { return z.c / cv.dg; }       // input channels per deform group
  // offset (N, 2*dg*K, Ho, Wo): dy at channel 2*(g*K + k), dx at +1.
  int64_t off_y(int64_t n, int64_t g, int64_t kk, int64_t pos) const {
    return ((n * cv.dg + g) * 2 * k() + 2 * kk) * p() + pos;
  }
  int64_t mask_at(int64_t n, int64_t g, int64_t kk, int64_t pos) const {
    return ((n * cv.dg + g) * k() + kk) * p() + pos;
  }
  // Sample position of kernel tap kk at output position pos, before the offset.
  double base_y(int64_t kk, int64_t pos) const {
    return static_cast<double>((pos / z.wo) * cv.sh - cv.ph + (kk / z.kw) * cv.dh);
  }
  double base_x(int64_t kk, int64_t pos) const {
    return static_cast<double>((pos % z.wo) * cv.sw - cv.pw + (kk % z.kw) * cv.dw);
  }
};

// The modulated deformable columns of image n: col[(c*K + k)*P + pos] = mask * bilinear(x[n, c]),
// in double. Also returns the samples when `samples` is given (for the backward).
template <typename Tr>
void columns(const void* x, const void* off, const void* mask, const Layout& L, int64_t n, std::vector<double>& col,
             std::vector<Sample>* samples) {
  const Sizes& z = L.z;
  const int64_t k = L.k(), p = L.p();
  col.assign(static_cast<size_t>(z.c * k * p), 0.0);
  if (samples) samples->assign(static_cast<size_t>(z.c * k * p), Sample{});
  for (int64_t c = 0; c < z.c; ++c) {
    const int64_t g = c / L.cpd();
    auto at = [&](int64_t i) { return static_cast<double>(Tr::load(x, L.x_at(n, c, i))); };
    for (int64_t kk = 0; kk < k; ++kk)
      for (int64_t pos = 0; pos < p; ++pos) {
        const int64_t oy = L.off_y(n, g, kk, pos);
        const double y = L.base_y(kk, pos) + static_cast<double>(Tr::load(off, oy));
        const double xx = L.base_x(kk, pos) + static_cast<double>(Tr::load(off, oy + p));
        const double m = Tr::load(mask, L.mask_at(n, g, kk, pos));
        const Sample s = bilinear(at, z.h, z.w, y, xx);
        const size_t r = static_cast<size_t>((c * k + kk) * p + pos);
        col[r] = m * s.v;
        if (samples) (*samples)[r] = s;
      }
  }
}

Status forward_cpu(const KernelContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(Conv cv, conv_of(*ctx.attrs));
  GRAFT_ASSIGN_OR_RETURN(Sizes z, sizes_of(ctx, cv, false, DeviceType::kCPU));
  const void *x = ctx.inputs[kX].data, *off = ctx.inputs[kOffset].data, *mask = ctx.inputs[kMask].data,
             *wt = ctx.inputs[kWeight].data, *bias = ctx.inputs[kBias].data;
  void* out = ctx.outputs[0].data;
  const Layout L{z, cv, ctx.channels_last_io};
  return kernel::visit_float_dtype(kOpName, ctx.inputs[kX].dtype, [&](auto tr) {
    using Tr = decltype(tr);
    const int64_t k = L.k(), p = L.p(), cg = L.cg(), cog = L.cog();
    std::vector<double> col, acc(static_cast<size_t>(p));
    for (int64_t n = 0; n < z.n; ++n) {
      columns<Tr>(x, off, mask, L, n, col, nullptr);
      for (int64_t co = 0; co < z.co; ++co) {
        const int64_t g = co / cog;
        std::fill(acc.begin(), acc.end(), z.has_bias ? static_cast<double>(Tr::load(bias, co)) : 0.0);
        for (int64_t r = 0; r < cg * k; ++r) {
          const double wv = Tr::load(wt, co * cg * k + r);
          const double* row = col.data() + (g * cg * k + r) * p;
          for (int64_t pos = 0; pos < p; ++pos) acc[pos] += wv * row[pos];
        }
        for (int64_t pos = 0; pos < p; ++pos) Tr::store(out, L.out_at(n, co, pos), acc[pos]);
      }
    }
    return Status::ok();
  });
}

Status backward_cpu(const KernelContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(Conv cv, conv_of(*ctx.attrs));
  GRAFT_ASSIGN_OR_RETURN(Sizes z, sizes_of(ctx, cv, true, DeviceType::kCPU));
  const void *x = ctx.inputs[kX].data, *off = ctx.inputs[kOffset].data, *mask = ctx.inputs[kMask].data,
             *wt = ctx.inputs[kWeight].data, *gout = ctx.inputs[kGradOut].data;
  void *gx = ctx.outputs[0].data, *goff = ctx.outputs[1].data, *gmask = ctx.outputs[2].data,
       *gwt = ctx.outputs[3].data, *gbias = ctx.outputs[4].data;
  const Layout L{z, cv};
  return kernel::visit_float_dtype(kOpName, ctx.inputs[kX].dtype, [&](auto tr) {
    using Tr = decltype(tr);
    const int64_t k = L.k(), p = L.p(), cg = L.cg(), cog = L.cog(), hw = z.h * z.w;
    std::vector<double> gx_acc(static_cast<size_t>(z.n * z.c * hw), 0.0);
    std::vector<double> goff_acc(static_cast<size_t>(z.n * 2 * cv.dg * k * p), 0.0);
    std::vector<double> gmask_acc(static_cast<size_t>(z.n * cv.dg * k * p), 0.0);
    std::vector<double> gw_acc(static_cast<size_t>(z.co * cg * k), 0.0), gb_acc(static_cast<size_t>(z.co), 0.0);
    std::vector<double> col, gcol;
    std::vector<Sample> samples;
    for (int64_t n = 0; n < z.n; ++n) {
      columns<Tr>(x, off, mask, L, n, col, &samples);
      // grad_col[g*cg*K + r] = sum over the group's output channels of weight[co, r] * grad_out[n, co].
      gcol.assign(col.size(), 0.0);
      for (int64_t co = 0; co < z.co; ++co) {
        const int64_t g = co / cog;
        const int64_t go_base = (n * z.co + co) * p;
        for (int64_t pos = 0; pos < p; ++pos) gb_acc[co] += Tr::load(gout, go_base + pos);
        for (int64_t r = 0; r < cg * k; ++r) {
          const double wv = Tr::load(wt, co * cg * k + r);
          double* grow = gcol.data() + (g * cg * k + r) * p;
          const double* crow = col.data() + (g * cg * k + r) * p;
          double gw = 0.0;
          for (int64_t pos = 0; pos < p; ++pos) {
            const double go = Tr::load(gout, go_base + pos);
            grow[pos] += wv * go;
            gw += go * crow[pos];
          }
          gw_acc[co * cg * k + r] += gw;
        }
      }
      // Through the sampling: x (bilinear weights times mask), offset (bilinear derivatives times
      // mask) and mask (the sampled value).
      for (int64_t c = 0; c < z.c; ++c) {
        const int64_t g = c / L.cpd();
        for (int64_t kk = 0; kk < k; ++kk)
          for (int64_t pos = 0; pos < p; ++pos) {
            const size_t r = static_cast<size_t>((c * k + kk) * p + pos);
            const Sample& s = samples[r];
            if (!s.inside) continue;
            const double gc = gcol[r];
            const double m = Tr::load(mask, L.mask_at(n, g, kk, pos));
            const int64_t oy = L.off_y(n, g, kk, pos);
            goff_acc[static_cast<size_t>(oy)] += gc * m * s.dy;
            goff_acc[static_cast<size_t>(oy + p)] += gc * m * s.dx;
            gmask_acc[static_cast<size_t>(L.mask_at(n, g, kk, pos))] += gc * s.v;
            const double hy = 1.0 - s.ly, hx = 1.0 - s.lx;
            const double cw[4] = {hy * hx, hy * s.lx, s.ly * hx, s.ly * s.lx};
            for (int q = 0; q < 4; ++q) {
              const int64_t yy = s.y0 + (q >> 1), xx = s.x0 + (q & 1);
              if (yy < 0 || xx < 0 || yy >= z.h || xx >= z.w) continue;
              gx_acc[static_cast<size_t>((n * z.c + c) * hw + yy * z.w + xx)] += gc * m * cw[q];
            }
          }
      }
    }
    auto store_all = [](void* dst, const std::vector<double>& src) {
      for (size_t i = 0; i < src.size(); ++i) Tr::store(dst, static_cast<int64_t>(i), src[i]);
    };
    store_all(gx, gx_acc);
    store_all(goff, goff_acc);
    store_all(gmask, gmask_acc);
    store_all(gwt, gw_acc);
    if (z.has_bias && gbias) store_all(gbias, gb_acc);
    return Status::ok();
  });
}

#ifdef GRAFT_WITH_CUDA
Status cuda_status(cudaError_t e, const char* what, const cuda::MdcnFailure& f = {}) {
  if (e == cudaSuccess) return Status::ok();
  if (f.call == nullptr) return error(StatusCode::kRuntimeError, kOpName, ": ", what, " failed: ", cudaGetErrorString(e));
  return error(StatusCode::kRuntimeError, kOpName, ": ", what, " failed in ", f.call, ": ",
               f.detail != nullptr ? f.detail : cudaGetErrorString(e));
}

cuda::MdcnSizes cuda_sizes(const Sizes& z, const Conv& cv, bool channels_last_io = false) {
  cuda::MdcnSizes s;
  s.channels_last_io = channels_last_io;
  s.n = z.n, s.c = z.c, s.h = z.h, s.w = z.w, s.co = z.co, s.kh = z.kh, s.kw = z.kw, s.ho = z.ho, s.wo = z.wo;
  s.sh = cv.sh, s.sw = cv.sw, s.ph = cv.ph, s.pw = cv.pw, s.dh = cv.dh, s.dw = cv.dw;
  s.groups = cv.groups, s.deform_groups = cv.dg;
  return s;
}

template <typename T>
cudaError_t forward_cuda_typed(const KernelContext& ctx, const cuda::MdcnSizes& s, cuda::MdcnFailure* f) {
  const auto& in = ctx.inputs;
  const T* bias = in[kBias].data ? in[kBias].as<T>() : nullptr;
  return cuda::modulated_deform_conv2d_forward<T>(in[kX].as<T>(), in[kOffset].as<T>(), in[kMask].as<T>(),
                                                  in[kWeight].as<T>(), bias, ctx.outputs[0].as<T>(), s,
                                                  ctx.workspace, ctx.workspace_size,
                                                  static_cast<cudaStream_t>(ctx.stream), f);
}

template <typename T>
cudaError_t backward_cuda_typed(const KernelContext& ctx, const cuda::MdcnSizes& s) {
  const auto& in = ctx.inputs;
  const auto& out = ctx.outputs;
  T* gbias = (in[kBias].data && out[4].data) ? out[4].as<T>() : nullptr;
  return cuda::modulated_deform_conv2d_backward<T>(
      in[kX].as<T>(), in[kOffset].as<T>(), in[kMask].as<T>(), in[kWeight].as<T>(), in[kGradOut].as<T>(),
      out[0].as<T>(), out[1].as<T>(), out[2].as<T>(), out[3].as<T>(), gbias, s, ctx.workspace, ctx.workspace_size,
      static_cast<cudaStream_t>(ctx.stream));
}

Status forward_cuda(const KernelContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(Conv cv, conv_of(*ctx.attrs));
  GRAFT_ASSIGN_OR_RETURN(Sizes z, sizes_of(ctx, cv, false, DeviceType::kCUDA));
  const cuda::MdcnSizes s = cuda_sizes(z, cv, ctx.channels_last_io);
  cuda::MdcnFailure f;
  switch (ctx.inputs[kX].dtype) {
    case DataType::kFloat32: return cuda_status(forward_cuda_typed<float>(ctx, s, &f), "CUDA forward", f);
    case DataType::kFloat16: return cuda_status(forward_cuda_typed<__half>(ctx, s, &f), "CUDA forward", f);
    default:
      return error(StatusCode::kUnsupported, kOpName, ": no CUDA kernel for dtype ", dtype_name(ctx.inputs[kX].dtype));
  }
}

Status backward_cuda(const KernelContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(Conv cv, conv_of(*ctx.attrs));
  GRAFT_ASSIGN_OR_RETURN(Sizes z, sizes_of(ctx, cv, true, DeviceType::kCUDA));
  const cuda::MdcnSizes s = cuda_sizes(z, cv);
  switch (ctx.inputs[kX].dtype) {
    case DataType::kFloat32: return cuda_status(backward_cuda_typed<float>(ctx, s), "backward kernel launch");
    case DataType::kFloat16: return cuda_status(backward_cuda_typed<__half>(ctx, s), "backward kernel launch");
    default:
      return error(StatusCode::kUnsupported, kOpName, ": no CUDA backward kernel for dtype ",
                   dtype_name(ctx.inputs[kX].dtype));
  }
}
#endif  // GRAFT_WITH_CUDA

// ---- shape function -----------------------------------------------------------------------------
Status shape_fn(ShapeContext& ctx) {
  auto bad = [&](int i, auto&&... parts) {
    return error(StatusCode::kInvalidModel, kOpName, ": input '", kInputNames[i], "' ", parts...);
  };
  auto bad_attr = [&](const char* attr, auto&&... parts) {
    Status st = error(StatusCode::kInvalidModel, kOpName, ": ", parts...);  // to_string() names the attribute
    return st.with_attribute(attr);
  };
  Result<Conv> cvr = conv_of(ctx.attrs());
  if (!cvr.is_ok()) return cvr.status();
  const Conv cv = *cvr;
  const char* forms[] = {"(N, C, H, W)", "(N, 2*deform_groups*kh*kw, Ho, Wo)", "(N, deform_groups*kh*kw, Ho, Wo)",
                         "(Co, C/groups, kh, kw)", "(Co)"};
  for (int i = 0; i < 5; ++i) {
    if (i == kBias && !ctx.has_input(kBias)) continue;
    const int want = i == kBias ? 1 : 4;
    if (ctx.input_rank(i) != want)
      return bad(i, "must have rank ", want, " ", forms[i], ", got rank ", ctx.input_rank(i));
  }
  auto known = [&](int i, int d) { return ctx.input_dim(i, d).constant_value(); };
  const auto c = known(kX, 1), cw = known(kWeight, 1), co = known(kWeight, 0), kh = known(kWeight, 2),
             kw = known(kWeight, 3);
  if (c && *c % cv.groups != 0)
    return bad_attr("groups", "x has C = ", *c, " channels, not divisible by groups = ", cv.groups);
  if (co && *co % cv.groups != 0)
    return bad_attr("groups", "weight has Co = ", *co, " output channels, not divisible by groups = ", cv.groups);
  if (c && *c % cv.dg != 0)
    return bad_attr("deform_groups", "x has C = ", *c, " channels, not divisible by deform_groups = ", cv.dg);
  if (c && cw && *cw * cv.groups != *c)
    return bad(kWeight, "has ", *cw, " input channels per group at dimension 1; x has C = ", *c, " and groups = ",
               cv.groups, ", so it must be ", *c / cv.groups);
  if (kh && kw) {
    if (auto oc = known(kOffset, 1); oc && *oc != 2 * cv.dg * *kh * *kw)
      return bad(kOffset, "has ", *oc, " channels; 2*deform_groups*kh*kw = ", 2 * cv.dg * *kh * *kw);
    if (auto mc = known(kMask, 1); mc && *mc != cv.dg * *kh * *kw)
      return bad(kMask, "has ", *mc, " channels; deform_groups*kh*kw = ", cv.dg * *kh * *kw);
  }
  // Output spatial size, symbolic: floor((H + 2p - d*(k-1) - 1) / s) + 1 per axis.
  const SymDim ho = floor_div(ctx.input_dim(kX, 2) + (2 * cv.ph - 1 + cv.dh) - ctx.input_dim(kWeight, 2) * cv.dh,
                              cv.sh) + 1;
  const SymDim wo = floor_div(ctx.input_dim(kX, 3) + (2 * cv.pw - 1 + cv.dw) - ctx.input_dim(kWeight, 3) * cv.dw,
                              cv.sw) + 1;
  const auto hv = ho.constant_value(), wv = wo.constant_value();
  if ((hv && *hv <= 0) || (wv && *wv <= 0))
    return bad(kX, "is too small: the dilated kernel does not fit in the padded input (output ",
               hv ? std::to_string(*hv) : std::string("?"), " x ", wv ? std::to_string(*wv) : std::string("?"), ")");
  for (int i : {kOffset, kMask}) {
    const char* axis[] = {"Ho", "Wo"};
    const std::optional<int64_t> want[] = {hv, wv};
    for (int a = 0; a < 2; ++a)
      if (auto got = known(i, 2 + a); got && want[a] && *got != *want[a])
        return bad(i, "has ", axis[a], " = ", *got, " at dimension ", 2 + a, " but the convolution gives ", *want[a]);
    if (auto nx = known(kX, 0), ni = known(i, 0); nx && ni && *nx != *ni)
      return bad(i, "has N = ", *ni, " at dimension 0 but input 'x' has ", *nx);
  }
  if (ctx.has_input(kBias))
    if (auto b = known(kBias, 0); b && co && *b != *co)
      return bad(kBias, "has ", *b, " elements but weight has Co = ", *co);
  ctx.set_output(0, {ctx.input_dim(kX, 0), ctx.input_dim(kWeight, 0), ho, wo});
  return Status::ok();
}

// Bytes of CUDA scratch (modulated_deform_conv2d_kernels.cuh): the forward's columns of a chunk of
// images plus cuBLASLt's workspace, or the backward's per-image float columns, their gradient and
// accumulators. A workspace function cannot tell forward from backward, so it reports the larger.
// The CPU kernels use none.
size_t workspace_bytes(const std::vector<ConcreteDesc>& in, const std::vector<ConcreteDesc>&,
                       const AttributeMap& attrs) {
#ifdef GRAFT_WITH_CUDA
  if (in.size() < 4 || in[kX].dims.size() != 4 || in[kOffset].dims.size() != 4 || in[kWeight].dims.size() != 4)
    return 0;
  Result<Conv> cv = conv_of(attrs);
  if (!cv.is_ok()) return 0;
  const auto& x = in[kX].dims;
  const auto& w = in[kWeight].dims;
  const auto& off = in[kOffset].dims;
  for (int64_t d : {x[0], x[1], x[2], x[3], w[0], w[1], w[2], w[3], off[2], off[3]})
    if (d < 0) return 0;
  Sizes z;
  z.n = x[0], z.c = x[1], z.h = x[2], z.w = x[3], z.co = w[0], z.kh = w[2], z.kw = w[3], z.ho = off[2], z.wo = off[3];
  const cuda::MdcnSizes s = cuda_sizes(z, *cv);
  auto larger = [&](auto type_tag) {
    using T = decltype(type_tag);
    return std::max(cuda::modulated_deform_conv2d_workspace_bytes<T>(s, false),
                    cuda::modulated_deform_conv2d_workspace_bytes<T>(s, true));
  };
  switch (in[kX].dtype) {
    case DataType::kFloat32: return larger(float{});
    case DataType::kFloat16: return larger(__half{});
    default: return 0;  // float64 runs on the CPU only
  }
#else
  (void)in, (void)attrs;
  return 0;
#endif
}

}  // namespace

OpDef define_modulated_deform_conv2d() {
  using DT = DataType;
  const std::vector<DT> floats = {DT::kFloat32, DT::kFloat16, DT::kFloat64};
  constexpr double kMaxInt = std::numeric_limits<int32_t>::max();
  OpDef def(kOpName);
  def.domain("ai.onnx.contrib")
      .version("1")
      .plugin_namespace("")
      .doc("Modulated deformable convolution (DCNv2, arXiv 1811.11168; mmcv semantics): a 2-D convolution whose "
           "every kernel tap samples x bilinearly at its grid position plus a learned (dy, dx) offset and is scaled "
           "by a learned mask. Samples with y <= -1, y >= H, x <= -1 or x >= W read zero; corner taps outside the "
           "image read zero.")
      .attr_ints("stride", std::vector<int64_t>{1, 1}, "(h, w) stride of the output grid")
      .range(1, kMaxInt)
      .attr_ints("padding", std::vector<int64_t>{0, 0}, "(h, w) zero padding on each side")
      .range(0, kMaxInt)
      .attr_ints("dilation", std::vector<int64_t>{1, 1}, "(h, w) spacing of the kernel taps")
      .range(1, kMaxInt)
      .attr_int("groups", int64_t{1}, "convolution groups: C and Co are both divisible by it")
      .range(1, kMaxInt)
      .attr_int("deform_groups", int64_t{1}, "offset/mask groups along C: channel c uses group c / (C/deform_groups)")
      .range(1, kMaxInt)
      .input("x", floats, "(N, C, H, W)")
      .input("offset", floats, "(N, 2*deform_groups*kh*kw, Ho, Wo): (dy, dx) per deform group and kernel tap")
      .input("mask", floats, "(N, deform_groups*kh*kw, Ho, Wo): modulation per deform group and kernel tap")
      .input("weight", floats, "(Co, C/groups, kh, kw)")
      .optional_input("bias", floats, "(Co)")
      .output("output", floats, "(N, Co, Ho, Wo)");
  for (DT f : floats) def.type_combination({f, f, f, f, f, f});
  def.shape_fn(shape_fn)
      .workspace_fn(workspace_bytes)
      .kernel(Backend::kCPU, forward_cpu)
      .differentiable_inputs({kX, kOffset, kMask, kWeight, kBias})
      .backward(Backend::kCPU, backward_cpu)
      // x and the output may be stored channels-last: graft's CUDA builder then keeps the op inside
      // its NHWC convolution regions (the CUDA kernel samples channels-last anyway).
      .channels_last_io();
  // x (3, 4, 5, 6), 3x3 kernel, padding 1, 2 deform groups, 2 conv groups: offset (3, 36, 5, 6).
  // N = 3 so that no other input's leading dim equals the batch (tools treat such dims as the batch).
  // Offsets stay 0.1 px or more away from integers, where bilinear sampling has kinks (a
  // finite-difference step then never crosses one): this example moves samples a fraction of a
  // pixel down-right (partly over the border, with padding 1), the second by 1.1 to 1.9 px up-left,
  // so that taps near the top-left leave the image entirely. Masks in [0, 1).
  {
    AttributeMap attrs;
    attrs.set("stride", std::vector<int64_t>{1, 1});
    attrs.set("padding", std::vector<int64_t>{1, 1});
    attrs.set("dilation", std::vector<int64_t>{1, 1});
    attrs.set("groups", int64_t{2});
    attrs.set("deform_groups", int64_t{2});
    def.example({std::vector<int64_t>{3, 4, 5, 6}, std::vector<int64_t>{3, 36, 5, 6},
                 std::vector<int64_t>{3, 18, 5, 6}, std::vector<int64_t>{6, 2, 3, 3}, std::vector<int64_t>{6}},
                attrs)
        .example_range(kOffset, 0.1, 0.9)
        .example_range(kMask, 0.0, 1.0);
    // A 2x3 kernel, stride (2, 1), padding (0, 1), dilation (1, 2): Ho = 3, Wo = 4; no bias.
    attrs.set("stride", std::vector<int64_t>{2, 1});
    attrs.set("padding", std::vector<int64_t>{0, 1});
    attrs.set("dilation", std::vector<int64_t>{1, 2});
    attrs.set("groups", int64_t{1});
    attrs.set("deform_groups", int64_t{1});
    def.example({std::vector<int64_t>{1, 3, 7, 6}, std::vector<int64_t>{1, 12, 3, 4}, std::vector<int64_t>{1, 6, 3, 4},
                 std::vector<int64_t>{2, 3, 2, 3}, std::nullopt},
                attrs)
        .example_range(kOffset, -1.9, -1.1)
        .example_range(kMask, 0.0, 1.0);
  }
#ifdef GRAFT_WITH_CUDA
  const std::vector<std::vector<DT>> cuda_combos = {std::vector<DT>(6, DT::kFloat32), std::vector<DT>(6, DT::kFloat16)};
  def.kernel(Backend::kCUDA, forward_cuda, cuda_combos).backward(Backend::kCUDA, backward_cuda, cuda_combos);
#endif
  return def;
}

// This folder's ops for register_graft_ops (ops/op_folder.h).
void append_modulated_deform_conv2d_ops(FolderOps& out) {
  out.defs.push_back(define_modulated_deform_conv2d());
  out.aliases.push_back({kModulatedDeformConvMmdeployDomain, kModulatedDeformConvMmdeployName, out.defs.back().identity()});
}

}  // namespace graft
