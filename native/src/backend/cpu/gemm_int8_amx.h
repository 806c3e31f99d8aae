// The AMX-INT8 path of gemm_int8 (backend/cpu/gemm_int8.h): Intel's tile instruction TDPBUSD
// (uint8 x int8 products summed into int32, like VNNI's vpdpbusd) on 16 x 16 tiles of C.
//
// B stays as pack_int8_b leaves it: a panel's depth group is one tile row (16 columns x 4 depths),
// so 16 groups in a row are one B tile of depth 64 (1024 contiguous bytes, row stride 64) and
// packed weights serve every path. A is copied per call into rows of Kp bytes (Kp: K rounded up
// to 64), zero past K, an int8 A shifted by +128 as on the VNNI path; its row sums come with it.
// A block of C is 32 rows x 32 columns (2 x 2 tiles); its raw int32 sums go through the caller's
// epilogue (the VNNI target's, which takes the +128 back), so results are those of every path.
//
// Used only where the CPU has AMX-TILE and AMX-INT8 and Linux grants the tile state
// (amx_features().int8), on the AVX3_DL target, when not switched off (the environment variable
// MNNPY_INT8_AMX=0 at start, or set_int8_amx_setting) and for products of at least
// kAmxInt8MinRows rows and kAmxInt8MinDepth depths (by default).
#pragma once
#include <cstdint>

#include "backend/cpu/gemm_int8.h"

