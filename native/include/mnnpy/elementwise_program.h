// The fused elementwise program: what every backend implements to run elementwise ops. The
// executor fuses a connected group of elementwise nodes of one output shape into a program of
// EwInstr; a backend interprets it (the CPU) or compiles it (a shader). The codes below are the
// whole contract: their meaning is NumPy's unless a comment says otherwise, and integer
// arithmetic wraps (two's complement) where NumPy's would overflow.
#pragma once
#include <cstdint>

#include "mnnpy/dtype.h"

namespace mnnpy {

namespace ew {

// Unary codes. Integer inputs: Floor, Ceil, Trunc, Rint and Copy return them unchanged; the
// float-only math never sees integers (the graph casts them to float first). Bool inputs: the
// predicates and LogicalNot/BitwiseNot (both logical not) apply, every other code copies.
enum UnaryCode : int {
  kNeg,         // -x
  kAbs,         // |x|; |INT_MIN| wraps to INT_MIN
  kSign,        // -1, 0 or 1; NaN stays NaN
  kSquare,      // x * x
  kSqrt,
  kRsqrt,       // 1 / sqrt(x)
  kReciprocal,  // 1 / x; integers: truncating division, 0 for x == 0
  kExp, kExpm1, kExp2, kLog, kLog1p, kLog2, kLog10,
  kSin, kCos, kTan, kAsin, kAcos, kAtan, kSinh, kCosh, kTanh, kAsinh, kAcosh, kAtanh,
  kFloor, kCeil,
  kRint,        // round half to even (the Round op, np.rint)
  kTrunc,
  kErf, kErfc,
  kSigmoid,     // 1 / (1 + exp(-x))
  kRelu,        // max(x, 0); NaN stays NaN
  kRelu6,       // min(max(x, 0), 6); NaN stays NaN
  kGelu,        // x * Phi(x) = 0.5 x erfc(-x / sqrt 2) (erfc: no cancellation in the left tail)
  kGeluTanh,    // 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
  kSoftplus,    // log1p(exp(x)); x itself above 20
  kSoftsign,    // x / (1 + |x|)
  kSelu,        // 1.0507009873554804934 * (x > 0 ? x : 1.6732632423543772848 * expm1(x))
  kCbrt,
  kLogicalNot,  // x == 0 (bool result)
  kBitwiseNot,  // ~x (integers and bool)
  kIsNan, kIsInf, kIsFinite,  // bool results; integers: false, false, true
  kSignbit,     // bool: the sign bit (-0.0 and -NaN included); integers: x < 0
  kCopy,        // x (the Identity op)
  kNumUnary
};

// Binary codes; both operands have the instruction's in_dtype. On bool operands Add is or,
// Mul and Minimum/Fmin are and, Maximum/Fmax are or, Sub is xor.
enum BinaryCode : int {
  kAdd, kSub, kMul,
  kDiv,         // a / b (floats only: the graph casts integers to float64 first)
  kFloorDiv,    // floor(a / b) (NumPy's floor_divide); integers: 0 where b == 0, MIN // -1 wraps
  kMod,         // Python's %: the result has b's sign (0.0 takes b's sign); integers: 0 where b == 0
  kFmod,        // C fmod: the result has a's sign; integers: 0 where b is 0 or -1
  kPow,         // integers: by squaring, wrapping; a negative exponent gives 0 unless a is 1 or -1
  kMaximum, kMinimum,  // NaN in either operand gives NaN
  kFmax, kFmin,        // a NaN operand is ignored (NaN only when both are)
  kAtan2, kHypot, kCopysign,
  kSquaredDiff,        // (a - b) * (a - b)
  kEqual, kNotEqual, kLess, kLessEqual, kGreater, kGreaterEqual,  // bool results
  kLogicalAnd, kLogicalOr, kLogicalXor,  // on a != 0 and b != 0; bool results
  kBitAnd, kBitOr, kBitXor,
  kShiftLeft,   // a << b; 0 where b is negative or not below the bit width
  kShiftRight,  // arithmetic for signed types; b out of range (as above) gives -1 for negative a, else 0
  kGcd,         // never negative; gcd(0, 0) = 0
  kLcm,         // never negative; 0 where either operand is 0
  kNextafter,   // the next representable value after a toward b (float32 and float64 only)
  kNumBinary
};

// Codes whose result is bool whatever the input dtype.
inline bool unary_returns_bool(int code) {
  return code == kLogicalNot || code == kIsNan || code == kIsInf || code == kIsFinite || code == kSignbit;
}
inline bool binary_returns_bool(int code) { return code >= kEqual && code <= kLogicalXor; }

}  // namespace ew

// How an op or an instruction computes:
//   Unary, Binary: `code` is an ew::UnaryCode or ew::BinaryCode.
//   Ternary: Where, `a ? b : c` with a bool condition (code 0).
//   Cast: in_dtype to out_dtype with NumPy's casting; to bool is x != 0; float to integer
//     saturates and NaN becomes the type's minimum (NumPy leaves both undefined); float16 and
//     bfloat16 convert through float32, rounding to nearest even.
//   MulAdd: a * b + c with one rounding, float32 and float64 only. Ops never declare it: it is
//     formed from a float multiply feeding an add (runtime/fused_elementwise.h).
enum class EwArity : uint8_t { None, Unary, Binary, Ternary, Cast, MulAdd };

// What an elementwise op declares in its OpDef for fusion (arity None: not elementwise).
struct ElementwiseInfo {
  EwArity arity = EwArity::None;
  int code = 0;
};

// One instruction of a fused elementwise program. The program is in evaluation order: register
// i holds the result of instruction i, operands name earlier registers, and the last instruction
// is the group's output. A load (arity None) reads kernel input `a`, broadcast NumPy-style to the
// output shape. in_dtype is the operands' dtype (Ternary: the branches'; Cast: the source's).
struct EwInstr {
  EwArity arity = EwArity::None;
  int code = 0;
  DType in_dtype = DType::Float32, out_dtype = DType::Float32;
  int a = -1, b = -1, c = -1;  // operand registers (for a load: the kernel input index)
};

}  // namespace mnnpy
