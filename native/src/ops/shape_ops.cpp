// Shape and data-movement ops: Transpose, BroadcastTo, Concat, Split, StridedSlice,
// SliceAssign, Gather, Scatter, Pad, Iota, and the builders composed from them (stack,
// tile, expand_dims, squeeze, data formats), with their decompositions into Raster. Their CPU
// kernels are in backend/cpu/shape_kernels.cpp; indexing (x[...] and x[...] = v) lives in
// shape_index.cpp.
#include <algorithm>
#include <cctype>
#include <tuple>
#include <type_traits>

#include "mnnpy/executor.h"
#include "mnnpy/lowering.h"
#include "mnnpy/op_registry.h"
#include "mnnpy/shape_ops.h"
#include "ops/grad_common.h"
#include "ops/shape_common.h"

namespace mnnpy {

namespace {

// ------------------------------------------------------------------ Transpose
std::vector<TensorType> infer_transpose(const std::vector<TensorType>& in, Attrs& attrs) {
  const std::vector<int64_t> perm = normalize_perm(attrs.get_ints("perm"), (int64_t)in[0].shape.size());
  Shape out;
  for (int64_t p : perm) out.push_back(in[0].shape[p]);
  attrs.set("perm", perm);
  return {TensorType{in[0].dtype, out}};
}

MNNPY_REGISTER_OP(OpDef{"Transpose", 1, 1, infer_transpose});

// One region: the output walked in order, the input through permuted strides.
MNNPY_REGISTER_DECOMPOSITION("Transpose", [](const std::vector<Var>& in, const Attrs& attrs,
                                             const std::vector<TensorType>& out) {
  const std::vector<int64_t> strides = row_major_strides(in[0].type().shape);
  RasterRegion r;
  r.sizes = out[0].shape;
  for (int64_t p : attrs.get_ints("perm")) r.src_strides.push_back(strides[p]);
  r.dst_strides = row_major_strides(out[0].shape);
  return std::vector<Var>{raster(in, out[0].shape, {r})};
});

// ------------------------------------------------------------------ BroadcastTo
std::vector<TensorType> infer_broadcast_to(const std::vector<TensorType>& in, Attrs& attrs) {
  const Shape& target = attrs.get_ints("shape");
  check_broadcast_to(in[0].shape, target);
  return {TensorType{in[0].dtype, target}};
}

MNNPY_REGISTER_OP(OpDef{"BroadcastTo", 1, 1, infer_broadcast_to});

// One region whose source strides are 0 along the repeated axes.
MNNPY_REGISTER_DECOMPOSITION("BroadcastTo", [](const std::vector<Var>& in, const Attrs&,
                                               const std::vector<TensorType>& out) {
  RasterRegion r;
  r.sizes = out[0].shape;
  r.src_strides = broadcast_strides(in[0].type().shape, out[0].shape);
  r.dst_strides = row_major_strides(out[0].shape);
  return std::vector<Var>{raster(in, out[0].shape, {r})};
});

// ------------------------------------------------------------------ Concat / Split
std::vector<TensorType> infer_concat(const std::vector<TensorType>& in, Attrs& attrs) {
  const Shape& first = in[0].shape;
  if (first.empty()) throw ValueError("zero-dimensional arrays cannot be concatenated");
  const int64_t axis = normalize_axis(attrs.get_int("axis"), (int64_t)first.size());
  Shape out = first;
  for (size_t i = 1; i < in.size(); ++i) {
    const Shape& s = in[i].shape;
    if (in[i].dtype != in[0].dtype) throw TypeError("Concat inputs must share a dtype (the builder casts them)");
    if (s.size() != first.size()) {
      throw ValueError("all the input arrays must have same number of dimensions, but the array at index 0 has " +
                       std::to_string(first.size()) + " dimension(s) and the array at index " + std::to_string(i) +
                       " has " + std::to_string(s.size()) + " dimension(s)");
    }
    for (size_t d = 0; d < s.size(); ++d) {
      if ((int64_t)d == axis) continue;
      if (s[d] != first[d]) {
        throw ValueError("all the input array dimensions except for the concatenation axis must match exactly, but "
                         "along dimension " + std::to_string(d) + ", the array at index 0 has size " +
                         std::to_string(first[d]) + " and the array at index " + std::to_string(i) + " has size " +
                         std::to_string(s[d]));
      }
    }
    out[axis] += s[axis];
  }
  attrs.set("axis", axis);
  return {TensorType{in[0].dtype, out}};
}

MNNPY_REGISTER_OP(OpDef{"Concat", 1, -1, infer_concat});

// A region per input, each written at its place along the axis.
MNNPY_REGISTER_DECOMPOSITION("Concat", [](const std::vector<Var>& in, const Attrs& attrs,
                                          const std::vector<TensorType>& out) {
  const int64_t axis = attrs.get_int("axis");
  const std::vector<int64_t> out_strides = row_major_strides(out[0].shape);
  std::vector<RasterRegion> regions;
  int64_t at = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const Shape& part = in[i].type().shape;
    RasterRegion r;
    r.input = (int64_t)i;
    r.dst_offset = at * out_strides[axis];
    r.sizes = part;
    r.src_strides = row_major_strides(part);
    r.dst_strides = out_strides;
    regions.push_back(std::move(r));
    at += part[axis];
  }
  return std::vector<Var>{raster(in, out[0].shape, regions)};
});

std::vector<TensorType> infer_split(const std::vector<TensorType>& in, Attrs& attrs) {
  const Shape& s = in[0].shape;
  if (s.empty()) throw ValueError("cannot split a zero-dimensional array");
  const int64_t axis = normalize_axis(attrs.get_int("axis"), (int64_t)s.size());
  const std::vector<int64_t>& sizes = attrs.get_ints("sizes");
  if (sizes.empty()) throw ValueError("split needs at least one piece");
  int64_t total = 0;
  std::vector<TensorType> out;
  for (int64_t n : sizes) {
    if (n < 0) throw ValueError("split sizes must not be negative, got " + shape_str(sizes));
    total += n;
    Shape piece = s;
    piece[axis] = n;
    out.push_back(TensorType{in[0].dtype, piece});
  }
  if (total != s[axis]) {
    throw ValueError("split sizes " + shape_str(sizes) + " add up to " + std::to_string(total) + ", not to the length " +
                     std::to_string(s[axis]) + " of axis " + std::to_string(axis));
  }
  attrs.set("axis", axis);
  return out;
}

MNNPY_REGISTER_OP(OpDef{"Split", 1, 1, infer_split});

// A Raster per piece, each reading its run along the axis.
MNNPY_REGISTER_DECOMPOSITION("Split", [](const std::vector<Var>& in, const Attrs& attrs,
                                         const std::vector<TensorType>& out) {
  const int64_t axis = attrs.get_int("axis");
  const std::vector<int64_t> in_strides = row_major_strides(in[0].type().shape);
  std::vector<Var> pieces;
  int64_t at = 0;
  for (const TensorType& piece : out) {
    RasterRegion r;
    r.src_offset = at * in_strides[axis];
    r.sizes = piece.shape;
    r.src_strides = in_strides;
    r.dst_strides = row_major_strides(piece.shape);
    pieces.push_back(raster(in, piece.shape, {r}));
    at += piece.shape[axis];
  }
  return pieces;
});

// ------------------------------------------------------------------ StridedSlice / SliceAssign
std::vector<TensorType> infer_strided_slice(const std::vector<TensorType>& in, Attrs& attrs) {
  const Box b = read_box(attrs, in[0].shape);
  return {TensorType{in[0].dtype, b.size}};
}

MNNPY_REGISTER_OP(OpDef{"StridedSlice", 1, 1, infer_strided_slice});

// One region: the box's first element and its per-axis steps.
MNNPY_REGISTER_DECOMPOSITION("StridedSlice", [](const std::vector<Var>& in, const Attrs& attrs,
                                                const std::vector<TensorType>& out) {
  const Shape& shape = in[0].type().shape;
  const Box b = read_box(attrs, shape);
  RasterRegion r;
  std::tie(r.src_strides, r.src_offset) = box_strides(b, shape);
  r.sizes = b.size;
  r.dst_strides = row_major_strides(out[0].shape);
  return std::vector<Var>{raster(in, out[0].shape, {r})};
});

std::vector<TensorType> infer_slice_assign(const std::vector<TensorType>& in, Attrs& attrs) {
  const Box b = read_box(attrs, in[0].shape);
  if (in[1].dtype != in[0].dtype) throw TypeError("SliceAssign: the value must have the array's dtype (the builder casts it)");
  check_broadcast_to(in[1].shape, b.size);
  return {in[0]};
}

MNNPY_REGISTER_OP(OpDef{"SliceAssign", 2, 2, infer_slice_assign});

// ------------------------------------------------------------------ Gather / Scatter
void check_index_dtype(DType t) {
  if (!is_integer(t)) throw IndexError("arrays used as indices must be of integer (or boolean) type");
}

std::vector<TensorType> infer_gather(const std::vector<TensorType>& in, Attrs& attrs) {
  check_index_dtype(in[1].dtype);
  const int64_t axis = normalize_axis(attrs.get_int("axis", 0), (int64_t)in[0].shape.size());
  attrs.set("axis", axis);
  return {TensorType{in[0].dtype, gathered_shape(in[0].shape, in[1].shape, axis)}};
}

// The table stays on a device when it is constant (embeddings).
MNNPY_REGISTER_OP(OpDef{"Gather", 2, 2, infer_gather, {}, false, 0, 1u << 0});

// Past this many indices a Raster's regions would outweigh what they copy: no decomposition.
constexpr int64_t kMaxGatherRegions = 4096;

// Indices known when lowering (constants): a region per index, copying its slab of params
// ([outer, inner] around the axis). An index out of range leaves its slab to the zero fill, as
// the kernel does. Indices computed at run time: none.
MNNPY_REGISTER_DECOMPOSITION("Gather", [](const std::vector<Var>& in, const Attrs& attrs,
                                          const std::vector<TensorType>& out) {
  const std::shared_ptr<Tensor> indices = known_value(in[1]);
  if (!indices || indices->numel() > kMaxGatherRegions) return std::vector<Var>{};
  const Shape& shape = in[0].type().shape;
  const int64_t axis = attrs.get_int("axis");
  const int64_t n = shape[axis], inner = row_major_strides(shape)[axis];
  const int64_t outer = shape_numel(Shape(shape.begin(), shape.begin() + axis));
  const std::vector<int64_t> values = int64_values(*indices);
  const int64_t count = (int64_t)values.size();
  std::vector<RasterRegion> regions;
  bool all_in_range = true;
  for (int64_t j = 0; j < count; ++j) {
    const int64_t k = values[j] < 0 ? values[j] + n : values[j];
    if (k < 0 || k >= n) {
      all_in_range = false;
      continue;
    }
    RasterRegion r;
    r.src_offset = k * inner;
    r.dst_offset = j * inner;
    r.sizes = {outer, inner};
    r.src_strides = {n * inner, 1};
    r.dst_strides = {count * inner, 1};
    regions.push_back(std::move(r));
  }
  const std::optional<double> fill = all_in_range ? std::nullopt : std::optional<double>(0.0);
  return std::vector<Var>{raster({in[0]}, out[0].shape, regions, fill)};
});

std::vector<TensorType> infer_scatter(const std::vector<TensorType>& in, Attrs& attrs) {
  check_index_dtype(in[1].dtype);
  const int64_t axis = normalize_axis(attrs.get_int("axis", 0), (int64_t)in[0].shape.size());
  if (in[2].dtype != in[0].dtype) throw TypeError("Scatter: updates must have the data's dtype (the builder casts them)");
  scatter_updates(in[0].shape, in[1].shape, in[2].shape, axis);
  const int64_t reduction = attrs.get_int("reduction", 0);
  if (reduction < 0 || reduction > (int64_t)ScatterReduction::Min) {
    throw ValueError("Scatter: reduction must be 0 (none), 1 (add), 2 (mul), 3 (max) or 4 (min), got " +
                     std::to_string(reduction));
  }
  const DType t = in[0].dtype;
  if (reduction != 0 && t != DType::Float32 && t != DType::Float64 && t != DType::Int32 && t != DType::Int64) {
    throw TypeError(std::string("Scatter: reductions take int32, int64, float32 or float64 data, got ") +
                    dtype_name(t));
  }
  attrs.set("axis", axis);
  attrs.set("reduction", reduction);
  return {in[0]};
}

MNNPY_REGISTER_OP(OpDef{"Scatter", 3, 3, infer_scatter});

// ------------------------------------------------------------------ Pad
const char* const kPadModes[] = {"constant", "edge", "reflect", "symmetric", "wrap"};

std::vector<TensorType> infer_pad(const std::vector<TensorType>& in, Attrs& attrs) {
  const Shape& s = in[0].shape;
  const std::vector<int64_t>& pads = attrs.get_ints("pads");
  const std::string& mode = attrs.get_string("mode");
  if (std::find(std::begin(kPadModes), std::end(kPadModes), mode) == std::end(kPadModes)) {
    throw ValueError("mode '" + mode + "' is not supported");
  }
  if (pads.size() != 2 * s.size()) {
    throw ValueError("pad widths need a (before, after) pair for each of the " + std::to_string(s.size()) + " axes");
  }
  Shape out = s;
  for (size_t d = 0; d < s.size(); ++d) {
    const int64_t before = pads[2 * d], after = pads[2 * d + 1];
    if (before < 0 || after < 0) throw ValueError("index can't contain negative values");
    if (s[d] == 0 && (before || after) && mode != "constant") {
      throw ValueError("can't extend empty axis " + std::to_string(d) + " using modes other than 'constant' or 'empty'");
    }
    out[d] += before + after;
  }
  return {TensorType{in[0].dtype, out}};
}

MNNPY_REGISTER_OP(OpDef{"Pad", 1, 1, infer_pad});

// Constant padding: the fill, then the input as one region inside it. The other modes read the
// input at positions a region's single stride per axis cannot express: none.
MNNPY_REGISTER_DECOMPOSITION("Pad", [](const std::vector<Var>& in, const Attrs& attrs,
                                       const std::vector<TensorType>& out) {
  if (attrs.get_string("mode") != "constant") return std::vector<Var>{};
  const std::vector<int64_t>& pads = attrs.get_ints("pads");
  const std::vector<int64_t> out_strides = row_major_strides(out[0].shape);
  RasterRegion r;
  r.sizes = in[0].type().shape;
  r.src_strides = row_major_strides(r.sizes);
  r.dst_strides = out_strides;
  for (size_t d = 0; d < r.sizes.size(); ++d) r.dst_offset += pads[2 * d] * out_strides[d];
  return std::vector<Var>{raster(in, out[0].shape, {r}, attrs.get_float("value"))};
});

// ------------------------------------------------------------------ Iota
// No inputs; int64 out[i...] = start + sum(i_d * strides[d]) (flat positions of a strided view).
std::vector<TensorType> infer_iota(const std::vector<TensorType>&, Attrs& attrs) {
  const Shape& shape = attrs.get_ints("shape");
  if (attrs.get_ints("strides").size() != shape.size()) throw ValueError("Iota: one stride per axis");
  for (int64_t d : shape) if (d < 0) throw ValueError("negative dimensions are not allowed");
  return {TensorType{DType::Int64, shape}};
}

MNNPY_REGISTER_OP(OpDef{"Iota", 0, 0, infer_iota});

// ------------------------------------------------------------------ helpers for builders
DType common_dtype(const std::vector<Var>& values) {
  DType t = values[0].type().dtype;
  for (size_t i = 1; i < values.size(); ++i) t = promote_types(t, values[i].type().dtype);
  return t;
}

// A new node showing v in `format` (never relabels a node someone else holds).
Var with_format(Var v, const Var& source, const std::string& format) {
  if (v.node == source.node) v = make_op("Reshape", {v}, Attrs().set("shape", v.type().shape));
  v.node->data_format = format;
  return v;
}

}  // namespace

