// Small helpers shared by the CPU kernels: integer rounding, and per-thread scratch buffers.
#pragma once
#include <cstddef>
#include <cstdint>

namespace mnnpy {
namespace cpu {

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

// Grow-only, 64-byte aligned buffers owned by the calling thread, so that kernels do not
// allocate on every run. A kernel names its buffers by slot (0 .. kThreadBufferSlots - 1);
// contents last only while that kernel runs on this thread.
constexpr int kThreadBufferSlots = 4;
float* thread_buffer(int slot, size_t floats);

}  // namespace cpu
}  // namespace mnnpy
