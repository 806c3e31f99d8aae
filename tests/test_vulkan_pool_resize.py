"""MaxPool2D, AvgPool2D and Resize on the Vulkan backend, each step checked to have run on the device.

Against the CPU backend (the same op): max pooling, average pooling of windows and every Resize mode
bit for bit (the device combines the CPU's own window and tap tables in the CPU's order, its fused
multiply-adds rounded once); global average pooling, a reduction in another order, within gamma_(n+1)
times the mean of |x|. Against PyTorch (torch.nn.functional) where its semantics are the same:
pooling with ceil_mode and count_include_pad, NaN propagation of max pooling (which the CPU kernel
does not reproduce: its SIMD and scalar paths let NaNs through differently), and interpolate
(nearest, bilinear, bicubic, align_corners) within bounds derived from float32 coordinates and
arithmetic. Shapes stay small (lavapipe computes on the CPU) but span several workgroups of 256."""
import itertools

import numpy as np
import pytest

import mnnpy
import mnnpy.nn.functional as NF
from mnnpy import _expr_pool as P
from mnnpy import expr as F

U32 = 2.0 ** -24  # float32's unit roundoff


def gamma(n):
    return n * U32 / (1 - n * U32)


def rand(rng, shape):
    return (rng.random(shape, dtype=np.float32) * 20 - 10).astype(np.float32)


def run(build, backend):
    """build()'s single value computed on `backend`, and the steps (copies left out) that ran."""
    mnnpy._core.set_executor_option("profile", True)
    try:
        with mnnpy.backend(backend):
            (value,) = mnnpy.eval(build())
    finally:
        mnnpy._core.set_executor_option("profile", False)
    return np.asarray(value), [s for s in mnnpy._core.last_profile() if not s["op"].startswith("Copy(")]


def on_vulkan(build, op, scheme=None):
    """build()'s value, checked to have run whole on Vulkan with an `op` step (of `scheme`, if given)."""
    value, steps = run(build, "vulkan")
    assert mnnpy._core.executor_stats()["last_fallbacks"] == 0, steps
    assert all(s["backend"] == "vulkan" for s in steps), steps
    ours = [s for s in steps if s["op"] == op]
    assert ours, steps
    if scheme is not None:
        assert all(s["scheme"] == scheme for s in ours), ours
    return value


def on_cpu(build):
    return run(build, "cpu")[0]


def assert_bitwise_equal(got, expected):
    """The same bits, NaN for NaN: a NaN's sign and payload are the device's own (x86 makes
    0xffc00000 from 0 * inf, NVIDIA 0x7fffffff), and NumPy gives them no meaning."""
    assert got.dtype == expected.dtype == np.float32 and got.shape == expected.shape, (got.shape, expected.shape)
    nan = np.isnan(expected)
    np.testing.assert_array_equal(np.isnan(got), nan)
    assert np.ascontiguousarray(np.where(nan, 0, got)).tobytes() == np.ascontiguousarray(np.where(nan, 0, expected)).tobytes(), \
        np.nanmax(np.abs(got.astype(np.float64) - expected))


def assert_same_as_cpu(build, op, scheme=None):
    got = on_vulkan(build, op, scheme)
    assert_bitwise_equal(got, on_cpu(build))
    return got


# ---------------------------------------------------------------- pooling against the CPU
# (shape, kernel, strides, pads (top, left, bottom, right), dilations, ceil_mode)
POOL_CASES = [
    ((2, 3, 11, 13), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), False),
    ((2, 3, 11, 13), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), True),
    ((2, 8, 33, 47), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), False),  # 97 workgroups
    ((1, 2, 20, 37), (3, 2), (3, 2), (2, 0, 0, 1), (1, 1), True),
    ((2, 3, 15, 33), (3, 3), (1, 2), (0, 0, 0, 0), (2, 2), False),
    ((2, 3, 15, 33), (2, 3), (2, 3), (1, 1, 1, 1), (2, 3), True),
    ((3, 2, 9, 64), (4, 4), (4, 4), (0, 0, 0, 0), (1, 1), True),
    ((1, 2, 7, 5), (1, 1), (2, 2), (0, 0, 0, 0), (1, 1), True),
    ((1, 3, 5, 6), (5, 6), (2, 2), (4, 5, 4, 5), (1, 1), True),  # windows mostly padding
    ((1, 2, 1, 2), (1, 2), (1, 1), (0, 1, 0, 2), (1, 3), False),  # a window with no tap inside
    ((2, 1, 6, 9), (6, 2), (1, 1), (0, 0, 0, 0), (1, 1), False),  # one output row: not a whole plane
]


