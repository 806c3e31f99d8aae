"""Small linear algebra and camera geometry of OpenCV: solve (every DECOMP_ method), Rodrigues,
projectPoints and solvePnP.

These work on a handful of numbers (3x3 rotations, small systems, point sets), computed at once
with NumPy (vectorized over the points); mnnpy.cv gives the arrays back as Vars, as MNN does.
Arguments may be NumPy arrays or Vars.
"""
import numpy as _np

from ._common import error

__all__ = ["solve", "Rodrigues", "projectPoints", "solvePnP",
           "SOLVEPNP_ITERATIVE", "SOLVEPNP_EPNP", "SOLVEPNP_P3P", "SOLVEPNP_AP3P", "SOLVEPNP_IPPE",
           "SOLVEPNP_IPPE_SQUARE", "SOLVEPNP_SQPNP", "SOLVEPNP_MAX_COUNT",
           "DECOMP_LU", "DECOMP_SVD", "DECOMP_EIG", "DECOMP_CHOLESKY", "DECOMP_QR", "DECOMP_NORMAL"]

DECOMP_LU, DECOMP_SVD, DECOMP_EIG, DECOMP_CHOLESKY, DECOMP_QR, DECOMP_NORMAL = 0, 1, 2, 3, 4, 16
SOLVEPNP_ITERATIVE, SOLVEPNP_EPNP, SOLVEPNP_P3P, SOLVEPNP_AP3P, SOLVEPNP_IPPE = 0, 1, 2, 3, 4
SOLVEPNP_IPPE_SQUARE, SOLVEPNP_SQPNP, SOLVEPNP_MAX_COUNT = 5, 6, 7


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


# ---------------------------------------------------------------------------------------------
# Camera projection (OpenCV's pinhole model with its radial, tangential and thin-prism
# distortion) and pose estimation.

_DIST_COUNTS = (4, 5, 8, 12)


def _points(value, dims, func, name):
    """Points given as N x dims, N x 1 x dims or 1 x N x dims (float32/float64) as an N x dims
    float64 array, with their dtype."""
    if value is None:
        raise TypeError(f"mnnpy.cv.{func}: '{name}' is None, expected an array of points")
    a = _np.asarray(value)
    if a.dtype.kind in "OUSV":
        raise TypeError(f"mnnpy.cv.{func}: '{name}' is not a numerical array (dtype {a.dtype})")
    if a.dtype not in (_np.float32, _np.float64):
        raise error(func, f"'{name}' must be float32 or float64 points, got {a.dtype}")
    shape = a.shape
    ok = (a.ndim == 2 and shape[1] == dims) or (a.ndim == 3 and shape[2] == dims and 1 in shape[:2])
    if not ok:
        raise error(func, f"'{name}' must be N x {dims}, N x 1 x {dims} or 1 x N x {dims} points, got shape {shape}")
    return a.reshape(-1, dims).astype(_np.float64), a.dtype


def _camera(camera_matrix, func):
    k = _np.asarray(camera_matrix) if camera_matrix is not None else None
    if k is None:
        raise TypeError(f"mnnpy.cv.{func}: 'cameraMatrix' is None, expected a 3x3 matrix")
    if k.dtype not in (_np.float32, _np.float64) or k.shape != (3, 3):
        raise error(func, f"'cameraMatrix' must be a 3x3 float32/float64 matrix, got {k.dtype} {k.shape}")
    return k.astype(_np.float64)


def _distortion(dist_coeffs, func):
    """The distortion coefficients (k1, k2, p1, p2, k3, k4, k5, k6, s1, s2, s3, s4) padded with
    zeros, and how many were given (5 when none were)."""
    coeffs = _np.zeros(12)
    if dist_coeffs is None:
        return coeffs, 5
    d = _np.asarray(dist_coeffs, dtype=_np.float64).ravel()
    if d.size == 0:
        return coeffs, 5
    if d.size == 14:
        raise error(func, "distortion with the tilted sensor model (14 coefficients) is not supported")
    if d.size not in _DIST_COUNTS:
        raise error(func, f"'distCoeffs' must have 4, 5, 8, 12 or 14 elements, got {d.size}")
    coeffs[:d.size] = d
    return coeffs, d.size


