// The block-sparse scheme's settings, for mnnpy/sparse.py (which checks the arguments).
#include <tuple>

#include "mnnpy/executor.h"
#include "ops/block_sparse_settings.h"
#include "python/bindings.h"

namespace mnnpy {

MNNPY_REGISTER_BINDING([](py::module_& m) {
  m.def(
      "set_block_sparse",
      [](double threshold, int64_t block_n, int64_t block_k, int64_t min_weights) {
        BlockSparseSettings s;
        s.threshold = threshold;
        s.min_weights = min_weights;
        s.block_n = block_n;
        s.block_k = block_k;
        set_block_sparse_settings(s);
        clear_plan_cache();  // cached plans keep the scheme they were built with
      },
      py::arg("threshold"), py::arg("block_n") = 0, py::arg("block_k") = 0, py::arg("min_weights") = 1024,
      "When MatMul and 1x1 convolutions with constant float32 weights run block-sparse: from `threshold` "
      "(share of values in all-zero blocks; above 1: never), with blocks block_n x block_k (0: chosen per weight), for weights of at least `min_weights` values.");
  m.def(
      "get_block_sparse",
      []() {
        const BlockSparseSettings s = block_sparse_settings();
        return std::make_tuple(s.threshold, s.block_n, s.block_k, s.min_weights);
      },
      "(threshold, block_n, block_k, min_weights) of the block-sparse scheme.");
});

}  // namespace mnnpy
