"""The blocked convolution at precision "low" (native/src/backend/cpu/conv_blocked_bf16.{h,cpp},
docs/precision.md): Conv2DBlocked layers other than depthwise run as one bf16 product whose patch
rows are read from the blocked layout and whose results are stored blocked with bias, residual and
activation.

This CPU has no bf16 hardware, so the plans are built on the portable reference path (the same
arithmetic: bf16-rounded inputs, exact products, float32 sums); on a CPU with AMX-BF16 or
AVX512_BF16 every hardware path runs the same checks.
- Each layer against torch's float64 convolution within the bound of tests/test_bf16.py, on the
  process's SIMD target and the portable one (the filler and the epilogue are compiled per target);
  with small integer inputs, whose bf16 values and float32 sums are exact, bit for bit.
- A torchvision ResNet-18 (random, seeded weights) loaded for "low": its layout stays blocked, its
  convolutions report the scheme "bf16_blocked", and its outputs are within a bound derived from
  the per-layer one of float64, and no further from float64 than an emulation of the bf16
  roundings in float64 is.
"""
import math

import numpy as np
import pytest

import mnnpy
from mnnpy import _core
from mnnpy import expr as F
from mnnpy._expr_conv import ACT_CLIP, ACT_NONE, ACT_RELU
from mnnpy._expr_layout import _conv2d_blocked
from helpers import blocked, unblocked
from test_bf16 import bound, choose_path, profile_read

torch = pytest.importorskip("torch")

HARDWARE_PATHS = _core.bf16_hardware_paths()


@pytest.fixture(params=HARDWARE_PATHS or ["reference"])
def bf16_path(request):
    """precision "low" plans on each hardware path this CPU has, or (none) on the reference path."""
    yield from choose_path(request.param)


def conv_float64(x, w, b, strides, pads, dilations):
    """float64 convolution (with bias) and the sums of |x w| per output, by torch; pads are
    (top, left, bottom, right)."""
    t = lambda v: torch.from_numpy(np.asarray(v, np.float64))
    xp = torch.nn.functional.pad(t(x), (pads[1], pads[3], pads[0], pads[2]))
    conv = lambda xx, ww, bb: torch.nn.functional.conv2d(xx, ww, bb, stride=strides, dilation=dilations).numpy()
    return conv(xp, t(w), t(b)), conv(xp.abs(), t(w).abs(), None)


def run_low(x, w, b, strides, pads, dilations, activation, nchw, residual, **act):
    """Conv2DBlocked at "low" on NCHW data (blocked first unless nchw): the NCHW result and the
    step's schemes."""
    xin = x if nchw else blocked(x)
    xv = F.placeholder(xin.shape)
    xv.write(xin)
    rv = None if residual is None else F.const(blocked(residual))
    with mnnpy.precision("low"):
        y = _conv2d_blocked(xv, F.const(w), F.const(b), strides, pads, dilations, 1, activation, residual=rv, **act)
        value, schemes = profile_read(y, "Conv2DBlocked")
    return unblocked(value), schemes


ACTIVATIONS = {ACT_NONE: lambda y: y, ACT_RELU: lambda y: np.maximum(y, 0),
               ACT_CLIP: lambda y: np.clip(y, 0, 6)}

# (n, c, h, w, cout, k, strides, pads, dilations, activation, residual, nchw)
CASES = [
    pytest.param(1, 16, 12, 12, 24, 1, (1, 1), (0, 0, 0, 0), (1, 1), ACT_RELU, False, False, id="1x1-relu"),
    pytest.param(2, 24, 13, 17, 40, 1, (1, 1), (0, 0, 0, 0), (1, 1), ACT_NONE, True, False,
                 id="1x1-batch2-residual"),
    pytest.param(1, 32, 14, 15, 16, 1, (2, 2), (0, 0, 0, 0), (1, 1), ACT_CLIP, False, False, id="1x1-s2-relu6"),
    pytest.param(1, 8, 6, 7, 8, 1, (1, 1), (1, 0, 2, 1), (1, 1), ACT_NONE, False, False, id="1x1-padded"),
    pytest.param(1, 16, 9, 11, 32, 3, (1, 1), (1, 1, 1, 1), (1, 1), ACT_RELU, True, False,
                 id="3x3-residual-relu"),
    pytest.param(2, 24, 10, 9, 16, 3, (2, 2), (1, 1, 1, 1), (1, 1), ACT_CLIP, False, False, id="3x3-s2-relu6"),
    pytest.param(1, 8, 8, 8, 8, 3, (1, 1), (0, 2, 1, 0), (1, 1), ACT_NONE, False, False, id="3x3-uneven-pads"),
    pytest.param(1, 16, 11, 11, 24, 3, (1, 2), (2, 2, 2, 2), (2, 2), ACT_RELU, False, False, id="3x3-dilated"),
    pytest.param(1, 64, 7, 7, 264, 3, (1, 1), (1, 1, 1, 1), (1, 1), ACT_NONE, True, False,
                 id="3x3-cout264-deep"),
    pytest.param(1, 3, 23, 21, 16, 7, (2, 2), (3, 3, 3, 3), (1, 1), ACT_RELU, False, True, id="7x7-s2-nchw-c3"),
    pytest.param(2, 5, 9, 8, 24, 3, (1, 1), (1, 1, 1, 1), (1, 1), ACT_CLIP, True, True, id="3x3-nchw-c5-residual"),
]