def pool_id(case):
    shape, kernel, strides, pads, dilations, ceil_mode = case
    return f"{shape}-k{kernel}-s{strides}-p{pads}-d{dilations}-ceil{int(ceil_mode)}"


@pytest.mark.parametrize("case", POOL_CASES, ids=pool_id)
def test_max_pool_matches_the_cpu(vulkan, rng, case):
    shape, kernel, strides, pads, dilations, ceil_mode = case
    x = rand(rng, shape)
    assert_same_as_cpu(lambda: P._max_pool_nchw(F.const(x), kernel, strides, pads, dilations, ceil_mode),
                       "MaxPool2D", "window")


@pytest.mark.parametrize("include", [0, 1])
@pytest.mark.parametrize("case", POOL_CASES, ids=pool_id)
def test_avg_pool_matches_the_cpu(vulkan, rng, case, include):
    # Through the op itself: its attributes include dilations, which the converter helper leaves out.
    shape, kernel, strides, pads, dilations, ceil_mode = case
    x = rand(rng, shape)
    attrs = {"kernel": list(kernel), "strides": list(strides), "pads": list(pads), "dilations": list(dilations),
             "ceil_mode": int(ceil_mode), "count_include_pad": include}
    assert_same_as_cpu(lambda: mnnpy._core.op("AvgPool2D", [F.const(x)], attrs), "AvgPool2D", "window")


def test_windows_with_no_tap_inside_give_the_identity(vulkan, rng):
    x = rand(rng, (1, 2, 1, 2))
    attrs = {"kernel": [1, 2], "strides": [1, 1], "pads": [0, 1, 0, 2], "dilations": [1, 3]}
    mx = on_vulkan(lambda: mnnpy._core.op("MaxPool2D", [F.const(x)], attrs), "MaxPool2D")
    avg = on_vulkan(lambda: mnnpy._core.op("AvgPool2D", [F.const(x)], attrs), "AvgPool2D")
    # Output column 0's taps are at columns -1 and 2 (none inside), column 1's at 0 and 3.
    np.testing.assert_array_equal(mx[..., 0], np.full((1, 2, 1), -np.inf, np.float32))
    np.testing.assert_array_equal(mx[..., 1], x[..., 0])
    np.testing.assert_array_equal(avg, np.stack([np.zeros_like(x[..., 0]), x[..., 0]], -1))


# ---------------------------------------------------------------- global pooling
@pytest.mark.parametrize("shape, segment", [
    ((1, 3, 1, 1), 1), ((2, 96, 7, 7), 8), ((2, 5, 3, 100), 64), ((1, 6, 56, 56), 256), ((300, 1, 5, 5), 4),
])
def test_global_pooling_is_a_plane_reduction(vulkan, rng, shape, segment):
    x = rand(rng, shape)
    n = shape[2] * shape[3]
    build = lambda: P._max_pool_nchw(F.const(x), shape[2:], (1, 1), (0, 0, 0, 0))  # noqa: E731
    mx = assert_same_as_cpu(build, "MaxPool2D", f"plane/{segment}")
    np.testing.assert_array_equal(mx, x.max(axis=(2, 3), keepdims=True))
    build = lambda: P._avg_pool_nchw(F.const(x), shape[2:], (1, 1), (0, 0, 0, 0))  # noqa: E731
    avg = on_vulkan(build, "AvgPool2D", f"plane/{segment}")
    # A sum of n terms in any order, times fl(1 / n): within gamma_(n+1) * mean|x| of the mean, as
    # is the CPU's (in another order).
    x64 = x.astype(np.float64)
    bound = gamma(n + 1) * np.abs(x64).mean(axis=(2, 3), keepdims=True)
    mean = x64.mean(axis=(2, 3), keepdims=True)
    assert np.all(np.abs(avg - mean) <= bound)
    assert np.all(np.abs(avg - on_cpu(build)) <= 2 * bound)


