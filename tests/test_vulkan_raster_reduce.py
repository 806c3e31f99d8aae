"""Raster and Reduce on the Vulkan backend: data-movement ops (which lower to Raster) bit for bit
against NumPy, reductions within bounds derived from float32 arithmetic, and each step checked to
have run on the device. Shapes stay small (lavapipe computes on the CPU) but span several
workgroups of 256 invocations."""
import numpy as np
import pytest

import mnnpy
import mnnpy.cv as mcv
import mnnpy.numpy as mp
from mnnpy import expr as F

U32 = 2.0 ** -24  # float32's unit roundoff


def run_profiled(build):
    """The values of the Vars build() returns, computed on the backend in effect, and the steps
    (copies left out) that ran."""
    mnnpy._core.set_executor_option("profile", True)
    try:
        values = mnnpy.eval(*build())
    finally:
        mnnpy._core.set_executor_option("profile", False)
    return values, [s for s in mnnpy._core.last_profile() if not s["op"].startswith("Copy(")]


def on_vulkan(build, op):
    """build()'s single value, checked to have run whole on Vulkan with at least one `op` step."""
    (value,), steps = run_profiled(lambda: [build()])
    assert mnnpy._core.executor_stats()["last_fallbacks"] == 0, steps
    assert all(s["backend"] == "vulkan" for s in steps), steps
    assert op in [s["op"] for s in steps], steps
    return value


def backend_of(build, op):
    """build()'s single value and the backend its `op` steps ran on (one backend for them all)."""
    (value,), steps = run_profiled(lambda: [build()])
    backends = {s["backend"] for s in steps if s["op"] == op}
    assert len(backends) == 1, steps
    return value, backends.pop()


def assert_bitwise_equal(got, expected):
    expected = np.asarray(expected)
    assert got.dtype == expected.dtype and got.shape == expected.shape, (got.dtype, got.shape, expected.shape)
    assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(expected).tobytes()


def fresh(shape, dtype=np.float32):
    values = np.random.default_rng(7).standard_normal(shape) * 1000
    return values.astype(dtype)


def raster(inputs, shape, regions, fill=None):
    """A Raster node; each region is (input, src_offset, dst_offset, sizes, src_strides, dst_strides)."""
    flat = []
    for index, src, dst, sizes, src_strides, dst_strides in regions:
        flat += [index, len(sizes), src, dst, *sizes, *src_strides, *dst_strides]
    attrs = {"shape": list(shape), "regions": flat}
    if fill is not None:
        attrs["fill"] = fill
    return mnnpy._core.op("Raster", [F.const(x) for x in inputs], attrs)


def raster_reference(inputs, shape, regions, fill=None, dtype=np.float32):
    out = np.full(int(np.prod(shape)), 0 if fill is None else fill, dtype=dtype)
    for index, src, dst, sizes, src_strides, dst_strides in regions:
        flat = np.asarray(inputs[index]).reshape(-1)
        for at in np.ndindex(*sizes):
            out[dst + int(np.dot(at, dst_strides))] = flat[src + int(np.dot(at, src_strides))]
    return out.reshape(shape)


# ---------------------------------------------------------------- Raster through the public ops
@pytest.mark.parametrize("shape, perm", [
    ((3, 5, 7), [2, 0, 1]),
    ((3, 5, 7), [1, 0, 2]),        # the innermost run stays contiguous
    ((300, 257), [1, 0]),          # 302 workgroups
    ((2, 3, 1, 5, 1, 3), [5, 3, 1, 0, 2, 4]),
])
def test_transpose(vulkan, shape, perm):
    x = fresh(shape)
    assert_bitwise_equal(on_vulkan(lambda: F.transpose(F.const(x), perm), "Raster"), x.transpose(perm))


@pytest.mark.parametrize("shape, perm", [((1, 1, 1), [2, 1, 0]), ((0, 3, 4), [2, 0, 1]), ((3, 0), [1, 0])])
def test_transpose_of_one_or_no_element(vulkan, shape, perm):
    x = fresh(shape)
    (got,), steps = run_profiled(lambda: [F.transpose(F.const(x), perm)])
    assert all(s["backend"] == "vulkan" for s in steps), steps
    assert_bitwise_equal(got, x.transpose(perm))


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float64])
def test_transpose_of_4_and_8_byte_dtypes(vulkan, dtype):
    x = (np.arange(3 * 7 * 5) * 0x10001 - 3).astype(dtype).reshape(3, 7, 5)
    assert_bitwise_equal(on_vulkan(lambda: F.transpose(F.const(x), [1, 2, 0]), "Raster"), x.transpose(1, 2, 0))


