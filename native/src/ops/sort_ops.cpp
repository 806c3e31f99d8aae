// Selection ops. TopK is a graph op (two outputs: values and int64 indices) with ONNX's
// semantics. NonMaxSuppression is not: the number of boxes it selects depends on the data,
// so no shape can be inferred when the node is built; it is an eager function on known
// values instead (the ONNX converter calls it on constants), checked here.
#include <string>

#include "backend/cpu/sort.h"
#include "mnnpy/op_registry.h"
#include "mnnpy/thread_pool.h"
#include "ops/grad_common.h"

namespace mnnpy {

namespace {

bool topk_dtype_supported(DType t) {
  return t == DType::Int32 || t == DType::Int64 || t == DType::Float32 || t == DType::Float64;
}

// attrs: k (>= 0, at most the axis length), axis (negative counts from the end), largest and
// sorted (0/1, default 1). Outputs: values (x's dtype) and indices (int64), of x's shape with
// the axis cut to k.
std::vector<TensorType> infer_topk(const std::vector<TensorType>& in, Attrs& attrs) {
  const TensorType& x = in[0];
  if (!topk_dtype_supported(x.dtype)) {
    throw TypeError(std::string("TopK: x must be int32, int64, float32 or float64, got ") + dtype_name(x.dtype));
  }
  const int64_t rank = (int64_t)x.shape.size();
  if (rank == 0) throw ValueError("TopK: x must have at least one dimension");
  int64_t axis = attrs.get_int("axis", -1);
  if (axis < -rank || axis >= rank) {
    throw ValueError("TopK: axis " + std::to_string(axis) + " is out of range for an array of dimension " +
                     std::to_string(rank));
  }
  if (axis < 0) axis += rank;
  if (!attrs.has("k")) throw ValueError("TopK: the attribute k is missing");
  const int64_t k = attrs.get_int("k");
  if (k < 0) throw ValueError("TopK: k must not be negative, got " + std::to_string(k));
  if (k > x.shape[axis]) {
    throw ValueError("TopK: k = " + std::to_string(k) + " is larger than the length " + std::to_string(x.shape[axis]) +
                     " of axis " + std::to_string(axis));
  }
  // Normalized attributes: equal requests share a plan.
  attrs.set("axis", axis);
  attrs.set("largest", (int64_t)(attrs.get_int("largest", 1) != 0));
  attrs.set("sorted", (int64_t)(attrs.get_int("sorted", 1) != 0));
  Shape out = x.shape;
  out[axis] = k;
  return {TensorType{x.dtype, out}, TensorType{DType::Int64, out}};
}

class TopKKernel : public Kernel {
 public:
  explicit TopKKernel(const KernelContext& ctx)
      : dtype_(ctx.input_types[0].dtype),
        k_(ctx.attrs.get_int("k")),
        largest_(ctx.attrs.get_int("largest") != 0),
        sorted_(ctx.attrs.get_int("sorted") != 0) {
    const Shape& s = ctx.input_types[0].shape;
    const int64_t axis = ctx.attrs.get_int("axis");
    for (int64_t i = 0; i < (int64_t)s.size(); ++i) {
      if (i < axis) outer_ *= s[i];
      else if (i == axis) n_ = s[i];
      else inner_ *= s[i];
    }
  }
  void execute(const KernelArgs& args, void*) const override {
    cpu::topk(dtype_, args.inputs[0]->data, outer_, n_, inner_, k_, largest_, sorted_, args.outputs[0]->data,
              args.outputs[1]->ptr<int64_t>(), args.pool);
  }
  const char* scheme() const override { return k_ == 1 ? "scan" : k_ * 16 <= n_ ? "heap" : "nth_element"; }

 private:
  DType dtype_;
  int64_t k_;
  bool largest_, sorted_;
  int64_t outer_ = 1, n_ = 1, inner_ = 1;
};

MNNPY_REGISTER_OP(OpDef{"TopK", 1, 1, infer_topk,
                        [](const KernelContext& ctx) { return std::unique_ptr<Kernel>(new TopKKernel(ctx)); },
                        {}, false});

// The selected values' gradients go back through the indices output.
MNNPY_REGISTER_GRAD("TopK", [](const GradContext& c) {
  const Var& x = c.input(0);
  const int64_t axis = c.node.attrs.get_int("axis");
  const Var g = c.output_grads[0].valid() ? c.output_grads[0] : zeros_of(c.outputs[0].type());
  return std::vector<Var>{grad::scatter_add(g, c.outputs[1], axis, x.type().shape[axis], true)};
});

}  // namespace

std::vector<int64_t> non_max_suppression(const TensorType& boxes_type, const void* boxes, const TensorType& scores_type,
                                         const void* scores, const cpu::NmsOptions& options) {
  if (boxes_type.dtype != DType::Float32 || scores_type.dtype != DType::Float32) {
    throw TypeError(std::string("NonMaxSuppression: boxes and scores must be float32, got ") +
                    dtype_name(boxes_type.dtype) + " and " + dtype_name(scores_type.dtype));
  }
  const Shape& b = boxes_type.shape;
  const Shape& s = scores_type.shape;
  if (b.size() != 3 || b[2] != 4) {
    throw ValueError("NonMaxSuppression: boxes must have shape [batch, boxes, 4], got " + shape_str(b));
  }
  if (s.size() != 3) {
    throw ValueError("NonMaxSuppression: scores must have shape [batch, classes, boxes], got " + shape_str(s));
  }
  if (s[0] != b[0] || s[2] != b[1]) {
    throw ValueError("NonMaxSuppression: scores " + shape_str(s) + " do not match boxes " + shape_str(b) +
                     " (expected [" + std::to_string(b[0]) + ", classes, " + std::to_string(b[1]) + "])");
  }
  if (!(options.iou_threshold >= 0.f && options.iou_threshold <= 1.f)) {
    throw ValueError("NonMaxSuppression: iou_threshold must be in [0, 1], got " +
                     std::to_string(options.iou_threshold));
  }
  return cpu::non_max_suppression(static_cast<const float*>(boxes), static_cast<const float*>(scores), b[0], s[1],
                                  b[1], options, &ThreadPool::global());
}

}  // namespace mnnpy
