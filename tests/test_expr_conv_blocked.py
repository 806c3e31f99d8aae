"""Conv2DBlocked (mnnpy._expr_layout._conv2d_blocked) against torch.nn.functional.conv2d in float64:
the direct kernel (1x1 and KxK, strides, padding, dilation, NCHW first layers), Winograd
F(4x4, 3x3) and F(2x2, 3x3), the depthwise kernel, fused activations and residuals, weights fed at run time, thread counts, the portable SIMD
path, and errors. Blocked inputs are made, and outputs read back, with NumPy."""
import math

import numpy as np
import pytest

import mnnpy
from mnnpy import expr as F
from mnnpy._expr_layout import _conv2d_blocked
from test_expr_conv import (ACT_CLIP, ACT_GELU, ACT_HARDSIGMOID, ACT_HARDSWISH, ACT_NONE, ACT_RELU, ACT_SIGMOID,
                            ACT_SILU, ACTIVATIONS, activation_ref)
from helpers import blocked, unblocked

torch = pytest.importorskip("torch")

RTOL = ATOL = 1e-4


def conv_ref(x, w, b, strides, pads, dilations, group=1):
    """float64 convolution through torch; pads are (top, left, bottom, right)."""
    xt = torch.nn.functional.pad(torch.from_numpy(x.astype(np.float64)), (pads[1], pads[3], pads[0], pads[2]))
    return torch.nn.functional.conv2d(xt, torch.from_numpy(w.astype(np.float64)),
                                      torch.from_numpy(b.astype(np.float64)), tuple(strides), 0, tuple(dilations),
                                      group).numpy()