def test_negative_step_slices(vulkan):
    x = fresh((7, 6, 5))
    for index in [np.s_[::-2, 1::3, ::-1], np.s_[-1::-3, 4:0:-2, 2], np.s_[5:2:-1, ::-7], np.s_[::-1]]:
        assert_bitwise_equal(on_vulkan(lambda: F.const(x)[index], "Raster"), x[index])


def test_concat_and_split_of_odd_parts(vulkan):
    parts = [fresh((3, 1, 5)), fresh((3, 7, 5)), fresh((3, 2, 5))]
    joined = on_vulkan(lambda: F.concat([F.const(p) for p in parts], 1), "Raster")
    assert_bitwise_equal(joined, np.concatenate(parts, 1))
    x = fresh((5, 11))
    for k, expected in enumerate(np.split(x, [3, 4], 1)):
        assert_bitwise_equal(on_vulkan(lambda: F.split(F.const(x), [3, 1, 7], 1)[k], "Raster"), expected)


@pytest.mark.parametrize("shape, target", [((3, 1), (4, 3, 600)), ((1,), (1000,)), ((2, 1, 3), (2, 5, 3))])
def test_broadcast_to_reads_with_stride_zero(vulkan, shape, target):
    x = fresh(shape)
    assert_bitwise_equal(on_vulkan(lambda: F.broadcast_to(F.const(x), list(target)), "Raster"),
                         np.broadcast_to(x, target))


@pytest.mark.parametrize("dtype, value", [(np.float32, 1.5), (np.float32, -0.0), (np.int32, -7), (np.int64, 7),
                                          (np.int64, -1), (np.float64, 2.25), (np.float64, 0.0)])
def test_constant_padding_fills_the_rest(vulkan, dtype, value):
    x = fresh((3, 4), dtype)
    pads = [[2, 0], [1, 3]]
    got = on_vulkan(lambda: F.pad(F.const(x), pads, "constant", value), "Raster")
    assert_bitwise_equal(got, np.pad(x, pads, constant_values=value))


@pytest.mark.parametrize("code, flipped", [(0, lambda a: a[::-1]), (1, lambda a: a[:, ::-1]),
                                           (-1, lambda a: a[::-1, ::-1])])
@pytest.mark.parametrize("shape", [(31, 45), (17, 33, 3), (1, 1)])
def test_cv_flip_of_float_images(vulkan, code, flipped, shape):
    image = fresh(shape)
    assert_bitwise_equal(on_vulkan(lambda: mcv.flip(F.const(image), code), "Raster"), flipped(image))


def gathered_rows(x, indices):
    """A Raster copying row indices[j] of x to row j, as Gather's decomposition builds it for a
    backend without a Gather kernel (Vulkan has one: Gather itself does not lower here)."""
    n, inner = x.shape
    regions = [(0, (int(k) % n) * inner, j * inner, [inner], [1], [1]) for j, k in enumerate(indices)]
    return raster([x], (len(indices), inner), regions)


def test_gather_by_4096_constant_indices_takes_few_dispatches(vulkan):
    x = fresh((5000, 3))
    indices = np.random.default_rng(3).integers(-5000, 5000, 4096)
    got = on_vulkan(lambda: gathered_rows(x, indices), "Raster")
    assert_bitwise_equal(got, np.take(x, indices, 0))


def test_gathered_rows_longer_than_their_workgroups_loop(vulkan):
    # 4096 regions share a dispatch of 4 workgroups each: each invocation copies 2 elements a row.
    x = fresh((50, 1300))
    indices = np.random.default_rng(4).integers(0, 50, 4096)
    got = on_vulkan(lambda: gathered_rows(x, indices), "Raster")
    assert_bitwise_equal(got, np.take(x, indices, 0))


