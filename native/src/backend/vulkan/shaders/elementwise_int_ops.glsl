// Integer instructions of the typed elementwise shader for one width, included once per width
// with ITYPE (int or int64_t), UTYPE (its unsigned twin) and IBITS defined; GLSL overloads keep
// the widths apart. The CPU's semantics (backend/cpu/elementwise.cpp): wrapping arithmetic, and
// every division written on magnitudes in UTYPE, so nothing hits a case SPIR-V leaves undefined
// (a negative operand of %, MIN / -1, a division by 0).

UTYPE magnitude(ITYPE a) { return a < ITYPE(0) ? UTYPE(0) - UTYPE(a) : UTYPE(a); }

// a % b truncated toward zero (a's sign), for b not 0.
ITYPE truncated_rem(ITYPE a, ITYPE b) {
  const UTYPE r = magnitude(a) % magnitude(b);
  return ITYPE(a < ITYPE(0) ? UTYPE(0) - r : r);
}

ITYPE int_floordiv(ITYPE a, ITYPE b) {
  if (b == ITYPE(0)) return ITYPE(0);
  if (b == ITYPE(-1)) return ITYPE(UTYPE(0) - UTYPE(a));  // MIN // -1 wraps to MIN
  const UTYPE ua = magnitude(a), ub = magnitude(b);
  const UTYPE q = ua / ub;
  if ((a < ITYPE(0)) == (b < ITYPE(0))) return ITYPE(q);
  return ITYPE(UTYPE(0) - q - (q * ub != ua ? UTYPE(1) : UTYPE(0)));
}

// Python's %: the result has b's sign.
ITYPE int_mod(ITYPE a, ITYPE b) {
  if (b == ITYPE(0) || b == ITYPE(-1)) return ITYPE(0);
  const ITYPE r = truncated_rem(a, b);
  return r != ITYPE(0) && (r < ITYPE(0)) != (b < ITYPE(0)) ? r + b : r;
}

ITYPE int_fmod(ITYPE a, ITYPE b) { return b == ITYPE(0) || b == ITYPE(-1) ? ITYPE(0) : truncated_rem(a, b); }

// By squaring, wrapping; a negative exponent gives 0 unless the base is 1 or -1.
ITYPE int_pow(ITYPE base, ITYPE e) {
  if (e < ITYPE(0)) {
    return base == ITYPE(1) ? ITYPE(1) : (base == ITYPE(-1) ? ((e & ITYPE(1)) != ITYPE(0) ? ITYPE(-1) : ITYPE(1)) : ITYPE(0));
  }
  UTYPE result = UTYPE(1), b = UTYPE(base), u = UTYPE(e);
  while (u != UTYPE(0)) {
    if ((u & UTYPE(1)) != UTYPE(0)) result *= b;
    b *= b;
    u >>= UTYPE(1);
  }
  return ITYPE(result);
}

// Of |a| and |b| (|MIN| fits UTYPE); never negative but for gcd(MIN, 0), which wraps as on the CPU.
UTYPE int_gcd(ITYPE a, ITYPE b) {
  UTYPE x = magnitude(a), y = magnitude(b);
  while (y != UTYPE(0)) {
    const UTYPE r = x % y;
    x = y;
    y = r;
  }
  return x;
}

ITYPE int_lcm(ITYPE a, ITYPE b) {
  const UTYPE g = int_gcd(a, b);
  return g == UTYPE(0) ? ITYPE(0) : ITYPE((magnitude(a) / g) * magnitude(b));
}

ITYPE int_unary(const int op, const ITYPE x) {
  switch (op) {
    case INT_NEG: return ITYPE(UTYPE(0) - UTYPE(x));
    case INT_ABS: return ITYPE(magnitude(x));
    case INT_SIGN: return x > ITYPE(0) ? ITYPE(1) : (x < ITYPE(0) ? ITYPE(-1) : ITYPE(0));
    case INT_SQUARE: return ITYPE(UTYPE(x) * UTYPE(x));
    case INT_RECIPROCAL: return x == ITYPE(1) || x == ITYPE(-1) ? x : ITYPE(0);  // 1 / x truncated; 0 for 0
    case INT_RELU: return x > ITYPE(0) ? x : ITYPE(0);
    case INT_RELU6: return x < ITYPE(0) ? ITYPE(0) : (x > ITYPE(6) ? ITYPE(6) : x);
    case BIT_NOT: return ~x;
    default: return x;  // COPY
  }
}

ITYPE int_binary(const int op, const ITYPE a, const ITYPE b) {
  switch (op) {
    case INT_ADD: return ITYPE(UTYPE(a) + UTYPE(b));
    case INT_SUB: return ITYPE(UTYPE(a) - UTYPE(b));
    case INT_MUL: return ITYPE(UTYPE(a) * UTYPE(b));
    case INT_FLOORDIV: return int_floordiv(a, b);
    case INT_MOD: return int_mod(a, b);
    case INT_FMOD: return int_fmod(a, b);
    case INT_POW: return int_pow(a, b);
    case INT_MAX: return a > b ? a : b;
    case INT_MIN: return a < b ? a : b;
    case INT_SQUARED_DIFF: { const UTYPE d = UTYPE(a) - UTYPE(b); return ITYPE(d * d); }
    case BIT_AND: return a & b;
    case BIT_OR: return a | b;
    case BIT_XOR: return a ^ b;
    case SHIFT_LEFT: return UTYPE(b) >= UTYPE(IBITS) ? ITYPE(0) : ITYPE(UTYPE(a) << UTYPE(b));
    case SHIFT_RIGHT:  // arithmetic; past the width, -1 for negative a
      return UTYPE(b) >= UTYPE(IBITS) ? (a < ITYPE(0) ? ITYPE(-1) : ITYPE(0)) : a >> b;
    case GCD: return ITYPE(int_gcd(a, b));
    default: return int_lcm(a, b);  // LCM
  }
}

// The comparisons and logical ops (bool results).
bool int_compare(const int op, const ITYPE a, const ITYPE b) {
  switch (op) {
    case EQUAL: return a == b;
    case NOT_EQUAL: return a != b;
    case LESS: return a < b;
    case LESS_EQUAL: return a <= b;
    case GREATER: return a > b;
    case GREATER_EQUAL: return a >= b;
    case LOGICAL_AND: return a != ITYPE(0) && b != ITYPE(0);
    case LOGICAL_OR: return a != ITYPE(0) || b != ITYPE(0);
    default: return (a != ITYPE(0)) != (b != ITYPE(0));  // LOGICAL_XOR
  }
}
