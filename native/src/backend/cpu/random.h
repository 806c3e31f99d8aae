// Counter-based random numbers (Philox4x32-10): element blocks are numbered, so any thread can
// produce any part of a draw and a (seed, stream) pair always gives the same values.
#pragma once
#include <cstdint>

#include "mnnpy/dtype.h"
#include "ops/random_dist.h"

namespace mnnpy {
class ThreadPool;
namespace cpu {

using ::mnnpy::RandomDist;

// Fills `out` (n elements of dtype dt) with one draw of stream `stream` under `seed`.
// Uniform: a + b * U[0, 1); Normal: a + b * N(0, 1); Exponential: b * Exp(1) (dt Float32 or
// Float64). Integers: low + uniform integer in [0, span) where span is unsigned 64-bit
// (0 means the full 2^64 range), stored in dt (any integer type or Bool).
void random_fill(RandomDist dist, DType dt, int64_t n, uint64_t seed, uint64_t stream, double a, double b,
                 int64_t low, uint64_t span, void* out, ThreadPool* pool);

// A uniformly random permutation of [0, n) (Fisher-Yates), as int64.
void random_permutation(int64_t n, uint64_t seed, uint64_t stream, int64_t* out);

// `count` indices drawn independently with probabilities proportional to weights[0..n)
// (non-negative float64 with a positive sum).
void random_weighted_indices(const double* weights, int64_t n, int64_t count, uint64_t seed, uint64_t stream,
                             int64_t* out, ThreadPool* pool);

}  // namespace cpu
}  // namespace mnnpy
