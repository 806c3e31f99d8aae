// bfloat16 products (backend/cpu/gemm_bf16.h): detection, packing, the task loop shared by the
// paths, and the three block kernels (reference, AVX512_BF16, AMX-BF16).
//
// A task is a block of 32 rows of A times a chunk of B's columns: it converts its rows to bf16
// once, runs the block kernel over the chunk 32 columns at a time into a float32 buffer, and stores
// the valid part through the output's strides with bias and activation.
#include "backend/cpu/gemm_bf16.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <mutex>
#include <new>

#include "backend/cpu/amx_support.h"
#include "backend/cpu/thread_buffers.h"
#include "mnnpy/runtime_info.h"
#include "mnnpy/tensor.h"
#include "mnnpy/thread_pool.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define MNNPY_BF16_X86 1
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace mnnpy {
namespace cpu {

namespace {

// This file's thread_buffer slots: A's rows as bf16, a block of results, A's rows as float32.
enum BufferSlot : int { kRowsSlot, kResultSlot, kRowsFloatSlot };

inline float bf16_to_float(uint16_t h) {
  const uint32_t bits = (uint32_t)h << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// ---- Detection --------------------------------------------------------------------------------

#ifdef MNNPY_BF16_X86
struct Bf16Hardware {
  bool amx = false, avx512_bf16 = false;
  bool avx512 = false;  // F and BW: the vector conversion to bf16
};

Bf16Hardware detect_hardware() {
  Bf16Hardware hw;
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return hw;  // OSXSAVE: XGETBV usable
  if (__get_cpuid_max(0, nullptr) < 7) return hw;
  const uint64_t xcr0 = read_xcr0();
  unsigned eax7, ebx7, ecx7, edx7;
  __cpuid_count(7, 0, eax7, ebx7, ecx7, edx7);
  unsigned eax71 = 0, ebx71 = 0, ecx71 = 0, edx71 = 0;
  if (eax7 >= 1) __cpuid_count(7, 1, eax71, ebx71, ecx71, edx71);
  // AVX-512 state (opmask, upper halves of zmm0-15, zmm16-31) enabled by the OS, and F, BW, VL.
  const bool avx512 = (xcr0 & 0xe6) == 0xe6 && (ebx7 & (1u << 16)) && (ebx7 & (1u << 30)) && (ebx7 & (1u << 31));
  hw.avx512 = avx512;
  hw.avx512_bf16 = avx512 && (eax71 & (1u << 5));
  // AMX-TILE (edx bit 24) and AMX-BF16 (bit 22), tile config and data state (XCR0 bits 17, 18).
  const bool amx_cpu = (edx7 & (1u << 24)) && (edx7 & (1u << 22)) && ((xcr0 >> 17) & 3u) == 3u;
  hw.amx = amx_cpu && request_amx_permission();
  return hw;
}
#else
struct Bf16Hardware {
  bool amx = false, avx512_bf16 = false, avx512 = false;
};
Bf16Hardware detect_hardware() { return {}; }
#endif

const Bf16Hardware& hardware() {
  static const Bf16Hardware hw = detect_hardware();
  return hw;
}

std::atomic<Bf16Path> g_chosen_path{Bf16Path::None};  // a test's choice; None: the best hardware path

// ---- Block kernels ----------------------------------------------------------------------------
// c[32][32 * n_blocks] (row stride ldc) = a[32][kp] * b, b: n_blocks panels [kp/2][32][2] one after
// the other. `rows`: the rows of a that hold data (the others are zero); kernels may skip
// the rest, whose results are not stored.

// Plain C++ in the same arithmetic as the hardware: exact bf16 x bf16 products added into float32.
void block_reference(const uint16_t* a, int64_t kp, int64_t rows, const uint16_t* b, int64_t n_blocks, float* c,
                     int64_t ldc) {
  constexpr int64_t NB = kBf16ColumnStep;
  for (int64_t nb = 0; nb < n_blocks; ++nb) {
    const uint16_t* panel = b + nb * kp * NB;
    for (int64_t r = 0; r < rows; ++r) {
      float* cr = c + r * ldc + nb * NB;
      std::fill(cr, cr + NB, 0.f);
      for (int64_t p = 0; p < kp / 2; ++p) {
        const float a0 = bf16_to_float(a[r * kp + 2 * p]), a1 = bf16_to_float(a[r * kp + 2 * p + 1]);
        const uint16_t* bp = panel + p * NB * 2;
        for (int64_t j = 0; j < NB; ++j) {
          cr[j] += a0 * bf16_to_float(bp[2 * j]);
          cr[j] += a1 * bf16_to_float(bp[2 * j + 1]);
        }
      }
    }
  }
}

#ifdef MNNPY_BF16_X86
// 8 rows x 32 columns a step: 16 zmm accumulators, two B vectors (16 column pairs each) and one
// broadcast A pair.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void block_avx512_bf16(
    const uint16_t* a, int64_t kp, int64_t rows, const uint16_t* b, int64_t n_blocks, float* c, int64_t ldc) {
  constexpr int kRows = 8;
  for (int64_t nb = 0; nb < n_blocks; ++nb) {
    const uint16_t* bn = b + nb * kp * kBf16ColumnStep;  // the block's panel
    for (int64_t r0 = 0; r0 < rows; r0 += kRows) {
      __m512 acc[kRows][2];
      // Unrolled, so that the accumulators live in registers.
#pragma GCC unroll 8
      for (int r = 0; r < kRows; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
      const uint16_t* ar = a + r0 * kp;
      for (int64_t p = 0; p < kp / 2; ++p) {
        const uint16_t* bp = bn + p * kBf16ColumnStep * 2;  // 32 column pairs: 64 bf16
        const __m512bh b0 = (__m512bh)_mm512_loadu_si512(bp);
        const __m512bh b1 = (__m512bh)_mm512_loadu_si512(bp + 32);
#pragma GCC unroll 8
        for (int r = 0; r < kRows; ++r) {
          int32_t pair;
          std::memcpy(&pair, ar + r * kp + 2 * p, sizeof pair);
          const __m512bh av = (__m512bh)_mm512_set1_epi32(pair);
          acc[r][0] = _mm512_dpbf16_ps(acc[r][0], av, b0);
          acc[r][1] = _mm512_dpbf16_ps(acc[r][1], av, b1);
        }
      }
#pragma GCC unroll 8
      for (int r = 0; r < kRows; ++r) {
        float* cr = c + (r0 + r) * ldc + nb * kBf16ColumnStep;
        _mm512_storeu_ps(cr, acc[r][0]);
        _mm512_storeu_ps(cr + 16, acc[r][1]);
      }
    }
  }
}

// The tile configuration (AmxTileConfig, palette 1): tiles 0-3 C (16 rows x 16 float32), 4-5 A
// (16 rows x 32 bf16), 6-7 B (16 rows of column pairs x 16 columns x 2 bf16); 64 bytes a row each.
// 32 x 32 outputs a step as 2 x 2 tiles of 16 x 16, 32 depths (one A and one B tile each) at a time.
__attribute__((target("amx-tile,amx-bf16"))) void block_amx(const uint16_t* a, int64_t kp, int64_t rows,
                                                            const uint16_t* b, int64_t n_blocks, float* c,
                                                            int64_t ldc) {
  (void)rows;  // the zero rows cost the same as data in a tile
  AmxTileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.rows[t] = 16;
    cfg.colsb[t] = 64;
  }
  // The intrinsic's asm names only the first bytes of the configuration: make the compiler store
  // all 64 before LDTILECFG reads them.
  __asm__ volatile("" : : "r"(&cfg) : "memory");
  _tile_loadconfig(&cfg);
  const int64_t a_stride = kp * (int64_t)sizeof(uint16_t);      // bytes between rows of A
  const int64_t b_stride = kBf16ColumnStep * 2 * (int64_t)sizeof(uint16_t);  // bytes between pair rows of a panel
  const int64_t c_stride = ldc * (int64_t)sizeof(float);
  const uint16_t* a_low = a + 16 * kp;  // rows 16-31
  for (int64_t nb = 0; nb < n_blocks; ++nb) {
    const uint16_t* bn = b + nb * kp * kBf16ColumnStep;  // the block's panel
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int64_t k0 = 0; k0 < kp; k0 += kBf16DepthStep) {
      const uint16_t* bk = bn + (k0 / 2) * kBf16ColumnStep * 2;
      _tile_loadd(4, a + k0, a_stride);
      _tile_loadd(5, a_low + k0, a_stride);
      _tile_loadd(6, bk, b_stride);       // columns 0-15 of the block
      _tile_loadd(7, bk + 32, b_stride);  // columns 16-31: 16 pairs further
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
    float* cn = c + nb * kBf16ColumnStep;
    _tile_stored(0, cn, c_stride);
    _tile_stored(1, cn + 16, c_stride);
    _tile_stored(2, cn + 16 * ldc, c_stride);
    _tile_stored(3, cn + 16 * ldc + 16, c_stride);
  }
  _tile_release();
}
#endif

using BlockKernel = void (*)(const uint16_t*, int64_t, int64_t, const uint16_t*, int64_t, float*, int64_t);

BlockKernel block_kernel(Bf16Path path) {
  if (path == Bf16Path::Reference) return block_reference;
#ifdef MNNPY_BF16_X86
  // Never an instruction the CPU lacks: the hardware paths only where detection found them.
  if (path == Bf16Path::Amx && hardware().amx) return block_amx;
  if (path == Bf16Path::Avx512Bf16 && hardware().avx512_bf16) return block_avx512_bf16;
#endif
  throw ValueError(std::string("the bf16 path '") + bf16_path_name(path) + "' is not available on this CPU");
}

float activate_scalar(float v, const ConvActivation& act) {
  switch (act.code) {
    case kConvActRelu: return std::max(v, 0.f);
    case kConvActClip: return std::min(std::max(v, act.p0), act.p1);
    case kConvActSigmoid: return 1.f / (1.f + std::exp(-v));
    case kConvActSilu: return v / (1.f + std::exp(-v));
    case kConvActHardSwish: return v * std::min(std::max(v + 3.f, 0.f), 6.f) * (1.f / 6.f);
    case kConvActGelu: return 0.5f * v * (1.f + std::erf(v * 0.70710678118654752440f));
    case kConvActHardSigmoid: return std::max(0.f, std::min(1.f, act.p0 * v + act.p1));
    default: return v;
  }
}

void* allocate_aligned64(size_t bytes) { return ::operator new(bytes, std::align_val_t(64)); }
void free_aligned64(void* p) { ::operator delete(p, std::align_val_t(64)); }

}  // namespace

// ---- Paths ------------------------------------------------------------------------------------

Bf16Path bf16_hardware_path() {
  if (hardware().amx) return Bf16Path::Amx;
  if (hardware().avx512_bf16) return Bf16Path::Avx512Bf16;
  return Bf16Path::None;
}

std::vector<Bf16Path> bf16_hardware_paths() {
  std::vector<Bf16Path> paths;
  if (hardware().amx) paths.push_back(Bf16Path::Amx);
  if (hardware().avx512_bf16) paths.push_back(Bf16Path::Avx512Bf16);
  return paths;
}

Bf16Path bf16_plan_path() {
  const Bf16Path chosen = g_chosen_path.load(std::memory_order_acquire);
  return chosen != Bf16Path::None ? chosen : bf16_hardware_path();
}

void set_bf16_plan_path(Bf16Path path) {
  if (path != Bf16Path::None) block_kernel(path);  // throws for a hardware path this CPU lacks
  g_chosen_path.store(path, std::memory_order_release);
}

const char* bf16_path_name(Bf16Path path) {
  switch (path) {
    case Bf16Path::Amx: return "amx";
    case Bf16Path::Avx512Bf16: return "avx512_bf16";
    case Bf16Path::Reference: return "reference";
    case Bf16Path::None: return "none";
  }
  return "none";
}

Bf16Path bf16_path_from_name(const std::string& name) {
  for (Bf16Path p : {Bf16Path::Amx, Bf16Path::Avx512Bf16, Bf16Path::Reference}) {
    if (name == bf16_path_name(p)) return p;
  }
  throw ValueError("unknown bf16 path '" + name + "' (known: amx, avx512_bf16, reference)");
}

// ---- Conversion and packing -------------------------------------------------------------------

#ifdef MNNPY_BF16_X86
namespace {
// float_to_bf16 on 16 lanes at a time: the same integer steps, so the same bits.
__attribute__((target("avx512f,avx512bw"))) void floats_to_bf16_avx512(const float* x, int64_t n, uint16_t* out) {
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
  const __m512i half = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1), quiet = _mm512_set1_epi32(0x40);
  int64_t i = 0;
  for (; i < n; i += 16) {
    const __mmask16 lanes = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
    const __m512i bits = _mm512_maskz_loadu_epi32(lanes, x + i);
    const __m512i upper = _mm512_maskz_srli_epi32(0xffff, bits, 16);
    const __m512i sum = _mm512_add_epi32(bits, _mm512_add_epi32(half, _mm512_and_si512(upper, one)));
    const __m512i rounded = _mm512_maskz_srli_epi32(0xffff, sum, 16);
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(bits, abs_mask), inf);
    const __m512i result = _mm512_mask_blend_epi32(nan, rounded, _mm512_or_si512(upper, quiet));
    _mm512_mask_cvtepi32_storeu_epi16(out + i, lanes, result);
  }
}
}  // namespace
#endif

