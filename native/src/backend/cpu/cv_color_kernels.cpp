// CPU kernels of CvColor, CvSplit and CvMerge (ops/cv_color.cpp).
#include <cstring>
#include <memory>

#include "backend/cpu/cv_color.h"
#include "mnnpy/backend.h"
#include "mnnpy/thread_pool.h"

namespace mnnpy {

namespace {

using cpu::cv_color::ColorJob;
using cpu::cv_color::Kind;

// Channels of an HxW (1) or HxWxC image type.
int64_t channels_of(const TensorType& t) { return t.shape.size() == 2 ? 1 : t.shape[2]; }

class ColorKernel : public Kernel {
 public:
  explicit ColorKernel(const KernelContext& ctx) {
    const Attrs& a = ctx.attrs;
    const TensorType& x = ctx.input_types[0];
    const TensorType& y = ctx.output_types[0];
    job_.kind = (Kind)a.get_int("kind");  // checked by the inference
    job_.src_channels = (int)a.get_int("scn");
    job_.dst_channels = (int)a.get_int("dcn");
    job_.blue = (int)a.get_int("blue", 0);
    if (a.has("order")) {
      const auto& order = a.get_ints("order");
      for (size_t i = 0; i < order.size() && i < 4; ++i) job_.order[i] = (int)order[i];
    }
    job_.yuv = a.get_int("yuv", 0) != 0;
    job_.hue_range = (int)a.get_int("hue_range", 180);
    job_.srgb = a.get_int("srgb", 1) != 0;
    job_.green_bits = (int)a.get_int("green_bits", 6);
    job_.u_first = (int)a.get_int("u_first", 1);
    job_.interleaved_chroma = a.get_int("interleaved_chroma", 0) != 0 || ctx.input_types.size() == 2;
    job_.luma_index = (int)a.get_int("luma_index", 0);
    job_.u_index = (int)a.get_int("u_index", 1);
    job_.bayer_pattern = (int)a.get_int("bayer_pattern", 0);
    job_.is_float = x.dtype == DType::Float32;
    // The RGB side's size: the output's for conversions to RGB or gray, the input's otherwise.
    const bool from_rgb = job_.kind == Kind::RgbToYuv420;
    job_.height = from_rgb ? x.shape[0] : y.shape[0];
    job_.width = x.shape[1];
  }

  void execute(const KernelArgs& args, void*) const override {
    ColorJob job = job_;
    job.src = args.inputs[0]->data;
    job.chroma = args.inputs.size() == 2 ? args.inputs[1]->data : nullptr;
    job.dst = args.outputs[0]->data;
    cpu::cv_color::run(job, args.pool);
  }

 private:
  ColorJob job_;
};

MNNPY_REGISTER_KERNEL("CvColor", "cpu", construct_kernel<ColorKernel>);

class SplitKernel : public Kernel {
 public:
  void execute(const KernelArgs& args, void*) const override {
    const Tensor& x = *args.inputs[0];
    const int64_t c = (int64_t)args.outputs.size(), pixels = x.type.shape[0] * x.type.shape[1];
    const size_t e = dtype_size(x.type.dtype);
    parallel_for(args.pool, pixels, 1 << 15, [&](int64_t p0, int64_t p1) {
      for (int64_t k = 0; k < c; ++k) {
        const char* s = (const char*)x.data + k * e;
        char* d = (char*)args.outputs[k]->data;
        copy_strided(s, d, p0, p1, c, e);
      }
    });
  }

  // d[p] = s[p * stride] for elements of `e` bytes.
  static void copy_strided(const char* s, char* d, int64_t p0, int64_t p1, int64_t stride, size_t e) {
    switch (e) {
      case 1: for (int64_t p = p0; p < p1; ++p) d[p] = s[p * stride]; break;
      case 2: for (int64_t p = p0; p < p1; ++p) std::memcpy(d + 2 * p, s + 2 * p * stride, 2); break;
      case 4: for (int64_t p = p0; p < p1; ++p) std::memcpy(d + 4 * p, s + 4 * p * stride, 4); break;
      default: for (int64_t p = p0; p < p1; ++p) std::memcpy(d + e * p, s + e * p * stride, e); break;
    }
  }
};

MNNPY_REGISTER_KERNEL("CvSplit", "cpu", [](const KernelContext&) {
  return new_kernel<SplitKernel>();
});

class MergeKernel : public Kernel {
 public:
  void execute(const KernelArgs& args, void*) const override {
    const Tensor& y = *args.outputs[0];
    const int64_t total = y.type.shape[2], pixels = y.type.shape[0] * y.type.shape[1];
    const size_t e = dtype_size(y.type.dtype);
    parallel_for(args.pool, pixels, 1 << 15, [&](int64_t p0, int64_t p1) {
      int64_t offset = 0;
      for (const Tensor* x : args.inputs) {
        const int64_t c = channels_of(x->type);
        const char* s = (const char*)x->data;
        char* d = (char*)y.data + offset * e;
        if (c == 1 && e == 1) {
          for (int64_t p = p0; p < p1; ++p) d[p * total] = s[p];
        } else if (c == 1 && e == 4) {
          for (int64_t p = p0; p < p1; ++p) std::memcpy(d + 4 * p * total, s + 4 * p, 4);
        } else {
          for (int64_t p = p0; p < p1; ++p) std::memcpy(d + e * p * total, s + e * p * c, e * c);
        }
        offset += c;
      }
    });
  }
};

MNNPY_REGISTER_KERNEL("CvMerge", "cpu", [](const KernelContext&) {
  return new_kernel<MergeKernel>();
});

}  // namespace

}  // namespace mnnpy
