// CPU elementwise kernels over contiguous runs, dispatched at run time to the best SIMD
// target. Float16/bfloat16 math never reaches these: the graph computes it in float32
// between casts, as NumPy does.
#pragma once
#include <cstddef>
#include <cstdint>

#include "mnnpy/dtype.h"

namespace mnnpy {
namespace cpu {

enum UnaryCode : int {
  kNeg, kAbs, kSign, kSquare, kSqrt, kRsqrt, kReciprocal, kExp, kExpm1, kExp2, kLog, kLog1p, kLog2,
  kLog10, kSin, kCos, kTan, kAsin, kAcos, kAtan, kSinh, kCosh, kTanh, kAsinh, kAcosh, kAtanh, kFloor,
  kCeil, kRint, kTrunc, kErf, kErfc, kSigmoid, kRelu, kRelu6, kGelu, kGeluTanh, kSoftplus, kSoftsign,
  kSelu, kCbrt, kLogicalNot, kBitwiseNot, kIsNan, kIsInf, kIsFinite, kSignbit, kCopy, kNumUnary
};

enum BinaryCode : int {
  kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kFmod, kPow, kMaximum, kMinimum, kFmax, kFmin, kAtan2,
  kHypot, kCopysign, kSquaredDiff, kEqual, kNotEqual, kLess, kLessEqual, kGreater, kGreaterEqual,
  kLogicalAnd, kLogicalOr, kLogicalXor, kBitAnd, kBitOr, kBitXor, kShiftLeft, kShiftRight, kGcd, kLcm,
  kNextafter, kNumBinary
};

// Unary ops whose result is bool whatever the input dtype.
inline bool unary_returns_bool(int code) {
  return code == kLogicalNot || code == kIsNan || code == kIsInf || code == kIsFinite || code == kSignbit;
}
inline bool binary_returns_bool(int code) { return code >= kEqual && code <= kLogicalXor; }

// `scalars` below: bit k set means operand k (in argument order) is one value used for every
// element (a 0-d constant), read from its pointer without expanding it into memory.

// `dt` is the input dtype; the output dtype is `dt` or bool as above.
void unary(int code, DType dt, const void* x, void* y, size_t n);
void binary(int code, DType dt, const void* a, const void* b, void* y, size_t n, unsigned scalars = 0);
// y = a * b + c for float32 or float64, fused into one rounding where the CPU has FMA.
// `stream`: y is aligned to the vector size and is written with non-temporal stores (the
// caller fences).
void mul_add(DType dt, const void* a, const void* b, const void* c, void* y, size_t n, bool stream = false,
             unsigned scalars = 0);
// y[i] = c[i] ? a[i] : b[i] over elements of `elem_size` bytes.
void select(size_t elem_size, const uint8_t* c, const void* a, const void* b, void* y, size_t n, unsigned scalars = 0);
void cast(DType from, DType to, const void* x, void* y, size_t n);
// Repeats one element of `elem_size` bytes n times.
void fill(size_t elem_size, const void* value, void* y, size_t n);

}  // namespace cpu
}  // namespace mnnpy