void floats_to_bf16(const float* x, int64_t n, uint16_t* out) {
#ifdef MNNPY_BF16_X86
  if (hardware().avx512) {
    floats_to_bf16_avx512(x, n, out);
    return;
  }
#endif
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, x + i, sizeof bits);
    out[i] = float_to_bf16(bits);
  }
}

PackedBf16B pack_b_bf16(int64_t K, int64_t N, const float* b, int64_t ldb, bool trans_b) {
  PackedBf16B p;
  p.k = K;
  p.n = N;
  p.k_padded = round_up(std::max<int64_t>(K, 1), kBf16DepthStep);
  p.n_padded = round_up(std::max<int64_t>(N, 1), kBf16ColumnStep);
  p.nbytes = (size_t)(p.k_padded * p.n_padded) * sizeof(uint16_t);
  uint16_t* data = static_cast<uint16_t*>(allocate_aligned64(p.nbytes));
  p.data = std::shared_ptr<uint16_t>(data, free_aligned64);
  std::memset(data, 0, p.nbytes);
  constexpr int64_t NB = kBf16ColumnStep;
  const int64_t panel = p.k_padded * NB;  // elements of one panel of 32 columns
  for (int64_t k = 0; k < K; ++k) {
    uint16_t* row = data + (k / 2) * NB * 2 + (k & 1);
    for (int64_t n = 0; n < N; ++n) {
      uint32_t bits;
      std::memcpy(&bits, trans_b ? b + n * ldb + k : b + k * ldb + n, sizeof bits);
      row[(n / NB) * panel + (n % NB) * 2] = float_to_bf16(bits);
    }
  }
  return p;
}

