"""Precision (MNN's normal / high / low): how it is chosen (mnnpy.set_precision, with
mnnpy.precision(...), expr.set_global_executor_config, a runtime manager's "precision" for a
module), that plans are made per precision on a device backend and once on the CPU, and the
Vulkan MatMul at "low": operands rounded to nearest float16, float32 sums, within the bound that
arithmetic gives against float64 NumPy; at "normal" and "high" the float32 SGEMM as before.

Derivation of the bound at "low": each operand x becomes h(x) with |h(x) - x| <= u |x| + eta,
u = 2^-11 (float16's unit roundoff, rounding to nearest) and eta = 2^-14 (below float16's
smallest normal a device may flush to zero). Products of two float16 values are exact in
float32, so |h(a) h(b) - a b| <= (2u + u^2)|a||b| + eta (1 + u)(|a| + |b|) + eta^2, and K of
them summed in float32 in any order add at most gamma_K (u32 = 2^-24) times the sum of
|h(a)||h(b)| <= ((1 + u)|a| + eta)((1 + u)|b| + eta)."""
import subprocess
import sys
import threading

import numpy as np
import pytest

import mnnpy
import mnnpy.numpy as mp
from mnnpy import expr as F
from mnnpy import nn

from helpers import (assert_within_bf16_bound, compute_steps, product_error_bound, python_env, random_array,
                     tiny_onnx_model)

U16 = 2.0**-11  # float16's unit roundoff
ETA16 = 2.0**-14  # float16's smallest normal: the most a flushed subnormal loses
U32 = 2.0**-24


@pytest.fixture(autouse=True)
def normal_precision_after():
    """Every test leaves the process-wide precision as it found it ("normal")."""
    yield
    mnnpy.set_precision("normal")


def half_product_bound(a, b):
    """Elementwise bound on |ours - a @ b| for a @ b with both operands rounded to float16 and the
    products summed in float32 (module docstring)."""
    a, b = np.abs(np.asarray(a, np.float64)), np.abs(np.asarray(b, np.float64))
    k = a.shape[-1]
    gamma = k * U32 / (1 - k * U32)
    ones_a, ones_b = np.ones(a.shape[:-2] + (1, k)), np.ones(b.shape[:-2] + (k, 1))
    rounding = ((2 * U16 + U16**2) * (a @ b) + ETA16 * (1 + U16) * (a @ ones_b + ones_a @ b) + k * ETA16**2)
    return rounding + gamma * (((1 + U16) * a + ETA16) @ ((1 + U16) * b + ETA16))


def device_description():
    return mnnpy.runtime_info()["devices"]["vulkan"]


def low_scheme_prefix():
    """The scheme the Vulkan MatMul takes at "low" on this device: cooperative matrices where it
    reports their 16x16x16 shape (unless MNNPY_VULKAN_COOPMAT=0), float16 tiles where it has
    float16 arithmetic, else the float32 SGEMM."""
    description = device_description()
    if "cooperative matrices" in description and "16x16x16" in description:
        return "hgemm coopmat "
    return "hgemm " if ", float16" in description else "sgemm "


def matmul_profiled(a, b, transpose_a=False, transpose_b=False):
    """a @ b (op() by the transposes; vectors as NumPy's matmul takes them) in one plan; its value
    and its MatMul steps' profile rows."""
    product = (mp.matmul(a, b) if a.ndim == 1 or b.ndim == 1
               else F.matmul(F.const(a), F.const(b), transpose_a, transpose_b))
    mnnpy._core.set_executor_option("profile", True)
    try:
        (ours,) = mnnpy.eval(product)
    finally:
        mnnpy._core.set_executor_option("profile", False)
    return ours, [row for row in mnnpy._core.last_profile() if row["op"] == "MatMul"]


def plans_built():
    return mnnpy._core.executor_stats()["plans_built"]


# ---------------------------------------------------------------- choosing the precision
def test_set_precision_and_the_context_restore_it():
    assert mnnpy.get_precision() == "normal"
    mnnpy.set_precision("LOW")
    assert mnnpy.get_precision() == "low"
    mnnpy.set_precision(1)  # MNN's numbers: 0 normal, 1 high, 2 low
    assert mnnpy.get_precision() == "high"
    with mnnpy.precision(2) as chosen:
        assert chosen == "low" and mnnpy.get_precision() == "low"
    assert mnnpy.get_precision() == "high"
    with pytest.raises(RuntimeError, match="inside"):
        with mnnpy.precision("normal"):
            raise RuntimeError("inside")
    assert mnnpy.get_precision() == "high"


