"""The blocked channel layout [N, C/8, H, W, 8]: ToBlockedChannels / FromBlockedChannels against NumPy's
reshape and transpose, MaxPool2DBlocked / AvgPool2DBlocked against this package's NCHW pooling ops and
PyTorch, and Reduce over the spatial axes of a blocked tensor against NumPy. Every kernel runs on the
best SIMD target and on the portable one, with one and two threads.

Tolerances (float32): conversions and max pooling are exact; averages within 1e-5 relative plus 1e-5
absolute of values in [-10, 10] (sums are formed in another order than the references'); reductions of
up to 3136 values within 1e-5 relative plus 1e-4 absolute of the float64 result."""
import numpy as np
import pytest

import mnnpy
from mnnpy import _expr_layout as L
from mnnpy import _expr_pool as P
from mnnpy import expr as F
from helpers import blocked, unblocked  # noqa: E402

RTOL, ATOL = 1e-5, 1e-5


def rand(rng, shape):
    return (rng.random(shape, dtype=np.float32) * 20 - 10).astype(np.float32)


@pytest.fixture(params=[1, 2])
def threads(request):
    mnnpy.set_num_threads(request.param)
    try:
        yield request.param
    finally:
        mnnpy.set_num_threads(1)


# ---------------------------------------------------------------- layout conversions
# Planes below one 8-pixel tile, ragged ones, and ones of several 2048-pixel work chunks.
LAYOUT_SHAPES = [(1, 8, 1, 1), (2, 16, 1, 1), (1, 8, 1, 5), (2, 24, 3, 3), (1, 8, 7, 7), (2, 32, 5, 13),
                 (1, 64, 56, 56), (2, 16, 47, 91), (1, 1280, 7, 7), (2, 96, 17, 1), (1, 72, 64, 65)]


@pytest.mark.parametrize("shape", LAYOUT_SHAPES, ids=str)
def test_to_and_from_blocked_match_numpy(rng, simd, threads, shape):
    x = rand(rng, shape)
    y = L._to_blocked(F.const(x))
    assert y.shape == (shape[0], shape[1] // 8, shape[2], shape[3], 8)
    expected = blocked(x)
    np.testing.assert_array_equal(y.numpy(), expected)
    back = L._from_blocked(F.const(expected))
    assert back.shape == shape
    np.testing.assert_array_equal(back.numpy(), x)


@pytest.mark.parametrize("shape", [(1, 8, 9, 11), (2, 48, 28, 28), (1, 16, 1, 1)], ids=str)
def test_round_trip_in_one_graph(rng, shape):
    x = F.placeholder(shape)
    back = L._from_blocked(L._to_blocked(x))
    for _ in range(2):  # the second run reuses the plan with new values
        xv = rand(rng, shape)
        x.write(xv)
        np.testing.assert_array_equal(back.numpy(), xv)


def test_empty_tensors_convert():
    assert L._to_blocked(F.const(np.zeros((0, 16, 3, 3), np.float32))).numpy().shape == (0, 2, 3, 3, 8)
    assert L._to_blocked(F.const(np.zeros((1, 8, 0, 3), np.float32))).numpy().shape == (1, 1, 0, 3, 8)
    assert L._from_blocked(F.const(np.zeros((2, 0, 4, 4, 8), np.float32))).numpy().shape == (2, 0, 4, 4)


def test_bad_layout_arguments():
    with pytest.raises(ValueError, match="C=12 .* not a multiple of the block 8"):
        L._to_blocked(F.const(np.zeros((1, 12, 4, 4), np.float32)))
    with pytest.raises(ValueError, match="ToBlockedChannels: input must be 4-D"):
        L._to_blocked(F.const(np.zeros((8, 4, 4), np.float32)))
    with pytest.raises(TypeError, match="ToBlockedChannels: input must be float32, got int32"):
        L._to_blocked(F.const(np.zeros((1, 8, 4, 4), np.int32)))
    with pytest.raises(ValueError, match="'block' must be 8, got 4"):
        L._to_blocked(F.const(np.zeros((1, 8, 4, 4), np.float32)), block=4)
    with pytest.raises(ValueError, match=r"FromBlockedChannels: input must be 5-D \[N, C/8, H, W, 8\]"):
        L._from_blocked(F.const(np.zeros((1, 1, 4, 4, 4), np.float32)))
    with pytest.raises(ValueError, match="FromBlockedChannels: input must be 5-D"):
        L._from_blocked(F.const(np.zeros((1, 8, 4, 4), np.float32)))
    with pytest.raises(TypeError, match="FromBlockedChannels: input must be float32, got float64"):
        L._from_blocked(F.const(np.zeros((1, 1, 4, 4, 8), np.float64)))


# ---------------------------------------------------------------- blocked pooling vs the NCHW ops
# (shape, kernel, strides, pads (t, l, b, r), dilations, ceil_mode)
POOL_CASES = [
    ((1, 64, 112, 112), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), False),
    ((2, 16, 11, 13), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), True),
    ((2, 8, 17, 40), (2, 3), (1, 1), (0, 1, 1, 2), (1, 1), False),
    ((1, 16, 20, 37), (3, 2), (3, 2), (2, 0, 0, 1), (1, 1), True),
    ((2, 24, 15, 33), (3, 3), (1, 2), (0, 0, 0, 0), (2, 2), False),
    ((2, 8, 15, 33), (2, 3), (2, 3), (1, 1, 1, 1), (2, 3), True),
    ((1, 8, 5, 6), (5, 6), (1, 1), (0, 0, 0, 0), (1, 1), False),
    ((1, 8, 7, 5), (1, 1), (2, 2), (0, 0, 0, 0), (1, 1), True),
    ((3, 16, 9, 64), (4, 4), (4, 4), (0, 0, 0, 0), (1, 1), True),
    ((1, 32, 56, 56), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), False),
    ((1, 8, 1, 1), (2, 2), (1, 1), (0, 0, 1, 1), (1, 1), False),
    # Large windows, pooled by separable passes: YOLO's SPP(F) pools, then dilated, strided and
    # asymmetric ones, some larger than the input.
    ((1, 16, 20, 20), (5, 5), (1, 1), (2, 2, 2, 2), (1, 1), False),
    ((2, 8, 13, 17), (13, 13), (1, 1), (6, 6, 6, 6), (1, 1), False),
    ((1, 8, 19, 23), (4, 5), (1, 2), (1, 2, 2, 0), (2, 1), True),
    ((1, 8, 9, 30), (7, 7), (2, 3), (3, 0, 1, 3), (1, 1), True),
    ((1, 16, 4, 5), (5, 9), (1, 1), (4, 4, 4, 4), (1, 1), False),
    # A window whose dilated taps all fall in the padding: max gives -inf, average 0, as the NCHW ops.
    ((1, 8, 1, 3), (2, 2), (1, 1), (1, 1, 1, 1), (2, 2), False),
]
POOL_IDS = [f"{c[0]}-k{c[1]}-s{c[2]}-p{c[3]}-d{c[4]}-ceil{int(c[5])}" for c in POOL_CASES]