def _rotation_series(r):
    """Rodrigues' rotation matrix written analytically in r (so complex steps differentiate it):
    I + a K + b K^2 with K = [r]x, a = sin t / t, b = (1 - cos t) / t^2, t^2 = r.r."""
    t2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2]
    if abs(t2) < 1e-8:
        a = 1 - t2 / 6 + t2 * t2 / 120
        b = 0.5 - t2 / 24 + t2 * t2 / 720
    else:
        t = _np.sqrt(t2)
        a = _np.sin(t) / t
        b = (1 - _np.cos(t)) / t2
    k = _np.array([[0, -r[2], r[1]], [r[2], 0, -r[0]], [-r[1], r[0], 0]])
    return _np.eye(3) + a * k + b * (k @ k)


def _rotation_and_derivatives(r):
    """R(r) and dR/dr_j (3 x 3 x 3, j first), the derivatives by complex steps (exact to rounding)."""
    r = _np.asarray(r, dtype=_np.float64).ravel()
    rotation = _rotation_series(r.astype(complex)).real
    step = 1e-30
    derivs = _np.stack([_rotation_series(r + 1j * step * e).imag / step for e in _np.eye(3)])
    return rotation, derivs


def _project(points, rotation, d_rotation, tvec, camera, dist, n_dist, jacobian, aspect_ratio=0.0):
    """Pixel projections (N x 2) of world points, with OpenCV's projectPoints Jacobian
    (2N x (10 + n_dist): rotation vector, translation, fx fy, cx cy, distortion) when asked."""
    fx, fy, cx, cy = camera[0, 0], camera[1, 1], camera[0, 2], camera[1, 2]
    if aspect_ratio:
        fx = fy * aspect_ratio
    k1, k2, p1, p2, k3, k4, k5, k6, s1, s2, s3, s4 = dist
    cam = points @ rotation.T + tvec
    z = cam[:, 2]
    inv_z = _np.where(z != 0, 1.0 / _np.where(z != 0, z, 1.0), 1.0)
    x, y = cam[:, 0] * inv_z, cam[:, 1] * inv_z
    r2 = x * x + y * y
    r4, r6 = r2 * r2, r2 * r2 * r2
    a1, a2, a3 = 2 * x * y, r2 + 2 * x * x, r2 + 2 * y * y
    cdist = 1 + k1 * r2 + k2 * r4 + k3 * r6
    icdist2 = 1.0 / (1 + k4 * r2 + k5 * r4 + k6 * r6)
    radial = cdist * icdist2
    xd = x * radial + p1 * a1 + p2 * a2 + s1 * r2 + s2 * r4
    yd = y * radial + p1 * a3 + p2 * a1 + s3 * r2 + s4 * r4
    uv = _np.stack([fx * xd + cx, fy * yd + cy], axis=1)
    if not jacobian:
        return uv, None
    n = points.shape[0]
    jac = _np.zeros((n, 2, 10 + n_dist))
    # d(xd, yd) / d(x, y)
    d_radial = ((k1 + 2 * k2 * r2 + 3 * k3 * r4) - radial * (k4 + 2 * k5 * r2 + 3 * k6 * r4)) * icdist2
    dxd_dx = radial + 2 * x * x * d_radial + 2 * p1 * y + 6 * p2 * x + 2 * s1 * x + 4 * s2 * r2 * x
    dxd_dy = 2 * x * y * d_radial + 2 * p1 * x + 2 * p2 * y + 2 * s1 * y + 4 * s2 * r2 * y
    dyd_dx = 2 * x * y * d_radial + 2 * p1 * x + 2 * p2 * y + 2 * s3 * x + 4 * s4 * r2 * x
    dyd_dy = radial + 2 * y * y * d_radial + 6 * p1 * y + 2 * p2 * x + 2 * s3 * y + 4 * s4 * r2 * y
    # d(x, y) / d(camera point)
    dx_dc = _np.stack([inv_z, _np.zeros(n), -x * inv_z], axis=1)
    dy_dc = _np.stack([_np.zeros(n), inv_z, -y * inv_z], axis=1)
    du_dc = fx * (dxd_dx[:, None] * dx_dc + dxd_dy[:, None] * dy_dc)
    dv_dc = fy * (dyd_dx[:, None] * dx_dc + dyd_dy[:, None] * dy_dc)
    # d(camera point) / d r_j = dR/dr_j @ X
    dc_dr = _np.einsum("jab,nb->naj", d_rotation, points)
    jac[:, 0, 0:3] = _np.einsum("na,naj->nj", du_dc, dc_dr)
    jac[:, 1, 0:3] = _np.einsum("na,naj->nj", dv_dc, dc_dr)
    jac[:, 0, 3:6], jac[:, 1, 3:6] = du_dc, dv_dc
    if aspect_ratio:
        jac[:, 0, 7], jac[:, 1, 7] = aspect_ratio * xd, yd
    else:
        jac[:, 0, 6], jac[:, 1, 7] = xd, yd
    jac[:, 0, 8], jac[:, 1, 9] = 1.0, 1.0
    # distortion: k1 k2 p1 p2 k3 k4 k5 k6 s1 s2 s3 s4
    columns_u = [x * r2 * icdist2, x * r4 * icdist2, a1, a2, x * r6 * icdist2,
                 -x * radial * icdist2 * r2, -x * radial * icdist2 * r4, -x * radial * icdist2 * r6,
                 r2, r4, _np.zeros(n), _np.zeros(n)]
    columns_v = [y * r2 * icdist2, y * r4 * icdist2, a3, a1, y * r6 * icdist2,
                 -y * radial * icdist2 * r2, -y * radial * icdist2 * r4, -y * radial * icdist2 * r6,
                 _np.zeros(n), _np.zeros(n), r2, r4]
    for i in range(n_dist):  # at most 12 coefficients
        jac[:, 0, 10 + i] = fx * columns_u[i]
        jac[:, 1, 10 + i] = fy * columns_v[i]
    return uv, jac.reshape(2 * n, 10 + n_dist)


