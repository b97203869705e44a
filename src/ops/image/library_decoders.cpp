// ImageDecoder's TIFF, WebP and JPEG 2000 streams, decoded by the libraries Pillow uses for them
// (libtiff, libwebp, OpenJPEG; Debian's libtiff-dev, libwebp-dev, libopenjp2-7-dev), from memory.
// Every size is checked against Pillow's limit from the header, before the pixels are allocated, and
// a library's complaint about a corrupt stream becomes an error naming the format, never a crash. A
// build without one of the libraries (CMake found none) refuses that format, naming the package.
#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ops/image/image_decoder.h"

#if GRAFT_WITH_TIFF
#include <tiffio.h>
#endif
#if GRAFT_WITH_WEBP
#include <webp/decode.h>
#endif
#if GRAFT_WITH_OPENJPEG
#include <openjpeg.h>
#endif

namespace graft::image {

namespace {

[[maybe_unused]] Status without(const char* format, const char* package) {
  return error(StatusCode::kUnsupported, format, " images are not supported by this build of graft (it was built "
               "without ", package, ")");
}

}  // namespace

// ---- TIFF -----------------------------------------------------------------------------------

#if GRAFT_WITH_TIFF
namespace {

// libtiff's client I/O over the stream in memory.
struct TiffStream {
  const uint8_t* bytes;
  toff_t size, at;
  std::string error;  // the first complaint libtiff reported
};

tmsize_t tiff_read(thandle_t h, void* buf, tmsize_t n) {
  auto* s = static_cast<TiffStream*>(h);
  const toff_t left = s->at < s->size ? s->size - s->at : 0;
  const toff_t take = std::min<toff_t>(left, static_cast<toff_t>(n < 0 ? 0 : n));
  if (take == 0) return 0;  // at or past the end (a seek may go there): nothing to copy
  std::memcpy(buf, s->bytes + s->at, static_cast<size_t>(take));
  s->at += take;
  return static_cast<tmsize_t>(take);
}
tmsize_t tiff_write(thandle_t, void*, tmsize_t) { return 0; }
toff_t tiff_seek(thandle_t h, toff_t off, int whence) {
  auto* s = static_cast<TiffStream*>(h);
  const toff_t base = whence == SEEK_CUR ? s->at : whence == SEEK_END ? s->size : 0;
  s->at = base + off;
  return s->at;
}
int tiff_close(thandle_t) { return 0; }
toff_t tiff_size(thandle_t h) { return static_cast<TiffStream*>(h)->size; }
int tiff_map(thandle_t, void**, toff_t*) { return 0; }
void tiff_unmap(thandle_t, void*, toff_t) {}

int tiff_error(TIFF*, void* user, const char* module, const char* fmt, va_list ap) {
  auto* s = static_cast<TiffStream*>(user);
  if (s->error.empty()) {
    char msg[512];
    std::vsnprintf(msg, sizeof msg, fmt, ap);
    s->error = std::string(module ? module : "libtiff") + ": " + msg;
  }
  return 1;
}
int tiff_quiet(TIFF*, void*, const char*, const char*, va_list) { return 1; }

}  // namespace

Result<Pixels> decode_tiff(const uint8_t* bytes, size_t size) {
  TiffStream s{bytes, static_cast<toff_t>(size), 0, {}};
  TIFFOpenOptions* opts = TIFFOpenOptionsAlloc();
  TIFFOpenOptionsSetErrorHandlerExtR(opts, tiff_error, &s);
  TIFFOpenOptionsSetWarningHandlerExtR(opts, tiff_quiet, &s);
  TIFF* tif = TIFFClientOpenExt("encoded_stream", "rm", &s, tiff_read, tiff_write, tiff_seek, tiff_close, tiff_size,
                                tiff_map, tiff_unmap, opts);
  TIFFOpenOptionsFree(opts);
  if (!tif) return error(StatusCode::kInvalidArgument, "the TIFF stream cannot be decoded: ", s.error);
  uint32_t w = 0, h = 0;
  uint16_t spp = 1;
  TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &w);
  TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &h);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
  Status st = check_size(h, w, "TIFF");
  if (!st) {
    TIFFClose(tif);
    return st;
  }
  // libtiff's RGBA interface reads every photometric form and orientation as Pillow shows it; gray
  // (one sample) stays one channel, as Pillow's "L" mode does.
  std::vector<uint32_t> rgba(static_cast<size_t>(w) * h);
  const int ok = TIFFReadRGBAImageOriented(tif, w, h, rgba.data(), ORIENTATION_TOPLEFT, 0);
  TIFFClose(tif);
  if (!ok) return error(StatusCode::kInvalidArgument, "the TIFF stream cannot be decoded: ", s.error);
  Pixels px;
  px.height = h;
  px.width = w;
  px.channels = spp == 1 ? 1 : 3;
  px.data.resize(rgba.size() * static_cast<size_t>(px.channels));
  for (size_t i = 0; i < rgba.size(); ++i) {
    const uint32_t p = rgba[i];
    if (px.channels == 1) {
      px.data[i] = static_cast<uint8_t>(TIFFGetR(p));
    } else {
      px.data[3 * i] = static_cast<uint8_t>(TIFFGetR(p));
      px.data[3 * i + 1] = static_cast<uint8_t>(TIFFGetG(p));
      px.data[3 * i + 2] = static_cast<uint8_t>(TIFFGetB(p));
    }
  }
  return px;
}
#else
Result<Pixels> decode_tiff(const uint8_t*, size_t) { return without("TIFF", "libtiff, Debian's libtiff-dev"); }
#endif

