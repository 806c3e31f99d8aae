// OpenCV's rasterization rules for mnnpy.cv's drawing functions (see cv_drawing.h). Drawing is
// sequential by nature (later primitives overwrite earlier ones), so it runs on the caller's
// thread; every pixel write is bounds-checked or follows a clip to the image.
#include "host/cv_drawing.h"

#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace mnnpy {
namespace host {
namespace cv_drawing {

namespace {

constexpr int64_t kOne = int64_t(1) << kFractionBits;
constexpr int64_t kHalf = kOne >> 1;
constexpr double kPi = 3.14159265358979323846;

// OpenCV's cvRound: to nearest, ties to even.
inline int round_to_int(double v) { return (int)std::lrint(v); }
inline int round_to_int(float v) { return (int)std::lrintf(v); }

inline int64_t saturate_int32(int64_t v) { return std::min<int64_t>(INT32_MAX, std::max<int64_t>(INT32_MIN, v)); }

inline uint8_t* pixel_at(const Canvas& c, int64_t x, int64_t y) {
  return c.data + y * c.row_stride + x * c.pixel_bytes;
}

inline bool inside(const Canvas& c, int64_t x, int64_t y) {
  return x >= 0 && y >= 0 && x < c.width && y < c.height;
}

inline void put_pixel(const Canvas& c, int64_t x, int64_t y, const uint8_t* color) {
  std::memcpy(pixel_at(c, x, y), color, c.pixel_bytes);
}

// Pixels x0..x1 (inclusive, inside the image) of row y.
inline void fill_span(const Canvas& c, int64_t y, int64_t x0, int64_t x1, const uint8_t* color) {
  if (x0 > x1) return;
  uint8_t* p = pixel_at(c, x0, y);
  if (c.pixel_bytes == 1) {
    std::memset(p, color[0], (size_t)(x1 - x0 + 1));
    return;
  }
  for (int64_t x = x0; x <= x1; ++x, p += c.pixel_bytes) std::memcpy(p, color, c.pixel_bytes);
}

// Cohen-Sutherland clipping of p1-p2 to [0, width) x [0, height), moving the points as OpenCV's
// clipLine moves them (intersections truncated toward zero); false when nothing is inside.
bool clip_segment(int64_t width, int64_t height, Point& p1, Point& p2) {
  if (width <= 0 || height <= 0) return false;
  const int64_t right = width - 1, bottom = height - 1;
  int64_t &x1 = p1.x, &y1 = p1.y, &x2 = p2.x, &y2 = p2.y;
  auto outcode = [&](int64_t x, int64_t y) { return (x < 0) + (x > right) * 2 + (y < 0) * 4 + (y > bottom) * 8; };
  int c1 = outcode(x1, y1), c2 = outcode(x2, y2);
  if ((c1 & c2) == 0 && (c1 | c2) != 0) {
    if (c1 & 12) {
      const int64_t a = c1 < 8 ? 0 : bottom;
      x1 += (int64_t)((double)(a - y1) * (x2 - x1) / (y2 - y1));
      y1 = a;
      c1 = (x1 < 0) + (x1 > right) * 2;
    }
    if (c2 & 12) {
      const int64_t a = c2 < 8 ? 0 : bottom;
      x2 += (int64_t)((double)(a - y2) * (x2 - x1) / (y2 - y1));
      y2 = a;
      c2 = (x2 < 0) + (x2 > right) * 2;
    }
    if ((c1 & c2) == 0 && (c1 | c2) != 0) {
      if (c1) {
        const int64_t a = c1 == 1 ? 0 : right;
        y1 += (int64_t)((double)(a - x1) * (y2 - y1) / (x2 - x1));
        x1 = a;
        c1 = 0;
      }
      if (c2) {
        const int64_t a = c2 == 1 ? 0 : right;
        y2 += (int64_t)((double)(a - x2) * (y2 - y1) / (x2 - x1));
        x2 = a;
        c2 = 0;
      }
    }
  }
  return (c1 | c2) == 0;
}

// Integer Bresenham line, 4- or 8-connected, always walked left to right.
void pixel_line(const Canvas& c, Point a, Point b, const uint8_t* color, int line_type) {
  const int connectivity = line_type == 0 ? 8 : line_type == 1 ? 4 : line_type;
  if (connectivity != 4 && connectivity != 8)
    throw std::invalid_argument("unsupported lineType " + std::to_string(line_type) +
                                "; expected LINE_4, LINE_8 or LINE_AA");
  a = {saturate_int32(a.x), saturate_int32(a.y)};
  b = {saturate_int32(b.x), saturate_int32(b.y)};
  if (!inside(c, a.x, a.y) || !inside(c, b.x, b.y)) {
    if (!clip_segment(c.width, c.height, a, b)) return;
  }
  int64_t dx = b.x - a.x, dy = b.y - a.y;
  if (dx < 0) {
    dx = -dx;
    dy = -dy;
    a = b;
  }
  int64_t step_y = 1;
  if (dy < 0) {
    dy = -dy;
    step_y = -1;
  }
  const bool steep = dy > dx;
  if (steep) std::swap(dx, dy);
  // Major step along the longer axis; minor step across it.
  const int64_t major_x = steep ? 0 : 1, major_y = steep ? step_y : 0;
  const int64_t minor_x = steep ? 1 : 0, minor_y = steep ? 0 : step_y;
  int64_t x = a.x, y = a.y;
  if (connectivity == 8) {
    int64_t err = dx - 2 * dy;
    for (int64_t i = 0; i <= dx; ++i) {
      if (inside(c, x, y)) put_pixel(c, x, y, color);
      if (err < 0) {
        err += 2 * dx - 2 * dy;
        x += major_x + minor_x;
        y += major_y + minor_y;
      } else {
        err -= 2 * dy;
        x += major_x;
        y += major_y;
      }
    }
  } else {
    int64_t err = 0;
    for (int64_t i = 0; i <= dx + dy; ++i) {
      if (inside(c, x, y)) put_pixel(c, x, y, color);
      if (err < 0) {
        err += 2 * dx;
        x += minor_x;
        y += minor_y;
      } else {
        err -= 2 * dy;
        x += major_x;
        y += major_y;
      }
    }
  }
}

// 8-connected line between fixed-point points: one pixel per step of the major axis at the
// rounded minor coordinate, plus the rounded end point.
void fixed_point_line(const Canvas& c, Point a, Point b, const uint8_t* color) {
  if (!clip_segment((int64_t)c.width << kFractionBits, (int64_t)c.height << kFractionBits, a, b)) return;
  const int64_t dx = b.x - a.x, dy = b.y - a.y;
  const int64_t ax = dx < 0 ? -dx : dx, ay = dy < 0 ? -dy : dy;
  auto plot = [&](int64_t x, int64_t y) {
    if (inside(c, x, y)) put_pixel(c, x, y, color);
  };
  if (ax > ay) {
    if (dx < 0) std::swap(a, b);
    const int64_t step = (b.y - a.y) * kOne / (ax | 1);
    int64_t count = (b.x - a.x) >> kFractionBits;
    plot((b.x + kHalf) >> kFractionBits, (b.y + kHalf) >> kFractionBits);
    int64_t x = (a.x + kHalf) >> kFractionBits, y = a.y + kHalf;
    for (; count >= 0; --count, ++x, y += step) plot(x, y >> kFractionBits);
  } else {
    if (dy < 0) std::swap(a, b);
    const int64_t step = (b.x - a.x) * kOne / (ay | 1);
    int64_t count = (b.y - a.y) >> kFractionBits;
    plot((b.x + kHalf) >> kFractionBits, (b.y + kHalf) >> kFractionBits);
    int64_t y = (a.y + kHalf) >> kFractionBits, x = a.x + kHalf;
    for (; count >= 0; --count, ++y, x += step) plot(x >> kFractionBits, y);
  }
}

// Antialiasing weights: a Gaussian profile of the line across the pixel grid (sigma ~0.55 px),
// indexed by 1/32-pixel distance: [0, 32) the pixel nearest the line, [32, 64) its neighbours.
struct AntialiasTables {
  int profile[64];
  int slope_gain[32];  // brightness correction by slope (a 45-degree line crosses fewer pixels)
  AntialiasTables() {
    for (int k = 0; k < 32; ++k) {
      const double near = std::fabs((k + 0.5) / 32.0 - 0.5);
      const double far = 0.5 + (k + 0.5) / 32.0;
      profile[k] = (int)std::lround(254.5 * std::exp(-1.68 * near * near));
      profile[32 + k] = (int)std::lround(254.5 * std::exp(-1.68 * far * far));
      const double t = (k + 0.5) / 32.0;
      slope_gain[k] = (int)std::lround(256.0 / std::sqrt(2.0) * std::sqrt(1.0 + t * t));
    }
  }
};
const AntialiasTables& antialias_tables() {
  static const AntialiasTables tables;
  return tables;
}

inline void blend(uint8_t* p, const uint8_t* color, int channels, int alpha) {
  for (int k = 0; k < channels; ++k) {
    int v = p[k];
    v += ((color[k] - v) * alpha + 127) >> 8;
    v += ((color[k] - v) * alpha + 127) >> 8;
    p[k] = (uint8_t)v;
  }
}

// Antialiased line between fixed-point points: three pixels across the line per step of the
// major axis, weighted by their distance to it, with the end pixels weighted by coverage.
void antialiased_line(const Canvas& c, Point a, Point b, const uint8_t* color) {
  if (!c.is_uint8 || !(c.channels == 1 || c.channels == 3 || c.channels == 4)) {
    pixel_line(c, {a.x >> kFractionBits, a.y >> kFractionBits}, {b.x >> kFractionBits, b.y >> kFractionBits},
               color, 8);
    return;
  }
  if (!clip_segment((int64_t)c.width << kFractionBits, (int64_t)c.height << kFractionBits, a, b)) return;
  const AntialiasTables& tables = antialias_tables();
  int64_t dx = b.x - a.x, dy = b.y - a.y;
  const int64_t ax = dx < 0 ? -dx : dx, ay = dy < 0 ? -dy : dy;
  const bool x_major = ax > ay;
  // Walk along the major axis (u) in increasing order; v is the minor coordinate.
  int64_t u0, u1, v0, v1;
  if (x_major) {
    if (dx < 0) std::swap(a, b);
    u0 = a.x, u1 = b.x, v0 = a.y, v1 = b.y;
  } else {
    if (dy < 0) std::swap(a, b);
    u0 = a.y, u1 = b.y, v0 = a.x, v1 = b.x;
  }
  const int64_t step = (int64_t)((uint64_t)(v1 - v0) << kFractionBits) / ((u1 - u0) | 1);
  u1 += kOne;
  int count = (int)((u1 >> kFractionBits) - (u0 >> kFractionBits));
  v0 += ((step * -(u0 & (kOne - 1))) >> kFractionBits) + kHalf;
  int slope_index = (int)((step >> (kFractionBits - 5)) & 0x3f);
  if (step < 0) slope_index ^= 0x3f;
  const int gain = (slope_index & 0x20) ? 0x100 : tables.slope_gain[slope_index];
  // Coverage of the first and last pixel from the 4-bit fractions of the end points.
  const int start_frac = (int)((u0 >> (kFractionBits - 7)) & 0x78);
  const int end_frac = (int)((u1 >> (kFractionBits - 7)) & 0x78);
  int end_weight[9];
  {
    const int full = gain << 7;
    const int start_part = ((0x78 - start_frac) | 4) * gain;
    const int end_part = (end_frac | 4) * gain;
    end_weight[0] = 0;
    end_weight[8] = gain;
    end_weight[1] = end_weight[3] = ((((end_frac - start_frac) & 0x78) | 4) * gain >> 8) & 0x1ff;
    end_weight[2] = (start_part >> 8) & 0x1ff;
    end_weight[4] = ((((end_frac - start_frac) + 0x80) | 4) * gain >> 8) & 0x1ff;
    end_weight[5] = ((start_part + full) >> 8) & 0x1ff;
    end_weight[6] = (end_part >> 8) & 0x1ff;
    end_weight[7] = ((end_part + full) >> 8) & 0x1ff;
  }
  const int64_t u_limit = x_major ? c.width : c.height, v_limit = x_major ? c.height : c.width;
  int64_t u = u0 >> kFractionBits;
  for (int done = 0, left = count; left >= 0; ++u, v0 += step, ++done, --left) {
    if (u < 0 || u >= u_limit) continue;
    const int64_t v = (v0 >> kFractionBits) - 1;
    const int weight = end_weight[std::min(done, 2) * 3 + std::min(left, 2)];
    const int dist = (int)((v0 >> (kFractionBits - 5)) & 31);
    const int alphas[3] = {(weight * tables.profile[dist + 32] >> 8) & 0xff, (weight * tables.profile[dist] >> 8) & 0xff,
                           (weight * tables.profile[63 - dist] >> 8) & 0xff};
    for (int k = 0; k < 3; ++k) {
      const int64_t vv = v + k;
      if (vv < 0 || vv >= v_limit) continue;
      blend(x_major ? pixel_at(c, u, vv) : pixel_at(c, vv, u), color, c.channels, alphas[k]);
    }
  }
}

// Midpoint circle, outline or filled with horizontal spans.
void midpoint_circle(const Canvas& c, Point center, int64_t radius, const uint8_t* color, bool fill) {
  int64_t err = 0, dx = radius, dy = 0, plus = 1, minus = (radius << 1) - 1;
  const int64_t w = c.width, h = c.height;
  auto row = [&](int64_t y, int64_t xa, int64_t xb) {
    if (y < 0 || y >= h) return;
    if (fill) {
      fill_span(c, y, std::max<int64_t>(xa, 0), std::min<int64_t>(xb, w - 1), color);
    } else {
      if (xa >= 0 && xa < w) put_pixel(c, xa, y, color);
      if (xb >= 0 && xb < w) put_pixel(c, xb, y, color);
    }
  };
  while (dx >= dy) {
    const int64_t y11 = center.y - dy, y12 = center.y + dy, y21 = center.y - dx, y22 = center.y + dx;
    const int64_t x11 = center.x - dx, x12 = center.x + dx, x21 = center.x - dy, x22 = center.x + dy;
    if (x11 < w && x12 >= 0 && y21 < h && y22 >= 0) {
      row(y11, x11, x12);
      row(y12, x11, x12);
      if (x21 < w && x22 >= 0) {
        row(y21, x21, x22);
        row(y22, x21, x22);
      }
    }
    dy++;
    err += plus;
    plus += 2;
    if (err > 0) {
      err -= minus;
      dx--;
      minus -= 2;
    }
  }
}

// sin of whole degrees 0..450, rounded to 7 decimals as single floats (the cosine of d is
// entry 450 - d).
struct DegreeSines {
  float value[451];
  DegreeSines() {
    double quadrant[91];
    for (int d = 0; d <= 90; ++d) quadrant[d] = std::round(std::sin(d * kPi / 180.0) * 1e7) / 1e7;
    for (int d = 0; d <= 450; ++d) {
      const int r = d % 360;
      double s;
      if (r <= 90) s = quadrant[r];
      else if (r <= 180) s = quadrant[180 - r];
      else if (r <= 270) s = -quadrant[r - 180];
      else s = -quadrant[360 - r];
      value[d] = (float)s;
    }
  }
};
const DegreeSines& degree_sines() {
  static const DegreeSines table;
  return table;
}

// The arc's points (OpenCV's ellipse2Poly in double precision).
std::vector<std::pair<double, double>> ellipse_points(double cx, double cy, double axis_w, double axis_h, int angle,
                                                      int arc_start, int arc_end, int delta) {
  const float* sines = degree_sines().value;
  while (angle < 0) angle += 360;
  while (angle > 360) angle -= 360;
  if (arc_start > arc_end) std::swap(arc_start, arc_end);
  while (arc_start < 0) {
    arc_start += 360;
    arc_end += 360;
  }
  while (arc_end > 360) {
    arc_end -= 360;
    arc_start -= 360;
  }
  if (arc_end - arc_start > 360) {
    arc_start = 0;
    arc_end = 360;
  }
  const int rotation = angle < 0 ? angle + 360 : angle;
  const float sin_a = sines[rotation], cos_a = sines[450 - rotation];
  std::vector<std::pair<double, double>> points;
  for (int i = arc_start; i < arc_end + delta; i += delta) {
    int t = std::min(i, arc_end);
    if (t < 0) t += 360;
    const double x = axis_w * sines[450 - t];
    const double y = axis_h * sines[t];
    points.emplace_back(cx + x * cos_a - y * sin_a, cy + x * sin_a + y * cos_a);
  }
  if (points.size() == 1) points.assign(2, {cx, cy});
  return points;
}

struct Edge {
  int y0 = 0, y1 = 0;
  int64_t x = 0, dx = 0;
};

void collect_edges(const Canvas& c, const std::vector<Point>& v, std::vector<Edge>& edges, const uint8_t* color,
                   int line_type, int shift, Point offset) {
  const int n = (int)v.size();
  const int64_t delta = offset.y + ((int64_t(1) << shift) >> 1);
  const int up = kFractionBits - shift;
  auto scaled = [&](const Point& p) { return Point{(p.x + offset.x) << up, (p.y + delta) >> shift}; };
  Point p0 = scaled(v[n - 1]);
  for (int i = 0; i < n; ++i) {
    const Point p1 = scaled(v[i]);
    Point c0 = p0, c1 = p1;
    if (line_type < kLineAA) {
      Point t0{(p0.x + kHalf) >> kFractionBits, p0.y}, t1{(p1.x + kHalf) >> kFractionBits, p1.y};
      pixel_line(c, t0, t1, color, line_type);
      // Start clipped edges where their outline enters the image.
      if (!inside(c, t0.x, t0.y) || !inside(c, t1.x, t1.y)) {
        clip_segment(c.width, c.height, t0, t1);
        if (t0.y != t1.y) {
          c0.y = t0.y;
          c1.y = t1.y;
        }
      }
      c0.x = t0.x << kFractionBits;
      c1.x = t1.x << kFractionBits;
    } else {
      antialiased_line(c, {p0.x, p0.y << kFractionBits}, {p1.x, p1.y << kFractionBits}, color);
    }
    if (p0.y != p1.y) {
      Edge e;
      e.dx = (c1.x - c0.x) / (c1.y - c0.y);
      if (p0.y < p1.y) {
        e.y0 = (int)p0.y;
        e.y1 = (int)p1.y;
        e.x = c0.x + (p0.y - c0.y) * e.dx;
      } else {
        e.y0 = (int)p1.y;
        e.y1 = (int)p0.y;
        e.x = c1.x + (p1.y - c1.y) * e.dx;
      }
      edges.push_back(e);
    }
    p0 = p1;
  }
}

// Scanline fill of the even-odd spans between edges: each row pairs up the active edges in
// x order and fills from the first pixel at or right of one to the last at or left of the next.
void fill_edges(const Canvas& c, std::vector<Edge>& edges, const uint8_t* color) {
  const int total = (int)edges.size();
  if (total < 2) return;
  int y_min = INT_MAX, y_max = INT_MIN;
  int64_t x_min = INT64_MAX, x_max = INT64_MIN;
  for (const Edge& e : edges) {
    const int64_t x_end = e.x + (int64_t)(e.y1 - e.y0) * e.dx;
    y_min = std::min(y_min, e.y0);
    y_max = std::max(y_max, e.y1);
    x_min = std::min({x_min, e.x, x_end});
    x_max = std::max({x_max, e.x, x_end});
  }
  if (y_max < 0 || y_min >= c.height || x_max < 0 || x_min >= ((int64_t)c.width << kFractionBits)) return;
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) {
    if (a.y0 != b.y0) return a.y0 < b.y0;
    if (a.x != b.x) return a.x < b.x;
    return a.dx < b.dx;
  });
  y_max = std::min(y_max, c.height);
  std::vector<Edge*> active, merged;
  int next = 0;
  for (int y = edges[0].y0; y < y_max; ++y) {
    // Merge the edges starting on this row into the active list, dropping those that end.
    merged.clear();
    size_t a = 0;
    while (true) {
      if (a < active.size() && active[a]->y1 == y) {
        ++a;
        continue;
      }
      const bool has_new = next < total && edges[next].y0 == y;
      if (a < active.size() && (!has_new || active[a]->x < edges[next].x)) {
        merged.push_back(active[a++]);
      } else if (has_new) {
        merged.push_back(&edges[next++]);
      } else {
        break;
      }
      if (merged.size() % 2 == 0) {
        Edge* e0 = merged[merged.size() - 2];
        Edge* e1 = merged.back();
        if (y >= 0) {
          const Edge* lo = e0->x > e1->x ? e1 : e0;
          const Edge* hi = e0->x > e1->x ? e0 : e1;
          int64_t x1 = (int)((lo->x + kOne - 1) >> kFractionBits);
          int64_t x2 = (int)(hi->x >> kFractionBits);
          if (x1 < c.width && x2 >= 0) fill_span(c, y, std::max<int64_t>(x1, 0), std::min<int64_t>(x2, c.width - 1), color);
        }
        e0->x += e0->dx;
        e1->x += e1->dx;
      }
    }
    active.swap(merged);
    // Keep the active list in x order (stable, as edges cross).
    for (size_t i = 1; i < active.size(); ++i) {
      Edge* e = active[i];
      size_t j = i;
      while (j > 0 && active[j - 1]->x > e->x) {
        active[j] = active[j - 1];
        --j;
      }
      active[j] = e;
    }
    if (active.empty() && next >= total) break;
  }
}

// Scanline fill of a convex polygon: one left and one right edge chain walked down from the top
// vertex. Its outline is drawn first (thin lines of the same type).
void fill_convex(const Canvas& c, const std::vector<Point>& v, const uint8_t* color, int line_type, int shift) {
  const int n = (int)v.size();
  if (n <= 0) return;
  const int64_t delta = (int64_t(1) << shift) >> 1;
  const int64_t left_round = line_type < kLineAA ? kHalf : kOne - 1;
  const int64_t right_round = line_type < kLineAA ? kHalf : 0;
  const int up = kFractionBits - shift;
  Point prev{v[n - 1].x << up, v[n - 1].y << up};
  int64_t xmin = v[0].x, xmax = v[0].x, ymin = v[0].y, ymax = v[0].y;
  int top = 0;
  for (int i = 0; i < n; ++i) {
    const Point p = v[i];
    if (p.y < ymin) {
      ymin = p.y;
      top = i;
    }
    ymax = std::max(ymax, p.y);
    xmax = std::max(xmax, p.x);
    xmin = std::min(xmin, p.x);
    const Point q{p.x << up, p.y << up};
    if (line_type <= 8) {
      if (shift == 0)
        pixel_line(c, {prev.x >> kFractionBits, prev.y >> kFractionBits}, {q.x >> kFractionBits, q.y >> kFractionBits},
                   color, line_type);
      else
        fixed_point_line(c, prev, q, color);
    } else {
      antialiased_line(c, prev, q, color);
    }
    prev = q;
  }
  xmin = (xmin + delta) >> shift;
  xmax = (xmax + delta) >> shift;
  ymin = (ymin + delta) >> shift;
  ymax = (ymax + delta) >> shift;
  if (n < 3 || (int)xmax < 0 || (int)ymax < 0 || (int)xmin >= c.width || (int)ymin >= c.height) return;
  const int y_last = (int)std::min<int64_t>(ymax, c.height - 1);
  const int y_first = (int)ymin;
  struct Side {
    int index, direction;
    int64_t x, dx;
    int y_end;
  } side[2] = {{top, 1, -kOne, 0, y_first}, {top, n - 1, -kOne, 0, y_first}};
  int remaining = n;
  int y = y_first;
  do {
    if (line_type < kLineAA || y < y_last || y == y_first) {
      for (Side& s : side) {
        if (y < s.y_end) continue;
        int i0 = s.index, i1 = i0 + s.direction;
        if (i1 >= n) i1 -= n;
        while (remaining-- > 0) {
          const int ty = (int)((v[i1].y + delta) >> shift);
          if (ty > y) {
            int64_t xs = v[i0].x, xe = v[i1].x;
            if (shift != kFractionBits) {
              xs <<= up;
              xe <<= up;
            }
            s.y_end = ty;
            s.dx = ((xe - xs) * 2 + ((int64_t)ty - y)) / (2 * ((int64_t)ty - y));
            s.x = xs;
            s.index = i1;
            break;
          }
          i0 = i1;
          i1 += s.direction;
          if (i1 >= n) i1 -= n;
        }
      }
    }
    if (remaining < 0) break;
    if (y >= 0) {
      const Side& lo = side[0].x > side[1].x ? side[1] : side[0];
      const Side& hi = side[0].x > side[1].x ? side[0] : side[1];
      int64_t x1 = (int)((lo.x + left_round) >> kFractionBits);
      int64_t x2 = (int)((hi.x + right_round) >> kFractionBits);
      if (x2 >= 0 && x1 < c.width) fill_span(c, y, std::max<int64_t>(x1, 0), std::min<int64_t>(x2, c.width - 1), color);
    }
    side[0].x += side[0].dx;
    side[1].x += side[1].dx;
    // Rows above the image only advance the edges: skip to the next vertex row or row 0.
    if (y + 1 < 0) {
      const int target = std::min({0, side[0].y_end, side[1].y_end, y_last + 1});
      if (target > y + 1) {
        const int64_t skip = (int64_t)target - (y + 1);
        side[0].x += side[0].dx * skip;
        side[1].x += side[1].dx * skip;
        y += (int)skip;
      }
    }
  } while (++y <= y_last);
}

void ellipse_fixed(const Canvas& c, Point center, Point axes, int angle, int arc_start, int arc_end,
                   const uint8_t* color, int thickness, int line_type);

// A line `thickness` pixels wide between fixed-point points (shifted by `shift` bits): a thin
// line, or a filled quadrilateral with round caps at the ends selected by `caps` (1: start,
// 2: end).
void thick_line(const Canvas& c, Point p0, Point p1, const uint8_t* color, int thickness, int line_type, int caps,
                int shift) {
  if (thickness > 1 && shift == 0) {
    // Whole-pixel thick lines are first clipped to the image grown by the thickness.
    const int64_t margin = thickness;
    p0 = {saturate_int32(p0.x) + margin, saturate_int32(p0.y) + margin};
    p1 = {saturate_int32(p1.x) + margin, saturate_int32(p1.y) + margin};
    if (!clip_segment(c.width + 2 * margin, c.height + 2 * margin, p0, p1)) return;
    p0 = {p0.x - margin, p0.y - margin};
    p1 = {p1.x - margin, p1.y - margin};
  }
  const int up = kFractionBits - shift;
  p0 = {p0.x << up, p0.y << up};
  p1 = {p1.x << up, p1.y << up};
  if (thickness <= 1) {
    if (line_type < kLineAA) {
      // 8-connected lines round their end points to whole pixels; other types keep the
      // fraction bits.
      if (line_type == 1 || line_type == 8 || shift == 0) {
        pixel_line(c, {(p0.x + kHalf) >> kFractionBits, (p0.y + kHalf) >> kFractionBits},
                   {(p1.x + kHalf) >> kFractionBits, (p1.y + kHalf) >> kFractionBits}, color, line_type);
      } else {
        fixed_point_line(c, p0, p1, color);
      }
    } else {
      antialiased_line(c, p0, p1, color);
    }
    return;
  }
  const double inv_one = 1.0 / (double)kOne;
  const double dx = (p0.x - p1.x) * inv_one, dy = (p1.y - p0.y) * inv_one;
  double r = dx * dx + dy * dy;
  const int odd = thickness & 1;
  const int half_width = thickness << (kFractionBits - 1);
  if (std::fabs(r) > DBL_EPSILON) {
    r = (half_width + odd * kOne * 0.5) / std::sqrt(r);
    const int64_t off_x = round_to_int(dy * r), off_y = round_to_int(dx * r);
    const std::vector<Point> quad = {{p0.x + off_x, p0.y + off_y},
                                     {p0.x - off_x, p0.y - off_y},
                                     {p1.x - off_x, p1.y - off_y},
                                     {p1.x + off_x, p1.y + off_y}};
    fill_convex(c, quad, color, line_type, kFractionBits);
  }
  for (int end = 0; end < 2; ++end) {
    if (caps & (end + 1)) {
      if (line_type < kLineAA) {
        const Point center{(p0.x + kHalf) >> kFractionBits, (p0.y + kHalf) >> kFractionBits};
        midpoint_circle(c, center, (half_width + kHalf) >> kFractionBits, color, true);
      } else {
        ellipse_fixed(c, p0, {half_width, half_width}, 0, 0, 360, color, -1, line_type);
      }
    }
    p0 = p1;
  }
}

void polyline(const Canvas& c, const std::vector<Point>& v, bool closed, const uint8_t* color, int thickness,
              int line_type, int shift) {
  const int n = (int)v.size();
  if (n <= 0) return;
  int caps = closed ? 2 : 3;
  Point p0 = v[closed ? n - 1 : 0];
  for (int i = closed ? 0 : 1; i < n; ++i) {
    thick_line(c, p0, v[i], color, thickness, line_type, caps, shift);
    p0 = v[i];
    caps = 2;
  }
}

// An elliptic arc (center and axes in 16-bit fixed point): outline, or filled (thickness < 0;
// a partial arc is filled as a pie slice).
void ellipse_fixed(const Canvas& c, Point center, Point axes, int angle, int arc_start, int arc_end,
                   const uint8_t* color, int thickness, int line_type) {
  axes.x = std::abs(axes.x);
  axes.y = std::abs(axes.y);
  const int64_t size = (std::max(axes.x, axes.y) + kHalf) >> kFractionBits;
  const int delta = size < 3 ? 90 : size < 10 ? 30 : size < 15 ? 18 : 5;
  const auto points = ellipse_points((double)center.x, (double)center.y, (double)axes.x, (double)axes.y, angle,
                                     arc_start, arc_end, delta);
  std::vector<Point> v;
  for (const auto& p : points) {
    Point q{(int64_t)round_to_int(p.first / (double)kOne) << kFractionBits,
            (int64_t)round_to_int(p.second / (double)kOne) << kFractionBits};
    q.x += round_to_int(p.first - (double)q.x);
    q.y += round_to_int(p.second - (double)q.y);
    if (v.empty() || q.x != v.back().x || q.y != v.back().y) v.push_back(q);
  }
  if (v.size() <= 1) v.assign(2, center);
  if (thickness >= 0) {
    polyline(c, v, false, color, thickness, line_type, kFractionBits);
  } else if (arc_end - arc_start >= 360) {
    fill_convex(c, v, color, line_type, kFractionBits);
  } else {
    v.push_back(center);
    std::vector<Edge> edges;
    collect_edges(c, v, edges, color, line_type, kFractionBits, Point{});
    fill_edges(c, edges, color);
  }
}

}  // namespace

