// WebP (libwebp) and TIFF (libtiff) reading and writing for cv_codecs.
#include <algorithm>
#include <cstdarg>
#include <cstring>
#include <memory>

#include <tiffio.h>
#include <webp/decode.h>
#include <webp/encode.h>

#include "host/cv_codecs_internal.h"
#include "mnnpy/tensor.h"

namespace mnnpy {
namespace host {
namespace cv_codecs {

namespace {

// ---- WebP ------------------------------------------------------------------------------------

constexpr int kWebpQuality = 64;

bool webp_features(const uint8_t* data, size_t size, WebPBitstreamFeatures* features) {
  return WebPGetFeatures(data, size, features) == VP8_STATUS_OK && features->width > 0 && features->height > 0 &&
         !features->has_animation;
}

// ---- TIFF ------------------------------------------------------------------------------------

// A TIFF file in memory: read from a caller's buffer, or written into `written`.
struct TiffMemory {
  const uint8_t* data = nullptr;
  size_t size = 0, position = 0;
  std::vector<uint8_t>* written = nullptr;
};

tmsize_t tiff_read(thandle_t h, void* out, tmsize_t count) {
  auto* m = static_cast<TiffMemory*>(h);
  const size_t size = m->written ? m->written->size() : m->size;
  const uint8_t* data = m->written ? m->written->data() : m->data;
  if (count < 0 || m->position >= size) return 0;
  const size_t n = std::min((size_t)count, size - m->position);
  std::memcpy(out, data + m->position, n);
  m->position += n;
  return (tmsize_t)n;
}

tmsize_t tiff_write(thandle_t h, void* in, tmsize_t count) {
  auto* m = static_cast<TiffMemory*>(h);
  if (!m->written || count < 0) return 0;
  try {
    if (m->position + (size_t)count > m->written->size()) m->written->resize(m->position + (size_t)count);
  } catch (...) {
    return 0;
  }
  std::memcpy(m->written->data() + m->position, in, (size_t)count);
  m->position += (size_t)count;
  return count;
}

toff_t tiff_seek(thandle_t h, toff_t offset, int whence) {
  auto* m = static_cast<TiffMemory*>(h);
  const size_t size = m->written ? m->written->size() : m->size;
  const int64_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? (int64_t)m->position : (int64_t)size;
  const int64_t target = base + (int64_t)offset;
  if (target < 0) return (toff_t)-1;
  m->position = (size_t)target;
  return (toff_t)target;
}

int tiff_close(thandle_t) { return 0; }

toff_t tiff_size(thandle_t h) {
  auto* m = static_cast<TiffMemory*>(h);
  return m->written ? m->written->size() : m->size;
}

int tiff_no_map(thandle_t, void**, toff_t*) { return 0; }
void tiff_no_unmap(thandle_t, void*, toff_t) {}

int tiff_quiet(TIFF*, void*, const char*, const char*, va_list) { return 1; }

struct TiffCloser {
  void operator()(TIFF* t) const { TIFFClose(t); }
};
using TiffHandle = std::unique_ptr<TIFF, TiffCloser>;

TiffHandle tiff_open(TiffMemory* memory, const char* mode) {
  TIFFOpenOptions* options = TIFFOpenOptionsAlloc();
  TIFFOpenOptionsSetErrorHandlerExtR(options, tiff_quiet, nullptr);
  TIFFOpenOptionsSetWarningHandlerExtR(options, tiff_quiet, nullptr);
  TIFF* t = TIFFClientOpenExt("memory", mode, memory, tiff_read, tiff_write, tiff_seek, tiff_close, tiff_size,
                              tiff_no_map, tiff_no_unmap, options);
  TIFFOpenOptionsFree(options);
  return TiffHandle(t);
}

struct TiffHeader {
  uint32_t width = 0, height = 0;
  uint16_t bits = 0, samples = 0;
};

// The first directory of a stripped, interleaved, unsigned 8/16-bit gray or RGB(A) image.
bool tiff_header(TIFF* t, TiffHeader* h) {
  uint16_t photometric = 0, planar = PLANARCONFIG_CONTIG, sample_format = SAMPLEFORMAT_UINT;
  if (!TIFFGetField(t, TIFFTAG_IMAGEWIDTH, &h->width) || !TIFFGetField(t, TIFFTAG_IMAGELENGTH, &h->height)) return false;
  TIFFGetFieldDefaulted(t, TIFFTAG_BITSPERSAMPLE, &h->bits);
  TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLESPERPIXEL, &h->samples);
  TIFFGetFieldDefaulted(t, TIFFTAG_PLANARCONFIG, &planar);
  TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLEFORMAT, &sample_format);
  if (!TIFFGetField(t, TIFFTAG_PHOTOMETRIC, &photometric)) return false;
  if (h->width == 0 || h->height == 0 || TIFFIsTiled(t)) return false;
  if ((h->bits != 8 && h->bits != 16) || sample_format != SAMPLEFORMAT_UINT) return false;
  if (h->samples > 1 && planar != PLANARCONFIG_CONTIG) return false;
  if (photometric == PHOTOMETRIC_MINISBLACK) return h->samples == 1 || h->samples == 2;
  if (photometric == PHOTOMETRIC_RGB) return h->samples == 3 || h->samples == 4;
  return false;
}

constexpr int kTiffCompression = 259, kTiffPredictor = 317, kTiffRowsPerStrip = 278;

}  // namespace

bool probe_webp(const uint8_t* data, size_t size, int flags, const SizeLimits& limits, DecodedLayout* layout) {
  // The extended layout declares a canvas of up to 2**24 x 2**24 pixels first: as OpenCV, its size
  // is checked before anything else is read.
  if (size >= 30 && std::memcmp(data + 12, "VP8X", 4) == 0) {
    const auto le24 = [](const uint8_t* p) { return (int64_t)p[0] | (int64_t)p[1] << 8 | (int64_t)p[2] << 16; };
    check_image_size(1 + le24(data + 24), 1 + le24(data + 27), limits);
  }
  WebPBitstreamFeatures features;
  if (!webp_features(data, size, &features)) return false;
  check_image_size(features.width, features.height, limits);
  *layout = layout_for_flags(Format::Webp, features.height, features.width, features.has_alpha ? 4 : 3, false, flags);
  return true;
}

bool decode_webp(const uint8_t* data, size_t size, int flags, const DecodedLayout& layout, uint8_t* out) {
  const bool rgb = (flags & kFlagColorRgb) && flags != kFlagUnchanged;
  const int cn = layout.channels;
  const size_t pixels = (size_t)layout.height * layout.width;
  if (cn == 4) {
    auto decode = rgb ? WebPDecodeRGBAInto : WebPDecodeBGRAInto;
    return decode(data, size, out, pixels * 4, (int)layout.width * 4) != nullptr;
  }
  if (cn == 3) {
    auto decode = rgb ? WebPDecodeRGBInto : WebPDecodeBGRInto;
    return decode(data, size, out, pixels * 3, (int)layout.width * 3) != nullptr;
  }
  std::vector<uint8_t> bgr(pixels * 3);
  if (!WebPDecodeBGRInto(data, size, bgr.data(), bgr.size(), (int)layout.width * 3)) return false;
  // Gray as OpenCV's cvtColor makes it from the decoded BGR: 15-bit fixed-point weights.
  for (size_t i = 0; i < pixels; ++i) {
    const uint8_t* p = bgr.data() + 3 * i;
    out[i] = (uint8_t)((p[0] * 3735u + p[1] * 19235u + p[2] * 9798u + (1u << 14)) >> 15);
  }
  return true;
}

std::vector<uint8_t> encode_webp(const ImageView& im, const std::vector<int>& params) {
  if (im.sample_bytes != 1) throw ValueError("WebP holds 8-bit images only");
  if (im.channels == 2) throw ValueError("WebP holds 1, 3 or 4 channel images");
  if (im.width > WEBP_MAX_DIMENSION || im.height > WEBP_MAX_DIMENSION) throw ValueError("image too large for WebP");
  // Quality above 100 (the default) asks for lossless coding.
  int quality = param_value(params, kWebpQuality, 101);
  if (quality < 1) quality = 1;
  const bool lossless = quality > 100;
  const uint8_t* pixels = im.data;
  int stride = (int)im.row_stride;
  std::vector<uint8_t> bgr;
  if (im.channels == 1) {  // gray is written as BGR
    bgr.resize((size_t)im.height * im.width * 3);
    for (int64_t y = 0; y < im.height; ++y) {
      convert_row(im.data + im.row_stride * y, 1, true, 1, bgr.data() + (size_t)y * im.width * 3, 3, false, im.width);
    }
    pixels = bgr.data();
    stride = (int)im.width * 3;
  }
  uint8_t* output = nullptr;
  size_t size;
  const int w = (int)im.width, h = (int)im.height;
  if (im.channels == 4) {
    size = lossless ? WebPEncodeLosslessBGRA(pixels, w, h, stride, &output)
                    : WebPEncodeBGRA(pixels, w, h, stride, (float)quality, &output);
  } else {
    size = lossless ? WebPEncodeLosslessBGR(pixels, w, h, stride, &output)
                    : WebPEncodeBGR(pixels, w, h, stride, (float)quality, &output);
  }
  if (size == 0 || !output) {
    WebPFree(output);
    throw ValueError("WebP encoder failed");
  }
  std::vector<uint8_t> v(output, output + size);
  WebPFree(output);
  return v;
}

bool probe_tiff(const uint8_t* data, size_t size, int flags, const SizeLimits& limits, DecodedLayout* layout) {
  TiffMemory memory;
  memory.data = data;
  memory.size = size;
  TiffHandle t = tiff_open(&memory, "rm");
  TiffHeader h;
  if (!t || !tiff_header(t.get(), &h)) return false;
  check_image_size(h.width, h.height, limits);
  *layout = layout_for_flags(Format::Tiff, h.height, h.width, h.samples, h.bits == 16, flags);
  return true;
}

bool decode_tiff(const uint8_t* data, size_t size, int flags, const DecodedLayout& layout, uint8_t* out) {
  TiffMemory memory;
  memory.data = data;
  memory.size = size;
  TiffHandle t = tiff_open(&memory, "rm");
  TiffHeader h;
  if (!t || !tiff_header(t.get(), &h) || h.width != layout.width || h.height != layout.height) return false;
  const tmsize_t scanline = TIFFScanlineSize(t.get());
  const size_t stored_row = (size_t)h.width * h.samples * (h.bits / 8);
  if (scanline < (tmsize_t)stored_row) return false;
  std::vector<uint8_t> row((size_t)scanline), narrowed;
  const bool narrow = h.bits == 16 && layout.sample_bytes == 1;
  if (narrow) narrowed.resize((size_t)h.width * h.samples);
  const bool rgb = (flags & kFlagColorRgb) && flags != kFlagUnchanged;
  const size_t out_row = (size_t)layout.width * layout.channels * layout.sample_bytes;
  for (uint32_t y = 0; y < h.height; ++y) {
    if (TIFFReadScanline(t.get(), row.data(), y, 0) < 0) return false;
    const void* src = row.data();
    if (narrow) {  // 16 -> 8 bits as OpenCV: colour v / 257 rounded (libtiff's RGBA path), gray the high byte
      const uint16_t* wide = reinterpret_cast<const uint16_t*>(row.data());
      if (h.samples >= 3) {
        for (size_t i = 0; i < narrowed.size(); ++i) narrowed[i] = (uint8_t)((2u * wide[i] + 257u) / 514u);
      } else {
        for (size_t i = 0; i < narrowed.size(); ++i) narrowed[i] = (uint8_t)(wide[i] >> 8);
      }
      src = narrowed.data();
    }
    convert_row(src, h.samples, false, layout.sample_bytes, out + out_row * y, layout.channels, rgb, layout.width);
  }
  return true;
}

std::vector<uint8_t> encode_tiff(const ImageView& im, const std::vector<int>& params) {
  std::vector<uint8_t> written;
  TiffMemory memory;
  memory.written = &written;
  TiffHandle t = tiff_open(&memory, "w");
  if (!t) throw ValueError("TIFF encoder could not start");
  const int cn = im.channels;
  const int compression = param_value(params, kTiffCompression, COMPRESSION_LZW);
  if (!TIFFIsCODECConfigured((uint16_t)compression)) {
    throw ValueError("TIFF compression " + std::to_string(compression) + " is not available");
  }
  const int predictor = param_value(params, kTiffPredictor,
                                    compression == COMPRESSION_LZW || compression == COMPRESSION_ADOBE_DEFLATE
                                        ? PREDICTOR_HORIZONTAL : PREDICTOR_NONE);
  const size_t row_bytes = (size_t)im.width * cn * im.sample_bytes;
  const int rows_per_strip = param_value(params, kTiffRowsPerStrip,
                                         (int)std::max<int64_t>(1, std::min<int64_t>(im.height, (1 << 16) / (int64_t)row_bytes)));
  TIFF* tif = t.get();
  bool ok = TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, (uint32_t)im.width) &&
            TIFFSetField(tif, TIFFTAG_IMAGELENGTH, (uint32_t)im.height) &&
            TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, (uint16_t)(im.sample_bytes * 8)) &&
            TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, (uint16_t)cn) &&
            TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, (uint16_t)SAMPLEFORMAT_UINT) &&
            TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, (uint16_t)(cn >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK)) &&
            TIFFSetField(tif, TIFFTAG_PLANARCONFIG, (uint16_t)PLANARCONFIG_CONTIG) &&
            TIFFSetField(tif, TIFFTAG_COMPRESSION, (uint16_t)compression) &&
            TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, (uint32_t)std::max(1, rows_per_strip));
  if (ok && predictor != PREDICTOR_NONE) ok = TIFFSetField(tif, TIFFTAG_PREDICTOR, (uint16_t)predictor);
  // As OpenCV, the fourth sample gets no ExtraSamples tag: readers then take it as is, never
  // as an alpha to premultiply or divide out.
  if (!ok) throw ValueError("TIFF encoder rejected the image's tags");
  // Files hold RGB(A): each row is reordered from BGR(A) before it is written.
  std::vector<uint8_t> row(row_bytes);
  for (int64_t y = 0; y < im.height; ++y) {
    const uint8_t* src = im.data + im.row_stride * y;
    if (cn >= 3) {
      convert_row(src, cn, true, im.sample_bytes, row.data(), cn, true, im.width);
    } else {
      std::memcpy(row.data(), src, row_bytes);
    }
    if (TIFFWriteScanline(tif, row.data(), (uint32_t)y, 0) < 0) throw ValueError("TIFF encoder failed");
  }
  if (!TIFFWriteDirectory(tif)) throw ValueError("TIFF encoder failed");
  t.reset();
  return written;
}

}  // namespace cv_codecs
}  // namespace host
}  // namespace mnnpy
