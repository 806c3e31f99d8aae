"""expr.matmul / Var @ against numpy.matmul: shapes, transposes, batch broadcasting, dtypes, errors."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mnnpy
from mnnpy import _core
from mnnpy import expr as F

# Error allowed relative to the Frobenius norm of the product (per dtype).
NORM_RTOL = {np.float32: 1e-5, np.float64: 1e-12}
ODD_SIZES = (1, 7, 17, 33, 65, 129, 257)


def rand(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.3
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -100), min(info.max, 100), size=shape, endpoint=True).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def swap_last(x, flag):
    return np.swapaxes(x, -1, -2) if flag and x.ndim >= 2 else x


def assert_product(ours, expected):
    ours = np.asarray(ours)
    assert ours.dtype == expected.dtype
    assert ours.shape == expected.shape
    if expected.dtype.type in NORM_RTOL:
        scale = max(np.linalg.norm(expected.astype(np.float64)), 1e-30)
        err = np.linalg.norm(ours.astype(np.float64) - expected.astype(np.float64))
        assert err <= NORM_RTOL[expected.dtype.type] * scale, (err, scale)
    elif expected.dtype.kind == "f":
        np.testing.assert_allclose(ours.astype(np.float32), expected.astype(np.float32), rtol=1e-2, atol=1e-2)
    else:
        np.testing.assert_array_equal(ours, expected)


def check(a, b, ta=False, tb=False):
    """a and b are the stored operands; the flags transpose them inside matmul."""
    expected = np.matmul(swap_last(a, ta), swap_last(b, tb))
    assert_product(F.matmul(a, b, ta, tb).read(), expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_odd_sizes(dtype):
    rng = np.random.default_rng(1)
    for m in ODD_SIZES:
        for n in ODD_SIZES:
            for k in (1, 17, 257):
                check(rand(rng, (m, k), dtype), rand(rng, (k, n), dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_transposes(dtype, ta, tb):
    rng = np.random.default_rng(2)
    for m, n, k in [(1, 1, 1), (7, 33, 17), (65, 17, 129), (129, 257, 65), (3, 300, 40), (300, 3, 40), (2, 5, 600)]:
        a = rand(rng, (k, m) if ta else (m, k), dtype)
        b = rand(rng, (n, k) if tb else (k, n), dtype)
        check(a, b, ta, tb)


@pytest.mark.parametrize("shape_a,shape_b", [
    ((4096, 8), (8, 3)), ((2, 3000), (3000, 5)), ((1000, 1), (1, 1000)), ((5, 1000), (1000, 700)),
    ((700, 1000), (1000, 5)), ((1, 2048), (2048, 1)), ((3, 4), (4, 5000)), ((600, 300), (300, 1)),
    ((40, 530), (530, 4200)), ((19, 3), (3, 2100)),
])
def test_tall_and_skinny(shape_a, shape_b):
    rng = np.random.default_rng(3)
    for dtype in (np.float32, np.float64):
        check(rand(rng, shape_a, dtype), rand(rng, shape_b, dtype))


@pytest.mark.parametrize("shape_a,shape_b", [
    ((3, 0), (0, 4)), ((0, 5), (5, 3)), ((3, 5), (5, 0)), ((0, 2, 3), (3, 4)), ((2, 0, 3), (2, 3, 4)),
    ((0,), (0,)), ((0,), (0, 4)), ((2, 3, 0), (0, 4)),
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.bool_])
def test_empty(shape_a, shape_b, dtype):
    rng = np.random.default_rng(4)
    a, b = rand(rng, shape_a, dtype), rand(rng, shape_b, dtype)
    ours = F.matmul(a, b).read()
    expected = np.matmul(a, b)
    assert ours.shape == expected.shape and ours.dtype == expected.dtype
    np.testing.assert_array_equal(ours, expected)


@pytest.mark.parametrize("shape_a,shape_b", [
    ((2, 1, 5, 6), (3, 6, 7)), ((4, 5, 6), (6, 7)), ((5, 6), (4, 6, 7)), ((1, 5, 6), (1, 1, 6, 7)),
    ((3, 1, 2, 4, 5), (2, 1, 5, 3)), ((2, 3, 20, 30), (2, 3, 30, 40)), ((64, 8, 8), (64, 8, 8)),
    ((6,), (2, 6, 7)), ((2, 5, 6), (6,)), ((100, 16, 16), (16, 16)),
])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_batch_broadcast(shape_a, shape_b, ta, tb):
    rng = np.random.default_rng(5)
    stored = lambda s, t: s[:-2] + (s[-1], s[-2]) if t and len(s) >= 2 else s  # noqa: E731
    for dtype in (np.float32, np.int32):
        check(rand(rng, stored(shape_a, ta), dtype), rand(rng, stored(shape_b, tb), dtype), ta, tb)


def test_vectors():
    rng = np.random.default_rng(6)
    v, w = rand(rng, (9,), np.float32), rand(rng, (9,), np.float32)
    m = rand(rng, (9, 4), np.float32)
    r = F.matmul(v, w)
    assert r.shape == () and abs(float(r) - float(v @ w)) <= 1e-5 * np.linalg.norm(v) * np.linalg.norm(w)
    check(v, m)
    check(m.T.copy(), v)
    # A transpose flag on a vector changes nothing, as in MNN.
    assert_product(F.matmul(v, m, True, False).read(), v @ m)
    assert_product(F.matmul(m, v, True, True).read(), m.T @ v)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k", [1, 31, 32768, 100003])
def test_long_dot_products(dtype, k):
    # Column-vector products: one dot product (its depth cut into chunks) or one per row of A.
    # Sums cancel, so the error is bounded by |a_i| |b| (Cauchy-Schwarz), not by the result.
    rng = np.random.default_rng(k)

    def assert_dots(ours, a, b):
        exact = a.astype(np.float64) @ b.astype(np.float64)
        bound = NORM_RTOL[np.dtype(dtype).type] * np.linalg.norm(a, axis=-1) * np.linalg.norm(b)
        assert np.asarray(ours).dtype == dtype
        assert np.all(np.abs(np.asarray(ours, np.float64).reshape(exact.shape) - exact) <= bound.reshape(exact.shape))

    for rows in (1, 2, 5):
        a, b = rand(rng, (rows, k), dtype), rand(rng, (k, 1), dtype)
        assert_dots(F.matmul(a, b).read(), a, b[:, 0])
    v, w = rand(rng, (k,), dtype), rand(rng, (k,), dtype)
    before = mnnpy.runtime_info()["threads"]
    results = []
    try:
        for threads in (1, 2):
            mnnpy.set_num_threads(threads)
            results.append(F.matmul(v, w).read())
    finally:
        mnnpy.set_num_threads(before)
    assert_dots(results[0], v, w)
    assert results[0] == results[1]  # the same sum whatever the thread count


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision(dtype):
    rng = np.random.default_rng(7)
    dt = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(np.float16)
    a, b = rand(rng, (2, 17, 33), np.float32).astype(dt), rand(rng, (33, 9), np.float32).astype(dt)
    ours = F.matmul(a, b).read()
    assert ours.dtype == dt and ours.shape == (2, 17, 9)
    expected = (a.astype(np.float32) @ b.astype(np.float32)).astype(dt)
    np.testing.assert_allclose(ours.astype(np.float32), expected.astype(np.float32), rtol=2e-2, atol=2e-2)
    if dtype == "float16":
        assert np.matmul(a, b).dtype == ours.dtype


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.int64, np.bool_])
def test_integer_and_bool(dtype):
    rng = np.random.default_rng(8)
    for (m, k, n) in [(1, 1, 1), (5, 7, 3), (33, 17, 65), (4, 100, 1)]:
        for ta in (False, True):
            for tb in (False, True):
                a = rand(rng, (k, m) if ta else (m, k), dtype)
                b = rand(rng, (n, k) if tb else (k, n), dtype)
                check(a, b, ta, tb)


def test_integer_wraps_like_numpy():
    a = np.full((2, 3), 2**20, np.int32)
    b = np.full((3, 2), 2**20, np.int32)
    assert_product(F.matmul(a, b).read(), np.matmul(a, b))
    a8 = np.full((2, 40), 100, np.int8)
    assert_product(F.matmul(a8, a8.T.copy()).read(), np.matmul(a8, a8.T))


def test_mixed_dtypes_promote():
    rng = np.random.default_rng(9)
    cases = [(np.int32, np.float32), (np.int8, np.uint8), (np.float32, np.float64), (np.bool_, np.int16),
             (np.int64, np.float16)]
    for da, db in cases:
        a, b = rand(rng, (4, 5), da), rand(rng, (5, 3), db)
        ours = F.matmul(a, b).read()
        expected = np.matmul(a, b)
        assert ours.dtype == expected.dtype, (da, db)
        np.testing.assert_allclose(ours.astype(np.float64), expected.astype(np.float64), rtol=1e-3, atol=1e-3)


def test_operators_and_operands():
    rng = np.random.default_rng(10)
    a, b = rand(rng, (6, 4), np.float32), rand(rng, (4, 3), np.float32)
    va, vb = F.const(a), F.const(b)
    for r in (va @ vb, va @ b, a @ vb, F.matmul(a, vb), F.matmul(va, b)):
        assert isinstance(r, mnnpy.Var)
        assert_product(r.read(), a @ b)
    assert_product((va @ b.tolist()).read(), np.matmul(a, np.array(b.tolist())))
    assert "matmul" in F.__all__
    assert (va @ vb).op_type == "MatMul"


def test_placeholder_reruns():
    rng = np.random.default_rng(11)
    x = F.placeholder((8, 16), dtype=np.float32)
    w = rand(rng, (16, 5), np.float32)
    y = F.matmul(x, w)
    for _ in range(3):
        v = rand(rng, (8, 16), np.float32)
        x.write(v)
        assert_product(y.read(), v @ w)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rows", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (True, True)])
def test_constant_weights_few_rows(dtype, rows, trans_a, trans_b):
    # Weights packed once at plan time; one to four rows take the streaming path over the panels.
    rng = np.random.default_rng(13)
    k, n = 1283, 1001
    w = rand(rng, (n, k) if trans_b else (k, n), dtype)
    x = F.placeholder((k, rows) if trans_a else (rows, k), dtype=dtype)
    y = F.matmul(x, w, trans_a, trans_b)
    old = mnnpy.get_num_threads()
    try:
        for t in (1, 2):
            mnnpy.set_num_threads(t)
            v = rand(rng, (k, rows) if trans_a else (rows, k), dtype)
            x.write(v)
            assert_product(y.read(), (v.T if trans_a else v) @ (w.T if trans_b else w))
    finally:
        mnnpy.set_num_threads(old)


@pytest.mark.parametrize("m,k,n", [(128, 768, 3072), (197, 300, 770), (61, 1000, 90), (300, 64, 2000)])
def test_constant_weights_thread_plans(m, k, n):
    # Products by packed weights are cut into row and column tasks per thread count (a multiple
    # of the threads whose blocks of A and C fit L2): every cut gives the same product.
    rng = np.random.default_rng(14)
    w = rand(rng, (k, n), np.float32)
    x = F.placeholder((m, k), dtype=np.float32)
    y = F.matmul(x, w)
    v = rand(rng, (m, k), np.float32)
    old = mnnpy.get_num_threads()
    try:
        for t in (1, 2, 3):
            mnnpy.set_num_threads(t)
            x.write(v)
            assert_product(y.read(), v @ w)
    finally:
        mnnpy.set_num_threads(old)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m", [97, 1000, 1021])
def test_row_blocks_split_evenly(dtype, m):
    # Row blocks of a product are whole micro-tiles shared out evenly per thread count; the last
    # block is no longer a remainder, so every row count and thread count must give the product.
    rng = np.random.default_rng(15)
    a, b = rand(rng, (m, 200), dtype), rand(rng, (200, 150), dtype)
    old = mnnpy.get_num_threads()
    try:
        for t in (1, 2, 3):
            mnnpy.set_num_threads(t)
            assert_product(F.matmul(a, b).read(), a @ b)
    finally:
        mnnpy.set_num_threads(old)


@pytest.mark.parametrize("n", [1024])
def test_large_threads(n):
    rng = np.random.default_rng(12)
    a, b = rand(rng, (n, n), np.float32), rand(rng, (n, n), np.float32)
    old = mnnpy.get_num_threads()
    try:
        outs = []
        for t in (1, 2):
            mnnpy.set_num_threads(t)
            outs.append(F.matmul(a, b, False, True).read())
            assert_product(outs[-1], a @ b.T)
        np.testing.assert_allclose(outs[0], outs[1], rtol=1e-5, atol=1e-4)
    finally:
        mnnpy.set_num_threads(old)


def test_portable_simd_matches_default():
    rng = np.random.default_rng(13)
    cases = [((7, 33), (33, 17), False, False), ((129, 65), (257, 65), False, True), ((30, 40), (50, 30), True, True),
             ((3, 200), (200, 90), False, False), ((150, 4), (4, 3), False, False), ((2, 9, 20), (20, 11), False, False)]
    for dtype in (np.float32, np.float64):
        data = [(rand(rng, sa, dtype), rand(rng, sb, dtype), ta, tb) for sa, sb, ta, tb in cases]
        best = [F.matmul(a, b, ta, tb).read() for a, b, ta, tb in data]
        best_info = _core.gemm_info()
        try:
            _core.force_portable_simd(True)
            portable_info = _core.gemm_info()
            portable = [F.matmul(a, b, ta, tb).read() for a, b, ta, tb in data]
        finally:
            _core.force_portable_simd(False)
        assert portable_info["float32"]["mr"] > 0 and portable_info["float32"]["nr"] > 0
        assert _core.gemm_info() == best_info
        for (a, b, ta, tb), p, q in zip(data, best, portable):
            expected = np.matmul(swap_last(a, ta), swap_last(b, tb))
            assert_product(p, expected)
            assert_product(q, expected)
            assert_product(q, p)


def test_gemm_info():
    info = _core.gemm_info()
    assert info["target"] == _core.simd_target()
    for dt in ("float32", "float64"):
        assert info[dt]["mr"] >= 1 and info[dt]["nr"] >= 1


@pytest.mark.parametrize("a_shape,b_shape,exc,fragment", [
    ((3,), (4,), ValueError, "Input operand 1 has a mismatch in its core dimension 0, with gufunc signature "
                             "(n?,k),(k,m?)->(n?,m?) (size 4 is different from 3)"),
    ((2, 3), (4, 5), ValueError, "(size 4 is different from 3)"),
    ((2, 3, 4), (3, 4, 5), ValueError, "operands could not be broadcast together with remapped shapes"),
    ((), (3,), ValueError, "matmul: Input operand 0 does not have enough dimensions"),
    ((3,), (), ValueError, "matmul: Input operand 1 does not have enough dimensions"),
])
def test_bad_shapes_like_numpy(a_shape, b_shape, exc, fragment):
    a, b = np.ones(a_shape, np.float32), np.ones(b_shape, np.float32)
    with pytest.raises(exc, match=None) as ours:
        F.matmul(a, b)
    assert fragment in str(ours.value)
    with pytest.raises(exc) as theirs:
        np.matmul(a, b)
    assert fragment in str(theirs.value)


def test_bad_op_use():
    a32 = F.const(np.ones((2, 3), np.float32))
    a64 = F.const(np.ones((3, 2), np.float64))
    with pytest.raises(TypeError, match="one dtype"):
        _core.op("MatMul", [a32, a64])
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        _core.op("MatMul", [F.const(np.ones(3, np.float32)), a32])
    with pytest.raises(TypeError, match="computed in float32"):
        h = F.const(np.ones((2, 2), np.float16))
        _core.op("MatMul", [h, h])
    with pytest.raises(ValueError, match="core dimension"):
        F.matmul(a32, a32.read(), True, True)


@st.composite
def matmul_case(draw):
    batch_rank = draw(st.integers(0, 2))
    batch = draw(st.lists(st.integers(1, 3), min_size=batch_rank, max_size=batch_rank))
    a_batch = [d if draw(st.booleans()) else 1 for d in batch][draw(st.integers(0, batch_rank)):]
    b_batch = [d if draw(st.booleans()) else 1 for d in batch][draw(st.integers(0, batch_rank)):]
    m, n, k = draw(st.integers(0, 40)), draw(st.integers(0, 40)), draw(st.integers(0, 40))
    ta, tb = draw(st.booleans()), draw(st.booleans())
    dtype = draw(st.sampled_from([np.float32, np.float64, np.int32]))
    a_shape = tuple(a_batch) + ((k, m) if ta else (m, k))
    b_shape = tuple(b_batch) + ((n, k) if tb else (k, n))
    return a_shape, b_shape, ta, tb, dtype, draw(st.integers(0, 2**31))


@settings(max_examples=80, deadline=None)
@given(matmul_case())
def test_hypothesis_shapes(case):
    a_shape, b_shape, ta, tb, dtype, seed = case
    rng = np.random.default_rng(seed)
    check(rand(rng, a_shape, dtype), rand(rng, b_shape, dtype), ta, tb)
