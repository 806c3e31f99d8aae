// Graph builders for shape and data-movement ops: transposes, broadcasting, concatenation,
// splitting, slicing, gathers, padding, data formats and NumPy indexing. They follow NumPy's
// rules and error messages; each emits registered ops (Transpose, BroadcastTo, Concat, Split,
// StridedSlice, SliceAssign, Gather, Scatter, Pad, Iota) or Reshape views.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mnnpy/graph.h"

namespace mnnpy {

// No perm: reverse the axes. Negative axes count from the end.
Var transpose(const Var& x, const std::optional<std::vector<int64_t>>& perm = std::nullopt);
Var broadcast_to(const Var& x, const Shape& shape);
// Inputs of different dtypes are promoted to their common dtype first.
Var concat(const std::vector<Var>& values, int64_t axis);
Var stack(const std::vector<Var>& values, int64_t axis);
// Pieces of the given sizes, which must add up to the axis length (MNN's split).
std::vector<Var> split(const Var& x, const std::vector<int64_t>& sizes, int64_t axis);
// numpy.split (equal = true: the count must divide the axis) and numpy.array_split.
std::vector<Var> split_sections(const Var& x, int64_t sections, int64_t axis, bool equal);
// numpy.split at indices: x[:i0], x[i0:i1], ..., x[ik:] along the axis (slicing rules).
std::vector<Var> split_at(const Var& x, const std::vector<int64_t>& indices, int64_t axis);
// MNN's slice: per axis a start and a size, -1 meaning to the end.
Var slice(const Var& x, const std::vector<int64_t>& starts, const std::vector<int64_t>& sizes);
// TensorFlow/MNN strided_slice; bit i of a mask applies to entry i of begin/end/strides.
Var strided_slice(const Var& x, const std::vector<int64_t>& begin, const std::vector<int64_t>& end,
                  const std::vector<int64_t>& strides, int64_t begin_mask = 0, int64_t end_mask = 0,
                  int64_t ellipsis_mask = 0, int64_t new_axis_mask = 0, int64_t shrink_axis_mask = 0);
// numpy.take along an axis: out = params.shape[:axis] + indices.shape + params.shape[axis+1:].
// Negative indices count from the end. Indices whose values are known (constants) are checked
// here and raise IndexError; computed ones that fall out of range give zeros.
Var gather(const Var& params, const Var& indices, int64_t axis = 0);
// TensorFlow gather_nd: the last axis of `indices` indexes the leading axes of params.
Var gather_nd(const Var& params, const Var& indices);
// numpy.pad; mode: constant, edge, reflect, symmetric or wrap.
Var pad(const Var& x, const std::vector<std::pair<int64_t, int64_t>>& pads, const std::string& mode = "constant",
        double value = 0.0);
Var expand_dims(const Var& x, const std::vector<int64_t>& axes);
// No axes: every axis of length 1.
Var squeeze(const Var& x, const std::optional<std::vector<int64_t>>& axes = std::nullopt);
Var tile(const Var& x, const std::vector<int64_t>& multiples);
// Moves between NCHW, NHWC and NC4HW4. NC4HW4 (MNN's blocked layout) is shown as MNN shows it:
// NCHW values and shape under the NC4HW4 tag, so NCHW <-> NC4HW4 changes only the tag.
Var convert_format(const Var& x, const std::string& format);

// One entry of a NumPy index tuple.
struct IndexItem {
  enum class Kind : uint8_t { Integer, Slice, NewAxis, Ellipsis, Array };
  Kind kind = Kind::Slice;
  int64_t integer = 0;                      // Integer
  std::optional<int64_t> start, stop, step;  // Slice; unset: NumPy's defaults
  Var array;                                // Array: integer or bool dtype

  static IndexItem make_integer(int64_t i) { IndexItem t; t.kind = Kind::Integer; t.integer = i; return t; }
  static IndexItem make_slice(std::optional<int64_t> start, std::optional<int64_t> stop, std::optional<int64_t> step) {
    IndexItem t; t.kind = Kind::Slice; t.start = start; t.stop = stop; t.step = step; return t;
  }
  static IndexItem make_new_axis() { IndexItem t; t.kind = Kind::NewAxis; return t; }
  static IndexItem make_ellipsis() { IndexItem t; t.kind = Kind::Ellipsis; return t; }
  static IndexItem make_array(const Var& a) { IndexItem t; t.kind = Kind::Array; t.array = a; return t; }
};

// x[items] with NumPy's basic and advanced indexing. Boolean arrays are evaluated here (the
// result's shape depends on their values).
Var index(const Var& x, const std::vector<IndexItem>& items);
// The array x would become after `x[items] = value`, as a new Var (x itself is unchanged).
Var index_assign(const Var& x, const std::vector<IndexItem>& items, const Var& value);

}  // namespace mnnpy
