// Depthwise 8-bit NHWC convolution (depthwise_int8.h), compiled per SIMD target. Threads take
// output rows; for each output pixel the channels run in vectors of int32 lanes, every tap whose
// input pixel is inside the image adding its centred product (padding, x_zero centred, adds 0),
// then the output row of sums is requantized at once. On x86 the channels up to the last whole
// 16 take two taps per vpmaddwd instead (the raw inputs, int16 weights; paired_pixels_16), 16
// channels at a time (32 with AVX-512), a whole row of pixels per block of channels.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/depthwise_int8.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "backend/cpu/depthwise_int8.h"
#include "backend/cpu/requant_int8-inl.h"
#include "backend/cpu/thread_buffers.h"
#include "mnnpy/thread_pool.h"

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#include <immintrin.h>
#endif

HWY_BEFORE_NAMESPACE();
namespace mnnpy {
namespace cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
constexpr bool kPairedTaps = true;
// Sums of 16 channels (from c) for `pixels` output pixels, the first pixel's tap t at
// tap_inputs[t] (channel 0), the next pixel's pixel_step bytes on. Two taps per vpmaddwd: raw
// inputs widened to int16 and interleaved tap by tap against the weights interleaved the same way
// (pairs: tap pairs x 2 vectors of 16 int16, pair_stride apart, see pair_weights); a pair's two
// products sum exactly in int32. bias already holds -x_zero times the channel's weight sum, so
// the inputs need no centring (and taps outside the image read a pixel of x_zero). kTaps: the tap
// count when known at compile time (its weights then stay in registers), 0 otherwise.
template <int kTaps, class T>
void paired_pixels_16(const T* const* tap_inputs, int64_t c, int64_t pixel_step, int64_t pixels, int64_t taps,
                      const int16_t* HWY_RESTRICT pairs, int64_t pair_stride, const int32_t* bias,
                      int32_t* HWY_RESTRICT sums, int64_t sums_step) {
  const int64_t n = kTaps ? kTaps : taps;
  auto load = [&](int64_t px, int64_t t) {
    const __m128i bytes = _mm_loadu_si128((const __m128i*)(tap_inputs[t] + px));
    return std::is_signed<T>::value ? _mm256_cvtepi8_epi16(bytes) : _mm256_cvtepu8_epi16(bytes);
  };
  constexpr int kHeld = kTaps ? (kTaps + 1) / 2 * 2 : 1;
  __m256i held[kHeld];
  if (kTaps)
    for (int i = 0; i < kHeld; ++i)
      held[i] = _mm256_loadu_si256((const __m256i*)(pairs + (i / 2) * pair_stride + (i % 2) * 16));
  const __m256i bias_lo = _mm256_loadu_si256((const __m256i*)bias);
  const __m256i bias_hi = _mm256_loadu_si256((const __m256i*)(bias + 8));
  for (int64_t p = 0, px = c; p < pixels; ++p, px += pixel_step, sums += sums_step) {
    __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
    for (int64_t t = 0; t < n; t += 2) {
      const __m256i x0 = load(px, t), x1 = t + 1 < n ? load(px, t + 1) : _mm256_setzero_si256();
      const __m256i w_lo = kTaps ? held[t] : _mm256_loadu_si256((const __m256i*)(pairs + (t / 2) * pair_stride));
      const __m256i w_hi =
          kTaps ? held[t + 1] : _mm256_loadu_si256((const __m256i*)(pairs + (t / 2) * pair_stride + 16));
      lo = _mm256_add_epi32(lo, _mm256_madd_epi16(_mm256_unpacklo_epi16(x0, x1), w_lo));
      hi = _mm256_add_epi32(hi, _mm256_madd_epi16(_mm256_unpackhi_epi16(x0, x1), w_hi));
    }
    // lo holds channels 0-3 and 8-11, hi 4-7 and 12-15.
    _mm256_storeu_si256((__m256i*)sums, _mm256_add_epi32(_mm256_permute2x128_si256(lo, hi, 0x20), bias_lo));
    _mm256_storeu_si256((__m256i*)(sums + 8), _mm256_add_epi32(_mm256_permute2x128_si256(lo, hi, 0x31), bias_hi));
  }
}
#else
constexpr bool kPairedTaps = false;
#endif

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
constexpr bool kPairedTaps32 = true;
#if HWY_TARGET == HWY_AVX3_DL
#define MNNPY_DEPTHWISE_VNNI __attribute__((target(HWY_TARGET_STR ",avx512vnni")))
#else
#define MNNPY_DEPTHWISE_VNNI
#endif
// acc + the pair sums of a and b (vpdpwssd where VNNI is, the same int32 sums).
MNNPY_DEPTHWISE_VNNI inline __m512i add_pair_products(__m512i acc, __m512i a, __m512i b) {
#if HWY_TARGET == HWY_AVX3_DL
  return _mm512_dpwssd_epi32(acc, a, b);
#else
  return _mm512_add_epi32(acc, _mm512_madd_epi16(a, b));
#endif
}

// paired_pixels_16 for 32 channels in 512-bit vectors (pairs: blocks of 32, see pair_weights).
template <int kTaps, class T>
MNNPY_DEPTHWISE_VNNI void paired_pixels_32(const T* const* tap_inputs, int64_t c, int64_t pixel_step, int64_t pixels,
                                           int64_t taps, const int16_t* HWY_RESTRICT pairs, int64_t pair_stride,
                                           const int32_t* bias, int32_t* HWY_RESTRICT sums, int64_t sums_step) {
  const int64_t n = kTaps ? kTaps : taps;
  auto load = [&](int64_t px, int64_t t) {
    const __m256i bytes = _mm256_loadu_si256((const __m256i*)(tap_inputs[t] + px));
    return std::is_signed<T>::value ? _mm512_cvtepi8_epi16(bytes) : _mm512_cvtepu8_epi16(bytes);
  };
  constexpr int kHeld = kTaps ? (kTaps + 1) / 2 * 2 : 1;
  __m512i held[kHeld];
  if (kTaps)
    for (int i = 0; i < kHeld; ++i) held[i] = _mm512_loadu_si512(pairs + (i / 2) * pair_stride + (i % 2) * 32);
  const __m512i bias_first = _mm512_loadu_si512(bias), bias_second = _mm512_loadu_si512(bias + 16);
  // 128-bit block j of lo holds channels 8j .. 8j + 3, of hi 8j + 4 .. 8j + 7: 64-bit lanes
  // (0, 1) of lo, then (8, 9) (hi's), and so on.
  const __m512i first_lanes = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0);
  const __m512i second_lanes = _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4);
  if constexpr (kTaps == 9) {
    bool sliding = true;  // 3x3, each kernel row's taps adjacent pixels one output step apart (stride 1)
    for (int t = 0; t < 9; ++t)
      if (t % 3 != 2) sliding = sliding && tap_inputs[t + 1] - tap_inputs[t] == pixel_step;
    if (sliding) {
      // The next pixel's taps are this one's shifted by a column: each widened input serves three
      // pixels, and a pixel loads only its last column.
      __m512i x[3][3];
      for (int r = 0; r < 3; ++r)
        for (int j = 0; j < 3; ++j) x[r][j] = load(c, 3 * r + j);
      for (int64_t p = 0, px = c; p < pixels; ++p, px += pixel_step, sums += sums_step) {
        __m512i lo = _mm512_setzero_si512(), hi = _mm512_setzero_si512();
        for (int t = 0; t < 9; t += 2) {
          const __m512i x0 = x[t / 3][t % 3], x1 = t + 1 < 9 ? x[(t + 1) / 3][(t + 1) % 3] : _mm512_setzero_si512();
          lo = add_pair_products(lo, _mm512_unpacklo_epi16(x0, x1), held[t]);
          hi = add_pair_products(hi, _mm512_unpackhi_epi16(x0, x1), held[t + 1]);
        }
        _mm512_storeu_si512(sums, _mm512_add_epi32(_mm512_permutex2var_epi64(lo, first_lanes, hi), bias_first));
        _mm512_storeu_si512(sums + 16, _mm512_add_epi32(_mm512_permutex2var_epi64(lo, second_lanes, hi), bias_second));
        if (p + 1 < pixels) {
          for (int r = 0; r < 3; ++r) {
            x[r][0] = x[r][1];
            x[r][1] = x[r][2];
            x[r][2] = load(px + pixel_step, 3 * r + 2);
          }
        }
      }
      return;
    }
  }
  for (int64_t p = 0, px = c; p < pixels; ++p, px += pixel_step, sums += sums_step) {
    __m512i lo = _mm512_setzero_si512(), hi = _mm512_setzero_si512();
    for (int64_t t = 0; t < n; t += 2) {
      const __m512i x0 = load(px, t), x1 = t + 1 < n ? load(px, t + 1) : _mm512_setzero_si512();
      const __m512i w_lo = kTaps ? held[t] : _mm512_loadu_si512(pairs + (t / 2) * pair_stride);
      const __m512i w_hi = kTaps ? held[t + 1] : _mm512_loadu_si512(pairs + (t / 2) * pair_stride + 32);
      lo = add_pair_products(lo, _mm512_unpacklo_epi16(x0, x1), w_lo);
      hi = add_pair_products(hi, _mm512_unpackhi_epi16(x0, x1), w_hi);
    }
    _mm512_storeu_si512(sums, _mm512_add_epi32(_mm512_permutex2var_epi64(lo, first_lanes, hi), bias_first));
    _mm512_storeu_si512(sums + 16, _mm512_add_epi32(_mm512_permutex2var_epi64(lo, second_lanes, hi), bias_second));
  }
}
#undef MNNPY_DEPTHWISE_VNNI
#else
constexpr bool kPairedTaps32 = false;
#endif

