// Conv2D in float32 NCHW as an implicit GEMM (backend/vulkan/conv_kernel.cpp; conv2d.comp, and conv2d_f16.comp
// with float16 tiles): per group g,
// Y[co][m] = sum_k W[co][k] X[k][m] with m the output pixel over the whole batch (n, oh, ow), k the
// filter tap (ci, ky, kx) and X the im2col matrix, read from the input on the fly (0 in the padding).
// The tiling follows shaders/matmul.comp: a workgroup computes a BM x BN tile (output channels x
// pixels), each invocation a TM x TN block of it in registers, in runs of 4 so that shared memory
// is read as vec4s; K goes BK at a time through k-major shared tiles while the next step loads into
// registers. Consecutive invocations load consecutive pixels of one tap (addresses a stride apart)
// and consecutive taps of one filter, and write neighbouring pixels of the output.
// Pointwise layers (1x1, stride 1, no padding) read X[k][m] as the input's channel k directly.
// The grid: x pixel tiles (looping past the grid's limit), y channel tiles, z groups times K
// splits. A split (PARTIAL) writes its raw sums, laid out as the output, into its slice of the
// scratch, and shaders/split_k_finish.comp adds them up; otherwise the bias, the residual (an
// input shaped like the output, added after the bias as the Add it replaces would) and the
// activation are applied here.
// Included after TILE4 (the shared tiles' vec4 type) and TO_TILE (a value as stored in them) are defined.
layout(constant_id = 0) const uint BM = 64;  // output channels per tile
layout(constant_id = 1) const uint BN = 64;  // output pixels per tile
layout(constant_id = 2) const uint BK = 16;
layout(constant_id = 3) const uint TM = 4;  // multiples of 4 dividing BM, BN
layout(constant_id = 4) const uint TN = 4;
// The workgroup size, (BM / TM) * (BN / TN), a multiple of BN (so that each invocation loads one
// pixel's column of X) with BK a multiple of its quotient.
layout(local_size_x_id = 5) in;
layout(constant_id = 6) const uint KH = 1;
layout(constant_id = 7) const uint KW = 1;
layout(constant_id = 8) const bool POINTWISE = false;
layout(constant_id = 9) const int ACTIVATION = 0;
layout(constant_id = 10) const bool HAS_BIAS = false;
layout(constant_id = 11) const bool PARTIAL = false;
layout(constant_id = 12) const bool HAS_RESIDUAL = false;

const uint THREADS = (BM / TM) * (BN / TN);
const uint A_LOADS = (BM * BK + THREADS - 1) / THREADS;
const uint X_ROWS = THREADS / BN;  // rows of the X tile loaded at once
const uint B_LOADS = BK / X_ROWS;
const uint A_ROW = BM + 4, B_ROW = BN + 4;  // padded as in matmul.comp
const uint TAPS = KH * KW;

layout(std430, binding = 0) writeonly buffer YOut { float y[]; };
layout(std430, binding = 1) readonly buffer XIn { float x[]; };
// The weights as float32 bits, or (HALF_WEIGHTS, conv2d_f16.comp with constant weights) as float16
// pairs, the first in the low half, rounded once when the kernel was made.
layout(constant_id = 13) const bool HALF_WEIGHTS = false;
layout(std430, binding = 2) readonly buffer WIn { uint w_bits[]; };
float weight(uint i) { return HALF_WEIGHTS ? unpackHalf2x16(w_bits[i >> 1])[i & 1] : uintBitsToFloat(w_bits[i]); }
layout(std430, binding = 3) readonly buffer BiasIn { float bias[]; };
layout(std430, binding = 4) readonly buffer ResidualIn { float residual[]; };

layout(push_constant) uniform Push {
  uint out_c_group, pixels, depth;  // the GEMM: M, N (batch * OH * OW), K
  uint in_c, in_c_group, out_c, in_h, in_w, out_w, out_hw;
  int stride_h, stride_w, pad_top, pad_left, dilation_h, dilation_w;
  uint splits, split_depth;  // K in `splits` ranges of split_depth (a multiple of BK)
  uint partial_stride;       // floats between splits' slices of the scratch
  float p0, p1;
} pc;

shared TILE4 a_tile[BK * A_ROW / 4];
shared TILE4 b_tile[BK * B_ROW / 4];

// W[co][k] of the tile at (co0, k0), element e of the tile along k: 0 outside the matrix.
float load_w(uint e, uint w_base, uint co0, uint k0, uint k_end) {
  const uint co = co0 + e / BK, k = k0 + e % BK;
  if (e >= BM * BK || co >= pc.out_c_group || k >= k_end) return 0.0;
  return weight(w_base + co * pc.depth + k);
}
void store_w(uint e, float v) {
  const uint m = e / BK, k = e % BK;
  if (e < BM * BK) a_tile[(k * A_ROW + m) / 4][m % 4] = TO_TILE(v);
}

// This invocation's pixel of the X tile: where its window starts.
struct Pixel {
  bool valid;
  uint x_base;  // the group's first input channel of its image, plus (pointwise) the pixel
  int ih0, iw0;
};

Pixel pixel_at(uint m, uint g) {
  Pixel p;
  p.valid = m < pc.pixels;
  const uint image = m / pc.out_hw, at = m % pc.out_hw;
  const uint oh = at / pc.out_w, ow = at % pc.out_w;
  p.x_base = (image * pc.in_c + g * pc.in_c_group) * pc.in_h * pc.in_w + (POINTWISE ? at : 0);
  p.ih0 = int(oh) * pc.stride_h - pc.pad_top;
  p.iw0 = int(ow) * pc.stride_w - pc.pad_left;
  return p;
}

