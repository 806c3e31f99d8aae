"""Conv2D (expr.conv2d and the converter entry _conv2d_nchw) against a NumPy reference convolution
(always) and torch.nn.functional.conv2d (when torch is installed): kernel sizes, strides, padding,
dilation, groups, depthwise layers, fused activations, constant and placeholder weights, plan
re-runs, the portable SIMD path, and errors."""
import math

import numpy as np
import pytest

import mnnpy
from mnnpy import expr as F
from mnnpy._expr_conv import _conv2d_nchw

RTOL = ATOL = 1e-4

ACT_NONE, ACT_RELU, ACT_CLIP, ACT_SIGMOID, ACT_SILU, ACT_HARDSWISH, ACT_GELU, ACT_HARDSIGMOID = range(8)

_erf = np.vectorize(math.erf, otypes=[np.float64])  # NumPy has no erf; test arrays are small


def activation_ref(y, code, clip_min=0.0, clip_max=6.0, alpha=0.2, beta=0.5):
    if code == ACT_RELU:
        return np.maximum(y, 0)
    if code == ACT_CLIP:
        return np.clip(y, clip_min, clip_max)
    if code == ACT_SIGMOID:
        return 1 / (1 + np.exp(-y))
    if code == ACT_SILU:
        return y / (1 + np.exp(-y))
    if code == ACT_HARDSWISH:
        return y * np.clip(y + 3, 0, 6) / 6
    if code == ACT_GELU:
        return 0.5 * y * (1 + _erf(y / math.sqrt(2)))
    if code == ACT_HARDSIGMOID:
        return np.clip(alpha * y + beta, 0, 1)
    return y


