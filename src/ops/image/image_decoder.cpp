// ImageDecoder (opset 20) on the CPU engine: a 1-D uint8 tensor holding an encoded image becomes
// uint8 pixels [H, W, C], C = 3 for pixel_format RGB (the default) or BGR, 1 for Grayscale.
//
// graft decodes the two formats models carry images in, JPEG (libjpeg-turbo, Debian's libjpeg-dev)
// and PNG (libpng), the plain forms of BMP and PNM (read by hand below), and TIFF, WebP and JPEG
// 2000 (through their libraries: library_decoders.cpp), told apart by their signatures; the BMP and
// PNM forms graft does not read are refused naming what they are. As ONNX's reference decodes with Pillow and
// converts with its rules, so does graft:
// - JPEG: libjpeg's defaults (the accurate integer IDCT, fancy upsampling), as Pillow decodes;
//   CMYK JPEGs are refused;
// - PNG: palettes expanded, alpha dropped (not composited), 16-bit samples cut to their high byte;
// - Grayscale from colour: Pillow's ITU-R 601-2 luma, (19595 R + 38470 G + 7471 B + 32768) >> 16;
//   colour from grayscale repeats the value.
// A corrupt or truncated stream is an error naming the decoder's complaint, never a crash: libjpeg's
// fatal errors longjmp back here, as libpng's do. An image of more than Pillow's 178,956,970 pixels
// is refused from its header, before its pixels are allocated.
//
// Like the string ops, ImageDecoder runs on the CPU engine only: a CUDA build refuses a model that
// has it, naming the node (src/build/device_passes.cpp), rather than leave the GPU for it.
#include <csetjmp>
#include <cstddef>
#include <cstdint>
#include <cstdio>  // before jpeglib.h, which uses size_t and FILE without including their headers
#include <cstring>
#include <initializer_list>

#include <jpeglib.h>
#include <png.h>

#include <string>
#include <vector>

#include "graft/status.h"
#include "ops/attr_util.h"
#include "ops/image/image_decoder.h"
#include "ops/infer_util.h"
#include "ops/operator.h"

namespace graft {

Status image::check_size(int64_t height, int64_t width, const char* format) {
  if (height <= 0 || width <= 0 || height > kMaxPixels / width)
    return error(StatusCode::kInvalidArgument, "the ", format, " image is ", height, " x ", width,
                 " pixels; graft decodes at most ", kMaxPixels, " (Pillow's limit)");
  return Status::ok();
}

namespace {

using namespace infer;

enum class PixelFormat { kRgb, kBgr, kGray };

Result<PixelFormat> pixel_format_of(const AttributeMap& attrs) {
  auto f = attrs.get_string("pixel_format", "RGB");
  if (!f) return Status(f.status()).with_attribute("pixel_format");
  if (f.value() == "RGB") return PixelFormat::kRgb;
  if (f.value() == "BGR") return PixelFormat::kBgr;
  if (f.value() == "Grayscale") return PixelFormat::kGray;
  return attr_error("pixel_format", "must be RGB, BGR or Grayscale, got '", f.value(), "'");
}

using image::Pixels;
using image::check_size;

// ---- JPEG -----------------------------------------------------------------------------------

struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX] = {};
};

void jpeg_fail(j_common_ptr info) {
  auto* e = reinterpret_cast<JpegError*>(info->err);
  info->err->format_message(info, e->message);
  std::longjmp(e->jump, 1);
}

void jpeg_quiet(j_common_ptr, int) {}  // warnings (corrupt but decodable data) are not printed

