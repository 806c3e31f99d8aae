// Full sorts. Value sorts and argsorts of 32- and 64-bit types use Highway's vqsort (vectorized
// quicksort, from hwy_contrib): values as signed integer words of their order, argsorts as
// (key, position) items, which makes them stable. Long rows on two threads are split around a
// sampled pivot while the words are made, and each side sorted by one thread. Other types use
// an LSD radix sort on order-preserving unsigned keys: integers flip their sign bit, floats flip
// the sign bit of positives and every bit of negatives, NaN goes above +inf. Two mappings exist:
// an invertible one for value sorts (the sorted keys turn back into values) and a canonical one
// where equal values have equal keys (-0.0 = 0.0, every NaN alike) for argsorts and isin (both
// in host/sort_keys.h). Radix passes use 11-bit digits (8-bit for short rows and 8/16-bit keys),
// count every digit in one read, and skip digits that all keys share.
// Long rows of 64-bit values on one thread are sorted by an MSD radix sort instead of vqsort
// (one pass into cache-sized buckets over the sampled key range, then per bucket a radix level
// and sorting networks in cache; see RadixSort64Impl), built for each SIMD target because the
// networks are Highway's.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/sort_full.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/cache_control.h>
#include <hwy/highway.h>
#include <hwy/contrib/sort/sorting_networks-inl.h>
#include <hwy/contrib/sort/traits-inl.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include <hwy/contrib/sort/vqsort.h>

#include "backend/cpu/sort_full.h"
#include "backend/cpu/thread_buffers.h"
#include "host/sort_keys.h"
#include "mnnpy/thread_pool.h"

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Sorts 64-bit words a[0, n) in place (vqsort): the radix sort's fallback for big buckets.
using WordSortFn = void (*)(int64_t*, int64_t);

