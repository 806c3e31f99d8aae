// Format detection, the output layout IMREAD_* flags ask for, the channel conversions every
// decoder shares, and the BMP reader and writer.
#include "host/cv_codecs.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "host/cv_codecs_internal.h"
#include "mnnpy/tensor.h"

namespace mnnpy {
namespace host {
namespace cv_codecs {

void check_image_size(int64_t width, int64_t height, const SizeLimits& limits) {
  const std::string size = "the image is " + std::to_string(width) + "x" + std::to_string(height);
  if (width > limits.width) {
    throw ValueError(size + ": wider than the " + std::to_string(limits.width) + " pixels OpenCV decodes (OPENCV_IO_MAX_IMAGE_WIDTH)");
  }
  if (height > limits.height) {
    throw ValueError(size + ": taller than the " + std::to_string(limits.height) + " pixels OpenCV decodes (OPENCV_IO_MAX_IMAGE_HEIGHT)");
  }
  // Both are below 2**31 here (the limits are), so the product cannot overflow.
  if (width * height > limits.pixels) {
    throw ValueError(size + ": its " + std::to_string(width * height) + " pixels are more than the " + std::to_string(limits.pixels) +
                     " OpenCV decodes (OPENCV_IO_MAX_IMAGE_PIXELS)");
  }
}

Format detect_format(const uint8_t* d, size_t n) {
  if (n >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF) return Format::Jpeg;
  if (n >= 8 && std::memcmp(d, "\x89PNG\r\n\x1a\n", 8) == 0) return Format::Png;
  if (n >= 2 && d[0] == 'B' && d[1] == 'M') return Format::Bmp;
  if (n >= 12 && std::memcmp(d, "RIFF", 4) == 0 && std::memcmp(d + 8, "WEBP", 4) == 0) return Format::Webp;
  if (n >= 4 && (std::memcmp(d, "II*\0", 4) == 0 || std::memcmp(d, "MM\0*", 4) == 0)) return Format::Tiff;
  return Format::Unknown;
}

DecodedLayout layout_for_flags(Format format, int64_t height, int64_t width, int stored_channels, bool stored_16bit,
                               int flags) {
  DecodedLayout l;
  l.format = format;
  l.height = height;
  l.width = width;
  if (flags == kFlagUnchanged) {
    // Gray with alpha has no interleaved OpenCV type of its own: it comes back BGRA.
    l.channels = stored_channels == 2 ? 4 : stored_channels;
    l.sample_bytes = stored_16bit ? 2 : 1;
    return l;
  }
  l.sample_bytes = stored_16bit && (flags & kFlagAnyDepth) ? 2 : 1;
  // Gray with alpha counts as colour for IMREAD_ANYCOLOR, as its OpenCV type has 4 channels.
  const bool color = (flags & (kFlagColor | kFlagColorRgb)) || ((flags & kFlagAnyColor) && stored_channels >= 2);
  l.channels = color ? 3 : 1;
  return l;
}

namespace {

// OpenCV's BGR -> gray weights (0.114, 0.587, 0.299) in the 14-bit fixed point its BMP and
// TIFF decoders use (the WebP reader has cvtColor's 15-bit weights of its own).
constexpr uint32_t kGrayB = 1868, kGrayG = 9617, kGrayR = 4899;

template <class T>
void convert_row_typed(const T* src, int src_cn, bool src_bgr, T* dst, int dst_cn, bool dst_rgb, int64_t width) {
  const int src_b = src_bgr ? 0 : 2, src_r = 2 - src_b;
  const int dst_b = dst_rgb ? 2 : 0, dst_r = 2 - dst_b;
  for (int64_t x = 0; x < width; ++x, src += src_cn, dst += dst_cn) {
    if (src_cn <= 2) {
      const T gray = src[0];
      if (dst_cn == 1) {
        dst[0] = gray;
      } else {
        dst[0] = dst[1] = dst[2] = gray;
        if (dst_cn == 4) dst[3] = src_cn == 2 ? src[1] : (T)~T(0);
      }
    } else if (dst_cn == 1) {
      dst[0] = (T)((src[src_b] * kGrayB + src[1] * kGrayG + src[src_r] * kGrayR + (1u << 13)) >> 14);
    } else {
      dst[dst_b] = src[src_b];
      dst[1] = src[1];
      dst[dst_r] = src[src_r];
      if (dst_cn == 4) dst[3] = src_cn == 4 ? src[3] : (T)~T(0);
    }
  }
}

}  // namespace

void convert_row(const void* src, int src_cn, bool src_bgr, int sample_bytes, void* dst, int dst_cn, bool dst_rgb,
                 int64_t width) {
  if (sample_bytes == 2) {
    convert_row_typed((const uint16_t*)src, src_cn, src_bgr, (uint16_t*)dst, dst_cn, dst_rgb, width);
  } else {
    convert_row_typed((const uint8_t*)src, src_cn, src_bgr, (uint8_t*)dst, dst_cn, dst_rgb, width);
  }
}

// ---- BMP ----------------------------------------------------------------------------------

namespace {

uint32_t le32(const uint8_t* p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }
uint16_t le16(const uint8_t* p) { return (uint16_t)(p[0] | p[1] << 8); }
void put32(std::vector<uint8_t>& v, uint32_t x) { for (int i = 0; i < 4; ++i) v.push_back((uint8_t)(x >> (8 * i))); }
void put16(std::vector<uint8_t>& v, uint16_t x) { v.push_back((uint8_t)x); v.push_back((uint8_t)(x >> 8)); }

constexpr uint32_t kBmpRgb = 0, kBmpBitfields = 3;

struct BmpHeader {
  int64_t width = 0, height = 0;
  bool top_down = false;
  int bits = 0;
  uint32_t compression = 0;
  size_t pixel_offset = 0;
  int palette_size = 0;
  const uint8_t* palette = nullptr;  // palette_size entries of `palette_entry_bytes`: B, G, R(, X)
  int palette_entry_bytes = 4;
  bool gray_palette = false;
  bool has_alpha = false;
};

// `limits`: checked as soon as the size is read (probing); null when decoding a probed image.
bool parse_bmp(const uint8_t* d, size_t n, BmpHeader* h, const SizeLimits* limits) {
  if (n < 26 || d[0] != 'B' || d[1] != 'M') return false;
  h->pixel_offset = le32(d + 10);
  const uint32_t info_size = le32(d + 14);
  if (info_size < 12 || 14 + (size_t)info_size > n) return false;
  const uint8_t* info = d + 14;
  if (info_size == 12) {  // OS/2 core header: 16-bit sizes, 3-byte palette entries
    h->width = le16(info + 4);
    h->height = (int16_t)le16(info + 6);
    h->bits = le16(info + 10);
    h->palette_entry_bytes = 3;
  } else {
    if (info_size < 40) return false;
    h->width = (int32_t)le32(info + 4);
    h->height = (int32_t)le32(info + 8);
    h->bits = le16(info + 14);
    h->compression = le32(info + 16);
    h->palette_size = (int)le32(info + 32);
  }
  h->top_down = h->height < 0;
  if (h->top_down) h->height = -h->height;
  if (h->width <= 0 || h->height <= 0 || h->width > (1 << 24) || h->height > (1 << 24)) return false;
  if (limits) check_image_size(h->width, h->height, *limits);
  if (h->bits == 32 && h->compression == kBmpBitfields) {
    // Only the standard layout (B, G, R, A bytes) is read; its alpha mask makes the image BGRA.
    const size_t masks = info_size >= 56 || info_size == 40 ? 14 + 40 : 0;
    if (masks == 0 || masks + 16 > n) return false;
    const uint32_t r = le32(d + masks), g = le32(d + masks + 4), b = le32(d + masks + 8);
    if (r != 0x00ff0000u || g != 0x0000ff00u || b != 0x000000ffu) return false;
    h->has_alpha = info_size >= 56 && le32(d + masks + 12) == 0xff000000u;
  } else if (h->compression != kBmpRgb) {
    return false;  // RLE and other compressions are not read
  }
  if (h->bits != 1 && h->bits != 4 && h->bits != 8 && h->bits != 24 && h->bits != 32) return false;
  if (h->bits <= 8) {
    const int max_entries = 1 << h->bits;
    if (h->palette_size <= 0 || h->palette_size > max_entries) h->palette_size = max_entries;
    h->palette = d + 14 + info_size;
    // Entries that do not fit before the pixels, or before the end of the data when the pixel
    // offset points past it, are treated as black by the decoder.
    const size_t palette_end = std::min<size_t>(h->pixel_offset, n);
    const size_t available = palette_end > 14 + (size_t)info_size
                                 ? (palette_end - 14 - info_size) / h->palette_entry_bytes : 0;
    if ((size_t)h->palette_size > available) h->palette_size = (int)available;
    h->gray_palette = true;
    for (int i = 0; i < h->palette_size; ++i) {
      const uint8_t* e = h->palette + i * h->palette_entry_bytes;
      if (e[0] != e[1] || e[1] != e[2]) { h->gray_palette = false; break; }
    }
  }
  const size_t stride = (size_t)((h->width * h->bits + 31) / 32) * 4;
  if (h->pixel_offset > n || (n - h->pixel_offset) / stride < (size_t)h->height) return false;
  return true;
}

int bmp_stored_channels(const BmpHeader& h) {
  if (h.bits <= 8) return h.gray_palette ? 1 : 3;
  return h.has_alpha ? 4 : 3;
}

}  // namespace

bool probe_bmp(const uint8_t* d, size_t n, int flags, const SizeLimits& limits, DecodedLayout* layout) {
  BmpHeader h;
  if (!parse_bmp(d, n, &h, &limits)) return false;
  *layout = layout_for_flags(Format::Bmp, h.height, h.width, bmp_stored_channels(h), false, flags);
  return true;
}

bool decode_bmp(const uint8_t* d, size_t n, int flags, const DecodedLayout& layout, uint8_t* out) {
  BmpHeader h;
  if (!parse_bmp(d, n, &h, nullptr) || h.width != layout.width || h.height != layout.height) return false;
  const int stored_cn = bmp_stored_channels(h);
  const size_t stride = (size_t)((h.width * h.bits + 31) / 32) * 4;
  std::vector<uint8_t> row((size_t)h.width * 4);
  const bool rgb_out = (flags & kFlagColorRgb) && flags != kFlagUnchanged;
  const size_t out_row = (size_t)h.width * layout.channels;
  for (int64_t y = 0; y < h.height; ++y) {
    const uint8_t* src = d + h.pixel_offset + stride * (size_t)(h.top_down ? y : h.height - 1 - y);
    uint8_t* native = row.data();
    if (h.bits <= 8) {
      const int per_byte = 8 / h.bits, mask = (1 << h.bits) - 1;
      for (int64_t x = 0; x < h.width; ++x) {
        const int shift = 8 - h.bits * (int)(x % per_byte + 1);
        const int index = (src[x / per_byte] >> shift) & mask;
        static const uint8_t kBlack[4] = {0, 0, 0, 0};
        const uint8_t* e = index < h.palette_size ? h.palette + index * h.palette_entry_bytes : kBlack;
        if (stored_cn == 1) {
          native[x] = e[0];
        } else {
          native[3 * x] = e[0];
          native[3 * x + 1] = e[1];
          native[3 * x + 2] = e[2];
        }
      }
    } else if (h.bits == 24 || h.has_alpha) {
      native = const_cast<uint8_t*>(src);  // already B, G, R(, A)
    } else {
      for (int64_t x = 0; x < h.width; ++x) std::memcpy(native + 3 * x, src + 4 * x, 3);
    }
    convert_row(native, stored_cn, true, 1, out + out_row * y, layout.channels, rgb_out, h.width);
  }
  return true;
}

std::vector<uint8_t> encode_bmp(const ImageView& im) {
  if (im.sample_bytes != 1) throw ValueError("BMP holds 8-bit images only");
  const int cn = im.channels;
  if (cn != 1 && cn != 3 && cn != 4) throw ValueError("BMP holds 1, 3 or 4 channel images");
  const int bits = cn * 8;
  const size_t stride = (size_t)((im.width * bits + 31) / 32) * 4;
  // 8-bit gray carries a gray palette; BGRA uses a version 5 header with bit-field masks.
  const uint32_t info_size = cn == 4 ? 124 : 40;
  const uint32_t palette_bytes = cn == 1 ? 256 * 4 : 0;
  const uint32_t offset = 14 + info_size + palette_bytes;
  const uint64_t file_size = offset + stride * (uint64_t)im.height;
  if (im.width > INT32_MAX || im.height > INT32_MAX || file_size > UINT32_MAX) throw ValueError("image too large for BMP");
  std::vector<uint8_t> v;
  v.reserve(file_size);
  v.push_back('B');
  v.push_back('M');
  put32(v, (uint32_t)file_size);
  put32(v, 0);
  put32(v, offset);
  put32(v, info_size);
  put32(v, (uint32_t)im.width);
  put32(v, (uint32_t)im.height);  // positive: rows stored bottom-up
  put16(v, 1);
  put16(v, (uint16_t)bits);
  put32(v, cn == 4 ? kBmpBitfields : kBmpRgb);
  for (int i = 0; i < 5; ++i) put32(v, 0);  // image size, resolution, palette counts
  if (cn == 4) {
    put32(v, 0x00ff0000u);
    put32(v, 0x0000ff00u);
    put32(v, 0x000000ffu);
    put32(v, 0xff000000u);
    put32(v, 0x73524742u);  // colour space 'sRGB'
    v.resize(14 + info_size, 0);  // end points, gamma, intent, profile: unused
  }
  for (int i = 0; i < (cn == 1 ? 256 : 0); ++i) {
    const uint8_t e[4] = {(uint8_t)i, (uint8_t)i, (uint8_t)i, 0};
    v.insert(v.end(), e, e + 4);
  }
  const size_t row_bytes = (size_t)im.width * cn;
  for (int64_t y = im.height - 1; y >= 0; --y) {
    const uint8_t* src = im.data + im.row_stride * y;
    v.insert(v.end(), src, src + row_bytes);
    v.resize(v.size() + (stride - row_bytes), 0);
  }
  return v;
}

// ---- EXIF orientation -----------------------------------------------------------------------

namespace {

uint32_t read_u32(const uint8_t* p, bool big_endian) {
  return big_endian ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
                    : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

uint16_t read_u16(const uint8_t* p, bool big_endian) {
  return big_endian ? (uint16_t)(p[0] << 8 | p[1]) : (uint16_t)(p[1] << 8 | p[0]);
}

// The Orientation tag (0x0112) of the first IFD of a TIFF-structured EXIF block.
int orientation_in_tiff_block(const uint8_t* d, size_t n) {
  if (n >= 6 && std::memcmp(d, "Exif\0\0", 6) == 0) {
    d += 6;
    n -= 6;
  }
  if (n < 8) return 1;
  bool big_endian;
  if (d[0] == 'I' && d[1] == 'I') {
    big_endian = false;
  } else if (d[0] == 'M' && d[1] == 'M') {
    big_endian = true;
  } else {
    return 1;
  }
  if (read_u16(d + 2, big_endian) != 42) return 1;
  const size_t ifd = read_u32(d + 4, big_endian);
  if (ifd > n || n - ifd < 2) return 1;
  const size_t entries = read_u16(d + ifd, big_endian);
  for (size_t i = 0; i < entries; ++i) {
    const size_t entry = ifd + 2 + 12 * i;
    if (entry + 12 > n) break;
    if (read_u16(d + entry, big_endian) != 0x0112) continue;
    const int value = read_u16(d + entry + 8, big_endian);  // a SHORT sits first in the value field
    return value >= 1 && value <= 8 ? value : 1;
  }
  return 1;
}

int jpeg_orientation(const uint8_t* d, size_t n) {
  size_t at = 2;
  while (at + 4 <= n && d[at] == 0xFF) {
    const uint8_t marker = d[at + 1];
    if (marker == 0xFF) {  // fill byte
      ++at;
      continue;
    }
    if (marker == 0xDA || marker == 0xD9) break;  // image data starts: no more metadata
    const size_t length = (size_t)d[at + 2] << 8 | d[at + 3];
    if (length < 2 || at + 2 + length > n) break;
    if (marker == 0xE1 && length >= 8 && std::memcmp(d + at + 4, "Exif\0\0", 6) == 0) {
      return orientation_in_tiff_block(d + at + 4, length - 2);
    }
    at += 2 + length;
  }
  return 1;
}

int png_orientation(const uint8_t* d, size_t n) {
  size_t at = 8;
  while (at + 12 <= n) {
    const size_t length = read_u32(d + at, true);
    if (length > n - at - 12) break;
    if (std::memcmp(d + at + 4, "eXIf", 4) == 0) return orientation_in_tiff_block(d + at + 8, length);
    if (std::memcmp(d + at + 4, "IEND", 4) == 0) break;
    at += 12 + length;
  }
  return 1;
}

int webp_orientation(const uint8_t* d, size_t n) {
  size_t at = 12;
  while (at + 8 <= n) {
    const size_t length = read_u32(d + at + 4, false);
    if (length > n - at - 8) break;
    if (std::memcmp(d + at, "EXIF", 4) == 0) return orientation_in_tiff_block(d + at + 8, length);
    at += 8 + length + (length & 1);
  }
  return 1;
}

}  // namespace

int exif_orientation(const uint8_t* data, size_t size, Format format) {
  switch (format) {
    case Format::Jpeg: return jpeg_orientation(data, size);
    case Format::Png: return png_orientation(data, size);
    case Format::Webp: return webp_orientation(data, size);
    case Format::Tiff: return orientation_in_tiff_block(data, size);
    default: return 1;
  }
}

int reduction_for_flags(int flags) {
  if (flags == kFlagUnchanged) return 1;
  if (flags & kFlagReducedBy2) return 2;
  if (flags & kFlagReducedBy4) return 4;
  if (flags & kFlagReducedBy8) return 8;
  return 1;
}

// ---- dispatch ------------------------------------------------------------------------------

namespace {

bool probe_format(Format format, const uint8_t* data, size_t size, int flags, const SizeLimits& limits,
                  DecodedLayout* layout) {
  switch (format) {
    case Format::Jpeg: return probe_jpeg(data, size, flags, limits, layout);
    case Format::Png: return probe_png(data, size, flags, limits, layout);
    case Format::Bmp: return probe_bmp(data, size, flags, limits, layout);
    case Format::Webp: return probe_webp(data, size, flags, limits, layout);
    case Format::Tiff: return probe_tiff(data, size, flags, limits, layout);
    default: return false;
  }
}

}  // namespace

bool probe_image(const uint8_t* data, size_t size, int flags, const SizeLimits& limits, DecodedLayout* layout) {
  try {
    const Format format = detect_format(data, size);
    if (!probe_format(format, data, size, flags, limits, layout)) return false;
    // OpenCV's TIFF reader turns images by their Orientation tag whatever the flags say.
    if (format == Format::Tiff || (flags != kFlagUnchanged && !(flags & kFlagIgnoreOrientation))) {
      layout->orientation = exif_orientation(data, size, format);
    }
    return true;
  } catch (const std::bad_alloc&) {
    return false;
  }
}

bool decode_image(const uint8_t* data, size_t size, int flags, const DecodedLayout& layout, void* out) {
  uint8_t* o = static_cast<uint8_t*>(out);
  switch (layout.format) {
    case Format::Jpeg: return decode_jpeg(data, size, flags, layout, o);
    case Format::Png: return decode_png(data, size, flags, layout, o);
    case Format::Bmp: return decode_bmp(data, size, flags, layout, o);
    case Format::Webp: return decode_webp(data, size, flags, layout, o);
    case Format::Tiff: return decode_tiff(data, size, flags, layout, o);
    default: return false;
  }
}

Format writer_for_extension(const std::string& e) {
  if (e == "jpg" || e == "jpeg" || e == "jpe") return Format::Jpeg;
  if (e == "png") return Format::Png;
  if (e == "bmp" || e == "dib") return Format::Bmp;
  if (e == "webp") return Format::Webp;
  if (e == "tif" || e == "tiff") return Format::Tiff;
  return Format::Unknown;
}

std::vector<uint8_t> encode_image(Format format, const ImageView& image, const std::vector<int>& params) {
  if (image.height <= 0 || image.width <= 0) throw ValueError("the image is empty");
  if (image.channels < 1 || image.channels > 4 || (image.sample_bytes != 1 && image.sample_bytes != 2)) {
    throw ValueError("only 1 to 4 channel images of 8 or 16 bits can be written");
  }
  switch (format) {
    case Format::Jpeg: return encode_jpeg(image, params);
    case Format::Png: return encode_png(image, params);
    case Format::Bmp: return encode_bmp(image);
    case Format::Webp: return encode_webp(image, params);
    case Format::Tiff: return encode_tiff(image, params);
    default: throw ValueError("no writer for this format");
  }
}

int param_value(const std::vector<int>& params, int id, int fallback) {
  for (size_t i = 0; i + 1 < params.size(); i += 2) {
    if (params[i] == id) return params[i + 1];
  }
  return fallback;
}

}  // namespace cv_codecs
}  // namespace host
}  // namespace mnnpy
