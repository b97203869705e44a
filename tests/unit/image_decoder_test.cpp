// ImageDecoder's JPEG path (lossy, so checked against the pixels it was encoded from, within the
// error of a quality-100, unsubsampled JPEG) and its refusals: streams that are truncated, in a
// format graft does not decode, or whose header claims more pixels than graft decodes. (PNG, exact,
// is in the op harness, tests/ops/cases_image_decoder.cpp.)
#include <gtest/gtest.h>

#include <cstdio>  // before jpeglib.h, which uses FILE and size_t without including their headers
#include <algorithm>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <jpeglib.h>
#include <zlib.h>

#include "op_test_util.h"

namespace graft {
namespace {

using testing::run_op;

std::vector<uint8_t> encode_jpeg(int w, int h, const std::vector<uint8_t>& rgb) {
  jpeg_compress_struct info;
  jpeg_error_mgr err;
  info.err = jpeg_std_error(&err);
  jpeg_create_compress(&info);
  unsigned char* out = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&info, &out, &size);
  info.image_width = static_cast<JDIMENSION>(w);
  info.image_height = static_cast<JDIMENSION>(h);
  info.input_components = 3;
  info.in_color_space = JCS_RGB;
  jpeg_set_defaults(&info);
  jpeg_set_quality(&info, 100, TRUE);
  for (int c = 0; c < 3; ++c) info.comp_info[c].h_samp_factor = info.comp_info[c].v_samp_factor = 1;  // 4:4:4
  jpeg_start_compress(&info, TRUE);
  while (info.next_scanline < info.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(rgb.data() + static_cast<size_t>(info.next_scanline) * static_cast<size_t>(w) * 3);
    jpeg_write_scanlines(&info, &row, 1);
  }
  jpeg_finish_compress(&info);
  std::vector<uint8_t> bytes(out, out + size);
  jpeg_destroy_compress(&info);
  std::free(out);
  return bytes;
}

Tensor stream(const std::vector<uint8_t>& bytes) {
  Tensor t = Tensor::empty(DataType::kUInt8, {static_cast<int64_t>(bytes.size())});
  for (size_t i = 0; i < bytes.size(); ++i) t.set(static_cast<int64_t>(i), bytes[i]);
  return t;
}

AttributeMap format(const char* f) {
  AttributeMap a;
  a.set("pixel_format", std::string(f));
  return a;
}

TEST(ImageDecoder, JpegDecodesToItsPixelsInRgbBgrAndGray) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const int w = 24, h = 16;
  // Smooth gradients with a little noise: what a quality-100 JPEG keeps within a few levels.
  std::vector<uint8_t> rgb(static_cast<size_t>(w * h * 3));
  std::uniform_int_distribution<int> noise(-4, 4);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c)
        rgb[static_cast<size_t>((y * w + x) * 3 + c)] =
            static_cast<uint8_t>(std::clamp(40 + 6 * x + 5 * y + 30 * c + noise(rng), 0, 255));
  const Tensor x = stream(encode_jpeg(w, h, rgb));
  for (const char* f : {"RGB", "BGR", "Grayscale"}) {
    auto r = run_op("ImageDecoder", {x}, format(f), 20);
    ASSERT_TRUE(r.is_ok()) << f << ": " << r.status().to_string();
    const Tensor& img = r.value()[0];
    const int64_t c = std::string(f) == "Grayscale" ? 1 : 3;
    ASSERT_EQ(img.dims(), (std::vector<int64_t>{h, w, c})) << f;
    int worst = 0;
    for (int p = 0; p < w * h; ++p) {
      const int R = rgb[static_cast<size_t>(p * 3)], G = rgb[static_cast<size_t>(p * 3 + 1)], B = rgb[static_cast<size_t>(p * 3 + 2)];
      std::vector<int> want = c == 1 ? std::vector<int>{(R * 19595 + G * 38470 + B * 7471 + 0x8000) >> 16}
                                     : std::string(f) == "BGR" ? std::vector<int>{B, G, R} : std::vector<int>{R, G, B};
      for (int k = 0; k < c; ++k)
        worst = std::max(worst, std::abs(static_cast<int>(img.get(p * c + k)) - want[static_cast<size_t>(k)]));
    }
    EXPECT_LE(worst, 6) << f << ": a quality-100 4:4:4 JPEG of smooth pixels stays within a few levels";
  }
}

TEST(ImageDecoder, RefusesTruncatedUnknownAndHugeStreams) {
  std::vector<uint8_t> rgb(8 * 8 * 3, 128);
  std::vector<uint8_t> jpeg = encode_jpeg(8, 8, rgb);
  jpeg.resize(jpeg.size() / 2);
  auto r = run_op("ImageDecoder", {stream(jpeg)}, {}, 20);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("JPEG stream cannot be decoded"), std::string::npos) << r.status().to_string();
  r = run_op("ImageDecoder", {stream({'B', 'M', 0, 0, 0, 0})}, {}, 20);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("BMP images are not supported"), std::string::npos) << r.status().to_string();
  r = run_op("ImageDecoder", {stream({1, 2, 3, 4, 5})}, {}, 20);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("match no image format"), std::string::npos) << r.status().to_string();
  // A PNG header claiming 100000 x 100000 pixels: refused from the header, before any allocation.
  std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, 'I', 'H', 'D', 'R',
                              0, 1, 0x86, 0xA0, 0, 1, 0x86, 0xA0, 8, 2, 0, 0, 0};
  const uLong crc = crc32(0, png.data() + 12, 17);
  for (int s = 24; s >= 0; s -= 8) png.push_back(static_cast<uint8_t>(crc >> s));
  r = run_op("ImageDecoder", {stream(png)}, {}, 20);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("Pillow's limit"), std::string::npos) << r.status().to_string();
}

}  // namespace
}  // namespace graft
