// Lossless test images in TIFF, WebP and JPEG 2000, encoded by the libraries graft decodes them with
// (each only where the build found it: GRAFT_WITH_TIFF, GRAFT_WITH_WEBP, GRAFT_WITH_OPENJPEG, set by
// CMake's graft_image_codecs target). Used by the ImageDecoder unit tests, which decode them
// exactly, and by the fuzz corpus, whose seeds they are. Pixels are rows of `channels` bytes.
#pragma once

#include <unistd.h>  // getpid: temp file names of their own per process

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#if GRAFT_WITH_TIFF
#include <tiffio.h>
#endif
#if GRAFT_WITH_WEBP
#include <webp/encode.h>
#endif
#if GRAFT_WITH_OPENJPEG
#include <openjpeg.h>
#endif

namespace graft::testing {

inline std::vector<uint8_t> read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

inline std::filesystem::path temp_path(const char* name) {
  return std::filesystem::temp_directory_path() / (std::string("graft_image_") + std::to_string(::getpid()) + name);
}

#if GRAFT_WITH_TIFF
// LZW-compressed, `channels` 1 (gray) or 3 (RGB); empty on failure.
inline std::vector<uint8_t> encode_tiff(int w, int h, int channels, const std::vector<uint8_t>& px) {
  const auto path = temp_path(".tif");
  TIFF* t = TIFFOpen(path.c_str(), "w");
  if (!t) return {};
  TIFFSetField(t, TIFFTAG_IMAGEWIDTH, static_cast<uint32_t>(w));
  TIFFSetField(t, TIFFTAG_IMAGELENGTH, static_cast<uint32_t>(h));
  TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, static_cast<uint16_t>(channels));
  TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, static_cast<uint16_t>(8));
  TIFFSetField(t, TIFFTAG_PHOTOMETRIC, channels == 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK);
  TIFFSetField(t, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
  TIFFSetField(t, TIFFTAG_COMPRESSION, COMPRESSION_LZW);
  for (int y = 0; y < h; ++y)
    TIFFWriteScanline(t, const_cast<uint8_t*>(px.data() + static_cast<size_t>(y * w * channels)), static_cast<uint32_t>(y), 0);
  TIFFClose(t);
  std::vector<uint8_t> bytes = read_file(path);
  std::filesystem::remove(path);
  return bytes;
}
#endif

#if GRAFT_WITH_WEBP
// Lossless WebP of RGB pixels; empty on failure.
inline std::vector<uint8_t> encode_webp(int w, int h, const std::vector<uint8_t>& rgb) {
  uint8_t* out = nullptr;
  const size_t n = WebPEncodeLosslessRGB(rgb.data(), w, h, w * 3, &out);
  std::vector<uint8_t> bytes(out, out + n);
  WebPFree(out);
  return bytes;
}
#endif

#if GRAFT_WITH_OPENJPEG
// A lossless JP2 file of RGB pixels (the reversible 5/3 wavelet, every bit kept); empty on failure.
inline std::vector<uint8_t> encode_jp2(int w, int h, const std::vector<uint8_t>& rgb) {
  opj_image_cmptparm_t comp[3];
  std::memset(comp, 0, sizeof comp);
  for (auto& c : comp) {
    c.dx = c.dy = 1;
    c.w = static_cast<OPJ_UINT32>(w);
    c.h = static_cast<OPJ_UINT32>(h);
    c.prec = 8;
    c.sgnd = 0;
  }
  opj_image_t* image = opj_image_create(3, comp, OPJ_CLRSPC_SRGB);
  image->x1 = static_cast<OPJ_UINT32>(w);
  image->y1 = static_cast<OPJ_UINT32>(h);
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < w * h; ++i) image->comps[c].data[i] = rgb[static_cast<size_t>(i * 3 + c)];
  opj_cparameters_t params;
  opj_set_default_encoder_parameters(&params);
  params.numresolution = 2;  // the default 6 needs images of at least 32 pixels a side
  params.tcp_numlayers = 1;
  params.tcp_rates[0] = 0;  // no rate target: every bit kept (lossless)
  params.cp_disto_alloc = 1;
  opj_codec_t* codec = opj_create_compress(OPJ_CODEC_JP2);
  opj_setup_encoder(codec, &params, image);
  const auto path = temp_path(".jp2");
  opj_stream_t* out = opj_stream_create_default_file_stream(path.c_str(), OPJ_FALSE);
  const bool ok = opj_start_compress(codec, image, out) && opj_encode(codec, out) && opj_end_compress(codec, out);
  opj_stream_destroy(out);
  opj_destroy_codec(codec);
  opj_image_destroy(image);
  std::vector<uint8_t> bytes = ok ? read_file(path) : std::vector<uint8_t>{};
  std::filesystem::remove(path);
  return bytes;
}
#endif

}  // namespace graft::testing
