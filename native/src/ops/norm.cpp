// LayerNorm: (x - mean) / sqrt(var + epsilon) * gamma + beta over the trailing axes from `axis`.
//   inputs: x (float32), optional gamma, optional beta (float32, the shape of x's normalized axes)
//   attrs:  axis (int, default -1; negative counts from the end), epsilon (float, default 1e-5)
//   output: like x
#include <string>
#include <vector>

#include "backend/cpu/layer_norm.h"
#include "mnnpy/op_registry.h"

namespace mnnpy {

namespace {

std::vector<TensorType> infer_layer_norm(const std::vector<TensorType>& in, Attrs& attrs) {
  static const char* names[] = {"x", "gamma", "beta"};
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i].dtype != DType::Float32) {
      throw TypeError(std::string("LayerNorm: ") + names[i] + " must be float32, got " + dtype_name(in[i].dtype));
    }
  }
  const Shape& x = in[0].shape;
  const int64_t rank = (int64_t)x.size();
  int64_t axis = attrs.has("axis") ? attrs.get_int("axis") : -1;
  if (axis < -rank || axis >= rank) {
    throw ValueError("LayerNorm: axis " + std::to_string(axis) + " is out of range for an input of shape " +
                     shape_str(x));
  }
  if (axis < 0) axis += rank;
  attrs.set("axis", axis);
  const double epsilon = attrs.has("epsilon") ? attrs.get_float("epsilon") : 1e-5;
  if (!(epsilon >= 0)) throw ValueError("LayerNorm: epsilon must be >= 0");
  attrs.set("epsilon", epsilon);
  const Shape normalized(x.begin() + axis, x.end());
  for (size_t i = 1; i < in.size(); ++i) {
    Shape s = in[i].shape;
    bool fits = s.size() <= normalized.size();
    if (fits) s.insert(s.begin(), normalized.size() - s.size(), 1);
    if (!fits || s != normalized) {
      throw ValueError(std::string("LayerNorm: ") + names[i] + " has shape " + shape_str(in[i].shape) +
                       ", expected the normalized axes' shape " + shape_str(normalized));
    }
  }
  return {in[0]};
}

class LayerNormKernel : public Kernel {
 public:
  explicit LayerNormKernel(const KernelContext& ctx) {
    const Shape& x = ctx.input_types[0].shape;
    const int64_t axis = ctx.attrs.get_int("axis");
    for (size_t i = 0; i < x.size(); ++i) ((int64_t)i < axis ? rows_ : dim_) *= x[i];
    epsilon_ = (float)ctx.attrs.get_float("epsilon");
  }
  void execute(const KernelArgs& args, void*) override {
    const float* gamma = args.inputs.size() > 1 ? args.inputs[1]->ptr<float>() : nullptr;
    const float* beta = args.inputs.size() > 2 ? args.inputs[2]->ptr<float>() : nullptr;
    if (dim_ == 0) return;
    cpu::layer_norm(args.inputs[0]->ptr<float>(), gamma, beta, rows_, dim_, epsilon_, args.outputs[0]->ptr<float>(),
                    args.pool);
  }

 private:
  int64_t rows_ = 1, dim_ = 1;
  float epsilon_ = 1e-5f;
};

OpDef layer_norm_def() {
  OpDef def;
  def.name = "LayerNorm";
  def.min_inputs = 1;
  def.max_inputs = 3;
  def.infer = infer_layer_norm;
  def.cpu_kernel = [](const KernelContext& ctx) { return std::unique_ptr<Kernel>(new LayerNormKernel(ctx)); };
  return def;
}

MNNPY_REGISTER_OP(layer_norm_def());

}  // namespace

}  // namespace mnnpy
