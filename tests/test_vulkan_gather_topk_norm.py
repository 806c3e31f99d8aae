"""Gather, TopK and LayerNorm on the Vulkan backend, each checked to have run there (profile).

Gather and TopK only move and rank values: they are compared bit for bit with the CPU backend
(and NumPy / torch.topk). LayerNorm is compared with the exact result (float64) within a bound
derived from its float32 arithmetic, which the CPU's result must meet too. Shapes stay small
(lavapipe computes on the CPU) but span several workgroups."""
import numpy as np
import pytest

import mnnpy
from mnnpy import expr as F

from helpers import compute_steps, profiled

U = 2.0 ** -24  # float32's unit roundoff


def steps_of(build):
    """build()'s values on the backend in effect, and the steps that computed them."""
    values, profile = profiled(build, mnnpy.get_backend())
    return values, compute_steps(profile)


def on_vulkan(build, op):
    """build()'s values, checked to have run whole on Vulkan with exactly one `op` step."""
    values, steps = steps_of(build)
    assert all(s["backend"] == "vulkan" for s in steps), steps
    assert [s["op"] for s in steps].count(op) == 1, steps
    return values


def backend_of(build, op):
    """build()'s values and the backend its `op` step ran on."""
    values, steps = steps_of(build)
    (backend,) = {s["backend"] for s in steps if s["op"] == op}
    return values, backend


def on_cpu(build):
    with mnnpy.backend("cpu"):
        return mnnpy.eval(*build())


def assert_bitwise_equal(got, expected):
    expected = np.asarray(expected)
    assert got.dtype == expected.dtype and got.shape == expected.shape, (got.dtype, got.shape, expected.shape)
    assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(expected).tobytes()


def given(values):
    """A placeholder holding `values`: known only when the plan runs, as a model's token ids."""
    p = F.placeholder(values.shape, dtype=values.dtype)
    p.write(values)
    return p


def bits_of(rng, shape, dtype):
    """Random bit patterns of a 4- or 8-byte dtype (NaNs with payloads included)."""
    words = rng.integers(0, 2 ** 32, int(np.prod(shape)) * np.dtype(dtype).itemsize // 4, dtype=np.uint64)
    return words.astype(np.uint32).view(dtype).reshape(shape)


# ---------------------------------------------------------------- Gather
def taken(x, indices, axis):
    """NumPy's take, with the CPU kernel's zeros where an index is out of range."""
    n = x.shape[axis]
    valid = (indices >= -n) & (indices < n)
    out = np.take(x, np.where(valid, indices, 0), axis)
    mask = valid.reshape((1,) * axis + indices.shape + (1,) * (x.ndim - axis - 1))
    return np.where(mask, out, np.zeros((), x.dtype))


@pytest.mark.parametrize("shape, axis, index_shape", [
    ((7,), 0, (5,)),
    ((30, 64), 0, (2, 9)),        # an embedding lookup: rows of a table by token id
    ((3, 5, 4), 1, (4,)),
    ((3, 5, 4), 2, (3, 2)),       # single elements
    ((2, 1, 300, 3), 2, (700,)),  # many slabs, odd sizes
])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_gather_by_indices_given_at_run_time(vulkan, rng, shape, axis, index_shape, index_dtype):
    x = bits_of(rng, shape, np.float32)
    n = shape[axis]
    indices = rng.integers(-n, n, index_shape).astype(index_dtype)  # negative ones count from the end
    got = on_vulkan(lambda: [F.gather(F.const(x), given(indices), axis)], "Gather")[0]
    assert_bitwise_equal(got, np.take(x, indices, axis))


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float64])
def test_gather_copies_4_and_8_byte_dtypes_as_words(vulkan, rng, dtype):
    x = bits_of(rng, (6, 11, 3), dtype)
    indices = np.array([10, -11, 0, 4, 4], np.int64)
    got = on_vulkan(lambda: [F.gather(F.const(x), given(indices), 1)], "Gather")[0]
    assert_bitwise_equal(got, np.take(x, indices, 1))