@pytest.mark.parametrize("case", POOL_CASES, ids=POOL_IDS)
def test_max_pool_blocked_matches_nchw_op(rng, simd, threads, case):
    shape, kernel, strides, pads, dilations, ceil_mode = case
    x = rand(rng, shape)
    y = L._max_pool_blocked(F.const(blocked(x)), kernel, strides, pads, dilations, ceil_mode)
    expected = P._max_pool_nchw(F.const(x), kernel, strides, pads, dilations, ceil_mode).numpy()
    assert y.shape == blocked(expected).shape
    np.testing.assert_array_equal(unblocked(y.numpy()), expected)


@pytest.mark.parametrize("include", [False, True])
@pytest.mark.parametrize("case", POOL_CASES, ids=POOL_IDS)
def test_avg_pool_blocked_matches_nchw_op(rng, simd, threads, case, include):
    shape, kernel, strides, pads, dilations, ceil_mode = case
    x = rand(rng, shape)
    attrs = {"kernel": list(kernel), "strides": list(strides), "pads": list(pads), "dilations": list(dilations),
             "ceil_mode": int(ceil_mode), "count_include_pad": int(include)}
    y = mnnpy._core.op("AvgPool2DBlocked", [F.const(blocked(x))], attrs)
    expected = mnnpy._core.op("AvgPool2D", [F.const(x)], attrs).numpy()
    assert y.shape == blocked(expected).shape
    np.testing.assert_allclose(unblocked(y.numpy()), expected, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("shape", [(1, 2048, 7, 7), (2, 96, 14, 14), (1, 8, 1, 1), (2, 16, 3, 100), (1, 960, 14, 14)],
                         ids=str)
def test_global_pools_blocked(rng, simd, shape):
    x = rand(rng, shape)
    xb = F.const(blocked(x))
    kernel = shape[2:]
    avg = L._avg_pool_blocked(xb, kernel, (1, 1), (0, 0, 0, 0)).numpy()
    np.testing.assert_allclose(unblocked(avg), x.astype(np.float64).mean(axis=(2, 3), keepdims=True),
                               rtol=RTOL, atol=ATOL)
    mx = L._max_pool_blocked(xb, kernel, (1, 1), (0, 0, 0, 0)).numpy()
    np.testing.assert_array_equal(unblocked(mx), x.max(axis=(2, 3), keepdims=True))


def pool_scheme(y):
    mnnpy._core.set_executor_option("profile", True)
    try:
        y.numpy()
    finally:
        mnnpy._core.set_executor_option("profile", False)
    return mnnpy._core.last_profile()[0]["scheme"]


def test_blocked_pool_schemes():
    # Small windows read their taps directly; large ones go by passes; a whole-plane window reduces.
    xb = F.placeholder((1, 2, 20, 20, 8))
    xb.write(np.zeros((1, 2, 20, 20, 8), np.float32))
    assert pool_scheme(L._max_pool_blocked(xb, (3, 3), (2, 2), (1, 1, 1, 1))) == "direct"
    assert pool_scheme(L._max_pool_blocked(xb, (5, 5), (1, 1), (2, 2, 2, 2))) == "separable"
    assert pool_scheme(L._avg_pool_blocked(xb, (13, 13), (1, 1), (6, 6, 6, 6))) == "separable"
    assert pool_scheme(L._avg_pool_blocked(xb, (20, 20), (1, 1), (0, 0, 0, 0))) == "plane"


def test_blocked_pool_chain_matches_nchw(rng):
    # The conversions and the pool as a converter would chain them, in one plan.
    x = F.placeholder((2, 32, 23, 30))
    y = L._from_blocked(L._max_pool_blocked(L._to_blocked(x), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), True))
    for _ in range(2):
        xv = rand(rng, (2, 32, 23, 30))
        x.write(xv)
        expected = P._max_pool_nchw(F.const(xv), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), True).numpy()
        np.testing.assert_array_equal(y.numpy(), expected)


