"""MaxPool2D / AvgPool2D / Resize: NumPy references (always), PyTorch's pooling and interpolate,
onnxruntime's Resize (coordinate and nearest modes), MNN.expr wrappers, plan re-use, the
portable SIMD path and bad input.

Tolerances (float32): pooling max is exact; averages and interpolations within 1e-5 relative
plus 1e-5 absolute of values in [-10, 10] (sums are formed in a different order)."""
import numpy as np
import pytest

import mnnpy
from mnnpy import _expr_pool as P
from mnnpy import expr as F

RTOL, ATOL = 1e-5, 1e-5


def rand(rng, shape):
    return (rng.random(shape, dtype=np.float32) * 20 - 10).astype(np.float32)


# ---------------------------------------------------------------- NumPy references
def pooled_length(size, kernel, stride, dilation, pad_begin, pad_end, ceil_mode):
    extent = (kernel - 1) * dilation + 1
    span = size + pad_begin + pad_end - extent
    out = (-(-span // stride) if ceil_mode else span // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + pad_begin:
        out -= 1
    return out


def window_indices(out, kernel, stride, dilation):
    """[out, kernel] positions in the padded axis read by each window."""
    return np.arange(out)[:, None] * stride + np.arange(kernel)[None, :] * dilation


def numpy_pool(x, kernel, strides, pads, dilations=(1, 1), ceil_mode=False, kind="max", count_include_pad=False):
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (dh, dw) = kernel, strides, dilations
    top, left, bottom, right = pads
    ho = pooled_length(h, kh, sh, dh, top, bottom, ceil_mode)
    wo = pooled_length(w, kw, sw, dw, left, right, ceil_mode)
    rows, cols = window_indices(ho, kh, sh, dh), window_indices(wo, kw, sw, dw)
    hp, wp = max(rows.max() + 1, h + top + bottom), max(cols.max() + 1, w + left + right)
    inside = np.zeros((hp, wp), bool)
    inside[top:top + h, left:left + w] = True
    # Windows: [N, C, Ho, kh, Wo, kw].
    fill = -np.inf if kind == "max" else 0.0
    padded = np.full((n, c, hp, wp), fill, np.float64)
    padded[:, :, top:top + h, left:left + w] = x
    windows = padded[:, :, rows[:, :, None, None], cols[None, None, :, :]]
    if kind == "max":
        return windows.max(axis=(3, 5)).astype(np.float32)
    if count_include_pad:
        counted = np.zeros((hp, wp), bool)
        counted[:h + top + bottom, :w + left + right] = True
    else:
        counted = inside
    counts = counted[rows[:, :, None, None], cols[None, None, :, :]].sum(axis=(1, 3))
    return (windows.sum(axis=(3, 5)) / counts).astype(np.float32)


def source_coordinates(in_size, out_size, mode, scale=None):
    """ONNX Resize's input coordinate of every output position, in float32 as onnxruntime does."""
    f = np.float32
    scale = f(out_size) / f(in_size) if scale is None else f(scale)
    o = np.arange(out_size, dtype=f)
    if mode == "half_pixel":
        return (o + f(0.5)) / scale - f(0.5)
    if mode == "pytorch_half_pixel":
        return (o + f(0.5)) / scale - f(0.5) if out_size > 1 else np.zeros(1, f)
    if mode == "align_corners":
        return o * f(in_size - 1) / f(out_size - 1) if out_size > 1 else np.zeros(1, f)
    if mode == "asymmetric":
        return o / scale
    if mode == "tf_half_pixel_for_nn":
        return (o + f(0.5)) / scale
    raise AssertionError(mode)


def interpolation_matrix(in_size, out_size, mode, coordinates, nearest_mode="round_prefer_floor", a=-0.75,
                         exclude_outside=False, scale=None):
    """Dense [out, in] matrix M with resized = M @ input along one axis."""
    x = source_coordinates(in_size, out_size, coordinates, scale).astype(np.float64)
    m = np.zeros((out_size, in_size))
    rows = np.arange(out_size)
    if mode == "nearest":
        half = x - np.floor(x) == 0.5
        idx = {"round_prefer_floor": np.where(half, np.floor(x), np.round(x)),
               "round_prefer_ceil": np.where(half, np.ceil(x), np.round(x)),
               "floor": np.floor(x), "ceil": np.ceil(x)}[nearest_mode]
        m[rows, np.clip(idx, 0, in_size - 1).astype(int)] = 1
        return m
    if mode == "linear":
        x = np.clip(x, 0, in_size - 1)
        i0 = np.floor(x).astype(int)
        t = x - i0
        np.add.at(m, (rows, i0), 1 - t)
        np.add.at(m, (rows, np.minimum(i0 + 1, in_size - 1)), t)
        return m
    base = np.floor(x).astype(int) - 1
    t = x - np.floor(x)
    dist = np.stack([t + 1, t, 1 - t, 2 - t], axis=1)  # distance to each of the 4 taps
    ad = np.abs(dist)
    w = np.where(ad <= 1, ((a + 2) * ad - (a + 3)) * ad * ad + 1, ((a * ad - 5 * a) * ad + 8 * a) * ad - 4 * a)
    taps = base[:, None] + np.arange(4)[None, :]
    if exclude_outside:
        w = np.where((taps < 0) | (taps >= in_size), 0, w)
        w = w / w.sum(axis=1, keepdims=True)
    for k in range(4):
        np.add.at(m, (rows, np.clip(taps[:, k], 0, in_size - 1)), w[:, k])
    return m


def numpy_resize(x, out_hw, mode, coordinates, **kw):
    mh = interpolation_matrix(x.shape[2], out_hw[0], mode, coordinates, **kw)
    mw = interpolation_matrix(x.shape[3], out_hw[1], mode, coordinates, **kw)
    return np.einsum("oh,nchw,pw->ncop", mh, x.astype(np.float64), mw).astype(np.float32)


def resize_atol(x, out_hw, mode, coordinates, **kw):
    """The float32 error of a separable resize: per output, the weights (Horner in float32, a few
    roundings each) and the sums of rows of taps (a rounding per tap and pass) each err by about
    eps times the largest weighted sum sum|w_y| * sum|w_x| * max|x|; 16 such roundings bound both."""
    mh = interpolation_matrix(x.shape[2], out_hw[0], mode, coordinates, **kw)
    mw = interpolation_matrix(x.shape[3], out_hw[1], mode, coordinates, **kw)
    weight = np.abs(mh).sum(axis=1).max() * np.abs(mw).sum(axis=1).max()
    return max(ATOL, 16 * float(np.finfo(np.float32).eps) * weight * float(np.abs(x).max()))


def check(ours, expected, exact=False, atol=ATOL):
    ours = np.asarray(ours)
    assert ours.dtype == np.float32
    assert ours.shape == expected.shape, (ours.shape, expected.shape)
    if exact:
        np.testing.assert_array_equal(ours, expected)
    else:
        np.testing.assert_allclose(ours, expected, rtol=RTOL, atol=atol)


# (shape, kernel, strides, pads (t, l, b, r), dilations, ceil_mode)
POOL_CASES = [
    ((2, 3, 11, 13), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), False),
    ((2, 3, 11, 13), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), True),
    ((1, 4, 112, 112), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), False),
    ((2, 5, 17, 40), (2, 3), (1, 1), (0, 1, 1, 2), (1, 1), False),
    ((1, 2, 20, 37), (3, 2), (3, 2), (2, 0, 0, 1), (1, 1), True),
    ((2, 3, 15, 33), (3, 3), (1, 2), (0, 0, 0, 0), (2, 2), False),
    ((2, 3, 15, 33), (2, 3), (2, 3), (1, 1, 1, 1), (2, 3), True),
    ((1, 3, 5, 6), (5, 6), (1, 1), (0, 0, 0, 0), (1, 1), False),
    ((1, 2, 7, 5), (1, 1), (2, 2), (0, 0, 0, 0), (1, 1), True),
    ((3, 2, 9, 64), (4, 4), (4, 4), (0, 0, 0, 0), (1, 1), True),
]