#if VQSORT_ENABLED
namespace radix64 {

constexpr int64_t kSample = 1024;
constexpr int64_t kBlock = 256;                  // items per step of the two full passes
constexpr int64_t kCoarse = 4096;                // keys aimed at per first-level bucket (L1-sized)
constexpr int64_t kBucketMax = int64_t(1) << 15;  // a bucket larger than this goes to vqsort
constexpr int64_t kMaxSub = 1024;                // second-level buckets at most
constexpr int kMaxDepth = 6;
constexpr int kScratchSlot = 2;
// Highway's sorting network sorts 16 rows of up to kNetCols keys.
constexpr size_t kNetCols = hn::MaxLanes(hn::CappedTag<int64_t, hwy::SortConstants::kMaxCols>());
constexpr int64_t kNet = 16 * (int64_t)kNetCols;
constexpr int64_t kSub = kNet * 9 / 16;  // keys aimed at per second-level bucket: few overflow a network
using NetTraits = hn::detail::SharedTraits<hn::detail::TraitsLane<hn::detail::OrderAscending<int64_t>>>;

inline int bit_width64(uint64_t v) { return v ? 64 - __builtin_clzll(v) : 0; }

// float64 bits <-> signed words of the same order, NaN above +inf: SortWords' map.
constexpr uint64_t kAbs = ~(uint64_t(1) << 63), kInf = 0x7ff0000000000000ull;
inline int64_t float_word(uint64_t u) {
  const uint64_t a = u & kAbs;
  u = a > kInf ? a : u;
  return int64_t(u ^ (uint64_t(int64_t(u) >> 63) >> 1));
}
inline uint64_t float_value(int64_t w) { return uint64_t(w) ^ (uint64_t(w >> 63) >> 1); }

// Words back to float64 bits, in place.
inline void words_to_values(int64_t* HWY_RESTRICT a, int64_t m) {
  const hn::ScalableTag<int64_t> di;
  const hn::RebindToUnsigned<decltype(di)> du;
  const int64_t N = (int64_t)hn::Lanes(di);
  int64_t i = 0;
  for (; i + N <= m; i += N) {
    const auto w = hn::LoadU(di, a + i);
    const auto negative = hn::BitCast(du, hn::VecFromMask(di, hn::Lt(w, hn::Zero(di))));
    hn::StoreU(hn::Xor(w, hn::BitCast(di, hn::ShiftRight<1>(negative))), di, a + i);
  }
  for (; i < m; ++i) a[i] = (int64_t)float_value(a[i]);
}

// words[i] = the word of src[i]; bins[i] = its first-level bin, (word - lo) >> shift clamped to
// [0, last] (shift >= 1, so the difference read as signed is never negative).
template <bool kFloat>
void words_and_bins(const uint64_t* HWY_RESTRICT src, int64_t count, int64_t lo, int shift, int64_t last,
                    int64_t* HWY_RESTRICT words, int64_t* HWY_RESTRICT bins) {
  const hn::ScalableTag<int64_t> di;
  const hn::RebindToUnsigned<decltype(di)> du;
  const int64_t N = (int64_t)hn::Lanes(di);
  const auto vlo = hn::Set(di, lo), vlast = hn::Set(di, last);
  int64_t i = 0;
  for (; i + N <= count; i += N) {
    auto w = hn::BitCast(di, hn::LoadU(du, src + i));
    if constexpr (kFloat) {
      const auto a = hn::And(w, hn::Set(di, (int64_t)kAbs));
      w = hn::IfThenElse(hn::Gt(a, hn::Set(di, (int64_t)kInf)), a, w);
      const auto negative = hn::BitCast(du, hn::VecFromMask(di, hn::Lt(w, hn::Zero(di))));
      w = hn::Xor(w, hn::BitCast(di, hn::ShiftRight<1>(negative)));
    }
    auto bin = hn::BitCast(di, hn::ShiftRightSame(hn::BitCast(du, hn::Sub(w, vlo)), shift));
    bin = hn::IfThenZeroElse(hn::Lt(w, vlo), hn::Min(bin, vlast));
    hn::StoreU(w, di, words + i);
    hn::StoreU(bin, di, bins + i);
  }
  for (; i < count; ++i) {
    const int64_t w = kFloat ? float_word(src[i]) : (int64_t)src[i];
    const int64_t bin = std::min((int64_t)((uint64_t(w) - uint64_t(lo)) >> shift), last);
    words[i] = w;
    bins[i] = w < lo ? 0 : bin;
  }
}

// Sorts a[0, m), m <= kNet, by one sorting network (insertion sort when tiny). The network
// loads and stores whole vectors of kNetCols keys per row, so with fewer columns it reaches
// past its 16 rows: in place that is allowed because every key after a[m] (up to `end`) is at
// least as large and belongs to a later bucket (the network keeps each key inside its bucket);
// the lanes stored past the last row are saved and put back.
inline void sort_small(int64_t* HWY_RESTRICT a, int64_t m, const int64_t* end) {
  if (m <= 8) {
    for (int64_t i = 1; i < m; ++i) {
      const int64_t v = a[i];
      int64_t j = i;
      for (; j > 0 && a[j - 1] > v; --j) a[j] = a[j - 1];
      a[j] = v;
    }
    return;
  }
  size_t cols = 1;
  while ((int64_t)(16 * cols) < m) cols *= 2;
  const NetTraits st;
  if (a + 16 * cols + kNetCols <= end) {
    int64_t saved[kNetCols];
    std::memcpy(saved, a + 16 * cols, sizeof(saved));
    hn::detail::SortingNetwork(st, a, cols);
    std::memcpy(a + 16 * cols, saved, sizeof(saved));
    return;
  }
  HWY_ALIGN int64_t buf[kNet + kNetCols];  // at the end of the array: padded with the largest word
  std::memcpy(buf, a, (size_t)m * sizeof(int64_t));
  std::fill(buf + m, buf + 16 * cols + kNetCols, INT64_MAX);
  hn::detail::SortingNetwork(st, buf, cols);
  std::memcpy(a, buf, (size_t)m * sizeof(int64_t));
}

inline void min_max(const int64_t* a, int64_t m, int64_t& lo, int64_t& hi) {
  const hn::ScalableTag<int64_t> d;
  const int64_t N = (int64_t)hn::Lanes(d);
  lo = INT64_MAX;
  hi = INT64_MIN;
  int64_t i = 0;
  if (m >= N) {
    auto vlo = hn::LoadU(d, a), vhi = vlo;
    for (i = N; i + N <= m; i += N) {
      const auto v = hn::LoadU(d, a + i);
      vlo = hn::Min(vlo, v);
      vhi = hn::Max(vhi, v);
    }
    lo = hn::GetLane(hn::MinOfLanes(d, vlo));
    hi = hn::GetLane(hn::MaxOfLanes(d, vhi));
  }
  for (; i < m; ++i) {
    lo = std::min(lo, a[i]);
    hi = std::max(hi, a[i]);
  }
}

void sort_bucket(int64_t* a, int64_t m, int64_t lo, uint64_t range, const int64_t* end, int64_t* tmp, int depth,
                 WordSortFn big_sort);

// Sorts a[0, m) (in cache), whose words w satisfy 0 <= w - lo <= range (unsigned), range > 0:
// counts them into about m / kSub buckets, moves them through tmp and back, and finishes each
// bucket. Bucket of w: (w - lo) * scale >> 64, scale = buckets * 2^64 / (range + 1) (so widths
// need not be powers of two), or w - lo itself when the range is that small. The items are
// read as two interleaved halves with their own position counters, so that consecutive stores
// do not wait on one another.
template <bool kDirect>
void partition_bucket(int64_t* a, int64_t m, int64_t lo, uint64_t range, uint64_t buckets, const int64_t* end,
                      int64_t* tmp, int depth, WordSortFn big_sort) {
  const uint64_t scale =
      kDirect ? 0 : (uint64_t)(((unsigned __int128)buckets << 64) / ((unsigned __int128)range + 1));
  auto digit = [&](int64_t w) -> uint32_t {
    const uint64_t x = uint64_t(w) - uint64_t(lo);
    return kDirect ? (uint32_t)x : (uint32_t)(((unsigned __int128)x * scale) >> 64);
  };
  uint32_t first[kMaxSub], second[kMaxSub], begin[kMaxSub + 1];
  std::fill(first, first + buckets, 0u);
  std::fill(second, second + buckets, 0u);
  const int64_t half = m / 2;
  for (int64_t i = 0; i < half; ++i) {
    ++first[digit(a[i])];
    ++second[digit(a[half + i])];
  }
  if (m & 1) ++second[digit(a[m - 1])];
  uint32_t run = 0;
  for (uint64_t d = 0; d < buckets; ++d) {
    begin[d] = run;
    const uint32_t f = first[d], s = second[d];
    first[d] = run;
    second[d] = run + f;
    run += f + s;
  }
  begin[buckets] = run;
  for (int64_t i = 0; i < half; ++i) {
    const int64_t v = a[i], w = a[half + i];
    tmp[first[digit(v)]++] = v;
    tmp[second[digit(w)]++] = w;
  }
  if (m & 1) tmp[second[digit(a[m - 1])]++] = a[m - 1];
  std::memcpy(a, tmp, (size_t)m * sizeof(int64_t));
  for (uint64_t d = 0; d < buckets; ++d) {
    const int64_t b = begin[d], count = begin[d + 1] - b;
    if (count <= 1 || kDirect) continue;  // direct buckets hold one word each
    if (count <= kNet) {
      sort_small(a + b, count, end);
      continue;
    }
    int64_t sub_lo, sub_hi;
    min_max(a + b, count, sub_lo, sub_hi);
    if (sub_lo != sub_hi) sort_bucket(a + b, count, sub_lo, uint64_t(sub_hi) - uint64_t(sub_lo), end, tmp, depth + 1, big_sort);
  }
}

void sort_bucket(int64_t* a, int64_t m, int64_t lo, uint64_t range, const int64_t* end, int64_t* tmp, int depth,
                 WordSortFn big_sort) {
  if (m <= kNet) return sort_small(a, m, end);
  if (m > kBucketMax || depth > kMaxDepth) return big_sort(a, m);
  const uint64_t buckets = std::min<uint64_t>(std::max<int64_t>(2, (m + kSub / 2) / kSub), kMaxSub);
  if (range < buckets) return partition_bucket<true>(a, m, lo, range, range + 1, end, tmp, depth, big_sort);
  partition_bucket<false>(a, m, lo, range, buckets, end, tmp, depth, big_sort);
}

}  // namespace radix64

