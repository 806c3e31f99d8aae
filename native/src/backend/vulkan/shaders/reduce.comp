// Reduce over the middle axis of a float32 [outer, n, inner] block (backend/vulkan/reduce_kernel.cpp).
// Each output takes a segment of the workgroup's invocations (a power of two, `segment`), which
// stride over its row together and finish with a tree in shared memory (`SEGMENT`): the whole workgroup for
// few outputs, a part of it for each of many contiguous rows (neighbouring invocations reading
// neighbouring addresses), one invocation for rows too short to share. Max and min propagate NaN and
// argmax/argmin take the first index of the extreme, a NaN winning at its first position, as
// NumPy's (and the CPU's).
#version 450
layout(local_size_x = 256) in;
layout(constant_id = 0) const int KIND = 0;  // ops/reduce_kind.h
// Invocations per output: a power of two up to the workgroup's 256 (a constant, so that the
// strides and the tree compile to shifts and unrolled steps).
layout(constant_id = 1) const uint SEGMENT = 1;
const int SUM = 0, PROD = 1, MIN = 2, MAX = 3, ARGMIN = 6, ARGMAX = 7;
const bool kArg = KIND == ARGMIN || KIND == ARGMAX;

layout(std430, binding = 0) writeonly buffer Out { uint y[]; };  // float32, or int64 as two words
layout(std430, binding = 1) readonly buffer In { float x[]; };
layout(push_constant) uniform Push {
  uint outputs;  // outer * inner
  uint n, inner;
} pc;

struct Acc {
  float v;
  uint i;  // the index of v along n (argmax/argmin)
};

bool is_nan(float v) { return (floatBitsToUint(v) & 0x7fffffffu) > 0x7f800000u; }

Acc identity() {
  const float inf = uintBitsToFloat(0x7f800000u);
  // An index past every row's, so that any element wins a tie against it.
  if (KIND == SUM) return Acc(0.0, 0u);
  if (KIND == PROD) return Acc(1.0, 0u);
  if (KIND == MIN || KIND == ARGMIN) return Acc(inf, 0xffffffffu);
  return Acc(-inf, 0xffffffffu);
}

Acc combine(Acc a, Acc b) {
  if (KIND == SUM) return Acc(a.v + b.v, 0u);
  if (KIND == PROD) return Acc(a.v * b.v, 0u);
  if (KIND == MAX) return (a.v >= b.v || is_nan(a.v)) ? a : b;
  if (KIND == MIN) return (a.v <= b.v || is_nan(a.v)) ? a : b;
  const bool better = KIND == ARGMAX ? b.v > a.v : b.v < a.v;
  const bool b_wins = is_nan(a.v) ? is_nan(b.v) && b.i < a.i : is_nan(b.v) || better || (b.v == a.v && b.i < a.i);
  return b_wins ? b : a;
}

void store(uint out_index, Acc r) {
  if (kArg) {
    y[2u * out_index] = r.i;
    y[2u * out_index + 1u] = 0u;
  } else {
    y[out_index] = floatBitsToUint(r.v);
  }
}

// The first element of the output's row.
uint row_start(uint out_index) { return (out_index / pc.inner) * pc.n * pc.inner + out_index % pc.inner; }

shared float shared_v[256];
shared uint shared_i[256];

void main() {
  const uint group = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  const uint lane = gl_LocalInvocationID.x, segment = SEGMENT;
  const uint out_index = group * (gl_WorkGroupSize.x / segment) + lane / segment, part = lane % segment;
  const bool live = out_index < pc.outputs;  // the others still take part in the barriers
  Acc acc = identity();
  if (live) {
    const uint start = row_start(out_index);
    for (uint k = part; k < pc.n; k += segment) acc = combine(acc, Acc(x[start + k * pc.inner], k));
  }
  if (segment > 1u) {
    shared_v[lane] = acc.v;
    shared_i[lane] = acc.i;
  }
  for (uint half_width = segment / 2u; half_width > 0u; half_width /= 2u) {
    memoryBarrierShared();
    barrier();
    if (part < half_width) {
      acc = combine(acc, Acc(shared_v[lane + half_width], shared_i[lane + half_width]));
      shared_v[lane] = acc.v;
      shared_i[lane] = acc.i;
    }
  }
  if (live && part == 0u) store(out_index, acc);
}
