"""mnnpy.numpy products and mnnpy.numpy.linalg against NumPy itself."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import mnnpy.numpy as mnp
from mnnpy import _core
from helpers import assert_same
from numpy_strategies import DTYPES

la = mnp.linalg

FAST = settings(max_examples=60, deadline=None)


def small_values(dtype):
    """Small integers in ``dtype``: products and sums stay exact in every dtype (float16 too)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return st.booleans()
    if dtype.kind == "u":
        return st.integers(0, 3)
    if dtype.kind == "i":
        return st.integers(-3, 3)
    return st.integers(-3, 3).map(float)


@st.composite
def small_arrays(draw, shape, dtype=None, dtypes=DTYPES):
    dtype = draw(st.sampled_from(dtypes)) if dtype is None else dtype
    if draw(st.booleans()) and len(shape):
        big = draw(hnp.arrays(dtype, tuple(2 * s for s in shape), elements=small_values(dtype)))
        return big[tuple(slice(None, None, 2) for _ in shape)][::-1]  # a non-contiguous view
    return draw(hnp.arrays(dtype, shape, elements=small_values(dtype)))


def var(a):
    return _core.const(np.asarray(a), None, "NCHW")


def both(fn_ours, fn_ref, *args, **kw):
    """Runs NumPy and mnnpy; same exception type, or the same dtype, shape and values."""
    try:
        expected = fn_ref(*args, **kw)
    except Exception as e:  # noqa: BLE001
        with pytest.raises(type(e)):
            np.asarray(fn_ours(*[var(a) if isinstance(a, np.ndarray) else a for a in args], **kw))
        return
    ours = fn_ours(*[var(a) if isinstance(a, np.ndarray) else a for a in args], **kw)
    assert_same(ours, expected)


dims = st.integers(0, 4)


# ---------------------------------------------------------------- products
@FAST
@given(st.data(), st.integers(0, 3), st.integers(0, 3), dims, dims, dims)
def test_dot_matches_numpy(data, nda, ndb, m, k, n):
    sa = {0: (), 1: (k,), 2: (m, k), 3: (2, m, k)}[nda]
    sb = {0: (), 1: (k,), 2: (k, n), 3: (3, k, n)}[ndb]
    a = data.draw(small_arrays(sa))
    b = data.draw(small_arrays(sb))
    both(mnp.dot, np.dot, a, b)


@FAST
@given(st.data(), hnp.mutually_broadcastable_shapes(signature="(m,k),(k,n)->(m,n)", max_dims=4,
                                                     max_side=4))
def test_matmul_broadcasts_stacks(data, shapes):
    a = data.draw(small_arrays(shapes.input_shapes[0]))
    b = data.draw(small_arrays(shapes.input_shapes[1]))
    both(mnp.matmul, np.matmul, a, b)


def test_matmul_vectors_out_and_errors(rng):
    a, b = rng.standard_normal((3, 4)), rng.standard_normal(4)
    assert_same(mnp.matmul(var(a), var(b)), a @ b)
    assert_same(mnp.matmul(var(b), var(b)), b @ b)
    out = var(np.zeros(3))
    r = mnp.matmul(var(a), var(b), out=out)
    assert r is out
    assert_same(out, a @ b)
    for x, y in [(a, a), (np.float64(2.0), a)]:
        with pytest.raises(ValueError):
            np.matmul(x, y)
        with pytest.raises(ValueError):
            mnp.matmul(var(x), var(y))


def test_dot_weak_scalars_and_large_gemm(rng):
    x = rng.standard_normal((70, 90)).astype(np.float32)
    y = rng.standard_normal((90, 50)).astype(np.float32)
    assert_same(mnp.dot(var(x), var(y)), x @ y, rtol=1e-5, atol=1e-5)
    i8 = rng.integers(-100, 100, (5, 6)).astype(np.int8)
    assert_same(mnp.dot(var(i8), var(i8.T)), np.dot(i8, i8.T))  # wraps as NumPy
    assert_same(mnp.dot(2, var(i8)), np.dot(2, i8))