#if HWY_TARGET == HWY_AVX3_DL
#define MNNPY_BLOCK_TARGET __attribute__((target(HWY_TARGET_STR ",avx512vnni")))
// The VNNI kernel multiplies 2x2 blocks of input pixels by vpdpbusd: one int32 lane per channel,
// its four bytes the channel's values at (row 2k, column j), (2k, j + 1), (2k + 1, j) and
// (2k + 1, j + 1) of the padded input (padding rows and columns hold x_zero). A 3x3 tap window
// lies inside 2 x 2 such blocks (blocks two columns apart, a kernel row or column past the window
// weighted 0): 4 vpdpbusd per 16 channels of an output pixel, and no shuffle per pixel, the
// blocks being built once per pair of rows (build_block_row) and read by every output row and
// column that covers them. Inputs are unsigned: an int8 x goes in as x + 128, which the bias takes
// back (block_depthwise).

// The blocks of padded rows 2k and 2k + 1 of image n: block q (padded column q * col_step) of
// channel group g (16 channels) at out + (g * count + q) * 64.
template <class T>
MNNPY_BLOCK_TARGET void build_block_row(const DepthwiseInt8Nhwc& a, int64_t n, int64_t k, int64_t count,
                                        int64_t col_step, const T* padding, uint8_t* HWY_RESTRICT out) {
  const int64_t C = a.channels, H = a.in_h, W = a.in_w, groups = (C + 15) / 16;
  const T* x = static_cast<const T*>(a.x);
  const T* rows[2];
  for (int r = 0; r < 2; ++r) {
    const int64_t ih = 2 * k + r - a.pad_top;
    rows[r] = ih >= 0 && ih < H ? x + (n * H + ih) * W * C : nullptr;
  }
  auto pixel = [&](int r, int64_t iw) { return rows[r] && iw >= 0 && iw < W ? rows[r] + iw * C : padding; };
  // A vector of 32 channels of two columns: bytes 2i, 2i + 1 of the pairs, channel i of the
  // first and of the second; then words 2i, 2i + 1 of the blocks, pair i of the top row and of
  // the bottom one (channels 0..15, then 16..31).
  alignas(64) uint8_t pair_index[64];
  alignas(64) uint16_t quad_lo[32], quad_hi[32];
  for (int i = 0; i < 64; ++i) pair_index[i] = (uint8_t)((i % 2) * 32 + i / 2);
  for (int i = 0; i < 32; ++i) {
    quad_lo[i] = (uint16_t)((i % 2) * 32 + i / 2);
    quad_hi[i] = (uint16_t)((i % 2) * 32 + 16 + i / 2);
  }
  const __m512i pairs = _mm512_load_si512(pair_index);
  const __m512i quads_lo = _mm512_load_si512(quad_lo), quads_hi = _mm512_load_si512(quad_hi);
  auto two_columns = [&](const T* first, const T* second, int64_t c, __mmask32 m) {
    const __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_maskz_loadu_epi8(m, first + c)),
                                         _mm256_maskz_loadu_epi8(m, second + c), 1);
    const __m512i pair = _mm512_permutexvar_epi8(pairs, v);
    if constexpr (std::is_signed<T>::value) return _mm512_xor_si512(pair, _mm512_set1_epi8((char)0x80));
    return pair;
  };
  for (int64_t q = 0; q < count; ++q) {
    const int64_t iw = q * col_step - a.pad_left;
    const T *a0 = pixel(0, iw), *a1 = pixel(0, iw + 1), *b0 = pixel(1, iw), *b1 = pixel(1, iw + 1);
    for (int64_t c = 0; c < C; c += 32) {
      const __mmask32 m = C - c >= 32 ? ~__mmask32(0) : (__mmask32(1) << (C - c)) - 1;
      const __m512i top = two_columns(a0, a1, c, m), bottom = two_columns(b0, b1, c, m);
      _mm512_storeu_si512(out + ((c / 16) * count + q) * 64, _mm512_permutex2var_epi16(top, quads_lo, bottom));
      if (c / 16 + 1 < groups)
        _mm512_storeu_si512(out + ((c / 16 + 1) * count + q) * 64, _mm512_permutex2var_epi16(top, quads_hi, bottom));
    }
  }
}

