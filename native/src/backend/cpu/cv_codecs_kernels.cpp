// CPU kernel of CvImageDecode (ops/cv_codecs.cpp).
#include <memory>

#include "host/cv_codecs.h"
#include "mnnpy/backend.h"

namespace mnnpy {

namespace {

namespace codecs = host::cv_codecs;

codecs::DecodedLayout layout_from(const Attrs& attrs) {
  codecs::DecodedLayout l;
  l.format = (codecs::Format)attrs.get_int("format");
  l.height = attrs.get_int("height");
  l.width = attrs.get_int("width");
  l.channels = (int)attrs.get_int("channels");
  l.sample_bytes = (int)attrs.get_int("sample_bytes");
  return l;
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

MNNPY_REGISTER_KERNEL("CvImageDecode", "cpu", construct_kernel<ImageDecodeKernel>);

}  // namespace

}  // namespace mnnpy
