// CvImageDecode: decodes an encoded image (JPEG, PNG, BMP, WebP, TIFF) held in a 1-D uint8
// tensor into an HxW or HxWxC image, as OpenCV's imdecode. Shape inference cannot see the
// bytes, so the front-end (mnnpy/cv/_codecs.py) reads the header first and passes what it
// found as attributes: flags (IMREAD_*), format, height, width, channels and sample_bytes
// (2 gives a 16-bit image, carried as int16 with the uint16 bits).
#include <string>

#include "mnnpy/op_registry.h"
#include "ops/cv_codecs_format.h"

namespace mnnpy {

namespace {

std::vector<TensorType> infer_image_decode(const std::vector<TensorType>& in, Attrs& attrs) {
  if (in[0].dtype != DType::UInt8 || in[0].shape.size() != 1) {
    throw TypeError("CvImageDecode: the encoded image must be a 1-D uint8 tensor, got " +
                    std::string(dtype_name(in[0].dtype)) + " of shape " + shape_str(in[0].shape));
  }
  for (const char* key : {"flags", "format", "height", "width", "channels", "sample_bytes"}) {
    if (!attrs.has(key)) throw ValueError(std::string("CvImageDecode: the '") + key + "' attribute is required");
  }
  const auto format = (cv_codecs::Format)attrs.get_int("format");
  const int64_t height = attrs.get_int("height"), width = attrs.get_int("width");
  const int channels = (int)attrs.get_int("channels"), sample_bytes = (int)attrs.get_int("sample_bytes");
  if (format < cv_codecs::Format::Jpeg || format > cv_codecs::Format::Tiff) throw ValueError("CvImageDecode: unknown format");
  if (height <= 0 || width <= 0) throw ValueError("CvImageDecode: the image size must be positive");
  if (channels != 1 && channels != 3 && channels != 4) throw ValueError("CvImageDecode: channels must be 1, 3 or 4");
  if (sample_bytes != 1 && sample_bytes != 2) throw ValueError("CvImageDecode: sample_bytes must be 1 or 2");
  const Shape shape = channels == 1 ? Shape{height, width} : Shape{height, width, (int64_t)channels};
  return {TensorType{sample_bytes == 2 ? DType::Int16 : DType::UInt8, shape}};
}

MNNPY_REGISTER_OP(OpDef{"CvImageDecode", 1, 1, infer_image_decode, {}, false});

}  // namespace

}  // namespace mnnpy