def _rotation_vector(rvec, func, name="rvec"):
    r = _np.asarray(rvec)
    if r.dtype not in (_np.float32, _np.float64) or r.size != 3:
        raise error(func, f"'{name}' must be a float32/float64 3-vector, got {r.dtype} with shape {r.shape}")
    return r.astype(_np.float64).ravel()


def projectPoints(objectPoints, rvec, tvec, cameraMatrix, distCoeffs,  # noqa: N802,N803 (OpenCV's names)
                  imagePoints=None, jacobian=None, aspectRatio=0):
    """``(imagePoints, jacobian)``: the N x 1 x 2 pixel projections of the object points (dtype of
    objectPoints) and their 2N x (10 + number of distortion coefficients) float64 Jacobian with
    respect to the rotation vector, translation, focal lengths, principal point and distortion."""
    points, dtype = _points(objectPoints, 3, "projectPoints", "objectPoints")
    r = _rotation_vector(rvec, "projectPoints")
    t = _rotation_vector(tvec, "projectPoints", "tvec")
    camera = _camera(cameraMatrix, "projectPoints")
    dist, n_dist = _distortion(distCoeffs, "projectPoints")
    rotation, d_rotation = _rotation_and_derivatives(r)
    uv, jac = _project(points, rotation, d_rotation, t, camera, dist, n_dist, True, float(aspectRatio))
    return uv.reshape(-1, 1, 2).astype(dtype), jac


def _undistort_normalized(uv, camera, dist):
    """Normalized camera coordinates of pixels, undistorted by OpenCV's five fixed-point steps
    (undistortPoints' default criteria)."""
    fx, fy, cx, cy = camera[0, 0], camera[1, 1], camera[0, 2], camera[1, 2]
    x0 = (uv[:, 0] - cx) / fx
    y0 = (uv[:, 1] - cy) / fy
    if not _np.any(dist):
        return _np.stack([x0, y0], axis=1)
    k1, k2, p1, p2, k3, k4, k5, k6, s1, s2, s3, s4 = dist
    x, y = x0.copy(), y0.copy()
    for _ in range(5):  # a fixed count of whole-array steps
        r2 = x * x + y * y
        icdist = (1 + ((k6 * r2 + k5) * r2 + k4) * r2) / (1 + ((k3 * r2 + k2) * r2 + k1) * r2)
        delta_x = 2 * p1 * x * y + p2 * (r2 + 2 * x * x) + s1 * r2 + s2 * r2 * r2
        delta_y = p1 * (r2 + 2 * y * y) + 2 * p2 * x * y + s3 * r2 + s4 * r2 * r2
        x = (x0 - delta_x) * icdist
        y = (y0 - delta_y) * icdist
    return _np.stack([x, y], axis=1)


