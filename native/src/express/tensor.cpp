#include <atomic>
#include "mnnpy/tensor.h"
#include "mnnpy/aligned_memory.h"

#include <cstdlib>
#include <map>
#include <mutex>

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
  auto tensor = std::make_shared<Tensor>();
  tensor->type = t;
  const size_t bytes = round_block(t.nbytes() ? t.nbytes() : 64);
  void* p = take_block(bytes);
  tensor->data = p;
  tensor->owner = std::shared_ptr<void>(p, [bytes](void* q) { give_back_block(q, bytes); });
  return tensor;
}

}  // namespace mnnpy
