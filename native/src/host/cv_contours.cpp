// Border following (see cv_contours.h). The image is copied into a frame of zeros one pixel wide
// and scanned in raster order; each border met is traced once and its pixels are marked, so that
// later scanning knows which borders it crosses (that gives the hierarchy). The marks, the scan
// restarts and the parent search follow OpenCV's scanner step for step, since its contour order,
// start points and hierarchy depend on them.
#include "host/cv_contours.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <type_traits>

namespace mnnpy {
namespace host {
namespace cv_contours {

namespace {

// Chain code directions: 0 is +x, counting counter-clockwise on screen (y grows downwards).
constexpr int kDx[8] = {1, 1, 0, -1, -1, -1, 0, 1};
constexpr int kDy[8] = {0, -1, -1, -1, 0, 1, 1, 1};

// Marks left on traced pixels of binary images: a border pixel whose right neighbour is
// background gets the contour's mark with the high bit; other unvisited border pixels get the mark.
constexpr int8_t kRightBit8 = (int8_t)0x80;
constexpr int kMarkLowBits = 0x7F;

// Label images keep the label in the low 30 bits and the two marks above it.
constexpr int32_t kLabelRight = (int32_t)0x80000000u;
constexpr int32_t kLabelNew = 0x40000000;
constexpr int32_t kLabelFlags = (int32_t)0xC0000000u;
constexpr int32_t kLabelValue = 0x3FFFFFFF;

struct BinaryPixels {
  using Pixel = int8_t;
  static bool same_region(const Pixel* p, const Pixel*) { return *p != 0; }
  static bool unvisited(const Pixel* p, const Pixel*) { return *p == 1; }
  static bool right_marked(const Pixel* p, const Pixel*) { return (*p & kRightBit8) != 0; }
  static void mark_right(Pixel* p, const Pixel*, Pixel mark) { *p = (Pixel)(mark | kRightBit8); }
  static void mark_visited(Pixel* p, const Pixel*, Pixel mark) { *p = mark; }
};

struct LabelPixels {
  using Pixel = int32_t;
  static bool same_region(const Pixel* p, const Pixel* start) { return (*p & kLabelValue) == (*start & kLabelValue); }
  static bool unvisited(const Pixel* p, const Pixel* start) { return *p == (*start & kLabelValue); }
  // OpenCV compares the pixel's right mark with the start value's bits from bit 7 upwards; kept
  // as it is, since the parent search depends on it.
  static bool right_marked(const Pixel* p, const Pixel* start) {
    return (*p & kLabelRight) == (*start & (int32_t)(int8_t)kRightBit8);
  }
  static void mark_right(Pixel* p, const Pixel* start, Pixel) {
    *p = (*start & kLabelValue) | kLabelNew | kLabelRight;
  }
  static void mark_visited(Pixel* p, const Pixel* start, Pixel) { *p = (*start & kLabelValue) | kLabelNew; }
};

struct Node {
  int parent = -1, first_child = -1, prev = -1, next = -1;
  int same_mark_next = -1;  // the previous contour traced with the same mark
  bool hole = false;
  int rect_x = 0, rect_y = 0, rect_w = 0, rect_h = 0;  // bounding box in framed coordinates
  int origin_x = 0, origin_y = 0;                      // start pixel in framed coordinates
  int64_t begin = 0, end = 0;                          // points, in pairs, in the trace buffer
};

// Approximation of a closed chain code by Teh and Chin's dominant points (TC89 L1 / k-cosine).
class TehChin {
 public:
  void approximate(const std::vector<int8_t>& chain, int x0, int y0, bool kcos, std::vector<int32_t>& out) {
    if (chain.empty()) {
      out.push_back(x0);
      out.push_back(y0);
      return;
    }
    items_.clear();
    items_.reserve(chain.size());
    static const int8_t kTurn[16] = {1, 2, 3, 4, 3, 2, 1, 0, 1, 2, 3, 4, 3, 2, 1, 0};
    int x = x0, y = y0;
    const size_t len = chain.size();
    for (size_t i = 0; i < len; ++i) {
      const int before = chain[i == 0 ? len - 1 : i - 1], code = chain[i];
      Item item;
      item.x = x;
      item.y = y;
      item.s = kTurn[code - before + 7];
      item.removed = item.s == 0;
      items_.push_back(item);
      x += kDx[code];
      y += kDy[code];
    }
    for (size_t i = 0; i < items_.size(); ++i) {
      if (items_[i].removed) continue;
      items_[i].k = support(i);
      if (kcos) items_[i].s = cosine(i);
    }
    for (size_t i = 0; i < items_.size(); ++i) {
      if (suppressed(i)) {
        items_[i].s = 0;
        items_[i].removed = true;
      }
    }
    for (size_t i = 0; i < items_.size(); ++i) {
      if (!items_[i].removed && items_[i].k == 1 && dominated(i)) {
        items_[i].s = 0;
        items_[i].removed = true;
      }
    }
    if (!kcos) clean_pairs();
    for (const Item& item : items_) {
      if (item.removed) continue;
      out.push_back(item.x);
      out.push_back(item.y);
    }
  }

