// The body of the elementwise shaders: a fused elementwise program over float32
// (mnnpy/elementwise_program.h), interpreted per element: the program and the inputs' broadcast strides are in the parameter buffer, made once
// per plan (backend/vulkan/elementwise_kernel.cpp, which maps the program's codes to the opcodes
// below). Every register is `precise`: a multiply feeding an add is fused only where the program
// says MulAdd, as on the CPU.
layout(local_size_x = 256) in;

// Parameters: [0] rank, [1] inputs, [2] instructions, [3] whether input k is dense (bit k),
// [4..12) the output's dims (innermost last), then 8 strides per input, then 4 ints per
// instruction: opcode, a, b, c.
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

const int kMaxRank = 8, kMaxInstructions = 32, kHeader = 4 + kMaxRank;
const int LOAD = 0, NEG = 1, ABS = 2, SQUARE = 3, SQRT = 4, RSQRT = 5, RECIPROCAL = 6, EXP = 7, SIGMOID = 8,
          RELU = 9, RELU6 = 10, FLOOR = 11, CEIL = 12, RINT = 13, TRUNC = 14, SIGN = 15, COPY = 16,
          ADD = 32, SUB = 33, MUL = 34, DIV = 35, MAXIMUM = 36, MINIMUM = 37, FMAX = 38, FMIN = 39,
          SQUARED_DIFF = 40, MUL_ADD = 64;

float nan_value() { return uintBitsToFloat(0x7fc00000u); }

#ifdef EXACT_MUL_ADD
// a * b + c rounded once, as the program's MulAdd promises (GLSL's fma may round twice): the
// product is exact in double; the sum is rounded to odd (its last bit set where it was inexact),
// and double -> float then rounds correctly, since double keeps more than two extra bits.
float mul_add(float a, float b, float c) {
  precise double p = double(a) * double(b);
  precise double s = p + double(c);
  precise double back = s - p;
  precise double error = (p - (s - back)) + (double(c) - back);  // p + c == s + error, exactly
  if (!isinf(s) && !isnan(s) && error != 0.0) {
    uvec2 bits = unpackDouble2x32(s);
    if ((bits.x & 1u) == 0u) {
      if ((error > 0.0) == (s > 0.0)) {
        bits.x += 1u;  // even, so no carry
      } else {
        if (bits.x == 0u) bits.y -= 1u;
        bits.x -= 1u;
      }
      s = packDouble2x32(bits);
    }
  }
  return float(s);
}
#endif

float load(int k, uint i) {
  uint offset = i;
  if ((p[3] & (1 << k)) == 0) {
    const int rank = p[0];
    const int strides = kHeader + k * kMaxRank;
    offset = 0u;
    uint rest = i;
    for (int d = rank - 1; d >= 0; --d) {
      const uint dim = uint(p[4 + d]);
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

void main() {
  const uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (i >= pc.n) return;
  precise float r[kMaxInstructions];
  const int count = p[2];
  const int program = kHeader + p[1] * kMaxRank;
  for (int t = 0; t < count; ++t) {
    const int op = p[program + 4 * t];
    const int ia = p[program + 4 * t + 1], ib = p[program + 4 * t + 2], ic = p[program + 4 * t + 3];
    if (op == LOAD) {
      r[t] = load(ia, i);
      continue;
    }
    const float a = r[ia];
    const float b = op >= ADD ? r[ib] : 0.0;
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
      case MUL_ADD: v = mul_add(a, b, r[ic]); break;
#endif
      default: v = nan_value(); break;
    }
    r[t] = v;
  }
  y[i] = r[count - 1];
}