def make_case(rng, n, c, h, w, cout, kh, kw, group=1):
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    # Scaled as common initializations are, so outputs stay ~N(0, 1) whatever the depth.
    wt = (rng.standard_normal((cout, c // group, kh, kw)) / math.sqrt(c // group * kh * kw)).astype(np.float32)
    b = rng.standard_normal(cout).astype(np.float32)
    return x, wt, b


def run_blocked(x, w, b, strides, pads, dilations, group=1, activation=ACT_NONE, nchw=False, residual=None,
                constant_weights=True, **act):
    """Runs Conv2DBlocked on NCHW data x (blocked first unless nchw) and returns the NCHW result."""
    xin = x if nchw else blocked(x)
    xv = F.placeholder(xin.shape)
    xv.write(xin)
    if constant_weights:
        wv, bv = F.const(w), F.const(b)
    else:
        wv, bv = F.placeholder(w.shape), F.placeholder(b.shape)
        wv.write(w)
        bv.write(b)
    rv = None if residual is None else F.const(blocked(residual))
    y = _conv2d_blocked(xv, wv, bv, strides, pads, dilations, group, activation, residual=rv, **act).read()
    assert y.dtype == np.float32 and y.ndim == 5 and y.shape[-1] == 8
    return unblocked(y)


def expected(x, w, b, strides, pads, dilations, group=1, activation=ACT_NONE, residual=None, **act):
    y = conv_ref(x, w, b, strides, pads, dilations, group)
    if residual is not None:
        y = y + residual.astype(np.float64)
    return activation_ref(y, activation, **act)


# (n, c, h, w, cout, kh, kw, strides, pads, dilations, nchw)
DIRECT_CASES = [
    pytest.param(1, 16, 8, 8, 32, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), False, id="1x1"),
    pytest.param(2, 24, 13, 17, 40, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), False, id="1x1-odd-batch2-cout40"),
    pytest.param(1, 16, 9, 9, 24, 1, 1, (2, 2), (0, 0, 0, 0), (1, 1), False, id="1x1-s2"),
    pytest.param(1, 32, 14, 15, 16, 1, 1, (2, 2), (0, 0, 0, 0), (1, 1), False, id="1x1-s2-odd"),
    pytest.param(1, 8, 6, 7, 8, 1, 1, (1, 1), (1, 0, 2, 1), (1, 1), False, id="1x1-padded"),
    pytest.param(1, 320, 7, 7, 72, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), False, id="1x1-channel-chunks"),
    pytest.param(1, 16, 1, 1, 24, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), False, id="1x1-map1x1"),
    pytest.param(1, 16, 13, 17, 40, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), False, id="3x3"),
    pytest.param(2, 32, 13, 17, 64, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), False, id="3x3-s2-batch2"),
    pytest.param(1, 96, 9, 10, 24, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), False, id="3x3-channel-chunks"),
    pytest.param(1, 64, 7, 7, 64, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), False, id="3x3-7x7"),
    pytest.param(1, 16, 1, 1, 16, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), False, id="3x3-map1x1"),
    pytest.param(1, 8, 5, 3, 16, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), False, id="3x3-narrower-than-tile"),
    pytest.param(1, 16, 11, 13, 8, 3, 3, (1, 1), (0, 1, 2, 1), (1, 1), False, id="3x3-asym-pad"),
    pytest.param(1, 16, 11, 13, 24, 3, 3, (1, 1), (0, 0, 0, 0), (1, 1), False, id="3x3-nopad"),
    pytest.param(1, 8, 6, 9, 16, 3, 3, (1, 1), (4, 3, 4, 5), (1, 1), False, id="3x3-pad-beyond-reach"),
    pytest.param(1, 16, 13, 17, 16, 3, 3, (1, 1), (2, 2, 2, 2), (2, 2), False, id="3x3-dilation2"),
    # Dilations past the map (ASPP heads): every column's outer taps lie in the padding, or the
    # border columns' taps differ from the middle ones (spans per row and column segment).
    pytest.param(1, 24, 14, 14, 40, 3, 3, (1, 1), (24, 24, 24, 24), (24, 24), False, id="3x3-dilation-past-map"),
    pytest.param(1, 16, 14, 14, 24, 3, 3, (1, 1), (12, 12, 12, 12), (12, 12), False, id="3x3-dilation12-14x14"),
    pytest.param(2, 16, 13, 19, 16, 3, 3, (2, 1), (6, 3, 6, 9), (6, 9), False, id="3x3-dilation-stride-asym"),
    pytest.param(1, 8, 9, 30, 16, 3, 5, (1, 2), (2, 8, 2, 8), (1, 4), False, id="3x5-dilation4-s2"),
    pytest.param(1, 8, 11, 13, 24, 5, 5, (1, 1), (2, 2, 2, 2), (1, 1), False, id="5x5"),
    pytest.param(1, 16, 6, 40, 32, 2, 5, (1, 3), (0, 2, 1, 0), (1, 2), False, id="rect-kernel"),
    pytest.param(1, 3, 30, 30, 64, 7, 7, (2, 2), (3, 3, 3, 3), (1, 1), True, id="nchw-7x7-s2-c3"),
    pytest.param(1, 3, 32, 31, 32, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), True, id="nchw-3x3-s2-c3"),
    pytest.param(2, 5, 9, 11, 24, 3, 3, (1, 1), (1, 2, 0, 1), (1, 1), True, id="nchw-c5-asym-batch2"),
    pytest.param(1, 12, 8, 9, 16, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), True, id="nchw-1x1-c12"),
    pytest.param(1, 3, 12, 13, 8, 3, 3, (1, 1), (2, 2, 2, 2), (2, 2), True, id="nchw-dilation2"),
    pytest.param(1, 1, 10, 10, 8, 5, 5, (2, 2), (2, 2, 2, 2), (1, 1), True, id="nchw-c1-5x5"),
]