def conv_ref(x, w, b=None, strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1), group=1):
    """Direct convolution in float64 from sliding windows (NCHW, pads top/left/bottom/right)."""
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    w = w.astype(np.float64)
    cout, cg, kh, kw = w.shape
    n, c = x.shape[:2]
    span = (dilations[0] * (kh - 1) + 1, dilations[1] * (kw - 1) + 1)
    win = np.lib.stride_tricks.sliding_window_view(x, span, axis=(2, 3))
    win = win[:, :, ::strides[0], ::strides[1], ::dilations[0], ::dilations[1]]  # N C Ho Wo kh kw
    ho, wo = win.shape[2:4]
    win = win.reshape(n, group, cg, ho, wo, kh, kw)
    wg = w.reshape(group, cout // group, cg, kh, kw)
    y = np.einsum("ngchwyx,gocyx->ngohw", win, wg).reshape(n, cout, ho, wo)
    if b is not None:
        y = y + b.astype(np.float64)[None, :, None, None]
    return y


def make_case(rng, n, c, h, w, cout, kh, kw, group=1, bias=True):
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    # Weights scaled as in common initializations, so outputs stay ~N(0, 1) whatever the depth.
    wt = (rng.standard_normal((cout, c // group, kh, kw)) / math.sqrt(c // group * kh * kw)).astype(np.float32)
    b = rng.standard_normal(cout).astype(np.float32) if bias else None
    return x, wt, b


def run_conv(x, w, b, strides, pads, dilations, group, activation=0, constant_weights=True, **act):
    xv = F.placeholder(x.shape)
    xv.write(x)
    if constant_weights:
        wv = F.const(w)
        bv = None if b is None else F.const(b)
    else:
        wv = F.placeholder(w.shape)
        wv.write(w)
        bv = None
        if b is not None:
            bv = F.placeholder(b.shape)
            bv.write(b)
    return _conv2d_nchw(xv, wv, bv, strides, pads, dilations, group, activation, **act).read()


# (n, c, h, w, cout, kh, kw, strides, pads, dilations, group)
CASES = [
    pytest.param(1, 16, 8, 8, 32, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1, id="1x1"),
    pytest.param(2, 13, 7, 9, 20, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1, id="1x1-odd-batch2"),
    pytest.param(1, 8, 9, 9, 12, 1, 1, (2, 2), (0, 0, 0, 0), (1, 1), 1, id="1x1-stride2"),
    pytest.param(1, 13, 7, 9, 20, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, id="3x3"),
    pytest.param(2, 3, 7, 9, 5, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), 1, id="3x3-stride2-batch2"),
    pytest.param(1, 8, 11, 13, 7, 3, 3, (1, 1), (0, 1, 2, 1), (1, 1), 1, id="3x3-asym-pad"),
    pytest.param(1, 8, 11, 13, 5, 3, 3, (1, 1), (2, 2, 2, 2), (2, 2), 1, id="3x3-dilation2"),
    pytest.param(1, 8, 11, 13, 6, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 2, id="3x3-group2"),
    pytest.param(1, 3, 30, 30, 64, 7, 7, (2, 2), (3, 3, 3, 3), (1, 1), 1, id="7x7-stride2"),
    pytest.param(1, 64, 9, 9, 70, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, id="3x3-deep"),
    pytest.param(1, 300, 5, 5, 30, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, id="3x3-depth-steps"),
    pytest.param(1, 5, 6, 40, 4, 2, 5, (1, 3), (0, 2, 1, 0), (1, 2), 1, id="rect-kernel"),
    pytest.param(1, 24, 15, 17, 24, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 24, id="dw3x3"),
    pytest.param(2, 13, 7, 9, 13, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), 13, id="dw3x3-stride2"),
    pytest.param(1, 24, 15, 17, 24, 5, 5, (1, 1), (2, 2, 2, 2), (1, 1), 24, id="dw5x5"),
    pytest.param(1, 24, 15, 17, 24, 5, 5, (2, 2), (2, 2, 2, 2), (1, 1), 24, id="dw5x5-stride2"),
    pytest.param(1, 16, 40, 37, 16, 3, 3, (2, 1), (0, 1, 2, 0), (2, 1), 16, id="dw-asym-dilated"),
]


@pytest.mark.parametrize("n,c,h,w,cout,kh,kw,strides,pads,dilations,group", CASES)
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
def test_conv_matches_numpy(rng, n, c, h, w, cout, kh, kw, strides, pads, dilations, group, bias):
    x, wt, b = make_case(rng, n, c, h, w, cout, kh, kw, group, bias)
    ours = run_conv(x, wt, b, strides, pads, dilations, group)
    expected = conv_ref(x, wt, b, strides, pads, dilations, group)
    assert ours.dtype == np.float32 and ours.shape == expected.shape
    np.testing.assert_allclose(ours, expected, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("n,c,h,w,cout,kh,kw,strides,pads,dilations,group", CASES)
def test_placeholder_weights(rng, n, c, h, w, cout, kh, kw, strides, pads, dilations, group):
    # Weights and bias fed at run time: packed on every run instead of once.
    x, wt, b = make_case(rng, n, c, h, w, cout, kh, kw, group)
    ours = run_conv(x, wt, b, strides, pads, dilations, group, constant_weights=False)
    np.testing.assert_allclose(ours, conv_ref(x, wt, b, strides, pads, dilations, group), rtol=RTOL, atol=ATOL)


ACTIVATIONS = [
    pytest.param(ACT_RELU, {}, id="relu"),
    pytest.param(ACT_CLIP, {"clip_min": 0.0, "clip_max": 6.0}, id="relu6"),
    pytest.param(ACT_CLIP, {"clip_min": -0.5, "clip_max": 0.25}, id="clip"),
    pytest.param(ACT_SIGMOID, {}, id="sigmoid"),
    pytest.param(ACT_SILU, {}, id="silu"),
    pytest.param(ACT_HARDSWISH, {}, id="hardswish"),
    pytest.param(ACT_GELU, {}, id="gelu"),
    pytest.param(ACT_HARDSIGMOID, {}, id="hardsigmoid-default"),
    pytest.param(ACT_HARDSIGMOID, {"alpha": 1 / 6, "beta": 0.5}, id="hardsigmoid"),
]
ACT_LAYERS = [
    pytest.param(1, 13, 7, 9, 20, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, id="3x3"),
    pytest.param(1, 16, 8, 8, 30, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1, id="1x1"),
    pytest.param(1, 24, 15, 17, 24, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), 24, id="dw"),
]


@pytest.mark.parametrize("code,params", ACTIVATIONS)
@pytest.mark.parametrize("n,c,h,w,cout,kh,kw,strides,pads,dilations,group", ACT_LAYERS)
def test_fused_activation(rng, code, params, n, c, h, w, cout, kh, kw, strides, pads, dilations, group):
    x, wt, b = make_case(rng, n, c, h, w, cout, kh, kw, group)
    x *= 3  # outputs spread over every branch of the activations
    ours = run_conv(x, wt, b, strides, pads, dilations, group, activation=code, **params)
    expected = activation_ref(conv_ref(x, wt, b, strides, pads, dilations, group), code, **params)
    np.testing.assert_allclose(ours, expected, rtol=RTOL, atol=ATOL)


def test_activation_extremes():
    # Very large pre-activations: sigmoid-like functions saturate instead of producing NaN.
    x = np.array([-200, -90, -30, -5, 0, 5, 30, 90, 200], np.float32).reshape(1, 1, 1, 9)
    w = np.ones((1, 1, 1, 1), np.float32)
    for code in (ACT_SIGMOID, ACT_SILU, ACT_GELU, ACT_HARDSWISH):
        ours = run_conv(x, w, None, (1, 1), (0, 0, 0, 0), (1, 1), 1, activation=code)
        assert np.all(np.isfinite(ours))
        np.testing.assert_allclose(ours, activation_ref(x.astype(np.float64), code), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("group", [1, 8], ids=["gemm", "depthwise"])
def test_rerun_same_plan_with_new_input(rng, group):
    x, wt, b = make_case(rng, 1, 8, 12, 12, 8, 3, 3, group)
    xv = F.placeholder(x.shape)
    y = _conv2d_nchw(xv, F.const(wt), F.const(b), (1, 1), (1, 1, 1, 1), (1, 1), group, ACT_RELU)
    for _ in range(3):
        x = rng.standard_normal(x.shape).astype(np.float32)
        xv.write(x)
        expected = activation_ref(conv_ref(x, wt, b, (1, 1), (1, 1, 1, 1), (1, 1), group), ACT_RELU)
        np.testing.assert_allclose(y.read(), expected, rtol=RTOL, atol=ATOL)


def test_rerun_placeholder_weights_with_new_values(rng):
    x, wt, b = make_case(rng, 1, 6, 10, 10, 9, 3, 3)
    xv, wv, bv = F.placeholder(x.shape), F.placeholder(wt.shape), F.placeholder(b.shape)
    y = _conv2d_nchw(xv, wv, bv, (1, 1), (1, 1, 1, 1), (1, 1), 1)
    xv.write(x)
    for _ in range(2):
        wt = rng.standard_normal(wt.shape).astype(np.float32) / 4
        b = rng.standard_normal(b.shape).astype(np.float32)
        wv.write(wt)
        bv.write(b)
        np.testing.assert_allclose(y.read(), conv_ref(x, wt, b, (1, 1), (1, 1, 1, 1)), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_thread_counts_agree(rng, threads):
    x, wt, b = make_case(rng, 2, 32, 20, 20, 48, 3, 3)
    before = mnnpy.runtime_info()["threads"]
    mnnpy.set_num_threads(threads)
    try:
        ours = run_conv(x, wt, b, (1, 1), (1, 1, 1, 1), (1, 1), 1, activation=ACT_RELU)
    finally:
        mnnpy.set_num_threads(before)
    expected = activation_ref(conv_ref(x, wt, b, (1, 1), (1, 1, 1, 1)), ACT_RELU)
    np.testing.assert_allclose(ours, expected, rtol=RTOL, atol=ATOL)


PORTABLE_LAYERS = [
    pytest.param(1, 13, 9, 11, 20, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, id="3x3"),
    pytest.param(1, 16, 9, 11, 30, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1, id="1x1"),
    pytest.param(1, 13, 17, 19, 20, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, id="3x3-im2col"),
    pytest.param(1, 16, 19, 20, 30, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1, id="1x1-pointwise"),
    pytest.param(2, 3, 17, 15, 9, 5, 5, (2, 2), (2, 1, 2, 1), (1, 2), 1, id="5x5-stride2"),
    pytest.param(1, 24, 15, 17, 24, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 24, id="dw"),
    pytest.param(1, 24, 15, 17, 24, 5, 5, (2, 2), (2, 2, 2, 2), (1, 1), 24, id="dw-stride2"),
]


@pytest.mark.parametrize("n,c,h,w,cout,kh,kw,strides,pads,dilations,group", PORTABLE_LAYERS)
@pytest.mark.parametrize("code", [ACT_NONE, ACT_SILU, ACT_GELU], ids=["none", "silu", "gelu"])
def test_portable_simd_agrees(rng, request, n, c, h, w, cout, kh, kw, strides, pads, dilations, group, code):
    x, wt, b = make_case(rng, n, c, h, w, cout, kh, kw, group)
    best = run_conv(x, wt, b, strides, pads, dilations, group, activation=code)
    request.getfixturevalue("portable_simd")
    portable = run_conv(x, wt, b, strides, pads, dilations, group, activation=code)
    np.testing.assert_allclose(portable, best, rtol=RTOL, atol=ATOL)
    expected = activation_ref(conv_ref(x, wt, b, strides, pads, dilations, group), code)
    np.testing.assert_allclose(portable, expected, rtol=RTOL, atol=ATOL)


# ------------------------------------------------------------------ expr.conv2d (MNN's API)
def test_conv2d_api_padding_modes(rng):
    x, wt, b = make_case(rng, 1, 4, 9, 10, 6, 3, 3)
    y = F.conv2d(F.const(x), F.const(wt), F.const(b), stride=(1, 1), padding=(1, 1))
    np.testing.assert_allclose(y.read(), conv_ref(x, wt, b, pads=(1, 1, 1, 1)), rtol=RTOL, atol=ATOL)
    y = F.conv2d(F.const(x), F.const(wt), F.const(b), padding=(1, 1), padding_mode=F.CAFFE)
    np.testing.assert_allclose(y.read(), conv_ref(x, wt, b, pads=(1, 1, 1, 1)), rtol=RTOL, atol=ATOL)
    y = F.conv2d(F.const(x), F.const(wt), F.const(b))
    assert y.shape == (1, 6, 7, 8)
    # SAME (TensorFlow): output ceil(size / stride), the odd padding pixel at the end.
    y = F.conv2d(F.const(x), F.const(wt), None, stride=(2, 2), padding_mode=F.SAME)
    assert y.shape == (1, 6, 5, 5)
    np.testing.assert_allclose(y.read(), conv_ref(x, wt, None, (2, 2), (1, 0, 1, 1)), rtol=RTOL, atol=ATOL)
    y = F.conv2d(F.const(x), F.const(wt), None, padding_mode="same")
    assert y.shape == (1, 6, 9, 10)


def test_conv2d_api_ints_and_groups(rng):
    x, wt, b = make_case(rng, 1, 6, 8, 8, 9, 3, 3, group=3)
    y = F.conv2d(x, wt, b, stride=2, padding=1, dilate=1, group=3)  # NumPy operands, int pairs
    np.testing.assert_allclose(y.read(), conv_ref(x, wt, b, (2, 2), (1, 1, 1, 1), group=3), rtol=RTOL, atol=ATOL)


# ------------------------------------------------------------------ torch, when installed
TORCH_CASES = [
    (1, 64, 14, 14, 64, 3, 3, 1, 1, 1, 1),
    (2, 32, 17, 15, 48, 3, 3, 2, 1, 1, 1),
    (1, 3, 32, 32, 16, 7, 7, 2, 3, 1, 1),
    (1, 32, 12, 12, 64, 1, 1, 1, 0, 1, 1),
    (1, 32, 19, 19, 32, 3, 3, 1, 2, 2, 1),
    (1, 16, 10, 10, 32, 3, 3, 1, 1, 1, 4),
    (1, 144, 28, 28, 144, 3, 3, 1, 1, 1, 144),
    (1, 96, 29, 29, 96, 3, 3, 2, 1, 1, 96),
    (1, 40, 21, 21, 40, 5, 5, 2, 2, 1, 40),
]


@pytest.mark.parametrize("n,c,h,w,cout,kh,kw,stride,pad,dil,group", TORCH_CASES)
def test_conv_matches_torch(rng, n, c, h, w, cout, kh, kw, stride, pad, dil, group):
    torch = pytest.importorskip("torch")
    x, wt, b = make_case(rng, n, c, h, w, cout, kh, kw, group)
    ours = F.conv2d(F.const(x), F.const(wt), F.const(b), stride=(stride, stride), padding=(pad, pad),
                    dilate=(dil, dil), group=group).read()
    with torch.no_grad():
        expected = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(wt), torch.from_numpy(b),
                                              stride, pad, dil, group).numpy()
    np.testing.assert_allclose(ours, expected, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("code,name", [(ACT_RELU, "relu"), (ACT_SIGMOID, "sigmoid"), (ACT_SILU, "silu"),
                                       (ACT_HARDSWISH, "hardswish"), (ACT_GELU, "gelu"),
                                       (ACT_HARDSIGMOID, "hardsigmoid")])
def test_activation_matches_torch(rng, code, name):
    torch = pytest.importorskip("torch")
    x, wt, b = make_case(rng, 1, 16, 10, 10, 24, 3, 3)
    x *= 3
    params = {"alpha": 1 / 6, "beta": 0.5} if code == ACT_HARDSIGMOID else {}
    ours = run_conv(x, wt, b, (1, 1), (1, 1, 1, 1), (1, 1), 1, activation=code, **params)
    with torch.no_grad():
        y = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(wt), torch.from_numpy(b), 1, 1)
        expected = getattr(torch.nn.functional, name)(y).numpy()
    np.testing.assert_allclose(ours, expected, rtol=RTOL, atol=ATOL)


# ------------------------------------------------------------------ errors
def conv_error(x_shape, w_shape, b_shape=None, dtype=np.float32, **attrs):
    x = F.const(np.zeros(x_shape, dtype))
    w = F.const(np.zeros(w_shape, dtype))
    inputs = [x, w] + ([F.const(np.zeros(b_shape, dtype))] if b_shape is not None else [])
    return mnnpy._core.op("Conv2D", inputs, attrs)


@pytest.mark.parametrize("x_shape,w_shape,b_shape,attrs,match", [
    ((1, 3, 8), (4, 3, 3, 3), None, {}, "input must be 4-D"),
    ((1, 3, 8, 8), (4, 3, 3), None, {}, "weight must be 4-D"),
    ((1, 3, 8, 8), (4, 2, 3, 3), None, {}, "input has 3 channels"),
    ((1, 4, 8, 8), (5, 2, 3, 3), None, {"group": 2}, "do not split into 2 groups"),
    ((1, 3, 8, 8), (4, 3, 3, 3), (5,), {}, r"bias must have shape \(4,\)"),
    ((1, 3, 8, 8), (4, 3, 3, 3), (4, 1), {}, "bias must have shape"),
    ((1, 3, 2, 2), (4, 3, 3, 3), None, {}, "output would be empty"),
    ((1, 3, 8, 8), (4, 3, 3, 3), None, {"strides": [0, 1]}, "strides must be positive"),
    ((1, 3, 8, 8), (4, 3, 3, 3), None, {"strides": [1]}, "'strides' needs 2 values"),
    ((1, 3, 8, 8), (4, 3, 3, 3), None, {"pads": [1, 1]}, "'pads' needs 4 values"),
    ((1, 3, 8, 8), (4, 3, 3, 3), None, {"pads": [-1, 0, 0, 0]}, "pads must be non-negative"),
    ((1, 3, 8, 8), (4, 3, 3, 3), None, {"dilations": [1, 0]}, "dilations must be positive"),
    ((1, 3, 8, 8), (4, 3, 3, 3), None, {"group": 0}, "group must be positive"),
    ((1, 3, 8, 8), (4, 3, 3, 3), None, {"activation": 9}, "unknown activation code"),
    ((1, 3, 8, 8), (4, 3, 0, 3), None, {}, "empty dimension"),
])
def test_bad_inputs_raise_value_error(x_shape, w_shape, b_shape, attrs, match):
    with pytest.raises(ValueError, match=match):
        conv_error(x_shape, w_shape, b_shape, **attrs)


def test_bad_dtype_raises_type_error():
    with pytest.raises(TypeError, match="input must be float32, got float64"):
        conv_error((1, 3, 8, 8), (4, 3, 3, 3), dtype=np.float64)
    with pytest.raises(TypeError, match="weight must be float32"):
        mnnpy._core.op("Conv2D", [F.const(np.zeros((1, 3, 8, 8), np.float32)),
                                  F.const(np.zeros((4, 3, 3, 3), np.int32))], {})
    with pytest.raises(TypeError, match="conv2d: weight must be float32"):
        F.conv2d(F.const(np.zeros((1, 3, 8, 8), np.float32)), F.const(np.zeros((4, 3, 3, 3), np.float64)))


def test_bad_api_arguments():
    x = F.const(np.zeros((1, 3, 8, 8), np.float32))
    w = F.const(np.zeros((4, 3, 3, 3), np.float32))
    with pytest.raises(ValueError, match="unknown padding_mode"):
        F.conv2d(x, w, padding_mode="FULL")
    with pytest.raises(ValueError, match="stride needs 2 values"):
        F.conv2d(x, w, stride=(1, 1, 1))


def test_empty_batch(rng):
    x = np.zeros((0, 3, 8, 8), np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    y = F.conv2d(F.const(x), F.const(w), padding=(1, 1))
    assert y.read().shape == (0, 4, 8, 8)


# ------------------------------------------------------------------ Winograd F(4x4, 3x3)
def conv_profile(y):
    """Evaluates y with profiling on and returns (value, the Conv2D step's profile entry)."""
    mnnpy._core.set_executor_option("profile", True)
    try:
        value = y.read()
        steps = [p for p in mnnpy._core.last_profile() if p["op"] == "Conv2D"]
    finally:
        mnnpy._core.set_executor_option("profile", False)
    assert len(steps) == 1, steps
    return value, steps[0]


def conv_with_scheme(x, w, b, pads, activation=0, constant_weights=True, strides=(1, 1), dilations=(1, 1), group=1,
                     **act):
    xv = F.placeholder(x.shape)
    xv.write(x)
    if constant_weights:
        wv, bv = F.const(w), None if b is None else F.const(b)
    else:
        wv = F.placeholder(w.shape)
        wv.write(w)
        bv = None
        if b is not None:
            bv = F.placeholder(b.shape)
            bv.write(b)
    return conv_profile(_conv2d_nchw(xv, wv, bv, strides, pads, dilations, group, activation, **act))


# (n, c, h, w, cout, pad): 3x3 stride-1 layers the cost model sends to Winograd. Odd sizes leave
# partial tiles at the right and bottom; 300 channels take two GEMM depth steps; 256 channels at
# 28x28 make several tile blocks.
WINOGRAD_LAYERS = [
    pytest.param(2, 32, 13, 11, 40, 1, id="batch2-odd"),
    pytest.param(1, 33, 17, 19, 35, 1, id="odd-channels"),
    pytest.param(1, 40, 19, 21, 36, 0, id="pad0"),
    pytest.param(1, 32, 30, 30, 48, 1, id="30x30"),
    pytest.param(1, 300, 12, 12, 32, 1, id="depth-steps"),
    pytest.param(1, 256, 28, 28, 40, 1, id="several-blocks"),
]


@pytest.mark.parametrize("n,c,h,w,cout,pad", WINOGRAD_LAYERS)
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
def test_winograd_matches_numpy(rng, n, c, h, w, cout, pad, bias):
    x, wt, b = make_case(rng, n, c, h, w, cout, 3, 3, bias=bias)
    ours, step = conv_with_scheme(x, wt, b, (pad,) * 4)
    assert step["scheme"] == "winograd"
    np.testing.assert_allclose(ours, conv_ref(x, wt, b, pads=(pad,) * 4), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("n,c,h,w,cout,pad", WINOGRAD_LAYERS + [
    pytest.param(1, 64, 56, 56, 64, 1, id="resnet-64@56"),
    pytest.param(1, 256, 14, 14, 256, 1, id="resnet-256@14"),
])
def test_winograd_matches_torch(rng, n, c, h, w, cout, pad):
    torch = pytest.importorskip("torch")
    x, wt, b = make_case(rng, n, c, h, w, cout, 3, 3)
    ours, step = conv_with_scheme(x, wt, b, (pad,) * 4)
    assert step["scheme"] == "winograd"
    with torch.no_grad():
        expected = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(wt), torch.from_numpy(b),
                                              padding=pad).numpy()
    np.testing.assert_allclose(ours, expected, rtol=RTOL, atol=ATOL)


# Small maps where 4x4 tiles would mostly be padding: the cost model picks 2x2 tiles.
WINOGRAD_2X2_LAYERS = [
    pytest.param(1, 512, 7, 7, 512, 1, id="resnet-512@7"),
    pytest.param(2, 64, 10, 9, 48, 1, id="batch2-10x9"),
    pytest.param(1, 33, 9, 9, 40, 0, id="pad0-odd-channels"),
    pytest.param(2, 512, 10, 10, 64, 1, id="several-blocks"),
]


@pytest.mark.parametrize("n,c,h,w,cout,pad", WINOGRAD_2X2_LAYERS)
@pytest.mark.parametrize("threads", [1, 2])
def test_winograd_2x2_matches_torch(rng, n, c, h, w, cout, pad, threads):
    torch = pytest.importorskip("torch")
    x, wt, b = make_case(rng, n, c, h, w, cout, 3, 3)
    before = mnnpy.runtime_info()["threads"]
    mnnpy.set_num_threads(threads)
    try:
        ours, step = conv_with_scheme(x, wt, b, (pad,) * 4, activation=ACT_RELU)
    finally:
        mnnpy.set_num_threads(before)
    assert step["scheme"] == "winograd_2x2"
    with torch.no_grad():
        expected = torch.relu(torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(wt),
                                                         torch.from_numpy(b), padding=pad)).numpy()
    np.testing.assert_allclose(ours, expected, rtol=RTOL, atol=ATOL)


def test_winograd_2x2_placeholder_weights(rng):
    x, wt, b = make_case(rng, 1, 64, 7, 7, 64, 3, 3)
    ours, step = conv_with_scheme(x, wt, b, (1, 1, 1, 1), constant_weights=False)
    assert step["scheme"] == "winograd_2x2"
    np.testing.assert_allclose(ours, conv_ref(x, wt, b, pads=(1, 1, 1, 1)), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("code,params", ACTIVATIONS)
def test_winograd_fused_activation(rng, code, params):
    x, wt, b = make_case(rng, 2, 32, 13, 11, 40, 3, 3)
    ours, step = conv_with_scheme(x, wt, b, (1, 1, 1, 1), activation=code, **params)
    assert step["scheme"] == "winograd"
    expected = activation_ref(conv_ref(x, wt, b, pads=(1, 1, 1, 1)), code, **params)
    np.testing.assert_allclose(ours, expected, rtol=RTOL, atol=ATOL)


def test_winograd_placeholder_weights(rng):
    # Weights fed at run time are transformed on every run; new values must take effect.
    x, wt, b = make_case(rng, 1, 33, 17, 19, 35, 3, 3)
    xv, wv, bv = F.placeholder(x.shape), F.placeholder(wt.shape), F.placeholder(b.shape)
    y = _conv2d_nchw(xv, wv, bv, (1, 1), (1, 1, 1, 1), (1, 1), 1, ACT_RELU)
    for _ in range(2):
        xv.write(x), wv.write(wt), bv.write(b)
        ours, step = conv_profile(y)
        assert step["scheme"] == "winograd"
        expected = activation_ref(conv_ref(x, wt, b, pads=(1, 1, 1, 1)), ACT_RELU)
        np.testing.assert_allclose(ours, expected, rtol=RTOL, atol=ATOL)
        x, wt, b = make_case(rng, 1, 33, 17, 19, 35, 3, 3)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_winograd_thread_counts_agree(rng, threads):
    # One tile block shared by the threads step by step (few tiles), and several blocks.
    before = mnnpy.runtime_info()["threads"]
    mnnpy.set_num_threads(threads)
    try:
        for n, c, h, w, cout in [(1, 64, 14, 14, 64), (1, 256, 28, 28, 40)]:
            x, wt, b = make_case(rng, n, c, h, w, cout, 3, 3)
            ours, step = conv_with_scheme(x, wt, b, (1, 1, 1, 1), activation=ACT_RELU)
            assert step["scheme"] == "winograd"
            expected = activation_ref(conv_ref(x, wt, b, pads=(1, 1, 1, 1)), ACT_RELU)
            np.testing.assert_allclose(ours, expected, rtol=RTOL, atol=ATOL)
    finally:
        mnnpy.set_num_threads(before)


@pytest.mark.parametrize("n,c,h,w,cout,pad,scheme", [
    pytest.param(*p.values, "winograd", id=p.id) for p in WINOGRAD_LAYERS[:3]] + [
    pytest.param(*p.values, "winograd_2x2", id=p.id) for p in WINOGRAD_2X2_LAYERS[1:3]])
def test_winograd_portable_simd_agrees(rng, portable_simd, n, c, h, w, cout, pad, scheme):
    x, wt, b = make_case(rng, n, c, h, w, cout, 3, 3)
    ours, step = conv_with_scheme(x, wt, b, (pad,) * 4, activation=ACT_SILU)
    assert step["scheme"] == scheme
    expected = activation_ref(conv_ref(x, wt, b, pads=(pad,) * 4), ACT_SILU)
    np.testing.assert_allclose(ours, expected, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("n,c,h,w,cout,strides,dilations,scheme", [
    pytest.param(1, 64, 56, 56, 64, (1, 1), (1, 1), "winograd", id="resnet-64@56"),
    pytest.param(1, 512, 7, 7, 512, (1, 1), (1, 1), "winograd_2x2", id="7x7-2x2-tiles"),
    pytest.param(1, 15, 30, 30, 16, (1, 1), (1, 1), "im2col_gemm", id="few-channels"),
    pytest.param(1, 64, 60, 60, 64, (2, 2), (1, 1), "im2col_gemm", id="stride2"),
    pytest.param(1, 64, 30, 30, 64, (2, 2), (1, 1), "pixel_rows_gemm", id="stride2-15x15"),
    pytest.param(1, 12, 16, 16, 48, (1, 1), (1, 1), "pixel_rows_gemm", id="16x16"),
    pytest.param(1, 12, 17, 16, 40, (1, 1), (1, 1), "im2col_gemm", id="17x16"),
    pytest.param(1, 64, 30, 30, 64, (1, 1), (2, 2), "im2col_gemm", id="dilation2"),
])
def test_conv_scheme_choice_and_flops(rng, n, c, h, w, cout, strides, dilations, scheme):
    x, wt, b = make_case(rng, n, c, h, w, cout, 3, 3)
    xv = F.placeholder(x.shape)
    xv.write(x)
    pads = (dilations[0],) * 4
    ours, step = conv_profile(_conv2d_nchw(xv, F.const(wt), F.const(b), strides, pads, dilations, 1, ACT_NONE))
    assert step["scheme"] == scheme
    n, cout, ho, wo = ours.shape
    assert step["flops"] == 2 * n * cout * ho * wo * c * 9


# Depthwise kernel: 3x3 and 5x5 at stride 1 and 2 run compile-time specialized blocks of 4 output
# rows over staged input rows; other shapes run the generic block. Sizes cover widths below, at
# and above a vector (4, 8 or 16 lanes), heights that leave a partial block, asymmetric padding,
# no padding and padding wider than the kernel's reach on the right.
# (n, c, h, w, k, stride, pads, dilation)
DEPTHWISE_CASES = [
    pytest.param(1, 5, 7, 7, 3, 1, (1, 1, 1, 1), 1, id="3x3-7x7"),
    pytest.param(2, 3, 1, 1, 3, 1, (1, 1, 1, 1), 1, id="3x3-1x1-batch2"),
    pytest.param(1, 4, 13, 33, 3, 1, (1, 1, 1, 1), 1, id="3x3-odd"),
    pytest.param(1, 3, 10, 19, 3, 1, (0, 0, 0, 0), 1, id="3x3-nopad"),
    pytest.param(1, 3, 9, 18, 3, 1, (0, 2, 1, 0), 1, id="3x3-asym-pad"),
    pytest.param(2, 6, 17, 35, 3, 2, (1, 1, 1, 1), 1, id="3x3-s2-odd-batch2"),
    pytest.param(1, 4, 16, 16, 3, 2, (0, 0, 1, 1), 1, id="3x3-s2-tf-same"),
    pytest.param(1, 3, 6, 5, 3, 2, (1, 1, 1, 1), 1, id="3x3-s2-tiny"),
    pytest.param(1, 4, 11, 29, 5, 1, (2, 2, 2, 2), 1, id="5x5-odd"),
    pytest.param(2, 3, 21, 37, 5, 2, (2, 2, 2, 2), 1, id="5x5-s2-batch2"),
    pytest.param(1, 3, 8, 9, 5, 2, (1, 2, 3, 0), 1, id="5x5-s2-asym-pad"),
    pytest.param(1, 3, 12, 23, 7, 1, (3, 3, 3, 3), 1, id="7x7-generic"),
    pytest.param(1, 3, 13, 27, 3, 3, (1, 1, 1, 1), 1, id="3x3-s3-generic"),
    pytest.param(1, 3, 14, 25, 3, 1, (2, 2, 2, 2), 2, id="3x3-dil2-generic"),
    pytest.param(1, 3, 15, 11, 3, 2, (3, 0, 2, 4), 1, id="3x3-s2-wide-right-pad"),
]


@pytest.mark.parametrize("n,c,h,w,k,stride,pads,dilation", DEPTHWISE_CASES)
@pytest.mark.parametrize("code", [ACT_NONE, ACT_CLIP, ACT_HARDSWISH], ids=["none", "relu6", "hardswish"])
def test_depthwise_matches_numpy(rng, n, c, h, w, k, stride, pads, dilation, code):
    x, wt, b = make_case(rng, n, c, h, w, c, k, k, c, bias=code != ACT_NONE)
    strides, dilations = (stride, stride), (dilation, dilation)
    ours = run_conv(x, wt, b, strides, pads, dilations, c, activation=code)
    expected = activation_ref(conv_ref(x, wt, b, strides, pads, dilations, c), code)
    assert ours.shape == expected.shape
    np.testing.assert_allclose(ours, expected, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("n,c,h,w,k,stride,pads,dilation", DEPTHWISE_CASES)
def test_depthwise_portable_simd_agrees(rng, portable_simd, n, c, h, w, k, stride, pads, dilation):
    x, wt, b = make_case(rng, n, c, h, w, c, k, k, c)
    strides, dilations = (stride, stride), (dilation, dilation)
    ours = run_conv(x, wt, b, strides, pads, dilations, c, activation=ACT_RELU)
    expected = activation_ref(conv_ref(x, wt, b, strides, pads, dilations, c), ACT_RELU)
    np.testing.assert_allclose(ours, expected, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("c", [1, 2, 40])
def test_depthwise_thread_splits_agree(rng, threads, c):
    # Few planes split their rows between threads; many planes split by plane.
    x, wt, b = make_case(rng, 1, c, 45, 30, c, 3, 3, c)
    before = mnnpy.runtime_info()["threads"]
    mnnpy.set_num_threads(threads)
    try:
        ours = run_conv(x, wt, b, (1, 1), (1, 1, 1, 1), (1, 1), c, activation=ACT_RELU)
    finally:
        mnnpy.set_num_threads(before)
    expected = activation_ref(conv_ref(x, wt, b, (1, 1), (1, 1, 1, 1), (1, 1), c), ACT_RELU)
    np.testing.assert_allclose(ours, expected, rtol=RTOL, atol=ATOL)


# ------------------------------------------------------------------ pixel-rows GEMM (few output pixels)
# Layers with at most 256 output pixels per image (and channel counts that fill 16-wide panels
# about as well as the pixels fill them) run out^T = cols^T * W^T: output channels in 16-wide
# weight panels (edge panels for 13, 100, 1001 channels), pixels as the register tile's
# rows (a shorter last tile), partial sums kept across depth steps (depth above 384), several
# pixel blocks at 16x16 with a deep 3x3, output written transposed back to NCHW.
# (n, c, h, w, cout, k, strides, pads, dilations, group)
PIXEL_ROWS_LAYERS = [
    # (Winograd takes 3x3 stride-1 layers once both channel counts reach 16.)
    pytest.param(1, 12, 7, 7, 100, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, id="3x3@7-cout100"),
    pytest.param(2, 13, 7, 7, 13, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, id="3x3@7-13ch-batch2"),
    pytest.param(1, 100, 14, 14, 1001, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1, id="1x1@14-cout1001"),
    pytest.param(2, 960, 7, 7, 160, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1, id="1x1@7-depth-steps-batch2"),
    pytest.param(1, 48, 27, 28, 48, 1, (2, 2), (0, 0, 0, 0), (1, 1), 1, id="1x1-stride2@14"),
    pytest.param(1, 48, 15, 15, 48, 3, (2, 2), (1, 1, 1, 1), (1, 1), 1, id="3x3-stride2@8"),
    pytest.param(1, 300, 9, 11, 13, 3, (1, 1), (0, 1, 2, 1), (1, 1), 1, id="3x3-asym-pad-depth-steps"),
    pytest.param(1, 20, 11, 11, 32, 3, (1, 1), (2, 2, 2, 2), (2, 2), 1, id="3x3-dilation2"),
    pytest.param(1, 64, 7, 7, 64, 3, (1, 1), (1, 1, 1, 1), (1, 1), 2, id="3x3@7-group2"),
    pytest.param(1, 15, 16, 16, 96, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, id="3x3@16-pixel-blocks"),
    pytest.param(1, 7, 5, 3, 32, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1, id="1x1-tiny"),
]


def pixel_rows_conv(x, wt, b, k, strides, pads, dilations, group, activation=ACT_NONE, constant_weights=True,
                    **act):
    ours, step = conv_with_scheme(x, wt, b, pads, activation, constant_weights, strides, dilations, group, **act)
    assert step["scheme"] == "pixel_rows_gemm"
    n, cout, ho, wo = ours.shape
    assert step["flops"] == 2 * n * cout * ho * wo * (x.shape[1] // group) * k * k
    return ours


@pytest.mark.parametrize("n,c,h,w,cout,k,strides,pads,dilations,group", PIXEL_ROWS_LAYERS)
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
def test_pixel_rows_matches_numpy(rng, n, c, h, w, cout, k, strides, pads, dilations, group, bias):
    x, wt, b = make_case(rng, n, c, h, w, cout, k, k, group, bias=bias)
    ours = pixel_rows_conv(x, wt, b, k, strides, pads, dilations, group)
    np.testing.assert_allclose(ours, conv_ref(x, wt, b, strides, pads, dilations, group), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("n,c,h,w,cout,k,strides,pads,dilations,group", PIXEL_ROWS_LAYERS[:4])
def test_pixel_rows_matches_torch(rng, n, c, h, w, cout, k, strides, pads, dilations, group):
    torch = pytest.importorskip("torch")
    x, wt, b = make_case(rng, n, c, h, w, cout, k, k, group)
    ours = pixel_rows_conv(x, wt, b, k, strides, pads, dilations, group)
    with torch.no_grad():
        expected = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(wt), torch.from_numpy(b),
                                              stride=strides, padding=pads[:2], dilation=dilations,
                                              groups=group).numpy()
    np.testing.assert_allclose(ours, expected, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("code,params", ACTIVATIONS)
def test_pixel_rows_fused_activation(rng, code, params):
    x, wt, b = make_case(rng, 2, 12, 7, 7, 100, 3, 3)
    ours = pixel_rows_conv(x, wt, b, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1, activation=code, **params)
    expected = activation_ref(conv_ref(x, wt, b, pads=(1, 1, 1, 1)), code, **params)
    np.testing.assert_allclose(ours, expected, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("k,c", [(1, 500), (3, 13)])
def test_pixel_rows_placeholder_weights(rng, k, c):
    # Weights fed at run time are packed on every run; new values must take effect.
    pads = ((k - 1) // 2,) * 4
    x, wt, b = make_case(rng, 1, c, 7, 7, 100, k, k)
    xv, wv, bv = F.placeholder(x.shape), F.placeholder(wt.shape), F.placeholder(b.shape)
    y = _conv2d_nchw(xv, wv, bv, (1, 1), pads, (1, 1), 1, ACT_RELU)
    for _ in range(2):
        xv.write(x), wv.write(wt), bv.write(b)
        ours, step = conv_profile(y)
        assert step["scheme"] == "pixel_rows_gemm"
        expected = activation_ref(conv_ref(x, wt, b, pads=pads), ACT_RELU)
        np.testing.assert_allclose(ours, expected, rtol=RTOL, atol=ATOL)
        x, wt, b = make_case(rng, 1, c, 7, 7, 100, k, k)
    ours = pixel_rows_conv(x, wt, None, k, (1, 1), pads, (1, 1), 1, constant_weights=False)
    np.testing.assert_allclose(ours, conv_ref(x, wt, None, pads=pads), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_pixel_rows_thread_counts_agree(rng, threads):
    # Batch 1 at 7x7 splits the output channels between threads; batch 2 and several pixel
    # blocks split by pixels.
    before = mnnpy.runtime_info()["threads"]
    mnnpy.set_num_threads(threads)
    try:
        for n, c, h, cout, k in [(1, 64, 7, 1001, 1), (1, 12, 7, 100, 3), (2, 12, 14, 48, 3), (1, 100, 16, 13, 3)]:
            pads = ((k - 1) // 2,) * 4
            x, wt, b = make_case(rng, n, c, h, h, cout, k, k)
            ours = pixel_rows_conv(x, wt, b, k, (1, 1), pads, (1, 1), 1, activation=ACT_RELU)
            expected = activation_ref(conv_ref(x, wt, b, pads=pads), ACT_RELU)
            np.testing.assert_allclose(ours, expected, rtol=RTOL, atol=ATOL)
    finally:
        mnnpy.set_num_threads(before)


@pytest.mark.parametrize("n,c,h,w,cout,k,strides,pads,dilations,group",
                         [PIXEL_ROWS_LAYERS[i] for i in (0, 1, 2, 3, 6, 8, 10)])
@pytest.mark.parametrize("code", [ACT_NONE, ACT_HARDSWISH], ids=["none", "hardswish"])
def test_pixel_rows_portable_simd_agrees(rng, portable_simd, n, c, h, w, cout, k, strides, pads, dilations, group,
                                         code):
    x, wt, b = make_case(rng, n, c, h, w, cout, k, k, group)
    ours = pixel_rows_conv(x, wt, b, k, strides, pads, dilations, group, activation=code)
    expected = activation_ref(conv_ref(x, wt, b, strides, pads, dilations, group), code)
    np.testing.assert_allclose(ours, expected, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("n,c,h,cout,k,group,scheme", [
    pytest.param(1, 320, 7, 1280, 1, 1, "pixel_rows_gemm", id="1x1@7"),
    pytest.param(1, 576, 14, 96, 1, 1, "pixel_rows_gemm", id="1x1@14"),
    pytest.param(1, 64, 28, 96, 1, 1, "pointwise_gemm", id="1x1@28"),
    pytest.param(1, 64, 7, 64, 3, 16, "im2col_gemm", id="grouped-4-channels@7"),
    pytest.param(1, 64, 7, 64, 3, 64, "depthwise_direct", id="depthwise@7"),
])
def test_small_map_scheme_choice(rng, n, c, h, cout, k, group, scheme):
    pads = ((k - 1) // 2,) * 4
    x, wt, b = make_case(rng, n, c, h, h, cout, k, k, group)
    xv = F.placeholder(x.shape)
    xv.write(x)
    ours, step = conv_profile(_conv2d_nchw(xv, F.const(wt), F.const(b), (1, 1), pads, (1, 1), group, ACT_NONE))
    assert step["scheme"] == scheme
    np.testing.assert_allclose(ours, conv_ref(x, wt, b, pads=pads, group=group), rtol=RTOL, atol=ATOL)
