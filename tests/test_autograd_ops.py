"""Gradient rules of every differentiable op, checked against PyTorch's autograd and against
central finite differences, plus the behaviour of ``mnnpy.expr.grad`` itself.

Each case builds y = f(inputs) from placeholders and takes the gradient of sum(y * seed) for
a random seed with ``mnnpy.expr.grad``. Inputs and seeds are drawn fresh on every run from
a seed printed in every assertion message (set MNNPY_GRAD_SEED to replay a run); inputs stay
away from kinks and singularities of the function under test.

References and tolerances:
- PyTorch: the same function on the same inputs, differentiated in float64. Ops run in
  float64 by mnnpy: rtol 1e-7, atol 1e-9. Ops that exist only in float32 (LayerNorm, scaled
  dot-product attention, Resize) and the float32 Cast case: rtol 2e-4, atol 2e-5 (relative to
  the gradient's largest magnitude).
- Finite differences: along two random directions d per input, (L(x + e d) - L(x - e d)) / 2e
  against <grad, d>, where L = sum(y * seed) is computed by mnnpy; the difference may be
  rtol * (1 + sum|grad * d|). float64: e = 1e-6, rtol 1e-6; float32: e = 1e-2, rtol 2e-2.
- Forward values are compared with PyTorch's at the gradient tolerances.
"""
import os
import secrets
import zlib

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import mnnpy.expr as F
import mnnpy.numpy as mnp
from mnnpy import _core

SEED = int(os.environ.get("MNNPY_GRAD_SEED", secrets.randbits(32)))

_FACTORIZATION = "matrix factorization without a gradient rule (det, slogdet, solve and inv have rules)"

# Ops with no gradient rule, on purpose, and why.
NON_DIFFERENTIABLE = {
    "Const": "a constant: no inputs",
    "Input": "a placeholder: no inputs",
    "Iota": "integer index grid: no inputs",
    "ArgSort": "integer output",
    "SearchSorted": "integer output",
    "IsIn": "boolean output",
    "RandomFill": "random values: no inputs to differentiate",
    "RandomPermutation": "random integers: no inputs",
    "RandomWeightedIndices": "random integer output",
    "LinalgCholesky": _FACTORIZATION,
    "LinalgEigh": _FACTORIZATION,
    "LinalgQR": _FACTORIZATION,
    "LinalgSVD": _FACTORIZATION,
    "NextAfter": "piecewise constant in its second operand, a bit step in its first",
    "Signbit": "boolean output",
    "Raster": "made only when a graph is lowered for a backend, after its gradients are built",
    "WeightQuantMatMul": "inference with quantized constant weights: models train with float weights",
    "DynamicQuantMatMul": "inference with int8 constant weights: models train with float weights",
    "MatMulInteger": "integer product: integer output",
    "QLinearConv2D": "int8 convolution: integer output",
    "QLinearAdd": "int8 addition: integer output",
    "QLinearMul": "int8 multiplication: integer output",
    "QLinearAveragePool": "int8 average pooling: integer output",
    "QLinearGlobalAveragePool": "int8 global average pooling: integer output",
    "QLinearConcat": "int8 concatenation with requantization: integer output",
    "QLinearMatMul": "int8 product with requantization: integer output",
    "QLinearSoftmax": "int8 softmax with requantization: integer output",
    "CachedAttention": "inference over a language model's key/value cache, which it appends to",
    "MaxPool2DInt8": "8-bit max pooling: integer output",
    "QuantizeLinear": "quantization to 8 bits: integer output",
}
for _name in ("Equal", "NotEqual", "Greater", "GreaterEqual", "Less", "LessEqual", "IsFinite", "IsInf", "IsNan",
              "LogicalAnd", "LogicalOr", "LogicalXor", "LogicalNot"):
    NON_DIFFERENTIABLE[_name] = "comparison or logical op: boolean output"
for _name in ("BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot", "LeftShift", "RightShift", "Gcd", "Lcm"):
    NON_DIFFERENTIABLE[_name] = "integer-only op"


def _non_differentiable_reason(op):
    if op in NON_DIFFERENTIABLE:
        return NON_DIFFERENTIABLE[op]
    if op.startswith("Cv"):
        return "image-processing kernel of mnnpy.cv (8-bit or fixed-point pipelines)"
    if op.endswith("Grad") or "Backprop" in op:
        return "backward kernel of another op's rule (second derivatives are not supported)"
    return None


# Ops whose rules are exercised by the convolution, pooling and layout tests, not here (by name
# part: convolutions and their transposes, pools, blocked-channel layouts).
TESTED_ELSEWHERE = ("Conv", "Pool", "BlockedChannels")


# ---------------------------------------------------------------------------- helpers
def placeholder(array):
    p = F.placeholder(array.shape, dtype=array.dtype)
    p.write(np.ascontiguousarray(array))
    return p


def op_types(var):
    """The op names in the graph behind var (a tree walk: the graphs here are small)."""
    stack, names = [var], set()
    while stack:
        v = stack.pop()
        names.add(v.op_type)
        stack.extend(v.inputs)
    return names


def uniform(rng, shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, size=shape)


def away(rng, shape, points=(0.0,), margin=0.2, lo=-2.0, hi=2.0):
    """Uniform on [lo, hi] but at least `margin` from every point (kinks of the function)."""
    x = rng.uniform(lo, hi, size=shape)
    for p in points:
        near = np.abs(x - p) < margin
        x = np.where(near, p + np.where(x >= p, margin, -margin) * 1.5, x)
    return x


def off_integers(rng, shape):
    """Values at least 0.1 from every integer and half-integer (floor, round, mod)."""
    return rng.integers(-3, 3, size=shape) + rng.uniform(0.1, 0.4, size=shape)


class Case:
    def __init__(self, name, fn, ref, make, ops, *, dtype=np.float64, nodiff=(), fd=True):
        self.name, self.fn, self.ref, self.make, self.ops = name, fn, ref, make, set(ops)
        self.dtype, self.nodiff, self.fd = dtype, set(nodiff), fd

    def __repr__(self):
        return self.name


