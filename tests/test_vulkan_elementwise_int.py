"""Elementwise programs with int32, int64 and bool values on the Vulkan backend (the typed shader,
shaders/elementwise_typed_body.glsl): every integer and bool code, every cast between float32,
int32, int64 and bool, comparisons, predicates and Where, bit for bit against the CPU backend
(whose meaning of each code is the contract, mnnpy/elementwise_program.h) and against NumPy
wherever NumPy defines the result. The arithmetic is exact, so everything must match exactly:
the edge values (MIN, MAX, 0, -1, shift counts past the width, NaN, +-inf, out-of-range floats)
included. Bool outputs are packed 4 to a word on the device, so lengths around word boundaries
(1, 3, 5, 4k + 1) and outputs spanning several workgroups are covered."""
import numpy as np
import pytest

import mnnpy
from mnnpy import _core
from mnnpy import expr as F

from helpers import compute_steps, profiled


def on_cpu(build):
    with mnnpy.backend("cpu"):
        return mnnpy.eval(*build())


def same_bits(got, expected):
    expected = np.asarray(expected)
    assert got.dtype == expected.dtype and got.shape == expected.shape, (got.dtype, got.shape, expected.dtype, expected.shape)
    assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(expected).tobytes(), (got, expected)


def on_vulkan_like_cpu(build):
    """build()'s values on Vulkan, checked bit for bit against the CPU backend's and to have run
    every computing step on the device (none falls back)."""
    ours, profile = profiled(build, "vulkan")
    expected = on_cpu(build)
    for got, want in zip(ours, expected):
        same_bits(got, want)
    steps = compute_steps(profile)
    assert all(s["backend"] == "vulkan" and not s["fallback"] for s in steps), steps
    return ours


def edges(dtype):
    info = np.iinfo(dtype)
    return np.array([info.min, info.min + 1, -(2 ** 31), -(2 ** 31) + 1, -65537, -64, -33, -7, -2, -1, 0, 1, 2, 3, 6, 7,
                     31, 32, 33, 63, 64, 65, 65536, 2 ** 31 - 1, info.max - 1, info.max], np.int64).astype(dtype)


def int_values(rng, dtype, shape):
    """Random values of `dtype`: a third full-range, a third small, a third edge values."""
    n = int(np.prod(shape))
    info = np.iinfo(dtype)
    pick = rng.integers(0, 3, n)
    full = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    small = rng.integers(-40, 41, n).astype(dtype)
    edge = rng.choice(edges(dtype), n)
    return np.where(pick == 0, full, np.where(pick == 1, small, edge)).astype(dtype).reshape(shape)


def bool_values(rng, shape):
    return rng.integers(0, 2, shape).astype(bool)


SPECIAL_FLOATS = np.array([0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 0.5, -0.5, 0.7, -0.7, 1.5, -1.5, 2.5, -1.0,
                           1e-45, -1e-45, 2147483520.0, 2147483648.0, -2147483648.0, -2147483904.0, 3e9, -3e9,
                           9.223371e18, 9.2233720e18, -9.2233720e18, 1e19, -1e19, 3.4e38, -3.4e38, 16777217.0],
                          np.float32)


def float_values(rng, shape):
    n = int(np.prod(shape))
    values = (rng.standard_normal(n) * 10.0 ** rng.integers(0, 20, n)).astype(np.float32)
    values[: min(n, SPECIAL_FLOATS.size)] = SPECIAL_FLOATS[: min(n, SPECIAL_FLOATS.size)]
    return rng.permutation(values).reshape(shape)


def values_of(rng, dtype, shape):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return bool_values(rng, shape)
    if dtype == np.float32:
        return float_values(rng, shape)
    return int_values(rng, dtype, shape)


# ---------------------------------------------------------------- unary codes
def _signbit(x):
    return np.signbit(x) if x.dtype.kind == "f" else x < 0


# op: (NumPy's function where it defines the op's meaning, or None: the CPU alone is the reference)
INT_UNARY = {
    "Neg": np.negative, "Abs": np.abs, "Sign": np.sign, "Square": np.square,
    "Reciprocal": lambda x: np.where(np.abs(x.astype(np.int64)) == 1, x, 0).astype(x.dtype),  # 1 / x truncated, 0 for 0
    "Relu": lambda x: np.maximum(x, 0), "Relu6": lambda x: np.clip(x, 0, 6), "BitwiseNot": np.invert,
    "Floor": lambda x: x, "Identity": lambda x: x,  # Ceil, Trunc: the same copy
    "LogicalNot": np.logical_not, "IsNan": np.isnan, "IsInf": np.isinf, "IsFinite": np.isfinite, "Signbit": _signbit,
}
BOOL_UNARY = ["LogicalNot", "BitwiseNot", "IsNan", "IsInf", "IsFinite", "Signbit", "Identity"]
FLOAT_PREDICATES = ["LogicalNot", "IsNan", "IsInf", "IsFinite", "Signbit"]


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("op", list(INT_UNARY))
def test_integer_unary_codes(vulkan, rng, op, dtype):
    x = int_values(rng, dtype, (3, 67))
    (ours,) = on_vulkan_like_cpu(lambda: [_core.unary(op, F.const(x))])
    with np.errstate(all="ignore"):
        same_bits(ours, INT_UNARY[op](x))


