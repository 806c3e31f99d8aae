"""Shared test helpers: random arrays of every dtype, per-dtype tolerances, child processes."""
import contextlib
import os

import numpy as np

ALL_DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64"]
FLOAT_DTYPES = ["float16", "float32", "float64"]
INT_DTYPES = ["int8", "uint8", "int16", "int32", "int64"]

# Relative tolerance for results computed in one dtype (transcendental functions may differ
# from NumPy's by a few units in the last place).
RTOL = {"float16": 2e-3, "float32": 2e-6, "float64": 1e-13}
RTOL_TRANSCENDENTAL = {"float16": 2e-3, "float32": 1e-5, "float64": 1e-12}


def random_array(rng, shape, dtype, low=-10, high=10):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(low, info.min), min(high, info.max) + 1, size=shape).astype(dtype)
    return (rng.random(shape) * (high - low) + low).astype(dtype)


def product_error_bound(a, b, unit_roundoff):
    """Elementwise bound on |fl(a @ b) - a @ b| for sums of K products rounded with the given unit
    roundoff (2**-24 for float32) in any order: gamma_K * (|a| @ |b|), gamma_K = K u / (1 - K u)."""
    k = np.shape(a)[-1]
    gamma = k * unit_roundoff / (1 - k * unit_roundoff)
    return gamma * (np.abs(np.asarray(a, np.float64)) @ np.abs(np.asarray(b, np.float64)))


def assert_same(ours, expected, rtol=None, atol=0.0, check_dtype=True):
    ours = np.asarray(ours)
    expected = np.asarray(expected)
    if check_dtype:
        assert ours.dtype == expected.dtype, f"dtype {ours.dtype} != NumPy's {expected.dtype}"
    assert ours.shape == expected.shape, f"shape {ours.shape} != NumPy's {expected.shape}"
    if expected.dtype.kind == "f":
        tol = RTOL[str(expected.dtype)] if rtol is None else rtol
        np.testing.assert_allclose(ours.astype(np.float64), expected.astype(np.float64), rtol=tol, atol=atol,
                                   equal_nan=True)
    else:
        np.testing.assert_array_equal(ours, expected)


def blocked(x):
    """NumPy's [N, C, H, W] -> the blocked channel layout [N, C/8, H, W, 8]."""
    n, c, h, w = x.shape
    return x.reshape(n, c // 8, 8, h, w).transpose(0, 1, 3, 4, 2).copy()


def unblocked(y):
    """NumPy's [N, C/8, H, W, 8] -> [N, C, H, W]."""
    n, cb, h, w, b = y.shape
    return y.transpose(0, 1, 4, 2, 3).reshape(n, cb * b, h, w)


def same_as_numpy(call, *, rtol=None):
    """Runs ``call(module)`` with NumPy and with mnnpy.numpy: equal results (tuples and lists
    element-wise), or exceptions of the same type. Returns mnnpy's result (None on an error)."""
    import pytest

    import mnnpy.numpy as mnp
    from mnnpy import Var
    try:
        expected = call(np)
    except Exception as e:  # noqa: BLE001  (any NumPy error must be mirrored)
        with pytest.raises(type(e)):
            ours = call(mnp)
            if isinstance(ours, Var):
                ours.read()
        return None
    ours = call(mnp)
    if isinstance(expected, (tuple, list)):
        assert isinstance(ours, (tuple, list)) and len(ours) == len(expected)
        for o, x in zip(ours, expected):
            assert_same(o, x, rtol=rtol)
    else:
        assert_same(ours, expected, rtol=rtol)
    return ours


def python_env(**extra):
    """The environment for a child Python process that imports the same mnnpy as these tests
    (the installed package, or a checkout with MNNPY_CORE_DIR during development), plus ``extra``."""
    import mnnpy
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(mnnpy.__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = package_parent + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update({k: str(v) for k, v in extra.items()})
    return env


def under_address_sanitizer():
    """Whether AddressSanitizer's run-time is preloaded (scripts/sanitize.sh): it reserves terabytes
    of address space for its shadow memory, so no process of it starts under a small RLIMIT_AS."""
    return any(name in os.environ.get("LD_PRELOAD", "") for name in ("libasan", "libclang_rt.asan"))


def profiled(build, backend):
    """The values of the Vars build() returns, computed on `backend`, and the run's profile."""
    import mnnpy
    mnnpy._core.set_executor_option("profile", True)
    try:
        with mnnpy.backend(backend):
            values = mnnpy.eval(*build())
    finally:
        mnnpy._core.set_executor_option("profile", False)
    return values, mnnpy._core.last_profile()


def profiled_forward(module, inputs):
    """module.forward(inputs)'s first output, read, and the run's compute steps."""
    import mnnpy
    mnnpy._core.set_executor_option("profile", True)
    try:
        out = module.forward(inputs)
        value = (out[0] if isinstance(out, (list, tuple)) else out).read()
        steps = compute_steps(mnnpy._core.last_profile())
    finally:
        mnnpy._core.set_executor_option("profile", False)
    return value, steps


def compute_steps(profile):
    """A profile's steps that compute (its copies between backends left out)."""
    return [s for s in profile if not s["op"].startswith("Copy(")]


def tiny_onnx_model(path, rng):
    """An ONNX model y = relu(x @ w + b), x of shape [4, 12], saved at `path`; returns w and b."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    w = random_array(rng, (12, 6), "float32", -1, 1)
    b = random_array(rng, (6,), "float32", -1, 1)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["s"]),
             helper.make_node("Relu", ["s"], ["y"])]
    graph = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 12])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 6])],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return w, b


@contextlib.contextmanager
def simd_target(name):
    """Runs the block on SIMD target `name`, then gives the process its own target back."""
    import mnnpy
    previous = mnnpy.get_simd_target()
    mnnpy.set_simd_target(name)
    try:
        yield
    finally:
        mnnpy.set_simd_target(previous)


def bf16_product_bound(abs_sum, k):
    """The error bound of a product of depth k from bf16-rounded inputs summed in float32, for
    S = abs_sum = sum |a_k b_k| (test_bf16.py's docstring derives it)."""
    return (2 * 2.0 ** -8 + 2.0 ** -16 + 1.01 * k * 2.0 ** -24) * abs_sum


def assert_within_bf16_bound(got, a, b):
    """got = a @ b computed from bf16-rounded operands: within bf16_product_bound of float64's."""
    exact = a.astype(np.float64) @ b.astype(np.float64)
    abs_sum = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    err = np.abs(got.astype(np.float64) - exact)
    limit = bf16_product_bound(abs_sum, a.shape[1])
    assert np.all(err <= limit), f"worst error {np.max(err - limit):.3g} over the bound"
