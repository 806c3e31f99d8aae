// CPU kernels of CvWarp, CvConvertMaps, CvRectSubPix, CvPyrDown and CvPyrUp (ops/cv_warp_ops.cpp).
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/cv_pyramid.h"
#include "backend/cpu/cv_warp.h"
#include "mnnpy/backend.h"
#include "ops/cv_image_checks.h"

namespace mnnpy {

namespace {

namespace warp = cpu::cv_warp;

using cv_checks::image_channels;
using cv_warp::map_inputs;

warp::WarpPlan warp_plan(const std::vector<TensorType>& in, const Attrs& attrs) {
  warp::WarpPlan p;
  const TensorType& src = in[0];
  p.dtype = src.dtype;
  p.src_h = src.shape[0];
  p.src_w = src.shape[1];
  p.channels = image_channels(src.shape);
  p.dst_w = attrs.get_int("width");
  p.dst_h = attrs.get_int("height");
  p.interpolation = (warp::Interpolation)attrs.get_int("interpolation");
  p.border = (warp::Border)attrs.get_int("border");
  p.mapping = (warp::Mapping)attrs.get_int("mapping");
  p.relative = attrs.get_int("relative", 0) != 0;
  for (int i = 0; i < 4; ++i) p.border_value[i] = attrs.get_float("border" + std::to_string(i));
  if (p.mapping == warp::Mapping::Affine || p.mapping == warp::Mapping::Perspective) {
    for (int i = 0; i < 9; ++i) p.matrix[i] = attrs.get_float("m" + std::to_string(i));
  }
  return p;
}

class WarpKernel : public Kernel {
 public:
  explicit WarpKernel(const KernelContext& ctx)
      : plan_(warp_plan(ctx.input_types, ctx.attrs)), maps_(map_inputs(ctx.attrs)),
        transparent_(ctx.attrs.get_int("transparent", 0) != 0) {}

  void execute(const KernelArgs& args, void*) const override {
    const Tensor* src = args.inputs[0];
    const void* map1 = maps_ >= 1 ? args.inputs[1]->data : nullptr;
    const void* map2 = maps_ >= 2 ? args.inputs[2]->data : nullptr;
    Tensor* out = args.outputs[0];
    if (transparent_) std::memcpy(out->data, args.inputs.back()->data, out->type.nbytes());
    warp::warp(plan_, src->data, map1, map2, out->data, args.pool);
  }
  const char* scheme() const override {
    return warp::uses_float_coordinates(plan_) ? "float-coordinates" : "fixed-point";
  }

 private:
  warp::WarpPlan plan_;
  size_t maps_;
  bool transparent_;
};

MNNPY_REGISTER_KERNEL("CvWarp", "cpu", construct_kernel<WarpKernel>);

class ConvertMapsKernel : public Kernel {
 public:
  explicit ConvertMapsKernel(const KernelContext& ctx)
      : from_float_(ctx.attrs.get_int("from_float") != 0), src_packed_(ctx.attrs.get_int("src_packed") != 0),
        dst_packed_(ctx.attrs.get_int("dst_packed") != 0), nearest_(ctx.attrs.get_int("nearest") != 0),
        n_(ctx.input_types[0].shape[0] * ctx.input_types[0].shape[1]) {}

  void execute(const KernelArgs& args, void*) const override {
    const void* m2 = args.inputs.size() > 1 ? args.inputs[1]->data : nullptr;
    void* o2 = args.outputs.size() > 1 ? args.outputs[1]->data : nullptr;
    warp::convert_maps(from_float_, src_packed_, dst_packed_, nearest_, n_, args.inputs[0]->data, m2,
                       args.outputs[0]->data, o2, args.pool);
  }

 private:
  bool from_float_, src_packed_, dst_packed_, nearest_;
  int64_t n_;
};

MNNPY_REGISTER_KERNEL("CvConvertMaps", "cpu", construct_kernel<ConvertMapsKernel>);

class RectSubPixKernel : public Kernel {
 public:
  explicit RectSubPixKernel(const KernelContext& ctx)
      : src_(ctx.input_types[0]), out_(ctx.output_types[0]), cx_(ctx.attrs.get_float("cx")),
        cy_(ctx.attrs.get_float("cy")) {}

  void execute(const KernelArgs& args, void*) const override {
    warp::rect_sub_pix(src_.dtype, out_.dtype, src_.shape[0], src_.shape[1], image_channels(src_.shape),
                       out_.shape[0], out_.shape[1], cx_, cy_, args.inputs[0]->data, args.outputs[0]->data);
  }

 private:
  TensorType src_, out_;
  double cx_, cy_;
};

MNNPY_REGISTER_KERNEL("CvRectSubPix", "cpu", construct_kernel<RectSubPixKernel>);

class PyramidKernel : public Kernel {
 public:
  PyramidKernel(const KernelContext& ctx, bool down)
      : in_(ctx.input_types[0]), out_(ctx.output_types[0]), down_(down),
        border_(down ? (int)ctx.attrs.get_int("border") : 4) {}

  void execute(const KernelArgs& args, void*) const override {
    const int64_t cn = image_channels(in_.shape);
    if (down_) {
      cpu::cv_pyramid::pyr_down(in_.dtype, in_.shape[0], in_.shape[1], cn, out_.shape[0], out_.shape[1], border_,
                                args.inputs[0]->data, args.outputs[0]->data, args.pool);
    } else {
      cpu::cv_pyramid::pyr_up(in_.dtype, in_.shape[0], in_.shape[1], cn, out_.shape[0], out_.shape[1],
                              args.inputs[0]->data, args.outputs[0]->data, args.pool);
    }
  }

 private:
  TensorType in_, out_;
  bool down_;
  int border_;
};

MNNPY_REGISTER_KERNEL("CvPyrDown", "cpu", [](const KernelContext& ctx) {
  return new_kernel<PyramidKernel>(ctx, true);
});
MNNPY_REGISTER_KERNEL("CvPyrUp", "cpu", [](const KernelContext& ctx) {
  return new_kernel<PyramidKernel>(ctx, false);
});

}  // namespace

}  // namespace mnnpy
