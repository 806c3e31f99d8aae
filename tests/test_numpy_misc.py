"""The rest of mnnpy.numpy's namespace against NumPy: gcd/lcm, nextafter/spacing/frexp, i0,
bit packing, interp and unwrap, histogramdd, representations, matrix aliases and iterators; and
every name MNN.numpy has exists."""
import pathlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mnnpy.numpy as mp
from helpers import assert_same
from numpy_strategies import arrays, broadcastable_pair

REFERENCE = pathlib.Path(__file__).resolve().parents[2] / "shared" / "reference" / "mnn_python_api_names.md"


def mnn_numpy_names(section):
    """The names listed under the heading ``## <section> (...)``, without their "(c)" marks."""
    text = REFERENCE.read_text()
    body = text.split(f"\n## {section} (", 1)[1].split("\n", 1)[1].split("\n##", 1)[0]
    return [n.replace("(c)", "").strip() for n in body.replace("\n", " ").split(",") if n.strip()]


@pytest.mark.skipif(not REFERENCE.exists(), reason="MNN's name list is not beside the checkout")
def test_every_mnn_numpy_name_exists():
    missing = [n for n in mnn_numpy_names("MNN.numpy") if not hasattr(mp, n)]
    missing += ["linalg." + n for n in mnn_numpy_names("MNN.numpy.linalg") if not hasattr(mp.linalg, n)]
    missing += ["random." + n for n in mnn_numpy_names("MNN.numpy.random") if not hasattr(mp.random, n)]
    # sort_complex needs complex dtypes, which mnnpy does not have; MNN.numpy.math is Python's math
    # module, which NumPy 2 no longer exports as np.math (mnnpy.numpy follows NumPy there).
    assert sorted(set(missing) - {"sort_complex", "math"}) == [], missing


@settings(max_examples=40, deadline=None)
@given(pair=broadcastable_pair(dtypes=["int8", "uint8", "int16", "int32", "int64"]))
def test_gcd_lcm(pair):
    a, b = pair
    with pytest.raises(TypeError):
        np.gcd(np.array([True]), np.array([False]))
    with pytest.raises(TypeError):
        mp.gcd(np.array([True]), np.array([False]))
    for name in ("gcd", "lcm"):
        expected = getattr(np, name)(a, b)
        assert_same(getattr(mp, name)(a, b), expected)


@settings(max_examples=40, deadline=None)
@given(pair=broadcastable_pair(dtypes=["float32", "float64"], allow_nan=True))
def test_nextafter_spacing_frexp(pair):
    a, b = pair
    assert_same(mp.nextafter(a, b), np.nextafter(a, b), rtol=0)
    assert_same(mp.spacing(a), np.spacing(a), rtol=0)
    special = np.concatenate([a.reshape(-1), np.array([0.0, -0.0, np.inf, -np.inf, 1.0, 0.5, 2.0, 3.0,
                                                       np.finfo(a.dtype).tiny, np.finfo(a.dtype).max], a.dtype)])
    mantissa, exponent = mp.frexp(special)
    expected_m, expected_e = np.frexp(special)
    assert_same(mantissa, expected_m, rtol=0)
    assert_same(exponent, expected_e)


def test_nextafter_of_float16_is_refused():
    with pytest.raises(TypeError, match="float16"):
        mp.nextafter(np.ones(2, np.float16), np.zeros(2, np.float16))


def test_i0(rng):
    x = np.concatenate([rng.uniform(-40, 40, 200), np.array([0.0, 29.9, 30.0, 30.1, 700.0, -700.0])])
    assert_same(mp.i0(x), np.i0(x), rtol=1e-13)
    assert_same(mp.i0(x.astype(np.float32)), np.i0(x.astype(np.float32)), rtol=1e-6)


@settings(max_examples=40, deadline=None)
@given(x=arrays(dtypes=["bool", "uint8", "int32"], shape=st.sampled_from([(0,), (5,), (13,), (3, 9), (2, 3, 17)])),
       bitorder=st.sampled_from(["big", "little"]), use_axis=st.booleans())
def test_packbits_unpackbits(x, bitorder, use_axis):
    axis = x.ndim - 1 if use_axis else None
    packed = np.packbits(x, axis=axis, bitorder=bitorder)
    assert_same(mp.packbits(x, axis=axis, bitorder=bitorder), packed)
    for count in (None, 3, -2, 100):
        if x.size == 0 and count is not None and count > 0:
            continue  # NumPy returns uninitialized bytes for counts past an empty input
        try:
            expected = np.unpackbits(packed, axis=axis, count=count, bitorder=bitorder)
        except ValueError:
            with pytest.raises(ValueError):
                mp.unpackbits(packed, axis=axis, count=count, bitorder=bitorder)
            continue
        assert_same(mp.unpackbits(packed, axis=axis, count=count, bitorder=bitorder), expected)
    with pytest.raises(TypeError):
        mp.unpackbits(np.zeros(3, np.int32))