// libjpeg's calls between setjmp and the end, with no local that changes after setjmp (a longjmp
// back may not keep such locals): the state lives behind the pointers. Returns false when libjpeg
// failed (its message in err->message); *size_error set when the image is too large or CMYK.
bool jpeg_decode_into(const uint8_t* bytes, size_t size, jpeg_decompress_struct* info, JpegError* err, Pixels* px,
                      Status* refused) {
  if (setjmp(err->jump)) return false;
  jpeg_create_decompress(info);
  jpeg_mem_src(info, bytes, static_cast<unsigned long>(size));
  jpeg_read_header(info, TRUE);
  if (info->jpeg_color_space == JCS_CMYK || info->jpeg_color_space == JCS_YCCK) {
    *refused = error(StatusCode::kUnsupported, "CMYK JPEG images are not supported");
    return true;
  }
  *refused = check_size(info->image_height, info->image_width, "JPEG");
  if (!*refused) return true;
  info->out_color_space = info->num_components == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_start_decompress(info);
  px->height = info->output_height;
  px->width = info->output_width;
  px->channels = info->output_components;
  px->data.resize(static_cast<size_t>(px->height * px->width * px->channels));
  while (info->output_scanline < info->output_height) {
    JSAMPROW row = px->data.data() + static_cast<size_t>(info->output_scanline) * static_cast<size_t>(px->width * px->channels);
    jpeg_read_scanlines(info, &row, 1);
  }
  jpeg_finish_decompress(info);
  return true;
}

Result<Pixels> decode_jpeg(const uint8_t* bytes, size_t size) {
  jpeg_decompress_struct info;
  JpegError err;
  info.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_fail;
  err.mgr.emit_message = jpeg_quiet;
  Pixels px;
  Status refused = Status::ok();
  const bool decoded = jpeg_decode_into(bytes, size, &info, &err, &px, &refused);
  jpeg_destroy_decompress(&info);
  if (!decoded) return error(StatusCode::kInvalidArgument, "the JPEG stream cannot be decoded: ", err.message);
  if (!refused) return refused;
  return px;
}

// ---- PNG ------------------------------------------------------------------------------------

struct PngReader {
  const uint8_t* bytes;
  size_t size, at;
};

void png_read_bytes(png_structp png, png_bytep out, png_size_t n) {
  auto* r = static_cast<PngReader*>(png_get_io_ptr(png));
  if (n > r->size - r->at) png_error(png, "the stream ends inside the image");
  std::memcpy(out, r->bytes + r->at, n);
  r->at += n;
}

struct PngMessage {
  char text[256] = {};
};

void png_fail(png_structp png, png_const_charp message) {
  auto* m = static_cast<PngMessage*>(png_get_error_ptr(png));
  std::snprintf(m->text, sizeof(m->text), "%s", message);
  png_longjmp(png, 1);
}

void png_quiet(png_structp, png_const_charp) {}

// libpng's calls between setjmp and the end, as jpeg_decode_into's: false when libpng failed.
bool png_decode_into(png_structp png, png_infop info, PngReader* reader, Pixels* px, std::vector<png_bytep>* rows,
                     Status* refused) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_read_fn(png, reader, png_read_bytes);
  png_read_info(png, info);
  *refused = check_size(png_get_image_height(png, info), png_get_image_width(png, info), "PNG");
  if (!*refused) return true;
  const png_byte color = png_get_color_type(png, info);
  if (png_get_bit_depth(png, info) == 16) png_set_strip_16(png);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY && png_get_bit_depth(png, info) < 8) png_set_expand_gray_1_2_4_to_8(png);
  png_set_strip_alpha(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  px->height = png_get_image_height(png, info);
  px->width = png_get_image_width(png, info);
  px->channels = png_get_channels(png, info);
  px->data.resize(static_cast<size_t>(px->height * px->width * px->channels));
  rows->resize(static_cast<size_t>(px->height));
  for (int64_t y = 0; y < px->height; ++y)
    (*rows)[static_cast<size_t>(y)] = px->data.data() + static_cast<size_t>(y * px->width * px->channels);
  png_read_image(png, rows->data());
  png_read_end(png, nullptr);
  return true;
}

Result<Pixels> decode_png(const uint8_t* bytes, size_t size) {
  // The size in IHDR, which the format puts first, checked before libpng reads on (it reads every
  // chunk up to the first IDAT before it reports the size).
  if (size >= 24 && std::memcmp(bytes + 12, "IHDR", 4) == 0) {
    auto u32 = [&](size_t i) {
      return static_cast<int64_t>(bytes[i]) << 24 | static_cast<int64_t>(bytes[i + 1]) << 16 |
             static_cast<int64_t>(bytes[i + 2]) << 8 | static_cast<int64_t>(bytes[i + 3]);
    };
    GRAFT_RETURN_IF_ERROR(check_size(u32(20), u32(16), "PNG"));
  }
  PngMessage message;
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &message, png_fail, png_quiet);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!png || !info) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    return error(StatusCode::kOutOfMemory, "libpng could not start");
  }
  PngReader reader{bytes, size, 0};
  Pixels px;
  std::vector<png_bytep> rows;
  Status refused = Status::ok();
  const bool decoded = png_decode_into(png, info, &reader, &px, &rows, &refused);
  png_destroy_read_struct(&png, &info, nullptr);
  if (!decoded) return error(StatusCode::kInvalidArgument, "the PNG stream cannot be decoded: ", message.text);
  if (!refused) return refused;
  return px;
}

