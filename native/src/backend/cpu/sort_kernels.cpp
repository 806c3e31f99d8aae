// CPU kernel of TopK (ops/sort_ops.cpp), and NonMaxSuppression on host data (an eager
// function, not a graph op: its output length depends on the values).
#include <memory>
#include <string>

#include "backend/cpu/axis_split.h"
#include "backend/cpu/sort.h"
#include "mnnpy/backend.h"
#include "mnnpy/thread_pool.h"

namespace mnnpy {

namespace {

class TopKKernel : public Kernel {
 public:
  explicit TopKKernel(const KernelContext& ctx)
      : dtype_(ctx.input_types[0].dtype),
        k_(ctx.attrs.get_int("k")),
        largest_(ctx.attrs.get_int("largest") != 0),
        sorted_(ctx.attrs.get_int("sorted") != 0) {
    cpu::split_around_axes(ctx.input_types[0].shape, ctx.attrs.get_int("axis"), 1, outer_, n_, inner_);
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

MNNPY_REGISTER_KERNEL("TopK", "cpu", [](const KernelContext& ctx) {
  return std::unique_ptr<Kernel>(new TopKKernel(ctx));
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
