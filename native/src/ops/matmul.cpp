// MatMul: stacks of matrix products with NumPy's batch broadcasting. The op takes operands of
// rank >= 2 and one dtype; the builder handles 1-D operands, promotion and half precision.
#include <string>

#include "mnnpy/linalg.h"
#include "mnnpy/op_registry.h"
#include "ops/grad_common.h"
#include "ops/matmul_shape.h"

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
  const MatMulDims d = matmul_dims(A.shape, B.shape, ta, tb);
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

OpDef matmul_def() {
  OpDef def{"MatMul", 2, 2, infer_matmul, {}, false};
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
