// Products of 8-bit integer matrices (their CPU kernels: backend/cpu/quantized_matmul_kernels.cpp).
//   MatMulInteger(A, B, a_zero?, b_zero?) -> int32: ONNX's MatMulInteger, (A - a_zero)(B - b_zero)
//     summed in int32; A [..., M, K] and B [..., K, N] int8 or uint8 with batch broadcasting, a_zero
//     of A's type and shape () or (M,), b_zero of B's type and shape () or (N,).
//   QLinearMatMul(A, a_scale, a_zero, B, b_scale, b_zero, y_scale, y_zero) -> y_zero's type: ONNX's
//     QLinearMatMul, MatMulInteger's int32 sums requantized in float32 as
//     saturate(round_half_even(float(sum) * (a_scale * b_scale / y_scale)) + y_zero); scales
//     float32, one value (b_scale: or one per column of B), zero points one value (b_zero: or
//     one per column).
//   DynamicQuantMatMul(x, w, scales, bias?) -> float32: x [..., K] float32 quantized per row at run
//     time (asymmetric uint8, ONNX's DynamicQuantizeLinear per row), w [K, N] int8 with per-column
//     float32 scales (N,) (or one), bias (N,): the integer product dequantized, plus the bias;
//     attribute activation ("relu" or "gelu", erf form; absent or "": none) applied after it.
#include <string>

#include "mnnpy/op_registry.h"
#include "ops/matmul_shape.h"

