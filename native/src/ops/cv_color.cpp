// Colour conversions (OpenCV's cvtColor and cvtColorTwoPlane) and channel split/merge.
// CvColor attributes: kind (cv_color::Kind, ops/cv_color_kind.h), scn and dcn (channels in and out), blue
// (index of blue: 0 for BGR, 2 for RGB), order (Reorder's source channel per output channel,
// -1 for alpha), yuv, hue_range, srgb, green_bits, u_first, interleaved_chroma, luma_index,
// u_index, bayer_pattern. A second input is the interleaved chroma plane of a two-plane 4:2:0 image.
// The front-end (mnnpy/cv/_color.py) maps OpenCV's codes to these and checks the arguments.
#include <string>

#include "mnnpy/lowering.h"
#include "mnnpy/op_registry.h"
#include "ops/cv_color_kind.h"

namespace mnnpy {

namespace {

using cv_color::Kind;

Kind kind_of(const Attrs& attrs) {
  const int64_t k = attrs.get_int("kind");
  if (k < 0 || k > (int64_t)Kind::Bayer) throw ValueError("CvColor: unknown kind " + std::to_string(k));
  return (Kind)k;
}

bool bytes_only(Kind k) {
  return k == Kind::To16Bit || k == Kind::From16Bit || k == Kind::GrayTo16Bit || k == Kind::From16BitToGray ||
         k == Kind::Yuv420ToRgb || k == Kind::Yuv420ToGray || k == Kind::RgbToYuv420 || k == Kind::Yuv422ToRgb ||
         k == Kind::Yuv422ToGray || k == Kind::RgbToYuv422 || k == Kind::PremultiplyAlpha ||
         k == Kind::UnpremultiplyAlpha || k == Kind::Bayer;
}

// Channels of an HxW (1) or HxWxC image type.
int64_t channels_of(const TensorType& t) { return t.shape.size() == 2 ? 1 : t.shape[2]; }

Shape image_shape(int64_t h, int64_t w, int64_t c) { return c == 1 ? Shape{h, w} : Shape{h, w, c}; }

std::vector<TensorType> infer_color(const std::vector<TensorType>& in, Attrs& attrs) {
  const TensorType& x = in[0];
  const Kind kind = kind_of(attrs);
  if (x.dtype != DType::UInt8 && x.dtype != DType::Float32)
    throw TypeError(std::string("CvColor: images must be uint8 or float32, got ") + dtype_name(x.dtype));
  if (x.dtype != DType::UInt8 && bytes_only(kind)) throw TypeError("CvColor: this conversion needs a uint8 image");
  if (x.shape.size() != 2 && x.shape.size() != 3) throw ValueError("CvColor: expected an HxW or HxWxC image, got " + shape_str(x.shape));
  const int64_t scn = attrs.get_int("scn"), dcn = attrs.get_int("dcn");
  if (dcn < 1 || dcn > 4) throw ValueError("CvColor: dcn must be 1 to 4");
  const int64_t h = x.shape[0], w = x.shape[1], c = channels_of(x);
  if (h <= 0 || w <= 0) throw ValueError("CvColor: empty image " + shape_str(x.shape));
  if (c != scn) throw ValueError("CvColor: expected " + std::to_string(scn) + " channels, got " + std::to_string(c));
  const int64_t blue = attrs.get_int("blue", 0);
  if (blue != 0 && blue != 2) throw ValueError("CvColor: blue must be 0 or 2");
  if (kind == Kind::Reorder) {
    const auto& order = attrs.get_ints("order");
    if ((int64_t)order.size() != dcn) throw ValueError("CvColor: order needs dcn entries");
    for (int64_t o : order)
      if (o < -1 || o >= scn) throw ValueError("CvColor: order entry out of range");
    if (!((scn == 1 || scn == 3 || scn == 4) && (dcn == 3 || dcn == 4)))
      throw ValueError("CvColor: unsupported channel reorder");
  }
  if (in.size() == 2 && kind != Kind::Yuv420ToRgb && kind != Kind::Yuv420ToGray)
    throw ValueError("CvColor: a second plane is only read by 4:2:0 conversions");
  if (kind == Kind::Bayer) {
    const int64_t pattern = attrs.get_int("bayer_pattern", 0);
    if (pattern < 0 || pattern > 3) throw ValueError("CvColor: bayer_pattern must be 0 to 3");
    if (c != 1 || (dcn != 1 && dcn != 3 && dcn != 4))
      throw ValueError("CvColor: Bayer demosaicing takes one channel to 1, 3 or 4");
  }
  switch (kind) {
    case Kind::Yuv420ToRgb:
    case Kind::Yuv420ToGray: {
      int64_t rows = h;
      if (in.size() == 1) {
        if (h % 3 != 0 || w % 2 != 0)
          throw ValueError("CvColor: a 4:2:0 image needs a height divisible by 3 and an even width, got " + shape_str(x.shape));
        rows = h / 3 * 2;
      } else {
        const TensorType& uv = in[1];
        if (h % 2 != 0 || w % 2 != 0) throw ValueError("CvColor: the luma plane needs an even size");
        if (uv.dtype != DType::UInt8 || uv.numel() != h * w / 2 || uv.shape.empty() || uv.shape[0] != h / 2)
          throw ValueError("CvColor: the chroma plane must be uint8 of (H/2, W/2, 2) pixels, got " + shape_str(uv.shape));
      }
      return {TensorType{DType::UInt8, kind == Kind::Yuv420ToGray ? Shape{rows, w} : image_shape(rows, w, dcn)}};
    }
    case Kind::RgbToYuv420:
      if (h % 2 != 0 || w % 2 != 0) throw ValueError("CvColor: 4:2:0 output needs an even width and height, got " + shape_str(x.shape));
      return {TensorType{DType::UInt8, Shape{h / 2 * 3, w}}};
    case Kind::Yuv422ToRgb:
    case Kind::Yuv422ToGray:
    case Kind::RgbToYuv422:
      if (w % 2 != 0) throw ValueError("CvColor: 4:2:2 images need an even width, got " + shape_str(x.shape));
      return {TensorType{DType::UInt8, image_shape(h, w, kind == Kind::RgbToYuv422 ? 2 : dcn)}};
    default:
      return {TensorType{x.dtype, image_shape(h, w, dcn)}};
  }
}

MNNPY_REGISTER_OP(OpDef{"CvColor", 1, 2, infer_color, {}, false});

// ---------------------------------------------------------------- split / merge
std::vector<TensorType> infer_split(const std::vector<TensorType>& in, Attrs&) {
  const TensorType& x = in[0];
  if (x.shape.size() != 3) throw ValueError("CvSplit: expected an HxWxC image, got " + shape_str(x.shape));
  return std::vector<TensorType>((size_t)x.shape[2], TensorType{x.dtype, Shape{x.shape[0], x.shape[1]}});
}

MNNPY_REGISTER_OP(OpDef{"CvSplit", 1, 1, infer_split, {}, false});

// Channel k of an HxWxC image: a Raster reading every C-th element from k.
MNNPY_REGISTER_DECOMPOSITION("CvSplit", [](const std::vector<Var>& in, const Attrs&,
                                           const std::vector<TensorType>& outputs) {
  const Shape& x = in[0].type().shape;
  std::vector<Var> channels;
  for (int64_t k = 0; k < x[2]; ++k) {
    const RasterRegion region{0, k, 0, {x[0], x[1]}, {x[1] * x[2], x[2]}, {x[1], 1}};
    channels.push_back(raster({in[0]}, outputs[k].shape, {region}));
  }
  return channels;
});

std::vector<TensorType> infer_merge(const std::vector<TensorType>& in, Attrs&) {
  int64_t total = 0;
  for (const TensorType& t : in) {
    if (t.shape.size() != 2 && t.shape.size() != 3) throw ValueError("CvMerge: inputs must be HxW or HxWxC, got " + shape_str(t.shape));
    if (t.dtype != in[0].dtype || t.shape[0] != in[0].shape[0] || t.shape[1] != in[0].shape[1])
      throw ValueError("CvMerge: inputs must have one size and dtype");
    total += channels_of(t);
  }
  return {TensorType{in[0].dtype, Shape{in[0].shape[0], in[0].shape[1], total}}};
}

MNNPY_REGISTER_OP(OpDef{"CvMerge", 1, -1, infer_merge, {}, false});

// Each input's channels written at its channel offset of the HxWxC result: one Raster.
MNNPY_REGISTER_DECOMPOSITION("CvMerge", [](const std::vector<Var>& in, const Attrs&,
                                           const std::vector<TensorType>& outputs) {
  const Shape& out = outputs[0].shape;
  std::vector<RasterRegion> regions;
  int64_t offset = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const int64_t c = channels_of(in[i].type());
    regions.push_back(RasterRegion{(int64_t)i, 0, offset, {out[0], out[1], c}, {out[1] * c, c, 1},
                                   {out[1] * out[2], out[2], 1}});
    offset += c;
  }
  return std::vector<Var>{raster(in, out, regions)};
});

}  // namespace

}  // namespace mnnpy