@FAST
@given(st.data(), st.integers(0, 2), st.integers(0, 2), dims)
def test_inner_vdot_outer(data, nda, ndb, k):
    a = data.draw(small_arrays((2,) * nda + (k,)))
    b = data.draw(small_arrays((3,) * ndb + (k,)))
    both(mnp.inner, np.inner, a, b)
    both(mnp.outer, np.outer, a, b)
    if a.size == b.size:
        both(mnp.vdot, np.vdot, a, b)


def test_inner_vdot_errors(rng):
    a, b = rng.standard_normal(3), rng.standard_normal(4)
    for f, g in [(mnp.inner, np.inner), (mnp.vdot, np.vdot)]:
        with pytest.raises(ValueError):
            g(a, b)
        with pytest.raises(ValueError):
            f(var(a), var(b))


@FAST
@given(st.data(), st.sampled_from([0, 1, 2, ([0, 2], [1, 0]), ([1], [2]), (2, 0)]))
def test_tensordot(data, axes):
    a = data.draw(small_arrays((2, 3, 4)))
    b = data.draw(small_arrays((4, 3, 2)))
    both(mnp.tensordot, np.tensordot, a, b, axes)


EINSUM_CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,jk", [(3, 4), (4, 2)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ij->j", [(3, 4)]), ("ij->", [(3, 4)]), ("ii", [(4, 4)]), ("ii->i", [(4, 4)]), ("ji", [(2, 3)]),
    ("i,i", [(5,), (5,)]), ("i,j->ij", [(3,), (4,)]), ("...j,jk->...k", [(2, 3, 4), (4, 2)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]), ("bij,bkj->bik", [(2, 3, 4), (2, 5, 4)]), ("iij->j", [(3, 3, 2)]),
    ("ijk,k->ij", [(2, 3, 4), (4,)]), ("...ii->...i", [(2, 3, 3)]), ("i...,i...->...", [(3, 2), (3, 2)]),
    ("ij,ij->ij", [(3, 4), (3, 4)]), ("i,i,i", [(4,), (4,), (4,)]), ("ij,j", [(0, 3), (3,)]),
]


@FAST
@given(st.data(), st.sampled_from(EINSUM_CASES), st.sampled_from(DTYPES))
def test_einsum_matches_numpy(data, case, dtype):
    subscripts, shapes = case
    ops = [data.draw(small_arrays(s, dtype)) for s in shapes]
    both(lambda *o: mnp.einsum(subscripts, *o), lambda *o: np.einsum(subscripts, *o), *ops)


def test_einsum_options_and_errors(rng):
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    assert_same(mnp.einsum("ij,jk->ik", var(a), var(b), optimize=True), np.einsum("ij,jk->ik", a, b), rtol=1e-12)
    assert_same(mnp.einsum(var(a), [0, 1], var(b), [1, 2], [0, 2]), np.einsum(a, [0, 1], b, [1, 2], [0, 2]),
                rtol=1e-12)
    assert_same(mnp.einsum("ij->i", var(a), dtype=np.float32, casting="same_kind"),
                np.einsum("ij->i", a, dtype=np.float32, casting="same_kind"), rtol=1e-5, atol=1e-5)
    with pytest.raises(TypeError):
        np.einsum("ij->i", a, dtype=np.float32)
    with pytest.raises(TypeError):
        mnp.einsum("ij->i", var(a), dtype=np.float32)
    for sub, ops in [("ij,jk->ik", [a, a]), ("ij,jk", [a]), ("i->j", [a[0]]), ("ij->ii", [a]), ("i1", [a])]:
        with pytest.raises(ValueError):
            np.einsum(sub, *ops)
        with pytest.raises(ValueError):
            mnp.einsum(sub, *[var(o) for o in ops])


@FAST
@given(st.data(), st.integers(-3, 3), st.sampled_from([(0, 1), (1, 2), (2, 0), (-1, -2)]))
def test_trace(data, offset, axes):
    a = data.draw(small_arrays((3, 4, 2), dtypes=[d for d in DTYPES if d != "uint8"]))
    both(mnp.trace, np.trace, a, offset, *axes)