def _prepare(case, rng):
    arrays = case.make(rng)
    arrays = [a.astype(case.dtype) if np.issubdtype(np.asarray(a).dtype, np.floating) else np.asarray(a)
              for a in arrays]
    diff = [i for i, a in enumerate(arrays)
            if np.issubdtype(a.dtype, np.floating) and i not in case.nodiff]
    return arrays, diff


def _mnnpy_args(arrays, diff):
    return [placeholder(a) if i in diff else a for i, a in enumerate(arrays)]


def _tolerances(dtype):
    return (1e-7, 1e-9) if dtype == np.float64 else (2e-4, 2e-5)


def check_case(case):
    msg = f"case {case.name}, MNNPY_GRAD_SEED={SEED}"
    rng = np.random.default_rng([SEED, zlib.crc32(case.name.encode())])
    arrays, diff = _prepare(case, rng)
    args = _mnnpy_args(arrays, diff)
    y = case.fn(*args)
    missing = case.ops - op_types(y)
    assert not missing, f"{msg}: the graph lacks ops {missing} (has {op_types(y)})"
    y_dtype = np.dtype(y.dtype)
    seed = rng.standard_normal(y.shape).astype(y_dtype)
    grads = [np.asarray(g.read()) for g in F.grad([y], [args[i] for i in diff], output_grads=[F.const(seed)])]

    # PyTorch, in float64 on the same values.
    t_args = []
    for i, a in enumerate(arrays):
        if np.issubdtype(a.dtype, np.floating):
            t = torch.tensor(a.astype(np.float64), requires_grad=i in diff)
        else:
            t = torch.as_tensor(a)
        t_args.append(t)
    yt = case.ref(*t_args)
    rtol, atol = _tolerances(case.dtype)
    expected = yt.detach().numpy()
    np.testing.assert_allclose(np.asarray(y.read()), expected, rtol=rtol,
                               atol=atol * max(1.0, float(np.abs(expected).max(initial=0))),
                               err_msg=f"{msg}: forward values differ from PyTorch")
    yt.backward(torch.as_tensor(seed.astype(np.float64)))
    for k, i in enumerate(diff):
        ref = t_args[i].grad
        ref = np.zeros_like(arrays[i], dtype=np.float64) if ref is None else ref.numpy()
        assert grads[k].shape == arrays[i].shape, f"{msg}: gradient {k} has shape {grads[k].shape}"
        assert grads[k].dtype == arrays[i].dtype, f"{msg}: gradient {k} has dtype {grads[k].dtype}"
        scale = max(1.0, float(np.abs(ref).max(initial=0)))
        np.testing.assert_allclose(grads[k], ref, rtol=rtol, atol=atol * scale,
                                   err_msg=f"{msg}: gradient of input {i} differs from PyTorch")

    if case.fd:
        _check_finite_differences(case, rng, arrays, diff, args, y, seed, grads, msg)


def _check_finite_differences(case, rng, arrays, diff, args, y, seed, grads, msg):
    loss = mnp.sum(y * F.const(seed))
    plan = _core.PlannedGraph([loss])
    eps, rtol = (1e-6, 1e-6) if case.dtype == np.float64 else (1e-2, 2e-2)

    def value():
        return float(np.asarray(plan.run()[0].read()))

    for k, i in enumerate(diff):
        for _ in range(2):
            d = rng.standard_normal(arrays[i].shape)
            args[i].write((arrays[i] + eps * d).astype(case.dtype))
            up = value()
            args[i].write((arrays[i] - eps * d).astype(case.dtype))
            down = value()
            args[i].write(arrays[i])
            numeric = (up - down) / (2 * eps)
            analytic = float(np.sum(grads[k].astype(np.float64) * d))
            # Scale: the sum's size without cancellation.
            bound = rtol * (1.0 + float(np.sum(np.abs(grads[k].astype(np.float64) * d))))
            assert abs(numeric - analytic) <= bound, (
                f"{msg}: finite differences {numeric} vs gradient {analytic} along a random direction of input {i}")


def unary_op(name):
    return lambda x: _core.op(name, [x], {})


def binary_op(name):
    return lambda a, b: _core.op(name, [a, b], {})


def _cbrt_ref(x):
    return torch.sign(x) * torch.abs(x) ** (1.0 / 3.0)


# ---------------------------------------------------------------------------- cases
U34 = lambda lo=-1.0, hi=1.0: (lambda r: [uniform(r, (3, 4), lo, hi)])  # noqa: E731

UNARY = [
    ("Identity", lambda x: x * 1, U34(-2, 2)),
    ("Neg", torch.neg, U34(-2, 2)),
    ("Abs", torch.abs, lambda r: [away(r, (3, 4))]),
    ("Square", torch.square, U34(-2, 2)),
    ("Sqrt", torch.sqrt, U34(0.2, 3)),
    ("Rsqrt", torch.rsqrt, U34(0.2, 3)),
    ("Reciprocal", torch.reciprocal, lambda r: [away(r, (3, 4), margin=0.3)]),
    ("Exp", torch.exp, U34(-2, 2)),
    ("Expm1", torch.expm1, U34(-2, 2)),
    ("Exp2", torch.exp2, U34(-2, 2)),
    ("Log", torch.log, U34(0.2, 3)),
    ("Log1p", torch.log1p, U34(-0.5, 2)),
    ("Log2", torch.log2, U34(0.2, 3)),
    ("Log10", torch.log10, U34(0.2, 3)),
    ("Sin", torch.sin, U34(-3, 3)),
    ("Cos", torch.cos, U34(-3, 3)),
    ("Tan", torch.tan, U34(-1.2, 1.2)),
    ("Asin", torch.asin, U34(-0.9, 0.9)),
    ("Acos", torch.acos, U34(-0.9, 0.9)),
    ("Atan", torch.atan, U34(-3, 3)),
    ("Sinh", torch.sinh, U34(-2, 2)),
    ("Cosh", torch.cosh, U34(-2, 2)),
    ("Tanh", torch.tanh, U34(-2, 2)),
    ("Asinh", torch.asinh, U34(-3, 3)),
    ("Acosh", torch.acosh, U34(1.2, 3)),
    ("Atanh", torch.atanh, U34(-0.9, 0.9)),
    ("Floor", torch.floor, lambda r: [off_integers(r, (3, 4))]),
    ("Ceil", torch.ceil, lambda r: [off_integers(r, (3, 4))]),
    ("Round", torch.round, lambda r: [off_integers(r, (3, 4))]),
    ("Trunc", torch.trunc, lambda r: [off_integers(r, (3, 4))]),
    ("Sign", torch.sign, lambda r: [away(r, (3, 4))]),
    ("Erf", torch.erf, U34(-2, 2)),
    ("Erfc", torch.erfc, U34(-2, 2)),
    ("Sigmoid", torch.sigmoid, U34(-3, 3)),
    ("Relu", torch.relu, lambda r: [away(r, (3, 4))]),
    ("Relu6", lambda x: TF.relu6(x), lambda r: [away(r, (3, 4), points=(0.0, 6.0), lo=-2, hi=8)]),
    ("Gelu", lambda x: TF.gelu(x), U34(-3, 3)),
    ("GeluTanh", lambda x: TF.gelu(x, approximate="tanh"), U34(-3, 3)),
    ("Softplus", TF.softplus, U34(-3, 3)),
    ("Softsign", TF.softsign, lambda r: [away(r, (3, 4), margin=0.05)]),
    ("Selu", TF.selu, lambda r: [away(r, (3, 4))]),
    ("Cbrt", _cbrt_ref, lambda r: [away(r, (3, 4), margin=0.3)]),
]

