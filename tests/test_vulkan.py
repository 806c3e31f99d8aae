"""The Vulkan backend itself: its device, elementwise programs against NumPy and the CPU,
buffers sub-allocated from one arena, one submission per stretch, copies, modules loaded for it.
On CI the device is lavapipe (Mesa's Vulkan on the CPU) under the validation layer, whose errors
are raised; the `vulkan` fixture selects the backend and skips where there is no device."""
import numpy as np
import pytest

import mnnpy
from mnnpy import expr as F
from mnnpy import nn

from helpers import (RTOL_TRANSCENDENTAL, compute_steps, product_error_bound, profiled, profiled_forward, random_array,
                     tiny_onnx_model)

U32 = 2.0 ** -24


def on_cpu(build):
    with mnnpy.backend("cpu"):
        return mnnpy.eval(*build())


def test_the_device_is_described(vulkan):
    info = mnnpy.runtime_info()
    assert info["backends"][0] == "cpu" and "vulkan" in info["backends"]
    description = info["devices"]["vulkan"]
    assert "subgroup" in description and "MiB per binding" in description


# Programs whose every instruction is exact in IEEE arithmetic (or a MulAdd, rounded once): the
# device's bits equal the CPU's.
EXACT_PROGRAMS = [
    ("add", lambda a, b: a + b),
    ("broadcast_sub", lambda a, b: a - b[:1]),
    ("mul_relu", lambda a, b: F.relu(a * b)),
    ("mul_add", lambda a, b: a * b + a),
    ("max_min_neg_abs", lambda a, b: F.abs(-F.maximum(a, b)) + F.minimum(a, b)),
    ("floor_ceil_round", lambda a, b: F.floor(a) + F.ceil(b) + F.round(a * b)),
    ("square_relu6", lambda a, b: F.relu6(F.square(a) - b)),
]


@pytest.mark.parametrize("name, program", EXACT_PROGRAMS, ids=[p[0] for p in EXACT_PROGRAMS])
@pytest.mark.parametrize("shape", [(7,), (3, 5, 11), (1, 1), (300, 7), (0, 4)])
def test_exact_programs_give_the_cpus_bits(vulkan, rng, name, program, shape):
    a, b = (random_array(rng, shape, "float32", -4, 4) for _ in range(2))

    def build():
        return [program(F.const(a), F.const(b))]

    (ours,), profile = profiled(build, "vulkan")
    (expected,) = on_cpu(build)
    assert ours.dtype == expected.dtype and ours.shape == expected.shape
    assert ours.tobytes() == expected.tobytes()
    if a.size:
        assert {s["backend"] for s in compute_steps(profile) if s["op"].startswith("Fused")} == {"vulkan"}


def test_broadcasting_inputs_of_every_rank(vulkan, rng):
    shapes = [(2, 1, 4, 1, 3), (5, 1, 1, 3), (1,), (4, 1, 1), (2, 5, 4, 6, 3)]
    arrays = [random_array(rng, s, "float32", -2, 2) for s in shapes]

    def build():
        v = [F.const(x) for x in arrays]
        return [(v[0] + v[1]) * v[2] - v[3] + v[4]]

    (ours,) = mnnpy.eval(*build())
    (expected,) = on_cpu(build)
    assert ours.tobytes() == expected.tobytes()


def test_transcendental_programs_within_their_stated_accuracy(vulkan, rng):
    x = random_array(rng, (4, 257), "float32", -8, 8)
    (ours,) = mnnpy.eval(F.exp(F.const(x)), )
    exact = np.exp(x.astype(np.float64))
    assert np.all(np.abs(ours - exact) <= RTOL_TRANSCENDENTAL["float32"] * exact)
    (sig,) = mnnpy.eval(F.sigmoid(F.const(x)))
    exact = 1 / (1 + np.exp(-x.astype(np.float64)))
    # exp's accuracy, then one addition and a division (2.5 ulp on Vulkan).
    assert np.all(np.abs(sig - exact) <= (RTOL_TRANSCENDENTAL["float32"] + 4 * U32) * exact)


def test_nan_follows_numpy_in_maximum_and_relu(vulkan):
    a = np.array([np.nan, 1.0, -2.0, np.nan, 0.0], np.float32)
    b = np.array([0.0, np.nan, -3.0, np.nan, -0.0], np.float32)
    (mx, relu) = mnnpy.eval(F.maximum(F.const(a), F.const(b)), F.relu(F.const(a) * F.const(np.float32(1))))
    np.testing.assert_array_equal(mx, np.maximum(a, b))
    np.testing.assert_array_equal(relu, np.maximum(a, 0))


def test_programs_the_shader_lacks_fall_back_to_the_cpu(vulkan, rng):
    x = random_array(rng, (6, 5), "float32", 0.5, 4)

    def build():
        return [F.mod(F.const(x), F.const(np.float32(1.5))) * F.const(x)]  # Fmod: not in the shader

    (ours,), profile = profiled(build, "vulkan")
    np.testing.assert_array_equal(ours, on_cpu(build)[0])
    assert [(s["backend"], s["fallback"]) for s in compute_steps(profile)] == [("cpu", True)]