// Sorts n 64-bit keys (float64 bits when is_float, else int64) into out as signed words of
// their order (SortWords' words), or as values again when to_values. An MSD radix sort: a
// sample sets the key range; one counting pass over 2^16 equal-width bins of it; bins are
// merged into buckets of about kCoarse keys; one scattering pass, through a cache line per
// bucket written with streaming stores (no reads for ownership of the output); then bucket by
// bucket, in cache, a second radix level and sorting networks. Returns false, having done
// nothing, when the sample holds many equal keys or clusters (vqsort handles those better).
bool RadixSort64Impl(const uint64_t* HWY_RESTRICT src, int64_t n, int64_t* HWY_RESTRICT out, bool is_float,
                     bool to_values, WordSortFn big_sort) {
  using namespace radix64;
  auto word_at = [&](int64_t i) { return is_float ? float_word(src[i]) : (int64_t)src[i]; };
  int64_t sample[kSample];
  for (int64_t s = 0; s < kSample; ++s) sample[s] = word_at((2 * s + 1) * n / (2 * kSample));
  big_sort(sample, kSample);
  int64_t equal = 0;
  for (int64_t s = 1; s < kSample; ++s) equal += sample[s] == sample[s - 1];
  if (equal * 16 > kSample) return false;
  const int64_t lo = sample[0];
  const int fine_bits = std::min(16, std::max(10, bit_width64((uint64_t)n) - 5));
  const int64_t bins = int64_t(1) << fine_bits, last = bins - 1;
  const int shift = std::max(1, bit_width64(uint64_t(sample[kSample - 1]) - uint64_t(lo)) - fine_bits);
  // Bins too full for the cache go to vqsort whole: decline when the sample puts most keys in
  // such bins (clustered data), as the radix passes would then only add to vqsort's work.
  int64_t in_big_bins = 0;
  for (int64_t s = 0, run_begin = 0; s <= kSample; ++s) {
    if (s == kSample || ((uint64_t(sample[s]) - uint64_t(lo)) >> shift) !=
                            ((uint64_t(sample[run_begin]) - uint64_t(lo)) >> shift)) {
      if ((s - run_begin) * n > kBucketMax * kSample) in_big_bins += s - run_begin;
      run_begin = s;
    }
  }
  if (in_big_bins * 2 > kSample) return false;
  const int64_t max_buckets = std::min<int64_t>(bins, 2 * n / kCoarse + 2);

  // Scratch: counts, bin -> bucket map, bucket starts/first bins/positions, line buffers,
  // the in-cache partition buffer, one block of words and bins.
  size_t bytes = 0;
  auto take = [&](size_t b) {
    const size_t at = bytes;
    bytes += (b + 63) & ~size_t(63);
    return at;
  };
  const size_t at_count = take(bins * 4), at_map = take(bins * 2), at_start = take((max_buckets + 1) * 4),
               at_first_bin = take((max_buckets + 1) * 4), at_pos = take(max_buckets * 4),
               at_lines = take(max_buckets * 64), at_tmp = take(kBucketMax * 8), at_words = take(kBlock * 8),
               at_bins = take(kBlock * 8);
  char* base = reinterpret_cast<char*>(thread_buffer(kScratchSlot, bytes / sizeof(float)));
  uint32_t* count = reinterpret_cast<uint32_t*>(base + at_count);
  uint16_t* map = reinterpret_cast<uint16_t*>(base + at_map);
  uint32_t* start = reinterpret_cast<uint32_t*>(base + at_start);
  uint32_t* first_bin = reinterpret_cast<uint32_t*>(base + at_first_bin);
  uint32_t* pos = reinterpret_cast<uint32_t*>(base + at_pos);
  int64_t* lines = reinterpret_cast<int64_t*>(base + at_lines);
  int64_t* tmp = reinterpret_cast<int64_t*>(base + at_tmp);
  int64_t* words = reinterpret_cast<int64_t*>(base + at_words);
  int64_t* bin_of = reinterpret_cast<int64_t*>(base + at_bins);

  auto each_block = [&](auto&& fn) {
    for (int64_t b = 0; b < n; b += kBlock) {
      const int64_t m = std::min(kBlock, n - b);
      if (is_float) {
        words_and_bins<true>(src + b, m, lo, shift, last, words, bin_of);
      } else {
        words_and_bins<false>(src + b, m, lo, shift, last, words, bin_of);
      }
      fn(b, m);
    }
  };
  std::fill(count, count + bins, 0u);
  each_block([&](int64_t, int64_t m) {
    for (int64_t i = 0; i < m; ++i) ++count[bin_of[i]];
  });
  // Consecutive bins merged greedily into buckets of at most kCoarse keys (a bin may exceed it).
  int64_t buckets = 0;
  uint32_t in_bucket = 0, run = 0;
  start[0] = 0;
  first_bin[0] = 0;
  for (int64_t f = 0; f < bins; ++f) {
    if (in_bucket > 0 && in_bucket + count[f] > (uint32_t)kCoarse) {
      ++buckets;
      start[buckets] = run;
      first_bin[buckets] = (uint32_t)f;
      in_bucket = 0;
    }
    map[f] = (uint16_t)buckets;
    in_bucket += count[f];
    run += count[f];
  }
  ++buckets;
  start[buckets] = run;
  first_bin[buckets] = (uint32_t)bins;
  std::copy(start, start + buckets, pos);

  // Scatter. Line slot of item q: (q + align) % 8, so that full lines are 64-byte aligned in out;
  // a bucket's first line, which it shares with the previous bucket, is written plainly.
  const hn::CappedTag<int64_t, 8> dl;
  const int64_t NL = (int64_t)hn::Lanes(dl);
  const uint32_t align = (uint32_t)((reinterpret_cast<uintptr_t>(out) / sizeof(int64_t)) & 7);
  each_block([&](int64_t, int64_t m) {
    for (int64_t i = 0; i < m; ++i) {
      const uint32_t c = map[bin_of[i]];
      const uint32_t q = pos[c]++;
      int64_t* line = lines + 8 * c;
      const uint32_t slot = (q + align) & 7;
      line[slot] = words[i];
      if (slot == 7) {
        if (q >= start[c] + 7) {
          for (int64_t k = 0; k < 8; k += NL) hn::Stream(hn::Load(dl, line + k), dl, out + (q - 7) + k);
        } else {
          for (uint32_t j = start[c]; j <= q; ++j) out[j] = line[(j + align) & 7];
        }
      }
    }
  });
  for (int64_t c = 0; c < buckets; ++c) {  // the partial last lines
    const uint32_t q = pos[c];
    const int64_t line_start = std::max<int64_t>(start[c], (int64_t)q - ((q + align) & 7));
    for (int64_t j = line_start; j < q; ++j) out[j] = lines[8 * c + ((j + align) & 7)];
  }
  hwy::FlushStream();

  // Each bucket in turn; inner buckets' ranges follow from their bins, the end ones (which
  // hold clamped outliers) are measured.
  for (int64_t c = 0; c < buckets; ++c) {
    const int64_t b = start[c], e = start[c + 1], m = e - b;
    if (m > 1) {
      int64_t blo, bhi;
      uint64_t range;
      if (first_bin[c] > 0 && first_bin[c + 1] <= (uint32_t)last) {
        blo = (int64_t)(uint64_t(lo) + (uint64_t(first_bin[c]) << shift));
        range = (uint64_t(first_bin[c + 1] - first_bin[c]) << shift) - 1;
      } else {
        min_max(out + b, m, blo, bhi);
        range = uint64_t(bhi) - uint64_t(blo);
      }
      if (range > 0) sort_bucket(out + b, m, blo, range, out + n, tmp, 0, big_sort);
    }
    if (to_values) words_to_values(out + b, m);
  }
  return true;
}
#else
bool RadixSort64Impl(const uint64_t*, int64_t, int64_t*, bool, bool, WordSortFn) { return false; }
#endif  // VQSORT_ENABLED

