// A dense, C-contiguous tensor: dtype, shape and a pointer kept alive by a shared owner
// (a malloc'd block, a NumPy array, an mmap'd file, or an arena).
#pragma once
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "mnnpy/dtype.h"

namespace mnnpy {

using Shape = std::vector<int64_t>;

int64_t shape_numel(const Shape& s);
std::string shape_str(const Shape& s);

struct TensorType {
  DType dtype = DType::Float32;
  Shape shape;
  int64_t numel() const { return shape_numel(shape); }
  size_t nbytes() const { return (size_t)numel() * dtype_size(dtype); }
  bool operator==(const TensorType& o) const { return dtype == o.dtype && shape == o.shape; }
};

// A process-wide unique number for each tensor, so caches can tell values apart even when
// memory is reused.
uint64_t next_tensor_id();

struct Tensor {
  TensorType type;
  void* data = nullptr;
  std::shared_ptr<void> owner;  // keeps `data` alive
  const uint64_t id = next_tensor_id();

  int64_t numel() const { return type.numel(); }
  size_t nbytes() const { return type.nbytes(); }
  template <class T> T* ptr() const { return static_cast<T*>(data); }

  // 64-byte aligned, uninitialized.
  static std::shared_ptr<Tensor> allocate(const TensorType& t);
};

// Frees the large blocks kept for reuse by Tensor::allocate.
void release_cached_blocks();

// Errors that the bindings turn into the matching Python exceptions.
struct ValueError : std::runtime_error { using std::runtime_error::runtime_error; };
struct TypeError : std::runtime_error { using std::runtime_error::runtime_error; };
struct IndexError : std::runtime_error { using std::runtime_error::runtime_error; };
struct IOError : std::runtime_error { using std::runtime_error::runtime_error; };

}  // namespace mnnpy
