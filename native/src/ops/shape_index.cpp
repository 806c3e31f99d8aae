// NumPy indexing on the graph: x[items] and x[items] = value.
//
// An index is resolved in two stages. The basic stage (integers, slices, new axes) is one
// StridedSlice box of x plus a Reshape. The advanced stage (integer and boolean arrays)
// merges the indexed axes into one and gathers along it with the arrays combined into
// flat positions; as in NumPy, the result's indexed axes stand where the arrays were when
// those are next to each other, else first. Boolean arrays are turned into integer arrays
// with nonzero, which needs their values: they are evaluated when the index is built, a host
// synchronization point (value_now). Values are only ever read from constants, results already
// kept, or through the executor; never by running kernels here.
//
// Assignment never writes through a view: it builds the whole new array, either with a
// SliceAssign of the basic box, a Where for a boolean mask and one value, or a Scatter:
// along the merged index axes when the index is arrays on neighbouring axes only, else to
// the flat positions that the index selects.
#include <algorithm>

#include "mnnpy/executor.h"
#include "mnnpy/lowering.h"
#include "mnnpy/op_registry.h"
#include "mnnpy/ops.h"
#include "mnnpy/shape_ops.h"
#include "ops/shape_common.h"

namespace mnnpy {

SliceRange normalize_slice(std::optional<int64_t> start_opt, std::optional<int64_t> stop_opt,
                           std::optional<int64_t> step_opt, int64_t n) {
  const int64_t step = step_opt.value_or(1);
  if (step == 0) throw ValueError("slice step cannot be zero");
  // Python's slice.indices, written to avoid overflow for huge bounds.
  auto resolve = [&](std::optional<int64_t> v, int64_t fallback, int64_t lo, int64_t hi) {
    if (!v) return fallback;
    int64_t i = *v;
    if (i < 0) i = i < -n ? lo : i + n;
    return std::min(std::max(i, lo), hi);
  };
  SliceRange r;
  r.step = step;
  int64_t start, stop;
  if (step > 0) {
    start = resolve(start_opt, 0, 0, n);
    stop = resolve(stop_opt, n, 0, n);
    r.count = stop > start ? (stop - start - 1) / step + 1 : 0;
  } else {
    start = resolve(start_opt, n - 1, -1, n - 1);
    stop = resolve(stop_opt, -1, -1, n - 1);
    r.count = start > stop ? (start - stop - 1) / (-step) + 1 : 0;
  }
  r.begin = r.count > 0 ? start : 0;
  return r;
}

namespace {

// An integer array indexing one axis of the basic-stage result.
struct Advanced {
  int64_t pos;   // axis of the basic-stage result
  Var index;     // any integer dtype
  int64_t size;  // that axis' length
  int64_t axis;  // the axis of x, for messages
};

struct IndexPlan {
  // Basic stage: a box of x (per axis first index, step, count) ...
  std::vector<int64_t> begin, step, size;
  bool whole = true;  // the box is all of x
  // ... reshaped to basic_shape (new axes in, integer-indexed axes out unless arrays are present).
  Shape basic_shape;
  std::vector<int64_t> flat_strides;  // per basic axis: its step in x's flat positions (0: new axis)
  std::vector<int64_t> source_axis;   // per basic axis: the axis of x, or -1 for a new axis
  int64_t flat_offset = 0;            // x's flat position of the box's first element
  // Advanced stage.
  std::vector<Advanced> advanced;
  Shape index_shape;  // the arrays broadcast together
  bool adjacent = true;
};

std::string index_error_too_many(int64_t rank, int64_t used) {
  return "too many indices for array: array is " + std::to_string(rank) + "-dimensional, but " +
         std::to_string(used) + " were indexed";
}

int64_t dims_used(const IndexItem& it) {
  switch (it.kind) {
    case IndexItem::Kind::Integer:
    case IndexItem::Kind::Slice:
      return 1;
    case IndexItem::Kind::Array:
      return it.array.type().dtype == DType::Bool ? (int64_t)it.array.type().shape.size() : 1;
    default:
      return 0;
  }
}

// v's value on the host: the one already known, else evaluated by the executor now. A host
// synchronization point: the graph behind v runs before the index is built (a boolean mask's
// count shapes the result).
std::shared_ptr<Tensor> value_now(const Var& v) {
  if (auto t = known_value(v)) return t;
  return evaluate({v})[0];
}

Var int64_const(const std::vector<int64_t>& values, const Shape& shape) {
  auto t = Tensor::allocate(TensorType{DType::Int64, shape});
  std::copy(values.begin(), values.end(), t->ptr<int64_t>());
  return make_const(t);
}

// numpy.nonzero of a bool mask: one int64 array per axis.
std::vector<Var> nonzero(const Tensor& mask) {
  const Shape& s = mask.type.shape;
  const uint8_t* m = mask.ptr<uint8_t>();
  const int64_t total = mask.numel();
  int64_t count = 0;
  for (int64_t i = 0; i < total; ++i) count += m[i] != 0;
  std::vector<std::shared_ptr<Tensor>> cols;
  for (size_t k = 0; k < s.size(); ++k) cols.push_back(Tensor::allocate(TensorType{DType::Int64, {count}}));
  std::vector<int64_t> idx(s.size(), 0);
  int64_t j = 0;
  for (int64_t i = 0; i < total; ++i) {
    if (m[i]) {
      for (size_t k = 0; k < s.size(); ++k) cols[k]->ptr<int64_t>()[j] = idx[k];
      ++j;
    }
    for (size_t k = s.size(); k-- > 0;) {
      if (++idx[k] < s[k]) break;
      idx[k] = 0;
    }
  }
  std::vector<Var> out;
  for (auto& c : cols) out.push_back(make_const(c));
  return out;
}

void check_mask_shape(const Shape& mask, const Shape& x, int64_t first_axis) {
  for (size_t j = 0; j < mask.size(); ++j) {
    const int64_t a = first_axis + (int64_t)j;
    // NumPy lets an empty mask axis select nothing from an axis of length 1.
    if (mask[j] != x[a] && !(mask[j] == 0 && x[a] == 1)) {
      throw IndexError("boolean index did not match indexed array along axis " + std::to_string(a) + "; size of axis is " +
                       std::to_string(x[a]) + " but size of corresponding boolean axis is " + std::to_string(mask[j]));
    }
  }
}

IndexPlan plan_index(const Var& x, const std::vector<IndexItem>& items) {
  const Shape& shape = x.type().shape;
  const int64_t rank = (int64_t)shape.size();
  int64_t used = 0, ellipses = 0;
  bool has_arrays = false;
  for (const IndexItem& it : items) {
    used += dims_used(it);
    ellipses += it.kind == IndexItem::Kind::Ellipsis;
    has_arrays = has_arrays || it.kind == IndexItem::Kind::Array;
    if (it.kind == IndexItem::Kind::Array && !is_integer(it.array.type().dtype) && it.array.type().dtype != DType::Bool) {
      throw IndexError("arrays used as indices must be of integer (or boolean) type");
    }
  }
  if (ellipses > 1) throw IndexError("an index can only have a single ellipsis ('...')");
  if (used > rank) throw IndexError(index_error_too_many(rank, used));

  IndexPlan p;
  p.begin.assign(rank, 0);
  p.step.assign(rank, 1);
  p.size = shape;
  const std::vector<int64_t> xs = row_major_strides(shape);
  auto add_axis = [&](int64_t source, int64_t len, int64_t stride) {
    p.basic_shape.push_back(len);
    p.flat_strides.push_back(stride);
    p.source_axis.push_back(source);
  };
  auto add_advanced = [&](const Var& index, int64_t size, int64_t axis) {
    p.advanced.push_back(Advanced{(int64_t)p.basic_shape.size() - 1, index, size, axis});
  };
  int64_t d = 0;
  auto full_axes = [&](int64_t count) {
    for (int64_t k = 0; k < count; ++k, ++d) add_axis(d, shape[d], xs[d]);
  };
  for (const IndexItem& it : items) {
    switch (it.kind) {
      case IndexItem::Kind::Ellipsis:
        full_axes(rank - used);
        break;
      case IndexItem::Kind::NewAxis:
        add_axis(-1, 1, 0);
        break;
      case IndexItem::Kind::Integer: {
        const int64_t n = shape[d];
        check_index_range({it.integer}, n, d);
        const int64_t i = it.integer < 0 ? it.integer + n : it.integer;
        if (has_arrays) {
          // Beside arrays an integer is a 0-d array: it takes part in their broadcasting.
          add_axis(d, n, xs[d]);
          add_advanced(int64_const({i}, {}), n, d);
        } else {
          p.begin[d] = i;
          p.size[d] = 1;
          p.whole = p.whole && n == 1;
          p.flat_offset += i * xs[d];
        }
        ++d;
        break;
      }
      case IndexItem::Kind::Slice: {
        const SliceRange r = normalize_slice(it.start, it.stop, it.step, shape[d]);
        p.begin[d] = r.begin;
        p.step[d] = r.step;
        p.size[d] = r.count;
        p.whole = p.whole && r.count == shape[d] && (r.step == 1 || r.count <= 1);
        if (r.count == 1) p.step[d] = 1;
        add_axis(d, r.count, r.step * xs[d]);
        p.flat_offset += r.begin * xs[d];
        ++d;
        break;
      }
      case IndexItem::Kind::Array: {
        const TensorType& t = it.array.type();
        if (t.dtype != DType::Bool) {
          add_axis(d, shape[d], xs[d]);
          add_advanced(it.array, shape[d], d);
          ++d;
          break;
        }
        if (t.shape.empty()) {
          // x[True] adds an axis of length 1 and selects it; x[False] selects nothing of it.
          const bool on = value_now(it.array)->ptr<uint8_t>()[0] != 0;
          add_axis(-1, 1, 0);
          add_advanced(int64_const(on ? std::vector<int64_t>{0} : std::vector<int64_t>{}, {on ? 1 : 0}), 1, d);
          break;
        }
        check_mask_shape(t.shape, shape, d);
        const std::vector<Var> cols = nonzero(*value_now(it.array));
        for (const Var& c : cols) {
          add_axis(d, shape[d], xs[d]);
          add_advanced(c, shape[d], d);
          ++d;
        }
        break;
      }
    }
  }
  full_axes(rank - d);

  if (!p.advanced.empty()) {
    p.index_shape = p.advanced[0].index.type().shape;
    try {
      for (const Advanced& a : p.advanced) p.index_shape = broadcast_shapes(p.index_shape, a.index.type().shape);
    } catch (const ValueError&) {
      std::string msg = "shape mismatch: indexing arrays could not be broadcast together with shapes";
      for (const Advanced& a : p.advanced) msg += " " + shape_str(a.index.type().shape);
      throw IndexError(msg);
    }
    for (size_t j = 1; j < p.advanced.size(); ++j) {
      p.adjacent = p.adjacent && p.advanced[j].pos == p.advanced[j - 1].pos + 1;
    }
  }
  return p;
}

// The basic stage's result.
Var apply_basic(const Var& x, const IndexPlan& p) {
  Var v = x;
  if (!p.whole) {
    v = make_op("StridedSlice", {x}, Attrs().set("begin", p.begin).set("step", p.step).set("size", p.size));
  }
  return reshape(v, p.basic_shape);
}

// Where the advanced stage's index axes go: result shape and the first index axis.
struct AdvancedLayout {
  Shape result;
  int64_t first = 0;           // position of the index axes in the result
  std::vector<int64_t> rest;   // the other basic axes, in result order
};

AdvancedLayout advanced_layout(const IndexPlan& p) {
  AdvancedLayout L;
  std::vector<char> is_index(p.basic_shape.size(), 0);
  for (const Advanced& a : p.advanced) is_index[a.pos] = 1;
  L.first = p.adjacent ? p.advanced[0].pos : 0;
  for (int64_t a = 0; a < (int64_t)p.basic_shape.size(); ++a) {
    if (!is_index[a]) L.rest.push_back(a);
  }
  for (size_t k = 0; k < L.rest.size(); ++k) {
    if ((int64_t)k == L.first) L.result.insert(L.result.end(), p.index_shape.begin(), p.index_shape.end());
    L.result.push_back(p.basic_shape[L.rest[k]]);
  }
  if ((int64_t)L.rest.size() <= L.first) L.result.insert(L.result.end(), p.index_shape.begin(), p.index_shape.end());
  return L;
}

// sum_j normalize(index_j) * weights[j], broadcast to the index shape. A position whose
// index is out of range becomes `invalid`: computed on the spot when every index is known
// (raising IndexError for a bad one), else in the graph.
Var combine_indices(const IndexPlan& p, const std::vector<int64_t>& weights, int64_t invalid) {
  const Shape& B = p.index_shape;
  bool all_known = true;
  for (const Advanced& a : p.advanced) all_known = all_known && known_value(a.index) != nullptr;
  if (all_known) {
    const int64_t total = shape_numel(B);
    std::vector<int64_t> out((size_t)total, 0);
    for (size_t j = 0; j < p.advanced.size(); ++j) {
      const Advanced& a = p.advanced[j];
      std::vector<int64_t> vals = int64_values(*known_value(a.index));
      check_index_range(vals, a.size, a.axis);
      // Walk B, reading this index with its broadcast strides.
      const Shape& s = a.index.type().shape;
      const std::vector<int64_t> strides = broadcast_strides(s, B);
      std::vector<int64_t> idx(B.size(), 0);
      int64_t src = 0;
      for (int64_t i = 0; i < total; ++i) {
        const int64_t v = vals[src];
        out[i] += (v < 0 ? v + a.size : v) * weights[j];
        for (size_t k = B.size(); k-- > 0;) {
          src += strides[k];
          if (++idx[k] < B[k]) break;
          src -= B[k] * strides[k];
          idx[k] = 0;
        }
      }
    }
    return int64_const(out, B);
  }
  Var acc, ok;
  for (size_t j = 0; j < p.advanced.size(); ++j) {
    const Advanced& a = p.advanced[j];
    const Var n = make_scalar((double)a.size, DType::Int64);
    const Var zero = make_scalar(0.0, DType::Int64);
    Var index = a.index;
    if (index.type().dtype == DType::UInt64) {
      // Values above int64's range would turn negative: the largest int64 stands for them.
      auto largest = Tensor::allocate(TensorType{DType::UInt64, {}});
      *largest->ptr<uint64_t>() = (uint64_t)INT64_MAX;
      index = binary("Minimum", index, make_const(largest));
    }
    Var i = cast(index, DType::Int64);
    i = where(binary("Less", i, zero), binary("Add", i, n), i);
    const Var in_range = binary("LogicalAnd", binary("GreaterEqual", i, zero), binary("Less", i, n));
    const Var term = weights[j] == 1 ? i : binary("Mul", i, make_scalar((double)weights[j], DType::Int64));
    acc = acc.valid() ? binary("Add", acc, term) : term;
    ok = ok.valid() ? binary("LogicalAnd", ok, in_range) : in_range;
  }
  return broadcast_to(where(ok, acc, make_scalar((double)invalid, DType::Int64)), B);
}

// The bool mask when `items` is one boolean array among full slices and ellipses.
const IndexItem* sole_mask(const std::vector<IndexItem>& items, int64_t rank, int64_t* first_axis) {
  const IndexItem* mask = nullptr;
  int64_t before = 0, used = 0;
  bool ellipsis_before = false;
  for (const IndexItem& it : items) {
    const bool full_slice = it.kind == IndexItem::Kind::Slice && !it.start && !it.stop && (!it.step || *it.step == 1);
    if (it.kind == IndexItem::Kind::Array && it.array.type().dtype == DType::Bool && !it.array.type().shape.empty() && !mask) {
      mask = &it;
      before = used;
    } else if (it.kind == IndexItem::Kind::Ellipsis) {
      ellipsis_before = ellipsis_before || !mask;
    } else if (!full_slice) {
      return nullptr;
    }
    used += dims_used(it);
  }
  if (!mask || used > rank) return nullptr;
  *first_axis = before + (ellipsis_before ? rank - used : 0);
  return mask;
}

// Value shape with leading length-1 axes dropped down to `rank` axes, as NumPy does on assignment.
Shape strip_leading_ones(Shape s, size_t rank) {
  while (s.size() > rank && s.front() == 1) s.erase(s.begin());
  return s;
}

bool broadcastable(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  const size_t lead = to.size() - from.size();
  for (size_t k = 0; k < from.size(); ++k) {
    if (from[k] != 1 && from[k] != to[lead + k]) return false;
  }
  return true;
}

// shape with its axes [first, first + k) merged into one.
Shape merge_index_axes(const Shape& shape, int64_t first, int64_t k) {
  Shape merged(shape.begin(), shape.begin() + first);
  merged.push_back(1);
  for (int64_t j = first; j < first + k; ++j) merged.back() *= shape[j];
  merged.insert(merged.end(), shape.begin() + first + k, shape.end());
  return merged;
}

// The arrays as positions along their axes merged into one (row-major over the arrays'
// axes). Out-of-range positions are left for the gather/scatter kernels to drop.
Var merged_positions(const IndexPlan& p) {
  const int64_t k = (int64_t)p.advanced.size();
  if (k == 1) {
    // The kernels wrap negative indices themselves; known ones are checked now.
    const Advanced& a = p.advanced[0];
    if (auto t = known_value(a.index)) check_index_range(*t, a.size, a.axis);
    return a.index;
  }
  std::vector<int64_t> weights((size_t)k);
  int64_t length = 1;
  for (int64_t j = k - 1; j >= 0; --j) {
    weights[j] = length;
    length *= p.advanced[j].size;
  }
  return combine_indices(p, weights, -(length + 1));
}

// x[mask] for a boolean mask over x's leading axes: the mask's flat positions (one pass, no
// per-axis coordinates) gathered from x with those axes merged.
Var select_leading_mask(const Var& x, const Var& mask_var) {
  const Shape& shape = x.type().shape;
  const Shape& ms = mask_var.type().shape;
  check_mask_shape(ms, shape, 0);
  const std::shared_ptr<Tensor> mask = value_now(mask_var);
  const uint8_t* m = mask->ptr<uint8_t>();
  const int64_t total = mask->numel();
  int64_t count = 0;
  for (int64_t i = 0; i < total; ++i) count += m[i] != 0;
  auto positions = Tensor::allocate(TensorType{DType::Int64, {count}});
  int64_t* out = positions->ptr<int64_t>();
  // Branch-free: every position is written, the cursor advances on set elements; the loop
  // ends at the last one, so no write goes past `count`.
  for (int64_t i = 0, j = 0; j < count; ++i) {
    out[j] = i;
    j += m[i] != 0;
  }
  // x's leading axes (an axis of length 1 may meet an empty mask axis: nothing is selected).
  Shape merged{shape_numel(Shape(shape.begin(), shape.begin() + ms.size()))};
  merged.insert(merged.end(), shape.begin() + ms.size(), shape.end());
  const Var flat = reshape(x, merged);
  if (merged.size() == 1) return make_op("TakeElements", {flat, make_const(positions)});
  return make_op("Gather", {flat, make_const(positions)}, Attrs().set("axis", int64_t(0)));
}

}  // namespace

Var index(const Var& x, const std::vector<IndexItem>& items) {
  int64_t mask_axis = 0;
  const IndexItem* mask = sole_mask(items, (int64_t)x.type().shape.size(), &mask_axis);
  if (mask && mask_axis == 0) return select_leading_mask(x, mask->array);
  const IndexPlan p = plan_index(x, items);
  Var v = apply_basic(x, p);
  if (p.advanced.empty()) return v;
  const int64_t k = (int64_t)p.advanced.size();
  // Index axes first when apart, then merged into one axis and gathered along.
  if (!p.adjacent) {
    std::vector<int64_t> perm;
    for (const Advanced& a : p.advanced) perm.push_back(a.pos);
    for (int64_t a = 0; a < (int64_t)p.basic_shape.size(); ++a) {
      if (std::find(perm.begin(), perm.end(), a) == perm.end()) perm.push_back(a);
    }
    v = transpose(v, perm);
  }
  const int64_t first = p.adjacent ? p.advanced[0].pos : 0;
  v = reshape(v, merge_index_axes(v.type().shape, first, k));
  if (k == 1) {
    // Known data and positions: folded into a constant by evaluating the gather now (a host
    // synchronization point, through the executor).
    const std::shared_ptr<Tensor> values = known_value(v), positions = known_value(p.advanced[0].index);
    if (values && positions && positions->numel() > 0 && shape_numel(values->type.shape) > 0) {
      return make_const(take_now(values->data, values->type, positions->data, positions->type.dtype, positions->type.shape, first));
    }
  }
  // A 1-D source is an element gather: its kernel overlaps the random reads' cache misses.
  if (v.type().shape.size() == 1) return make_op("TakeElements", {v, merged_positions(p)});
  return make_op("Gather", {v, merged_positions(p)}, Attrs().set("axis", first));
}

Var index_assign(const Var& x, const std::vector<IndexItem>& items, const Var& value_in) {
  const Shape& shape = x.type().shape;
  const int64_t rank = (int64_t)shape.size();
  const Var value = cast(value_in, x.type().dtype);
  const Shape& vs = value.type().shape;

  int64_t mask_axis = 0;
  if (const IndexItem* mask = sole_mask(items, rank, &mask_axis)) {
    if (value.type().numel() == 1) {
      // One value under a boolean mask: a select, with no need to know the mask now.
      const Shape& ms = mask->array.type().shape;
      check_mask_shape(ms, shape, mask_axis);
      if (shape_numel(ms) == 0) return make_op("Reshape", {x}, Attrs().set("shape", shape));  // selects nothing
      Shape aligned = ms;
      aligned.resize(rank - mask_axis, 1);
      return where(reshape(mask->array, aligned), reshape(value, {}), x);
    }
  }

  const IndexPlan p = plan_index(x, items);
  if (p.advanced.empty()) {
    const Shape& region = p.basic_shape;
    const Shape v = strip_leading_ones(vs, region.size());
    if (!broadcastable(v, region)) {
      throw ValueError("could not broadcast input array from shape " + shape_str(vs) + " into shape " + shape_str(region));
    }
    // The value's axes laid over x's: 1 on integer-indexed axes, new axes dropped.
    Shape over_x(rank, 1);
    const size_t lead = region.size() - v.size();
    for (size_t a = lead; a < region.size(); ++a) {
      if (p.source_axis[a] >= 0) over_x[p.source_axis[a]] = v[a - lead];
    }
    const Var placed = reshape(value, over_x);
    if (p.whole) return broadcast_to(placed, shape);
    return make_op("SliceAssign", {x, placed}, Attrs().set("begin", p.begin).set("step", p.step).set("size", p.size));
  }

  const AdvancedLayout L = advanced_layout(p);
  const Shape& R = L.result;
  const Shape v = strip_leading_ones(vs, R.size());
  if (!broadcastable(v, R)) {
    throw ValueError("shape mismatch: value array of shape " + shape_str(vs) +
                     " could not be broadcast to indexing result of shape " + shape_str(R));
  }
  if (p.whole && p.adjacent && p.basic_shape == shape) {
    // Arrays on neighbouring axes and nothing else: a scatter along those axes merged. One
    // value, or one row for every index, is not expanded first.
    const int64_t first = p.advanced[0].pos, k = (int64_t)p.advanced.size();
    const Shape row(shape.begin() + first + k, shape.end());
    Var updates;
    if (shape_numel(v) == 1) updates = reshape(value, {});
    else if (strip_leading_ones(v, 0) == strip_leading_ones(row, 0)) updates = reshape(value, row);
    else updates = broadcast_to(reshape(value, v), R);
    const Var out = make_op("Scatter", {reshape(x, merge_index_axes(shape, first, k)), merged_positions(p), updates},
                            Attrs().set("axis", first));
    return reshape(out, shape);
  }
  const Var updates = shape_numel(v) == 1 ? reshape(value, {}) : broadcast_to(reshape(value, v), R);

  // Otherwise: the flat positions in x of every element x[items] selects, and a scatter there.
  const int64_t index_rank = (int64_t)p.index_shape.size();
  std::vector<int64_t> iota_strides, weights;
  Shape index_aligned;
  for (size_t k = 0; k < L.rest.size(); ++k) {
    if ((int64_t)k == L.first) {
      iota_strides.insert(iota_strides.end(), index_rank, 0);
      index_aligned.insert(index_aligned.end(), p.index_shape.begin(), p.index_shape.end());
    }
    iota_strides.push_back(p.flat_strides[L.rest[k]]);
    index_aligned.push_back(1);
  }
  if ((int64_t)L.rest.size() <= L.first) {
    iota_strides.insert(iota_strides.end(), index_rank, 0);
    index_aligned.insert(index_aligned.end(), p.index_shape.begin(), p.index_shape.end());
  }
  for (const Advanced& a : p.advanced) weights.push_back(p.flat_strides[a.pos]);
  const int64_t numel = x.type().numel();
  // An invalid position stays negative after the scatter's wrap-around, so it is skipped.
  const Var picked = combine_indices(p, weights, -(2 * numel + 1));
  const Var base = make_op("Iota", {}, Attrs().set("shape", R).set("start", p.flat_offset).set("strides", iota_strides));
  const Var flat = binary("Add", base, reshape(picked, index_aligned));
  const int64_t count = shape_numel(R);
  const Var out = make_op("Scatter", {reshape(x, {numel}), reshape(flat, {count}),
                                      shape_numel(v) == 1 ? updates : reshape(updates, {count})},
                          Attrs().set("axis", int64_t(0)));
  return reshape(out, shape);
}

}  // namespace mnnpy