// One output row, or two (kTwo), from their rows of blocks: the first output row reads block rows
// 0 .. R - 1 (block_rows[r]) with the weights `first` of its parity, the second rows kShift ..
// kShift + R - 1 with `second`; a block loaded serves both. Weights: [R][B][groups] vectors of 64
// bytes. kR and kB: R and B known at compile time; 0 (one row only): rows and cols at run time.
template <int kR, int kB, int kShift, bool kTwo>
MNNPY_BLOCK_TARGET void block_output_rows(const DepthwiseInt8Nhwc& a, const uint8_t* const* block_rows, int64_t rows,
                                          int64_t cols, int64_t count, int64_t col_step, const int8_t* first,
                                          const int8_t* second, const int32_t* bias, const float* multiplier,
                                          const RequantVector& requant, uint8_t* HWY_RESTRICT y_first,
                                          uint8_t* HWY_RESTRICT y_second) {
  static_assert(!kTwo || kR > 0, "two rows with the block grid known at compile time");
  const int64_t C = a.channels, OW = a.out_w, groups = (C + 15) / 16;
  const int64_t R = kR ? kR : rows, B = kB ? kB : cols, U = R + (kTwo ? kShift : 0);
  const int64_t pixel_step = a.stride_w / col_step * 64, col_offset = 2 / col_step * 64;
  constexpr int kPixels = kTwo ? 6 : 8;  // independent sums in flight (vpdpbusd's latency)
  const RequantVector rq = requant;      // a local copy: its vectors stay in registers
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t lanes = std::min<int64_t>(16, C - 16 * g);
    const __mmask16 store_mask = (__mmask16)((1u << lanes) - 1);
    const __m512i bias_v = _mm512_loadu_si512(bias + 16 * g);
    const __m512 multiplier_v = _mm512_loadu_ps(multiplier + 16 * g);
    const int8_t* first_g = first + g * 64;
    const int8_t* second_g = kTwo ? second + g * 64 : nullptr;
    auto weight = [&](const int8_t* w, int64_t u, int64_t b) { return _mm512_loadu_si512(w + (u * B + b) * groups * 64); };
    auto blocks_at = [&](int64_t u, int64_t ow) { return block_rows[u] + (g * count) * 64 + ow * pixel_step; };
    auto run = [&](auto full) {
      auto store = [&](uint8_t* y, int64_t ow, __m512i sums) {
        const __m128i bytes = rq(sums, multiplier_v);
        if (decltype(full)::value) _mm_storeu_si128((__m128i*)(y + ow * C + 16 * g), bytes);
        else _mm_mask_storeu_epi8(y + ow * C + 16 * g, store_mask, bytes);
      };
      int64_t ow = 0;
      for (; ow + kPixels <= OW; ow += kPixels) {
        __m512i acc[2][kPixels];
        for (int i = 0; i < kPixels; ++i) acc[0][i] = acc[1][i] = bias_v;
        for (int64_t u = 0; u < U; ++u) {
          const uint8_t* src = blocks_at(u, ow);
          const bool use_first = u < R, use_second = kTwo && u >= kShift;
          for (int64_t b = 0; b < B; ++b) {
            const __m512i w0 = use_first ? weight(first_g, u, b) : _mm512_setzero_si512();
            const __m512i w1 = use_second ? weight(second_g, u - kShift, b) : _mm512_setzero_si512();
            for (int i = 0; i < kPixels; ++i) {
              const __m512i x = _mm512_loadu_si512(src + i * pixel_step + b * col_offset);
              if (use_first) acc[0][i] = _mm512_dpbusd_epi32(acc[0][i], x, w0);
              if (use_second) acc[1][i] = _mm512_dpbusd_epi32(acc[1][i], x, w1);
            }
          }
        }
        for (int i = 0; i < kPixels; ++i) {
          store(y_first, ow + i, acc[0][i]);
          if (kTwo) store(y_second, ow + i, acc[1][i]);
        }
      }
      for (; ow < OW; ++ow) {
        __m512i acc0 = bias_v, acc1 = bias_v;
        for (int64_t u = 0; u < U; ++u) {
          const uint8_t* src = blocks_at(u, ow);
          for (int64_t b = 0; b < B; ++b) {
            const __m512i x = _mm512_loadu_si512(src + b * col_offset);
            if (u < R) acc0 = _mm512_dpbusd_epi32(acc0, x, weight(first_g, u, b));
            if (kTwo && u >= kShift) acc1 = _mm512_dpbusd_epi32(acc1, x, weight(second_g, u - kShift, b));
          }
        }
        store(y_first, ow, acc0);
        if (kTwo) store(y_second, ow, acc1);
      }
    };
    if (lanes == 16) run(std::true_type());
    else run(std::false_type());
  }
}