namespace mnnpy {
namespace cpu {

constexpr int64_t kAmxInt8BlockRows = 32;  // rows of a block of C: two tiles of 16
constexpr int64_t kAmxInt8BlockCols = 32;  // columns of a block of C: two panels of B
constexpr int64_t kAmxInt8TileDepth = 64;  // depths of one A or B tile (64 bytes a row)
// The smallest products AMX takes by default; smaller ones stay on the vector path.
constexpr int64_t kAmxInt8MinRows = 16;
constexpr int64_t kAmxInt8MinDepth = 64;

bool int8_amx_available();  // the CPU and the OS allow AMX-INT8 in this process

struct Int8AmxSetting {
  bool on = true;  // off when MNNPY_INT8_AMX=0 at start
  int64_t min_rows = kAmxInt8MinRows, min_depth = kAmxInt8MinDepth;
};
Int8AmxSetting int8_amx_setting();
// Tests and benchmarks: turns the AMX path on or off for later products and sets the smallest
// product it takes (min_rows, min_depth >= 1); returns the previous setting. On a CPU without
// AMX-INT8 the path stays unused either way.
Int8AmxSetting set_int8_amx_setting(const Int8AmxSetting& setting);

// Whether a product of M rows and K depths runs on AMX (asked by gemm_int8 on AVX3_DL).
bool int8_amx_chosen(int64_t M, int64_t K);

// The caller's epilogue for one block of raw sums: block[r * kAmxInt8BlockCols + j] for C's row
// i0 + r (r < rows) and column j0 + j (j < cols); row_sums[m]: the sum of A's row m (as stored,
// before any shift), modulo 2^32.
using Int8BlockEpilogue = void (*)(const void* context, int32_t* block, int64_t i0, int rows, int64_t j0, int cols,
                                   const int32_t* row_sums);

// Raw sums of A[M x K] (row stride lda, int8 when a_signed else uint8) times the packed B, block
// by block into `finish`. Threads of pool take blocks of rows times blocks of columns. Call only
// when int8_amx_available(). rows_in_place: the epilogue never reads row_sums (B has no zero
// points), so the blocks of a uint8 A's rows are read where they lie, not copied, each row's
// last tile running past K (into the next row, or padding: rows_padded says that lda holds K
// rounded up to 64 for every row) where B is zero; row_sums are then zeros. byte_output: the
// epilogue writes one byte per element, so threads split the rows rather than the columns.
void gemm_int8_amx(int64_t M, const void* a, int64_t lda, bool a_signed, const PackedInt8B& b, ThreadPool* pool,
                   Int8BlockEpilogue finish, const void* context, bool rows_in_place = false,
                   bool rows_padded = false, bool byte_output = false);

// A channels-last image whose pixels are read in place as the rows of A: an implicit
// convolution, with no patches. Row m of A is output pixel (oh, ow) = (m / out_w, m % out_w); its
// depths (ki, kj, c) are channel c of pixel (oh * stride_h + ki, ow * stride_w + kj) of x, which
// holds rows of `width` pixels of `channels` bytes (uint8: an int8 input goes in flipped, + 128),
// padding included (the caller's copy holds the zero point there). A tile is 16 pixels of one
// output row, a strided load of x: tiles of the columns past out_w read pixels up to
// ((out_w rounded up to 16) - 1) * stride_w + kernel_w - 1 of a row, which x must hold (the
// results there are dropped). channels: a multiple of 64, so that a tap is whole depth tiles
// (tap_tiles = channels / 64). A layer of few channels takes a whole kernel row as one tap
// instead (kernel_w 1, tap_tiles 1): the 64 bytes from the row's first pixel on, its kernel_w *
// channels values then the next pixels' bytes, which meet B's zeros (B packed with 64 depths per
// kernel row); x then holds 64 bytes past its last pixel.
// flat (stride 1 only): x's rows of `width` pixels share their padding columns (a row's right
// padding is the next row's left, so width = in_w + pad_left and the right padding is at most the
// left), and output position p = oh * width + ow reads from pixel p on: the tiles then run over
// all positions in order, across output rows, and only the positions with ow >= out_w are
// dropped (instead of a row's last partial tile); x holds the tiles' reads past its last row.
struct Int8ImageRows {
  const uint8_t* x = nullptr;
  int64_t width = 0, channels = 0, out_h = 0, out_w = 0, kernel_h = 0, kernel_w = 0, stride_h = 1, stride_w = 1;
  int64_t tap_tiles = 0;
  bool flat = false;
  // Row taps (kernel_w 1) over stacked rows: image row r holds `tap_rows` consecutive rows of the
  // padded image pixel by pixel (stack_image_rows), and tap ki reads image row
  // oh * stride_h + ki * tap_rows. A 7x7 first layer on 3 channels takes 3 taps instead of 7.
  int64_t tap_rows = 1;
  // Nonzero: a stride-2 layer's padded image as four planes of this many bytes, one per (row
  // parity, column parity) in that order, each of rows of `width` pixels, read flat at stride 1:
  // tap (ki, kj) reads plane (ki % 2, kj % 2) from pixel (ki / 2, kj / 2) on. An output row then
  // fills tiles as a stride-1 layer's does, where its own tiles of 16 strided pixels would hold a
  // 7-pixel row (resnet50's last stage) in 16 tile rows.
  int64_t phase_bytes = 0;
};

// Rows [r0, r1) of the stacked image of Int8ImageRows::tap_rows: out's row r holds pixel by pixel
// (`stacked` runs of `channels` bytes each) the pixels of rows r * row_step .. r * row_step +
// stacked - 1 of `image` (rows of `width` pixels of `channels` bytes), which must hold those rows
// and 64 bytes past its last. Rows of out are width * stacked * channels bytes. For channels <= 16
// and 2 <= stacked <= kMaxStackedRows, stacked * channels <= 64; call only when
// int8_amx_available() (AVX-512 VBMI permutes: the AVX3_DL target that AMX's path runs on has them).
constexpr int64_t kMaxStackedRows = 8;
void stack_image_rows(const uint8_t* image, int64_t width, int64_t channels, int64_t stacked, int64_t row_step,
                      int64_t r0, int64_t r1, uint8_t* out);

// Raw sums of the image's rows times the packed B (K = kernel_h * kernel_w * channels, depths in
// the order (ki, kj, c)) into `finish`, a tile of 16 rows at a time; row_sums are zeros (for B
// without zero points only). Call only when int8_amx_available().
void gemm_int8_amx_image(const Int8ImageRows& rows, const PackedInt8B& b, ThreadPool* pool, Int8BlockEpilogue finish,
                         const void* context);

// The int8 GEMM (gemm_int8) with A an image read in place: on AMX only (the AVX3_DL target with
// AMX chosen for M rows and B's depth), for 8-bit outputs (Int8Epilogue::requant_multiplier) with
// one zero point of A and B without zero points; a_signed: the input was int8 (the image holds
// it flipped). gemm_int8_image_applies says whether a call would run; gemm_int8_image runs one.
bool gemm_int8_image_applies(int64_t M, bool a_signed, const PackedInt8B& b, const Int8Epilogue& ep);
void gemm_int8_image(const Int8ImageRows& rows, bool a_signed, const PackedInt8B& b, const Int8Epilogue& ep, void* c,
                     int64_t ldc, ThreadPool* pool);

}  // namespace cpu
}  // namespace mnnpy