@pytest.mark.parametrize("bad, error, message", [("lowest", ValueError, "unknown precision 'lowest'"),
                                                 (4, ValueError, "unknown precision 4"),
                                                 (0.5, TypeError, "precision must be a name"),
                                                 (True, TypeError, "precision must be a name")])
def test_unknown_precisions_raise(bad, error, message):
    for choose in (mnnpy.set_precision, lambda p: nn.create_runtime_manager(({"precision": p},)),
                   lambda p: F.set_global_executor_config(F.CPU, p, None)):
        with pytest.raises(error, match=message):
            choose(bad)
    with pytest.raises(ValueError, match="unknown precision 'fast'"):
        mnnpy._core.set_thread_precision("fast")
    assert mnnpy.get_precision() == "normal"


def test_mnn_executor_config_sets_the_precision():
    threads = mnnpy.get_num_threads()
    try:
        F.set_global_executor_config(F.Backend.CPU, 2, None)
        assert (mnnpy.get_backend(), mnnpy.get_precision()) == ("cpu", "low")
        F.set_global_executor_config("cpu", 0, 1)
        assert mnnpy.get_precision() == "normal"
    finally:
        mnnpy.set_num_threads(threads)


def test_runtime_manager_and_load_arguments_give_a_module_its_precision(tmp_path, rng):
    path = str(tmp_path / "tiny.onnx")
    tiny_onnx_model(path, rng)
    low = nn.create_runtime_manager(({"backend": "cpu", "precision": "Low"},))
    assert low.precision == "low"
    assert nn.create_runtime_manager(({"backend": "cpu"},)).precision == "normal"  # MNN's default
    assert nn.load_module_from_file(path, runtime_manager=low).precision == "low"
    assert nn.load_module_from_file(path, runtime_manager=low, precision_mode="high").precision == "high"
    assert nn.load_module_from_file(path, precision_mode=2).precision == "low"
    assert nn.load_module_from_file(path).precision is None  # follows set_precision at each call


