// The CPU's kernel for fused elementwise programs: the program runs over tiles that stay in
// cache, reading its inputs in place (broadcast ones are expanded per tile) and writing only the
// final result.
#include "backend/cpu/fused_elementwise_kernel.h"

#include <algorithm>
#include <cstring>

#include "backend/cpu/copy.h"
#include "backend/cpu/elementwise.h"
#include "backend/cpu/prefetch.h"
#include "mnnpy/thread_pool.h"
#include "runtime/fused_elementwise.h"  // the executor options

namespace mnnpy {

namespace {

// Elements per tile: each register's tile stays in L1 (4 KiB of float32), and the tiles are short
// enough that the loads of the next input lines and the writes of the output lines alternate
// often; 8192-element tiles (in L2) made each extra op of a chain cost a serialized memory pass.
constexpr int64_t kTile = 1024;
constexpr int64_t kParallelGrainTiles = 32;  // below ~32K elements one thread is faster
// Outputs this large do not stay in cache: they are written with streaming stores.
constexpr size_t kStreamingOutputBytes = size_t(8) << 20;
constexpr int64_t kStreamChunk = 1024;  // elements staged in L1 before each streaming copy
constexpr size_t kBufferStride = kTile * 8;  // bytes per register buffer (the widest dtype)
constexpr size_t kPageBytes = 4096;

// How one input maps onto the output index space.
struct InputLayout {
  enum Kind { Full, Scalar, Strided } kind = Full;
  size_t elem_size = 4;
  // Strided: dims collapsed where possible, input strides in elements (0 = broadcast).
  std::vector<int64_t> dims, strides;
};

InputLayout describe_input(const TensorType& in, const Shape& out) {
  InputLayout L;
  L.elem_size = dtype_size(in.dtype);
  if (in.shape == out || (in.numel() == shape_numel(out) && in.numel() <= 1)) return L;
  if (in.numel() == 1) {
    L.kind = InputLayout::Scalar;
    return L;
  }
  L.kind = InputLayout::Strided;
  const size_t rank = out.size();
  std::vector<int64_t> istr(rank, 0);
  int64_t s = 1;
  for (size_t k = 0; k < in.shape.size(); ++k) {
    const size_t i = in.shape.size() - 1 - k, o = rank - 1 - k;
    istr[o] = in.shape[i] == 1 ? 0 : s;
    s *= in.shape[i];
  }
  for (size_t o = 0; o < rank; ++o) {
    if (out[o] == 1) continue;
    if (!L.dims.empty()) {
      int64_t& ld = L.dims.back();
      int64_t& ls = L.strides.back();
      // Merge with the previous dim when the input walks both as one.
      if ((ls == 0 && istr[o] == 0) || (ls != 0 && ls == istr[o] * out[o])) {
        ld *= out[o];
        ls = istr[o];
        continue;
      }
    }
    L.dims.push_back(out[o]);
    L.strides.push_back(istr[o]);
  }
  return L;
}

// Copies elements [start, start + n) of the broadcast input into dst.
void gather_strided(const InputLayout& L, const char* src, int64_t start, int64_t n, char* dst) {
  const int64_t rank = (int64_t)L.dims.size();
  int64_t idx[16];
  int64_t rem = start, offset = 0;
  for (int64_t d = rank - 1; d >= 0; --d) {
    idx[d] = rem % L.dims[d];
    rem /= L.dims[d];
    offset += idx[d] * L.strides[d];
  }
  const size_t es = L.elem_size;
  const int64_t inner = L.dims[rank - 1], inner_stride = L.strides[rank - 1];
  // A short inner row repeated along the next dim (a per-channel vector over the pixels of a
  // blocked layout): one copy of the row, then copies of what is written, doubling each time.
  const bool repeated_rows = rank >= 2 && inner_stride != 0 && L.strides[rank - 2] == 0;
  // Wraps the multi-index from dim `from` outward where a dim has run to its end.
  auto carry = [&](int64_t from) {
    for (int64_t d = from; d > 0 && idx[d] == L.dims[d]; --d) {
      offset -= idx[d] * L.strides[d];
      idx[d] = 0;
      ++idx[d - 1];
      offset += L.strides[d - 1];
    }
  };
  while (n > 0) {
    if (repeated_rows && idx[rank - 1] == 0 && n >= 2 * inner) {
      const int64_t rows = std::min(n / inner, L.dims[rank - 2] - idx[rank - 2]);
      const size_t row_bytes = inner * es;
      std::memcpy(dst, src + offset * es, row_bytes);
      for (int64_t done = 1; done < rows;) {
        const int64_t more = std::min(done, rows - done);
        std::memcpy(dst + done * row_bytes, dst, more * row_bytes);
        done += more;
      }
      dst += rows * row_bytes;
      n -= rows * inner;
      idx[rank - 2] += rows;  // the offset stays: that dim's stride is 0
      carry(rank - 2);
      continue;
    }
    const int64_t run = std::min(n, inner - idx[rank - 1]);
    if (inner_stride == 0) {
      cpu::fill(es, src + offset * es, dst, run);
    } else {
      std::memcpy(dst, src + offset * es, run * es);
    }
    dst += run * es;
    n -= run;
    // Advance the multi-index by `run` (which ends the inner row unless n is exhausted).
    idx[rank - 1] += run;
    offset += run * inner_stride;
    carry(rank - 1);
  }
}

class FusedElementwiseKernel : public Kernel {
 public:
  FusedElementwiseKernel(std::vector<EwInstr> program, const std::vector<TensorType>& inputs, const TensorType& out)
      : program_(std::move(program)), out_(out) {
    for (auto& t : inputs) layouts_.push_back(describe_input(t, out.shape));
    const bool large = out.nbytes() >= kStreamingOutputBytes;
    // A multiply-add streams its result directly (measured 20-25% faster on large outputs);
    // other ops stream only through an L1 staging buffer, which costs more than it saves on
    // the machines measured, so that path is an option.
    stream_mul_add_ = large && program_.back().arity == EwArity::MulAdd;
    streaming_ = large && g_streaming_stores;
    // With one instruction the output is written as its lines arrive anyway; with more, the
    // earlier ones would run while nothing asks for those lines.
    const auto computing = std::count_if(program_.begin(), program_.end(),
                                         [](const EwInstr& ins) { return ins.arity != EwArity::None; });
    prefetch_output_ = computing >= 2 && !streaming_ && !stream_mul_add_;
    const int n = (int)program_.size();
    for (const EwInstr& ins : program_) {
      reg_elem_size_.push_back(ins.arity == EwArity::None ? layouts_[ins.a].elem_size : dtype_size(ins.out_dtype));
    }
    // A single-value input stays one value in a register where every use of it has a form for
    // that (binary, multiply-add, select); only other uses need it repeated over a tile.
    single_value_.assign(n, 0);
    for (int i = 0; i < n; ++i) {
      const EwInstr& ins = program_[i];
      single_value_[i] = ins.arity == EwArity::None && layouts_[ins.a].kind == InputLayout::Scalar;
    }
    for (const EwInstr& ins : program_) {
      if (ins.arity == EwArity::Unary || ins.arity == EwArity::Cast) single_value_[ins.a] = 0;
    }
    // Give each computed register a tile buffer, reusing buffers whose value is dead.
    std::vector<int> last_use(n, -1);
    for (int i = 0; i < n; ++i) {
      for (int r : {program_[i].a, program_[i].b, program_[i].c}) {
        if (program_[i].arity != EwArity::None && r >= 0) last_use[r] = i;
      }
    }
    buffer_of_.assign(n, -1);
    std::vector<int> free_buffers;
    for (int i = 0; i < n; ++i) {
      const EwInstr& ins = program_[i];
      const bool needs_buffer = i != n - 1 && (ins.arity != EwArity::None ||
                                               (layouts_[ins.a].kind != InputLayout::Full && !single_value_[i]));
      if (needs_buffer) {
        if (free_buffers.empty()) {
          buffer_of_[i] = num_buffers_++;
        } else {
          buffer_of_[i] = free_buffers.back();
          free_buffers.pop_back();
        }
      }
      if (ins.arity != EwArity::None) {
        for (int r : {ins.a, ins.b, ins.c}) {
          if (r >= 0 && last_use[r] == i && buffer_of_[r] >= 0) free_buffers.push_back(buffer_of_[r]);
        }
      }
    }
  }

