// Resize on Vulkan (shaders/resize_body.glsl), float32 [N, C, H, W] or [N, C, W], every mode the op
// has: nearest gathers; linear and cubic (antialiased too) combine the CPU's own tap tables
// (ops/resize_taps.h) in the CPU's order with fused multiply-adds rounded once, so results match
// the CPU's bit for bit. Those take float64 (resize_exact.comp): without it they stay on the CPU,
// as do antialiased windows too wide for one invocation. ResizeGrad stays on the CPU.
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/vulkan/vulkan_pipelines.h"
#include "backend/vulkan/vulkan_shapes.h"
#include "ops/resize_taps.h"

namespace mnnpy {
namespace vulkan {

namespace {

const uint32_t kResizeSpirv[] =
#include "backend/vulkan/shaders/resize.spv.inc"
    ;
const uint32_t kResizeExactSpirv[] =
#include "backend/vulkan/shaders/resize_exact.spv.inc"
    ;

constexpr uint32_t kWorkgroup = 256;
// Taps one output may combine (rows times columns): an antialiased downsampling by more than about 8
// (cubic) or 16 (linear) along both axes leaves too few outputs, each too long, for the device.
constexpr int64_t kMaxTapsPerOutput = 4096;

// The shader's push constants (std430).
struct ResizePush {
  uint32_t outputs, in_h, in_w, out_h, out_w;
  uint32_t taps_h, taps_w;
  uint32_t row_weights, col_indices, col_weights;
};

int32_t float_bits(float v) {
  int32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
}

// The shader's table (its offsets written into push): row taps' input rows (a tap of weight 0
// reads tap 0's row, as the CPU's vertical pass does) and weights, then the column taps' input
// columns and weights.
std::vector<int32_t> tap_table(const ResizeAxis& rows, const ResizeAxis& cols, ResizePush& push) {
  const int64_t row_taps = rows.taps * rows.out, col_taps = cols.taps * cols.out;
  std::vector<int32_t> table;
  table.reserve(2 * (row_taps + col_taps));
  for (int64_t t = 0; t < rows.taps; ++t) {
    for (int64_t o = 0; o < rows.out; ++o) {
      const int64_t at = t * rows.out + o;
      table.push_back(rows.weight[at] != 0.0f || t == 0 ? rows.index[at] : rows.index[o]);
    }
  }
  push.row_weights = (uint32_t)table.size();
  for (int64_t at = 0; at < row_taps; ++at) table.push_back(float_bits(rows.weight[at]));
  push.col_indices = (uint32_t)table.size();
  table.insert(table.end(), cols.index.begin(), cols.index.end());
  push.col_weights = (uint32_t)table.size();
  for (int64_t at = 0; at < col_taps; ++at) table.push_back(float_bits(cols.weight[at]));
  return table;
}

class ResizeKernel : public VulkanKernel {
 public:
  // interpolate: linear or cubic taps combined (resize_exact.comp), else a gather through tap 0.
  ResizeKernel(const ResizePush& push, const std::vector<int32_t>& table, bool interpolate, bool cols_identity,
               int cols_taps)
      : push_(push),
        table_(table.data(), table.size() * sizeof(int32_t)),
        scheme_(interpolate ? "interpolate" : "gather"),
        // The CPU's horizontal pass starts with a product for 1, 2 or 4 taps, else with 0.
        pipeline_(interpolate ? pipeline_for(kResizeExactSpirv, sizeof(kResizeExactSpirv), 3, sizeof(ResizePush),
                                             {1u, cols_identity ? 1u : 0u,
                                              cols_taps == 1 || cols_taps == 2 || cols_taps == 4 ? 1u : 0u})
                              : pipeline_for(kResizeSpirv, sizeof(kResizeSpirv), 3, sizeof(ResizePush),
                                             {0u, 0u, 1u})) {}

  const char* scheme() const override { return scheme_; }

  void execute(const KernelArgs& args, void*) const override {
    if (push_.outputs == 0) return;
    const Tensor& in = *args.inputs[0];
    const Tensor& out = *args.outputs[0];
    const GroupGrid grid = group_grid(groups_for(push_.outputs, kWorkgroup));
    pipeline_->dispatch({resolve(out.data, out.nbytes()), resolve(in.data, in.nbytes()), table_.range()}, &push_,
                        grid.x, grid.y);
  }

 private:
  ResizePush push_;
  ParamBuffer table_;
  const char* scheme_;
  std::shared_ptr<Pipeline> pipeline_;
};

std::unique_ptr<Kernel> make_resize_kernel(const KernelContext& ctx) {
  const TensorType& x = ctx.input_types[0];
  if (x.dtype != DType::Float32 || (x.shape.size() != 3 && x.shape.size() != 4)) return nullptr;
  const Shape& s = x.shape;
  const Shape& o = ctx.output_types[0].shape;
  const ResizeOptions options = resize_options(ctx.attrs);
  auto scale = [&](const char* key) {
    return ctx.attrs.has(key) ? std::optional<float>((float)ctx.attrs.get_float(key)) : std::nullopt;
  };
  const bool has_h = s.size() == 4;
  const ResizeAxis rows = make_resize_axis(has_h ? s[2] : 1, has_h ? o[2] : 1, scale("scale_h"), options);
  const ResizeAxis cols = make_resize_axis(s.back(), o.back(), scale("scale_w"), options);
  // As the CPU's: nearest gathers, and so does an identity resize (a copy).
  const bool interpolate = rows.taps > 1 && !(rows.identity && cols.identity);
  if (interpolate && !context()->float64) return nullptr;  // fused multiply-adds round once only through float64
  if ((int64_t)rows.taps * cols.taps > kMaxTapsPerOutput) return nullptr;
  // The table's offsets are 32-bit.
  if (2 * ((uint64_t)rows.taps * rows.out + (uint64_t)cols.taps * cols.out) > UINT32_MAX) return nullptr;
  ResizePush push{};
  // Every tensor fits one binding, so element counts fit 32 bits.
  push.outputs = (uint32_t)(s[0] * s[1] * rows.out * cols.out);
  push.in_h = (uint32_t)rows.in, push.in_w = (uint32_t)cols.in;
  push.out_h = (uint32_t)rows.out, push.out_w = (uint32_t)cols.out;
  push.taps_h = (uint32_t)rows.taps, push.taps_w = (uint32_t)cols.taps;
  const std::vector<int32_t> table = tap_table(rows, cols, push);
  return new_kernel<ResizeKernel>(push, table, interpolate, cols.identity, cols.taps);
}

MNNPY_REGISTER_KERNEL("Resize", "vulkan", make_resize_kernel);

}  // namespace

}  // namespace vulkan
}  // namespace mnnpy