// Whether Highway's vqsort sorts on this target: on the portable one its 64-bit sorts fall back
// to a heap sort, and its 128-bit sort (of argsort items) aborts the process.
bool VqsortEnabledImpl() { return VQSORT_ENABLED != 0; }

}  // namespace HWY_NAMESPACE
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mnnpy {
namespace cpu {

HWY_EXPORT(RadixSort64Impl);
HWY_EXPORT(VqsortEnabledImpl);

namespace {

using namespace host::sort_keys;

// ---- radix sort ---------------------------------------------------------------------------

// Items of an argsort with a wide key (or rows longer than 2^32).
struct KeyIndex {
  uint64_t key;
  uint64_t index;
};

struct PackedKeyOf {  // (key << 32 | index)
  uint64_t operator()(uint64_t item) const { return item >> 32; }
};
struct WideKeyOf {
  uint64_t operator()(const KeyIndex& item) const { return item.key; }
};
template <class K>
struct PlainKeyOf {
  uint64_t operator()(K item) const { return item; }
};

constexpr int64_t kInsertionMax = 24;
constexpr size_t kLsdBytes = 4 << 20;  // buckets up to this size finish by LSD passes  // buckets up to this size finish by LSD passes in L2
constexpr int64_t kParallelMin = 1 << 16;  // a single row this long is sorted by every thread

bool use_all_threads(int64_t n, ThreadPool* pool) {
  return pool && pool->num_threads() > 1 && n >= kParallelMin && n <= (int64_t)UINT32_MAX;
}

template <class T>
struct Buffer {  // uninitialized scratch
  explicit Buffer(int64_t n) : data(n > 0 ? new T[(size_t)n] : nullptr) {}
  std::unique_ptr<T[]> data;
  T* get() const { return data.get(); }
};

// Runs fn(begin, end) over [0, n) split over the pool when the row is long, else inline.
template <class Fn>
void maybe_parallel(int64_t n, ThreadPool* pool, Fn&& fn) {
  if (use_all_threads(n, pool)) {
    parallel_for(pool, n, 1 << 14, fn);
  } else {
    fn(0, n);
  }
}

template <class Item, class KeyOf>
void insertion_sort(Item* a, int64_t n, KeyOf key_of) {
  for (int64_t i = 1; i < n; ++i) {
    const Item v = a[i];
    const uint64_t k = key_of(v);
    int64_t j = i;
    while (j > 0 && key_of(a[j - 1]) > k) {
      a[j] = a[j - 1];
      --j;
    }
    a[j] = v;
  }
}

inline int bit_width(uint64_t v) { return v ? 64 - __builtin_clzll(v) : 0; }

// Stable LSD radix sort of a cache-sized a[0, n) on key bits [0, bits): every digit counted
// in one read, digits that all keys share skipped. Returns the buffer holding the result.
template <class Item, class KeyOf>
Item* lsd_sort(Item* a, Item* t, int64_t n, int bits, const KeyOf& key_of) {
  const int digit_bits = n >= 4096 ? 11 : 8;
  const int passes = (bits + digit_bits - 1) / digit_bits;
  const uint32_t buckets = 1u << digit_bits, mask = buckets - 1;
  thread_local std::vector<uint32_t> hist;
  hist.assign((size_t)passes * buckets, 0);
  uint32_t* h = hist.data();
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t k = key_of(a[i]);
    for (int p = 0; p < passes; ++p) ++h[p * buckets + ((k >> (p * digit_bits)) & mask)];
  }
  for (int p = 0; p < passes; ++p) {
    uint32_t* count = h + p * buckets;
    const int shift = p * digit_bits;
    if (count[(key_of(a[0]) >> shift) & mask] == (uint32_t)n) continue;
    uint32_t running = 0;
    for (uint32_t d = 0; d < buckets; ++d) {
      const uint32_t c = count[d];
      count[d] = running;
      running += c;
    }
    for (int64_t i = 0; i < n; ++i) {
      const Item v = a[i];
      t[count[(key_of(v) >> shift) & mask]++] = v;
    }
    std::swap(a, t);
  }
  return a;
}

// Stable MSD radix sort, out of place: the items of a[0, n) agree on every key bit from `bits`
// up. Each level counts the top remaining digit (and which lower bits differ at all, so a
// level whose digit is shared jumps straight to the highest differing bit), scatters a -> t
// and recurses into each bucket with the buffers swapped, so buckets soon fit in cache.
// Finished pieces (small or all-equal buckets) go to emit(items, position, count) at once.
template <class Item, class KeyOf, class Emit>
void msd_sort(Item* a, Item* t, int64_t n, int bits, int64_t pos, const KeyOf& key_of, const Emit& emit) {
  uint32_t count[2048];
  while (true) {
    if (bits <= 0 || n <= 1) {
      emit(a, pos, n);
      return;
    }
    if (n <= kInsertionMax) {
      insertion_sort(a, n, key_of);
      emit(a, pos, n);
      return;
    }
    if (n >= 256 && n * sizeof(Item) <= kLsdBytes) {  // fits in cache: finish digit by digit
      emit(lsd_sort(a, t, n, bits, key_of), pos, n);
      return;
    }
    const int digit_bits = std::min(bits, n >= (1 << 13) ? 11 : 8);
    const int shift = bits - digit_bits;
    const uint32_t buckets = 1u << digit_bits;
    const uint64_t low_mask = shift ? (~uint64_t(0) >> (64 - shift)) : 0;
    std::fill(count, count + buckets, 0u);
    const uint64_t first = key_of(a[0]);
    uint64_t differ = 0;
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t k = key_of(a[i]);
      differ |= k ^ first;
      ++count[(k >> shift) & (buckets - 1)];
    }
    differ &= (bits >= 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1);
    if (count[(first >> shift) & (buckets - 1)] == (uint32_t)n) {
      bits = bit_width(differ & low_mask);  // the digit is shared: go to the first one that differs
      continue;
    }
    uint32_t running = 0;
    for (uint32_t d = 0; d < buckets; ++d) {
      const uint32_t c = count[d];
      count[d] = running;
      running += c;
    }
    for (int64_t i = 0; i < n; ++i) {
      const Item v = a[i];
      t[count[(key_of(v) >> shift) & (buckets - 1)]++] = v;
    }
    // count[d] is now the end of bucket d.
    uint32_t begin = 0;
    for (uint32_t d = 0; d < buckets; ++d) {
      const uint32_t end = count[d];
      if (end > begin) msd_sort(t + begin, a + begin, end - begin, shift, pos + begin, key_of, emit);
      begin = end;
    }
    return;
  }
}

// The top level of msd_sort on every thread of the pool: each thread counts and scatters its
// contiguous part (offsets ordered by digit, then part, so the order stays stable); then the
// buckets are sorted in parallel (a very large bucket by this function again).
template <class Item, class KeyOf, class Emit>
void msd_sort_parallel(Item* a, Item* t, int64_t n, int bits, int64_t pos, const KeyOf& key_of, const Emit& emit,
                       ThreadPool* pool) {
  const int64_t parts = pool->num_threads();
  const int64_t part_len = (n + parts - 1) / parts;
  constexpr int kDigitBits = 11;
  constexpr uint32_t kBuckets = 1u << kDigitBits;
  std::vector<uint32_t> count((size_t)(parts * kBuckets));
  std::vector<uint64_t> part_differ((size_t)parts);
  while (true) {
    if (bits <= 0) {
      emit(a, pos, n);
      return;
    }
    const int digit_bits = std::min(bits, kDigitBits);
    const int shift = bits - digit_bits;
    const uint32_t buckets = 1u << digit_bits;
    const uint64_t first = key_of(a[0]);
    parallel_for(pool, parts, 1, [&](int64_t b, int64_t e) {
      for (int64_t part = b; part < e; ++part) {
        uint32_t* c = count.data() + part * kBuckets;
        std::fill(c, c + buckets, 0u);
        uint64_t differ = 0;
        for (int64_t i = part * part_len, end = std::min(n, i + part_len); i < end; ++i) {
          const uint64_t k = key_of(a[i]);
          differ |= k ^ first;
          ++c[(k >> shift) & (buckets - 1)];
        }
        part_differ[part] = differ;
      }
    });
    uint64_t differ = 0;
    for (uint64_t d : part_differ) differ |= d;
    if ((differ >> shift) == 0) {
      bits = bit_width(differ);
      continue;
    }
    std::vector<uint32_t> bucket_end(buckets);
    uint32_t running = 0;
    for (uint32_t d = 0; d < buckets; ++d) {
      for (int64_t part = 0; part < parts; ++part) {
        uint32_t& c = count[part * kBuckets + d];
        const uint32_t size = c;
        c = running;
        running += size;
      }
      bucket_end[d] = running;
    }
    parallel_for(pool, parts, 1, [&](int64_t b, int64_t e) {
      for (int64_t part = b; part < e; ++part) {
        uint32_t* offset = count.data() + part * kBuckets;
        for (int64_t i = part * part_len, end = std::min(n, i + part_len); i < end; ++i) {
          const Item v = a[i];
          t[offset[(key_of(v) >> shift) & (buckets - 1)]++] = v;
        }
      }
    });
    std::vector<std::pair<uint32_t, uint32_t>> small;
    uint32_t begin = 0;
    for (uint32_t d = 0; d < buckets; ++d) {
      const uint32_t end = bucket_end[d];
      const int64_t size = end - begin;
      if (size * parts * 2 > n && size >= kParallelMin) {
        msd_sort_parallel(t + begin, a + begin, size, shift, pos + begin, key_of, emit, pool);
      } else if (size > 0) {
        small.emplace_back(begin, end);
      }
      begin = end;
    }
    parallel_for(pool, (int64_t)small.size(), 1, [&](int64_t b, int64_t e) {
      for (int64_t j = b; j < e; ++j) {
        const uint32_t s = small[j].first, size = small[j].second - small[j].first;
        msd_sort(t + s, a + s, size, shift, pos + s, key_of, emit);
      }
    });
    return;
  }
}

// Sorts a[0, n) (items already made), emitting the sorted pieces; all threads when n is large.
template <int kKeyBits, class Item, class KeyOf, class Emit>
void sort_items(Item* a, Item* t, int64_t n, const KeyOf& key_of, const Emit& emit, ThreadPool* pool) {
  if (n == 0) return;
  if (n > (int64_t)UINT32_MAX) {
    std::stable_sort(a, a + n, [&](const Item& x, const Item& y) { return key_of(x) < key_of(y); });
    emit(a, 0, n);
    return;
  }
  if (use_all_threads(n, pool)) {
    msd_sort_parallel(a, t, n, kKeyBits, 0, key_of, emit, pool);
  } else {
    msd_sort(a, t, n, kKeyBits, 0, key_of, emit);
  }
}

// ---- value sorts of 32/64-bit types by vectorized quicksort ----------------------------------

// A value sort needs no stability, so 32- and 64-bit values are sorted as signed integers of
// their width by Highway's vqsort. Integers are their own words; a float's bits become a
// signed integer of the same order by flipping the magnitude bits of negatives (an
// involution, so the same map turns words back into values), NaNs first losing their sign
// so that they land above +inf. Unsigned integers flip their top bit.
template <class Tr>
struct SortWords {
  using S = typename Tr::Storage;
  static constexpr bool kEnabled = sizeof(S) >= 4;
  static constexpr bool kUnsignedInt = !Tr::kFloat && std::is_unsigned_v<S>;
  using W = std::conditional_t<sizeof(S) == 8, int64_t, int32_t>;
  using U = std::make_unsigned_t<W>;
  static constexpr U kTopBit = U(U(1) << (8 * sizeof(W) - 1));
  static W word(S v) {
    if constexpr (Tr::kFloat) {
      const U abs = U(v) & Tr::kAbs;
      const U u = abs > Tr::kInfBits ? abs : U(v);
      return W(u ^ (U(W(u) >> (8 * sizeof(W) - 1)) >> 1));
    } else if constexpr (kUnsignedInt) {
      return W(U(v) ^ kTopBit);
    } else {
      return W(v);
    }
  }
  static S value(W w) {
    if constexpr (Tr::kFloat) {
      return S(U(w) ^ (U(w >> (8 * sizeof(W) - 1)) >> 1));
    } else if constexpr (kUnsignedInt) {
      return S(U(w) ^ kTopBit);
    } else {
      return S(w);
    }
  }
};

template <class W>
void vq_sort(W* words, int64_t n) {
  if constexpr (std::is_same<W, hwy::uint128_t>::value) {
    if (!HWY_DYNAMIC_DISPATCH(VqsortEnabledImpl)()) {  // the portable target: its 128-bit vqsort aborts
      std::sort(words, words + n, [](const W& a, const W& b) { return a.hi != b.hi ? a.hi < b.hi : a.lo < b.lo; });
      return;
    }
  }
  thread_local hwy::Sorter sorter;
  sorter(words, (size_t)n, hwy::SortAscending());
}

void vq_sort_words(int64_t* words, int64_t n) { vq_sort(words, n); }

// One thread sorts rows of 64-bit values at least this long by the radix sort: from here on it
// beats vqsort (they are about even at 2^17).
constexpr int64_t kRadixMin = int64_t(1) << 18;

// Sorts the contiguous src[0, n) into out as words (values when to_values) by the radix sort;
// false, out untouched, where that does not apply.
template <class Tr>
bool radix_sorted(const typename Tr::Storage* src, int64_t n, void* out, bool to_values) {
  // (The radix sort reads integers as signed: unsigned ones go to vqsort.)
  if constexpr (sizeof(typename Tr::Storage) == 8 && SortWords<Tr>::kEnabled && !SortWords<Tr>::kUnsignedInt) {
    if (n < kRadixMin || n > (int64_t)UINT32_MAX) return false;
    return HWY_DYNAMIC_DISPATCH(RadixSort64Impl)(reinterpret_cast<const uint64_t*>(src), n,
                                                 static_cast<int64_t*>(out), Tr::kFloat, to_values && Tr::kFloat,
                                                 &vq_sort_words);
  } else {
    (void)src, (void)n, (void)out, (void)to_values;
    return false;
  }
}

// Scratch of n items: the calling thread's grow-only buffer (so that repeated sorts do not
// fault in fresh pages) up to kKeptScratchBytes, else a temporary allocation, so that one huge
// sort does not pin its scratch for the life of the thread.
constexpr size_t kKeptScratchBytes = size_t(64) << 20;

template <class W>
struct Scratch {
  Scratch(int slot, int64_t n) {
    const size_t bytes = (size_t)n * sizeof(W);
    if (bytes <= kKeptScratchBytes) {
      data = reinterpret_cast<W*>(thread_buffer(slot, (bytes + sizeof(float) - 1) / sizeof(float)));
    } else {
      owned.reset(new W[(size_t)n]);
      data = owned.get();
    }
  }
  W* data;
  std::unique_ptr<W[]> owned;
};

// Sorts the items make(0) .. make(n - 1) into out[0, n) on two threads: a pivot (median of a
// sample) splits the items while they are made (each thread counts, then scatters, its half
// of the input), then each thread sorts one side by vqsort and calls finish(begin, end) on it.
// The split is quicksort's first level fused with making the items, so a thread that finds
// no second core free does about the work of a one-thread sort.
template <class Item, class Make, class Less, class Finish>
void split_sort(int64_t n, const Make& make, const Less& less, Item* out, const Finish& finish, ThreadPool* pool) {
  constexpr int64_t kSample = 511;
  Item sample[kSample];
  for (int64_t s = 0; s < kSample; ++s) sample[s] = make((2 * s + 1) * n / (2 * kSample));
  std::nth_element(sample, sample + kSample / 2, sample + kSample, less);
  const Item pivot = sample[kSample / 2];
  const int64_t half = n / 2;
  int64_t low_count[2] = {0, 0};
  auto each_half = [&](auto&& fn) {
    parallel_for(pool, 2, 1, [&](int64_t b, int64_t e) {
      for (int64_t part = b; part < e; ++part) fn(part, part ? half : 0, part ? n : half);
    });
  };
  each_half([&](int64_t part, int64_t begin, int64_t end) {
    int64_t c = 0;
    for (int64_t i = begin; i < end; ++i) c += less(make(i), pivot);
    low_count[part] = c;
  });
  const int64_t lows = low_count[0] + low_count[1];
  each_half([&](int64_t part, int64_t begin, int64_t end) {
    int64_t low = part ? low_count[0] : 0;
    int64_t high = part ? lows + (half - low_count[0]) : lows;
    for (int64_t i = begin; i < end; ++i) {
      const Item item = make(i);
      const bool is_low = less(item, pivot);
      const int64_t mask = -(int64_t)is_low;  // arithmetic select: a branch would mispredict half the time
      out[high ^ ((low ^ high) & mask)] = item;
      low += is_low;
      high += !is_low;
    }
  });
  each_half([&](int64_t part, int64_t, int64_t) {
    const int64_t begin = part ? lows : 0, end = part ? n : lows;
    vq_sort(out + begin, end - begin);
    finish(begin, end);
  });
}

// The words of one row (read at src[i * stride]) sorted into scratch; two threads when the
// row is long.
template <class Tr>
typename SortWords<Tr>::W* sorted_words(const typename Tr::Storage* src, int64_t stride, int64_t n,
                                        Scratch<typename SortWords<Tr>::W>& scratch, ThreadPool* pool) {
  using SW = SortWords<Tr>;
  using W = typename SW::W;
  W* w = scratch.data;
  if (!use_all_threads(n, pool)) {
    if (stride == 1 && radix_sorted<Tr>(src, n, w, false)) return w;
    for (int64_t i = 0; i < n; ++i) w[i] = SW::word(src[i * stride]);
    vq_sort(w, n);
    return w;
  }
  split_sort(n, [&](int64_t i) { return SW::word(src[i * stride]); }, std::less<W>(), w, [](int64_t, int64_t) {},
             pool);
  return w;
}

// Sorted values of one row (read at src[i * stride], written at dst[i * stride]).
template <class Tr>
void vq_sort_row(const typename Tr::Storage* src, int64_t stride, typename Tr::Storage* dst, int64_t n,
                 ThreadPool* pool) {
  using SW = SortWords<Tr>;
  using W = typename SW::W;
  if (stride != 1) {
    Scratch<W> scratch(1, n);
    const W* w = sorted_words<Tr>(src, stride, n, scratch, pool);
    for (int64_t i = 0; i < n; ++i) dst[i * stride] = SW::value(w[i]);
    return;
  }
  // Sorted in dst itself; floats' words turn back into values in place.
  W* w = reinterpret_cast<W*>(dst);
  auto to_values = [&](int64_t begin, int64_t end) {
    if constexpr (Tr::kFloat || SW::kUnsignedInt) {
      for (int64_t i = begin; i < end; ++i) dst[i] = SW::value(w[i]);
    }
  };
  if (!use_all_threads(n, pool)) {
    if (radix_sorted<Tr>(src, n, dst, true)) return;
    for (int64_t i = 0; i < n; ++i) w[i] = SW::word(src[i]);
    vq_sort(w, n);
    to_values(0, n);
    return;
  }
  split_sort(n, [&](int64_t i) { return SW::word(src[i]); }, std::less<W>(), w, to_values, pool);
}

// Argsorts of 32/64-bit types by vqsort too: each item holds the canonical key above the
// position, so items are unique and their order is the stable order (32-bit keys pack into
// one 64-bit word, 64-bit keys make a 128-bit item).
template <class Tr>
struct ArgItems {
  using K = typename Tr::Key;
  static constexpr bool kWide = sizeof(K) == 8;
  using Item = std::conditional_t<kWide, hwy::uint128_t, uint64_t>;
  static Item make(K key, uint64_t index) {
    if constexpr (kWide) {
      Item item;
      item.hi = key;
      item.lo = index;
      return item;
    } else {
      return (uint64_t)key << 32 | index;
    }
  }
  static int64_t index(const Item& item) {
    if constexpr (kWide) {
      return (int64_t)item.lo;
    } else {
      return (int64_t)(item & 0xffffffffu);
    }
  }
  // Order by key alone (for splitting around a pivot).
  static bool less(const Item& x, const Item& y) {
    if constexpr (kWide) {
      return x.hi < y.hi;
    } else {
      return (x >> 32) < (y >> 32);
    }
  }
  static bool usable(int64_t n) { return SortWords<Tr>::kEnabled && (kWide || n <= (int64_t)UINT32_MAX); }
};

// indices (and values, when not null) of one row sorted stably; read and written at `stride`.
template <class Tr>
void vq_argsort_row(const typename Tr::Storage* src, int64_t stride, int64_t n, typename Tr::Storage* values,
                    int64_t* indices, ThreadPool* pool) {
  using AI = ArgItems<Tr>;
  using Item = typename AI::Item;
  Scratch<Item> scratch(1, n);
  Item* items = scratch.data;
  auto make = [&](int64_t i) { return AI::make(Tr::canon(src[i * stride]), (uint64_t)i); };
  auto finish = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t index = AI::index(items[i]);
      indices[i * stride] = index;
      if (values) values[i * stride] = src[index * stride];
    }
  };
  if (!use_all_threads(n, pool)) {
    for (int64_t i = 0; i < n; ++i) items[i] = make(i);
    vq_sort(items, n);
    finish(0, n);
    return;
  }
  // Items with equal keys fall on one side of the pivot, so each side's sort keeps them stable.
  split_sort(n, make, AI::less, items, finish, pool);
}

