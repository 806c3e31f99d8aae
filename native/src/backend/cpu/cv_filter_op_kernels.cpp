// CPU kernels of CvSepFilter, CvFilter2D, CvMorphology, CvMedianBlur and CvBilateral8U (ops/cv_filter_ops.cpp).
#include <memory>

#include "backend/cpu/cv_filter.h"
#include "mnnpy/backend.h"
#include "ops/cv_image_checks.h"

namespace mnnpy {

namespace {

namespace cvf = cpu::cv_filter;

using cv_checks::image_channels;

// The plan's shape fields and border tables for a kh x kw window anchored at (anchor_y, anchor_x).
cvf::SepFilterPlan window_plan(const KernelContext& ctx, int64_t kh, int64_t kw, int64_t anchor_y, int64_t anchor_x,
                               cvf::Border border) {
  cvf::SepFilterPlan plan;
  const TensorType& x = ctx.input_types[0];
  plan.height = x.shape[0];
  plan.width = x.shape[1];
  plan.channels = image_channels(x.shape);
  plan.src_dtype = x.dtype;
  plan.dst_dtype = ctx.output_types[0].dtype;
  plan.anchor_x = anchor_x;
  plan.anchor_y = anchor_y;
  plan.col_index = cvf::border_indices(plan.width, anchor_x, kw - 1 - anchor_x, border);
  plan.row_index = cvf::border_indices(plan.height, anchor_y, kh - 1 - anchor_y, border);
  return plan;
}

// The same, with the anchor and the border from the node's attributes.
cvf::SepFilterPlan window_plan(const KernelContext& ctx, int64_t kh, int64_t kw) {
  return window_plan(ctx, kh, kw, ctx.attrs.get_int("anchor_y"), ctx.attrs.get_int("anchor_x"),
                     (cvf::Border)ctx.attrs.get_int("border"));
}

class SepFilterKernel : public Kernel {
 public:
  explicit SepFilterKernel(const KernelContext& ctx)
      : plan_(window_plan(ctx, ctx.input_types[2].shape[0], ctx.input_types[1].shape[0])) {
    plan_.scale = ctx.attrs.get_float("scale");
    plan_.delta = ctx.attrs.get_float("delta");
    plan_.fixed_point_u8 = ctx.attrs.get_int("fixed_point") != 0;
    plan_.square = ctx.attrs.get_int("square") != 0;
  }

  void execute(const KernelArgs& args, void*) const override {
    const Tensor& kx = *args.inputs[1];
    const Tensor& ky = *args.inputs[2];
    cvf::sep_filter(plan_, kx.ptr<double>(), kx.numel(), ky.ptr<double>(), ky.numel(), args.inputs[0]->data,
                    args.outputs[0]->data, args.pool);
  }

  const char* scheme() const override { return plan_.fixed_point_u8 ? "separable fixed-point" : "separable"; }

 private:
  cvf::SepFilterPlan plan_;
};

MNNPY_REGISTER_KERNEL("CvSepFilter", "cpu", construct_kernel<SepFilterKernel>);

class Filter2DKernel : public Kernel {
 public:
  explicit Filter2DKernel(const KernelContext& ctx)
      : kh_(ctx.input_types[1].shape[0]), kw_(ctx.input_types[1].shape[1]), plan_(window_plan(ctx, kh_, kw_)) {
    plan_.scale = ctx.attrs.get_float("scale");
    plan_.delta = ctx.attrs.get_float("delta");
  }

  void execute(const KernelArgs& args, void*) const override {
    cvf::filter_2d(plan_, args.inputs[1]->ptr<double>(), kh_, kw_, args.inputs[0]->data, args.outputs[0]->data,
                   args.pool);
  }

 private:
  int64_t kh_, kw_;
  cvf::SepFilterPlan plan_;
};

MNNPY_REGISTER_KERNEL("CvFilter2D", "cpu", construct_kernel<Filter2DKernel>);

class MorphologyKernel : public Kernel {
 public:
  explicit MorphologyKernel(const KernelContext& ctx)
      : kh_(ctx.input_types[1].shape[0]),
        kw_(ctx.input_types[1].shape[1]),
        plan_(window_plan(ctx, kh_, kw_)),
        dilate_(ctx.attrs.get_int("dilate") != 0) {}

  void execute(const KernelArgs& args, void*) const override {
    cvf::morphology(plan_, args.inputs[1]->ptr<uint8_t>(), kh_, kw_, dilate_, args.inputs[2]->ptr<double>(),
                    args.inputs[0]->data,
                    args.outputs[0]->data, args.pool);
  }

 private:
  int64_t kh_, kw_;
  cvf::SepFilterPlan plan_;
  bool dilate_;
};

MNNPY_REGISTER_KERNEL("CvMorphology", "cpu", construct_kernel<MorphologyKernel>);

class MedianKernel : public Kernel {
 public:
  // ksize is odd (the op checks), so the window reaches ksize / 2 to each side.
  explicit MedianKernel(const KernelContext& ctx)
      : ksize_(ctx.attrs.get_int("ksize")),
        plan_(window_plan(ctx, ksize_, ksize_, ksize_ / 2, ksize_ / 2, cvf::Border::Replicate)) {}

  void execute(const KernelArgs& args, void*) const override {
    cvf::median_blur(plan_, ksize_, args.inputs[0]->data, args.outputs[0]->data, args.pool);
  }

 private:
  int64_t ksize_;
  cvf::SepFilterPlan plan_;
};

MNNPY_REGISTER_KERNEL("CvMedianBlur", "cpu", construct_kernel<MedianKernel>);

class BilateralKernel : public Kernel {
 public:
  explicit BilateralKernel(const KernelContext& ctx)
      : radius_(ctx.attrs.get_int("radius")),
        plan_(window_plan(ctx, 2 * radius_ + 1, 2 * radius_ + 1, radius_, radius_,
                          (cvf::Border)ctx.attrs.get_int("border"))) {}

  void execute(const KernelArgs& args, void*) const override {
    const Tensor& window = *args.inputs[2];
    cvf::bilateral_u8(plan_, radius_, args.inputs[1]->ptr<float>(), window.ptr<double>(), window.type.shape[0],
                      args.inputs[0]->data, args.outputs[0]->data, args.pool);
  }

 private:
  int64_t radius_;
  cvf::SepFilterPlan plan_;
};

MNNPY_REGISTER_KERNEL("CvBilateral8U", "cpu", construct_kernel<BilateralKernel>);

}  // namespace

}  // namespace mnnpy
