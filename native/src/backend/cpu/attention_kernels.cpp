// CPU kernel of ScaledDotProductAttention (ops/attention.cpp).
#include <memory>

#include "backend/cpu/attention.h"
#include "mnnpy/backend.h"

namespace mnnpy {

namespace {

class AttentionKernel : public Kernel {
 public:
  explicit AttentionKernel(const KernelContext& ctx) {
    const Shape &q = ctx.input_types[0].shape, &kt = ctx.input_types[1].shape, &v = ctx.input_types[2].shape;
    const size_t r = q.size();
    s_.queries = q[r - 2], s_.depth = q[r - 1], s_.keys = kt[r - 1], s_.value_depth = v[r - 1];
    s_.batch = 1;
    for (size_t i = 0; i + 2 < r; ++i) s_.batch *= q[i];
    s_.scale = (float)ctx.attrs.get_float("scale");
    if (ctx.input_types.size() > 3) {
      // Strides of the mask seen as [leading..., S, T], 0 along broadcast dimensions.
      Shape m = ctx.input_types[3].shape;
      m.insert(m.begin(), r - m.size(), 1);
      std::vector<int64_t> stride(r, 0);
      int64_t step = 1;
      for (size_t i = r; i-- > 0;) {
        stride[i] = m[i] == 1 ? 0 : step;
        step *= m[i];
      }
      s_.mask_row_stride = stride[r - 2], s_.mask_col_stride = stride[r - 1];
      offsets_.resize((size_t)s_.batch);
      for (int64_t b = 0; b < s_.batch; ++b) {
        int64_t rem = b, off = 0;
        for (size_t i = r - 2; i-- > 0;) {
          off += (rem % q[i]) * stride[i];
          rem /= q[i];
        }
        offsets_[(size_t)b] = off;
      }
      s_.mask_batch_offset = offsets_.data();
    }
  }
  const char* scheme() const override { return "row_blocks"; }
  double flops() const override {
    return 2.0 * (double)s_.batch * (double)s_.queries * (double)s_.keys * (double)(s_.depth + s_.value_depth);
  }
  void execute(const KernelArgs& args, void*) const override {
    const float* mask = args.inputs.size() > 3 ? args.inputs[3]->ptr<float>() : nullptr;
    cpu::attention(s_, args.inputs[0]->ptr<float>(), args.inputs[1]->ptr<float>(), args.inputs[2]->ptr<float>(), mask,
                   args.outputs[0]->ptr<float>(), args.pool);
  }

 private:
  cpu::AttentionShape s_;
  std::vector<int64_t> offsets_;
};

MNNPY_REGISTER_KERNEL("ScaledDotProductAttention", "cpu", construct_kernel<AttentionKernel>);

}  // namespace

}  // namespace mnnpy