// ---- sort along an axis -----------------------------------------------------------------

// Sorting one row: the row is read at src[i * stride], results written at the same stride.
template <class Tr>
struct RowSorter {
  using S = typename Tr::Storage;
  using K = typename Tr::Key;
  static constexpr int kKeyBits = 8 * sizeof(K);
  static constexpr bool kPacked = sizeof(K) <= 4;

  int64_t n;
  ThreadPool* pool;  // null: this thread only
  Buffer<K> keys{0}, key_tmp{0};
  Buffer<uint64_t> packed{0}, packed_tmp{0};
  Buffer<KeyIndex> wide{0}, wide_tmp{0};

  RowSorter(int64_t n_, bool want_indices, ThreadPool* pool_) : n(n_), pool(pool_) {
    if (ArgItems<Tr>::usable(n)) return;  // the vqsort paths bring their own scratch
    if (!want_indices) {
      keys = Buffer<K>(n);
      key_tmp = Buffer<K>(n);
    } else if (kPacked && n <= (int64_t)UINT32_MAX) {
      packed = Buffer<uint64_t>(n);
      packed_tmp = Buffer<uint64_t>(n);
    } else {
      wide = Buffer<KeyIndex>(n);
      wide_tmp = Buffer<KeyIndex>(n);
    }
  }