  void execute(const KernelArgs& args, void*) const override {
    const int64_t total = out_.numel();
    if (total == 0) return;
    const int64_t tiles = (total + kTile - 1) / kTile;
    auto run_tiles = [&](int64_t t0, int64_t t1) {
      thread_local std::vector<char> scratch;
      const size_t need = (size_t)num_buffers_ * kBufferStride + kStreamChunk * 8 + kPageBytes;
      if (scratch.size() < need) scratch.resize(need);
      // Page-aligned, so that every vector access of a register is aligned.
      char* base = (char*)(((uintptr_t)scratch.data() + kPageBytes - 1) & ~uintptr_t(kPageBytes - 1));
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t start = t * kTile, n = std::min(kTile, total - start);
        if (prefetch_output_) prefetch_output(args, start, n);
        run_tile(args, start, n, base);
      }
    };
    parallel_for(args.pool, tiles, kParallelGrainTiles, run_tiles);
  }

 private:
  // Asks for the output lines of a tile before its first instruction, so that their reads for
  // ownership overlap the earlier instructions instead of stalling the stores of the last one
  // (measured: a second op on 4M floats went from +0.7 ms to +0.4 ms).
  void prefetch_output(const KernelArgs& args, int64_t start, int64_t n) const {
    const size_t out_size = dtype_size(out_.dtype);
    const char* out = (const char*)args.outputs[0]->data + start * out_size;
    const size_t bytes = n * out_size;
    for (size_t k = 0; k < bytes; k += 64) cpu::prefetch_for_write(out + k);
  }