// ------------------------------------------------------------------ shared rules
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> s(out.size(), 0);
  const std::vector<int64_t> cs = row_major_strides(in);
  const size_t lead = out.size() - in.size();
  for (size_t k = 0; k < in.size(); ++k) s[lead + k] = in[k] == 1 ? 0 : cs[k];
  return s;
}

Box read_box(const Attrs& attrs, const Shape& shape) {
  Box b{attrs.get_ints("begin"), attrs.get_ints("step"), attrs.get_ints("size")};
  const size_t rank = shape.size();
  if (b.begin.size() != rank || b.step.size() != rank || b.size.size() != rank) {
    throw ValueError("StridedSlice: begin, step and size need one entry per axis (" + std::to_string(rank) + ")");
  }
  for (size_t d = 0; d < rank; ++d) {
    const int64_t n = shape[d], first = b.begin[d], count = b.size[d], st = b.step[d];
    if (st == 0) throw ValueError("slice step cannot be zero");
    if (count < 0) throw ValueError("StridedSlice: negative size on axis " + std::to_string(d));
    if (count == 0) continue;
    const int64_t last = first + (count - 1) * st;
    if (first < 0 || first >= n || last < 0 || last >= n) {
      throw IndexError("StridedSlice: box out of range on axis " + std::to_string(d) + " of size " + std::to_string(n));
    }
  }
  return b;
}

