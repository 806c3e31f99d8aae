// The body of the elementwise shaders: a fused elementwise program over float32
// (mnnpy/elementwise_program.h). The program itself is given as specialization constants
// (elementwise_program.glsl; backend/vulkan/elementwise_kernel.cpp maps its codes to the opcodes
// of elementwise_float_ops.glsl), so each program gets its own pipeline in which the driver
// unrolls the loop, resolves every switch and keeps the registers in registers: a shader per
// program without a compiler at run time. The inputs' broadcast strides are in the parameter
// buffer, made once per plan. Every register is `precise`:
// a multiply feeding an add is fused only where the program says MulAdd, as on the CPU.
//
// The math functions of elementwise_math.glsl beyond exp (opcodes from HEAVY) are compiled in
// only with HEAVY_MATH, and there at one call site: a driver inlines every call before it drops
// the cases a pipeline does not use, so a call in each of the 32 steps would make it compile 32
// copies of all of them for every program (1.6 s a pipeline on lavapipe instead of 50 ms). The
// program runs instead in segments, each ended by one heavy instruction: a loop over the
// segments runs the cheap steps of the current one, hands the heavy instruction's operands to the
// call, and the next segment stores its result. Each step's segment follows from the opcodes
// before it, so the driver can still resolve everything when it unrolls the loop.
layout(local_size_x = 256) in;

// Parameters: the output's dims (innermost last) at [0, 8), then 8 strides per input.
layout(std430, binding = 0) readonly buffer Params { int p[]; };
layout(std430, binding = 1) writeonly buffer Out { float y[]; };
layout(std430, binding = 2) readonly buffer In0 { float x0[]; };
layout(std430, binding = 3) readonly buffer In1 { float x1[]; };
layout(std430, binding = 4) readonly buffer In2 { float x2[]; };
layout(std430, binding = 5) readonly buffer In3 { float x3[]; };
layout(std430, binding = 6) readonly buffer In4 { float x4[]; };
layout(std430, binding = 7) readonly buffer In5 { float x5[]; };
layout(std430, binding = 8) readonly buffer In6 { float x6[]; };
layout(std430, binding = 9) readonly buffer In7 { float x7[]; };
layout(push_constant) uniform Push { uint n; } pc;

#include "elementwise_program.glsl"
layout(constant_id = 3) const int kHeavy = 0;   // heavy instructions (HEAVY_MATH only)
// Instruction t's segment: the heavy instructions before it (opcodes in [64, 128)).
const int seg0 = 0;
#define SEGMENT(t, u) const int seg##t = seg##u + ((op##u >> 6) & 1);
SEGMENT(1, 0) SEGMENT(2, 1) SEGMENT(3, 2) SEGMENT(4, 3) SEGMENT(5, 4) SEGMENT(6, 5) SEGMENT(7, 6) SEGMENT(8, 7)
SEGMENT(9, 8) SEGMENT(10, 9) SEGMENT(11, 10) SEGMENT(12, 11) SEGMENT(13, 12) SEGMENT(14, 13) SEGMENT(15, 14)
SEGMENT(16, 15) SEGMENT(17, 16) SEGMENT(18, 17) SEGMENT(19, 18) SEGMENT(20, 19) SEGMENT(21, 20) SEGMENT(22, 21)
SEGMENT(23, 22) SEGMENT(24, 23) SEGMENT(25, 24) SEGMENT(26, 25) SEGMENT(27, 26) SEGMENT(28, 27) SEGMENT(29, 28)
SEGMENT(30, 29) SEGMENT(31, 30)

#include "elementwise_math.glsl"

#ifdef EXACT_MUL_ADD
#include "exact_mul_add.glsl"
#endif

#include "elementwise_float_ops.glsl"

float load(int k, uint i) {
  const uint offset = input_offset(k, i);
  switch (k) {
    case 0: return x0[offset];
    case 1: return x1[offset];
    case 2: return x2[offset];
    case 3: return x3[offset];
    case 4: return x4[offset];
    case 5: return x5[offset];
    case 6: return x6[offset];
    default: return x7[offset];
  }
}