def test_blocked_pool_results_do_not_depend_on_threads(rng):
    xb = F.const(blocked(rand(rng, (2, 40, 33, 47))))
    results = []
    for threads in (1, 2):
        mnnpy.set_num_threads(threads)
        results.append((L._max_pool_blocked(xb, (3, 3), (2, 2), (1, 1, 1, 1)).numpy(),
                        L._avg_pool_blocked(xb, (3, 3), (2, 2), (1, 1, 1, 1), True).numpy(),
                        L._avg_pool_blocked(xb, (33, 47), (1, 1), (0, 0, 0, 0)).numpy()))
    mnnpy.set_num_threads(1)
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


def test_bad_blocked_pool_arguments():
    xb = F.const(np.zeros((1, 1, 5, 5, 8), np.float32))
    with pytest.raises(ValueError, match=r"MaxPool2DBlocked: input must be 5-D \[N, C/8, H, W, 8\]"):
        L._max_pool_blocked(F.const(np.zeros((1, 8, 5, 5), np.float32)), (2, 2), (1, 1), (0, 0, 0, 0))
    with pytest.raises(ValueError, match="AvgPool2DBlocked: input must be 5-D"):
        L._avg_pool_blocked(F.const(np.zeros((1, 2, 5, 5, 4), np.float32)), (2, 2), (1, 1), (0, 0, 0, 0))
    with pytest.raises(TypeError, match="MaxPool2DBlocked: input must be float32"):
        L._max_pool_blocked(F.const(np.zeros((1, 1, 5, 5, 8), np.float64)), (2, 2), (1, 1), (0, 0, 0, 0))
    with pytest.raises(ValueError, match="MaxPool2DBlocked: kernel extent 7 is larger than the padded input"):
        L._max_pool_blocked(xb, (7, 2), (1, 1), (0, 0, 0, 0))
    with pytest.raises(ValueError, match="AvgPool2DBlocked: padding along height .* smaller than the kernel extent"):
        L._avg_pool_blocked(xb, (2, 2), (1, 1), (2, 0, 0, 0))
    with pytest.raises(ValueError, match="'strides' values must be >= 1"):
        L._max_pool_blocked(xb, (2, 2), (0, 1), (0, 0, 0, 0))
    with pytest.raises(ValueError, match="'kernel' attribute is required"):
        mnnpy._core.op("AvgPool2DBlocked", [xb], {})


# ---------------------------------------------------------------- blocked pooling vs PyTorch
# (kind, kernel, stride, padding, dilation, ceil_mode, count_include_pad), all as (height, width) pairs;
# PyTorch pads both sides alike.
TORCH_CASES = (
    [("max", (3, 3), s, p, d, ceil, False) for ceil in (False, True)
     for p, d, s in [((0, 0), (1, 1), (1, 1)), ((1, 1), (1, 1), (2, 2)), ((1, 1), (2, 2), (2, 2)),
                     ((1, 1), (2, 2), (3, 3)), ((1, 0), (1, 2), (2, 1))]]
    + [("avg", k, s, p, (1, 1), ceil, include) for ceil in (False, True) for include in (False, True)
       for k, s, p in [((3, 3), (2, 2), (1, 1)), ((2, 2), (2, 2), (0, 0)), ((3, 2), (2, 3), (1, 1)),
                       ((5, 5), (3, 3), (2, 2)), ((3, 3), (1, 1), (1, 1)), ((5, 5), (1, 1), (2, 2))]])


