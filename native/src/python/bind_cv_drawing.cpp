// mnnpy.cv's drawing functions: each draws into a writable NumPy image in place (pixels packed,
// rows any stride apart), with the color given as one pixel's bytes in the image's type.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <stdexcept>

#include "host/cv_drawing.h"
#include "python/bindings.h"

namespace mnnpy {

namespace {

namespace draw = host::cv_drawing;
using Points = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;

draw::Canvas canvas_of(py::array& image, const py::bytes& color, std::string& color_bytes) {
  if (!image.writeable()) throw py::value_error("the image is read-only");
  if (image.ndim() != 2 && image.ndim() != 3) throw py::value_error("the image must be HxW or HxWxC");
  const int64_t itemsize = image.itemsize();
  const int channels = image.ndim() == 3 ? (int)image.shape(2) : 1;
  if (channels < 1 || channels > 4) throw py::value_error("the image must have 1 to 4 channels");
  if (image.shape(0) <= 0 || image.shape(1) <= 0) throw py::value_error("the image is empty");
  if (image.shape(0) > INT32_MAX || image.shape(1) > INT32_MAX) throw py::value_error("the image is too large");
  if (image.ndim() == 3 && image.strides(2) != itemsize) throw py::value_error("channels must be packed");
  if (image.strides(1) != itemsize * channels) throw py::value_error("pixels must be packed");
  if (image.strides(0) < image.shape(1) * itemsize * channels) throw py::value_error("rows overlap or run backwards");
  color_bytes = color;
  if ((int64_t)color_bytes.size() != itemsize * channels) throw py::value_error("the color must be one pixel's bytes");
  draw::Canvas c;
  c.data = static_cast<uint8_t*>(image.mutable_data());
  c.height = (int)image.shape(0);
  c.width = (int)image.shape(1);
  c.row_stride = image.strides(0);
  c.pixel_bytes = (int)(itemsize * channels);
  c.channels = channels;
  c.is_uint8 = image.dtype().kind() == 'u' && itemsize == 1;
  return c;
}

std::vector<draw::Point> points_of(const Points& pts) {
  if (pts.ndim() != 2 || pts.shape(1) != 2) throw py::value_error("points must be an Nx2 array");
  std::vector<draw::Point> out((size_t)pts.shape(0));
  const int64_t* p = pts.data();
  for (size_t i = 0; i < out.size(); ++i) out[i] = {p[2 * i], p[2 * i + 1]};
  return out;
}

std::vector<std::vector<draw::Point>> contours_of(const std::vector<Points>& contours) {
  std::vector<std::vector<draw::Point>> out;
  out.reserve(contours.size());
  for (const Points& c : contours) out.push_back(points_of(c));
  return out;
}

// Runs `fn` without the GIL, turning the drawing functions' argument errors into ValueError.
template <typename Fn>
void drawing(Fn&& fn) {
  try {
    py::gil_scoped_release release;
    fn();
  } catch (const std::invalid_argument& e) {
    throw py::value_error(e.what());
  }
}

}  // namespace

MNNPY_REGISTER_BINDING([](py::module_& m) {
  m.def(
      "cv_draw_line",
      [](py::array image, int64_t x0, int64_t y0, int64_t x1, int64_t y1, py::bytes color, int thickness,
         int line_type, int shift) {
        std::string bytes;
        const auto c = canvas_of(image, color, bytes);
        drawing([&] {
          draw::draw_line(c, {x0, y0}, {x1, y1}, (const uint8_t*)bytes.data(), thickness, line_type, shift);
        });
      },
      "Draws OpenCV's line(pt1, pt2) into `image` in place.");
  m.def(
      "cv_draw_polylines",
      [](py::array image, const std::vector<Points>& contours, bool closed, py::bytes color, int thickness,
         int line_type, int shift) {
        std::string bytes;
        const auto c = canvas_of(image, color, bytes);
        const auto polys = contours_of(contours);
        drawing([&] {
          draw::draw_polylines(c, polys, closed, (const uint8_t*)bytes.data(), thickness, line_type, shift);
        });
      },
      "Draws OpenCV's polylines (Nx2 int64 point arrays) into `image` in place.");
  m.def(
      "cv_draw_rectangle",
      [](py::array image, int64_t x0, int64_t y0, int64_t x1, int64_t y1, py::bytes color, int thickness,
         int line_type, int shift) {
        std::string bytes;
        const auto c = canvas_of(image, color, bytes);
        drawing([&] {
          draw::draw_rectangle(c, {x0, y0}, {x1, y1}, (const uint8_t*)bytes.data(), thickness, line_type, shift);
        });
      },
      "Draws OpenCV's rectangle(pt1, pt2) into `image` in place.");
  m.def(
      "cv_draw_circle",
      [](py::array image, int64_t cx, int64_t cy, int64_t radius, py::bytes color, int thickness, int line_type,
         int shift) {
        std::string bytes;
        const auto c = canvas_of(image, color, bytes);
        drawing([&] {
          draw::draw_circle(c, {cx, cy}, radius, (const uint8_t*)bytes.data(), thickness, line_type, shift);
        });
      },
      "Draws OpenCV's circle into `image` in place.");
  m.def(
      "cv_draw_ellipse",
      [](py::array image, int64_t cx, int64_t cy, int64_t ax, int64_t ay, int angle, int arc_start, int arc_end,
         py::bytes color, int thickness, int line_type, int shift) {
        std::string bytes;
        const auto c = canvas_of(image, color, bytes);
        drawing([&] {
          draw::draw_ellipse(c, {cx, cy}, {ax, ay}, angle, arc_start, arc_end, (const uint8_t*)bytes.data(),
                             thickness, line_type, shift);
        });
      },
      "Draws OpenCV's ellipse (center, axes, whole-degree angles) into `image` in place.");
  m.def(
      "cv_draw_ellipse_box",
      [](py::array image, float cx, float cy, float width, float height, float angle, py::bytes color,
         int thickness, int line_type) {
        std::string bytes;
        const auto c = canvas_of(image, color, bytes);
        drawing([&] {
          draw::draw_ellipse_box(c, cx, cy, width, height, angle, (const uint8_t*)bytes.data(), thickness,
                                 line_type);
        });
      },
      "Draws OpenCV's ellipse inscribed in a rotated box into `image` in place.");
  m.def(
      "cv_fill_convex_poly",
      [](py::array image, const Points& points, py::bytes color, int line_type, int shift) {
        std::string bytes;
        const auto c = canvas_of(image, color, bytes);
        const auto pts = points_of(points);
        drawing([&] { draw::fill_convex_poly(c, pts, (const uint8_t*)bytes.data(), line_type, shift); });
      },
      "Fills OpenCV's fillConvexPoly polygon (Nx2 int64 points) into `image` in place.");
  m.def(
      "cv_fill_poly",
      [](py::array image, const std::vector<Points>& contours, py::bytes color, int line_type, int shift,
         int64_t offset_x, int64_t offset_y) {
        std::string bytes;
        const auto c = canvas_of(image, color, bytes);
        const auto polys = contours_of(contours);
        drawing([&] {
          draw::fill_poly(c, polys, (const uint8_t*)bytes.data(), line_type, shift, {offset_x, offset_y});
        });
      },
      "Fills OpenCV's fillPoly polygons (Nx2 int64 point arrays, even-odd) into `image` in place.");
  m.def(
      "cv_ellipse_to_poly",
      [](int64_t cx, int64_t cy, int64_t ax, int64_t ay, int angle, int arc_start, int arc_end, int delta) {
        const auto pts = draw::ellipse_polygon({cx, cy}, {ax, ay}, angle, arc_start, arc_end, delta);
        py::array_t<int32_t> out({(py::ssize_t)pts.size(), (py::ssize_t)2});
        int32_t* p = out.mutable_data();
        for (size_t i = 0; i < pts.size(); ++i) {
          p[2 * i] = (int32_t)pts[i].x;
          p[2 * i + 1] = (int32_t)pts[i].y;
        }
        return out;
      },
      "OpenCV's ellipse2Poly: the arc's polygon as an Nx2 int32 array.");
});

}  // namespace mnnpy