def _homography(src, dst):
    """The homography taking src (N x 2) to dst (N x 2), by the normalized DLT, H[2, 2] = 1."""
    def normalizer(p):
        c = p.mean(axis=0)
        s = _np.abs(p - c).mean(axis=0)
        s = _np.where(s > 0, s, 1.0)
        return _np.array([[1 / s[0], 0, -c[0] / s[0]], [0, 1 / s[1], -c[1] / s[1]], [0, 0, 1]])
    ts, td = normalizer(src), normalizer(dst)
    a = src * _np.diag(ts)[:2] + ts[:2, 2]
    b = dst * _np.diag(td)[:2] + td[:2, 2]
    n = a.shape[0]
    one, zero = _np.ones(n), _np.zeros(n)
    rows_u = _np.stack([a[:, 0], a[:, 1], one, zero, zero, zero, -b[:, 0] * a[:, 0], -b[:, 0] * a[:, 1], -b[:, 0]], 1)
    rows_v = _np.stack([zero, zero, zero, a[:, 0], a[:, 1], one, -b[:, 1] * a[:, 0], -b[:, 1] * a[:, 1], -b[:, 1]], 1)
    _, _, vt = _np.linalg.svd(_np.concatenate([rows_u, rows_v]))
    h = _np.linalg.inv(td) @ vt[-1].reshape(3, 3) @ ts
    return h / h[2, 2] if h[2, 2] != 0 else h


def _initial_pose(points, normalized):
    """OpenCV's starting pose: from the homography of the plane for planar points, else from
    the DLT of the 3x4 projection."""
    center = points.mean(axis=0)
    centered = points - center
    _, w, vt = _np.linalg.svd(centered.T @ centered)
    if w[2] < 1e-3 * w[1]:
        rotation_plane = vt.copy()
        if rotation_plane[0, 2] ** 2 + rotation_plane[1, 2] ** 2 < 1e-10:
            rotation_plane = _np.eye(3)
        if _np.linalg.det(rotation_plane) < 0:
            rotation_plane = -rotation_plane
        t_plane = -rotation_plane @ center
        plane_xy = (points @ rotation_plane.T + t_plane)[:, :2]
        h = _homography(plane_xy, normalized)
        if not _np.all(_np.isfinite(h)):
            return _np.zeros(3), _np.zeros(3)
        h1, h2 = h[:, 0], h[:, 1]
        n1, n2 = _np.linalg.norm(h1), _np.linalg.norm(h2)
        eps = _np.finfo(_np.float64).eps
        h1, h2 = h1 / max(n1, eps), h2 / max(n2, eps)
        t = h[:, 2] * (2.0 / max(n1 + n2, eps))
        rotation_h = _matrix_to_rotation(_np.stack([h1, h2, _np.cross(h1, h2)], axis=1))
        t = rotation_h @ t_plane + t
        rotation = rotation_h @ rotation_plane
    else:
        n = points.shape[0]
        if n < 6:
            raise error("solvePnP", f"the DLT of non-planar object points needs at least 6 points, got {n}")
        x, y = -normalized[:, 0], -normalized[:, 1]
        homogeneous = _np.concatenate([points, _np.ones((n, 1))], axis=1)
        rows_u = _np.concatenate([homogeneous, _np.zeros((n, 4)), x[:, None] * homogeneous], axis=1)
        rows_v = _np.concatenate([_np.zeros((n, 4)), homogeneous, y[:, None] * homogeneous], axis=1)
        matrix = _np.concatenate([rows_u, rows_v])
        _, _, vt = _np.linalg.svd(matrix.T @ matrix)
        projection = vt[-1].reshape(3, 4)
        rr, tt = projection[:, :3], projection[:, 3]
        if _np.linalg.det(rr) < 0:
            rr, tt = -rr, -tt
        scale = _np.linalg.norm(rr)
        u, _, vt3 = _np.linalg.svd(rr)
        rotation = u @ vt3
        t = tt * (_np.linalg.norm(rotation) / scale)
    return _matrix_to_vector(rotation), t


