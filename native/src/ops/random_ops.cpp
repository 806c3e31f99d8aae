// Random draws as graph ops. Each node is one fixed draw: its seed and stream attributes pick
// the numbers (callers give every call a new stream), so re-evaluating a node or a plan
// gives the same values, and threads split the work without changing them.
#include <string>

#include "backend/cpu/random.h"
#include "mnnpy/op_registry.h"

namespace mnnpy {

namespace {

cpu::RandomDist parse_dist(const std::string& name) {
  if (name == "uniform") return cpu::RandomDist::Uniform;
  if (name == "normal") return cpu::RandomDist::Normal;
  if (name == "exponential") return cpu::RandomDist::Exponential;
  if (name == "integers") return cpu::RandomDist::Integers;
  throw ValueError("RandomFill: unknown distribution '" + name + "'");
}

Shape checked_shape(const Attrs& attrs, const char* op) {
  Shape shape = attrs.has("shape") ? attrs.get_ints("shape") : Shape{};
  for (int64_t d : shape) {
    if (d < 0) throw ValueError(std::string(op) + ": negative dimensions are not allowed");
  }
  return shape;
}

// attrs: dist (uniform/normal/exponential/integers), dtype, shape, seed, stream; a, b (floats:
// location and scale) or low, span (integers; span is an unsigned 64-bit count stored as int64).
std::vector<TensorType> infer_random_fill(const std::vector<TensorType>&, Attrs& attrs) {
  const cpu::RandomDist dist = parse_dist(attrs.get_string("dist"));
  DType dt;
  if (!dtype_from_name(attrs.get_string("dtype"), &dt)) throw TypeError("RandomFill: unknown dtype");
  if (dist == cpu::RandomDist::Integers) {
    if (!is_integer(dt) && dt != DType::Bool) throw TypeError("RandomFill: integers need an integer or bool dtype");
  } else if (dt != DType::Float32 && dt != DType::Float64) {
    throw TypeError(std::string("RandomFill: unsupported dtype ") + dtype_name(dt) + " (float32 or float64)");
  }
  return {TensorType{dt, checked_shape(attrs, "RandomFill")}};
}

class RandomFillKernel : public Kernel {
 public:
  explicit RandomFillKernel(const KernelContext& ctx)
      : dist_(parse_dist(ctx.attrs.get_string("dist"))),
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
  cpu::RandomDist dist_;
  DType dtype_;
  uint64_t seed_, stream_;
  double a_, b_;
  int64_t low_;
  uint64_t span_;
};

MNNPY_REGISTER_OP(OpDef{"RandomFill", 0, 0, infer_random_fill,
                        [](const KernelContext& ctx) { return std::unique_ptr<Kernel>(new RandomFillKernel(ctx)); },
                        {}, false});

// attrs: n, seed, stream. Output: a permutation of [0, n) as int64.
std::vector<TensorType> infer_permutation(const std::vector<TensorType>&, Attrs& attrs) {
  const int64_t n = attrs.get_int("n");
  if (n < 0) throw ValueError("RandomPermutation: n must not be negative");
  return {TensorType{DType::Int64, Shape{n}}};
}

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

MNNPY_REGISTER_OP(OpDef{"RandomPermutation", 0, 0, infer_permutation,
                        [](const KernelContext& ctx) { return std::unique_ptr<Kernel>(new PermutationKernel(ctx)); },
                        {}, false});

// Input: weights (float64, 1-D, non-negative, checked by the caller). attrs: shape, seed,
// stream. Output: int64 indices drawn with replacement, probability proportional to weight.
std::vector<TensorType> infer_weighted(const std::vector<TensorType>& in, Attrs& attrs) {
  if (in[0].dtype != DType::Float64 || in[0].shape.size() != 1 || in[0].shape[0] == 0) {
    throw ValueError("RandomWeightedIndices: weights must be a non-empty 1-D float64 array");
  }
  return {TensorType{DType::Int64, checked_shape(attrs, "RandomWeightedIndices")}};
}

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

MNNPY_REGISTER_OP(OpDef{"RandomWeightedIndices", 1, 1, infer_weighted,
                        [](const KernelContext& ctx) { return std::unique_ptr<Kernel>(new WeightedKernel(ctx)); },
                        {}, false});

}  // namespace

}  // namespace mnnpy