  void sort(const S* src, int64_t stride, S* values, int64_t* indices) {
    if (!indices) {
      if constexpr (SortWords<Tr>::kEnabled) return vq_sort_row<Tr>(src, stride, values, n, pool);
      K* a = keys.get();
      maybe_parallel(n, pool, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) a[i] = Tr::key(src[i * stride]);
      });
      auto emit = [&](const K* piece, int64_t pos, int64_t count) {
        S* dst = values + pos * stride;
        for (int64_t i = 0; i < count; ++i) dst[i * stride] = Tr::value(piece[i]);
      };
      sort_items<kKeyBits>(a, key_tmp.get(), n, PlainKeyOf<K>{}, emit, pool);
      return;
    }
    if constexpr (SortWords<Tr>::kEnabled) {
      if (ArgItems<Tr>::usable(n)) return vq_argsort_row<Tr>(src, stride, n, values, indices, pool);
    }
    auto finish = [&](int64_t i, uint64_t index) {
      indices[i * stride] = (int64_t)index;
      if (values) values[i * stride] = src[index * stride];
    };
    if (packed.get()) {
      uint64_t* a = packed.get();
      maybe_parallel(n, pool, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) a[i] = (uint64_t)Tr::canon(src[i * stride]) << 32 | (uint64_t)i;
      });
      auto emit = [&](const uint64_t* piece, int64_t pos, int64_t count) {
        for (int64_t i = 0; i < count; ++i) finish(pos + i, piece[i] & 0xffffffffu);
      };
      sort_items<kKeyBits>(a, packed_tmp.get(), n, PackedKeyOf{}, emit, pool);
    } else {
      KeyIndex* a = wide.get();
      maybe_parallel(n, pool, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) a[i] = KeyIndex{(uint64_t)Tr::canon(src[i * stride]), (uint64_t)i};
      });
      auto emit = [&](const KeyIndex* piece, int64_t pos, int64_t count) {
        for (int64_t i = 0; i < count; ++i) finish(pos + i, piece[i].index);
      };
      sort_items<kKeyBits>(a, wide_tmp.get(), n, WideKeyOf{}, emit, pool);
    }
  }
};

