"""The LayerNorm op (what the ONNX converter makes of LayerNormalization) against
torch.nn.functional.layer_norm in float64: trailing axes from any axis, with and without gamma and
beta, rows of every length around the vector width, values far from zero (two-pass variance),
thread counts, the portable SIMD path, and errors."""
import numpy as np
import pytest

import mnnpy
from mnnpy import _core
from mnnpy import expr as F

torch = pytest.importorskip("torch")


def layer_norm(x, gamma=None, beta=None, axis=-1, epsilon=1e-5):
    inputs = [F.const(x)] + [F.const(v) for v in (gamma, beta) if v is not None]
    return _core.op("LayerNorm", inputs, {"axis": axis, "epsilon": epsilon}).read()


def reference(x, gamma=None, beta=None, axis=-1, epsilon=1e-5):
    axis = axis % x.ndim
    t = torch.from_numpy(x.astype(np.float64))
    g = None if gamma is None else torch.from_numpy(gamma.astype(np.float64))
    b = None if beta is None else torch.from_numpy(beta.astype(np.float64))
    if g is not None and b is None:
        b = torch.zeros_like(g)
    return torch.nn.functional.layer_norm(t, x.shape[axis:], g, b, epsilon).numpy()


@pytest.mark.parametrize("shape,axis", [((4, 768), -1), ((2, 3, 7), -1), ((2, 5, 9), 1), ((3, 1), -1),
                                        ((6, 17), 0), ((1, 8, 33), -1), ((2, 2, 3, 5), 2)], ids=str)
@pytest.mark.parametrize("affine", ["none", "gamma", "both"])
def test_matches_torch(rng, shape, axis, affine):
    x = rng.standard_normal(shape).astype(np.float32)
    normalized = shape[axis % len(shape):]
    gamma = rng.standard_normal(normalized).astype(np.float32) if affine != "none" else None
    beta = rng.standard_normal(normalized).astype(np.float32) if affine == "both" else None
    np.testing.assert_allclose(layer_norm(x, gamma, beta, axis), reference(x, gamma, beta, axis),
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dim", list(range(1, 20)) + [31, 33, 64, 65])
def test_row_lengths_and_far_from_zero(rng, dim):
    # An offset of 1e3 with unit spread: E[x^2] - E[x]^2 would lose most digits in float32.
    x = (1e3 + rng.standard_normal((5, dim))).astype(np.float32)
    gamma, beta = rng.standard_normal(dim).astype(np.float32), rng.standard_normal(dim).astype(np.float32)
    np.testing.assert_allclose(layer_norm(x, gamma, beta, epsilon=1e-3), reference(x, gamma, beta, epsilon=1e-3),
                               rtol=1e-3, atol=2e-3)


def test_gamma_of_lower_rank_and_threads(rng):
    # Normalized axes (1, 40) from axis 1; gamma given as (40,).
    x = rng.standard_normal((768, 1, 40)).astype(np.float32)
    gamma = rng.standard_normal(40).astype(np.float32)
    expected = reference(x, gamma.reshape(1, 40), axis=1)
    old = mnnpy.get_num_threads()
    try:
        for threads in (1, 2, 3):
            mnnpy.set_num_threads(threads)
            np.testing.assert_allclose(layer_norm(x, gamma, axis=1), expected, rtol=1e-4, atol=1e-5)
    finally:
        mnnpy.set_num_threads(old)


def test_portable_simd_agrees(rng, portable_simd):
    x = rng.standard_normal((7, 45)).astype(np.float32)
    gamma, beta = rng.standard_normal(45).astype(np.float32), rng.standard_normal(45).astype(np.float32)
    np.testing.assert_allclose(layer_norm(x, gamma, beta), reference(x, gamma, beta), rtol=1e-4, atol=1e-5)


def test_empty_rows():
    assert layer_norm(np.zeros((0, 8), np.float32)).shape == (0, 8)


def test_bad_inputs_raise():
    x = np.ones((2, 3, 4), np.float32)
    with pytest.raises(ValueError, match="axis 3 is out of range"):
        layer_norm(x, axis=3)
    with pytest.raises(ValueError, match=r"gamma has shape \(3,\), expected the normalized axes' shape \(4,\)"):
        layer_norm(x, np.ones(3, np.float32))
    with pytest.raises(ValueError, match=r"beta has shape \(3, 4\)"):
        layer_norm(x, np.ones(4, np.float32), np.ones((3, 4), np.float32))
    with pytest.raises(TypeError, match="x must be float32, got float64"):
        layer_norm(x.astype(np.float64))
    with pytest.raises(ValueError, match="epsilon must be >= 0"):
        layer_norm(x, epsilon=-1.0)
