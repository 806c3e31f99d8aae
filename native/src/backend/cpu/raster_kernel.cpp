// The CPU's Raster kernel: the fill (when asked for), then each region as a strided copy.
#include "backend/cpu/copy.h"
#include "backend/cpu/elementwise.h"
#include "mnnpy/backend.h"
#include "mnnpy/lowering.h"

namespace mnnpy {

namespace {

class RasterKernel : public Kernel {
 public:
  explicit RasterKernel(const KernelContext& ctx) {
    const DType dtype = ctx.output_types[0].dtype;
    const size_t elem_size = dtype_size(dtype);
    const Shape& shape = ctx.output_types[0].shape;
    if (ctx.attrs.has("fill")) {
      // One element of the fill value, repeated over the output by a copy of source stride 0.
      const double value = ctx.attrs.get_float("fill");
      cpu::cast(DType::Float64, dtype, &value, fill_value_, 1);
      fill_ = cpu::StridedCopy(elem_size, shape, std::vector<int64_t>(shape.size(), 0), row_major_strides(shape));
      has_fill_ = true;
    }
    for (const RasterRegion& r : raster_regions(ctx.attrs)) {
      regions_.push_back(Region{r.input, r.src_offset * (int64_t)elem_size, r.dst_offset * (int64_t)elem_size,
                                cpu::StridedCopy(elem_size, r.sizes, r.src_strides, r.dst_strides)});
    }
  }
  void execute(const KernelArgs& args, void*) const override {
    char* out = (char*)args.outputs[0]->data;
    if (has_fill_) fill_.run(fill_value_, out, args.pool);
    for (const Region& r : regions_) r.copy.run((const char*)args.inputs[r.input]->data + r.src_byte, out + r.dst_byte, args.pool);
  }
  const char* scheme() const override { return "regions"; }

 private:
  struct Region {
    int64_t input, src_byte, dst_byte;
    cpu::StridedCopy copy;
  };
  std::vector<Region> regions_;
  cpu::StridedCopy fill_;
  bool has_fill_ = false;
  alignas(8) unsigned char fill_value_[8] = {};
};

MNNPY_REGISTER_KERNEL("Raster", "cpu", construct_kernel<RasterKernel>);

}  // namespace

}  // namespace mnnpy