std::pair<std::vector<int64_t>, int64_t> box_strides(const Box& b, const Shape& shape) {
  const std::vector<int64_t> cs = row_major_strides(shape);
  std::vector<int64_t> strides(shape.size());
  int64_t offset = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    strides[d] = b.step[d] * cs[d];
    if (b.size[d] > 0) offset += b.begin[d] * cs[d];
  }
  return {strides, offset};
}

Shape gathered_shape(const Shape& params, const Shape& indices, int64_t axis) {
  Shape out(params.begin(), params.begin() + axis);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), params.begin() + axis + 1, params.end());
  return out;
}

ScatterUpdates scatter_updates(const Shape& data, const Shape& indices, const Shape& updates, int64_t axis) {
  const Shape want = gathered_shape(data, indices, axis);
  if (updates == want) return ScatterUpdates::Full;
  if (shape_numel(updates) == 1 && updates.size() <= want.size()) return ScatterUpdates::Scalar;
  if (updates == Shape(data.begin() + axis + 1, data.end())) return ScatterUpdates::Row;
  throw ValueError("Scatter: updates of shape " + shape_str(updates) + " do not match the indexed shape " +
                   shape_str(want));
}

namespace {
int64_t floor_mod(int64_t a, int64_t b) { return ((a % b) + b) % b; }
}  // namespace

