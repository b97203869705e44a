// ImageDecoder's JPEG path (lossy, so checked against the pixels it was encoded from, within the
// error of a quality-100, unsubsampled JPEG), TIFF, WebP and JPEG 2000 (encoded losslessly here by
// their own libraries, so decoded exactly), and its refusals: streams that are truncated, in a
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

#include "image_encoders.h"
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

// ---- BMP and PNM, written here byte by byte --------------------------------------------------

void put16(std::vector<uint8_t>& v, uint32_t x) { v.push_back(x & 0xFF); v.push_back((x >> 8) & 0xFF); }
void put32(std::vector<uint8_t>& v, uint32_t x) { put16(v, x & 0xFFFF); put16(v, x >> 16); }

// An uncompressed BMP of `rgb` (w x h): 24 or 32 bits, or 8 bits through `palette` (RGB triples, the
// pixels then being indices in rgb[3 * p]); bottom-up rows unless top_down.
std::vector<uint8_t> encode_bmp(int w, int h, const std::vector<uint8_t>& rgb, int bpp, bool top_down,
                                const std::vector<uint8_t>& palette = {}) {
  const uint32_t row = static_cast<uint32_t>((bpp * w + 31) / 32 * 4);
  const uint32_t pal = static_cast<uint32_t>(palette.size() / 3 * 4);
  const uint32_t offset = 54 + pal;
  std::vector<uint8_t> v = {'B', 'M'};
  put32(v, offset + row * static_cast<uint32_t>(h));
  put32(v, 0);
  put32(v, offset);
  put32(v, 40);
  put32(v, static_cast<uint32_t>(w));
  put32(v, static_cast<uint32_t>(top_down ? -h : h));
  put16(v, 1);
  put16(v, static_cast<uint32_t>(bpp));
  for (uint32_t x : {0u, row * static_cast<uint32_t>(h), 2835u, 2835u, static_cast<uint32_t>(palette.size() / 3), 0u}) put32(v, x);
  for (size_t e = 0; e + 2 < palette.size(); e += 3) v.insert(v.end(), {palette[e + 2], palette[e + 1], palette[e], 0});
  for (int r = 0; r < h; ++r) {
    const int y = top_down ? r : h - 1 - r;
    size_t written = 0;
    for (int x = 0; x < w; ++x) {
      const uint8_t* p = rgb.data() + static_cast<size_t>((y * w + x) * 3);
      if (bpp == 8) {
        v.push_back(p[0]);
        written += 1;
      } else {
        v.insert(v.end(), {p[2], p[1], p[0]});
        if (bpp == 32) v.push_back(0x5A);  // the byte Pillow ignores
        written += static_cast<size_t>(bpp / 8);
      }
    }
    for (; written < row; ++written) v.push_back(0xEE);  // padding, never read as a pixel
  }
  return v;
}

// Binary PPM (P6) or PGM (P5, from the red channel) with a comment in the header.
std::vector<uint8_t> encode_pnm(int w, int h, const std::vector<uint8_t>& rgb, bool gray, int maxval = 255) {
  const std::string head = std::string(gray ? "P5" : "P6") + "\n# made by graft's test\n" + std::to_string(w) + " " +
                           std::to_string(h) + "\n" + std::to_string(maxval) + "\n";
  std::vector<uint8_t> v(head.begin(), head.end());
  for (int p = 0; p < w * h; ++p)
    for (int c = 0; c < (gray ? 1 : 3); ++c) v.push_back(rgb[static_cast<size_t>(p * 3 + c)]);
  return v;
}

// The decoded image against the RGB pixels it was written from, in each pixel format (gray sources
// repeat their value; Grayscale is Pillow's ITU-R 601-2 luma).
void expect_pixels(const Tensor& x, int w, int h, const std::vector<uint8_t>& rgb, bool gray_source,
                   const std::string& what) {
  for (const char* f : {"RGB", "BGR", "Grayscale"}) {
    auto r = run_op("ImageDecoder", {x}, format(f), 20);
    ASSERT_TRUE(r.is_ok()) << what << " " << f << ": " << r.status().to_string();
    const Tensor& img = r.value()[0];
    const int64_t c = std::string(f) == "Grayscale" ? 1 : 3;
    ASSERT_EQ(img.dims(), (std::vector<int64_t>{h, w, c})) << what << " " << f;
    for (int p = 0; p < w * h; ++p) {
      int R = rgb[static_cast<size_t>(p * 3)], G = rgb[static_cast<size_t>(p * 3 + 1)], B = rgb[static_cast<size_t>(p * 3 + 2)];
      if (gray_source) G = B = R;
      const std::vector<int> want = c == 1 ? std::vector<int>{gray_source ? R : (R * 19595 + G * 38470 + B * 7471 + 0x8000) >> 16}
                                    : std::string(f) == "BGR" ? std::vector<int>{B, G, R} : std::vector<int>{R, G, B};
      for (int k = 0; k < c; ++k)
        ASSERT_EQ(static_cast<int>(img.get(p * c + k)), want[static_cast<size_t>(k)]) << what << " " << f << " pixel " << p;
    }
  }
}