def case_arrays(rng, n, c, h, w, cout, k, residual):
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    wt = (rng.standard_normal((cout, c, k, k)) / math.sqrt(c * k * k)).astype(np.float32)
    b = rng.standard_normal(cout).astype(np.float32)
    return x, wt, b


def output_shape(n, h, w, cout, k, strides, pads, dilations):
    ho = (h + pads[0] + pads[2] - dilations[0] * (k - 1) - 1) // strides[0] + 1
    wo = (w + pads[1] + pads[3] - dilations[1] * (k - 1) - 1) // strides[1] + 1
    return (n, cout, ho, wo)


@pytest.mark.parametrize("n,c,h,w,cout,k,strides,pads,dilations,activation,with_residual,nchw", CASES)
def test_low_blocked_conv_within_bound(rng, bf16_path, simd, n, c, h, w, cout, k, strides, pads, dilations,
                                       activation, with_residual, nchw):
    x, wt, b = case_arrays(rng, n, c, h, w, cout, k, with_residual)
    shape = output_shape(n, h, w, cout, k, strides, pads, dilations)
    residual = rng.standard_normal(shape).astype(np.float32) if with_residual else None
    got, schemes = run_low(x, wt, b, strides, pads, dilations, activation, nchw, residual)
    assert schemes == ["bf16_blocked"]
    exact, abs_sum = conv_float64(x, wt, b, strides, pads, dilations)
    res = 0.0 if residual is None else residual.astype(np.float64)
    exact = exact + res
    # The product's bound, plus the float32 roundings of the bias and residual additions (each at
    # most 2^-24 of a sum no larger than |products| + |bias| + |residual| plus the product's error);
    # ReLU and ReLU6 move no value further from the exact one.
    magnitudes = abs_sum + np.abs(b).reshape(1, -1, 1, 1) + np.abs(res)
    limit = bound(abs_sum, c * k * k) + 2 * 2.0 ** -24 * 1.01 * magnitudes + 1e-30
    err = np.abs(got.astype(np.float64) - ACTIVATIONS[activation](exact))
    assert np.all(err <= limit), f"worst error {np.max(err - limit):.3g} over the bound"


@pytest.mark.parametrize("n,c,h,w,cout,k,strides,pads,dilations,activation,with_residual,nchw", CASES)
def test_low_blocked_conv_exact_on_small_integers(rng, bf16_path, n, c, h, w, cout, k, strides, pads, dilations,
                                                  activation, with_residual, nchw):
    # Integers of at most 4 bits are bf16 values, and every sum here is an integer far below 2^24:
    # the result is the float64 one exactly, whatever the order, which checks that each patch value
    # meets its weight once (layout, padding, strides, output blocks, bias and residual).
    x = rng.integers(-8, 9, (n, c, h, w)).astype(np.float32)
    wt = rng.integers(-8, 9, (cout, c, k, k)).astype(np.float32)
    b = rng.integers(-8, 9, cout).astype(np.float32)
    shape = output_shape(n, h, w, cout, k, strides, pads, dilations)
    residual = rng.integers(-64, 65, shape).astype(np.float32) if with_residual else None
    got, schemes = run_low(x, wt, b, strides, pads, dilations, activation, nchw, residual)
    assert schemes == ["bf16_blocked"]
    exact, _ = conv_float64(x, wt, b, strides, pads, dilations)
    if residual is not None:
        exact = exact + residual
    np.testing.assert_array_equal(got, ACTIVATIONS[activation](exact).astype(np.float32))