// The whole layer on the VNNI kernel (dilation 1, weights.blocks made).
template <class T>
MNNPY_BLOCK_TARGET void block_depthwise(const DepthwiseInt8Nhwc& a, ThreadPool* pool) {
  const DepthwiseInt8Weights& wt = *a.weights;
  const int64_t C = a.channels, groups = (C + 15) / 16, OH = a.out_h, OW = a.out_w;
  const int64_t R = wt.block_rows, B = wt.block_cols;
  // Block columns start at ow * stride_w + 2b: only the even ones where the stride is even.
  const int64_t col_step = a.stride_w % 2 == 0 ? 2 : 1;
  const int64_t count = ((OW - 1) * a.stride_w + 2 * (B - 1)) / col_step + 1;
  const int64_t row_bytes = groups * count * 64;
  // Sums of x * w (x + 128 for int8 x) over the taps, padding included: bias minus
  // (x_zero (+ 128)) times the channel's weight sum centres them (modulo 2^32, as every path).
  const uint32_t shift = (uint32_t)a.x_zero + (std::is_signed<T>::value ? 128u : 0u);
  std::vector<int32_t> bias((size_t)(groups * 16), 0);
  std::vector<float> multiplier((size_t)(groups * 16), 0.0f);
  for (int64_t c = 0; c < C; ++c) {
    bias[c] = (int32_t)((uint32_t)a.bias[c] - shift * (uint32_t)wt.weight_sums[c]);
    multiplier[c] = a.multiplier[c];
  }
  const std::vector<T> padding((size_t)C, (T)a.x_zero);
  RequantParams rq;
  rq.zero = a.out_zero, rq.low = a.out_low, rq.high = a.out_high;
  const RequantVector requant(rq);
  const int64_t work = std::max<int64_t>(1, OW * C * a.kernel_h * a.kernel_w);
  // One run of rows per thread: a task builds the rows of blocks its first output rows read, which
  // the task before it built too (the work of every row is the same, so the shares stay even).
  const int threads = pool ? pool->num_threads() : 1;
  const int64_t grain = std::max(std::max<int64_t>(1, (int64_t(1) << 17) / work), ceil_div(a.batch * OH, (int64_t)threads));
  parallel_for(pool, a.batch * OH, grain, [&](int64_t r0, int64_t r1) {
    // Rows of blocks kept by their index (image, k); a row of outputs reads R consecutive ones.
    const int64_t slots = R + 1;
    uint8_t* storage = reinterpret_cast<uint8_t*>(thread_buffer(0, (size_t)(slots * row_bytes) / sizeof(float)));
    std::vector<int64_t> held((size_t)slots, -1);
    std::vector<const uint8_t*> block_rows((size_t)slots);
    const int64_t pair_rows = (OH - 1) * a.stride_h / 2 + R;  // per image
    // The rows of blocks from k0 on, count of them, built where not held.
    auto block_rows_from = [&](int64_t n, int64_t k0, int64_t count_rows) {
      for (int64_t i = 0; i < count_rows; ++i) {
        const int64_t k = k0 + i, slot = k % slots, key = n * pair_rows + k;
        uint8_t* buffer = storage + slot * row_bytes;
        if (held[slot] != key) {
          build_block_row<T>(a, n, k, count, col_step, padding.data(), buffer);
          held[slot] = key;
        }
        block_rows[i] = buffer;
      }
    };
    const int8_t* parity_weights[2] = {wt.blocks.data(), wt.blocks.data() + R * B * groups * 64};
    const bool two_rows = (R == 2 && B == 2) || (R == 3 && B == 3);
    for (int64_t r = r0; r < r1;) {
      const int64_t n = r / OH, oh = r % OH, first_row = oh * a.stride_h, k0 = first_row / 2;
      uint8_t* y = static_cast<uint8_t*>(a.y) + (n * OH + oh) * OW * C;
      const int8_t* weights = parity_weights[first_row % 2];
      // Two output rows at once where their blocks overlap: the next row's first block row is k0
      // or k0 + 1 (stride 1: pairs of rows from an even one, which read the same blocks).
      const int64_t next_row = first_row + a.stride_h, shift = next_row / 2 - k0;
      if (two_rows && r + 1 < r1 && oh + 1 < OH && shift <= 1 && !(a.stride_h == 1 && oh % 2 == 1)) {
        block_rows_from(n, k0, R + shift);
        const int8_t* next_weights = parity_weights[next_row % 2];
        uint8_t* y_next = y + OW * C;
        if (R == 2 && shift == 0)
          block_output_rows<2, 2, 0, true>(a, block_rows.data(), R, B, count, col_step, weights, next_weights,
                                           bias.data(), multiplier.data(), requant, y, y_next);
        else if (R == 2)
          block_output_rows<2, 2, 1, true>(a, block_rows.data(), R, B, count, col_step, weights, next_weights,
                                           bias.data(), multiplier.data(), requant, y, y_next);
        else if (shift == 0)
          block_output_rows<3, 3, 0, true>(a, block_rows.data(), R, B, count, col_step, weights, next_weights,
                                           bias.data(), multiplier.data(), requant, y, y_next);
        else
          block_output_rows<3, 3, 1, true>(a, block_rows.data(), R, B, count, col_step, weights, next_weights,
                                           bias.data(), multiplier.data(), requant, y, y_next);
        r += 2;
        continue;
      }
      block_rows_from(n, k0, R);
      if (R == 2 && B == 2)
        block_output_rows<2, 2, 0, false>(a, block_rows.data(), R, B, count, col_step, weights, nullptr, bias.data(),
                                          multiplier.data(), requant, y, nullptr);
      else
        block_output_rows<0, 0, 0, false>(a, block_rows.data(), R, B, count, col_step, weights, nullptr, bias.data(),
                                          multiplier.data(), requant, y, nullptr);
      ++r;
    }
  });
}
#undef MNNPY_BLOCK_TARGET
#endif

