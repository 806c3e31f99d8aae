"""Weight-only block quantization: expr.quantize_weight_blocks / dequantize_weight_blocks against a
NumPy statement of the same formula (codes exact), the WeightQuantMatMul op against NumPy's float
matmul with the dequantized weights on every usable SIMD target, converted torch models
(quantize_weights and the converters' weight_quant_* arguments), the CLI flags and bad arguments.

Bounds: the op sums K products x_k (u_k - z) s_b, each block's sum formed in float32 and scaled
once (GEMV), or the float GEMM on the dequantized weights (more rows); either way each output is a
K-term float32 sum whose terms are within one rounding of x_k w_k, so it differs from the exact
sum (NumPy in float64) by at most gamma_{K+4} sum_k |x_k w_k|, plus half an ulp for the bias. Two
targets differ by at most twice that."""
import os
import subprocess
import sys

import numpy as np
import pytest

import mnnpy
import mnnpy.expr as F
from mnnpy import convert

EPS32 = float(np.finfo(np.float32).eps)
TARGETS = mnnpy.runtime_info()["simd_targets_usable"]


def _gamma(k):
    return k * EPS32 / (1 - k * EPS32)


# ---------------------------------------------------------------- NumPy statement of the format
def reference_codes(w, bits, block, symmetric):
    """(unsigned codes (N, K), scales (N, K / block), zero points (N, K / block)) in float32,
    as docs/weight_quantization.md states the formula."""
    n, k = w.shape
    blocks = w.astype(np.float32).reshape(n, k // block, block)
    if symmetric:
        qmax = np.float32(2 ** (bits - 1) - 1)
        scale = np.max(np.abs(blocks), axis=2) / qmax
        safe = np.where(scale == 0, np.float32(1), scale)
        signed = np.clip(np.round(blocks / safe[:, :, None]), -qmax, qmax)
        zero = np.full(scale.shape, 2 ** (bits - 1), np.float32)
        codes = signed + zero[:, :, None]
    else:
        qmax = np.float32(2 ** bits - 1)
        lo = np.minimum(blocks.min(axis=2), np.float32(0))
        hi = np.maximum(blocks.max(axis=2), np.float32(0))
        scale = (hi - lo) / qmax
        safe = np.where(scale == 0, np.float32(1), scale)
        zero = np.clip(np.round(-lo / safe), 0, qmax)
        codes = np.clip(np.round(blocks / safe[:, :, None]) + zero[:, :, None], 0, qmax)
    return codes.reshape(n, k).astype(np.int64), scale.astype(np.float32), zero.astype(np.float32)


def unpacked(q):
    """The codes of a QuantizedWeight as integers (N, K): int4 high nibble first."""
    if q.bits == 8:
        return q.codes.astype(np.int64)
    n, k = q.shape
    out = np.empty((n, k), np.int64)
    out[:, 0::2] = q.codes >> 4
    out[:, 1::2] = q.codes & 15
    return out


@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize("block", [32, 64, 128])
@pytest.mark.parametrize("symmetric", [True, False])
def test_quantize_matches_the_formula(rng, bits, block, symmetric):
    w = (rng.standard_normal((37, 3 * block)) * rng.uniform(0.01, 3, (37, 1))).astype(np.float32)
    w[3, :block] = 0  # an all-zero block: scale 0, codes at the zero point
    w[5, block:2 * block] = np.abs(w[5, block:2 * block])  # an all-positive block (asymmetric: zero point 0)
    before = w.copy()
    q = F.quantize_weight_blocks(w, bits=bits, block=block, symmetric=symmetric)
    np.testing.assert_array_equal(w, before)  # the user's array is not modified
    codes, scale, zero = reference_codes(w, bits, block, symmetric)
    assert q.codes.dtype == np.uint8 and q.codes.shape == (37, 3 * block * bits // 8)
    assert q.scales.dtype == np.float32 and q.bits == bits and q.block == block and q.shape == w.shape
    assert (q.zeros is None) == symmetric
    assert np.array_equal(unpacked(q), codes)
    assert np.array_equal(q.scales, scale)
    if not symmetric:
        assert q.zeros.dtype == np.uint8 and np.array_equal(q.zeros.astype(np.float32), zero)
    assert codes.min() >= (1 if symmetric else 0) and codes.max() <= 2 ** bits - 1
    # Dequantized: (code - zero) * scale with one float32 rounding, within half a step of w.
    d = F.dequantize_weight_blocks(q)
    expected = ((codes.reshape(37, 3, block) - zero[:, :, None]).astype(np.float32) * scale[:, :, None])
    assert d.dtype == np.float32 and np.array_equal(d, expected.reshape(w.shape))
    step = np.repeat(scale, block, axis=1).astype(np.float64)
    err = np.abs(d.astype(np.float64) - w)
    # Half a step, plus the float32 roundings of w / scale and of the product (a few ulp of w).
    assert np.all(err <= 0.5 * step * (1 + 4 * EPS32) + 4 * np.spacing(np.abs(w)).astype(np.float64))
    assert np.all(d[3, :block] == 0)


def test_quantize_bad_arguments():
    w = np.ones((4, 64), np.float32)
    with pytest.raises(ValueError, match="bits must be 4 or 8, got 3"):
        F.quantize_weight_blocks(w, bits=3)
    with pytest.raises(ValueError, match="block must be 32, 64 or 128, got 48"):
        F.quantize_weight_blocks(w, block=48)
    with pytest.raises(ValueError, match="the block 128 does not divide K = 64"):
        F.quantize_weight_blocks(w, block=128)
    with pytest.raises(ValueError, match="must be 2-D"):
        F.quantize_weight_blocks(np.ones(64, np.float32))
    with pytest.raises(ValueError, match="inf or NaN"):
        F.quantize_weight_blocks(np.full((2, 32), np.nan, np.float32))
    with pytest.raises(TypeError, match="QuantizedWeight"):
        F.dequantize_weight_blocks(w)
    q = F.quantize_weight_blocks(w)
    with pytest.raises(ValueError, match="codes have shape"):
        mnnpy._core.op("WeightQuantMatMul", [F.const(np.ones((2, 64), np.float32)), F.const(q.codes[:, :5]),
                                             F.const(q.scales)], {"bits": 4, "block": 32, "asymmetric": 0})
    with pytest.raises(ValueError, match="the block 32 does not divide K = 48"):
        F.weight_quant_matmul(np.ones((2, 48), np.float32), q)
    with pytest.raises(ValueError, match="bits must be 4 or 8, got 3"):
        mnnpy._core.op("WeightQuantMatMul", [F.const(np.ones((2, 64), np.float32)), F.const(q.codes),
                                             F.const(q.scales)], {"bits": 3, "block": 32, "asymmetric": 0})
    with pytest.raises(TypeError, match="x must be float32"):
        mnnpy._core.op("WeightQuantMatMul", [F.const(np.ones((2, 64), np.int32)), F.const(q.codes),
                                             F.const(q.scales)], {"bits": 4, "block": 32, "asymmetric": 0})
    with pytest.raises(ValueError, match="bias has shape"):
        F.weight_quant_matmul(np.ones((2, 64), np.float32), q, bias=np.ones(3, np.float32))


# ---------------------------------------------------------------- the op on every SIMD target
def _op_case(rng, m, bits, block, symmetric, with_bias, n=37, blocks=3):
    k = blocks * block
    w = (rng.standard_normal((n, k)) * 0.5).astype(np.float32)
    x = rng.standard_normal((m, k)).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32) if with_bias else None
    q = F.quantize_weight_blocks(w, bits=bits, block=block, symmetric=symmetric)
    wd = F.dequantize_weight_blocks(q).astype(np.float64)
    expected = x.astype(np.float64) @ wd.T + (0 if bias is None else bias.astype(np.float64))
    scale = np.abs(x.astype(np.float64)) @ np.abs(wd).T
    bound = _gamma(k + 4) * scale + EPS32 * np.abs(expected)
    return x, q, bias, expected, bound


@pytest.mark.parametrize("m", [1, 3, 16, 17, 64])
@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize("symmetric", [True, False])
def test_op_against_numpy_on_every_target(rng, m, bits, symmetric):
    previous = mnnpy.get_simd_target()
    try:
        for block in (32, 64, 128):
            with_bias = block != 64
            x, q, bias, expected, bound = _op_case(rng, m, bits, block, symmetric, with_bias)
            results = {}
            for target in TARGETS:
                mnnpy.set_simd_target(target)
                y = np.asarray(F.weight_quant_matmul(x, q, bias).read())
                assert y.dtype == np.float32 and y.shape == expected.shape
                err = np.abs(y.astype(np.float64) - expected)
                assert np.all(err <= bound), (target, block, float((err / bound).max()))
                results[target] = y
            for target, y in results.items():  # targets agree within two accumulation orders
                assert np.all(np.abs(y.astype(np.float64) - results[TARGETS[0]]) <= 2 * bound), target
    finally:
        mnnpy.set_simd_target(previous)


@pytest.mark.parametrize("bits", [4, 8])
def test_op_batched_input_and_threads(rng, bits):
    # Leading dimensions fold into rows; 1 and 2 threads split N alike.
    x, q, bias, expected, bound = _op_case(rng, 6, bits, 32, True, True, n=301, blocks=5)
    x3 = x.reshape(2, 3, -1)
    for threads in (1, 2):
        mnnpy.set_num_threads(threads)
        try:
            y = np.asarray(F.weight_quant_matmul(x3, q, bias).read())
        finally:
            mnnpy.set_num_threads(1)
        assert y.shape == (2, 3, 301)
        assert np.all(np.abs(y.reshape(6, 301).astype(np.float64) - expected) <= bound)


# ---------------------------------------------------------------- int8 activations
def quantize_activations(x):
    """(codes (M, K) int64, scales (M, K / 32) float32) as weight_quant.h states them: per 32 k,
    ratio = 127 / max|x| in float32, codes round(clip(x * ratio, -127, 127)) half to even, scale
    max|x| / 127."""
    m, k = x.shape
    xs = x.reshape(m, k // 32, 32)
    top = np.abs(xs).max(axis=2)
    ratio = np.where(top > 0, np.float32(127) / np.where(top > 0, top, np.float32(1)), np.float32(0))
    codes = np.rint(np.clip(xs * ratio.astype(np.float32)[..., None], np.float32(-127), np.float32(127)))
    return codes.astype(np.int64).reshape(m, k), (top / np.float32(127)).astype(np.float32)


def int8_activation_reference(x, q, bias):
    """(exact value of the formula in float64, bound on the kernel's float32 steps). Per sub-block
    s of 32 k: the integer c_s and the float32 scale product are exact on both sides; the kernel
    then adds float(c_s) * scale_s into 16 chains (one rounding each, S / 16 terms a chain) and sums
    the chains in four halvings: at most gamma_{S/16 + 4} times the sum of |terms|, plus half an
    ulp for the bias."""
    n, k = q.shape
    codes, sx = quantize_activations(x)
    u = unpacked(q).reshape(n, k // 32, 32)
    per_block = q.block // 32
    zeros = np.full((n, k // q.block), 2 ** (q.bits - 1), np.int64) if q.zeros is None else q.zeros.astype(np.int64)
    cq = codes.reshape(len(x), k // 32, 32)
    c = np.einsum("nsj,msj->mns", u, cq) - np.repeat(zeros, per_block, axis=1)[None] * cq.sum(axis=2)[:, None, :]
    scale = (np.repeat(q.scales, per_block, axis=1)[None] * sx[:, None, :]).astype(np.float32)
    terms = c.astype(np.float64) * scale
    exact = terms.sum(axis=2) + (0 if bias is None else bias.astype(np.float64))
    bound = _gamma(k // 32 // 16 + 5) * np.abs(terms).sum(axis=2) + EPS32 / 2 * np.abs(exact)
    return exact, bound


@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize("block,symmetric", [(32, True), (64, False), (128, True), (128, False)])
def test_int8_activations_formula_on_every_target(rng, bits, block, symmetric):
    # M across one pass of 64 rows; K with and without a tail past the last 16 sub-blocks (and past
    # the last 8, of every length on AVX2; 896, a width of Qwen2.5-0.5B). Every
    # target gives the same bits: the integer sums are exact and the float steps one sequence.
    previous = mnnpy.get_simd_target()
    try:
        for m, k in ((1, 16 * block), (3, 20 * block), (70, 2 * block), (2, 7 * block), (5, 896)):
            n = 37
            w = (rng.standard_normal((n, k)) * 0.5).astype(np.float32)
            x = rng.standard_normal((m, k)).astype(np.float32)
            bias = rng.standard_normal(n).astype(np.float32) if block != 64 else None
            q = F.quantize_weight_blocks(w, bits=bits, block=block, symmetric=symmetric)
            exact, bound = int8_activation_reference(x, q, bias)
            results = {}
            for target in TARGETS:
                mnnpy.set_simd_target(target)
                y = np.asarray(F.weight_quant_matmul(x, q, bias, int8_activations=True).read())
                assert y.dtype == np.float32 and y.shape == (m, n)
                err = np.abs(y.astype(np.float64) - exact)
                assert np.all(err <= bound), (target, m, k, float((err / bound).max()))
                results[target] = y
            for target, y in results.items():
                np.testing.assert_array_equal(y, results[TARGETS[0]], err_msg=f"{target} against {TARGETS[0]}")
    finally:
        mnnpy.set_simd_target(previous)


@pytest.mark.parametrize("bits", [4, 8])
def test_int8_activations_against_the_float_product(rng, bits):
    # Against x @ W^T with the float x: rounding x to its codes moves each value by at most half a
    # step (max|x| / 127 per 32 values, plus the float32 rounding of the scale and the ratio), so
    # the output by at most sum_k |w_k| * step / 2 (times 1 + 4 eps), plus the float32 steps'.
    m, k, n = 5, 256, 67
    w = rng.standard_normal((n, k)).astype(np.float32)
    x = (rng.standard_normal((m, k)) * np.exp(rng.standard_normal((m, k)))).astype(np.float32)
    q = F.quantize_weight_blocks(w, bits=bits, block=64, symmetric=False)
    wd = F.dequantize_weight_blocks(q).astype(np.float64)
    y = np.asarray(F.weight_quant_matmul(x, q, int8_activations=True).read()).astype(np.float64)
    step = np.repeat(np.abs(x).reshape(m, k // 32, 32).max(axis=2) / 127, 32, axis=1).astype(np.float64)
    _, kernel_bound = int8_activation_reference(x, q, None)
    bound = (step / 2 * (1 + 4 * EPS32)) @ np.abs(wd).T + kernel_bound
    err = np.abs(y - x.astype(np.float64) @ wd.T)
    assert np.all(err <= bound), float((err / bound).max())
    assert err.max() > 0  # the activations were rounded, not multiplied as floats


def test_int8_activations_non_finite_rows_and_zeros(rng):
    # A row holding inf or NaN gives NaN outputs; an all-zero row gives the bias; the others are
    # unaffected.
    k, n = 128, 40
    w = rng.standard_normal((n, k)).astype(np.float32)
    x = rng.standard_normal((4, k)).astype(np.float32)
    x[1, 5] = np.inf
    x[2, 100] = np.nan
    x[3] = 0
    bias = rng.standard_normal(n).astype(np.float32)
    q = F.quantize_weight_blocks(w, bits=4, block=32)
    y = np.asarray(F.weight_quant_matmul(x, q, bias, int8_activations=True).read())
    assert np.isnan(y[1]).all() and np.isnan(y[2]).all()
    np.testing.assert_array_equal(y[3], bias)
    exact, bound = int8_activation_reference(x[:1], q, bias)
    assert np.all(np.abs(y[:1].astype(np.float64) - exact) <= bound)


@pytest.mark.parametrize("bits", [4, 8])
def test_int8_activations_batched_and_threads(rng, bits):
    # Leading dimensions fold into rows; 1 and 2 threads, and several Python threads running the
    # same plan at once, give the same bits.
    import concurrent.futures
    x, q, bias, _, _ = _op_case(rng, 6, bits, 32, True, True, n=301, blocks=32)
    exact, bound = int8_activation_reference(x, q, bias)
    x3 = x.reshape(2, 3, -1)
    outputs = []
    for threads in (1, 2):
        mnnpy.set_num_threads(threads)
        try:
            outputs.append(np.asarray(F.weight_quant_matmul(x3, q, bias, int8_activations=True).read()))
        finally:
            mnnpy.set_num_threads(1)
    assert outputs[0].shape == (2, 3, 301)
    assert np.all(np.abs(outputs[0].reshape(6, 301).astype(np.float64) - exact) <= bound)
    np.testing.assert_array_equal(outputs[0], outputs[1])
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        runs = list(pool.map(lambda _: np.asarray(F.weight_quant_matmul(x3, q, bias, int8_activations=True).read()),
                             range(8)))
    for y in runs:
        np.testing.assert_array_equal(y, outputs[0])


def test_int8_activations_bad_argument():
    q = F.quantize_weight_blocks(np.ones((4, 64), np.float32), bits=4, block=32)
    with pytest.raises(TypeError, match="int8_activations must be a bool"):
        F.weight_quant_matmul(np.ones((2, 64), np.float32), q, int8_activations="yes")
    from mnnpy import _core
    with pytest.raises(ValueError, match="int8_activations must be 0 or 1"):
        _core.op("WeightQuantMatMul", [F.const(np.ones((2, 64), np.float32)), F.const(q.codes), F.const(q.scales)],
                 {"bits": 4, "block": 32, "asymmetric": 0, "int8_activations": 2})


# ---------------------------------------------------------------- converted models
def _torch():
    return pytest.importorskip("torch")


def _mlp(torch):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.GELU(), torch.nn.Linear(256, 192),
                               torch.nn.ReLU(), torch.nn.Linear(192, 64)).eval()


def _run(path, inputs):
    out = mnnpy.nn.load_module_from_file(str(path)).forward(*inputs)
    out = out[0] if isinstance(out, (list, tuple)) else out
    return np.asarray(out.read() if hasattr(out, "read") else out)


def _relative_rms(ours, ref):
    return float(np.sqrt(np.mean((ours - ref) ** 2)) / np.sqrt(np.mean(ref ** 2)))


@pytest.mark.parametrize("bits,block,symmetric", [(4, 32, True), (4, 128, False), (8, 64, True), (8, 32, False)])
def test_mlp_from_torch(tmp_path, rng, bits, block, symmetric):
    torch = _torch()
    model = _mlp(torch)
    x = rng.standard_normal((5, 128)).astype(np.float32)
    with torch.no_grad():
        ref = model(torch.from_numpy(x)).numpy()
    float_path, q_path = tmp_path / "float.mnnpy", tmp_path / "q.mnnpy"
    graph, _ = convert.from_torch(model, (torch.from_numpy(x),), output=float_path)
    qgraph, report = convert.from_torch(model, (torch.from_numpy(x),), output=q_path, weight_quant_bits=bits,
                                        weight_quant_block=block, weight_quant_asymmetric=not symmetric)
    # Every Linear whose input size the block divides (192 is not a multiple of 128: stays float).
    divisible = sum(lin.in_features % block == 0 for lin in model if isinstance(lin, torch.nn.Linear))
    assert report.ops_after.get("WeightQuantMatMul") == divisible, report.ops_after
    assert report.ops_after.get("MatMul", 0) + report.ops_after.get("Gemm", 0) == 3 - divisible
    # The quantized model against a NumPy run of the same network with dequantized weights.
    linears = [mod for mod in model if isinstance(mod, torch.nn.Linear)]
    h = x.astype(np.float64)
    for i, lin in enumerate(linears):
        wf = lin.weight.detach().numpy()
        if wf.shape[1] % block == 0:
            wf = F.dequantize_weight_blocks(F.quantize_weight_blocks(wf, bits, block, symmetric))
        h = h @ wf.astype(np.float64).T + lin.bias.detach().numpy()
        if i == 0:
            h = 0.5 * h * (1 + np.vectorize(__import__("math").erf)(h / np.sqrt(2)))
        elif i == 1:
            h = np.maximum(h, 0)
    ours = _run(q_path, [x])
    np.testing.assert_allclose(ours, h, rtol=1e-4, atol=1e-4)
    # memory="low": the quantized layers take int8 activations (per 32 values, half a step of
    # max|x| / 127 each at most: a relative RMS well under 1 / 127 per layer), the float ones int8
    # weights and activations (docs/int8.md).
    low = mnnpy.nn.load_module_from_file(str(q_path), memory_mode="low")
    assert "int8 activations" in {row["scheme"] for row in mnnpy.nn.profile(low, [x], repeats=1)}
    ours_low = np.asarray(low.forward(x).read())
    assert 0 < _relative_rms(ours_low, h) < 3 / 127
    # Against the float model: relative RMS error of the output. A layer's weights (uniform, as
    # torch initializes them) round by step / sqrt(12) RMS with step = max|w| / qmax, i.e. a
    # relative 1 / (2 qmax) of their RMS max|w| / sqrt(3), and so moves its output; three layers
    # add at most sqrt(3) times that; twice that is the limit.
    limit = 3 ** 0.5 / (2 ** (bits - 1) - 1)
    assert _relative_rms(ours, ref) < limit
    # File sizes: codes, not floats.
    ratio = os.path.getsize(q_path) / os.path.getsize(float_path)
    bits_per_weight = bits + 32 / block + (8 / block if not symmetric else 0)
    if divisible == 3:
        assert ratio < bits_per_weight / 32 * 1.25 + 0.02, ratio
    # The graph given to quantize_weights is not modified.
    again = convert.quantize_weights(graph, bits, block, symmetric)
    assert "WeightQuantMatMul" not in graph.op_counts()
    assert again.op_counts().get("WeightQuantMatMul") == divisible


def test_quantize_weights_of_a_model_file(tmp_path, rng):
    torch = _torch()
    model = _mlp(torch)
    x = rng.standard_normal((2, 128)).astype(np.float32)
    path = tmp_path / "float.mnnpy"
    convert.from_torch(model, (torch.from_numpy(x),), output=path)
    q = convert.quantize_weights(str(path), bits=8, block=64)
    convert.save_model(q, tmp_path / "q.mnnpy")
    with torch.no_grad():
        ref = model(torch.from_numpy(x)).numpy()
    assert _relative_rms(_run(tmp_path / "q.mnnpy", [x]), ref) < 0.01
    with pytest.raises(TypeError, match="Graph or a model file path"):
        convert.quantize_weights(42)


def test_bad_converter_arguments():
    torch = _torch()
    model = _mlp(torch)
    x = torch.zeros(1, 128)
    with pytest.raises(ValueError, match="bits must be 4 or 8, got 3"):
        convert.from_torch(model, (x,), weight_quant_bits=3)
    with pytest.raises(ValueError, match="block must be 32, 64 or 128, got 100"):
        convert.from_torch(model, (x,), weight_quant_bits=4, weight_quant_block=100)


@pytest.mark.parametrize("kind", ["gpt2", "bert"])
def test_transformer_from_torch(tmp_path, rng, kind):
    torch = _torch()
    pytest.importorskip("transformers")
    from model_zoo import transformer_model
    model = transformer_model(kind)  # 2 layers of width 64, random weights
    ids = rng.integers(0, 1000, (1, 16))
    inputs = [ids] + ([np.ones_like(ids)] if kind == "bert" else [])
    tensors = tuple(torch.from_numpy(a) for a in inputs)
    with torch.no_grad():
        ref = model(*tensors).numpy()
    float_path, q_path = tmp_path / "float.mnnpy", tmp_path / "q4.mnnpy"
    graph, _ = convert.from_torch(model, tensors, output=float_path)
    qgraph, report = convert.from_torch(model, tensors, output=q_path, weight_quant_bits=4, weight_quant_block=32)
    assert report.ops_after.get("WeightQuantMatMul", 0) >= 2 * 4, report.ops_after
    ours = _run(q_path, inputs)
    floats = _run(float_path, inputs)
    # int4 weights move the outputs by a few percent of their RMS: each layer's products by about
    # 1 / (2 qmax) = 7% of their size (test_mlp_from_torch), the layer norms keep the scale.
    assert _relative_rms(floats, ref) < 1e-4
    assert _relative_rms(ours, ref) < 0.2
    # The file shrinks by the quantized matrices' float bytes less their codes and scales (4 + 32 / 32
    # bits a weight), less a few hundred bytes of records per new constant. Embeddings stay float,
    # and so does a matrix the embedding shares (GPT-2's tied output layer).
    names = {n.inputs[1][:-len(".q4.codes")] for n in qgraph.nodes if n.op == "WeightQuantMatMul"}
    matrices = sum(graph.weights[name].nbytes for name in names if name not in qgraph.weights)
    codes = sum(graph.weights[name].nbytes * 5 / 32 for name in names)
    saved = os.path.getsize(float_path) - os.path.getsize(q_path)
    assert saved >= matrices - codes - 512 * 2 * len(names), (saved, matrices, codes)


# ---------------------------------------------------------------- command line
def test_cli_flags(tmp_path):
    torch = _torch()
    model = _mlp(torch)
    x = torch.randn(1, 128)
    pt = tmp_path / "mlp.pt"
    torch.jit.trace(model, (x,)).save(str(pt))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [os.path.dirname(os.path.dirname(mnnpy.__file__)),
                                                    env.get("PYTHONPATH", "")] if p)
    out = tmp_path / "q.mnnpy"
    base = [sys.executable, "-m", "mnnpy", "convert", "--input-shape", "1x128", str(pt)]
    r = subprocess.run(base + [str(out), "--weightQuantBits", "4", "--weightQuantBlock", "64",
                               "--weightQuantAsymmetric"], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert "WeightQuantMatMul 3" in r.stdout
    graph = convert.load_model(out)
    assert {n.attrs["block"] for n in graph.nodes if n.op == "WeightQuantMatMul"} == {64}
    assert all(n.attrs["asymmetric"] == 1 and n.attrs["bits"] == 4 for n in graph.nodes
               if n.op == "WeightQuantMatMul")
    with torch.no_grad():
        ref = model(x).numpy()
    assert _relative_rms(_run(out, [x.numpy()]), ref) < 0.1
    r = subprocess.run(base + [str(tmp_path / "bad.mnnpy"), "--weightQuantBits", "3"], capture_output=True,
                       text=True, env=env)
    assert r.returncode == 1 and "bits must be 4 or 8, got 3" in r.stderr


AMX_INT8 = mnnpy.runtime_info()["int8"] == "amx"


@pytest.mark.skipif(not AMX_INT8, reason="the CPU has no AMX-INT8 (the vector paths are checked on every target)")
@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize("block,symmetric", [(32, True), (64, False), (128, True)])
def test_int8_activations_amx_gives_the_vector_paths_bits(rng, bits, block, symmetric):
    """The AMX tiles against the AVX-512 VNNI path: the same integer sums per
    sub-block and the same float steps, so the same bits; rows not filling the last tile, output
    columns not filling the last pair of tiles, with and without a bias, inf in a row."""
    previous = mnnpy._core.set_int8_amx(True, 16, 64)
    try:
        for m, n, k in ((16, 32, 4 * block), (5, 20, 2 * block), (37, 45, 7 * block), (70, 16, 896),
                        (130, 77, 3 * block)):
            w = (rng.standard_normal((n, k)) * 0.5).astype(np.float32)
            x = rng.standard_normal((m, k)).astype(np.float32)
            x[m // 2, k // 3] = np.inf
            bias = rng.standard_normal(n).astype(np.float32) if m % 2 else None
            q = F.quantize_weight_blocks(w, bits=bits, block=block, symmetric=symmetric)
            mnnpy._core.set_int8_amx(True, 1, 64)  # rows short of a tile too
            tiles = np.asarray(F.weight_quant_matmul(x, q, bias, int8_activations=True).read())
            mnnpy._core.set_int8_amx(False, 16, 64)
            vectors = np.asarray(F.weight_quant_matmul(x, q, bias, int8_activations=True).read())
            np.testing.assert_array_equal(tiles, vectors, err_msg=f"m={m} n={n} k={k}")
            assert np.isnan(tiles[m // 2]).all() and np.isfinite(np.delete(tiles, m // 2, axis=0)).all()
            exact, bound = int8_activation_reference(np.delete(x, m // 2, axis=0), q, bias)
            assert np.all(np.abs(np.delete(tiles, m // 2, axis=0) - exact) <= bound)
    finally:
        mnnpy._core.set_int8_amx(*previous)
