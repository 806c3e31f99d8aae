"""The math functions of the Vulkan elementwise shader (shaders/elementwise_math.glsl) against
NumPy and SciPy in float64: every float32 code it knows beyond the arithmetic, over wide random
ranges, the hard cases of each function and the special values.

Bound: the accuracy the project promises for transcendental functions, RTOL_TRANSCENDENTAL
(float32: 1e-5 relative), for every result, near the functions' zeros too (sin and tan near
multiples of pi at any magnitude, log near 1, expm1, log1p, asinh and the like near 0, erfc and
GELU in their far tails). The inputs are exact and the shader keeps relative accuracy there (what
it feeds its polynomials is within a few ulp, its exponentials' arguments exact in two parts), so
no function's conditioning calls for an absolute floor. The one floor is at subnormal results:
Vulkan lets a device flush them to zero, so where the exact result is below FLT_MIN ours may be
anywhere within FLT_MIN of it (and inputs are normal numbers, which no device flushes); GELU is
x Phi(x), whose Phi(x) is subnormal below x = -13 (-10 for the tanh form) while the product is
not, so there the floor is |x| FLT_MIN (an H100 flushes that Phi). Special
values (NaN, +-inf, overflow, the sign of every result, zeros included) must match exactly."""
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.special as sp

import mnnpy
from mnnpy import expr as F
from mnnpy import nn

from helpers import RTOL_TRANSCENDENTAL, compute_steps, product_error_bound, profiled, profiled_forward, random_array

U32 = 2.0 ** -24
RTOL = RTOL_TRANSCENDENTAL["float32"]
FLT_MIN = float(np.finfo(np.float32).tiny)
SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.0, 3.0, -3.0, 1e-30, -1e-30, FLT_MIN,
                    3.4e38, -3.4e38, 88.72, 89.5, -87.3, -103.9, -104.5, 9.1, 10.1, 20.0, 1e5, 1.0001e5, 4096.0, 6.7e7],
                   np.float32)


# Input generators: each (rng, n) -> float32 values.
def uniform(lo, hi):
    return lambda rng, n: rng.uniform(lo, hi, n).astype(np.float32)


def magnitudes(lo, hi, signed=True):
    """|x| log-uniform in [lo, hi], random signs."""
    def make(rng, n):
        x = (10.0 ** rng.uniform(np.log10(lo), np.log10(hi), n)).astype(np.float32)
        return x * rng.choice(np.float32([-1, 1]), n) if signed else x
    return make


def normal_floats(positive=False):
    """Every normal float32 equally likely (random exponent and mantissa bits)."""
    def make(rng, n):
        bits = rng.integers(0x00800000, 0x7f800000, n, dtype=np.uint32)
        if not positive:
            bits |= rng.integers(0, 2, n, dtype=np.uint32) << np.uint32(31)
        return bits.view(np.float32)
    return make


def gelu(x):
    return 0.5 * x * sp.erfc(-x / np.sqrt(2))


def gelu_tanh(x):
    # 0.5 x (1 + tanh(u)) = x sigmoid(2u): the same function without 1 + tanh's cancellation.
    return x * sp.expit(2 * np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))