 private:
  struct Item {
    int x = 0, y = 0;
    size_t k = 0;  // support region
    int s = 0;     // curvature
    bool removed = false;
  };

  static int32_t float_bits(float f) {
    int32_t bits;
    std::memcpy(&bits, &f, sizeof(bits));
    return bits;
  }
  size_t before(size_t i, size_t j) const { return i >= j ? i - j : items_.size() - j + i; }
  size_t after(size_t i, size_t j) const { return i + j < items_.size() ? i + j : i + j - items_.size(); }

  size_t support(size_t i) const {
    int last_num = 0, last_len = 0;
    size_t k = 1;
    for (;; ++k) {
      if (k > items_.size()) throw std::runtime_error("findContours: TC89 support region exceeds the contour");
      const Item &a = items_[before(i, k)], &b = items_[after(i, k)], &c = items_[i];
      const int dx = b.x - a.x, dy = b.y - a.y;
      const int len2 = dx * dx + dy * dy;
      const int num = (c.x - a.x) * dy - (c.y - a.y) * dx;
      const int32_t d = float_bits((float)((double)last_num * len2 - (double)num * last_len));
      if (k > 1 && (last_len >= len2 || (last_num > 0 && d <= 0) || (last_num < 0 && d >= 0))) break;
      last_num = num;
      last_len = len2;
    }
    return k - 1;
  }

  int cosine(size_t i) const {
    const size_t k = items_[i].k;
    int s = 0;
    for (size_t j = k; j > 0; --j) {
      const Item &a = items_[before(i, j)], &b = items_[after(i, j)], &c = items_[i];
      const int dx1 = a.x - c.x, dy1 = a.y - c.y, dx2 = b.x - c.x, dy2 = b.y - c.y;
      if ((dx1 | dy1) == 0 || (dx2 | dy2) == 0) break;
      double num = dx1 * dx2 + dy1 * dy2;
      num = (float)(num / std::sqrt(((double)dx1 * dx1 + (double)dy1 * dy1) * ((double)dx2 * dx2 + (double)dy2 * dy2)));
      const int32_t bits = float_bits((float)(num + 1.1));
      if (j < k && bits <= s) break;
      s = bits;
    }
    return s;
  }

  bool suppressed(size_t i) const {
    const size_t half = items_[i].k >> 1;
    const int s = items_[i].s;
    size_t j = 1;
    for (; j <= half; ++j) {
      if (items_[before(i, j)].s > s || items_[after(i, j)].s > s) break;
    }
    return j <= half;
  }

  bool dominated(size_t i) const {
    const int s = items_[i].s;
    return s <= items_[before(i, 1)].s || s <= items_[after(i, 1)].s;
  }

