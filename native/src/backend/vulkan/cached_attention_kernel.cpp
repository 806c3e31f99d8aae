// CachedAttention on Vulkan (ops/cached_attention.cpp): the key/value cache lives in device
// buffers (one per layer: every head's keys, then every head's values, [kv_heads][capacity]
// [head_dim] each), made when the first kernel of a cache is planned. A run records two
// dispatches: shaders/kv_cache_write.comp writes the new tokens' keys and values at past ..
// past + S - 1, then shaders/cached_attention.comp has one workgroup per (head, query) row, or
// for few rows (a decoding step's one per head) several, each over a share of the keys, whose
// partials shaders/cached_attention_combine.comp puts together: a step's keys are spread over the
// device instead of one workgroup per head walking them all. The shaders
// read `past` on the device, so the recorded commands run again for every step; the host makes
// room before a run (kv_cache_reserve), as a recording cannot grow the buffers it binds.
#include <algorithm>
#include <cmath>
#include <string>

#include "backend/vulkan/vulkan_pipelines.h"
#include "backend/vulkan/vulkan_recorder.h"
#include "backend/vulkan/vulkan_shapes.h"
#include "mnnpy/kv_cache.h"

namespace mnnpy {
namespace vulkan {

namespace {

const uint32_t kKvCacheWriteSpirv[] =
#include "backend/vulkan/shaders/kv_cache_write.spv.inc"
    ;
const uint32_t kCachedAttentionSpirv[] =
#include "backend/vulkan/shaders/cached_attention.spv.inc"
    ;
const uint32_t kCombineSpirv[] =
#include "backend/vulkan/shaders/cached_attention_combine.spv.inc"
    ;

constexpr uint32_t kWorkgroup = 64;    // invocations per (head, query) row: keys scored per round
constexpr int64_t kMaxHeadDim = 256;  // the query row a workgroup keeps in shared memory
constexpr uint32_t kBusyGroups = 256;  // workgroups that keep a GPU busy enough: fewer rows split keys
constexpr uint32_t kMaxSplits = 32;

// Workgroups per row: a power of two bringing the rows near kBusyGroups workgroups.
uint32_t splits_for(uint64_t rows) {
  uint32_t splits = 1;
  while (splits < kMaxSplits && rows * splits * 2 <= kBusyGroups) splits *= 2;
  return splits;
}

class DeviceKvStorage : public KvCacheStorage {
 public:
  const char* backend() const override { return "vulkan"; }

  void grow(const KvCache& cache, int64_t tokens, int64_t keep) override {
    // The shaders index a layer's buffer in uint32 words.
    if ((uint64_t)2 * cache.kv_heads * tokens * cache.head_dim > UINT32_MAX) {
      throw ValueError("CachedAttention: a cache of " + std::to_string(tokens) + " tokens passes the Vulkan "
                       "backend's 2^32 values per layer");
    }
    const size_t head_bytes = sizeof(float) * (size_t)(tokens * cache.head_dim);
    const size_t layer_bytes = 2 * (size_t)cache.kv_heads * head_bytes;
    std::vector<std::shared_ptr<void>> grown((size_t)cache.layers);
    for (auto& layer : grown) layer = allocate_device_buffer(layer_bytes);
    if (keep > 0 && !layers_.empty()) {
      Recorder& recorder = Recorder::current();
      const VkDeviceSize old_head = sizeof(float) * (VkDeviceSize)(cache.capacity * cache.head_dim);
      const VkDeviceSize kept = sizeof(float) * (VkDeviceSize)(keep * cache.head_dim);
      for (size_t l = 0; l < grown.size(); ++l) {
        VkDeviceSize from_offset = 0, to_offset = 0;
        const std::shared_ptr<Allocation> from = allocation_at(layers_[l].get(), bytes_, &from_offset);
        const std::shared_ptr<Allocation> to = allocation_at(grown[l].get(), layer_bytes, &to_offset);
        std::vector<VkBufferCopy> regions;
        for (int64_t row = 0; row < 2 * cache.kv_heads; ++row) {  // keys' heads, then values'
          regions.push_back(VkBufferCopy{from_offset + row * old_head, to_offset + row * head_bytes, kept});
        }
        vkCmdCopyBuffer(recorder.command_buffer(Recorder::Work::Transfer), from->buffer, to->buffer,
                        (uint32_t)regions.size(), regions.data());
        recorder.recorded(Recorder::Work::Transfer);
        recorder.keep(from);
        recorder.keep(to);
      }
    }
    // Waited for even without copies: the recorder lets go of the old buffers, and with them of
    // every recording that bound them (the next run records its commands again).
    if (!layers_.empty()) Recorder::current().wait();
    layers_.swap(grown);
    bytes_ = layer_bytes;
  }

  // Takes over the host vectors' tokens (a cache the CPU's kernels wrote first) and frees them.
  void adopt(KvCache& cache) {
    grow(cache, cache.capacity, 0);
    Recorder& recorder = Recorder::current();
    const size_t half = sizeof(float) * (size_t)(cache.kv_heads * cache.capacity * cache.head_dim);
    for (size_t l = 0; l < layers_.size(); ++l) {
      char* base = static_cast<char*>(layers_[l].get());
      recorder.copy_from_host(base, cache.key_data[l].data(), half);
      recorder.copy_from_host(base + half, cache.value_data[l].data(), half);
      std::vector<float>().swap(cache.key_data[l]);
      std::vector<float>().swap(cache.value_data[l]);
    }
    recorder.wait();
  }