@settings(max_examples=40, deadline=None)
@given(n=st.integers(-300, 300), width=st.one_of(st.none(), st.integers(1, 12)), base=st.integers(2, 36),
       padding=st.integers(0, 3))
def test_binary_and_base_repr(n, width, base, padding):
    try:
        expected = np.binary_repr(n, width)
    except ValueError:
        with pytest.raises(ValueError):
            mp.binary_repr(n, width)
    else:
        assert mp.binary_repr(n, width) == expected
    assert mp.base_repr(n, base, padding) == np.base_repr(n, base, padding)


def test_interp_and_unwrap(rng):
    xp = np.sort(rng.uniform(-5, 5, 20))
    fp = rng.standard_normal(20)
    x = np.concatenate([rng.uniform(-7, 7, 100), xp[:3], [np.nan]])
    assert_same(mp.interp(x, xp, fp), np.interp(x, xp, fp), rtol=1e-12)
    assert_same(mp.interp(x, xp, fp, left=-9.0, right=9.0), np.interp(x, xp, fp, left=-9.0, right=9.0), rtol=1e-12)
    angles = rng.uniform(0, 360, 30)
    assert_same(mp.interp(angles, np.array([0.0, 90, 180, 270]), np.array([1.0, 2, 3, 4]), period=360),
                np.interp(angles, np.array([0.0, 90, 180, 270]), np.array([1.0, 2, 3, 4]), period=360), rtol=1e-12)
    with pytest.raises(ValueError):
        mp.interp(x, xp, fp[:-1])
    phase = np.cumsum(rng.uniform(-4, 4, (3, 40)), axis=1)
    wrapped = np.angle(np.exp(1j * phase))
    for axis in (-1, 0):
        assert_same(mp.unwrap(wrapped, axis=axis), np.unwrap(wrapped, axis=axis), rtol=1e-12, atol=1e-12)
    assert_same(mp.unwrap(np.arange(0, 20, 3), period=7), np.unwrap(np.arange(0, 20, 3), period=7))


def test_histogramdd_and_2d(rng):
    sample = rng.standard_normal((500, 3))
    hist, edges = mp.histogramdd(sample, bins=(4, 5, 6))
    expected, expected_edges = np.histogramdd(sample, bins=(4, 5, 6))
    assert_same(hist, expected, rtol=1e-12)
    for e, x in zip(edges, expected_edges):
        assert_same(e, x, rtol=1e-12)
    h2, xe, ye = mp.histogram2d(sample[:, 0], sample[:, 1], bins=7, density=True)
    e2, exe, eye = np.histogram2d(sample[:, 0], sample[:, 1], bins=7, density=True)
    assert_same(h2, e2, rtol=1e-12)
    assert_same(xe, exe, rtol=1e-12)


def test_aliases_iterators_and_matrix_forms(rng):
    x = rng.integers(0, 9, (2, 3))
    assert_same(mp.asmatrix(np.arange(3)), np.arange(3).reshape(1, 3))
    assert_same(mp.mat(x), x)
    assert_same(mp.repmat(np.arange(3), 2, 2), np.tile(np.arange(3).reshape(1, 3), (2, 2)))
    assert_same(mp.bmat([[x, x], [x, x]]), np.block([[x, x], [x, x]]))
    assert mp.asscalar(np.array([4.5])) == 4.5
    assert_same(mp.real_if_close(np.arange(3.0)), np.arange(3.0))
    assert_same(mp.fill(x, 7), np.full_like(x, 7))
    b = mp.broadcast(np.ones((3, 1)), np.ones(4))
    nb = np.broadcast(np.ones((3, 1)), np.ones(4))
    assert (b.shape, b.ndim, b.size, b.numiter) == (nb.shape, nb.ndim, nb.size, nb.numiter)
    assert list(mp.ndindex(2, 3)) == list(np.ndindex(2, 3))
    assert list(mp.ndindex((2, 1))) == list(np.ndindex((2, 1)))
    assert [(i, v) for i, v in mp.ndenumerate(mp.asarray(x))] == list(np.ndenumerate(x))
    v = mp.asarray(x)
    assert list(v.flat) == list(x.flat) and len(v.flat) == x.size
    assert_same(v.flat[2:5], x.flat[2:5])
    assert [int(e) for e in mp.nditer(v)] == [int(e) for e in np.nditer(x)]
    with pytest.raises(ValueError):
        mp.nditer(v, op_flags=["readwrite"])