// The paired sums of `pixels` output pixels (their first tap t at tap_inputs[t], channel 0; the
// next pixel's stride_w pixels on) into sums (the first pixel's channel 0): 32 channels a step
// with AVX-512, then 16; the channels past the last 16 are left to the per-pixel loop.
template <class T>
void paired_pixels(const DepthwiseInt8Nhwc& a, const T* const* tap_inputs, int64_t pixels, const int16_t* pairs,
                   const int16_t* pairs32, const int32_t* zero_bias, int32_t* sums) {
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  const int64_t C = a.channels, taps = a.kernel_h * a.kernel_w, step = a.stride_w * C;
  int64_t c = 0;
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  if (pairs32) {
    const int64_t stride = (C / 32) * 64;
    for (; c + 32 <= C; c += 32) {
      const int16_t* w = pairs32 + (c / 32) * 64;
      if (taps == 9) paired_pixels_32<9>(tap_inputs, c, step, pixels, taps, w, stride, zero_bias + c, sums + c, C);
      else paired_pixels_32<0>(tap_inputs, c, step, pixels, taps, w, stride, zero_bias + c, sums + c, C);
    }
  }
#endif
  const int64_t stride = (C / 16) * 32;
  for (; c + 16 <= C; c += 16) {
    const int16_t* w = pairs + (c / 16) * 32;
    if (taps == 9) paired_pixels_16<9>(tap_inputs, c, step, pixels, taps, w, stride, zero_bias + c, sums + c, C);
    else paired_pixels_16<0>(tap_inputs, c, step, pixels, taps, w, stride, zero_bias + c, sums + c, C);
  }
#else
  (void)a, (void)tap_inputs, (void)pixels, (void)pairs, (void)pairs32, (void)zero_bias, (void)sums;
#endif
}

