// MatMul: stacks of matrix products with NumPy's batch broadcasting. The op takes operands of
// rank >= 2 and one dtype; the builder handles 1-D operands, promotion and half precision.
#include <cstring>
#include <string>

#include "backend/cpu/gemm.h"
#include "mnnpy/linalg.h"
#include "mnnpy/op_registry.h"
#include "mnnpy/thread_pool.h"
#include "ops/grad_common.h"

namespace mnnpy {

namespace {

constexpr const char* kSignature = "(n?,k),(k,m?)->(n?,m?)";

std::string compact_shape(const Shape& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + ")";
}

// NumPy's message for batch dimensions that do not broadcast.
std::string batch_mismatch_message(const Shape& a, const Shape& b, int64_t M, int64_t N) {
  auto remapped = [](const Shape& s) {
    std::string r = "(";
    for (size_t i = 0; i + 2 < s.size(); ++i) r += std::to_string(s[i]) + ",";
    return r + "newaxis,newaxis)";
  };
  return "operands could not be broadcast together with remapped shapes [original->remapped]: " + compact_shape(a) +
         "->" + remapped(a) + " " + compact_shape(b) + "->" + remapped(b) + "  and requested shape (" +
         std::to_string(M) + "," + std::to_string(N) + ")";
}

struct Dims {
  int64_t M, N, K, lda, ldb;
};
Dims core_dims(const Shape& a, const Shape& b, bool ta, bool tb) {
  const size_t ra = a.size(), rb = b.size();
  Dims d;
  d.M = ta ? a[ra - 1] : a[ra - 2];
  d.K = ta ? a[ra - 2] : a[ra - 1];
  d.N = tb ? b[rb - 2] : b[rb - 1];
  d.lda = a[ra - 1];
  d.ldb = b[rb - 1];
  return d;
}

std::vector<TensorType> infer_matmul(const std::vector<TensorType>& in, Attrs& attrs) {
  const bool ta = attrs.get_int("transpose_a", 0) != 0, tb = attrs.get_int("transpose_b", 0) != 0;
  attrs.set("transpose_a", (int64_t)ta).set("transpose_b", (int64_t)tb);
  const TensorType &A = in[0], &B = in[1];
  if (A.dtype != B.dtype) {
    throw TypeError(std::string("MatMul: operands must have one dtype, got ") + dtype_name(A.dtype) + " and " +
                    dtype_name(B.dtype));
  }
  if (A.dtype == DType::Float16 || A.dtype == DType::BFloat16) {
    throw TypeError(std::string("MatMul: ") + dtype_name(A.dtype) +
                    " operands are computed in float32; cast them first (matmul() does)");
  }
  for (int i = 0; i < 2; ++i) {
    if (in[i].shape.size() < 2) {
      throw ValueError("MatMul: operand " + std::to_string(i) + " needs at least 2 dimensions, got shape " +
                       shape_str(in[i].shape));
    }
  }
  const Dims d = core_dims(A.shape, B.shape, ta, tb);
  const int64_t kb = tb ? B.shape[B.shape.size() - 1] : B.shape[B.shape.size() - 2];
  if (kb != d.K) {
    throw ValueError(std::string("matmul: Input operand 1 has a mismatch in its core dimension 0, with gufunc signature ") +
                     kSignature + " (size " + std::to_string(kb) + " is different from " + std::to_string(d.K) + ")");
  }
  Shape out;
  try {
    out = broadcast_shapes(Shape(A.shape.begin(), A.shape.end() - 2), Shape(B.shape.begin(), B.shape.end() - 2));
  } catch (const ValueError&) {
    throw ValueError(batch_mismatch_message(A.shape, B.shape, d.M, d.N));
  }
  out.push_back(d.M);
  out.push_back(d.N);
  return {TensorType{A.dtype, out}};
}

class MatMulKernel : public Kernel {
 public:
  explicit MatMulKernel(const KernelContext& ctx)
      : dtype_(ctx.input_types[0].dtype),
        ta_(ctx.attrs.get_int("transpose_a") != 0),
        tb_(ctx.attrs.get_int("transpose_b") != 0) {
    const Shape& as = ctx.input_types[0].shape;
    const Shape& bs = ctx.input_types[1].shape;
    const Shape& out = ctx.output_types[0].shape;
    const Dims d = core_dims(as, bs, ta_, tb_);
    M_ = d.M, N_ = d.N, K_ = d.K, lda_ = d.lda, ldb_ = d.ldb;
    // Element strides of each operand along the output's batch dimensions (0 where broadcast).
    const size_t nb = out.size() - 2;
    batch_shape_.assign(out.begin(), out.end() - 2);
    a_stride_.assign(nb, 0);
    b_stride_.assign(nb, 0);
    int64_t sa = M_ * K_, sb = K_ * N_;
    for (size_t i = 0; i < nb; ++i) {
      const size_t dim = nb - 1 - i;  // from the right
      const int64_t ai = (int64_t)as.size() - 3 - (int64_t)i, bi = (int64_t)bs.size() - 3 - (int64_t)i;
      if (ai >= 0) {
        if (as[ai] != 1) a_stride_[dim] = sa;
        sa *= as[ai];
        a_batch_ *= as[ai];
      }
      if (bi >= 0) {
        if (bs[bi] != 1) b_stride_[dim] = sb;
        sb *= bs[bi];
        b_batch_ *= bs[bi];
      }
    }
    batch_ = shape_numel(batch_shape_);
    // One shared right-hand matrix and row-major left matrices: the stack is one tall product.
    fold_batch_ = batch_ > 1 && b_batch_ == 1 && !ta_;
    // A constant right-hand matrix (weights) is packed once here instead of on every run.
    const bool float_gemm = dtype_ == DType::Float32 || dtype_ == DType::Float64;
    if (ctx.constants.size() > 1 && ctx.constants[1] && float_gemm && b_batch_ == 1 && K_ > 0 && N_ > 0) {
      packed_b_ = cpu::pack_b(dtype_, K_, N_, ctx.constants[1]->data, ldb_, tb_, nullptr);
    }
  }

