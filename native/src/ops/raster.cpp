// Raster: the region-copy primitive that data-movement ops lower to (mnnpy/lowering.h). Its
// regions are checked against the inputs and the output here, so no kernel reads or writes out
// of bounds whatever a decomposition or a loaded graph asks for.
#include "mnnpy/lowering.h"
#include "mnnpy/op_registry.h"

namespace mnnpy {

namespace {

// The lowest and highest element offset a region touches through `strides` (sizes all > 0).
std::pair<int64_t, int64_t> reach(int64_t offset, const Shape& sizes, const std::vector<int64_t>& strides) {
  int64_t lo = offset, hi = offset;
  for (size_t k = 0; k < sizes.size(); ++k) {
    int64_t span;
    if (__builtin_mul_overflow(sizes[k] - 1, strides[k], &span)) throw ValueError("Raster: a region's span overflows");
    if (__builtin_add_overflow(span < 0 ? lo : hi, span, span < 0 ? &lo : &hi)) {
      throw ValueError("Raster: a region's span overflows");
    }
  }
  return {lo, hi};
}

std::vector<TensorType> infer_raster(const std::vector<TensorType>& in, Attrs& attrs) {
  const Shape& shape = attrs.get_ints("shape");
  for (int64_t d : shape) if (d < 0) throw ValueError("negative dimensions are not allowed");
  for (const TensorType& t : in) {
    if (t.dtype != in[0].dtype) throw TypeError("Raster inputs must share a dtype");
  }
  const int64_t out_numel = shape_numel(shape);
  for (const RasterRegion& r : raster_regions(attrs)) {
    if (r.input < 0 || r.input >= (int64_t)in.size()) {
      throw ValueError("Raster: a region reads input " + std::to_string(r.input) + " of " + std::to_string(in.size()));
    }
    bool empty = false;
    for (int64_t s : r.sizes) {
      if (s < 0) throw ValueError("Raster: a region has a negative size");
      empty = empty || s == 0;
    }
    if (empty) continue;
    const auto [src_lo, src_hi] = reach(r.src_offset, r.sizes, r.src_strides);
    const auto [dst_lo, dst_hi] = reach(r.dst_offset, r.sizes, r.dst_strides);
    if (src_lo < 0 || src_hi >= in[r.input].numel()) {
      throw ValueError("Raster: a region reads past input " + std::to_string(r.input) + " of shape " +
                       shape_str(in[r.input].shape));
    }
    if (dst_lo < 0 || dst_hi >= out_numel) throw ValueError("Raster: a region writes past the output " + shape_str(shape));
  }
  return {TensorType{in[0].dtype, shape}};
}

}  // namespace

// Kernels register per backend (backend/<name>/): the CPU's is in backend/cpu/raster_kernel.cpp.
MNNPY_REGISTER_OP(OpDef{"Raster", 1, -1, infer_raster, {}, false});

}  // namespace mnnpy