std::vector<int64_t> pad_map(int64_t n, int64_t before, int64_t after, const std::string& mode) {
  std::vector<int64_t> map(n + before + after);
  for (int64_t j = 0; j < (int64_t)map.size(); ++j) {
    const int64_t i = j - before;
    int64_t m = i;
    if (i < 0 || i >= n) {
      if (mode == "constant") {
        m = -1;
      } else if (mode == "edge") {
        m = i < 0 ? 0 : n - 1;
      } else if (mode == "reflect") {
        const int64_t period = 2 * (n - 1);
        m = n == 1 ? 0 : floor_mod(i, period);
        if (m >= n) m = period - m;
      } else if (mode == "symmetric") {
        m = floor_mod(i, 2 * n);
        if (m >= n) m = 2 * n - 1 - m;
      } else {  // wrap
        m = floor_mod(i, n);
      }
    }
    map[j] = m;
  }
  return map;
}

// ------------------------------------------------------------------ shared checks
std::vector<int64_t> normalize_perm(const std::vector<int64_t>& perm, int64_t rank) {
  if ((int64_t)perm.size() != rank) throw ValueError("axes don't match array");
  std::vector<int64_t> out;
  std::vector<char> seen(rank, 0);
  for (int64_t p : perm) {
    const int64_t a = normalize_axis(p, rank);
    if (seen[a]) throw ValueError("repeated axis in transpose");
    seen[a] = 1;
    out.push_back(a);
  }
  return out;
}

void check_broadcast_to(const Shape& from, const Shape& to) {
  for (int64_t d : to) if (d < 0) throw ValueError("all elements of broadcast shape must be non-negative");
  if (to.empty() && !from.empty()) throw ValueError("cannot broadcast a non-scalar to a scalar array");
  if (from.size() > to.size()) throw ValueError("input operand has more dimensions than allowed by the axis remapping");
  const size_t lead = to.size() - from.size();
  for (size_t k = 0; k < from.size(); ++k) {
    if (from[k] != 1 && from[k] != to[lead + k]) {
      throw ValueError("operands could not be broadcast together with remapped shapes [original->remapped]: " +
                       shape_str(from) + "  and requested shape " + shape_str(to));
    }
  }
}

std::shared_ptr<Tensor> known_value(const Var& v) {
  // A placeholder's value changes between runs (parameters, batches): never bake it in.
  if (v.node->kind == NodeKind::Placeholder) return nullptr;
  return v.node->value(v.index);
}

