// OpenCV's linear filters as graph ops.
// CvSepFilter: inputs an HxW or HxWxC image (uint8, int16, float32, float64), the horizontal
//   kernel kx and the vertical kernel ky (float64 vectors); attrs border (BORDER_CONSTANT ..
//   BORDER_REFLECT_101; the constant is 0), ddepth (CV_8U 0, CV_16S 3, CV_32F 5, CV_64F 6: the
//   result's type), anchor_x / anchor_y (the taps over the output pixel), scale and delta
//   (result = scale * filtered + delta), fixed_point (uint8 -> uint8 with integer taps summing
//   to 256 each way: OpenCV's bit-exact smoothing) and square (filter the squared values).
// CvFilter2D: inputs the image and a float64 [kh, kw] kernel (correlation); attrs border,
//   ddepth, anchor_x, anchor_y, scale and delta as above.
// CvMorphology: inputs the image and a uint8 [kh, kw] structuring element (nonzero: used);
//   and the float64 [C] values read outside the image under BORDER_CONSTANT; attrs dilate (0:
//   erode, the minimum; 1: dilate, the maximum), border, anchor_x, anchor_y. The result has the
//   image's type.
// CvMedianBlur: input the image; attr ksize (odd, 3 to 7). Borders replicate, as OpenCV's do.
// CvBilateral8U: inputs a uint8 image of 1 or 3 channels, the float32 color weights [C * 256]
//   and the float64 window [n, 3] (dy, dx, space weight); attrs radius and border.
#include <string>

#include "backend/cpu/cv_filter.h"
#include "mnnpy/op_registry.h"
#include "ops/cv_image_checks.h"