# Operand shapes that broadcast both ways.
BCAST = [(2, 1, 4), (3, 1)]


def _pair(lo_a=-2.0, hi_a=2.0, lo_b=-2.0, hi_b=2.0, shapes=BCAST):
    return lambda r: [uniform(r, shapes[0], lo_a, hi_a), uniform(r, shapes[1], lo_b, hi_b)]


def _away_from_multiples(r):
    # a / b at least 0.1 from an integer, so that floor/trunc(a / b) is locally constant.
    b = uniform(r, (3, 1), 0.8, 2.0) * r.choice([-1, 1], size=(3, 1))
    return [off_integers(r, (2, 3, 4)) * b, b]


BINARY = [
    ("Add", torch.add, _pair()),
    ("Sub", torch.sub, _pair()),
    ("Mul", torch.mul, _pair()),
    ("Div", torch.div, lambda r: [uniform(r, BCAST[0], -2, 2), away(r, BCAST[1], margin=0.4)]),
    ("Pow", torch.pow, _pair(0.5, 2.0, -1.5, 1.5)),
    ("Maximum", torch.maximum, _pair()),
    ("Minimum", torch.minimum, _pair()),
    ("Fmax", torch.fmax, _pair()),
    ("Fmin", torch.fmin, _pair()),
    ("SquaredDifference", lambda a, b: (a - b) ** 2, _pair()),
    ("Atan2", torch.atan2, lambda r: [uniform(r, BCAST[0], 0.3, 2), uniform(r, BCAST[1], 0.3, 2)]),
    ("Hypot", torch.hypot, lambda r: [away(r, BCAST[0], margin=0.3), away(r, BCAST[1], margin=0.3)]),
    ("Mod", torch.remainder, lambda r: _away_from_multiples(r)),
    ("Fmod", torch.fmod, lambda r: _away_from_multiples(r)),
    ("FloorDiv", lambda a, b: torch.floor(a / b), lambda r: _away_from_multiples(r)),
    ("CopySign", torch.copysign, lambda r: [away(r, BCAST[0]), away(r, BCAST[1])]),
]

CASES = []
for _name, _ref, _make in UNARY:
    CASES.append(Case(f"unary-{_name}", unary_op(_name), _ref, _make, {_name}))
for _name, _ref, _make in BINARY:
    CASES.append(Case(f"binary-{_name}", binary_op(_name), _ref, _make, {_name}))
# The value passes unchanged and no gradient flows (torch's detach); finite differences would see
# the value change, so they are not checked.
CASES.append(Case("unary-StopGradient", unary_op("StopGradient"), lambda x: x.detach() + 0 * x, U34(-2, 2),
                  {"StopGradient"}, fd=False))


def _idx(*values):
    return lambda r: np.asarray(values, dtype=np.int64)


def _softmax_ref(x, dim):
    return torch.softmax(x, dim)


def _matmul_t(ta, tb):
    return lambda a, b: _core.op("MatMul", [a, b], {"transpose_a": int(ta), "transpose_b": int(tb)})


def _matmul_t_ref(ta, tb):
    return lambda a, b: torch.matmul(a.transpose(-1, -2) if ta else a, b.transpose(-1, -2) if tb else b)


def _slice_assign(x, v):
    y = x * 1.0
    y[1:3, ::2] = v
    return y


def _slice_assign_ref(x, v):
    y = x * 1.0
    y[1:3, ::2] = v
    return y


def _scatter_assign(x, v, idx):
    y = x * 1.0
    y[idx] = v
    return y


def _scatter_assign_ref(x, v, idx):
    y = x * 1.0
    y[idx] = v
    return y


def _layer_norm(axis, affine):
    def fn(x, *params):
        return _core.op("LayerNorm", [x] + list(params[:2] if affine else []), {"axis": axis, "epsilon": 1e-5})
    return fn


def _layer_norm_ref(axis, affine):
    def ref(x, *params):
        shape = x.shape[axis:]
        w, b = (params[0].reshape(shape), params[1].reshape(shape)) if affine else (None, None)
        return TF.layer_norm(x, shape, w, b, 1e-5)
    return ref


def _attention(scale, with_mask):
    def fn(q, kt, v, *mask):
        return _core.op("ScaledDotProductAttention", [q, kt, v] + list(mask[:1] if with_mask else []), {"scale": scale})
    return fn


def _attention_ref(scale, with_mask):
    def ref(q, kt, v, *mask):
        s = q @ kt * scale
        if with_mask:
            s = s + mask[0]
        return torch.softmax(s, -1) @ v
    return ref


def _resize(size, mode, coords, nearest="round_prefer_floor"):
    return lambda x: _core.op("Resize", [x], {"size": list(size), "mode": mode,
                                              "coordinate_transformation_mode": coords, "nearest_mode": nearest})