@pytest.mark.parametrize("op", BOOL_UNARY)
def test_bool_unary_codes(vulkan, rng, op):
    x = bool_values(rng, (5, 13))
    (ours,) = on_vulkan_like_cpu(lambda: [_core.unary(op, F.const(x))])
    expected = {"BitwiseNot": np.invert, "Identity": lambda v: v, "Signbit": lambda v: np.zeros_like(v)}.get(
        op, INT_UNARY.get(op))
    same_bits(ours, expected(x))


@pytest.mark.parametrize("op", FLOAT_PREDICATES)
def test_float_predicates(vulkan, rng, op):
    x = float_values(rng, (7, 9))
    (ours,) = on_vulkan_like_cpu(lambda: [_core.unary(op, F.const(x))])
    same_bits(ours, INT_UNARY[op](x))


# ---------------------------------------------------------------- binary codes
def _numpy_safe(op, a, b, bits):
    """Where NumPy defines `op` as the program does (no division by 0 or MIN / -1, no negative
    powers, shift counts inside the width, no |MIN| in gcd or lcm)."""
    a, b = np.broadcast_arrays(a, b)
    lo = np.iinfo(a.dtype).min
    if op in ("FloorDiv", "Mod", "Fmod"):
        return (b != 0) & ~((a == lo) & (b == -1))
    if op == "Pow":
        return b >= 0
    if op in ("LeftShift", "RightShift"):
        return (b >= 0) & (b < bits)
    if op in ("Gcd", "Lcm"):
        return (a != lo) & (b != lo)
    return np.ones(a.shape, bool)


INT_BINARY = {
    "Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "FloorDiv": np.floor_divide, "Mod": np.remainder,
    "Fmod": np.fmod, "Pow": np.power, "Maximum": np.maximum, "Minimum": np.minimum,  # Fmax, Fmin: the same on ints
    "SquaredDifference": lambda a, b: np.square(np.subtract(a, b)), "BitwiseAnd": np.bitwise_and,
    "BitwiseOr": np.bitwise_or, "BitwiseXor": np.bitwise_xor, "LeftShift": np.left_shift, "RightShift": np.right_shift,
    "Gcd": np.gcd, "Lcm": np.lcm, "Equal": np.equal, "NotEqual": np.not_equal, "Less": np.less,
    "LessEqual": np.less_equal, "Greater": np.greater, "GreaterEqual": np.greater_equal,
    "LogicalAnd": np.logical_and, "LogicalOr": np.logical_or, "LogicalXor": np.logical_xor,
}


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("op", list(INT_BINARY))
def test_integer_binary_codes_with_broadcast(vulkan, rng, op, dtype):
    bits = np.dtype(dtype).itemsize * 8
    a = int_values(rng, dtype, (3, 1, 37))
    b = int_values(rng, dtype, (4, 1))
    if op in ("LeftShift", "RightShift"):
        b = rng.integers(-3, bits + 4, (4, 1)).astype(dtype)
    if op == "Pow":
        a = rng.choice(np.array([-3, -2, -1, 0, 1, 2, 3, 5, 7, 1 << 20], dtype), a.shape)
        b = rng.integers(-4, 70, (4, 1)).astype(dtype)
    (ours,) = on_vulkan_like_cpu(lambda: [_core.binary(op, F.const(a), F.const(b))])
    safe = _numpy_safe(op, a, b, bits)
    with np.errstate(all="ignore"):
        expected = INT_BINARY[op](a, np.where(safe, b, 0))
    np.testing.assert_array_equal(ours[safe], np.asarray(expected)[safe])


BOOL_BINARY = {
    "Add": np.logical_or, "Mul": np.logical_and,  # Maximum, Minimum: or, and as below
    "BitwiseAnd": np.bitwise_and, "BitwiseOr": np.bitwise_or, "BitwiseXor": np.bitwise_xor,
    "Equal": np.equal, "NotEqual": np.not_equal, "Less": np.less, "LessEqual": np.less_equal, "Greater": np.greater,
    "GreaterEqual": np.greater_equal, "LogicalAnd": np.logical_and, "LogicalOr": np.logical_or,
    "LogicalXor": np.logical_xor,
}