UNARY = {
    "Expm1": (np.expm1, [uniform(-110, 95), uniform(-1, 1), magnitudes(1e-30, 1)]),
    "Exp2": (np.exp2, [uniform(-160, 130), uniform(-1, 1)]),
    "Log": (np.log, [normal_floats(positive=True), uniform(0.5, 2), uniform(0.99, 1.01)]),
    "Log1p": (np.log1p, [normal_floats(positive=True), uniform(-1, 1), magnitudes(1e-30, 1)]),
    "Log2": (np.log2, [normal_floats(positive=True), uniform(0.5, 2)]),
    "Log10": (np.log10, [normal_floats(positive=True), uniform(0.5, 2)]),
    "Sin": (np.sin, [uniform(-10, 10), magnitudes(1e-20, 1e5), magnitudes(1e5, 3e38), normal_floats()]),
    "Cos": (np.cos, [uniform(-10, 10), magnitudes(1e-20, 1e5), magnitudes(1e5, 3e38), normal_floats()]),
    "Tan": (np.tan, [uniform(-10, 10), magnitudes(1e-20, 1e5), magnitudes(1e5, 3e38)]),
    "Asin": (np.arcsin, [uniform(-1, 1), magnitudes(1e-30, 1)]),
    "Acos": (np.arccos, [uniform(-1, 1), magnitudes(1e-30, 1)]),
    "Atan": (np.arctan, [normal_floats(), uniform(-3, 3)]),
    "Sinh": (np.sinh, [uniform(-95, 95), magnitudes(1e-30, 1)]),
    "Cosh": (np.cosh, [uniform(-95, 95), uniform(-1, 1)]),
    "Tanh": (np.tanh, [uniform(-12, 12), magnitudes(1e-30, 1), normal_floats()]),
    "Asinh": (np.arcsinh, [normal_floats(), uniform(-3, 3), magnitudes(1e-30, 1)]),
    "Acosh": (np.arccosh, [normal_floats(positive=True), uniform(1, 3)]),
    "Atanh": (np.arctanh, [uniform(-1, 1), magnitudes(1e-30, 1)]),
    "Erf": (sp.erf, [uniform(-6, 6), magnitudes(1e-30, 1), normal_floats()]),
    "Erfc": (sp.erfc, [uniform(-6, 11), uniform(-1, 1), normal_floats()]),
    "Gelu": (gelu, [uniform(-15, 15), uniform(-3, 3), magnitudes(1e-30, 1)]),
    "GeluTanh": (gelu_tanh, [uniform(-12, 12), uniform(-3, 3), magnitudes(1e-30, 1)]),
    # The op's definition (mnnpy/elementwise_program.h): log1p(exp(x)), x itself above 20.
    "Softplus": (lambda x: np.where(x > 20, x, np.log1p(np.exp(x))), [uniform(-110, 30), uniform(-3, 3)]),
    "Softsign": (lambda x: x / (1 + np.abs(x)), [normal_floats(), uniform(-3, 3)]),
    "Selu": (lambda x: 1.0507009873554804934 * np.where(x > 0, x, 1.6732632423543772848 * np.expm1(x)),
             [uniform(-100, 100), magnitudes(1e-30, 1)]),
    "Cbrt": (np.cbrt, [normal_floats(), uniform(-8, 8)]),
    # Exp and Sigmoid were in the shader before; they now share its exp.
    "Exp": (np.exp, [uniform(-110, 95), uniform(-1, 1)]),
    "Sigmoid": (sp.expit, [uniform(-110, 110), uniform(-5, 5)]),
}


