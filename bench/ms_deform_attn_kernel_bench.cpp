// Times graft's MultiScaleDeformableAttention CUDA kernels on the Deformable DETR encoder shapes
// without PyTorch (for a GPU machine where the torch extension is not built):
//   g++ -std=c++20 -O2 -I include -I . bench/ms_deform_attn_kernel_bench.cpp -L<build>/src -lgraft
//       -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lcudart -o msda_kernel_bench
// Median of 200 runs with realistic locations (each query samples a few pixels around its own),
// kept off the pixel-centre grid lines where grad_sampling_locations jumps (see off_grid).
// Flags: --uniform (locations uniform in [0, 1]), --d N (channels per head, default 32; e.g. 1, 5 or
// 257 to time the other kernel paths), --check (after timing, compare the CUDA forward and backward
// against graft's CPU kernel on the same inputs; exits 1 when an error is above the dtype tolerance).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "graft/registry.h"

using namespace graft;

namespace {

// Largest |got - want| over the largest |want| (so tiny reference values do not dominate); got is
// copied back from the device.
template <typename T>
double normalized_error(const void* device_got, const std::vector<T>& want) {
  std::vector<T> got(want.size());
  cudaMemcpy(got.data(), device_got, want.size() * sizeof(T), cudaMemcpyDeviceToHost);
  auto f = [](T v) {
    if constexpr (std::is_same_v<T, __half>) {
      return static_cast<double>(__half2float(v));
    } else {
      return static_cast<double>(v);
    }
  };
  double err = 0.0, scale = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double e = std::fabs(f(got[i]) - f(want[i]));
    err = std::isnan(e) ? INFINITY : std::max(err, e);
    scale = std::max(scale, std::fabs(f(want[i])));
  }
  return err / std::max(scale, 1e-30);
}

// A normalized location moved at least 1e-3 pixel away from the lines through the pixel centres of
// a level of `size` pixels (pixel coordinate loc * size - 0.5 integral, the zero border at -1 and size
// included). On such a line the bilinear interpolation's derivative w.r.t. the location jumps (the
// tap cell changes), so grad_sampling_locations is not defined there; near one, the float32 kernel's
// fmaf(loc, size, -0.5f) can round onto the line where the CPU reference's double product is just
// below it, and the two take different cells: a handful of O(1) differences between two correct
// kernels. With the encoder data at D = 257 (4.8M samples) 7 samples lay within 1.5e-6 pixel of a
// line and gave grad_locations 9.2e-2 (max |err| / max |ref|). fp16 locations have few enough bits
// that loc * size - 0.5 is exact in float, so both kernels take the same cell there.
float off_grid(float loc, int64_t size) {
  const double px = static_cast<double>(loc) * static_cast<double>(size) - 0.5;
  const double line = std::nearbyint(px);
  if (std::fabs(px - line) >= 1e-3) return loc;
  const double moved = line + (px >= line ? 2e-3 : -2e-3);
  return static_cast<float>((moved + 0.5) / static_cast<double>(size));
}

}  // namespace