# ---------------------------------------------------------------- Raster regions directly
@pytest.mark.parametrize("regions, fill", [
    # x reversed by a negative source stride, over the fill.
    ([(0, 11, 0, [12], [-1], [1])], 3.0),
    # One element repeated along a row and a column (source strides 0), no fill.
    ([(0, 5, 0, [3, 4], [0, 0], [4, 1])], None),
    # Later regions overwrite earlier ones: the whole of x, then x[::2] reversed over 0..5, then
    # one element over position 2.
    ([(0, 0, 0, [12], [1], [1]), (0, 10, 0, [6], [-2], [1]), (0, 7, 2, [], [], [])], None),
    # The same row written by 300 regions in turn: the last one stays.
    ([(0, k % 9, 0, [3], [1], [1]) for k in range(300)], -1.0),
    # Regions of two inputs interleaved along the last axis.
    ([(0, 0, 0, [6], [2], [2]), (1, 1, 1, [6], [1], [2])], None),
    # Rank 8 after collapsing: eight dims of 2, none mergeable.
    ([(0, 0, 0, [2] * 8, [1, 2, 4, 8, 16, 32, 64, 128], [128, 64, 32, 16, 8, 4, 2, 1])], None),
    # Empty regions write nothing.
    ([(0, 0, 0, [0, 3], [1, 1], [1, 1]), (0, 0, 4, [2], [1], [1])], 9.0),
])
def test_raster_regions_match_the_cpu(vulkan, regions, fill):
    inputs = [np.arange(256, dtype=np.float32) * 1.25, -np.arange(256, dtype=np.float32)]
    used = max(r[0] for r in regions) + 1
    shape = (256,) if any(len(r[3]) == 8 for r in regions) else (12,)
    got = on_vulkan(lambda: raster(inputs[:used], shape, regions, fill), "Raster")
    expected = raster_reference(inputs[:used], shape, regions, fill)
    assert_bitwise_equal(got, expected)
    with mnnpy.backend("cpu"):
        assert_bitwise_equal(raster(inputs[:used], shape, regions, fill).read(), expected)


def test_raster_past_rank_8_or_writing_twice_falls_back(vulkan):
    x = np.arange(512, dtype=np.float32)
    nine = [(0, 0, 0, [2] * 9, [1 << k for k in range(9)], [1 << (8 - k) for k in range(9)])]
    got, backend = backend_of(lambda: raster([x], (512,), nine), "Raster")
    assert backend == "cpu"
    assert_bitwise_equal(got, raster_reference([x], (512,), nine))
    # A destination stride of 0 writes one element many times: left to the CPU's order.
    twice = [(0, 0, 0, [4], [1], [0])]
    got, backend = backend_of(lambda: raster([x], (4,), twice, 0.0), "Raster")
    assert backend == "cpu"
    with mnnpy.backend("cpu"):
        assert_bitwise_equal(got, raster([x], (4,), twice, 0.0).read())


NARROW = [np.bool_, np.int8, np.uint8, np.float16, np.int16]


def narrow_values(shape, dtype):
    """Random bit patterns of a 1- or 2-byte dtype (bools 0 or 1)."""
    rng = np.random.default_rng(11)
    if np.dtype(dtype) == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    return rng.integers(0, 256, int(np.prod(shape)) * np.dtype(dtype).itemsize, dtype=np.uint8).view(dtype).reshape(shape)


