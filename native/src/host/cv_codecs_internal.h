// Host library: runs on host memory after the inputs were synchronized to the host.
// What the per-format codec files of cv_codecs share.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "host/cv_codecs.h"

namespace mnnpy {
namespace host {
namespace cv_codecs {

// The layout decoding with `flags` gives an image stored with `stored_channels` (1 gray,
// 2 gray + alpha, 3 colour, 4 colour + alpha) samples of 8 or 16 bits.
DecodedLayout layout_for_flags(Format format, int64_t height, int64_t width, int stored_channels, bool stored_16bit,
                               int flags);
// One row from `src_cn` stored channels (colour in BGR order when src_bgr, else RGB) to
// `dst_cn` output channels (BGR, or RGB when dst_rgb); gray from colour with OpenCV's weights.
void convert_row(const void* src, int src_cn, bool src_bgr, int sample_bytes, void* dst, int dst_cn, bool dst_rgb,
                 int64_t width);
// The value of IMWRITE_* parameter `id` in OpenCV's flat (id, value) list.
int param_value(const std::vector<int>& params, int id, int fallback);

bool probe_jpeg(const uint8_t* data, size_t size, int flags, const SizeLimits& limits, DecodedLayout* layout);
bool decode_jpeg(const uint8_t* data, size_t size, int flags, const DecodedLayout& layout, uint8_t* out);
std::vector<uint8_t> encode_jpeg(const ImageView& image, const std::vector<int>& params);

bool probe_png(const uint8_t* data, size_t size, int flags, const SizeLimits& limits, DecodedLayout* layout);
bool decode_png(const uint8_t* data, size_t size, int flags, const DecodedLayout& layout, uint8_t* out);
std::vector<uint8_t> encode_png(const ImageView& image, const std::vector<int>& params);

bool probe_webp(const uint8_t* data, size_t size, int flags, const SizeLimits& limits, DecodedLayout* layout);
bool decode_webp(const uint8_t* data, size_t size, int flags, const DecodedLayout& layout, uint8_t* out);
std::vector<uint8_t> encode_webp(const ImageView& image, const std::vector<int>& params);

bool probe_tiff(const uint8_t* data, size_t size, int flags, const SizeLimits& limits, DecodedLayout* layout);
bool decode_tiff(const uint8_t* data, size_t size, int flags, const DecodedLayout& layout, uint8_t* out);
std::vector<uint8_t> encode_tiff(const ImageView& image, const std::vector<int>& params);

bool probe_bmp(const uint8_t* data, size_t size, int flags, const SizeLimits& limits, DecodedLayout* layout);
bool decode_bmp(const uint8_t* data, size_t size, int flags, const DecodedLayout& layout, uint8_t* out);
std::vector<uint8_t> encode_bmp(const ImageView& image);

}  // namespace cv_codecs
}  // namespace host
}  // namespace mnnpy