namespace mnnpy {

namespace {

bool is_8bit(DType t) { return t == DType::Int8 || t == DType::UInt8; }

// A zero point or scale of `what`: a scalar, one value, or `count` values.
void check_vector(const char* op, const char* what, const TensorType& t, int64_t count, const char* per) {
  const bool one = t.shape.empty() || (t.shape.size() == 1 && t.shape[0] == 1);
  if (one || (t.shape.size() == 1 && t.shape[0] == count)) return;
  throw ValueError(std::string(op) + ": " + what + " must be a scalar or hold one value per " + per + " (" +
                   std::to_string(count) + "), got shape " + shape_str(t.shape));
}

void check_one_value(const char* op, const char* what, const TensorType& t) {
  if (t.numel() == 1 && t.shape.size() <= 1) return;
  throw ValueError(std::string(op) + ": " + what + " must hold one value, got shape " + shape_str(t.shape));
}

std::vector<TensorType> infer_matmul_integer(const std::vector<TensorType>& in, Attrs&) {
  const TensorType &A = in[0], &B = in[1];
  if (!is_8bit(A.dtype) || !is_8bit(B.dtype)) {
    throw ValueError(std::string("MatMulInteger: A and B must be int8 or uint8, got ") + dtype_name(A.dtype) + " and " +
                     dtype_name(B.dtype));
  }
  for (int i = 0; i < 2; ++i) {
    if (in[i].shape.size() < 2) {
      throw ValueError(std::string("MatMulInteger: ") + (i ? "B" : "A") + " needs at least 2 dimensions, got shape " +
                       shape_str(in[i].shape));
    }
  }
  const MatMulDims d = matmul_dims(A.shape, B.shape, false, false);
  const int64_t kb = B.shape[B.shape.size() - 2];
  if (kb != d.K) {
    throw ValueError("MatMulInteger: A has " + std::to_string(d.K) + " columns but B has " + std::to_string(kb) +
                     " rows (A " + shape_str(A.shape) + ", B " + shape_str(B.shape) + ")");
  }
  if (in.size() > 2) {
    if (in[2].dtype != A.dtype) {
      throw ValueError(std::string("MatMulInteger: a_zero_point must have A's type ") + dtype_name(A.dtype) + ", got " +
                       dtype_name(in[2].dtype));
    }
    check_vector("MatMulInteger", "a_zero_point", in[2], d.M, "row of A");
  }
  if (in.size() > 3) {
    if (in[3].dtype != B.dtype) {
      throw ValueError(std::string("MatMulInteger: b_zero_point must have B's type ") + dtype_name(B.dtype) + ", got " +
                       dtype_name(in[3].dtype));
    }
    check_vector("MatMulInteger", "b_zero_point", in[3], d.N, "column of B");
  }
  Shape out;
  try {
    out = broadcast_shapes(Shape(A.shape.begin(), A.shape.end() - 2), Shape(B.shape.begin(), B.shape.end() - 2));
  } catch (const ValueError&) {
    throw ValueError("MatMulInteger: the batch dimensions of A " + shape_str(A.shape) + " and B " + shape_str(B.shape) +
                     " do not broadcast");
  }
  out.push_back(d.M);
  out.push_back(d.N);
  return {TensorType{DType::Int32, out}};
}

OpDef matmul_integer_def() {
  OpDef def{"MatMulInteger", 2, 4, infer_matmul_integer, {}, false};
  def.packed_inputs = 1u << 1;  // B, when constant (weights), is packed at plan time
  return def;
}
MNNPY_REGISTER_OP(matmul_integer_def());

std::vector<TensorType> infer_qlinear_matmul(const std::vector<TensorType>& in, Attrs& attrs) {
  const TensorType &A = in[0], &B = in[3];
  const char* names[8] = {"a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "y_scale", "y_zero_point"};
  for (int i : {0, 3, 7}) {
    if (!is_8bit(in[i].dtype)) {
      throw ValueError(std::string("QLinearMatMul: ") + names[i] + " must be int8 or uint8, got " +
                       dtype_name(in[i].dtype));
    }
  }
  for (int i : {1, 4, 6}) {
    if (in[i].dtype != DType::Float32) {
      throw ValueError(std::string("QLinearMatMul: ") + names[i] + " must be float32, got " + dtype_name(in[i].dtype));
    }
  }
  for (int i : {2, 5}) {
    const DType want = in[i == 2 ? 0 : 3].dtype;
    if (in[i].dtype != want) {
      throw ValueError(std::string("QLinearMatMul: ") + names[i] + " must have " + (i == 2 ? "a" : "b") +
                       "'s type " + dtype_name(want) + ", got " + dtype_name(in[i].dtype));
    }
  }
  // The product's checks and shape are MatMulInteger's.
  std::vector<TensorType> product = infer_matmul_integer({A, B}, attrs);
  const int64_t N = product[0].shape.back();
  for (int i : {1, 2, 6, 7}) check_one_value("QLinearMatMul", names[i], in[i]);
  check_vector("QLinearMatMul", "b_scale", in[4], N, "column of b");
  check_vector("QLinearMatMul", "b_zero_point", in[5], N, "column of b");
  return {TensorType{in[7].dtype, product[0].shape}};
}

OpDef qlinear_matmul_def() {
  OpDef def{"QLinearMatMul", 8, 8, infer_qlinear_matmul, {}, false};
  def.packed_inputs = 1u << 3;  // B, when constant (weights), is packed at plan time
  return def;
}
MNNPY_REGISTER_OP(qlinear_matmul_def());

std::vector<TensorType> infer_dynamic_quant_matmul(const std::vector<TensorType>& in, Attrs& attrs) {
  const TensorType &X = in[0], &W = in[1], &S = in[2];
  if (X.dtype != DType::Float32) {
    throw ValueError(std::string("DynamicQuantMatMul: x must be float32, got ") + dtype_name(X.dtype));
  }
  if (W.dtype != DType::Int8) {
    throw ValueError(std::string("DynamicQuantMatMul: the weights must be int8, got ") + dtype_name(W.dtype));
  }
  if (X.shape.empty()) throw ValueError("DynamicQuantMatMul: x must have at least 1 dimension, got a scalar");
  if (W.shape.size() != 2) {
    throw ValueError("DynamicQuantMatMul: the weights must be 2-D [K, N], got shape " + shape_str(W.shape));
  }
  const int64_t K = W.shape[0], N = W.shape[1];
  if (X.shape.back() != K) {
    throw ValueError("DynamicQuantMatMul: x has " + std::to_string(X.shape.back()) + " features (shape " +
                     shape_str(X.shape) + ") but the weights have " + std::to_string(K) + " rows");
  }
  if (S.dtype != DType::Float32) {
    throw ValueError(std::string("DynamicQuantMatMul: the scales must be float32, got ") + dtype_name(S.dtype));
  }
  check_vector("DynamicQuantMatMul", "the scales", S, N, "column of the weights");
  if (in.size() > 3) {
    if (in[3].dtype != DType::Float32) {
      throw ValueError(std::string("DynamicQuantMatMul: the bias must be float32, got ") + dtype_name(in[3].dtype));
    }
    check_vector("DynamicQuantMatMul", "the bias", in[3], N, "column of the weights");
  }
  if (attrs.has("activation")) {
    const std::string& act = attrs.get_string("activation");
    if (!act.empty() && act != "relu" && act != "gelu") {
      throw ValueError("DynamicQuantMatMul: activation must be \"relu\", \"gelu\" or none, got \"" + act + "\"");
    }
  }
  Shape out = X.shape;
  out.back() = N;
  return {TensorType{DType::Float32, out}};
}

OpDef dynamic_quant_matmul_def() {
  OpDef def{"DynamicQuantMatMul", 3, 4, infer_dynamic_quant_matmul, {}, false};
  def.packed_inputs = 1u << 1;
  return def;
}
MNNPY_REGISTER_OP(dynamic_quant_matmul_def());

}  // namespace

}  // namespace mnnpy