template <class Tr>
void sort_typed(const void* xv, int64_t outer, int64_t n, int64_t inner, void* values, int64_t* indices,
                ThreadPool* pool) {
  using S = typename Tr::Storage;
  const S* x = static_cast<const S*>(xv);
  S* v = static_cast<S*>(values);
  const int64_t rows = outer * inner;
  if constexpr (SortWords<Tr>::kEnabled) {
    if (!indices) {
      if (rows == 1) return vq_sort_row<Tr>(x, 1, v, n, pool);
      const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(n, 1));
      parallel_for(pool, rows, grain, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const int64_t offset = (r / inner) * n * inner + r % inner;
          vq_sort_row<Tr>(x + offset, inner, v + offset, n, nullptr);
        }
      });
      return;
    }
  }
  if (rows == 1) {
    RowSorter<Tr> sorter(n, indices != nullptr, pool);
    sorter.sort(x, 1, v, indices);
    return;
  }
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(n, 1));
  parallel_for(pool, rows, grain, [&](int64_t begin, int64_t end) {
    RowSorter<Tr> sorter(n, indices != nullptr, nullptr);
    for (int64_t r = begin; r < end; ++r) {
      const int64_t offset = (r / inner) * n * inner + r % inner;
      sorter.sort(x + offset, inner, v ? v + offset : nullptr, indices ? indices + offset : nullptr);
    }
  });
}