def test_programs_of_dtypes_the_shaders_lack_fall_back_to_the_cpu(vulkan):
    x = np.arange(-5, 7, dtype=np.int16)
    (ours,), profile = profiled(lambda: [F.const(x) * F.const(x) + F.const(np.int16(3))], "vulkan")
    np.testing.assert_array_equal(ours, x * x + 3)
    assert all(s["backend"] == "cpu" for s in compute_steps(profile))


def test_a_chain_of_device_steps_is_one_submission_from_one_arena(vulkan, rng):
    x = random_array(rng, (64, 33), "float32", -1, 1)

    def build():
        h = F.const(x)
        for k in range(6):
            # Each group ends at a value read twice, so the chain stays six separate programs.
            h = F.relu(h * F.const(np.float32(1.5)) - F.const(np.float32(0.1 * k)))
            h = h + h * h
        return [h]

    (ours,) = mnnpy.eval(*build())
    stats = mnnpy._core.executor_stats()
    assert stats["last_device_submits"] == 1
    assert 0 < stats["last_device_bytes"] <= 4 * x.nbytes + 1024
    (expected,) = on_cpu(build)
    assert ours.tobytes() == expected.tobytes()


def test_results_and_copies_under_many_runs_and_two_threads(vulkan, rng):
    import threading
    xs = [random_array(rng, (1000,), "float32", -3, 3) for _ in range(4)]
    results = {}

    def body(i):
        with mnnpy.backend("vulkan"):
            for _ in range(20):
                (results[i],) = mnnpy.eval(F.const(xs[i]) * F.const(xs[i]) + F.const(np.float32(i)))

    threads = [threading.Thread(target=body, args=(i,)) for i in range(len(xs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, x in enumerate(xs):
        expected = (x.astype(np.float64) * x + i).astype(np.float32)  # one rounding: the multiply-add
        np.testing.assert_array_equal(results[i], expected)


@pytest.mark.parametrize("backend", ["vulkan", "VULKAN", F.Backend.VULKAN])
def test_a_model_loaded_for_vulkan_runs_there(vulkan, tmp_path, rng, backend):
    path = str(tmp_path / "tiny.onnx")
    w, b = tiny_onnx_model(path, rng)
    x = random_array(rng, (4, 12), "float32", -2, 2)
    with mnnpy.backend("cpu"):
        module = nn.load_module_from_file(path, backend=backend)
        reference = nn.load_module_from_file(path)
        ours, steps = profiled_forward(module, x)
        expected = reference.forward(x).read()
    # relu(x @ w + b) is one sum of 13 products, [x, 1] @ [w; b], in any order: within gamma_13 of
    # the exact one on both backends.
    xa, wa = np.hstack([x, np.ones((4, 1), np.float32)]), np.vstack([w, b[None]])
    exact = np.maximum(xa.astype(np.float64) @ wa.astype(np.float64), 0)
    bound = product_error_bound(xa, wa, U32)
    assert np.all(np.abs(ours - exact) <= bound) and np.all(np.abs(expected - exact) <= bound)
    assert {s["backend"] for s in steps} == {"vulkan"}


def test_constant_weights_are_uploaded_once_and_kept_with_the_plan(vulkan, rng):
    x = random_array(rng, (5, 24), "float32", -1, 1)
    weights = [random_array(rng, (24, 7), "float32", -1, 1) for _ in range(2)]
    w_vars = [F.const(w) for w in weights]
    placeholder = F.placeholder([5, 24])

    placeholder.write(x)
    for w, w_var in zip(weights * 2, w_vars * 2):
        (ours,), profile = profiled(lambda: [F.matmul(placeholder, w_var)], "vulkan")
        ops = [s["op"] for s in profile]
        # The weights never pass through a per-run copy: only x goes in and the product out.
        assert ops.count("Copy(cpu->vulkan)") == 1 and ops.count("Copy(vulkan->cpu)") == 1, ops
        exact = x.astype(np.float64) @ w.astype(np.float64)
        assert np.all(np.abs(ours - exact) <= product_error_bound(x, w, U32))


def test_the_device_time_of_a_run_is_measured(vulkan, rng):
    import time
    x = random_array(rng, (256, 256), "float32", -1, 1)
    placeholder = F.placeholder([256, 256])
    placeholder.write(x)
    y = F.relu(F.matmul(placeholder, placeholder))
    y.read()
    start = time.perf_counter()
    y.read()
    wall = time.perf_counter() - start
    device = mnnpy._core.executor_stats()["last_device_seconds"]
    assert 0 < device <= wall
    with mnnpy.backend("cpu"):
        mnnpy.eval(F.const(x) + F.const(x))
    assert mnnpy._core.executor_stats()["last_device_seconds"] == -1


def test_a_constant_table_stays_on_the_device_for_a_gather(vulkan, rng):
    table = random_array(rng, (50, 16), "float32", -1, 1)
    tables = [F.const(table), F.const(table * 2)]
    ids = F.placeholder([7], dtype=np.int64)
    for scale, table_var in zip([1, 2, 1], [tables[0], tables[1], tables[0]]):
        index = rng.integers(-50, 50, 7)
        ids.write(index)
        (ours,), profile = profiled(lambda: [F.gather(table_var, ids)], "vulkan")
        ops = [s["op"] for s in profile]
        assert ops == ["Copy(cpu->vulkan)", "Gather", "Copy(vulkan->cpu)"], ops  # the ids in, the rows out
        np.testing.assert_array_equal(ours, table[index] * np.float32(scale))


def test_large_copies_in_and_out_split_across_threads_keep_every_byte(vulkan, rng):
    x = rng.standard_normal(5_000_001, dtype=np.float32)  # past the 4 MiB where copies split, not a whole chunk
    (ours,) = mnnpy.eval(F.const(x) + F.const(np.float32(0.5)))
    np.testing.assert_array_equal(ours, x + np.float32(0.5))


def test_a_module_with_resident_weights_run_from_several_threads(vulkan, tmp_path, rng):
    import threading
    path = str(tmp_path / "tiny.onnx")
    w, b = tiny_onnx_model(path, rng)
    module = nn.load_module_from_file(path, backend="vulkan")
    xs = [random_array(rng, (4, 12), "float32", -2, 2) for _ in range(4)]
    results, errors = {}, []

    def body(i):
        try:
            for _ in range(10):  # the first run of the plan, from whichever thread, uploads the weights
                results[i] = module.forward(xs[i]).read()
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(len(xs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for i, x in enumerate(xs):
        xa, wa = np.hstack([x, np.ones((4, 1), np.float32)]), np.vstack([w, b[None]])
        exact = np.maximum(xa.astype(np.float64) @ wa.astype(np.float64), 0)
        assert np.all(np.abs(results[i] - exact) <= product_error_bound(xa, wa, U32))


def test_a_stretch_is_recorded_once_and_replayed_with_each_runs_arrays(vulkan, rng):
    w = random_array(rng, (33, 17), "float32", -1, 1)
    placeholder = F.placeholder([64, 33])
    y = F.relu(F.matmul(placeholder, F.const(w)))
    for run in range(5):
        x = random_array(rng, (64, 33), "float32", -1, 1)  # a fresh array each run: the copy in is redone
        placeholder.write(x)
        ours = y.read()
        exact = np.maximum(x.astype(np.float64) @ w.astype(np.float64), 0)
        assert np.all(np.abs(ours - exact) <= product_error_bound(x, w, U32))
        stats = mnnpy._core.executor_stats()
        # The first run records; the process's first stretch also makes the device's placeholder
        # binding on the way, so it may record once more.
        if run >= 2:
            assert stats["last_device_replays"] == stats["last_device_submits"] == 1


def test_replays_read_and_write_new_host_arrays_every_run(vulkan, rng):
    for run in range(4):
        x = random_array(rng, (1000,), "float32", -3, 3)  # new leaf and result arrays: new host addresses
        (ours,) = mnnpy.eval(F.const(x) * F.const(x) + F.const(np.float32(2)))
        np.testing.assert_array_equal(ours, (x.astype(np.float64) * x + 2).astype(np.float32))
        if run >= 2:
            assert mnnpy._core.executor_stats()["last_device_replays"] == 1


def test_stretches_around_a_cpu_step_are_each_replayed(vulkan, rng):
    import mnnpy.numpy as mnp

    for run in range(4):
        x = random_array(rng, (257,), "float32", -3, 3)
        ours = np.asarray(mnp.sort(mnp.asarray(x) * 2) * 3)
        np.testing.assert_array_equal(ours, np.sort(x * 2) * 3)
        stats = mnnpy._core.executor_stats()
        assert stats["last_device_submits"] == 2
        if run >= 2:
            assert stats["last_device_replays"] == 2
    _, profile = profiled(lambda: [mnp.sort(mnp.asarray(x) * 2) * 3], "vulkan")
    assert [s["backend"] for s in compute_steps(profile)] == ["vulkan", "cpu", "vulkan"]


def test_a_plan_whose_device_arena_moved_records_again(vulkan, rng):
    import threading
    small = F.placeholder([8, 8])
    large = F.placeholder([512, 512])
    y_small, y_large = F.relu(small * 3.0 + 1.0), F.relu(large * 3.0 + 1.0)
    xs = random_array(rng, (8, 8), "float32", -1, 1)
    xl = random_array(rng, (512, 512), "float32", -1, 1)
    small.write(xs)
    large.write(xl)
    replays, results = [], []

    def body():  # a new thread starts with an empty device arena
        with mnnpy.backend("vulkan"):
            for plan in [y_small, y_small, y_large, y_small, y_small]:
                # The large plan grows the thread's device arena: the small plan's buffers move.
                results.append(plan.read())
                replays.append(mnnpy._core.executor_stats()["last_device_replays"])

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    for x, ours in zip([xs, xs, xl, xs, xs], results):
        np.testing.assert_array_equal(ours, np.maximum((x.astype(np.float64) * 3 + 1).astype(np.float32), 0))
    assert replays == [0, 1, 0, 0, 1]  # recorded anew on the new arena, then replayed
