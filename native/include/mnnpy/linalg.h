// Matrix products on the graph.
#pragma once
#include "mnnpy/graph.h"

namespace mnnpy {

// numpy.matmul semantics: operands of rank >= 2 are stacks of matrices whose batch dimensions
// broadcast; a 1-D left operand is a row vector and a 1-D right operand a column vector, their
// added dimension removed from the result. transpose_a/transpose_b swap the last two dimensions
// of an operand of rank >= 2 first (no copy is made). Dtypes promote as NumPy's; float16 and
// bfloat16 are computed in float32.
Var matmul(const Var& a, const Var& b, bool transpose_a = false, bool transpose_b = false);

}  // namespace mnnpy
