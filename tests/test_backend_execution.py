"""How plans run on a device backend: device memory planned like the host arena, stretches of
device steps handed over at once, device memory limits, and models loaded for a backend. The
hidden test backend stands in for a device (its buffers are apart from host memory and it checks
that every tensor it is handed lies inside one of them)."""
import threading

import numpy as np
import pytest

import mnnpy
from mnnpy import expr as F
from mnnpy import nn

from helpers import compute_steps, product_error_bound, profiled, random_array, tiny_onnx_model


def stats():
    return mnnpy._core.executor_stats()


def matmul_chain(x, ws):
    """x @ w0 -> relu -> @ w1 -> relu ...: every step runs on the test backend."""
    h = F.const(x)
    for w in ws:
        h = F.relu(F.matmul(h, F.const(w)))
    return h


def test_device_values_share_one_arena_planned_by_liveness(test_backend, rng):
    x = random_array(rng, (16, 32), "float32", -1, 1)
    ws = [random_array(rng, (32, 32), "float32", -0.3, 0.3) for _ in range(6)]
    expected = matmul_chain(x, ws).read()
    with mnnpy.backend("test"):
        ours = matmul_chain(x, ws).read()
    np.testing.assert_array_equal(ours, expected)
    s = stats()
    # Seven constants copied in and twelve intermediates of 16x32 or 32x32 floats; a buffer per
    # value would take them all, the arena only what is alive at once.
    every_value = 16 * 32 * 4 * 13 + 32 * 32 * 4 * 6
    assert 0 < s["last_device_bytes"] < every_value / 2
    assert s["last_arena_bytes"] == 0  # nothing in between lives on the host


def test_a_stretch_of_device_steps_is_handed_over_once(test_backend, rng):
    x = random_array(rng, (8, 16), "float32", -1, 1)
    ws = [random_array(rng, (16, 16), "float32", -0.5, 0.5) for _ in range(4)]
    with mnnpy.backend("test"):
        matmul_chain(x, ws).read()
    assert stats()["last_device_submits"] == 1


def test_a_cpu_fallback_splits_the_stretch(test_backend, rng):
    x = random_array(rng, (8, 16), "float32", -1, 1)
    w = random_array(rng, (16, 16), "float32", -0.5, 0.5)

    def graph():
        h = F.matmul(F.const(x), F.const(w))
        h = F.sin(h * F.const(np.float32(0.1)))  # Sin: on the CPU
        return [F.matmul(h, F.const(w))]

    (expected,), _ = profiled(graph, "cpu")
    (ours,), profile = profiled(graph, "test")
    np.testing.assert_array_equal(ours, expected)
    assert [s["backend"] for s in compute_steps(profile)] == ["test", "cpu", "test"]
    with mnnpy.backend("test"):
        graph()[0].read()
    assert stats()["last_device_submits"] == 2


def test_profiles_time_each_device_step(test_backend, rng):
    x = random_array(rng, (8, 16), "float32", -1, 1)
    ws = [random_array(rng, (16, 16), "float32", -0.5, 0.5) for _ in range(3)]
    (ours,), profile = profiled(lambda: [matmul_chain(x, ws)], "test")
    steps = compute_steps(profile)
    assert [s["op"] for s in steps] == ["MatMul", "Fused(Relu)"] * 3
    assert all(s["backend"] == "test" and s["seconds"] >= 0 for s in steps)


def test_a_plan_larger_than_the_device_memory_raises_before_allocating(test_backend):
    # Two 1 GiB device values (the broadcast, lowered to Raster, and the sum) against the test
    # backend's 1 GiB: refused at plan time, before anything is allocated.
    big = F.broadcast_to(F.const(np.float32(1.5)), (16384, 16384))
    with mnnpy.backend("test"), pytest.raises(MemoryError, match=r"on backend 'test'.*it has 1.00 GiB"):
        (big + big).read()