@pytest.mark.parametrize("n,c,h,w,cout,k,strides,pads,dilations,activation,with_residual,nchw", CASES[:6] + CASES[9:])
def test_low_blocked_conv_same_bits_on_every_simd_target(rng, bf16_path, n, c, h, w, cout, k, strides, pads,
                                                         dilations, activation, with_residual, nchw):
    # The filler's rounding is integer arithmetic and the epilogue adds in the same order on every
    # target: the process's best target and the portable one give the same bits.
    x, wt, b = case_arrays(rng, n, c, h, w, cout, k, with_residual)
    shape = output_shape(n, h, w, cout, k, strides, pads, dilations)
    residual = rng.standard_normal(shape).astype(np.float32) if with_residual else None
    x.flat[::97] = np.nan  # NaN inputs stay NaN through the vector rounding
    results = []
    for portable in (False, True):
        _core.force_portable_simd(portable)
        try:
            results.append(run_low(x, wt, b, strides, pads, dilations, activation, nchw, residual)[0])
        finally:
            _core.force_portable_simd(False)
    np.testing.assert_array_equal(results[0], results[1])
    if activation == ACT_NONE:  # (ReLU and ReLU6 map NaN to a bound)
        assert np.isnan(results[0]).any()


@pytest.mark.parametrize("n,c,h,w,cout,k,strides,pads,dilations,activation,with_residual,nchw",
                         [CASES[1], CASES[5], CASES[8], CASES[9]])
def test_low_blocked_conv_same_bits_at_any_thread_count(rng, bf16_path, n, c, h, w, cout, k, strides, pads,
                                                        dilations, activation, with_residual, nchw):
    # At 1 thread these layers convert each block of 32 patch rows as its product runs; at 8, with
    # fewer row blocks than twice the threads, all rows are converted once before the product (and
    # the output channels split between threads). Each output is the same sum either way.
    x, wt, b = case_arrays(rng, n, c, h, w, cout, k, with_residual)
    shape = output_shape(n, h, w, cout, k, strides, pads, dilations)
    residual = rng.standard_normal(shape).astype(np.float32) if with_residual else None
    before = mnnpy.get_num_threads()
    results = []
    try:
        for threads in (1, 8):
            mnnpy.set_num_threads(threads)
            results.append(run_low(x, wt, b, strides, pads, dilations, activation, nchw, residual)[0])
    finally:
        mnnpy.set_num_threads(before)
    np.testing.assert_array_equal(results[0], results[1])


def test_normal_precision_keeps_float32_blocked_schemes(rng, bf16_path):
    # The same layer planned at "normal" after "low" runs a float32 scheme and gives its results.
    x, wt, b = case_arrays(rng, 1, 16, 10, 10, 16, 3, False)
    xv = F.placeholder(blocked(x).shape)
    xv.write(blocked(x))
    make = lambda: _conv2d_blocked(xv, F.const(wt), F.const(b), (1, 1), (1, 1, 1, 1), (1, 1), 1, ACT_RELU)
    before, normal_schemes = profile_read(make(), "Conv2DBlocked")
    with mnnpy.precision("low"):
        _, low_schemes = profile_read(make(), "Conv2DBlocked")
    after, _ = profile_read(make(), "Conv2DBlocked")
    assert low_schemes == ["bf16_blocked"] and normal_schemes != low_schemes
    np.testing.assert_array_equal(after, before)


def test_depthwise_stays_float32_at_low(rng, bf16_path):
    x = rng.standard_normal((1, 16, 9, 9)).astype(np.float32)
    wt = rng.standard_normal((16, 1, 3, 3)).astype(np.float32)
    b = rng.standard_normal(16).astype(np.float32)
    xv = F.placeholder(blocked(x).shape)
    xv.write(blocked(x))
    make = lambda: _conv2d_blocked(xv, F.const(wt), F.const(b), (1, 1), (1, 1, 1, 1), (1, 1), 16, ACT_NONE)
    normal, _ = profile_read(make(), "Conv2DBlocked")
    with mnnpy.precision("low"):
        low, schemes = profile_read(make(), "Conv2DBlocked")
    assert schemes == ["blocked_depthwise"]
    np.testing.assert_array_equal(low, normal)


# ---- A whole ResNet-18 ----------------------------------------------------------------------------

def resnet18(seed):
    """torchvision's ResNet-18 with seeded random weights and batch-norm statistics (eval mode)."""
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(seed)
    net = torchvision.models.resnet18(weights=None, num_classes=100)
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
    return net.eval()