def _correlate_ref(mode):
    def ref(a, v):
        pad = {"valid": 0, "full": v.shape[0] - 1}[mode]
        return TF.conv1d(a[None, None], v[None, None], padding=pad)[0, 0]
    return ref


def _with_zeros(r, shape):
    """Values away from 0, then exact zeros in some places (one or two per row)."""
    x = away(r, shape, margin=0.4)
    x[np.arange(shape[0]), r.integers(0, shape[1], size=shape[0])] = 0.0
    x[0, -1] = x[0, 1] = 0.0
    return x


def _with_nans(r, shape):
    x = away(r, shape, margin=0.4)
    x[r.random(shape) < 0.25] = np.nan
    return x


def _well_conditioned(r, shape):
    n = shape[-1]
    return uniform(r, shape, -0.5, 0.5) + 3 * np.eye(n)


def _topk(k, largest):
    return lambda x: _core.op("TopK", [x], {"k": k, "axis": 1, "largest": int(largest)})[0]


def _scatter_add(axis, size, along):
    return lambda u, idx: _core.op("ScatterAdd", [u, F.const(np.asarray(idx))],
                                   {"axis": axis, "size": size, "along": int(along)})


def _index_add_ref(u, idx):
    return torch.zeros((5, u.shape[1]), dtype=u.dtype).index_add(0, idx, u)


def _scatter_add_along_ref(u, idx):
    return torch.zeros((u.shape[0], 6), dtype=u.dtype).scatter_add(1, idx, u)


CASES += [
    Case("where-broadcast", lambda c, a, b: mnp.where(c, a, b), lambda c, a, b: torch.where(c, a, b),
         lambda r: [r.random((3, 4)) > 0.5, uniform(r, (3, 1)), uniform(r, (4,))], {"Where"}),
    Case("cast-float32-to-float64", lambda x: mnp.square(x.astype(np.float64)) * 1.5,
         lambda x: torch.square(x) * 1.5, U34(-2, 2), {"Cast"}, dtype=np.float32),
    Case("cast-roundtrip", lambda x: x.astype(np.float32).astype(np.float64) * 3.0,
         lambda x: x.float().double() * 3.0, U34(-2, 2), {"Cast"}, fd=False),
    Case("softmax", lambda x: F.softmax(x, 1), lambda x: _softmax_ref(x, 1), U34(-2, 2), {"Exp", "Reduce", "Div"}),
    Case("reduce-sum", lambda x: mnp.sum(x, axis=(0, 2)), lambda x: x.sum(dim=(0, 2)),
         lambda r: [uniform(r, (2, 3, 4))], {"Reduce"}),
    Case("reduce-sum-all", lambda x: mnp.sum(x), lambda x: x.sum(), lambda r: [uniform(r, (2, 3, 4))], {"Reduce"}),
    Case("reduce-mean-keepdims", lambda x: mnp.mean(x, axis=1, keepdims=True), lambda x: x.mean(dim=1, keepdim=True),
         lambda r: [uniform(r, (2, 3, 4))], {"Reduce"}),
    Case("reduce-prod", lambda x: mnp.prod(x, axis=(0, 2)), lambda x: x.prod(2).prod(0),
         lambda r: [away(r, (2, 3, 4), margin=0.3)], {"Reduce"}),
    Case("reduce-max", lambda x: mnp.max(x, axis=1), lambda x: x.amax(dim=1), lambda r: [uniform(r, (2, 5, 3))],
         {"Reduce"}),
    Case("reduce-min", lambda x: mnp.min(x, axis=(0, 1)), lambda x: x.amin(dim=(0, 1)),
         lambda r: [uniform(r, (2, 5, 3))], {"Reduce"}),
    Case("reduce-max-ties", lambda x: mnp.max(x, axis=1), lambda x: x.amax(dim=1),
         lambda r: [np.round(uniform(r, (4, 6)) * 2) / 2], {"Reduce"}, fd=False),
    Case("reshape", lambda x, w: mnp.reshape(x, (4, 6)) * w, lambda x, w: x.reshape(4, 6) * w,
         lambda r: [uniform(r, (2, 3, 4)), uniform(r, (4, 6))], {"Reshape"}),
    Case("transpose", lambda x, w: mnp.transpose(x, (2, 0, 1)) * w, lambda x, w: x.permute(2, 0, 1) * w,
         lambda r: [uniform(r, (2, 3, 4)), uniform(r, (4, 2, 3))], {"Transpose"}),
    Case("broadcast_to", lambda x: mnp.broadcast_to(x, (2, 3, 4)), lambda x: x.expand(2, 3, 4),
         lambda r: [uniform(r, (3, 1))], {"BroadcastTo"}),
    Case("concat", lambda a, b: mnp.concatenate([a, b * b, a], axis=1), lambda a, b: torch.cat([a, b * b, a], 1),
         lambda r: [uniform(r, (2, 3)), uniform(r, (2, 4))], {"Concat"}),
    Case("split", lambda x: mnp.concatenate([p * (i + 1.0) for i, p in enumerate(mnp.split(x, [1, 3], axis=1))], 1),
         lambda x: torch.cat([p * (i + 1.0) for i, p in enumerate(torch.split(x, [1, 2, 2], 1))], 1),
         lambda r: [uniform(r, (3, 5))], {"Split"}),
    Case("split-unused-piece", lambda x: mnp.split(x, [2], axis=0)[1] * 2.0,
         lambda x: torch.split(x, [2, 2], 0)[1] * 2.0, lambda r: [uniform(r, (4, 3))], set()),
    Case("strided-slice", lambda x: x[1:, ::2], lambda x: x[1:, ::2], lambda r: [uniform(r, (4, 5))], {"StridedSlice"}),
    Case("strided-slice-reversed", lambda x: x[::-1, 1], lambda x: torch.flip(x, [0])[:, 1],
         lambda r: [uniform(r, (4, 5))], {"StridedSlice"}),
    Case("slice-assign", _slice_assign, _slice_assign_ref, lambda r: [uniform(r, (4, 5)), uniform(r, (2, 3))],
         {"SliceAssign"}),
    Case("slice-assign-broadcast", _slice_assign, _slice_assign_ref, lambda r: [uniform(r, (4, 5)), uniform(r, (1, 3))],
         {"SliceAssign"}),
    Case("matmul", lambda a, b: mnp.matmul(a, b), torch.matmul, lambda r: [uniform(r, (3, 4)), uniform(r, (4, 2))],
         {"MatMul"}),
    Case("matmul-batch-broadcast", lambda a, b: mnp.matmul(a, b), torch.matmul,
         lambda r: [uniform(r, (2, 1, 3, 4)), uniform(r, (5, 4, 2))], {"MatMul"}),
    Case("matmul-vector", lambda a, b: mnp.matmul(a, b), torch.matmul,
         lambda r: [uniform(r, (4,)), uniform(r, (2, 4, 3))],
         {"MatMul"}),
]
for _ta in (False, True):
    for _tb in (False, True):
        CASES.append(Case(f"matmul-transpose-{int(_ta)}{int(_tb)}", _matmul_t(_ta, _tb), _matmul_t_ref(_ta, _tb),
                          (lambda ta, tb: lambda r: [uniform(r, (2, 4, 3) if ta else (2, 3, 4)),
                                                     uniform(r, (1, 2, 4) if tb else (1, 4, 2))])(_ta, _tb),
                          {"MatMul"}))

