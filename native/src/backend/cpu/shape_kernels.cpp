// CPU kernels of the shape and data-movement ops (ops/shape_ops.cpp): Transpose, BroadcastTo,
// Concat, Split, StridedSlice, SliceAssign, Gather, Scatter, Pad and Iota. They only move
// bytes, so every dtype works (Scatter's reductions, which compute, take int32, int64, float32
// and float64).
#include <algorithm>
#include <memory>
#include <type_traits>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/axis_split.h"
#include "backend/cpu/copy.h"
#include "backend/cpu/elementwise.h"
#include "mnnpy/backend.h"
#include "mnnpy/lowering.h"
#include "mnnpy/thread_pool.h"
#include "ops/shape_common.h"

namespace mnnpy {

namespace {

// One strided copy from input 0 (at a byte offset) to the contiguous output.
class CopyKernel : public Kernel {
 public:
  CopyKernel(cpu::StridedCopy copy, int64_t src_offset_bytes) : copy_(std::move(copy)), offset_(src_offset_bytes) {}
  void execute(const KernelArgs& args, void*) const override {
    copy_.run((const char*)args.inputs[0]->data + offset_, args.outputs[0]->data, args.pool);
  }

 private:
  cpu::StridedCopy copy_;
  int64_t offset_;
};

// ------------------------------------------------------------------ Transpose / BroadcastTo
MNNPY_REGISTER_KERNEL("Transpose", "cpu", [](const KernelContext& ctx) {
  const std::vector<int64_t> in_strides = row_major_strides(ctx.input_types[0].shape);
  std::vector<int64_t> src;
  for (int64_t p : ctx.attrs.get_ints("perm")) src.push_back(in_strides[p]);
  const Shape& out = ctx.output_types[0].shape;
  return new_kernel<CopyKernel>(cpu::StridedCopy(dtype_size(ctx.input_types[0].dtype), out, src, row_major_strides(out)),
                                 0);
});

MNNPY_REGISTER_KERNEL("BroadcastTo", "cpu", [](const KernelContext& ctx) {
  const Shape& out = ctx.output_types[0].shape;
  return new_kernel<CopyKernel>(cpu::StridedCopy(dtype_size(ctx.input_types[0].dtype), out,
                                                  broadcast_strides(ctx.input_types[0].shape, out),
                                                  row_major_strides(out)),
                                 0);
});

// ------------------------------------------------------------------ Concat / Split
// Rows of a concatenation: outer = prod(shape[:axis]); each part k contributes a contiguous
// run of pieces[k] bytes to each row of the joined array.
struct Rows {
  int64_t outer = 1;
  std::vector<int64_t> pieces;  // bytes per row, per part
};

Rows concat_rows(const std::vector<TensorType>& parts, int64_t axis) {
  Rows r;
  int64_t axis_size = 0, inner = 0;
  cpu::split_around_axes(parts[0].shape, axis, 1, r.outer, axis_size, inner);
  inner *= (int64_t)dtype_size(parts[0].dtype);
  for (const TensorType& t : parts) r.pieces.push_back(t.shape[axis] * inner);
  return r;
}

// Joins the parts into one array (Concat) or cuts one array into the parts (Split).
class JoinRowsKernel : public Kernel {
 public:
  JoinRowsKernel(const KernelContext& ctx, bool join)
      : rows_(concat_rows(join ? ctx.input_types : ctx.output_types, ctx.attrs.get_int("axis"))), join_(join) {}
  void execute(const KernelArgs& args, void*) const override {
    std::vector<char*> parts;
    if (join_) for (const Tensor* t : args.inputs) parts.push_back((char*)t->data);
    else for (Tensor* t : args.outputs) parts.push_back((char*)t->data);
    char* whole = (char*)(join_ ? args.outputs[0]->data : args.inputs[0]->data);
    cpu::join_rows(rows_.outer, rows_.pieces, parts, whole, join_, args.pool);
  }