std::vector<int64_t> int64_values(const Tensor& t) {
  std::vector<int64_t> out;
  const bool integral = with_index_type(t.type.dtype, [&](auto tag) {
    const auto* v = t.ptr<decltype(tag)>();
    out.assign(v, v + t.numel());
    if constexpr (std::is_same_v<decltype(tag), uint64_t>) {
      // Above int64's range: the largest int64 stands for them (beyond any length), never a negative.
      for (int64_t i = 0; i < t.numel(); ++i) {
        if (v[i] > (uint64_t)INT64_MAX) out[(size_t)i] = INT64_MAX;
      }
    }
  });
  if (!integral) throw TypeError(std::string("expected integer values, got ") + dtype_name(t.type.dtype));
  return out;
}

namespace {

[[noreturn]] void throw_index_out_of_bounds(int64_t i, int64_t size, int64_t axis) {
  throw IndexError("index " + std::to_string(i) + " is out of bounds for axis " + std::to_string(axis) +
                   " with size " + std::to_string(size));
}

}  // namespace

void check_index_range(const std::vector<int64_t>& values, int64_t size, int64_t axis) {
  for (int64_t i : values) {
    if (i < -size || i >= size) throw_index_out_of_bounds(i, size, axis);
  }
}

void check_index_range(const void* index, DType dtype, int64_t count, int64_t size, int64_t axis) {
  const bool integral = with_index_type(dtype, [&](auto tag) {
    using I = decltype(tag);
    const I* v = static_cast<const I*>(index);
    if constexpr (std::is_same_v<I, uint64_t>) {
      for (int64_t i = 0; i < count; ++i) {
        if (v[i] > (uint64_t)size) {
          throw IndexError("index " + std::to_string(v[i]) + " is out of bounds for axis " + std::to_string(axis) +
                           " with size " + std::to_string(size));
        }
      }
    }
    // One branch-free min/max pass (vectorizes); the offender is looked for only on failure.
    int64_t lo = 0, hi = -1;
    if (count > 0) lo = hi = (int64_t)v[0];
    for (int64_t i = 0; i < count; ++i) {
      lo = std::min<int64_t>(lo, (int64_t)v[i]);
      hi = std::max<int64_t>(hi, (int64_t)v[i]);
    }
    if (count == 0 || (lo >= -size && hi < size)) return;
    for (int64_t i = 0; i < count; ++i) {
      if ((int64_t)v[i] < -size || (int64_t)v[i] >= size) throw_index_out_of_bounds((int64_t)v[i], size, axis);
    }
  });
  if (!integral) throw TypeError(std::string("arrays used as indices must be of integer type, got ") + dtype_name(dtype));
}

void check_index_range(const Tensor& indices, int64_t size, int64_t axis) {
  check_index_range(indices.data, indices.type.dtype, indices.numel(), size, axis);
}

std::shared_ptr<Tensor> take_now(const void* params, const TensorType& params_type, const void* index,
                                 DType index_dtype, const Shape& index_shape, int64_t axis) {
  check_index_range(index, index_dtype, shape_numel(index_shape), params_type.shape[axis], axis);
  // The caller's buffers, borrowed: evaluate reads them before returning.
  auto borrowed = [](const void* data, const TensorType& type) {
    auto t = std::make_shared<Tensor>();
    t->type = type;
    t->data = const_cast<void*>(data);
    return t;
  };
  const Var taken = make_op("Gather", {make_const(borrowed(params, params_type)),
                                       make_const(borrowed(index, TensorType{index_dtype, index_shape}))},
                            Attrs().set("axis", axis));
  return evaluate({taken})[0];
}

// ------------------------------------------------------------------ builders
Var transpose(const Var& x, const std::optional<std::vector<int64_t>>& perm_opt) {
  const Shape& s = x.type().shape;
  const int64_t rank = (int64_t)s.size();
  std::vector<int64_t> perm;
  if (perm_opt) {
    perm = normalize_perm(*perm_opt, rank);
  } else {
    for (int64_t k = rank - 1; k >= 0; --k) perm.push_back(k);
  }
  // Moving only length-1 axes keeps the bytes in place: a view.
  Shape out;
  int64_t last = -1;
  bool in_order = true;
  for (int64_t p : perm) {
    out.push_back(s[p]);
    if (s[p] == 1) continue;
    in_order = in_order && p > last;
    last = p;
  }
  if (in_order) return reshape(x, out);
  return make_op("Transpose", {x}, Attrs().set("perm", perm));
}

Var broadcast_to(const Var& x, const Shape& shape) {
  check_broadcast_to(x.type().shape, shape);
  if (shape_numel(shape) == x.type().numel()) return reshape(x, shape);
  return make_op("BroadcastTo", {x}, Attrs().set("shape", shape));
}

Var concat(const std::vector<Var>& values, int64_t axis) {
  if (values.empty()) throw ValueError("need at least one array to concatenate");
  const DType t = common_dtype(values);
  std::vector<Var> inputs;
  for (const Var& v : values) inputs.push_back(cast(v, t));
  Var out = make_op("Concat", inputs, Attrs().set("axis", axis));
  return inputs.size() == 1 ? inputs[0] : out;
}

