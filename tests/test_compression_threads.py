"""The compressed-model kernels called from 8 Python threads at once: the int8 GEMM
(MatMulInteger, DynamicQuantMatMul, QLinearMatMul of two activations with QLinearSoftmax between,
as in attention), the int8 convolution (QLinearConv2D: im2col, pointwise and
depthwise schemes), weight-only int4/int8 blocks (WeightQuantMatMul) and the block-sparse MatMul,
each planned once in a module that the threads share, each thread also splitting its work over
the core's pool.

Each thread's result is checked bit for bit against the same module's result computed on one
thread before the threads start (a plan splits its work the same way whichever threads run it),
and those single-threaded results against the references of the kernels' own tests: NumPy's
int64 arithmetic for the integer kernels (exact), the float64 product within the accumulation
bound for the float ones. Threads start together at a barrier, so first calls race as well.
"""
import numpy as np
import pytest

import mnnpy
import mnnpy.expr as F
from mnnpy import nn
from test_int8_conv import _random, _reference as qlinear_conv_reference
from test_int8_matmul import _dynamic_reference, _qlinear_reference, _quantize_columns, _reference as matmul_integer_reference
from test_int8_ops import _softmax_reference
from test_sparse import check_within, matmul_bound, pruned_weight
from test_threads import THREADS, run_threads
from test_weight_quant import EPS32, _gamma, _op_case

INPUTS = 4  # inputs per module; each thread runs every one, starting at its own


def check_from_threads(module, inputs, single):
    """Every thread runs each input 5 times, in its own order, against the one-thread results."""
    def work(i):
        for k in range(5 * len(inputs)):
            j = (i + k) % len(inputs)
            got = np.asarray(module.forward(inputs[j]).read())
            np.testing.assert_array_equal(got, single[j], err_msg=f"thread {i} input {j}")
    run_threads(work)


@pytest.fixture(autouse=True)
def two_pool_threads():
    """The core's pool splits each run over two threads while 8 Python threads call."""
    previous = mnnpy.get_num_threads()
    mnnpy.set_num_threads(2)
    yield
    mnnpy.set_num_threads(previous)


def test_matmul_integer_from_threads(rng):
    M, K, N = 37, 300, 70
    b = _random(rng, np.int8, (K, N))
    a = F.placeholder((M, K), dtype=np.uint8)
    module = nn.load_module([a], [F.matmul_integer(a, F.const(b), np.uint8(131))])
    inputs = [_random(rng, np.uint8, (M, K)) for _ in range(INPUTS)]
    single = [np.asarray(module.forward(x).read()) for x in inputs]
    for x, y in zip(inputs, single):
        np.testing.assert_array_equal(y, matmul_integer_reference(x, b, np.uint8(131)))
    check_from_threads(module, inputs, single)


def test_attention_products_from_threads(rng):
    """Scores Q K^T (one pack of B per head), their softmax, then P V: 8-bit throughout."""
    q = F.placeholder((1, 4, 40, 64), dtype=np.uint8)
    k = F.placeholder((1, 4, 64, 40), dtype=np.uint8)
    v = F.placeholder((1, 4, 40, 64), dtype=np.uint8)
    s8, z = np.float32(0.02), np.uint8(128)
    scores_scale = np.float32(0.02 * 0.02 * 2000)
    scores = F.qlinear_matmul(q, s8, z, k, s8, z, scores_scale, np.uint8(128))
    probs = F.qlinear_softmax(scores, scores_scale, np.uint8(128), np.float32(1 / 256), np.uint8(0))
    out = F.qlinear_matmul(probs, np.float32(1 / 256), np.uint8(0), v, s8, z, np.float32(0.02), np.uint8(128))
    module = nn.load_module([q, k, v], [out, scores])
    inputs = [[_random(rng, np.uint8, p.shape) for p in (q, k, v)] for _ in range(INPUTS)]
    single = []
    for x in inputs:
        got_out, got_scores = (np.asarray(t.read()) for t in module.forward(x))
        np.testing.assert_array_equal(got_scores, _qlinear_reference(x[0], s8, z, x[1], s8, z, scores_scale,
                                                                     np.uint8(128)))
        probs_ref = _softmax_reference(got_scores, scores_scale, np.uint8(128), np.float32(1 / 256), np.uint8(0))
        # The softmax within a step of float64's; P V exactly of the kernel's probabilities.
        got_probs = np.asarray(F.qlinear_softmax(got_scores, scores_scale, np.uint8(128), np.float32(1 / 256),
                                                 np.uint8(0)).read())
        assert np.abs(got_probs.astype(np.int32) - probs_ref.astype(np.int32)).max() <= 1
        np.testing.assert_array_equal(got_out, _qlinear_reference(got_probs, np.float32(1 / 256), np.uint8(0), x[2],
                                                                  s8, z, np.float32(0.02), np.uint8(128)))
        single.append(got_out)

    def work(i):
        for n in range(5 * INPUTS):
            j = (i + n) % INPUTS
            got = np.asarray(module.forward(inputs[j])[0].read())
            np.testing.assert_array_equal(got, single[j], err_msg=f"thread {i} input {j}")
    run_threads(work)