def _matrix_to_rotation(m):
    """The rotation a 3x3 matrix stands for, through its rotation vector (as OpenCV orthogonalizes)."""
    return _vector_to_matrix(_matrix_to_vector(m))


def _refine_pose(points, pixels, rvec, tvec, camera, dist, n_dist, max_iter=100):
    """Levenberg-Marquardt on the pixel reprojection error with OpenCV's damping schedule, run
    to convergence (a relative step below 1e-12): OpenCV stops at FLT_EPSILON, which on noisy
    data leaves its pose up to ~1e-5 short of the minimum."""
    eps = 1e-12
    param = _np.concatenate([rvec, tvec])

    def residual(p, jacobian):
        rotation, d_rotation = _rotation_and_derivatives(p[:3])
        uv, jac = _project(points, rotation, d_rotation, p[3:], camera, dist, n_dist, jacobian)
        return (uv - pixels).ravel(), (jac[:, :6] if jacobian else None)

    err, jac = residual(param, True)
    err_norm = float(err @ err)
    lambda_lg10 = -3
    iters = 0
    while True:
        jtj, jterr = jac.T @ jac, jac.T @ err
        while True:
            damped = jtj.copy()
            damped[_np.diag_indices(6)] *= 1 + 10.0 ** lambda_lg10
            step = _np.linalg.lstsq(damped, jterr, rcond=None)[0]
            candidate = param - step
            new_err, _ = residual(candidate, False)
            new_norm = float(new_err @ new_err)
            if new_norm <= err_norm or lambda_lg10 >= 16:
                break
            lambda_lg10 = min(lambda_lg10 + 1, 16)
        lambda_lg10 = max(lambda_lg10 - 1, -16)
        change = _np.linalg.norm(candidate - param) / max(_np.linalg.norm(param), _np.finfo(_np.float64).tiny)
        param = candidate
        iters += 1
        if iters >= max_iter or change < eps or not _np.all(_np.isfinite(param)):
            break
        err, jac = residual(param, True)
        err_norm = float(err @ err)
    return param[:3], param[3:]


_PAIRS = ((0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3))


def _epnp(points, normalized):
    """EPnP (Lepetit, Moreno-Noguer and Fua): the camera coordinates of four control points as a
    combination of the null vectors of the projection system, their weights from the distances
    between the control points (one to three weights, refined by Gauss-Newton), the pose with
    the smallest reprojection error. Returns the rotation matrix and translation."""
    n = points.shape[0]
    center = points.mean(axis=0)
    centered = points - center
    axes, dc = _principal_axes(centered.T @ centered)
    controls = _np.concatenate([center[None], center + (_np.sqrt(dc / n)[:, None] * axes)])
    alphas = _np.empty((n, 4))
    # The pseudo-inverse, as OpenCV takes it: planar points leave the last control point on the centroid.
    alphas[:, 1:] = centered @ _np.linalg.pinv((controls[1:] - center).T).T
    alphas[:, 0] = 1 - alphas[:, 1:].sum(axis=1)
    ux, vy = normalized[:, 0], normalized[:, 1]
    m = _np.zeros((2 * n, 12))
    m[0::2, 0::3] = alphas
    m[0::2, 2::3] = -alphas * ux[:, None]
    m[1::2, 1::3] = alphas
    m[1::2, 2::3] = -alphas * vy[:, None]
    _, _, vt = _np.linalg.svd(m.T @ m)
    null = vt[[11, 10, 9, 8]].reshape(4, 4, 3)  # null[i, control] = the control's camera point in vector i
    diffs = _np.stack([null[:, a] - null[:, b] for a, b in _PAIRS], axis=1)  # (4 vectors, 6 pairs, 3)
    dots = _np.einsum("ipk,jpk->pij", diffs, diffs)
    # columns: b11 b12 b22 b13 b23 b33 b14 b24 b34 b44
    index = ((0, 0), (0, 1), (1, 1), (0, 2), (1, 2), (2, 2), (0, 3), (1, 3), (2, 3), (3, 3))
    l_6x10 = _np.stack([dots[:, i, j] * (1 if i == j else 2) for i, j in index], axis=1)
    rho = _np.array([_np.sum((controls[a] - controls[b]) ** 2) for a, b in _PAIRS])

    def lstsq(cols):
        return _np.linalg.lstsq(l_6x10[:, cols], rho, rcond=None)[0]

    def first_two(b_sq1, b_12, b_sq2):
        if b_sq1 < 0:
            b1, b2 = _np.sqrt(-b_sq1), (_np.sqrt(-b_sq2) if b_sq2 < 0 else 0.0)
        else:
            b1, b2 = _np.sqrt(b_sq1), (_np.sqrt(b_sq2) if b_sq2 > 0 else 0.0)
        return (-b1 if b_12 < 0 else b1), b2

    candidates = []
    b4 = lstsq([0, 1, 3, 6])
    root, sign = _np.sqrt(abs(b4[0])), (-1.0 if b4[0] < 0 else 1.0)
    candidates.append(_np.array([root, *(sign * b4[1:] / root)]) if root > 0 else _np.zeros(4))
    b3 = lstsq([0, 1, 2])
    candidates.append(_np.array([*first_two(b3[0], b3[1], b3[2]), 0.0, 0.0]))
    b5 = lstsq([0, 1, 2, 3, 4])
    b1, b2 = first_two(b5[0], b5[1], b5[2])
    candidates.append(_np.array([b1, b2, b5[3] / b1 if b1 != 0 else 0.0, 0.0]))

    best = None
    for betas in candidates:  # three candidate weightings
        betas = _gauss_newton_betas(l_6x10, rho, betas)
        cam_controls = _np.einsum("i,ick->ck", betas, null)
        cam_points = alphas @ cam_controls
        if cam_points[0, 2] < 0:
            cam_points = -cam_points
        rotation, t = _absolute_orientation(points, cam_points)
        proj = points @ rotation.T + t
        err = _np.mean(_np.hypot(proj[:, 0] / proj[:, 2] - ux, proj[:, 1] / proj[:, 2] - vy))
        if best is None or err < best[0]:
            best = (err, rotation, t)
    return best[1], best[2]


