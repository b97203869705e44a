// CUDA RoiAlign (float32) and GridSample (float32/float16, 4-D and 5-D) against the CPU reference
// kernels, every mode/padding/alignment combination, fresh random data, poisoned outputs.
#include <string>

#include "cuda_kernel_harness.h"

namespace graft::testing {
namespace {

TEST(CudaSampling, RoiAlignEveryModeAgainstTheCpuReference) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  // Rois inside, partly outside, wholly outside, inverted and large; batch indices valid.
  const std::vector<double> rois = {1.0, 1.5, 6.0, 5.0, -3.0, -2.0, 4.0, 3.0, 5.0, 3.0, 14.0, 11.0,
                                    20.0, 20.0, 30.0, 25.0, 6.0, 5.0, 2.0, 1.0, 0.0, 0.0, 17.0, 13.0};
  for (const char* mode : {"avg", "max"})
    for (const char* ctm : {"half_pixel", "output_half_pixel"})
      for (int64_t ratio : {0, 2}) {
        KernelCase c{"RoiAlign",
                     {rnd(rng, {2, 3, 7, 9}, 0.25, 2.0), Tensor::from_doubles(DataType::kFloat32, {6, 4}, rois),
                      Tensor::from_doubles(DataType::kInt64, {6}, {1, 0, 1, 0, 1, 0})}};
        c.opset = 16;
        c.attrs.set("mode", std::string(mode));
        c.attrs.set("coordinate_transformation_mode", std::string(ctm));
        c.attrs.set("output_height", int64_t{3});
        c.attrs.set("output_width", int64_t{2});
        c.attrs.set("sampling_ratio", ratio);
        c.attrs.set("spatial_scale", 0.75f);
        c.label = std::string(mode) + " " + ctm + " ratio " + std::to_string(ratio);
        run_kernel_case(c, DataType::kFloat32, seed);
      }
}

TEST(CudaSampling, GridSampleEveryModeAgainstTheCpuReference) {
  GRAFT_REQUIRE_GPU();
  const uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (bool volumetric : {false, true})
    for (const char* mode : {"linear", "nearest", "cubic"})
      for (const char* pad : {"zeros", "border", "reflection"})
        for (int64_t align : {0, 1}) {
          const std::vector<int64_t> xd = volumetric ? std::vector<int64_t>{2, 3, 4, 5, 6} : std::vector<int64_t>{2, 3, 5, 6};
          const std::vector<int64_t> gd = volumetric ? std::vector<int64_t>{2, 3, 4, 2, 3} : std::vector<int64_t>{2, 7, 9, 2};
          KernelCase c{"GridSample", {rnd(rng, xd, 0.25, 2.0), rnd(rng, gd, -1.6, 1.6)}};
          c.opset = 20;
          c.attrs.set("mode", std::string(mode));
          c.attrs.set("padding_mode", std::string(pad));
          c.attrs.set("align_corners", align);
          c.tol32 = 1e-5;
          c.tol16 = 1e-2;
          c.label = std::string(volumetric ? "5-D " : "4-D ") + mode + " " + pad + (align ? " align_corners" : "");
          run_float_dtypes(c, seed);
        }
}

}  // namespace
}  // namespace graft::testing
