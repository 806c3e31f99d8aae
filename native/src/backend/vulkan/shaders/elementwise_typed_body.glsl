// The body of the typed elementwise shaders: a fused elementwise program (mnnpy/elementwise_program.h)
// whose registers are float32, int32, bool and, with INT64, int64, bit for bit as the CPU computes
// them (backend/cpu/elementwise.cpp). Programs of float32 alone take elementwise_body.glsl. As
// there, the program is specialization constants (elementwise_program.glsl), one pipeline per
// program, in which every switch below resolves; here each opcode word also names the dtypes:
// opcode | in kind << 8 | out kind << 10 (kinds: FLOAT, INT, LONG, BOOL; a load's out kind is its
// input's). A register holds its value's bits (a bool: its byte) in a REG.
//
// The driver inlines every step's instruction before it drops the code a step does not run, so
// its compile time grows with the steps there are: programs of up to 8 instructions take shaders
// of 8 steps (lavapipe: 0.2 s a pipeline instead of 1.4 s), longer ones (to 32) LONG_PROGRAMS.
//
// Memory is read and written as 32-bit words, so no device feature is needed for bytes: a bool is
// a byte of its word, an int64 two words (low first). Each invocation writes whole words of the
// output: with a bool output, the 4 elements of one word (no two invocations write one word).
layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer Params { int p[]; };
layout(std430, binding = 1) writeonly buffer Out { uint y[]; };
layout(std430, binding = 2) readonly buffer In0 { uint x0[]; };
layout(std430, binding = 3) readonly buffer In1 { uint x1[]; };
layout(std430, binding = 4) readonly buffer In2 { uint x2[]; };
layout(std430, binding = 5) readonly buffer In3 { uint x3[]; };
layout(std430, binding = 6) readonly buffer In4 { uint x4[]; };
layout(std430, binding = 7) readonly buffer In5 { uint x5[]; };
layout(std430, binding = 8) readonly buffer In6 { uint x6[]; };
layout(std430, binding = 9) readonly buffer In7 { uint x7[]; };
layout(push_constant) uniform Push { uint n; } pc;

#include "elementwise_program.glsl"
layout(constant_id = 3) const int kOutKind = 0;  // the output's kind (the last register's)

#include "elementwise_math.glsl"

#ifdef EXACT_MUL_ADD
#include "exact_mul_add.glsl"
#endif

#include "elementwise_float_ops.glsl"

const int FLOAT = 0, INT = 1, LONG = 2, BOOL = 3;
// Opcodes past the float ones (elementwise_float_ops.glsl: below 64, on FLOAT registers).
const int CAST = 128, SELECT = 129,
          // bool results, any input kind
          IS_NAN = 130, IS_INF = 131, IS_FINITE = 132, SIGNBIT = 133, LOGICAL_NOT = 134,
          EQUAL = 135, NOT_EQUAL = 136, LESS = 137, LESS_EQUAL = 138, GREATER = 139, GREATER_EQUAL = 140,
          LOGICAL_AND = 141, LOGICAL_OR = 142, LOGICAL_XOR = 143,
          // INT and LONG (BIT_*, INT_COPY: BOOL too)
          INT_NEG = 144, INT_ABS = 145, INT_SIGN = 146, INT_SQUARE = 147, INT_RECIPROCAL = 148, INT_RELU = 149,
          INT_RELU6 = 150, BIT_NOT = 151, INT_COPY = 152,
          INT_ADD = 160, INT_SUB = 161, INT_MUL = 162, INT_FLOORDIV = 163, INT_MOD = 164, INT_FMOD = 165, INT_POW = 166,
          INT_MAX = 167, INT_MIN = 168, INT_SQUARED_DIFF = 169, BIT_AND = 170, BIT_OR = 171, BIT_XOR = 172,
          SHIFT_LEFT = 173, SHIFT_RIGHT = 174, GCD = 175, LCM = 176;

#define ITYPE int
#define UTYPE uint
#define IBITS 32
#include "elementwise_int_ops.glsl"
#undef ITYPE
#undef UTYPE
#undef IBITS
#ifdef INT64
#define ITYPE int64_t
#define UTYPE uint64_t
#define IBITS 64
#include "elementwise_int_ops.glsl"
#undef ITYPE
#undef UTYPE
#undef IBITS
#define REG uint64_t
#else
#define REG uint
#endif

float float_of(REG r) { return uintBitsToFloat(uint(r)); }
int int_of(REG r) { return int(uint(r)); }  // the low word (a truncation for LONG)

// A float32's bits without the sign: zero for +-0, above 0x7f800000 for NaN.
uint unsigned_bits(float v) { return floatBitsToUint(v) & 0x7fffffffu; }
bool is_nan_bits(float v) { return unsigned_bits(v) > 0x7f800000u; }