// ---- isin ---------------------------------------------------------------------------------

template <class Tr>
void isin_typed(const void* ev, int64_t n, const void* tv, int64_t m, bool invert, int kind, uint8_t* out,
                ThreadPool* pool) {
  using S = typename Tr::Storage;
  using K = typename Tr::Key;
  const S* elements = static_cast<const S*>(ev);
  const S* test = static_cast<const S*>(tv);
  const uint8_t hit = invert ? 0 : 1, miss = invert ? 1 : 0;
  if (m == 0) {
    std::fill(out, out + n, miss);
    return;
  }
  if constexpr (!Tr::kFloat) {
    K lo = Tr::canon(test[0]), hi = lo;
    for (int64_t i = 1; i < m; ++i) {
      const K k = Tr::canon(test[i]);
      lo = std::min(lo, k);
      hi = std::max(hi, k);
    }
    const uint64_t range = (uint64_t)hi - (uint64_t)lo;
    // NumPy's own rule for choosing the table: its size within 6x the inputs' total.
    const bool table = kind == 2 || (kind == 0 && range <= 6 * (uint64_t)(n + m));
    if (table) {
      if (range >= (uint64_t)1 << 32) throw ValueError("isin: the table for kind='table' would be too large");
      std::vector<uint8_t> present((size_t)range + 1, 0);
      for (int64_t i = 0; i < m; ++i) present[(K)(Tr::canon(test[i]) - lo)] = 1;
      parallel_for(pool, n, 1 << 15, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          const K k = Tr::canon(elements[i]);
          const bool found = k >= lo && k <= hi && present[(K)(k - lo)];
          out[i] = found ? hit : miss;
        }
      });
      return;
    }
  }
  // The test values as sorted canonical keys.
  Buffer<S> sorted_values(m);
  RowSorter<Tr>(m, false, pool).sort(test, 1, sorted_values.get(), nullptr);
  Buffer<K> test_keys(m);
  for (int64_t i = 0; i < m; ++i) test_keys.get()[i] = Tr::canon(sorted_values.get()[i]);
  const K* sorted_test = test_keys.get();
  auto lookup = [&](K k) {
    if (is_nan_key<Tr>(k)) return false;
    const K* it = std::lower_bound(sorted_test, sorted_test + m, k);
    return it != sorted_test + m && *it == k;
  };
  if (n * 4 < m || n < 4096) {  // few elements: binary searches
    parallel_for(pool, n, 4096, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) out[i] = lookup(Tr::canon(elements[i])) ? hit : miss;
    });
    return;
  }
  // Many elements: sort them too (with their positions) and walk both sorted sequences.
  RowSorter<Tr> sorter(n, true, pool);
  Buffer<int64_t> perm(n);
  sorter.sort(elements, 1, nullptr, perm.get());
  const int64_t* p = perm.get();
  const int64_t parts = use_all_threads(n, pool) ? pool->num_threads() : 1;
  const int64_t part_len = (n + parts - 1) / parts;
  parallel_for(parts > 1 ? pool : nullptr, parts, 1, [&](int64_t b, int64_t e) {
    for (int64_t part = b; part < e; ++part) {
      const int64_t begin = part * part_len, end = std::min(n, begin + part_len);
      if (begin >= end) continue;
      const K* t = std::lower_bound(sorted_test, sorted_test + m, Tr::canon(elements[p[begin]]));
      const K* t_end = sorted_test + m;
      for (int64_t i = begin; i < end; ++i) {
        const K k = Tr::canon(elements[p[i]]);
        while (t != t_end && *t < k) ++t;
        const bool found = t != t_end && *t == k && !is_nan_key<Tr>(k);
        out[p[i]] = found ? hit : miss;
      }
    }
  });
}

}  // namespace

void sort_along_axis(DType dt, const void* x, int64_t outer, int64_t n, int64_t inner, void* values, int64_t* indices,
                     ThreadPool* pool) {
  if (outer * n * inner == 0) return;
  with_keys(dt, [&](auto tag) {
    using Tr = typename decltype(tag)::type;
    sort_typed<Tr>(x, outer, n, inner, values, indices, pool);
  });
}

void isin(DType dt, const void* elements, int64_t n, const void* test, int64_t m, bool invert, int kind, uint8_t* out,
          ThreadPool* pool) {
  if (n == 0) return;
  with_keys(dt, [&](auto tag) {
    using Tr = typename decltype(tag)::type;
    isin_typed<Tr>(elements, n, test, m, invert, kind, out, pool);
  });
}

}  // namespace cpu
}  // namespace mnnpy
#endif  // HWY_ONCE