def pow_near_the_range_ends(rng, n):
    """Bases in [1/2, 2] and near 1 with exponents that take x^y close to overflow and underflow
    (y log2 x up to 128 and down to -150): where log2 x must be exact to about 2^-30."""
    m = n - n // 2
    near_one = 1 + rng.integers(1, 300, m) * rng.choice([-2.0 ** -24, 2.0 ** -23], m)  # a few ulp from 1
    x = np.concatenate([rng.uniform(0.5, 2, n // 2), near_one])
    y = rng.uniform(-152, 129, n) / np.log2(x)
    keep = np.isfinite(y)
    return x[keep].astype(np.float32), y[keep].astype(np.float32)


def pairs(make_a, make_b):
    return lambda rng, n: (make_a(rng, n), make_b(rng, n))


def negative_bases_integer_exponents(rng, n):
    return (rng.uniform(-20, 20, n).astype(np.float32), rng.integers(-40, 40, n).astype(np.float32))


BINARY = {
    "Pow": (np.power, [pairs(magnitudes(1e-3, 1e3, signed=False), uniform(-12, 12)),
                       pairs(normal_floats(positive=True), uniform(-3, 3)), pow_near_the_range_ends,
                       negative_bases_integer_exponents]),
    "Atan2": (np.arctan2, [pairs(normal_floats(), normal_floats()), pairs(uniform(-3, 3), uniform(-3, 3))]),
    "Hypot": (np.hypot, [pairs(normal_floats(), normal_floats()), pairs(uniform(-3, 3), uniform(-3, 3))]),
}
# Exact functions: NumPy's float32 bits.
EXACT_BINARY = {"CopySign": np.copysign, "NextAfter": np.nextafter}


def check_against_float64(ours, exact, inputs, floor=FLT_MIN):
    """`ours` (float32) against the float64 `exact`: NaN where it is NaN, infinities and every sign
    equal, the rest within RTOL relative (`floor` absolute where `exact` is below it: FLT_MIN, or
    per element where a subnormal intermediate is scaled up)."""
    with np.errstate(over="ignore"):
        expected = exact.astype(np.float32)
    where = lambda mask: [tuple(x[k] for x in inputs) for k in np.flatnonzero(mask)[:5]]  # noqa: E731
    nan = np.isnan(expected)
    assert np.array_equal(np.isnan(ours), nan), where(np.isnan(ours) != nan)
    inf = np.isinf(expected)
    assert np.array_equal(ours[inf], expected[inf]), where(inf & (ours != expected))
    sign = np.signbit(ours) != np.signbit(expected)
    assert not np.any(sign & ~nan), where(sign & ~nan)
    finite = ~nan & ~inf
    error = np.abs(ours[finite].astype(np.float64) - exact[finite])
    floor = np.broadcast_to(floor, exact.shape)[finite]
    bound = RTOL * np.abs(exact[finite]) + np.where(np.abs(exact[finite]) < floor, floor, 0.0)
    bad = np.zeros(ours.shape, bool)
    bad[finite] = error > bound
    assert not bad.any(), [(x, ours[k], exact[k]) for x, k in zip(where(bad), np.flatnonzero(bad)[:5])]


def fused_on_vulkan(profile):
    steps = compute_steps(profile)
    assert [(s["backend"], s["op"].startswith("Fused")) for s in steps] == [("vulkan", True)], steps


@pytest.mark.parametrize("op", list(UNARY))
def test_unary_functions_within_the_promised_accuracy(vulkan, rng, op):
    reference, generators = UNARY[op]
    x = np.concatenate([make(rng, 3000) for make in generators] + [SPECIAL])
    (ours,), profile = profiled(lambda: [mnnpy._core.unary(op, F.const(x))], "vulkan")
    fused_on_vulkan(profile)
    with np.errstate(all="ignore"):
        exact = reference(x.astype(np.float64))
    # x Phi(x): a flushed subnormal Phi(x) costs up to |x| FLT_MIN.
    floor = np.maximum(np.abs(x.astype(np.float64)), 1.0) * FLT_MIN if op.startswith("Gelu") else FLT_MIN
    check_against_float64(ours, exact, [x], floor)


@pytest.mark.parametrize("op", list(BINARY))
def test_binary_functions_within_the_promised_accuracy(vulkan, rng, op):
    reference, generators = BINARY[op]
    made = [make(rng, 3000) for make in generators]
    # Every pair of special values, as C and NumPy define them (pow's dozen cases included).
    a = np.concatenate([m[0] for m in made] + [np.repeat(SPECIAL, SPECIAL.size)])
    b = np.concatenate([m[1] for m in made] + [np.tile(SPECIAL, SPECIAL.size)])
    (ours,), profile = profiled(lambda: [mnnpy._core.binary(op, F.const(a), F.const(b))], "vulkan")
    fused_on_vulkan(profile)
    with np.errstate(all="ignore"):
        exact = reference(a.astype(np.float64), b.astype(np.float64))
    check_against_float64(ours, exact, [a, b])


@pytest.mark.parametrize("op", list(EXACT_BINARY))
def test_copysign_and_nextafter_give_numpys_bits(vulkan, rng, op):
    make = normal_floats()
    a = np.concatenate([make(rng, 3000), np.repeat(SPECIAL, SPECIAL.size)])
    b = np.concatenate([make(rng, 1000), a[:2000], np.tile(SPECIAL, SPECIAL.size)])  # a == b too
    (ours,), profile = profiled(lambda: [mnnpy._core.binary(op, F.const(a), F.const(b))], "vulkan")
    fused_on_vulkan(profile)
    expected = EXACT_BINARY[op](a, b)
    same = (ours.view(np.uint32) == expected.view(np.uint32)) | (np.isnan(ours) & np.isnan(expected))
    assert same.all(), [(a[k], b[k], ours[k], expected[k]) for k in np.flatnonzero(~same)[:5]]


def test_sin_cos_and_tan_keep_relative_accuracy_at_the_floats_nearest_multiples_of_half_pi(vulkan, rng):
    # Below 1e5 (the shader's Cody-Waite range): the floats nearest k pi/2 and their neighbours,
    # for the k whose nearest float comes closest (|x - k pi/2| down to ~1e-9).
    k = np.arange(1, 63662, dtype=np.float64)
    near = (k * np.pi / 2).astype(np.float32)
    closest = near[np.argsort(np.abs(near - k * np.pi / 2))[:3000]]
    small = np.concatenate([closest, np.nextafter(closest, np.float32(np.inf)), np.nextafter(closest, np.float32(0))])
    # Beyond (Payne-Hanek in integers): of many random large floats, those nearest a zero of sin
    # or of cos.
    big = rng.integers(0x47c35000, 0x7f800000, 2_000_000, dtype=np.uint32).view(np.float32)
    big64 = big.astype(np.float64)
    large = np.concatenate([big[np.argsort(np.abs(np.sin(big64)))[:2000]], big[np.argsort(np.abs(np.cos(big64)))[:2000]]])
    x = np.concatenate([small, large, -small, -large])
    for op, reference in (("Sin", np.sin), ("Cos", np.cos), ("Tan", np.tan)):
        (ours,), profile = profiled(lambda: [mnnpy._core.unary(op, F.const(x))], "vulkan")
        fused_on_vulkan(profile)
        check_against_float64(ours, reference(x.astype(np.float64)), [x])


@pytest.mark.parametrize("shape", [(0, 4), (1, 1), (3, 5, 7), (300, 7)])
def test_shapes_and_broadcast_exponents(vulkan, rng, shape):
    # Pow with a 0-d exponent, as models spell x^3 or x^0.5: one program with the constant broadcast.
    x = random_array(rng, shape, "float32", -4, 4)
    for exponent in (np.float32(3), np.float32(0.5), np.float32(-1.5)):
        (ours,), profile = profiled(lambda: [F.pow(F.const(x), F.const(exponent))], "vulkan")
        with np.errstate(invalid="ignore"):
            exact = np.power(x.astype(np.float64), np.float64(exponent))
        assert ours.shape == shape
        check_against_float64(ours.ravel(), exact.ravel(), [x.ravel()])
        if x.size:
            fused_on_vulkan(profile)


def test_programs_of_several_math_functions_run_in_order_as_one_step(vulkan, rng):
    # The shader reaches its math functions in segments, one per such (heavy) instruction: six of
    # them between ordinary steps, consecutive ones, values carried over several segments, heavy
    # first and last. Every intermediate value has one use, so each expression is one program.
    # CopySign and NextAfter are exact, and so are the ordinary steps here (no product feeds a sum,
    # so nothing becomes a MulAdd): NumPy's float32 bits.
    a, b, c = (random_array(rng, (37, 29), "float32", -3, 3) for _ in range(3))

    def programs(a, b, c, ops):
        left = ops.copysign(ops.nextafter(ops.abs(a), b) - c, b) * c
        right = ops.nextafter(ops.nextafter(ops.copysign(a, c), b), a - c)
        return [ops.maximum(left, right) * ops.minimum(ops.nextafter(b, c), a), ops.nextafter(ops.copysign(a, b), c)]

    def build():
        return programs(*(F.const(v) for v in (a, b, c)), SimpleNamespace(
            abs=F.abs, maximum=F.maximum, minimum=F.minimum, copysign=lambda p, q: mnnpy._core.binary("CopySign", p, q),
            nextafter=lambda p, q: mnnpy._core.binary("NextAfter", p, q)))

    ours, profile = profiled(build, "vulkan")
    steps = compute_steps(profile)
    assert [(s["backend"], s["op"].startswith("Fused")) for s in steps] == [("vulkan", True)] * 2, steps
    assert sorted(s["op"].count("NextAfter") + s["op"].count("CopySign") for s in steps) == [2, 6], steps
    expected = programs(a, b, c, SimpleNamespace(abs=np.abs, maximum=np.maximum, minimum=np.minimum,
                                                 copysign=np.copysign, nextafter=np.nextafter))
    for o, e in zip(ours, expected):
        assert o.tobytes() == e.tobytes()


def test_a_math_function_after_a_multiply_add(vulkan, rng):
    # gelu(x * w + b): the multiply-add is rounded once (float64 shader), gelu within RTOL of its
    # exact value at that rounded argument.
    x, w, b = (random_array(rng, (64, 33), "float32", -3, 3) for _ in range(3))
    (ours,), profile = profiled(lambda: [F.gelu(F.const(x) * F.const(w) + F.const(b))], "vulkan")
    fused_on_vulkan(profile)
    s = (x.astype(np.float64) * w + b).astype(np.float32).astype(np.float64)  # one rounding
    check_against_float64(ours, gelu(s), [x, w, b])


def gelu_onnx_model(path, rng, approximate=None):
    """y = GELU(x @ w + b) with x of shape [6, 10]: as exporters spell the exact GELU (Div, Erf, Add,
    Mul, Mul), or as ONNX's Gelu op (opset 20) with `approximate`."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    w = random_array(rng, (10, 16), "float32", -1, 1)
    b = random_array(rng, (16,), "float32", -1, 1)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["s"])]
    if approximate is None:
        nodes += [helper.make_node("Div", ["s", "sqrt2"], ["d"]), helper.make_node("Erf", ["d"], ["e"]),
                  helper.make_node("Add", ["e", "one"], ["p"]), helper.make_node("Mul", ["s", "p"], ["q"]),
                  helper.make_node("Mul", ["q", "half"], ["y"])]
        opset = 13
    else:
        nodes += [helper.make_node("Gelu", ["s"], ["y"], approximate=approximate)]
        opset = 20
    constants = {"w": w, "b": b, "sqrt2": np.float32(np.sqrt(2)), "one": np.float32(1), "half": np.float32(0.5)}
    graph = helper.make_graph(nodes, "gelu", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6, 10])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [6, 16])],
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in constants.items()])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), path)
    return w, b


@pytest.mark.parametrize("approximate", [None, "none", "tanh"])
def test_gelu_of_an_onnx_model_is_one_fused_step_on_vulkan(vulkan, tmp_path, rng, approximate):
    path = str(tmp_path / "gelu.onnx")
    w, b = gelu_onnx_model(path, rng, approximate)
    x = random_array(rng, (6, 10), "float32", -2, 2)
    with mnnpy.backend("cpu"):
        module = nn.load_module_from_file(path, backend="vulkan")
        ours, steps = profiled_forward(module, x)
    assert {s["backend"] for s in steps} == {"vulkan"}, steps
    fused = [s["op"] for s in steps if s["op"].startswith("Fused")]
    assert len(fused) == 1 and "Gelu" in fused[0], steps
    # s = x @ w + b is a sum of 11 products in any order ([x, 1] @ [w; b]): within gamma_11 of the
    # exact one. GELU's slope stays below 1.13 (GeluTanh's below 1.14), so the result is within
    # RTOL of GELU at the rounded s, plus 1.14 times s's error.
    xa, wa = np.hstack([x, np.ones((6, 1), np.float32)]), np.vstack([w, b[None]])
    s = xa.astype(np.float64) @ wa.astype(np.float64)
    exact = gelu_tanh(s) if approximate == "tanh" else gelu(s)
    bound = RTOL * (np.abs(exact) + 1.14 * product_error_bound(xa, wa, U32)) + 1.14 * product_error_bound(xa, wa, U32)
    assert np.all(np.abs(ours - exact) <= bound)


def test_every_float_operation_of_the_elementwise_shaders_is_precise():
    # The exact two-sum and two-product (and MulAdd's single rounding) need every float32
    # product and sum left unfused: `precise` must reach each of them (arithmetic written in a
    # return statement or a call's argument outside a precise assignment would not be, and the
    # optimizer then forms fma).
    # The shaders are compiled here as the build compiles them (native/CMakeLists.txt), by the
    # glslc and spirv-dis that scripts/setup.sh installs.
    import re
    import shutil
    import subprocess
    import tempfile
    from pathlib import Path
    folder = Path(__file__).resolve().parents[1] / "native" / "src" / "backend" / "vulkan" / "shaders"
    sources = sorted(folder.glob("elementwise*.comp"))
    if not sources or shutil.which("glslc") is None or shutil.which("spirv-dis") is None:
        pytest.skip("needs the shader sources, glslc and spirv-dis (scripts/setup.sh installs them)")
    for source in sources:
        with tempfile.TemporaryDirectory() as out:
            shader = Path(out) / (source.stem + ".spv")
            subprocess.run(["glslc", "--target-env=vulkan1.1", "-O", "-Werror", "-o", str(shader), str(source)], check=True)
            text = subprocess.run(["spirv-dis", "--raw-id", str(shader)], capture_output=True, text=True, check=True).stdout
        precise = set(re.findall(r"OpDecorate %(\d+) NoContraction", text))
        ops = re.findall(r"%(\d+) = (OpFMul|OpFAdd|OpFSub|OpFDiv|OpVectorTimesScalar|OpExtInst %\d+ %\d+ Fma)\b", text)
        assert ops and not [op for op in ops if op[0] not in precise or "Fma" in op[1]], source.name