template <class T>
void depthwise_rows(const DepthwiseInt8Nhwc& a, const float* multiplier, int64_t multiplier_count,
                    const int16_t* pairs, const int16_t* pairs32, const int32_t* zero_bias, int64_t r0, int64_t r1,
                    int32_t* HWY_RESTRICT sums) {
  const hn::ScalableTag<int32_t> di;
  const hn::Rebind<T, decltype(di)> d8;
  const int64_t L = (int64_t)hn::Lanes(di);
  const int64_t C = a.channels, H = a.in_h, W = a.in_w, OH = a.out_h, OW = a.out_w, KH = a.kernel_h, KW = a.kernel_w;
  const T* HWY_RESTRICT x = static_cast<const T*>(a.x);
  uint8_t* HWY_RESTRICT y = static_cast<uint8_t*>(a.y);
  const int32_t x_zero = a.x_zero;
  const auto zero_v = hn::Set(di, x_zero);
  RequantParams rq;
  rq.zero = a.out_zero, rq.low = a.out_low, rq.high = a.out_high;
  // Offsets (in bytes of x) of the taps inside the image for the current pixel, and their rows of weights.
  std::vector<int64_t> offsets((size_t)(KH * KW)), tap_offsets((size_t)(KH * KW));
  std::vector<const int32_t*> weights((size_t)(KH * KW));
  for (int64_t ki = 0; ki < KH; ++ki)
    for (int64_t kj = 0; kj < KW; ++kj) tap_offsets[ki * KW + kj] = (ki * a.dilation_h * W + kj * a.dilation_w) * C;
  const int64_t span_h = (KH - 1) * a.dilation_h, span_w = (KW - 1) * a.dilation_w;
  // The paired path: every tap's input pixel, a pixel of x_zero where the tap is outside the image.
  const int64_t paired_channels = pairs ? C / 16 * 16 : 0;
  std::vector<const T*> tap_inputs((size_t)(KH * KW));
  const std::vector<T> padding((size_t)C, (T)x_zero);
  // The output columns whose taps are all inside horizontally: ow * stride_w - pad_left in
  // [0, W - 1 - span_w]; their pixels go through the paired path together.
  const int64_t last_iw0 = W - 1 - span_w;
  const int64_t ow_lo = std::min(OW, (a.pad_left + a.stride_w - 1) / a.stride_w);
  const int64_t ow_hi = last_iw0 < 0 ? 0 : std::max(ow_lo, std::min(OW, (last_iw0 + a.pad_left) / a.stride_w + 1));
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t n = r / OH, oh = r % OH;
    const int64_t ih0 = oh * a.stride_h - a.pad_top;
    const bool rows_inside = ih0 >= 0 && ih0 + span_h < H;
    if (paired_channels > 0) {
      const bool interior = rows_inside && ow_hi > ow_lo;
      if (interior) {
        const T* first = x + ((n * H + ih0) * W + ow_lo * a.stride_w - a.pad_left) * C;
        for (int64_t t = 0; t < KH * KW; ++t) tap_inputs[t] = first + tap_offsets[t];
        paired_pixels(a, tap_inputs.data(), ow_hi - ow_lo, pairs, pairs32, zero_bias, sums + ow_lo * C);
      }
      for (int64_t ow = 0; ow < OW; ++ow) {
        if (interior && ow == ow_lo) ow = ow_hi;
        if (ow >= OW) break;
        const int64_t iw0 = ow * a.stride_w - a.pad_left;
        for (int64_t ki = 0; ki < KH; ++ki) {
          const int64_t ih = ih0 + ki * a.dilation_h;
          for (int64_t kj = 0; kj < KW; ++kj) {
            const int64_t iw = iw0 + kj * a.dilation_w;
            const bool inside = ih >= 0 && ih < H && iw >= 0 && iw < W;
            tap_inputs[ki * KW + kj] = inside ? x + ((n * H + ih) * W + iw) * C : padding.data();
          }
        }
        paired_pixels(a, tap_inputs.data(), 1, pairs, pairs32, zero_bias, sums + ow * C);
      }
    }
    for (int64_t ow = 0; ow < OW && paired_channels < C; ++ow) {
      const int64_t iw0 = ow * a.stride_w - a.pad_left;
      int64_t count = 0;
      if (rows_inside && iw0 >= 0 && iw0 + span_w < W) {  // every tap inside the image
        const int64_t base = ((n * H + ih0) * W + iw0) * C;
        for (int64_t t = 0; t < KH * KW; ++t) {
          offsets[t] = base + tap_offsets[t];
          weights[t] = a.weights->taps.data() + t * C;
        }
        count = KH * KW;
      }
      for (int64_t ki = 0; ki < KH && count < KH * KW; ++ki) {
        const int64_t ih = ih0 + ki * a.dilation_h;
        if (ih < 0 || ih >= H) continue;
        for (int64_t kj = 0; kj < KW; ++kj) {
          const int64_t iw = iw0 + kj * a.dilation_w;
          if (iw < 0 || iw >= W) continue;
          offsets[count] = ((n * H + ih) * W + iw) * C;
          weights[count] = a.weights->taps.data() + (ki * KW + kj) * C;
          ++count;
        }
      }
      int64_t c = paired_channels;
      for (; c + L <= C; c += L) {
        auto acc = hn::LoadU(di, a.bias + c);
        for (int64_t t = 0; t < count; ++t) {
          const auto xv = hn::Sub(hn::PromoteTo(di, hn::LoadU(d8, x + offsets[t] + c)), zero_v);
          acc = hn::Add(acc, hn::Mul(xv, hn::LoadU(di, weights[t] + c)));
        }
        hn::StoreU(acc, di, sums + ow * C + c);
      }
      for (; c < C; ++c) {  // the channels past the last whole vector, with the same int32 arithmetic
        uint32_t acc = (uint32_t)a.bias[c];
        for (int64_t t = 0; t < count; ++t)
          acc += (uint32_t)(((int32_t)x[offsets[t] + c] - x_zero) * weights[t][c]);
        sums[ow * C + c] = (int32_t)acc;
      }
    }
    // The output row, a run of multiplier_count values at a time (a pixel, or the whole row).
    uint8_t* out = y + (n * OH + oh) * OW * C;
    for (int64_t i = 0; i < OW * C; i += multiplier_count)
      RequantRow(sums + i, multiplier, multiplier_count, rq, out + i);
  }
}

