// The handles of the key/value caches (mnnpy/kv_cache.h).
#include "mnnpy/kv_cache.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <string>

#include "mnnpy/tensor.h"  // ValueError

namespace mnnpy {

namespace {
struct Registry {
  std::mutex mutex;
  std::map<int64_t, std::shared_ptr<KvCache>> caches;
  int64_t next = 1;
};
Registry& registry() {
  static Registry r;
  return r;
}
}  // namespace

KvCache::KvCache(int64_t layer_count, int64_t heads, int64_t depth)
    : layers(layer_count), kv_heads(heads), head_dim(depth), key_data((size_t)layer_count),
      value_data((size_t)layer_count) {}

void KvCache::reserve(int64_t tokens, int64_t keep) {
  if (tokens <= capacity) return;
  const int64_t grown = (tokens + kKvCacheBlock - 1) / kKvCacheBlock * kKvCacheBlock;
  keep = std::min(keep, capacity);
  if (device) {
    device->grow(*this, grown, keep);
    capacity = grown;
    return;
  }
  for (int64_t l = 0; l < layers; ++l) {
    for (auto* data : {&key_data[(size_t)l], &value_data[(size_t)l]}) {
      std::vector<float> bigger((size_t)(kv_heads * grown * head_dim));
      for (int64_t h = 0; h < kv_heads; ++h) {
        std::memcpy(bigger.data() + h * grown * head_dim, data->data() + h * capacity * head_dim,
                    sizeof(float) * (size_t)(keep * head_dim));
      }
      data->swap(bigger);
    }
  }
  capacity = grown;
}

void KvCache::check_fits(int64_t layer, int64_t node_kv_heads, int64_t node_head_dim) const {
  if (layer >= layers || node_kv_heads != kv_heads || node_head_dim != head_dim) {
    throw ValueError("CachedAttention: layer " + std::to_string(layer) + " with " + std::to_string(node_kv_heads) +
                     " key/value heads of " + std::to_string(node_head_dim) + " does not fit its cache (" +
                     std::to_string(layers) + " layers, " + std::to_string(kv_heads) + " heads of " +
                     std::to_string(head_dim) + ")");
  }
}

void KvCache::check_held_by(const char* backend) const {
  const std::string holder = device ? device->backend() : "cpu";
  if (holder != backend) {
    throw ValueError("CachedAttention: the cache is held by the " + holder +
                     " backend; every plan of a model runs its attention on one backend");
  }
}

int64_t kv_cache_create(int64_t layers, int64_t kv_heads, int64_t head_dim) {
  if (layers <= 0 || kv_heads <= 0 || head_dim <= 0) {
    throw ValueError("kv cache: layers, heads and head_dim must be positive, got " + std::to_string(layers) + ", " +
                     std::to_string(kv_heads) + ", " + std::to_string(head_dim));
  }
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const int64_t handle = r.next++;
  r.caches[handle] = std::make_shared<KvCache>(layers, kv_heads, head_dim);
  return handle;
}

std::shared_ptr<KvCache> kv_cache_find(int64_t handle) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.caches.find(handle);
  if (it == r.caches.end()) throw ValueError("kv cache " + std::to_string(handle) + " does not exist (released?)");
  return it->second;
}

void kv_cache_release(int64_t handle) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.caches.erase(handle);
}

void kv_cache_reserve(int64_t handle, int64_t tokens, int64_t keep) {
  if (tokens < 0 || keep < 0) {
    throw ValueError("kv cache: tokens and keep must be >= 0, got " + std::to_string(tokens) + " and " +
                     std::to_string(keep));
  }
  const std::shared_ptr<KvCache> cache = kv_cache_find(handle);
  std::lock_guard<std::mutex> lock(cache->mutex);
  cache->reserve(tokens, keep);
}

int64_t kv_cache_bytes(int64_t handle) {
  const std::shared_ptr<KvCache> cache = kv_cache_find(handle);
  std::lock_guard<std::mutex> lock(cache->mutex);
  return 2 * cache->layers * cache->kv_heads * cache->capacity * cache->head_dim * (int64_t)sizeof(float);
}

}  // namespace mnnpy
