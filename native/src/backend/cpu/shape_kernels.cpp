// CPU kernels of the shape and data-movement ops (ops/shape_ops.cpp): Transpose, BroadcastTo,
// Concat, Split, StridedSlice, SliceAssign, Gather, Scatter, Pad and Iota. They only move
// bytes, so every dtype works.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/axis_split.h"
#include "backend/cpu/copy.h"
#include "backend/cpu/elementwise.h"
#include "mnnpy/backend.h"
#include "mnnpy/lowering.h"
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

class ScatterKernel : public Kernel {
 public:
  explicit ScatterKernel(const KernelContext& ctx)
      : a_(ctx),
        updates_(scatter_updates(ctx.input_types[0].shape, ctx.input_types[1].shape, ctx.input_types[2].shape,
                                 ctx.attrs.get_int("axis"))) {}
  void execute(const KernelArgs& args, void*) const override {
    void* out = args.outputs[0]->data;
    cpu::parallel_memcpy(out, args.inputs[0]->data, args.inputs[0]->nbytes(), args.pool);
    cpu::scatter(a_.elem_size, a_.index_dtype, args.inputs[2]->data, updates_, args.inputs[1]->data, a_.outer,
                 a_.axis_size, a_.num_index, a_.inner, out, args.pool);
  }

 private:
  AlongAxis a_;
  ScatterUpdates updates_;
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