def _principal_axes(sym):
    """The singular vectors (rows) and values of a symmetric 3x3 matrix by one-sided Jacobi
    rotations, largest first. With noise, EPnP's answer depends on the signs of its control
    points' axes; these are the signs OpenCV's Jacobi SVD gives them (LAPACK's differ)."""
    rows = sym.astype(_np.float64).copy()
    sq = (rows * rows).sum(axis=1)
    eps = 10 * _np.finfo(_np.float64).eps
    for _ in range(30):  # sweeps over the 3 pairs of rows of a 3x3 matrix
        changed = False
        for i, j in ((0, 1), (0, 2), (1, 2)):
            p = float(rows[i] @ rows[j])
            if abs(p) <= eps * _np.sqrt(sq[i] * sq[j]):
                continue
            p *= 2
            beta = sq[i] - sq[j]
            gamma = _np.hypot(p, beta)
            if beta < 0:
                s = _np.sqrt((gamma - beta) * 0.5 / gamma)
                c = p / (gamma * s * 2)
            else:
                c = _np.sqrt((gamma + beta) / (gamma * 2))
                s = p / (gamma * c * 2)
            rows[i], rows[j] = c * rows[i] + s * rows[j], -s * rows[i] + c * rows[j]
            sq[i], sq[j] = rows[i] @ rows[i], rows[j] @ rows[j]
            changed = True
        if not changed:
            break
    norms = _np.sqrt((rows * rows).sum(axis=1))
    for i in range(2):  # selection sort, largest first (ties keep their order)
        j = i + int(_np.argmax(norms[i:]))
        if norms[j] > norms[i]:
            norms[[i, j]], rows[[i, j]] = norms[[j, i]], rows[[j, i]]
    return rows / _np.where(norms > 0, norms, 1.0)[:, None], norms