@pytest.mark.parametrize("case", POOL_CASES, ids=lambda c: f"{c[0]}-k{c[1]}-s{c[2]}-p{c[3]}-d{c[4]}-ceil{int(c[5])}")
def test_max_pool_matches_numpy(rng, case):
    shape, kernel, strides, pads, dilations, ceil_mode = case
    x = rand(rng, shape)
    y = P._max_pool_nchw(F.const(x), kernel, strides, pads, dilations, ceil_mode)
    expected = numpy_pool(x, kernel, strides, pads, dilations, ceil_mode, "max")
    assert y.shape == expected.shape
    check(y.numpy(), expected, exact=True)


@pytest.mark.parametrize("include", [False, True])
@pytest.mark.parametrize("case", [c for c in POOL_CASES if c[4] == (1, 1)],
                         ids=lambda c: f"{c[0]}-k{c[1]}-s{c[2]}-p{c[3]}-ceil{int(c[5])}")
def test_avg_pool_matches_numpy(rng, case, include):
    shape, kernel, strides, pads, _, ceil_mode = case
    x = rand(rng, shape)
    y = P._avg_pool_nchw(F.const(x), kernel, strides, pads, ceil_mode, include)
    check(y.numpy(), numpy_pool(x, kernel, strides, pads, (1, 1), ceil_mode, "avg", include))


