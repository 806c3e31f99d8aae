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