// ---- Products ---------------------------------------------------------------------------------

namespace {

// The task loop of the products: tasks of a block of 32 rows of A times a chunk of B's columns.
// rows_of(row block, m0, rows) gives the block's A rows as bf16 ([32][kp]); a thread asks once per
// run of tasks of the same block.
using RowsOf = std::function<const uint16_t*(int64_t m0, int64_t rows)>;
void run_product_tasks(int64_t M, const RowsOf& rows_of, const PackedBf16B& b, const Bf16BlockStore& store,
                       ThreadPool* pool, Bf16Path path) {
  if (M <= 0 || b.n <= 0) return;
  const BlockKernel kernel = block_kernel(path);
  const int64_t kp = b.k_padded, np = b.n_padded, N = b.n;
  const int64_t row_blocks = ceil_div(M, kBf16RowBlock);
  // Column chunks of up to 256 columns, fewer when the row blocks alone leave threads idle.
  const int threads = pool ? pool->num_threads() : 1;
  int64_t chunk = std::min<int64_t>(np, 256);
  while (chunk > kBf16ColumnStep && row_blocks * ceil_div(np, chunk) < 2 * threads) chunk -= kBf16ColumnStep;
  const int64_t n_chunks = ceil_div(np, chunk);
  parallel_for(pool, row_blocks * n_chunks, 1, [&](int64_t t0, int64_t t1) {
    float* result = thread_buffer(kResultSlot, (size_t)(kBf16RowBlock * chunk));
    int64_t block = -1;
    const uint16_t* a = nullptr;
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t rb = t / n_chunks, cc = t % n_chunks;
      const int64_t m0 = rb * kBf16RowBlock, rows = std::min(kBf16RowBlock, M - m0);
      if (rb != block) {
        a = rows_of(m0, rows);
        block = rb;
      }
      const int64_t col0 = cc * chunk, cols_padded = std::min(chunk, np - col0);
      kernel(a, kp, rows, b.data.get() + col0 * kp, cols_padded / kBf16ColumnStep, result, chunk);
      store(m0, rows, col0, std::min(cols_padded, N - col0), result, chunk);
    }
  });
}

}  // namespace