// An unsigned value below 2^32 as float32, rounded to nearest even: both halves convert exactly
// and the one sum rounds (so the device's own conversion's rounding does not matter).
float u32_to_float(uint v) {
  precise float high = float(v >> 16u) * 65536.0;
  precise float sum = high + float(v & 0xffffu);
  return sum;
}

float int_to_float(int v) {
  precise float high = float(v >> 16) * 65536.0;  // arithmetic shift: the signed high half
  precise float sum = high + float(v & 0xffff);
  return sum;
}

// Saturating as the CPU does: NaN gives the minimum.
int float_to_int(float v) {
  if (is_nan_bits(v) || v <= -2147483648.0) return int(0x80000000u);
  if (v >= 2147483648.0) return 0x7fffffff;
  return int(v);
}

#ifdef INT64
// |v| rounded to 24 bits (nearest even, by its leading bit), then its sign.
float long_to_float(int64_t v) {
  const uint64_t m = v < 0l ? 0ul - uint64_t(v) : uint64_t(v);
  const uvec2 words = unpackUint2x32(m);
  precise float f;
  if (words.y == 0u) {
    f = u32_to_float(words.x);
  } else {
    const int shift = findMSB(words.y) + 32 - 23;  // from 9 to 40
    uint64_t mantissa = m >> uint64_t(shift);
    const uint64_t rest = m & ((1ul << uint64_t(shift)) - 1ul), half_way = 1ul << uint64_t(shift - 1);
    if (rest > half_way || (rest == half_way && (mantissa & 1ul) != 0ul)) mantissa += 1ul;
    f = float(uint(mantissa)) * uintBitsToFloat(uint(shift + 127) << 23);  // both exact
  }
  return v < 0l ? -f : f;
}

int64_t float_to_long(float v) {
  if (is_nan_bits(v) || v <= -9223372036854775808.0) return int64_t(0x8000000000000000ul);
  if (v >= 9223372036854775808.0) return 0x7fffffffffffffffl;
  return int64_t(v);
}
#endif

// A value of kind `from` as kind `to` (NumPy's casts, made defined as the CPU's).
REG cast_value(const int from, const int to, const REG r) {
  if (from == to) return r;
  if (to == BOOL) {
    if (from == FLOAT) return REG(unsigned_bits(float_of(r)) != 0u ? 1u : 0u);  // NaN is true
    return REG(r != REG(0) ? 1u : 0u);
  }
  if (to == FLOAT) {
    if (from == INT) return REG(floatBitsToUint(int_to_float(int_of(r))));
#ifdef INT64
    if (from == LONG) return REG(floatBitsToUint(long_to_float(int64_t(r))));
#endif
    return REG(floatBitsToUint(float(uint(r))));  // a bool's byte
  }
  if (to == INT) return from == FLOAT ? REG(uint(float_to_int(float_of(r)))) : REG(uint(r));  // LONG: its low word
#ifdef INT64
  // to LONG
  if (from == FLOAT) return REG(float_to_long(float_of(r)));
  if (from == INT) return REG(int64_t(int_of(r)));  // sign-extended
#endif
  return r;  // a bool's byte
}

// The predicates (bool results) of one operand.
bool predicate(const int op, const int kind, const REG r) {
  if (kind == FLOAT) {
    const float v = float_of(r);
    const uint bits = unsigned_bits(v);
    switch (op) {
      case IS_NAN: return bits > 0x7f800000u;
      case IS_INF: return bits == 0x7f800000u;
      case IS_FINITE: return bits < 0x7f800000u;
      case SIGNBIT: return (floatBitsToUint(v) & 0x80000000u) != 0u;
      default: return bits == 0u;  // LOGICAL_NOT
    }
  }
  switch (op) {
    case IS_NAN: case IS_INF: return false;
    case IS_FINITE: return true;
#ifdef INT64
    case SIGNBIT: return kind == LONG ? int64_t(r) < 0l : kind == INT && int_of(r) < 0;
#else
    case SIGNBIT: return kind == INT && int_of(r) < 0;
#endif
    default: return r == REG(0);  // LOGICAL_NOT
  }
}

// A float32's place in the order of float32 values, as an integer: a device may flush subnormals
// to zero when it compares floats (an H100 does), and the CPU and NumPy never do. -0 and +0 share
// their place.
int float_order(const uint bits) {
  const int magnitude = int(bits & 0x7fffffffu);
  return (bits >> 31) != 0u ? -magnitude : magnitude;
}