  size_t next_kept(size_t start) const {
    size_t i = start + 1;
    while (i < items_.size() && items_[i].removed) ++i;
    return i;
  }
  void remove_between(size_t start, size_t finish) {
    for (size_t i = start + 1; i < finish && i < items_.size(); ++i) items_[i].removed = true;
  }

  // A new start when the chain begins and ends inside a run of kept points; false when no
  // point was dropped at all.
  bool restart(size_t& start) {
    const size_t len = items_.size();
    size_t i1 = 1;
    for (; i1 < len && items_[i1].s != 0; ++i1) items_[i1 - 1].s = 0;
    if (i1 == len) return false;
    --i1;
    size_t i2 = len - 2;
    for (; i2 > 0 && items_[i2].s != 0; --i2) {
      remove_between(i2, len);
      items_[i2 + 1].s = 0;
    }
    ++i2;
    if (i1 == 0 && i2 == len - 1) {
      i1 = next_kept(0);
      Item first = items_[0];
      first.removed = false;
      items_.push_back(first);
    }
    start = i1;
    return true;
  }

  // Runs of adjacent kept points shrink: a pair keeps its stronger point, longer runs their ends.
  void clean_pairs() {
    size_t start = 0;
    const size_t len0 = items_.size();
    if (items_[0].s != 0 && items_[len0 - 1].s != 0 && !restart(start)) return;
    int run = 1;
    const size_t len = items_.size();
    size_t first = start, prev = start;
    for (size_t i = start; i < len; ++i) {
      if (items_[i].removed) continue;
      const size_t next = next_kept(i);
      if (next == len || next - i != 1) {
        if (run == 2) {
          const int s1 = items_[prev].s, s2 = items_[i].s;
          if (s1 > s2 || (s1 == s2 && items_[prev].k <= items_[i].k)) {
            items_[i].removed = true;
          } else {
            items_[prev].removed = true;
          }
        } else if (run > 2) {
          first = next_kept(first);
          remove_between(first, i);
        }
        first = i;
        run = 1;
      } else {
        ++run;
      }
      prev = i;
    }
  }

  std::vector<Item> items_;
};

template <typename Traits>
class Scanner {
  using Pixel = typename Traits::Pixel;
  static constexpr bool kLabels = std::is_same<Pixel, int32_t>::value;

 public:
  Scanner(std::vector<Pixel>& image, int height, int width, int mode, int method, int offset_x, int offset_y)
      : image_(image.data()), height_(height), width_(width), mode_(mode), method_(method),
        offset_x_(offset_x - 1), offset_y_(offset_y - 1) {
    for (int s = 0; s < 16; ++s) delta_[s] = kDx[s & 7] + (int64_t)kDy[s & 7] * width;
    std::fill(std::begin(same_mark_head_), std::end(same_mark_head_), -1);
    Node root;
    root.hole = true;
    root.rect_w = width;
    root.rect_h = height;
    nodes_.push_back(root);
  }

  ContourList run() {
    scan();
    return collect();
  }

 private:
  bool simple() const { return mode_ == kExternal || mode_ == kList; }
  Pixel* at(int x, int y) { return image_ + (int64_t)y * width_ + x; }
  static bool flagged(int value) { return kLabels ? (value & kLabelFlags) != 0 : (value & ~1) != 0; }

  // The first x from `x` on (short of the last column) whose pixel differs from `prev`; label
  // images compare labels, and `prev` follows the skipped pixels (their marks may differ).
  int skip_run(int x, int y, int& prev) {
    const int end = width_ - 1;
    const Pixel* row = at(0, y);
    if (kLabels) {
      for (; x < end && (row[x] == prev || (row[x] & kLabelValue) == (prev & kLabelValue)); ++x) prev = row[x];
      return x;
    }
    // Eight pixels at a time: long runs of background or interior are the common case.
    const uint64_t broadcast = 0x0101010101010101ull * (uint8_t)prev;
    while (x + 8 <= end) {
      uint64_t word;
      std::memcpy(&word, row + x, 8);
      const uint64_t diff = word ^ broadcast;
      if (diff) return x + (__builtin_ctzll(diff) >> 3);
      x += 8;
    }
    while (x < end && row[x] == (Pixel)prev) ++x;
    return x;
  }

