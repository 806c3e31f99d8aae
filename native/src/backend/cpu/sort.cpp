// TopK per row (a scan for k = 1, a k-element heap for small k, else nth_element and a sort
// of the k winners), rows spread over the thread pool; NonMaxSuppression as ONNX specifies
// it, one (batch, class) pair per task.
#include "backend/cpu/sort.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <type_traits>

#include "mnnpy/thread_pool.h"

namespace mnnpy {
namespace cpu {

namespace {

template <class T>
struct Ranked {
  T value;
  int64_t index;
};

// A strict total order on values where NaN is above every number (as torch.topk ranks it),
// so the sorting algorithms always see a valid comparator.
template <class T>
inline bool value_above(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a)) return !std::isnan(b);
    if (std::isnan(b)) return false;
  }
  return a > b;
}

// "a comes before b" in the output: the better value first, equal values by lower index
// (ONNX's tie rule). Indices are unique, so this is a strict total order.
template <class T, bool kLargest>
inline bool ranks_before(const Ranked<T>& a, const Ranked<T>& b) {
  const bool better = kLargest ? value_above(a.value, b.value) : value_above(b.value, a.value);
  if (better) return true;
  const bool worse = kLargest ? value_above(b.value, a.value) : value_above(a.value, b.value);
  return !worse && a.index < b.index;
}

template <class T, bool kLargest>
void topk_rows(const T* x, int64_t n, int64_t inner, int64_t k, bool sorted, T* values, int64_t* indices,
               int64_t row_begin, int64_t row_end) {
  auto before = [](const Ranked<T>& a, const Ranked<T>& b) { return ranks_before<T, kLargest>(a, b); };
  // One buffer per chunk of rows: rows along a strided axis are gathered into it so the
  // selection works on contiguous memory.
  // Small k: one scan keeping the k best in a heap whose top is the worst of them. On most
  // data few elements beat that top, so this is about one comparison per element (versus
  // copying the row and running nth_element over it).
  const bool use_heap = k > 1 && k * 16 <= n;
  std::vector<Ranked<T>> row(k == 1 ? 0 : use_heap ? (size_t)k : (size_t)n);
  for (int64_t r = row_begin; r < row_end; ++r) {
    const int64_t outer_index = r / inner, inner_index = r % inner;
    const T* src = x + outer_index * n * inner + inner_index;
    T* value_dst = values + outer_index * k * inner + inner_index;
    int64_t* index_dst = indices + outer_index * k * inner + inner_index;
    if (k == 1) {  // argmax/argmin: one pass, no buffer
      Ranked<T> best{src[0], 0};
      for (int64_t j = 1; j < n; ++j) {
        const Ranked<T> candidate{src[j * inner], j};
        if (before(candidate, best)) best = candidate;
      }
      value_dst[0] = best.value;
      index_dst[0] = best.index;
      continue;
    }
    if (use_heap) {
      for (int64_t j = 0; j < k; ++j) row[j] = Ranked<T>{src[j * inner], j};
      std::make_heap(row.begin(), row.end(), before);
      for (int64_t j = k; j < n; ++j) {
        const Ranked<T> candidate{src[j * inner], j};
        if (!before(candidate, row.front())) continue;
        std::pop_heap(row.begin(), row.end(), before);
        row.back() = candidate;
        std::push_heap(row.begin(), row.end(), before);
      }
      std::sort_heap(row.begin(), row.end(), before);  // best first, whatever `sorted` says
    } else {
      for (int64_t j = 0; j < n; ++j) row[j] = Ranked<T>{src[j * inner], j};
      if (k < n) std::nth_element(row.begin(), row.begin() + k, row.end(), before);
      if (sorted) std::sort(row.begin(), row.begin() + k, before);
    }
    for (int64_t j = 0; j < k; ++j) {
      value_dst[j * inner] = row[j].value;
      index_dst[j * inner] = row[j].index;
    }
  }
}

template <class T>
void topk_typed(const void* x, int64_t outer, int64_t n, int64_t inner, int64_t k, bool largest, bool sorted,
                void* values, int64_t* indices, ThreadPool* pool) {
  const int64_t rows = outer * inner;
  // Enough rows per chunk that each one sorts some tens of thousands of elements.
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(n, 1));
  parallel_for(pool, rows, grain, [&](int64_t begin, int64_t end) {
    if (largest) {
      topk_rows<T, true>((const T*)x, n, inner, k, sorted, (T*)values, indices, begin, end);
    } else {
      topk_rows<T, false>((const T*)x, n, inner, k, sorted, (T*)values, indices, begin, end);
    }
  });
}

// A box as its extent on each axis and its area, computed once per box in float32 exactly as
// ONNX's reference does per pair, so that IoU values (and threshold decisions) match it.
struct BoxExtent {
  float ymin, xmin, ymax, xmax, area;
};

