// Key/value caches of language models' attention (mnnpy.llm): buffers that the CachedAttention op
// (ops/cached_attention.cpp) appends to and reads. A cache outlives the runs of a plan and is
// shared by every plan of one model (its prefill and its decode graphs), which name it by a
// handle; the model's owner creates and releases it. Its buffers are the host's, or a device
// backend's where that backend's CachedAttention kernel holds it (KvCacheStorage).
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace mnnpy {

constexpr int64_t kKvCacheBlock = 256;  // tokens a cache grows by

struct KvCache;

// A device backend's buffers of a cache, made by its CachedAttention kernel when the cache has
// none yet; the host vectors then stay empty. Commands recorded with the buffers may be run again
// later, so the buffers change only when the cache grows.
struct KvCacheStorage {
  virtual ~KvCacheStorage() = default;
  virtual const char* backend() const = 0;
  // Buffers for `tokens` tokens per head in place of the current ones (cache.capacity tokens),
  // the first `keep` tokens of every head copied over.
  virtual void grow(const KvCache& cache, int64_t tokens, int64_t keep) = 0;
};

struct KvCache {
  KvCache(int64_t layers, int64_t kv_heads, int64_t head_dim);
  // Room for `tokens` tokens in every layer, grown in whole blocks; the first `keep` tokens of
  // each head are kept.
  void reserve(int64_t tokens, int64_t keep);
  // ValueError unless layer `layer` of the cache holds `kv_heads` heads of `head_dim` values
  // (a CachedAttention node against its cache).
  void check_fits(int64_t layer, int64_t node_kv_heads, int64_t node_head_dim) const;
  // ValueError unless the cache's buffers are `backend`'s ("cpu": the host vectors).
  void check_held_by(const char* backend) const;
  float* keys(int64_t layer, int64_t head) { return key_data[(size_t)layer].data() + head * capacity * head_dim; }
  float* values(int64_t layer, int64_t head) { return value_data[(size_t)layer].data() + head * capacity * head_dim; }

  const int64_t layers, kv_heads, head_dim;
  int64_t capacity = 0;  // tokens each head's rows hold
  std::vector<std::vector<float>> key_data, value_data;  // per layer: [kv_heads][capacity][head_dim]
  std::unique_ptr<KvCacheStorage> device;  // a device backend's buffers in place of the vectors
  std::mutex mutex;  // one run appends at a time
};

int64_t kv_cache_create(int64_t layers, int64_t kv_heads, int64_t head_dim);
// The cache of a handle; ValueError if it was released or never made.
std::shared_ptr<KvCache> kv_cache_find(int64_t handle);
void kv_cache_release(int64_t handle);
// Room for `tokens` tokens, the first `keep` kept: a device backend's kernels, recorded once,
// read `past` only on the device, so the host makes room before each run.
void kv_cache_reserve(int64_t handle, int64_t tokens, int64_t keep);
// Bytes a cache's buffers take (its capacity), for the model's memory report.
int64_t kv_cache_bytes(int64_t handle);

}  // namespace mnnpy
