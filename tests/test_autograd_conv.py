"""Gradients of the convolution and pooling ops (Conv2D with its fused activations, MaxPool2D,
AvgPool2D, and their blocked-layout twins of converted models) and ``mnnpy.expr.conv2d_transpose``
with its gradients, against PyTorch (``torch.nn.functional``) and against central finite
differences; bad arguments raise clear errors.

Every case draws fresh random inputs; the seed is in each failure message (rerun a case with
``MNNPY_TEST_SEED=<seed>``). The ops are float32 only, so tolerances are float32 ones:
- against PyTorch: max |ours - torch| <= 2e-4 * max(1, max |torch|) (float32 sums of up to a few
  hundred products, in a different order);
- against central differences of L = sum(y * seed) along a random direction v (steps 1e-2 and
  5e-3 combined by Richardson extrapolation, L in float64 from float32 outputs):
  |<grad, v> - difference| <= 2e-2 * max(1, |difference|), on smooth activations only (none,
  sigmoid, silu) so that no kink lies within a step; max pooling on values 0.05 apart, so that no
  step moves an arg-max;
- pooling gradients are sums of exactly one or a few float32 values: 1e-5 relative.
"""
import os

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import mnnpy.expr as ex
from mnnpy import _core
from mnnpy._expr_conv import _conv2d_nchw
from mnnpy._expr_pool import _avg_pool_nchw, _max_pool_nchw

TORCH_TOL = 2e-4
FD_TOL = 2e-2
FD_STEP = 1e-2
POOL_TOL = 1e-5

ACTS = {"none": 0, "relu": 1, "clip": 2, "sigmoid": 3, "silu": 4, "hardswish": 5, "gelu": 6, "hardsigmoid": 7}


def fresh_rng():
    seed = int(os.environ.get("MNNPY_TEST_SEED", np.random.SeedSequence().entropy % (1 << 32)))
    return np.random.default_rng(seed), seed


def holder(array):
    p = ex.placeholder(list(array.shape))
    p.write(np.ascontiguousarray(array, dtype=np.float32))
    return p


def values(vars_):
    return [np.asarray(v.read()) for v in _core.evaluate_as_constants(list(vars_))]


def assert_close(got, want, tol, what, seed):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape} (seed {seed})"
    err = np.abs(got - want).max() if got.size else 0.0
    scale = max(1.0, float(np.abs(want).max()) if want.size else 1.0)
    assert err <= tol * scale, f"{what}: max error {err:.3g} > {tol * scale:.3g} (seed {seed})"


def torch_activation(z, act, clip=(0.0, 6.0), hs=(0.2, 0.5)):
    if act == "none":
        return z
    if act == "relu":
        return torch.relu(z)
    if act == "clip":
        return torch.clamp(z, clip[0], clip[1])
    if act == "sigmoid":
        return torch.sigmoid(z)
    if act == "silu":
        return F.silu(z)
    if act == "hardswish":
        return F.hardswish(z)
    if act == "gelu":
        return F.gelu(z)
    return torch.clamp(hs[0] * z + hs[1], 0.0, 1.0)