@pytest.mark.parametrize("n,c,h,w,cout,kh,kw,strides,pads,dilations,nchw", DIRECT_CASES)
def test_direct_matches_torch(rng, n, c, h, w, cout, kh, kw, strides, pads, dilations, nchw):
    x, wt, b = make_case(rng, n, c, h, w, cout, kh, kw)
    ours = run_blocked(x, wt, b, strides, pads, dilations, nchw=nchw)
    ref = expected(x, wt, b, strides, pads, dilations)
    assert ours.shape == ref.shape
    np.testing.assert_allclose(ours, ref, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("n,c,h,w,cout,kh,kw,strides,pads,dilations,nchw", DIRECT_CASES[::3])
def test_direct_placeholder_weights(rng, n, c, h, w, cout, kh, kw, strides, pads, dilations, nchw):
    # Weights fed at run time: packed into scratch on every run.
    x, wt, b = make_case(rng, n, c, h, w, cout, kh, kw)
    ours = run_blocked(x, wt, b, strides, pads, dilations, nchw=nchw, constant_weights=False)
    np.testing.assert_allclose(ours, expected(x, wt, b, strides, pads, dilations), rtol=RTOL, atol=ATOL)


# Winograd (3x3, stride 1, both channel counts >= 32): F(4x4, 3x3) on maps with enough tiles,
# F(2x2, 3x3) on small ones. Tiles cut by the map's edge, batches, asymmetric and no padding,
# channel counts that end on an odd output block, several tile blocks.
# (n, c, h, w, cout, pads, scheme)
WINOGRAD_CASES = [
    pytest.param(1, 32, 20, 20, 48, (1, 1, 1, 1), "blocked_winograd", id="f4"),
    pytest.param(2, 40, 13, 17, 56, (1, 1, 1, 1), "blocked_winograd", id="f4-odd-map-batch2-odd-blocks"),
    pytest.param(1, 32, 15, 18, 32, (0, 1, 2, 1), "blocked_winograd", id="f4-asym-pad"),
    pytest.param(1, 48, 22, 21, 40, (0, 0, 0, 0), "blocked_winograd", id="f4-nopad"),
    pytest.param(1, 64, 58, 58, 32, (1, 1, 1, 1), "blocked_winograd", id="f4-several-blocks"),
    pytest.param(1, 64, 7, 7, 64, (1, 1, 1, 1), "blocked_winograd_2x2", id="f2-7x7"),
    pytest.param(1, 32, 9, 6, 40, (2, 1, 0, 1), "blocked_winograd_2x2", id="f2-asym-pad"),
]


def winograd_scheme(x, wt, b, pads):
    xv = F.placeholder(blocked(x).shape)
    xv.write(blocked(x))
    return conv_profile(_conv2d_blocked(xv, F.const(wt), F.const(b), (1, 1), pads, (1, 1), 1))[1]["scheme"]


@pytest.mark.parametrize("n,c,h,w,cout,pads,scheme", WINOGRAD_CASES)
def test_winograd_matches_torch(rng, n, c, h, w, cout, pads, scheme):
    x, wt, b = make_case(rng, n, c, h, w, cout, 3, 3)
    assert winograd_scheme(x, wt, b, pads) == scheme
    ho, wo = h + pads[0] + pads[2] - 2, w + pads[1] + pads[3] - 2
    res = rng.standard_normal((n, cout, ho, wo)).astype(np.float32)
    args = ((1, 1), pads, (1, 1))
    for code, residual in ((ACT_NONE, None), (ACT_RELU, res), (ACT_SILU, res)):
        ours = run_blocked(x, wt, b, *args, activation=code, residual=residual)
        ref = expected(x, wt, b, *args, activation=code, residual=residual)
        np.testing.assert_allclose(ours, ref, rtol=RTOL, atol=ATOL)
    ours = run_blocked(x, wt, b, *args, constant_weights=False)  # packed into scratch on every run
    np.testing.assert_allclose(ours, expected(x, wt, b, *args), rtol=RTOL, atol=ATOL)


# Depthwise: 3x3 and 5x5 at stride 1 and 2 run compile-time specialized tiles, the rest the generic
# one. Widths below, at and above a tile, 1x1 maps, asymmetric padding, padding past the kernel.
# (n, c, h, w, k, stride, pads, dilation)
DEPTHWISE_CASES = [
    pytest.param(1, 16, 15, 17, 3, 1, (1, 1, 1, 1), 1, id="3x3"),
    pytest.param(2, 24, 13, 33, 3, 1, (1, 1, 1, 1), 1, id="3x3-batch2-wide"),
    pytest.param(1, 8, 10, 19, 3, 1, (0, 0, 0, 0), 1, id="3x3-nopad"),
    pytest.param(1, 8, 9, 18, 3, 1, (0, 2, 1, 0), 1, id="3x3-asym-pad"),
    pytest.param(1, 16, 7, 7, 3, 1, (1, 1, 1, 1), 1, id="3x3-7x7"),
    pytest.param(2, 8, 1, 1, 3, 1, (1, 1, 1, 1), 1, id="3x3-map1x1-batch2"),
    pytest.param(1, 8, 6, 3, 3, 1, (1, 1, 1, 1), 1, id="3x3-narrower-than-tile"),
    pytest.param(2, 24, 17, 35, 3, 2, (1, 1, 1, 1), 1, id="3x3-s2-batch2"),
    pytest.param(1, 16, 16, 16, 3, 2, (0, 0, 1, 1), 1, id="3x3-s2-same"),
    pytest.param(1, 8, 6, 5, 3, 2, (1, 1, 1, 1), 1, id="3x3-s2-tiny"),
    pytest.param(1, 16, 11, 29, 5, 1, (2, 2, 2, 2), 1, id="5x5"),
    pytest.param(2, 8, 21, 37, 5, 2, (2, 2, 2, 2), 1, id="5x5-s2-batch2"),
    pytest.param(1, 8, 8, 9, 5, 2, (1, 2, 3, 0), 1, id="5x5-s2-asym-pad"),
    pytest.param(1, 8, 12, 23, 7, 1, (3, 3, 3, 3), 1, id="7x7-generic"),
    pytest.param(1, 8, 13, 27, 3, 3, (1, 1, 1, 1), 1, id="3x3-s3-generic"),
    pytest.param(1, 8, 14, 25, 3, 1, (2, 2, 2, 2), 2, id="3x3-dilation2-generic"),
    pytest.param(1, 8, 15, 11, 3, 2, (3, 0, 2, 4), 1, id="3x3-s2-pad-beyond-reach"),
]


@pytest.mark.parametrize("n,c,h,w,k,stride,pads,dilation", DEPTHWISE_CASES)
@pytest.mark.parametrize("code", [ACT_NONE, ACT_CLIP, ACT_HARDSWISH], ids=["none", "relu6", "hardswish"])
def test_depthwise_matches_torch(rng, n, c, h, w, k, stride, pads, dilation, code):
    x, wt, b = make_case(rng, n, c, h, w, c, k, k, group=c)
    strides, dilations = (stride, stride), (dilation, dilation)
    ours = run_blocked(x, wt, b, strides, pads, dilations, c, activation=code)
    ref = expected(x, wt, b, strides, pads, dilations, c, activation=code)
    assert ours.shape == ref.shape
    np.testing.assert_allclose(ours, ref, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("n,c,h,w,k,stride,pads,dilation", DEPTHWISE_CASES[::4])
def test_depthwise_placeholder_weights(rng, n, c, h, w, k, stride, pads, dilation):
    x, wt, b = make_case(rng, n, c, h, w, c, k, k, group=c)
    strides, dilations = (stride, stride), (dilation, dilation)
    ours = run_blocked(x, wt, b, strides, pads, dilations, c, constant_weights=False)
    np.testing.assert_allclose(ours, expected(x, wt, b, strides, pads, dilations, c), rtol=RTOL, atol=ATOL)


ACT_LAYERS = [
    # (n, c, h, w, cout, k, stride, pad, group, nchw)
    pytest.param(1, 16, 7, 9, 24, 3, 1, 1, 1, False, id="3x3"),
    pytest.param(1, 16, 8, 8, 40, 1, 1, 0, 1, False, id="1x1"),
    pytest.param(1, 3, 12, 12, 16, 3, 2, 1, 1, True, id="nchw"),
    pytest.param(1, 24, 15, 17, 24, 3, 2, 1, 24, False, id="depthwise"),
]


@pytest.mark.parametrize("code,params", ACTIVATIONS)
@pytest.mark.parametrize("n,c,h,w,cout,k,stride,pad,group,nchw", ACT_LAYERS)
def test_fused_activation(rng, code, params, n, c, h, w, cout, k, stride, pad, group, nchw):
    x, wt, b = make_case(rng, n, c, h, w, cout, k, k, group)
    x *= 3  # outputs spread over every branch of the activations
    args = ((stride, stride), (pad,) * 4, (1, 1), group)
    ours = run_blocked(x, wt, b, *args, activation=code, nchw=nchw, **params)
    np.testing.assert_allclose(ours, expected(x, wt, b, *args, activation=code, **params), rtol=RTOL, atol=ATOL)


RESIDUAL_LAYERS = [
    # (n, c, h, w, cout, k, stride, pad, group, nchw)
    pytest.param(2, 16, 9, 11, 40, 1, 1, 0, 1, False, id="1x1-batch2"),
    pytest.param(1, 16, 9, 11, 24, 3, 1, 1, 1, False, id="3x3"),
    pytest.param(1, 96, 9, 10, 32, 3, 2, 1, 1, False, id="3x3-s2-channel-chunks"),
    pytest.param(1, 320, 5, 5, 16, 1, 1, 0, 1, False, id="1x1-channel-chunks"),
    pytest.param(1, 3, 14, 14, 16, 3, 2, 1, 1, True, id="nchw"),
    pytest.param(1, 24, 13, 15, 24, 3, 1, 1, 24, False, id="depthwise"),
    pytest.param(1, 16, 13, 15, 16, 5, 2, 2, 16, False, id="depthwise-5x5-s2"),
]


@pytest.mark.parametrize("code", [ACT_NONE, ACT_RELU, ACT_SILU], ids=["none", "relu", "silu"])
@pytest.mark.parametrize("n,c,h,w,cout,k,stride,pad,group,nchw", RESIDUAL_LAYERS)
def test_residual(rng, code, n, c, h, w, cout, k, stride, pad, group, nchw):
    x, wt, b = make_case(rng, n, c, h, w, cout, k, k, group)
    ho, wo = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
    res = rng.standard_normal((n, cout, ho, wo)).astype(np.float32)
    args = ((stride, stride), (pad,) * 4, (1, 1), group)
    ours = run_blocked(x, wt, b, *args, activation=code, nchw=nchw, residual=res)
    np.testing.assert_allclose(ours, expected(x, wt, b, *args, activation=code, residual=res), rtol=RTOL, atol=ATOL)


def test_rerun_with_new_input_and_weights(rng):
    x, wt, b = make_case(rng, 1, 16, 10, 10, 24, 3, 3)
    xv, wv, bv = F.placeholder((1, 2, 10, 10, 8)), F.placeholder(wt.shape), F.placeholder(b.shape)
    y = _conv2d_blocked(xv, wv, bv, (1, 1), (1, 1, 1, 1), (1, 1), 1, ACT_RELU)
    for _ in range(3):
        xv.write(blocked(x))
        wv.write(wt)
        bv.write(b)
        ref = expected(x, wt, b, (1, 1), (1, 1, 1, 1), (1, 1), activation=ACT_RELU)
        np.testing.assert_allclose(unblocked(y.read()), ref, rtol=RTOL, atol=ATOL)
        x, wt, b = make_case(rng, 1, 16, 10, 10, 24, 3, 3)


THREAD_LAYERS = [
    # (n, c, h, w, cout, k, stride, pad, group, nchw): row splits, panel splits, depthwise row chunks
    (2, 32, 20, 20, 48, 3, 1, 1, 1, False),
    (1, 64, 7, 7, 256, 3, 1, 1, 1, False),
    (1, 32, 40, 40, 64, 1, 1, 0, 1, False),
    (1, 3, 40, 40, 32, 7, 2, 3, 1, True),
    (1, 8, 30, 30, 8, 3, 1, 1, 8, False),
    (2, 48, 11, 11, 48, 5, 2, 2, 48, False),
]


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_thread_counts_agree(rng, threads):
    before = mnnpy.runtime_info()["threads"]
    mnnpy.set_num_threads(threads)
    try:
        for n, c, h, w, cout, k, stride, pad, group, nchw in THREAD_LAYERS:
            x, wt, b = make_case(rng, n, c, h, w, cout, k, k, group)
            args = ((stride, stride), (pad,) * 4, (1, 1), group)
            ours = run_blocked(x, wt, b, *args, activation=ACT_RELU, nchw=nchw)
            np.testing.assert_allclose(ours, expected(x, wt, b, *args, activation=ACT_RELU), rtol=RTOL, atol=ATOL)
    finally:
        mnnpy.set_num_threads(before)


PORTABLE_LAYERS = [
    # (n, c, h, w, cout, kh, kw, strides, pads, dilations, group, nchw)
    pytest.param(1, 16, 9, 11, 40, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, False, id="3x3"),
    pytest.param(1, 96, 9, 11, 24, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1, False, id="1x1"),
    pytest.param(1, 3, 17, 15, 16, 7, 7, (2, 2), (3, 3, 3, 3), (1, 1), 1, True, id="nchw-7x7-s2"),
    pytest.param(1, 16, 13, 14, 16, 3, 3, (1, 1), (2, 2, 2, 2), (2, 2), 1, False, id="3x3-dilation2"),
    pytest.param(1, 16, 14, 14, 24, 3, 3, (1, 1), (12, 12, 12, 12), (12, 12), 1, False, id="3x3-dilation12"),
    pytest.param(1, 32, 20, 19, 40, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, False, id="winograd"),
    pytest.param(1, 32, 7, 7, 40, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, False, id="winograd-2x2"),
    pytest.param(1, 24, 15, 17, 24, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 24, False, id="dw3x3"),
    pytest.param(1, 24, 15, 17, 24, 5, 5, (2, 2), (2, 2, 2, 2), (1, 1), 24, False, id="dw5x5-s2"),
    pytest.param(1, 16, 12, 13, 16, 3, 3, (1, 1), (2, 2, 2, 2), (2, 2), 16, False, id="dw-dilation2"),
]


@pytest.mark.parametrize("n,c,h,w,cout,kh,kw,strides,pads,dilations,group,nchw", PORTABLE_LAYERS)
def test_portable_simd_agrees(rng, request, n, c, h, w, cout, kh, kw, strides, pads, dilations, group, nchw):
    x, wt, b = make_case(rng, n, c, h, w, cout, kh, kw, group)
    res = None
    if not nchw:
        ho = (h + pads[0] + pads[2] - dilations[0] * (kh - 1) - 1) // strides[0] + 1
        wo = (w + pads[1] + pads[3] - dilations[1] * (kw - 1) - 1) // strides[1] + 1
        res = rng.standard_normal((n, cout, ho, wo)).astype(np.float32)
    args = (strides, pads, dilations, group)
    best = run_blocked(x, wt, b, *args, activation=ACT_SILU, nchw=nchw, residual=res)
    request.getfixturevalue("portable_simd")
    portable = run_blocked(x, wt, b, *args, activation=ACT_SILU, nchw=nchw, residual=res)
    np.testing.assert_allclose(portable, best, rtol=RTOL, atol=ATOL)
    ref = expected(x, wt, b, *args, activation=ACT_SILU, residual=res)
    np.testing.assert_allclose(portable, ref, rtol=RTOL, atol=ATOL)


def test_chain_with_layout_ops(rng):
    """A MobileNetV2 block kept blocked end to end: NCHW in, expand 1x1 + relu6, depthwise 3x3 + relu6,
    project 1x1 with the block's input as residual, NCHW out through the layout conversion ops."""
    from mnnpy._expr_layout import _from_blocked, _to_blocked
    if not all(name in mnnpy._core.registered_ops() for name in ("ToBlockedChannels", "FromBlockedChannels")):
        pytest.skip("layout conversion ops not built")
    x, w1, b1 = make_case(rng, 1, 16, 13, 11, 48, 1, 1)
    _, w2, b2 = make_case(rng, 1, 48, 13, 11, 48, 3, 3, group=48)
    _, w3, b3 = make_case(rng, 1, 48, 13, 11, 16, 1, 1)
    relu6 = {"clip_min": 0.0, "clip_max": 6.0}
    xv = F.placeholder(x.shape)
    xv.write(x)
    xb = _to_blocked(xv)
    h = _conv2d_blocked(xb, F.const(w1), F.const(b1), (1, 1), (0,) * 4, (1, 1), 1, ACT_CLIP, **relu6)
    h = _conv2d_blocked(h, F.const(w2), F.const(b2), (1, 1), (1,) * 4, (1, 1), 48, ACT_CLIP, **relu6)
    y = _from_blocked(_conv2d_blocked(h, F.const(w3), F.const(b3), (1, 1), (0,) * 4, (1, 1), 1, residual=xb))
    ref = expected(x, w1, b1, (1, 1), (0,) * 4, (1, 1), activation=ACT_CLIP, **relu6)
    ref = expected(ref, w2, b2, (1, 1), (1,) * 4, (1, 1), 48, activation=ACT_CLIP, **relu6)
    ref = expected(ref, w3, b3, (1, 1), (0,) * 4, (1, 1), residual=x)
    np.testing.assert_allclose(y.read(), ref, rtol=RTOL, atol=ATOL)


def conv_profile(y):
    """Evaluates y with profiling on and returns (value, the Conv2DBlocked step's profile entry)."""
    mnnpy._core.set_executor_option("profile", True)
    try:
        value = y.read()
        steps = [p for p in mnnpy._core.last_profile() if p["op"] == "Conv2DBlocked"]
    finally:
        mnnpy._core.set_executor_option("profile", False)
    assert len(steps) == 1, steps
    return value, steps[0]


@pytest.mark.parametrize("x_shape,w_shape,strides,pads,group,scheme", [
    ((1, 4, 9, 9, 8), (48, 32, 1, 1), (1, 1), (0, 0, 0, 0), 1, "blocked_pointwise"),
    ((1, 4, 9, 9, 8), (48, 32, 1, 1), (2, 2), (0, 0, 0, 0), 1, "blocked_direct"),
    ((1, 4, 9, 9, 8), (16, 32, 3, 3), (1, 1), (1, 1, 1, 1), 1, "blocked_direct"),
    ((1, 4, 28, 28, 8), (32, 32, 3, 3), (1, 1), (1, 1, 1, 1), 1, "blocked_winograd"),
    ((1, 4, 7, 7, 8), (32, 32, 3, 3), (1, 1), (1, 1, 1, 1), 1, "blocked_winograd_2x2"),
    ((1, 4, 28, 28, 8), (32, 32, 3, 3), (2, 2), (1, 1, 1, 1), 1, "blocked_direct"),
    ((1, 3, 9, 9), (16, 3, 3, 3), (2, 2), (1, 1, 1, 1), 1, "blocked_direct"),
    ((1, 4, 9, 9, 8), (32, 1, 3, 3), (1, 1), (1, 1, 1, 1), 32, "blocked_depthwise"),
])
def test_scheme_and_flops(rng, x_shape, w_shape, strides, pads, group, scheme):
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    b = rng.standard_normal(w_shape[0]).astype(np.float32)
    xv = F.placeholder(x.shape)
    xv.write(x)
    value, step = conv_profile(_conv2d_blocked(xv, F.const(w), F.const(b), strides, pads, (1, 1), group))
    assert step["scheme"] == scheme
    n, cb, ho, wo, _ = value.shape
    assert step["flops"] == 2 * n * cb * 8 * ho * wo * w_shape[1] * w_shape[2] * w_shape[3]


# ------------------------------------------------------------------ errors
def blocked_op(x_shape, w_shape, b_shape, res_shape=None, dtype=np.float32, **attrs):
    inputs = [F.const(np.zeros(x_shape, dtype)), F.const(np.zeros(w_shape, np.float32)),
              F.const(np.zeros(b_shape, np.float32))]
    if res_shape is not None:
        inputs.append(F.const(np.zeros(res_shape, np.float32)))
    return mnnpy._core.op("Conv2DBlocked", inputs, attrs)


@pytest.mark.parametrize("x_shape,w_shape,b_shape,res_shape,attrs,match", [
    ((1, 2, 8, 8, 8), (12, 16, 1, 1), (12,), None, {}, "output channels must be a multiple of 8 for the blocked layout, got 12"),
    ((1, 4, 8, 8, 8), (16, 16, 3, 3), (16,), None, {"group": 2}, "group 2 is not supported"),
    ((1, 4, 8, 8, 8), (64, 1, 3, 3), (64,), None, {"group": 32}, "group 32 is not supported"),
    ((1, 16, 8, 8), (16, 1, 3, 3), (16,), None, {"group": 16}, "depthwise layer needs blocked input"),
    ((1, 2, 8, 8), (16, 2, 3, 3, 1), (16,), None, {}, "weight must be 4-D"),
    ((2, 8, 8), (16, 2, 3, 3), (16,), None, {}, "input must be blocked 5-D"),
    ((1, 1, 2, 8, 8, 8), (16, 8, 3, 3), (16,), None, {}, "input must be blocked 5-D"),
    ((1, 2, 8, 8, 4), (16, 8, 3, 3), (16,), None, {}, "must end in 8 channels"),
    ((1, 2, 8, 8, 8), (16, 8, 3, 3), (16,), None, {}, "input has 16 channels"),
    ((1, 2, 8, 8, 8), (16, 16, 3, 3), (8,), None, {}, r"bias must have shape \(16,\)"),
    ((1, 2, 8, 8, 8), (16, 16, 3, 3), (16,), (1, 2, 8, 8, 8), {}, r"residual must have the output's shape"),
    ((1, 2, 8, 8, 8), (16, 16, 3, 3), (16,), (1, 16, 6, 6), {}, r"residual must have the output's shape"),
    ((1, 2, 2, 2, 8), (16, 16, 3, 3), (16,), None, {}, "output would be empty"),
    ((1, 2, 8, 8, 8), (16, 16, 3, 3), (16,), None, {"strides": [0, 1]}, "Conv2DBlocked: strides must be positive"),
    ((1, 2, 8, 8, 8), (16, 16, 3, 3), (16,), None, {"pads": [1, 1]}, "'pads' needs 4 values"),
    ((1, 2, 8, 8, 8), (16, 16, 3, 3), (16,), None, {"activation": 8}, "unknown activation code"),
])
def test_bad_inputs_raise_value_error(x_shape, w_shape, b_shape, res_shape, attrs, match):
    with pytest.raises(ValueError, match=match):
        blocked_op(x_shape, w_shape, b_shape, res_shape, **attrs)


def test_bad_dtype_and_arity():
    with pytest.raises(TypeError, match="Conv2DBlocked: input must be float32, got float64"):
        blocked_op((1, 2, 8, 8, 8), (16, 16, 3, 3), (16,), dtype=np.float64)
    x = F.const(np.zeros((1, 2, 8, 8, 8), np.float32))
    w = F.const(np.zeros((16, 16, 3, 3), np.float32))
    with pytest.raises(TypeError, match="residual must be float32"):
        mnnpy._core.op("Conv2DBlocked", [x, w, F.const(np.zeros(16, np.float32)),
                                         F.const(np.zeros((1, 2, 6, 6, 8), np.int32))], {})
    with pytest.raises(ValueError):
        mnnpy._core.op("Conv2DBlocked", [x, w], {})  # the bias is required


def test_empty_batch(rng):
    w = rng.standard_normal((16, 16, 3, 3)).astype(np.float32)
    b = np.zeros(16, np.float32)
    y = _conv2d_blocked(F.const(np.zeros((0, 2, 8, 8, 8), np.float32)), F.const(w), F.const(b), (1, 1),
                        (1, 1, 1, 1), (1, 1), 1)
    assert y.read().shape == (0, 2, 8, 8, 8)
