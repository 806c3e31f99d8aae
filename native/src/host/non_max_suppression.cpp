// ONNX NonMaxSuppression (see non_max_suppression.h): one (batch, class) pair per task.
#include "host/non_max_suppression.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "mnnpy/thread_pool.h"

namespace mnnpy {
namespace host {

namespace {

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

// Below this many candidates the kept boxes are simply all tried.
constexpr size_t kMinBoxesForBuckets = 256;

// The kept boxes filed by x extent in equal buckets at least as wide as the widest candidate,
// so that a candidate is tried only against kept boxes whose x extent meets its own: the rest
// cannot suppress it (no overlap), so the result is the same as trying them all. Batched NMS
// offsets each class's boxes apart (torchvision's coordinate trick), which this makes about
// linear instead of quadratic in the number of boxes.
class XBuckets {
 public:
  XBuckets(const BoxExtent* extents, const std::vector<int64_t>& order) : extents_(extents) {
    float lo = INFINITY, hi = -INFINITY, widest = 0.f;
    for (int64_t i : order) {
      const BoxExtent& e = extents[i];
      if (!std::isfinite(e.xmin) || !std::isfinite(e.xmax) || !std::isfinite(e.ymin) || !std::isfinite(e.ymax)) {
        return;  // not usable: infinities and NaNs compare as the plain loop decides
      }
      lo = std::min(lo, e.xmin);
      hi = std::max(hi, e.xmax);
      widest = std::max(widest, e.xmax - e.xmin);
    }
    const double span = (double)hi - (double)lo;
    const double width = std::max((double)widest, span / (double)kMaxBuckets);
    if (!(width > 0) || !std::isfinite(span)) return;
    lo_ = lo;
    inverse_width_ = 1.0 / width;
    buckets_.resize((size_t)std::min<double>(std::floor(span * inverse_width_) + 1, (double)kMaxBuckets));
  }

  bool usable() const { return !buckets_.empty(); }

  void insert(int64_t box, const BoxExtent& e) {
    const size_t first = index(e.xmin), last = index(e.xmax);
    for (size_t b = first; b <= last; ++b) buckets_[b].push_back(box);
  }

  bool any_suppresses(const BoxExtent& candidate, float iou_threshold) const {
    const size_t first = index(candidate.xmin), last = index(candidate.xmax);
    for (size_t b = first; b <= last; ++b) {
      const std::vector<int64_t>& kept = buckets_[b];
      for (auto it = kept.rbegin(); it != kept.rend(); ++it) {
        if (suppresses(candidate, extents_[*it], iou_threshold)) return true;
      }
    }
    return false;
  }

 private:
  static constexpr size_t kMaxBuckets = 4096;

  size_t index(float x) const {
    const double at = std::floor(((double)x - (double)lo_) * inverse_width_);
    return (size_t)std::min(std::max(at, 0.0), (double)(buckets_.size() - 1));
  }

  const BoxExtent* extents_;
  float lo_ = 0.f;
  double inverse_width_ = 0.0;
  std::vector<std::vector<int64_t>> buckets_;
};

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
  if (order.size() >= kMinBoxesForBuckets) {
    XBuckets buckets(extents, order);
    if (buckets.usable()) {
      for (int64_t candidate : order) {
        if ((int64_t)selected.size() >= options.max_output_boxes_per_class) break;
        if (!buckets.any_suppresses(extents[candidate], options.iou_threshold)) {
          selected.push_back(candidate);
          buckets.insert(candidate, extents[candidate]);
        }
      }
      return selected;
    }
  }
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

std::vector<int64_t> non_max_suppression(const TensorType& boxes_type, const void* boxes, const TensorType& scores_type,
                                         const void* scores, const NmsOptions& options) {
  if (boxes_type.dtype != DType::Float32 || scores_type.dtype != DType::Float32) {
    throw TypeError(std::string("NonMaxSuppression: boxes and scores must be float32, got ") +
                    dtype_name(boxes_type.dtype) + " and " + dtype_name(scores_type.dtype));
  }
  const Shape& b = boxes_type.shape;
  const Shape& s = scores_type.shape;
  if (b.size() != 3 || b[2] != 4) {
    throw ValueError("NonMaxSuppression: boxes must have shape [batch, boxes, 4], got " + shape_str(b));
  }
  if (s.size() != 3) {
    throw ValueError("NonMaxSuppression: scores must have shape [batch, classes, boxes], got " + shape_str(s));
  }
  if (s[0] != b[0] || s[2] != b[1]) {
    throw ValueError("NonMaxSuppression: scores " + shape_str(s) + " do not match boxes " + shape_str(b) +
                     " (expected [" + std::to_string(b[0]) + ", classes, " + std::to_string(b[1]) + "])");
  }
  if (!(options.iou_threshold >= 0.f && options.iou_threshold <= 1.f)) {
    throw ValueError("NonMaxSuppression: iou_threshold must be in [0, 1], got " +
                     std::to_string(options.iou_threshold));
  }
  return non_max_suppression(static_cast<const float*>(boxes), static_cast<const float*>(scores), b[0], s[1],
                                  b[1], options, &ThreadPool::global());
}

}  // namespace host
}  // namespace mnnpy