void gemm_bf16_rows(int64_t M, const Bf16RowFiller& fill, const PackedBf16B& b, const Bf16BlockStore& store,
                    ThreadPool* pool, Bf16Path path) {
  const int64_t kp = b.k_padded;
  auto rows_of = [&](int64_t m0, int64_t rows) -> const uint16_t* {
    uint16_t* a = reinterpret_cast<uint16_t*>(thread_buffer(kRowsSlot, (size_t)(kBf16RowBlock * kp / 2)));
    fill(m0, rows, a, kp);
    std::memset(a + rows * kp, 0, sizeof(uint16_t) * (size_t)((kBf16RowBlock - rows) * kp));
    return a;
  };
  run_product_tasks(M, rows_of, b, store, pool, path);
}

void gemm_bf16_prepared(int64_t M, const uint16_t* a, const PackedBf16B& b, const Bf16BlockStore& store,
                        ThreadPool* pool, Bf16Path path) {
  const int64_t kp = b.k_padded;
  run_product_tasks(M, [&](int64_t m0, int64_t) { return a + m0 * kp; }, b, store, pool, path);
}

void gemm_bf16_rows(int64_t M, const Bf16RowFiller& fill, const PackedBf16B& b, const Bf16Output& out,
                    ThreadPool* pool, Bf16Path path) {
  auto store = [&](int64_t m0, int64_t rows, int64_t col0, int64_t cols, const float* result, int64_t ld) {
    auto store_one = [&](int64_t r, int64_t j) {
      float v = result[r * ld + j];
      if (out.bias) v += out.bias[col0 + j];
      out.c[(m0 + r) * out.row_stride + (col0 + j) * out.col_stride] = activate_scalar(v, out.act);
    };
    // Along the output's rows: C's rows, or for a transposed C (convolutions) its columns.
    if (out.col_stride == 1) {
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < cols; ++j) store_one(r, j);
    } else {
      for (int64_t j = 0; j < cols; ++j)
        for (int64_t r = 0; r < rows; ++r) store_one(r, j);
    }
  };
  gemm_bf16_rows(M, fill, b, Bf16BlockStore(store), pool, path);
}

