// MaxRoiPool (opset 1): what its definition (roi_pool.cpp: schema, inference, CPU reference) and
// its CUDA op (roi_pool.cu) share.
//
// X [N, C, H, W], rois [R, 5] of rows (batch, x1, y1, x2, y2), both of the float type T; y [R, C,
// pooled_h, pooled_w] of T. Per RoI, its corners times spatial_scale are rounded to pixels, the
// RoI spans round(y2 s) - round(y1 s) + 1 rows (at least 1) and as many columns likewise, and bin
// (i, j) is the maximum over rows [floor(i h_bin), ceil((i + 1) h_bin)) and columns likewise,
// offset by the RoI's start and clipped to the image; an empty bin is 0. The bin arithmetic is in
// float32 whatever T is, as ONNX Runtime's kernel does it, so bin edges fall where its do. A batch
// index that is not an integer in [0, N) fails the CPU run naming the RoI; the CUDA kernel cannot
// fail without a synchronization and writes NaN for that RoI instead.
#pragma once

#include <cmath>
#include <cstdint>

#include "graft/attribute.h"
#include "graft/status.h"

namespace graft {

// pooled_shape (required: two extents >= 1) and spatial_scale (default 1, finite); errors name the
// attribute.
struct RoiPoolAttrs {
  int64_t pooled_h = 1, pooled_w = 1;
  float spatial_scale = 1.0f;
};
Result<RoiPoolAttrs> roi_pool_attrs(const AttributeMap& attrs);

// One RoI's pixel window from its row (x1, y1, x2, y2 as given) and the scale, as ONNX Runtime
// rounds it: start row and column, and the extent of one bin in rows and in columns.
struct RoiWindow {
  int64_t start_h = 0, start_w = 0;
  float bin_h = 1.0f, bin_w = 1.0f;
};

// The rows [*begin, *end) of bin i of a window over an axis of `extent` pixels, clipped to it.
// Written once for both backends (host and device).
#if defined(__CUDACC__)
__host__ __device__
#endif
inline void roi_bin(int64_t i, float bin, int64_t start, int64_t extent, int64_t* begin, int64_t* end) {
  int64_t b = static_cast<int64_t>(floorf(static_cast<float>(i) * bin)) + start;
  int64_t e = static_cast<int64_t>(ceilf(static_cast<float>(i + 1) * bin)) + start;
  b = b < 0 ? 0 : b > extent ? extent : b;
  e = e < 0 ? 0 : e > extent ? extent : e;
  *begin = b;
  *end = e;
}

// Whether a RoI's batch value names an image of X: an integer in [0, n) (NaN does not).
#if defined(__CUDACC__)
__host__ __device__
#endif
inline bool roi_batch_valid(double batch, int64_t n) {
  return batch >= 0.0 && batch < static_cast<double>(n) && batch == floor(batch);
}

// A coordinate rounded to a pixel. Coordinates past +-2^24 pixels lie outside any image; clamping
// them keeps the int64 arithmetic of roi_window from overflowing (NaN becomes the lower bound).
#if defined(__CUDACC__)
__host__ __device__
#endif
inline int64_t roi_pixel(float v) {
  const float r = roundf(v);
  return static_cast<int64_t>(r >= -16777216.0f ? (r <= 16777216.0f ? r : 16777216.0f) : -16777216.0f);
}

#if defined(__CUDACC__)
__host__ __device__
#endif
inline RoiWindow roi_window(float x1, float y1, float x2, float y2, float scale, int64_t pooled_h, int64_t pooled_w) {
  RoiWindow w;
  w.start_w = roi_pixel(x1 * scale);
  w.start_h = roi_pixel(y1 * scale);
  const int64_t end_w = roi_pixel(x2 * scale), end_h = roi_pixel(y2 * scale);
  const int64_t rows = end_h - w.start_h + 1 > 1 ? end_h - w.start_h + 1 : 1;
  const int64_t cols = end_w - w.start_w + 1 > 1 ? end_w - w.start_w + 1 : 1;
  w.bin_h = static_cast<float>(rows) / static_cast<float>(pooled_h);
  w.bin_w = static_cast<float>(cols) / static_cast<float>(pooled_w);
  return w;
}

}  // namespace graft