@pytest.mark.parametrize("shape", [(1, 2048, 7, 7), (2, 96, 14, 14), (1, 3, 1, 1), (2, 5, 3, 100)])
def test_global_pools_are_plane_reductions(rng, shape):
    x = rand(rng, shape)
    kernel = shape[2:]
    avg = P._avg_pool_nchw(F.const(x), kernel, (1, 1), (0, 0, 0, 0)).numpy()
    check(avg, x.astype(np.float64).mean(axis=(2, 3), keepdims=True).astype(np.float32))
    mx = P._max_pool_nchw(F.const(x), kernel, (1, 1), (0, 0, 0, 0)).numpy()
    check(mx, x.max(axis=(2, 3), keepdims=True), exact=True)


def test_avg_pool_op_with_dilations(rng):
    # ONNX AveragePool (opset 19) has dilations; the op takes them, the converter helper does not.
    x = rand(rng, (2, 3, 15, 21))
    for include in (0, 1):
        y = mnnpy._core.op("AvgPool2D", [F.const(x)], {"kernel": [3, 2], "strides": [2, 1], "pads": [2, 1, 1, 2],
                                                        "dilations": [2, 3], "ceil_mode": 1, "count_include_pad": include})
        check(y.numpy(), numpy_pool(x, (3, 2), (2, 1), (2, 1, 1, 2), (2, 3), True, "avg", bool(include)))


def test_empty_batch():
    x = F.const(np.zeros((0, 3, 8, 8), np.float32))
    assert P._max_pool_nchw(x, (2, 2), (2, 2), (0, 0, 0, 0)).numpy().shape == (0, 3, 4, 4)
    assert P._resize_nchw(x, (3, 5), "linear").numpy().shape == (0, 3, 3, 5)


def test_pool_results_do_not_depend_on_threads(rng):
    x = rand(rng, (2, 8, 33, 47))
    results = []
    for threads in (1, 2):
        mnnpy.set_num_threads(threads)
        results.append((P._max_pool_nchw(F.const(x), (3, 3), (2, 2), (1, 1, 1, 1)).numpy(),
                        P._avg_pool_nchw(F.const(x), (3, 3), (2, 2), (1, 1, 1, 1), True).numpy(),
                        P._resize_nchw(F.const(x), (70, 20), "cubic").numpy()))
    mnnpy.set_num_threads(1)
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


def test_plan_reruns_with_new_input_values(rng):
    x = F.placeholder((2, 3, 13, 21))
    pooled = P._max_pool_nchw(x, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), True)
    averaged = P._avg_pool_nchw(x, (2, 3), (1, 2), (1, 0, 0, 1))
    resized = P._resize_nchw(x, (30, 17), "linear", "align_corners")
    for _ in range(3):
        xv = rand(rng, (2, 3, 13, 21))
        x.write(xv)
        check(pooled.numpy(), numpy_pool(xv, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), True), exact=True)
        check(averaged.numpy(), numpy_pool(xv, (2, 3), (1, 2), (1, 0, 0, 1), kind="avg"))
        check(resized.numpy(), numpy_resize(xv, (30, 17), "linear", "align_corners"))