// ---- WebP -----------------------------------------------------------------------------------

#if GRAFT_WITH_WEBP
Result<Pixels> decode_webp(const uint8_t* bytes, size_t size) {
  int w = 0, h = 0;
  if (!WebPGetInfo(bytes, size, &w, &h))
    return error(StatusCode::kInvalidArgument, "the WebP stream cannot be decoded: its header is not valid");
  GRAFT_RETURN_IF_ERROR(check_size(h, w, "WebP"));
  Pixels px;
  px.height = h;
  px.width = w;
  px.channels = 3;  // alpha dropped, as ONNX's reference converts to RGB
  px.data.resize(static_cast<size_t>(w) * static_cast<size_t>(h) * 3);
  if (!WebPDecodeRGBInto(bytes, size, px.data.data(), px.data.size(), w * 3))
    return error(StatusCode::kInvalidArgument, "the WebP stream cannot be decoded: libwebp refused its data");
  return px;
}
#else
Result<Pixels> decode_webp(const uint8_t*, size_t) { return without("WebP", "libwebp, Debian's libwebp-dev"); }
#endif

// ---- JPEG 2000 ------------------------------------------------------------------------------

#if GRAFT_WITH_OPENJPEG
namespace {

struct Jp2Stream {
  const uint8_t* bytes;
  OPJ_UINT64 size, at;
  std::string error;
};

OPJ_SIZE_T jp2_read(void* buf, OPJ_SIZE_T n, void* user) {
  auto* s = static_cast<Jp2Stream*>(user);
  if (s->at >= s->size) return static_cast<OPJ_SIZE_T>(-1);  // OpenJPEG's end of stream
  const OPJ_UINT64 take = std::min<OPJ_UINT64>(n, s->size - s->at);
  std::memcpy(buf, s->bytes + s->at, static_cast<size_t>(take));
  s->at += take;
  return static_cast<OPJ_SIZE_T>(take);
}
OPJ_OFF_T jp2_skip(OPJ_OFF_T n, void* user) {
  auto* s = static_cast<Jp2Stream*>(user);
  const OPJ_UINT64 to = std::min<OPJ_UINT64>(s->size, s->at + static_cast<OPJ_UINT64>(n < 0 ? 0 : n));
  const OPJ_OFF_T moved = static_cast<OPJ_OFF_T>(to - s->at);
  s->at = to;
  return moved;
}
OPJ_BOOL jp2_seek(OPJ_OFF_T to, void* user) {
  auto* s = static_cast<Jp2Stream*>(user);
  if (to < 0 || static_cast<OPJ_UINT64>(to) > s->size) return OPJ_FALSE;
  s->at = static_cast<OPJ_UINT64>(to);
  return OPJ_TRUE;
}
void jp2_error(const char* msg, void* user) {
  auto* s = static_cast<Jp2Stream*>(user);
  if (s->error.empty()) {
    s->error = msg;
    while (!s->error.empty() && s->error.back() == '\n') s->error.pop_back();
  }
}
void jp2_quiet(const char*, void*) {}

// Owns OpenJPEG's three objects for one decode.
struct Jp2Decode {
  opj_stream_t* stream = nullptr;
  opj_codec_t* codec = nullptr;
  opj_image_t* image = nullptr;
  ~Jp2Decode() {
    if (image) opj_image_destroy(image);
    if (codec) opj_destroy_codec(codec);
    if (stream) opj_stream_destroy(stream);
  }
};

}  // namespace

