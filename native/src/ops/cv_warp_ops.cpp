// OpenCV's warps and pyramids as graph ops.
// CvWarp: inputs an HxW or HxWxC image (uint8, int16, float32, float64), then the maps its
//   mapping reads (MapsXY: float32 x map, y map; MapsXYPacked: float32 HxWx2; MapsFixed: int16
//   HxWx2 and, when has_fractions, int16 HxW fractions), then, when transparent, the image the
//   output starts from. attrs mapping, interpolation, border (OpenCV's values), border0..3,
//   m0..m8 (destination -> source matrix), width, height, relative, has_fractions, transparent.
// CvConvertMaps: inputs map1 and (unless packed float or fraction-less fixed) map2; attrs
//   from_float, src_packed, dst_packed, nearest; outputs the converted map(s).
// CvRectSubPix: input an image; attrs width, height, cx, cy, dtype (of the patch).
// CvPyrDown / CvPyrUp: input an image; attrs width, height, border (CvPyrDown only).
#include <string>

#include "mnnpy/op_registry.h"
#include "ops/cv_image_checks.h"
#include "ops/cv_warp_mapping.h"

namespace mnnpy {

namespace {

namespace warp = cv_warp;
using cv_warp::map_inputs;

void check_image(const char* op, const TensorType& x) {
  cv_checks::check_image(op, x, true);
  // Byte offsets into the image are 32-bit in the kernels.
  if ((int64_t)x.nbytes() >= ((int64_t)1 << 31)) {
    throw ValueError(std::string(op) + ": image is too large (2 GiB or more)");
  }
}

Shape image_shape(const Shape& like, int64_t height, int64_t width) {
  Shape out = like;
  out[0] = height;
  out[1] = width;
  return out;
}

void check_size(const char* op, int64_t width, int64_t height) {
  if (width <= 0 || height <= 0 || width > (1 << 24) || height > (1 << 24)) {
    throw ValueError(std::string(op) + ": output size must be positive, got " + std::to_string(width) + "x" +
                     std::to_string(height));
  }
}

void check_map(const TensorType& m, DType dtype, int64_t h, int64_t w, int64_t last, const char* what) {
  const bool shape_ok = last == 0 ? m.shape == Shape{h, w} : m.shape == Shape{h, w, last};
  if (m.dtype != dtype || !shape_ok) {
    throw ValueError(std::string("CvWarp: ") + what + " must be " + dtype_name(dtype) + " of shape " +
                     shape_str(last == 0 ? Shape{h, w} : Shape{h, w, last}) + ", got " + dtype_name(m.dtype) + " " +
                     shape_str(m.shape));
  }
}

std::vector<TensorType> infer_warp(const std::vector<TensorType>& in, Attrs& attrs) {
  check_image("CvWarp", in[0]);
  const int64_t width = attrs.get_int("width"), height = attrs.get_int("height");
  check_size("CvWarp", width, height);
  const int64_t mapping = attrs.get_int("mapping"), interpolation = attrs.get_int("interpolation");
  const int64_t border = attrs.get_int("border");
  if (mapping < 0 || mapping > 4) throw ValueError("CvWarp: unknown mapping " + std::to_string(mapping));
  if (!(interpolation == 0 || interpolation == 1 || interpolation == 2 || interpolation == 4)) {
    throw ValueError("CvWarp: unsupported interpolation " + std::to_string(interpolation));
  }
  if (border < 0 || border > 5) throw ValueError("CvWarp: unsupported border " + std::to_string(border));
  for (int i = 0; i < 4; ++i) attrs.get_float("border" + std::to_string(i));
  if (mapping <= 1) {
    for (int i = 0; i < 9; ++i) attrs.get_float("m" + std::to_string(i));
  }
  const bool transparent = attrs.get_int("transparent", 0) != 0;
  const size_t maps = map_inputs(attrs);
  if (in.size() != 1 + maps + (transparent ? 1 : 0)) {
    throw ValueError("CvWarp: expected " + std::to_string(1 + maps + (transparent ? 1 : 0)) + " inputs, got " +
                     std::to_string(in.size()));
  }
  switch ((warp::Mapping)mapping) {
    case warp::Mapping::MapsXY:
      check_map(in[1], DType::Float32, height, width, 0, "x map");
      check_map(in[2], DType::Float32, height, width, 0, "y map");
      break;
    case warp::Mapping::MapsXYPacked: check_map(in[1], DType::Float32, height, width, 2, "map"); break;
    case warp::Mapping::MapsFixed:
      check_map(in[1], DType::Int16, height, width, 2, "map");
      if (maps == 2) check_map(in[2], DType::Int16, height, width, 0, "fraction map");
      break;
    default: break;
  }
  const Shape out = image_shape(in[0].shape, height, width);
  if (transparent) {
    const TensorType& init = in.back();
    if (init.dtype != in[0].dtype || init.shape != out) {
      throw ValueError("CvWarp: the destination must be " + std::string(dtype_name(in[0].dtype)) + " of shape " +
                       shape_str(out) + ", got " + dtype_name(init.dtype) + " " + shape_str(init.shape));
    }
  }
  if (border == 5 && !transparent) throw ValueError("CvWarp: a transparent border needs the destination input");
  return {TensorType{in[0].dtype, out}};
}

MNNPY_REGISTER_OP(OpDef{"CvWarp", 1, 5, infer_warp, {}, false});

std::vector<TensorType> infer_convert_maps(const std::vector<TensorType>& in, Attrs& attrs) {
  const bool from_float = attrs.get_int("from_float") != 0, src_packed = attrs.get_int("src_packed") != 0;
  const bool dst_packed = attrs.get_int("dst_packed") != 0, nearest = attrs.get_int("nearest") != 0;
  const TensorType& m1 = in[0];
  if (m1.shape.size() < 2 || m1.shape[0] <= 0 || m1.shape[1] <= 0) {
    throw ValueError("CvConvertMaps: map1 must be a non-empty HxW or HxWx2 map, got " + shape_str(m1.shape));
  }
  const int64_t h = m1.shape[0], w = m1.shape[1];
  const Shape plane{h, w}, pairs{h, w, 2};
  if (from_float) {
    if (m1.dtype != DType::Float32 || m1.shape != (src_packed ? pairs : plane)) {
      throw ValueError("CvConvertMaps: float map1 must be float32 " + shape_str(src_packed ? pairs : plane));
    }
    if (in.size() != (src_packed ? 1u : 2u)) throw ValueError("CvConvertMaps: wrong number of maps");
    if (!src_packed && (in[1].dtype != DType::Float32 || in[1].shape != plane)) {
      throw ValueError("CvConvertMaps: the y map must be float32 " + shape_str(plane));
    }
    if (nearest) return {TensorType{DType::Int16, pairs}};
    return {TensorType{DType::Int16, pairs}, TensorType{DType::Int16, plane}};
  }
  if (m1.dtype != DType::Int16 || m1.shape != pairs) {
    throw ValueError("CvConvertMaps: fixed-point map1 must be int16 " + shape_str(pairs));
  }
  if (in.size() > 2) throw ValueError("CvConvertMaps: wrong number of maps");
  if (in.size() == 2 && (in[1].dtype != DType::Int16 || in[1].shape != plane)) {
    throw ValueError("CvConvertMaps: the fraction map must be int16 " + shape_str(plane));
  }
  if (dst_packed) return {TensorType{DType::Float32, pairs}};
  return {TensorType{DType::Float32, plane}, TensorType{DType::Float32, plane}};
}

MNNPY_REGISTER_OP(OpDef{"CvConvertMaps", 1, 2, infer_convert_maps, {}, false});

std::vector<TensorType> infer_rect_sub_pix(const std::vector<TensorType>& in, Attrs& attrs) {
  check_image("CvRectSubPix", in[0]);
  const int64_t width = attrs.get_int("width"), height = attrs.get_int("height");
  check_size("CvRectSubPix", width, height);
  attrs.get_float("cx");
  attrs.get_float("cy");
  DType out;
  if (!dtype_from_name(attrs.get_string("dtype"), &out)) throw ValueError("CvRectSubPix: unknown patch dtype");
  const DType src = in[0].dtype;
  if (!((src == DType::UInt8 && (out == DType::UInt8 || out == DType::Float32)) ||
        (src == DType::Float32 && out == DType::Float32))) {
    throw ValueError(std::string("CvRectSubPix: unsupported combination of image dtype ") + dtype_name(src) +
                     " and patch dtype " + dtype_name(out));
  }
  return {TensorType{out, image_shape(in[0].shape, height, width)}};
}

MNNPY_REGISTER_OP(OpDef{"CvRectSubPix", 1, 1, infer_rect_sub_pix, {}, false});

std::vector<TensorType> infer_pyr_down(const std::vector<TensorType>& in, Attrs& attrs) {
  check_image("CvPyrDown", in[0]);
  const int64_t width = attrs.get_int("width"), height = attrs.get_int("height");
  check_size("CvPyrDown", width, height);
  const int64_t h = in[0].shape[0], w = in[0].shape[1];
  if (std::abs(width * 2 - w) > 2 || std::abs(height * 2 - h) > 2) {
    throw ValueError("CvPyrDown: output size " + std::to_string(width) + "x" + std::to_string(height) +
                     " is not about half the input size");
  }
  const int64_t border = attrs.get_int("border");
  if (border < 1 || border > 4) throw ValueError("CvPyrDown: unsupported border " + std::to_string(border));
  return {TensorType{in[0].dtype, image_shape(in[0].shape, height, width)}};
}

std::vector<TensorType> infer_pyr_up(const std::vector<TensorType>& in, Attrs& attrs) {
  check_image("CvPyrUp", in[0]);
  const int64_t width = attrs.get_int("width"), height = attrs.get_int("height");
  check_size("CvPyrUp", width, height);
  const int64_t h = in[0].shape[0], w = in[0].shape[1];
  if (std::abs(width - w * 2) > width % 2 || std::abs(height - h * 2) > height % 2) {
    throw ValueError("CvPyrUp: output size " + std::to_string(width) + "x" + std::to_string(height) +
                     " is not about twice the input size");
  }
  return {TensorType{in[0].dtype, image_shape(in[0].shape, height, width)}};
}

MNNPY_REGISTER_OP(OpDef{"CvPyrDown", 1, 1, infer_pyr_down, {}, false});
MNNPY_REGISTER_OP(OpDef{"CvPyrUp", 1, 1, infer_pyr_up, {}, false});

}  // namespace

}  // namespace mnnpy