def test_portable_simd_agrees(rng, portable_simd):
    x = rand(rng, (2, 3, 23, 45))
    check(P._max_pool_nchw(F.const(x), (3, 3), (2, 2), (1, 1, 1, 1)).numpy(),
          numpy_pool(x, (3, 3), (2, 2), (1, 1, 1, 1)), exact=True)
    check(P._max_pool_nchw(F.const(x), (2, 2), (1, 1), (0, 0, 1, 1)).numpy(),
          numpy_pool(x, (2, 2), (1, 1), (0, 0, 1, 1)), exact=True)
    check(P._avg_pool_nchw(F.const(x), (3, 3), (2, 2), (1, 1, 1, 1), True, True).numpy(),
          numpy_pool(x, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), True, "avg", True))
    check(P._avg_pool_nchw(F.const(x), (23, 45), (1, 1), (0, 0, 0, 0)).numpy(),
          x.astype(np.float64).mean(axis=(2, 3), keepdims=True).astype(np.float32))
    for mode in ("nearest", "linear", "cubic"):
        check(P._resize_nchw(F.const(x), (50, 31), mode).numpy(), numpy_resize(x, (50, 31), mode, "half_pixel"))


# ---------------------------------------------------------------- Resize against NumPy
RESIZE_SIZES = [((2, 3, 7, 9), (14, 18)), ((1, 2, 16, 33), (5, 12)), ((2, 1, 5, 6), (11, 4)),
                ((1, 3, 8, 8), (8, 8)), ((1, 2, 1, 5), (3, 1)), ((1, 2, 64, 64), (256, 200))]
COORDINATE_MODES = ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn"]
NEAREST_MODES = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]


@pytest.mark.parametrize("sizes", RESIZE_SIZES, ids=lambda s: f"{s[0][2:]}->{s[1]}")
@pytest.mark.parametrize("coordinates", COORDINATE_MODES)
@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_resize_matches_numpy(rng, sizes, coordinates, mode):
    shape, out_hw = sizes
    x = rand(rng, shape)
    y = P._resize_nchw(F.const(x), out_hw, mode, coordinates)
    assert y.shape == shape[:2] + out_hw
    check(y.numpy(), numpy_resize(x, out_hw, mode, coordinates), exact=mode == "nearest",
          atol=resize_atol(x, out_hw, mode, coordinates))


@pytest.mark.parametrize("nearest_mode", NEAREST_MODES)
@pytest.mark.parametrize("coordinates", COORDINATE_MODES)
def test_resize_nearest_modes_match_numpy(rng, nearest_mode, coordinates):
    x = rand(rng, (2, 2, 6, 10))
    for out_hw in [(12, 20), (3, 5), (9, 25), (4, 7)]:
        y = P._resize_nchw(F.const(x), out_hw, "nearest", coordinates, nearest_mode)
        check(y.numpy(), numpy_resize(x, out_hw, "nearest", coordinates, nearest_mode=nearest_mode), exact=True)


@pytest.mark.parametrize("exclude_outside", [False, True])
@pytest.mark.parametrize("a", [-0.75, -0.5])
def test_resize_cubic_options_match_numpy(rng, exclude_outside, a):
    x = rand(rng, (1, 3, 9, 13))
    for out_hw in [(20, 7), (9, 30)]:
        y = P._resize_nchw(F.const(x), out_hw, "cubic", "half_pixel", cubic_coeff_a=a, exclude_outside=exclude_outside)
        check(y.numpy(), numpy_resize(x, out_hw, "cubic", "half_pixel", a=a, exclude_outside=exclude_outside),
              atol=resize_atol(x, out_hw, "cubic", "half_pixel", a=a, exclude_outside=exclude_outside))


def test_resize_with_model_scales_uses_them_for_coordinates(rng):
    x = rand(rng, (1, 2, 5, 7))
    # ONNX with scales 1.5: output floor(5 * 1.5) = 7 rows, coordinates divide by 1.5, not 7 / 5.
    y = P._resize_nchw(F.const(x), (7, 10), "linear", "half_pixel", scales=(1.5, 1.5))
    mh = interpolation_matrix(5, 7, "linear", "half_pixel", scale=1.5)
    mw = interpolation_matrix(7, 10, "linear", "half_pixel", scale=1.5)
    check(y.numpy(), np.einsum("oh,nchw,pw->ncop", mh, x.astype(np.float64), mw).astype(np.float32))


def test_resize_rank3(rng):
    x = rand(rng, (2, 3, 11))
    y = P._resize_nchw(F.const(x), (25,), "linear", "align_corners")
    m = interpolation_matrix(11, 25, "linear", "align_corners")
    check(y.numpy(), np.einsum("pw,ncw->ncp", m, x.astype(np.float64)).astype(np.float32))


