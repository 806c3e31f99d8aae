// Cumulative sums and products, and quantiles by selection.
//
// A scan row is latency bound (each output waits for the previous one), so float rows are
// scanned four elements at a time: the block's own partial sums do not wait on the carry and
// only one combine per block does. Few long rows are split across threads in two passes: each
// chunk's total first, then each chunk scanned from the combined totals before it. Columns
// (inner > 1) combine whole rows, which vectorizes.
//
// Quantiles find the needed order statistics of each row by radix selection on keys ordered
// as the values (see below); the input is never reordered.
#include "backend/cpu/scan.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "mnnpy/thread_pool.h"

namespace mnnpy {
namespace cpu {

namespace {

constexpr int64_t kGrainElements = 1 << 15;

template <class T, int kKind>
inline T combine(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    // Unsigned arithmetic wraps as NumPy's integers do (signed overflow is undefined in C++).
    using U = std::make_unsigned_t<T>;
    return kKind == kScanSum ? (T)((U)a + (U)b) : (T)((U)a * (U)b);
  } else {
    return kKind == kScanSum ? a + b : a * b;
  }
}

template <class T, int kKind>
constexpr T identity() {
  return kKind == kScanSum ? T(0) : T(1);
}

template <class T, int kKind, bool kSkipNan>
inline T load(const T* x, int64_t i) {
  const T v = x[i];
  if constexpr (kSkipNan && std::is_floating_point_v<T>) return v != v ? identity<T, kKind>() : v;
  return v;
}

// Scans x[0..n) into out starting from `carry`; returns the last value.
template <class T, int kKind, bool kSkipNan>
T scan_row(const T* x, T* out, int64_t n, T carry) {
  int64_t i = 0;
  if constexpr (std::is_floating_point_v<T>) {
    for (; i + 4 <= n; i += 4) {
      const T p0 = load<T, kKind, kSkipNan>(x, i);
      const T p1 = combine<T, kKind>(p0, load<T, kKind, kSkipNan>(x, i + 1));
      const T p2 = combine<T, kKind>(p1, load<T, kKind, kSkipNan>(x, i + 2));
      const T p3 = combine<T, kKind>(p2, load<T, kKind, kSkipNan>(x, i + 3));
      out[i] = combine<T, kKind>(carry, p0);
      out[i + 1] = combine<T, kKind>(carry, p1);
      out[i + 2] = combine<T, kKind>(carry, p2);
      carry = out[i + 3] = combine<T, kKind>(carry, p3);
    }
  }
  for (; i < n; ++i) out[i] = carry = combine<T, kKind>(carry, load<T, kKind, kSkipNan>(x, i));
  return carry;
}

template <class T, int kKind, bool kSkipNan>
T total_of(const T* x, int64_t n) {
  T a0 = identity<T, kKind>(), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    a0 = combine<T, kKind>(a0, load<T, kKind, kSkipNan>(x, i));
    a1 = combine<T, kKind>(a1, load<T, kKind, kSkipNan>(x, i + 1));
    a2 = combine<T, kKind>(a2, load<T, kKind, kSkipNan>(x, i + 2));
    a3 = combine<T, kKind>(a3, load<T, kKind, kSkipNan>(x, i + 3));
  }
  for (; i < n; ++i) a0 = combine<T, kKind>(a0, load<T, kKind, kSkipNan>(x, i));
  return combine<T, kKind>(combine<T, kKind>(a0, a1), combine<T, kKind>(a2, a3));
}

template <class T, int kKind, bool kSkipNan>
void cumulative_t(const T* x, int64_t outer, int64_t n, int64_t inner, T* out, ThreadPool* pool) {
  const int threads = pool ? pool->num_threads() : 1;
  if (inner == 1) {
    if (outer < threads && threads > 1 && n >= 4 * kGrainElements) {
      for (int64_t o = 0; o < outer; ++o) {
        const T* row = x + o * n;
        T* dst = out + o * n;
        const int64_t chunks = threads;
        const int64_t step = (n + chunks - 1) / chunks;
        std::vector<T> totals(chunks, identity<T, kKind>());
        // Pass 1: chunk 0 is scanned at once; the others only total their values.
        pool->parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
          for (int64_t c = c0; c < c1; ++c) {
            const int64_t b = std::min(n, c * step), e = std::min(n, b + step);
            if (c == 0) scan_row<T, kKind, kSkipNan>(row, dst, e, identity<T, kKind>());
            else totals[c] = total_of<T, kKind, kSkipNan>(row + b, e - b);
          }
        });
        std::vector<T> carries(chunks);
        carries[0] = identity<T, kKind>();
        carries[1] = dst[std::min(n, step) - 1];
        for (int64_t c = 2; c < chunks; ++c) carries[c] = combine<T, kKind>(carries[c - 1], totals[c - 1]);
        pool->parallel_for(chunks - 1, 1, [&](int64_t c0, int64_t c1) {
          for (int64_t c = c0 + 1; c < c1 + 1; ++c) {
            const int64_t b = std::min(n, c * step), e = std::min(n, b + step);
            scan_row<T, kKind, kSkipNan>(row + b, dst + b, e - b, carries[c]);
          }
        });
      }
      return;
    }
    const int64_t grain = std::max<int64_t>(1, kGrainElements / std::max<int64_t>(1, n));
    parallel_for(pool, outer, grain, [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o) scan_row<T, kKind, kSkipNan>(x + o * n, out + o * n, n, identity<T, kKind>());
    });
    return;
  }
  // Columns: tiles of the inner axis, each scanned down the n rows.
  const int64_t tile = 2048;
  const int64_t tiles = (inner + tile - 1) / tile;
  const int64_t grain = std::max<int64_t>(1, kGrainElements / std::max<int64_t>(1, n * std::min(inner, tile)));
  parallel_for(pool, outer * tiles, grain, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t o = t / tiles, i0 = (t % tiles) * tile, w = std::min(inner, i0 + tile) - i0;
      const T* src = x + o * n * inner + i0;
      T* dst = out + o * n * inner + i0;
      for (int64_t i = 0; i < w; ++i) dst[i] = load<T, kKind, kSkipNan>(src, i);
      for (int64_t j = 1; j < n; ++j) {
        const T* s = src + j * inner;
        const T* prev = dst + (j - 1) * inner;
        T* d = dst + j * inner;
        for (int64_t i = 0; i < w; ++i) d[i] = combine<T, kKind>(prev[i], load<T, kKind, kSkipNan>(s, i));
      }
    }
  });
}