// ---- PNM and BMP ----------------------------------------------------------------------------
// Both are a header and uncompressed rows, read here by hand: no Debian library decodes them with
// the checks a stream from a model needs (stb_image, for one, fills a truncated image with whatever
// its buffer held). Only the forms whose conversion is plain are taken, each as Pillow converts it
// (the pixels as stored); every other form is refused naming what it is.

// What graft takes of each format, for the refusals of the forms it does not.
constexpr const char* kPnmForms = "binary P5 (gray) or P6 (RGB) with maxval 255";
constexpr const char* kBmpForms = "uncompressed 24-bit, 32-bit or 8-bit palette images";

Status unsupported_form(const char* format, const char* forms, const std::string& what) {
  return error(StatusCode::kUnsupported, what, ": graft decodes ", format, " as ", forms);
}

Status truncated(const char* format, size_t need, size_t size) {
  return error(StatusCode::kInvalidArgument, "the ", format, " stream is truncated: its header needs ", need,
               " bytes, the stream has ", size);
}

// Binary PGM (P5) and PPM (P6), maxval 255: a text header (whitespace and # comments between its
// numbers), one whitespace byte, then the rows.
Result<Pixels> decode_pnm(const uint8_t* b, size_t size) {
  const char kind = static_cast<char>(b[1]);
  if (kind != '5' && kind != '6')
    return unsupported_form("PNM", kPnmForms, std::string("P") + kind + (kind == '4' || kind == '1' ? " (a bitmap)"
                                                              : kind == '7'                ? " (PAM)"
                                                                                           : " (ASCII)"));
  size_t at = 2;
  auto number = [&](const char* what) -> Result<int64_t> {
    while (at < size) {
      if (b[at] == '#') {
        while (at < size && b[at] != '\n' && b[at] != '\r') ++at;
      } else if (b[at] == ' ' || b[at] == '\t' || b[at] == '\n' || b[at] == '\r' || b[at] == '\v' || b[at] == '\f') {
        ++at;
      } else {
        break;
      }
    }
    int64_t v = 0;
    size_t digits = 0;
    for (; at < size && b[at] >= '0' && b[at] <= '9' && digits < 10; ++at, ++digits) v = v * 10 + (b[at] - '0');
    if (digits == 0 || (at < size && b[at] >= '0' && b[at] <= '9'))
      return error(StatusCode::kInvalidArgument, "the PNM header's ", what, " is not a number of at most 10 digits");
    return v;
  };
  GRAFT_ASSIGN_OR_RETURN(int64_t width, number("width"));
  GRAFT_ASSIGN_OR_RETURN(int64_t height, number("height"));
  GRAFT_ASSIGN_OR_RETURN(int64_t maxval, number("maxval"));
  GRAFT_RETURN_IF_ERROR(check_size(height, width, "PNM"));
  if (maxval != 255) return unsupported_form("PNM", kPnmForms, "a PNM image with maxval " + std::to_string(maxval));
  if (at >= size) return truncated("PNM", at + 1, size);
  ++at;  // the one whitespace byte after maxval
  Pixels px;
  px.height = height;
  px.width = width;
  px.channels = kind == '5' ? 1 : 3;
  const auto bytes = static_cast<size_t>(height * width * px.channels);
  if (size - at < bytes) return truncated("PNM", at + bytes, size);
  px.data.assign(b + at, b + at + bytes);
  return px;
}