# ---------------------------------------------------------------- MNN.expr wrappers
def test_mnn_examples():
    x = F.reshape(F.const(np.arange(18, dtype=np.float32)), [1, 2, 3, 3])
    np.testing.assert_array_equal(F.max_pool(x, [2, 2], [1, 1]).numpy(),
                                  [[[[4, 5], [7, 8]], [[13, 14], [16, 17]]]])
    np.testing.assert_array_equal(F.avg_pool(x, [2, 2], [1, 1]).numpy(),
                                  [[[[2, 3], [5, 6]], [[11, 12], [14, 15]]]])
    x = F.reshape(F.const(np.arange(4, dtype=np.float32)), [1, 1, 2, 2])
    np.testing.assert_array_equal(F.resize(x, 2, 2).numpy(),
                                  [[[[0, 0.5, 1, 1], [1, 1.5, 2, 2], [2, 2.5, 3, 3], [2, 2.5, 3, 3]]]])


def test_mnn_padding_modes(rng):
    x = rand(rng, (1, 3, 10, 13))
    xv = F.const(x)
    # SAME: output ceil(size / stride), the odd padding at the bottom/right; averages skip padding.
    y = F.max_pool(xv, [3, 3], [2, 2], F.Padding_Mode.SAME)
    check(y.numpy(), numpy_pool(x, (3, 3), (2, 2), (0, 1, 1, 1)), exact=True)
    assert y.shape == (1, 3, 5, 7)
    check(F.avg_pool(xv, [3, 3], [2, 2], F.Padding_Mode.SAME).numpy(),
          numpy_pool(x, (3, 3), (2, 2), (0, 1, 1, 1), kind="avg"))
    # VALID with pads, CAFFE (ceil rounding, padding counted).
    check(F.max_pool(xv, [3, 2], [2, 2], F.Padding_Mode.VALID, [1, 1]).numpy(),
          numpy_pool(x, (3, 2), (2, 2), (1, 1, 1, 1)), exact=True)
    check(F.avg_pool(xv, [3, 3], [2, 2], F.Padding_Mode.CAFFE, [1, 1]).numpy(),
          numpy_pool(x, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), True, "avg", True))
    # (-1, -1): global pooling.
    check(F.avg_pool(xv, [-1, -1], [1, 1]).numpy(),
          x.astype(np.float64).mean(axis=(2, 3), keepdims=True).astype(np.float32))


def test_resize_scales_non_integer(rng):
    x = rand(rng, (1, 2, 6, 8))
    y = F.resize(F.const(x), 1.5, 0.5)  # x_scale (width) 1.5, y_scale (height) 0.5
    assert y.shape == (1, 2, 3, 12)
    mh = interpolation_matrix(6, 3, "linear", "asymmetric", scale=0.5)
    mw = interpolation_matrix(8, 12, "linear", "asymmetric", scale=1.5)
    check(y.numpy(), np.einsum("oh,nchw,pw->ncop", mh, x.astype(np.float64), mw).astype(np.float32))


# ---------------------------------------------------------------- bad input
def test_bad_pool_arguments():
    x = F.const(np.zeros((1, 2, 5, 5), np.float32))
    with pytest.raises(ValueError, match="4-D"):
        P._max_pool_nchw(F.const(np.zeros((2, 5, 5), np.float32)), (2, 2), (1, 1), (0, 0, 0, 0))
    with pytest.raises(ValueError, match="larger than the padded input"):
        P._max_pool_nchw(x, (7, 2), (1, 1), (0, 0, 0, 0))
    with pytest.raises(ValueError, match="smaller than the kernel extent"):
        P._avg_pool_nchw(x, (2, 2), (1, 1), (2, 0, 0, 0))
    with pytest.raises(ValueError, match="'strides' values must be >= 1"):
        P._max_pool_nchw(x, (2, 2), (0, 1), (0, 0, 0, 0))
    with pytest.raises(ValueError, match="'kernel' values must be >= 1"):
        P._avg_pool_nchw(x, (0, 2), (1, 1), (0, 0, 0, 0))
    with pytest.raises(ValueError, match="'pads' needs 4 values"):
        mnnpy._core.op("MaxPool2D", [x], {"kernel": [2, 2], "pads": [1, 1]})
    with pytest.raises(ValueError, match="'kernel' attribute is required"):
        mnnpy._core.op("AvgPool2D", [x], {})
    with pytest.raises(TypeError, match="float32"):
        mnnpy._core.op("MaxPool2D", [F.const(np.zeros((1, 1, 4, 4), np.int32))], {"kernel": [2, 2]})
    with pytest.raises(TypeError, match="float32"):
        F.max_pool(F.const(np.zeros((1, 1, 4, 4), np.float64)), [2, 2], [1, 1])
    with pytest.raises(ValueError, match="unknown padding_mode"):
        F.max_pool(x, [2, 2], [1, 1], "REFLECT")


