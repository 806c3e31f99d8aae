"""Conv2D on the Vulkan backend (implicit GEMM, 1x1 GEMM, depthwise; K split into partial sums
where tiles are few) against torch.nn.functional.conv2d in float64 and against the CPU backend:
kernel sizes 1 to 7, strides, dilations, asymmetric pads, groups, depthwise layers with channel
multipliers, odd sizes, batches, with and without bias, every fused activation, empty batches,
weights fed at run time, and the tiles and splits set by the environment.

Error bounds: the pre-activation z = sum of K = C/group * kh * kw products plus the bias, in any
order (a split sum too: a product meets at most K + 1 roundings), is within
Delta = gamma_{K+1} (|w| * |x| + |b|) of the exact one (gamma_K without a bias). The activation moves
that by at most L * Delta (L its Lipschitz constant) and rounds by its own bound (see
`activation_rounding`, from the formulas of conv2d_activation.glsl, which are the CPU kernel's).
The CPU is bounded alike (where it uses a GEMM or the direct depthwise kernel, not Winograd)."""
import math
import subprocess
import sys

import numpy as np
import pytest

import mnnpy
from mnnpy import expr as F
from mnnpy._expr_conv import _conv2d_nchw

from helpers import compute_steps, profiled, python_env

torch = pytest.importorskip("torch")
TF = torch.nn.functional

U32 = 2.0 ** -24  # float32's unit roundoff
from test_expr_conv import ACT_CLIP as CLIP, ACT_GELU as GELU, ACT_HARDSIGMOID as HARDSIGMOID  # noqa: E402
from test_expr_conv import ACT_HARDSWISH as HARDSWISH, ACT_NONE as NONE, ACT_RELU as RELU  # noqa: E402
from test_expr_conv import ACT_SIGMOID as SIGMOID, ACT_SILU as SILU, ACTIVATIONS  # noqa: E402
# Largest slopes: sigmoid 1/4; silu 1.0998 (at 2.40); hardswish 3/2 (at 3); gelu 1.1289 (at sqrt 2).
LIPSCHITZ = {NONE: 1.0, RELU: 1.0, CLIP: 1.0, SIGMOID: 0.25, SILU: 1.1, HARDSWISH: 1.5, GELU: 1.13}


def activation_params(code, params):
    """(p0, p1) as float32, as the kernels read them."""
    if code == CLIP:
        return np.float32(params.get("clip_min", 0.0)), np.float32(params.get("clip_max", 6.0))
    if code == HARDSIGMOID:
        return np.float32(params.get("alpha", 0.2)), np.float32(params.get("beta", 0.5))
    return np.float32(0), np.float32(0)


def activate(z, code, p0, p1):
    """The exact activation of float64 z."""
    t = torch.from_numpy(z)
    if code == RELU:
        return np.maximum(z, 0)
    if code == CLIP:
        return np.clip(z, float(p0), float(p1))
    if code == SIGMOID:
        return torch.sigmoid(t).numpy()
    if code == SILU:
        return TF.silu(t).numpy()
    if code == HARDSWISH:
        return TF.hardswish(t).numpy()
    if code == GELU:  # x Phi(x) through erfc: 1 + erf(x / sqrt 2) would cancel in the left tail
        return (0.5 * t * torch.special.erfc(-t / math.sqrt(2))).numpy()
    if code == HARDSIGMOID:
        return np.clip(float(p0) * z + float(p1), 0, 1)
    return z


def activation_rounding(code, z, delta, p0, p1):
    """Bound on |computed act(z') - act(z')| for every z' within delta of z (u = 2^-24; GLSL's
    division is within 2.5 ulp, 5u, and its fma may round twice):
    - relu, clip: exact.
    - exp (the CPU's polynomial): argument 0.35u, truncation 0.19u, evaluation 4.5u: 6u.
      sigmoid 1 / (1 + exp(-x)): 6u + u + 5u, 13u with their products; silu one more product, 14u.
    - hardswish x * (clamp(x + 3) * (1/6)): four roundings, 5u.
    - gelu x * Phi(x), Phi = t exp(-z^2 + P(t)) / 2 or 1 minus that, z = |x| / sqrt 2: the erfc fit
      1.2e-7 (2.1u), t 8u, exp 6u, two products, and the argument's absolute error: z^2 7u z^2,
      P through t (|t P'(t)| <= 1.26) 10u, P's evaluation 16u sum |c_k| t^k <= 110u, its sum 3u:
      relative to the tail Phi(-|x|) (4 x^2 + 150)u, plus 2u of the result for 1 - tail and x *.
    - hard sigmoid clamp(alpha x + beta): one fma, 3u (|alpha x| + |beta|).
    Results below 2^-126 may be flushed to zero; gelu's argument is held above -87, which moves
    results by less than |x| 2^-126."""
    lo, hi = np.maximum(np.abs(z) - delta, 0), np.abs(z) + delta
    a_hi = np.abs(activate(z, code, p0, p1)) + LIPSCHITZ.get(code, abs(float(p0))) * delta
    tiny = 2.0 ** -126
    if code in (NONE, RELU, CLIP):
        return np.zeros_like(z)
    if code == SIGMOID:
        return 13 * U32 * a_hi + tiny
    if code == SILU:
        return 14 * U32 * a_hi + tiny
    if code == HARDSWISH:
        return 5 * U32 * a_hi + tiny
    if code == GELU:
        tail = 0.5 * torch.special.erfc(torch.from_numpy(lo / math.sqrt(2))).numpy()
        # Past |x| ~ 12.8 the argument is held at -87: the tail stays below t exp(-87) / 2 < 2^-126.
        return (4 * hi**2 + 150) * U32 * hi * tail + 2 * U32 * a_hi + (1 + hi) * tiny
    return 3 * U32 * (abs(float(p0)) * hi + abs(float(p1)))