void draw_line(const Canvas& canvas, Point p0, Point p1, const uint8_t* color, int thickness, int line_type,
               int shift) {
  thick_line(canvas, p0, p1, color, thickness, line_type, 3, shift);
}

void draw_polylines(const Canvas& canvas, const std::vector<std::vector<Point>>& contours, bool closed,
                    const uint8_t* color, int thickness, int line_type, int shift) {
  for (const auto& contour : contours) polyline(canvas, contour, closed, color, thickness, line_type, shift);
}

void draw_rectangle(const Canvas& canvas, Point p0, Point p1, const uint8_t* color, int thickness, int line_type,
                    int shift) {
  const std::vector<Point> corners = {p0, {p1.x, p0.y}, p1, {p0.x, p1.y}};
  if (thickness >= 0)
    polyline(canvas, corners, true, color, thickness, line_type, shift);
  else
    fill_convex(canvas, corners, color, line_type, shift);
}

void draw_circle(const Canvas& canvas, Point center, int64_t radius, const uint8_t* color, int thickness,
                 int line_type, int shift) {
  if (thickness > 1 || line_type != 8 || shift > 0) {
    const int up = kFractionBits - shift;
    ellipse_fixed(canvas, {center.x << up, center.y << up}, {radius << up, radius << up}, 0, 0, 360, color,
                  thickness, line_type);
  } else {
    midpoint_circle(canvas, center, radius, color, thickness < 0);
  }
}