  void run_tile(const KernelArgs& args, int64_t start, int64_t n, char* scratch) const {
    const void* regs[64];
    const void** reg = program_.size() <= 64 ? regs : new const void*[program_.size()];
    const int last = (int)program_.size() - 1;
    for (int i = 0; i < last; ++i) {
      char* dst = buffer_of_[i] >= 0 ? scratch + (size_t)buffer_of_[i] * kBufferStride : nullptr;
      reg[i] = run_instruction(args, i, reg, start, 0, n, dst);
    }
    const size_t out_size = dtype_size(out_.dtype);
    char* out = (char*)args.outputs[0]->data + start * out_size;
    const EwInstr& result = program_[last];
    if (stream_mul_add_ && (uintptr_t)out % 64 == 0) {
      cpu::mul_add(result.in_dtype, reg[result.a], reg[result.b], reg[result.c], out, n, /*stream=*/true,
                   singles(result.a, result.b, result.c));
      cpu::stream_fence();
    } else if (!streaming_) {
      run_instruction(args, last, reg, start, 0, n, out);
    } else {
      // The result goes through a small buffer that stays in L1, then to memory with
      // non-temporal stores that skip reading the destination lines first.
      char* chunk = scratch + (size_t)num_buffers_ * kBufferStride;
      for (int64_t offset = 0; offset < n; offset += kStreamChunk) {
        const int64_t m = std::min(kStreamChunk, n - offset);
        run_instruction(args, last, reg, start, offset, m, chunk);
        cpu::stream_copy(chunk, out + offset * out_size, m * out_size);
      }
    }
    if (reg != regs) delete[] reg;
  }

  // Runs instruction i over elements [start + offset, start + offset + n); registers hold the
  // tile from `start`. Returns where the result is (an input read in place, or dst).
  const void* run_instruction(const KernelArgs& args, int i, const void* const* reg, int64_t start, int64_t offset,
                              int64_t n, char* dst) const {
    const EwInstr& ins = program_[i];
    auto operand = [&](int r) { return (const char*)reg[r] + (single_value_[r] ? 0 : offset * reg_elem_size_[r]); };
    switch (ins.arity) {
      case EwArity::None: {
        const InputLayout& L = layouts_[ins.a];
        const char* src = (const char*)args.inputs[ins.a]->data + (start + offset) * L.elem_size;
        if (single_value_[i]) return args.inputs[ins.a]->data;
        if (L.kind == InputLayout::Full) {
          if (!dst) return src;
          std::memcpy(dst, src, n * L.elem_size);
        } else if (L.kind == InputLayout::Scalar) {
          cpu::fill(L.elem_size, args.inputs[ins.a]->data, dst, n);
        } else {
          gather_strided(L, (const char*)args.inputs[ins.a]->data, start + offset, n, dst);
        }
        break;
      }
      case EwArity::Unary: cpu::unary(ins.code, ins.in_dtype, operand(ins.a), dst, n); break;
      case EwArity::Binary:
        cpu::binary(ins.code, ins.in_dtype, operand(ins.a), operand(ins.b), dst, n, singles(ins.a, ins.b));
        break;
      case EwArity::Ternary:
        cpu::select(dtype_size(ins.out_dtype), (const uint8_t*)operand(ins.a), operand(ins.b), operand(ins.c), dst, n,
                    singles(ins.a, ins.b, ins.c));
        break;
      case EwArity::Cast: cpu::cast(ins.in_dtype, ins.out_dtype, operand(ins.a), dst, n); break;
      case EwArity::MulAdd:
        cpu::mul_add(ins.in_dtype, operand(ins.a), operand(ins.b), operand(ins.c), dst, n, false,
                     singles(ins.a, ins.b, ins.c));
        break;
    }
    return dst;
  }

  // The `scalars` mask of the cpu kernels for operand registers a, b, c.
  unsigned singles(int a, int b, int c = -1) const {
    return (a >= 0 && single_value_[a] ? 1u : 0u) | (b >= 0 && single_value_[b] ? 2u : 0u) |
           (c >= 0 && single_value_[c] ? 4u : 0u);
  }

  std::vector<EwInstr> program_;
  TensorType out_;
  std::vector<InputLayout> layouts_;
  std::vector<size_t> reg_elem_size_;
  std::vector<int> buffer_of_;
  std::vector<char> single_value_;  // per register: one value, read in place for every element
  int num_buffers_ = 0;
  bool prefetch_output_ = false;
  bool streaming_ = false;
  bool stream_mul_add_ = false;
};

}  // namespace

namespace cpu {

std::unique_ptr<Kernel> make_fused_elementwise_kernel(std::vector<EwInstr> program,
                                                      const std::vector<TensorType>& input_types,
                                                      const TensorType& output_type) {
  if (output_type.shape.size() > 16) throw ValueError("elementwise ops support at most 16 dimensions");
  return std::make_unique<FusedElementwiseKernel>(std::move(program), input_types, output_type);
}

}  // namespace cpu

}  // namespace mnnpy