def test_global_pooling_through_mnn_and_torch_entry_points(vulkan, rng):
    x = rand(rng, (2, 7, 9, 11))
    mx = on_vulkan(lambda: F.max_pool(F.const(x), [-1, -1], [1, 1]), "MaxPool2D", "plane/16")
    np.testing.assert_array_equal(mx, x.max(axis=(2, 3), keepdims=True))
    avg = on_vulkan(lambda: NF.avg_pool2d(F.const(x), (9, 11)), "AvgPool2D", "plane/16")
    x64 = x.astype(np.float64)
    assert np.all(np.abs(avg - x64.mean(axis=(2, 3), keepdims=True))
                  <= gamma(100) * np.abs(x64).mean(axis=(2, 3), keepdims=True))


# ---------------------------------------------------------------- NaN, empty batches, plans
def test_max_pool_propagates_nan(vulkan, rng, torch_f):
    torch, TF = torch_f
    x = rand(rng, (2, 3, 13, 17))
    x[rng.random(x.shape) < 0.03] = np.nan
    x[0, 0, 0, 0] = x[1, 2, 12, 16] = np.nan  # a window's first and last tap
    for kernel, stride, padding, dilation, ceil_mode in [(3, 2, 1, 1, True), (2, 1, 0, 2, False), (3, 3, 1, 1, False)]:
        got = on_vulkan(lambda: NF.max_pool2d(F.const(x), kernel, stride, padding, dilation, ceil_mode), "MaxPool2D")
        expected = TF.max_pool2d(torch.from_numpy(x), kernel, stride, padding, dilation, ceil_mode).numpy()
        np.testing.assert_array_equal(got, expected)  # NaN where torch has NaN
        assert np.isnan(got).any() and not np.isnan(got).all()
    # Whole planes: a NaN anywhere in the plane.
    y = rand(rng, (3, 4, 40, 40))
    y[1, 2, 39, 39] = y[2, 0, 0, 0] = y[0, 3, 17, 5] = np.nan
    got = on_vulkan(lambda: P._max_pool_nchw(F.const(y), (40, 40), (1, 1), (0, 0, 0, 0)), "MaxPool2D", "plane/256")
    np.testing.assert_array_equal(got, y.max(axis=(2, 3), keepdims=True))
    assert np.isnan(got).sum() == 3


def test_empty_batch(vulkan):
    x = np.zeros((0, 3, 8, 8), np.float32)
    assert on_vulkan(lambda: P._max_pool_nchw(F.const(x), (2, 2), (2, 2), (0, 0, 0, 0)), "MaxPool2D").shape \
        == (0, 3, 4, 4)
    assert on_vulkan(lambda: P._avg_pool_nchw(F.const(x), (8, 8), (1, 1), (0, 0, 0, 0)), "AvgPool2D").shape \
        == (0, 3, 1, 1)
    assert on_vulkan(lambda: P._resize_nchw(F.const(x), (3, 5), "cubic"), "Resize").shape == (0, 3, 3, 5)