CASES += [
    Case("gather-repeated-rows", lambda x, i: x[i], lambda x, i: x[i],
         lambda r: [uniform(r, (5, 3)), np.array([0, 2, 2, 4, 0, -1])], {"Gather"}),
    Case("gather-axis1", lambda x, i: mnp.take(x, i, axis=1), lambda x, i: x[:, i],
         lambda r: [uniform(r, (2, 4, 3)), np.array([[3, 1], [1, 1]])], {"Gather"}),
    Case("take-elements", lambda x, i: mnp.take(x, i), lambda x, i: x.reshape(-1)[i],
         lambda r: [uniform(r, (3, 4)), np.array([[0, 11, 5], [5, 5, 2]])], {"TakeElements"}),
    Case("gather-nd", lambda x, i, j: x[i, j], lambda x, i, j: x[i, j],
         lambda r: [uniform(r, (3, 4)), np.array([0, 2, 2, 1]), np.array([1, 3, 3, 0])], {"TakeElements"}),
    Case("take-along-axis", lambda x, i: mnp.take_along_axis(x, i, axis=1), lambda x, i: torch.take_along_dim(x, i, 1),
         lambda r: [uniform(r, (3, 4)), np.array([[0, 1, 1], [3, 3, 3], [2, 0, 1]])], {"TakeElements"}),
    Case("scatter-assign", _scatter_assign, _scatter_assign_ref,
         lambda r: [uniform(r, (5, 3)), uniform(r, (2, 3)), np.array([4, 1])], {"Scatter"}),
    Case("scatter-assign-row", _scatter_assign, _scatter_assign_ref,
         lambda r: [uniform(r, (5, 3)), uniform(r, (3,)), np.array([0, 3])], {"Scatter"}),
    Case("scatter-add-rows", _scatter_add(0, 5, False), _index_add_ref,
         lambda r: [uniform(r, (6, 3)), np.array([0, 4, 4, 1, 0, 4])], {"ScatterAdd"}),
    Case("scatter-add-along", _scatter_add(1, 6, True), _scatter_add_along_ref,
         lambda r: [uniform(r, (2, 4)), np.array([[0, 5, 5, 2], [1, 1, 3, 0]])], {"ScatterAdd"}),
]
for _mode in ("constant", "edge", "reflect", "symmetric", "wrap"):
    _tmode = {"edge": "replicate", "wrap": "circular"}.get(_mode)
    if _mode == "constant":
        _ref = lambda x: TF.pad(x, (0, 3, 1, 2), value=0.5)  # noqa: E731
        _fn = lambda x: mnp.pad(x, ((1, 2), (0, 3)), mode="constant", constant_values=0.5)  # noqa: E731
    elif _tmode is not None or _mode == "reflect":
        _ref = (lambda m: lambda x: TF.pad(x[None], (0, 3, 1, 2), mode=m)[0])(_tmode or "reflect")
        _fn = (lambda m: lambda x: mnp.pad(x, ((1, 2), (0, 3)), mode=m))(_mode)
    else:
        # symmetric: numpy's mirror including the edge, written as a concatenation.
        def _ref(x):
            rows = torch.cat([x[:1].flip(0), x, x[-2:].flip(0)], 0)
            return torch.cat([rows, rows[:, -3:].flip(1)], 1)
        _fn = lambda x: mnp.pad(x, ((1, 2), (0, 3)), mode="symmetric")  # noqa: E731
    CASES.append(Case(f"pad-{_mode}", _fn, _ref, lambda r: [uniform(r, (4, 5))], {"Pad"}))