Result<Pixels> decode_jpeg2000(const uint8_t* bytes, size_t size) {
  Jp2Stream s{bytes, size, 0, {}};
  auto fail = [&s](const char* what) {
    return error(StatusCode::kInvalidArgument, "the JPEG 2000 stream cannot be decoded: ", what,
                 s.error.empty() ? "" : " (", s.error, s.error.empty() ? "" : ")");
  };
  Jp2Decode d;
  // The JP2 container starts with its signature box; a bare codestream with the SOC marker.
  const bool jp2 = size >= 4 && bytes[0] == 0 && bytes[1] == 0 && bytes[2] == 0 && bytes[3] == 0x0C;
  d.codec = opj_create_decompress(jp2 ? OPJ_CODEC_JP2 : OPJ_CODEC_J2K);
  opj_set_error_handler(d.codec, jp2_error, &s);
  opj_set_warning_handler(d.codec, jp2_quiet, &s);
  opj_set_info_handler(d.codec, jp2_quiet, &s);
  opj_dparameters_t params;
  opj_set_default_decoder_parameters(&params);
  if (!opj_setup_decoder(d.codec, &params)) return fail("the decoder refused its parameters");
  d.stream = opj_stream_create(64 * 1024, OPJ_TRUE);
  opj_stream_set_user_data(d.stream, &s, nullptr);
  opj_stream_set_user_data_length(d.stream, size);
  opj_stream_set_read_function(d.stream, jp2_read);
  opj_stream_set_skip_function(d.stream, jp2_skip);
  opj_stream_set_seek_function(d.stream, jp2_seek);
  if (!opj_read_header(d.stream, d.codec, &d.image) || !d.image) return fail("its header is not valid");
  const int64_t w = static_cast<int64_t>(d.image->x1) - d.image->x0, h = static_cast<int64_t>(d.image->y1) - d.image->y0;
  GRAFT_RETURN_IF_ERROR(check_size(h, w, "JPEG 2000"));
  if (!opj_decode(d.codec, d.stream, d.image) || !opj_end_decompress(d.codec, d.stream)) return fail("its data");
  const opj_image_t& im = *d.image;
  if (im.numcomps < 1) return fail("it has no components");
  const OPJ_UINT32 used = im.numcomps >= 3 ? 3 : 1;  // RGB(A) or gray(+alpha): alpha dropped
  for (OPJ_UINT32 c = 0; c < used; ++c)
    if (im.comps[c].w != static_cast<OPJ_UINT32>(w) || im.comps[c].h != static_cast<OPJ_UINT32>(h) || !im.comps[c].data)
      return error(StatusCode::kUnsupported, "JPEG 2000 images with subsampled components are not supported");
  Pixels px;
  px.height = h;
  px.width = w;
  px.channels = used;
  px.data.resize(static_cast<size_t>(w * h) * used);
  for (OPJ_UINT32 c = 0; c < used; ++c) {
    const opj_image_comp_t& comp = im.comps[c];
    // Samples of another precision scaled to 8 bits as Pillow does (a shift); signed ones offset.
    const int shift = static_cast<int>(comp.prec) - 8;
    const int offset = comp.sgnd ? 1 << (comp.prec - 1) : 0;
    for (int64_t i = 0; i < w * h; ++i) {
      int v = comp.data[i] + offset;
      v = shift > 0 ? v >> shift : v << -shift;
      px.data[static_cast<size_t>(i) * used + c] = static_cast<uint8_t>(std::clamp(v, 0, 255));
    }
  }
  return px;
}
#else
Result<Pixels> decode_jpeg2000(const uint8_t*, size_t) {
  return without("JPEG 2000", "OpenJPEG, Debian's libopenjp2-7-dev");
}
#endif

}  // namespace graft::image