int main(int argc, char** argv) {
  bool uniform = false, check = false;
  int64_t d = 32;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--uniform") {
      uniform = true;
    } else if (a == "--check") {
      check = true;
    } else if (a == "--d" && i + 1 < argc) {
      d = std::stoll(argv[++i]);
    } else {
      std::printf("usage: %s [--uniform] [--check] [--d channels]\n", argv[0]);
      return 2;
    }
  }
  bool all_ok = true;
  if (!register_graft_ops(OpRegistry::global()).is_ok()) return 1;
  auto def = OpRegistry::global().find("ai.onnx.contrib", "MultiScaleDeformableAttention", "1", "");
  if (!def.is_ok()) return 1;
  const std::vector<std::pair<int64_t, int64_t>> levels = {{100, 150}, {50, 75}, {25, 38}, {13, 19}};
  const int64_t n = 2, m = 8, p = 4, l = 4;
  std::vector<int64_t> shapes, starts;
  int64_t s = 0;
  std::vector<float> ref;  // (S, 2) own pixel centre per query
  for (auto [h, w] : levels) {
    shapes.push_back(h), shapes.push_back(w), starts.push_back(s);
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) ref.push_back((x + 0.5f) / w), ref.push_back((y + 0.5f) / h);
    s += h * w;
  }
  for (int64_t lq : {s, int64_t{300}}) {
    std::mt19937 rng(1);
    std::normal_distribution<float> nd(0.f, 2.f);
    std::uniform_real_distribution<float> u(0.f, 1.f);
    const int64_t nv = n * s * m * d, nloc = n * lq * m * l * p * 2, nw = nloc / 2, no = n * lq * m * d;
    std::vector<float> value(nv), loc(nloc), wts(nw), gout(no);
    for (auto& v : value) v = u(rng) * 2 - 1;
    for (auto& v : gout) v = u(rng) * 2 - 1;
    for (int64_t i = 0; i < nw; ++i) {
      const int64_t q = (i / (m * l * p)) % lq, lv = (i / p) % l;
      const float rx = lq == s ? ref[2 * q] : u(rng), ry = lq == s ? ref[2 * q + 1] : u(rng);
      loc[2 * i] = off_grid(uniform ? u(rng) : rx + nd(rng) / levels[lv].second, levels[lv].second);
      loc[2 * i + 1] = off_grid(uniform ? u(rng) : ry + nd(rng) / levels[lv].first, levels[lv].first);
      wts[i] = u(rng) / 16;
    }
    for (int half_prec = 1; half_prec >= 0; --half_prec) {
      const size_t es = half_prec ? 2 : 4;
      auto up = [&](const std::vector<float>& h) {
        void* ptr;
        cudaMalloc(&ptr, h.size() * es);
        if (half_prec) {
          std::vector<__half> t(h.size());
          for (size_t i = 0; i < h.size(); ++i) t[i] = __float2half(h[i]);
          cudaMemcpy(ptr, t.data(), h.size() * 2, cudaMemcpyHostToDevice);
        } else {
          cudaMemcpy(ptr, h.data(), h.size() * 4, cudaMemcpyHostToDevice);
        }
        return ptr;
      };
      void *dv = up(value), *dl = up(loc), *dw = up(wts), *dout, *dsh, *dst, *gv, *gl, *gw, *ws;
      void* dg = up(gout);
      cudaMalloc(&dout, no * es);
      cudaMalloc(&gv, nv * es), cudaMalloc(&gl, nloc * es), cudaMalloc(&gw, nw * es), cudaMalloc(&ws, nv * 4);
      cudaMalloc(&dsh, shapes.size() * 8), cudaMalloc(&dst, starts.size() * 8);
      cudaMemcpy(dsh, shapes.data(), shapes.size() * 8, cudaMemcpyHostToDevice);
      cudaMemcpy(dst, starts.data(), starts.size() * 8, cudaMemcpyHostToDevice);
      const DataType ft = half_prec ? DataType::kFloat16 : DataType::kFloat32;
      AttributeMap attrs;
      KernelContext ctx;
      ctx.attrs = &attrs;
      auto tv = [&](void* ptr, DataType t, std::vector<int64_t> dims) { return TensorView{ptr, t, dims, DeviceType::kCUDA}; };
      ctx.inputs = {tv(dv, ft, {n, s, m, d}), tv(dsh, DataType::kInt64, {l, 2}), tv(dst, DataType::kInt64, {l}),
                    tv(dl, ft, {n, lq, m, l, p, 2}), tv(dw, ft, {n, lq, m, l, p})};
      ctx.outputs = {tv(dout, ft, {n, lq, m * d})};
      KernelContext bctx = ctx;
      bctx.inputs.push_back(tv(dg, ft, {n, lq, m * d}));
      bctx.outputs = {tv(gv, ft, {n, s, m, d}), tv(gl, ft, {n, lq, m, l, p, 2}), tv(gw, ft, {n, lq, m, l, p})};
      bctx.workspace = ws, bctx.workspace_size = nv * 4;
      for (int bwd = 0; bwd < 2; ++bwd) {
        std::vector<float> ms;
        cudaEvent_t a, b;
        cudaEventCreate(&a), cudaEventCreate(&b);
        for (int it = 0; it < 220; ++it) {
          cudaEventRecord(a);
          Status st = bwd ? (*def)->run_backward(Backend::kCUDA, bctx) : (*def)->run(Backend::kCUDA, ctx);
          cudaEventRecord(b);
          cudaEventSynchronize(b);
          if (!st.is_ok()) { std::printf("%s\n", st.to_string().c_str()); return 1; }
          float t;
          cudaEventElapsedTime(&t, a, b);
          if (it >= 20) ms.push_back(t);
        }
        std::sort(ms.begin(), ms.end());
        const double bytes = (nv + nloc + nw + no) * es + 64.0 + (bwd ? (no + nv + nloc + nw) * es : 0);
        std::printf("Lq=%6ld D=%ld %s %s: median %.4f ms  (%.2f TB/s of inputs+outputs once)%s\n", (long)lq,
                    (long)d, half_prec ? "fp16" : "fp32", bwd ? "backward" : "forward ", ms[ms.size() / 2],
                    bytes / (ms[ms.size() / 2] * 1e-3) / 1e12, uniform ? " [uniform locations]" : "");
      }
      if (check) {
        // The CPU kernel (float64 arithmetic, rounded once) on host copies of the same inputs, against
        // the outputs of the last timed CUDA runs.
        auto host = [&](const std::vector<float>& h) {
          std::vector<unsigned char> b(h.size() * es);
          for (size_t i = 0; i < h.size(); ++i) {
            if (half_prec) {
              const __half t = __float2half(h[i]);
              std::memcpy(b.data() + i * 2, &t, 2);
            } else {
              std::memcpy(b.data() + i * 4, &h[i], 4);
            }
          }
          return b;
        };
        auto hv = host(value), hl = host(loc), hw = host(wts), hg = host(gout);
        std::vector<unsigned char> hout(no * es), hgv(nv * es), hgl(nloc * es), hgw(nw * es);
        auto hview = [&](void* ptr, DataType t, std::vector<int64_t> dims) {
          return TensorView{ptr, t, dims, DeviceType::kCPU};
        };
        KernelContext c;
        c.attrs = &attrs;
        c.inputs = {hview(hv.data(), ft, {n, s, m, d}), hview(shapes.data(), DataType::kInt64, {l, 2}),
                    hview(starts.data(), DataType::kInt64, {l}), hview(hl.data(), ft, {n, lq, m, l, p, 2}),
                    hview(hw.data(), ft, {n, lq, m, l, p})};
        c.outputs = {hview(hout.data(), ft, {n, lq, m * d})};
        KernelContext cb = c;
        cb.inputs.push_back(hview(hg.data(), ft, {n, lq, m * d}));
        cb.outputs = {hview(hgv.data(), ft, {n, s, m, d}), hview(hgl.data(), ft, {n, lq, m, l, p, 2}),
                      hview(hgw.data(), ft, {n, lq, m, l, p})};
        Status sf = (*def)->run(Backend::kCPU, c), sb = (*def)->run_backward(Backend::kCPU, cb);
        if (!sf.is_ok() || !sb.is_ok()) { std::printf("CPU reference failed\n"); return 1; }
        auto err = [&](const void* dev, const std::vector<unsigned char>& ref) {
          if (half_prec) {
            std::vector<__half> r(ref.size() / 2);
            std::memcpy(r.data(), ref.data(), ref.size());
            return normalized_error(dev, r);
          }
          std::vector<float> r(ref.size() / 4);
          std::memcpy(r.data(), ref.data(), ref.size());
          return normalized_error(dev, r);
        };
        const double e_out = err(dout, hout), e_gv = err(gv, hgv), e_gl = err(gl, hgl), e_gw = err(gw, hgw);
        // fp16: the outputs are rounded to half (2^-11 relative) and the inputs of the sums are half.
        const double tol = half_prec ? 1e-2 : 1e-4;
        const bool ok = e_out < tol && e_gv < tol && e_gl < tol && e_gw < tol;
        all_ok = all_ok && ok;
        std::printf("  check vs CPU (max |err| / max |ref|): output %.2e, grad_value %.2e, grad_locations %.2e, "
                    "grad_weights %.2e: %s\n", e_out, e_gv, e_gl, e_gw, ok ? "ok" : "TOO LARGE");
      }
      for (void* ptr : {dv, dl, dw, dout, dsh, dst, dg, gv, gl, gw, ws}) cudaFree(ptr);
    }
  }
  return cudaGetLastError() == cudaSuccess && all_ok ? 0 : 1;
}