Var stack(const std::vector<Var>& values, int64_t axis) {
  if (values.empty()) throw ValueError("need at least one array to stack");
  const Shape& s = values[0].type().shape;
  for (const Var& v : values) {
    if (v.type().shape != s) throw ValueError("all input arrays must have the same shape");
  }
  axis = normalize_axis(axis, (int64_t)s.size() + 1);
  std::vector<Var> expanded;
  for (const Var& v : values) expanded.push_back(expand_dims(v, {axis}));
  return concat(expanded, axis);
}

std::vector<Var> split(const Var& x, const std::vector<int64_t>& sizes, int64_t axis) {
  std::vector<Var> out = make_op_multi("Split", {x}, Attrs().set("sizes", sizes).set("axis", axis));
  if (out.size() == 1) return {x};
  return out;
}

std::vector<Var> split_sections(const Var& x, int64_t sections, int64_t axis, bool equal) {
  const Shape& s = x.type().shape;
  if (s.empty()) throw ValueError("cannot split a zero-dimensional array");
  axis = normalize_axis(axis, (int64_t)s.size());
  if (sections <= 0) throw ValueError("number sections must be larger than 0.");
  const int64_t n = s[axis];
  if (equal && n % sections != 0) throw ValueError("array split does not result in an equal division");
  std::vector<int64_t> sizes(sections, n / sections);
  for (int64_t k = 0; k < n % sections; ++k) ++sizes[k];
  return split(x, sizes, axis);
}

std::vector<Var> split_at(const Var& x, const std::vector<int64_t>& indices, int64_t axis) {
  const Shape& s = x.type().shape;
  if (s.empty()) throw ValueError("cannot split a zero-dimensional array");
  axis = normalize_axis(axis, (int64_t)s.size());
  const int64_t n = s[axis];
  // Piece k is x[p_k : p_{k+1}] along the axis, with slicing's clamping and negative indices.
  std::vector<std::optional<int64_t>> points{std::nullopt};
  for (int64_t i : indices) points.push_back(i);
  points.push_back(std::nullopt);
  std::vector<SliceRange> ranges;
  std::vector<int64_t> sizes;
  bool partition = true;
  int64_t covered = 0;
  for (size_t k = 0; k + 1 < points.size(); ++k) {
    const SliceRange r = normalize_slice(points[k], points[k + 1], 1, n);
    partition = partition && (r.count == 0 || r.begin == covered);
    covered += r.count;
    ranges.push_back(r);
    sizes.push_back(r.count);
  }
  if (partition && covered == n) return split(x, sizes, axis);
  std::vector<Var> out;
  for (const SliceRange& r : ranges) {
    std::vector<IndexItem> items((size_t)axis, IndexItem::make_slice(std::nullopt, std::nullopt, std::nullopt));
    items.push_back(IndexItem::make_slice(r.begin, r.begin + r.count, 1));
    out.push_back(index(x, items));
  }
  return out;
}

Var slice(const Var& x, const std::vector<int64_t>& starts, const std::vector<int64_t>& sizes) {
  const Shape& s = x.type().shape;
  if (starts.size() != s.size() || sizes.size() != s.size()) {
    throw ValueError("slice: starts and sizes need one entry per axis (" + std::to_string(s.size()) + "), got " +
                     std::to_string(starts.size()) + " and " + std::to_string(sizes.size()));
  }
  std::vector<IndexItem> items;
  for (size_t d = 0; d < s.size(); ++d) {
    const int64_t start = starts[d] < 0 ? starts[d] + s[d] : starts[d];
    if (start < 0 || start > s[d]) {
      throw IndexError("slice: start " + std::to_string(starts[d]) + " is out of bounds for axis " + std::to_string(d) +
                       " with size " + std::to_string(s[d]));
    }
    items.push_back(IndexItem::make_slice(start, sizes[d] < 0 ? std::nullopt : std::optional<int64_t>(start + sizes[d]), 1));
  }
  return index(x, items);
}

Var strided_slice(const Var& x, const std::vector<int64_t>& begin, const std::vector<int64_t>& end,
                  const std::vector<int64_t>& strides, int64_t begin_mask, int64_t end_mask, int64_t ellipsis_mask,
                  int64_t new_axis_mask, int64_t shrink_axis_mask) {
  if (begin.size() != end.size() || begin.size() != strides.size()) {
    throw ValueError("strided_slice: begin, end and strides must have the same length");
  }
  std::vector<IndexItem> items;
  for (size_t i = 0; i < begin.size(); ++i) {
    const int64_t bit = int64_t(1) << i;
    if (ellipsis_mask & bit) items.push_back(IndexItem::make_ellipsis());
    else if (new_axis_mask & bit) items.push_back(IndexItem::make_new_axis());
    else if (shrink_axis_mask & bit) items.push_back(IndexItem::make_integer(begin[i]));
    else items.push_back(IndexItem::make_slice((begin_mask & bit) ? std::nullopt : std::optional<int64_t>(begin[i]),
                                               (end_mask & bit) ? std::nullopt : std::optional<int64_t>(end[i]),
                                               strides[i]));
  }
  return index(x, items);
}

Var gather(const Var& params, const Var& indices, int64_t axis) {
  const Shape& s = params.type().shape;
  if (!is_integer(indices.type().dtype)) {
    throw TypeError(std::string("gather indices must be integers, got ") + dtype_name(indices.type().dtype));
  }
  axis = normalize_axis(axis, (int64_t)s.size());
  if (auto t = known_value(indices)) check_index_range(*t, s[axis], axis);
  return make_op("Gather", {params, indices}, Attrs().set("axis", axis));
}