  void scan() {
    int last_x = 0, last_y = 1;
    for (int y = 1; y < height_ - 1; ++y) {
      int x = 1, prev = 0;
      while (true) {
        x = skip_run(x, y, prev);
        if (x >= width_ - 1) break;
        const int p = *at(x, y);
        bool hole;
        if (start_of_border(prev, p, x, last_x, last_y, &hole)) {
          last_x = x - (hole ? 1 : 0);
          const int resume = kLabels && hole ? x : x + 1;
          prev = *at(resume - 1, y);
          x = resume;
          continue;
        }
        prev = p;
        if (flagged(prev)) last_x = x;
        ++x;
      }
      last_x = 0;
      last_y = y + 1;
    }
  }

  // Whether a border starts between pixels x - 1 and x of row y; traces it when it does.
  bool start_of_border(int prev, int p, int x, int& last_x, int last_y, bool* is_hole) {
    const int y = last_y;
    bool hole = false;
    if (kLabels) {
      if (!(((prev & kLabelFlags) != 0 || prev == 0) && (p & kLabelFlags) == 0)) {
        if ((prev & kLabelFlags) != 0 || (p & kLabelFlags) != 0) return false;
        hole = true;
      }
    } else {
      if (!(prev == 0 && p == 1)) {
        if (p != 0 || prev < 1) return false;
        if (prev & ~1) last_x = x - 1;
        hole = true;
      }
    }
    if (mode_ == kExternal && (hole || (int8_t)*at(last_x, last_y) > 0)) return false;

    int parent = 0;
    const bool top_level = simple() || (!hole && (mode_ == kConnectedComponents || mode_ == kFloodFill)) ||
                           last_x <= 0;
    if (!top_level) {
      const int mark = *at(last_x, last_y) & kMarkLowBits;
      parent = first_bounding_contour(last_x, last_y, y, mark);
      if (parent < 0) parent = 0;
      if (nodes_[parent].hole == hole) parent = nodes_[parent].parent != -1 ? nodes_[parent].parent : 0;
      if (nodes_[parent].hole == hole) {
        throw std::runtime_error("findContours: inconsistent contour hierarchy");
      }
    }
    *is_hole = hole;
    add_contour(parent, hole, x - (hole ? 1 : 0), y);
    return true;
  }

  // The innermost traced contour with mark `mark` whose border is the one last crossed at
  // (last_x, last_y).
  int first_bounding_contour(int last_x, int last_y, int y, int mark) {
    int found = -1;
    for (int cur = same_mark_head_[mark]; cur != -1; cur = nodes_[cur].same_mark_next) {
      const Node& node = nodes_[cur];
      if (last_x - node.rect_x < node.rect_w && last_y - node.rect_y < node.rect_h) {
        if (found != -1 && passes_through(nodes_[found], last_x, y)) break;
        found = cur;
      }
    }
    return found;
  }

  // Whether following `node`'s border again reaches (end_x, end_y) as the last crossing.
  bool passes_through(const Node& node, int end_x, int end_y) {
    const Pixel* stop = at(end_x, end_y);
    const Pixel* start = at(node.origin_x, node.origin_y);
    const int first_dir = node.hole ? 0 : 4;
    int s = first_dir;
    const Pixel* last;
    do {
      s = (s - 1) & 7;
      last = start + delta_[s];
    } while (!Traits::same_region(last, start) && s != first_dir);
    const Pixel* cur = start;
    if (s == first_dir) return cur == stop;
    while (true) {
      const Pixel* next = nullptr;
      while (s < 15) {
        ++s;
        next = cur + delta_[s];
        if (Traits::same_region(next, start)) break;
      }
      if (cur == stop) {
        if (!Traits::right_marked(cur, start)) return true;
        int t = s;
        while (true) {
          t = (t - 1) & 7;
          if (*(cur + delta_[t]) != 0) break;
          if (t == 0) return true;
        }
      }
      if (next == start && cur == last) break;
      cur = next;
      s = (s + 4) & 7;
    }
    return false;
  }

