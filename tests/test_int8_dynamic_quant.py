"""The run-time quantization of DynamicQuantMatMul's rows (vectorized per SIMD target): the bytes,
scales and zero points of a NumPy reference of the same float32 arithmetic on every usable target,
lengths that are not multiples of the vectors, halves that round to even, and rows holding NaN or
infinity (the same results on every target, the finite rows untouched by them)."""

import numpy as np

import mnnpy
import mnnpy.expr as F
from helpers import simd_target

TARGETS = mnnpy.runtime_info()["simd_targets_usable"]


def _clamp(v, lo, hi):
    """The kernel's clamp: NaN goes to lo."""
    return np.where(v >= lo, np.where(v <= hi, v, np.float32(hi)), np.float32(lo)).astype(np.float32)


def _quantize_rows(x):
    """ONNX's DynamicQuantizeLinear per row in float32: scale = (max(x, 0) - min(x, 0)) / 255 (1
    when 0), zero = round(clamp(-min / scale)), q = clamp(round(clamp(x / scale)) + zero), NaN
    skipped by min and max, rounding half to even."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        finite_or_inf = np.where(np.isnan(x), np.float32(0), x)
        low = np.minimum(finite_or_inf.min(axis=1), np.float32(0))
        high = np.maximum(finite_or_inf.max(axis=1), np.float32(0))
        scale = ((high - low) / np.float32(255)).astype(np.float32)
        scale[scale == 0] = 1
        zero = np.rint(_clamp(-low / scale, 0, 255)).astype(np.float32)
        q = _clamp(np.rint(_clamp(x / scale[:, None], -512, 512)) + zero[:, None], 0, 255)
    return q.astype(np.int64), scale, zero.astype(np.int64)


def _through_identity(x):
    """x's rows quantized and multiplied by an identity weight (scale 1): float32(q - zero) times
    the row's scale, one rounding (the epilogue's fma with no bias)."""
    K = x.shape[1]
    return F.dynamic_quant_matmul(x, F.const(np.eye(K, dtype=np.int8)), np.ones(K, np.float32)).read()


def _expected(x):
    q, scale, zero = _quantize_rows(x)
    with np.errstate(invalid="ignore", over="ignore"):
        return ((q - zero[:, None]).astype(np.float32) * scale[:, None]).astype(np.float32)


def test_quantized_rows_match_the_reference_on_every_target(rng):
    for K in (1, 3, 7, 8, 9, 16, 17, 31, 64, 100, 257):
        x = (rng.standard_normal((11, K)) * rng.uniform(0.01, 100, (11, 1))).astype(np.float32)
        x[1] = np.abs(x[1])  # no negatives: zero point 0
        x[2] = -np.abs(x[2])  # no positives: zero point 255
        x[3] = 0  # scale 1
        for target in TARGETS:
            with simd_target(target):
                np.testing.assert_array_equal(_through_identity(x), _expected(x), err_msg=f"{target} K={K}")


def test_halves_round_to_even(rng):
    # A row spanning 0..255 has scale 1 exactly, so x / scale is x: k + 0.5 rounds to the even
    # neighbour, in the vector body and in the tail alike.
    K = 45
    x = np.tile((np.arange(K) % 13 + 0.5).astype(np.float32), (3, 1))
    x[:, 0], x[:, 1] = 0, 255
    x[2] = -x[2]  # -255..0: zero point 255, negative halves
    q, scale, zero = _quantize_rows(x)
    assert (scale == 1).all() and zero[0] == 0 and zero[2] == 255
    for target in TARGETS:
        with simd_target(target):
            got = _through_identity(x)
            np.testing.assert_array_equal(got, _expected(x), err_msg=target)
            np.testing.assert_array_equal(got[0, 2:], np.rint(x[0, 2:]), err_msg=target)


def test_nan_and_infinity_rows_are_the_same_everywhere(rng):
    x = rng.standard_normal((6, 37)).astype(np.float32)
    x[0, 5] = np.nan
    x[1, 36] = np.nan  # in the scalar tail
    x[2, 3] = np.inf
    x[3, 20] = -np.inf
    x[4, :] = np.nan
    x_before = x.copy()
    results = []
    for target in TARGETS:
        with simd_target(target):
            results.append(_through_identity(x))
    np.testing.assert_array_equal(x, x_before)  # the input is not modified
    for r in results:
        np.testing.assert_array_equal(r, results[0])
    # The finite rows' values are unaffected; a NaN quantizes as the row's minimum would (byte 0).
    expected = _expected(x)
    np.testing.assert_array_equal(results[0][[0, 1, 5]], expected[[0, 1, 5]])
    q, scale, zero = _quantize_rows(x[:2])
    assert q[0, 5] == 0 and q[1, 36] == 0


def test_epilogue_activation_matches_the_separate_op_on_every_target(rng):
    import pytest
    x = (rng.standard_normal((37, 300)) * 3).astype(np.float32)
    x[5, 7] = np.inf  # a row of NaN and infinite outputs: the elementwise kernel's own fallback
    x[30, 0] = -np.inf
    w_q, scales = F.quantize_weight_per_column(rng.standard_normal((300, 45)).astype(np.float32))
    bias = rng.standard_normal(45).astype(np.float32)
    for target in TARGETS:
        with simd_target(target):
            y = F.dynamic_quant_matmul(x, w_q, scales, bias).read()
            for name, op in (("gelu", F.gelu), ("relu", F.relu)):
                got = F.dynamic_quant_matmul(x, w_q, scales, bias, activation=name).read()
                np.testing.assert_array_equal(got, op(F.const(y)).read(), err_msg=f"{target} {name}")
            assert not np.isfinite(y[5]).all() and np.isfinite(y[:5]).all()
    with pytest.raises(ValueError, match="activation"):
        F.dynamic_quant_matmul(x, w_q, scales, bias, activation="tanh")
