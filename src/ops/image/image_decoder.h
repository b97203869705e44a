// What ImageDecoder's decoders share (image_decoder.cpp: JPEG, PNG, BMP, PNM and the op;
// library_decoders.cpp: TIFF, WebP and JPEG 2000 through their Debian libraries).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "graft/status.h"

namespace graft::image {

// Decoded pixels before conversion: rows of `channels` (1 gray or 3 RGB) bytes per pixel.
struct Pixels {
  int64_t height = 0, width = 0, channels = 0;
  std::vector<uint8_t> data;
};

// The most pixels an image may have: Pillow's own limit (its DecompressionBombError, twice its
// warning's 89,478,485), so a stream whose header claims a huge image fails before anything that
// size is allocated.
inline constexpr int64_t kMaxPixels = 178956970;

// kInvalidArgument naming the format when height x width is empty or over kMaxPixels.
Status check_size(int64_t height, int64_t width, const char* format);

// The three formats graft decodes through libtiff, libwebp and libopenjp2 (Debian's libtiff-dev,
// libwebp-dev, libopenjp2-7-dev): as Pillow, which ONNX's reference decodes with, gives them (alpha
// dropped, gray kept as one channel). A build without one of the libraries refuses its format,
// naming the package.
Result<Pixels> decode_tiff(const uint8_t* bytes, size_t size);
Result<Pixels> decode_webp(const uint8_t* bytes, size_t size);
Result<Pixels> decode_jpeg2000(const uint8_t* bytes, size_t size);

}  // namespace graft::image
