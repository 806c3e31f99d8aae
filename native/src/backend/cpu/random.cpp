// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011). The
// 128-bit counter is (block index: 64 bits, stream: 64 bits) and the key is the seed, so
// block i of a stream is a pure function of (seed, stream, i).
#include "backend/cpu/random.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "mnnpy/thread_pool.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace mnnpy {
namespace cpu {

namespace {

struct Block {
  uint32_t v[4];
};

inline Block philox(uint64_t index, uint64_t stream, uint64_t seed) {
  uint32_t c0 = (uint32_t)index, c1 = (uint32_t)(index >> 32), c2 = (uint32_t)stream, c3 = (uint32_t)(stream >> 32);
  uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
    const uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
    c0 = n0;
    c1 = (uint32_t)p1;
    c2 = n2;
    c3 = (uint32_t)p0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return Block{{c0, c1, c2, c3}};
}

// kLanes consecutive blocks at once, one block per 32-bit SIMD lane (SSE2 is part of every
// x86-64 target; elsewhere a lane loop).
constexpr int kLanes = 8;
#if defined(__SSE2__)
// (hi, lo) halves of the 32 x 32 -> 64-bit products of four lanes with a constant.
inline void mul_hi_lo(__m128i x, __m128i m, __m128i* hi, __m128i* lo) {
  const __m128i even = _mm_mul_epu32(x, m);
  const __m128i odd = _mm_mul_epu32(_mm_srli_epi64(x, 32), m);
  const __m128i low_mask = _mm_set_epi32(0, -1, 0, -1);
  *lo = _mm_or_si128(_mm_and_si128(even, low_mask), _mm_slli_epi64(odd, 32));
  *hi = _mm_or_si128(_mm_srli_epi64(even, 32), _mm_andnot_si128(low_mask, odd));
}

inline void philox_lanes(uint64_t first, uint64_t stream, uint64_t seed, uint32_t out[4][kLanes]) {
  const __m128i m0 = _mm_set1_epi32((int)0xD2511F53u), m1 = _mm_set1_epi32((int)0xCD9E8D57u);
  for (int g = 0; g < kLanes; g += 4) {
    alignas(16) uint32_t lo[4], hi[4];
    for (int j = 0; j < 4; ++j) {
      const uint64_t index = first + (uint64_t)(g + j);
      lo[j] = (uint32_t)index;
      hi[j] = (uint32_t)(index >> 32);
    }
    __m128i c0 = _mm_load_si128((const __m128i*)lo), c1 = _mm_load_si128((const __m128i*)hi);
    __m128i c2 = _mm_set1_epi32((int)(uint32_t)stream), c3 = _mm_set1_epi32((int)(uint32_t)(stream >> 32));
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int round = 0; round < 10; ++round) {
      __m128i hi0, lo0, hi1, lo1;
      mul_hi_lo(c0, m0, &hi0, &lo0);
      mul_hi_lo(c2, m1, &hi1, &lo1);
      c0 = _mm_xor_si128(_mm_xor_si128(hi1, c1), _mm_set1_epi32((int)k0));
      c2 = _mm_xor_si128(_mm_xor_si128(hi0, c3), _mm_set1_epi32((int)k1));
      c1 = lo1;
      c3 = lo0;
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    _mm_storeu_si128((__m128i*)&out[0][g], c0);
    _mm_storeu_si128((__m128i*)&out[1][g], c1);
    _mm_storeu_si128((__m128i*)&out[2][g], c2);
    _mm_storeu_si128((__m128i*)&out[3][g], c3);
  }
}
#else
inline void philox_lanes(uint64_t first, uint64_t stream, uint64_t seed, uint32_t out[4][kLanes]) {
  for (int j = 0; j < kLanes; ++j) {
    const Block r = philox(first + (uint64_t)j, stream, seed);
    for (int w = 0; w < 4; ++w) out[w][j] = r.v[w];
  }
}
#endif

inline uint64_t join(uint32_t lo, uint32_t hi) { return (uint64_t)hi << 32 | lo; }
// [0, 1) with 53 random bits, and (0, 1] for logarithms.
inline double unit_closed_open(uint64_t x) { return (double)(x >> 11) * 0x1.0p-53; }
inline double unit_open_closed(uint64_t x) { return ((double)(x >> 11) + 1.0) * 0x1.0p-53; }
inline float unit_float(uint32_t x) { return (float)(x >> 8) * 0x1.0p-24f; }

// An integer in [0, span) from 64 random bits by a 128-bit multiply (bias below span / 2^64).
inline uint64_t bounded(uint64_t x, uint64_t span) {
  if (span == 0) return x;
  return (uint64_t)(((unsigned __int128)x * span) >> 64);
}

template <class T>
inline void store_int(void* out, int64_t i, int64_t value) {
  static_cast<T*>(out)[i] = (T)value;
}

void store_integer(DType dt, void* out, int64_t i, int64_t value) {
  switch (dt) {
    case DType::Bool: static_cast<bool*>(out)[i] = value != 0; break;
    case DType::Int8: store_int<int8_t>(out, i, value); break;
    case DType::UInt8: store_int<uint8_t>(out, i, value); break;
    case DType::Int16: store_int<int16_t>(out, i, value); break;
    case DType::Int32: store_int<int32_t>(out, i, value); break;
    case DType::UInt16: store_int<uint16_t>(out, i, value); break;
    case DType::UInt32: store_int<uint32_t>(out, i, value); break;
    default: store_int<int64_t>(out, i, value); break;  // int64 and uint64: the same bits
  }
}

// Values per Philox block for each distribution and dtype.
int per_block(RandomDist dist, DType dt) {
  if (dist == RandomDist::Integers) return 2;
  return dt == DType::Float32 ? 4 : 2;
}

template <class T>
void fill_float_blocks(RandomDist dist, int64_t n, uint64_t seed, uint64_t stream, double a, double b, T* out,
                       int64_t block_begin, int64_t block_end) {
  constexpr bool kSingle = sizeof(T) == 4;
  constexpr int kPer = kSingle ? 4 : 2;
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  if (dist == RandomDist::Uniform) {
    // Whole groups of kLanes blocks through the vectorized rounds; the tail below.
    uint32_t r[4][kLanes];
    for (; block_begin + kLanes <= block_end && (block_begin + kLanes) * kPer <= n; block_begin += kLanes) {
      philox_lanes((uint64_t)block_begin, stream, seed, r);
      T* o = out + block_begin * kPer;
      for (int j = 0; j < kLanes; ++j) {
        if constexpr (kSingle) {
          for (int w = 0; w < 4; ++w) o[j * 4 + w] = (T)(a + b * (double)unit_float(r[w][j]));
        } else {
          o[j * 2] = (T)(a + b * unit_closed_open(join(r[0][j], r[1][j])));
          o[j * 2 + 1] = (T)(a + b * unit_closed_open(join(r[2][j], r[3][j])));
        }
      }
    }
  }
  for (int64_t blk = block_begin; blk < block_end; ++blk) {
    const Block r = philox((uint64_t)blk, stream, seed);
    double vals[kPer];
    if (dist == RandomDist::Uniform) {
      if constexpr (kSingle) {
        for (int j = 0; j < 4; ++j) vals[j] = unit_float(r.v[j]);
      } else {
        vals[0] = unit_closed_open(join(r.v[0], r.v[1]));
        vals[1] = unit_closed_open(join(r.v[2], r.v[3]));
      }
    } else if (dist == RandomDist::Normal) {
      // Box-Muller: each pair of uniforms gives two independent normals.
      for (int p = 0; p < kPer / 2; ++p) {
        double u1, u2;
        if constexpr (kSingle) {
          u1 = ((double)r.v[2 * p] + 1.0) * 0x1.0p-32;
          u2 = (double)r.v[2 * p + 1] * 0x1.0p-32;
        } else {
          u1 = unit_open_closed(join(r.v[0], r.v[1]));
          u2 = unit_closed_open(join(r.v[2], r.v[3]));
        }
        const double radius = std::sqrt(-2.0 * std::log(u1));
        const double angle = kTwoPi * u2;
        vals[2 * p] = radius * std::cos(angle);
        vals[2 * p + 1] = radius * std::sin(angle);
      }
    } else {  // Exponential
      if constexpr (kSingle) {
        for (int j = 0; j < 4; ++j) vals[j] = -std::log(((double)r.v[j] + 1.0) * 0x1.0p-32);
      } else {
        vals[0] = -std::log(unit_open_closed(join(r.v[0], r.v[1])));
        vals[1] = -std::log(unit_open_closed(join(r.v[2], r.v[3])));
      }
    }
    const int64_t base = blk * kPer;
    const int count = (int)std::min<int64_t>(kPer, n - base);
    for (int j = 0; j < count; ++j) {
      const double v = dist == RandomDist::Exponential ? b * vals[j] : a + b * vals[j];
      out[base + j] = (T)v;
    }
  }
}

}  // namespace

void random_fill(RandomDist dist, DType dt, int64_t n, uint64_t seed, uint64_t stream, double a, double b,
                 int64_t low, uint64_t span, void* out, ThreadPool* pool) {
  if (n <= 0) return;
  const int per = per_block(dist, dt);
  const int64_t blocks = (n + per - 1) / per;
  parallel_for(pool, blocks, 2048, [&](int64_t begin, int64_t end) {
    if (dist == RandomDist::Integers) {
      for (int64_t blk = begin; blk < end; ++blk) {
        const Block r = philox((uint64_t)blk, stream, seed);
        const int64_t base = blk * 2;
        store_integer(dt, out, base, (int64_t)((uint64_t)low + bounded(join(r.v[0], r.v[1]), span)));
        if (base + 1 < n) store_integer(dt, out, base + 1, (int64_t)((uint64_t)low + bounded(join(r.v[2], r.v[3]), span)));
      }
    } else if (dt == DType::Float32) {
      fill_float_blocks(dist, n, seed, stream, a, b, static_cast<float*>(out), begin, end);
    } else {
      fill_float_blocks(dist, n, seed, stream, a, b, static_cast<double*>(out), begin, end);
    }
  });
}

void random_permutation(int64_t n, uint64_t seed, uint64_t stream, int64_t* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = i;
  // Fisher-Yates from the end; two swaps per Philox block.
  uint64_t blk = 0;
  Block r{};
  int used = 2;
  for (int64_t i = n - 1; i > 0; --i) {
    if (used == 2) {
      r = philox(blk++, stream, seed);
      used = 0;
    }
    const uint64_t x = join(r.v[2 * used], r.v[2 * used + 1]);
    ++used;
    const int64_t j = (int64_t)bounded(x, (uint64_t)(i + 1));
    std::swap(out[i], out[j]);
  }
}

void random_weighted_indices(const double* weights, int64_t n, int64_t count, uint64_t seed, uint64_t stream,
                             int64_t* out, ThreadPool* pool) {
  std::vector<double> cumulative(n);
  double total = 0;
  for (int64_t i = 0; i < n; ++i) cumulative[i] = total += weights[i];
  parallel_for(pool, (count + 1) / 2, 4096, [&](int64_t begin, int64_t end) {
    for (int64_t blk = begin; blk < end; ++blk) {
      const Block r = philox((uint64_t)blk, stream, seed);
      for (int j = 0; j < 2 && blk * 2 + j < count; ++j) {
        const double target = unit_closed_open(join(r.v[2 * j], r.v[2 * j + 1])) * total;
        // First index whose cumulative weight exceeds the target (never a zero-weight one).
        int64_t idx = std::upper_bound(cumulative.begin(), cumulative.end(), target) - cumulative.begin();
        if (idx >= n) idx = n - 1;
        while (idx > 0 && weights[idx] == 0) --idx;
        out[blk * 2 + j] = idx;
      }
    }
  });
}

}  // namespace cpu
}  // namespace mnnpy
