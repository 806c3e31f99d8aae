// CPU resize (nearest, linear, cubic) of float32 planes, with ONNX Resize's coordinate rules.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ops/resize_taps.h"

namespace mnnpy {
class ThreadPool;
namespace cpu {

using ::mnnpy::ResizeMode;
using ::mnnpy::CoordinateMode;
using ::mnnpy::NearestMode;
using ::mnnpy::ResizeOptions;

using ::mnnpy::ResizeAxis;
using ::mnnpy::make_resize_axis;

// Separable resize plan: tables are built once per shape; run() is called every execution.
class Resize2D {
 public:
  Resize2D(int64_t planes, ResizeAxis rows, ResizeAxis cols);
  void run(const float* x, float* y, ThreadPool* pool) const;

 private:
  void run_nearest(const float* x, float* y, ThreadPool* pool) const;

  int64_t planes_;
  ResizeAxis rows_, cols_;
  // Output rows are processed in blocks; each block first resizes horizontally the distinct
  // input rows its outputs read (block_inputs_[block_begin_[b] .. block_begin_[b + 1])), then
  // blends them vertically: output row o reads slot row_slot_[t * out + o] of its block.
  int64_t block_rows_ = 1;
  std::vector<int32_t> block_begin_, block_inputs_, row_slot_;
  int64_t max_block_inputs_ = 0;
};

}  // namespace cpu
}  // namespace mnnpy