void draw_ellipse(const Canvas& canvas, Point center, Point axes, int angle, int arc_start, int arc_end,
                  const uint8_t* color, int thickness, int line_type, int shift) {
  const int up = kFractionBits - shift;
  ellipse_fixed(canvas, {center.x << up, center.y << up}, {axes.x << up, axes.y << up}, angle, arc_start, arc_end,
                color, thickness, line_type);
}

void draw_ellipse_box(const Canvas& canvas, float center_x, float center_y, float width, float height, float angle,
                      const uint8_t* color, int thickness, int line_type) {
  Point center{round_to_int(center_x), round_to_int(center_y)};
  center.x = (center.x << kFractionBits) + round_to_int((center_x - (float)center.x) * (float)kOne);
  center.y = (center.y << kFractionBits) + round_to_int((center_y - (float)center.y) * (float)kOne);
  Point axes{round_to_int(width), round_to_int(height)};
  axes.x = (axes.x << (kFractionBits - 1)) + round_to_int((width - (float)axes.x) * (float)kHalf);
  axes.y = (axes.y << (kFractionBits - 1)) + round_to_int((height - (float)axes.y) * (float)kHalf);
  ellipse_fixed(canvas, center, axes, round_to_int(angle), 0, 360, color, thickness, line_type);
}

void fill_convex_poly(const Canvas& canvas, const std::vector<Point>& points, const uint8_t* color, int line_type,
                      int shift) {
  fill_convex(canvas, points, color, line_type, shift);
}

void fill_poly(const Canvas& canvas, const std::vector<std::vector<Point>>& contours, const uint8_t* color,
               int line_type, int shift, Point offset) {
  std::vector<Edge> edges;
  for (const auto& contour : contours)
    if (!contour.empty()) collect_edges(canvas, contour, edges, color, line_type, shift, offset);
  fill_edges(canvas, edges, color);
}

std::vector<Point> ellipse_polygon(Point center, Point axes, int angle, int arc_start, int arc_end, int delta) {
  const auto points = ellipse_points((double)center.x, (double)center.y, (double)axes.x, (double)axes.y, angle,
                                     arc_start, arc_end, delta);
  std::vector<Point> out;
  for (const auto& p : points) {
    const Point q{round_to_int(p.first), round_to_int(p.second)};
    if (out.empty() || q.x != out.back().x || q.y != out.back().y) out.push_back(q);
  }
  if (out.size() == 1) out.assign(2, center);
  return out;
}

}  // namespace cv_drawing
}  // namespace host
}  // namespace mnnpy
