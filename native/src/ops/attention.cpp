// ScaledDotProductAttention: softmax(q @ kt * scale + mask, last axis) @ v in one kernel.
//   inputs: q [..., S, D], kt [..., D, T] (keys transposed), v [..., T, Dv], optional mask
//           broadcastable to [..., S, T]; all float32, q/kt/v with the same leading dimensions
//   attrs:  scale (float, default 1)
//   output: [..., S, Dv]
#include <string>
#include <vector>

#include "mnnpy/linalg.h"
#include "mnnpy/lowering.h"
#include "mnnpy/op_registry.h"
#include "ops/grad_common.h"

namespace mnnpy {

namespace {

std::vector<TensorType> infer_attention(const std::vector<TensorType>& in, Attrs& attrs) {
  attrs.set("scale", attrs.has("scale") ? attrs.get_float("scale") : 1.0);
  static const char* names[] = {"q", "kt", "v", "mask"};
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i].dtype != DType::Float32) {
      throw TypeError(std::string("ScaledDotProductAttention: ") + names[i] + " must be float32, got " +
                      dtype_name(in[i].dtype));
    }
  }
  const Shape &q = in[0].shape, &kt = in[1].shape, &v = in[2].shape;
  const size_t r = q.size();
  if (r < 2 || kt.size() != r || v.size() != r) {
    throw ValueError("ScaledDotProductAttention: q, kt and v must have one rank >= 2, got shapes " + shape_str(q) +
                     ", " + shape_str(kt) + ", " + shape_str(v));
  }
  for (size_t i = 0; i + 2 < r; ++i) {
    if (kt[i] != q[i] || v[i] != q[i]) {
      throw ValueError("ScaledDotProductAttention: leading dimensions differ: q " + shape_str(q) + ", kt " +
                       shape_str(kt) + ", v " + shape_str(v));
    }
  }
  if (kt[r - 2] != q[r - 1] || v[r - 2] != kt[r - 1]) {
    throw ValueError("ScaledDotProductAttention: q " + shape_str(q) + ", kt " + shape_str(kt) + " and v " +
                     shape_str(v) + " do not chain as [S, D] x [D, T] x [T, Dv]");
  }
  Shape scores(q.begin(), q.end() - 1);
  scores.push_back(kt[r - 1]);
  if (in.size() > 3) {
    const Shape& mask = in[3].shape;
    bool fits = mask.size() <= scores.size();
    for (size_t i = 0; fits && i < mask.size(); ++i) {
      const int64_t target = scores[scores.size() - mask.size() + i];
      fits = mask[i] == 1 || mask[i] == target;
    }
    if (!fits) {
      throw ValueError("ScaledDotProductAttention: mask " + shape_str(mask) + " does not broadcast to the scores' shape " +
                       shape_str(scores));
    }
  }
  Shape out(q.begin(), q.end() - 1);
  out.push_back(v[r - 1]);
  return {TensorType{DType::Float32, out}};
}

OpDef attention_def() {
  OpDef def;
  def.name = "ScaledDotProductAttention";
  def.min_inputs = 3;
  def.max_inputs = 4;
  def.infer = infer_attention;
  return def;
}

MNNPY_REGISTER_OP(attention_def());

// The attention weights p = softmax(q kt * scale + mask) over the last axis (the maximum
// subtracted first, as the kernel does), from q, kt and the optional mask of a node's inputs.
Var attention_weights(const std::vector<Var>& in, double scale) {
  Var scores = grad::scale(matmul(in[0], in[1]), scale);
  if (in.size() > 3) scores = grad::add(scores, in[3]);
  const std::vector<int64_t> last{(int64_t)in[0].type().shape.size() - 1};
  const Var shifted = unary("Exp", grad::sub(scores, reduce("max", scores, last, true)));
  return grad::div(shifted, reduce("sum", shifted, last, true));
}

// On a backend without the fused kernel: two MatMuls around a softmax.
MNNPY_REGISTER_DECOMPOSITION("ScaledDotProductAttention", [](const std::vector<Var>& in, const Attrs& attrs,
                                                             const std::vector<TensorType>&) {
  return std::vector<Var>{matmul(attention_weights(in, attrs.get_float("scale")), in[2])};
});

// Recomputes the attention weights p = softmax(q kt * scale + mask), then with ds = p * (dp -
// sum(dp * p)) and dp = g v^T: dq = ds kt^T * scale, dkt = q^T ds * scale, dv = p^T g, dmask = ds.
MNNPY_REGISTER_GRAD("ScaledDotProductAttention", [](const GradContext& c) {
  const Var &q = c.input(0), &kt = c.input(1), &v = c.input(2), &g = c.grad();
  const double scale = c.node.attrs.get_float("scale");
  const int64_t last = (int64_t)q.type().shape.size() - 1;
  const Var p = attention_weights(c.node.inputs, scale);
  const Var dp = matmul(g, v, false, true);
  const Var ds = grad::mul(p, grad::sub(dp, reduce("sum", grad::mul(dp, p), std::vector<int64_t>{last}, true)));
  std::vector<Var> result{grad::scale(matmul(ds, kt, false, true), scale), grad::scale(matmul(q, ds, true, false), scale),
                          matmul(p, g, true, false)};
  if (c.node.inputs.size() > 3) result.push_back(sum_to_shape(ds, c.input(3).type().shape));
  return result;
});

}  // namespace

}  // namespace mnnpy
