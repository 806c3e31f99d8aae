// The body of the elementwise shaders: a fused elementwise program over float32
// (mnnpy/elementwise_program.h). The program itself is given as specialization constants
// (backend/vulkan/elementwise_kernel.cpp maps its codes to the opcodes below), so each program
// gets its own pipeline in which the driver unrolls the loop, resolves every switch and keeps the
// registers in registers: a shader per program without a compiler at run time. The inputs'
// broadcast strides are in the parameter buffer, made once per plan. Every register is `precise`:
// a multiply feeding an add is fused only where the program says MulAdd, as on the CPU.
layout(local_size_x = 256) in;

layout(constant_id = 0) const int kCount = 1;   // instructions
layout(constant_id = 1) const int kDense = 0;   // bit k: input k has the output's shape
layout(constant_id = 2) const int kRank = 1;
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
          ADD = 32, SUB = 33, MUL = 34, DIV = 35, MAXIMUM = 36, MINIMUM = 37, FMAX = 38, FMIN = 39,
          SQUARED_DIFF = 40, MUL_ADD = 64;

float nan_value() { return uintBitsToFloat(0x7fc00000u); }

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

// One instruction's result from its operands' values (op is a constant after specialization).
float apply(const int op, const float a, const float b, const float c) {
  precise float v;
  switch (op) {
    case NEG: v = -a; break;
    case ABS: v = abs(a); break;
    case SQUARE: v = a * a; break;
    case SQRT: v = sqrt(a); break;
    case RSQRT: v = inversesqrt(a); break;
    case RECIPROCAL: v = 1.0 / a; break;
    case EXP: v = exp(a); break;
    case SIGMOID: v = 1.0 / (1.0 + exp(-a)); break;
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
    case MAXIMUM: v = (isnan(a) || isnan(b)) ? nan_value() : max(a, b); break;
    case MINIMUM: v = (isnan(a) || isnan(b)) ? nan_value() : min(a, b); break;
    case FMAX: v = isnan(a) ? b : (isnan(b) ? a : max(a, b)); break;
    case FMIN: v = isnan(a) ? b : (isnan(b) ? a : min(a, b)); break;
    case SQUARED_DIFF: { precise float d = a - b; v = d * d; break; }
#ifdef EXACT_MUL_ADD
    case MUL_ADD: v = mul_add(a, b, c); break;
#endif
    default: v = nan_value(); break;
  }
  return v;
}


void element(const uint i) {
  precise float r[kMaxInstructions];
  // Instruction t, where the program has one: register t is its result. Every index is a
  // specialization constant, so the driver keeps the registers in registers.
#define STEP(t) \
  if (t < kCount) r[t] = op##t == LOAD ? load(a##t, i) : apply(op##t, r[a##t], r[b##t], r[c##t]);
  STEP(0) STEP(1) STEP(2) STEP(3) STEP(4) STEP(5) STEP(6) STEP(7) STEP(8) STEP(9) STEP(10) STEP(11) STEP(12) STEP(13)
  STEP(14) STEP(15) STEP(16) STEP(17) STEP(18) STEP(19) STEP(20) STEP(21) STEP(22) STEP(23) STEP(24) STEP(25) STEP(26)
  STEP(27) STEP(28) STEP(29) STEP(30) STEP(31)
  y[i] = r[kCount - 1];
}

// Each invocation takes every (invocations in the grid)-th element from its own: a fixed grid
// whatever the size, and neighbouring invocations on neighbouring elements.
void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_WorkGroupID.x * gl_WorkGroupSize.x + gl_LocalInvocationID.x; i < pc.n; i += stride) {
    element(i);
  }
}
