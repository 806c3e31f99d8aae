// CPU reductions over the middle axis of a contiguous [outer, R, inner] block.
#pragma once
#include <cstdint>

#include "mnnpy/dtype.h"
#include "ops/reduce_kind.h"

namespace mnnpy {
class ThreadPool;
namespace cpu {

using ::mnnpy::ReduceKind;
using ::mnnpy::kReduceSum;
using ::mnnpy::kReduceProd;
using ::mnnpy::kReduceMin;
using ::mnnpy::kReduceMax;
using ::mnnpy::kReduceAny;
using ::mnnpy::kReduceAll;
using ::mnnpy::kReduceArgMin;
using ::mnnpy::kReduceArgMax;

// out has outer*inner elements of `dt` (int64 for argmin/argmax). Sum/prod accept int64,
// float32, float64; min/max/argmin/argmax accept bool, integer and float32/64 types; any/all
// accept bool. R may be 0 for sum/prod/any/all (the identity), never for the others.
void reduce(int kind, DType dt, const void* x, int64_t outer, int64_t R, int64_t inner, void* out, ThreadPool* pool);

}  // namespace cpu
}  // namespace mnnpy