CASES += [
    Case("var-ddof1", lambda x: mnp.var(x, axis=1, ddof=1), lambda x: x.var(dim=1, correction=1),
         lambda r: [uniform(r, (3, 5, 2))], {"Variance"}),
    Case("var-all", lambda x: mnp.var(x), lambda x: x.var(correction=0), lambda r: [uniform(r, (3, 4))], {"Variance"}),
    Case("std", lambda x: mnp.std(x, axis=(1, 2)), lambda x: x.std(dim=(1, 2), correction=0),
         lambda r: [uniform(r, (2, 3, 4))], {"Variance"}),
    Case("layer-norm-affine", _layer_norm(-1, True), _layer_norm_ref(-1, True),
         lambda r: [uniform(r, (4, 6), -2, 2), uniform(r, (6,), 0.5, 1.5), uniform(r, (6,))], {"LayerNorm"},
         dtype=np.float32),
    Case("layer-norm-two-axes", _layer_norm(1, True), _layer_norm_ref(1, True),
         lambda r: [uniform(r, (2, 3, 4), -2, 2), uniform(r, (3, 4), 0.5, 1.5), uniform(r, (3, 4))], {"LayerNorm"},
         dtype=np.float32),
    Case("layer-norm-plain", _layer_norm(-1, False), _layer_norm_ref(-1, False),
         lambda r: [uniform(r, (5, 8), -2, 2)], {"LayerNorm"}, dtype=np.float32),
    Case("cumsum", lambda x: mnp.cumsum(x, axis=1), lambda x: torch.cumsum(x, 1), lambda r: [uniform(r, (3, 5, 2))],
         {"CumScan"}),
    Case("cumprod", lambda x: mnp.cumprod(x, axis=0), lambda x: torch.cumprod(x, 0),
         lambda r: [away(r, (4, 3), margin=0.4)], {"CumScan"}),
    Case("cumprod-with-zeros", lambda x: mnp.cumprod(x, axis=1), lambda x: torch.cumprod(x, 1),
         lambda r: [_with_zeros(r, (4, 6))], {"CumScan"}),
    Case("nancumsum", lambda x: mnp.nancumsum(x, axis=1), lambda x: torch.cumsum(torch.nan_to_num(x, 0.0), 1),
         lambda r: [_with_nans(r, (3, 5))], {"CumScan"}),
    Case("nancumprod", lambda x: mnp.nancumprod(x, axis=0),
         lambda x: torch.cumprod(torch.where(torch.isnan(x), 1.0, x), 0),
         lambda r: [_with_nans(r, (5, 3))], {"CumScan"}),
    Case("repeat-scalar", lambda x: mnp.repeat(x, 3, axis=1), lambda x: torch.repeat_interleave(x, 3, 1),
         lambda r: [uniform(r, (2, 4))], {"RepeatElements"}),
    Case("repeat-per-element", lambda x: mnp.repeat(x, [1, 0, 3], axis=0),
         lambda x: torch.repeat_interleave(x, torch.tensor([1, 0, 3]), 0), lambda r: [uniform(r, (3, 2))],
         {"RepeatElements"}),
    Case("sort", lambda x: mnp.sort(x, axis=1), lambda x: torch.sort(x, dim=1, stable=True).values,
         lambda r: [uniform(r, (3, 6, 2))], {"Sort"}),
    Case("topk-largest", _topk(3, True), lambda x: torch.topk(x, 3, 1).values, lambda r: [uniform(r, (4, 7))],
         {"TopK"}),
    Case("topk-smallest", _topk(2, False), lambda x: torch.topk(x, 2, 1, largest=False).values,
         lambda r: [uniform(r, (4, 7))], {"TopK"}),
    Case("attention", _attention(0.35, False), _attention_ref(0.35, False),
         lambda r: [uniform(r, (2, 3, 4)), uniform(r, (2, 4, 5)), uniform(r, (2, 5, 6))],
         {"ScaledDotProductAttention"}, dtype=np.float32),
    Case("attention-mask", _attention(0.5, True), _attention_ref(0.5, True),
         lambda r: [uniform(r, (2, 2, 3, 4)), uniform(r, (2, 2, 4, 5)), uniform(r, (2, 2, 5, 3)), uniform(r, (3, 5))],
         {"ScaledDotProductAttention"}, dtype=np.float32),
    Case("resize-bilinear-up", _resize((7, 9), "linear", "half_pixel"),
         lambda x: TF.interpolate(x, size=(7, 9), mode="bilinear", align_corners=False),
         lambda r: [uniform(r, (2, 3, 4, 5))], {"Resize"}, dtype=np.float32),
    Case("resize-bilinear-down-align-corners", _resize((3, 4), "linear", "align_corners"),
         lambda x: TF.interpolate(x, size=(3, 4), mode="bilinear", align_corners=True),
         lambda r: [uniform(r, (1, 2, 6, 7))], {"Resize"}, dtype=np.float32),
    Case("resize-nearest", _resize((8, 7), "nearest", "asymmetric", "floor"),
         lambda x: TF.interpolate(x, size=(8, 7), mode="nearest"),
         lambda r: [uniform(r, (2, 2, 3, 5))], {"Resize"}, dtype=np.float32),
    Case("resize-linear-1d", _resize((9,), "linear", "half_pixel"),
         lambda x: TF.interpolate(x, size=9, mode="linear", align_corners=False),
         lambda r: [uniform(r, (2, 3, 4))], {"Resize"}, dtype=np.float32),
    Case("resize-bicubic", _resize((6, 8), "cubic", "half_pixel"),
         lambda x: TF.interpolate(x, size=(6, 8), mode="bicubic", align_corners=False),
         lambda r: [uniform(r, (1, 2, 4, 5))], {"Resize"}, dtype=np.float32),
    Case("bincount-weights", lambda w, i: mnp.bincount(i, weights=w, minlength=6),
         lambda w, i: torch.zeros(6, dtype=w.dtype).index_add(0, i, w),
         lambda r: [uniform(r, (7,)), np.array([0, 3, 3, 1, 0, 5, 3])], {"Bincount"}),
    Case("quantile-linear", lambda x: mnp.quantile(x, [0.2, 0.75, 1.0], axis=1),
         lambda x: torch.quantile(x, torch.tensor([0.2, 0.75, 1.0], dtype=x.dtype), dim=1),
         lambda r: [uniform(r, (3, 7, 2))], {"Quantile"}),
    Case("quantile-midpoint", lambda x: mnp.quantile(x, [0.3, 0.5], axis=0, method="midpoint"),
         lambda x: torch.quantile(x, torch.tensor([0.3, 0.5], dtype=x.dtype), dim=0, interpolation="midpoint"),
         lambda r: [uniform(r, (6, 3))], {"Quantile"}),
    Case("quantile-lower", lambda x: mnp.quantile(x, 0.4, axis=1, method="lower"),
         lambda x: torch.quantile(x, 0.4, dim=1, interpolation="lower"), lambda r: [uniform(r, (2, 9))],
         {"Quantile"}),
    Case("median-even", lambda x: mnp.median(x, axis=1), lambda x: torch.quantile(x, 0.5, dim=1),
         lambda r: [uniform(r, (3, 8))], {"Quantile"}),
    Case("correlate-valid", lambda a, v: mnp.correlate(a, v, "valid"), _correlate_ref("valid"),
         lambda r: [uniform(r, (9,)), uniform(r, (4,))], {"Correlate1D"}),
    Case("correlate-full", lambda a, v: mnp.correlate(a, v, "full"), _correlate_ref("full"),
         lambda r: [uniform(r, (7,)), uniform(r, (3,))], {"Correlate1D"}),
    Case("det", lambda a: mnp.linalg.det(a), torch.linalg.det, lambda r: [_well_conditioned(r, (2, 3, 3))],
         {"LinalgDet"}),
    Case("slogdet", lambda a: mnp.linalg.slogdet(a)[1], lambda a: torch.linalg.slogdet(a)[1],
         lambda r: [_well_conditioned(r, (3, 3)) * np.array([1, -1, 1])], {"LinalgDet"}),
    Case("solve", lambda a, b: _core.op("LinalgSolve", [a, b], {})[0], torch.linalg.solve,
         lambda r: [_well_conditioned(r, (2, 3, 3)), uniform(r, (2, 3, 2))], {"LinalgSolve"}),
    Case("inverse", lambda a: _core.op("LinalgSolve", [a], {})[0], torch.linalg.inv,
         lambda r: [_well_conditioned(r, (4, 4))], {"LinalgSolve"}),
]


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_gradient_matches_torch_and_finite_differences(case):
    check_case(case)


