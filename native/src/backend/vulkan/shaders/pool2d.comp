// MaxPool2D and AvgPool2D over float32 NCHW planes (backend/vulkan/pool_kernel.cpp).
// Windows: one invocation per output, neighbouring invocations on neighbouring output columns. The
// valid tap ranges and average divisors come from the host's tables (ops/pool_windows.h), and the
// sum is formed in the CPU kernel's order (each column of the window summed down its valid rows,
// then the columns left to right, padding adding 0), so averages match the CPU's bit for bit.
// Whole planes (global pooling): SEGMENT invocations per plane stride over it (consecutive
// invocations, consecutive addresses), then combine through a tree in shared memory.
// Max pooling propagates NaN: a window holding a NaN gives NaN, as NumPy's and PyTorch's.
#version 450
layout(local_size_x = 256) in;
layout(constant_id = 0) const bool IS_MAX = true;
layout(constant_id = 1) const bool WHOLE_PLANE = false;
layout(constant_id = 2) const uint SEGMENT = 1;  // whole planes: invocations per plane, a power of 2 up to 256

layout(std430, binding = 0) writeonly buffer Out { float y[]; };
layout(std430, binding = 1) readonly buffer In { float x[]; };
// Per output row: first and last (exclusive) valid kernel row, 1 / its share of the divisor (float
// bits); then the same per output column.
layout(std430, binding = 2) readonly buffer Windows { int windows[]; };
layout(push_constant) uniform Push {
  uint outputs;  // windows: planes * out_h * out_w; whole planes: planes
  uint in_h, in_w, out_h, out_w;
  int kernel_w, stride_h, stride_w, dilation_h, dilation_w;
  int pad_top, pad_left;  // of the trimmed geometry: may be negative
  float plane_scale;      // whole-plane average: 1 / (in_h * in_w)
} pc;

bool is_nan(float v) { return (floatBitsToUint(v) & 0x7fffffffu) > 0x7f800000u; }

// The larger of a and v; a NaN on either side wins.
float max_nan(float a, float v) { return (v > a || is_nan(v)) ? v : a; }

float identity() { return IS_MAX ? uintBitsToFloat(0xff800000u) : 0.0; }  // -inf or 0

shared float partial[256];

void pool_plane(uint group) {
  const uint lane = gl_LocalInvocationID.x, plane = group * (256u / SEGMENT) + lane / SEGMENT;
  const uint part = lane % SEGMENT, n = pc.in_h * pc.in_w;
  precise float acc = identity();
  if (plane < pc.outputs) {
    const uint base = plane * n;
    for (uint k = part; k < n; k += SEGMENT) acc = IS_MAX ? max_nan(acc, x[base + k]) : acc + x[base + k];
  }
  // Every invocation takes part in every barrier, those past the last plane too.
  partial[lane] = acc;
  for (uint half_width = SEGMENT / 2u; half_width > 0u; half_width /= 2u) {
    memoryBarrierShared();
    barrier();
    if (part < half_width) {
      const float other = partial[lane + half_width];
      acc = IS_MAX ? max_nan(acc, other) : acc + other;
      partial[lane] = acc;
    }
  }
  if (part == 0u && plane < pc.outputs) {
    precise float scaled = acc * pc.plane_scale;
    y[plane] = IS_MAX ? acc : scaled;
  }
}

void pool_window(uint index) {
  if (index >= pc.outputs) return;
  const uint ow = index % pc.out_w, rest = index / pc.out_w;
  const uint oh = rest % pc.out_h, plane = rest / pc.out_h;
  const int row_first = windows[oh], row_last = windows[pc.out_h + oh];
  const uint col_table = 3u * pc.out_h;
  const int top = int(oh) * pc.stride_h - pc.pad_top, left = int(ow) * pc.stride_w - pc.pad_left;
  const uint base = plane * pc.in_h * pc.in_w;
  if (IS_MAX) {
    const int col_first = windows[col_table + ow], col_last = windows[col_table + pc.out_w + ow];
    float acc = identity();
    for (int r = row_first; r < row_last; ++r) {
      const uint row = base + uint(top + r * pc.dilation_h) * pc.in_w;
      for (int c = col_first; c < col_last; ++c) acc = max_nan(acc, x[row + uint(left + c * pc.dilation_w)]);
    }
    y[index] = acc;
    return;
  }
  precise float acc = 0.0;
  for (int k = 0; k < pc.kernel_w; ++k) {
    const int col = left + k * pc.dilation_w;
    precise float column = 0.0;  // a column in the padding, or of no valid row, adds 0
    if (col >= 0 && col < int(pc.in_w) && row_first < row_last) {
      const uint at = base + uint(col);
      column = x[at + uint(top + row_first * pc.dilation_h) * pc.in_w];
      for (int r = row_first + 1; r < row_last; ++r) column += x[at + uint(top + r * pc.dilation_h) * pc.in_w];
    }
    acc = k == 0 ? column : acc + column;
  }
  const float inv_h = intBitsToFloat(windows[2u * pc.out_h + oh]);
  const float inv_w = intBitsToFloat(windows[col_table + 2u * pc.out_w + ow]);
  precise float scaled = acc * inv_h;
  scaled *= inv_w;
  y[index] = scaled;
}

void main() {
  const uint group = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (WHOLE_PLANE) {
    pool_plane(group);
  } else {
    pool_window(group * 256u + gl_LocalInvocationID.x);
  }
}
