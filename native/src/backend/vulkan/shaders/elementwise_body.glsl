// The body of the elementwise shaders: a fused elementwise program over float32
// (mnnpy/elementwise_program.h). The program itself is given as specialization constants
// (backend/vulkan/elementwise_kernel.cpp maps its codes to the opcodes below), so each program
// gets its own pipeline in which the driver unrolls the loop, resolves every switch and keeps the
// registers in registers: a shader per program without a compiler at run time. The inputs'
// broadcast strides are in the parameter buffer, made once per plan. Every register is `precise`:
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

layout(constant_id = 0) const int kCount = 1;   // instructions
layout(constant_id = 1) const int kDense = 0;   // bit k: input k has the output's shape
layout(constant_id = 2) const int kRank = 1;
layout(constant_id = 3) const int kHeavy = 0;   // heavy instructions (HEAVY_MATH only)
// Instruction t: opcode, then operands a, b, c, at constant ids 4 + 4t ... 7 + 4t.
#define INSTRUCTION(t, id0, id1, id2, id3) \
  layout(constant_id = id0) const int op##t = 0; \
  layout(constant_id = id1) const int a##t = 0; \
  layout(constant_id = id2) const int b##t = 0; \
  layout(constant_id = id3) const int c##t = 0;
INSTRUCTION(0, 4, 5, 6, 7) INSTRUCTION(1, 8, 9, 10, 11) INSTRUCTION(2, 12, 13, 14, 15) INSTRUCTION(3, 16, 17, 18, 19)
INSTRUCTION(4, 20, 21, 22, 23) INSTRUCTION(5, 24, 25, 26, 27) INSTRUCTION(6, 28, 29, 30, 31) INSTRUCTION(7, 32, 33, 34, 35)
INSTRUCTION(8, 36, 37, 38, 39) INSTRUCTION(9, 40, 41, 42, 43) INSTRUCTION(10, 44, 45, 46, 47) INSTRUCTION(11, 48, 49, 50, 51)
INSTRUCTION(12, 52, 53, 54, 55) INSTRUCTION(13, 56, 57, 58, 59) INSTRUCTION(14, 60, 61, 62, 63) INSTRUCTION(15, 64, 65, 66, 67)
INSTRUCTION(16, 68, 69, 70, 71) INSTRUCTION(17, 72, 73, 74, 75) INSTRUCTION(18, 76, 77, 78, 79) INSTRUCTION(19, 80, 81, 82, 83)
INSTRUCTION(20, 84, 85, 86, 87) INSTRUCTION(21, 88, 89, 90, 91) INSTRUCTION(22, 92, 93, 94, 95) INSTRUCTION(23, 96, 97, 98, 99)
INSTRUCTION(24, 100, 101, 102, 103) INSTRUCTION(25, 104, 105, 106, 107) INSTRUCTION(26, 108, 109, 110, 111)
INSTRUCTION(27, 112, 113, 114, 115) INSTRUCTION(28, 116, 117, 118, 119) INSTRUCTION(29, 120, 121, 122, 123)
INSTRUCTION(30, 124, 125, 126, 127) INSTRUCTION(31, 128, 129, 130, 131)
// Instruction t's segment: the heavy instructions before it (opcodes in [64, 128)).
const int seg0 = 0;
#define SEGMENT(t, u) const int seg##t = seg##u + ((op##u >> 6) & 1);
SEGMENT(1, 0) SEGMENT(2, 1) SEGMENT(3, 2) SEGMENT(4, 3) SEGMENT(5, 4) SEGMENT(6, 5) SEGMENT(7, 6) SEGMENT(8, 7)
SEGMENT(9, 8) SEGMENT(10, 9) SEGMENT(11, 10) SEGMENT(12, 11) SEGMENT(13, 12) SEGMENT(14, 13) SEGMENT(15, 14)
SEGMENT(16, 15) SEGMENT(17, 16) SEGMENT(18, 17) SEGMENT(19, 18) SEGMENT(20, 19) SEGMENT(21, 20) SEGMENT(22, 21)
SEGMENT(23, 22) SEGMENT(24, 23) SEGMENT(25, 24) SEGMENT(26, 25) SEGMENT(27, 26) SEGMENT(28, 27) SEGMENT(29, 28)
SEGMENT(30, 29) SEGMENT(31, 30)
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

