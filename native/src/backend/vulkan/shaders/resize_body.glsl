// Resize of float32 planes (backend/vulkan/resize_kernel.cpp), included by resize.comp and
// resize_exact.comp, which define mul_add(a, b, c) = a * b + c. One invocation per output,
// neighbouring invocations on neighbouring output columns. The taps and weights are the host's
// tables (ops/resize_taps.h), combined in the CPU kernel's order: each row tap's input row resized
// horizontally (the first tap multiplied, the others fused-multiply-added in turn), then those
// rows blended vertically the same way. Nearest (and an identity resize) gathers.
layout(local_size_x = 256) in;
layout(constant_id = 0) const bool INTERPOLATE = false;  // false: gather through tap 0
layout(constant_id = 1) const bool COLS_IDENTITY = false;  // no horizontal pass: rows are read as they are
// The horizontal pass starts with a product (2 or 4 taps, as the CPU's vector code) or with a
// fused multiply-add onto 0 (any other count of taps: antialiasing), which differ in the sign of zero.
layout(constant_id = 2) const bool COLS_MULTIPLY_FIRST = true;

layout(std430, binding = 0) writeonly buffer Out { float y[]; };
layout(std430, binding = 1) readonly buffer In { float x[]; };
// Row taps' input rows [taps_h * out_h] (a tap of weight 0 reads tap 0's row, as the CPU's),
// their weights (float bits), then the column taps' input columns and weights [taps_w * out_w].
layout(std430, binding = 2) readonly buffer Taps { int taps[]; };
layout(push_constant) uniform Push {
  uint outputs;  // planes * out_h * out_w
  uint in_h, in_w, out_h, out_w;
  uint taps_h, taps_w;
  uint row_weights, col_indices, col_weights;  // where each part of the table starts
} pc;

float horizontal(uint row, uint ow) {
  precise float acc = 0.0;
  for (uint t = 0u; t < pc.taps_w; ++t) {
    const uint at = t * pc.out_w + ow;
    const float v = x[row + uint(taps[pc.col_indices + at])];
    const float w = intBitsToFloat(taps[pc.col_weights + at]);
    if (t == 0u && COLS_MULTIPLY_FIRST) {
      acc = w * v;
    } else {
      acc = mul_add(w, v, acc);
    }
  }
  return acc;
}

void main() {
  const uint index = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 256u + gl_LocalInvocationID.x;
  if (index >= pc.outputs) return;
  const uint ow = index % pc.out_w, rest = index / pc.out_w;
  const uint oh = rest % pc.out_h, plane = rest / pc.out_h;
  const uint base = plane * pc.in_h * pc.in_w;
  if (!INTERPOLATE) {
    y[index] = x[base + uint(taps[oh]) * pc.in_w + uint(taps[pc.col_indices + ow])];
    return;
  }
  precise float acc = 0.0;
  for (uint t = 0u; t < pc.taps_h; ++t) {
    const uint at = t * pc.out_h + oh;
    const uint row = base + uint(taps[at]) * pc.in_w;
    const float w = intBitsToFloat(taps[pc.row_weights + at]);
    const float h = COLS_IDENTITY ? x[row + ow] : horizontal(row, ow);
    if (t == 0u) {
      acc = w * h;
    } else {
      acc = mul_add(w, h, acc);
    }
  }
  y[index] = acc;
}