 private:
  Rows rows_;
  bool join_;
};

MNNPY_REGISTER_KERNEL("Concat", "cpu", [](const KernelContext& ctx) { return new_kernel<JoinRowsKernel>(ctx, true); });
MNNPY_REGISTER_KERNEL("Split", "cpu", [](const KernelContext& ctx) { return new_kernel<JoinRowsKernel>(ctx, false); });

// ------------------------------------------------------------------ StridedSlice / SliceAssign
MNNPY_REGISTER_KERNEL("StridedSlice", "cpu", [](const KernelContext& ctx) {
  const Shape& shape = ctx.input_types[0].shape;
  const Box b = read_box(ctx.attrs, shape);
  auto [strides, offset] = box_strides(b, shape);
  const size_t es = dtype_size(ctx.input_types[0].dtype);
  return new_kernel<CopyKernel>(cpu::StridedCopy(es, b.size, strides, row_major_strides(b.size)),
                                 offset * (int64_t)es);
});

// out = x with the box replaced by `value` (broadcast over the box).
class SliceAssignKernel : public Kernel {
 public:
  explicit SliceAssignKernel(const KernelContext& ctx) {
    const Shape& shape = ctx.input_types[0].shape;
    const Box b = read_box(ctx.attrs, shape);
    auto [dst_strides, offset] = box_strides(b, shape);
    const size_t es = dtype_size(ctx.input_types[0].dtype);
    copy_ = cpu::StridedCopy(es, b.size, broadcast_strides(ctx.input_types[1].shape, b.size), dst_strides);
    offset_bytes_ = offset * (int64_t)es;
  }
  void execute(const KernelArgs& args, void*) const override {
    char* out = (char*)args.outputs[0]->data;
    cpu::parallel_memcpy(out, args.inputs[0]->data, args.inputs[0]->nbytes(), args.pool);
    copy_.run(args.inputs[1]->data, out + offset_bytes_, args.pool);
  }

 private:
  cpu::StridedCopy copy_;
  int64_t offset_bytes_ = 0;
};

MNNPY_REGISTER_KERNEL("SliceAssign", "cpu", construct_kernel<SliceAssignKernel>);

// ------------------------------------------------------------------ Gather / Scatter
// The data's shape around the axis, the element size and the indices, as both kernels need them.
struct AlongAxis {
  int64_t outer = 1, axis_size = 1, inner = 1;
  size_t elem_size;
  DType index_dtype;
  int64_t num_index;

  explicit AlongAxis(const KernelContext& ctx)
      : elem_size(dtype_size(ctx.input_types[0].dtype)),
        index_dtype(ctx.input_types[1].dtype),
        num_index(ctx.input_types[1].numel()) {
    cpu::split_around_axes(ctx.input_types[0].shape, ctx.attrs.get_int("axis"), 1, outer, axis_size, inner);
  }
};

class GatherKernel : public Kernel {
 public:
  explicit GatherKernel(const KernelContext& ctx) : a_(ctx) {}
  void execute(const KernelArgs& args, void*) const override {
    cpu::gather(a_.elem_size, a_.index_dtype, args.inputs[0]->data, args.inputs[1]->data, a_.outer, a_.axis_size,
                a_.num_index, a_.inner, args.outputs[0]->data, args.pool);
  }

 private:
  AlongAxis a_;
};

MNNPY_REGISTER_KERNEL("Gather", "cpu", construct_kernel<GatherKernel>);

// dst[o, index[j], i] = combine(dst[o, index[j], i], update) in index order (so repeated
// indices fold every update in); indices out of range are skipped, as the plain scatter does.
// Floating max/min propagate NaN, as NumPy's maximum/minimum.
template <class T, class I>
void scatter_reduce_typed(ScatterReduction reduction, const T* up, ScatterUpdates kind, const I* ix, int64_t outer,
                          int64_t axis_size, int64_t num_index, int64_t inner, T* d, ThreadPool* pool) {
  auto combine = [reduction](T a, T b) -> T {
    switch (reduction) {
      case ScatterReduction::Add: return a + b;
      case ScatterReduction::Mul: return a * b;
      case ScatterReduction::Max:
        if constexpr (std::is_floating_point_v<T>) {
          if (a != a || b != b) return a != a ? a : b;
        }
        return b > a ? b : a;
      case ScatterReduction::Min:
        if constexpr (std::is_floating_point_v<T>) {
          if (a != a || b != b) return a != a ? a : b;
        }
        return b < a ? b : a;
      default: return b;
    }
  };
  const int64_t unit_elems = std::max<int64_t>(1, num_index * inner);
  // Threads split the outer slices only, so repeated indices are folded in order.
  parallel_for(pool, outer, std::max<int64_t>(1, (1 << 16) / unit_elems), [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      for (int64_t j = 0; j < num_index; ++j) {
        int64_t k = (int64_t)ix[j];
        if (k < 0) k += axis_size;
        if (k < 0 || k >= axis_size) continue;
        T* out = d + (o * axis_size + k) * inner;
        const T* in = kind == ScatterUpdates::Row ? up : kind == ScatterUpdates::Full ? up + (o * num_index + j) * inner
                                                                                       : up;
        for (int64_t i = 0; i < inner; ++i) out[i] = combine(out[i], kind == ScatterUpdates::Scalar ? in[0] : in[i]);
      }
    }
  });
}

void scatter_reduce(DType dtype, ScatterReduction reduction, DType index_dtype, const void* updates, ScatterUpdates kind,
                    const void* index, int64_t outer, int64_t axis_size, int64_t num_index, int64_t inner, void* dst,
                    ThreadPool* pool) {
  if (outer * num_index == 0 || inner == 0) return;
  with_index_type(index_dtype, [&](auto itag) {
    using I = decltype(itag);
    const I* ix = (const I*)index;
    switch (dtype) {
      case DType::Float32:
        return scatter_reduce_typed(reduction, (const float*)updates, kind, ix, outer, axis_size, num_index, inner,
                                    (float*)dst, pool);
      case DType::Float64:
        return scatter_reduce_typed(reduction, (const double*)updates, kind, ix, outer, axis_size, num_index, inner,
                                    (double*)dst, pool);
      case DType::Int32:
        return scatter_reduce_typed(reduction, (const int32_t*)updates, kind, ix, outer, axis_size, num_index, inner,
                                    (int32_t*)dst, pool);
      case DType::Int64:
        return scatter_reduce_typed(reduction, (const int64_t*)updates, kind, ix, outer, axis_size, num_index, inner,
                                    (int64_t*)dst, pool);
      default: throw TypeError(std::string("Scatter: no reduction for dtype ") + dtype_name(dtype));
    }
  });
}

class ScatterKernel : public Kernel {
 public:
  explicit ScatterKernel(const KernelContext& ctx)
      : a_(ctx),
        updates_(scatter_updates(ctx.input_types[0].shape, ctx.input_types[1].shape, ctx.input_types[2].shape,
                                 ctx.attrs.get_int("axis"))),
        reduction_((ScatterReduction)ctx.attrs.get_int("reduction", 0)),
        dtype_(ctx.input_types[0].dtype) {}
  void execute(const KernelArgs& args, void*) const override {
    void* out = args.outputs[0]->data;
    cpu::parallel_memcpy(out, args.inputs[0]->data, args.inputs[0]->nbytes(), args.pool);
    if (reduction_ == ScatterReduction::None) {
      cpu::scatter(a_.elem_size, a_.index_dtype, args.inputs[2]->data, updates_, args.inputs[1]->data, a_.outer,
                   a_.axis_size, a_.num_index, a_.inner, out, args.pool);
    } else {
      scatter_reduce(dtype_, reduction_, a_.index_dtype, args.inputs[2]->data, updates_, args.inputs[1]->data,
                     a_.outer, a_.axis_size, a_.num_index, a_.inner, out, args.pool);
    }
  }
  const char* scheme() const override { return reduction_ == ScatterReduction::None ? "assign" : "reduce"; }

