"""mnnpy.cv solve, Rodrigues, projectPoints and solvePnP against OpenCV.

solve: solutions within 1e-10 relative. Rodrigues: Jacobians (central differences of OpenCV's
formulas) within 1e-6. projectPoints: pixels within 1e-9 px (float64), Jacobians within 1e-7
relative (every distortion model but the tilted one), with and without aspectRatio.

solvePnP on random synthetic scenes (6 to 100 points, planar and not, with and without
distortion, noise-free and with 0.5 px noise):
- SOLVEPNP_ITERATIVE: noise-free, the true pose and cv2's within 1e-6 and reprojection errors
  below 1e-6 px; with noise, cv2's pose within 2e-5 and a squared reprojection error no larger
  than cv2's (mnnpy runs Levenberg-Marquardt to convergence; cv2 stops at a relative step of
  FLT_EPSILON, up to ~1e-5 short of the minimum on these scenes).
- SOLVEPNP_EPNP (non-planar points): noise-free, cv2's pose within 1e-6 (the true pose without
  distortion); with noise, cv2's pose within 5e-5 (EPnP has no final refinement; the control
  points' axes take the signs OpenCV's Jacobi SVD gives them, and what is left differs in
  rounding of the small solves). Planar points are as unreliable for EPnP here as in cv2 (not
  tested).
- SOLVEPNP_SQPNP (3 to 100 points, planar and not): noise-free, the true pose and cv2's within
  1e-6; with noise, cv2's pose within 2e-3 and an object-space error (SQPnP's cost) no larger
  than cv2's (mnnpy polishes the minimum to convergence; cv2's SQP stops earlier).
Bad arguments raise mnnpy.cv.error where cv2 raises cv2.error.
"""
import cv2
import numpy as np
import pytest

import mnnpy.cv as mcv


@pytest.mark.parametrize("flags", [cv2.DECOMP_LU, cv2.DECOMP_SVD, cv2.DECOMP_EIG, cv2.DECOMP_CHOLESKY, cv2.DECOMP_QR,
                                   cv2.DECOMP_LU | cv2.DECOMP_NORMAL, cv2.DECOMP_SVD | cv2.DECOMP_NORMAL])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_solve_square(flags, dtype):
    rng = np.random.default_rng(flags)
    a = rng.standard_normal((6, 6))
    if flags in (cv2.DECOMP_EIG, cv2.DECOMP_CHOLESKY):
        a = a @ a.T + 6 * np.eye(6)
    a, b = a.astype(dtype), rng.standard_normal((6, 3)).astype(dtype)
    ok, x = mcv.solve(a, b, flags=flags)
    ok_ref, x_ref = cv2.solve(a, b, flags=flags)
    assert ok == ok_ref and x.dtype == x_ref.dtype and x.shape == x_ref.shape
    np.testing.assert_allclose(x, x_ref, rtol=1e-4 if dtype == np.float32 else 1e-10, atol=1e-5)


@pytest.mark.parametrize("flags", [cv2.DECOMP_SVD, cv2.DECOMP_QR, cv2.DECOMP_LU | cv2.DECOMP_NORMAL])
def test_solve_least_squares(flags):
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((9, 4)), rng.standard_normal((9, 2))
    ok, x = mcv.solve(a, b, flags=flags)
    ok_ref, x_ref = cv2.solve(a, b, flags=flags)
    assert ok and ok_ref
    np.testing.assert_allclose(x, x_ref, rtol=1e-10, atol=1e-12)


def test_solve_singular_and_errors():
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    ok, x = mcv.solve(singular, np.ones((2, 1)))
    assert ok is False and cv2.solve(singular, np.ones((2, 1)))[0] is False
    np.testing.assert_array_equal(x, np.zeros((2, 1)))
    assert mcv.solve(-np.eye(3), np.ones((3, 1)), flags=cv2.DECOMP_CHOLESKY)[0] is False
    with pytest.raises(mcv.error):
        mcv.solve(np.ones((3, 2)), np.ones((3, 1)))
    with pytest.raises(mcv.error):
        mcv.solve(np.eye(2), np.ones((3, 1)))
    with pytest.raises(mcv.error):
        mcv.solve(np.eye(2, dtype=np.int32), np.ones((2, 1), np.int32))