  void add_contour(int parent, bool hole, int sx, int sy) {
    const int index = (int)nodes_.size();
    nodes_.emplace_back();
    Node& node = nodes_.back();
    node.hole = hole;
    node.origin_x = sx;
    node.origin_y = sy;
    Pixel mark = 0;
    int mark_low = -1;
    if (simple()) {
      mark = 2;
    } else if (kLabels) {
      mark_low = *at(sx, sy) & kMarkLowBits;
    } else {
      mark = (Pixel)next_mark_;
      mark_low = next_mark_;
      next_mark_ = (next_mark_ + 1) & kMarkLowBits;
      if (next_mark_ == 0) next_mark_ = 3;
    }
    node.begin = (int64_t)points_.size();
    follow(node, mark);
    node.end = (int64_t)points_.size();
    if (mark_low >= 0) {
      node.same_mark_next = same_mark_head_[mark_low];
      same_mark_head_[mark_low] = index;
    }
    // Children are kept newest first.
    Node& up = nodes_[parent];
    if (up.first_child != -1) {
      nodes_[up.first_child].prev = index;
      node.next = up.first_child;
    }
    up.first_child = index;
    node.parent = parent;
  }

  // Traces the border starting at the node's origin, marking its pixels and storing its points
  // (or its chain code, approximated afterwards for the TC89 methods).
  void follow(Node& node, Pixel mark) {
    const bool chain = method_ == kApproxTC89L1 || method_ == kApproxTC89KCos;
    const bool every_point = method_ == kApproxNone;
    Pixel* start = at(node.origin_x, node.origin_y);
    int px = node.origin_x + offset_x_, py = node.origin_y + offset_y_;
    const int x0 = px, y0 = py;
    int min_x = px, min_y = py, max_x = px, max_y = py;
    const int first_dir = node.hole ? 0 : 4;
    int s = first_dir;
    Pixel* last;
    do {
      s = (s - 1) & 7;
      last = start + delta_[s];
    } while (!Traits::same_region(last, start) && s != first_dir);
    chain_.clear();
    if (s == first_dir) {
      Traits::mark_right(start, start, mark);
      if (!chain) {
        points_.push_back(px);
        points_.push_back(py);
      }
    } else {
      Pixel* cur = start;
      int prev_s = s ^ 4;
      while (true) {
        const int back = s;
        Pixel* next = nullptr;
        while (s < 15) {
          ++s;
          next = cur + delta_[s];
          if (Traits::same_region(next, start)) break;
        }
        s &= 7;
        // The search went past direction 0: the right neighbour is outside the region.
        if ((unsigned)(s - 1) < (unsigned)back) {
          Traits::mark_right(cur, start, mark);
        } else if (Traits::unvisited(cur, start)) {
          Traits::mark_visited(cur, start, mark);
        }
        if (chain) {
          chain_.push_back((int8_t)s);
        } else if (s != prev_s || every_point) {
          points_.push_back(px);
          points_.push_back(py);
        }
        if (s != prev_s) {
          if (px < min_x) min_x = px; else if (px > max_x) max_x = px;
          if (py < min_y) min_y = py; else if (py > max_y) max_y = py;
        }
        prev_s = s;
        px += kDx[s];
        py += kDy[s];
        if (next == start && cur == last) break;
        cur = next;
        s = (s + 4) & 7;
      }
    }
    node.rect_x = min_x - offset_x_;
    node.rect_y = min_y - offset_y_;
    node.rect_w = max_x - min_x + 1;
    node.rect_h = max_y - min_y + 1;
    if (chain) tc89_.approximate(chain_, x0, y0, method_ == kApproxTC89KCos, points_);
  }