TEST(ImageDecoder, BmpAndPnmDecodeToTheirPixelsExactly) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const int w = 7, h = 5;  // rows of 21 or 7 bytes: padded in a BMP
  std::vector<uint8_t> rgb(static_cast<size_t>(w * h * 3));
  for (uint8_t& v : rgb) v = static_cast<uint8_t>(rng() & 0xFF);
  expect_pixels(stream(encode_bmp(w, h, rgb, 24, false)), w, h, rgb, false, "BMP 24-bit bottom-up");
  expect_pixels(stream(encode_bmp(w, h, rgb, 32, true)), w, h, rgb, false, "BMP 32-bit top-down");
  expect_pixels(stream(encode_pnm(w, h, rgb, false)), w, h, rgb, false, "PPM");
  expect_pixels(stream(encode_pnm(w, h, rgb, true)), w, h, rgb, true, "PGM");
  // 8 bits through a palette of 16 colours: the pixels are indices, the image their colours.
  std::vector<uint8_t> palette(16 * 3), idx(static_cast<size_t>(w * h * 3)), colours(idx.size());
  for (uint8_t& v : palette) v = static_cast<uint8_t>(rng() & 0xFF);
  for (int p = 0; p < w * h; ++p) {
    const uint8_t e = static_cast<uint8_t>(rng() % 16);
    idx[static_cast<size_t>(p * 3)] = e;
    for (int c = 0; c < 3; ++c) colours[static_cast<size_t>(p * 3 + c)] = palette[static_cast<size_t>(e * 3 + c)];
  }
  expect_pixels(stream(encode_bmp(w, h, idx, 8, false, palette)), w, h, colours, false, "BMP 8-bit palette");
}

TEST(ImageDecoder, BmpAndPnmFormsItDoesNotTakeAndBrokenStreamsAreRefused) {
  std::vector<uint8_t> rgb(4 * 3 * 3, 77);
  auto refused = [](const std::vector<uint8_t>& bytes, const std::string& words) {
    auto r = run_op("ImageDecoder", {stream(bytes)}, {}, 20);
    ASSERT_FALSE(r.is_ok()) << words;
    EXPECT_NE(r.status().message().find(words), std::string::npos) << r.status().to_string();
  };
  std::vector<uint8_t> bmp = encode_bmp(4, 3, rgb, 24, false);
  refused(std::vector<uint8_t>(bmp.begin(), bmp.end() - 5), "BMP stream is truncated");
  std::vector<uint8_t> rle = bmp;
  rle[30] = 1;  // BI_RLE8
  refused(rle, "a compressed BMP image");
  std::vector<uint8_t> b16 = bmp;
  b16[28] = 16;
  refused(b16, "a 16-bit BMP image");
  std::vector<uint8_t> palette(2 * 3, 9), idx(rgb.size(), 5);  // index 5 of a 2-colour palette
  refused(encode_bmp(4, 3, idx, 8, false, palette), "names palette entry 5 of 2");
  std::vector<uint8_t> ppm = encode_pnm(4, 3, rgb, false);
  refused(std::vector<uint8_t>(ppm.begin(), ppm.end() - 1), "PNM stream is truncated");
  refused(encode_pnm(4, 3, rgb, false, 65535), "maxval 65535");
  const std::string ascii = "P3\n1 1\n255\n1 2 3\n";
  refused(std::vector<uint8_t>(ascii.begin(), ascii.end()), "P3 (ASCII)");
  const std::string huge = "P6\n100000 100000\n255\n";
  refused(std::vector<uint8_t>(huge.begin(), huge.end()), "Pillow's limit");
}

TEST(ImageDecoder, RefusesTruncatedUnknownAndHugeStreams) {
  std::vector<uint8_t> rgb(8 * 8 * 3, 128);
  std::vector<uint8_t> jpeg = encode_jpeg(8, 8, rgb);
  jpeg.resize(jpeg.size() / 2);
  auto r = run_op("ImageDecoder", {stream(jpeg)}, {}, 20);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("JPEG stream cannot be decoded"), std::string::npos) << r.status().to_string();
  r = run_op("ImageDecoder", {stream({'I', 'I', 0x2A, 0x00, 8, 0, 0, 0})}, {}, 20);
  ASSERT_FALSE(r.is_ok());