@pytest.mark.parametrize("vector", [[0.1, -0.2, 0.3], [1.0, 2.0, -0.5], [np.pi, 0, 0], [0, 0, 0], [1e-7, 0, 0],
                                    [0, -np.pi, 0], [2.5, -1.0, 0.7]])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rodrigues(vector, dtype):
    for shape in ((3, 1), (1, 3), (3,)):
        r = np.asarray(vector, dtype=dtype).reshape(shape)
        matrix, jac = mcv.Rodrigues(r)
        matrix_ref, jac_ref = cv2.Rodrigues(r)
        tol = 1e-5 if dtype == np.float32 else 1e-12
        assert matrix.dtype == matrix_ref.dtype and jac.shape == jac_ref.shape
        np.testing.assert_allclose(matrix, matrix_ref, atol=tol)
        np.testing.assert_allclose(jac, jac_ref, atol=1e-5 if dtype == np.float32 else 1e-6)
    back, jac = mcv.Rodrigues(matrix_ref)
    back_ref, jac_ref = cv2.Rodrigues(matrix_ref)
    assert back.shape == back_ref.shape == (3, 1) and jac.shape == jac_ref.shape
    np.testing.assert_allclose(back, back_ref, atol=1e-5 if dtype == np.float32 else 1e-12)
    np.testing.assert_allclose(jac, jac_ref, atol=1e-4 if dtype == np.float32 else 1e-6)


def test_rodrigues_errors():
    with pytest.raises(mcv.error):
        mcv.Rodrigues(np.zeros((2, 2)))
    with pytest.raises(mcv.error):
        mcv.Rodrigues(np.zeros(3, np.int32))


CAMERA = np.array([[800.0, 0.0, 320.0], [0.0, 780.0, 240.0], [0.0, 0.0, 1.0]])
DISTORTIONS = {"none": None, "k1k2p1p2": np.array([-0.2, 0.05, 0.001, -0.002]),
               "k1..k3": np.array([-0.25, 0.08, 0.001, -0.001, -0.02]),
               "rational": np.array([-0.2, 0.05, 0.001, -0.002, 0.01, 0.02, -0.01, 0.005]),
               "thin prism": np.array([-0.2, 0.05, 0.001, -0.002, 0.01, 0.02, -0.01, 0.005,
                                       0.001, -0.001, 0.002, 0.0005])}


def scene(seed, count, planar, distortion, noise):
    rng = np.random.default_rng(seed)
    points = rng.uniform(-1, 1, (count, 3))
    if planar:
        points[:, 2] = 0
    rvec = rng.normal(size=3)
    rvec *= rng.uniform(0.1, 2.5) / np.linalg.norm(rvec)
    tvec = np.array([rng.uniform(-0.5, 0.5), rng.uniform(-0.5, 0.5), rng.uniform(4, 8)])
    pixels = cv2.projectPoints(points, rvec, tvec, CAMERA, distortion)[0].reshape(-1, 2)
    pixels = pixels + rng.normal(scale=noise, size=pixels.shape)
    return points, pixels, rvec.reshape(3, 1), tvec.reshape(3, 1)


def reprojection_error(points, pixels, rvec, tvec, distortion):
    points, pixels = np.asarray(points, np.float64), np.asarray(pixels, np.float64)
    rvec, tvec = np.asarray(rvec), np.asarray(tvec)  # mnnpy.cv's results are Vars; cv2 takes arrays
    projected = cv2.projectPoints(points, rvec, tvec, CAMERA, distortion)[0].reshape(-1, 2)
    return np.hypot(*(projected - pixels).T)


