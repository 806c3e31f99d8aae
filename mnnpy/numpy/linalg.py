"""numpy.linalg on mnnpy: factorizations run as C++ ops over stacks of matrices (one matrix per
thread; a single large matrix threads its GEMM updates).

float32 stays float32, float64 stays float64, integers and bools are computed in float64;
float16 raises TypeError as in NumPy. Functions that fail on the data (a singular matrix, a
matrix that is not positive definite) compute at once so that they can raise LinAlgError
where NumPy does; the others stay lazy.
"""
import operator as _operator
from collections import namedtuple as _namedtuple

import numpy as _np

from .. import _core
from .._core import Var
from ._common import asvar, normalize_axis, store
from ._linalg_products import (cross, diagonal_view as _diagonal_view, matmul, outer as _outer, tensordot,
                               trace as _trace, vecdot as _vecdot)

__all__ = ["LinAlgError", "norm", "vector_norm", "matrix_norm", "inv", "det", "slogdet", "solve", "lstsq", "pinv",
           "svd", "svdvals", "qr", "cholesky", "eigh", "eigvalsh", "matrix_power", "matrix_rank", "multi_dot",
           "matmul", "tensordot", "cross", "outer", "trace", "diagonal", "matrix_transpose", "vecdot",
           "SVDResult", "EighResult", "QRResult", "SlogdetResult"]

LinAlgError = _np.linalg.LinAlgError

SVDResult = _namedtuple("SVDResult", ["U", "S", "Vh"])
EighResult = _namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
QRResult = _namedtuple("QRResult", ["Q", "R"])
SlogdetResult = _namedtuple("SlogdetResult", ["sign", "logabsdet"])

_F32, _F64 = _np.dtype("float32"), _np.dtype("float64")


# ---------------------------------------------------------------- checks and conversions
def _float_dtype(dt):
    if dt == _np.float16:
        raise TypeError("array type float16 is unsupported in linalg")
    return dt if dt in (_F32, _F64) else _F64


def _as_float(a, dtype=None):
    a = asvar(a)
    dt = _float_dtype(a.dtype if dtype is None else dtype)
    return a if a.dtype == dt else _core.cast(a, dt)


def _check_stacked(a):
    if a.ndim < 2:
        raise LinAlgError(f"{a.ndim}-dimensional array given. Array must be at least two-dimensional")


def _check_square(a):
    _check_stacked(a)
    if a.shape[-1] != a.shape[-2]:
        raise LinAlgError("Last 2 dimensions of the array must be square")


def _op(name, inputs, attrs=None):
    out = _core.op(name, list(inputs), attrs or {})
    return out if isinstance(out, list) else [out]


def _computed(values, info, message):
    """Evaluates ``values`` with their ``info`` flags; LinAlgError(message) if any is set.
    Values that read placeholders (parameters being trained) stay lazy so that gradients flow
    through them; a singular matrix then gives non-finite values instead of the error."""
    if any(v.reads_placeholder for v in values):
        return list(values)
    if any(v.size == 0 for v in values):
        # Nothing to factor (the executor skips ops whose first output is empty).
        return [_core.const(_np.zeros(tuple(v.shape), v.dtype), None, "NCHW") for v in values]
    computed = _core.evaluate_as_constants(list(values) + [info])
    if info.size and _np.asarray(computed[-1].read()).any():
        raise LinAlgError(message)
    return computed[:-1]


def _swap_last(x):
    perm = list(range(x.ndim))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return _core.transpose(x, perm)


def _reduce(kind, x, axes, keepdims=False):
    return _core.reduce(kind, x, [int(a) for a in axes], bool(keepdims))


# ---------------------------------------------------------------- LU family
def inv(a):
    """Inverse of each square matrix; LinAlgError('Singular matrix') if one is singular."""
    a = _as_float(a)
    _check_square(a)
    x, info = _op("LinalgSolve", [a])
    return _computed([x], info, "Singular matrix")[0]


