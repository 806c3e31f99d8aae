"""The executor and runtime: plan cache, passes, threads, Var API, placeholders, bad input."""
import subprocess
import sys
import threading

import numpy as np
import pytest

import mnnpy
from mnnpy import expr as F

from helpers import assert_same, product_error_bound, random_array


def stats():
    return mnnpy._core.executor_stats()


def test_import_loads_only_numpy_besides_the_core():
    code = ("import sys; before = set(sys.modules); import mnnpy; "
            "new = {m.split('.')[0] for m in set(sys.modules) - before}; "
            "print(sorted(new - {'mnnpy', 'numpy'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    extra = [m for m in eval(out) if not m.startswith("_") and m not in sys.stdlib_module_names]
    assert extra == [], f"import mnnpy also loaded {extra}"


def test_runtime_info_and_threads():
    info = mnnpy.runtime_info()
    assert info["version"] == mnnpy.__version__
    assert info["isa"] in ("AVX3_DL", "AVX3", "AVX2", "EMU128", "SCALAR", "AVX3_ZEN4", "AVX3_SPR")
    assert "cpu" in info["backends"]
    mnnpy.set_num_threads(1)
    assert mnnpy.get_num_threads() == 1 and mnnpy.runtime_info()["threads"] == 1
    mnnpy.set_num_threads(2)
    assert mnnpy.get_num_threads() == 2
    with pytest.raises(ValueError, match="at least 1"):
        mnnpy.set_num_threads(0)


def test_plan_is_cached_by_structure_and_shapes(rng):
    a = random_array(rng, (64, 64), "float32")
    b = random_array(rng, (64,), "float32")

    def run(x, y):
        return (F.exp(F.const(x)) * F.const(y) + 1).numpy()

    run(a, b)
    built, hits = stats()["plans_built"], stats()["plan_cache_hits"]
    r = run(a + 1, b * 2)  # new data, same structure and shapes
    assert stats()["plans_built"] == built and stats()["plan_cache_hits"] == hits + 1
    assert_same(r, np.exp(a + 1) * (b * 2) + 1, rtol=1e-5, atol=1e-5)
    run(a[:32], b)  # new shape: a new plan
    assert stats()["plans_built"] == built + 1


def test_plans_that_packed_a_dead_constant_leave_the_cache(rng):
    """A plan whose kernel packed a constant (a MatMul's right-hand weights) is keyed by that
    tensor: once the tensor dies no graph can ask for the plan again, so the next plan built
    drops it with its packed copy, instead of keeping it until 512 newer plans push it out."""
    a = random_array(rng, (8, 16), "float32")
    mnnpy._core.clear_plan_cache()
    kept = []
    for _ in range(5):
        w = random_array(rng, (16, 32), "float32")
        kept.append(F.const(w))
        assert np.all(np.abs(F.matmul(F.const(a), kept[-1]).numpy() - a.astype(np.float64) @ w)
                      <= product_error_bound(a, w, 2.0 ** -24))
    assert stats()["plans_cached"] == 5  # weights alive: every plan may be asked for again
    kept.clear()
    for _ in range(5):
        w = random_array(rng, (16, 32), "float32")
        assert np.all(np.abs(F.matmul(F.const(a), F.const(w)).numpy() - a.astype(np.float64) @ w)
                      <= product_error_bound(a, w, 2.0 ** -24))
    assert stats()["plans_cached"] == 1  # only the last one, whose weights died after it was kept


def test_elementwise_chain_fuses_into_one_kernel(rng):
    a, b, c = (F.const(random_array(rng, (1000,), "float32")) for _ in range(3))
    y = F.tanh(a * b + c) * 0.5 - F.exp(-F.abs(a)) / (c * c + 1)
    y.numpy()
    s = stats()
    assert s["last_kernels"] == 1 and s["last_fused_groups"] == 1
    assert s["last_arena_bytes"] == 0  # no temporaries


def test_fusion_off_gives_same_values(rng):
    a, b = random_array(rng, (3, 100), "float32"), random_array(rng, (100,), "float32")
    expr = lambda: (F.sin(F.const(a)) * F.const(b) + F.const(a) ** 2).numpy()  # noqa: E731
    mnnpy._core.set_executor_option("mul_add", False)  # unfused kernels round the product first
    try:
        fused = expr()
        mnnpy._core.set_executor_option("fusion", False)
        unfused = expr()
        assert stats()["last_kernels"] > 1 and stats()["last_arena_bytes"] > 0
    finally:
        mnnpy._core.set_executor_option("fusion", True)
        mnnpy._core.set_executor_option("mul_add", True)
    np.testing.assert_array_equal(fused, unfused)


def test_common_subexpressions_are_computed_once(rng):
    a, b = F.const(random_array(rng, (50,), "float32")), F.const(random_array(rng, (50,), "float32"))
    y = F.exp(a * b) + F.exp(a * b)  # two separate but equal subgraphs
    r = y.numpy()
    s = stats()
    assert s["last_nodes_after"] < s["last_nodes_before"]
    assert_same(r, 2 * np.exp(a.numpy() * b.numpy()), rtol=1e-5)


def test_dead_code_is_not_run(rng):
    a = F.const(random_array(rng, (10,), "float32"))
    unused = F.exp(a) * 3  # noqa: F841
    y = a + 1
    y.numpy()
    assert stats()["last_kernels"] == 1


def test_placeholder_plans_once_and_folds_constants(rng):
    w = random_array(rng, (16,), "float32")
    x = F.placeholder((4, 16))
    y = F.tanh(x * F.exp(F.const(w)) + F.reduce_sum(F.const(w)))
    assert y.shape == (4, 16) and y.dtype == np.float32
    with pytest.raises(ValueError, match="no value"):
        y.numpy()
    for i in range(3):
        xv = random_array(rng, (4, 16), "float32")
        x.write(xv)
        before = stats()
        r = y.numpy()
        if i == 0:
            assert stats()["last_folded"] >= 1
        else:
            assert stats()["plans_built"] == before["plans_built"]
        assert_same(r, np.tanh(xv * np.exp(w) + w.sum()), rtol=1e-5)


def test_placeholder_write_checks(rng):
    x = F.placeholder((2, 3), dtype=np.float32)
    with pytest.raises(ValueError, match=r"shape \(4,\) to a placeholder of shape \(2, 3\)"):
        x.write(np.zeros(4))
    x.write(np.arange(6).reshape(2, 3))  # converted to the placeholder's dtype
    assert x.numpy().dtype == np.float32
    with pytest.raises(ValueError, match="needs a placeholder"):
        (x + 1).write(np.zeros((2, 3)))


def test_placeholder_rewrites_leave_earlier_values_alone(rng):
    # A written value's bytes may be written again, but only when nothing else reads them.
    x = F.placeholder((64, 64), dtype=np.float32)
    first, second = random_array(rng, (64, 64), "float32"), random_array(rng, (64, 64), "float32")
    x.write(first)
    seen = x.numpy()  # holds the value it read
    same_shape_result = (x + 0).numpy()
    x.write(second)
    assert_same(seen, first)
    assert_same(same_shape_result, first)
    assert_same(x.numpy(), second)
    x.write(np.arange(64 * 64).reshape(64, 64))  # int64 cast into the float32 value
    assert_same(x.numpy(), np.arange(64 * 64, dtype=np.float32).reshape(64, 64))
    kept = (x * 1).numpy()
    with pytest.raises(ValueError, match="shape"):
        x.write(np.zeros((3, 3), np.float32))
    with pytest.raises(TypeError, match="dtype"):
        x.write(np.array(["a"] * 4096).reshape(64, 64))
    assert_same(x.numpy(), kept)  # a refused write keeps the old value


def test_planned_graph_runs_with_new_placeholder_values(rng):
    w = random_array(rng, (16,), "float32")
    x = F.placeholder((4, 16))
    y = F.tanh(x * F.exp(F.const(w)))
    z = F.reduce_sum(y, [1])
    with pytest.raises(ValueError, match="no value"):
        mnnpy._core.PlannedGraph([y, z])
    x.write(random_array(rng, (4, 16), "float32"))
    planned = mnnpy._core.PlannedGraph([y, z])
    for _ in range(3):
        xv = random_array(rng, (4, 16), "float32")
        x.write(xv)
        before = stats()
        ry, rz = planned.run()
        assert stats()["plans_built"] == before["plans_built"]
        assert_same(ry.numpy(), np.tanh(xv * np.exp(w)), rtol=1e-5)
        assert_same(rz.numpy(), np.tanh(xv * np.exp(w)).sum(1), rtol=1e-5)
        assert ry.is_const  # results are fresh values, untouched by later runs
    kept = ry.numpy().copy()
    x.write(random_array(rng, (4, 16), "float32"))
    planned.run()
    assert_same(ry.numpy(), kept)


def test_planned_graph_reads_input_arrays_in_place(rng):
    # Arrays of the input's type are read where they lie; results never share their memory, the
    # arrays are never written, and other arrays (another dtype and shape of as many values, a
    # strided view, a list) are converted as before.
    x = F.placeholder((3, 4), dtype=np.float32)
    for out, expect in ((F.reshape(x, [4, 3]), lambda v: v.reshape(4, 3)), (x * 1.0, lambda v: v),
                        (F.tanh(x), np.tanh)):
        planned = mnnpy._core.PlannedGraph([out], [x])
        for value in (random_array(rng, (3, 4), "float32"), random_array(rng, (3, 8), "float32")[:, ::2],
                      random_array(rng, (12,), "float64"), random_array(rng, (3, 4), "float32").tolist()):
            kept = np.array(value, copy=True)
            got = planned.run([value])[0].numpy()
            assert_same(got, expect(np.asarray(kept, np.float32).reshape(3, 4)), rtol=1e-6)
            if isinstance(value, np.ndarray):
                assert not np.shares_memory(got, value)
                assert_same(np.asarray(value), kept)
    # The identity: the result is a copy of the input, not a view of it.
    planned = mnnpy._core.PlannedGraph([x], [x])
    value = random_array(rng, (3, 4), "float32")
    got = planned.run([value])[0].numpy()
    value[0, 0] += 1
    assert got[0, 0] == value[0, 0] - 1


def test_var_attributes(rng):
    a = F.const(random_array(rng, (2, 3), "float32"))
    a.name = "a"
    y = a * 2
    assert y.op_type == "Mul" and y.inputs[0].name == "a" and y.inputs[0].op_type == "Const"
    assert a.data_format == "NCHW" and y.ndim == 2 and y.size == 6 and len(y) == 2
    assert y.itemsize == 4 and y.nbytes == 24
    x = F.placeholder((2,), data_format=F.NHWC)
    assert x.data_format == "NHWC" and x.op_type == "Input"


def test_fix_as_const_drops_the_subgraph(rng):
    a = random_array(rng, (5,), "float32")
    y = F.exp(F.const(a)) + 1
    y.fix_as_const()
    assert y.op_type == "Const" and y.inputs == []
    assert_same(y.numpy(), np.exp(a) + 1, rtol=1e-6)


def test_array_protocol_and_scalars(rng):
    a = random_array(rng, (3,), "float32")
    v = F.const(a) * 2
    assert_same(np.asarray(v), a * 2)
    assert np.asarray(v, dtype=np.float64).dtype == np.float64
    s = F.reduce_sum(v)
    assert float(s) == pytest.approx(float((a * 2).sum()), rel=1e-6)
    assert int(F.const(np.array(7, np.int32))) == 7
    assert bool(F.const(np.array([1.0])))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(v)
    with pytest.raises(TypeError, match="unsized"):
        len(s)
    assert repr(F.const(np.array([1.0, 2.0], np.float32))) == repr(np.array([1.0, 2.0], np.float32))
    assert "placeholder" in repr(F.placeholder((2,)))


def test_results_are_read_only_so_the_graph_is_never_corrupted(rng):
    a = random_array(rng, (4,), "float32")
    v = F.const(a) + 1
    r = v.numpy()
    with pytest.raises(ValueError):
        r[0] = 100
    assert_same(v.numpy(), a + 1)


def test_user_array_is_copied_not_aliased(rng):
    a = random_array(rng, (4,), "float32")
    v = F.const(a)
    a[:] = 0
    assert not np.all(v.numpy() == 0)


def test_concurrent_python_threads(rng):
    arrays = [random_array(rng, (200_000,), "float32") for _ in range(4)]
    results, errors = {}, []

    def work(i):
        try:
            for _ in range(5):
                results[i] = (F.exp(F.const(arrays[i])) * 2 + F.reduce_sum(F.const(arrays[i]))).numpy()
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert not errors
    for i, a in enumerate(arrays):
        assert_same(results[i], np.exp(a) * 2 + a.sum(dtype=np.float64).astype(np.float32), rtol=1e-5, atol=1e-2)


def test_gil_is_released_during_evaluation(rng):
    # While a long evaluation runs in one thread, another Python thread keeps running.
    a = F.const(random_array(rng, (8_000_000,), "float32"))
    ticks = []
    done = threading.Event()

    def ticker():
        while not done.is_set():
            ticks.append(1)

    t = threading.Thread(target=ticker)
    t.start()
    for _ in range(3):
        (F.sin(a) * F.cos(a) + F.exp(a)).numpy()
    done.set()
    t.join()
    assert len(ticks) > 10


@pytest.mark.parametrize("bad,exc,msg", [
    (np.array(["a", "b"]), TypeError, "dtype"),
    (np.array([1 + 2j]), TypeError, "dtype"),
    (np.zeros(3, np.longdouble), TypeError, "does not support dtype float128"),
    ([[1, 2], [3]], ValueError, ""),
])
def test_bad_constants_raise(bad, exc, msg):
    with pytest.raises(exc, match=msg):
        F.const(bad, dtype=None) if not isinstance(bad, list) else mnnpy._core.const(bad)


def test_bad_arguments_raise():
    a = F.const(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"could not be broadcast together with shapes \(2, 3\) \(4,\)"):
        a + F.const(np.zeros(4, np.float32))
    with pytest.raises(TypeError, match="not understood|does not support"):
        F.cast(a, "float128x")
    with pytest.raises(TypeError, match="boolean subtract"):
        F.const(np.array([True])) - F.const(np.array([False]))
    with pytest.raises(TypeError, match="not supported for the input types"):
        F.bitwise_and(a, a)
    with pytest.raises(ValueError, match="data format"):
        F.const(np.zeros(2), data_format="NCWH")
    with pytest.raises(ValueError, match="unknown op"):
        mnnpy._core.op("NoSuchOp", [a])
    with pytest.raises(ValueError, match="takes 1 inputs, got 2"):
        mnnpy._core.op("Exp", [a, a])
    with pytest.raises(ValueError, match="negative"):
        F.placeholder((2, -3))


def test_very_deep_graphs_build_evaluate_and_release():
    x = F.const(np.zeros(4, np.float32))
    for _ in range(300_000):
        x = x + 1.0
    assert_same(x.numpy(), np.full(4, 300_000, np.float32))
    del x  # releasing the chain must not recurse once per node


def test_op_attributes_are_checked():
    a = F.const(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="unknown kind"):
        mnnpy._core.op("Reduce", [a], {"kind": 7 + 2**32, "first": 0, "count": 1})
    with pytest.raises(ValueError, match="bad target dtype"):
        mnnpy._core.op("Cast", [a], {"to": 99})


def test_streaming_stores_option_gives_same_values(rng):
    a = random_array(rng, (3_000_001,), "float32")
    b = random_array(rng, (3_000_001,), "float32")
    plain = (F.const(a) * F.const(b) - 1).numpy()
    mnnpy._core.set_executor_option("streaming_stores", True)
    try:
        streamed = (F.const(a) * F.const(b) - 1).numpy()
    finally:
        mnnpy._core.set_executor_option("streaming_stores", False)
    np.testing.assert_array_equal(plain, streamed)
    assert_same(plain, a * b - 1)


@pytest.mark.parametrize("n", [1000, 2_100_003])  # the larger one streams its result
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_multiply_add_is_fused_and_rounds_once(rng, dtype, n):
    a, b, c = (random_array(rng, (n,), dtype) for _ in range(3))
    # The product may be the left or the right operand; a broadcast addend is read per tile.
    for expr, ref in [(lambda x, y, z: x * y + z, (a, b, c)), (lambda x, y, z: z + x * y, (a, b, c)),
                      (lambda x, y, z: x * y + z[:1], (a, b, c[:1]))]:
        ours = expr(F.const(a), F.const(b), F.const(c)).numpy()
        x, y, z = ref
        if dtype == "float32":
            # The exact float64 product plus z, rounded once to float32: within an ulp.
            exact = (x.astype(np.float64) * y + z).astype(np.float32)
            assert np.all(np.abs(ours - exact) <= np.spacing(np.abs(exact)))
        # Against NumPy, which rounds the product first: within an ulp of the product.
        numpy_result = x * y + z
        assert np.all(np.abs(ours - numpy_result) <= np.spacing(np.abs(x * y)) + np.spacing(np.abs(numpy_result)))
    mnnpy._core.set_executor_option("mul_add", False)
    try:
        np.testing.assert_array_equal((F.const(a) * F.const(b) + F.const(c)).numpy(), a * b + c)
    finally:
        mnnpy._core.set_executor_option("mul_add", True)


def test_product_used_twice_is_not_fused_away(rng):
    a, b = random_array(rng, (5000,), "float32"), random_array(rng, (5000,), "float32")
    p = F.const(a) * F.const(b)
    ours = (p + F.const(b)) * p
    np.testing.assert_allclose(ours.numpy(), (a * b + b) * (a * b), rtol=1e-5, atol=1e-3)
    integers = random_array(rng, (5000,), "int32")
    x = F.const(integers)
    np.testing.assert_array_equal((x * x + x).numpy(), integers * integers + integers)


def test_plans_with_packed_constants_never_mix_up_weights(rng):
    # Two graphs of one structure whose constant right-hand matrices differ: the kernels pack
    # their weights at plan time, so each must get a plan of its own.
    w1, w2 = random_array(rng, (16, 8), "float32"), random_array(rng, (16, 8), "float32")
    x = F.placeholder((4, 16))
    y1, y2 = F.matmul(x, F.const(w1)), F.matmul(x, F.const(w2))
    for _ in range(2):
        xv = random_array(rng, (4, 16), "float32")
        x.write(xv)
        np.testing.assert_allclose(y1.numpy(), xv @ w1, rtol=1e-5, atol=1e-4)
        np.testing.assert_allclose(y2.numpy(), xv @ w2, rtol=1e-5, atol=1e-4)
    # A placeholder right-hand side is never packed at plan time: new values are used.
    b = F.placeholder((16, 8))
    z = F.matmul(x, b)
    for w in (w1, w2):
        b.write(w)
        np.testing.assert_allclose(z.numpy(), xv @ w, rtol=1e-5, atol=1e-4)


def test_profile_reports_each_step(rng):
    x = F.const(random_array(rng, (32, 64), "float32"))
    w = F.const(random_array(rng, (64, 16), "float32"))
    y = F.relu(F.matmul(x, w)) * 2.0
    mnnpy._core.set_executor_option("profile", True)
    try:
        y.numpy()
    finally:
        mnnpy._core.set_executor_option("profile", False)
    steps = mnnpy._core.last_profile()
    assert [s["op"] for s in steps] == ["MatMul", "Fused(Relu,Mul)"]
    assert steps[0]["flops"] == 2 * 32 * 64 * 16 and steps[0]["scheme"] == "gemm"
    assert steps[1]["shape"] == "(32, 16)" and all(s["seconds"] >= 0 for s in steps)