def test_bad_resize_arguments():
    x = F.const(np.zeros((1, 2, 5, 5), np.float32))
    with pytest.raises(ValueError, match="must be positive"):
        P._resize_nchw(x, (0, 4))
    with pytest.raises(ValueError, match="unknown mode 'bilinear'"):
        P._resize_nchw(x, (4, 4), "bilinear")
    with pytest.raises(ValueError, match="unknown coordinate_transformation_mode 'tf_crop_and_resize'"):
        P._resize_nchw(x, (4, 4), "linear", "tf_crop_and_resize")
    with pytest.raises(ValueError, match="unknown nearest_mode 'round'"):
        P._resize_nchw(x, (4, 4), "nearest", "half_pixel", "round")
    with pytest.raises(ValueError, match="3-D .* or 4-D"):
        P._resize_nchw(F.const(np.zeros((5, 5), np.float32)), (4, 4))
    with pytest.raises(ValueError, match="'size' needs 2 values"):
        mnnpy._core.op("Resize", [x], {"size": [4]})
    with pytest.raises(ValueError, match="empty spatial axis"):
        P._resize_nchw(F.const(np.zeros((1, 2, 0, 5), np.float32)), (4, 4))
    with pytest.raises(TypeError, match="float32"):
        mnnpy._core.op("Resize", [F.const(np.zeros((1, 1, 4, 4), np.uint8))], {"size": [8, 8]})
    with pytest.raises(ValueError, match="scales must be positive"):
        F.resize(x, 0, 2)


# ---------------------------------------------------------------- PyTorch
@pytest.fixture(scope="module")
def torch_f():
    torch = pytest.importorskip("torch")
    return torch, torch.nn.functional


@pytest.mark.parametrize("ceil_mode", [False, True])
@pytest.mark.parametrize("padding,dilation,stride", [(0, 1, 1), (1, 1, 2), (1, 2, 2), (1, 2, 3), ((1, 0), (1, 2), (2, 1))])
def test_max_pool_matches_torch(rng, torch_f, ceil_mode, padding, dilation, stride):
    torch, TF = torch_f
    x = rand(rng, (2, 3, 19, 24))
    ph, pw = (padding, padding) if isinstance(padding, int) else padding
    dil = (dilation, dilation) if isinstance(dilation, int) else dilation
    st = (stride, stride) if isinstance(stride, int) else stride
    expected = TF.max_pool2d(torch.from_numpy(x), 3, st, (ph, pw), dil, ceil_mode).numpy()
    check(P._max_pool_nchw(F.const(x), (3, 3), st, (ph, pw, ph, pw), dil, ceil_mode).numpy(), expected, exact=True)


@pytest.mark.parametrize("count_include_pad", [False, True])
@pytest.mark.parametrize("ceil_mode", [False, True])
@pytest.mark.parametrize("kernel,stride,padding", [(3, 2, 1), (2, 2, 0), ((3, 2), (2, 3), (1, 1)), (5, 3, 2)])
def test_avg_pool_matches_torch(rng, torch_f, count_include_pad, ceil_mode, kernel, stride, padding):
    torch, TF = torch_f
    x = rand(rng, (2, 3, 17, 22))
    k = (kernel, kernel) if isinstance(kernel, int) else kernel
    s = (stride, stride) if isinstance(stride, int) else stride
    p = (padding, padding) if isinstance(padding, int) else padding
    expected = TF.avg_pool2d(torch.from_numpy(x), k, s, p, ceil_mode, count_include_pad).numpy()
    ours = P._avg_pool_nchw(F.const(x), k, s, (p[0], p[1], p[0], p[1]), ceil_mode, count_include_pad).numpy()
    check(ours, expected)