def test_plan_reruns_with_new_input_values(vulkan, rng):
    x = F.placeholder((2, 3, 13, 21))
    pooled = P._max_pool_nchw(x, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), True)
    averaged = P._avg_pool_nchw(x, (2, 3), (1, 2), (1, 0, 0, 1))
    resized = P._resize_nchw(x, (30, 17), "linear", "align_corners")
    for _ in range(3):
        values = rand(rng, (2, 3, 13, 21))
        x.write(values)
        got = [on_vulkan(lambda v=v: v, op) for v, op in
               [(pooled, "MaxPool2D"), (averaged, "AvgPool2D"), (resized, "Resize")]]
        for ours, v in zip(got, [pooled, averaged, resized]):
            assert_bitwise_equal(ours, on_cpu(lambda v=v: v))


def test_bad_pool_arguments_raise(vulkan):
    x = F.const(np.zeros((1, 2, 5, 5), np.float32))
    with pytest.raises(ValueError, match="larger than the padded input"):
        P._max_pool_nchw(x, (7, 2), (1, 1), (0, 0, 0, 0)).numpy()
    with pytest.raises(ValueError, match="'size' needs 2 values"):
        mnnpy._core.op("Resize", [x], {"size": [4]})


# ---------------------------------------------------------------- pooling against PyTorch
@pytest.fixture(scope="module")
def torch_f():
    torch = pytest.importorskip("torch")
    return torch, torch.nn.functional


@pytest.mark.parametrize("ceil_mode", [False, True])
@pytest.mark.parametrize("padding,dilation,stride", [(0, 1, 1), (1, 2, 2), (1, (1, 2), (2, 3))])
def test_max_pool_matches_torch(vulkan, rng, torch_f, ceil_mode, padding, dilation, stride):
    torch, TF = torch_f
    x = rand(rng, (3, 5, 19, 24))
    got = on_vulkan(lambda: NF.max_pool2d(F.const(x), 3, stride, padding, dilation, ceil_mode), "MaxPool2D")
    np.testing.assert_array_equal(got, TF.max_pool2d(torch.from_numpy(x), 3, stride, padding, dilation,
                                                     ceil_mode).numpy())


@pytest.mark.parametrize("count_include_pad", [False, True])
@pytest.mark.parametrize("ceil_mode", [False, True])
@pytest.mark.parametrize("kernel,stride,padding", [(3, 2, 1), ((3, 2), (2, 3), (1, 1)), (5, 3, 2)])
def test_avg_pool_matches_torch(vulkan, rng, torch_f, count_include_pad, ceil_mode, kernel, stride, padding):
    torch, TF = torch_f
    x = rand(rng, (2, 3, 17, 22))
    got = on_vulkan(lambda: NF.avg_pool2d(F.const(x), kernel, stride, padding, ceil_mode, count_include_pad),
                    "AvgPool2D")
    expected = TF.avg_pool2d(torch.from_numpy(x).double(), kernel, stride, padding, ceil_mode,
                             count_include_pad).numpy()
    # k terms summed in float32, then two products by rounded reciprocals: within gamma_(k+3) times
    # the mean of |x| over the window.
    taps = np.prod(np.broadcast_to(kernel, 2))
    mean_abs = TF.avg_pool2d(torch.from_numpy(np.abs(x)).double(), kernel, stride, padding, ceil_mode,
                             count_include_pad).numpy()
    assert np.all(np.abs(got - expected) <= gamma(taps + 3) * mean_abs)