@pytest.mark.parametrize("case", [c for c in CASES if "LayerNorm" in c.ops], ids=repr)
def test_layer_norm_backward_on_portable_kernels(case, portable_simd):
    check_case(case)


# ---------------------------------------------------------------------------- coverage
def test_every_registered_op_has_a_rule_or_a_reason():
    unexplained = [op for op in _core.registered_ops()
                   if not _core.has_grad_rule(op) and _non_differentiable_reason(op) is None]
    assert not unexplained, f"ops with neither a gradient rule nor a reason to have none: {unexplained}"
    contradictions = [op for op in NON_DIFFERENTIABLE if _core.has_grad_rule(op)]
    assert not contradictions, f"ops listed as non-differentiable have rules: {contradictions}"


def test_every_rule_is_exercised_by_a_case():
    rng = np.random.default_rng(SEED)
    covered = set()
    for case in CASES:
        arrays, diff = _prepare(case, rng)
        covered |= op_types(case.fn(*_mnnpy_args(arrays, diff)))
    with_rules = {op for op in _core.registered_ops() if _core.has_grad_rule(op)}
    untested = {op for op in with_rules - covered
                if not any(part in op for part in TESTED_ELSEWHERE) and _non_differentiable_reason(op) is None}
    assert not untested, f"ops with rules that no case exercises: {sorted(untested)}"


def test_second_order_through_scatter_add():
    # The gradient of a gather is a ScatterAdd of the seed; differentiating it with respect to
    # the seed gathers back.
    rng = np.random.default_rng([SEED, 7])
    table = placeholder(rng.standard_normal((5, 3)))
    seed = placeholder(rng.standard_normal((4, 3)))
    idx = np.array([1, 1, 4, 0])
    (g_table,) = F.grad([table[idx]], [table], output_grads=[seed])
    weights = rng.standard_normal((5, 3))
    (g_seed,) = F.grad([mnp.sum(g_table * F.const(weights))], [seed])
    np.testing.assert_allclose(g_seed.read(), weights[idx], rtol=0, atol=1e-12,
                               err_msg=f"MNNPY_GRAD_SEED={SEED}")


def test_scatter_add_is_deterministic_and_matches_add_at():
    rng = np.random.default_rng([SEED, 11])
    updates = rng.standard_normal((3000, 70))
    idx = rng.integers(-7, 7, size=3000)  # negative indices count from the end
    expected = np.zeros((7, 70))
    np.add.at(expected, idx, updates)
    results = []
    for threads in (1, 2):
        F.set_thread_number(threads)
        try:
            out = _scatter_add(0, 7, False)(F.const(updates), F.const(idx))
            results.append(np.asarray(out.read()).copy())
        finally:
            F.set_thread_number(1)
    np.testing.assert_allclose(results[0], expected, rtol=1e-12, atol=1e-12, err_msg=f"MNNPY_GRAD_SEED={SEED}")
    assert np.array_equal(results[0], results[1]), "scatter-add differs between 1 and 2 threads"


def test_backward_kernels_do_not_depend_on_the_thread_count():
    rng = np.random.default_rng([SEED, 17])
    x = placeholder(rng.standard_normal((300, 96)).astype(np.float32))
    gamma = placeholder(rng.uniform(0.5, 1.5, 96).astype(np.float32))
    beta = placeholder(rng.standard_normal(96).astype(np.float32))
    ln = _core.op("LayerNorm", [x, gamma, beta], {"axis": -1, "epsilon": 1e-5})
    img = placeholder(rng.standard_normal((4, 8, 20, 20)).astype(np.float32))
    up = _resize((40, 40), "linear", "half_pixel")(img)
    v = placeholder(rng.standard_normal((64, 50)))
    sorted_v = mnp.sort(v, axis=0)
    targets = [ln, up, sorted_v]
    seeds = [F.const(rng.standard_normal(t.shape).astype(np.dtype(t.dtype))) for t in targets]
    grads = F.grad(targets, [x, gamma, beta, img, v], output_grads=seeds)
    results = []
    for threads in (1, 2):
        F.set_thread_number(threads)
        try:
            results.append([np.asarray(r.read()).copy() for r in _core.PlannedGraph(grads).run()])
        finally:
            F.set_thread_number(1)
    for one, two in zip(*results):
        assert np.array_equal(one, two), f"a gradient differs between 1 and 2 threads (MNNPY_GRAD_SEED={SEED})"
    # The fused LayerNorm backward against PyTorch on many rows (several partial-sum blocks).
    xt, gt, bt = (torch.tensor(np.asarray(a.read()), dtype=torch.float64, requires_grad=True) for a in (x, gamma, beta))
    TF.layer_norm(xt, (96,), gt, bt, 1e-5).backward(torch.tensor(np.asarray(seeds[0].read()), dtype=torch.float64))
    for got, ref in zip(results[0][:3], (xt.grad, gt.grad, bt.grad)):
        ref = ref.numpy()
        np.testing.assert_allclose(got, ref, rtol=2e-4, atol=2e-5 * max(1.0, np.abs(ref).max()),
                                   err_msg=f"MNNPY_GRAD_SEED={SEED}")