@pytest.mark.parametrize("case", TORCH_CASES, ids=lambda c: "-".join(str(v) for v in c))
def test_blocked_pools_match_torch(rng, case):
    torch = pytest.importorskip("torch")
    kind, kernel, stride, padding, dilation, ceil_mode, include = case
    x = rand(rng, (2, 16, 19, 24))
    pads = (padding[0], padding[1], padding[0], padding[1])
    if kind == "max":
        expected = torch.nn.functional.max_pool2d(torch.from_numpy(x), kernel, stride, padding, dilation, ceil_mode)
        ours = L._max_pool_blocked(F.const(blocked(x)), kernel, stride, pads, dilation, ceil_mode)
        np.testing.assert_array_equal(unblocked(ours.numpy()), expected.numpy())
    else:
        expected = torch.nn.functional.avg_pool2d(torch.from_numpy(x), kernel, stride, padding, ceil_mode, include)
        ours = L._avg_pool_blocked(F.const(blocked(x)), kernel, stride, pads, ceil_mode, include)
        np.testing.assert_allclose(unblocked(ours.numpy()), expected.numpy(), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("shape", [(1, 2048, 7, 7), (1, 960, 14, 14), (2, 8, 5, 9)], ids=str)
def test_global_avg_pool_blocked_matches_torch(rng, shape):
    torch = pytest.importorskip("torch")
    x = rand(rng, shape)
    expected = torch.nn.functional.adaptive_avg_pool2d(torch.from_numpy(x), 1).numpy()
    ours = L._avg_pool_blocked(F.const(blocked(x)), shape[2:], (1, 1), (0, 0, 0, 0)).numpy()
    np.testing.assert_allclose(unblocked(ours), expected, rtol=RTOL, atol=ATOL)


# ---------------------------------------------------------------- Reduce over the axes of a blocked tensor
REDUCTIONS = [(F.reduce_mean, np.mean), (F.reduce_sum, np.sum), (F.reduce_max, np.max), (F.reduce_min, np.min)]


def check_reduction(ours, x, reference, axes):
    expected = reference(x.astype(np.float64), axis=axes, keepdims=True)
    ours = np.asarray(ours)
    assert ours.dtype == x.dtype and ours.shape == expected.shape
    if x.dtype == np.float32:
        np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-4)
    else:
        np.testing.assert_allclose(ours, expected, rtol=1e-12, atol=1e-11)


# MobileNetV3's squeeze-excite means ([1, C/8, H, W, 8] over H, W) and other short contiguous rows.
@pytest.mark.parametrize("shape,axes", [((1, 9, 56, 56, 8), (2, 3)), ((1, 120, 7, 7, 8), (2, 3)),
                                        ((2, 3, 5, 3, 8), (2, 3)), ((1, 2, 1, 1, 8), (2, 3)),
                                        ((1000, 3), (0,)), ((4, 33, 6), (1,)), ((3, 100, 16), (1,)),
                                        ((2, 50, 7), (1,)), ((3, 40, 31), (1,))], ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_reduce_short_rows_match_numpy(rng, simd, shape, axes, dtype):
    x = rng.standard_normal(shape).astype(dtype)
    for ours, reference in REDUCTIONS:
        check_reduction(ours(F.const(x), axis=list(axes), keepdims=True).numpy(), x, reference, axes)


def test_reduce_short_rows_special_values(simd):
    x = np.arange(2 * 40 * 8, dtype=np.float32).reshape(1, 2, 5, 8, 8) - 300
    with_nan = x.copy()
    with_nan[0, 1, 3, 2, 5] = np.nan
    with_inf = x.copy()
    with_inf[0, 0, 0, 1, 2], with_inf[0, 0, 4, 7, 2] = np.inf, -np.inf
    for data in (with_nan, with_inf):
        for ours, reference in REDUCTIONS:
            got = ours(F.const(data), axis=[2, 3], keepdims=True).numpy()
            with np.errstate(invalid="ignore"):
                expected = reference(data, axis=(2, 3), keepdims=True)
            np.testing.assert_array_equal(got, expected)


def test_blocked_mean_matches_nchw_mean(rng, threads):
    x = rng.standard_normal((1, 72, 28, 28)).astype(np.float32)
    ours = F.reduce_mean(L._to_blocked(F.const(x)), axis=[2, 3], keepdims=True).numpy()
    nchw = F.reduce_mean(F.const(x), axis=[2, 3], keepdims=True).numpy()
    np.testing.assert_allclose(unblocked(ours), nchw, rtol=1e-5, atol=1e-6)
