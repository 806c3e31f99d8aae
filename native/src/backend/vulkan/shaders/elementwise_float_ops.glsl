// The float32 instructions of the elementwise shaders: their opcodes (elementwise_kernel.cpp maps
// the program's codes to them) and the cheap ones' arithmetic. Included after elementwise_math.glsl
// (and exact_mul_add.glsl where EXACT_MUL_ADD is defined).
const int LOAD = 0, NEG = 1, ABS = 2, SQUARE = 3, SQRT = 4, RSQRT = 5, RECIPROCAL = 6, EXP = 7, SIGMOID = 8,
          RELU = 9, RELU6 = 10, FLOOR = 11, CEIL = 12, RINT = 13, TRUNC = 14, SIGN = 15, COPY = 16,
          ADD = 32, SUB = 33, MUL = 34, DIV = 35, MAXIMUM = 36, MINIMUM = 37, FMAX = 38, FMIN = 39, SQUARED_DIFF = 40,
          MUL_ADD = 63,
          HEAVY = 64, EXPM1 = 64, EXP2 = 65, LOG = 66, LOG1P = 67, LOG2 = 68, LOG10 = 69, SIN = 70, COS = 71, TAN = 72,
          ASIN = 73, ACOS = 74, ATAN = 75, SINH = 76, COSH = 77, TANH = 78, ASINH = 79, ACOSH = 80, ATANH = 81, ERF = 82,
          ERFC = 83, GELU = 84, GELU_TANH = 85, SOFTPLUS = 86, SELU = 87, CBRT = 88, SOFTSIGN = 89, POW = 96, ATAN2 = 97,
          HYPOT = 98, COPYSIGN = 99, NEXTAFTER = 100;

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