def solve(a, b):
    """Solution of ``a @ x = b``; ``b`` is a vector when 1-D, else a stack of matrices."""
    a, b = asvar(a), asvar(b)
    dt = _float_dtype(_core.promote_types(a.dtype, b.dtype))
    a, b = _as_float(a, dt), _as_float(b, dt)
    _check_square(a)
    vector = b.ndim == 1
    if vector:
        b = _core.reshape(b, (b.shape[0], 1))
    if b.shape[-2] != a.shape[-1]:
        raise ValueError(f"solve: Input operand 1 has a mismatch in its core dimension 0, with gufunc signature "
                         f"(m,m),(m,n)->(m,n) (size {b.shape[-2]} is different from {a.shape[-1]})")
    batch = _np.broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2]))
    a = _broadcast(a, batch + tuple(a.shape[-2:]))
    b = _broadcast(b, batch + tuple(b.shape[-2:]))
    x, info = _op("LinalgSolve", [a, b])
    x = _computed([x], info, "Singular matrix")[0]
    return _core.reshape(x, tuple(x.shape[:-1])) if vector else x


def _broadcast(x, shape):
    return x if tuple(x.shape) == tuple(shape) else _core.broadcast_to(x, tuple(shape))


def slogdet(a):
    """Sign and natural log of the absolute determinant of each matrix (SlogdetResult)."""
    a = _as_float(a)
    _check_square(a)
    sign, logabsdet, _ = _op("LinalgDet", [a])
    return SlogdetResult(sign, logabsdet)


def det(a):
    """Determinant of each square matrix (by LU)."""
    a = _as_float(a)
    _check_square(a)
    return _op("LinalgDet", [a])[2]


def cholesky(a, /, *, upper=False):
    """Cholesky factor L (``a = L L^T``), or U = L^T with ``upper``; LinAlgError when a matrix
    is not positive definite."""
    a = _as_float(a)
    _check_square(a)
    factor, info = _op("LinalgCholesky", [a], {"upper": int(bool(upper))})
    return _computed([factor], info, "Matrix is not positive definite")[0]


def matrix_power(a, n):
    """``a`` to the integer power ``n`` (negative powers invert first)."""
    a = asvar(a)
    try:
        n = _operator.index(n)
    except TypeError:
        raise TypeError("exponent must be an integer") from None
    _check_square(a)
    if n == 0:
        eye = _np.broadcast_to(_np.eye(a.shape[-1], dtype=a.dtype), tuple(a.shape)).copy()
        return _core.const(eye, None, "NCHW")
    if n < 0:
        a, n = inv(a), -n
    result, base = None, a
    while n:
        if n & 1:
            result = base if result is None else _core.matmul(result, base)
        n >>= 1
        if n:
            base = _core.matmul(base, base)
    return result


# ---------------------------------------------------------------- QR, eigh, SVD
def qr(a, mode="reduced"):
    """Householder QR: QRResult(Q, R) for modes 'reduced' and 'complete', R for 'r'."""
    if mode not in ("reduced", "complete", "r", "raw"):
        raise ValueError(f"Unrecognized mode '{mode}'")
    if mode == "raw":
        raise NotImplementedError("qr(mode='raw') (LAPACK's packed reflectors) is not implemented")
    a = _as_float(a)
    _check_stacked(a)
    outs = _op("LinalgQR", [a], {"mode": mode})
    return outs[0] if mode == "r" else QRResult(outs[0], outs[1])


def eigh(a, UPLO="L"):
    """Eigenvalues (ascending) and eigenvectors (columns) of symmetric matrices: EighResult."""
    lower = _uplo(UPLO)
    a = _as_float(a)
    _check_square(a)
    w, v = _op("LinalgEigh", [a], {"lower": int(lower), "vectors": 1})
    return EighResult(w, v)


def eigvalsh(a, UPLO="L"):
    """Eigenvalues (ascending) of symmetric matrices."""
    lower = _uplo(UPLO)
    a = _as_float(a)
    _check_square(a)
    return _op("LinalgEigh", [a], {"lower": int(lower), "vectors": 0})[0]


