// CvImageDecode: decodes an encoded image (JPEG, PNG, BMP, WebP, TIFF) held in a 1-D uint8
// tensor into an HxW or HxWxC image, as OpenCV's imdecode. Shape inference cannot see the
// bytes, so the front-end (mnnpy/cv/_codecs.py) reads the header first and passes what it
// found as attributes: flags (IMREAD_*), format, height, width, channels and sample_bytes
// (2 gives a 16-bit image, carried as int16 with the uint16 bits).
#include <memory>
#include <string>

#include "backend/cpu/cv_codecs.h"
#include "mnnpy/op_registry.h"

namespace mnnpy {

namespace {

namespace codecs = cpu::cv_codecs;

codecs::DecodedLayout layout_from(const Attrs& attrs) {
  codecs::DecodedLayout l;
  l.format = (codecs::Format)attrs.get_int("format");
  l.height = attrs.get_int("height");
  l.width = attrs.get_int("width");
  l.channels = (int)attrs.get_int("channels");
  l.sample_bytes = (int)attrs.get_int("sample_bytes");
  return l;
}

std::vector<TensorType> infer_image_decode(const std::vector<TensorType>& in, Attrs& attrs) {
  if (in[0].dtype != DType::UInt8 || in[0].shape.size() != 1) {
    throw TypeError("CvImageDecode: the encoded image must be a 1-D uint8 tensor, got " +
                    std::string(dtype_name(in[0].dtype)) + " of shape " + shape_str(in[0].shape));
  }
  for (const char* key : {"flags", "format", "height", "width", "channels", "sample_bytes"}) {
    if (!attrs.has(key)) throw ValueError(std::string("CvImageDecode: the '") + key + "' attribute is required");
  }
  const codecs::DecodedLayout l = layout_from(attrs);
  if (l.format < codecs::Format::Jpeg || l.format > codecs::Format::Tiff) throw ValueError("CvImageDecode: unknown format");
  if (l.height <= 0 || l.width <= 0) throw ValueError("CvImageDecode: the image size must be positive");
  if (l.channels != 1 && l.channels != 3 && l.channels != 4) throw ValueError("CvImageDecode: channels must be 1, 3 or 4");
  if (l.sample_bytes != 1 && l.sample_bytes != 2) throw ValueError("CvImageDecode: sample_bytes must be 1 or 2");
  const Shape shape = l.channels == 1 ? Shape{l.height, l.width} : Shape{l.height, l.width, (int64_t)l.channels};
  return {TensorType{l.sample_bytes == 2 ? DType::Int16 : DType::UInt8, shape}};
}

class ImageDecodeKernel : public Kernel {
 public:
  explicit ImageDecodeKernel(const KernelContext& ctx)
      : layout_(layout_from(ctx.attrs)), flags_((int)ctx.attrs.get_int("flags")) {}

  void execute(const KernelArgs& args, void*) const override {
    const Tensor& encoded = *args.inputs[0];
    if (!codecs::decode_image(encoded.ptr<uint8_t>(), encoded.nbytes(), flags_, layout_, args.outputs[0]->data)) {
      throw ValueError("CvImageDecode: the image data is corrupt or truncated");
    }
  }

  const char* scheme() const override { return "image decode"; }

 private:
  codecs::DecodedLayout layout_;
  int flags_;
};

MNNPY_REGISTER_OP(OpDef{"CvImageDecode", 1, 1, infer_image_decode,
                        [](const KernelContext& ctx) { return std::unique_ptr<Kernel>(new ImageDecodeKernel(ctx)); },
                        {}, false});

}  // namespace

}  // namespace mnnpy