void gemm_bf16_packed(int64_t M, const float* a, int64_t lda, bool trans_a, const PackedBf16B& b,
                      const Bf16Output& out, ThreadPool* pool, Bf16Path path) {
  const int64_t K = b.k;
  auto fill = [&](int64_t m0, int64_t rows, uint16_t* dst, int64_t kp) {
    if (!trans_a) {
      for (int64_t r = 0; r < rows; ++r) {
        floats_to_bf16(a + (m0 + r) * lda, K, dst + r * kp);
        std::memset(dst + r * kp + K, 0, sizeof(uint16_t) * (size_t)(kp - K));
      }
      return;
    }
    // A^T stored (row k holds A's column k): transposed into float32 rows, then converted.
    float* rows_f32 = thread_buffer(kRowsFloatSlot, (size_t)(rows * K));
    for (int64_t k = 0; k < K; ++k) {
      const float* src = a + k * lda + m0;
      for (int64_t r = 0; r < rows; ++r) rows_f32[r * K + k] = src[r];
    }
    for (int64_t r = 0; r < rows; ++r) {
      floats_to_bf16(rows_f32 + r * K, K, dst + r * kp);
      std::memset(dst + r * kp + K, 0, sizeof(uint16_t) * (size_t)(kp - K));
    }
  };
  gemm_bf16_rows(M, fill, b, out, pool, path);
}

void gemm_bf16_packed(int64_t M, const float* a, int64_t lda, bool trans_a, const PackedBf16B& b, float* c,
                      int64_t ldc, ThreadPool* pool, Bf16Path path) {
  Bf16Output out;
  out.c = c;
  out.row_stride = ldc;
  out.col_stride = 1;
  gemm_bf16_packed(M, a, lda, trans_a, b, out, pool, path);
}

Bf16ConvWeights conv_bf16_pack_weights(const ConvShape& s, const float* w) {
  Bf16ConvWeights packed;
  const int64_t K = s.depth(), rows = s.out_c_per_group();
  // W_g [Cout_g x K] row-major is B^T of out^T = cols^T * B.
  for (int64_t g = 0; g < s.group; ++g) packed.groups.push_back(pack_b_bf16(K, rows, w + g * rows * K, K, true));
  return packed;
}