@pytest.mark.parametrize("distortion", list(DISTORTIONS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_project_points(distortion, dtype):
    points, _, rvec, tvec = scene(3, 30, False, None, 0)
    d = DISTORTIONS[distortion]
    ours, jac = mcv.projectPoints(points.astype(dtype), rvec, tvec, CAMERA, d)
    ref, jac_ref = cv2.projectPoints(points.astype(dtype), rvec, tvec, CAMERA, d)
    assert ours.shape == ref.shape and ours.dtype == ref.dtype and jac.shape == jac_ref.shape
    np.testing.assert_allclose(ours, ref, atol=1e-9 if dtype == np.float64 else 1e-3)
    np.testing.assert_allclose(jac, jac_ref, rtol=1e-7, atol=1e-7 * np.abs(jac_ref).max())
    ours, jac = mcv.projectPoints(points, rvec, tvec, CAMERA, d, aspectRatio=1.5)
    ref, jac_ref = cv2.projectPoints(points, rvec, tvec, CAMERA, d, aspectRatio=1.5)
    np.testing.assert_allclose(ours, ref, atol=1e-9)
    np.testing.assert_allclose(jac, jac_ref, rtol=1e-7, atol=1e-7 * np.abs(jac_ref).max())


PNP_CASES = [(count, planar, distortion) for count in (6, 20, 100) for planar in (False, True)
             for distortion in ("none", "k1..k3", "rational")]


@pytest.mark.parametrize("count,planar,distortion", PNP_CASES)
def test_solve_pnp_iterative(count, planar, distortion):
    d = DISTORTIONS[distortion]
    for seed in range(3):
        points, pixels, rvec, tvec = scene(seed + 10 * count, count, planar, d, 0)
        ok, r, t = mcv.solvePnP(points, pixels, CAMERA, d)
        ok_ref, r_ref, t_ref = cv2.solvePnP(points, pixels, CAMERA, d)
        assert ok and ok_ref and r.shape == r_ref.shape == (3, 1) and t.shape == t_ref.shape == (3, 1)
        assert r.dtype == t.dtype == np.float64
        assert reprojection_error(points, pixels, r, t, d).max() < 1e-6
        np.testing.assert_allclose(r, rvec, atol=1e-6)
        np.testing.assert_allclose(t, tvec, atol=1e-6)
        np.testing.assert_allclose(r, r_ref, atol=1e-6)
        np.testing.assert_allclose(t, t_ref, atol=1e-6)
        points, pixels, rvec, tvec = scene(seed + 10 * count, count, planar, d, 0.5)
        points, pixels = points.astype(np.float32), pixels.astype(np.float32)
        ok, r, t = mcv.solvePnP(points, pixels, CAMERA, d)
        ok_ref, r_ref, t_ref = cv2.solvePnP(points, pixels, CAMERA, d)
        np.testing.assert_allclose(r, r_ref, atol=2e-5)
        np.testing.assert_allclose(t, t_ref, atol=2e-5)
        squared = (reprojection_error(points, pixels, r, t, d) ** 2).sum()
        assert squared <= (reprojection_error(points, pixels, r_ref, t_ref, d) ** 2).sum() * (1 + 1e-12)


def test_solve_pnp_extrinsic_guess():
    points, pixels, rvec, tvec = scene(5, 12, False, None, 0.3)
    guess_r, guess_t = rvec + 0.05, tvec + 0.1
    ok, r, t = mcv.solvePnP(points, pixels, CAMERA, None, guess_r.copy(), guess_t.copy(), True)
    ok_ref, r_ref, t_ref = cv2.solvePnP(points, pixels, CAMERA, None, guess_r.copy(), guess_t.copy(), True)
    np.testing.assert_allclose(r, r_ref, atol=2e-5)
    np.testing.assert_allclose(t, t_ref, atol=2e-5)
    three = mcv.solvePnP(points[:3], pixels[:3], CAMERA, None, rvec.copy(), tvec.copy(), True)
    assert three[0]


@pytest.mark.parametrize("count", [6, 20, 100])
@pytest.mark.parametrize("distortion", ["none", "k1..k3", "rational"])
def test_solve_pnp_epnp(count, distortion):
    d = DISTORTIONS[distortion]
    for seed in range(3):
        points, pixels, rvec, tvec = scene(seed + 10 * count, count, False, d, 0)
        ok, r, t = mcv.solvePnP(points, pixels, CAMERA, d, flags=mcv.SOLVEPNP_EPNP)
        ok_ref, r_ref, t_ref = cv2.solvePnP(points, pixels, CAMERA, d, flags=cv2.SOLVEPNP_EPNP)
        assert ok and ok_ref and r.shape == t.shape == (3, 1)
        # Both undistort by the same five fixed-point steps, which are exact only without distortion.
        np.testing.assert_allclose(r, r_ref, atol=1e-6)
        np.testing.assert_allclose(t, t_ref, atol=1e-6)
        if distortion == "none":
            np.testing.assert_allclose(r, rvec, atol=1e-6)
            np.testing.assert_allclose(t, tvec, atol=1e-6)
        points, pixels, rvec, tvec = scene(seed + 10 * count, count, False, d, 0.5)
        ok, r, t = mcv.solvePnP(points, pixels, CAMERA, d, flags=mcv.SOLVEPNP_EPNP)
        ok_ref, r_ref, t_ref = cv2.solvePnP(points, pixels, CAMERA, d, flags=cv2.SOLVEPNP_EPNP)
        np.testing.assert_allclose(r, r_ref, atol=5e-5)
        np.testing.assert_allclose(t, t_ref, atol=5e-5)


def object_space_error(points, pixels, rvec, tvec, distortion):
    """SQPnP's cost: squared distances of the camera-frame points from their lines of sight."""
    rvec, tvec = np.asarray(rvec), np.asarray(tvec)  # mnnpy.cv's results are Vars; cv2 takes arrays
    undistorted = cv2.undistortPoints(pixels, CAMERA, distortion).reshape(-1, 2)
    sight = np.concatenate([undistorted, np.ones((len(pixels), 1))], 1)
    sight /= np.linalg.norm(sight, axis=1, keepdims=True)
    camera_points = points @ cv2.Rodrigues(rvec)[0].T + tvec.ravel()
    return np.sum((camera_points - (camera_points * sight).sum(1, keepdims=True) * sight) ** 2)


@pytest.mark.parametrize("count", [3, 6, 20, 100])
@pytest.mark.parametrize("planar", [False, True])
def test_solve_pnp_sqpnp(count, planar):
    if planar and count == 3:
        return
    d = DISTORTIONS["k1..k3"]
    for seed in range(3):
        points, pixels, rvec, tvec = scene(seed + 10 * count, count, planar, None, 0)
        ok, r, t = mcv.solvePnP(points, pixels, CAMERA, None, flags=mcv.SOLVEPNP_SQPNP)
        ok_ref, r_ref, t_ref = cv2.solvePnP(points, pixels, CAMERA, None, flags=cv2.SOLVEPNP_SQPNP)
        assert ok and ok_ref and r.shape == t.shape == (3, 1)
        if count > 3:  # three points may have several exact poses
            np.testing.assert_allclose(r, rvec, atol=1e-6)
            np.testing.assert_allclose(t, tvec, atol=1e-6)
        np.testing.assert_allclose(r, r_ref, atol=1e-6)
        np.testing.assert_allclose(t, t_ref, atol=1e-6)
        if count == 3:
            continue
        points, pixels, rvec, tvec = scene(seed + 10 * count, count, planar, d, 0.5)
        ok, r, t = mcv.solvePnP(points, pixels, CAMERA, d, flags=mcv.SOLVEPNP_SQPNP)
        ok_ref, r_ref, t_ref = cv2.solvePnP(points, pixels, CAMERA, d, flags=cv2.SOLVEPNP_SQPNP)
        np.testing.assert_allclose(r, r_ref, atol=2e-3)
        np.testing.assert_allclose(t, t_ref, atol=2e-3)
        assert object_space_error(points, pixels, r, t, d) <= object_space_error(points, pixels, r_ref, t_ref, d) * (
            1 + 1e-9)


def test_solve_pnp_errors():
    points, pixels, rvec, tvec = scene(1, 10, False, None, 0)
    for args in [(points[:3], pixels[:3]), (points, pixels[:9]), (points[:, :2], pixels),
                 (points.astype(np.int32), pixels), (points[:5], pixels[:5])]:
        with pytest.raises(cv2.error):
            cv2.solvePnP(*args, CAMERA, None)
        with pytest.raises(mcv.error):
            mcv.solvePnP(*args, CAMERA, None)
    with pytest.raises(mcv.error):
        mcv.solvePnP(points, pixels, CAMERA, None, flags=99)
    with pytest.raises(cv2.error):
        cv2.solvePnP(points[:2], pixels[:2], CAMERA, None, flags=cv2.SOLVEPNP_SQPNP)
    with pytest.raises(mcv.error):
        mcv.solvePnP(points[:2], pixels[:2], CAMERA, None, flags=mcv.SOLVEPNP_SQPNP)
    with pytest.raises(mcv.error):
        mcv.solvePnP(points, pixels, np.eye(2), None)
    with pytest.raises(mcv.error):
        mcv.projectPoints(points, rvec, tvec, CAMERA, np.zeros(6))
    with pytest.raises(TypeError):
        mcv.solvePnP(None, pixels, CAMERA, None)
