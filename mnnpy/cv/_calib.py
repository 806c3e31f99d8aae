"""Small linear algebra of OpenCV: solve (every DECOMP_ method) and Rodrigues.

These work on a handful of numbers (3x3 rotations, small systems) and return NumPy arrays, as
OpenCV does; they are computed at once with NumPy's LAPACK.
"""
import numpy as _np

from ._common import error

__all__ = ["solve", "Rodrigues",
           "DECOMP_LU", "DECOMP_SVD", "DECOMP_EIG", "DECOMP_CHOLESKY", "DECOMP_QR", "DECOMP_NORMAL"]

DECOMP_LU, DECOMP_SVD, DECOMP_EIG, DECOMP_CHOLESKY, DECOMP_QR, DECOMP_NORMAL = 0, 1, 2, 3, 4, 16


def _matrix(value, func, name):
    a = _np.asarray(value)
    if a.dtype not in (_np.float32, _np.float64):
        raise error(func, f"'{name}' must be float32 or float64, got {a.dtype}")
    if a.ndim == 1:
        a = a.reshape(-1, 1)
    if a.ndim != 2:
        raise error(func, f"'{name}' must be a matrix, got shape {a.shape}")
    return a


def solve(src1, src2, dst=None, flags=DECOMP_LU):
    """``(retval, dst)`` with ``src1 @ dst = src2``: exactly for square systems (LU, Cholesky,
    eigen decomposition), in the least-squares sense for SVD and QR; DECOMP_NORMAL solves the
    normal equations. retval is False when the chosen method finds the matrix singular (or not
    positive definite for Cholesky); dst is then zeros."""
    a, b = _matrix(src1, "solve", "src1"), _matrix(src2, "solve", "src2")
    if a.dtype != b.dtype:
        raise error("solve", f"'src1' and 'src2' must have the same type, got {a.dtype} and {b.dtype}")
    if a.shape[0] != b.shape[0]:
        raise error("solve", f"'src1' has {a.shape[0]} rows but 'src2' has {b.shape[0]}")
    method = int(flags) & ~DECOMP_NORMAL
    if method not in (DECOMP_LU, DECOMP_SVD, DECOMP_EIG, DECOMP_CHOLESKY, DECOMP_QR):
        raise error("solve", f"unsupported flags {flags}")
    A, B = a.astype(_np.float64), b.astype(_np.float64)
    if int(flags) & DECOMP_NORMAL:
        A, B = A.T @ A, A.T @ B
    if method in (DECOMP_LU, DECOMP_CHOLESKY, DECOMP_EIG) and A.shape[0] != A.shape[1]:
        raise error("solve", f"this method needs a square matrix, got {A.shape}; use DECOMP_SVD or DECOMP_QR "
                             f"(or DECOMP_NORMAL)")
    ok, x = True, None
    try:
        if method == DECOMP_LU:
            x = _np.linalg.solve(A, B)
        elif method == DECOMP_CHOLESKY:
            lower = _np.linalg.cholesky(A)
            x = _np.linalg.solve(lower.T, _np.linalg.solve(lower, B))
        elif method == DECOMP_EIG:
            w, v = _np.linalg.eigh(A)
            keep = _np.abs(w) > _np.finfo(_np.float64).eps * _np.abs(w).max(initial=0) * A.shape[0]
            inv_w = _np.where(keep, 1.0 / _np.where(keep, w, 1.0), 0.0)
            x = v @ (inv_w[:, None] * (v.T @ B))
        elif method == DECOMP_SVD:
            x = _np.linalg.lstsq(A, B, rcond=None)[0]
        else:
            if A.shape[0] < A.shape[1]:
                raise error("solve", "DECOMP_QR needs at least as many rows as columns")
            q, r = _np.linalg.qr(A)
            if _np.any(_np.abs(_np.diag(r)) <= _np.finfo(_np.float64).eps * _np.abs(r).max(initial=0)):
                ok = False
            else:
                x = _np.linalg.solve(r, q.T @ B)
    except _np.linalg.LinAlgError:
        ok = False
    if not ok or x is None or not _np.all(_np.isfinite(x)):
        return False, _np.zeros((A.shape[1], B.shape[1]), a.dtype)
    return True, x.astype(a.dtype)


def _vector_to_matrix(r):
    theta = float(_np.linalg.norm(r))
    if theta < _np.finfo(_np.float64).eps:
        return _np.eye(3)
    k = r / theta
    kx = _np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return _np.cos(theta) * _np.eye(3) + (1 - _np.cos(theta)) * _np.outer(k, k) + _np.sin(theta) * kx


