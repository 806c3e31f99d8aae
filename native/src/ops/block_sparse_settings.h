// When MatMul and 1x1 convolutions with a constant float32 weight run block-sparse (the CPU's
// "block_sparse" scheme, backend/cpu/block_sparse.h): a process-wide choice, like the SIMD target.
#pragma once
#include <cstdint>

namespace mnnpy {

struct BlockSparseSettings {
  // The share of the weight's values in all-zero blocks from which the sparse scheme runs;
  // above 1: never.
  double threshold = 0.7;
  // The block shape (output rows x input columns); 0: chosen per weight by estimated cost.
  int64_t block_n = 0, block_k = 0;
  // Smaller weights stay dense: their products are too short for the sparse kernel to gain.
  int64_t min_weights = 1024;
};

BlockSparseSettings block_sparse_settings();
// Plans already built keep their choice: callers clear the plan cache.
void set_block_sparse_settings(const BlockSparseSettings& settings);

}  // namespace mnnpy