void conv2d_bf16(const ConvShape& s, const float* x, const Bf16ConvWeights& w, const float* bias,
                 const ConvActivation& act, float* y, ThreadPool* pool, Bf16Path path) {
  const int64_t HW = s.out_h * s.out_w, in_hw = s.in_h * s.in_w, K = s.depth();
  const int64_t cg = s.in_c_per_group(), rows = s.out_c_per_group();
  const int64_t kh = s.kernel_h, kw = s.kernel_w, Wo = s.out_w;
  for (int64_t n = 0; n < s.batch; ++n) {
    for (int64_t g = 0; g < s.group; ++g) {
      const float* xg = x + (n * s.in_c + g * cg) * in_hw;
      Bf16Output out;
      out.c = y + (n * s.out_c + g * rows) * HW;
      out.row_stride = 1;  // row m: output pixel m; column o: output channel o, a plane apart
      out.col_stride = HW;
      out.bias = bias ? bias + g * rows : nullptr;
      out.act = act;
      if (s.is_pointwise()) {
        // The input planes are cols [K x HW]: A^T.
        gemm_bf16_packed(HW, xg, in_hw, true, w.groups[g], out, pool, path);
        continue;
      }
      // An output pixel's im2col row is gathered as float32, then converted in one pass.
      auto fill = [&](int64_t m0, int64_t nrows, uint16_t* dst, int64_t kp) {
        float* row = thread_buffer(kRowsFloatSlot, (size_t)K);
        for (int64_t r = 0; r < nrows; ++r) {
          const int64_t oy = (m0 + r) / Wo, ox = (m0 + r) % Wo;
          for (int64_t c = 0; c < cg; ++c) {
            const float* plane = xg + c * in_hw;
            for (int64_t ky = 0; ky < kh; ++ky) {
              const int64_t iy = oy * s.stride_h - s.pad_top + ky * s.dilation_h;
              float* dk = row + (c * kh + ky) * kw;
              if (iy < 0 || iy >= s.in_h) {
                std::fill(dk, dk + kw, 0.f);
                continue;
              }
              const float* in_row = plane + iy * s.in_w;
              for (int64_t kx = 0; kx < kw; ++kx) {
                const int64_t ix = ox * s.stride_w - s.pad_left + kx * s.dilation_w;
                dk[kx] = ix >= 0 && ix < s.in_w ? in_row[ix] : 0.f;
              }
            }
          }
          floats_to_bf16(row, K, dst + r * kp);
          std::memset(dst + r * kp + K, 0, sizeof(uint16_t) * (size_t)(kp - K));
        }
      };
      gemm_bf16_rows(HW, fill, w.groups[g], out, pool, path);
    }
  }
}

}  // namespace cpu

// ---- Descriptions for tests and benchmarks (mnnpy/runtime_info.h) ----------------------------

bool cpu_computes_bf16() { return cpu::bf16_gemm_available(); }

std::string cpu_bf16_path() { return cpu::bf16_path_name(cpu::bf16_plan_path()); }

std::vector<std::string> cpu_bf16_hardware_paths() {
  std::vector<std::string> names;
  for (cpu::Bf16Path p : cpu::bf16_hardware_paths()) names.push_back(cpu::bf16_path_name(p));
  return names;
}

void cpu_bf16_choose_path(const std::string& path) {
  cpu::set_bf16_plan_path(path.empty() ? cpu::Bf16Path::None : cpu::bf16_path_from_name(path));
}

void cpu_bf16_round(const float* x, int64_t n, uint16_t* out) { cpu::floats_to_bf16(x, n, out); }

std::vector<uint16_t> cpu_bf16_pack_b(int64_t K, int64_t N, const float* b, int64_t ldb, bool trans_b, int64_t* kp,
                                      int64_t* np) {
  const cpu::PackedBf16B p = cpu::pack_b_bf16(K, N, b, ldb, trans_b);
  *kp = p.k_padded;
  *np = p.n_padded;
  return std::vector<uint16_t>(p.data.get(), p.data.get() + p.k_padded * p.n_padded);
}

void cpu_gemm_bf16(const std::string& path, int64_t M, int64_t N, int64_t K, const float* a, bool trans_a,
                   const float* b, bool trans_b, float* c, int threads) {
  const cpu::Bf16Path chosen = cpu::bf16_path_from_name(path);
  const cpu::PackedBf16B packed = cpu::pack_b_bf16(K, N, b, trans_b ? K : N, trans_b);
  ThreadPool* pool = threads > 1 ? &ThreadPool::global() : nullptr;
  cpu::gemm_bf16_packed(M, a, trans_a ? M : K, trans_a, packed, c, N, pool, chosen);
}

}  // namespace mnnpy