def _gauss_newton_betas(l_6x10, rho, betas, iterations=5):
    b = betas.copy()
    for _ in range(iterations):  # five fixed steps of a 4-unknown problem
        b0, b1, b2, b3 = b
        products = _np.array([b0 * b0, b0 * b1, b1 * b1, b0 * b2, b1 * b2, b2 * b2, b0 * b3, b1 * b3, b2 * b3, b3 * b3])
        jac = _np.stack([
            2 * l_6x10[:, 0] * b0 + l_6x10[:, 1] * b1 + l_6x10[:, 3] * b2 + l_6x10[:, 6] * b3,
            l_6x10[:, 1] * b0 + 2 * l_6x10[:, 2] * b1 + l_6x10[:, 4] * b2 + l_6x10[:, 7] * b3,
            l_6x10[:, 3] * b0 + l_6x10[:, 4] * b1 + 2 * l_6x10[:, 5] * b2 + l_6x10[:, 8] * b3,
            l_6x10[:, 6] * b0 + l_6x10[:, 7] * b1 + l_6x10[:, 8] * b2 + 2 * l_6x10[:, 9] * b3], axis=1)
        residual = rho - l_6x10 @ products
        b = b + _np.linalg.lstsq(jac, residual, rcond=None)[0]
    return b


def _absolute_orientation(world, camera_points):
    """The rotation and translation taking world points onto camera points (least squares)."""
    cw, cc = world.mean(axis=0), camera_points.mean(axis=0)
    h = (camera_points - cc).T @ (world - cw)
    u, _, vt = _np.linalg.svd(h)
    rotation = u @ vt
    if _np.linalg.det(rotation) < 0:
        rotation[2] = -rotation[2]
    return rotation, cc - rotation @ cw


_GENERATORS = _np.array([[[0, 0, 0], [0, 0, -1], [0, 1, 0]], [[0, 0, 1], [0, 0, 0], [-1, 0, 0]],
                        [[0, -1, 0], [1, 0, 0], [0, 0, 0]]], dtype=_np.float64)


def _polish_rotations(rotations, omega, iterations=30):
    """Gauss-Newton on SO(3) for vec(R)^T Omega vec(R), from several rotations at once: each
    step R <- R exp([w]x) with w the least-squares step of the cost linearized in w."""
    rot = rotations.copy()
    for _ in range(iterations):  # converges quadratically; a few steps in practice
        jac = _np.einsum("sab,kbc->sack", rot, _GENERATORS).reshape(len(rot), 9, 3)
        r = rot.reshape(len(rot), 9)
        normal = _np.einsum("sik,ij,sjl->skl", jac, omega, jac)
        gradient = _np.einsum("sik,ij,sj->sk", jac, omega, r)
        step = -(_np.linalg.pinv(normal) @ gradient[..., None])[..., 0]
        t2 = (step * step).sum(axis=1)
        t = _np.sqrt(t2)
        a = _np.where(t2 < 1e-8, 1 - t2 / 6, _np.sin(t) / _np.where(t2 < 1e-8, 1.0, t))
        b = _np.where(t2 < 1e-8, 0.5 - t2 / 24, (1 - _np.cos(t)) / _np.where(t2 < 1e-8, 1.0, t2))
        k = _np.einsum("sk,kab->sab", step, _GENERATORS)
        rot = rot @ (_np.eye(3) + a[:, None, None] * k + b[:, None, None] * (k @ k))
        if t.max() < 1e-14:
            break
    return rot


def _sqpnp(points, normalized):
    """SQPnP (Terzakis and Lourakis): the rotation minimizing the object-space error
    r^T Omega r over SO(3) (r the rotation's entries, the best translation eliminated), searched
    from the rotations nearest every eigenvector of Omega (either sign) and polished by
    Gauss-Newton on SO(3); among the minima, the one of least error with the points in front.
    Starting from the smallest eigenvectors alone misses the global minimum on noisy planar
    scenes, where which basin a start falls into turns on the last bits of the SVD."""
    n = points.shape[0]
    center = points.mean(axis=0)
    m = points - center  # centered for conditioning; the translation is moved back at the end
    v = _np.concatenate([normalized, _np.ones((n, 1))], axis=1)
    q = _np.eye(3)[None] - v[:, :, None] * v[:, None, :] / (v * v).sum(axis=1)[:, None, None]  # (n, 3, 3)
    a = _np.zeros((n, 3, 9))
    for row in range(3):  # R @ M = A @ vec(R), vec row-major
        a[:, row, 3 * row:3 * row + 3] = m
    qa = q @ a
    q_sum, qa_sum = q.sum(axis=0), qa.sum(axis=0)
    p = -_np.linalg.solve(q_sum, qa_sum)  # t = P r
    ap = a + p[None]
    omega = _np.einsum("nai,nab,nbj->ij", ap, q, ap)
    vt = _np.linalg.svd(omega)[2]
    starts = vt[::-1] * _np.sqrt(3.0)  # every eigenvector, smallest first, either sign
    starts = _np.concatenate([starts, -starts]).reshape(-1, 3, 3)
    u, _, wt = _np.linalg.svd(starts)
    flip = _np.where(_np.linalg.det(u @ wt) < 0, -1.0, 1.0)
    u[:, :, 2] *= flip[:, None]
    candidates = _polish_rotations(u @ wt, omega)
    best = None
    for rot in candidates:  # a handful of local minima
        t = p @ rot.ravel()
        in_front = _np.sum((m @ rot.T + t)[:, 2] > 0)
        key = (-in_front, float(rot.ravel() @ omega @ rot.ravel()))
        if best is None or key < best[0]:
            best = (key, rot, t)
    rot, t = best[1], best[2]
    return rot, t - rot @ center


