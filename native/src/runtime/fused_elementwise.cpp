#include "runtime/fused_elementwise.h"

#include <algorithm>
#include <cstring>

#include "backend/cpu/copy.h"
#include "backend/cpu/elementwise.h"
#include "mnnpy/thread_pool.h"

namespace mnnpy {

// Off by default: on the machines measured, plain stores into reused blocks were as fast or faster.
bool g_streaming_stores = false;

namespace {

constexpr int64_t kTile = 8192;  // elements per tile: long runs for the prefetchers, still within L2
constexpr int64_t kParallelGrainTiles = 4;  // below ~32K elements one thread is faster
// Outputs this large do not stay in cache: they are written with streaming stores.
constexpr size_t kStreamingOutputBytes = size_t(8) << 20;

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
  while (n > 0) {
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
    for (int64_t d = rank - 1; d > 0 && idx[d] == L.dims[d]; --d) {
      offset -= idx[d] * L.strides[d];
      idx[d] = 0;
      ++idx[d - 1];
      offset += L.strides[d - 1];
    }
  }
}

class FusedElementwiseKernel : public Kernel {
 public:
  FusedElementwiseKernel(std::vector<EwInstr> program, const std::vector<TensorType>& inputs, const TensorType& out)
      : program_(std::move(program)), out_(out) {
    for (auto& t : inputs) layouts_.push_back(describe_input(t, out.shape));
    streaming_ = g_streaming_stores && out.nbytes() >= kStreamingOutputBytes;
    // Give each computed register a tile buffer, reusing buffers whose value is dead.
    const int n = (int)program_.size();
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
      const bool needs_buffer =
          i != n - 1 && (ins.arity != EwArity::None || layouts_[ins.a].kind != InputLayout::Full);
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

  void execute(const KernelArgs& args, void*) override {
    const int64_t total = out_.numel();
    if (total == 0) return;
    const int64_t tiles = (total + kTile - 1) / kTile;
    auto run_tiles = [&](int64_t t0, int64_t t1) {
      thread_local std::vector<char> scratch;
      const size_t need = (size_t)(num_buffers_ + 1) * kTile * 8;
      if (scratch.size() < need) scratch.resize(need);
      for (int64_t t = t0; t < t1; ++t) run_tile(args, t * kTile, std::min(kTile, total - t * kTile), scratch.data());
    };
    parallel_for(args.pool, tiles, kParallelGrainTiles, run_tiles);
  }

 private:
  void run_tile(const KernelArgs& args, int64_t start, int64_t n, char* scratch) const {
    const void* regs[64];
    const void** reg = program_.size() <= 64 ? regs : new const void*[program_.size()];
    const int last = (int)program_.size() - 1;
    char* out = (char*)args.outputs[0]->data + start * dtype_size(out_.dtype);
    char* result = streaming_ ? scratch + (size_t)num_buffers_ * kTile * 8 : out;
    for (int i = 0; i <= last; ++i) {
      const EwInstr& ins = program_[i];
      char* dst = i == last ? result : (buffer_of_[i] >= 0 ? scratch + (size_t)buffer_of_[i] * kTile * 8 : nullptr);
      switch (ins.arity) {
        case EwArity::None: {
          const InputLayout& L = layouts_[ins.a];
          const char* src = (const char*)args.inputs[ins.a]->data;
          if (L.kind == InputLayout::Full) {
            if (i == last) std::memcpy(dst, src + start * L.elem_size, n * L.elem_size);
            else dst = (char*)src + start * L.elem_size;
          } else if (L.kind == InputLayout::Scalar) {
            cpu::fill(L.elem_size, src, dst, n);
          } else {
            gather_strided(L, src, start, n, dst);
          }
          break;
        }
        case EwArity::Unary: cpu::unary(ins.code, ins.in_dtype, reg[ins.a], dst, n); break;
        case EwArity::Binary: cpu::binary(ins.code, ins.in_dtype, reg[ins.a], reg[ins.b], dst, n); break;
        case EwArity::Ternary:
          cpu::select(dtype_size(ins.out_dtype), (const uint8_t*)reg[ins.a], reg[ins.b], reg[ins.c], dst, n);
          break;
        case EwArity::Cast: cpu::cast(ins.in_dtype, ins.out_dtype, reg[ins.a], dst, n); break;
      }
      reg[i] = dst;
    }
    if (streaming_) cpu::stream_copy(result, out, n * dtype_size(out_.dtype));
    if (reg != regs) delete[] reg;
  }

  std::vector<EwInstr> program_;
  TensorType out_;
  std::vector<InputLayout> layouts_;
  std::vector<int> buffer_of_;
  int num_buffers_ = 0;
  bool streaming_ = false;
};

}  // namespace

std::unique_ptr<Kernel> make_fused_elementwise_kernel(std::vector<EwInstr> program,
                                                      const std::vector<TensorType>& input_types,
                                                      const TensorType& output_type) {
  if (output_type.shape.size() > 16) throw ValueError("elementwise ops support at most 16 dimensions");
  return std::make_unique<FusedElementwiseKernel>(std::move(program), input_types, output_type);
}

}  // namespace mnnpy