  double flops() const override { return 2.0 * (double)batch_ * M_ * N_ * K_; }
  const char* scheme() const override { return dtype_ == DType::Float32 || dtype_ == DType::Float64 ? "gemm" : "loop"; }
  size_t resident_bytes() const override { return packed_b_.nbytes; }

  void execute(const KernelArgs& args, void*) const override {
    Tensor* out = args.outputs[0];
    if (out->numel() == 0) return;
    if (K_ == 0) {
      std::memset(out->data, 0, out->nbytes());
      return;
    }
    const size_t es = dtype_size(dtype_);
    const char* a = static_cast<const char*>(args.inputs[0]->data);
    const char* b = static_cast<const char*>(args.inputs[1]->data);
    char* c = static_cast<char*>(out->data);
    if (packed_b_.data && (batch_ == 1 || fold_batch_)) {
      cpu::gemm_packed(batch_ * M_, a, lda_, ta_, packed_b_, c, N_, false, args.pool);
      return;
    }
    if (batch_ == 1 || fold_batch_) {
      product(batch_ * M_, a, b, c, args.pool);
      return;
    }
    // A right-hand matrix shared by the whole stack is packed once.
    const bool float_gemm = dtype_ == DType::Float32 || dtype_ == DType::Float64;
    cpu::PackedB shared_b = packed_b_;
    if (!shared_b.data && float_gemm && b_batch_ == 1) shared_b = cpu::pack_b(dtype_, K_, N_, b, ldb_, tb_, args.pool);
    auto item = [&](int64_t index, ThreadPool* pool) {
      int64_t rest = index, a_off = 0, b_off = 0;
      for (int64_t d = (int64_t)batch_shape_.size() - 1; d >= 0; --d) {
        const int64_t i = rest % batch_shape_[d];
        rest /= batch_shape_[d];
        a_off += i * a_stride_[d];
        b_off += i * b_stride_[d];
      }
      char* ci = c + index * M_ * N_ * es;
      if (shared_b.data) cpu::gemm_packed(M_, a + a_off * es, lda_, ta_, shared_b, ci, N_, false, pool);
      else product(M_, a + a_off * es, b + b_off * es, ci, pool);
    };
    const int threads = args.pool ? args.pool->num_threads() : 1;
    const int64_t work = M_ * N_ * K_;
    if (threads > 1 && batch_ >= threads && work <= (int64_t(1) << 24)) {
      // Many products up to 256^3: one thread per product. Splitting each one over the threads
      // costs a packing pass and two synchronizations per product (measured at 128^3: 10% slower).
      const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 18) / work);
      args.pool->parallel_for(batch_, grain, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) item(i, nullptr);
      });
    } else {
      for (int64_t i = 0; i < batch_; ++i) item(i, args.pool);
    }
  }

 private:
  void product(int64_t M, const void* a, const void* b, void* c, ThreadPool* pool) const {
    if (dtype_ == DType::Float32 || dtype_ == DType::Float64) {
      cpu::gemm(dtype_, M, N_, K_, a, lda_, ta_, b, ldb_, tb_, c, N_, false, pool);
    } else {
      cpu::matmul_integral(dtype_, M, N_, K_, a, lda_, ta_, b, ldb_, tb_, c, N_, pool);
    }
  }

  DType dtype_;
  bool ta_, tb_;
  int64_t M_ = 0, N_ = 0, K_ = 0, lda_ = 0, ldb_ = 0;
  Shape batch_shape_;
  std::vector<int64_t> a_stride_, b_stride_;
  int64_t batch_ = 1, a_batch_ = 1, b_batch_ = 1;
  bool fold_batch_ = false;
  cpu::PackedB packed_b_;
};

