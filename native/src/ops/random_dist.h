// The distributions RandomFill draws from (its `dist` attribute, by name): what its inference
// checks and its kernels fill with.
#pragma once
#include <string>

#include "mnnpy/tensor.h"

namespace mnnpy {

enum class RandomDist : int { Uniform, Normal, Exponential, Integers };

inline RandomDist parse_random_dist(const std::string& name) {
  if (name == "uniform") return RandomDist::Uniform;
  if (name == "normal") return RandomDist::Normal;
  if (name == "exponential") return RandomDist::Exponential;
  if (name == "integers") return RandomDist::Integers;
  throw ValueError("RandomFill: unknown distribution '" + name + "'");
}

}  // namespace mnnpy
