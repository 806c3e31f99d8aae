"""mnnpy.cv solve and Rodrigues against OpenCV: solutions within 1e-10 relative; Rodrigues'
Jacobians (central differences of OpenCV's formulas) within 1e-6."""
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