void DepthwiseInt8NhwcImpl(const DepthwiseInt8Nhwc& a, ThreadPool* pool) {
  const DepthwiseInt8Weights& wt = *a.weights;
#if HWY_TARGET == HWY_AVX3_DL
  if (!wt.blocks.empty() && a.dilation_h == 1 && a.dilation_w == 1) {
    if (a.x_signed) block_depthwise<int8_t>(a, pool);
    else block_depthwise<uint8_t>(a, pool);
    return;
  }
#endif
  const int64_t rows = a.batch * a.out_h;
  const int64_t taps = a.kernel_h * a.kernel_w;
  const int64_t work = std::max<int64_t>(1, a.out_w * a.channels * taps);
  // Channels in whole vectors of the requantization: a pixel at a time, with the channels'
  // multipliers; otherwise the multipliers repeated for each pixel of an output row, one
  // requantization per row (no scalar tail per pixel).
  const int64_t C = a.channels, row = a.out_w * C;
  const bool per_pixel = C % 16 == 0;
  std::vector<float> repeated;
  if (!per_pixel) {
    repeated.resize((size_t)row);
    for (int64_t p = 0; p < a.out_w; ++p) std::copy(a.multiplier, a.multiplier + C, repeated.begin() + p * C);
  }
  const float* multiplier = per_pixel ? a.multiplier : repeated.data();
  const int64_t multiplier_count = per_pixel ? C : row;
  const int16_t* pp = kPairedTaps && !wt.pairs16.empty() ? wt.pairs16.data() : nullptr;
  const int16_t* pp32 = kPairedTaps32 && !wt.pairs32.empty() ? wt.pairs32.data() : nullptr;
  // The paired path multiplies the raw inputs: bias - x_zero * (sum of the channel's weights)
  // takes the centring back (the same int32 sums, modulo 2^32).
  std::vector<int32_t> zero_bias((size_t)C);
  for (int64_t c = 0; c < C; ++c)
    zero_bias[c] = (int32_t)((uint32_t)a.bias[c] - (uint32_t)a.x_zero * (uint32_t)wt.weight_sums[c]);
  parallel_for(pool, rows, std::max<int64_t>(1, (int64_t(1) << 17) / work), [&](int64_t r0, int64_t r1) {
    std::vector<int32_t> sums((size_t)row);
    if (a.x_signed)
      depthwise_rows<int8_t>(a, multiplier, multiplier_count, pp, pp32, zero_bias.data(), r0, r1, sums.data());
    else
      depthwise_rows<uint8_t>(a, multiplier, multiplier_count, pp, pp32, zero_bias.data(), r0, r1, sums.data());
  });
}

}  // namespace HWY_NAMESPACE
}  // namespace cpu
}  // namespace mnnpy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mnnpy {
namespace cpu {
HWY_EXPORT(DepthwiseInt8NhwcImpl);

namespace {
// The weights for paired_pixels_16 (width 16) and paired_pixels_32 (width 32): for tap pair p and
// block b of `width` channels, at ((p * blocks + b) * 2 * width): the low vector (per 128-bit
// block h, channels 8h .. 8h + 3) then the high one (channels 8h + 4 .. 8h + 7), each channel's
// two taps adjacent.
std::vector<int16_t> pair_weights(const std::vector<int32_t>& centred, int64_t C, int64_t taps, int64_t width) {
  const int64_t blocks = C / width, pairs = (taps + 1) / 2;
  std::vector<int16_t> out((size_t)(pairs * blocks * 2 * width));
  for (int64_t p = 0; p < pairs; ++p)
    for (int64_t b = 0; b < blocks; ++b)
      for (int64_t h = 0; h < width / 8; ++h)
        for (int i = 0; i < 4; ++i)
          for (int part = 0; part < 2; ++part) {
            const int64_t ch = b * width + h * 8 + part * 4 + i;
            int16_t* dst = out.data() + (p * blocks + b) * 2 * width + part * width + h * 8 + 2 * i;
            dst[0] = (int16_t)centred[(2 * p) * C + ch];
            dst[1] = 2 * p + 1 < taps ? (int16_t)centred[(2 * p + 1) * C + ch] : (int16_t)0;
          }
  return out;
}

// The weights of the VNNI kernel's 2x2 input blocks (block_depthwise): for the parity p of an
// output row's first padded input row, block row r (kernel rows 2r - p and 2r + 1 - p), block
// column b (kernel columns 2b and 2b + 1) and group g of 16 channels, 64 bytes at
// (((p * rows + r) * cols + b) * groups + g) * 64: per channel (kernel row, column) (i, j), (i, j + 1),
// (i + 1, j), (i + 1, j + 1), 0 outside the kernel.
std::vector<int8_t> block_weights(const std::vector<int32_t>& centred, int64_t C, int64_t KH, int64_t KW, int64_t rows,
                                  int64_t cols) {
  const int64_t groups = (C + 15) / 16;
  std::vector<int8_t> out((size_t)(2 * rows * cols * groups * 64), 0);
  for (int64_t p = 0; p < 2; ++p)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t b = 0; b < cols; ++b)
        for (int64_t c = 0; c < C; ++c)
          for (int e = 0; e < 4; ++e) {
            const int64_t i = 2 * r - p + e / 2, j = 2 * b + e % 2;
            if (i < 0 || i >= KH || j >= KW) continue;
            out[(size_t)(((((p * rows + r) * cols + b) * groups + c / 16) * 64) + (c % 16) * 4 + e)] =
                (int8_t)centred[(i * KW + j) * C + c];
          }
  return out;
}

}  // namespace

