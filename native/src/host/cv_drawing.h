// Host library: runs on host memory after the inputs were synchronized to the host.
// OpenCV's drawing primitives (lines, polylines, rectangles, circles, ellipses, filled polygons)
// rasterized in place into a caller's pixel buffer, with OpenCV's rules: Bresenham lines after
// clipping, 16-bit fixed-point coordinates for `shift` and thick outlines, thick lines as filled
// quadrilaterals with round caps, circles and ellipses as polygons from a 1-degree sine table,
// and scanline polygon filling with OpenCV's span rounding.
#pragma once
#include <cstdint>
#include <vector>

namespace mnnpy {
namespace host {
namespace cv_drawing {

// Fraction bits of the internal fixed-point coordinates (OpenCV's XY_SHIFT).
constexpr int kFractionBits = 16;
constexpr int kMaxThickness = 32767;
constexpr int kLineAA = 16;

// An image to draw into: rows `row_stride` bytes apart, pixels packed (`pixel_bytes` each).
struct Canvas {
  uint8_t* data = nullptr;
  int height = 0;
  int width = 0;
  int64_t row_stride = 0;
  int pixel_bytes = 0;
  int channels = 0;
  bool is_uint8 = false;  // antialiasing blends uint8 pixels only (1, 3 or 4 channels)
};

struct Point {
  int64_t x = 0;
  int64_t y = 0;
};

// `color` points at one pixel's bytes (the color already converted to the image's type).
// Invalid line types raise std::invalid_argument, as OpenCV asserts.
void draw_line(const Canvas& canvas, Point p0, Point p1, const uint8_t* color, int thickness, int line_type,
               int shift);
void draw_polylines(const Canvas& canvas, const std::vector<std::vector<Point>>& contours, bool closed,
                    const uint8_t* color, int thickness, int line_type, int shift);
void draw_rectangle(const Canvas& canvas, Point p0, Point p1, const uint8_t* color, int thickness, int line_type,
                    int shift);
void draw_circle(const Canvas& canvas, Point center, int64_t radius, const uint8_t* color, int thickness,
                 int line_type, int shift);
void draw_ellipse(const Canvas& canvas, Point center, Point axes, int angle, int arc_start, int arc_end,
                  const uint8_t* color, int thickness, int line_type, int shift);
// The RotatedRect form: center, full size and angle as OpenCV's float box.
void draw_ellipse_box(const Canvas& canvas, float center_x, float center_y, float width, float height,
                      float angle, const uint8_t* color, int thickness, int line_type);
void fill_convex_poly(const Canvas& canvas, const std::vector<Point>& points, const uint8_t* color, int line_type,
                      int shift);
void fill_poly(const Canvas& canvas, const std::vector<std::vector<Point>>& contours, const uint8_t* color,
               int line_type, int shift, Point offset);
// OpenCV's ellipse2Poly with integer output: the arc's polygon, repeated points dropped.
std::vector<Point> ellipse_polygon(Point center, Point axes, int angle, int arc_start, int arc_end, int delta);

}  // namespace cv_drawing
}  // namespace host
}  // namespace mnnpy