def bf16_emulation(net, x):
    """The network in float64 with batch norm folded into the convolutions and every convolution's
    and the classifier's input and weight rounded to bf16 (through float32): what "low" computes,
    but for its float32 sums."""
    import copy
    from torch.nn.utils.fusion import fuse_conv_bn_eval
    fused = copy.deepcopy(net)
    r = lambda t: t.float().to(torch.bfloat16).double()
    # Each convolution is followed by its batch norm (bn1 after conv1, downsample.1 after downsample.0).
    fused.conv1, fused.bn1 = fuse_conv_bn_eval(fused.conv1, fused.bn1), torch.nn.Identity()
    for layer in (fused.layer1, fused.layer2, fused.layer3, fused.layer4):
        for block in layer:
            block.conv1, block.bn1 = fuse_conv_bn_eval(block.conv1, block.bn1), torch.nn.Identity()
            block.conv2, block.bn2 = fuse_conv_bn_eval(block.conv2, block.bn2), torch.nn.Identity()
            if block.downsample is not None:
                block.downsample = fuse_conv_bn_eval(block.downsample[0], block.downsample[1])
    fused = fused.double()
    for m in fused.modules():
        if isinstance(m, torch.nn.Conv2d):
            m.weight.data = r(m.weight.data)
            m.register_forward_pre_hook(lambda mod, args: (r(args[0]),))
        elif isinstance(m, torch.nn.Linear):
            m.weight.data = r(m.weight.data)
            m.register_forward_pre_hook(lambda mod, args: (r(args[0]),))
    with torch.no_grad():
        return fused(torch.from_numpy(x).double()).numpy()


def test_resnet18_low_stays_blocked_and_within_bound(tmp_path, bf16_path):
    rng = np.random.default_rng(18)
    net = resnet18(18)
    x = rng.standard_normal((1, 3, 96, 96)).astype(np.float32)
    path = str(tmp_path / "resnet18.onnx")
    torch.onnx.export(net, (torch.from_numpy(x),), path, input_names=["x"], output_names=["y"], dynamo=False)
    from mnnpy import nn
    normal = nn.load_module_from_file(path, precision_mode="normal")
    low = nn.load_module_from_file(path, precision_mode="low")
    assert low.blocked_layout is True and normal.blocked_layout is True
    _core.set_executor_option("profile", True)
    try:
        y_low = np.asarray(low(x))
        profile = _core.last_profile()
    finally:
        _core.set_executor_option("profile", False)
    schemes = [p["scheme"] for p in profile if p["op"] == "Conv2DBlocked"]
    # All 20 convolutions (the first on NCHW input) blocked and bf16, no NCHW convolution and no
    # layout change; the classifier a bf16 product too.
    assert schemes == ["bf16_blocked"] * 20
    assert not any(p["op"] in ("Conv2D", "ToBlockedChannels", "FromBlockedChannels") for p in profile)
    assert [p["scheme"] for p in profile if p["op"] == "MatMul"] == ["bf16_gemm"]
    y_normal = np.asarray(normal(x))
    emulated = bf16_emulation(net, x)
    with torch.no_grad():
        exact = net.double()(torch.from_numpy(x).double()).numpy()
    # The bound, derived from the per-layer one: a product layer's result is off by at most
    # (2 * 2^-8 + 2^-16 + K * 2^-24) of its sum of |terms|, about 2^-7 relative where the terms do
    # not cancel; each of the 21 product layers (20 convolutions, the classifier) on a path from the
    # input adds its own and passes on its input's relative error (batch-norm-scaled layers with He
    # initialization, ReLU and the residual sums neither grow nor shrink a relative error much).
    # In the worst case the errors add: 21 x 2^-7 of the output's scale, a factor 2 for cancellation
    # in the classifier's sums. Random roundings add far less (as the square root of their number),
    # and a wrong convolution would be off by the output's scale itself.
    scale = np.max(np.abs(exact))
    err_low = np.max(np.abs(y_low - exact))
    assert err_low <= 2 * 21 * 2.0 ** -7 * scale
    assert np.max(np.abs(y_normal - exact)) <= 1e-4 * scale
    assert not np.array_equal(y_low, y_normal)
    # The error is that of bf16 arithmetic itself: no larger than that of the float64 emulation
    # of the roundings, up to a factor 2. (Through 21 layers the two are not close to each other:
    # a float32 sum a few ulps off rounds an input to the other bf16 neighbour now and then, and
    # such flips spread to rounding-sized differences within a few layers.)
    err_emulated = np.max(np.abs(emulated - exact))
    assert err_emulated > 1e-4 * scale  # the emulation does round
    assert err_low <= 2 * err_emulated