DepthwiseInt8Weights prepare_depthwise_int8(const void* w, bool w_signed, const int32_t* w_zero, int64_t channels,
                                            int64_t kernel_h, int64_t kernel_w) {
  const int64_t C = channels, taps = kernel_h * kernel_w;
  DepthwiseInt8Weights out;
  bool int8_weights = true;
  out.taps.resize((size_t)(taps * C));
  out.weight_sums.assign((size_t)C, 0);
  bool int16_weights = true;
  for (int64_t c = 0; c < C; ++c)
    for (int64_t t = 0; t < taps; ++t) {
      const int64_t idx = c * taps + t;
      const int32_t stored =
          w_signed ? (int32_t)static_cast<const int8_t*>(w)[idx] : (int32_t)static_cast<const uint8_t*>(w)[idx];
      const int32_t v = stored - w_zero[c];
      out.taps[t * C + c] = v;
      out.weight_sums[c] = (int32_t)((uint32_t)out.weight_sums[c] + (uint32_t)v);
      int16_weights &= v >= -255 && v <= 255;  // false only for zero points outside the weights' type
      int8_weights &= v >= -128 && v <= 127;   // symmetric int8 weights, or uint8 ones about 128
    }
  if (int16_weights && C >= 16) out.pairs16 = pair_weights(out.taps, C, taps, 16);
  if (int16_weights && C >= 32) out.pairs32 = pair_weights(out.taps, C, taps, 32);
  // A padded output row's first input row is 2k or 2k + 1: kernel_h / 2 + 1 block rows cover
  // its taps either way.
  out.block_rows = kernel_h / 2 + 1, out.block_cols = (kernel_w + 1) / 2;
  if (int8_weights) out.blocks = block_weights(out.taps, C, kernel_h, kernel_w, out.block_rows, out.block_cols);
  return out;
}

void depthwise_int8_nhwc(const DepthwiseInt8Nhwc& args, ThreadPool* pool) {
  HWY_DYNAMIC_DISPATCH(DepthwiseInt8NhwcImpl)(args, pool);
}

}  // namespace cpu
}  // namespace mnnpy
#endif