@pytest.mark.parametrize("how", ["name", "mnn_enum_name", "runtime_manager"])
def test_a_model_loaded_for_a_backend_runs_there_whatever_set_backend_says(test_backend, tmp_path, rng, how):
    path = str(tmp_path / "tiny.onnx")
    w, b = tiny_onnx_model(path, rng)
    if how == "name":
        module = nn.load_module_from_file(path, backend="TEST")
    elif how == "mnn_enum_name":
        module = nn.load_module_from_file(path, backend="Backend.test")
    else:
        module = nn.load_module_from_file(path, runtime_manager=nn.create_runtime_manager(({"backend": "test"},)))
    on_cpu = nn.load_module_from_file(path)
    x = random_array(rng, (4, 12), "float32", -1, 1)
    assert mnnpy.get_backend() == "cpu"
    mnnpy._core.set_executor_option("profile", True)
    try:
        ours = module.forward(x).read()
        backends = {s["backend"] for s in compute_steps(mnnpy._core.last_profile())}
        expected = on_cpu.forward(x).read()
        cpu_backends = {s["backend"] for s in compute_steps(mnnpy._core.last_profile())}
    finally:
        mnnpy._core.set_executor_option("profile", False)
    np.testing.assert_array_equal(ours, expected)
    # x @ w + b is one sum of 13 products: [x, 1] @ [w; b], within gamma_13 of the exact one.
    xa, wa = np.hstack([x, np.ones((4, 1), np.float32)]), np.vstack([w, b[None]])
    exact = np.maximum(xa.astype(np.float64) @ wa.astype(np.float64), 0)
    assert np.all(np.abs(expected - exact) <= product_error_bound(xa, wa, 2.0 ** -24))
    assert backends == {"test"} and cpu_backends == {"cpu"}
    assert mnnpy.get_backend() == "cpu"  # the module's choice stayed on its calls


def test_thread_backends_do_not_leak_between_threads(test_backend, rng):
    x = random_array(rng, (8, 16), "float32", -1, 1)
    ws = [random_array(rng, (16, 16), "float32", -0.5, 0.5) for _ in range(2)]
    seen = {}

    def body(name):
        from mnnpy import _thread_backend
        with _thread_backend(name):
            seen[name] = (mnnpy.get_backend(), matmul_chain(x, ws).read())

    threads = [threading.Thread(target=body, args=(name,)) for name in ("test", "cpu")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen["test"][0] == "test" and seen["cpu"][0] == "cpu"
    np.testing.assert_array_equal(seen["test"][1], seen["cpu"][1])
    assert mnnpy.get_backend() == "cpu"


def test_backend_choices_that_are_not_usable_raise(tmp_path, rng):
    path = str(tmp_path / "tiny.onnx")
    tiny_onnx_model(path, rng)
    with pytest.raises(ValueError, match=r"backend 'opencl' is not usable on this machine \(usable: cpu"):
        nn.load_module_from_file(path, backend=F.Backend.OPENCL)
    with pytest.raises(ValueError, match="backend 'metal' is not usable"):
        nn.create_runtime_manager(({"backend": "METAL", "precision": "low"},))
    with pytest.raises(ValueError, match="unknown backend number 5"):
        nn.load_module_from_file(path, backend=5)
    with pytest.raises(TypeError, match="backend must be a name"):
        nn.load_module_from_file(path, backend=1.5)
    assert nn.load_module_from_file(path, backend=F.CPU).backend == "cpu"
    assert nn.load_module_from_file(path).backend is None


def test_mnn_executor_config_chooses_the_backend(test_backend):
    threads = mnnpy.get_num_threads()
    try:
        F.set_global_executor_config("test", 0, 1)
        assert mnnpy.get_backend() == "test"
        F.set_global_executor_config(F.Backend.CPU, 0, None)
        assert mnnpy.get_backend() == "cpu"
    finally:
        mnnpy.set_num_threads(threads)
