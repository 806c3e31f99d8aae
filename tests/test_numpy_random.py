"""mnnpy.numpy.random: shapes and dtypes as NumPy's, reproducible streams, and the
distributions checked statistically (Kolmogorov-Smirnov against exact CDFs, chi-square for
discrete draws) at fixed seeds, so the thresholds never flake."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import mnnpy
import mnnpy.numpy as mnp
from mnnpy import _core

rnd = mnp.random
N = 200_000
sizes = st.one_of(st.none(), st.integers(0, 5), hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))


def values(v):
    return np.asarray(v.read())


def ks_statistic(samples, cdf):
    x = np.sort(np.asarray(samples, dtype=np.float64))
    n = x.size
    f = cdf(x)
    return max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))


def ks_ok(samples, cdf):
    # Critical value at significance 1e-4 is about 2.15 / sqrt(n).
    assert ks_statistic(samples, cdf) < 2.15 / math.sqrt(len(samples))


_erf = np.frompyfunc(math.erf, 1, 1)


def normal_cdf(x):
    return 0.5 * (1.0 + _erf(x / math.sqrt(2.0)).astype(np.float64))


def chi_square_ok(counts, expected):
    counts, expected = np.asarray(counts, np.float64), np.asarray(expected, np.float64)
    keep = expected > 0
    stat = np.sum((counts[keep] - expected[keep]) ** 2 / expected[keep])
    df = keep.sum() - 1
    z = 3.72  # one-sided 1e-4
    critical = df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3  # Wilson-Hilferty
    assert stat < critical, (stat, critical)
    assert np.all(counts[~keep] == 0)


# ---------------------------------------------------------------- shapes and dtypes
@settings(max_examples=30, deadline=None)
@given(sizes)
def test_shapes_and_dtypes_match_numpy(size):
    g, ng = rnd.default_rng(0), np.random.default_rng(0)
    pairs = [
        (rnd.random_sample(size), np.random.random_sample(size)),
        (rnd.uniform(-2, 3, size), np.random.uniform(-2, 3, size)),
        (rnd.normal(1, 2, size), np.random.normal(1, 2, size)),
        (rnd.standard_normal(size), np.random.standard_normal(size)),
        (rnd.exponential(2.0, size), np.random.exponential(2.0, size)),
        (rnd.randint(-5, 5, size), np.random.randint(-5, 5, size)),
        (rnd.randint(3, size=size, dtype=np.int8), np.random.randint(3, size=size, dtype=np.int8)),
        (rnd.choice(7, size), np.random.choice(7, size)),
        (g.random(size), ng.random(size)), (g.random(size, np.float32), ng.random(size, np.float32)),
        (g.integers(0, 9, size), ng.integers(0, 9, size)),
        (g.integers(0, 2, size, dtype=bool), ng.integers(0, 2, size, dtype=bool)),
        (g.integers(0, 255, size, dtype=np.uint8, endpoint=True), ng.integers(0, 255, size, dtype=np.uint8,
                                                                               endpoint=True)),
        (g.standard_normal(size, np.float32), ng.standard_normal(size, np.float32)),
        (g.normal(0, 1, size), ng.normal(0, 1, size)), (g.uniform(0, 1, size), ng.uniform(0, 1, size)),
        (g.exponential(1, size), ng.exponential(1, size)), (g.choice(5, size), ng.choice(5, size)),
    ]
    for ours, ref in pairs:
        python_scalar = isinstance(ref, (float, int, bool))  # NumPy's draws for size=None
        ref = np.asarray(ref)
        assert ours.shape == ref.shape and (python_scalar or ours.dtype == ref.dtype)
        assert values(ours).shape == ref.shape


def test_legacy_shapes():
    assert rnd.rand().shape == () and rnd.rand(2, 3).shape == (2, 3)
    assert rnd.randn(4).dtype == np.float64 and rnd.randn(0, 2).shape == (0, 2)
    assert rnd.randint(5).dtype == np.random.randint(5, size=1).dtype


# ---------------------------------------------------------------- reproducibility
def test_seed_reproduces_the_sequence():
    rnd.seed(123)
    a, b = values(rnd.rand(1000)), values(rnd.randn(10))
    rnd.seed(123)
    np.testing.assert_array_equal(values(rnd.rand(1000)), a)
    np.testing.assert_array_equal(values(rnd.randn(10)), b)
    assert not np.array_equal(values(rnd.rand(1000)), a)  # later calls draw fresh numbers
    g1, g2 = rnd.default_rng(5), rnd.default_rng(5)
    for method in ("random", "standard_normal", "permutation"):
        np.testing.assert_array_equal(values(getattr(g1, method)(50)), values(getattr(g2, method)(50)))
    assert not np.array_equal(values(rnd.default_rng(6).random(50)), values(rnd.default_rng(5).random(50)))


def test_a_draw_is_fixed_and_independent_of_threads():
    v = rnd.default_rng(9).standard_normal(100_001)
    first = values(v).copy()
    np.testing.assert_array_equal(values(v), first)
    old = mnnpy.get_num_threads()
    try:
        for threads in (1, 2):
            mnnpy.set_num_threads(threads)
            np.testing.assert_array_equal(values(rnd.default_rng(9).standard_normal(100_001)), first)
            # Long uniform draws take the vectorized path; short ones the scalar path: same numbers.
            long = values(rnd.default_rng(9).random(1 << 18, dtype=np.float32))
            np.testing.assert_array_equal(long[:30], values(rnd.default_rng(9).random(30, dtype=np.float32)))
            long64 = values(rnd.default_rng(9).random(1 << 18))
            np.testing.assert_array_equal(long64[-7:], values(rnd.default_rng(9).random(1 << 18))[-7:])
            np.testing.assert_array_equal(long64[:5], values(rnd.default_rng(9).random(5)))
    finally:
        mnnpy.set_num_threads(old)


# ---------------------------------------------------------------- continuous distributions
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_uniform_distribution(dtype):
    g = rnd.default_rng(11)
    u = values(g.random(N, dtype=dtype))
    assert u.dtype == dtype and u.min() >= 0 and u.max() < 1
    ks_ok(u, lambda x: x)
    lo, hi = -3.0, 5.0
    w = values(g.uniform(lo, hi, N))
    assert w.min() >= lo and w.max() < hi
    ks_ok(w, lambda x: (x - lo) / (hi - lo))


def test_uniform_with_array_bounds():
    low = np.array([0.0, 10.0, -5.0])
    w = values(rnd.default_rng(1).uniform(low, low + 2, size=(N // 3, 3)))
    for j in range(3):
        ks_ok(w[:, j], lambda x, j=j: (x - low[j]) / 2)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_normal_distribution(dtype):
    z = values(rnd.default_rng(12).standard_normal(N, dtype=dtype))
    assert z.dtype == dtype
    ks_ok(z, normal_cdf)
    x = values(rnd.default_rng(13).normal(2.0, 3.0, N))
    ks_ok((x - 2.0) / 3.0, normal_cdf)
    assert abs(x.mean() - 2.0) < 5 * 3 / math.sqrt(N) and abs(x.var() / 9 - 1) < 0.02
    rnd.seed(4)
    ks_ok(values(rnd.randn(N)), normal_cdf)
    loc = np.array([[-1.0], [4.0]])
    y = values(rnd.default_rng(2).normal(loc, 0.5, size=(2, N // 2)))
    for i in range(2):
        ks_ok((y[i] - loc[i, 0]) / 0.5, normal_cdf)


def test_exponential_distribution():
    e = values(rnd.default_rng(14).exponential(2.5, N))
    assert e.min() >= 0
    ks_ok(e, lambda x: 1 - np.exp(-x / 2.5))
    rnd.seed(3)
    ks_ok(values(rnd.exponential(size=N)), lambda x: 1 - np.exp(-x))


# ---------------------------------------------------------------- discrete distributions
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int16, np.int8, np.uint8])
def test_integers_uniform_over_range(dtype):
    g = rnd.default_rng(21)
    x = values(g.integers(-3 if np.dtype(dtype).kind == "i" else 0, 7, N, dtype=dtype))
    assert x.dtype == dtype
    lo = -3 if np.dtype(dtype).kind == "i" else 0
    counts = np.bincount((x.astype(np.int64) - lo), minlength=7 - lo)
    assert counts.size == 7 - lo
    chi_square_ok(counts, np.full(7 - lo, N / (7 - lo)))
    y = values(g.integers(0, 4, N, endpoint=True, dtype=dtype))
    chi_square_ok(np.bincount(y.astype(np.int64), minlength=5), np.full(5, N / 5))


def test_integers_extreme_ranges():
    g = rnd.default_rng(22)
    full = values(g.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, 10000, endpoint=True))
    assert full.min() < -(2 ** 61) and full.max() > 2 ** 61
    b = values(g.integers(0, 2, N, dtype=bool))
    chi_square_ok(np.bincount(b.astype(np.int64), minlength=2), [N / 2, N / 2])
    i8 = values(g.integers(-128, 128, N, dtype=np.int8))
    chi_square_ok(np.bincount(i8.astype(np.int64) + 128, minlength=256), np.full(256, N / 256))
    rnd.seed(2)
    r = values(rnd.randint(10, size=N))
    chi_square_ok(np.bincount(r, minlength=10), np.full(10, N / 10))


def test_integer_errors_match_numpy():
    g, ng = rnd.default_rng(0), np.random.default_rng(0)
    for args, kw in [((5, 5), {}), ((0, 300), {"dtype": np.uint8}), ((-1, 3), {"dtype": np.uint8}),
                     ((6, 5), {"endpoint": True})]:
        with pytest.raises(ValueError):
            ng.integers(*args, **kw)
        with pytest.raises(ValueError):
            g.integers(*args, **kw)
    with pytest.raises(ValueError):
        np.random.randint(3, 3)
    with pytest.raises(ValueError):
        rnd.randint(3, 3)


def test_choice_with_probabilities():
    p = np.array([0.1, 0.0, 0.5, 0.15, 0.25])
    g = rnd.default_rng(31)
    x = values(g.choice(5, N, p=p))
    chi_square_ok(np.bincount(x, minlength=5), N * p)
    rnd.seed(8)
    y = values(rnd.choice(np.array([10, 20, 30, 40, 50]), N, p=p))
    chi_square_ok(np.bincount(y // 10 - 1, minlength=5), N * p)
    z = values(g.choice(9, N))
    chi_square_ok(np.bincount(z, minlength=9), np.full(9, N / 9))


def test_choice_without_replacement():
    g = rnd.default_rng(32)
    s = values(g.choice(50, 50, replace=False))
    assert sorted(s) == list(range(50))
    p = np.array([0.5, 0.0, 0.2, 0.3])
    firsts = np.array([values(g.choice(4, 2, replace=False, p=p)) for _ in range(400)])
    assert np.all(firsts != 1) and np.all(firsts[:, 0] != firsts[:, 1])
    # The first pick of a weighted sample without replacement follows p.
    chi_square_ok(np.bincount(firsts[:, 0], minlength=4), 400 * p)
    rows = values(g.choice(np.arange(12).reshape(4, 3), 2, replace=False))
    assert rows.shape == (2, 3) and np.all(rows[:, 1] == rows[:, 0] + 1)


def test_choice_errors_match_numpy():
    cases = [((5, 6), {"replace": False}), ((3,), {"p": [0.5, 0.5, 0.5]}), ((3,), {"p": [1.5, -0.5, 0.0]}),
             ((3,), {"p": [0.5, 0.5]}), ((0, 2), {}), ((np.ones((2, 2)),), {}), ((3, 3), {"replace": False,
                                                                                        "p": [1.0, 0, 0]})]
    for args, kw in cases:
        with pytest.raises(ValueError):
            np.random.choice(*args, **kw)
        with pytest.raises(ValueError):
            rnd.choice(*args, **kw)


def test_shuffle_and_permutation():
    x = _core.const(np.arange(20.0).reshape(10, 2), None, "NCHW")
    before = x
    rnd.seed(5)
    assert rnd.shuffle(x) is None
    assert x is before
    shuffled = values(x)
    assert not np.array_equal(shuffled, np.arange(20.0).reshape(10, 2))
    assert sorted(shuffled[:, 0]) == list(range(0, 20, 2)) and np.all(shuffled[:, 1] == shuffled[:, 0] + 1)
    a = np.arange(8)
    rnd.default_rng(3).shuffle(a)
    assert sorted(a) == list(range(8))
    perm = values(rnd.permutation(1000))
    assert perm.dtype == np.int64 and sorted(perm) == list(range(1000))
    m = values(rnd.default_rng(4).permutation(np.arange(12).reshape(3, 4), axis=1))
    assert sorted(m[0]) == [0, 1, 2, 3] and np.all(m[1] == m[0] + 4)
    # Every position is uniform over the values.
    g = rnd.default_rng(41)
    first = np.array([values(g.permutation(4))[0] for _ in range(2000)])
    chi_square_ok(np.bincount(first, minlength=4), np.full(4, 500))


def test_parameter_errors_match_numpy():
    for f, g in [(rnd.normal, np.random.normal), (rnd.exponential, np.random.exponential)]:
        args = (0.0, -1.0) if f is rnd.normal else (-1.0,)
        with pytest.raises(ValueError):
            g(*args)
        with pytest.raises(ValueError):
            f(*args)
    with pytest.raises(ValueError):
        np.random.seed(-1)
    with pytest.raises(ValueError):
        rnd.seed(-1)
    with pytest.raises(TypeError):
        np.random.default_rng(0).random(3, dtype=np.int32)
    with pytest.raises(TypeError):
        rnd.default_rng(0).random(3, dtype=np.int32)
