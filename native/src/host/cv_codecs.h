// Host library: runs on host memory after the inputs were synchronized to the host.
// Image file codecs of mnnpy.cv (imread / imdecode / imwrite / imencode): JPEG (libjpeg-turbo),
// PNG (libpng), WebP (libwebp), TIFF (libtiff) and BMP (own reader and writer).
// Decoded images are interleaved HxW or HxWxC, channels in BGR(A) order (RGB with
// kFlagColorRgb), 8-bit or 16-bit (native endianness) samples.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ops/cv_codecs_format.h"

namespace mnnpy {
namespace host {
namespace cv_codecs {

using ::mnnpy::cv_codecs::Format;

// OpenCV's IMREAD_* bits that decoding looks at.
constexpr int kFlagUnchanged = -1;
constexpr int kFlagColor = 1;
constexpr int kFlagAnyDepth = 2;
constexpr int kFlagAnyColor = 4;
constexpr int kFlagColorRgb = 256;
constexpr int kFlagReducedBy2 = 16, kFlagReducedBy4 = 32, kFlagReducedBy8 = 64;
constexpr int kFlagIgnoreOrientation = 128;

// The IMREAD_REDUCED_* size denominator `flags` ask for (1, 2, 4 or 8).
int reduction_for_flags(int flags);

// What decoding `flags` gives for one encoded image: its size, channels (1, 3 or 4) and
// sample size (1 or 2 bytes).
struct DecodedLayout {
  Format format = Format::Unknown;
  int64_t height = 0, width = 0;
  int channels = 0;
  int sample_bytes = 1;
  // How much the decoder itself shrinks the image for IMREAD_REDUCED_* (JPEG decodes at a
  // reduced DCT scale; other formats decode whole and the front-end resizes, as OpenCV does).
  int reduced_by = 1;
  // The EXIF orientation (1..8) to apply after decoding; 1 when there is none or flags say so.
  int orientation = 1;
};

// OpenCV's limits on the size of an image it decodes (validateInputImageSize: the front-end
// passes the OPENCV_IO_MAX_IMAGE_WIDTH / _HEIGHT / _PIXELS values, or these defaults).
struct SizeLimits {
  int64_t width = int64_t(1) << 20, height = int64_t(1) << 20, pixels = int64_t(1) << 30;
};
// Throws ValueError naming the size and the limit when a header declares a larger image.
void check_image_size(int64_t width, int64_t height, const SizeLimits& limits);

Format detect_format(const uint8_t* data, size_t size);
// The EXIF Orientation tag (1..8) of a JPEG, PNG, WebP or TIFF file, 1 when it has none.
int exif_orientation(const uint8_t* data, size_t size, Format format);
// Reads the header only; false when the data is no image this module can decode. A header
// declaring an image beyond `limits` throws ValueError (check_image_size) as soon as it is read,
// before any other check or allocation.
bool probe_image(const uint8_t* data, size_t size, int flags, const SizeLimits& limits, DecodedLayout* layout);
// Decodes into `out` (height * width * channels samples, as probe_image described); false on
// corrupt data.
bool decode_image(const uint8_t* data, size_t size, int flags, const DecodedLayout& layout, void* out);

// An interleaved image to encode: BGR(A) channel order, rows `row_stride` bytes apart.
struct ImageView {
  const uint8_t* data = nullptr;
  int64_t height = 0, width = 0;
  int channels = 1;
  int sample_bytes = 1;
  int64_t row_stride = 0;
};

// The writer for a file extension ("jpg", "png"... lower case, no dot), or Unknown.
Format writer_for_extension(const std::string& extension);
// Encodes `image` with OpenCV's IMWRITE_* (id, value) pairs; throws ValueError for images the
// format cannot hold and for failures of the codec library.
std::vector<uint8_t> encode_image(Format format, const ImageView& image, const std::vector<int>& params);

}  // namespace cv_codecs
}  // namespace host
}  // namespace mnnpy