// Windows bitmaps with a BITMAPINFOHEADER or later (40, 108 or 124 bytes), uncompressed (BI_RGB):
// 24 bits (B, G, R), 32 bits (B, G, R and a byte Pillow ignores), or 8 bits into a palette of B, G,
// R, 0 entries; rows bottom-up (top-down when the height is negative), each padded to 4 bytes.
Result<Pixels> decode_bmp(const uint8_t* b, size_t size) {
  if (size < 54) return truncated("BMP", 54, size);
  auto u16 = [&](size_t i) { return static_cast<uint32_t>(b[i]) | static_cast<uint32_t>(b[i + 1]) << 8; };
  auto u32 = [&](size_t i) { return u16(i) | u16(i + 2) << 16; };
  const uint32_t offset = u32(10), header = u32(14);
  if (header != 40 && header != 108 && header != 124)
    return unsupported_form("BMP", kBmpForms, "a BMP image with a " + std::to_string(header) + "-byte header");
  const int64_t width = static_cast<int32_t>(u32(18));
  const int64_t signed_height = static_cast<int32_t>(u32(22));
  const uint32_t bpp = u16(28), compression = u32(30);
  if (compression != 0)
    return unsupported_form("BMP", kBmpForms, "a compressed BMP image (compression " + std::to_string(compression) + ")");
  if (bpp != 24 && bpp != 32 && bpp != 8)
    return unsupported_form("BMP", kBmpForms, "a " + std::to_string(bpp) + "-bit BMP image");
  const bool top_down = signed_height < 0;
  const int64_t height = top_down ? -signed_height : signed_height;
  GRAFT_RETURN_IF_ERROR(check_size(height, width, "BMP"));
  std::vector<uint8_t> palette;  // R, G, B per entry
  if (bpp == 8) {
    const uint32_t used = u32(46);
    const uint32_t entries = used == 0 ? 256 : used;
    if (entries > 256) return error(StatusCode::kInvalidArgument, "the BMP palette has ", entries, " entries (at most 256)");
    const size_t start = 14 + static_cast<size_t>(header);
    if (size < start + 4 * size_t{entries}) return truncated("BMP", start + 4 * size_t{entries}, size);
    for (uint32_t e = 0; e < entries; ++e)
      for (int c : {2, 1, 0}) palette.push_back(b[start + 4 * e + static_cast<size_t>(c)]);
  }
  const auto row = static_cast<size_t>((static_cast<int64_t>(bpp) * width + 31) / 32 * 4);
  const size_t need = static_cast<size_t>(offset) + row * static_cast<size_t>(height);
  if (offset < 54 || size < need) return truncated("BMP", need, size);
  Pixels px;
  px.height = height;
  px.width = width;
  px.channels = 3;
  px.data.resize(static_cast<size_t>(height * width * 3));
  for (int64_t y = 0; y < height; ++y) {
    const uint8_t* src = b + offset + row * static_cast<size_t>(top_down ? y : height - 1 - y);
    uint8_t* dst = px.data.data() + static_cast<size_t>(y * width * 3);
    for (int64_t x = 0; x < width; ++x, dst += 3) {
      if (bpp == 8) {
        const size_t e = src[x];
        if (3 * e + 2 >= palette.size())
          return error(StatusCode::kInvalidArgument, "the BMP pixel at (", y, ", ", x, ") names palette entry ", e,
                       " of ", palette.size() / 3);
        std::memcpy(dst, palette.data() + 3 * e, 3);
      } else {
        const uint8_t* p = src + static_cast<size_t>(x) * (bpp / 8);
        dst[0] = p[2];
        dst[1] = p[1];
        dst[2] = p[0];
      }
    }
  }
  return px;
}

// ---- the op ---------------------------------------------------------------------------------

// The format an encoded stream looks like, by its signature: "JPEG", "PNG", another name, or "".
std::string format_of(const uint8_t* b, size_t n) {
  auto starts = [&](std::initializer_list<int> sig) {
    if (n < sig.size()) return false;
    size_t i = 0;
    for (int c : sig)
      if (b[i++] != static_cast<uint8_t>(c)) return false;
    return true;
  };
  if (starts({0xFF, 0xD8, 0xFF})) return "JPEG";
  if (starts({0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A})) return "PNG";
  if (starts({'B', 'M'})) return "BMP";
  if (starts({'I', 'I', 0x2A, 0x00}) || starts({'M', 'M', 0x00, 0x2A})) return "TIFF";
  if (n >= 12 && starts({'R', 'I', 'F', 'F'}) && std::memcmp(b + 8, "WEBP", 4) == 0) return "WebP";
  if (starts({0x00, 0x00, 0x00, 0x0C, 'j', 'P'}) || starts({0xFF, 0x4F, 0xFF, 0x51})) return "JPEG 2000";
  if (n >= 2 && b[0] == 'P' && b[1] >= '1' && b[1] <= '7') return "PNM";
  return "";
}