bool compare(const int op, const int kind, const REG a, const REG b) {
  if (kind == FLOAT) {
    const float u = float_of(a), v = float_of(b);
    const uint u_bits = floatBitsToUint(u), v_bits = floatBitsToUint(v);
    const bool unordered = (u_bits & 0x7fffffffu) > 0x7f800000u || (v_bits & 0x7fffffffu) > 0x7f800000u;  // a NaN
    const int p = float_order(u_bits), q = float_order(v_bits);
    switch (op) {
      case EQUAL: return !unordered && p == q;
      case NOT_EQUAL: return unordered || p != q;  // true for NaN
      case LESS: return !unordered && p < q;
      case LESS_EQUAL: return !unordered && p <= q;
      case GREATER: return !unordered && p > q;
      case GREATER_EQUAL: return !unordered && p >= q;
      case LOGICAL_AND: return unsigned_bits(u) != 0u && unsigned_bits(v) != 0u;
      case LOGICAL_OR: return unsigned_bits(u) != 0u || unsigned_bits(v) != 0u;
      default: return (unsigned_bits(u) != 0u) != (unsigned_bits(v) != 0u);
    }
  }
#ifdef INT64
  if (kind == LONG) return int_compare(op, int64_t(a), int64_t(b));
#endif
  return int_compare(op, int_of(a), int_of(b));  // a bool's byte compares as a non-negative int
}

// One instruction's result from its operands' values (every argument but the values is a
// constant after specialization).
REG run(const int word, const REG a, const REG b, const REG c) {
  const int op = word & 255, in_kind = (word >> 8) & 3, out_kind = (word >> 10) & 3;
  if (op < 64) return REG(floatBitsToUint(apply(op, float_of(a), float_of(b), float_of(c))));
  if (op == CAST) return cast_value(in_kind, out_kind, a);
  if (op == SELECT) return uint(a) != 0u ? b : c;
  if (op < EQUAL) return REG(predicate(op, in_kind, a) ? 1u : 0u);
  if (op < INT_NEG) return REG(compare(op, in_kind, a, b) ? 1u : 0u);
  if (in_kind == BOOL) {  // the raw bytes: only copies and the bit ops reach here
    return op == BIT_AND ? a & b : (op == BIT_OR ? a | b : (op == BIT_XOR ? a ^ b : a));
  }
#ifdef INT64
  if (in_kind == LONG) return REG(op < INT_ADD ? int_unary(op, int64_t(a)) : int_binary(op, int64_t(a), int64_t(b)));
#endif
  return REG(uint(op < INT_ADD ? int_unary(op, int_of(a)) : int_binary(op, int_of(a), int_of(b))));
}

uint input_word(int k, uint w) {
  switch (k) {
    case 0: return x0[w];
    case 1: return x1[w];
    case 2: return x2[w];
    case 3: return x3[w];
    case 4: return x4[w];
    case 5: return x5[w];
    case 6: return x6[w];
    default: return x7[w];
  }
}

REG load(int k, uint i, const int kind) {
  const uint offset = input_offset(k, i);
  if (kind == BOOL) return REG((input_word(k, offset >> 2u) >> ((offset & 3u) * 8u)) & 0xffu);
#ifdef INT64
  if (kind == LONG) return packUint2x32(uvec2(input_word(k, 2u * offset), input_word(k, 2u * offset + 1u)));
#endif
  return REG(input_word(k, offset));
}

REG element(const uint i) {
  REG r[kMaxInstructions];
  // Instruction t, where the program has one: register t is its result.
#define STEP(t) \
  if (t < kCount) r[t] = (op##t & 255) == LOAD ? load(a##t, i, (op##t >> 10) & 3) : run(op##t, r[a##t], r[b##t], r[c##t]);
  STEP(0) STEP(1) STEP(2) STEP(3) STEP(4) STEP(5) STEP(6) STEP(7)
#ifdef LONG_PROGRAMS
  STEP(8) STEP(9) STEP(10) STEP(11) STEP(12) STEP(13) STEP(14) STEP(15) STEP(16) STEP(17) STEP(18) STEP(19) STEP(20)
  STEP(21) STEP(22) STEP(23) STEP(24) STEP(25) STEP(26) STEP(27) STEP(28) STEP(29) STEP(30) STEP(31)
#endif
  return r[kCount - 1];
}

// A fixed grid whose invocations take every (invocations in the grid)-th output word from their
// own: neighbouring invocations on neighbouring words. A bool output's word is 4 elements (those
// past n are left 0), an int64's element is 2 words.
void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  const uint start = gl_WorkGroupID.x * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (kOutKind == BOOL) {
    const uint words = (pc.n + 3u) / 4u;
    for (uint w = start; w < words; w += stride) {
      uint packed = 0u;
      [[unroll]] for (uint j = 0u; j < 4u; ++j) {
        if (4u * w + j < pc.n) packed |= (uint(element(4u * w + j)) & 0xffu) << (8u * j);
      }
      y[w] = packed;
    }
  } else {
    for (uint i = start; i < pc.n; i += stride) {
      const REG v = element(i);
#ifdef INT64
      if (kOutKind == LONG) {
        const uvec2 words = unpackUint2x32(v);
        y[2u * i] = words.x;
        y[2u * i + 1u] = words.y;
        continue;
      }
#endif
      y[i] = uint(v);
    }
  }
}