BoxExtent box_extent(const float* b, bool center_point_box) {
  BoxExtent e;
  if (center_point_box) {
    // [x_center, y_center, width, height]; a negative size is kept as given (ONNX does not flip it).
    const float half_w = b[2] / 2, half_h = b[3] / 2;
    e.xmin = b[0] - half_w;
    e.xmax = b[0] + half_w;
    e.ymin = b[1] - half_h;
    e.ymax = b[1] + half_h;
  } else {
    // [y1, x1, y2, x2] with any diagonal pair of corners.
    e.ymin = std::min(b[0], b[2]);
    e.ymax = std::max(b[0], b[2]);
    e.xmin = std::min(b[1], b[3]);
    e.xmax = std::max(b[1], b[3]);
  }
  e.area = (e.xmax - e.xmin) * (e.ymax - e.ymin);
  return e;
}

// True when the IoU of the two boxes is strictly above the threshold; boxes that do not
// overlap, or have no area, never suppress each other.
inline bool suppresses(const BoxExtent& candidate, const BoxExtent& kept, float iou_threshold) {
  const float ix_min = std::max(candidate.xmin, kept.xmin), ix_max = std::min(candidate.xmax, kept.xmax);
  if (ix_max <= ix_min) return false;
  const float iy_min = std::max(candidate.ymin, kept.ymin), iy_max = std::min(candidate.ymax, kept.ymax);
  if (iy_max <= iy_min) return false;
  const float intersection = (ix_max - ix_min) * (iy_max - iy_min);
  if (intersection <= 0) return false;
  const float union_area = candidate.area + kept.area - intersection;
  if (candidate.area <= 0 || kept.area <= 0 || union_area <= 0) return false;
  return intersection / union_area > iou_threshold;
}

// Greedy selection for one class of one batch item: the box indices kept, in selection order.
std::vector<int64_t> select_boxes(const BoxExtent* extents, const float* scores, int64_t num_boxes,
                                  const NmsOptions& options) {
  std::vector<int64_t> selected;
  if (options.max_output_boxes_per_class <= 0) return selected;
  std::vector<int64_t> order;
  order.reserve((size_t)num_boxes);
  for (int64_t j = 0; j < num_boxes; ++j) {
    const float s = scores[j];
    if (std::isnan(s)) continue;
    if (options.score_threshold && !(s > *options.score_threshold)) continue;
    order.push_back(j);
  }
  // Stable on ascending indices: equal scores keep the lower box index first.
  std::stable_sort(order.begin(), order.end(), [scores](int64_t a, int64_t b) { return scores[a] > scores[b]; });
  for (int64_t candidate : order) {
    if ((int64_t)selected.size() >= options.max_output_boxes_per_class) break;
    const BoxExtent& box = extents[candidate];
    bool keep = true;
    // Overlapping boxes tend to have close scores, so the latest kept boxes are tried first.
    for (auto it = selected.rbegin(); it != selected.rend(); ++it) {
      if (suppresses(box, extents[*it], options.iou_threshold)) {
        keep = false;
        break;
      }
    }
    if (keep) selected.push_back(candidate);
  }
  return selected;
}

}  // namespace

void topk(DType dt, const void* x, int64_t outer, int64_t n, int64_t inner, int64_t k, bool largest, bool sorted,
          void* values, int64_t* indices, ThreadPool* pool) {
  if (outer * inner * k == 0) return;
  switch (dt) {
    case DType::Int32: return topk_typed<int32_t>(x, outer, n, inner, k, largest, sorted, values, indices, pool);
    case DType::Int64: return topk_typed<int64_t>(x, outer, n, inner, k, largest, sorted, values, indices, pool);
    case DType::Float32: return topk_typed<float>(x, outer, n, inner, k, largest, sorted, values, indices, pool);
    case DType::Float64: return topk_typed<double>(x, outer, n, inner, k, largest, sorted, values, indices, pool);
    default: throw std::logic_error(std::string("topk: unsupported dtype ") + dtype_name(dt));
  }
}

std::vector<int64_t> non_max_suppression(const float* boxes, const float* scores, int64_t batches, int64_t classes,
                                         int64_t num_boxes, const NmsOptions& options, ThreadPool* pool) {
  std::vector<BoxExtent> extents((size_t)(batches * num_boxes));
  parallel_for(pool, batches * num_boxes, 4096, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) extents[i] = box_extent(boxes + i * 4, options.center_point_box);
  });
  std::vector<std::vector<int64_t>> per_class((size_t)(batches * classes));
  parallel_for(pool, batches * classes, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t batch = t / classes;
      per_class[t] = select_boxes(extents.data() + batch * num_boxes, scores + t * num_boxes, num_boxes, options);
    }
  });
  size_t total = 0;
  for (auto& s : per_class) total += s.size();
  std::vector<int64_t> triples;
  triples.reserve(total * 3);
  for (int64_t t = 0; t < batches * classes; ++t) {
    for (int64_t box : per_class[t]) {
      triples.push_back(t / classes);
      triples.push_back(t % classes);
      triples.push_back(box);
    }
  }
  return triples;
}

}  // namespace cpu
}  // namespace mnnpy
