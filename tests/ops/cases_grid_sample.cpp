// Cases for mmdeploy::grid_sampler (input (N, C, H, W), grid (N, H_out, W_out, 2); PyTorch's integer
// interpolation_mode 0 bilinear / 1 nearest / 2 bicubic, padding_mode 0 zeros / 1 border /
// 2 reflection, align_corners). The reference follows PyTorch's grid_sample step by step: padding of
// the source coordinate for bilinear and nearest (reflection then clipped to the pixel range), per-tap
// padding for bicubic, and zero for a tap outside the map.
#include <algorithm>
#include <cmath>

#include "case_util.h"
#include "harness.h"

namespace graft::optest {

namespace {

AttributeMap gs_attrs(int64_t mode, int64_t pad, int64_t align) {
  AttributeMap a;
  a.set("interpolation_mode", mode);
  a.set("padding_mode", pad);
  a.set("align_corners", align);
  return a;
}

// Moves each grid coordinate whose pixel coordinate lies within 1e-3 of an integer or a half-integer
// (where a bilinear cell, a nearest pixel, a clamp or a mirror changes) off it, so that the finite
// differences of the gradient check do not straddle a kink, and the case's dtype and the float64
// reference pick the same taps.
std::function<void(std::vector<Tensor>&)> off_the_kinks(const std::vector<int64_t>& x_dims, bool align) {
  return [h = x_dims[2], w = x_dims[3], align](std::vector<Tensor>& ins) {
    Tensor& grid = ins[1];
    for (int64_t i = 0; i < grid.numel(); ++i) {
      const double size = static_cast<double>(i % 2 == 0 ? w : h);  // (x, y) pairs
      for (int attempt = 0; attempt < 8; ++attempt) {
        const double g = grid.get(i), u = align ? (g + 1.0) / 2.0 * (size - 1.0) : ((g + 1.0) * size - 1.0) / 2.0;
        if (std::fabs(2.0 * u - std::round(2.0 * u)) >= 2e-3) break;
        grid.set(i, g + 1e-2 * (attempt + 1));
      }
    }
  };
}

OpCase gs_case(std::string label, std::vector<int64_t> x_dims, int64_t ho, int64_t wo, double reach, AttributeMap a) {
  OpCase c;
  c.label = std::move(label);
  c.inputs = {{x_dims, 0.25, 2.0}, {{x_dims[0], ho, wo, 2}, -reach, reach}};
  c.output_dims = {{x_dims[0], x_dims[1], ho, wo}};
  c.adjust_inputs = off_the_kinks(x_dims, a.get_int("align_corners", 0).value() != 0);
  c.attrs = std::move(a);
  c.fd_step = 1e-6;  // piecewise smooth: a small step stays inside one cell
  return c;
}

}  // namespace

OpCaseTable grid_sampler_cases() {
  OpCaseTable t;
  t.domain = "mmdeploy";
  t.name = "grid_sampler";
  const char* modes[] = {"bilinear", "nearest", "bicubic"};
  const char* pads[] = {"zeros", "border", "reflection"};
  for (int64_t m = 0; m < 3; ++m)
    for (int64_t p = 0; p < 3; ++p)
      for (int64_t ac = 0; ac < 2; ++ac)
        t.cases.push_back(gs_case(std::string(modes[m]) + "_" + pads[p] + (ac ? "_align" : "_noalign"), {2, 3, 5, 7},
                                  4, 6, 2.6, gs_attrs(m, p, ac)));
  // A one-pixel-wide map (reflection over an empty range) and a larger, mostly inside, grid.
  t.cases.push_back(gs_case("one_column_reflection_align", {1, 2, 4, 1}, 3, 3, 1.5, gs_attrs(0, 2, 1)));
  t.cases.push_back(gs_case("bicubic_border_large", {2, 4, 12, 16}, 9, 11, 1.1, gs_attrs(2, 1, 0)));

  auto bad = [&](std::string label, AttributeMap a, std::string attr) {
    t.bad_attributes.push_back({std::move(label), std::move(a), {}, std::move(attr)});
  };
  bad("mode_3", gs_attrs(3, 0, 0), "interpolation_mode");
  bad("padding_negative", gs_attrs(0, -1, 0), "padding_mode");
  bad("align_2", gs_attrs(0, 0, 2), "align_corners");

  t.reference = [](const std::vector<std::vector<double>>& in, const std::vector<std::vector<int64_t>>& dims,
                   const AttributeMap& attrs) {
    const int64_t mode = attrs.get_int("interpolation_mode", 0).value();
    const int64_t pad = attrs.get_int("padding_mode", 0).value();
    const bool ac = attrs.get_int("align_corners", 0).value() != 0;
    const int64_t N = dims[0][0], C = dims[0][1], H = dims[0][2], W = dims[0][3];
    const int64_t Ho = dims[1][1], Wo = dims[1][2];
    const std::vector<double>&x = in[0], &g = in[1];
    auto unnormalize = [&](double v, int64_t s) { return ac ? (v + 1) / 2 * (s - 1) : ((v + 1) * s - 1) / 2; };
    // PyTorch's compute_coordinates: border clips, reflection mirrors and then clips.
    auto source = [&](double v, int64_t s) {
      if (pad == 1) return std::clamp(v, 0.0, double(s - 1));
      if (pad == 2) {
        v = ac ? mirror(v, 0.0, double(s - 1)) : mirror(v, -0.5, s - 0.5);
        return std::clamp(v, 0.0, double(s - 1));
      }
      return v;
    };
    auto pixel = [&](int64_t plane, int64_t yy, int64_t xx) {
      return (yy >= 0 && yy < H && xx >= 0 && xx < W) ? x[size_t((plane * H + yy) * W + xx)] : 0.0;
    };
    auto cubic = [](double d) {
      const double A = -0.75;
      d = std::fabs(d);
      return d <= 1 ? ((A + 2) * d - (A + 3)) * d * d + 1 : d < 2 ? ((A * d - 5 * A) * d + 8 * A) * d - 4 * A : 0.0;
    };
    std::vector<double> y(size_t(N * C * Ho * Wo));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < Ho; ++i)
        for (int64_t j = 0; j < Wo; ++j) {
          const double gx = g[size_t(((n * Ho + i) * Wo + j) * 2)], gy = g[size_t(((n * Ho + i) * Wo + j) * 2 + 1)];
          for (int64_t c = 0; c < C; ++c) {
            const int64_t plane = n * C + c;
            double v = 0;
            if (mode == 0) {
              const double sx = source(unnormalize(gx, W), W), sy = source(unnormalize(gy, H), H);
              const double fx = std::floor(sx), fy = std::floor(sy), tx = sx - fx, ty = sy - fy;
              const int64_t x0 = int64_t(fx), y0 = int64_t(fy);
              v = (1 - ty) * ((1 - tx) * pixel(plane, y0, x0) + tx * pixel(plane, y0, x0 + 1)) +
                  ty * ((1 - tx) * pixel(plane, y0 + 1, x0) + tx * pixel(plane, y0 + 1, x0 + 1));
            } else if (mode == 1) {
              const double sx = std::nearbyint(source(unnormalize(gx, W), W));
              const double sy = std::nearbyint(source(unnormalize(gy, H), H));
              v = pixel(plane, int64_t(sy), int64_t(sx));
            } else {
              const double ux = unnormalize(gx, W), uy = unnormalize(gy, H);
              const double fx = std::floor(ux), fy = std::floor(uy);
              for (int a = -1; a <= 2; ++a)
                for (int b = -1; b <= 2; ++b) {
                  // Each tap goes through the padding on its own, as PyTorch's get_value_bounded does.
                  const double ty = source(fy + a, H), tx = source(fx + b, W);
                  v += cubic(uy - (fy + a)) * cubic(ux - (fx + b)) * pixel(plane, int64_t(ty), int64_t(tx));
                }
            }
            y[size_t(((n * C + c) * Ho + i) * Wo + j)] = v;
          }
        }
    return std::vector<std::vector<double>>{y};
  };
  return t;
}

std::vector<OpCaseTable> grid_sample_case_tables() { return {grid_sampler_cases()}; }

}  // namespace graft::optest
