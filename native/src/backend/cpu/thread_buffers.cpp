#include "backend/cpu/thread_buffers.h"

#include <cstdlib>
#include <new>

#include "mnnpy/sanitizer.h"

namespace mnnpy {
namespace cpu {

namespace {
struct ThreadBuffers {
  void* ptr[kThreadBufferSlots] = {};
  size_t size[kThreadBufferSlots] = {};
  ~ThreadBuffers() {
    for (void* p : ptr) std::free(p);
  }
};
}  // namespace

float* thread_buffer(int slot, size_t floats) {
  thread_local ThreadBuffers buffers;
  const size_t bytes = (floats * sizeof(float) + 63) & ~size_t(63);
  if (buffers.size[slot] < bytes) {
    std::free(buffers.ptr[slot]);
    buffers.ptr[slot] = std::aligned_alloc(64, bytes);
    if (!buffers.ptr[slot]) {
      buffers.size[slot] = 0;
      throw std::bad_alloc();
    }
    buffers.size[slot] = bytes;
  }
  limit_access(buffers.ptr[slot], floats * sizeof(float), buffers.size[slot]);
  return static_cast<float*>(buffers.ptr[slot]);
}

}  // namespace cpu
}  // namespace mnnpy
