// CPU kernels of the random draws (ops/random_ops.cpp): RandomFill, RandomPermutation and
// RandomWeightedIndices.
#include <memory>

#include "backend/cpu/random.h"
#include "mnnpy/backend.h"
#include "ops/random_dist.h"

namespace mnnpy {

namespace {

class RandomFillKernel : public Kernel {
 public:
  explicit RandomFillKernel(const KernelContext& ctx)
      : dist_(parse_random_dist(ctx.attrs.get_string("dist"))),
        dtype_(ctx.output_types[0].dtype),
        seed_((uint64_t)ctx.attrs.get_int("seed")),
        stream_((uint64_t)ctx.attrs.get_int("stream")),
        a_(ctx.attrs.has("a") ? ctx.attrs.get_float("a") : 0.0),
        b_(ctx.attrs.has("b") ? ctx.attrs.get_float("b") : 1.0),
        low_(ctx.attrs.get_int("low", 0)),
        span_((uint64_t)ctx.attrs.get_int("span", 0)) {}
  void execute(const KernelArgs& args, void*) const override {
    cpu::random_fill(dist_, dtype_, args.outputs[0]->numel(), seed_, stream_, a_, b_, low_, span_,
                     args.outputs[0]->data, args.pool);
  }
  const char* scheme() const override { return "philox4x32-10"; }

 private:
  RandomDist dist_;
  DType dtype_;
  uint64_t seed_, stream_;
  double a_, b_;
  int64_t low_;
  uint64_t span_;
};

class PermutationKernel : public Kernel {
 public:
  explicit PermutationKernel(const KernelContext& ctx)
      : seed_((uint64_t)ctx.attrs.get_int("seed")), stream_((uint64_t)ctx.attrs.get_int("stream")) {}
  void execute(const KernelArgs& args, void*) const override {
    cpu::random_permutation(args.outputs[0]->numel(), seed_, stream_, args.outputs[0]->ptr<int64_t>());
  }

 private:
  uint64_t seed_, stream_;
};

class WeightedKernel : public Kernel {
 public:
  explicit WeightedKernel(const KernelContext& ctx)
      : seed_((uint64_t)ctx.attrs.get_int("seed")), stream_((uint64_t)ctx.attrs.get_int("stream")) {}
  void execute(const KernelArgs& args, void*) const override {
    const Tensor& w = *args.inputs[0];
    cpu::random_weighted_indices(w.ptr<double>(), w.numel(), args.outputs[0]->numel(), seed_, stream_,
                                 args.outputs[0]->ptr<int64_t>(), args.pool);
  }

 private:
  uint64_t seed_, stream_;
};

MNNPY_REGISTER_KERNEL("RandomFill", "cpu", construct_kernel<RandomFillKernel>);
MNNPY_REGISTER_KERNEL("RandomPermutation", "cpu", construct_kernel<PermutationKernel>);
MNNPY_REGISTER_KERNEL("RandomWeightedIndices", "cpu", construct_kernel<WeightedKernel>);

}  // namespace

}  // namespace mnnpy