template <class T>
void cumulative_dispatch(int kind, const void* x, int64_t outer, int64_t n, int64_t inner, bool skip_nan, void* out,
                         ThreadPool* pool) {
  const T* xt = (const T*)x;
  T* ot = (T*)out;
  if (kind == kScanSum) {
    if (skip_nan) cumulative_t<T, kScanSum, true>(xt, outer, n, inner, ot, pool);
    else cumulative_t<T, kScanSum, false>(xt, outer, n, inner, ot, pool);
  } else {
    if (skip_nan) cumulative_t<T, kScanProd, true>(xt, outer, n, inner, ot, pool);
    else cumulative_t<T, kScanProd, false>(xt, outer, n, inner, ot, pool);
  }
}

// ---------------------------------------------------------------- quantiles

// NumPy's interpolation between neighbours a <= b: exact at both ends.
inline double lerp(double a, double b, double t) {
  const double diff = b - a;
  return t >= 0.5 ? b - diff * (1 - t) : a + diff * t;
}

struct Position {
  int64_t lo, hi;  // order statistics needed (hi == lo: one)
  double gamma;    // weight of hi
};

Position position_of(double q, int64_t m, const QuantileOptions& opt) {
  const double last = (double)(m - 1);
  double index;
  switch (opt.method) {
    case kQuantileLower: { const int64_t i = (int64_t)std::floor(last * q); return {i, i, 0}; }
    case kQuantileHigher: { const int64_t i = (int64_t)std::ceil(last * q); return {i, i, 0}; }
    case kQuantileNearest: { const int64_t i = (int64_t)std::nearbyint(last * q); return {i, i, 0}; }
    case kQuantileMidpoint: index = 0.5 * (std::floor(last * q) + std::ceil(last * q)); break;
    case kQuantileMedian: return {(m - 1) / 2, m / 2, 0.5};
    default:
      index = opt.alpha == 1 && opt.beta == 1 ? last * q : (double)m * q + (opt.alpha + q * (1 - opt.alpha - opt.beta)) - 1;
  }
  if (!(index >= 0)) return {0, 0, 0};
  if (index >= last) return {m - 1, m - 1, 0};
  const double lo = std::floor(index);
  return {(int64_t)lo, (int64_t)lo + 1, index - lo};
}