def test_embedding_gradient_sums_repeated_rows_in_float32():
    rng = np.random.default_rng([SEED, 13])
    weight = rng.standard_normal((10, 4)).astype(np.float32)
    idx = rng.integers(0, 10, size=(6, 5))
    table = placeholder(weight)
    seed = rng.standard_normal((6, 5, 4)).astype(np.float32)
    (g,) = F.grad([mnp.take(table, idx, axis=0)], [table], output_grads=[F.const(seed)])
    expected = np.zeros((10, 4), dtype=np.float64)
    np.add.at(expected, idx.reshape(-1), seed.reshape(-1, 4).astype(np.float64))
    got = np.asarray(g.read())
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5, err_msg=f"MNNPY_GRAD_SEED={SEED}")


# ---------------------------------------------------------------------------- grad() behaviour
def test_op_without_rule_raises_value_error_naming_it():
    x = placeholder(np.random.default_rng(SEED).standard_normal((3, 3)))
    q, r = _core.op("LinalgQR", [x], {"mode": "reduced"})
    with pytest.raises(ValueError, match="op 'LinalgQR' has no gradient rule"):
        F.grad([mnp.sum(r)], [x])


def test_rules_refuse_what_they_cannot_differentiate():
    x = placeholder(np.random.default_rng(SEED).standard_normal((4, 5)))
    with pytest.raises(ValueError, match="NaN-skipping"):
        F.grad([mnp.sum(mnp.nanquantile(x, 0.3, axis=1))], [x])
    q = placeholder(np.array([0.5]))
    y = _core.op("Quantile", [x, q], {"axis": 1})
    with pytest.raises(ValueError, match="q as constants"):
        F.grad([mnp.sum(y)], [x])


def test_unused_input_gets_zeros():
    rng = np.random.default_rng([SEED, 1])
    x, unused = placeholder(rng.standard_normal((3,))), placeholder(rng.standard_normal((2, 5)))
    gx, gu = F.grad([mnp.sum(x * x)], [x, unused])
    np.testing.assert_allclose(gx.read(), 2 * x.read(), rtol=1e-12)
    assert gu.shape == (2, 5)
    assert not np.any(np.asarray(gu.read()))


def test_graph_used_twice_accumulates():
    rng = np.random.default_rng([SEED, 2])
    a = rng.standard_normal((3, 4))
    x = placeholder(a)
    y = mnp.sin(x)
    loss = mnp.sum(y * y) + mnp.sum(y * 3.0)  # y reached along two paths
    (g,) = F.grad([loss], [x])
    np.testing.assert_allclose(g.read(), (2 * np.sin(a) + 3.0) * np.cos(a), rtol=1e-12, atol=1e-14)
    # Two outputs sharing the graph: their gradients add up.
    (g2,) = F.grad([mnp.sum(y), mnp.sum(y * x)], [x])
    np.testing.assert_allclose(g2.read(), np.cos(a) + np.sin(a) + a * np.cos(a), rtol=1e-12, atol=1e-14)


def test_output_grads_seed_each_output():
    rng = np.random.default_rng([SEED, 3])
    a = rng.standard_normal((2, 3))
    x = placeholder(a)
    s1, s2 = rng.standard_normal((2, 3)), rng.standard_normal((3,))
    (g,) = F.grad([x * 2.0, mnp.sum(x * x, axis=0)], [x], output_grads=[F.const(s1), s2])
    np.testing.assert_allclose(g.read(), 2 * s1 + 2 * a * s2, rtol=1e-12, atol=1e-14)
    # A seed broadcasts to its output's shape.
    (g,) = F.grad([x * 3.0], [x], output_grads=[F.const(np.array(0.5))])
    np.testing.assert_allclose(g.read(), np.full((2, 3), 1.5))


def test_gradient_dtype_follows_input():
    x = placeholder(np.ones((2, 2), dtype=np.float32))
    (g,) = F.grad([mnp.sum(x.astype(np.float64) * 2.0)], [x])
    assert np.dtype(g.dtype) == np.float32
    np.testing.assert_allclose(g.read(), np.full((2, 2), 2.0))


def test_bad_arguments_raise_clear_errors():
    x = placeholder(np.ones((2, 2)))
    y = mnp.sum(x * x)
    with pytest.raises(TypeError, match="outputs must be Vars"):
        F.grad("loss", [x])
    with pytest.raises(TypeError, match="inputs must be Vars"):
        F.grad(y, [np.ones(2)])
    with pytest.raises(ValueError, match="2 output gradients for 1 outputs"):
        F.grad(y, [x], output_grads=[np.ones(()), np.ones(())])
    i = placeholder(np.ones((2,), dtype=np.int64))
    with pytest.raises(TypeError, match="floating-point"):
        F.grad(y, [i])
    with pytest.raises(TypeError, match="outputs must be floating point"):
        F.grad([mnp.sum(i)], [x])
    with pytest.raises(ValueError):
        F.grad(x * 2.0, [x], output_grads=[np.ones((3, 3))])


def test_linalg_front_end_stays_differentiable_on_placeholders():
    # numpy.linalg.inv / solve check for singular matrices at once on constants; on placeholders
    # (parameters being trained) they stay lazy so that gradients flow through them.
    rng = np.random.default_rng()
    a = rng.standard_normal((4, 4)) + 4 * np.eye(4)
    b = rng.standard_normal((4, 2))
    p = F.placeholder((4, 4), dtype=np.float64)
    p.write(a)
    loss = F.reduce_sum(mnp.linalg.inv(p) * mnp.linalg.inv(p)) + F.reduce_sum(mnp.linalg.solve(p, b))
    ours = np.asarray(F.grad(loss, [p])[0])
    t = torch.tensor(a, requires_grad=True)
    (torch.linalg.inv(t).square().sum() + torch.linalg.solve(t, torch.tensor(b)).sum()).backward()
    np.testing.assert_allclose(ours, t.grad.numpy(), rtol=1e-9, atol=1e-12)