  const void* layer(int64_t l) const { return layers_[(size_t)l].get(); }
  size_t layer_bytes() const { return bytes_; }

 private:
  std::vector<std::shared_ptr<void>> layers_;
  size_t bytes_ = 0;
};

class CachedAttentionKernel : public VulkanKernel {
 public:
  CachedAttentionKernel(std::shared_ptr<KvCache> cache, int64_t layer, float scale, int64_t heads, int64_t tokens,
                        int64_t depth, int64_t kv_heads)
      : cache_(std::move(cache)), layer_(layer),
        write_{(uint32_t)kv_heads, (uint32_t)tokens, (uint32_t)depth, 0},
        attend_{(uint32_t)heads, (uint32_t)tokens, (uint32_t)depth, 0, (uint32_t)(heads / kv_heads),
                (uint32_t)kv_heads, scale},
        splits_(splits_for((uint64_t)heads * tokens)),
        write_pipeline_(pipeline_for(kKvCacheWriteSpirv, sizeof(kKvCacheWriteSpirv), 4, sizeof(WritePush))),
        attend_pipeline_(pipeline_for(kCachedAttentionSpirv, sizeof(kCachedAttentionSpirv), 5, sizeof(AttendPush),
                                      {kWorkgroup, splits_})),
        combine_pipeline_(splits_ > 1 ? pipeline_for(kCombineSpirv, sizeof(kCombineSpirv), 2, sizeof(CombinePush))
                                      : nullptr) {}

  // The split rows' partials: per workgroup, depth sums, its maximum and its sum of weights.
  size_t scratch_bytes() const override {
    return splits_ > 1 ? sizeof(float) * (size_t)attend_.heads * attend_.tokens * splits_ * (attend_.depth + 2) : 0;
  }

  void execute(const KernelArgs& args, void* scratch) const override {
    std::lock_guard<std::mutex> lock(cache_->mutex);
    const auto* storage = dynamic_cast<const DeviceKvStorage*>(cache_->device.get());
    if (!storage) throw ValueError("CachedAttention: the cache's device buffers were released");
    // The capacity now: the host reserves before each run, and the shaders check past against it.
    WritePush write = write_;
    AttendPush attend = attend_;
    write.capacity = attend.capacity = (uint32_t)cache_->capacity;
    const BufferRange layer = resolve(storage->layer(layer_), storage->layer_bytes());
    const BufferRange past = resolve_words(args.inputs[3]->data, args.inputs[3]->nbytes());
    const uint64_t written = (uint64_t)write.kv_heads * write.tokens * write.depth;
    write_pipeline_->dispatch({layer, resolve(args.inputs[1]->data, args.inputs[1]->nbytes()),
                               resolve(args.inputs[2]->data, args.inputs[2]->nbytes()), past},
                              &write, groups_for(written, 256));
    const uint64_t rows = (uint64_t)attend.heads * attend.tokens;
    const BufferRange out = resolve(args.outputs[0]->data, args.outputs[0]->nbytes());
    const BufferRange partials = splits_ > 1 ? resolve(scratch, scratch_bytes()) : out;
    const GroupGrid grid = group_grid(rows * splits_);
    attend_pipeline_->dispatch({partials, resolve(args.inputs[0]->data, args.inputs[0]->nbytes()), layer, past, layer},
                               &attend, grid.x, grid.y);
    if (splits_ > 1) {
      const CombinePush combine{(uint32_t)rows, attend.depth, splits_};
      const GroupGrid rows_grid = group_grid(rows);
      combine_pipeline_->dispatch({out, partials}, &combine, rows_grid.x, rows_grid.y);
    }
  }

 private:
  struct WritePush {
    uint32_t kv_heads, tokens, depth, capacity;
  };
  struct AttendPush {
    uint32_t heads, tokens, depth, capacity, group, kv_heads;
    float scale;
  };
  struct CombinePush {
    uint32_t rows, depth, splits;
  };
  std::shared_ptr<KvCache> cache_;
  int64_t layer_;
  WritePush write_;
  AttendPush attend_;
  uint32_t splits_;
  std::shared_ptr<Pipeline> write_pipeline_, attend_pipeline_, combine_pipeline_;
};

std::unique_ptr<Kernel> make_cached_attention_kernel(const KernelContext& ctx) {
  const Shape &q = ctx.input_types[0].shape, &k = ctx.input_types[1].shape;
  const int64_t heads = q[0], tokens = q[1], depth = q[2], kv_heads = k[0];
  // Else the CPU's kernel, with the cache on the host.
  if (depth > kMaxHeadDim || (uint64_t)heads * tokens * depth > INT32_MAX) return nullptr;
  const std::shared_ptr<KvCache> cache = kv_cache_find(ctx.attrs.get_int("cache"));
  const int64_t layer = ctx.attrs.get_int("layer");
  std::lock_guard<std::mutex> lock(cache->mutex);
  cache->check_fits(layer, kv_heads, depth);
  if (!cache->device) {
    auto storage = std::make_unique<DeviceKvStorage>();
    if (cache->capacity > 0) storage->adopt(*cache);
    cache->device = std::move(storage);
  } else {
    cache->check_held_by("vulkan");
  }
  cache->reserve(tokens, cache->capacity);
  return new_kernel<CachedAttentionKernel>(cache, layer, (float)ctx.attrs.get_float("scale"), heads, tokens, depth,
                                           kv_heads);
}

MNNPY_REGISTER_KERNEL("CachedAttention", "vulkan", make_cached_attention_kernel);

}  // namespace

}  // namespace vulkan
}  // namespace mnnpy