// ------------------------------------------------ radix selection of order statistics
//
// The values become unsigned keys whose order is the floats' order, and each needed rank is
// found digit by digit: histogram a digit, keep the bucket(s) holding the ranks, go on with a
// finer digit of what is left. A pass is a linear, branch-light scan (nth_element's
// partitioning mispredicts about every other element), and the first pass histograms the input
// in place, so only the bucket holding the answer is ever copied (usually a tiny part of the
// row). A lone long row splits its first passes across threads.

template <class T> struct KeyOf;
template <> struct KeyOf<float> { using type = uint32_t; };
template <> struct KeyOf<double> { using type = uint64_t; };

template <class U> constexpr int kKeyBits = (int)sizeof(U) * 8;
template <class U> constexpr U kTopBit = (U)1 << (kKeyBits<U> - 1);

// Negative floats get all bits flipped, the others only the sign bit: unsigned order is then
// numeric order (-0 just below +0; NaNs beyond the infinities). Written without an arithmetic
// shift so that it vectorizes on SSE2.
template <class U>
inline U to_key(U bits) {
  return bits ^ (((U)0 - (bits >> (kKeyBits<U> - 1))) | kTopBit<U>);
}
template <class U>
inline U from_key(U key) {
  return key ^ (((key >> (kKeyBits<U> - 1)) - 1) | kTopBit<U>);
}
template <class U>
inline U load_bits(const void* p) {
  U b;
  std::memcpy(&b, p, sizeof(U));
  return b;
}
// The key of v rounded to float32.
inline uint32_t key32(float v) { return to_key<uint32_t>(load_bits<uint32_t>(&v)); }
template <class U>
inline bool nan_bits(U bits) {
  constexpr U kInf = sizeof(U) == 4 ? (U)0x7f800000u : (U)0x7ff0000000000000ull;
  return (bits & ~kTopBit<U>) > kInf;
}

constexpr int64_t kSortSelect = 16;        // this few keys: insertion sort (beats nth_element and histograms)
constexpr int64_t kParallelRow = 1 << 18;  // a lone row this long splits its first pass across threads
constexpr size_t kMaxGatherPasses = 4;     // more buckets at once: one scatter pass instead
constexpr uint64_t kMaxSplitHist = 1 << 12;

// Digit width by the number of keys: the histogram should cost little next to the pass over
// the keys (8 bits stay in L1 for short rows; 16 bits cut a long row to a few keys at once).
inline int digit_width(int64_t m) { return m >= (1 << 20) ? 16 : m >= 512 ? 11 : 8; }

struct Bucket {
  uint64_t digit;
  int64_t start, count;  // its keys' ranks: [start, start + count)
  int first, num;        // the needed ranks in it: rk[first, first + num)
};

// The buckets of histogram h (nb digits) that hold the ascending ranks rk[0..nr).
inline void find_buckets(const uint32_t* h, uint64_t nb, const int64_t* rk, int nr, std::vector<Bucket>& out) {
  out.clear();
  int64_t s = 0;
  int r = 0;
  uint64_t d = 0;
  while (d < nb && r < nr) {
    // Groups of 16 buckets below the next rank are passed at once (wide histograms).
    while (d + 16 <= nb) {
      uint32_t g = 0;
      for (int k = 0; k < 16; ++k) g += h[d + k];
      if (s + g > rk[r]) break;
      s += g;
      d += 16;
    }
    const int64_t c = h[d];
    if (rk[r] < s + c) {
      Bucket b{d, s, c, r, 0};
      while (r < nr && rk[r] < s + c) ++r, ++b.num;
      out.push_back(b);
    }
    s += c;
    ++d;
  }
}

