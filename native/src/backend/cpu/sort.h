// CPU kernels for selection ops: TopK along the middle axis of an [outer, n, inner] block,
// and ONNX NonMaxSuppression over [batch, boxes, 4] boxes and [batch, classes, boxes] scores.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "mnnpy/tensor.h"

namespace mnnpy {
class ThreadPool;
namespace cpu {

// For each (outer, inner) row of x (dtype int32, int64, float32 or float64), the k first
// elements in the order "largest first" (or smallest first), equal values by lower index
// first; NaN counts as larger than every number (as torch.topk). values has x's dtype and
// indices int64, both laid out [outer, k, inner]. With sorted false the k elements come in
// an unspecified order (the selected set is the same).
void topk(DType dt, const void* x, int64_t outer, int64_t n, int64_t inner, int64_t k, bool largest, bool sorted,
          void* values, int64_t* indices, ThreadPool* pool);

struct NmsOptions {
  int64_t max_output_boxes_per_class = 0;  // 0 or less: nothing is selected (ONNX)
  float iou_threshold = 0.f;               // suppress when IoU > threshold
  std::optional<float> score_threshold;    // keep only scores > threshold when given
  bool center_point_box = false;           // boxes are [xc, yc, w, h] instead of corners [y1, x1, y2, x2]
};

// ONNX NonMaxSuppression: (batch, class, box) triples flattened, batch-major then class, and
// within a class in selection order (score descending, ties by lower box index). NaN scores
// are never selected.
std::vector<int64_t> non_max_suppression(const float* boxes, const float* scores, int64_t batches, int64_t classes,
                                         int64_t num_boxes, const NmsOptions& options, ThreadPool* pool);

}  // namespace cpu

// The same on host data, after ONNX's checks of shapes and dtypes (boxes [B, N, 4] and scores
// [B, C, N], both float32; ValueError/TypeError naming the problem). Returns the [M, 3]
// selected_indices flattened. Defined in backend/cpu/sort_kernels.cpp; runs on the process-wide pool.
std::vector<int64_t> non_max_suppression(const TensorType& boxes_type, const void* boxes, const TensorType& scores_type,
                                         const void* scores, const cpu::NmsOptions& options);

}  // namespace mnnpy
