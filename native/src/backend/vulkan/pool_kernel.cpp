// MaxPool2D and AvgPool2D on Vulkan (shaders/pool2d.comp), float32 NCHW; the blocked twins and the
// gradients stay on the CPU. Windows take an invocation per output, with the window tables the CPU
// kernel builds (ops/pool_windows.h); a window covering the whole plane (global pooling) is a
// per-plane reduction, a segment of invocations per plane.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backend/vulkan/vulkan_pipelines.h"
#include "backend/vulkan/vulkan_shapes.h"
#include "ops/pool_windows.h"

namespace mnnpy {
namespace vulkan {

namespace {

const uint32_t kPoolSpirv[] =
#include "backend/vulkan/shaders/pool2d.spv.inc"
    ;

constexpr uint32_t kWorkgroup = 256;
// Whole planes: each invocation of a plane's segment reads about this many elements.
constexpr int64_t kPlaneElementsPerInvocation = 8;

// The shader's push constants (std430).
struct PoolPush {
  uint32_t outputs, in_h, in_w, out_h, out_w;
  int32_t kernel_w, stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left;
  float plane_scale;
};

// Invocations per plane for whole-plane pooling: a power of two, enough that each reads few
// elements (a whole workgroup per plane past 1024 elements).
uint32_t plane_segment(int64_t elements) {
  uint32_t segment = 1;
  while (segment < kWorkgroup && segment * kPlaneElementsPerInvocation < elements) segment *= 2;
  return segment;
}

// The window tables, as the shader reads them: per output row first and last valid kernel row and
// 1 / its share of the divisor (float bits), then the same per output column.
std::vector<int32_t> window_table(const PoolWindows& w, int64_t out_h, int64_t out_w) {
  std::vector<int32_t> table;
  table.reserve(3 * (out_h + out_w));
  auto append = [&](const std::vector<int32_t>& first, const std::vector<int32_t>& last,
                    const std::vector<float>& inverse, int64_t n) {
    table.insert(table.end(), first.begin(), first.end());
    table.insert(table.end(), last.begin(), last.end());
    for (int64_t i = 0; i < n; ++i) {
      int32_t bits = 0;
      if (!inverse.empty()) std::memcpy(&bits, &inverse[i], sizeof bits);
      table.push_back(bits);
    }
  };
  append(w.row_first, w.row_last, w.inv_count_h, out_h);
  append(w.col_first, w.col_last, w.inv_count_w, out_w);
  return table;
}

class PoolKernel : public VulkanKernel {
 public:
  PoolKernel(const PoolGeometry& asked, bool is_max, bool count_include_pad)
      : PoolKernel(trim_padding_taps(asked), PoolWindows(asked, is_max, count_include_pad), is_max) {}

  const char* scheme() const override { return scheme_.c_str(); }

  void execute(const KernelArgs& args, void*) const override {
    if (push_.outputs == 0) return;
    const Tensor& in = *args.inputs[0];
    const Tensor& out = *args.outputs[0];
    const GroupGrid grid = group_grid(groups_);
    pipeline_->dispatch({resolve(out.data, out.nbytes()), resolve(in.data, in.nbytes()), table_.range()}, &push_,
                        grid.x, grid.y);
  }

 private:
  PoolKernel(const PoolGeometry& g, const PoolWindows& windows, bool is_max)
      : push_(make_push(g, windows)),
        segment_(windows.whole_plane ? plane_segment(g.in_h * g.in_w) : 1),
        groups_(windows.whole_plane ? groups_for((uint64_t)g.planes * segment_, kWorkgroup)
                                    : groups_for(push_.outputs, kWorkgroup)),
        scheme_(windows.whole_plane ? "plane/" + std::to_string(segment_) : "window"),
        table_([&] {
          const std::vector<int32_t> t = window_table(windows, g.out_h, g.out_w);
          return ParamBuffer(t.data(), t.size() * sizeof(int32_t));
        }()),
        pipeline_(pipeline_for(kPoolSpirv, sizeof(kPoolSpirv), 3, sizeof(PoolPush),
                               {is_max ? 1u : 0u, windows.whole_plane ? 1u : 0u, segment_})) {}

  static PoolPush make_push(const PoolGeometry& g, const PoolWindows& windows) {
    PoolPush p{};
    // Every tensor fits one binding, so element counts fit 32 bits.
    p.outputs = (uint32_t)(windows.whole_plane ? g.planes : g.planes * g.out_h * g.out_w);
    p.in_h = (uint32_t)g.in_h, p.in_w = (uint32_t)g.in_w, p.out_h = (uint32_t)g.out_h, p.out_w = (uint32_t)g.out_w;
    p.kernel_w = (int32_t)g.kernel_w, p.stride_h = (int32_t)g.stride_h, p.stride_w = (int32_t)g.stride_w;
    p.dilation_h = (int32_t)g.dilation_h, p.dilation_w = (int32_t)g.dilation_w;
    p.pad_top = (int32_t)g.pad_top, p.pad_left = (int32_t)g.pad_left;
    p.plane_scale = (float)(1.0 / (double)std::max<int64_t>(1, g.in_h * g.in_w));  // as the CPU's
    return p;
  }

  PoolPush push_;
  uint32_t segment_;  // whole planes: invocations per plane
  uint64_t groups_;
  std::string scheme_;
  ParamBuffer table_;
  std::shared_ptr<Pipeline> pipeline_;
};

template <bool kMax> std::unique_ptr<Kernel> make_pool_kernel(const KernelContext& ctx) {
  const Shape& in = ctx.input_types[0].shape;
  const Shape& out = ctx.output_types[0].shape;
  if (ctx.input_types[0].dtype != DType::Float32 || in.size() != 4) return nullptr;
  const auto& k = ctx.attrs.get_ints("kernel");
  const auto& s = ctx.attrs.get_ints("strides");
  const auto& p = ctx.attrs.get_ints("pads");
  const auto& d = ctx.attrs.get_ints("dilations");
  PoolGeometry g;
  g.planes = in[0] * in[1];
  g.in_h = in[2], g.in_w = in[3], g.out_h = out[2], g.out_w = out[3];
  g.kernel_h = k[0], g.kernel_w = k[1], g.stride_h = s[0], g.stride_w = s[1];
  g.dilation_h = d[0], g.dilation_w = d[1];
  g.pad_top = p[0], g.pad_left = p[1], g.pad_bottom = p[2], g.pad_right = p[3];
  // Positions are int32 in the shader: the trimmed kernel reaches at most the padded input, but the
  // attributes as asked may be anything a model says.
  const PoolGeometry t = trim_padding_taps(g);
  for (int64_t v : {t.kernel_w, t.stride_h, t.stride_w, t.dilation_h, t.dilation_w, t.pad_top, t.pad_left,
                    t.out_h * t.stride_h, t.out_w * t.stride_w, t.kernel_h * t.dilation_h, t.kernel_w * t.dilation_w}) {
    if (v > INT32_MAX || v < INT32_MIN) return nullptr;
  }
  const bool include = kMax ? false : ctx.attrs.get_int("count_include_pad") != 0;
  return new_kernel<PoolKernel>(g, kMax, include);
}

MNNPY_REGISTER_KERNEL("MaxPool2D", "vulkan", make_pool_kernel<true>);
MNNPY_REGISTER_KERNEL("AvgPool2D", "vulkan", make_pool_kernel<false>);

}  // namespace

}  // namespace vulkan
}  // namespace mnnpy