@pytest.mark.parametrize("shape", [(1, 2048, 7, 7), (1, 960, 14, 14), (2, 3, 5, 9)])
def test_global_avg_pool_matches_torch(rng, torch_f, shape):
    torch, TF = torch_f
    x = rand(rng, shape)
    expected = TF.adaptive_avg_pool2d(torch.from_numpy(x), 1).numpy()
    check(P._avg_pool_nchw(F.const(x), shape[2:], (1, 1), (0, 0, 0, 0)).numpy(), expected)


@pytest.mark.parametrize("out_hw", [(14, 18), (5, 4), (21, 64), (7, 9)])
@pytest.mark.parametrize("torch_mode,align_corners", [("bilinear", False), ("bilinear", True), ("bicubic", False),
                                                      ("bicubic", True), ("nearest", None)])
def test_resize_matches_torch_interpolate(rng, torch_f, out_hw, torch_mode, align_corners):
    torch, TF = torch_f
    x = rand(rng, (2, 3, 7, 9))
    expected = TF.interpolate(torch.from_numpy(x), out_hw, mode=torch_mode, align_corners=align_corners).numpy()
    mode = {"bilinear": "linear", "bicubic": "cubic", "nearest": "nearest"}[torch_mode]
    if torch_mode == "nearest":
        ours = P._resize_nchw(F.const(x), out_hw, "nearest", "asymmetric", "floor")
    else:
        coordinates = "align_corners" if align_corners else "pytorch_half_pixel"
        ours = P._resize_nchw(F.const(x), out_hw, mode, coordinates)
    # PyTorch forms source coordinates as in/out * (o + 0.5) - 0.5, ONNX as (o + 0.5) / (out/in) - 0.5:
    # equal up to float rounding, which the steep cubic weights amplify to a few 1e-6 of the range.
    check(ours.numpy(), expected, exact=torch_mode == "nearest", atol=5e-5 if mode == "cubic" else ATOL)


# ---------------------------------------------------------------- onnxruntime
@pytest.fixture(scope="module")
def ort_resize():
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    def run(x, out_hw, **attrs):
        sizes = helper.make_tensor("sizes", TensorProto.INT64, [4], list(x.shape[:2]) + list(out_hw))
        node = helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], **attrs)
        graph = helper.make_graph([node], "resize", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=[sizes])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = 7
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        return session.run(None, {"x": x})[0]
    return run


@pytest.mark.parametrize("nearest_mode", NEAREST_MODES)
@pytest.mark.parametrize("coordinates", COORDINATE_MODES)
def test_resize_nearest_matches_onnxruntime(rng, ort_resize, coordinates, nearest_mode):
    x = rand(rng, (2, 3, 6, 10))
    for out_hw in [(12, 20), (3, 5), (9, 25), (4, 7), (13, 3)]:
        expected = ort_resize(x, out_hw, mode="nearest", coordinate_transformation_mode=coordinates,
                              nearest_mode=nearest_mode)
        ours = P._resize_nchw(F.const(x), out_hw, "nearest", coordinates, nearest_mode)
        check(ours.numpy(), expected, exact=True)


@pytest.mark.parametrize("coordinates", COORDINATE_MODES[:4])
@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_resize_interpolation_matches_onnxruntime(rng, ort_resize, coordinates, mode):
    x = rand(rng, (2, 3, 6, 10))
    for out_hw in [(12, 20), (3, 5), (9, 25), (13, 3)]:
        expected = ort_resize(x, out_hw, mode=mode, coordinate_transformation_mode=coordinates)
        check(P._resize_nchw(F.const(x), out_hw, mode, coordinates).numpy(), expected)


@pytest.mark.parametrize("exclude_outside", [0, 1])
def test_resize_cubic_options_match_onnxruntime(rng, ort_resize, exclude_outside):
    x = rand(rng, (1, 2, 8, 11))
    for out_hw in [(16, 5), (8, 30)]:
        expected = ort_resize(x, out_hw, mode="cubic", cubic_coeff_a=-0.5, exclude_outside=exclude_outside)
        ours = P._resize_nchw(F.const(x), out_hw, "cubic", "half_pixel", cubic_coeff_a=-0.5,
                              exclude_outside=bool(exclude_outside))
        check(ours.numpy(), expected)