  // Contours in depth-first order (children newest first), with the hierarchy renumbered.
  ContourList collect() {
    ContourList out;
    const int n = (int)nodes_.size();
    std::vector<int> order, index(n + 1, -1);
    order.reserve(n);
    std::vector<int> stack;
    stack.push_back(0);
    while (!stack.empty()) {
      const int cur = stack.back();
      stack.pop_back();
      if (cur != 0) {
        index[cur + 1] = (int)order.size();
        order.push_back(cur);
      }
      // Push the children last to first so that the first is visited next.
      int child = nodes_[cur].first_child, last = -1;
      while (child != -1) {
        last = child;
        child = nodes_[child].next;
      }
      for (; last != -1; last = nodes_[last].prev) stack.push_back(last);
    }
    out.starts.reserve(order.size() + 1);
    out.starts.push_back(0);
    out.points.reserve(points_.size());
    out.hierarchy.reserve(order.size() * 4);
    for (int id : order) {
      const Node& node = nodes_[id];
      out.points.insert(out.points.end(), points_.begin() + node.begin, points_.begin() + node.end);
      out.starts.push_back((int64_t)out.points.size() / 2);
      out.hierarchy.push_back(index[node.next + 1]);
      out.hierarchy.push_back(index[node.prev + 1]);
      out.hierarchy.push_back(index[node.first_child + 1]);
      out.hierarchy.push_back(index[node.parent + 1]);
    }
    return out;
  }

  Pixel* image_;
  int height_, width_, mode_, method_, offset_x_, offset_y_;
  int64_t delta_[16];
  int next_mark_ = 2;
  int same_mark_head_[128];
  std::vector<Node> nodes_;
  std::vector<int32_t> points_;
  std::vector<int8_t> chain_;
  TehChin tc89_;
};

void check_sizes(int64_t rows, int64_t cols) {
  if (rows < 1 || cols < 1 || rows > (1 << 29) || cols > (1 << 29) || (rows + 2) * (cols + 2) > (int64_t(1) << 40)) {
    throw std::invalid_argument("findContours: unsupported image size");
  }
}

}  // namespace

ContourList find_contours(const uint8_t* src, int64_t rows, int64_t cols, int64_t stride, int mode, int method,
                          int offset_x, int offset_y) {
  check_sizes(rows, cols);
  const int64_t width = cols + 2, height = rows + 2;
  std::vector<int8_t> framed((size_t)(width * height), 0);
  for (int64_t y = 0; y < rows; ++y) {
    const uint8_t* in = src + y * stride;
    int8_t* out = framed.data() + (y + 1) * width + 1;
    for (int64_t x = 0; x < cols; ++x) out[x] = (int8_t)(in[x] != 0);
  }
  Scanner<BinaryPixels> scanner(framed, (int)height, (int)width, mode, method, offset_x, offset_y);
  return scanner.run();
}

ContourList find_label_contours(const int32_t* src, int64_t rows, int64_t cols, int64_t stride, int method,
                                int offset_x, int offset_y) {
  check_sizes(rows, cols);
  const int64_t width = cols + 2, height = rows + 2;
  std::vector<int32_t> framed((size_t)(width * height), 0);
  for (int64_t y = 0; y < rows; ++y) {
    std::memcpy(framed.data() + (y + 1) * width + 1, src + y * stride, (size_t)cols * sizeof(int32_t));
  }
  Scanner<LabelPixels> scanner(framed, (int)height, (int)width, kFloodFill, method, offset_x, offset_y);
  return scanner.run();
}

}  // namespace cv_contours
}  // namespace host
}  // namespace mnnpy