@FAST
@given(st.data(), st.integers(0, 3), st.integers(0, 3))
def test_kron(data, nda, ndb):
    a = data.draw(small_arrays((2, 3, 1)[:nda]))
    b = data.draw(small_arrays((3, 2, 2)[:ndb]))
    both(mnp.kron, np.kron, a, b)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@FAST
@given(st.data(), st.sampled_from([(3, 3), (2, 3), (3, 2), (2, 2)]), st.sampled_from(DTYPES[1:]))
def test_cross(data, comps, dtype):
    a = data.draw(small_arrays((4, comps[0]), dtype))
    b = data.draw(small_arrays((1, comps[1]), dtype))
    both(mnp.cross, np.cross, a, b)
    both(lambda x, y: mnp.cross(x, y, axisa=0, axisb=0, axisc=0),
         lambda x, y: np.cross(x, y, axisa=0, axisb=0, axisc=0), a.T.copy(), np.repeat(b.T, 4, 1))


def test_cross_errors():
    with pytest.raises(ValueError):
        np.cross(np.ones(4), np.ones(3))
    with pytest.raises(ValueError):
        mnp.cross(var(np.ones(4)), var(np.ones(3)))


@FAST
@given(st.data(), st.integers(1, 7), st.integers(1, 7), st.sampled_from(["full", "same", "valid"]))
def test_convolve_correlate(data, na, nv, mode):
    a = data.draw(small_arrays((na,)))
    v = data.draw(small_arrays((nv,)))
    both(lambda x, y: mnp.convolve(x, y, mode), lambda x, y: np.convolve(x, y, mode), a, v)
    both(lambda x, y: mnp.correlate(x, y, mode), lambda x, y: np.correlate(x, y, mode), a, v)


def test_convolve_errors_and_large(rng):
    for f, g in [(mnp.convolve, np.convolve), (mnp.correlate, np.correlate)]:
        with pytest.raises(ValueError):
            g(np.ones(0), np.ones(3))
        with pytest.raises(ValueError):
            f(var(np.ones(0)), var(np.ones(3)))
    a, v = rng.standard_normal(5000), rng.standard_normal(300)
    assert_same(mnp.convolve(var(a), var(v)), np.convolve(a, v), rtol=1e-9, atol=1e-9)


@FAST
@given(st.data(), st.sampled_from([None, 0, 1, 4]), st.booleans())
def test_vander(data, n, increasing):
    x = data.draw(small_arrays((4,)))
    both(lambda a: mnp.vander(a, n, increasing), lambda a: np.vander(a, n, increasing), x)


# ---------------------------------------------------------------- linalg
LA_DTYPES = ["float32", "float64", "int64", "int32", "bool"]
TOL = {np.dtype("float32"): 2e-3, np.dtype("float64"): 1e-9}


def well_conditioned(rng, shape, dtype="float64"):
    n = shape[-1]
    a = rng.standard_normal(shape) + 3 * np.sqrt(n) * np.eye(n)
    return a.astype(dtype) if np.dtype(dtype).kind == "f" else np.round(a).astype(dtype)


def close(ours, expected, rtol=None, atol=None):
    ours = np.asarray(ours)
    expected = np.asarray(expected)
    assert ours.dtype == expected.dtype, f"dtype {ours.dtype} != NumPy's {expected.dtype}"
    assert ours.shape == expected.shape, f"shape {ours.shape} != NumPy's {expected.shape}"
    tol = TOL[expected.dtype] if rtol is None else rtol
    np.testing.assert_allclose(ours, expected, rtol=tol, atol=tol if atol is None else atol)


STACKS = [(), (0,), (3,), (2, 2)]


