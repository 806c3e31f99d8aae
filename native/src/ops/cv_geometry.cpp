// OpenCV's geometric transforms as graph ops.
// CvResize: input an HxW or HxWxC image (uint8, int16, float32, float64); attrs width, height
//   (the output size), inv_scale_x, inv_scale_y (output over input size, or OpenCV's fx / fy),
//   interpolation (OpenCV's INTER_* value).
// CvFlip: input an image; attr code (OpenCV's flipCode: 0 rows, > 0 columns, < 0 both).
#include <memory>
#include <string>

#include "backend/cpu/cv_resize.h"
#include "mnnpy/op_registry.h"

namespace mnnpy {

namespace {

namespace geo = cpu::cv_geometry;

void check_image(const char* op, const TensorType& x) {
  const DType dt = x.dtype;
  if (dt != DType::UInt8 && dt != DType::Int16 && dt != DType::Float32 && dt != DType::Float64) {
    throw TypeError(std::string(op) + ": image dtype must be uint8, int16, float32 or float64, got " +
                    dtype_name(dt));
  }
  if (x.shape.size() != 2 && x.shape.size() != 3) {
    throw ValueError(std::string(op) + ": image must be HxW or HxWxC, got shape " + shape_str(x.shape));
  }
  for (int64_t s : x.shape) {
    if (s <= 0) throw ValueError(std::string(op) + ": image is empty, shape " + shape_str(x.shape));
  }
}

int64_t image_channels(const Shape& s) { return s.size() == 3 ? s[2] : 1; }

std::vector<TensorType> infer_resize(const std::vector<TensorType>& in, Attrs& attrs) {
  check_image("CvResize", in[0]);
  const int64_t width = attrs.get_int("width"), height = attrs.get_int("height");
  if (width <= 0 || height <= 0) {
    throw ValueError("CvResize: output size must be positive, got " + std::to_string(width) + "x" +
                     std::to_string(height));
  }
  if (!(attrs.get_float("inv_scale_x") > 0) || !(attrs.get_float("inv_scale_y") > 0)) {
    throw ValueError("CvResize: scale factors must be positive");
  }
  const int64_t interpolation = attrs.get_int("interpolation");
  // INTER_LINEAR_EXACT (5) and INTER_NEAREST_EXACT (6) do not yet match OpenCV's rounding.
  if (interpolation < 0 || interpolation > 4) {
    throw ValueError("CvResize: unknown or unsupported interpolation " + std::to_string(interpolation));
  }
  Shape out = in[0].shape;
  out[0] = height;
  out[1] = width;
  return {TensorType{in[0].dtype, out}};
}

class ResizeKernel : public Kernel {
 public:
  explicit ResizeKernel(const KernelContext& ctx)
      : plan_(ctx.input_types[0].dtype, ctx.input_types[0].shape[0], ctx.input_types[0].shape[1],
              image_channels(ctx.input_types[0].shape), ctx.output_types[0].shape[0], ctx.output_types[0].shape[1],
              ctx.attrs.get_float("inv_scale_x"), ctx.attrs.get_float("inv_scale_y"),
              (geo::Interpolation)ctx.attrs.get_int("interpolation")) {}

  void execute(const KernelArgs& args, void*) override {
    plan_.run(args.inputs[0]->data, args.outputs[0]->data, args.pool);
  }
  const char* scheme() const override { return plan_.scheme(); }

 private:
  geo::ResizePlan plan_;
};

MNNPY_REGISTER_OP(OpDef{"CvResize", 1, 1, infer_resize,
                        [](const KernelContext& ctx) { return std::unique_ptr<Kernel>(new ResizeKernel(ctx)); },
                        {}, false});

std::vector<TensorType> infer_flip(const std::vector<TensorType>& in, Attrs& attrs) {
  check_image("CvFlip", in[0]);
  attrs.get_int("code");
  return {in[0]};
}

std::vector<int32_t> positions(int64_t n, bool reversed) {
  std::vector<int32_t> index(n);
  for (int64_t i = 0; i < n; ++i) index[i] = (int32_t)(reversed ? n - 1 - i : i);
  return index;
}

class FlipKernel : public Kernel {
 public:
  explicit FlipKernel(const KernelContext& ctx)
      : plan_(ctx.input_types[0].dtype, ctx.input_types[0].shape[0], ctx.input_types[0].shape[1],
              image_channels(ctx.input_types[0].shape),
              positions(ctx.input_types[0].shape[0], ctx.attrs.get_int("code") <= 0),
              positions(ctx.input_types[0].shape[1], ctx.attrs.get_int("code") != 0)) {}

  void execute(const KernelArgs& args, void*) override {
    plan_.run(args.inputs[0]->data, args.outputs[0]->data, args.pool);
  }

 private:
  geo::ResizePlan plan_;
};

MNNPY_REGISTER_OP(OpDef{"CvFlip", 1, 1, infer_flip,
                        [](const KernelContext& ctx) { return std::unique_ptr<Kernel>(new FlipKernel(ctx)); },
                        {}, false});

}  // namespace

}  // namespace mnnpy
