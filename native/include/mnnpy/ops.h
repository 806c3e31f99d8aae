// Graph-building entry points shared by every front-end. They apply NumPy 2's dtype rules
// (promotion, int -> float for float-only math, float16/bfloat16 computed in float32) by
// inserting Cast nodes, so kernels only ever see operands of one dtype.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "mnnpy/graph.h"

namespace mnnpy {

Var unary(const std::string& op_name, const Var& x);
Var binary(const std::string& op_name, const Var& a, const Var& b);
Var where(const Var& cond, const Var& a, const Var& b);
// kind: sum, prod, mean, min, max, any, all, argmin, argmax. No axes: all of them. argmin/argmax
// take at most one axis.
Var reduce(const std::string& kind, const Var& x, const std::optional<std::vector<int64_t>>& axes, bool keepdims);

bool is_elementwise_op(const std::string& op_name);
// Names of the registered unary and binary elementwise ops.
std::vector<std::string> unary_op_names();
std::vector<std::string> binary_op_names();

}  // namespace mnnpy