def _vector_of_entries(entries):
    """The rotation vector as OpenCV differentiates it: the antisymmetric part of the nine
    entries, scaled by theta / (2 sin theta) with theta from the trace."""
    m = entries.reshape(3, 3)
    theta = _np.arccos(min(max((_np.trace(m) - 1) * 0.5, -1.0), 1.0))
    return _np.array([m[2, 1] - m[1, 2], m[0, 2] - m[2, 0], m[1, 0] - m[0, 1]]) * (theta / (2 * _np.sin(theta)))


def _matrix_to_vector(m):
    u, _, vt = _np.linalg.svd(m)
    rot = u @ vt  # the nearest rotation, as OpenCV takes it
    rx, ry, rz = rot[2, 1] - rot[1, 2], rot[0, 2] - rot[2, 0], rot[1, 0] - rot[0, 1]
    s = _np.sqrt((rx * rx + ry * ry + rz * rz) * 0.25)
    c = min(max((_np.trace(rot) - 1) * 0.5, -1.0), 1.0)
    theta = _np.arccos(c)
    if s < 1e-5:
        if c > 0:
            return _np.zeros(3)
        # A half turn: the axis from the diagonal, signs from the off-diagonal terms.
        rx = _np.sqrt(max((rot[0, 0] + 1) * 0.5, 0.0))
        ry = _np.sqrt(max((rot[1, 1] + 1) * 0.5, 0.0)) * (-1.0 if rot[0, 1] < 0 else 1.0)
        rz = _np.sqrt(max((rot[2, 2] + 1) * 0.5, 0.0)) * (-1.0 if rot[0, 2] < 0 else 1.0)
        if abs(rx) < abs(ry) and abs(rx) < abs(rz) and (rot[1, 2] > 0) != (ry * rz > 0):
            rz = -rz
        r = _np.array([rx, ry, rz])
        return r * (theta / _np.linalg.norm(r))
    return _np.array([rx, ry, rz]) * (theta / (2 * s))


def _numeric_jacobian(function, x, outputs):
    """d function / d x by central differences: rows are the inputs, columns the outputs (OpenCV's
    layout for Rodrigues' Jacobian)."""
    jac = _np.zeros((x.size, outputs))
    for i in range(x.size):  # 3 or 9 inputs: a fixed handful of evaluations
        step = _np.zeros(x.size)
        step[i] = 1e-7
        jac[i] = (function(x + step) - function(x - step)).ravel() / 2e-7
    return jac


def Rodrigues(src, dst=None, jacobian=None):  # noqa: N802 (OpenCV's name)
    """A rotation vector (3x1 or 1x3) to a 3x3 rotation matrix or back, with the Jacobian of
    the conversion (3x9 or 9x3, by central differences)."""
    a = _np.asarray(src)
    if a.dtype not in (_np.float32, _np.float64):
        raise error("Rodrigues", f"'src' must be float32 or float64, got {a.dtype}")
    if a.size == 3 and a.ndim <= 2 and 3 in a.shape:
        r = a.astype(_np.float64).ravel()
        matrix = _vector_to_matrix(r)
        jac = _numeric_jacobian(lambda v: _vector_to_matrix(v).ravel(), r, 9)
        return matrix.astype(a.dtype), jac.astype(a.dtype)
    if a.shape == (3, 3):
        m = a.astype(_np.float64)
        vector = _matrix_to_vector(m).reshape(3, 1)
        u, _, vt = _np.linalg.svd(m)
        rot = u @ vt
        s = _np.sqrt(((rot[2, 1] - rot[1, 2]) ** 2 + (rot[0, 2] - rot[2, 0]) ** 2 + (rot[1, 0] - rot[0, 1]) ** 2) * 0.25)
        if s >= 1e-5:
            jac = _numeric_jacobian(_vector_of_entries, rot.ravel(), 3)
        elif _np.trace(rot) > 1:
            # No rotation: the vector is half the antisymmetric part of the matrix.
            jac = _np.zeros((9, 3))
            jac[7, 0], jac[5, 0], jac[2, 1], jac[6, 1], jac[3, 2], jac[1, 2] = 0.5, -0.5, 0.5, -0.5, 0.5, -0.5
        else:
            jac = _np.zeros((9, 3))  # a half turn: OpenCV gives no derivative there
        return vector.astype(a.dtype), jac.astype(a.dtype)
    raise error("Rodrigues", f"'src' must be a rotation vector (3x1 or 1x3) or a 3x3 matrix, got shape {a.shape}")