def solvePnP(objectPoints, imagePoints, cameraMatrix, distCoeffs, rvec=None, tvec=None,  # noqa: N802,N803
             useExtrinsicGuess=False, flags=SOLVEPNP_ITERATIVE):
    """``(retval, rvec, tvec)``: the pose (3x1 float64 rotation vector and translation) that maps
    the object points to the camera frame where they project onto the image points.

    SOLVEPNP_ITERATIVE starts from OpenCV's initial pose (the plane's homography for planar
    points, else the DLT of the projection; or the given rvec/tvec with useExtrinsicGuess) and
    minimizes the pixel reprojection error (with distortion) by Levenberg-Marquardt, to
    convergence (OpenCV stops a little earlier on noisy data; see _refine_pose).
    SOLVEPNP_EPNP solves EPnP on the undistorted points. Other methods raise mnnpy.cv.error."""
    points, _ = _points(objectPoints, 3, "solvePnP", "objectPoints")
    pixels, _ = _points(imagePoints, 2, "solvePnP", "imagePoints")
    camera = _camera(cameraMatrix, "solvePnP")
    dist, n_dist = _distortion(distCoeffs, "solvePnP")
    if isinstance(flags, bool) or not isinstance(flags, (int, _np.integer)):
        raise TypeError(f"mnnpy.cv.solvePnP: 'flags' must be an integer, got {type(flags).__name__}")
    flags = int(flags)
    count = points.shape[0]
    enough = count >= 4 or (count == 3 and flags == SOLVEPNP_ITERATIVE and useExtrinsicGuess) or (
        count >= 3 and flags == SOLVEPNP_SQPNP)
    if not enough or pixels.shape[0] != count:
        raise error("solvePnP", f"needs at least 4 object points (3 with a guess) and as many image points, got "
                                f"{count} object and {pixels.shape[0]} image points")
    if flags not in (SOLVEPNP_ITERATIVE, SOLVEPNP_EPNP, SOLVEPNP_SQPNP):
        if flags in (SOLVEPNP_P3P, SOLVEPNP_AP3P, SOLVEPNP_IPPE, SOLVEPNP_IPPE_SQUARE):
            raise error("solvePnP", f"method {flags} is not supported; use SOLVEPNP_ITERATIVE, SOLVEPNP_EPNP or "
                                    f"SOLVEPNP_SQPNP")
        raise error("solvePnP", f"unknown flags {flags}")
    normalized = _undistort_normalized(pixels, camera, dist)
    if flags in (SOLVEPNP_EPNP, SOLVEPNP_SQPNP):
        rotation, t = (_epnp if flags == SOLVEPNP_EPNP else _sqpnp)(points, normalized)
        r = _matrix_to_vector(rotation)
    else:
        if useExtrinsicGuess:
            if rvec is None or tvec is None:
                raise error("solvePnP", "useExtrinsicGuess needs rvec and tvec")
            r, t = _rotation_vector(rvec, "solvePnP"), _rotation_vector(tvec, "solvePnP", "tvec")
        else:
            r, t = _initial_pose(points, normalized)
        r, t = _refine_pose(points, pixels, r, t, camera, dist, n_dist)
    return True, r.reshape(3, 1), t.reshape(3, 1)