Var gather_nd(const Var& params, const Var& indices) {
  const Shape& ps = params.type().shape;
  const Shape& is = indices.type().shape;
  if (!is_integer(indices.type().dtype)) {
    throw TypeError(std::string("gather_nd indices must be integers, got ") + dtype_name(indices.type().dtype));
  }
  if (is.empty()) throw ValueError("gather_nd: indices need at least one dimension");
  const int64_t k = is.back();
  if (k > (int64_t)ps.size()) {
    throw ValueError("gather_nd: the last axis of indices (" + std::to_string(k) + ") is longer than params' rank (" +
                     std::to_string(ps.size()) + ")");
  }
  // params[idx[..., 0], idx[..., 1], ...]: one integer array per leading axis.
  std::vector<IndexItem> items;
  for (int64_t j = 0; j < k; ++j) {
    std::vector<IndexItem> pick((size_t)is.size() - 1, IndexItem::make_slice(std::nullopt, std::nullopt, std::nullopt));
    pick.push_back(IndexItem::make_integer(j));
    items.push_back(IndexItem::make_array(index(indices, pick)));
  }
  if (k == 0) {
    // Every index picks the whole of params.
    Shape shape(is.begin(), is.end() - 1);
    shape.insert(shape.end(), ps.begin(), ps.end());
    Shape ones(is.size() - 1, 1);
    ones.insert(ones.end(), ps.begin(), ps.end());
    return broadcast_to(reshape(params, ones), shape);
  }
  return index(params, items);
}

Var pad(const Var& x, const std::vector<std::pair<int64_t, int64_t>>& pads, const std::string& mode_in, double value) {
  std::string mode = mode_in;
  for (char& c : mode) c = (char)std::tolower((unsigned char)c);
  std::vector<int64_t> flat;
  bool any = false;
  for (auto& [b, a] : pads) {
    flat.push_back(b);
    flat.push_back(a);
    any = any || b || a;
  }
  Var out = make_op("Pad", {x}, Attrs().set("pads", flat).set("mode", mode).set("value", value));
  return any ? out : x;
}

Var expand_dims(const Var& x, const std::vector<int64_t>& axes) {
  const Shape& s = x.type().shape;
  const int64_t rank = (int64_t)(s.size() + axes.size());
  std::vector<int64_t> norm;
  for (int64_t a : axes) {
    const int64_t n = normalize_axis(a, rank);
    if (std::find(norm.begin(), norm.end(), n) != norm.end()) throw ValueError("repeated axis");
    norm.push_back(n);
  }
  Shape out;
  size_t next = 0;
  for (int64_t d = 0; d < rank; ++d) {
    if (std::find(norm.begin(), norm.end(), d) != norm.end()) out.push_back(1);
    else out.push_back(s[next++]);
  }
  return reshape(x, out);
}

Var squeeze(const Var& x, const std::optional<std::vector<int64_t>>& axes) {
  const Shape& s = x.type().shape;
  std::vector<int64_t> drop;
  if (axes) {
    drop = normalize_axes(*axes, (int64_t)s.size());
    for (int64_t a : drop) {
      if (s[a] != 1) throw ValueError("cannot select an axis to squeeze out which has size not equal to one");
    }
  } else {
    for (int64_t d = 0; d < (int64_t)s.size(); ++d) if (s[d] == 1) drop.push_back(d);
  }
  Shape out;
  for (int64_t d = 0; d < (int64_t)s.size(); ++d) {
    if (std::find(drop.begin(), drop.end(), d) == drop.end()) out.push_back(s[d]);
  }
  return reshape(x, out);
}

Var tile(const Var& x, const std::vector<int64_t>& multiples) {
  for (int64_t m : multiples) if (m < 0) throw ValueError("negative dimensions are not allowed");
  Shape s = x.type().shape;
  std::vector<int64_t> reps = multiples;
  while (reps.size() < s.size()) reps.insert(reps.begin(), 1);
  while (s.size() < reps.size()) s.insert(s.begin(), 1);
  // x as (1, s0, 1, s1, ...) broadcast to (r0, s0, r1, s1, ...), then merged pairwise.
  Shape spread, target, out;
  for (size_t d = 0; d < s.size(); ++d) {
    if (reps[d] != 1) {
      spread.push_back(1);
      target.push_back(reps[d]);
    }
    spread.push_back(s[d]);
    target.push_back(s[d]);
    out.push_back(s[d] * reps[d]);
  }
  return reshape(broadcast_to(reshape(x, spread), target), out);
}

Var convert_format(const Var& x, const std::string& format) {
  const std::string& from = x.node->data_format;
  if (format != "NCHW" && format != "NHWC" && format != "NC4HW4") {
    throw ValueError("unknown data format '" + format + "'; expected NCHW, NHWC or NC4HW4");
  }
  if (from == format) return x;
  // NC4HW4 is MNN's blocked layout of an NCHW tensor: the values, shape and axis order are
  // NCHW's (as MNN reports them), so between the two only the tag changes.
  const bool from_channels_last = from == "NHWC", to_channels_last = format == "NHWC";
  if (from_channels_last == to_channels_last) return with_format(x, x, format);
  const int64_t rank = (int64_t)x.type().shape.size();
  if (rank < 3) {
    throw ValueError("convert: a " + std::to_string(rank) + "-d Var has no " + from + " layout to convert to " + format +
                     " (needs at least 3 dimensions)");
  }
  std::vector<int64_t> perm{0};
  if (to_channels_last) {  // channels from axis 1 to the end
    for (int64_t k = 2; k < rank; ++k) perm.push_back(k);
    perm.push_back(1);
  } else {  // channels from the end to axis 1
    perm.push_back(rank - 1);
    for (int64_t k = 1; k < rank - 1; ++k) perm.push_back(k);
  }
  return with_format(transpose(x, perm), x, format);
}

}  // namespace mnnpy