@pytest.mark.parametrize("op", list(BOOL_BINARY))
def test_bool_binary_codes(vulkan, rng, op):
    a, b = bool_values(rng, (6, 1, 11)), bool_values(rng, (5, 1))
    (ours,) = on_vulkan_like_cpu(lambda: [_core.binary(op, F.const(a), F.const(b))])
    expected = BOOL_BINARY[op](a, b)
    np.testing.assert_array_equal(ours, expected.astype(ours.dtype))


def test_bool_subtraction_is_refused_as_numpy_refuses_it(vulkan):
    a = np.array([True, False])
    with pytest.raises(TypeError) as ours:
        _core.binary("Sub", F.const(a), F.const(a))
    with pytest.raises(TypeError) as numpy_error:
        np.subtract(a, a)
    assert str(ours.value) == str(numpy_error.value)


@pytest.mark.parametrize("op", ["Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual", "LogicalAnd",
                                "LogicalOr", "LogicalXor"])
def test_float_comparisons_with_nan_and_signed_zeros(vulkan, rng, op):
    a = float_values(rng, (9, 1, 7))
    b = float_values(rng, (1, 5, 7))
    (ours,) = on_vulkan_like_cpu(lambda: [_core.binary(op, F.const(a), F.const(b))])
    same_bits(ours, INT_BINARY[op](a, b))


# ---------------------------------------------------------------- casts
KINDS = [np.float32, np.int32, np.int64, np.bool_]


def numpy_cast_defined(x, to):
    """Where NumPy's cast is defined (float to int: finite and inside the target's range)."""
    to = np.dtype(to)
    if x.dtype.kind != "f" or to.kind not in "iu":
        return np.ones(x.shape, bool)
    info = np.iinfo(to)
    with np.errstate(all="ignore"):
        return np.isfinite(x) & (x.astype(np.float64) > float(info.min) - 1) & (x.astype(np.float64) < float(info.max) + 1)