#if GRAFT_WITH_TIFF
  EXPECT_NE(r.status().message().find("TIFF stream cannot be decoded"), std::string::npos) << r.status().to_string();
#else
  EXPECT_NE(r.status().message().find("built without libtiff"), std::string::npos) << r.status().to_string();
#endif
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

// ---- TIFF, WebP and JPEG 2000 (library_decoders.cpp) ----------------------------------------
// Each encoded here losslessly by its own library from fresh random pixels, so the decode must give
// them back exactly, in RGB and BGR; then a truncated stream must fail naming the format.

std::vector<uint8_t> random_pixels(int w, int h, int channels) {
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<uint8_t> px(static_cast<size_t>(w * h * channels));
  for (uint8_t& v : px) v = static_cast<uint8_t>(byte(rng));
  return px;
}

// Decodes `bytes` in RGB and BGR and checks both against `rgb` (h x w x 3) exactly.
void expect_exact_rgb(const std::vector<uint8_t>& bytes, int w, int h, const std::vector<uint8_t>& rgb, const char* what) {
  for (const char* f : {"RGB", "BGR"}) {
    auto r = run_op("ImageDecoder", {stream(bytes)}, format(f), 20);
    ASSERT_TRUE(r.is_ok()) << what << " " << f << ": " << r.status().to_string();
    const Tensor& y = r.value()[0];
    ASSERT_EQ(y.dims(), (std::vector<int64_t>{h, w, 3})) << what;
    const bool bgr = std::string(f) == "BGR";
    for (int64_t i = 0; i < y.numel(); ++i) {
      const int64_t px = i / 3, c = i % 3;
      ASSERT_EQ(y.get(i), rgb[static_cast<size_t>(px * 3 + (bgr ? 2 - c : c))]) << what << " " << f << " at " << i;
    }
  }
}

void expect_truncated_fails(std::vector<uint8_t> bytes, const char* format_name) {
  bytes.resize(bytes.size() / 2);
  auto r = run_op("ImageDecoder", {stream(bytes)}, {}, 20);
  ASSERT_FALSE(r.is_ok()) << format_name;
  EXPECT_NE(r.status().message().find(format_name), std::string::npos) << r.status().to_string();
}

#if GRAFT_WITH_TIFF
TEST(ImageDecoder, TiffDecodesToItsPixelsExactly) {
  const int w = 13, h = 7;
  const std::vector<uint8_t> rgb = random_pixels(w, h, 3);
  const std::vector<uint8_t> tiff = testing::encode_tiff(w, h, 3, rgb);
  ASSERT_FALSE(tiff.empty());
  expect_exact_rgb(tiff, w, h, rgb, "TIFF RGB");
  // One sample per pixel stays one channel in Grayscale and repeats in RGB.
  const std::vector<uint8_t> gray = random_pixels(w, h, 1);
  auto r = run_op("ImageDecoder", {stream(testing::encode_tiff(w, h, 1, gray))}, format("Grayscale"), 20);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r.value()[0].dims(), (std::vector<int64_t>{h, w, 1}));
  for (int64_t i = 0; i < w * h; ++i) ASSERT_EQ(r.value()[0].get(i), gray[static_cast<size_t>(i)]) << i;
  expect_truncated_fails(tiff, "TIFF");
}
#endif

#if GRAFT_WITH_WEBP
TEST(ImageDecoder, LosslessWebpDecodesToItsPixelsExactly) {
  const int w = 17, h = 9;
  const std::vector<uint8_t> rgb = random_pixels(w, h, 3);
  const std::vector<uint8_t> webp = testing::encode_webp(w, h, rgb);
  ASSERT_FALSE(webp.empty());
  expect_exact_rgb(webp, w, h, rgb, "WebP");
  expect_truncated_fails(webp, "WebP");
}
#endif

#if GRAFT_WITH_OPENJPEG
TEST(ImageDecoder, LosslessJpeg2000DecodesToItsPixelsExactly) {
  const int w = 11, h = 6;
  const std::vector<uint8_t> rgb = random_pixels(w, h, 3);
  const std::vector<uint8_t> jp2 = testing::encode_jp2(w, h, rgb);
  ASSERT_FALSE(jp2.empty());
  expect_exact_rgb(jp2, w, h, rgb, "JPEG 2000");
  expect_truncated_fails(jp2, "JPEG 2000");
}
#endif

}  // namespace
}  // namespace graft