// ------------------------------------------------------------------ gradients
namespace mnnpy {
namespace {

MNNPY_REGISTER_GRAD("Transpose", [](const GradContext& c) {
  const std::vector<int64_t>& perm = c.node.attrs.get_ints("perm");
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = (int64_t)i;
  return std::vector<Var>{transpose(c.grad(), inverse)};
});

MNNPY_REGISTER_GRAD("BroadcastTo", [](const GradContext& c) {
  return std::vector<Var>{sum_to_shape(c.grad(), c.input(0).type().shape)};
});

MNNPY_REGISTER_GRAD("Concat", [](const GradContext& c) {
  const int64_t axis = c.node.attrs.get_int("axis");
  std::vector<int64_t> sizes;
  for (const Var& in : c.node.inputs) sizes.push_back(in.type().shape[axis]);
  return split(c.grad(), sizes, axis);
});

// A slice's gradient is zeros with the output gradient written into the box.
MNNPY_REGISTER_GRAD("StridedSlice", [](const GradContext& c) {
  return std::vector<Var>{make_op("SliceAssign", {zeros_of(c.input(0).type()), c.grad()}, c.node.attrs)};
});

MNNPY_REGISTER_GRAD("SliceAssign", [](const GradContext& c) {
  const Var& g = c.grad();
  const Var& value = c.input(1);
  const Shape box = c.node.attrs.get_ints("size");
  const Var outside = make_op("SliceAssign", {g, zeros_of(TensorType{g.type().dtype, box})}, c.node.attrs);
  return std::vector<Var>{outside, sum_to_shape(make_op("StridedSlice", {g}, c.node.attrs), value.type().shape)};
});

// Rows picked more than once receive the sum of their gradients (an embedding's).
MNNPY_REGISTER_GRAD("Gather", [](const GradContext& c) {
  const Var& params = c.input(0);
  const int64_t axis = c.node.attrs.get_int("axis");
  return std::vector<Var>{grad::scatter_add(c.grad(), c.input(1), axis, params.type().shape[axis], false), Var{}};
});

// Assigned positions take no gradient from the data; the updates take the gradient at the
// positions they were written to (summed where one update fed several positions).
MNNPY_REGISTER_GRAD("Scatter", [](const GradContext& c) {
  if (c.node.attrs.get_int("reduction", 0) != 0) {
    throw ValueError("grad: Scatter with a reduction is not differentiable");
  }
  const Var& g = c.grad();
  const int64_t axis = c.node.attrs.get_int("axis");
  const Var cleared = make_op("Scatter", {g, c.input(1), grad::scalar_like(g, 0)}, Attrs().set("axis", axis));
  const Var picked = make_op("Gather", {g, c.input(1)}, Attrs().set("axis", axis));
  return std::vector<Var>{cleared, Var{}, sum_to_shape(picked, c.input(2).type().shape)};
});

// Constant padding: the gradient is the unpadded box. The other modes read some input positions
// several times: their gradients are summed back axis by axis (the padding is separable).
MNNPY_REGISTER_GRAD("Pad", [](const GradContext& c) {
  const Shape& in = c.input(0).type().shape;
  const std::vector<int64_t>& pads = c.node.attrs.get_ints("pads");
  const std::string& mode = c.node.attrs.get_string("mode");
  Var g = c.grad();
  if (mode == "constant") {
    std::vector<int64_t> begin, step(in.size(), 1);
    for (size_t d = 0; d < in.size(); ++d) begin.push_back(pads[2 * d]);
    return std::vector<Var>{make_op("StridedSlice", {g}, Attrs().set("begin", begin).set("step", step).set("size", in))};
  }
  for (size_t d = 0; d < in.size(); ++d) {
    if (pads[2 * d] == 0 && pads[2 * d + 1] == 0) continue;
    const std::vector<int64_t> map = pad_map(in[d], pads[2 * d], pads[2 * d + 1], mode);
    auto positions = Tensor::allocate(TensorType{DType::Int64, {(int64_t)map.size()}});
    std::copy(map.begin(), map.end(), positions->ptr<int64_t>());
    g = grad::scatter_add(g, make_const(positions), (int64_t)d, in[d], false);
  }
  return std::vector<Var>{g};
});

MNNPY_REGISTER_GRAD("Split", [](const GradContext& c) {
  std::vector<Var> pieces;
  for (size_t i = 0; i < c.outputs.size(); ++i) {
    pieces.push_back(c.output_grads[i].valid() ? c.output_grads[i] : zeros_of(c.outputs[i].type()));
  }
  const int64_t axis = c.node.attrs.get_int("axis");
  return std::vector<Var>{concat(pieces, axis)};
});

}  // namespace
}  // namespace mnnpy
