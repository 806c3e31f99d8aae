// Lowering: ops rewritten into primitive ops, so that a backend runs every graph with a small set
// of kernels. Data-movement ops (transpose, slices, concatenation, splits, broadcasts, constant
// padding, gathers by constant indices, blocked channel layouts) lower to Raster, one
// region-copy primitive: a list of strided boxes copied from the inputs into the output, over an
// optional fill. Each op's decomposition is registered beside
// the op (MNNPY_REGISTER_DECOMPOSITION); the executor applies one where the requested backend has
// no kernel for the op but has kernels for what it lowers to. The CPU keeps its own kernels.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "mnnpy/graph.h"
#include "mnnpy/op_registry.h"

namespace mnnpy {

class Backend;

// One strided box of a Raster: sizes[k] elements along axis k, read at
// src_offset + sum(i_k * src_strides[k]) of input `input` and written at
// dst_offset + sum(i_k * dst_strides[k]) of the output (offsets and strides in elements; source
// strides may be 0 to repeat, or negative).
struct RasterRegion {
  int64_t input = 0;
  int64_t src_offset = 0, dst_offset = 0;
  Shape sizes;
  std::vector<int64_t> src_strides, dst_strides;
};

// A Raster node: `shape` of the inputs' dtype, `fill` (converted to that dtype) where no region
// writes, then the regions in order. All inputs share one dtype.
Var raster(const std::vector<Var>& inputs, const Shape& shape, const std::vector<RasterRegion>& regions,
           std::optional<double> fill = std::nullopt);
// The regions of a Raster node's attributes (checked when the node was built).
std::vector<RasterRegion> raster_regions(const Attrs& attrs);

// An op's outputs rebuilt from primitive ops over `inputs` (the op's own inputs, possibly lowered
// already); empty where this instance has no decomposition (a padding mode Raster cannot express,
// indices known only at run time). An input whose value is known when lowering (a constant, a
// result already kept) may be read: its value is part of the graph.
using DecomposeFn = std::function<std::vector<Var>(const std::vector<Var>& inputs, const Attrs& attrs,
                                                   const std::vector<TensorType>& outputs)>;
const DecomposeFn* find_decomposition(const std::string& op_name);  // nullptr when none
struct DecompositionRegistrar {
  DecompositionRegistrar(const std::string& op_name, DecomposeFn fn);
};
#define MNNPY_REGISTER_DECOMPOSITION(name, ...) \
  static ::mnnpy::DecompositionRegistrar MNNPY_CONCAT(decomposition_registrar_, __LINE__)(name, __VA_ARGS__)

// A fusion: a node built anew together with producers of its inputs that feed it alone, so that a
// backend runs them as one node (a convolution that adds a residual and applies the activation
// after it, instead of an Add and a Relu reading its output back). Each is registered beside the op
// it produces (MNNPY_REGISTER_FUSION, under the op of the node it absorbs into) and applied only
// where the backend runs the fused node.
struct FusionSite {
  const Node& node;                // the node as built
  const std::vector<Var>& inputs;  // its inputs in the lowered graph
  std::vector<bool> sole_reader;   // per input: this node is the value's only reader, and it is no target
};
// The node's outputs as one fused node; empty where this rule does not apply.
using FuseFn = std::function<std::vector<Var>(const FusionSite& site)>;
struct FusionRegistrar {
  FusionRegistrar(const std::string& op_name, FuseFn fn);
};
#define MNNPY_REGISTER_FUSION(name, ...) \
  static ::mnnpy::FusionRegistrar MNNPY_CONCAT(fusion_registrar_, __LINE__)(name, __VA_ARGS__)

// The graph behind `targets` as `backend` runs it: every node the backend has no kernel for, but
// whose decomposition it runs whole, replaced by that decomposition (its consumers rebuilt over
// the replacement); then fusions the backend runs applied. Nodes nothing changed under are kept;
// the CPU needs no lowering.
std::vector<Var> lower_for_backend(const std::vector<Var>& targets, const Backend& backend);

// Row-major strides of `shape`, in elements.
std::vector<int64_t> row_major_strides(const Shape& shape);

}  // namespace mnnpy
