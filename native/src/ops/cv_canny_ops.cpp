// CvCanny: OpenCV's Canny on an HxW or HxWxC uint8 image; attrs low, high (floats, ordered),
// aperture (3, 5, 7), l2 (0/1). Output HxW uint8 edges (0 or 255).
#include <string>

#include "backend/cpu/cv_canny.h"
#include "mnnpy/op_registry.h"

namespace mnnpy {

namespace {

std::vector<TensorType> infer_canny(const std::vector<TensorType>& in, Attrs& attrs) {
  const TensorType& x = in[0];
  if (x.dtype != DType::UInt8) throw TypeError(std::string("CvCanny: image must be uint8, got ") + dtype_name(x.dtype));
  if (x.shape.size() != 2 && x.shape.size() != 3) {
    throw ValueError("CvCanny: image must be HxW or HxWxC, got shape " + shape_str(x.shape));
  }
  const int64_t aperture = attrs.get_int("aperture");
  if (aperture != 3 && aperture != 5 && aperture != 7) {
    throw ValueError("CvCanny: aperture must be 3, 5 or 7, got " + std::to_string(aperture));
  }
  return {TensorType{DType::UInt8, Shape{x.shape[0], x.shape[1]}}};
}

class CannyKernel : public Kernel {
 public:
  explicit CannyKernel(const KernelContext& ctx)
      : low_(ctx.attrs.get_float("low")),
        high_(ctx.attrs.get_float("high")),
        aperture_((int)ctx.attrs.get_int("aperture")),
        l2_(ctx.attrs.get_int("l2", 0) != 0) {}

  void execute(const KernelArgs& args, void*) override {
    const Shape& s = args.inputs[0]->type.shape;
    cpu::cv_canny::canny(args.inputs[0]->ptr<uint8_t>(), s[0], s[1], s.size() == 3 ? (int)s[2] : 1, low_, high_,
                         aperture_, l2_, args.outputs[0]->ptr<uint8_t>(), args.pool);
  }

 private:
  double low_, high_;
  int aperture_;
  bool l2_;
};

MNNPY_REGISTER_OP(OpDef{"CvCanny", 1, 1, infer_canny,
                        [](const KernelContext& ctx) { return std::unique_ptr<Kernel>(new CannyKernel(ctx)); },
                        {}, false});

}  // namespace

}  // namespace mnnpy
