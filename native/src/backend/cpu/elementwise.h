// CPU elementwise kernels over contiguous runs, dispatched at run time to the best SIMD
// target. `code` is an ew::UnaryCode or ew::BinaryCode (mnnpy/elementwise_program.h).
// Float16/bfloat16 math never reaches these: the graph computes it in float32 between casts,
// as NumPy does.
#pragma once
#include <cstddef>
#include <cstdint>

#include "mnnpy/dtype.h"
#include "mnnpy/elementwise_program.h"

namespace mnnpy {
namespace cpu {

// `scalars` below: bit k set means operand k (in argument order) is one value used for every
// element (a 0-d constant), read from its pointer without expanding it into memory.

// `dt` is the input dtype; the output dtype is `dt`, or bool where ew::unary_returns_bool or
// ew::binary_returns_bool says so.
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
