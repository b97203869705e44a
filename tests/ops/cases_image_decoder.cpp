// Cases for ONNX's ImageDecoder (opset 20) over PNG streams this file writes itself: fresh random
// pixels each run, stored (zlib level 0, so a stream's length depends only on the image's size,
// which the case's input shape fixes), colour (RGB) or grayscale. The formula reads the pixels back
// out of the stored deflate blocks, independent of libpng, and converts them as ONNX's reference
// (Pillow) does: RGB or BGR order, grayscale by (19595 R + 38470 G + 7471 B + 32768) >> 16, colour
// from gray by repeating it. JPEG, lossy, is checked in tests/unit (ImageDecoder.*).
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "case_util.h"
#include "harness.h"
#include "tests/unit/stored_png.h"

namespace graft::optest {

namespace {

using testing::stored_png;

// The samples of a stored_png stream: IHDR's size and channels, then IDAT's stored blocks read back.
std::vector<double> png_samples(const std::vector<double>& bytes, int64_t* h, int64_t* w, int64_t* channels) {
  auto at = [&](size_t i) { return static_cast<uint32_t>(bytes[i]); };
  auto u32 = [&](size_t i) { return at(i) << 24 | at(i + 1) << 16 | at(i + 2) << 8 | at(i + 3); };
  *w = u32(16);
  *h = u32(20);
  *channels = at(25) == 2 ? 3 : 1;
  const size_t idat = 8 + 25;  // signature, IHDR chunk
  const size_t zlen = u32(idat), data = idat + 8;
  std::vector<double> raw;
  for (size_t i = data + 2; i < data + zlen - 4;) {  // after the zlib header, before the Adler-32
    const size_t len = at(i + 1) | at(i + 2) << 8;
    raw.insert(raw.end(), bytes.begin() + static_cast<std::ptrdiff_t>(i + 5),
               bytes.begin() + static_cast<std::ptrdiff_t>(i + 5 + len));
    i += 5 + len;
  }
  std::vector<double> samples;
  const int64_t row = *w * *channels;
  for (int64_t y = 0; y < *h; ++y)
    samples.insert(samples.end(), raw.begin() + y * (row + 1) + 1, raw.begin() + (y + 1) * (row + 1));
  return samples;
}

OpCaseTable image_decoder_cases() {
  OpCaseTable t = builtin_table("ImageDecoder", [](const Values& in, const DimsList&, const AttributeMap& a) {
    int64_t h = 0, w = 0, c = 0;
    const std::vector<double> s = png_samples(in[0], &h, &w, &c);
    const std::string format = a.get_string("pixel_format", "RGB").value();
    std::vector<double> y;
    for (int64_t p = 0; p < h * w; ++p) {
      const double r = s[p * c], g = s[p * c + (c == 3 ? 1 : 0)], b = s[p * c + (c == 3 ? 2 : 0)];
      if (format == "Grayscale") {
        y.push_back(c == 1 ? r
                           : static_cast<double>((static_cast<uint32_t>(r) * 19595u + static_cast<uint32_t>(g) * 38470u +
                                                  static_cast<uint32_t>(b) * 7471u + 0x8000u) >> 16));
      } else {
        for (double v : format == "BGR" ? std::vector<double>{b, g, r} : std::vector<double>{r, g, b}) y.push_back(v);
      }
    }
    return Values{y};
  }, 20);
  t.cuda_dtypes = {};  // a host decoder: CUDA builds refuse the node (tests/unit: ImageDecoder.*)
  // A case's stream: a stored PNG of fresh random pixels, its length fixed by the image's size.
  auto png_case = [](std::string label, int64_t h, int64_t w, int64_t channels, const char* format, std::vector<int64_t> out) {
    const auto size = static_cast<int64_t>(stored_png(h, w, channels, std::vector<uint8_t>(h * w * channels)).size());
    OpCase c = make_case(std::move(label), {typed({size}, DataType::kUInt8, 0, 255)}, {std::move(out)},
                         attr("pixel_format", std::string(format)));
    c.adjust_inputs = [h, w, channels](std::vector<Tensor>& ins) {
      std::mt19937 rng(static_cast<uint32_t>(ins[0].get(0) * 977 + ins[0].get(1)));  // the harness's fresh bytes
      std::uniform_int_distribution<int> v(0, 255);
      std::vector<uint8_t> pixels(static_cast<size_t>(h * w * channels));
      for (uint8_t& p : pixels) p = static_cast<uint8_t>(v(rng));
      const std::vector<uint8_t> png = stored_png(h, w, channels, pixels);
      for (size_t i = 0; i < png.size(); ++i) ins[0].set(static_cast<int64_t>(i), png[i]);
    };
    return c;
  };
  t.cases.push_back(png_case("rgb_png_as_rgb", 5, 7, 3, "RGB", {5, 7, 3}));
  t.cases.push_back(png_case("rgb_png_as_bgr", 4, 3, 3, "BGR", {4, 3, 3}));
  t.cases.push_back(png_case("rgb_png_as_grayscale", 6, 5, 3, "Grayscale", {6, 5, 1}));
  t.cases.push_back(png_case("gray_png_as_rgb", 3, 8, 1, "RGB", {3, 8, 3}));
  t.bad_attributes.push_back({"unknown_pixel_format", attr("pixel_format", std::string("RGBA")), {}, "pixel_format"});
  return t;
}

}  // namespace

std::vector<OpCaseTable> image_decoder_case_tables() { return {image_decoder_cases()}; }

}  // namespace graft::optest