 private:
  AlongAxis a_;
  ScatterUpdates updates_;
  ScatterReduction reduction_;
  DType dtype_;
};

MNNPY_REGISTER_KERNEL("Scatter", "cpu", construct_kernel<ScatterKernel>);

// ------------------------------------------------------------------ Pad
class PadKernel : public Kernel {
 public:
  explicit PadKernel(const KernelContext& ctx)
      : in_shape_(ctx.input_types[0].shape), out_shape_(ctx.output_types[0].shape),
        elem_size_(dtype_size(ctx.input_types[0].dtype)) {
    const std::vector<int64_t>& pads = ctx.attrs.get_ints("pads");
    const std::string& mode = ctx.attrs.get_string("mode");
    for (size_t d = 0; d < in_shape_.size(); ++d) maps_.push_back(pad_map(in_shape_[d], pads[2 * d], pads[2 * d + 1], mode));
    last_before_ = in_shape_.empty() ? 0 : pads[2 * in_shape_.size() - 2];
    const double value = ctx.attrs.get_float("value");
    cpu::cast(DType::Float64, ctx.input_types[0].dtype, &value, fill_, 1);
  }
  void execute(const KernelArgs& args, void*) const override {
    cpu::pad(elem_size_, in_shape_, out_shape_, maps_, last_before_, fill_, args.inputs[0]->data, args.outputs[0]->data,
             args.pool);
  }
  size_t resident_bytes() const override {
    size_t bytes = 0;
    for (const auto& map : maps_) bytes += map.size() * sizeof(int64_t);
    return bytes;
  }

 private:
  Shape in_shape_, out_shape_;
  size_t elem_size_;
  std::vector<std::vector<int64_t>> maps_;
  int64_t last_before_ = 0;
  alignas(8) unsigned char fill_[8] = {};
};

MNNPY_REGISTER_KERNEL("Pad", "cpu", construct_kernel<PadKernel>);

// ------------------------------------------------------------------ Iota
class IotaKernel : public Kernel {
 public:
  explicit IotaKernel(const KernelContext& ctx)
      : start_(ctx.attrs.get_int("start")), shape_(ctx.attrs.get_ints("shape")), strides_(ctx.attrs.get_ints("strides")) {}
  void execute(const KernelArgs& args, void*) const override {
    cpu::iota(start_, shape_, strides_, args.outputs[0]->ptr<int64_t>(), args.pool);
  }

 private:
  int64_t start_;
  Shape shape_;
  std::vector<int64_t> strides_;
};

MNNPY_REGISTER_KERNEL("Iota", "cpu", construct_kernel<IotaKernel>);

}  // namespace

}  // namespace mnnpy
