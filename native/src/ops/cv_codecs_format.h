// The image file formats of the CvImageDecode op (its `format` attribute): what its inference
// checks and its kernel decodes.
#pragma once

namespace mnnpy {
namespace cv_codecs {

enum class Format : int { Unknown = 0, Jpeg = 1, Png = 2, Bmp = 3, Webp = 4, Tiff = 5 };

}  // namespace cv_codecs
}  // namespace mnnpy
