// MultiScaleDeformableAttention definitions (graft layout and TensorRT OSS layout) and CPU reference
// kernels (README.md has the math).
#include "graft/kernel_dtype.h"
#include "ops/ms_deform_attn/ms_deform_attn.h"
#include "ops/op_folder.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#ifdef GRAFT_WITH_CUDA
#include "ops/ms_deform_attn/ms_deform_attn_kernels.cuh"
#endif

namespace graft {
namespace {

constexpr const char* kOpName = "MultiScaleDeformableAttention";
constexpr const char* kTrtName = "MultiscaleDeformableAttnPlugin_TRT";

constexpr int kValue = 0, kShapes = 1, kStarts = 2, kLocs = 3, kWeights = 4, kGradOut = 5;
const char* const kInputNames[] = {"value", "spatial_shapes", "level_start_index", "sampling_locations",
                                   "attention_weights", "grad_output"};

// Float storage per dtype; the reference computes and accumulates in double whatever the dtype.
template <typename Fn>
Status visit_dtype(const char* op, DataType t, Fn&& fn) {
  return kernel::visit_float_dtype(op, t, std::forward<Fn>(fn));
}

struct Sizes {
  int64_t n = 0, s = 0, m = 0, d = 0, lq = 0, l = 0, p = 0;
};

// Checks a kernel call: counts, ranks, matching sizes and dtypes, device. Forward: 5 inputs -> 1
// output; backward: 5 inputs + grad_output -> grad_value, grad_sampling_locations,
// grad_attention_weights. The output may be (N,Lq,M*D) or (N,Lq,M,D): the same memory.
Result<Sizes> sizes_of(const char* op, const KernelContext& ctx, bool backward, DeviceType device) {
  const size_t n_in = backward ? 6 : 5, n_out = backward ? 3 : 1;
  GRAFT_RETURN_IF_ERROR(check_kernel_io(ctx, op, n_in, n_out, backward ? "backward kernel" : "kernel"));
  const TensorView &v = ctx.inputs[kValue], &sh = ctx.inputs[kShapes], &st = ctx.inputs[kStarts],
                   &lc = ctx.inputs[kLocs], &w = ctx.inputs[kWeights];
  auto bad = [&](int i, auto&&... parts) {
    return error(StatusCode::kInvalidArgument, op, ": input '", kInputNames[i], "' ", parts...);
  };
  if (v.rank() != 4) return bad(kValue, "must have rank 4 (N, S, M, D), got rank ", v.rank());
  if (sh.rank() != 2 || sh.dims[1] != 2) return bad(kShapes, "must have shape (L, 2)");
  Sizes z;
  z.n = v.dims[0], z.s = v.dims[1], z.m = v.dims[2], z.d = v.dims[3], z.l = sh.dims[0];
  if (st.rank() != 1 || st.dims[0] != z.l) return bad(kStarts, "must have shape (L) with L = ", z.l);
  if (lc.rank() != 6) return bad(kLocs, "must have rank 6 (N, Lq, M, L, P, 2), got rank ", lc.rank());
  z.lq = lc.dims[1], z.p = lc.dims[4];
  if (lc.dims != std::vector<int64_t>{z.n, z.lq, z.m, z.l, z.p, 2})
    return bad(kLocs, "must have shape (N, Lq, M, L, P, 2) with N, M from 'value' and L from 'spatial_shapes'");
  if (w.dims != std::vector<int64_t>{z.n, z.lq, z.m, z.l, z.p})
    return bad(kWeights, "must have shape (N, Lq, M, L, P) matching 'sampling_locations'");
  const DataType ft = v.dtype, it = sh.dtype;
  if (it != DataType::kInt64 && it != DataType::kInt32) return bad(kShapes, "must be int64 or int32");
  if (st.dtype != it) return bad(kStarts, "must have the dtype of 'spatial_shapes' (", dtype_name(it), ")");
  if (lc.dtype != ft) return bad(kLocs, "must have the dtype of 'value' (", dtype_name(ft), ")");
  if (w.dtype != ft) return bad(kWeights, "must have the dtype of 'value' (", dtype_name(ft), ")");
  std::vector<const TensorView*> all = {&v, &sh, &st, &lc, &w};
  if (backward) {
    const TensorView& g = ctx.inputs[kGradOut];
    if (g.dtype != ft || g.numel() != z.n * z.lq * z.m * z.d || g.rank() < 2 || g.dims[0] != z.n || g.dims[1] != z.lq)
      return bad(kGradOut, "must be ", dtype_name(ft), " of shape (N, Lq, M*D) or (N, Lq, M, D)");
    all.push_back(&g);
  }
  const std::vector<std::vector<int64_t>> out_dims =
      backward ? std::vector<std::vector<int64_t>>{v.dims, lc.dims, w.dims} : std::vector<std::vector<int64_t>>{};
  for (size_t o = 0; o < n_out; ++o) {
    const TensorView& t = ctx.outputs[o];
    const bool shape_ok = backward ? t.dims == out_dims[o]
                                   : (t.numel() == z.n * z.lq * z.m * z.d && t.rank() >= 2 && t.dims[0] == z.n &&
                                      t.dims[1] == z.lq);
    if (t.dtype != ft || !shape_ok)
      return error(StatusCode::kInvalidArgument, op, ": output ", o, " must be ", dtype_name(ft), " of shape ",
                   backward ? "the matching input's" : "(N, Lq, M*D) or (N, Lq, M, D)");
    all.push_back(&t);
  }
  for (const TensorView* t : all) {
    if (t->numel() > 0 && t->data == nullptr)
      return error(StatusCode::kInvalidArgument, op, ": a tensor argument has no data");
    if (t->device != device)
      return error(StatusCode::kInvalidArgument, op, ": a tensor argument is in ", device_name(t->device),
                   " memory, the kernel needs ", device_name(device));
  }
  return z;
}

// Reads the host index inputs and checks that every level lies inside value's S rows.
struct Level {
  int64_t h, w, start;
};
Result<std::vector<Level>> levels_of(const char* op, const KernelContext& ctx, const Sizes& z) {
  const TensorView &sh = ctx.inputs[kShapes], &st = ctx.inputs[kStarts];
  auto idx = [](const TensorView& t, int64_t i) -> int64_t {
    return t.dtype == DataType::kInt64 ? t.as<int64_t>()[i] : static_cast<int64_t>(t.as<int32_t>()[i]);
  };
  std::vector<Level> out;
  for (int64_t l = 0; l < z.l; ++l) {
    Level lv{idx(sh, 2 * l), idx(sh, 2 * l + 1), idx(st, l)};
    if (lv.h < 0 || lv.w < 0 || lv.h > (1 << 24) || lv.w > (1 << 24))
      return error(StatusCode::kInvalidArgument, op, ": input 'spatial_shapes' level ", l, " has (H, W) = (", lv.h,
                   ", ", lv.w, "); each must be in [0, 2^24]");
    if (lv.start < 0 || lv.start + lv.h * lv.w > z.s)
      return error(StatusCode::kInvalidArgument, op, ": input 'level_start_index' level ", l, " starts at row ",
                   lv.start, " and has ", lv.h * lv.w, " rows, beyond the ", z.s,
                   " rows of 'value' (sum of H*W over levels must fit in S)");
    out.push_back(lv);
  }
  return out;
}

// A sample in pixel coordinates (align_corners=False: pixel centres at i + 0.5). False when no
// corner can be inside, which also rejects NaN; the CUDA kernel uses the same test.
struct Tap {
  int64_t h0, w0;
  double lh, lw;
};
bool locate(double x, double y, int64_t height, int64_t width, Tap& t) {
  const double hf = y * static_cast<double>(height) - 0.5, wf = x * static_cast<double>(width) - 0.5;
  if (!(hf > -1.0 && wf > -1.0 && hf < static_cast<double>(height) && wf < static_cast<double>(width))) return false;
  t.h0 = static_cast<int64_t>(std::floor(hf));
  t.w0 = static_cast<int64_t>(std::floor(wf));
  t.lh = hf - std::floor(hf);
  t.lw = wf - std::floor(wf);
  return true;
}

// Value row of corner k (0: (h0,w0), 1: (h0,w0+1), 2: (h0+1,w0), 3: (h0+1,w0+1)) or -1 outside, and
// its bilinear weight.
int64_t corner_row(const Tap& t, const Level& lv, int k) {
  const int64_t h = t.h0 + (k >> 1), w = t.w0 + (k & 1);
  return (h >= 0 && w >= 0 && h < lv.h && w < lv.w) ? lv.start + h * lv.w + w : -1;
}
double corner_weight(const Tap& t, int k) {
  return ((k >> 1) ? t.lh : 1.0 - t.lh) * ((k & 1) ? t.lw : 1.0 - t.lw);
}

Status forward_cpu_impl(const char* op, const KernelContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(Sizes z, sizes_of(op, ctx, false, DeviceType::kCPU));
  GRAFT_ASSIGN_OR_RETURN(std::vector<Level> levels, levels_of(op, ctx, z));
  const void *value = ctx.inputs[kValue].data, *locs = ctx.inputs[kLocs].data, *wts = ctx.inputs[kWeights].data;
  void* out = ctx.outputs[0].data;
  return visit_dtype(op, ctx.inputs[kValue].dtype, [&](auto tr) {
    using Tr = decltype(tr);
    std::vector<double> acc(static_cast<size_t>(z.d));
    for (int64_t n = 0; n < z.n; ++n)
      for (int64_t q = 0; q < z.lq; ++q)
        for (int64_t m = 0; m < z.m; ++m) {
          std::fill(acc.begin(), acc.end(), 0.0);
          const int64_t nqm = (n * z.lq + q) * z.m + m;
          for (int64_t l = 0; l < z.l; ++l)
            for (int64_t p = 0; p < z.p; ++p) {
              const int64_t si = (nqm * z.l + l) * z.p + p;
              Tap t;
              if (!locate(Tr::load(locs, 2 * si), Tr::load(locs, 2 * si + 1), levels[l].h, levels[l].w, t)) continue;
              const double a = Tr::load(wts, si);
              for (int k = 0; k < 4; ++k) {
                const int64_t row = corner_row(t, levels[l], k);
                if (row < 0) continue;
                const double cw = a * corner_weight(t, k);
                const int64_t base = ((n * z.s + row) * z.m + m) * z.d;
                for (int64_t c = 0; c < z.d; ++c) acc[c] += cw * Tr::load(value, base + c);
              }
            }
          for (int64_t c = 0; c < z.d; ++c) Tr::store(out, nqm * z.d + c, acc[c]);
        }
    return Status::ok();
  });
}

Status backward_cpu_impl(const char* op, const KernelContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(Sizes z, sizes_of(op, ctx, true, DeviceType::kCPU));
  GRAFT_ASSIGN_OR_RETURN(std::vector<Level> levels, levels_of(op, ctx, z));
  const void *value = ctx.inputs[kValue].data, *locs = ctx.inputs[kLocs].data, *wts = ctx.inputs[kWeights].data,
             *gout = ctx.inputs[kGradOut].data;
  void *gvalue = ctx.outputs[0].data, *glocs = ctx.outputs[1].data, *gwts = ctx.outputs[2].data;
  return visit_dtype(op, ctx.inputs[kValue].dtype, [&](auto tr) {
    using Tr = decltype(tr);
    std::vector<double> gv(static_cast<size_t>(z.n * z.s * z.m * z.d), 0.0);
    for (int64_t n = 0; n < z.n; ++n)
      for (int64_t q = 0; q < z.lq; ++q)
        for (int64_t m = 0; m < z.m; ++m) {
          const int64_t nqm = (n * z.lq + q) * z.m + m;
          for (int64_t l = 0; l < z.l; ++l)
            for (int64_t p = 0; p < z.p; ++p) {
              const int64_t si = (nqm * z.l + l) * z.p + p;
              double g_w = 0.0, g_x = 0.0, g_y = 0.0;
              Tap t;
              const double a = Tr::load(wts, si);
              if (locate(Tr::load(locs, 2 * si), Tr::load(locs, 2 * si + 1), levels[l].h, levels[l].w, t)) {
                int64_t base[4];
                for (int k = 0; k < 4; ++k) {
                  const int64_t row = corner_row(t, levels[l], k);
                  base[k] = row < 0 ? -1 : ((n * z.s + row) * z.m + m) * z.d;
                }
                for (int64_t c = 0; c < z.d; ++c) {
                  const double go = Tr::load(gout, nqm * z.d + c);
                  double v[4];
                  for (int k = 0; k < 4; ++k) {
                    v[k] = base[k] < 0 ? 0.0 : Tr::load(value, base[k] + c);
                    if (base[k] >= 0) gv[base[k] + c] += a * corner_weight(t, k) * go;
                  }
                  double val = 0.0;
                  for (int k = 0; k < 4; ++k) val += corner_weight(t, k) * v[k];
                  // Derivatives of the bilinear value with respect to the pixel coordinates.
                  const double dw = (1.0 - t.lh) * (v[1] - v[0]) + t.lh * (v[3] - v[2]);
                  const double dh = (1.0 - t.lw) * (v[2] - v[0]) + t.lw * (v[3] - v[1]);
                  g_w += go * val;
                  g_x += go * dw;
                  g_y += go * dh;
                }
              }
              Tr::store(gwts, si, g_w);
              Tr::store(glocs, 2 * si, g_x * a * static_cast<double>(levels[l].w));
              Tr::store(glocs, 2 * si + 1, g_y * a * static_cast<double>(levels[l].h));
            }
        }
    for (size_t i = 0; i < gv.size(); ++i) Tr::store(gvalue, static_cast<int64_t>(i), gv[i]);
    return Status::ok();
  });
}

#ifdef GRAFT_WITH_CUDA
Status cuda_status(const char* op, cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Status::ok();
  return error(StatusCode::kRuntimeError, op, ": ", what, " failed: ", cudaGetErrorString(e));
}

cuda::MsdaSizes cuda_sizes(const Sizes& z) { return cuda::MsdaSizes{z.n, z.s, z.m, z.d, z.lq, z.l, z.p}; }

template <typename T, typename I>
cudaError_t forward_cuda_typed(const KernelContext& ctx, const Sizes& z) {
  const auto& in = ctx.inputs;
  return cuda::ms_deform_attn_forward<T, I>(in[kValue].as<T>(), in[kShapes].as<I>(), in[kStarts].as<I>(),
                                            in[kLocs].as<T>(), in[kWeights].as<T>(), ctx.outputs[0].as<T>(),
                                            cuda_sizes(z), static_cast<cudaStream_t>(ctx.stream));
}

template <typename T, typename I>
cudaError_t backward_cuda_typed(const KernelContext& ctx, const Sizes& z) {
  const auto& in = ctx.inputs;
  const auto& out = ctx.outputs;
  return cuda::ms_deform_attn_backward<T, I>(in[kValue].as<T>(), in[kShapes].as<I>(), in[kStarts].as<I>(),
                                             in[kLocs].as<T>(), in[kWeights].as<T>(), in[kGradOut].as<T>(),
                                             out[0].as<T>(), out[1].as<T>(), out[2].as<T>(), cuda_sizes(z),
                                             ctx.workspace, ctx.workspace_size, static_cast<cudaStream_t>(ctx.stream));
}

template <template <typename, typename> class Call>
Status dispatch_cuda(const char* op, const KernelContext& ctx, const Sizes& z, const char* what) {
  const bool i64 = ctx.inputs[kShapes].dtype == DataType::kInt64;
  switch (ctx.inputs[kValue].dtype) {
    case DataType::kFloat32:
      return cuda_status(op, i64 ? Call<float, int64_t>::run(ctx, z) : Call<float, int32_t>::run(ctx, z), what);
    case DataType::kFloat16:
      return cuda_status(op, i64 ? Call<__half, int64_t>::run(ctx, z) : Call<__half, int32_t>::run(ctx, z), what);
    default:
      return error(StatusCode::kUnsupported, op, ": no CUDA kernel for dtype ", dtype_name(ctx.inputs[kValue].dtype));
  }
}
template <typename T, typename I>
struct ForwardCall {
  static cudaError_t run(const KernelContext& c, const Sizes& z) { return forward_cuda_typed<T, I>(c, z); }
};
template <typename T, typename I>
struct BackwardCall {
  static cudaError_t run(const KernelContext& c, const Sizes& z) { return backward_cuda_typed<T, I>(c, z); }
};

Status forward_cuda_impl(const char* op, const KernelContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(Sizes z, sizes_of(op, ctx, false, DeviceType::kCUDA));
  return dispatch_cuda<ForwardCall>(op, ctx, z, "forward kernel launch");
}
Status backward_cuda_impl(const char* op, const KernelContext& ctx) {
  GRAFT_ASSIGN_OR_RETURN(Sizes z, sizes_of(op, ctx, true, DeviceType::kCUDA));
  return dispatch_cuda<BackwardCall>(op, ctx, z, "backward kernel launch");
}
#endif  // GRAFT_WITH_CUDA

// Shape function shared by both layouts; `trt_output` picks (N, Lq, M, D) over (N, Lq, M*D).
Status shape_fn_impl(const char* op, ShapeContext& ctx, bool trt_output) {
  auto bad = [&](int i, auto&&... parts) {
    return error(StatusCode::kInvalidModel, op, ": input '", kInputNames[i], "' ", parts...);
  };
  const int ranks[] = {4, 2, 1, 6, 5};
  const char* forms[] = {"(N, S, M, D)", "(L, 2)", "(L)", "(N, Lq, M, L, P, 2)", "(N, Lq, M, L, P)"};
  for (int i = 0; i < 5; ++i)
    if (ctx.input_rank(i) != ranks[i])
      return bad(i, "must have rank ", ranks[i], " ", forms[i], ", got rank ", ctx.input_rank(i));
  // Each pair must agree when both sizes are known; symbolic sizes are checked by the kernels.
  auto same = [&](int i, int di, int j, int dj, const char* what) -> Status {
    const auto a = ctx.input_dim(i, di).constant_value(), b = ctx.input_dim(j, dj).constant_value();
    if (a && b && *a != *b)
      return bad(j, "has ", what, " = ", *b, " at dimension ", dj, " but input '", kInputNames[i], "' has ", *a);
    return Status::ok();
  };
  if (auto two = ctx.input_dim(kShapes, 1).constant_value(); two && *two != 2)
    return bad(kShapes, "must have shape (L, 2) of (H, W) pairs, got ", *two, " columns");
  if (auto two = ctx.input_dim(kLocs, 5).constant_value(); two && *two != 2)
    return bad(kLocs, "must end in a dimension of 2 (x, y), got ", *two);
  GRAFT_RETURN_IF_ERROR(same(kShapes, 0, kStarts, 0, "L (levels)"));
  GRAFT_RETURN_IF_ERROR(same(kValue, 0, kLocs, 0, "N (batch)"));
  GRAFT_RETURN_IF_ERROR(same(kValue, 2, kLocs, 2, "M (heads)"));
  GRAFT_RETURN_IF_ERROR(same(kShapes, 0, kLocs, 3, "L (levels)"));
  for (int d = 0; d < 5; ++d) {
    const char* what[] = {"N (batch)", "Lq (queries)", "M (heads)", "L (levels)", "P (points)"};
    GRAFT_RETURN_IF_ERROR(same(kLocs, d, kWeights, d, what[d]));
  }
  const SymDim n = ctx.input_dim(kValue, 0), m = ctx.input_dim(kValue, 2), d = ctx.input_dim(kValue, 3);
  const SymDim lq = ctx.input_dim(kLocs, 1);
  if (trt_output)
    ctx.set_output(0, {n, lq, m, d});
  else
    ctx.set_output(0, {n, lq, m * d});
  return Status::ok();
}

// The CUDA backward of half keeps grad_value in float (N*S*M*D floats). A workspace function cannot
// tell forward from backward, so the size is reported for both; float needs none.
size_t workspace_bytes(const std::vector<ConcreteDesc>& inputs, const std::vector<ConcreteDesc>&,
                       const AttributeMap&) {
  if (inputs.empty() || inputs[0].dtype != DataType::kFloat16 || inputs[0].dims.size() != 4) return 0;
  int64_t count = 1;
  for (int64_t x : inputs[0].dims) count *= x;
  return count > 0 ? static_cast<size_t>(count) * sizeof(float) : 0;
}

// Shared between the two definitions: inputs, combinations, kernels for the given index dtypes.
void define_common(OpDef& def, const char* op, const std::vector<DataType>& index_types, bool trt_output) {
  using DT = DataType;
  const std::vector<DT> floats = {DT::kFloat32, DT::kFloat16, DT::kFloat64};
  def.input("value", floats, "(N, S, M, D): S = sum over levels of H*W, M heads of D channels")
      .input("spatial_shapes", index_types, "(L, 2): (H, W) of each level")
      .input("level_start_index", index_types, "(L): first row of each level in S")
      .input("sampling_locations", floats, "(N, Lq, M, L, P, 2): (x, y), [0, 1] covers the level")
      .input("attention_weights", floats, "(N, Lq, M, L, P)")
      .output("output", floats, trt_output ? "(N, Lq, M, D)" : "(N, Lq, M*D)");
  for (DT f : floats)
    for (DT i : index_types) def.type_combination({f, i, i, f, f, f});
  def.shape_fn([op, trt_output](ShapeContext& c) { return shape_fn_impl(op, c, trt_output); })
      .workspace_fn(workspace_bytes)
      .kernel(Backend::kCPU, [op](const KernelContext& c) { return forward_cpu_impl(op, c); })
      .differentiable_inputs({kValue, kLocs, kWeights})
      .backward(Backend::kCPU, [op](const KernelContext& c) { return backward_cpu_impl(op, c); });
  // Two levels (3x4, 2x2) and S = 16, with index inputs consistent with S; N = 3 so that no other
  // input's leading dim equals the batch (tools treat such dims as the batch). Locations and weights
  // in [0, 1) (a location's bilinear kinks are a set of measure zero that random draws avoid).
  {
    DT it = index_types.front();
    std::map<int, Tensor> values = {{1, Tensor::from_doubles(it, {2, 2}, {3, 4, 2, 2})},
                                    {2, Tensor::from_doubles(it, {2}, {0, 12})}};
    def.example({std::vector<int64_t>{3, 16, 2, 4}, std::vector<int64_t>{2, 2}, std::vector<int64_t>{2},
                 std::vector<int64_t>{3, 5, 2, 2, 3, 2}, std::vector<int64_t>{3, 5, 2, 2, 3}},
                {}, std::move(values))
        .example_range(kLocs, 0.0, 1.0)
        .example_range(kWeights, 0.0, 1.0);
  }
#ifdef GRAFT_WITH_CUDA
  std::vector<std::vector<DT>> cuda_combos;
  for (DT f : {DT::kFloat32, DT::kFloat16})
    for (DT i : index_types) cuda_combos.push_back({f, i, i, f, f, f});
  def.kernel(Backend::kCUDA, [op](const KernelContext& c) { return forward_cuda_impl(op, c); }, cuda_combos)
      .backward(Backend::kCUDA, [op](const KernelContext& c) { return backward_cuda_impl(op, c); }, cuda_combos);
#endif
}

}  // namespace

OpDef define_ms_deform_attn() {
  OpDef def(kOpName);
  def.domain("ai.onnx.contrib")
      .version("1")
      .plugin_namespace("")
      .doc("Multi-scale deformable attention (Deformable DETR, arXiv 2010.04159; mmcv semantics): per query and "
           "head, the attention-weighted sum of bilinear samples (zeros outside) of every level's value map at "
           "the given locations. Equals grid_sample(value, 2*loc-1, bilinear, zeros, align_corners=False) "
           "weighted and summed over levels and points.")
      .attr_int("im2col_step", int64_t{64}, "mmcv's batching step; accepted for compatibility and ignored")
      .range(1, std::numeric_limits<int32_t>::max());
  define_common(def, kOpName, {DataType::kInt64, DataType::kInt32}, false);
  return def;
}

OpDef define_ms_deform_attn_trt() {
  OpDef def(kTrtName);
  def.domain("ai.onnx.contrib")
      .version("1")
      .plugin_namespace("")
      .doc("TensorRT OSS's MultiscaleDeformableAttnPlugin_TRT layout of multi-scale deformable attention: int32 "
           "spatial_shapes and level_start_index, output (N, Lq, M, D). Same math as "
           "ai.onnx.contrib::MultiScaleDeformableAttention.");
  define_common(def, kTrtName, {DataType::kInt32}, true);
  return def;
}

// This folder's ops for register_graft_ops (ops/op_folder.h).
void append_ms_deform_attn_ops(FolderOps& out) {
  out.defs.push_back(define_ms_deform_attn());
  out.aliases.push_back({kMsDeformAttnMmdeployDomain, kMsDeformAttnMmdeployName, out.defs.back().identity()});
  out.defs.push_back(define_ms_deform_attn_trt());
}

}  // namespace graft