def exact_conv(x, w, b, strides, pads, dilations, group):
    """The pre-activation in float64 (torch), and Delta, its float32 bound."""
    def conv(xx, ww, bb):
        xt = TF.pad(torch.from_numpy(xx), (pads[1], pads[3], pads[0], pads[2]))
        return TF.conv2d(xt, torch.from_numpy(ww), None if bb is None else torch.from_numpy(bb), tuple(strides), 0,
                         tuple(dilations), group).numpy()
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    b64 = None if b is None else b.astype(np.float64)
    z = conv(x64, w64, b64)
    magnitude = conv(np.abs(x64), np.abs(w64), None if b is None else np.abs(b64))
    k = w.shape[1] * w.shape[2] * w.shape[3] + (b is not None)
    return z, k * U32 / (1 - k * U32) * magnitude


def conv_case(rng, n, c, h, w, cout, kh, kw, group, bias=True, scale=1.0):
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    # Scaled as common initializations are (times `scale`), so outputs stay ~N(0, scale^2).
    wt = (rng.standard_normal((cout, c // group, kh, kw)) * scale / math.sqrt(c // group * kh * kw)).astype(np.float32)
    b = rng.standard_normal(cout).astype(np.float32) if bias else None
    return x, wt, b


def run(backend, x, w, b, strides, pads, dilations, group, code=NONE, params=None, constant_weights=True):
    """The convolution on `backend` and its compute steps."""
    def build():
        xv = F.const(x)
        if constant_weights:
            wv, bv = F.const(w), None if b is None else F.const(b)
        else:
            wv = F.placeholder(w.shape)
            wv.write(w)
            bv = None
            if b is not None:
                bv = F.placeholder(b.shape)
                bv.write(b)
        return [_conv2d_nchw(xv, wv, bv, strides, pads, dilations, group, code, **(params or {}))]
    (y,), profile = profiled(build, backend)
    return y, compute_steps(profile)


def check(x, w, b, strides, pads, dilations, group, code=NONE, params=None, constant_weights=True, cpu=True):
    """The convolution on Vulkan within its bound of the exact one and within both bounds of the CPU's;
    returns the Vulkan step's scheme."""
    p0, p1 = activation_params(code, params or {})
    ours, steps = run("vulkan", x, w, b, strides, pads, dilations, group, code, params, constant_weights)
    assert [(s["op"], s["backend"], s["fallback"]) for s in steps] == [("Conv2D", "vulkan", False)]
    z, delta = exact_conv(x, w, b, strides, pads, dilations, group)
    expected = activate(z, code, p0, p1)
    bound = LIPSCHITZ.get(code, abs(float(p0))) * delta + activation_rounding(code, z, delta, p0, p1)
    assert ours.dtype == np.float32 and ours.shape == expected.shape
    assert np.all(np.abs(ours - expected) <= bound)
    if cpu:
        theirs, cpu_steps = run("cpu", x, w, b, strides, pads, dilations, group, code, params, constant_weights)
        assert "winograd" not in cpu_steps[0]["scheme"]  # else the CPU's bound is another
        assert np.all(np.abs(ours - theirs) <= 2 * bound)
    return steps[0]["scheme"]


# (n, c, h, w, cout, kh, kw, strides, pads, dilations, group, the scheme's start)
GEOMETRIES = [
    pytest.param(1, 16, 8, 8, 24, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1, "conv 1x1 gemm", id="1x1"),
    pytest.param(3, 13, 7, 9, 20, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1, "conv 1x1 gemm", id="1x1-batch3-odd"),
    pytest.param(2, 12, 5, 7, 10, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 2, "conv 1x1 gemm", id="1x1-group2"),
    pytest.param(2, 8, 9, 9, 12, 1, 1, (2, 2), (0, 0, 0, 0), (1, 1), 1, "conv implicit-gemm", id="1x1-stride2"),
    pytest.param(1, 8, 5, 6, 10, 1, 1, (1, 1), (1, 0, 0, 2), (1, 1), 1, "conv implicit-gemm", id="1x1-padded"),
    pytest.param(1, 13, 7, 9, 20, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, "conv implicit-gemm", id="3x3"),
    pytest.param(2, 3, 11, 9, 5, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), 1, "conv implicit-gemm", id="3x3-stride2-batch2"),
    pytest.param(1, 8, 11, 13, 7, 3, 3, (1, 1), (0, 1, 2, 1), (1, 1), 1, "conv implicit-gemm", id="3x3-asym-pad"),
    pytest.param(1, 8, 11, 13, 5, 3, 3, (1, 1), (2, 2, 2, 2), (2, 2), 1, "conv implicit-gemm", id="3x3-dilation2"),
    pytest.param(1, 6, 12, 10, 9, 3, 3, (1, 2), (1, 3, 0, 2), (3, 1), 1, "conv implicit-gemm", id="3x3-mixed"),
    pytest.param(1, 6, 13, 11, 10, 5, 5, (1, 1), (2, 2, 2, 2), (1, 1), 1, "conv implicit-gemm", id="5x5"),
    pytest.param(2, 5, 15, 14, 7, 5, 5, (2, 2), (1, 2, 3, 0), (2, 1), 1, "conv implicit-gemm", id="5x5-stride2-dilated"),
    pytest.param(1, 3, 30, 30, 64, 7, 7, (2, 2), (3, 3, 3, 3), (1, 1), 1, "conv implicit-gemm", id="7x7-stride2"),
    pytest.param(1, 5, 6, 40, 4, 2, 5, (1, 3), (0, 2, 1, 0), (1, 2), 1, "conv implicit-gemm", id="rect-kernel"),
    pytest.param(1, 8, 11, 13, 6, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 2, "conv implicit-gemm", id="3x3-group2"),
    pytest.param(2, 12, 9, 8, 20, 5, 5, (2, 1), (2, 1, 2, 3), (1, 1), 4, "conv implicit-gemm", id="5x5-group4"),
    # Several tiles of both channels and pixels (13 x 3 of 64 x 64).
    pytest.param(2, 9, 20, 20, 130, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, "conv implicit-gemm", id="many-tiles"),
    # K = 360 and 576 (3x3) or 300 (1x1): few tiles, so K is split.
    pytest.param(1, 40, 6, 7, 36, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, "conv implicit-gemm 64x64x16 4x4 split-k 2",
                 id="3x3-split2"),
    pytest.param(2, 64, 5, 5, 20, 3, 3, (1, 1), (0, 1, 1, 0), (1, 1), 1, "conv implicit-gemm 64x64x16 4x4 split-k 4",
                 id="3x3-split4"),
    pytest.param(1, 300, 5, 5, 30, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1, "conv 1x1 gemm 64x64x16 4x4 split-k 2",
                 id="1x1-split2"),
    pytest.param(1, 24, 15, 17, 24, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 24, "conv depthwise 3x3", id="dw3x3"),
    pytest.param(2, 13, 7, 9, 13, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), 13, "conv depthwise 3x3", id="dw3x3-stride2"),
    pytest.param(1, 16, 15, 17, 16, 5, 5, (2, 2), (2, 2, 2, 2), (1, 1), 16, "conv depthwise 5x5", id="dw5x5-stride2"),
    pytest.param(1, 8, 20, 19, 8, 7, 7, (1, 2), (0, 3, 5, 1), (2, 1), 8, "conv depthwise 7x7", id="dw7x7-asym"),
    pytest.param(2, 5, 9, 11, 15, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 5, "conv depthwise 3x3", id="dw-multiplier3"),
    pytest.param(1, 1, 10, 12, 8, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, "conv depthwise 3x3", id="one-channel"),
]


@pytest.mark.parametrize("n,c,h,w,cout,kh,kw,strides,pads,dilations,group,scheme", GEOMETRIES)
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
def test_geometries(vulkan, rng, n, c, h, w, cout, kh, kw, strides, pads, dilations, group, scheme, bias):
    x, wt, b = conv_case(rng, n, c, h, w, cout, kh, kw, group, bias)
    assert check(x, wt, b, strides, pads, dilations, group).startswith(scheme)


# One layer per path (the split one applies the activation in its second dispatch).
ACT_LAYERS = [
    pytest.param(1, 13, 7, 9, 20, 3, 3, (1, 1), (1, 1, 1, 1), 1, "conv implicit-gemm 64x64x16 4x4", id="3x3"),
    pytest.param(2, 12, 8, 8, 14, 1, 1, (1, 1), (0, 0, 0, 0), 1, "conv 1x1 gemm", id="1x1"),
    pytest.param(1, 40, 6, 7, 12, 3, 3, (1, 1), (1, 1, 1, 1), 1, "conv implicit-gemm 64x64x16 4x4 split-k", id="split"),
    pytest.param(1, 12, 15, 17, 12, 3, 3, (2, 2), (1, 1, 1, 1), 12, "conv depthwise", id="dw"),
]


@pytest.mark.parametrize("code,params", ACTIVATIONS)
@pytest.mark.parametrize("n,c,h,w,cout,kh,kw,strides,pads,group,scheme", ACT_LAYERS)
def test_activations(vulkan, rng, n, c, h, w, cout, kh, kw, strides, pads, group, scheme, code, params):
    # Pre-activations ~N(0, 9): both sides of every activation's bends and well into its tails.
    x, wt, b = conv_case(rng, n, c, h, w, cout, kh, kw, group, scale=3.0)
    assert check(x, wt, b, strides, pads, (1, 1), group, code, params).startswith(scheme)


# Input channels of which only the first has weight 1: z = x exactly (a product by 1 and sums with 0),
# so only the activation's own rounding is left; one layer per place the activation is applied.
EXACT_LAYERS = [pytest.param(1, "conv depthwise", id="depthwise"), pytest.param(2, "conv 1x1 gemm 64x64x16 4x4", id="gemm"),
                pytest.param(300, "conv 1x1 gemm 64x64x16 4x4 split-k", id="split")]


@pytest.mark.parametrize("code,params", ACTIVATIONS)
@pytest.mark.parametrize("channels, scheme", EXACT_LAYERS)
def test_activation_formulas_alone(vulkan, rng, channels, scheme, code, params):
    x = np.zeros((1, channels, 16, 33), np.float32)
    x[0, 0] = np.linspace(-14, 14, 16 * 33, dtype=np.float32).reshape(16, 33)  # into every tail
    x[0, 1:] = rng.standard_normal((channels - 1, 16, 33))
    w = np.zeros((1, channels, 1, 1), np.float32)
    w[0, 0] = 1
    p0, p1 = activation_params(code, params)
    ours, steps = run("vulkan", x, w, None, (1, 1), (0, 0, 0, 0), (1, 1), 1, code, params)
    assert [(s["backend"], s["fallback"]) for s in steps] == [("vulkan", False)]
    assert steps[0]["scheme"].startswith(scheme)
    z = x[:, :1].astype(np.float64)
    assert np.all(np.abs(ours - activate(z, code, p0, p1)) <= activation_rounding(code, z, 0.0, p0, p1))


@pytest.mark.parametrize("group, cout", [(1, 6), (4, 4), (2, 6)], ids=["dense", "depthwise", "group2"])
def test_empty_batch(vulkan, group, cout):
    x = np.zeros((0, 4, 5, 5), np.float32)
    w = np.ones((cout, 4 // group, 3, 3), np.float32)
    ours, steps = run("vulkan", x, w, np.ones(cout, np.float32), (1, 1), (1, 1, 1, 1), (1, 1), group, RELU)
    assert ours.shape == (0, cout, 5, 5)
    assert all(s["backend"] == "vulkan" for s in steps)


@pytest.mark.parametrize("group, cout", [(1, 3), (2, 4)], ids=["gemm", "depthwise"])
def test_empty_image_padded_gives_the_activated_bias(vulkan, group, cout):
    x = np.zeros((2, 2, 0, 0), np.float32)
    w = np.ones((cout, 2 // group, 1, 1), np.float32)
    b = np.arange(-1, cout - 1, dtype=np.float32)
    ours, steps = run("vulkan", x, w, b, (1, 1), (1, 2, 1, 0), (1, 1), group, RELU)
    assert [(s["backend"], s["fallback"]) for s in steps] == [("vulkan", False)]
    np.testing.assert_array_equal(ours, np.broadcast_to(np.maximum(b, 0)[None, :, None, None], (2, cout, 2, 2)))


@pytest.mark.parametrize("n,c,h,w,cout,kh,kw,strides,pads,dilations,group,scheme",
                         [g for g in GEOMETRIES if g.id in ("3x3", "3x3-split4", "dw3x3")])
def test_weights_fed_at_run_time(vulkan, rng, n, c, h, w, cout, kh, kw, strides, pads, dilations, group, scheme):
    x, wt, b = conv_case(rng, n, c, h, w, cout, kh, kw, group)
    assert check(x, wt, b, strides, pads, dilations, group, HARDSWISH, constant_weights=False,
                 cpu=False).startswith(scheme)


_ENV_SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
import numpy as np
import test_vulkan_conv as t
x, w, b = t.conv_case(np.random.default_rng(0), 2, 24, 9, 10, 20, 3, 3, 1, scale=3.0)
print(t.check(x, w, b, (1, 1), (1, 0, 2, 1), (1, 1), 1, t.SILU, cpu=False))
"""


def run_with_environment(**env):
    import os
    script = _ENV_SCRIPT.format(tests=os.path.dirname(os.path.abspath(__file__)))
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=python_env(**env))


@pytest.mark.parametrize("tiles, splits, scheme", [
    ("128,128,8,8,8", None, "conv implicit-gemm 128x128x8 8x8"),
    ("32,32,16,4,4", "1", "conv implicit-gemm 32x32x16 4x4"),
    ("64,32,8,4,8", "3", "conv implicit-gemm 64x32x8 4x8 split-k 3"),
    ("32,128,8,4,8", "7", "conv implicit-gemm 32x128x8 4x8 split-k 7"),
    (None, "27", "conv implicit-gemm 64x64x16 4x4 split-k 14"),  # K = 216: 14 steps of 16 at most
])
def test_tiles_and_splits_set_by_the_environment(vulkan, tiles, splits, scheme):
    env = {}
    if tiles:
        env["MNNPY_VULKAN_CONV_TILES"] = tiles
    if splits:
        env["MNNPY_VULKAN_CONV_SPLITS"] = splits
    result = run_with_environment(**env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().split("\n")[-1] == scheme


@pytest.mark.parametrize("name, value", [("MNNPY_VULKAN_CONV_TILES", "64,64,16,3,4"),
                                         ("MNNPY_VULKAN_CONV_TILES", "8,64,8,4,4"),  # 32 invocations for 64 pixels
                                         ("MNNPY_VULKAN_CONV_TILES", "64,64,16"),
                                         ("MNNPY_VULKAN_CONV_SPLITS", "0"), ("MNNPY_VULKAN_CONV_SPLITS", "two")])
def test_invalid_settings_are_refused(vulkan, name, value):
    result = run_with_environment(**{name: value})
    assert result.returncode != 0 and name in result.stderr


# ---------------------------------------------------------------- fused residual
# y = act(conv + bias + residual): the residual is added to the rounded conv + bias, as the Add it
# replaces would, so z' = fl(fl(conv + bias) + r) is within Delta + u (|z + r| + Delta) of the exact
# z + r (Delta as above); the activation then as before.


def residual_bound(z, delta, r, code, p0, p1):
    """Bound on |computed act(fl(z' + r)) - act(z + r)| for z' within delta of the exact z."""
    s = z + r.astype(np.float64)
    total = delta + U32 * (np.abs(s) + delta)
    return s, LIPSCHITZ.get(code, abs(float(p0))) * total + activation_rounding(code, s, total, p0, p1)


def residual_step(backend, x, w, b, r, strides, pads, dilations, group, build_tail):
    """The Conv2D (no activation) of x, w, b followed by build_tail(conv, residual) on `backend`:
    the value and the compute steps."""
    def build():
        conv = _conv2d_nchw(F.const(x), F.const(w), None if b is None else F.const(b), strides, pads, dilations, group)
        out = build_tail(conv, F.const(r))
        return list(out) if isinstance(out, tuple) else [out]
    values, profile = profiled(build, backend)
    return values, compute_steps(profile)


@pytest.mark.parametrize("code,params", ACTIVATIONS)
@pytest.mark.parametrize("n,c,h,w,cout,kh,kw,strides,pads,group,scheme", ACT_LAYERS)
def test_residual_op_with_each_activation(vulkan, rng, n, c, h, w, cout, kh, kw, strides, pads, group, scheme, code,
                                          params):
    """The Conv2D op with a residual input on Vulkan against the exact value, and the CPU kernel of
    the same op against the CPU's conv followed by the add and activation (bit for bit where the
    activation is exact)."""
    x, wt, b = conv_case(rng, n, c, h, w, cout, kh, kw, group, scale=3.0)
    z, delta = exact_conv(x, wt, b, strides, pads, (1, 1), group)
    r = (rng.standard_normal(z.shape) * 3).astype(np.float32)
    p0, p1 = activation_params(code, params)

    def build():
        return [_conv2d_nchw(F.const(x), F.const(wt), F.const(b), strides, pads, (1, 1), group, code,
                             residual=F.const(r), **params)]
    (ours,), profile = profiled(build, "vulkan")
    steps = compute_steps(profile)
    assert [(s["op"], s["backend"], s["fallback"]) for s in steps] == [("Conv2D", "vulkan", False)]
    assert steps[0]["scheme"].startswith(scheme) and steps[0]["scheme"].endswith(" residual")
    s, bound = residual_bound(z, delta, r, code, p0, p1)
    assert np.all(np.abs(ours - activate(s, code, p0, p1)) <= bound)

    (cpu_fused,), _ = profiled(build, "cpu")
    (cpu_conv,), _ = profiled(lambda: [_conv2d_nchw(F.const(x), F.const(wt), F.const(b), strides, pads, (1, 1),
                                                    group)], "cpu")
    summed = cpu_conv + r  # float32, rounded once as the kernel does
    if code in (NONE, RELU, CLIP):
        np.testing.assert_array_equal(cpu_fused, activate(summed.astype(np.float64), code, p0, p1).astype(np.float32))
    assert np.all(np.abs(cpu_fused - ours) <= 2 * bound)


# Conv -> Add -> activation built from expr ops, fused on Vulkan into one step.
FUSED_LAYERS = [g for g in GEOMETRIES if g.id in ("1x1", "1x1-group2", "1x1-stride2", "3x3-stride2-batch2",
                                                   "3x3-asym-pad", "3x3-group2", "3x3-split4", "1x1-split2",
                                                   "dw3x3-stride2", "dw-multiplier3")]
GRAPH_ACTIVATIONS = {"none": (lambda v: v, NONE, {}), "relu": (F.relu, RELU, {}),
                     "relu6": (F.relu6, CLIP, {"clip_min": 0.0, "clip_max": 6.0}),
                     "sigmoid": (F.sigmoid, SIGMOID, {}), "gelu": (lambda v: F.gelu(v), GELU, {})}


@pytest.mark.parametrize("n,c,h,w,cout,kh,kw,strides,pads,dilations,group,scheme", FUSED_LAYERS)
@pytest.mark.parametrize("act", ["relu", "none"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
def test_add_after_conv_is_fused(vulkan, rng, n, c, h, w, cout, kh, kw, strides, pads, dilations, group, scheme,
                                 act, bias):
    """One step on Vulkan, within the bound of the exact value and of the CPU's unfused graph."""
    x, wt, b = conv_case(rng, n, c, h, w, cout, kh, kw, group, bias, scale=3.0)
    z, delta = exact_conv(x, wt, b, strides, pads, dilations, group)
    r = (rng.standard_normal(z.shape) * 3).astype(np.float32)
    fn, code, params = GRAPH_ACTIVATIONS[act]
    p0, p1 = activation_params(code, params)
    # The residual on either side of the add.
    tail = (lambda conv, res: fn(F.add(conv, res))) if bias else (lambda conv, res: fn(F.add(res, conv)))
    (ours,), steps = residual_step("vulkan", x, wt, b, r, strides, pads, dilations, group, tail)
    assert [(s["op"], s["backend"], s["fallback"]) for s in steps] == [("Conv2D", "vulkan", False)]
    assert steps[0]["scheme"].startswith(scheme) and steps[0]["scheme"].endswith(" residual")
    s, bound = residual_bound(z, delta, r, code, p0, p1)
    assert np.all(np.abs(ours - activate(s, code, p0, p1)) <= bound)
    (theirs,), cpu_steps = residual_step("cpu", x, wt, b, r, strides, pads, dilations, group, tail)
    assert [st["op"] for st in cpu_steps] == ["Conv2D", "Fused(Add,Relu)" if act == "relu" else "Fused(Add)"]
    assert "winograd" not in cpu_steps[0]["scheme"]
    assert np.all(np.abs(ours - theirs) <= 2 * bound)


@pytest.mark.parametrize("act", ["relu6", "sigmoid", "gelu"])
def test_activation_after_the_add_joins(vulkan, rng, act):
    x, wt, b = conv_case(rng, 1, 12, 9, 11, 10, 3, 3, 1, scale=3.0)
    z, delta = exact_conv(x, wt, b, (1, 1), (1, 1, 1, 1), (1, 1), 1)
    r = (rng.standard_normal(z.shape) * 3).astype(np.float32)
    fn, code, params = GRAPH_ACTIVATIONS[act]
    p0, p1 = activation_params(code, params)
    (ours,), steps = residual_step("vulkan", x, wt, b, r, (1, 1), (1, 1, 1, 1), (1, 1), 1,
                                   lambda conv, res: fn(F.add(conv, res)))
    assert [(st["op"], st["backend"]) for st in steps] == [("Conv2D", "vulkan")]
    s, bound = residual_bound(z, delta, r, code, p0, p1)
    assert np.all(np.abs(ours - activate(s, code, p0, p1)) <= bound)


def _unfused_cases():
    # (the residual's shape given the conv output's (1, 6, 7, 7), the tail, expected step ops on vulkan)
    return {
        "broadcast-channel": ((1, 6, 1, 1), lambda conv, res: F.relu(F.add(conv, res)), ["Conv2D", "Fused(Add,Relu)"]),
        "broadcast-rank3": ((6, 7, 7), lambda conv, res: F.add(res, conv), ["Conv2D", "Fused(Add)"]),
        "grows-the-batch": ((3, 6, 7, 7), lambda conv, res: F.relu(F.add(conv, res)), ["Conv2D", "Fused(Add,Relu)"]),
        # The convolution's output is read twice: by the add and as a result.
        "conv-read-twice": ((1, 6, 7, 7), lambda conv, res: (F.relu(F.add(conv, res)), conv),
                            ["Conv2D", "Fused(Add,Relu)"]),
        "conv-read-by-another-op": ((1, 6, 7, 7), lambda conv, res: F.multiply(F.relu(F.add(conv, res)), conv),
                                    ["Conv2D", "Fused(Add,Relu,Mul)"]),
        "conv-added-to-itself": ((1, 6, 7, 7), lambda conv, res: F.add(conv, conv), ["Conv2D", "Fused(Add)"]),
        # The sum is read twice: the add joins the convolution, the activation stays apart.
        "sum-read-twice": ((1, 6, 7, 7), lambda conv, res: (lambda s: (F.relu(s), s))(F.add(conv, res)),
                           ["Conv2D", "Fused(Relu)"]),
    }


@pytest.mark.parametrize("case", list(_unfused_cases()))
def test_what_is_not_fused_stays_correct(vulkan, rng, case):
    shape, tail, ops = _unfused_cases()[case]
    x, wt, b = conv_case(rng, 1, 5, 9, 9, 6, 3, 3, 1)
    r = rng.standard_normal(shape).astype(np.float32)
    ours, steps = residual_step("vulkan", x, wt, b, r, (1, 1), (0, 0, 0, 0), (1, 1), 1, tail)
    assert [st["op"] for st in steps] == ops and all(st["backend"] == "vulkan" for st in steps)
    assert steps[0]["scheme"].endswith(" residual") == (case == "sum-read-twice")
    theirs, _ = residual_step("cpu", x, wt, b, r, (1, 1), (0, 0, 0, 0), (1, 1), 1, tail)
    # Both sides within twice the conv's bound of the exact value, then the same exact add, relu and product.
    z, delta = exact_conv(x, wt, b, (1, 1), (0, 0, 0, 0), (1, 1), 1)
    for o, t in zip(ours, theirs):
        assert o.shape == t.shape
        scale = 2 * np.max(np.abs(z) + delta) + np.max(np.abs(r))
        assert np.all(np.abs(o - t) <= 2 * np.max(delta) * (1 + scale) + 4 * U32 * scale ** 2)


@pytest.mark.parametrize("residual, inputs, error, match", [
    ((1, 4, 5, 6), 4, ValueError, r"Conv2D: residual must have the output's shape \(1, 4, 5, 5\), got \(1, 4, 5, 6\)"),
    ((4, 5, 5), 4, ValueError, r"Conv2D: residual must have the output's shape"),
    ("float64", 4, TypeError, "Conv2D: residual must be float32, got float64"),
    ((1, 4, 5, 5), 2, ValueError, "Conv2D: attribute residual=1 needs the residual as the last of 3 or 4 inputs"),
    (None, 4, ValueError, r"Conv2D: a fourth input \(the residual\) needs the attribute residual=1"),
])
def test_bad_residual_raises(residual, inputs, error, match):
    x = F.const(np.zeros((1, 3, 5, 5), np.float32))
    w, b = F.const(np.zeros((4, 3, 1, 1), np.float32)), F.const(np.zeros(4, np.float32))
    r = F.const(np.zeros((1, 4, 5, 5), np.float64 if residual == "float64" else np.float32)
                if isinstance(residual, str) or residual is None else np.zeros(residual, np.float32))
    ins = [x, w, b, r][:inputs]
    attrs = {} if residual is None else {"residual": 1}
    with pytest.raises(error, match=match):
        mnnpy._core.op("Conv2D", ins, attrs)


def test_residual_without_bias_on_the_cpu_and_its_gradient(rng):
    """[x, w, r] with residual=1 (no bias) on the CPU: the value and the gradients are those of the
    unfused graph relu(conv + r), bit for bit (the same roundings, the same gradient ops)."""
    x, wt, _ = conv_case(rng, 2, 3, 6, 5, 4, 3, 3, 1, bias=False)
    r = rng.standard_normal((2, 4, 4, 3)).astype(np.float32)
    g = F.const(rng.standard_normal((2, 4, 4, 3)).astype(np.float32))

    def value_and_grads(fused):
        xv, wv, rv = (F.placeholder(v.shape) for v in (x, wt, r))
        for var, v in zip((xv, wv, rv), (x, wt, r)):
            var.write(v)
        if fused:
            y = _conv2d_nchw(xv, wv, None, (1, 1), (0, 0, 0, 0), (1, 1), 1, RELU, residual=rv)
        else:
            y = F.relu(F.add(_conv2d_nchw(xv, wv, None, (1, 1), (0, 0, 0, 0), (1, 1), 1), rv))
        return mnnpy.eval(y, *mnnpy.expr.grad([y], [xv, wv, rv], [g]))

    with mnnpy.backend("cpu"):
        for ours, theirs in zip(value_and_grads(True), value_and_grads(False)):
            np.testing.assert_array_equal(ours, theirs)


def test_resnet_basic_block_against_torch(vulkan, rng):
    """torchvision's BasicBlock (its batch norms folded into the convolutions, in float64, then
    rounded to float32 weights) as relu(conv2(relu(conv1(x))) + x): two Vulkan steps, the second
    with the residual. Against torch's conv2d in float64 with those weights: conv1's error Delta1 (relu keeps it),
    carried through conv2 as conv(Delta1, |w2|), plus conv2's own Delta2 over |y1| + Delta1, plus the add's rounding."""
    from torchvision.models.resnet import BasicBlock
    torch.manual_seed(int(rng.integers(1 << 30)))
    block = BasicBlock(8, 8).double().eval()
    for bn in (block.bn1, block.bn2):
        bn.running_mean.normal_(0, 0.5)
        bn.running_var.uniform_(0.5, 2)
        bn.weight.data.uniform_(0.5, 1.5)
        bn.bias.data.normal_(0, 0.5)

    def folded(conv, bn):
        scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
        w = (conv.weight * scale[:, None, None, None]).detach().numpy().astype(np.float32)
        return w, (bn.bias - bn.running_mean * scale).detach().numpy().astype(np.float32)
    (w1, b1), (w2, b2) = folded(block.conv1, block.bn1), folded(block.conv2, block.bn2)
    x = rng.standard_normal((2, 8, 10, 9)).astype(np.float32)
    pads = (1, 1, 1, 1)

    def build():
        xv = F.const(x)
        y1 = _conv2d_nchw(xv, F.const(w1), F.const(b1), (1, 1), pads, (1, 1), 1, RELU)
        y2 = _conv2d_nchw(y1, F.const(w2), F.const(b2), (1, 1), pads, (1, 1), 1)
        return [F.relu(F.add(y2, xv))]
    (ours,), profile = profiled(build, "vulkan")
    steps = compute_steps(profile)
    assert [(s["op"], s["backend"]) for s in steps] == [("Conv2D", "vulkan")] * 2
    assert steps[1]["scheme"].endswith(" residual") and not steps[0]["scheme"].endswith(" residual")
    z1, delta1 = exact_conv(x, w1, b1, (1, 1), pads, (1, 1), 1)
    y1 = np.maximum(z1, 0)
    z2, delta2 = exact_conv(y1 + delta1, np.abs(w2), np.abs(b2), (1, 1), pads, (1, 1), 1)  # over |y1| + Delta1
    carried = exact_conv(delta1, np.abs(w2), None, (1, 1), pads, (1, 1), 1)[0]
    s = exact_conv(y1, w2, b2, (1, 1), pads, (1, 1), 1)[0] + x
    bound = carried + delta2 + U32 * (np.abs(s) + carried + delta2)
    assert np.all(np.abs(ours - np.maximum(s, 0)) <= bound)


def test_resnet18_has_no_separate_add_on_vulkan(vulkan, rng):
    """Every residual add of torchvision's resnet18 (and the relu after it) runs inside a
    convolution: 8 blocks, 8 Conv2D steps with a residual, no Add step."""
    from model_zoo import export_torchvision
    from test_vulkan_models import check as check_model
    steps = check_model(export_torchvision("resnet18", 64), {"input": rng.standard_normal((1, 3, 64, 64)).astype(np.float32)})
    assert not [s for s in steps if "Add" in s["op"] and s["shape"].count(",") == 3]  # the classifier's bias stays
    assert sum(s["op"] == "Conv2D" and s["scheme"].endswith(" residual") for s in steps) == 8
    assert all(s["backend"] == "vulkan" for s in steps if s["op"] == "Conv2D")