// X[k][m] for this invocation's pixel: tap k = (ci, ky, kx) of its window, 0 in the padding.
float load_x(const Pixel p, uint k, uint k_end) {
  if (!p.valid || k >= k_end) return 0.0;
  const uint plane = pc.in_h * pc.in_w;
  if (POINTWISE) return x[p.x_base + k * plane];
  const uint ci = k / TAPS, tap = k % TAPS;
  const int ih = p.ih0 + int(tap / KW) * pc.dilation_h, iw = p.iw0 + int(tap % KW) * pc.dilation_w;
  if (uint(ih) >= pc.in_h || uint(iw) >= pc.in_w) return 0.0;
  return x[p.x_base + ci * plane + uint(ih) * pc.in_w + uint(iw)];
}

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint tx = tid % (BN / TN), ty = tid / (BN / TN);
  const uint g = gl_WorkGroupID.z / pc.splits, split = gl_WorkGroupID.z % pc.splits;
  const uint co0 = gl_WorkGroupID.y * BM;
  const uint k_begin = split * pc.split_depth, k_end = min(k_begin + pc.split_depth, pc.depth);
  const uint w_base = g * pc.out_c_group * pc.depth;
  const uint column = tid % BN, x_row = tid / BN;  // of the X tile this invocation loads
  const uint row_run = BM * 4 / TM, col_run = BN * 4 / TN;
  const uint tiles = (pc.pixels + BN - 1) / BN;
  for (uint tile = gl_WorkGroupID.x; tile < tiles; tile += gl_NumWorkGroups.x) {
    const uint m0 = tile * BN;
    const Pixel pixel = pixel_at(m0 + column, g);
    vec4 acc[TM * TN / 4];  // row r, columns of run j: acc[r * TN / 4 + j]
    for (uint i = 0; i < TM * TN / 4; ++i) acc[i] = vec4(0.0);
    float a_next[A_LOADS], b_next[B_LOADS];
    for (uint i = 0; i < A_LOADS; ++i) a_next[i] = load_w(tid + i * THREADS, w_base, co0, k_begin, k_end);
    for (uint i = 0; i < B_LOADS; ++i) b_next[i] = load_x(pixel, k_begin + x_row + i * X_ROWS, k_end);

    for (uint k0 = k_begin; k0 < k_end; k0 += BK) {
      for (uint i = 0; i < A_LOADS; ++i) store_w(tid + i * THREADS, a_next[i]);
      for (uint i = 0; i < B_LOADS; ++i) {
        const uint k = x_row + i * X_ROWS;
        b_tile[(k * B_ROW + column) / 4][column % 4] = TO_TILE(b_next[i]);
      }
      barrier();
      if (k0 + BK < k_end) {
        for (uint i = 0; i < A_LOADS; ++i) a_next[i] = load_w(tid + i * THREADS, w_base, co0, k0 + BK, k_end);
        for (uint i = 0; i < B_LOADS; ++i) b_next[i] = load_x(pixel, k0 + BK + x_row + i * X_ROWS, k_end);
      }
      for (uint k = 0; k < BK; ++k) {
        vec4 a_reg[TM / 4], b_reg[TN / 4];
        for (uint i = 0; i < TM / 4; ++i) a_reg[i] = vec4(a_tile[(k * A_ROW + i * row_run) / 4 + ty]);
        for (uint j = 0; j < TN / 4; ++j) b_reg[j] = vec4(b_tile[(k * B_ROW + j * col_run) / 4 + tx]);
        for (uint i = 0; i < TM / 4; ++i) {
          for (uint r = 0; r < 4; ++r) {
            for (uint j = 0; j < TN / 4; ++j) {
              acc[(i * 4 + r) * (TN / 4) + j] = fma(vec4(a_reg[i][r]), b_reg[j], acc[(i * 4 + r) * (TN / 4) + j]);
            }
          }
        }
      }
      barrier();
    }

    // Where this invocation's pixels go: image * Cout * OH * OW + pixel, plus channel * OH * OW.
    uint out_at[TN];
    for (uint j = 0; j < TN / 4; ++j) {
      for (uint q = 0; q < 4; ++q) {
        const uint m = m0 + j * col_run + tx * 4 + q;
        out_at[j * 4 + q] = m < pc.pixels ? (m / pc.out_hw) * pc.out_c * pc.out_hw + m % pc.out_hw : 0xffffffffu;
      }
    }
    const uint slice = PARTIAL ? split * pc.partial_stride : 0;
    for (uint i = 0; i < TM / 4; ++i) {
      for (uint r = 0; r < 4; ++r) {
        const uint co = co0 + i * row_run + ty * 4 + r;
        if (co >= pc.out_c_group) continue;
        const uint channel = g * pc.out_c_group + co;
        const float b = HAS_BIAS && !PARTIAL ? bias[channel] : 0.0;
        for (uint j = 0; j < TN / 4; ++j) {
          for (uint q = 0; q < 4; ++q) {
            if (out_at[j * 4 + q] == 0xffffffffu) continue;
            const uint at = out_at[j * 4 + q] + channel * pc.out_hw;
            precise float v = acc[(i * 4 + r) * (TN / 4) + j][q];
            if (!PARTIAL) {
              if (HAS_BIAS) v += b;
              if (HAS_RESIDUAL) v += residual[at];
              v = conv_activate(ACTIVATION, v, pc.p0, pc.p1);
            }
            y[slice + at] = v;
          }
        }
      }
    }
  }
}
