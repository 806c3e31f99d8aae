"""WeightQuantMatMul on the Vulkan backend (backend/vulkan/weight_quant_kernel.cpp), each case
checked to have run there (profile) on the path its rows call for: the GEMV for 1 to 4 rows of x,
the dequantizing SGEMM for more, with K split where the tiles are few.

Bound: each output is a K-term float32 sum. Its terms are the products x_k (u_k - z) s_b, each
within one rounding of x_k w_k (w the float32 dequantized weight NumPy is given: one rounding of
(u - z) s), rounded once more when formed and once when scaled (the GEMV scales a chunk's sum;
the SGEMM multiplies the float32 w itself), and the sum adds each at most K - 1 times in whatever
order the shader takes (additions of exact zeros from idle invocations round nothing). So
|ours - exact| <= gamma_{K+4} sum_k |x_k w_k| with gamma_n = n u / (1 - n u), u = 2^-24 the unit
roundoff, exact the float64 product; the bias adds half an ulp of the result, u |exact| (its
second-order part is within the slack of gamma_{K+4} over the K + 2 roundings counted). This is
tests/test_weight_quant.py's bound, stated with the unit roundoff."""
import numpy as np
import pytest

import mnnpy
from mnnpy import _core
from mnnpy import expr as F

from helpers import compute_steps, profiled

U = 2.0 ** -24  # float32's unit roundoff


def gamma(n):
    return n * U / (1 - n * U)


def expected(x, wd, bias):
    """(float64 exact value of x @ wd.T + bias, the bound on a float32 kernel's error)."""
    x = x.astype(np.float64)
    exact = x @ wd.T + (0 if bias is None else bias.astype(np.float64))
    return exact, gamma(x.shape[-1] + 4) * (np.abs(x) @ np.abs(wd).T) + U * np.abs(exact)


def quantized_case(rng, m, n, k, bits, block, symmetric, with_bias, batch=None):
    """(inputs as NumPy arrays, attrs, float64 exact result, bound, the float weights) of a random
    layer, x of shape batch + (k,) where batch is given."""
    w = (rng.standard_normal((n, k)) * rng.uniform(0.1, 2, (n, 1))).astype(np.float32)
    x = rng.standard_normal((m, k)).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32) if with_bias else None
    q = F.quantize_weight_blocks(w, bits=bits, block=block, symmetric=symmetric)
    wd = F.dequantize_weight_blocks(q).astype(np.float64)
    exact, bound = expected(x, wd, bias)
    if batch is not None:
        x, exact, bound = (a.reshape(batch + a.shape[1:]) for a in (x, exact, bound))
    inputs = [x, q.codes, q.scales] + ([] if symmetric else [q.zeros]) + ([] if bias is None else [bias])
    attrs = {"bits": bits, "block": block, "asymmetric": 0 if symmetric else 1, "int8_activations": 0}
    return inputs, attrs, exact, bound, wd


def layer(inputs, attrs):
    return _core.op("WeightQuantMatMul", [F.const(a) for a in inputs], attrs)


def run_layer(inputs, attrs):
    """The layer's output on the backend in effect, and its WeightQuantMatMul step."""
    (y,), profile = profiled(lambda: [layer(inputs, attrs)], mnnpy.get_backend())
    (step,) = [s for s in compute_steps(profile) if s["op"] == "WeightQuantMatMul"]
    return y, step


def assert_within(y, exact, bound):
    assert y.dtype == np.float32 and y.shape == exact.shape, (y.dtype, y.shape, exact.shape)
    err = np.abs(y.astype(np.float64) - exact)
    assert np.all(err <= bound), float((err / bound).max())


# (m, n, k in blocks, or K where >= 896, bias, the scheme's start): the GEMV at 1 to 4 rows (4, 2,
# 1 and 1 outputs a team) with teams of 1 to 32 invocations and N across its workgroups of
# 128 / team teams and its teams (N not a multiple of the outputs a team); the SGEMM at 5 rows and
# across its 64 x 64 tiles (65, 130), K split (K >= 256 on a grid of few tiles) and not.
CASES = [
    (1, 75, 896, True, "gemv team"),
    (1, 300, 1, False, "gemv team"),  # team 1 at int4, block 32
    (1, 1, 2, True, "gemv team"),
    (2, 33, 3, False, "gemv team"),
    (3, 61, 5, True, "gemv team"),
    (4, 129, 2, True, "gemv team"),
    (1, 40, 4096, True, "gemv team 32, 4 outputs"),
    (5, 75, 896, False, "dequantize sgemm 64x64x16 4x4 split-k 7"),
    (65, 70, 3, True, "dequantize sgemm"),
    (130, 9, 896, True, "dequantize sgemm"),
]