@pytest.mark.parametrize("dtype", LA_DTYPES)
@pytest.mark.parametrize("batch", STACKS)
@pytest.mark.parametrize("n", [0, 1, 3, 7, 60])
def test_inv_det_solve(rng, dtype, batch, n):
    if dtype == "bool":
        a = np.broadcast_to(np.eye(n, dtype=bool), batch + (n, n)).copy()
    else:
        a = well_conditioned(rng, batch + (n, n), dtype)
    b = rng.standard_normal(batch + (n, 2)).astype(a.dtype if a.dtype.kind == "f" else np.float64)
    close(la.inv(var(a)), np.linalg.inv(a))
    close(la.det(var(a)), np.linalg.det(a), rtol=TOL[np.linalg.det(a).dtype] * 10)
    s, l = la.slogdet(var(a))
    es, el = np.linalg.slogdet(a)
    close(s, es)
    close(l, el)
    close(la.solve(var(a), var(b)), np.linalg.solve(a, b))
    if not batch:
        close(la.solve(var(a), var(b[:, 0])), np.linalg.solve(a, b[:, 0]))


def test_solve_broadcasts_and_errors(rng):
    a = well_conditioned(rng, (2, 1, 4, 4))
    b = rng.standard_normal((3, 4, 2))
    close(la.solve(var(a), var(b)), np.linalg.solve(a, b))
    singular = np.ones((3, 3))
    for f, g, args in [(la.inv, np.linalg.inv, (singular,)), (la.solve, np.linalg.solve, (singular, np.ones(3))),
                       (la.inv, np.linalg.inv, (np.ones((2, 3)),)), (la.det, np.linalg.det, (np.ones(3),)),
                       (la.cholesky, np.linalg.cholesky, (-np.eye(3),)),
                       (la.inv, np.linalg.inv, (np.eye(2, dtype=np.float16),))]:
        with pytest.raises(Exception) as expected:
            g(*args)
        with pytest.raises(expected.type):
            f(*[var(x) for x in args])
    assert la.det(var(singular)).item() == 0
    assert np.asarray(la.slogdet(var(singular)).logabsdet) == -np.inf


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("batch", [(), (3,)])
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(rng, dtype, batch, upper):
    x = rng.standard_normal(batch + (5, 5))
    a = (x @ np.swapaxes(x, -1, -2) + 5 * np.eye(5))
    a = a.astype(dtype) if dtype != "int64" else np.round(a).astype(dtype)
    close(la.cholesky(var(a), upper=upper), np.linalg.cholesky(a, upper=upper))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
@pytest.mark.parametrize("shape", [(4, 4), (6, 3), (3, 6), (2, 5, 4), (0, 3), (3, 0), (1, 1)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr_matches_lapack_signs(rng, dtype, shape, mode):
    a = (rng.standard_normal(shape) * 4).astype(dtype)
    ours, ref = la.qr(var(a), mode), np.linalg.qr(a, mode)
    if mode == "r":
        close(ours, ref)
    else:
        assert type(ours).__name__ == "QRResult"
        close(ours.Q, ref.Q)
        close(ours.R, ref.R)


def test_qr_mode_errors():
    with pytest.raises(ValueError):
        np.linalg.qr(np.eye(2), "bad")
    with pytest.raises(ValueError):
        la.qr(var(np.eye(2)), "bad")


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("shape", [(1, 1), (4, 4), (9, 9), (3, 5, 5), (0, 0), (2, 0, 0)])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh(rng, dtype, shape, uplo):
    x = rng.standard_normal(shape) * 3
    a = np.tril(x) if uplo == "L" else np.triu(x)  # only one triangle is read
    a = a.astype(dtype) if dtype != "int64" else np.round(a).astype(dtype)
    w, v = la.eigh(var(a), uplo)
    ew, ev = np.linalg.eigh(a, uplo)
    close(w, ew)
    close(la.eigvalsh(var(a), uplo), ew)
    sym = np.linalg.eigh(a, uplo)
    full = (sym.eigenvectors * sym.eigenvalues[..., None, :]) @ np.swapaxes(sym.eigenvectors, -1, -2)
    v = np.asarray(v)
    assert v.dtype == ev.dtype and v.shape == ev.shape
    close((v * np.asarray(w)[..., None, :]) @ np.swapaxes(v, -1, -2), full, atol=TOL[ew.dtype] * 10)
    close(np.swapaxes(v, -1, -2) @ v, np.broadcast_to(np.eye(shape[-1], dtype=ew.dtype), v.shape))


def test_eigh_errors():
    with pytest.raises(ValueError):
        np.linalg.eigh(np.eye(2), "X")
    with pytest.raises(ValueError):
        la.eigh(var(np.eye(2)), "X")


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("shape", [(4, 4), (6, 3), (3, 6), (2, 5, 4), (1, 1), (0, 3), (3, 0), (2, 2, 0)])
@pytest.mark.parametrize("full", [True, False])
def test_svd(rng, dtype, shape, full):
    a = (rng.standard_normal(shape) * 3).astype(dtype)
    ref = np.linalg.svd(a, full_matrices=full)
    ours = la.svd(var(a), full_matrices=full)
    assert type(ours).__name__ == "SVDResult"
    u, s, vh = (np.asarray(x) for x in ours)
    close(s, ref.S)
    assert u.shape == ref.U.shape and vh.shape == ref.Vh.shape and u.dtype == ref.U.dtype
    k = s.shape[-1]
    close((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], a.astype(ref.S.dtype), atol=TOL[ref.S.dtype] * 10)
    eye_u = np.broadcast_to(np.eye(u.shape[-1], dtype=u.dtype), u.shape[:-2] + (u.shape[-1],) * 2)
    eye_v = np.broadcast_to(np.eye(vh.shape[-2], dtype=u.dtype), vh.shape[:-2] + (vh.shape[-2],) * 2)
    close(np.swapaxes(u, -1, -2) @ u, eye_u)
    close(vh @ np.swapaxes(vh, -1, -2), eye_v)
    close(la.svd(var(a), compute_uv=False), ref.S)


def test_svd_rank_deficient(rng):
    a = rng.standard_normal((6, 2)) @ rng.standard_normal((2, 5))
    u, s, vh = (np.asarray(x) for x in la.svd(var(a)))
    close(s, np.linalg.svd(a, compute_uv=False), atol=1e-9)
    close(u.T @ u, np.eye(6))
    close(vh @ vh.T, np.eye(5))
    close((u[:, :5] * s) @ vh, a)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4), (4, 4)])