namespace mnnpy {

namespace {

namespace cvf = cpu::cv_filter;

DType depth_dtype(int64_t ddepth, const char* op = "CvSepFilter") {
  switch (ddepth) {
    case 0: return DType::UInt8;
    case 3: return DType::Int16;
    case 5: return DType::Float32;
    case 6: return DType::Float64;
    default: throw ValueError(std::string(op) + ": ddepth must be CV_8U, CV_16S, CV_32F or CV_64F, got " + std::to_string(ddepth));
  }
}

using cv_checks::check_image;
using cv_checks::image_channels;
using cv_checks::is_image_dtype;

void check_border(const char* op, const Attrs& attrs) {
  const int64_t border = attrs.get_int("border");
  if (border < 0 || border > 4) throw ValueError(std::string(op) + ": border must be 0..4, got " + std::to_string(border));
}

// The plan's shape fields and border tables for a kh x kw window.
cvf::SepFilterPlan window_plan(const KernelContext& ctx, int64_t kh, int64_t kw) {
  cvf::SepFilterPlan plan;
  const TensorType& x = ctx.input_types[0];
  plan.height = x.shape[0];
  plan.width = x.shape[1];
  plan.channels = x.shape.size() == 3 ? x.shape[2] : 1;
  plan.src_dtype = x.dtype;
  plan.dst_dtype = ctx.output_types[0].dtype;
  plan.anchor_x = ctx.attrs.get_int("anchor_x");
  plan.anchor_y = ctx.attrs.get_int("anchor_y");
  const auto border = (cvf::Border)ctx.attrs.get_int("border");
  plan.col_index = cvf::border_indices(plan.width, plan.anchor_x, kw - 1 - plan.anchor_x, border);
  plan.row_index = cvf::border_indices(plan.height, plan.anchor_y, kh - 1 - plan.anchor_y, border);
  return plan;
}

void check_anchor(const char* op, const Attrs& attrs, int64_t kh, int64_t kw) {
  const int64_t ax = attrs.get_int("anchor_x"), ay = attrs.get_int("anchor_y");
  if (ax < 0 || ax >= kw || ay < 0 || ay >= kh) throw ValueError(std::string(op) + ": the anchor must lie inside the kernel");
}

std::vector<TensorType> infer_sep_filter(const std::vector<TensorType>& in, Attrs& attrs) {
  const TensorType& x = in[0];
  check_image("CvSepFilter", x);
  for (int k = 1; k <= 2; ++k) {
    if (in[k].dtype != DType::Float64 || in[k].shape.size() != 1 || in[k].shape[0] < 1) {
      throw ValueError(std::string("CvSepFilter: ") + (k == 1 ? "kx" : "ky") +
                       " must be a non-empty float64 vector, got " + dtype_name(in[k].dtype) + " " +
                       shape_str(in[k].shape));
    }
  }
  const int64_t border = attrs.get_int("border");
  if (border < 0 || border > 4) throw ValueError("CvSepFilter: border must be 0..4, got " + std::to_string(border));
  const DType out = depth_dtype(attrs.get_int("ddepth"));
  const int64_t ax = attrs.get_int("anchor_x"), ay = attrs.get_int("anchor_y");
  if (ax < 0 || ax >= in[1].shape[0] || ay < 0 || ay >= in[2].shape[0]) {
    throw ValueError("CvSepFilter: the anchor must lie inside the kernel");
  }
  attrs.get_float("scale");
  attrs.get_float("delta");
  if (attrs.get_int("fixed_point") && (x.dtype != DType::UInt8 || out != DType::UInt8)) {
    throw ValueError("CvSepFilter: fixed_point needs a uint8 image and result");
  }
  attrs.get_int("square");
  return {TensorType{out, x.shape}};
}

class SepFilterKernel : public Kernel {
 public:
  explicit SepFilterKernel(const KernelContext& ctx) {
    const TensorType& x = ctx.input_types[0];
    const int64_t kx = ctx.input_types[1].shape[0], ky = ctx.input_types[2].shape[0];
    plan_.height = x.shape[0];
    plan_.width = x.shape[1];
    plan_.channels = image_channels(x.shape);
    plan_.src_dtype = x.dtype;
    plan_.dst_dtype = ctx.output_types[0].dtype;
    plan_.anchor_x = ctx.attrs.get_int("anchor_x");
    plan_.anchor_y = ctx.attrs.get_int("anchor_y");
    const auto border = (cvf::Border)ctx.attrs.get_int("border");
    plan_.col_index = cvf::border_indices(plan_.width, plan_.anchor_x, kx - 1 - plan_.anchor_x, border);
    plan_.row_index = cvf::border_indices(plan_.height, plan_.anchor_y, ky - 1 - plan_.anchor_y, border);
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

MNNPY_REGISTER_OP(OpDef{"CvSepFilter", 3, 3, infer_sep_filter,
                        [](const KernelContext& ctx) { return std::unique_ptr<Kernel>(new SepFilterKernel(ctx)); },
                        {}, false});

std::vector<TensorType> infer_filter_2d(const std::vector<TensorType>& in, Attrs& attrs) {
  check_image("CvFilter2D", in[0]);
  if (in[1].dtype != DType::Float64 || in[1].shape.size() != 2 || in[1].numel() == 0) {
    throw ValueError("CvFilter2D: the kernel must be a non-empty float64 matrix, got " + std::string(dtype_name(in[1].dtype)) +
                     " " + shape_str(in[1].shape));
  }
  check_border("CvFilter2D", attrs);
  check_anchor("CvFilter2D", attrs, in[1].shape[0], in[1].shape[1]);
  const DType out = depth_dtype(attrs.get_int("ddepth"), "CvFilter2D");
  attrs.get_float("scale");
  attrs.get_float("delta");
  return {TensorType{out, in[0].shape}};
}

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

MNNPY_REGISTER_OP(OpDef{"CvFilter2D", 2, 2, infer_filter_2d,
                        [](const KernelContext& ctx) { return std::unique_ptr<Kernel>(new Filter2DKernel(ctx)); },
                        {}, false});

std::vector<TensorType> infer_morphology(const std::vector<TensorType>& in, Attrs& attrs) {
  check_image("CvMorphology", in[0]);
  if (in[1].dtype != DType::UInt8 || in[1].shape.size() != 2 || in[1].numel() == 0) {
    throw ValueError("CvMorphology: the structuring element must be a non-empty uint8 matrix, got " +
                     std::string(dtype_name(in[1].dtype)) + " " + shape_str(in[1].shape));
  }
  check_border("CvMorphology", attrs);
  check_anchor("CvMorphology", attrs, in[1].shape[0], in[1].shape[1]);
  attrs.get_int("dilate");
  const int64_t c = image_channels(in[0].shape);
  if (in[2].dtype != DType::Float64 || in[2].shape != Shape{c}) {
    throw ValueError("CvMorphology: the border values must be float64 [" + std::to_string(c) + "], got " +
                     std::string(dtype_name(in[2].dtype)) + " " + shape_str(in[2].shape));
  }
  return {in[0]};
}

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

MNNPY_REGISTER_OP(OpDef{"CvMorphology", 3, 3, infer_morphology,
                        [](const KernelContext& ctx) { return std::unique_ptr<Kernel>(new MorphologyKernel(ctx)); },
                        {}, false});

std::vector<TensorType> infer_median(const std::vector<TensorType>& in, Attrs& attrs) {
  check_image("CvMedianBlur", in[0]);
  const int64_t k = attrs.get_int("ksize");
  if (k < 3 || k % 2 == 0 || k * k > 49) throw ValueError("CvMedianBlur: ksize must be 3, 5 or 7, got " + std::to_string(k));
  return {in[0]};
}

class MedianKernel : public Kernel {
 public:
  explicit MedianKernel(const KernelContext& ctx) : ksize_(ctx.attrs.get_int("ksize")) {
    const TensorType& x = ctx.input_types[0];
    plan_.height = x.shape[0];
    plan_.width = x.shape[1];
    plan_.channels = image_channels(x.shape);
    plan_.src_dtype = plan_.dst_dtype = x.dtype;
    plan_.anchor_x = plan_.anchor_y = ksize_ / 2;
    plan_.col_index = cvf::border_indices(plan_.width, ksize_ / 2, ksize_ / 2, cvf::Border::Replicate);
    plan_.row_index = cvf::border_indices(plan_.height, ksize_ / 2, ksize_ / 2, cvf::Border::Replicate);
  }

  void execute(const KernelArgs& args, void*) const override {
    cvf::median_blur(plan_, ksize_, args.inputs[0]->data, args.outputs[0]->data, args.pool);
  }

 private:
  int64_t ksize_;
  cvf::SepFilterPlan plan_;
};

MNNPY_REGISTER_OP(OpDef{"CvMedianBlur", 1, 1, infer_median,
                        [](const KernelContext& ctx) { return std::unique_ptr<Kernel>(new MedianKernel(ctx)); },
                        {}, false});

std::vector<TensorType> infer_bilateral(const std::vector<TensorType>& in, Attrs& attrs) {
  check_image("CvBilateral8U", in[0]);
  const int64_t c = image_channels(in[0].shape);
  if (in[0].dtype != DType::UInt8 || (c != 1 && c != 3)) {
    throw ValueError("CvBilateral8U: the image must be uint8 with 1 or 3 channels");
  }
  if (in[1].dtype != DType::Float32 || in[1].shape != Shape{c * 256}) {
    throw ValueError("CvBilateral8U: the color weights must be float32 [" + std::to_string(c * 256) + "]");
  }
  if (in[2].dtype != DType::Float64 || in[2].shape.size() != 2 || in[2].shape[1] != 3) {
    throw ValueError("CvBilateral8U: the window must be float64 [n, 3]");
  }
  const int64_t radius = attrs.get_int("radius");
  if (radius < 1 || radius > 1000) throw ValueError("CvBilateral8U: radius must be 1..1000");
  check_border("CvBilateral8U", attrs);
  return {in[0]};
}

class BilateralKernel : public Kernel {
 public:
  explicit BilateralKernel(const KernelContext& ctx) : radius_(ctx.attrs.get_int("radius")) {
    const TensorType& x = ctx.input_types[0];
    plan_.height = x.shape[0];
    plan_.width = x.shape[1];
    plan_.channels = image_channels(x.shape);
    plan_.src_dtype = plan_.dst_dtype = x.dtype;
    plan_.anchor_x = plan_.anchor_y = radius_;
    const auto border = (cvf::Border)ctx.attrs.get_int("border");
    plan_.col_index = cvf::border_indices(plan_.width, radius_, radius_, border);
    plan_.row_index = cvf::border_indices(plan_.height, radius_, radius_, border);
  }

  void execute(const KernelArgs& args, void*) const override {
    const Tensor& window = *args.inputs[2];
    cvf::bilateral_u8(plan_, radius_, args.inputs[1]->ptr<float>(), window.ptr<double>(), window.type.shape[0],
                      args.inputs[0]->data, args.outputs[0]->data, args.pool);
  }

 private:
  int64_t radius_;
  cvf::SepFilterPlan plan_;
};

MNNPY_REGISTER_OP(OpDef{"CvBilateral8U", 3, 3, infer_bilateral,
                        [](const KernelContext& ctx) { return std::unique_ptr<Kernel>(new BilateralKernel(ctx)); },
                        {}, false});

}  // namespace

}  // namespace mnnpy
