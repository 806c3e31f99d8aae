// Backward pass of the separable resize: the forward taps applied in transpose.
#pragma once
#include <cstdint>

#include "backend/cpu/resize.h"

namespace mnnpy {
class ThreadPool;
namespace cpu {

// g: [planes, rows.out, cols.out]; dx: [planes, rows.in, cols.in]. Each input position receives
// the weighted sum of the output gradients that read it, added in a fixed order.
void resize_grad(int64_t planes, const ResizeAxis& rows, const ResizeAxis& cols, const float* g, float* dx,
                 ThreadPool* pool);

}  // namespace cpu
}  // namespace mnnpy