def test_pinv_matrix_rank(rng, dtype, shape):
    a = (rng.standard_normal(shape) * 3).astype(dtype)
    close(la.pinv(var(a)), np.linalg.pinv(a), rtol=TOL[np.linalg.pinv(a).dtype] * 10)
    assert_same(la.matrix_rank(var(a)), np.linalg.matrix_rank(a))
    low = (rng.standard_normal(shape[:-1] + (1,)) @ rng.standard_normal((1, shape[-1]))).astype(dtype)
    assert_same(la.matrix_rank(var(low)), np.linalg.matrix_rank(low))
    assert_same(la.matrix_rank(var(low), tol=0.5), np.linalg.matrix_rank(low, tol=0.5))
    assert_same(la.matrix_rank(var(np.zeros(3))), np.asarray(np.linalg.matrix_rank(np.zeros(3)), np.int64))


@pytest.mark.parametrize("shape", [(6, 3), (3, 6), (4, 4)])
@pytest.mark.parametrize("vector_b", [True, False])
def test_lstsq(rng, shape, vector_b):
    a = rng.standard_normal(shape)
    b = rng.standard_normal(shape[0]) if vector_b else rng.standard_normal((shape[0], 2))
    x, res, rank, s = la.lstsq(var(a), var(b))
    ex, eres, erank, es = np.linalg.lstsq(a, b)
    close(x, ex)
    close(res, eres)
    assert rank == erank
    close(s, es)


@pytest.mark.parametrize("ord", [None, "fro", "nuc", 2, -2, 1, -1, np.inf, -np.inf])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
@pytest.mark.parametrize("keepdims", [False, True])
def test_matrix_norms(rng, ord, dtype, keepdims):
    a = (rng.standard_normal((3, 4, 5)) * 3).astype(dtype)
    for axis in [(1, 2), (2, 0), (-1, -2)]:
        close(la.norm(var(a), ord, axis, keepdims), np.linalg.norm(a, ord, axis, keepdims), rtol=1e-5
              if dtype == "float32" else 1e-9)
    m = a[0]
    close(la.norm(var(m), ord, keepdims=keepdims), np.linalg.norm(m, ord, keepdims=keepdims),
          rtol=1e-5 if dtype == "float32" else 1e-9)