// Adds the counts of digit_at(i) over [lo, hi) to h (nb entries).
template <class DigitAt>
void count_digits(const DigitAt& digit_at, int64_t lo, int64_t hi, uint64_t nb, uint32_t* h) {
  int64_t i = lo;
  if (nb <= kMaxSplitHist && hi - lo >= (int64_t)(8 * nb)) {
    // Four interleaved counts: data cluster in few buckets, and a run of increments of one
    // count would each wait for the previous one's store.
    uint32_t sub[3][kMaxSplitHist];
    for (int k = 0; k < 3; ++k) std::fill(sub[k], sub[k] + nb, 0u);
    for (; i + 4 <= hi; i += 4) {
      ++h[digit_at(i)];
      ++sub[0][digit_at(i + 1)];
      ++sub[1][digit_at(i + 2)];
      ++sub[2][digit_at(i + 3)];
    }
    for (uint64_t d = 0; d < nb; ++d) h[d] += sub[0][d] + sub[1][d] + sub[2][d];
  }
  for (; i < hi; ++i) ++h[digit_at(i)];
}

// Copies key_at(i) for the i in [lo, hi) where is_in(i) (a vectorizable test) to dst. Blocks
// with none are skipped after the test alone: away from the answer most blocks have none. The
// others are compacted through a local buffer, so dst gets no write past what it is given (dst
// may be the keys' own array, from its start: writes never pass reads).
template <class U, class KeyAt, class IsIn>
void gather(const KeyAt& key_at, const IsIn& is_in, int64_t lo, int64_t hi, U* dst) {
  constexpr int kBlock = 64;
  U block[kBlock];
  uint32_t hit[kBlock];
  int64_t j = 0, i = lo;
  for (; i + kBlock <= hi; i += kBlock) {
    uint32_t any = 0;
    for (int k = 0; k < kBlock; ++k) any |= hit[k] = is_in(i + k);
    if (!any) continue;
    int c = 0;
    for (int k = 0; k < kBlock; ++k) {
      block[c] = key_at(i + k);
      c += hit[k];
    }
    std::memcpy(dst + j, block, c * sizeof(U));
    j += c;
  }
  for (; i < hi; ++i)
    if (is_in(i)) dst[j++] = key_at(i);
}

// For more buckets than kMaxGatherPasses, gather_buckets scatters by slot[digit]: 1 + the
// bucket's index, 0 for the others.
inline void set_slots(const std::vector<Bucket>& bk, uint32_t* slot, uint64_t nb) {
  if (bk.size() <= kMaxGatherPasses) return;
  std::fill(slot, slot + nb, 0u);
  for (size_t g = 0; g < bk.size(); ++g) slot[bk[g].digit] = (uint32_t)g + 1;
}

// Copies the keys of each bucket bk[g] among [lo, hi) to dst[g] onwards.
template <class U, class KeyAt, class DigitAt>
void gather_buckets(const KeyAt& key_at, const DigitAt& digit_at, int64_t lo, int64_t hi, const std::vector<Bucket>& bk,
                    U* const* dst, const uint32_t* slot) {
  if (bk.size() <= kMaxGatherPasses) {
    for (size_t g = 0; g < bk.size(); ++g) {
      const auto digit = (decltype(digit_at(0)))bk[g].digit;
      gather<U>(key_at, [&](int64_t i) { return digit_at(i) == digit; }, lo, hi, dst[g]);
    }
    return;
  }
  std::vector<U*> cur(bk.size() + 1);
  for (size_t g = 0; g < bk.size(); ++g) cur[g + 1] = dst[g];
  for (int64_t i = lo; i < hi; ++i) {
    const uint32_t s = slot[digit_at(i)];
    if (s) *cur[s]++ = key_at(i);
  }
}

template <class U>
struct SelectWork {
  std::vector<uint32_t> hist;
  std::vector<std::vector<Bucket>> buckets;  // per depth
  std::vector<U*> dst;
  std::vector<Bucket>& at(size_t depth) {
    if (buckets.size() <= depth) buckets.resize(depth + 1);
    return buckets[depth];
  }
};

