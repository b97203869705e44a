// A PNG writer for tests and fuzz seeds, on zlib alone (no libpng, so a test of graft's decoder does
// not share its code): 8-bit gray or RGB, unfiltered scanlines, stored (zlib level 0), so a stream's
// length depends only on the image's size and a reader can take the pixels back out of the stored
// deflate blocks without inflating.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <vector>

namespace graft::testing {

inline void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
}

inline void put_chunk(std::vector<uint8_t>& out, const char* type, const std::vector<uint8_t>& data) {
  put_u32(out, static_cast<uint32_t>(data.size()));
  std::vector<uint8_t> body(type, type + 4);
  body.insert(body.end(), data.begin(), data.end());
  out.insert(out.end(), body.begin(), body.end());
  put_u32(out, static_cast<uint32_t>(crc32(0, body.data(), static_cast<uInt>(body.size()))));
}

// An 8-bit PNG of `channels` (1 gray, 3 RGB) samples per pixel, row-major `pixels`.
inline std::vector<uint8_t> stored_png(int64_t h, int64_t w, int64_t channels, const std::vector<uint8_t>& pixels) {
  std::vector<uint8_t> raw;
  for (int64_t y = 0; y < h; ++y) {
    raw.push_back(0);  // filter type None
    raw.insert(raw.end(), pixels.begin() + y * w * channels, pixels.begin() + (y + 1) * w * channels);
  }
  std::vector<uint8_t> z(compressBound(static_cast<uLong>(raw.size())));
  uLongf zlen = static_cast<uLongf>(z.size());
  compress2(z.data(), &zlen, raw.data(), static_cast<uLong>(raw.size()), 0);
  z.resize(zlen);
  std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  std::vector<uint8_t> ihdr;
  put_u32(ihdr, static_cast<uint32_t>(w));
  put_u32(ihdr, static_cast<uint32_t>(h));
  for (uint8_t b : {uint8_t{8}, static_cast<uint8_t>(channels == 3 ? 2 : 0), uint8_t{0}, uint8_t{0}, uint8_t{0}})
    ihdr.push_back(b);
  put_chunk(png, "IHDR", ihdr);
  put_chunk(png, "IDAT", z);
  put_chunk(png, "IEND", {});
  return png;
}

}  // namespace graft::testing