const int kMaxRank = 8, kMaxInstructions = 32, kHeader = kMaxRank;
const int LOAD = 0, NEG = 1, ABS = 2, SQUARE = 3, SQRT = 4, RSQRT = 5, RECIPROCAL = 6, EXP = 7, SIGMOID = 8,
          RELU = 9, RELU6 = 10, FLOOR = 11, CEIL = 12, RINT = 13, TRUNC = 14, SIGN = 15, COPY = 16,
          ADD = 32, SUB = 33, MUL = 34, DIV = 35, MAXIMUM = 36, MINIMUM = 37, FMAX = 38, FMIN = 39, SQUARED_DIFF = 40,
          MUL_ADD = 63,
          HEAVY = 64, EXPM1 = 64, EXP2 = 65, LOG = 66, LOG1P = 67, LOG2 = 68, LOG10 = 69, SIN = 70, COS = 71, TAN = 72,
          ASIN = 73, ACOS = 74, ATAN = 75, SINH = 76, COSH = 77, TANH = 78, ASINH = 79, ACOSH = 80, ATANH = 81, ERF = 82,
          ERFC = 83, GELU = 84, GELU_TANH = 85, SOFTPLUS = 86, SELU = 87, CBRT = 88, SOFTSIGN = 89, POW = 96, ATAN2 = 97,
          HYPOT = 98, COPYSIGN = 99, NEXTAFTER = 100;

#include "elementwise_math.glsl"

#ifdef EXACT_MUL_ADD
#include "exact_mul_add.glsl"
#endif

float load(int k, uint i) {
  uint offset = i;
  if ((kDense & (1 << k)) == 0) {
    const int strides = kHeader + k * kMaxRank;
    offset = 0u;
    uint rest = i;
    for (int d = kRank - 1; d >= 0; --d) {
      const uint dim = uint(p[d]);
      offset += (rest % dim) * uint(p[strides + d]);
      rest /= dim;
    }
  }
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

// One cheap instruction's result from its operands' values (op is a constant after specialization).
float apply(const int op, const float a, const float b, const float c) {
  precise float v;
  // Exp and Sigmoid share one exp: a driver compiles what every step could run before it drops
  // what this pipeline's steps do not.
  precise float e = 0.0;
  if (op == EXP || op == SIGMOID) e = exp_parts(op == EXP ? a : -abs(a), 0.0, 0);
  switch (op) {
    case NEG: v = -a; break;
    case ABS: v = abs(a); break;
    case SQUARE: v = a * a; break;
    case SQRT: v = sqrt(a); break;
    case RSQRT: v = inversesqrt(a); break;
    case RECIPROCAL: v = 1.0 / a; break;
    case EXP: v = isnan(a) ? a : e; break;
    case SIGMOID: v = isnan(a) ? a : (a >= 0.0 ? 1.0 : e) / (1.0 + e); break;  // as the CPU
    case RELU: v = isnan(a) ? a : max(a, 0.0); break;
    case RELU6: v = isnan(a) ? a : min(max(a, 0.0), 6.0); break;
    case FLOOR: v = floor(a); break;
    case CEIL: v = ceil(a); break;
    case RINT: v = roundEven(a); break;
    case TRUNC: v = trunc(a); break;
    case SIGN: v = isnan(a) ? a : sign(a); break;
    case COPY: v = a; break;
    case ADD: v = a + b; break;
    case SUB: v = a - b; break;
    case MUL: v = a * b; break;
    case DIV: v = a / b; break;
    case MAXIMUM: v = (isnan(a) || isnan(b)) ? math_nan() : max(a, b); break;
    case MINIMUM: v = (isnan(a) || isnan(b)) ? math_nan() : min(a, b); break;
    case FMAX: v = isnan(a) ? b : (isnan(b) ? a : max(a, b)); break;
    case FMIN: v = isnan(a) ? b : (isnan(b) ? a : min(a, b)); break;
    case SQUARED_DIFF: { precise float d = a - b; v = d * d; break; }
#ifdef EXACT_MUL_ADD
    case MUL_ADD: v = mul_add(a, b, c); break;
#endif
    default: v = math_nan(); break;
  }
  return v;
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