// res[r] = the key of rank rk[r] among a[0..m) for the ascending distinct ranks rk[0..nr)
// (rk is used up). a is reordered; tmp (as long) is scratch. Each level's digits split the
// keys' own range [min, max], so no level is spent on bits they all share (close values, a
// bucket of the first pass, which for float64 is not a key prefix) and equal keys end it.
template <class U>
void select_keys(U* a, U* tmp, int64_t m, int64_t* rk, int nr, U* res, SelectWork<U>& w, size_t depth) {
  for (;; ++depth) {
    if (nr == 1 && (rk[0] == 0 || rk[0] == m - 1)) {  // an end: one min or max pass
      res[0] = rk[0] == 0 ? *std::min_element(a, a + m) : *std::max_element(a, a + m);
      return;
    }
    if (m <= kSortSelect) {
      // Insertion sort: no partitioning steps for a handful of keys.
      for (int64_t i = 1; i < m; ++i) {
        const U v = a[i];
        int64_t j = i;
        for (; j > 0 && a[j - 1] > v; --j) a[j] = a[j - 1];
        a[j] = v;
      }
      for (int r = 0; r < nr; ++r) res[r] = a[rk[r]];
      return;
    }
    if (m > (int64_t)UINT32_MAX) {  // beyond the histograms' counts
      int64_t from = 0;
      for (int r = 0; r < nr; ++r) {
        std::nth_element(a + from, a + rk[r], a + m);
        res[r] = a[rk[r]];
        from = rk[r] + 1;
      }
      return;
    }
    U lo = a[0], hi = a[0];
    for (int64_t i = 1; i < m; ++i) lo = std::min(lo, a[i]), hi = std::max(hi, a[i]);
    const U span = hi - lo;
    if (span == 0) {
      for (int r = 0; r < nr; ++r) res[r] = lo;
      return;
    }
    int bits = 0;
    for (U v = span; v; v >>= 1) ++bits;
    const int shift = std::max(0, bits - digit_width(m));
    const uint64_t nb = (uint64_t)(span >> shift) + 1;
    uint32_t* h = w.hist.data();
    std::fill(h, h + nb, 0u);
    auto key_at = [a](int64_t i) { return a[i]; };
    auto digit_at = [a, lo, shift](int64_t i) { return (a[i] - lo) >> shift; };
    count_digits(digit_at, 0, m, nb, h);
    std::vector<Bucket>& bk = w.at(depth);
    find_buckets(h, nb, rk, nr, bk);
    if (bk.size() == 1) {  // never all m: min and max differ in their digit
      const Bucket b = bk[0];
      const U digit = (U)b.digit;
      gather<U>(key_at, [&](int64_t i) { return digit_at(i) == digit; }, 0, m, a);
      m = b.count;
      for (int r = 0; r < nr; ++r) rk[r] -= b.start;
      continue;
    }
    // Ranks in several buckets: each bucket to its place in tmp, then each on its own.
    w.dst.resize(bk.size());
    for (size_t g = 0; g < bk.size(); ++g) w.dst[g] = tmp + bk[g].start;
    set_slots(bk, h, nb);
    gather_buckets<U>(key_at, digit_at, 0, m, bk, w.dst.data(), h);
    for (const Bucket& b : bk) {
      for (int r = b.first; r < b.first + b.num; ++r) rk[r] -= b.start;
      select_keys<U>(tmp + b.start, a + b.start, b.count, rk + b.first, b.num, res + b.first, w, depth + 1);
    }
    return;
  }
}

// One row's order statistics, with buffers kept across rows.
template <class T>
class RowSelector {
 public:
  using U = typename KeyOf<T>::type;

  // parts > 1: the first pass over a contiguous row is split across `pool`.
  RowSelector(int64_t n, int parts, ThreadPool* pool)
      : n_(n), parts_(parts), pool_(pool), width0_(digit_width(n)),
        // Left uninitialized: only the pages that a bucket is gathered into get touched.
        a_(new U[n]), tmp_(new U[n]) {
    work_.hist.assign((size_t)(parts > 1 ? parts + 1 : 1) << width0_, 0u);
  }