def test_a_thread_choice_stays_on_its_thread():
    from mnnpy import _thread_precision
    seen = {}
    started = threading.Barrier(2)

    def body(name):
        with _thread_precision(name):
            started.wait()  # both threads hold their choices at once
            seen[name] = mnnpy.get_precision()

    threads = [threading.Thread(target=body, args=(name,)) for name in ("low", None)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {"low": "low", None: "normal"}
    assert mnnpy._core.set_thread_precision("") == ""  # nothing left set on this thread


# ---------------------------------------------------------------- plans per precision
def add_graph(rng):
    """x + y on fresh constants: the same plan key each time (no constant is packed)."""
    x, y = (random_array(rng, (5, 7), "float32", -1, 1) for _ in range(2))
    return F.const(x) + F.const(y), x + y


def test_device_plans_are_made_per_precision_and_cpu_plans_once(test_backend, rng):
    mnnpy._core.clear_plan_cache()
    # A CPU with a bf16 path (AMX-BF16 or AVX512_BF16) computes "low" in bf16: plans of its own.
    cpu_low = 0 if mnnpy.runtime_info()["bf16"] == "none" else 1
    for backend, new_plans in (("test", {"normal": 1, "high": 1, "low": 1}),
                               ("cpu", {"normal": 1, "high": 0, "low": cpu_low})):
        with mnnpy.backend(backend):
            for precision, expected in new_plans.items():
                with mnnpy.precision(precision):
                    for repeat in range(2):  # the second run of each finds its plan
                        before = plans_built()
                        var, expected_value = add_graph(rng)
                        np.testing.assert_array_equal(var.read(), expected_value)  # one float32 add, as NumPy's
                        assert plans_built() - before == (expected if repeat == 0 else 0), (backend, precision)


def test_a_planned_graph_follows_the_precision_of_each_run(test_backend, rng):
    x = F.placeholder((4, 6), dtype=np.float32)
    with mnnpy.backend("test"):
        planned = mnnpy._core.PlannedGraph([F.relu(x) + 1.0], [x])
        value = random_array(rng, (4, 6), "float32", -1, 1)
        before = plans_built()
        planned.run([value])
        assert plans_built() == before
        with mnnpy.precision("low"):
            (ours,) = planned.run([value])
            assert plans_built() == before + 1
        np.testing.assert_array_equal(ours.read(), np.maximum(value, 0) + np.float32(1))


def test_cpu_computes_the_same_at_every_precision_unless_it_has_bf16(rng):
    a, b = random_array(rng, (33, 70), "float32", -1, 1), random_array(rng, (70, 21), "float32", -1, 1)
    normal, rows = matmul_profiled(a, b)
    with mnnpy.precision("low"):
        low, low_rows = matmul_profiled(a, b)
    assert {r["backend"] for r in rows} == {r["backend"] for r in low_rows} == {"cpu"}
    if mnnpy.runtime_info()["bf16"] == "none":
        np.testing.assert_array_equal(low, normal)
        assert [r["scheme"] for r in low_rows] == [r["scheme"] for r in rows]
    else:  # bf16 products there (test_bf16.py): within their bound, float32 at "normal"
        assert_within_bf16_bound(low, a, b)
        exact = a.astype(np.float64) @ b.astype(np.float64)
        assert np.all(np.abs(normal - exact) <= product_error_bound(a, b, 2.0 ** -24))


# ---------------------------------------------------------------- Vulkan MatMul
def check_low(a, b, transpose_a=False, transpose_b=False):
    """a @ b on Vulkan at "low": within the float16 bound of float64 NumPy; returns it and the scheme."""
    with mnnpy.precision("low"):
        ours, rows = matmul_profiled(a, b, transpose_a, transpose_b)
    assert {r["backend"] for r in rows} == {"vulkan"}
    a, b = (np.swapaxes(x, -1, -2) if t else x for x, t in ((a, transpose_a), (b, transpose_b)))
    expected = np.asarray(a, np.float64) @ np.asarray(b, np.float64)
    assert ours.dtype == np.float32 and ours.shape == expected.shape
    # Vectors as the matrices NumPy's matmul makes of them.
    bound = half_product_bound(a[None] if a.ndim == 1 else a, b[:, None] if b.ndim == 1 else b)
    assert np.all(np.abs(ours - expected) <= bound.reshape(expected.shape))
    assert rows[0]["scheme"].startswith(low_scheme_prefix())
    return ours, rows[0]["scheme"]


# Around the 64x64 and 128x128 tiles of C and K's steps of 16 (float16 tiles) and 32 (cooperative
# matrices).
@pytest.mark.parametrize("m, k, n", [(1, 1, 1), (3, 5, 7), (17, 3, 65), (65, 130, 17), (129, 33, 67), (64, 32, 64),
                                     (130, 70, 129), (128, 64, 256), (257, 33, 200)])
def test_low_precision_products_of_odd_sizes(vulkan, rng, m, k, n):
    check_low(random_array(rng, (m, k), "float32", -1, 1), random_array(rng, (k, n), "float32", -1, 1))


@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("transpose_b", [False, True])
@pytest.mark.parametrize("m, k, n", [(67, 35, 70), (140, 35, 131)])
def test_low_precision_transposes(vulkan, rng, transpose_a, transpose_b, m, k, n):
    check_low(random_array(rng, (k, m) if transpose_a else (m, k), "float32"),
              random_array(rng, (n, k) if transpose_b else (k, n), "float32"), transpose_a, transpose_b)


def test_low_precision_broadcast_stacks_and_vectors(vulkan, rng):
    check_low(random_array(rng, (2, 1, 9, 20), "float32", -1, 1), random_array(rng, (3, 20, 11), "float32", -1, 1))
    check_low(random_array(rng, (20,), "float32", -1, 1), random_array(rng, (4, 20, 5), "float32", -1, 1))


# K split where the tiles are few, as at "normal" (the float32 sums of a split meet no more roundings
# than K: test_vulkan_matmul.py): K = 700 in 5 splits (of 144 with the float16 tiles' steps of 16,
# of 160 with the cooperative matrices' steps of 32), K = 600 in 4 of 160.
@pytest.mark.parametrize("a_shape, b_shape, transpose_a, transpose_b, splits", [
    ((33, 700), (700, 20), False, False, 5),
    ((700, 33), (700, 20), True, False, 5),
    ((33, 700), (20, 700), False, True, 5),
    ((700, 33), (20, 700), True, True, 5),
    ((2, 9, 600), (600, 11), False, False, 4),  # a stack of 2
])
def test_low_precision_split_k(vulkan, rng, a_shape, b_shape, transpose_a, transpose_b, splits):
    _, scheme = check_low(random_array(rng, a_shape, "float32", -1, 1), random_array(rng, b_shape, "float32", -1, 1),
                          transpose_a, transpose_b)
    assert scheme.endswith(f" split-k {splits}")


def test_low_precision_empty_and_k_zero(vulkan):
    with mnnpy.precision("low"):
        zeros, rows = matmul_profiled(np.ones((5, 0), np.float32), np.ones((0, 3), np.float32))
        empty, _ = matmul_profiled(np.ones((0, 4), np.float32), np.ones((4, 3), np.float32))
    assert {r["backend"] for r in rows} == {"vulkan"}
    np.testing.assert_array_equal(zeros, np.zeros((5, 3), np.float32))
    assert empty.shape == (0, 3)


def test_operands_round_to_nearest_float16_ties_to_even(vulkan, rng):
    # a (m x 1) times ones (1 x 3): each result is one operand rounded, exactly. Ties between two
    # float16 neighbours go to the even one; random values in float16's normal range besides.
    ulp = 2.0**-10
    ties = [1 + ulp / 2, 1 + 3 * ulp / 2, -(2 + ulp), 1024 + 0.5, 1024 + 1.5, 65504 - 16, 2.0**-14 * (1 + ulp / 2)]
    near = [1 + ulp / 2 + 2.0**-20, 1 + ulp / 2 - 2.0**-20, 0.1, -1 / 3, 3e4, 7e-4]
    magnitudes = np.exp(rng.uniform(np.log(2.0**-14), np.log(6e4), 200)) * rng.choice([-1, 1], 200)
    a = np.array(ties + near + list(magnitudes), np.float32)[:, None]
    ours, _ = check_low(a, np.ones((1, 3), np.float32))
    np.testing.assert_array_equal(ours, np.repeat(a.astype(np.float16).astype(np.float32), 3, axis=1))


@pytest.mark.parametrize("precision", ["normal", "high"])
def test_normal_and_high_keep_the_float32_sgemm(vulkan, rng, precision):
    a, b = random_array(rng, (65, 130), "float32", -1, 1), random_array(rng, (130, 17), "float32", -1, 1)
    default, default_rows = matmul_profiled(a, b)
    with mnnpy.precision(precision):
        ours, rows = matmul_profiled(a, b)
    np.testing.assert_array_equal(ours, default)
    assert [r["scheme"] for r in rows] == [r["scheme"] for r in default_rows] == ["sgemm 64x64x16 4x4"]
    expected = a.astype(np.float64) @ b.astype(np.float64)
    assert np.all(np.abs(ours - expected) <= product_error_bound(a, b, U32))


def test_a_model_loaded_with_low_precision_runs_its_matmul_in_float16(vulkan, tmp_path, rng):
    path = str(tmp_path / "tiny.onnx")
    w, bias = tiny_onnx_model(path, rng)
    low = nn.load_module_from_file(path, runtime_manager=nn.create_runtime_manager(
        ({"backend": "VULKAN", "precision": "low"},)))
    normal = nn.load_module_from_file(path, runtime_manager=nn.create_runtime_manager(({"backend": "VULKAN"},)))
    x = random_array(rng, (4, 12), "float32", -1, 1)
    schemes = {}
    for name, module in (("low", low), ("normal", normal)):
        rows = nn.profile(module, x, repeats=1, print_table=False)
        schemes[name] = [(r["backend"], r["scheme"]) for r in rows if r["op"] == "MatMul"]
    (low_backend, low_scheme), = schemes["low"]
    (normal_backend, normal_scheme), = schemes["normal"]
    assert low_backend == normal_backend == "vulkan"
    assert low_scheme.startswith(low_scheme_prefix()) and normal_scheme.startswith("sgemm ")
    assert mnnpy.get_precision() == "normal"  # the module's choice stayed on its calls
    # relu(x @ w + b): the product within the float16 bound, then one float32 add.
    ours = low.forward(x).read()
    product = x.astype(np.float64) @ w.astype(np.float64)
    error = half_product_bound(x, w)
    bound = error + U32 * (np.abs(x).astype(np.float64) @ np.abs(w) + error + np.abs(bias))
    assert np.all(np.abs(ours - np.maximum(product + bias, 0)) <= bound)
    np.testing.assert_array_equal(normal.forward(x).read(), normal.forward(x).read())


def test_coopmat_switch_leaves_the_float16_tiles(vulkan):
    # MNNPY_VULKAN_COOPMAT=0: no cooperative matrices even where the device has them (here on a
    # GPU that reports them: the float16-tiled SGEMM instead).
    code = ("import mnnpy, numpy as np; from mnnpy import expr as F\n"
            "mnnpy.set_backend('vulkan'); mnnpy.set_precision('low')\n"
            "mnnpy._core.set_executor_option('profile', True)\n"
            "mnnpy.eval(F.matmul(F.const(np.ones((8, 8), np.float32)), F.const(np.ones((8, 8), np.float32))))\n"
            "print(mnnpy.runtime_info()['devices']['vulkan'])\n"
            "print(*[r['scheme'] for r in mnnpy._core.last_profile() if r['op'] == 'MatMul'])")
    out = subprocess.run([sys.executable, "-c", code], env=python_env(MNNPY_VULKAN_COOPMAT="0"), capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    description, scheme = out.stdout.strip().splitlines()[-2:]
    assert "cooperative" not in description
    assert scheme.startswith("hgemm 64x64x16" if ", float16" in description else "sgemm ")


# ---------------------------------------------------------------- Conv2D at "low"
# The implicit GEMM and the 1x1 GEMM take float16 operands at "low" where the device has float16
# arithmetic: per output, K = C/group * kh * kw products of rounded operands (padding taps are an
# exact 0) summed in float32 with the bias, so the matmul bound above holds with |w| and |x| summed
# over each output's window (torch's conv2d of the magnitudes, in float64), K + 1 terms for gamma.
# The depthwise scheme stays float32.


def conv_low_bound(x, w, b, pads, strides, group):
    import torch
    tf = torch.nn.functional

    def conv(xx, ww):
        xt = tf.pad(torch.from_numpy(xx), (pads[1], pads[3], pads[0], pads[2]))
        return tf.conv2d(xt, torch.from_numpy(ww), None, tuple(strides), 0, 1, group).numpy()
    ax, aw = np.abs(x.astype(np.float64)), np.abs(w.astype(np.float64))
    k = w.shape[1] * w.shape[2] * w.shape[3]
    gamma = (k + 1) * U32 / (1 - (k + 1) * U32)
    per_channel = lambda v: v.reshape(v.shape[0], -1).sum(axis=1)[None, :, None, None]  # noqa: E731
    rounding = ((2 * U16 + U16**2) * conv(ax, aw) + ETA16 * (1 + U16) * (conv(ax, np.ones_like(aw)) + per_channel(aw))
                + k * ETA16**2)
    staged_w = (1 + U16) * aw + ETA16
    magnitude = conv((1 + U16) * ax, staged_w) + ETA16 * per_channel(staged_w)
    bias = 0 if b is None else np.abs(b.astype(np.float64))[None, :, None, None]
    return rounding + gamma * (magnitude + bias)


LOW_CONV_LAYERS = [
    pytest.param(1, 13, 7, 9, 20, 3, (1, 1), (1, 1, 1, 1), 1, "conv implicit-gemm", id="3x3"),
    pytest.param(2, 3, 11, 9, 5, 3, (2, 2), (0, 1, 2, 1), 1, "conv implicit-gemm", id="3x3-stride2-asym"),
    pytest.param(1, 8, 11, 13, 6, 3, (1, 1), (1, 1, 1, 1), 2, "conv implicit-gemm", id="3x3-group2"),
    pytest.param(2, 12, 5, 7, 10, 1, (1, 1), (0, 0, 0, 0), 2, "conv 1x1 gemm", id="1x1-group2"),
    pytest.param(2, 9, 20, 20, 130, 3, (1, 1), (1, 1, 1, 1), 1, "conv implicit-gemm", id="many-tiles"),
    pytest.param(2, 64, 5, 5, 20, 3, (1, 1), (0, 1, 1, 0), 1, "conv implicit-gemm", id="split-k"),
    pytest.param(1, 300, 5, 5, 30, 1, (1, 1), (0, 0, 0, 0), 1, "conv 1x1 gemm", id="1x1-split-k"),
]


@pytest.mark.parametrize("n,c,h,w,cout,k,strides,pads,group,scheme", LOW_CONV_LAYERS)
@pytest.mark.parametrize("weights", ["constant", "fed"])
@pytest.mark.parametrize("residual", [False, True], ids=["plain", "residual"])
def test_conv_at_low_precision(vulkan, rng, n, c, h, w, cout, k, strides, pads, group, scheme, weights, residual):
    from mnnpy._expr_conv import _conv2d_nchw
    x = random_array(rng, (n, c, h, w), "float32", -2, 2)
    wt = random_array(rng, (cout, c // group, k, k), "float32", -1, 1)
    b = random_array(rng, (cout,), "float32", -1, 1)
    out_h, out_w = (h + pads[0] + pads[2] - k) // strides[0] + 1, (w + pads[1] + pads[3] - k) // strides[1] + 1
    r = random_array(rng, (n, cout, out_h, out_w), "float32", -4, 4) if residual else None

    def build():
        if weights == "constant":
            wv = F.const(wt)
        else:
            wv = F.placeholder(wt.shape)
            wv.write(wt)
        return [_conv2d_nchw(F.const(x), wv, F.const(b), strides, pads, (1, 1), group, 1,
                             residual=None if r is None else F.const(r))]
    mnnpy._core.set_executor_option("profile", True)
    try:
        with mnnpy.precision("low"):
            (ours,) = mnnpy.eval(*build())
    finally:
        mnnpy._core.set_executor_option("profile", False)
    steps = compute_steps(mnnpy._core.last_profile())
    assert [(s["op"], s["backend"]) for s in steps] == [("Conv2D", "vulkan")]
    half = ", float16" in device_description()
    assert steps[0]["scheme"].startswith(scheme + (" f16 " if half else " 64x") if scheme else "")
    import torch
    xt = torch.nn.functional.pad(torch.from_numpy(x.astype(np.float64)), (pads[1], pads[3], pads[0], pads[2]))
    z = torch.nn.functional.conv2d(xt, torch.from_numpy(wt.astype(np.float64)), torch.from_numpy(b.astype(np.float64)),
                                   strides, 0, 1, group).numpy()
    bound = conv_low_bound(x, wt, b, pads, strides, group)
    if r is not None:  # the residual's float32 add
        z = z + r
        bound = bound + U32 * (np.abs(z) + bound)
    assert np.all(np.abs(ours - np.maximum(z, 0)) <= bound)
    if half:  # float16 rounding shows: float32 operands would be ~2^13 times closer
        assert np.max(np.abs(ours - np.maximum(z, 0))) > 2.0**-18 * np.max(np.abs(z))


def test_depthwise_conv_stays_float32_at_low(vulkan, rng):
    from mnnpy._expr_conv import _conv2d_nchw
    x = random_array(rng, (1, 8, 9, 9), "float32", -2, 2)
    wt = random_array(rng, (8, 1, 3, 3), "float32", -1, 1)
    mnnpy._core.set_executor_option("profile", True)
    try:
        with mnnpy.precision("low"):
            (ours,) = mnnpy.eval(_conv2d_nchw(F.const(x), F.const(wt), None, (1, 1), (1, 1, 1, 1), (1, 1), 8))
    finally:
        mnnpy._core.set_executor_option("profile", False)
    (step,) = compute_steps(mnnpy._core.last_profile())
    assert step["scheme"] == "conv depthwise 3x3"
    with mnnpy.backend("cpu"):
        (theirs,) = mnnpy.eval(_conv2d_nchw(F.const(x), F.const(wt), None, (1, 1), (1, 1, 1, 1), (1, 1), 8))
    # 9 taps in float32 on both sides: each within gamma_9 of the exact sum of |w||x|.
    import torch
    xt = torch.nn.functional.pad(torch.from_numpy(np.abs(x).astype(np.float64)), (1, 1, 1, 1))
    magnitude = torch.nn.functional.conv2d(xt, torch.from_numpy(np.abs(wt).astype(np.float64)), groups=8).numpy()
    assert np.all(np.abs(ours - theirs) <= 2 * 9 * U32 / (1 - 9 * U32) * magnitude)