def test_dynamic_quant_matmul_from_threads(rng):
    M, K, N = 24, 256, 96
    w_q, w_scale = _quantize_columns(rng.standard_normal((K, N)).astype(np.float32))
    bias = rng.standard_normal(N).astype(np.float32)
    x = F.placeholder((M, K), dtype=np.float32)
    module = nn.load_module([x], [F.dynamic_quant_matmul(x, F.const(w_q), F.const(w_scale), F.const(bias))])
    inputs = [rng.standard_normal((M, K)).astype(np.float32) for _ in range(INPUTS)]
    single = [np.asarray(module.forward(v).read()) for v in inputs]
    for v, y in zip(inputs, single):
        # The kernel fuses the multiply-add, the reference rounds once from float64: within 1 ulp.
        expected = _dynamic_reference(v, w_q, w_scale, bias)
        np.testing.assert_array_max_ulp(y, expected, maxulp=1)
    check_from_threads(module, inputs, single)


# (N, C, H, W), OC, kernel, stride, pads, group: the im2col, pointwise and depthwise schemes.
CONVS = [((1, 16, 14, 14), 24, (3, 3), (1, 1), (1, 1, 1, 1), 1),
         ((2, 32, 9, 9), 40, (1, 1), (1, 1), (0, 0, 0, 0), 1),
         ((1, 24, 15, 15), 24, (3, 3), (2, 2), (1, 1, 1, 1), 24)]


@pytest.mark.parametrize("case", range(len(CONVS)))
def test_qlinear_conv2d_from_threads(rng, case):
    xshape, OC, kernel, stride, pads, group = CONVS[case]
    w = _random(rng, np.int8, (OC, xshape[1] // group) + kernel)
    ws = rng.uniform(0.001, 0.01, OC).astype(np.float32)
    wz = np.zeros(OC, np.int8)
    xs, xz = np.float32(0.02), np.uint8(120)
    bias = rng.integers(-5000, 5000, OC).astype(np.int32)
    ys, yz = np.float32(xs * ws.max() * 40.0), np.uint8(128)
    x = F.placeholder(xshape, dtype=np.uint8)
    y = F.qlinear_conv2d(x, xs, xz, F.const(w), ws, wz, ys, yz, bias, stride, pads, (1, 1), group, False)
    module = nn.load_module([x], [y])
    inputs = [_random(rng, np.uint8, xshape) for _ in range(INPUTS)]
    single = [np.asarray(module.forward(v).read()) for v in inputs]
    for v, got in zip(inputs, single):
        expected = qlinear_conv_reference(v, xs, xz, w, ws, wz, ys, yz, bias, stride, pads, (1, 1), group, False)
        np.testing.assert_array_equal(got, expected)
        assert len(np.unique(got)) > 3  # not all saturated
    check_from_threads(module, inputs, single)


@pytest.mark.parametrize("bits", [4, 8])
def test_weight_quant_matmul_from_threads(rng, bits):
    # One row (the GEMV kernel) and 20 rows (dequantized slabs through the float GEMM).
    for m in (1, 20):
        x0, q, bias, _, _ = _op_case(rng, m, bits, 32, bits == 4, True, n=130, blocks=6)
        x = F.placeholder(x0.shape, dtype=np.float32)
        module = nn.load_module([x], [F.weight_quant_matmul(x, q, bias)])
        wd = F.dequantize_weight_blocks(q).astype(np.float64)
        inputs = [x0] + [rng.standard_normal(x0.shape).astype(np.float32) for _ in range(INPUTS - 1)]
        single = [np.asarray(module.forward(v).read()) for v in inputs]
        for v, y in zip(inputs, single):
            # The bound of the kernel's own test: K products and the bias, in any order.
            exact = v.astype(np.float64) @ wd.T + bias.astype(np.float64)
            bound = _gamma(v.shape[1] + 4) * (np.abs(v.astype(np.float64)) @ np.abs(wd).T) + EPS32 * np.abs(exact)
            assert np.all(np.abs(y.astype(np.float64) - exact) <= bound), m
        check_from_threads(module, inputs, single)


def test_block_sparse_matmul_from_threads(rng):
    M, K, N = 16, 256, 192
    w = pruned_weight(rng, N, K, 0.9, (4, 4))
    x = F.placeholder((M, K), dtype=np.float32)
    with F.block_sparse(threshold=0.0, min_weights=0):
        module = nn.load_module([x], [F.matmul(x, np.ascontiguousarray(w.T))])
        inputs = [rng.standard_normal((M, K)).astype(np.float32) for _ in range(INPUTS)]
        single = [np.asarray(module.forward(v).read()) for v in inputs]
    for v, y in zip(inputs, single):
        check_within(y, v.astype(np.float64) @ w.T.astype(np.float64), matmul_bound(v, w))
    check_from_threads(module, inputs, single)