@pytest.mark.parametrize("shape, axis", [((6, 11, 3), 1), ((5, 7), 0), ((9, 1), 0), ((4, 6), 1), ((3, 5, 2), 2)])
@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.float16])
def test_gather_of_1_and_2_byte_dtypes(vulkan, rng, dtype, shape, axis):
    # Slabs of whole words are copied as words, others byte by byte into whole output words.
    x = rng.integers(0, 2, shape).astype(bool) if dtype == np.bool_ else bits_of(rng, shape, np.int32).view(dtype)
    x = x.reshape(shape[:-1] + (-1,))[..., :shape[-1]].copy()
    n = x.shape[axis]
    indices = np.array([n - 1, -n, 0, n + 2, -1, 0], np.int64)
    build = lambda: [mnnpy._core.op("Gather", [F.const(x), given(indices)], {"axis": axis})]  # noqa: E731
    got = on_vulkan(build, "Gather")[0]
    assert_bitwise_equal(got, on_cpu(build)[0])
    assert_bitwise_equal(got, taken(x, indices, axis))


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_gather_out_of_range_indices_give_zeros_as_on_the_cpu(vulkan, rng, index_dtype):
    # The CPU kernel fills a slab of zeros for an index out of range, after counting negative ones
    # from the end once; so does the shader. int64 indices past int32 too (high word set).
    x = bits_of(rng, (4, 6, 5), np.float64)
    big = [2 ** 31, -2 ** 31 - 1, 2 ** 32 + 1, -2 ** 32 + 2, 2 ** 62] if index_dtype == np.int64 else []
    indices = np.array([6, -7, 5, -6, 2 ** 31 - 1, -2 ** 31, 7, -1] + big, index_dtype)
    build = lambda: [mnnpy._core.op("Gather", [F.const(x), given(indices)], {"axis": 1})]  # noqa: E731
    got = on_vulkan(build, "Gather")[0]
    assert_bitwise_equal(got, on_cpu(build)[0])
    assert_bitwise_equal(got, taken(x, indices, 1))


def test_gather_of_constant_indices_is_one_step(vulkan, rng):
    # Known indices lower to Raster only on a backend without Gather: here the kernel reads them.
    x = bits_of(rng, (50, 13), np.float32)
    indices = rng.integers(-50, 50, 4096)
    assert_bitwise_equal(on_vulkan(lambda: [F.gather(F.const(x), F.const(indices))], "Gather")[0], np.take(x, indices, 0))


def test_gather_spanning_more_words_than_its_grid_loops(vulkan, rng):
    # 2.4 million words of output: past the 8192 workgroups of 256, so invocations loop.
    x = bits_of(rng, (1000, 600), np.float64)
    indices = rng.integers(-1000, 1000, 2000).astype(np.int32)
    got = on_vulkan(lambda: [F.gather(F.const(x), given(indices), 0)], "Gather")[0]
    assert_bitwise_equal(got, np.take(x, indices, 0))


@pytest.mark.parametrize("shape, axis, indices", [
    ((5, 3), 0, np.zeros((0,), np.int64)),   # no index
    ((3, 0, 2), 0, np.array([1, 0, 2])),      # empty slabs
    ((0, 4), 1, np.array([3, -4], np.int32)),  # no outer rows
])
def test_gather_of_empty_results(vulkan, shape, axis, indices):
    x = np.ones(shape, np.float32)
    (got,), steps = steps_of(lambda: [F.gather(F.const(x), given(indices), axis)])
    assert {s["backend"] for s in steps} <= {"vulkan"}, steps
    assert_bitwise_equal(got, np.take(x, indices, axis))


def test_gather_by_int16_indices_stays_on_the_cpu(vulkan, rng):
    y = rng.standard_normal((5, 4)).astype(np.float32)
    short = np.array([4, 0, -1], np.int16)
    got, backend = backend_of(lambda: [F.gather(F.const(y), given(short))], "Gather")
    assert backend == "cpu"
    assert_bitwise_equal(got[0], np.take(y, short, 0))