# ---------------------------------------------------------------------------------------- Conv2D
# (N, C, H, W, Cout, (kh, kw), (sh, sw), pads (top, left, bottom, right), (dh, dw), group, bias)
CONV_CASES = [
    ("plain 3x3", (2, 3, 7, 9, 4, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, True)),
    ("stride 2 odd", (2, 3, 11, 9, 5, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1, True)),
    ("asymmetric pads", (2, 4, 9, 10, 6, (3, 2), (2, 1), (0, 2, 1, 0), (1, 1), 1, True)),
    ("dilation 2", (2, 3, 11, 10, 4, (3, 3), (1, 2), (2, 1, 2, 3), (2, 2), 1, False)),
    ("groups 2", (3, 6, 8, 7, 4, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 2, True)),
    ("depthwise s2", (2, 5, 9, 8, 5, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 5, True)),
    ("depthwise multiplier", (2, 3, 7, 7, 6, (3, 3), (1, 1), (1, 0, 1, 2), (1, 1), 3, False)),
    ("pointwise", (2, 8, 5, 6, 7, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1, True)),
    ("1x1 stride 2", (2, 6, 9, 9, 5, (1, 1), (2, 2), (0, 0, 0, 0), (1, 1), 1, False)),
    ("7x7 stem", (2, 3, 17, 15, 8, (7, 7), (2, 2), (3, 3, 3, 3), (1, 1), 1, False)),
    ("wide channels small map", (3, 40, 4, 4, 36, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, True)),
    ("large batch blocks", (20, 4, 8, 8, 8, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, True)),
    # Stride 1: the input gradient runs as a forward convolution (Winograd where it pays).
    ("winograd sized", (2, 32, 12, 12, 32, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, True)),
    ("asymmetric s1", (2, 3, 8, 9, 4, (3, 3), (1, 1), (0, 2, 2, 1), (1, 1), 1, True)),
    ("depthwise s1", (2, 4, 7, 6, 4, (3, 3), (1, 1), (1, 0, 1, 2), (1, 1), 4, True)),
    ("pad beyond kernel", (2, 3, 6, 6, 4, (3, 3), (1, 1), (3, 0, 0, 1), (1, 1), 1, False)),
    # 3x3 stride 1 with enough tiles: the weight gradient by Winograd, here over two chunks of tiles.
    ("winograd filter chunks odd", (6, 128, 13, 13, 128, (3, 3), (1, 1), (1, 0, 1, 2), (1, 1), 1, False)),
]


def torch_conv(x, w, b, strides, pads, dilations, group):
    top, left, bottom, right = pads
    return F.conv2d(F.pad(x, (left, right, top, bottom)), w, b, strides, 0, dilations, group)


