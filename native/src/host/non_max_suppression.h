// Host library: runs on host memory after the inputs were synchronized to the host.
// ONNX NonMaxSuppression over [batch, boxes, 4] boxes and [batch, classes, boxes] scores: not a
// graph op, since the number of boxes it selects depends on the values.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "mnnpy/tensor.h"

namespace mnnpy {
class ThreadPool;
namespace host {

struct NmsOptions {
  int64_t max_output_boxes_per_class = 0;  // 0 or less: nothing is selected (ONNX)
  float iou_threshold = 0.f;               // suppress when IoU > threshold
  std::optional<float> score_threshold;    // keep only scores > threshold when given
  bool center_point_box = false;           // boxes are [xc, yc, w, h] instead of corners [y1, x1, y2, x2]
};

// (batch, class, box) triples flattened, batch-major then class, and within a class in
// selection order (score descending, ties by lower box index). NaN scores are never selected.
std::vector<int64_t> non_max_suppression(const float* boxes, const float* scores, int64_t batches, int64_t classes,
                                         int64_t num_boxes, const NmsOptions& options, ThreadPool* pool);

// The same after ONNX's checks of shapes and dtypes (boxes [B, N, 4] and scores [B, C, N], both
// float32; ValueError/TypeError naming the problem), on the process-wide pool. Returns the
// [M, 3] selected_indices flattened.
std::vector<int64_t> non_max_suppression(const TensorType& boxes_type, const void* boxes, const TensorType& scores_type,
                                         const void* scores, const NmsOptions& options);

}  // namespace host
}  // namespace mnnpy