  // Takes a row (n values `stride` apart) and returns how many values take part: n, the
  // non-NaN count with skip_nan, or 0 when the result is NaN.
  int64_t load(const T* src, int64_t stride, bool skip_nan) {
    src_ = src;
    skip_nan_ = skip_nan;
    from_source_ = false;
    nan_below_ = 0;
    if (stride == 1 && n_ > kSortSelect && n_ <= (int64_t)UINT32_MAX) {
      first_histogram();
      // NaNs and infinities sort into the end buckets. With those empty all values are finite.
      bool ends = false;
      with_first_digit([&](const auto&, const auto& digit_of) {
        const T inf = std::numeric_limits<T>::infinity();
        end_lo_ = digit_of(-inf);
        end_hi_ = digit_of(inf);
        const uint32_t* h = total();
        for (uint64_t d = 0; d <= end_lo_; ++d) ends |= h[d] != 0;
        for (uint64_t d = end_hi_; d < ((uint64_t)1 << width0_); ++d) ends |= h[d] != 0;
      });
      from_source_ = true;
      if (!ends) return m_ = n_;
      // Count the NaNs: negative ones have the lowest keys, the others the highest. The ranks
      // among the rest then shift by the low ones, and as long as no needed rank lies in an end
      // bucket the NaNs are never gathered.
      int64_t low = 0, high = 0;
      for (int64_t j = 0; j < n_; ++j) {
        const U b = load_bits<U>(src + j);
        const bool nan = nan_bits(b), neg = (b >> (kKeyBits<U> - 1)) != 0;
        low += nan & neg;
        high += nan & !neg;
      }
      if (!skip_nan && low + high) return m_ = 0;
      nan_below_ = low;
      return m_ = n_ - low - high;
    }
    return m_ = copy_keys(stride);
  }

  // res[r] = the value of rank ranks[r] (ascending, distinct, below what load returned).
  void select(const int64_t* ranks, int nr, T* res) {
    rk_.assign(ranks, ranks + nr);
    keys_.resize(nr);
    if (!from_source_ || !select_from_source(nr)) {
      if (from_source_) {  // a needed rank among infinities (and maybe NaNs): the exact way
        copy_keys(1);
        rk_.assign(ranks, ranks + nr);
      }
      select_keys<U>(a_.get(), tmp_.get(), m_, rk_.data(), nr, keys_.data(), work_, 1);
    }
    for (int r = 0; r < nr; ++r) {
      const U b = from_key(keys_[r]);
      std::memcpy(&res[r], &b, sizeof(T));
    }
  }

 private:
  int64_t chunk_begin(int t) const { return n_ * t / parts_; }
  uint32_t* part_hist(int t) { return work_.hist.data() + ((size_t)t << width0_); }
  uint32_t* total() { return work_.hist.data() + (parts_ > 1 ? ((size_t)parts_ << width0_) : 0); }

  template <class F>
  void for_parts(const F& f) {
    if (parts_ == 1) f(0);
    else parallel_for(pool_, parts_, 1, [&](int64_t t0, int64_t t1) { for (int64_t t = t0; t < t1; ++t) f((int)t); });
  }

  // Calls f(digit_at, digit_of) with the first digit of src_[i] and of a value v: the top bits
  // of the key. Below 16 bits a float64 takes its value's key as a float32: rounding keeps the
  // order, so buckets are still ranges of values, and the float32 exponent's 8 bits cover the
  // usual range better than the top of the 11-bit one (the later levels split the keys' actual
  // range, so they need no common prefix). Either digit lies in 32 bits, which vectorize.
  template <class F>
  void with_first_digit(const F& f) const {
    const T* src = src_;
    const int shift = 32 - width0_;
    if (sizeof(T) == 8 && width0_ < 16) {
      auto digit_of = [shift](T v) { return key32((float)v) >> shift; };
      f([src, digit_of](int64_t i) { return digit_of(src[i]); }, digit_of);
    } else {
      auto digit_of = [shift](T v) { return to_key<uint32_t>((uint32_t)(load_bits<U>(&v) >> (kKeyBits<U> - 32))) >> shift; };
      f([src, digit_of](int64_t i) { return digit_of(src[i]); }, digit_of);
    }
  }

