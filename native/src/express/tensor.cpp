#include "mnnpy/tensor.h"

#include <sys/resource.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>

#include "mnnpy/aligned_memory.h"
#include "mnnpy/limits.h"
#include "mnnpy/sanitizer.h"

namespace mnnpy {

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string shape_str(const Shape& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) r += ", ";
    r += std::to_string(s[i]);
  }
  if (s.size() == 1) r += ",";
  return r + ")";
}

// ---- size limits

namespace {

// A cgroup's memory limit in bytes (v2 memory.max, or v1 memory.limit_in_bytes), 0 when none.
uint64_t cgroup_memory_limit() {
  for (const char* path : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream f(path);
    unsigned long long v = 0;
    if (f >> v && v > 0) return v;  // "max" (no limit) fails to parse
  }
  return 0;
}

uint64_t read_memory_limit() {
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
  uint64_t limit = pages > 0 && page_size > 0 ? (uint64_t)pages * (uint64_t)page_size : UINT64_MAX;
  struct sysinfo info;
  if (limit != UINT64_MAX && sysinfo(&info) == 0) limit += (uint64_t)info.totalswap * info.mem_unit;
  const uint64_t cgroup = cgroup_memory_limit();
  if (cgroup) limit = std::min(limit, cgroup);
  struct rlimit address_space;
  if (getrlimit(RLIMIT_AS, &address_space) == 0 && address_space.rlim_cur != RLIM_INFINITY) {
    limit = std::min<uint64_t>(limit, address_space.rlim_cur);
  }
  // A lower cap of the user's (a server sharing its memory, or a fuzzer that must not swap).
  if (const char* user = std::getenv("MNNPY_MEMORY_LIMIT")) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(user, &end, 10);
    if (end != user && *end == '\0' && v > 0) limit = std::min<uint64_t>(limit, v);
  }
  return limit;
}

}  // namespace

uint64_t memory_limit_bytes() {
  static const uint64_t limit = read_memory_limit();
  return limit;
}

std::string byte_size_str(uint64_t bytes) {
  // numpy/_core/_exceptions.py's _size_to_string, so that messages read the same.
  static const char* const kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  const int bit_length = bytes ? 64 - __builtin_clzll(bytes) : 0;
  int unit = std::max(bit_length - 1, 1) / 10;
  double n = (double)bytes / (double)(uint64_t(1) << (10 * unit));
  if (std::llround(n) == 1024) {
    ++unit;
    n /= 1024;
  }
  char text[64];
  if (unit == 0) {
    std::snprintf(text, sizeof text, "%.0f %s", n, kUnits[unit]);
  } else if (std::llround(n) < 1000) {
    std::snprintf(text, sizeof text, "%#.3g %s", n, kUnits[unit]);
  } else {
    std::snprintf(text, sizeof text, "%#.0f %s", n, kUnits[unit]);
  }
  return text;
}

std::string allocation_failure_message(uint64_t bytes, const TensorType& t) {
  return "Unable to allocate " + byte_size_str(bytes) + " for an array with shape " + shape_str(t.shape) +
         " and data type " + dtype_name(t.dtype);
}

size_t check_tensor_size(const TensorType& t) {
  if (t.shape.size() > kMaxTensorRank) {
    throw ValueError("maximum supported dimension for an ndarray is currently " + std::to_string(kMaxTensorRank) +
                     ", found " + std::to_string(t.shape.size()));
  }
  uint64_t bytes = dtype_size(t.dtype), nonzero_bytes = bytes;
  bool overflow = false;
  for (int64_t d : t.shape) {
    if (d < 0) throw ValueError("negative dimensions are not allowed: shape " + shape_str(t.shape));
    overflow = overflow || __builtin_mul_overflow(nonzero_bytes, (uint64_t)std::max<int64_t>(d, 1), &nonzero_bytes);
    bytes *= (uint64_t)d;  // no larger than nonzero_bytes
  }
  if (overflow || nonzero_bytes > (uint64_t)INT64_MAX) {
    throw ValueError("array is too big: shape " + shape_str(t.shape) + " of " + dtype_name(t.dtype) +
                     " needs more than 2**63 bytes (`arr.size * arr.dtype.itemsize` is larger than the maximum possible size)");
  }
  if (bytes > memory_limit_bytes()) throw MemoryError(allocation_failure_message(bytes, t));
  return (size_t)bytes;
}

namespace {

// Large blocks are kept for reuse after their tensor dies: a fresh large block costs page
// faults (the kernel zeroes every page) that cost as much as the arithmetic filling it.
constexpr size_t kCachedBlockMin = size_t(1) << 20;
constexpr size_t kCacheCapacity = size_t(256) << 20;

struct BlockCache {
  std::mutex mutex;
  std::multimap<size_t, void*> free_blocks;
  size_t cached_bytes = 0;
};

BlockCache& block_cache() {
  static BlockCache* cache = new BlockCache();  // never destroyed: tensors may outlive static teardown
  return *cache;
}

size_t round_block(size_t bytes) {
  const size_t granule = bytes >= kCachedBlockMin ? size_t(64) << 10 : 64;
  return (bytes + granule - 1) / granule * granule;
}

void* take_block(size_t bytes) {
  if (bytes >= kCachedBlockMin) {
    BlockCache& c = block_cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    auto it = c.free_blocks.find(bytes);
    if (it != c.free_blocks.end()) {
      void* p = it->second;
      c.cached_bytes -= bytes;
      c.free_blocks.erase(it);
      return p;
    }
  }
  return allocate_aligned(bytes);
}

void give_back_block(void* p, size_t bytes) {
  if (bytes >= kCachedBlockMin) {
    BlockCache& c = block_cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    // Make room by dropping the oldest-sized (largest) blocks first.
    while (c.cached_bytes + bytes > kCacheCapacity && !c.free_blocks.empty()) {
      auto last = std::prev(c.free_blocks.end());
      c.cached_bytes -= last->first;
      std::free(last->second);
      c.free_blocks.erase(last);
    }
    if (bytes <= kCacheCapacity) {
      poison_bytes(p, bytes);  // a kept block is dead until Tensor::allocate hands it out again
      c.free_blocks.emplace(bytes, p);
      c.cached_bytes += bytes;
      return;
    }
  }
  std::free(p);
}

}  // namespace

uint64_t next_tensor_id() {
  static std::atomic<uint64_t> counter{0};
  return ++counter;
}

void release_cached_blocks() {
  BlockCache& c = block_cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  for (auto& kv : c.free_blocks) std::free(kv.second);
  c.free_blocks.clear();
  c.cached_bytes = 0;
}

std::shared_ptr<Tensor> Tensor::allocate(const TensorType& t) {
  const size_t nbytes = check_tensor_size(t);
  auto tensor = std::make_shared<Tensor>();
  tensor->type = t;
  const size_t bytes = round_block(nbytes ? nbytes : 64);
  void* p;
  try {
    p = take_block(bytes);
  } catch (const std::bad_alloc&) {
    throw MemoryError(allocation_failure_message(nbytes, t));
  }
  limit_access(p, nbytes, aligned_block_size(bytes));
  tensor->data = p;
  tensor->owner = std::shared_ptr<void>(p, [bytes](void* q) { give_back_block(q, bytes); });
  return tensor;
}

}  // namespace mnnpy