# 1- and 2-byte elements share words with their neighbours: regions starting and ending inside a
# word, odd strides, and regions whose writes interleave with another's in the same words.
@pytest.mark.parametrize("dtype", NARROW, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape, perm", [((3, 5, 7), [2, 0, 1]), ((2, 3), [1, 0]), ((300, 7), [1, 0])])
def test_transpose_of_1_and_2_byte_dtypes(vulkan, dtype, shape, perm):
    x = narrow_values(shape, dtype)
    assert_bitwise_equal(on_vulkan(lambda: F.transpose(F.const(x), perm), "Raster"), x.transpose(perm))


@pytest.mark.parametrize("dtype", NARROW, ids=lambda d: np.dtype(d).name)
def test_concat_slices_and_padding_of_1_and_2_byte_dtypes(vulkan, dtype):
    parts = [narrow_values((3, k, 5), dtype) for k in (1, 3, 2)]
    joined = on_vulkan(lambda: F.concat([F.const(p) for p in parts], 1), "Raster")
    assert_bitwise_equal(joined, np.concatenate(parts, 1))
    x = narrow_values((7, 9), dtype)
    assert_bitwise_equal(on_vulkan(lambda: F.const(x)[5:0:-2, 1::3], "Raster"), x[5:0:-2, 1::3])
    fill = 1 if np.dtype(dtype) == np.bool_ else 3
    padded = on_vulkan(lambda: mp.pad(F.const(x), [(1, 2), (3, 1)], constant_values=fill), "Raster")
    assert_bitwise_equal(padded, np.pad(x, [(1, 2), (3, 1)], constant_values=np.asarray(fill).astype(dtype)))


@pytest.mark.parametrize("dtype", [np.bool_, np.float16], ids=lambda d: np.dtype(d).name)
def test_raster_regions_of_narrow_elements_match_the_cpu(vulkan, dtype):
    x, y = narrow_values((23,), dtype), narrow_values((5, 3), dtype)
    # Interleaved writes: even elements from one region, odd ones from the next (one batch).
    regions = [(0, 0, 0, [11], [2], [2]), (0, 1, 1, [11], [2], [2]), (1, 14, 22, [2], [-3], [1]),
               (1, 0, 24, [3, 5], [1, 3], [5, 1])]
    got = on_vulkan(lambda: raster([x, y], (39,), regions, 0.0), "Raster")
    with mnnpy.backend("cpu"):
        assert_bitwise_equal(got, raster([x, y], (39,), regions, 0.0).read())
    assert_bitwise_equal(got, raster_reference([x, y], (39,), regions, 0, dtype))


# ---------------------------------------------------------------- Reduce
def sum_bound(x, axis):
    """|fl(sum) - sum| <= gamma_n sum|x| for n terms added in any order, plus the float64
    reference's own error."""
    n = np.prod([x.shape[a] for a in np.atleast_1d(axis)]) if axis is not None else x.size
    gamma = n * U32 / (1 - n * U32)
    return (gamma + n * 2.0 ** -53) * np.abs(x.astype(np.float64)).sum(axis=axis)


@pytest.mark.parametrize("shape, axis", [
    ((7, 1000, 3), 1),     # long rows: a workgroup per output
    ((513, 5), 0),         # a long strided row
    ((1000, 9), 1),        # short rows, 1000 outputs: an invocation per output
    ((16400, 130), 1),     # contiguous rows, many outputs: a segment of 32 invocations each
    ((16400, 64), 0),      # strided rows, many outputs: an invocation each
    ((3, 4, 5), (1, 2)),
    ((3, 4, 5), (0, 2)),   # two Reduce steps
    ((100003,), None),     # one output
    ((5, 1, 3), 1),        # rows of one
    ((4, 0, 3), 1),        # empty rows: zeros
])
def test_sum(vulkan, shape, axis):
    x = fresh(shape)
    got = on_vulkan(lambda: F.reduce_sum(F.const(x), axis=None if axis is None else list(np.atleast_1d(axis))),
                    "Reduce")
    exact = x.astype(np.float64).sum(axis=axis)
    assert got.dtype == np.float32 and got.shape == exact.shape
    assert np.all(np.abs(got - exact) <= sum_bound(x, axis))


@pytest.mark.parametrize("shape", [(5, 3), (5, 300), (2000, 3)])
def test_sums_of_negative_zeros_are_positive_as_numpy(vulkan, shape):
    x = np.full(shape, -0.0, np.float32)
    assert_bitwise_equal(on_vulkan(lambda: F.reduce_sum(F.const(x), axis=[1]), "Reduce"), x.sum(axis=1))


def test_mean_is_a_sum_then_a_division(vulkan):
    x = fresh((6, 777))
    got = on_vulkan(lambda: mp.mean(F.const(x), axis=1), "Reduce")
    exact = x.astype(np.float64).mean(axis=1)
    # The sum's bound, over n, then one rounding of the quotient.
    assert np.all(np.abs(got - exact) <= sum_bound(x, 1) / 777 + U32 * np.abs(exact) * 1.0001)


def test_sum_of_empty_outputs_does_nothing(vulkan):
    x = fresh((0, 5))
    got = F.reduce_sum(F.const(x), axis=[1]).read()
    assert got.shape == (0,)


@pytest.mark.parametrize("shape, axis", [((5, 300), 1), ((40, 7), 1), ((33, 2, 9), 0)])
def test_prod(vulkan, shape, axis):
    x = (1 + np.random.default_rng(5).uniform(-0.01, 0.01, shape)).astype(np.float32)
    got = on_vulkan(lambda: F.reduce_prod(F.const(x), axis=[axis]), "Reduce")
    exact = np.prod(x.astype(np.float64), axis=axis)
    # n - 1 roundings of a product of positive terms (no underflow or overflow here).
    n = shape[axis]
    gamma = n * U32 / (1 - n * U32)
    assert np.all(np.abs(got - exact) <= gamma * np.abs(exact))


def special_values(shape, axis, seed):
    """Small integers (many ties), with infinities and signed zeros, and a NaN in every third row
    along `axis`."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-4, 5, shape).astype(np.float32)
    flat = x.reshape(-1)
    for value in [np.inf, -np.inf, -0.0]:
        flat[rng.integers(0, flat.size, max(1, flat.size // 50))] = value
    rows = np.moveaxis(x, axis, -1)  # a view: rows[..., k] is element k of each row
    for at in list(np.ndindex(*rows.shape[:-1]))[::3]:
        rows[at + (int(rng.integers(0, rows.shape[-1])),)] = np.nan
    return x


@pytest.mark.parametrize("shape, axis", [((9, 600), 1), ((300, 6), 1), ((600, 7), 0), ((5, 300, 3), 1),
                                         ((16400, 70), 1)])  # the last: segments of 16 invocations
@pytest.mark.parametrize("kind", ["max", "min"])
def test_max_and_min_propagate_nan_as_numpy(vulkan, shape, axis, kind):
    x = special_values(shape, axis, 11)
    build = {"max": lambda: mp.max(F.const(x), axis=axis), "min": lambda: mp.min(F.const(x), axis=axis)}[kind]
    got = on_vulkan(build, "Reduce")
    expected = getattr(np, kind)(x, axis=axis)
    np.testing.assert_array_equal(got, expected)  # NaN where NumPy's is, exact elsewhere
    assert np.isnan(expected).any() and not np.isnan(expected).all()  # the rows differ
    # Also through the expr API, over every axis.
    whole = on_vulkan(lambda: getattr(F, "reduce_" + kind)(F.const(x[:, :5])), "Reduce")
    np.testing.assert_array_equal(whole, getattr(np, kind)(x[:, :5]))


@pytest.mark.parametrize("shape, axis", [((9, 600), 1), ((300, 6), 1), ((600, 7), 0), ((1, 5000), 1),
                                         ((16400, 70), 1)])  # the last: segments of 16 invocations
@pytest.mark.parametrize("kind", ["argmax", "argmin"])
def test_argmax_and_argmin_take_the_first_extreme_or_nan(vulkan, shape, axis, kind):
    x = special_values(shape, axis, 13)
    if shape == (1, 5000):
        x[0, [4000, 1234]] = np.nan  # the first NaN wins, wherever its workgroup lane is
    got = on_vulkan(lambda: getattr(F, kind)(F.const(x), axis), "Reduce")
    assert_bitwise_equal(got, getattr(np, kind)(x, axis=axis))
    clean = np.nan_to_num(x, nan=1.0)  # ties only
    assert_bitwise_equal(on_vulkan(lambda: getattr(F, kind)(F.const(clean), axis), "Reduce"),
                         getattr(np, kind)(clean, axis=axis))


def test_any_and_all_stay_on_the_cpu(vulkan):
    x = np.random.default_rng(2).random((4, 9)) < 0.3
    for kind in ["any", "all"]:
        got, backend = backend_of(lambda: getattr(mp, kind)(F.const(x), axis=1), "Reduce")
        assert backend == "cpu"
        assert_bitwise_equal(got, getattr(np, kind)(x, axis=1))


def test_integer_reductions_stay_on_the_cpu(vulkan):
    x = np.arange(20, dtype=np.int32).reshape(4, 5)
    got, backend = backend_of(lambda: mp.max(F.const(x), axis=1), "Reduce")
    assert backend == "cpu"
    assert_bitwise_equal(got, x.max(axis=1))


def test_softmax_runs_whole_on_vulkan(vulkan):
    x = fresh((4, 300)) / 1000
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    (got,), steps = run_profiled(lambda: [F.softmax(F.const(x), 1)])
    assert {s["backend"] for s in steps if s["op"] == "Reduce"} == {"vulkan"}
    np.testing.assert_allclose(got, e / e.sum(axis=1, keepdims=True), rtol=1e-5)