  // Histogram of the first digit (per part, then summed).
  void first_histogram() {
    const size_t nb = (size_t)1 << width0_;
    with_first_digit([&](const auto& digit_at, const auto&) {
      for_parts([&](int t) {
        uint32_t* h = part_hist(t);
        std::fill(h, h + nb, 0u);
        count_digits(digit_at, chunk_begin(t), chunk_begin(t + 1), nb, h);
      });
    });
    if (parts_ > 1) {
      uint32_t* sum = total();
      std::copy(part_hist(0), part_hist(0) + nb, sum);
      for (int t = 1; t < parts_; ++t) {
        const uint32_t* h = part_hist(t);
        for (size_t d = 0; d < nb; ++d) sum[d] += h[d];
      }
    }
  }

  // The keys of the row into a_, without its NaNs with skip_nan; returns their count, or 0
  // when a NaN makes the result NaN.
  int64_t copy_keys(int64_t stride) {
    U* a = a_.get();
    const T* src = src_;
    int64_t m = 0;
    if (skip_nan_) {
      for (int64_t j = 0; j < n_; ++j) {
        const U b = load_bits<U>(src + j * stride);
        a[m] = to_key(b);
        m += !nan_bits(b);
      }
      return m;
    }
    bool nan = false;
    for (int64_t j = 0; j < n_; ++j) {
      const U b = load_bits<U>(src + j * stride);
      a[j] = to_key(b);
      nan |= nan_bits(b);
    }
    return nan ? 0 : n_;
  }

  // After the first histogram: the needed buckets' keys are gathered from the source into
  // a_ (each part's after the earlier parts'), then each goes on on its own. False (nothing
  // done) when a needed rank lies in an end bucket next to NaNs.
  bool select_from_source(int nr) {
    const uint64_t nb = (uint64_t)1 << width0_;
    std::vector<Bucket>& bk = work_.at(0);
    for (int r = 0; r < nr; ++r) rk_[r] += nan_below_;
    find_buckets(total(), nb, rk_.data(), nr, bk);
    if (nan_below_ || m_ != n_) {
      for (const Bucket& b : bk)
        if (b.digit <= end_lo_ || b.digit >= end_hi_) return false;
    }
    const T* src = src_;
    auto key_at = [src](int64_t i) { return to_key(load_bits<U>(src + i)); };
    U* a = a_.get();
    const size_t groups = bk.size();
    // dst[t * groups + g]: where part t puts bucket g.
    std::vector<U*> dst((size_t)parts_ * groups);
    for (size_t g = 0; g < groups; ++g) {
      U* p = a + bk[g].start;
      for (int t = 0; t < parts_; ++t) {
        dst[t * groups + g] = p;
        p += parts_ > 1 ? part_hist(t)[bk[g].digit] : bk[g].count;
      }
    }
    // Scatter slots replace the summed histogram (no longer needed).
    set_slots(bk, total(), nb);
    with_first_digit([&](const auto& digit_at, const auto&) {
      for_parts([&](int t) {
        gather_buckets<U>(key_at, digit_at, chunk_begin(t), chunk_begin(t + 1), bk, dst.data() + t * groups, total());
      });
    });
    for (const Bucket& b : bk) {
      for (int r = b.first; r < b.first + b.num; ++r) rk_[r] -= b.start;
      select_keys<U>(a + b.start, tmp_.get() + b.start, b.count, rk_.data() + b.first, b.num, keys_.data() + b.first,
                     work_, 1);
    }
    return true;
  }

  int64_t n_;
  int parts_;
  ThreadPool* pool_;
  int width0_;
  std::unique_ptr<U[]> a_, tmp_;
  SelectWork<U> work_;
  const T* src_ = nullptr;
  bool skip_nan_ = false;
  bool from_source_ = false;   // the first histogram is of the source, and its buckets are next
  uint64_t end_lo_ = 0, end_hi_ = 0;  // first digits of -inf and inf
  int64_t nan_below_ = 0;      // NaNs whose keys are below all others
  int64_t m_ = 0;
  std::vector<int64_t> rk_;
  std::vector<U> keys_;
};

