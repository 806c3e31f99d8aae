// Limits on the size of tensors and computations. Every node output passes check_tensor_size
// when the node is built (express/graph.cpp), so the element counts and byte sizes computed from
// graph shapes later never overflow, and a size that cannot fit in memory is refused before
// anything is allocated; the executor checks a plan's whole memory the same way.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

#include "mnnpy/tensor.h"

namespace mnnpy {

// Raised as Python's MemoryError.
struct MemoryError : std::runtime_error { using std::runtime_error::runtime_error; };

// The most bytes this process can ever hold: physical memory plus swap, or less where its
// address-space limit (RLIMIT_AS), its cgroup's memory.max or the environment variable
// MNNPY_MEMORY_LIMIT (bytes) says so. Read once, at the first check.
uint64_t memory_limit_bytes();

// NumPy's limit on an array's dimensions (NPY_MAXDIMS): results must convert to NumPy.
constexpr size_t kMaxTensorRank = 64;

// The bytes of a tensor of type `t`. Throws ValueError when it has more than kMaxTensorRank
// dimensions, a dimension is negative or the byte count overflows int64 (zero dimensions counted
// as one, as NumPy does: "array is too big"), and MemoryError when the bytes exceed
// memory_limit_bytes() (NumPy's "Unable to allocate").
size_t check_tensor_size(const TensorType& t);

// NumPy's words for a failed allocation: "Unable to allocate 8.00 TiB for an array with shape
// (1099511627776,) and data type float64".
std::string allocation_failure_message(uint64_t bytes, const TensorType& t);
// A byte count as NumPy prints it in that message: "8.00 TiB", "512. PiB", "100 bytes".
std::string byte_size_str(uint64_t bytes);

}  // namespace mnnpy