# ---------------------------------------------------------------- Resize against the CPU
COORDINATE_MODES = ["half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                    "tf_half_pixel_for_nn"]
RESIZE_SIZES = [((2, 3, 7, 9), (14, 18)), ((1, 2, 16, 33), (5, 12)), ((2, 1, 5, 6), (11, 4)),
                ((1, 3, 8, 8), (8, 8)), ((1, 2, 1, 5), (3, 1)), ((1, 2, 9, 40), (9, 87))]


@pytest.mark.parametrize("sizes", RESIZE_SIZES, ids=lambda s: f"{s[0]}->{s[1]}")
@pytest.mark.parametrize("coordinates", COORDINATE_MODES)
@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_resize_matches_the_cpu(vulkan, rng, sizes, coordinates, mode):
    shape, out_hw = sizes
    x = rand(rng, shape)
    # Equal sizes may be an identity (gathered) or not (tf_half_pixel_for_nn shifts by half a pixel).
    scheme = "gather" if mode == "nearest" else "interpolate" if shape[2:] != out_hw else None
    assert_same_as_cpu(lambda: P._resize_nchw(F.const(x), out_hw, mode, coordinates), "Resize", scheme)


@pytest.mark.parametrize("nearest_mode", ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"])
def test_resize_nearest_modes_match_the_cpu(vulkan, rng, nearest_mode):
    x = rand(rng, (2, 2, 6, 10))
    for coordinates in COORDINATE_MODES:
        for out_hw in [(12, 20), (3, 5), (9, 25), (13, 3)]:
            assert_same_as_cpu(lambda: P._resize_nchw(F.const(x), out_hw, "nearest", coordinates, nearest_mode),
                               "Resize", "gather")


@pytest.mark.parametrize("exclude_outside", [False, True])
@pytest.mark.parametrize("a", [-0.75, -0.5])
def test_resize_cubic_options_match_the_cpu(vulkan, rng, exclude_outside, a):
    x = rand(rng, (1, 3, 9, 13))
    for out_hw in [(20, 7), (9, 30), (9, 13)]:
        assert_same_as_cpu(lambda: P._resize_nchw(F.const(x), out_hw, "cubic", "half_pixel", cubic_coeff_a=a,
                                                  exclude_outside=exclude_outside), "Resize")


@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_antialiased_downsampling_matches_the_cpu(vulkan, rng, mode):
    x = rand(rng, (2, 2, 30, 41))
    for out_hw in [(10, 9), (30, 13), (11, 60), (7, 41)]:
        assert_same_as_cpu(lambda: P._resize_nchw(F.const(x), out_hw, mode, "half_pixel", antialias=True), "Resize")


def test_antialiasing_too_wide_for_one_invocation_stays_on_the_cpu(vulkan, rng):
    x = rand(rng, (1, 1, 200, 200))
    value, steps = run(lambda: P._resize_nchw(F.const(x), (3, 3), "cubic", antialias=True), "vulkan")
    assert [s["backend"] for s in steps if s["op"] == "Resize"] == ["cpu"]
    assert_bitwise_equal(value, on_cpu(lambda: P._resize_nchw(F.const(x), (3, 3), "cubic", antialias=True)))


def test_resize_with_model_scales_and_rank_3_match_the_cpu(vulkan, rng):
    x = rand(rng, (1, 2, 6, 8))
    assert_same_as_cpu(lambda: F.resize(F.const(x), 1.5, 0.5), "Resize")
    assert_same_as_cpu(lambda: P._resize_nchw(F.const(x), (7, 10), "cubic", "half_pixel", scales=(1.3, 1.3)),
                       "Resize")
    y = rand(rng, (3, 2, 11))
    for mode in ["nearest", "linear", "cubic"]:
        assert_same_as_cpu(lambda: P._resize_nchw(F.const(y), (25,), mode, "align_corners"), "Resize")


def test_resize_of_special_values_matches_the_cpu(vulkan, rng):
    # Infinities and NaN meet taps of weight 0 (0 * inf is NaN) and identity axes, where the CPU
    # reads rows as they are.
    x = rand(rng, (1, 2, 8, 8))
    x[0, 0, 3, 4] = np.inf
    x[0, 1, 5, 2] = -np.inf
    x[0, 1, 0, 7] = np.nan
    for out_hw in [(16, 8), (8, 16), (16, 16), (8, 8), (5, 8)]:
        for mode in ["linear", "cubic"]:
            assert_same_as_cpu(lambda: P._resize_nchw(F.const(x), out_hw, mode, "align_corners"), "Resize")


# ---------------------------------------------------------------- Resize against PyTorch
def weight_polynomials(mode, a=-0.75):
    """The weights of an output's taps as polynomials in t = x - floor(x), and each as a polynomial in
    the variable the CPU evaluates it from (t, 1 - t, t + 1 or 2 - t) with that variable's range."""
    t, one = np.poly1d([1, 0]), np.poly1d([1])
    if mode == "bilinear":
        return [one - t, t], [(one - t, 1.0), (t, 1.0)]
    far = lambda v: a * v ** 3 - 5 * a * v ** 2 + 8 * a * v - 4 * a  # noqa: E731
    near = lambda v: (a + 2) * v ** 3 - (a + 3) * v ** 2 + 1  # noqa: E731
    return ([far(t + one), near(t), near(one - t), far(2 * one - t)],
            [(far(t), 2.0), (near(t), 1.0), (near(t), 1.0), (far(t), 2.0)])


def sup_abs_sum(polys):
    """max over t in [0, 1] of sum |p(t)|: at an end, where a p changes sign, or where a signed sum of
    them has a vanishing derivative."""
    def roots(p):
        return [r.real for r in np.atleast_1d(p.roots) if abs(r.imag) < 1e-9 and 0 <= r.real <= 1]
    at = [0.0, 1.0] + [r for p in polys for r in roots(p)]
    for signs in itertools.product([1, -1], repeat=len(polys)):
        at += roots(sum((s * p for s, p in zip(signs, polys)), np.poly1d([0])).deriv())
    return max(sum(abs(p(t)) for p in polys) for t in at)


def interpolation_bound(x, in_hw, mode):
    """|ours - PyTorch's in float64| for a separable interpolation with the weights of `mode`, from
    float32 arithmetic: per axis the weights sum to at most W in magnitude and move by at most D,
    D = L * dc + E, where L bounds their change per unit of coordinate, dc = 4u (in + 1) the error of
    the coordinate computed in float32, and E the error of evaluating them in float32 (Horner on a
    variable rounded once: gamma_8 times the sum of the terms' magnitudes, plus 2u L). The output then
    errs by max|x| (D_h W + W D_w + D_h D_w), plus gamma_9 (W + D_h) (W + D_w) max|x| for the two
    passes' sums."""
    weights, evaluated = weight_polynomials(mode)
    w = sup_abs_sum(weights)
    lipschitz = sup_abs_sum([p.deriv() for p in weights])
    horner = sum(sum(abs(c) * top ** i for i, c in enumerate(p.coeffs[::-1])) for p, top in evaluated)
    d_h, d_w = (lipschitz * 4 * U32 * (n + 1) + gamma(8) * horner + 2 * U32 * lipschitz for n in in_hw)
    largest = float(np.abs(x).max())
    return largest * (d_h * w + w * d_w + d_h * d_w + gamma(9) * (w + d_h) * (w + d_w))


@pytest.mark.parametrize("out_hw", [(14, 18), (5, 4), (21, 64), (7, 9)])
@pytest.mark.parametrize("torch_mode,align_corners", [("bilinear", False), ("bilinear", True), ("bicubic", False),
                                                      ("bicubic", True), ("nearest", None)])
def test_resize_matches_torch_interpolate(vulkan, rng, torch_f, out_hw, torch_mode, align_corners):
    torch, TF = torch_f
    x = rand(rng, (2, 3, 7, 9))
    if torch_mode == "nearest":
        got = on_vulkan(lambda: P._resize_nchw(F.const(x), out_hw, "nearest", "asymmetric", "floor"), "Resize")
        np.testing.assert_array_equal(got, TF.interpolate(torch.from_numpy(x), out_hw, mode="nearest").numpy())
        return
    mode = "linear" if torch_mode == "bilinear" else "cubic"
    coordinates = "align_corners" if align_corners else "pytorch_half_pixel"
    got = on_vulkan(lambda: P._resize_nchw(F.const(x), out_hw, mode, coordinates), "Resize")
    expected = TF.interpolate(torch.from_numpy(x).double(), out_hw, mode=torch_mode,
                              align_corners=align_corners).numpy()
    assert np.all(np.abs(got - expected) <= interpolation_bound(x, x.shape[2:], torch_mode))