Status infer_image_decoder(InferContext& ctx) {
  GRAFT_RETURN_IF_ERROR(check_dtype(ctx, 0, {DataType::kUInt8}));
  GRAFT_ASSIGN_OR_RETURN(PixelFormat f, pixel_format_of(ctx.attrs()));
  const TensorDesc& x = ctx.input(0);
  if (x.shape && x.rank() != 1) return ctx.fail("encoded_stream must be 1-D, got ", x.to_string());
  // The image's size is in the stream: known after decoding.
  ctx.set_output(0, desc_of(DataType::kUInt8,
                            Shape{ctx.unknown_dim(), ctx.unknown_dim(), Dim(f == PixelFormat::kGray ? 1 : 3)}));
  return Status::ok();
}

Status image_decoder(ExecContext& ctx) {
  if (ctx.inputs.empty() || !ctx.inputs[0] || ctx.outputs.empty() || !ctx.outputs[0])
    return error(StatusCode::kInternal, "ImageDecoder called without its input or output");
  const Tensor& x = *ctx.inputs[0];
  if (x.dtype() != DataType::kUInt8 || x.rank() != 1)
    return error(StatusCode::kInvalidArgument, "encoded_stream must be a 1-D uint8 tensor, got ", dtype_name(x.dtype()),
                 shape_to_string(shape_from_values(x.dims())));
  GRAFT_ASSIGN_OR_RETURN(PixelFormat f, pixel_format_of(*ctx.attrs));
  const auto* bytes = static_cast<const uint8_t*>(x.data());
  const auto n = static_cast<size_t>(x.numel());
  const std::string format = format_of(bytes, n);
  Result<Pixels> decoded = format == "JPEG"        ? decode_jpeg(bytes, n)
                           : format == "PNG"       ? decode_png(bytes, n)
                           : format == "PNM"       ? decode_pnm(bytes, n)
                           : format == "BMP"       ? decode_bmp(bytes, n)
                           : format == "TIFF"      ? image::decode_tiff(bytes, n)
                           : format == "WebP"      ? image::decode_webp(bytes, n)
                           : format == "JPEG 2000" ? image::decode_jpeg2000(bytes, n)
                                                   : Result<Pixels>(error(StatusCode::kUnsupported,
                                                                          "encoded_stream is not an image graft knows "
                                                                          "(its first bytes match no image format)"));
  if (!decoded) return decoded.status();
  const Pixels& p = decoded.value();
  const int64_t channels = f == PixelFormat::kGray ? 1 : 3;
  GRAFT_ASSIGN_OR_RETURN(Tensor * y, allocate_output(ctx, 0, DataType::kUInt8, {p.height, p.width, channels}));
  auto* out = static_cast<uint8_t*>(y->data());
  for (int64_t i = 0, pixels = p.height * p.width; i < pixels; ++i) {
    const uint8_t* s = p.data.data() + static_cast<size_t>(i * p.channels);
    uint8_t* d = out + static_cast<size_t>(i * channels);
    if (f == PixelFormat::kGray) {
      d[0] = p.channels == 1 ? s[0] : static_cast<uint8_t>((s[0] * 19595u + s[1] * 38470u + s[2] * 7471u + 0x8000u) >> 16);
    } else {
      const uint8_t r = s[0], g = p.channels == 1 ? s[0] : s[1], b = p.channels == 1 ? s[0] : s[2];
      d[0] = f == PixelFormat::kBgr ? b : r;
      d[1] = g;
      d[2] = f == PixelFormat::kBgr ? r : b;
    }
  }
  return Status::ok();
}

}  // namespace

void append_image_decoder_ops(std::vector<OpEntry>& out) {
  out.push_back(OpEntry{"ImageDecoder", 20, infer_image_decoder, image_decoder, /*output_shape_from_kernel=*/true});
}

}  // namespace graft