@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize("block", [32, 64, 128])
@pytest.mark.parametrize("symmetric", [True, False], ids=["symmetric", "asymmetric"])
def test_against_numpy(vulkan, rng, bits, block, symmetric):
    for m, n, k, with_bias, scheme in CASES:
        k = k if k >= 896 else k * block
        inputs, attrs, exact, bound, _ = quantized_case(rng, m, n, k, bits, block, symmetric, with_bias)
        y, step = run_layer(inputs, attrs)
        assert step["backend"] == "vulkan", step
        assert step["scheme"].startswith(scheme), (m, n, k, step["scheme"])
        assert_within(y, exact, bound)


@pytest.mark.parametrize("batch", [(2, 3), (1, 1), (2, 1, 2)])
def test_leading_dims_are_rows(vulkan, rng, batch):
    m = int(np.prod(batch))
    for bits in (4, 8):
        inputs, attrs, exact, bound, _ = quantized_case(rng, m, 50, 256, bits, 64, False, True, batch=batch)
        y, step = run_layer(inputs, attrs)
        assert step["backend"] == "vulkan"
        assert y.shape == batch + (50,)
        assert_within(y, exact, bound)


@pytest.mark.parametrize("m", [1, 6])
@pytest.mark.parametrize("bits", [4, 8])
def test_int8_activations_compute_in_float32_on_vulkan(vulkan, rng, m, bits):
    # The attribute selects the CPU's int8 scheme; here x stays float: the float path's bound and
    # its very bits.
    inputs, attrs, exact, bound, _ = quantized_case(rng, m, 37, 512, bits, 32, True, True)
    y_float, _ = run_layer(inputs, attrs)
    y, step = run_layer(inputs, dict(attrs, int8_activations=1))
    assert step["backend"] == "vulkan"
    assert_within(y, exact, bound)
    np.testing.assert_array_equal(y, y_float)


@pytest.mark.parametrize("m", [1, 8])
def test_replays_read_each_runs_x(vulkan, rng, m):
    # The plan is recorded once; later runs replay it with the new x.
    inputs, attrs, _, _, wd = quantized_case(rng, m, 45, 256, 4, 32, False, True)
    _, codes, scales, zeros, bias = inputs
    x = F.placeholder([m, 256])
    y = _core.op("WeightQuantMatMul", [x] + [F.const(a) for a in (codes, scales, zeros, bias)], attrs)
    for run in range(4):
        xv = rng.standard_normal((m, 256)).astype(np.float32)
        x.write(xv)
        exact, bound = expected(xv, wd, bias)
        assert_within(np.asarray(y.read()), exact, bound)
        if run >= 2:
            assert mnnpy._core.executor_stats()["last_device_replays"] == 1


def test_empty_k_runs_on_the_cpu(vulkan, rng):
    # K = 0 (every block size divides it): the Vulkan kernel declines, the CPU gives the bias.
    bias = rng.standard_normal(6).astype(np.float32)
    inputs = [np.zeros((3, 0), np.float32), np.zeros((6, 0), np.uint8), np.zeros((6, 0), np.float32), bias]
    y, step = run_layer(inputs, {"bits": 4, "block": 32, "asymmetric": 0, "int8_activations": 0})
    assert step["backend"] == "cpu", step
    np.testing.assert_array_equal(y, np.broadcast_to(bias, (3, 6)))


def test_empty_rows_and_outputs(vulkan, rng):
    for m, n in ((0, 7), (3, 0)):
        inputs, attrs, _, _, _ = quantized_case(rng, max(m, 1), max(n, 1), 64, 8, 32, True, False)
        x = inputs[0][:m]
        codes, scales = inputs[1][:n], inputs[2][:n]
        y, _ = run_layer([x, codes, scales], attrs)
        assert y.shape == (m, n)