#ifdef HEAVY_MATH
// One heavy instruction's result (op is uniform: the same instruction for every invocation).
float apply_heavy(const int op, const float a, const float b) {
  precise float v;
  switch (op) {
    case EXPM1: v = expm1_f(a); break;
    case EXP2: v = exp2_f(a); break;
    case LOG: v = log_f(a); break;
    case LOG1P: v = log1p_f(a); break;
    case LOG2: v = log2_f(a); break;
    case LOG10: v = log10_f(a); break;
    case SIN: v = sin_f(a); break;
    case COS: v = cos_f(a); break;
    case TAN: v = tan_f(a); break;
    case ASIN: v = asin_f(a); break;
    case ACOS: v = acos_f(a); break;
    case ATAN: v = atan_f(a); break;
    case SINH: v = sinh_f(a); break;
    case COSH: v = cosh_f(a); break;
    case TANH: v = tanh_f(a); break;
    case ASINH: v = asinh_f(a); break;
    case ACOSH: v = acosh_f(a); break;
    case ATANH: v = atanh_f(a); break;
    case ERF: v = erf_f(a); break;
    case ERFC: v = erfc_f(a); break;
    case GELU: v = gelu_f(a); break;
    case GELU_TANH: v = gelu_tanh_f(a); break;
    case SOFTPLUS: v = softplus_f(a); break;
    case SELU: v = selu_f(a); break;
    case CBRT: v = cbrt_f(a); break;
    case SOFTSIGN: v = softsign_f(a); break;
    case POW: v = pow_f(a, b); break;
    case ATAN2: v = atan2_f(a, b); break;
    case HYPOT: v = hypot_f(a, b); break;
    case COPYSIGN: v = copy_sign(a, b); break;
    case NEXTAFTER: v = nextafter_f(a, b); break;
    default: v = math_nan(); break;
  }
  return v;
}
#endif

void element(const uint i) {
  precise float r[kMaxInstructions];
#ifdef HEAVY_MATH
  // The heavy instruction ending the current segment: its opcode and operands, then its result.
  int heavy_op = 0;
  precise float heavy_a = 0.0, heavy_b = 0.0, heavy_result = 0.0;
  [[unroll]] for (int segment = 0; segment <= kHeavy; ++segment) {
    // Instruction t, where the program has one and it belongs to this segment: register t is its
    // result (a heavy one's, in the next segment).
#define STEP(t) \
    if (t < kCount) { \
      if (op##t < HEAVY) { \
        if (seg##t == segment) r[t] = op##t == LOAD ? load(a##t, i) : apply(op##t, r[a##t], r[b##t], r[c##t]); \
      } else if (seg##t == segment) { \
        heavy_op = op##t; \
        heavy_a = r[a##t]; \
        heavy_b = r[b##t]; \
      } else if (seg##t + 1 == segment) { \
        r[t] = heavy_result; \
      } \
    }
#else
  // Instruction t, where the program has one: register t is its result. Every index is a
  // specialization constant, so the driver keeps the registers in registers.
#define STEP(t) \
  if (t < kCount) r[t] = op##t == LOAD ? load(a##t, i) : apply(op##t, r[a##t], r[b##t], r[c##t]);
#endif
  STEP(0) STEP(1) STEP(2) STEP(3) STEP(4) STEP(5) STEP(6) STEP(7) STEP(8) STEP(9) STEP(10) STEP(11) STEP(12) STEP(13)
  STEP(14) STEP(15) STEP(16) STEP(17) STEP(18) STEP(19) STEP(20) STEP(21) STEP(22) STEP(23) STEP(24) STEP(25) STEP(26)
  STEP(27) STEP(28) STEP(29) STEP(30) STEP(31)
#ifdef HEAVY_MATH
    if (segment < kHeavy) heavy_result = apply_heavy(heavy_op, heavy_a, heavy_b);
  }
#endif
  y[i] = r[kCount - 1];
}

// Each invocation takes every (invocations in the grid)-th element from its own: a fixed grid
// whatever the size, and neighbouring invocations on neighbouring elements.
void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  uint i = gl_WorkGroupID.x * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
#ifndef HEAVY_MATH
  // Four elements a step while all four are there, so that their loads are in flight together
  // (light programs move more bytes than they compute). i + 3 stride stays below 2^32: at most
  // 2^31 elements, and the grid is at most 8192 x 256.
  for (; i + 3u * stride < pc.n; i += 4u * stride) {
    element(i);
    element(i + stride);
    element(i + 2u * stride);
    element(i + 3u * stride);
  }
#endif
  for (; i < pc.n; i += stride) element(i);
}