@pytest.mark.parametrize("to", KINDS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("source", KINDS, ids=lambda d: np.dtype(d).name)
def test_every_cast(vulkan, rng, source, to):
    x = values_of(rng, source, (11, 29))
    if np.dtype(source) == np.int64:  # halfway cases of int64 -> float32's rounding, and int32's range
        x.flat[:8] = [2 ** 53 + 1, (2 ** 24 + 1) << 30, (2 ** 24 + 3) << 30, -((2 ** 24 + 1) << 30), 2 ** 32 + 1,
                      -(2 ** 31) - 1, 2 ** 31, 0x7fffffc0]
    if np.dtype(source) == np.int32:
        x.flat[:4] = [16777217, 16777219, -16777219, 2 ** 31 - 1]

    def build():
        return [F.cast(F.const(x), to)]
    if np.dtype(source) == np.dtype(to):  # no Cast is made
        return
    (ours,) = on_vulkan_like_cpu(build)
    with np.errstate(all="ignore"):
        expected = x.astype(to)
    defined = numpy_cast_defined(x, to)
    np.testing.assert_array_equal(ours[defined], expected[defined])
    if np.dtype(source) == np.float32 and np.dtype(to).kind == "i":
        # Outside NumPy's definition, the CPU's: saturation, NaN to the minimum.
        info = np.iinfo(to)
        rest = x[~defined]
        want = np.where(np.isnan(rest) | (rest < 0), info.min, info.max).astype(to)
        np.testing.assert_array_equal(ours[~defined], want)


def test_casts_round_trip_inside_one_program(vulkan, rng):
    x = float_values(rng, (4, 33))
    m = int_values(rng, np.int64, (33,))

    def build():
        i = F.cast(F.const(x), np.int32)
        wide = F.cast(i, np.int64) * F.const(np.int64(3)) + F.const(m)
        flag = F.logical_xor(F.cast(wide, np.bool_), F.isnan(F.const(x)))
        return [F.cast(F.cast(wide, np.float32) * F.cast(flag, np.float32), np.int32)]
    on_vulkan_like_cpu(build)


def test_long_int32_and_bool_programs(vulkan, rng):
    # Past 8 instructions (the typed shaders of 32 steps), without int64 (the shader Metal has too).
    a, b = int_values(rng, np.int32, (6, 35)), int_values(rng, np.int32, (35,))
    m = bool_values(rng, (6, 1))

    def build():
        x, y = F.const(a), F.const(b)
        mixed = F.floordiv(x * y - x, F.const(np.int32(7))) + _core.binary("Gcd", x, y)
        keep = F.logical_or(F.greater(mixed, y), F.const(m))
        return [F.select(keep, F.cast(mixed, np.float32) * F.const(np.float32(0.5)), F.cast(y, np.float32)),
                F.logical_and(keep, F.less_equal(F.abs(x), F.const(np.int32(1000))))]
    on_vulkan_like_cpu(build)


# ---------------------------------------------------------------- Where, shapes, byte boundaries
@pytest.mark.parametrize("dtype", KINDS, ids=lambda d: np.dtype(d).name)
def test_where_on_every_kind(vulkan, rng, dtype):
    c = bool_values(rng, (3, 1, 10))
    a, b = values_of(rng, dtype, (4, 10)), values_of(rng, dtype, (3, 4, 1))
    (ours,) = on_vulkan_like_cpu(lambda: [F.select(F.const(c), F.const(a), F.const(b))])
    same_bits(ours, np.where(c, a, b))


@pytest.mark.parametrize("n", [1, 3, 4, 5, 9, 257, 3 * 1024 + 1])
def test_bool_outputs_at_every_word_boundary(vulkan, rng, n):
    a = int_values(rng, np.int32, (n,))
    b = int_values(rng, np.int32, (1,))
    m = bool_values(rng, (n,))

    def build():
        below = F.less(F.const(a), F.const(b))
        return [below, F.logical_and(below, F.const(m)), F.logical_not(F.const(m)), F.cast(F.const(m), np.int64)]
    less, both, negated, wide = on_vulkan_like_cpu(build)
    same_bits(less, a < b)
    same_bits(both, (a < b) & m)
    same_bits(negated, ~m)
    same_bits(wide, m.astype(np.int64))


def test_bool_input_broadcast_from_inside_a_word(vulkan, rng):
    m = bool_values(rng, (5, 1, 3))
    x = int_values(rng, np.int64, (5, 7, 3))
    (ours,) = on_vulkan_like_cpu(lambda: [F.select(F.const(m), F.const(x), F.const(np.int64(-1)))])
    same_bits(ours, np.where(m, x, np.int64(-1)))


@pytest.mark.parametrize("shape", [(0,), (0, 5, 1)])
def test_empty_tensors(vulkan, rng, shape):
    a = np.zeros(shape, np.int64)
    ours, _ = profiled(lambda: [F.less(F.const(a), F.const(np.int64(1))), F.cast(F.const(a), np.int32) + 1], "vulkan")
    same_bits(ours[0], np.zeros(shape, bool))
    same_bits(ours[1], np.ones(shape, np.int32))


def test_a_program_with_a_dtype_the_shader_lacks_falls_back_whole(vulkan, rng):
    x = int_values(rng, np.int32, (4, 9))

    def build():
        return [F.cast(F.cast(F.const(x), np.float64) * F.const(np.float64(0.25)), np.int32)]
    (ours,), profile = profiled(build, "vulkan")
    same_bits(ours, on_cpu(build)[0])
    assert [s["backend"] for s in compute_steps(profile) if s["op"].startswith("Fused")] == ["cpu"]


# ---------------------------------------------------------------- the transformers' mask programs
def test_a_bert_attention_mask_program_runs_on_the_device(vulkan, rng):
    mask = bool_values(rng, (3, 17)).astype(np.int64)
    scores = rng.standard_normal((3, 4, 17, 17)).astype(np.float32)

    def build():
        m = _core.reshape(F.const(mask), (3, 1, 1, 17))
        additive = (F.const(np.float32(1)) - F.cast(m, np.float32)) * F.const(np.float32(-10000.0))
        return [F.const(scores) + additive]
    (ours,) = on_vulkan_like_cpu(build)
    expected = scores + (1 - mask.reshape(3, 1, 1, 17).astype(np.float32)) * np.float32(-10000.0)
    # The CPU and the device both fuse the multiply into the add (one rounding): within an ulp of
    # the product, 10000 * 2^-24 relative to it, of NumPy's.
    np.testing.assert_allclose(ours, expected, rtol=0, atol=10000 * 2.0 ** -23)


def test_a_gpt2_causal_mask_program_runs_on_the_device(vulkan, rng):
    s = 13
    rows = np.arange(s, dtype=np.int64).reshape(s, 1)
    cols = np.arange(s, dtype=np.int64).reshape(1, s)
    scores = rng.standard_normal((2, s, s)).astype(np.float32)

    def build():
        allowed = F.less_equal(F.const(cols), F.const(rows))
        return [F.select(allowed, F.const(scores), F.const(np.float32(-np.inf)))]
    (ours,) = on_vulkan_like_cpu(build)
    same_bits(ours, np.where(cols <= rows, scores, np.float32(-np.inf)))
