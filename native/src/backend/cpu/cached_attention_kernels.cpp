// CPU kernel of CachedAttention (ops/cached_attention.cpp): the new tokens' keys and values
// written into the cache (mnnpy/kv_cache.h), then each (head, query) row's scores against the
// cached keys, their softmax and the weighted sum of the cached values, with vector dot products
// and multiply-adds compiled per SIMD target.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/cached_attention_kernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "mnnpy/backend.h"
#include "mnnpy/kv_cache.h"
#include "mnnpy/thread_pool.h"

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// out[D] = softmax over j < keys of (q . key_j * scale), weighted sum of value_j; key_j at
// key + j * D (value likewise). scores: room for `keys` floats.
void AttendRowImpl(const float* HWY_RESTRICT q, const float* HWY_RESTRICT key, const float* HWY_RESTRICT value,
                   int64_t keys, int64_t D, float scale, float* HWY_RESTRICT scores, float* HWY_RESTRICT out) {
  const hn::ScalableTag<float> d;
  const int64_t L = (int64_t)hn::Lanes(d), whole = D / L * L;
  float top = -INFINITY;
  for (int64_t j = 0; j < keys; ++j) {
    const float* kj = key + j * D;
    auto a0 = hn::Zero(d), a1 = hn::Zero(d);
    int64_t i = 0;
    for (; i + 2 * L <= whole; i += 2 * L) {
      a0 = hn::MulAdd(hn::LoadU(d, q + i), hn::LoadU(d, kj + i), a0);
      a1 = hn::MulAdd(hn::LoadU(d, q + i + L), hn::LoadU(d, kj + i + L), a1);
    }
    for (; i < whole; i += L) a0 = hn::MulAdd(hn::LoadU(d, q + i), hn::LoadU(d, kj + i), a0);
    float dot = hn::GetLane(hn::SumOfLanes(d, hn::Add(a0, a1)));
    for (; i < D; ++i) dot += q[i] * kj[i];
    scores[j] = dot * scale;
    top = std::max(top, scores[j]);
  }
  float sum = 0.0f;
  for (int64_t j = 0; j < keys; ++j) {
    scores[j] = std::exp(scores[j] - top);
    sum += scores[j];
  }
  const float inverse = 1.0f / sum;
  std::fill(out, out + D, 0.0f);
  for (int64_t j = 0; j < keys; ++j) {
    const float p = scores[j] * inverse;
    const float* vj = value + j * D;
    const auto pv = hn::Set(d, p);
    int64_t i = 0;
    for (; i < whole; i += L) hn::StoreU(hn::MulAdd(pv, hn::LoadU(d, vj + i), hn::LoadU(d, out + i)), d, out + i);
    for (; i < D; ++i) out[i] += p * vj[i];
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mnnpy {
namespace cpu {
HWY_EXPORT(AttendRowImpl);
}  // namespace cpu

namespace {

class CachedAttentionKernel : public Kernel {
 public:
  explicit CachedAttentionKernel(const KernelContext& ctx)
      : handle_(ctx.attrs.get_int("cache")), layer_(ctx.attrs.get_int("layer")),
        scale_((float)ctx.attrs.get_float("scale")) {
    const Shape &q = ctx.input_types[0].shape, &k = ctx.input_types[1].shape;
    heads_ = q[0], tokens_ = q[1], depth_ = q[2], kv_heads_ = k[0];
  }

  void execute(const KernelArgs& args, void*) const override {
    const std::shared_ptr<KvCache> cache = kv_cache_find(handle_);
    std::lock_guard<std::mutex> lock(cache->mutex);
    cache->check_held_by("cpu");
    cache->check_fits(layer_, kv_heads_, depth_);
    const int64_t past = args.inputs[3]->ptr<int64_t>()[0];
    if (past < 0) throw ValueError("CachedAttention: past must be >= 0, got " + std::to_string(past));
    const int64_t S = tokens_, D = depth_, total = past + S;
    cache->reserve(total, past);
    const float* k = args.inputs[1]->ptr<float>();
    const float* v = args.inputs[2]->ptr<float>();
    for (int64_t h = 0; h < kv_heads_; ++h) {
      std::memcpy(cache->keys(layer_, h) + past * D, k + h * S * D, sizeof(float) * (size_t)(S * D));
      std::memcpy(cache->values(layer_, h) + past * D, v + h * S * D, sizeof(float) * (size_t)(S * D));
    }
    const float* q = args.inputs[0]->ptr<float>();
    float* out = args.outputs[0]->ptr<float>();
    const int64_t group = heads_ / kv_heads_;
    KvCache& c = *cache;
    // Rows (head, query): query s sees the cache's first past + s + 1 tokens.
    parallel_for(args.pool, heads_ * S, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, total)),
                 [&](int64_t r0, int64_t r1) {
      std::vector<float> scores((size_t)total);
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t h = r / S, s = r % S, kv = h / group;
        HWY_DYNAMIC_DISPATCH(cpu::AttendRowImpl)(q + r * D, c.keys(layer_, kv), c.values(layer_, kv), past + s + 1,
                                                 D, scale_, scores.data(), out + r * D);
      }
    });
  }

 private:
  int64_t handle_, layer_;
  float scale_;
  int64_t heads_ = 0, tokens_ = 0, depth_ = 0, kv_heads_ = 0;
};

}  // namespace

MNNPY_REGISTER_KERNEL("CachedAttention", "cpu", construct_kernel<CachedAttentionKernel>);

}  // namespace mnnpy
#endif