def _uplo(uplo):
    if uplo not in ("L", "U", "l", "u"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    return uplo in ("L", "l")


def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """Singular value decomposition: SVDResult(U, S, Vh) with S descending, or S alone."""
    a = _as_float(a)
    _check_stacked(a)
    if not compute_uv:
        return _op("LinalgSVD", [a], {"full": 0, "compute_uv": 0})[0]
    if a.size == 0:
        return _empty_svd(a, full_matrices)
    u, s, vh = _op("LinalgSVD", [a], {"full": int(bool(full_matrices)), "compute_uv": 1})
    return SVDResult(u, s, vh)


def _empty_svd(a, full):
    """SVD of matrices with no elements: identity singular vectors where they have a size."""
    *batch, m, n = a.shape
    k = min(m, n)
    batch = tuple(batch)

    def eye(rows, cols):
        return _core.const(_np.broadcast_to(_np.eye(rows, cols, dtype=a.dtype), batch + (rows, cols)).copy(),
                           None, "NCHW")

    return SVDResult(eye(m, m if full else k), _core.const(_np.zeros(batch + (k,), a.dtype), None, "NCHW"),
                     eye(n if full else k, n))


def svdvals(x, /):
    """Singular values (descending) of each matrix."""
    return svd(x, compute_uv=False)


def _eps(dt):
    return float(_np.finfo(dt).eps)


def pinv(a, rcond=None, hermitian=False, *, rtol=None):
    """Moore-Penrose pseudo-inverse through the SVD; singular values at most
    ``rcond * max(s)`` are treated as zero."""
    a = _as_float(a)
    _check_stacked(a)
    m, n = a.shape[-2], a.shape[-1]
    if rcond is None:
        rcond = rtol if rtol is not None else max(m, n) * _eps(a.dtype)
    if a.size == 0:
        return _core.const(_np.zeros(tuple(a.shape[:-2]) + (n, m), a.dtype), None, "NCHW")
    u, s, vh = svd(a, full_matrices=False)
    rc = asvar(_np.asarray(rcond, dtype=a.dtype))
    if rc.ndim:
        rc = _core.expand_dims(rc, [rc.ndim])
    cutoff = _core.binary("Mul", rc, _reduce("max", s, [s.ndim - 1], True))
    keep = _core.binary("Greater", s, cutoff)
    zero = _core.const(_np.zeros((), a.dtype), None, "NCHW")
    s_inv = _core.where(keep, _core.unary("Reciprocal", _core.where(keep, s, _core.const(_np.ones((), a.dtype), None, "NCHW"))), zero)
    scaled = _core.binary("Mul", _core.expand_dims(s_inv, [s_inv.ndim]), _swap_last(u))
    return _core.matmul(vh, scaled, True, False)


def matrix_rank(A, tol=None, hermitian=False, *, rtol=None):
    """Number of singular values above the tolerance (NumPy's default: S.max * max(M, N) * eps)."""
    A = asvar(A)
    if A.ndim < 2:
        nonzero = _core.reduce("any", _core.binary("NotEqual", A, _core.scalar(0, A)), None, False)
        return _core.cast(nonzero, _np.int64)
    A = _as_float(A)
    s = svd(A, compute_uv=False)
    if s.shape[-1] == 0:
        return _core.const(_np.zeros(tuple(s.shape[:-1]), _np.int64), None, "NCHW")
    if tol is None:
        factor = rtol if rtol is not None else max(A.shape[-2:]) * _eps(A.dtype)
        factor = asvar(_np.asarray(factor, dtype=A.dtype))
        if factor.ndim:
            factor = _core.expand_dims(factor, [factor.ndim])
        tol = _core.binary("Mul", _reduce("max", s, [s.ndim - 1], True), factor)
    else:
        tol = asvar(_np.asarray(tol, dtype=A.dtype)) if not isinstance(tol, Var) else _core.cast(tol, A.dtype)
        if tol.ndim:
            tol = _core.expand_dims(tol, [tol.ndim])
    above = _core.cast(_core.binary("Greater", s, tol), _np.int64)
    return _reduce("sum", above, [s.ndim - 1])


def lstsq(a, b, rcond=None):
    """Least-squares solution of ``a @ x = b``: (x, residuals, rank, s), as NumPy."""
    a, b = asvar(a), asvar(b)
    dt = _float_dtype(_core.promote_types(a.dtype, b.dtype))
    a, b = _as_float(a, dt), _as_float(b, dt)
    if a.ndim != 2:
        raise LinAlgError(f"{a.ndim}-dimensional array given. Array must be two-dimensional")
    if b.ndim not in (1, 2):
        raise LinAlgError(f"{b.ndim}-dimensional array given. Array must be one or two-dimensional")
    m, n = a.shape
    vector = b.ndim == 1
    b2 = _core.reshape(b, (b.shape[0], 1)) if vector else b
    if b2.shape[0] != m:
        raise LinAlgError("Incompatible dimensions")
    k = b2.shape[1]
    if rcond is None:
        rcond = _eps(dt) * max(m, n)
    if min(m, n) == 0:
        x = _core.const(_np.zeros((n, k), dt), None, "NCHW")
        s_np = _np.zeros((0,), dt)
        rank = 0
    else:
        u, s, vh = svd(a, full_matrices=False)
        u, s, vh = _core.evaluate_as_constants([u, s, vh])
        s_np = _np.asarray(s.read())
        keep = s_np > rcond * s_np.max()
        rank = int(keep.sum())
        s_inv = _np.where(keep, 1.0 / _np.where(keep, s_np, 1.0), 0.0).astype(dt)
        coeffs = _core.binary("Mul", _core.const(s_inv.reshape(-1, 1), None, "NCHW"), _core.matmul(u, b2, True, False))
        x = _core.matmul(vh, coeffs, True, False)
    if rank == n and m > n:
        diff = _core.binary("Sub", b2, _core.matmul(a, x))
        residuals = _reduce("sum", _core.binary("Mul", diff, diff), [0])
    else:
        residuals = _core.const(_np.zeros((0,), dt), None, "NCHW")
    if vector:
        x = _core.reshape(x, (n,))
    return x, residuals, _np.int32(rank), _core.const(s_np, None, "NCHW")


# ---------------------------------------------------------------- norms
def _abs(x):
    return _core.unary("Abs", x)


def _vector_norm(x, ord, axes, keepdims):
    if ord is None or ord == 2:
        return _core.unary("Sqrt", _reduce("sum", _core.binary("Mul", x, x), axes, keepdims))
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    ord = float(ord)
    if ord == _np.inf:
        return _reduce("max", _abs(x), axes, keepdims)
    if ord == -_np.inf:
        return _reduce("min", _abs(x), axes, keepdims)
    if ord == 0:
        nonzero = _core.cast(_core.binary("NotEqual", x, _core.scalar(0, x)), x.dtype)
        return _reduce("sum", nonzero, axes, keepdims)
    if ord == 1:
        return _reduce("sum", _abs(x), axes, keepdims)
    powered = _core.binary("Pow", _abs(x), _core.scalar(ord, x))
    return _core.binary("Pow", _reduce("sum", powered, axes, keepdims), _core.scalar(1.0 / ord, x))


def _matrix_norm(x, ord, row_axis, col_axis, keepdims):
    if ord in (2, -2, "nuc"):
        rest = [i for i in range(x.ndim) if i not in (row_axis, col_axis)]
        s = svd(_core.transpose(x, rest + [row_axis, col_axis]), compute_uv=False)
        kind = {2: "max", -2: "min", "nuc": "sum"}[ord]
        result = _reduce(kind, s, [s.ndim - 1])
    elif ord in (1, -1, _np.inf, -_np.inf):
        if ord in (1, -1):
            sum_axis, pick_axis = row_axis, col_axis
        else:
            sum_axis, pick_axis = col_axis, row_axis
        sums = _reduce("sum", _abs(x), [sum_axis], True)
        result = _reduce("max" if ord > 0 else "min", sums, [pick_axis], True)
        result = _core.squeeze(result, sorted([row_axis, col_axis]))
    elif ord in (None, "fro", "f"):
        result = _core.unary("Sqrt", _reduce("sum", _core.binary("Mul", x, x), [row_axis, col_axis]))
    else:
        raise ValueError("Invalid norm order for matrices.")
    if keepdims:
        result = _core.expand_dims(result, sorted([row_axis, col_axis]))
    return result


def norm(x, ord=None, axis=None, keepdims=False):
    """Matrix or vector norm (numpy.linalg.norm)."""
    x = asvar(x)
    if x.dtype.kind in "biu":
        x = _core.cast(x, _F64)
    nd = x.ndim
    if axis is None:
        if ord is None:
            result = _core.unary("Sqrt", _reduce("sum", _core.binary("Mul", x, x), list(range(nd)), keepdims))
            return result
        if nd == 1:
            axes = (0,)
        elif nd == 2:
            axes = (0, 1)
        else:
            raise ValueError("Improper number of dimensions to norm.")
    elif isinstance(axis, (tuple, list)):
        axes = tuple(axis)
    else:
        try:
            axes = (_operator.index(axis),)
        except TypeError:
            raise TypeError("'axis' must be None, an integer or a tuple of integers") from None
    if len(axes) == 1:
        ax = normalize_axis(axes[0], nd)
        return _vector_norm(x, ord, [ax], keepdims)
    if len(axes) == 2:
        r, c = normalize_axis(axes[0], nd), normalize_axis(axes[1], nd)
        if r == c:
            raise ValueError("Duplicate axes given.")
        return _matrix_norm(x, ord, r, c, keepdims)
    raise ValueError("Improper number of dimensions to norm.")


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """Vector norm over ``axis`` (all axes, flattened, by default)."""
    x = asvar(x)
    if x.dtype.kind in "biu":
        x = _core.cast(x, _F64)
    axes = list(range(x.ndim)) if axis is None else (
        [normalize_axis(a, x.ndim) for a in axis] if isinstance(axis, (tuple, list)) else [normalize_axis(axis, x.ndim)])
    return _vector_norm(x, ord, axes, keepdims)


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """Matrix norm over the last two axes."""
    x = asvar(x)
    _check_stacked(x)
    if x.dtype.kind in "biu":
        x = _core.cast(x, _F64)
    return _matrix_norm(x, ord, x.ndim - 2, x.ndim - 1, keepdims)


# ---------------------------------------------------------------- chains and views
def multi_dot(arrays, *, out=None):
    """Product of a chain of matrices in the cheapest association order."""
    arrays = [asvar(a) for a in arrays]
    if len(arrays) < 2:
        raise ValueError("Expecting at least two arrays.")
    first_vector, last_vector = arrays[0].ndim == 1, arrays[-1].ndim == 1
    if first_vector:
        arrays[0] = _core.reshape(arrays[0], (1, arrays[0].shape[0]))
    if last_vector:
        arrays[-1] = _core.reshape(arrays[-1], (arrays[-1].shape[0], 1))
    for a in arrays:
        if a.ndim != 2:
            raise LinAlgError(f"{a.ndim}-dimensional array given. Array must be two-dimensional")
    dims = [arrays[0].shape[0]] + [a.shape[1] for a in arrays]
    n = len(arrays)
    # Matrix-chain order by dynamic programming (n is the number of operands, not elements).
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k

    def build(i, j):
        if i == j:
            return arrays[i]
        return _core.matmul(build(i, split[i][j]), build(split[i][j] + 1, j))

    result = build(0, n - 1)
    if first_vector and last_vector:
        result = _core.reshape(result, ())
    elif first_vector:
        result = _core.reshape(result, (result.shape[1],))
    elif last_vector:
        result = _core.reshape(result, (result.shape[0],))
    return store(result, out)


def diagonal(x, /, *, offset=0):
    """Diagonals of the last two axes."""
    x = asvar(x)
    _check_stacked(x)
    return _diagonal_view(x, offset, -2, -1)


def matrix_transpose(x, /):
    """Swaps the last two axes."""
    x = asvar(x)
    if x.ndim < 2:
        raise ValueError("Input array must be at least 2-dimensional")
    return _swap_last(x)


def vecdot(x1, x2, /, *, axis=-1):
    """Dot products of the vectors along ``axis`` (numpy.vecdot)."""
    return _vecdot(x1, x2, axis=axis)


def outer(x1, x2, /):
    """Outer product of two 1-D arrays."""
    a, b = asvar(x1), asvar(x2)
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"Input arrays must be one-dimensional, but they are {a.ndim=} and {b.ndim=}.")
    return _outer(a, b)


def trace(x, /, *, offset=0, dtype=None):
    """Trace over the last two axes."""
    x = asvar(x)
    _check_stacked(x)
    return _trace(x, offset, -2, -1, dtype)