# ---------------------------------------------------------------- TopK
def ranked_values(rng, shape, kind):
    """Rows for ranking: 'ties' (small integers, infinities, signed zeros and NaNs of either sign),
    or 'distinct' (random bits of finite floats)."""
    if kind == "distinct":
        x = rng.standard_normal(shape).astype(np.float32)
        return x * np.float32(2.0) ** rng.integers(-60, 60, shape).astype(np.float32)
    x = rng.integers(-3, 4, shape).astype(np.float32)
    flat = x.reshape(-1)
    for value in [np.inf, -np.inf, -0.0, 0.0, np.nan, -np.nan]:
        flat[rng.integers(0, flat.size, max(1, flat.size // 40))] = value
    flat[rng.integers(0, flat.size, max(1, flat.size // 40))] = np.uint32(0x7fc01234).view(np.float32)
    return x


def topk_on_both(x, k, axis, largest, sorted_=True):
    """TopK on Vulkan (checked to run there) and on the CPU."""
    build = lambda: list(F.topk(F.const(x), k, axis, largest, sorted_))  # noqa: E731
    return on_vulkan(build, "TopK"), on_cpu(build)


@pytest.mark.parametrize("shape, axis, k", [
    ((9, 100), 1, 5),
    ((3, 40, 7), 1, 40),       # the whole row, along a strided axis
    ((300, 6), 0, 300),        # one strided row per column
    ((5, 2048), 1, 1),         # a row filling the shared buffer exactly
    ((2, 1, 33), -1, 17),
    ((1,), 0, 1),
])
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("kind", ["ties", "distinct"])
def test_topk_orders_as_the_cpu(vulkan, rng, shape, axis, k, largest, kind):
    x = ranked_values(rng, shape, kind)
    (values, indices), (cpu_values, cpu_indices) = topk_on_both(x, k, axis, largest)
    assert_bitwise_equal(values, cpu_values)  # NaN payloads and the sign of zero included
    assert_bitwise_equal(indices, cpu_indices)
    assert_bitwise_equal(values, np.take_along_axis(x, indices, axis))


@pytest.mark.parametrize("largest", [True, False])
def test_topk_values_match_torch(vulkan, rng, largest):
    torch = pytest.importorskip("torch")
    x = ranked_values(rng, (7, 500), "ties")
    (values, indices), _ = topk_on_both(x, 30, 1, largest)
    expected = torch.topk(torch.from_numpy(x), 30, 1, largest=largest, sorted=True).values.numpy()
    np.testing.assert_array_equal(values, expected)  # NaN where torch's is (first for largest)
    # Equal values by lower index, as ONNX says (torch leaves their order unspecified).
    for row_values, row_indices in zip(values, indices):
        for a in range(29):
            same = row_values[a] == row_values[a + 1] or (np.isnan(row_values[a]) and np.isnan(row_values[a + 1]))
            assert not same or row_indices[a] < row_indices[a + 1]


@pytest.mark.parametrize("n, k", [(9000, 1), (9000, 50), (5000, 1024), (2049, 2)])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_of_rows_longer_than_the_shared_buffer(vulkan, rng, n, k, largest):
    # Candidates enter the buffer past the k-th best so far, sorted whenever the next tile might
    # not fit: several sorts per row on lavapipe (2048 entries).
    x = ranked_values(rng, (3, n), "ties")
    x[1] = ranked_values(rng, (n,), "distinct")
    x[2] = np.arange(n, dtype=np.float32) * (1 if largest else -1)  # every element beats the last
    (values, indices), (cpu_values, cpu_indices) = topk_on_both(x, k, 1, largest)
    assert_bitwise_equal(values, cpu_values)
    assert_bitwise_equal(indices, cpu_indices)


def test_unsorted_topk_selects_what_the_cpu_selects(vulkan, rng):
    x = ranked_values(rng, (4, 3000), "distinct")
    (values, indices), (cpu_values, cpu_indices) = topk_on_both(x, 700, 1, True, False)
    order, cpu_order = np.argsort(indices, 1), np.argsort(cpu_indices, 1)
    assert_bitwise_equal(np.take_along_axis(indices, order, 1), np.take_along_axis(cpu_indices, cpu_order, 1))
    assert_bitwise_equal(np.take_along_axis(values, order, 1), np.take_along_axis(cpu_values, cpu_order, 1))


def test_topk_of_rows_past_the_grids_first_dimension(vulkan, rng):
    x = ranked_values(rng, (70000, 3), "ties")
    (values, indices), (cpu_values, cpu_indices) = topk_on_both(x, 2, 1, True)
    assert_bitwise_equal(values, cpu_values)
    assert_bitwise_equal(indices, cpu_indices)


@pytest.mark.parametrize("shape, axis, k", [((4, 0), 1, 0), ((0, 5), 1, 3), ((3, 5), 1, 0)])
def test_topk_of_empty_results(vulkan, shape, axis, k):
    x = np.ones(shape, np.float32)
    (values, indices), steps = steps_of(lambda: list(F.topk(F.const(x), k, axis)))
    assert {s["backend"] for s in steps} <= {"vulkan"}, steps
    expected_shape = tuple(k if d == axis else s for d, s in enumerate(shape))
    assert values.shape == expected_shape and indices.shape == expected_shape and indices.dtype == np.int64


def test_topk_stays_on_the_cpu_for_other_dtypes_and_large_k_of_long_rows(vulkan, rng):
    x = rng.integers(-50, 50, (3, 40)).astype(np.int32)
    (values, indices), backend = backend_of(lambda: list(F.topk(F.const(x), 5)), "TopK")
    assert backend == "cpu"
    assert_bitwise_equal(indices, np.argsort(-x, 1, kind="stable")[:, :5])
    # k past half the shared buffer of any device (at most 8192 entries) on a longer row.
    y = ranked_values(rng, (1, 20000), "distinct")
    (values, indices), backend = backend_of(lambda: list(F.topk(F.const(y), 10000)), "TopK")
    assert backend == "cpu"
    assert_bitwise_equal(indices, np.argsort(-y, 1, kind="stable")[:, :10000])


# ---------------------------------------------------------------- LayerNorm
def layer_norm_node(x, gamma=None, beta=None, axis=-1, epsilon=1e-5):
    assert beta is None or gamma is not None, "the op's inputs are x, gamma, beta in this order"
    inputs = [F.const(x)] + [F.const(v) for v in (gamma, beta) if v is not None]
    return mnnpy._core.op("LayerNorm", inputs, {"axis": axis, "epsilon": epsilon})


def layer_norm_bound(x, gamma, beta, axis, epsilon):
    """The exact layer norm of x (float64) and a bound on |float32 result - exact| for the
    kernels' arithmetic: a sum of d terms in any order, a division (2.5 ulp on Vulkan), two-pass
    variance, rstd = inversesqrt(var + epsilon) (2 ulp), then (x - mean) * rstd * gamma + beta,
    each of -, *, + rounded once."""
    axis = axis % x.ndim
    axes = tuple(range(axis, x.ndim))
    d = int(np.prod(x.shape[axis:]))
    g = lambda m: m * U / (1 - m * U)  # noqa: E731
    div, rsqrt = 5 * U, 4 * U  # 2.5 and 2 ulp, relative
    eps = float(np.float32(epsilon))
    x64 = x.astype(np.float64)
    gamma64 = np.ones(x.shape[axis:]) if gamma is None else gamma.astype(np.float64).reshape(x.shape[axis:])
    beta64 = np.zeros(x.shape[axis:]) if beta is None else beta.astype(np.float64).reshape(x.shape[axis:])
    mean = x64.mean(axis=axes, keepdims=True)
    dev = np.abs(x64 - mean)
    var = (dev ** 2).mean(axis=axes, keepdims=True)
    r = 1 / np.sqrt(var + eps)
    exact = (x64 - mean) * r * gamma64 + beta64
    # The mean: |fl(mean) - mean| <= gamma_(d-1) mean|x| (1 + div) + div |mean|.
    e_mean = g(d - 1) * np.abs(x64).mean(axis=axes, keepdims=True) * (1 + div) + div * np.abs(mean)
    # The variance about fl(mean) is var + (fl(mean) - mean)^2; each square has 3 roundings (the
    # deviation, the square, its share of the sum), then the sum of d and the division.
    theta = (1 + U) ** 3 * (1 + g(d - 1)) * (1 + div) - 1
    e_var = theta * (var + e_mean ** 2) + e_mean ** 2
    eta = e_var / (var + eps)
    assert np.all(eta < 0.5), "the bound assumes var + epsilon known to a factor of 2"
    e_r = ((1 - eta) * (1 - U)) ** -0.5 * (1 + rsqrt) - 1  # rounded sum, inversesqrt
    e_centered = e_mean + U * (dev + e_mean)
    e = e_centered * r * (1 + e_r) + dev * r * e_r
    e = e + U * (dev + e_centered) * r * (1 + e_r)  # the product with rstd
    e = np.abs(gamma64) * e + U * np.abs(gamma64) * ((dev * r) + e)  # the product with gamma
    e = e + U * (np.abs(exact) + e)  # the sum with beta
    return exact, e + 2.0 ** -30 * (np.abs(exact) + np.abs(gamma64) * dev * r + np.abs(beta64))


def check_layer_norm(x, gamma=None, beta=None, axis=-1, epsilon=1e-5):
    build = lambda: [layer_norm_node(x, gamma, beta, axis, epsilon)]  # noqa: E731
    (got,), steps = steps_of(build)
    # One step, where the lowering would have made reductions and elementwise programs.
    assert [(s["op"], s["backend"]) for s in steps] == [("LayerNorm", "vulkan")], steps
    exact, bound = layer_norm_bound(x, gamma, beta, axis, epsilon)
    assert got.dtype == np.float32 and got.shape == x.shape
    assert np.all(np.abs(got - exact) <= bound)
    assert np.all(np.abs(on_cpu(build)[0] - exact) <= bound)  # the bound holds for the CPU's too
    return got


@pytest.mark.parametrize("shape, axis", [((4, 768), -1), ((2, 3, 7), -1), ((2, 5, 9), 1), ((6, 17), 0),
                                         ((2, 2, 3, 5), 2), ((3, 1), -1)])
@pytest.mark.parametrize("affine", ["none", "gamma", "both"])
def test_layer_norm_within_the_bound_of_its_arithmetic(vulkan, rng, shape, axis, affine):
    x = rng.standard_normal(shape).astype(np.float32)
    normalized = shape[axis % len(shape):]
    gamma = rng.standard_normal(normalized).astype(np.float32) if affine != "none" else None
    beta = rng.standard_normal(normalized).astype(np.float32) if affine == "both" else None
    check_layer_norm(x, gamma, beta, axis)


@pytest.mark.parametrize("d", [1, 2, 31, 256, 257, 1000, 2048, 4096, 4097, 6000])
def test_layer_norm_rows_of_every_workgroup_size_far_from_zero(vulkan, rng, d):
    # Workgroups of 32 to 256 invocations keeping up to 16 elements each; rows past 4096 are read
    # once per pass. An offset of 1e3 with unit spread: one-pass E[x^2] - E[x]^2 would lose most
    # digits in float32, the two-pass variance does not.
    x = (1e3 + rng.standard_normal((3, d))).astype(np.float32)
    gamma, beta = rng.standard_normal(d).astype(np.float32), rng.standard_normal(d).astype(np.float32)
    check_layer_norm(x, gamma, beta, epsilon=1e-3)


def test_layer_norm_of_rows_past_the_grids_first_dimension(vulkan, rng):
    x = rng.standard_normal((70000, 5)).astype(np.float32)
    check_layer_norm(x, *rng.standard_normal((2, 5)).astype(np.float32))


def test_layer_norm_gamma_of_lower_rank(vulkan, rng):
    x = rng.standard_normal((9, 1, 40)).astype(np.float32)
    gamma = rng.standard_normal(40).astype(np.float32)
    check_layer_norm(x, gamma, axis=1)


def test_layer_norm_of_nan_inf_and_constant_rows_as_the_cpu(vulkan, rng):
    x = rng.standard_normal((6, 50)).astype(np.float32)
    x[0, 3] = np.nan
    x[1, 7] = np.inf
    x[2, :] = 2.5  # variance 0: with epsilon 0, 0 * inf is NaN on both
    x[3, 1] = -np.inf
    x[3, 2] = np.inf
    for epsilon in (0.0, 1e-5):
        build = lambda: [layer_norm_node(x, None, None, -1, epsilon)]  # noqa: E731
        got = on_vulkan(build, "LayerNorm")[0]
        cpu = on_cpu(build)[0]
        np.testing.assert_array_equal(np.isnan(got), np.isnan(cpu))
        np.testing.assert_array_equal(got[2], cpu[2])
        exact, bound = layer_norm_bound(x[4:], None, None, -1, epsilon)
        assert np.all(np.abs(got[4:] - exact) <= bound)


@pytest.mark.parametrize("shape, axis", [((0, 8), 1), ((4, 0), 1), ((3, 0, 2), 1)])
def test_layer_norm_of_empty_inputs(vulkan, shape, axis):
    x = np.ones(shape, np.float32)
    (got,), steps = steps_of(lambda: [layer_norm_node(x, axis=axis)])
    assert {s["backend"] for s in steps} <= {"vulkan"}, steps
    assert got.shape == shape and got.dtype == np.float32