def conv_case_arrays(rng, case):
    n, c, h, w_, cout, (kh, kw), _, _, _, group, bias = case
    x = rng.standard_normal((n, c, h, w_)).astype(np.float32)
    w = (rng.standard_normal((cout, c // group, kh, kw)) / np.sqrt(c // group * kh * kw)).astype(np.float32)
    b = rng.standard_normal(cout).astype(np.float32) if bias else None
    return x, w, b


def mnnpy_conv_grads(x, w, b, seed_grad, strides, pads, dilations, group, act, **act_params):
    xp, wp = holder(x), holder(w)
    bp = None if b is None else holder(b)
    y = _conv2d_nchw(xp, wp, bp, strides, pads, dilations, group, ACTS[act], **act_params)
    params = [xp, wp] + ([] if bp is None else [bp])
    grads = ex.grad([y], params, [_core.const(seed_grad, None, "NCHW")])
    return values([y] + grads)


@pytest.mark.parametrize("name,case", CONV_CASES, ids=[c[0] for c in CONV_CASES])
def test_conv2d_gradients_match_torch(name, case):
    rng, seed = fresh_rng()
    x, w, b = conv_case_arrays(rng, case)
    strides, pads, dilations, group = case[6], case[7], case[8], case[9]
    xt, wt = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    bt = None if b is None else torch.tensor(b, requires_grad=True)
    yt = torch_conv(xt, wt, bt, strides, pads, dilations, group)
    gy = rng.standard_normal(tuple(yt.shape)).astype(np.float32)
    yt.backward(torch.tensor(gy))
    got = mnnpy_conv_grads(x, w, b, gy, strides, pads, dilations, group, "none")
    want = [yt.detach(), xt.grad, wt.grad] + ([] if bt is None else [bt.grad])
    for what, g, t in zip(["output", "input grad", "weight grad", "bias grad"], got, want):
        assert_close(g, t.numpy(), TORCH_TOL, f"{name}: {what}", seed)


@pytest.mark.parametrize("act", list(ACTS))
def test_conv2d_fused_activation_gradients(act):
    rng, seed = fresh_rng()
    case = (2, 4, 7, 6, 5, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, True)
    x, w, b = conv_case_arrays(rng, case)
    x *= 3  # pre-activations on both sides of every activation's bends
    params = {}
    if act == "clip":
        params = {"clip_min": -0.5, "clip_max": 1.5}
    elif act == "hardsigmoid":
        params = {"alpha": 0.3, "beta": 0.4}
    xt, wt, bt = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    z = torch_conv(xt, wt, bt, (1, 1), (1, 1, 1, 1), (1, 1), 1)
    yt = torch_activation(z, act, clip=(-0.5, 1.5), hs=(0.3, 0.4))
    gy = rng.standard_normal(tuple(yt.shape)).astype(np.float32)
    yt.backward(torch.tensor(gy))
    got = mnnpy_conv_grads(x, w, b, gy, (1, 1), (1, 1, 1, 1), (1, 1), 1, act, **params)
    for what, g, t in zip(["output", "input grad", "weight grad", "bias grad"], got,
                          [yt.detach(), xt.grad, wt.grad, bt.grad]):
        assert_close(g, t.numpy(), TORCH_TOL, f"{act}: {what}", seed)


def central_difference(loss_of, params, i, v, step):
    """Richardson-extrapolated central difference of loss_of along v in params[i]: the step^2 term
    of the plain difference cancels, so curvature does not count against the tolerance."""
    def plain(h):
        plus = [q + h * v if j == i else q for j, q in enumerate(params)]
        minus = [q - h * v if j == i else q for j, q in enumerate(params)]
        return (loss_of(plus) - loss_of(minus)) / (2 * h)
    return (4 * plain(step / 2) - plain(step)) / 3


def directional_check(loss_of, params, grads, rng, seed, what):
    """<grad, v> against the central difference of loss_of(params) along a random v."""
    for i, (p, g) in enumerate(zip(params, grads)):
        v = rng.standard_normal(p.shape).astype(np.float32)
        numeric = central_difference(loss_of, params, i, v, FD_STEP)
        analytic = float(np.sum(g.astype(np.float64) * v))
        assert abs(analytic - numeric) <= FD_TOL * max(1.0, abs(numeric)), (
            f"{what}, input {i}: analytic {analytic:.6g} vs central difference {numeric:.6g} (seed {seed})")


@pytest.mark.parametrize("act", ["none", "sigmoid", "silu"])
@pytest.mark.parametrize("name,case", [CONV_CASES[2], CONV_CASES[3], CONV_CASES[4], CONV_CASES[5]],
                         ids=["asymmetric", "dilation", "groups", "depthwise"])
def test_conv2d_gradients_finite_differences(name, case, act):
    rng, seed = fresh_rng()
    x, w, b = conv_case_arrays(rng, case)
    strides, pads, dilations, group = case[6], case[7], case[8], case[9]
    params = [x, w] + ([] if b is None else [b])
    xp, wp = holder(x), holder(w)
    bp = None if b is None else holder(b)
    y = _conv2d_nchw(xp, wp, bp, strides, pads, dilations, group, ACTS[act])
    gy = rng.standard_normal(tuple(y.shape)).astype(np.float32)
    grads = mnnpy_conv_grads(x, w, b, gy, strides, pads, dilations, group, act)[1:]

    def loss_of(ps):
        out = values([_conv2d_nchw(_core.const(ps[0], None, "NCHW"), _core.const(ps[1], None, "NCHW"),
                                   None if b is None else _core.const(ps[2], None, "NCHW"), strides, pads,
                                   dilations, group, ACTS[act])])[0]
        return float(np.sum(out.astype(np.float64) * gy))
    directional_check(loss_of, params, grads, rng, seed, f"{name} {act}")


# ------------------------------------------------------------------------------ conv2d_transpose
# (N, Cin, H, W, Cout, (kh, kw), stride, padding, output_padding, dilation, group, bias)
TRANSPOSE_CASES = [
    ("plain", (2, 4, 5, 6, 3, (3, 3), (1, 1), (0, 0), (0, 0), (1, 1), 1, True)),
    ("stride 2 output_padding", (2, 4, 5, 4, 6, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), 1, True)),
    ("odd kernel stride", (2, 3, 4, 5, 5, (4, 3), (3, 2), (1, 0), (2, 1), (1, 1), 1, False)),
    ("dilation 2", (2, 4, 5, 5, 4, (3, 3), (1, 2), (2, 1), (0, 1), (2, 2), 1, True)),
    ("groups 2", (2, 6, 5, 4, 4, (3, 3), (2, 1), (1, 1), (0, 0), (1, 1), 2, True)),
    ("depthwise", (2, 5, 6, 5, 5, (3, 3), (2, 2), (1, 1), (1, 0), (1, 1), 5, False)),
    ("upsample 2x2", (3, 8, 4, 4, 4, (2, 2), (2, 2), (0, 0), (0, 0), (1, 1), 1, True)),
    ("output_padding beyond stride", (2, 3, 4, 5, 4, (3, 3), (1, 2), (0, 1), (1, 2), (2, 3), 1, True)),
]


@pytest.mark.parametrize("name,case", TRANSPOSE_CASES, ids=[c[0] for c in TRANSPOSE_CASES])
def test_conv2d_transpose_forward_and_gradients(name, case):
    rng, seed = fresh_rng()
    n, cin, h, w_, cout, (kh, kw), stride, padding, out_pad, dil, group, bias = case
    x = rng.standard_normal((n, cin, h, w_)).astype(np.float32)
    w = (rng.standard_normal((cin, cout // group, kh, kw)) / np.sqrt(kh * kw)).astype(np.float32)
    b = rng.standard_normal(cout).astype(np.float32) if bias else None
    xt, wt = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    bt = None if b is None else torch.tensor(b, requires_grad=True)
    yt = F.conv_transpose2d(xt, wt, bt, stride, padding, out_pad, group, dil)
    gy = rng.standard_normal(tuple(yt.shape)).astype(np.float32)
    yt.backward(torch.tensor(gy))
    xp, wp = holder(x), holder(w)
    bp = None if b is None else holder(b)
    y = ex.conv2d_transpose(xp, wp, bp, stride, padding, dil, group, output_padding=out_pad)
    params = [xp, wp] + ([] if bp is None else [bp])
    got = values([y] + ex.grad([y], params, [_core.const(gy, None, "NCHW")]))
    want = [yt.detach(), xt.grad, wt.grad] + ([] if bt is None else [bt.grad])
    for what, g, t in zip(["output", "input grad", "weight grad", "bias grad"], got, want):
        assert_close(g, t.numpy(), TORCH_TOL, f"{name}: {what}", seed)

    def loss_of(ps):
        out = values([ex.conv2d_transpose(ps[0], ps[1], None if b is None else ps[2], stride, padding, dil, group,
                                          output_padding=out_pad)])[0]
        return float(np.sum(out.astype(np.float64) * gy))
    directional_check(loss_of, [x, w] + ([] if b is None else [b]), got[1:], rng, seed, name)


@pytest.mark.parametrize("group", [1, 4])
def test_conv2d_transpose_constant_weights(group):
    # Constant weights are flipped and packed once, when the plan is built.
    rng, seed = fresh_rng()
    x = rng.standard_normal((2, 8, 6, 5)).astype(np.float32)
    w = rng.standard_normal((8, 8 // group, 3, 3)).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    want = F.conv_transpose2d(torch.tensor(x), torch.tensor(w), torch.tensor(b), 1, 1, 0, group, 1).numpy()
    for _ in range(2):
        got = values([ex.conv2d_transpose(holder(x), w, b, 1, 1, 1, group)])[0]
        assert_close(got, want, TORCH_TOL, f"group {group}", seed)


def test_conv2d_transpose_same_padding_doubles_size():
    rng, seed = fresh_rng()
    x = rng.standard_normal((1, 2, 5, 7)).astype(np.float32)
    w = rng.standard_normal((2, 3, 4, 4)).astype(np.float32)
    y = ex.conv2d_transpose(x, w, None, (2, 2), padding_mode=ex.SAME)
    assert tuple(y.shape) == (1, 3, 10, 14), f"seed {seed}"
    # SAME with kernel 4, stride 2 cuts one tap row/column on each side: PyTorch's padding 1.
    want = F.conv_transpose2d(torch.tensor(x), torch.tensor(w), None, 2, 1).numpy()
    assert_close(values([y])[0], want, TORCH_TOL, "SAME", seed)


def test_conv2d_transpose_bad_arguments():
    x = np.zeros((1, 4, 5, 5), np.float32)
    w = np.zeros((4, 2, 3, 3), np.float32)
    with pytest.raises(ValueError, match="output_padding"):
        ex.conv2d_transpose(x, w, None, (2, 2), output_padding=(2, 2))
    with pytest.raises(ValueError, match="channels"):
        ex.conv2d_transpose(np.zeros((1, 3, 5, 5), np.float32), w, None)
    with pytest.raises(ValueError, match="groups"):
        ex.conv2d_transpose(x, w, None, group=3)
    with pytest.raises(ValueError, match="bias"):
        ex.conv2d_transpose(x, w, np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="4-D"):
        ex.conv2d_transpose(np.zeros((4, 5, 5), np.float32), w, None)
    with pytest.raises(ValueError, match="empty"):
        ex.conv2d_transpose(np.zeros((1, 4, 1, 1), np.float32), w, None, padding=(2, 2))
    with pytest.raises(TypeError, match="float32"):
        ex.conv2d_transpose(_core.const(np.zeros((1, 4, 5, 5), np.float64), None, "NCHW"), w, None)
    with pytest.raises(ValueError, match="stride"):
        ex.conv2d_transpose(x, w, None, (0, 1))


def test_backprop_ops_reject_bad_shapes():
    dy = holder(np.zeros((1, 4, 3, 3), np.float32))
    with pytest.raises(ValueError, match="output channels"):
        _core.op("Conv2DBackpropInput", [dy, holder(np.zeros((5, 2, 3, 3), np.float32))], {"input_size": [5, 5]})
    with pytest.raises(ValueError, match="input_size"):
        _core.op("Conv2DBackpropInput", [dy, holder(np.zeros((4, 2, 3, 3), np.float32))], {})
    with pytest.raises(ValueError, match="batch"):
        _core.op("Conv2DBackpropFilter", [holder(np.zeros((2, 2, 5, 5), np.float32)), dy], {"kernel_size": [3, 3]})


# ----------------------------------------------------------------------------------------- pooling
# (N, C, H, W, kernel, stride, pads (top, left, bottom, right), dilation, ceil_mode)
MAX_CASES = [
    ("2x2 s2", (2, 3, 8, 8, (2, 2), (2, 2), (0, 0, 0, 0), (1, 1), False)),
    ("3x3 s2 overlapping padded", (2, 3, 9, 11, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), False)),
    ("3x3 s1 overlapping", (1, 2, 7, 6, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), False)),
    ("ceil mode", (2, 2, 9, 10, (3, 2), (2, 2), (1, 0, 1, 0), (1, 1), True)),
    ("dilation 2", (2, 2, 11, 9, (3, 3), (1, 2), (1, 1, 1, 1), (2, 2), False)),
    ("asymmetric pads", (2, 3, 7, 8, (3, 3), (2, 2), (0, 1, 2, 0), (1, 1), False)),
]


@pytest.mark.parametrize("ties", [False, True], ids=["distinct", "ties"])
@pytest.mark.parametrize("name,case", MAX_CASES, ids=[c[0] for c in MAX_CASES])
def test_max_pool_gradient_matches_torch(name, case, ties):
    rng, seed = fresh_rng()
    n, c, h, w, kernel, stride, pads, dil, ceil_mode = case
    if ties:  # few distinct values: windows hold equal maxima, the first one takes the gradient
        x = rng.integers(0, 3, (n, c, h, w)).astype(np.float32)
    else:
        x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    top, left, bottom, right = pads
    xt = torch.tensor(x, requires_grad=True)
    if (top, left) == (bottom, right):
        yt = F.max_pool2d(xt, kernel, stride, (top, left), dil, ceil_mode)
    else:  # PyTorch pads symmetrically: pad with -inf by hand
        yt = F.max_pool2d(F.pad(xt, (left, right, top, bottom), value=-np.inf), kernel, stride, 0, dil, ceil_mode)
    gy = rng.standard_normal(tuple(yt.shape)).astype(np.float32)
    yt.backward(torch.tensor(gy))
    xp = holder(x)
    y = _max_pool_nchw(xp, kernel, stride, pads, dil, ceil_mode)
    got = values([y] + ex.grad([y], [xp], [_core.const(gy, None, "NCHW")]))
    assert_close(got[0], yt.detach().numpy(), POOL_TOL, f"{name}: output", seed)
    assert_close(got[1], xt.grad.numpy(), POOL_TOL, f"{name}: input grad", seed)


# (N, C, H, W, kernel, stride, (ph, pw), ceil_mode)
AVG_CASES = [
    ("2x2 s2", (2, 3, 8, 8, (2, 2), (2, 2), (0, 0), False)),
    ("3x3 s2 padded", (2, 3, 9, 11, (3, 3), (2, 2), (1, 1), False)),
    ("3x3 s1 overlapping", (1, 2, 7, 6, (3, 3), (1, 1), (1, 1), False)),
    ("ceil mode padded", (2, 2, 10, 9, (3, 2), (2, 2), (1, 1), True)),
    ("ceil mode", (2, 2, 9, 10, (2, 3), (2, 3), (0, 0), True)),
    ("whole plane", (2, 4, 5, 5, (5, 5), (1, 1), (0, 0), False)),
]


@pytest.mark.parametrize("include_pad", [False, True], ids=["exclude_pad", "include_pad"])
@pytest.mark.parametrize("name,case", AVG_CASES, ids=[c[0] for c in AVG_CASES])
def test_avg_pool_gradient_matches_torch(name, case, include_pad):
    rng, seed = fresh_rng()
    n, c, h, w, kernel, stride, (ph, pw), ceil_mode = case
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    xt = torch.tensor(x, requires_grad=True)
    yt = F.avg_pool2d(xt, kernel, stride, (ph, pw), ceil_mode, include_pad)
    gy = rng.standard_normal(tuple(yt.shape)).astype(np.float32)
    yt.backward(torch.tensor(gy))
    xp = holder(x)
    y = _avg_pool_nchw(xp, kernel, stride, (ph, pw, ph, pw), ceil_mode, include_pad)
    got = values([y] + ex.grad([y], [xp], [_core.const(gy, None, "NCHW")]))
    assert_close(got[0], yt.detach().numpy(), POOL_TOL, f"{name}: output", seed)
    assert_close(got[1], xt.grad.numpy(), POOL_TOL, f"{name}: input grad", seed)


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool_gradient_finite_differences(kind):
    rng, seed = fresh_rng()
    # Distinct values 0.05 apart: steps of about 1e-3 change no window's arg-max.
    x = (rng.permutation(2 * 3 * 9 * 8).reshape(2, 3, 9, 8) * 0.05 - 10).astype(np.float32)

    def pool(v):
        if kind == "max":
            return _max_pool_nchw(v, (3, 3), (2, 2), (1, 1, 1, 1))
        return _avg_pool_nchw(v, (3, 3), (2, 2), (1, 1, 1, 1), True, False)
    xp = holder(x)
    y = pool(xp)
    gy = rng.standard_normal(tuple(y.shape)).astype(np.float32)
    grad = values(ex.grad([y], [xp], [_core.const(gy, None, "NCHW")]))[0]

    def loss_of(ps):
        return float(np.sum(values([pool(_core.const(ps[0], None, "NCHW"))])[0].astype(np.float64) * gy))
    v = rng.standard_normal(x.shape).astype(np.float32) / 4
    numeric = central_difference(loss_of, [x], 0, v, 4e-3)
    analytic = float(np.sum(grad.astype(np.float64) * v))
    assert abs(analytic - numeric) <= FD_TOL * max(1.0, abs(numeric)), (
        f"{kind}: analytic {analytic:.6g} vs central difference {numeric:.6g} (seed {seed})")


# ------------------------------------------------------------------ blocked layout (converted models)
def to_blocked(v):
    return _core.op("ToBlockedChannels", [v], {"block": 8})


def from_blocked(v):
    return _core.op("FromBlockedChannels", [v], {})


@pytest.mark.parametrize("variant", ["blocked input", "nchw input", "depthwise"])
def test_blocked_conv_gradients_match_torch(variant):
    rng, seed = fresh_rng()
    c_in, c_out, group = {"blocked input": (16, 8, 1), "nchw input": (3, 16, 1), "depthwise": (16, 16, 16)}[variant]
    x = rng.standard_normal((2, c_in, 7, 6)).astype(np.float32)
    w = (rng.standard_normal((c_out, c_in // group, 3, 3)) / 3).astype(np.float32)
    b = rng.standard_normal(c_out).astype(np.float32)
    strides = (1, 1) if variant != "depthwise" else (2, 2)
    out_hw = ((7 + 2 - 3) // strides[0] + 1, (6 + 2 - 3) // strides[1] + 1)
    r = rng.standard_normal((2, c_out) + out_hw).astype(np.float32)
    xt, wt, bt, rt = (torch.tensor(a, requires_grad=True) for a in (x, w, b, r))
    yt = torch.relu(F.conv2d(xt, wt, bt, strides, 1, 1, group) + rt)
    gy = rng.standard_normal(tuple(yt.shape)).astype(np.float32)
    yt.backward(torch.tensor(gy))
    xp, wp, bp, rp = holder(x), holder(w), holder(b), holder(r)
    attrs = {"strides": list(strides), "pads": [1, 1, 1, 1], "dilations": [1, 1], "group": group, "activation": 1}
    x_in = xp if variant == "nchw input" else to_blocked(xp)
    y = from_blocked(_core.op("Conv2DBlocked", [x_in, wp, bp, to_blocked(rp)], attrs))
    got = values([y] + ex.grad([y], [xp, wp, bp, rp], [_core.const(gy, None, "NCHW")]))
    for what, g, t in zip(["output", "input grad", "weight grad", "bias grad", "residual grad"], got,
                          [yt.detach(), xt.grad, wt.grad, bt.grad, rt.grad]):
        assert_close(g, t.numpy(), TORCH_TOL, f"{variant}: {what}", seed)


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_blocked_pool_gradients_match_torch(kind):
    rng, seed = fresh_rng()
    x = rng.standard_normal((2, 16, 9, 8)).astype(np.float32)
    xt = torch.tensor(x, requires_grad=True)
    attrs = {"kernel": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}
    if kind == "max":
        yt = F.max_pool2d(xt, 3, 2, 1)
    else:
        yt = F.avg_pool2d(xt, 3, 2, 1, count_include_pad=False)
        attrs["count_include_pad"] = 0
    gy = rng.standard_normal(tuple(yt.shape)).astype(np.float32)
    yt.backward(torch.tensor(gy))
    xp = holder(x)
    op = "MaxPool2DBlocked" if kind == "max" else "AvgPool2DBlocked"
    y = from_blocked(_core.op(op, [to_blocked(xp)], attrs))
    got = values([y] + ex.grad([y], [xp], [_core.const(gy, None, "NCHW")]))
    assert_close(got[0], yt.detach().numpy(), POOL_TOL, f"{kind}: output", seed)
    assert_close(got[1], xt.grad.numpy(), POOL_TOL, f"{kind}: input grad", seed)