template <class T>
void quantile_rows(const T* x, int64_t n, int64_t inner, int64_t rows, const double* q, int64_t nq,
                   const QuantileOptions& opt, T* out, int64_t r0, int64_t r1, int parts, ThreadPool* pool) {
  RowSelector<T> sel(n, parts, pool);
  std::vector<Position> pos(nq);
  std::vector<int64_t> needed;
  needed.reserve(2 * nq);
  std::vector<T> vals;
  const T nan = std::numeric_limits<T>::quiet_NaN();
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t o = r / inner, i = r % inner;
    const int64_t m = sel.load(x + o * n * inner + i, inner, opt.skip_nan);
    if (m == 0) {
      for (int64_t k = 0; k < nq; ++k) out[k * rows + r] = nan;
      continue;
    }
    needed.clear();
    for (int64_t k = 0; k < nq; ++k) {
      pos[k] = position_of(q[k], m, opt);
      needed.push_back(pos[k].lo);
      needed.push_back(pos[k].hi);
    }
    std::sort(needed.begin(), needed.end());
    needed.erase(std::unique(needed.begin(), needed.end()), needed.end());
    vals.resize(needed.size());
    sel.select(needed.data(), (int)needed.size(), vals.data());
    auto value = [&](int64_t p) { return vals[std::lower_bound(needed.begin(), needed.end(), p) - needed.begin()]; };
    for (int64_t k = 0; k < nq; ++k) {
      const T a = value(pos[k].lo), b = value(pos[k].hi);
      T v;
      if (opt.method == kQuantileMedian) v = pos[k].lo == pos[k].hi ? a : (T)(a + b) / T(2);
      else v = pos[k].lo == pos[k].hi ? a : (T)lerp((double)a, (double)b, pos[k].gamma);
      out[k * rows + r] = v;
    }
  }
}

}  // namespace

void cumulative(int kind, DType dt, const void* x, int64_t outer, int64_t n, int64_t inner, bool skip_nan, void* out,
                ThreadPool* pool) {
  if (outer * n * inner == 0) return;
  switch (dt) {
    case DType::Int64: cumulative_dispatch<int64_t>(kind, x, outer, n, inner, false, out, pool); break;
    case DType::UInt64: cumulative_dispatch<uint64_t>(kind, x, outer, n, inner, false, out, pool); break;
    case DType::Float32: cumulative_dispatch<float>(kind, x, outer, n, inner, skip_nan, out, pool); break;
    case DType::Float64: cumulative_dispatch<double>(kind, x, outer, n, inner, skip_nan, out, pool); break;
    default: break;
  }
}

void quantiles(DType dt, const void* x, int64_t outer, int64_t n, int64_t inner, const double* q, int64_t nq,
               const QuantileOptions& options, void* out, ThreadPool* pool) {
  const int64_t rows = outer * inner;
  if (rows == 0 || nq == 0) return;
  auto run = [&](int64_t r0, int64_t r1, int parts) {
    if (dt == DType::Float32) {
      quantile_rows<float>((const float*)x, n, inner, rows, q, nq, options, (float*)out, r0, r1, parts, pool);
    } else {
      quantile_rows<double>((const double*)x, n, inner, rows, q, nq, options, (double*)out, r0, r1, parts, pool);
    }
  };
  const int threads = pool ? pool->num_threads() : 1;
  if (threads > 1 && rows < threads && inner == 1 && n >= kParallelRow) {
    // Too few rows to go around: each row's first pass is split instead.
    run(0, rows, threads);
    return;
  }
  const int64_t grain = std::max<int64_t>(1, kGrainElements / std::max<int64_t>(1, n));
  parallel_for(pool, rows, grain, [&](int64_t r0, int64_t r1) { run(r0, r1, 1); });
}

}  // namespace cpu
}  // namespace mnnpy