@pytest.mark.parametrize("ord", [None, 2, 1, 0, 3, 0.5, np.inf, -np.inf, -1])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "bool"])
def test_vector_norms(rng, ord, dtype):
    a = (rng.standard_normal((3, 5)) * 3).astype(dtype)
    tol = {"float16": 1e-2, "float32": 1e-5}.get(dtype, 1e-9)
    for axis in [0, 1, -1]:
        for keepdims in [False, True]:
            close(la.norm(var(a), ord, axis, keepdims), np.linalg.norm(a, ord, axis, keepdims), rtol=tol)
    close(la.norm(var(a[0]), ord), np.linalg.norm(a[0], ord), rtol=tol)
    close(la.norm(var(a)), np.linalg.norm(a), rtol=tol)


def test_norm_errors():
    a = np.ones((2, 2, 2))
    for args in [(a, 2), (a, "fro", 0), (a, 3, (0, 1)), (a, None, (0, 0)), (a, None, (0, 1, 2))]:
        with pytest.raises(ValueError):
            np.linalg.norm(*args)
        with pytest.raises(ValueError):
            la.norm(var(args[0]), *args[1:])


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, -1, -2])
@pytest.mark.parametrize("dtype", ["int64", "float64", "float32"])
def test_matrix_power(rng, n, dtype):
    a = well_conditioned(rng, (2, 3, 3), "float64")
    a = np.round(a).astype(dtype) if dtype == "int64" else a.astype(dtype)
    if n < 0 and dtype == "int64":
        close(la.matrix_power(var(a), n), np.linalg.matrix_power(a, n))
        return
    expected = np.linalg.matrix_power(a, n)
    ours = la.matrix_power(var(a), n)
    if expected.dtype.kind == "i":
        assert_same(ours, expected)
    else:
        close(ours, expected, rtol=TOL[expected.dtype] * 10)
    with pytest.raises(TypeError):
        np.linalg.matrix_power(a, 1.5)
    with pytest.raises(TypeError):
        la.matrix_power(var(a), 1.5)


def test_multi_dot(rng):
    arrays = [rng.standard_normal(s) for s in [(4,), (4, 10), (10, 3), (3, 7), (7,)]]
    close(la.multi_dot([var(a) for a in arrays]), np.linalg.multi_dot(arrays))
    close(la.multi_dot([var(a) for a in arrays[1:4]]), np.linalg.multi_dot(arrays[1:4]))
    with pytest.raises(ValueError):
        np.linalg.multi_dot(arrays[:1])
    with pytest.raises(ValueError):
        la.multi_dot([var(arrays[0])])


def test_array_api_extras(rng):
    a = rng.standard_normal((2, 3, 4))
    close(la.svdvals(var(a)), np.linalg.svdvals(a))
    close(la.matrix_norm(var(a), ord="nuc"), np.linalg.matrix_norm(a, ord="nuc"))
    close(la.vector_norm(var(a), axis=(0, 2), ord=1), np.linalg.vector_norm(a, axis=(0, 2), ord=1))
    assert_same(la.diagonal(var(a), offset=1), np.linalg.diagonal(a, offset=1))
    assert_same(la.matrix_transpose(var(a)), np.linalg.matrix_transpose(a))
    assert_same(la.trace(var(a)), np.linalg.trace(a), rtol=1e-12)
    assert_same(la.outer(var(a[0, 0]), var(a[0, 1])), np.linalg.outer(a[0, 0], a[0, 1]))


def test_large_factorizations(rng):
    a = well_conditioned(rng, (200, 200))
    close(la.inv(var(a)), np.linalg.inv(a))
    close(la.det(var(a)), np.linalg.det(a), rtol=1e-9)
    a32 = a.astype(np.float32)
    close(la.inv(var(a32)), np.linalg.inv(a32), rtol=1e-3, atol=1e-4)
    sym = a + a.T
    close(la.eigvalsh(var(sym)), np.linalg.eigvalsh(sym), atol=1e-8)
