// JPEG (libjpeg-turbo) and PNG (libpng) reading and writing for cv_codecs. Both libraries
// report errors by longjmp: the functions that call them keep only plain locals, and what
// outlives an error (buffers) belongs to their callers.
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <jpeglib.h>
#include <png.h>

#include "host/cv_codecs_internal.h"
#include "mnnpy/tensor.h"

namespace mnnpy {
namespace host {
namespace cv_codecs {

namespace {

// ---- JPEG ------------------------------------------------------------------------------------

struct JpegErrors {
  jpeg_error_mgr manager;
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void jpeg_fail(j_common_ptr info) {
  JpegErrors* errors = reinterpret_cast<JpegErrors*>(info->err);
  info->err->format_message(info, errors->message);
  longjmp(errors->jump, 1);
}

// Corrupt-data warnings do not stop decoding (the damaged part decodes as gray), as in OpenCV.
void jpeg_quiet(j_common_ptr, int) {}

void jpeg_errors_init(JpegErrors* errors) {
  jpeg_std_error(&errors->manager);
  errors->manager.error_exit = jpeg_fail;
  errors->manager.emit_message = jpeg_quiet;
  errors->message[0] = 0;
}

constexpr int kJpegQuality = 1, kJpegProgressive = 2, kJpegOptimize = 3, kJpegRestartInterval = 4,
              kJpegSamplingFactor = 7;

// Reads the header into `info`: false when it is no JPEG this module decodes.
bool jpeg_stored_channels(const jpeg_decompress_struct& info, int* channels) {
  if (info.jpeg_color_space == JCS_GRAYSCALE && info.num_components == 1) {
    *channels = 1;
    return true;
  }
  if ((info.jpeg_color_space == JCS_YCbCr || info.jpeg_color_space == JCS_RGB) && info.num_components == 3) {
    *channels = 3;
    return true;
  }
  return false;  // CMYK / YCCK
}

bool jpeg_decode_rows(const uint8_t* data, size_t size, int flags, const DecodedLayout& layout, uint8_t* out,
                      bool header_only, int* stored_channels, int64_t* height, int64_t* width) {
  jpeg_decompress_struct info;
  JpegErrors errors;
  jpeg_errors_init(&errors);
  info.err = &errors.manager;
  if (setjmp(errors.jump)) {
    jpeg_destroy_decompress(&info);
    return false;
  }
  jpeg_create_decompress(&info);
  jpeg_mem_src(&info, data, (unsigned long)size);
  jpeg_read_header(&info, TRUE);
  if (!jpeg_stored_channels(info, stored_channels)) {
    jpeg_destroy_decompress(&info);
    return false;
  }
  // IMREAD_REDUCED_* decodes at 1/2, 1/4 or 1/8 of the DCT scale (sizes round up), as OpenCV does.
  info.scale_num = 1;
  info.scale_denom = (unsigned)reduction_for_flags(flags);
  jpeg_calc_output_dimensions(&info);
  *height = info.output_height;
  *width = info.output_width;
  if (header_only) {
    jpeg_destroy_decompress(&info);
    return true;
  }
  if (*height != layout.height || *width != layout.width) {
    jpeg_destroy_decompress(&info);
    return false;
  }
  const bool rgb = (flags & kFlagColorRgb) && flags != kFlagUnchanged;
  info.out_color_space = layout.channels == 1 ? JCS_GRAYSCALE : rgb ? JCS_EXT_RGB : JCS_EXT_BGR;
  jpeg_start_decompress(&info);
  const size_t row_bytes = (size_t)layout.width * layout.channels;
  while (info.output_scanline < info.output_height) {
    JSAMPROW rows[16];
    const unsigned count = info.output_height - info.output_scanline < 16 ? info.output_height - info.output_scanline : 16;
    for (unsigned i = 0; i < count; ++i) rows[i] = out + row_bytes * (info.output_scanline + i);
    jpeg_read_scanlines(&info, rows, count);
  }
  jpeg_finish_decompress(&info);
  jpeg_destroy_decompress(&info);
  return true;
}

// Encodes into a buffer that libjpeg allocates (*buffer, freed by the caller); empty message on success.
void jpeg_encode_rows(const ImageView& im, const std::vector<int>& params, unsigned char** buffer,
                      unsigned long* buffer_size, char* message) {
  jpeg_compress_struct info;
  JpegErrors errors;
  jpeg_errors_init(&errors);
  info.err = &errors.manager;
  if (setjmp(errors.jump)) {
    std::strcpy(message, errors.message[0] ? errors.message : "JPEG encoding failed");
    jpeg_destroy_compress(&info);
    return;
  }
  jpeg_create_compress(&info);
  jpeg_mem_dest(&info, buffer, buffer_size);
  info.image_width = (JDIMENSION)im.width;
  info.image_height = (JDIMENSION)im.height;
  // BGRA is written as BGR: the fourth byte of each pixel is skipped.
  info.input_components = im.channels == 1 ? 1 : im.channels == 4 ? 4 : 3;
  info.in_color_space = im.channels == 1 ? JCS_GRAYSCALE : im.channels == 4 ? JCS_EXT_BGRX : JCS_EXT_BGR;
  jpeg_set_defaults(&info);
  int quality = param_value(params, kJpegQuality, 95);
  quality = quality < 0 ? 0 : quality > 100 ? 100 : quality;
  jpeg_set_quality(&info, quality, TRUE);
  if (param_value(params, kJpegOptimize, 0)) info.optimize_coding = TRUE;
  const int restart = param_value(params, kJpegRestartInterval, 0);
  if (restart > 0) info.restart_interval = restart > 65535 ? 65535 : restart;
  const int sampling = param_value(params, kJpegSamplingFactor, 0);
  if (sampling > 0 && im.channels != 1) {
    info.comp_info[0].h_samp_factor = (sampling >> 20) & 0xf;
    info.comp_info[0].v_samp_factor = (sampling >> 16) & 0xf;
    for (int c = 1; c < 3; ++c) {
      info.comp_info[c].h_samp_factor = (sampling >> (12 - 8 * (c - 1))) & 0xf;
      info.comp_info[c].v_samp_factor = (sampling >> (8 - 8 * (c - 1))) & 0xf;
    }
  }
  if (param_value(params, kJpegProgressive, 0)) jpeg_simple_progression(&info);
  jpeg_start_compress(&info, TRUE);
  while (info.next_scanline < info.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(im.data + im.row_stride * info.next_scanline);
    jpeg_write_scanlines(&info, &row, 1);
  }
  jpeg_finish_compress(&info);
  jpeg_destroy_compress(&info);
}

// ---- PNG -------------------------------------------------------------------------------------

struct PngSource {
  const uint8_t* data;
  size_t size, position;
};

void png_read_memory(png_structp png, png_bytep out, png_size_t count) {
  PngSource* source = static_cast<PngSource*>(png_get_io_ptr(png));
  if (count > source->size - source->position) png_error(png, "truncated PNG data");
  std::memcpy(out, source->data + source->position, count);
  source->position += count;
}

void png_quiet(png_structp, png_const_charp) {}

void png_fail(png_structp png, png_const_charp) { png_longjmp(png, 1); }

struct PngHeader {
  int64_t height = 0, width = 0;
  int stored_channels = 0;
  bool stored_16bit = false;
};

bool png_decode_rows(const uint8_t* data, size_t size, int flags, const DecodedLayout& layout, uint8_t* out,
                     bool header_only, PngHeader* header, png_bytep* rows) {
  PngSource source{data, size, 0};
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, nullptr, png_fail, png_quiet);
  if (!png) return false;
  png_infop info = png_create_info_struct(png);
  if (!info) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    return false;
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  png_set_read_fn(png, &source, png_read_memory);
  png_read_info(png, info);
  png_uint_32 width = 0, height = 0;
  int bit_depth = 0, color_type = 0;
  png_get_IHDR(png, info, &width, &height, &bit_depth, &color_type, nullptr, nullptr, nullptr);
  const bool transparency = png_get_valid(png, info, PNG_INFO_tRNS) != 0;
  header->width = width;
  header->height = height;
  header->stored_16bit = bit_depth == 16;
  const bool stored_alpha = (color_type & PNG_COLOR_MASK_ALPHA) || transparency;
  const bool stored_color = (color_type & PNG_COLOR_MASK_COLOR) != 0;
  header->stored_channels = (stored_color ? 3 : 1) + (stored_alpha ? 1 : 0);
  if (header_only || (int64_t)width != layout.width || (int64_t)height != layout.height) {
    png_destroy_read_struct(&png, &info, nullptr);
    return header_only;
  }
  const int cn = layout.channels;
  if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color_type == PNG_COLOR_TYPE_GRAY && bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (transparency && cn == 4) png_set_tRNS_to_alpha(png);
  if (bit_depth == 16 && layout.sample_bytes == 1) png_set_strip_16(png);
  if (bit_depth == 16 && layout.sample_bytes == 2) png_set_swap(png);  // network to host order
  if (cn != 4 && stored_alpha) png_set_strip_alpha(png);  // also the alpha a palette's tRNS expands to
  if (cn == 1 && stored_color) png_set_rgb_to_gray(png, 1, 0.299, 0.587);
  if (cn >= 3 && !stored_color) png_set_gray_to_rgb(png);
  if (cn >= 3 && !((flags & kFlagColorRgb) && flags != kFlagUnchanged)) png_set_bgr(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  if (png_get_rowbytes(png, info) != (size_t)width * cn * layout.sample_bytes) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  const size_t row_bytes = (size_t)width * cn * layout.sample_bytes;
  for (png_uint_32 y = 0; y < height; ++y) rows[y] = out + row_bytes * y;
  png_read_image(png, rows);
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  return true;
}

void png_write_memory(png_structp png, png_bytep data, png_size_t count) {
  auto* out = static_cast<std::vector<uint8_t>*>(png_get_io_ptr(png));
  try {
    out->insert(out->end(), data, data + count);
  } catch (...) {
    png_error(png, "out of memory");
  }
}

void png_flush_memory(png_structp) {}

constexpr int kPngCompression = 16, kPngStrategy = 17, kPngFilter = 19;

// Empty message on success.
void png_encode_rows(const ImageView& im, const std::vector<int>& params, std::vector<uint8_t>* out, char* message) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, png_fail, png_quiet);
  if (!png) {
    std::strcpy(message, "PNG encoder could not start");
    return;
  }
  png_infop info = png_create_info_struct(png);
  if (!info || setjmp(png_jmpbuf(png))) {
    std::strcpy(message, "PNG encoding failed");
    png_destroy_write_struct(&png, info ? &info : nullptr);
    return;
  }
  png_set_write_fn(png, out, png_write_memory, png_flush_memory);
  int level = param_value(params, kPngCompression, 1);
  level = level < 0 ? 0 : level > 9 ? 9 : level;
  png_set_compression_level(png, level);
  png_set_compression_strategy(png, param_value(params, kPngStrategy, 3 /* Z_RLE */));
  png_set_filter(png, PNG_FILTER_TYPE_BASE, param_value(params, kPngFilter, PNG_FILTER_SUB));
  const int color_type = im.channels == 1 ? PNG_COLOR_TYPE_GRAY : im.channels == 2 ? PNG_COLOR_TYPE_GRAY_ALPHA
                         : im.channels == 3 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_RGB_ALPHA;
  png_set_IHDR(png, info, (png_uint_32)im.width, (png_uint_32)im.height, im.sample_bytes * 8, color_type,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  if (im.channels >= 3) png_set_bgr(png);
  if (im.sample_bytes == 2) png_set_swap(png);
  for (int64_t y = 0; y < im.height; ++y) png_write_row(png, im.data + im.row_stride * y);
  png_write_end(png, info);
  png_destroy_write_struct(&png, &info);
}

}  // namespace

bool probe_jpeg(const uint8_t* data, size_t size, int flags, const SizeLimits& limits, DecodedLayout* layout) {
  int channels = 0;
  int64_t height = 0, width = 0;
  if (!jpeg_decode_rows(data, size, flags, *layout, nullptr, true, &channels, &height, &width)) return false;
  check_image_size(width, height, limits);  // as OpenCV, the size at the reduced scale
  *layout = layout_for_flags(Format::Jpeg, height, width, channels, false, flags);
  layout->reduced_by = reduction_for_flags(flags);
  return true;
}

bool decode_jpeg(const uint8_t* data, size_t size, int flags, const DecodedLayout& layout, uint8_t* out) {
  int channels = 0;
  int64_t height = 0, width = 0;
  return jpeg_decode_rows(data, size, flags, layout, out, false, &channels, &height, &width);
}

std::vector<uint8_t> encode_jpeg(const ImageView& im, const std::vector<int>& params) {
  if (im.sample_bytes != 1) throw ValueError("JPEG holds 8-bit images only");
  if (im.channels == 2) throw ValueError("JPEG holds 1, 3 or 4 channel images");
  if (im.width > JPEG_MAX_DIMENSION || im.height > JPEG_MAX_DIMENSION) throw ValueError("image too large for JPEG");
  unsigned char* buffer = nullptr;
  unsigned long buffer_size = 0;
  char message[JMSG_LENGTH_MAX] = {0};
  jpeg_encode_rows(im, params, &buffer, &buffer_size, message);
  std::vector<uint8_t> v;
  if (!message[0]) v.assign(buffer, buffer + buffer_size);
  std::free(buffer);
  if (message[0]) throw ValueError(std::string("JPEG encoder: ") + message);
  return v;
}

bool probe_png(const uint8_t* data, size_t size, int flags, const SizeLimits& limits, DecodedLayout* layout) {
  PngHeader header;
  if (!png_decode_rows(data, size, flags, *layout, nullptr, true, &header, nullptr)) return false;
  if (header.width <= 0 || header.height <= 0) return false;
  check_image_size(header.width, header.height, limits);
  *layout = layout_for_flags(Format::Png, header.height, header.width, header.stored_channels, header.stored_16bit,
                             flags);
  return true;
}

bool decode_png(const uint8_t* data, size_t size, int flags, const DecodedLayout& layout, uint8_t* out) {
  PngHeader header;
  std::vector<png_bytep> rows((size_t)layout.height);
  return png_decode_rows(data, size, flags, layout, out, false, &header, rows.data());
}

std::vector<uint8_t> encode_png(const ImageView& im, const std::vector<int>& params) {
  if (im.width > PNG_UINT_31_MAX || im.height > PNG_UINT_31_MAX) throw ValueError("image too large for PNG");
  std::vector<uint8_t> out;
  char message[64] = {0};
  png_encode_rows(im, params, &out, message);
  if (message[0]) throw ValueError(std::string("PNG encoder: ") + message);
  return out;
}

}  // namespace cv_codecs
}  // namespace host
}  // namespace mnnpy
