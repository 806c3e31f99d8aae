// Reverse-mode differentiation over the expression graph: the gradient of some outputs with
// respect to some Vars, built as more graph (planned, fused and cached like any other).
#pragma once
#include <vector>

#include "mnnpy/graph.h"

namespace mnnpy {

// The gradients of sum(ys[i] * seeds[i]) with respect to each of xs (zeros where an x does not
// reach the ys). seeds may be empty (ones for every y) or hold an invalid Var for a one-seed.
// Throws ValueError naming the op when a path from an x to a y crosses an op without a rule.
std::vector<Var> gradients(const std::vector<Var>& ys, const std::vector<Var>& seeds, const std::vector<Var>& xs);

// Helpers for gradient rules.
// g summed over the axes that broadcasting added or stretched, so that it has `shape`.
Var sum_to_shape(const Var& g, const Shape& shape);
// g broadcast (as NumPy would) to `shape`.
Var broadcast_to_shape(const Var& g, const Shape& shape);
Var zeros_of(const TensorType& type);
Var ones_of(const TensorType& type);

}  // namespace mnnpy