OpDef matmul_def() {
  OpDef def{"MatMul", 2, 2, infer_matmul,
            [](const KernelContext& ctx) { return std::unique_ptr<Kernel>(new MatMulKernel(ctx)); }, {}, false};
  def.packed_inputs = 1u << 1;  // the right-hand matrix, when it is constant (weights)
  return def;
}
MNNPY_REGISTER_OP(matmul_def());

// C = op(A) op(B): each operand's gradient is a product of the output gradient with the other
// operand, arranged by the transpose flags, then summed over broadcast batch axes.
MNNPY_REGISTER_GRAD("MatMul", [](const GradContext& c) {
  const bool ta = c.node.attrs.get_int("transpose_a", 0) != 0, tb = c.node.attrs.get_int("transpose_b", 0) != 0;
  const Var &a = c.input(0), &b = c.input(1), &g = c.grad();
  auto mm = [](const Var& x, const Var& y, bool tx, bool ty) {
    return make_op("MatMul", {x, y}, Attrs().set("transpose_a", (int64_t)tx).set("transpose_b", (int64_t)ty));
  };
  Var ga, gb;
  if (!ta && !tb) ga = mm(g, b, false, true), gb = mm(a, g, true, false);
  else if (ta && !tb) ga = mm(b, g, false, true), gb = mm(a, g, false, false);
  else if (!ta && tb) ga = mm(g, b, false, false), gb = mm(g, a, true, false);
  else ga = mm(b, g, true, true), gb = mm(g, a, true, true);
  return std::vector<Var>{sum_to_shape(ga, a.type().shape), sum_to_shape(gb, b.type().shape)};
});

}  // namespace

Var matmul(const Var& a_in, const Var& b_in, bool transpose_a, bool transpose_b) {
  const Shape& as = a_in.type().shape;
  const Shape& bs = b_in.type().shape;
  for (int i = 0; i < 2; ++i) {
    if ((i == 0 ? as : bs).empty()) {
      throw ValueError("matmul: Input operand " + std::to_string(i) +
                       " does not have enough dimensions (has 0, gufunc core with signature " + kSignature +
                       " requires 1)");
    }
  }
  const DType result = promote_types(a_in.type().dtype, b_in.type().dtype);
  const DType compute = (result == DType::Float16 || result == DType::BFloat16) ? DType::Float32 : result;
  Var a = cast(a_in, compute), b = cast(b_in, compute);
  // Vectors become a row (left) or a column (right) matrix; a transpose flag on a vector is moot.
  const bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  if (a_vec) {
    a = reshape(a, {1, as[0]});
    transpose_a = false;
  }
  if (b_vec) {
    b = reshape(b, {bs[0], 1});
    transpose_b = false;
  }
  Var c = make_op("MatMul", {a, b},
                  Attrs().set("transpose_a", (int64_t)transpose_a).set("transpose_b", (int64_t)transpose_b));
  if (a_vec || b_vec) {
    Shape shape = c.type().shape;
    if (b_vec) shape.erase(shape.end() - 1);
    if (a_vec) shape.erase(shape.end() - (b_vec ? 1 : 2));
    c = reshape(c, shape);
  }
  return cast(c, result);
}

}  // namespace mnnpy
