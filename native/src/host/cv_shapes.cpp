// Shape analysis (see cv_shapes.h). Each function keeps OpenCV's arithmetic types (int, float or
// double per step) and its tie-breaking, so that results match it bit for bit.
#include "host/cv_shapes.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <numeric>
#include <type_traits>

#include "mnnpy/thread_pool.h"

namespace mnnpy {
namespace host {
namespace cv_shapes {

namespace {

template <typename T>
struct Pt {
  T x, y;
  bool operator==(const Pt& o) const { return x == o.x && y == o.y; }
};

template <typename T>
const Pt<T>* as_points(const T* data) {
  return reinterpret_cast<const Pt<T>*>(data);
}

template <typename T>
int sign_of(T v) {
  return (v > 0) - (v < 0);
}

// ---------------------------------------------------------------------------------------------
// Convex hull: Sklansky's scan over the points sorted by x (then y, then index), run from both x
// extremes towards the lowest and the highest point.

template <typename T, typename Wide>
int sklansky_chain(const Pt<T>* pts, const int32_t* sorted, int start, int end, int* stack, int nsign, int sign2) {
  auto at = [&](int i) -> const Pt<T>& { return pts[sorted[i]]; };
  const int step = end > start ? 1 : -1;
  int pprev = start, pcur = pprev + step, pnext = pcur + step;
  int size = 3;
  if (start == end || at(start) == at(end)) {
    stack[0] = start;
    return 1;
  }
  stack[0] = pprev;
  stack[1] = pcur;
  stack[2] = pnext;
  end += step;
  while (pnext != end) {
    const T cury = at(pcur).y, nexty = at(pnext).y;
    const T by = nexty - cury;
    if (sign_of(by) != nsign) {
      T ax = at(pcur).x - at(pprev).x, ay = cury - at(pprev).y;
      T bx = at(pnext).x - at(pcur).x, byn = by;
      if (std::is_floating_point<T>::value) {
        const double na = std::sqrt((double)ax * ax + (double)ay * ay);
        const double nb = std::sqrt((double)bx * bx + (double)byn * byn);
        const double sa = na ? 1. / na : 0., sb = nb ? 1. / nb : 0.;
        ax = (T)(ax * sa);
        ay = (T)(ay * sa);
        bx = (T)(bx * sb);
        byn = (T)(byn * sb);
      }
      const Wide convexity = (Wide)ay * bx - (Wide)ax * byn;
      if (sign_of(convexity) == sign2 && (ax != 0 || ay != 0)) {
        pprev = pcur;
        pcur = pnext;
        pnext += step;
        stack[size] = pnext;
        size++;
      } else if (pprev == start) {
        pcur = pnext;
        stack[1] = pcur;
        pnext += step;
        stack[2] = pnext;
      } else {
        stack[size - 2] = pnext;
        pcur = pprev;
        pprev = stack[size - 4];
        size--;
      }
    } else {
      pnext += step;
      stack[size - 1] = pnext;
    }
  }
  return --size;
}

template <typename T, typename Wide>
std::vector<int32_t> hull_of(const T* data, int64_t n64, bool clockwise, bool indices) {
  std::vector<int32_t> hull;
  const int n = (int)n64;
  if (n <= 0) return hull;
  const Pt<T>* pts = as_points(data);
  std::vector<int32_t> sorted(n);
  std::iota(sorted.begin(), sorted.end(), 0);
  std::sort(sorted.begin(), sorted.end(), [&](int32_t a, int32_t b) {
    if (pts[a].x != pts[b].x) return pts[a].x < pts[b].x;
    if (pts[a].y != pts[b].y) return pts[a].y < pts[b].y;
    return a < b;
  });
  int miny = 0, maxy = 0;
  for (int i = 1; i < n; ++i) {
    const T y = pts[sorted[i]].y;
    if (pts[sorted[miny]].y > y) miny = i;
    if (pts[sorted[maxy]].y < y) maxy = i;
  }
  hull.reserve(n);
  if (pts[sorted[0]] == pts[sorted[n - 1]]) {
    hull.push_back(sorted[0]);
    return hull;
  }
  std::vector<int> stack_buf(n + 2);
  int* stack = stack_buf.data();
  // Upper half: from the leftmost and the rightmost point to the highest y.
  int* tl = stack;
  int tl_count = sklansky_chain<T, Wide>(pts, sorted.data(), 0, maxy, tl, -1, 1);
  int* tr = stack + tl_count;
  int tr_count = sklansky_chain<T, Wide>(pts, sorted.data(), n - 1, maxy, tr, -1, -1);
  if (!clockwise) {
    std::swap(tl, tr);
    std::swap(tl_count, tr_count);
  }
  // The hull holds sorted positions until the end.
  for (int i = 0; i < tl_count - 1; ++i) hull.push_back(tl[i]);
  for (int i = tr_count - 1; i > 0; --i) hull.push_back(tr[i]);
  const int stop = tr_count > 2 ? tr[1] : tl_count > 2 ? tl[tl_count - 2] : -1;
  // Lower half.
  int* bl = stack;
  int bl_count = sklansky_chain<T, Wide>(pts, sorted.data(), 0, miny, bl, 1, -1);
  int* br = stack + bl_count;
  int br_count = sklansky_chain<T, Wide>(pts, sorted.data(), n - 1, miny, br, 1, 1);
  if (clockwise) {
    std::swap(bl, br);
    std::swap(bl_count, br_count);
  }
  if (stop >= 0) {
    const int check = bl_count > 2 ? bl[1] : bl_count + br_count > 2 ? br[2 - bl_count] : -1;
    if (check == stop || (check >= 0 && pts[sorted[check]] == pts[sorted[stop]])) {
      // Collinear points: the lower half mirrors the upper one.
      bl_count = std::min(bl_count, 2);
      br_count = std::min(br_count, 2);
    }
  }
  for (int i = 0; i < bl_count - 1; ++i) hull.push_back(bl[i]);
  for (int i = br_count - 1; i > 0; --i) hull.push_back(br[i]);
  const int nout = (int)hull.size();
  if (indices) {
    // Among equal points, pick the index that keeps the hull's indices monotonic when one does.
    auto monotonic = [](int32_t a, int32_t b, int32_t c) { return (a < b && b < c) || (a > b && b > c); };
    for (int i = 0; i < nout; ++i) {
      const int32_t before = sorted[hull[(i == 0 ? nout : i) - 1]], after = sorted[hull[(i + 1) % nout]];
      if (monotonic(before, sorted[hull[i]], after)) continue;
      for (int j = hull[i] + 1; j < n && pts[sorted[hull[i]]] == pts[sorted[j]]; ++j) {
        if (monotonic(before, sorted[j], after)) {
          hull[i] = j;
          break;
        }
      }
    }
  }
  for (int i = 0; i < nout; ++i) hull[i] = sorted[hull[i]];

  // Rotate the hull so that its indices ascend or descend when a rotation can do it.
  if (nout >= 3) {
    int min_idx = 0, max_idx = 0, ascents = 0;
    for (int i = 1; i < nout; ++i) {
      const int idx = hull[i];
      ascents += hull[i - 1] < idx;
      if (ascents > 1 && ascents <= i - 2) break;
      if (idx < hull[min_idx]) min_idx = i;
      if (idx > hull[max_idx]) max_idx = i;
    }
    const int spread = std::abs(max_idx - min_idx);
    if ((spread == 1 || spread == nout - 1) && (ascents <= 1 || ascents >= nout - 2)) {
      const bool ascending = (max_idx + 1) % nout == min_idx;
      const int first = ascending ? min_idx : max_idx;
      if (first > 0) {
        int j = first, i = 0;
        for (; i < nout; ++i) {
          const int cur = stack[i] = hull[j];
          const int next_j = j + 1 < nout ? j + 1 : 0;
          if (i < nout - 1 && (ascending != (cur < hull[next_j]))) break;
          j = next_j;
        }
        if (i == nout) std::copy(stack, stack + nout, hull.begin());
      }
    }
  }
  return hull;
}

// ---------------------------------------------------------------------------------------------
// Minimum-area rectangle by rotating calipers over the clockwise hull, in single precision.

void calipers(const Pt<float>* points, int n, float out[6]) {
  float minarea = FLT_MAX;
  int best_left = 0, best_bottom = 0;
  float best_a = 0, best_b = 0, best_width = 0, best_height = 0;
  std::vector<float> inv_length(n);
  std::vector<Pt<float>> edge(n);
  int left = 0, bottom = 0, right = 0, top = 0;
  float orientation = 0, base_a, base_b = 0;
  Pt<float> p0 = points[0];
  float left_x = p0.x, right_x = p0.x, top_y = p0.y, bottom_y = p0.y;
  for (int i = 0; i < n; ++i) {
    if (p0.x < left_x) left_x = p0.x, left = i;
    if (p0.x > right_x) right_x = p0.x, right = i;
    if (p0.y > top_y) top_y = p0.y, top = i;
    if (p0.y < bottom_y) bottom_y = p0.y, bottom = i;
    const Pt<float> p = points[i + 1 < n ? i + 1 : 0];
    const double dx = p.x - p0.x, dy = p.y - p0.y;
    edge[i].x = (float)dx;
    edge[i].y = (float)dy;
    inv_length[i] = (float)(1. / std::sqrt(dx * dx + dy * dy));
    p0 = p;
  }
  {
    double ax = edge[n - 1].x, ay = edge[n - 1].y;
    for (int i = 0; i < n; ++i) {
      const double bx = edge[i].x, by = edge[i].y;
      const double convexity = ax * by - ay * bx;
      if (convexity != 0) {
        orientation = convexity > 0 ? 1.f : -1.f;
        break;
      }
      ax = bx;
      ay = by;
    }
  }
  base_a = orientation;
  int seq[4] = {bottom, right, top, left};
  for (int k = 0; k < n; ++k) {
    const float dp0 = base_a * edge[seq[0]].x + base_b * edge[seq[0]].y;
    const float dp1 = -base_b * edge[seq[1]].x + base_a * edge[seq[1]].y;
    const float dp2 = -base_a * edge[seq[2]].x - base_b * edge[seq[2]].y;
    const float dp3 = base_b * edge[seq[3]].x - base_a * edge[seq[3]].y;
    float maxcos = dp0 * inv_length[seq[0]];
    int main_element = 0;
    float c = dp1 * inv_length[seq[1]];
    if (c > maxcos) main_element = 1, maxcos = c;
    c = dp2 * inv_length[seq[2]];
    if (c > maxcos) main_element = 2, maxcos = c;
    c = dp3 * inv_length[seq[3]];
    if (c > maxcos) main_element = 3, maxcos = c;
    const int lead = seq[main_element];
    const float lead_x = edge[lead].x * inv_length[lead], lead_y = edge[lead].y * inv_length[lead];
    switch (main_element) {
      case 0: base_a = lead_x, base_b = lead_y; break;
      case 1: base_a = lead_y, base_b = -lead_x; break;
      case 2: base_a = -lead_x, base_b = -lead_y; break;
      default: base_a = -lead_y, base_b = lead_x; break;
    }
    seq[main_element] += 1;
    if (seq[main_element] == n) seq[main_element] = 0;
    float dx = points[seq[1]].x - points[seq[3]].x, dy = points[seq[1]].y - points[seq[3]].y;
    const float width = dx * base_a + dy * base_b;
    dx = points[seq[2]].x - points[seq[0]].x;
    dy = points[seq[2]].y - points[seq[0]].y;
    const float height = -dx * base_b + dy * base_a;
    const float area = width * height;
    if (area <= minarea) {
      minarea = area;
      best_left = seq[3];
      best_a = base_a;
      best_width = width;
      best_b = base_b;
      best_height = height;
      best_bottom = seq[0];
    }
  }
  const float a1 = best_a, b1 = best_b, a2 = -best_b, b2 = best_a;
  const float c1 = a1 * points[best_left].x + points[best_left].y * b1;
  const float c2 = a2 * points[best_bottom].x + points[best_bottom].y * b2;
  const float idet = 1.f / (a1 * b2 - a2 * b1);
  out[0] = (c1 * b2 - c2 * b1) * idet;
  out[1] = (a1 * c2 - a2 * c1) * idet;
  out[2] = a1 * best_width;
  out[3] = b1 * best_width;
  out[4] = a2 * best_height;
  out[5] = b2 * best_height;
}

template <typename T>
void rect_of(const T* data, int64_t n, float out[5]) {
  const std::vector<int32_t> hull = convex_hull(data, n, true, false);
  const Pt<T>* pts = as_points(data);
  std::vector<Pt<float>> h(hull.size());
  for (size_t i = 0; i < hull.size(); ++i) h[i] = {(float)pts[hull[i]].x, (float)pts[hull[i]].y};
  float cx = 0, cy = 0, w = 0, ht = 0, angle = 0;
  const int m = (int)h.size();
  if (m > 2) {
    float c[6];
    calipers(h.data(), m, c);
    cx = c[0] + (c[2] + c[4]) * 0.5f;
    cy = c[1] + (c[3] + c[5]) * 0.5f;
    w = (float)std::sqrt((double)c[2] * c[2] + (double)c[3] * c[3]);
    ht = (float)std::sqrt((double)c[4] * c[4] + (double)c[5] * c[5]);
    angle = (float)std::atan2((double)c[3], (double)c[2]);
  } else if (m == 2) {
    cx = (h[0].x + h[1].x) * 0.5f;
    cy = (h[0].y + h[1].y) * 0.5f;
    const double dx = h[1].x - h[0].x, dy = h[1].y - h[0].y;
    w = (float)std::sqrt(dx * dx + dy * dy);
    angle = (float)std::atan2(dy, dx);
  } else if (m == 1) {
    cx = h[0].x;
    cy = h[0].y;
  }
  angle = (float)(angle * 180 / M_PI);
  // OpenCV 5 reports the angle in [-90, 0), turning the box by quarter turns.
  while (angle >= 0) {
    angle -= 90;
    std::swap(w, ht);
  }
  while (angle < -90) {
    angle += 90;
    std::swap(w, ht);
  }
  out[0] = cx;
  out[1] = cy;
  out[2] = w;
  out[3] = ht;
  out[4] = angle;
}

// ---------------------------------------------------------------------------------------------
// Douglas-Peucker: split at the farthest point until every piece is within epsilon, then drop
// points left on nearly straight runs.

template <typename T>
std::vector<T> douglas_peucker(const T* data, int64_t n64, double eps, bool closed0) {
  using P = Pt<T>;
  const P* src = as_points(data);
  const int count0 = (int)n64;
  std::vector<T> result;
  if (count0 == 0) return result;
  struct Slice {
    int start, end;
  };
  std::vector<P> dst(count0);
  std::vector<Slice> stack;
  stack.reserve(64);
  int init_iters = 3;
  Slice slice{0, 0}, right{0, 0};
  P start_pt{(T)-1000000, (T)-1000000}, end_pt{0, 0}, pt{0, 0};
  int pos = 0, count = count0, new_count = 0;
  bool closed = closed0, le_eps = false;
  auto read = [&](P& p, int& at, const P* from) {
    p = from[at];
    if (++at >= count) at = 0;
  };
  eps *= eps;
  if (!closed) {
    right.start = count;
    end_pt = src[0];
    start_pt = src[count - 1];
    if (start_pt.x != end_pt.x || start_pt.y != end_pt.y) {
      slice = {0, count - 1};
      stack.push_back(slice);
    } else {
      closed = true;
      init_iters = 1;
    }
  }
  if (closed) {
    // Two points far apart on the curve (a few rounds of "farthest from the last one").
    right.start = 0;
    for (int i = 0; i < init_iters; ++i) {
      double max_dist = 0;
      pos = (pos + right.start) % count;
      read(start_pt, pos, src);
      for (int j = 1; j < count; ++j) {
        read(pt, pos, src);
        const double dx = pt.x - start_pt.x, dy = pt.y - start_pt.y;
        const double dist = dx * dx + dy * dy;
        if (dist > max_dist) {
          max_dist = dist;
          right.start = j;
        }
      }
      le_eps = max_dist <= eps;
    }
    if (!le_eps) {
      right.end = slice.start = pos % count;
      slice.end = right.start = (right.start + slice.start) % count;
      stack.push_back(right);
      stack.push_back(slice);
    } else {
      dst[new_count++] = start_pt;
    }
  }
  while (!stack.empty()) {
    slice = stack.back();
    stack.pop_back();
    end_pt = src[slice.end];
    pos = slice.start;
    read(start_pt, pos, src);
    if (pos != slice.end) {
      double max_d = 0;
      const double dx = end_pt.x - start_pt.x, dy = end_pt.y - start_pt.y;
      const double seg2 = dx * dx + dy * dy;
      while (pos != slice.end) {
        read(pt, pos, src);
        const double projection = ((pt.x - start_pt.x) * dx + (pt.y - start_pt.y) * dy);
        double d;
        if (projection < 0) {
          d = ((pt.x - start_pt.x) * (pt.x - start_pt.x) + (pt.y - start_pt.y) * (pt.y - start_pt.y)) * seg2;
        } else if (projection > seg2) {
          d = ((pt.x - end_pt.x) * (pt.x - end_pt.x) + (pt.y - end_pt.y) * (pt.y - end_pt.y)) * seg2;
        } else {
          const double cross = ((pt.y - start_pt.y) * dx - (pt.x - start_pt.x) * dy);
          d = cross * cross;
        }
        if (d > max_d) {
          max_d = d;
          right.start = (pos + count - 1) % count;
        }
      }
      le_eps = max_d <= eps * seg2;
    } else {
      le_eps = true;
      start_pt = src[slice.start];
    }
    if (le_eps) {
      dst[new_count++] = start_pt;
    } else {
      right.end = slice.end;
      slice.end = right.start;
      stack.push_back(right);
      stack.push_back(slice);
    }
  }
  if (!closed) dst[new_count++] = src[count - 1];

  // Clean-up of points on nearly straight runs.
  closed = closed0;
  count = new_count;
  pos = closed ? count - 1 : 0;
  read(start_pt, pos, dst.data());
  int wpos = pos;
  read(pt, pos, dst.data());
  for (int i = !closed; i < count - !closed && new_count > 2; ++i) {
    read(end_pt, pos, dst.data());
    const double dx = end_pt.x - start_pt.x, dy = end_pt.y - start_pt.y;
    const double dist = std::fabs((pt.x - start_pt.x) * dy - (pt.y - start_pt.y) * dx);
    const double inner = (pt.x - start_pt.x) * (end_pt.x - pt.x) + (pt.y - start_pt.y) * (end_pt.y - pt.y);
    if (dist * dist <= 0.5 * eps * (dx * dx + dy * dy) && dx != 0 && dy != 0 && inner >= 0) {
      new_count--;
      dst[wpos] = start_pt = end_pt;
      if (++wpos >= count) wpos = 0;
      read(pt, pos, dst.data());
      i++;
      continue;
    }
    dst[wpos] = start_pt = pt;
    if (++wpos >= count) wpos = 0;
    pt = end_pt;
  }
  if (!closed) dst[wpos] = pt;
  result.resize((size_t)new_count * 2);
  for (int i = 0; i < new_count; ++i) {
    result[2 * i] = dst[i].x;
    result[2 * i + 1] = dst[i].y;
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// Moments.

void complete_moments(double m[24]) {
  double cx = 0, cy = 0, inv_m00 = 0;
  if (std::fabs(m[0]) > DBL_EPSILON) {
    inv_m00 = 1. / m[0];
    cx = m[1] * inv_m00;
    cy = m[2] * inv_m00;
  }
  const double mu20 = m[3] - m[1] * cx;
  double mu11 = m[4] - m[1] * cy;
  const double mu02 = m[5] - m[2] * cy;
  m[10] = mu20;
  m[11] = mu11;
  m[12] = mu02;
  m[13] = m[6] - cx * (3 * mu20 + cx * m[1]);
  mu11 += mu11;
  m[14] = m[7] - cx * (mu11 + cx * m[2]) - cy * mu20;
  m[15] = m[8] - cy * (mu11 + cy * m[1]) - cx * mu02;
  m[16] = m[9] - cy * (3 * mu02 + cy * m[2]);
  const double inv_sqrt_m00 = std::sqrt(std::fabs(inv_m00));
  const double s2 = inv_m00 * inv_m00, s3 = s2 * inv_sqrt_m00;
  for (int k = 0; k < 3; ++k) m[17 + k] = m[10 + k] * s2;
  for (int k = 0; k < 4; ++k) m[20 + k] = m[13 + k] * s3;
}

template <typename T>
void polygon_moments(const T* data, int64_t n, double m[24]) {
  std::fill(m, m + 24, 0.0);
  if (n == 0) return;
  const Pt<T>* p = as_points(data);
  double a00 = 0, a10 = 0, a01 = 0, a20 = 0, a11 = 0, a02 = 0, a30 = 0, a21 = 0, a12 = 0, a03 = 0;
  double xp = p[n - 1].x, yp = p[n - 1].y;
  double xp2 = xp * xp, yp2 = yp * yp;
  for (int64_t i = 0; i < n; ++i) {
    const double x = p[i].x, y = p[i].y;
    const double x2 = x * x, y2 = y * y;
    const double cross = xp * y - x * yp;
    const double xs = xp + x, ys = yp + y;
    a00 += cross;
    a10 += cross * xs;
    a01 += cross * ys;
    a20 += cross * (xp * xs + x2);
    a11 += cross * (xp * (ys + yp) + x * (ys + y));
    a02 += cross * (yp * ys + y2);
    a30 += cross * xs * (xp2 + x2);
    a03 += cross * ys * (yp2 + y2);
    a21 += cross * (xp2 * (3 * yp + y) + 2 * x * xp * ys + x2 * (yp + 3 * y));
    a12 += cross * (yp2 * (3 * xp + x) + 2 * y * yp * xs + y2 * (xp + 3 * x));
    xp = x;
    yp = y;
    xp2 = x2;
    yp2 = y2;
  }
  if (std::fabs(a00) > FLT_EPSILON) {
    const double s = a00 > 0 ? 1.0 : -1.0;
    m[0] = a00 * (s * 0.5);
    m[1] = a10 * (s * 0.16666666666666666666666666666667);
    m[2] = a01 * (s * 0.16666666666666666666666666666667);
    m[3] = a20 * (s * 0.083333333333333333333333333333333);
    m[4] = a11 * (s * 0.041666666666666666666666666666667);
    m[5] = a02 * (s * 0.083333333333333333333333333333333);
    m[6] = a30 * (s * 0.05);
    m[7] = a21 * (s * 0.016666666666666666666666666666667);
    m[8] = a12 * (s * 0.016666666666666666666666666666667);
    m[9] = a03 * (s * 0.05);
    complete_moments(m);
  }
}

constexpr int kTile = 32;

// Raw moments of one tile relative to its corner: integer sums per row for integer pixels
// (`Row` for a row, `Sum` across rows), double for floating point.
template <typename T, typename Row, typename Sum>
void tile_moments(const T* src, int64_t stride, int rows, int cols, bool binary, double out[10]) {
  Sum mom[10] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  for (int y = 0; y < rows; ++y) {
    const T* row = src + y * stride;
    Row x0 = 0, x1 = 0, x2 = 0;
    Sum x3 = 0;
    for (int x = 0; x < cols; ++x) {
      const Row p = binary ? (Row)(row[x] != 0 ? 255 : 0) : (Row)row[x];
      const Row xp = x * p, xxp = xp * x;
      x0 += p;
      x1 += xp;
      x2 += xxp;
      x3 += xxp * x;
    }
    const Row py = y * x0, sy = y * y;
    mom[9] += ((Sum)py) * sy;
    mom[8] += ((Sum)x1) * sy;
    mom[7] += ((Sum)x2) * y;
    mom[6] += x3;
    mom[5] += x0 * sy;
    mom[4] += x1 * y;
    mom[3] += x2;
    mom[2] += py;
    mom[1] += x1;
    mom[0] += x0;
  }
  for (int k = 0; k < 10; ++k) out[k] = (double)mom[k];
  if (binary) {
    const double s = 1. / 255;
    for (int k = 0; k < 10; ++k) out[k] *= s;
  }
}

template <typename T, typename Row, typename Sum>
void raster_moments(const T* src, int64_t rows, int64_t cols, int64_t stride, bool binary, double m[24]) {
  std::fill(m, m + 24, 0.0);
  const int64_t tiles_y = (rows + kTile - 1) / kTile, tiles_x = (cols + kTile - 1) / kTile;
  std::vector<double> tiles((size_t)(tiles_y * tiles_x * 10));
  parallel_for(&ThreadPool::global(), tiles_y * tiles_x, 4, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t ty = t / tiles_x, tx = t % tiles_x;
      const int64_t y = ty * kTile, x = tx * kTile;
      const int h = (int)std::min<int64_t>(kTile, rows - y), w = (int)std::min<int64_t>(kTile, cols - x);
      tile_moments<T, Row, Sum>(src + y * stride + x, stride, h, w, binary, tiles.data() + t * 10);
    }
  });
  // Tiles are combined in raster order, shifting each one's moments to the image origin.
  for (int64_t t = 0; t < tiles_y * tiles_x; ++t) {
    const double* mom = tiles.data() + t * 10;
    const double x = (double)((t % tiles_x) * kTile), y = (double)((t / tiles_x) * kTile);
    const double xm = x * mom[0], ym = y * mom[0];
    m[0] += mom[0];
    m[1] += mom[1] + xm;
    m[2] += mom[2] + ym;
    m[3] += mom[3] + x * (mom[1] * 2 + xm);
    m[4] += mom[4] + x * (mom[2] + ym) + y * mom[1];
    m[5] += mom[5] + y * (mom[2] * 2 + ym);
    m[6] += mom[6] + x * (3. * mom[3] + x * (3. * mom[1] + xm));
    m[7] += mom[7] + x * (2 * (mom[4] + y * mom[1]) + x * (mom[2] + ym)) + y * mom[3];
    m[8] += mom[8] + y * (2 * (mom[4] + x * mom[2]) + y * (mom[1] + xm)) + x * mom[5];
    m[9] += mom[9] + y * (3. * mom[5] + y * (3. * mom[2] + ym));
  }
  complete_moments(m);
}

// ---------------------------------------------------------------------------------------------

template <typename T>
double polygon_test(const T* data, int64_t n, float px, float py, bool measure) {
  if (n == 0) return measure ? -DBL_MAX : -1;
  const Pt<T>* cnt = as_points(data);
  int counter = 0;
  const int ix = (int)std::lrint(px), iy = (int)std::lrint(py);
  if (std::is_integral<T>::value && !measure && ix == px && iy == py) {
    Pt<T> v0, v = cnt[n - 1];
    for (int64_t i = 0; i < n; ++i) {
      v0 = v;
      v = cnt[i];
      if ((v0.y <= iy && v.y <= iy) || (v0.y > iy && v.y > iy) || (v0.x < ix && v.x < ix)) {
        if (iy == v.y && (ix == v.x || (iy == v0.y && ((v0.x <= ix && ix <= v.x) || (v.x <= ix && ix <= v0.x))))) {
          return 0;
        }
        continue;
      }
      int64_t dist = (int64_t)(iy - v0.y) * (v.x - v0.x) - (int64_t)(ix - v0.x) * (v.y - v0.y);
      if (dist == 0) return 0;
      if (v.y < v0.y) dist = -dist;
      counter += dist > 0;
    }
    return counter % 2 == 0 ? -1 : 1;
  }
  Pt<float> v0, v = {(float)cnt[n - 1].x, (float)cnt[n - 1].y};
  if (!measure) {
    for (int64_t i = 0; i < n; ++i) {
      v0 = v;
      v = {(float)cnt[i].x, (float)cnt[i].y};
      if ((v0.y <= py && v.y <= py) || (v0.y > py && v.y > py) || (v0.x < px && v.x < px)) {
        if (py == v.y && (px == v.x || (py == v0.y && ((v0.x <= px && px <= v.x) || (v.x <= px && px <= v0.x))))) {
          return 0;
        }
        continue;
      }
      double dist = (double)(py - v0.y) * (v.x - v0.x) - (double)(px - v0.x) * (v.y - v0.y);
      if (dist == 0) return 0;
      if (v.y < v0.y) dist = -dist;
      counter += dist > 0;
    }
    return counter % 2 == 0 ? -1 : 1;
  }
  double min_num = FLT_MAX, min_denom = 1;
  for (int64_t i = 0; i < n; ++i) {
    v0 = v;
    v = {(float)cnt[i].x, (float)cnt[i].y};
    const double dx = v.x - v0.x, dy = v.y - v0.y;
    const double dx1 = px - v0.x, dy1 = py - v0.y;
    const double dx2 = px - v.x, dy2 = py - v.y;
    double num, denom = 1;
    if (dx1 * dx + dy1 * dy <= 0) {
      num = dx1 * dx1 + dy1 * dy1;
    } else if (dx2 * dx + dy2 * dy >= 0) {
      num = dx2 * dx2 + dy2 * dy2;
    } else {
      num = (dy1 * dx - dx1 * dy);
      num *= num;
      denom = dx * dx + dy * dy;
    }
    if (num * min_denom < min_num * denom) {
      min_num = num;
      min_denom = denom;
      if (min_num == 0) break;
    }
    if ((v0.y <= py && v.y <= py) || (v0.y > py && v.y > py) || (v0.x < px && v.x < px)) continue;
    num = dy1 * dx - dx1 * dy;
    if (dy < 0) num = -num;
    counter += num > 0;
  }
  const double result = std::sqrt(min_num / min_denom);
  return counter % 2 == 0 ? -result : result;
}

template <typename T>
bool convex_polygon(const T* data, int64_t n) {
  if (n == 0) return false;
  const Pt<T>* p = as_points(data);
  Pt<T> prev = p[(n - 2 + n) % n], cur = p[n - 1];
  T dx0 = cur.x - prev.x, dy0 = cur.y - prev.y;
  int orientation = 0;
  for (int64_t i = 0; i < n; ++i) {
    prev = cur;
    cur = p[i];
    const T dx = cur.x - prev.x, dy = cur.y - prev.y;
    const T dxdy0 = dx * dy0, dydx0 = dy * dx0;
    orientation |= dydx0 > dxdy0 ? 1 : (dydx0 < dxdy0 ? 2 : 3);
    if (orientation == 3) return false;
    dx0 = dx;
    dy0 = dy;
  }
  return true;
}

}  // namespace

std::vector<int32_t> convex_hull(const int32_t* points, int64_t n, bool clockwise, bool indices) {
  return hull_of<int32_t, int64_t>(points, n, clockwise, indices);
}
std::vector<int32_t> convex_hull(const float* points, int64_t n, bool clockwise, bool indices) {
  return hull_of<float, double>(points, n, clockwise, indices);
}

void min_area_rect(const int32_t* points, int64_t n, float out[5]) { rect_of(points, n, out); }
void min_area_rect(const float* points, int64_t n, float out[5]) { rect_of(points, n, out); }

std::vector<int32_t> approx_poly_dp(const int32_t* points, int64_t n, double epsilon, bool closed) {
  return douglas_peucker(points, n, epsilon, closed);
}
std::vector<float> approx_poly_dp(const float* points, int64_t n, double epsilon, bool closed) {
  return douglas_peucker(points, n, epsilon, closed);
}

void contour_moments(const int32_t* points, int64_t n, double out[24]) { polygon_moments(points, n, out); }
void contour_moments(const float* points, int64_t n, double out[24]) { polygon_moments(points, n, out); }

void image_moments(const void* image, int dtype, int64_t rows, int64_t cols, int64_t stride, bool binary,
                   double out[24]) {
  if (binary || dtype == 0) {
    // Binary moments read any type's pixels as zero / nonzero.
    switch (dtype) {
      case 0: return raster_moments<uint8_t, int, int>(static_cast<const uint8_t*>(image), rows, cols, stride, binary, out);
      case 3: return raster_moments<int16_t, int, int>(static_cast<const int16_t*>(image), rows, cols, stride, true, out);
      case 5: return raster_moments<float, int, int>(static_cast<const float*>(image), rows, cols, stride, true, out);
      default: return raster_moments<double, int, int>(static_cast<const double*>(image), rows, cols, stride, true, out);
    }
  }
  switch (dtype) {
    case 3:
      return raster_moments<int16_t, int, int64_t>(static_cast<const int16_t*>(image), rows, cols, stride, false, out);
    case 5:
      return raster_moments<float, double, double>(static_cast<const float*>(image), rows, cols, stride, false, out);
    default:
      return raster_moments<double, double, double>(static_cast<const double*>(image), rows, cols, stride, false, out);
  }
}

double point_polygon_test(const int32_t* points, int64_t n, float x, float y, bool measure_dist) {
  return polygon_test(points, n, x, y, measure_dist);
}
double point_polygon_test(const float* points, int64_t n, float x, float y, bool measure_dist) {
  return polygon_test(points, n, x, y, measure_dist);
}

bool is_contour_convex(const int32_t* points, int64_t n) { return convex_polygon(points, n); }
bool is_contour_convex(const float* points, int64_t n) { return convex_polygon(points, n); }

void mask_bounding_rect(const uint8_t* image, int64_t rows, int64_t cols, int64_t stride, int32_t out[4]) {
  int64_t xmin = cols, xmax = -1, ymin = -1, ymax = -1;
  for (int64_t y = 0; y < rows; ++y) {
    const uint8_t* row = image + y * stride;
    int64_t first = 0;
    while (first < cols && !row[first]) ++first;
    if (first == cols) continue;
    int64_t last = cols - 1;
    while (!row[last]) --last;
    xmin = std::min(xmin, first);
    xmax = std::max(xmax, last);
    if (ymin < 0) ymin = y;
    ymax = y;
  }
  if (xmin >= cols) xmin = ymin = 0;
  out[0] = (int32_t)xmin;
  out[1] = (int32_t)ymin;
  out[2] = (int32_t)(xmax - xmin + 1);
  out[3] = (int32_t)(ymax - ymin + 1);
}

}  // namespace cv_shapes
}  // namespace host
}  // namespace mnnpy
