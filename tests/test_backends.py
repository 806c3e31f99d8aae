"""Backends: selection, placement with CPU fallback, copies at the borders, plan keys, threads.

The "test" backend keeps its buffers apart from host memory (stored scrambled) and supports only
float32 elementwise programs of Add, Mul and Relu, float32 MatMul and Raster (the region copy that
data-movement ops lower to), so it exercises everything
a device backend needs without a device: a CPU kernel handed one of its buffers would compute
garbage, which the comparisons with the CPU below would catch.
"""
import threading

import numpy as np
import pytest

import mnnpy
import mnnpy.numpy as mp
import mnnpy.cv as mcv
from mnnpy import expr as F

from helpers import RTOL_TRANSCENDENTAL, assert_same, compute_steps, product_error_bound, profiled, random_array


def copy_steps(profile, direction):
    return [s for s in profile if s["op"] == f"Copy({direction})"]


def mixed_inputs(rng):
    return {name: random_array(rng, shape, "float32", -2, 2)
            for name, shape in [("a", (8, 16)), ("b", (8, 16)), ("w", (16, 16)), ("v", (8, 16))]}


def mixed_graph(arrays):
    """Supported (Mul+Add+Relu, MatMul) and unsupported (Exp, Sub, int ops) nodes interleaved,
    with a view (Reshape) of a device value read on the CPU."""
    a, b, w, v = (F.const(arrays[k]) for k in "abwv")
    h = F.relu(a * b + a)                                   # test: one fused program
    m = F.matmul(h, w)                                      # test
    e = F.sin(F.reshape(m, (16, 8)) * F.const(np.float32(0.01)))  # CPU: Sin is not supported
    y = F.matmul(F.reshape(e, (8, 16)), w)                  # test
    counts = F.cast(y, np.int32) + F.cast(v, np.int32)       # CPU: int32
    return [y, counts]


def device_backends():
    """The backends this machine has besides the CPU (vulkan where a Vulkan device is found)."""
    return [b for b in mnnpy.runtime_info()["backends"] if b != "cpu"]


def test_runtime_info_lists_cpu_first_and_the_test_backend_only_when_enabled():
    found = mnnpy.runtime_info()["backends"]
    assert found[0] == "cpu" and "test" not in found
    assert mnnpy.get_backend() == "cpu"
    devices = device_backends()
    mnnpy._core.enable_test_backend(True)
    try:
        assert mnnpy.runtime_info()["backends"] == ["cpu"] + sorted(devices + ["test"])
    finally:
        mnnpy._core.enable_test_backend(False)
    assert mnnpy.runtime_info()["backends"] == found


def test_set_backend_errors_name_the_usable_backends():
    usable = ", ".join(mnnpy.runtime_info()["backends"])
    with pytest.raises(ValueError, match=rf"unknown backend 'metal' \(usable: {usable}\)"):
        mnnpy.set_backend("metal")
    with pytest.raises(ValueError, match=f"usable: {usable}"):
        mnnpy.set_backend("test")  # hidden until enabled
    with pytest.raises(TypeError, match="must be a str"):
        mnnpy.set_backend(1)
    assert mnnpy.get_backend() == "cpu"


def test_context_manager_restores_the_previous_backend(test_backend):
    with mnnpy.backend("test") as name:
        assert name == "test" and mnnpy.get_backend() == "test"
    assert mnnpy.get_backend() == "cpu"
    with pytest.raises(RuntimeError, match="inside"):
        with mnnpy.backend("test"):
            raise RuntimeError("inside")
    assert mnnpy.get_backend() == "cpu"
    mnnpy.set_backend("test")
    mnnpy._core.enable_test_backend(False)  # hiding the requested backend goes back to the CPU
    assert mnnpy.get_backend() == "cpu"


def test_mixed_graph_equals_cpu_with_fallbacks_and_border_copies(test_backend, rng):
    arrays = mixed_inputs(rng)
    on_cpu, cpu_profile = profiled(lambda: mixed_graph(arrays), "cpu")
    on_test, test_profile = profiled(lambda: mixed_graph(arrays), "test")
    for ours, expected in zip(on_test, on_cpu):
        assert ours.dtype == expected.dtype
        np.testing.assert_array_equal(ours, expected)

    assert all(s["backend"] == "cpu" and not s["fallback"] for s in cpu_profile)
    assert not [s for s in cpu_profile if s["op"].startswith("Copy(")]
    # The same kernels run, only placed differently.
    assert [s["op"] for s in compute_steps(test_profile)] == [s["op"] for s in cpu_profile]
    on_device = [s["op"] for s in compute_steps(test_profile) if s["backend"] == "test"]
    fell_back = [s["op"] for s in compute_steps(test_profile) if s["fallback"]]
    assert on_device == ["Fused(Mul,Add,Relu)", "MatMul", "MatMul"]
    assert len(fell_back) == len(cpu_profile) - 3 and all(s["backend"] == "cpu" for s in compute_steps(test_profile)
                                                         if s["fallback"])
    # In: a, b and the Sin result (w, the constant weight both MatMuls read, is uploaded once with
    # the plan, not copied per run); out: the first MatMul's result (read through a view) for Sin,
    # and the second's for the int32 part (one copy serves both the CPU's Cast and the returned y).
    assert len(copy_steps(test_profile, "cpu->test")) == 3
    assert len(copy_steps(test_profile, "test->cpu")) == 2
    stats = mnnpy._core.executor_stats()
    assert stats["last_copies"] == 5 and stats["last_fallbacks"] == len(fell_back)


def test_fully_supported_graph_copies_only_at_the_ends(test_backend, rng):
    a, w, c = (random_array(rng, s, "float32", -2, 2) for s in [(32, 24), (24, 16), (32, 16)])

    def graph():
        return [F.relu(F.matmul(F.const(a), F.const(w)) + F.const(c))]

    (expected,), _ = profiled(graph, "cpu")
    (ours,), profile = profiled(graph, "test")
    np.testing.assert_array_equal(ours, expected)
    steps = compute_steps(profile)
    assert [s["op"] for s in steps] == ["MatMul", "Fused(Add,Relu)"]
    assert all(s["backend"] == "test" and not s["fallback"] for s in steps)
    # a and c; the weight w is uploaded once with the plan
    assert len(copy_steps(profile, "cpu->test")) == 2
    assert [s["op"] for s in profile if s["op"].startswith("Copy(test")] == ["Copy(test->cpu)"]
    assert profile[-1]["op"] == "Copy(test->cpu)"  # the result, read back last


def test_graph_without_supported_nodes_has_no_copies(test_backend, rng):
    x = random_array(rng, (5, 7), "float32", -3, 3)
    (on_cpu,), _ = profiled(lambda: [F.sin(F.const(x) * F.const(x) - F.const(x))], "cpu")
    (ours,), profile = profiled(lambda: [F.sin(F.const(x) * F.const(x) - F.const(x))], "test")
    np.testing.assert_array_equal(ours, on_cpu)
    assert [s["op"] for s in profile] == ["Fused(Mul,Sub,Sin)"] and profile[0]["fallback"]


def test_plans_are_cached_per_backend(test_backend, rng):
    xv = random_array(rng, (4, 8), "float32")
    wv = random_array(rng, (8, 3), "float32")
    x = F.placeholder((4, 8))
    y = F.relu(F.matmul(x, F.const(wv)))
    x.write(xv)
    exact = np.maximum(xv.astype(np.float64) @ wv, 0)
    bound = product_error_bound(xv, wv, U32)

    def run(backend):
        before = mnnpy._core.executor_stats()
        with mnnpy.backend(backend):
            value = y.read()
        after = mnnpy._core.executor_stats()
        assert np.all(np.abs(value - exact) <= bound)
        return after["plans_built"] - before["plans_built"], after["plan_cache_hits"] - before["plan_cache_hits"]

    assert run("cpu")[0] <= 1
    assert run("cpu") == (0, 1)
    assert run("test") == (1, 0)   # another key: built for the test backend
    assert run("test") == (0, 1)
    assert run("cpu") == (0, 1)    # the CPU's plan is still there


def test_planned_graph_follows_the_requested_backend(test_backend, rng):
    xv = random_array(rng, (6, 5), "float32", -2, 2)
    wv = random_array(rng, (5, 4), "float32", -2, 2)
    x = F.placeholder((6, 5))
    y = F.relu(F.matmul(x, F.const(wv)) * F.const(wv[0]))
    graph = mnnpy._core.PlannedGraph([y], [x])
    expected = graph.run([xv])[0].read()
    mnnpy._core.set_executor_option("profile", True)
    try:
        with mnnpy.backend("test"):
            ours = graph.run([xv])[0].read()
    finally:
        mnnpy._core.set_executor_option("profile", False)
    np.testing.assert_array_equal(ours, expected)
    assert {s["backend"] for s in compute_steps(mnnpy._core.last_profile())} == {"test"}


def test_two_threads_run_on_the_test_backend_at_once(test_backend, rng):
    arrays = [mixed_inputs(rng) for _ in range(2)]
    expected = [mnnpy.eval(*mixed_graph(a)) for a in arrays]
    mnnpy.set_backend("test")
    barrier = threading.Barrier(2)
    errors = []

    def body(i):
        try:
            barrier.wait()
            for _ in range(20):
                got = mnnpy.eval(*mixed_graph(arrays[i]))
                for ours, want in zip(got, expected[i]):
                    np.testing.assert_array_equal(ours, want)
        except Exception as e:  # reported below, from the main thread
            errors.append(e)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


# ---------------------------------------------------------------- lowering to Raster
def data_movement_graph(x, y):
    """Transpose, slice with negative steps, concatenation, split, broadcast and constant padding
    of float32 values: none has a kernel on the test backend, all lower to Raster there."""
    a, b = F.const(x), F.const(y)
    t = F.transpose(a, [0, 2, 1])[:, ::-1, 1:]                 # (3, 6, 3)
    c = F.concat([t, F.broadcast_to(b, [3, 2, 3])], 1)          # (3, 8, 3)
    first, second = F.split(c, [5, 3], 1)
    return [F.pad(first, [[0, 1], [2, 0], [1, 1]], "constant", -1.0) * 2.0, second + 1.0]


def test_data_movement_lowers_to_raster_on_a_backend_without_its_kernels(test_backend, rng):
    x = random_array(rng, (3, 4, 6), "float32", -3, 3)
    y = random_array(rng, (1, 2, 3), "float32", -3, 3)
    expected, cpu_profile = profiled(lambda: data_movement_graph(x, y), "cpu")
    ours, profile = profiled(lambda: data_movement_graph(x, y), "test")
    for got, want in zip(ours, expected):
        np.testing.assert_array_equal(got, want)  # copies and one rounding each: exact
    steps = compute_steps(profile)
    assert not [s for s in steps if s["fallback"]], steps
    assert {s["op"] for s in steps} == {"Raster", "Fused(Mul)", "Fused(Add)"}
    assert all(s["backend"] == "test" for s in steps)
    # In and out of the device only at the ends: the constants in (two arrays, two scalars), the two
    # results out.
    assert len(copy_steps(profile, "cpu->test")) == 4 and len(copy_steps(profile, "test->cpu")) == 2
    assert "Raster" not in {s["op"] for s in cpu_profile}  # the CPU keeps its own kernels


def test_ops_without_a_decomposition_still_fall_back(test_backend, rng):
    x = random_array(rng, (4, 5), "float32", -3, 3)
    (ours,), profile = profiled(lambda: [F.pad(F.const(x), [[1, 1], [2, 0]], "reflect") * 2.0], "test")
    np.testing.assert_array_equal(ours, np.pad(x, [[1, 1], [2, 0]], "reflect") * np.float32(2))
    assert [(s["op"], s["backend"]) for s in compute_steps(profile)] == [("Pad", "cpu"), ("Fused(Mul)", "test")]


@pytest.mark.parametrize("regions, message", [
    ([0, 1, 0, 0, 13, 1, 1], "reads past input 0"),            # 13 elements of a 12-element input
    ([0, 1, 0, 10, 3, 1, 1], "writes past the output"),        # elements 10..12 of a 12-element output
    ([0, 1, 11, 0, 2, -12, 1], "reads past input 0"),          # a negative stride below the start
    ([1, 1, 0, 0, 2, 1, 1], "reads input 1 of 1"),
    ([0, 2, 0, 0, 3], "rank is invalid"),
    ([0, 1, 0, 0, 1 << 62, 4, 1], "overflows"),
])
def test_raster_regions_are_checked_when_built(regions, message):
    x = F.const(np.arange(12, dtype=np.float32))
    with pytest.raises(ValueError, match=message):
        mnnpy._core.op("Raster", [x], {"shape": [12], "regions": regions})


def test_raster_on_the_cpu_copies_regions_over_the_fill():
    x = np.arange(12, dtype=np.float32)
    # Two regions: x[::2] reversed into 0..5, and x[1:4] into 8..10; the rest keeps the fill 7.
    regions = [0, 1, 10, 0, 6, -2, 1] + [0, 1, 1, 8, 3, 1, 1]
    y = mnnpy._core.op("Raster", [F.const(x)], {"shape": [12], "regions": regions, "fill": 7.0})
    np.testing.assert_array_equal(y.read(), np.array([10, 8, 6, 4, 2, 0, 7, 7, 1, 2, 3, 7], np.float32))


def lowered_on_test_backend(build):
    """build()'s value computed on the test backend, checked to have run there whole (lowered to
    Raster where the op has no kernel), with no step left on the CPU."""
    (value,), profile = profiled(lambda: [build()], "test")
    assert mnnpy._core.executor_stats()["last_fallbacks"] == 0, compute_steps(profile)
    assert all(s["backend"] == "test" for s in compute_steps(profile)), compute_steps(profile)
    return value


def assert_bitwise_equal(got, expected):
    """Data movement copies bytes: dtype, shape and every bit equal."""
    expected = np.asarray(expected)
    assert got.dtype == expected.dtype and got.shape == expected.shape, (got.dtype, got.shape, expected.shape)
    assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(expected).tobytes()


def fresh_float32(shape):
    return np.random.default_rng().standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("shape, indices, axis", [
    ((7,), [3, 0, -1, 6, 3], 0),
    ((3, 5, 4), [[4, -5], [0, 2], [2, 2]], 1),     # 2-D indices, negative, repeated
    ((3, 5, 4), [1], -1),
    ((2, 3, 1, 5), [0, 0, 0], 2),
    ((5, 3), np.zeros((0,), np.int64), 0),          # no index: an empty result
    ((3, 0, 2), [1, 0, 2], 0),                     # empty slabs
    ((1, 9), np.arange(-9, 9, dtype=np.int32), 1),  # every index, both signs
])
def test_gather_by_constant_indices_lowers_to_raster(test_backend, shape, indices, axis):
    x = fresh_float32(shape)
    indices = np.asarray(indices)
    got = lowered_on_test_backend(lambda: F.gather(F.const(x), F.const(indices), axis))
    assert_bitwise_equal(got, np.take(x, indices, axis))


def test_gather_out_of_range_constant_indices_give_zeros_as_on_the_cpu(test_backend):
    # The builder refuses such indices; a Gather made directly (as a loaded graph may) fills zeros.
    x = fresh_float32((4, 3))
    indices = np.array([2, 7, -1, -9], np.int64)
    build = lambda: mnnpy._core.op("Gather", [F.const(x), F.const(indices)], {"axis": 0})  # noqa: E731
    got = lowered_on_test_backend(build)
    with mnnpy.backend("cpu"):
        expected = build().read()
    assert_bitwise_equal(got, expected)
    assert_bitwise_equal(got, np.stack([x[2], np.zeros(3, np.float32), x[3], np.zeros(3, np.float32)]))


def test_gather_by_computed_or_too_many_indices_falls_back(test_backend):
    x = fresh_float32((5000, 2))
    many = np.random.default_rng().integers(-5000, 5000, 4097)
    few = np.array([4, 1, 0], np.int64)
    for build, expected in [
        (lambda: F.gather(F.const(x), F.const(many)), np.take(x, many, 0)),
        (lambda: F.gather(F.const(x), F.const(few) + 1), np.take(x, few + 1, 0)),  # an int64 Add, on the CPU
    ]:
        (got,), profile = profiled(lambda: [build()], "test")
        assert_bitwise_equal(got, expected)
        assert "Gather" in [s["op"] for s in compute_steps(profile) if s["fallback"]]


def test_indexing_known_values_by_an_integer_array_on_the_test_backend(test_backend):
    # Folded now through the executor (a synchronization point), on the backend in use.
    x = fresh_float32((6, 4))
    indices = np.array([5, -6, 2, 2], np.int64)
    with mnnpy.backend("test"):
        got = F.const(x)[indices].read()
    assert_bitwise_equal(got, x[indices])


@pytest.mark.parametrize("shape, multiples", [
    ((3,), [4]),
    ((2, 3), [3, 1, 2]),   # more multiples than axes
    ((5, 1, 3), [1, 7]),   # fewer
    ((2, 3), [0, 2]),      # an empty result
    ((0, 4), [2, 3]),
])
def test_tile_lowers_to_raster(test_backend, shape, multiples):
    x = fresh_float32(shape)
    assert_bitwise_equal(lowered_on_test_backend(lambda: F.tile(F.const(x), multiples)), np.tile(x, multiples))


@pytest.mark.parametrize("shape, axes", [
    ((7,), [0]),
    ((3, 5, 4), [1]),
    ((3, 5, 4), [0, 2]),
    ((2, 1, 3), [-1, 1]),
    ((0, 3), [1]),
])
def test_reverse_lowers_to_raster(test_backend, shape, axes):
    x = fresh_float32(shape)
    assert_bitwise_equal(lowered_on_test_backend(lambda: F.reverse(F.const(x), axes)), np.flip(x, axes))
    assert_bitwise_equal(lowered_on_test_backend(lambda: mp.flip(F.const(x))), np.flip(x))


def test_negative_step_slices_lower_to_raster(test_backend):
    x = fresh_float32((7, 6, 5))
    for index in [np.s_[::-2, 1::3, ::-1], np.s_[-1::-3, 4:0:-2, 2], np.s_[5:2:-1, ::-7]]:
        assert_bitwise_equal(lowered_on_test_backend(lambda: F.const(x)[index]), x[index])


@pytest.mark.parametrize("n, c, h, w, block", [(1, 8, 3, 5, 2), (2, 18, 1, 3, 3), (3, 36, 4, 7, 2), (1, 8, 1, 1, 1)])
def test_depth_to_space_composition_lowers_to_raster(test_backend, n, c, h, w, block):
    # ONNX DepthToSpace (DCR) as the converter builds it: a reshape, a transpose, a reshape.
    x = fresh_float32((n, c, h, w))
    cb = c // (block * block)

    def build():
        v = F.reshape(F.const(x), [n, block, block, cb, h, w])
        return F.reshape(F.transpose(v, [0, 3, 4, 1, 5, 2]), [n, cb, h * block, w * block])

    expected = x.reshape(n, block, block, cb, h, w).transpose(0, 3, 4, 1, 5, 2).reshape(n, cb, h * block, w * block)
    assert_bitwise_equal(lowered_on_test_backend(build), expected)


@pytest.mark.parametrize("shape", [(1, 8, 3, 5), (2, 16, 1, 1), (3, 24, 4, 7), (0, 8, 2, 2), (2, 0, 3, 3)])
def test_blocked_channel_conversions_lower_to_raster(test_backend, shape):
    x = fresh_float32(shape)
    n, c, h, w = shape
    blocked = x.reshape(n, c // 8, 8, h, w).transpose(0, 1, 3, 4, 2)
    got = lowered_on_test_backend(lambda: mnnpy._core.op("ToBlockedChannels", [F.const(x)], {"block": 8}))
    assert_bitwise_equal(got, blocked)
    y = np.ascontiguousarray(blocked)
    back = lowered_on_test_backend(lambda: mnnpy._core.op("FromBlockedChannels", [F.const(y)], {}))
    assert_bitwise_equal(back, x)


# ---------------------------------------------------------------- composite ops into primitives
def test_cv_split_and_merge_lower_to_raster(test_backend):
    image = fresh_float32((5, 7, 3))
    channels = lowered_on_test_backend(lambda: mcv.split(F.const(image))[1])
    assert_bitwise_equal(channels, image[:, :, 1])
    parts = [fresh_float32((5, 7)), fresh_float32((5, 7, 2))]
    merged = lowered_on_test_backend(lambda: mcv.merge([F.const(p) for p in parts]))
    assert_bitwise_equal(merged, np.dstack(parts))


@pytest.mark.parametrize("code, flipped", [(0, lambda a: a[::-1]), (1, lambda a: a[:, ::-1]),
                                           (-1, lambda a: a[::-1, ::-1])])
@pytest.mark.parametrize("shape", [(4, 6), (3, 5, 3), (1, 1)])
def test_cv_flip_lowers_to_raster(test_backend, code, flipped, shape):
    image = fresh_float32(shape)
    assert_bitwise_equal(lowered_on_test_backend(lambda: mcv.flip(F.const(image), code)), flipped(image))


def test_layer_norm_decomposes_into_reductions_and_elementwise_work(test_backend, rng):
    x = random_array(rng, (6, 4, 24), "float32", -3, 3)
    gamma, beta = random_array(rng, (4, 24), "float32", -2, 2), random_array(rng, (4, 24), "float32", -2, 2)
    eps = 1e-5
    ours = lowered_on_test_backend(lambda: mnnpy._core.op("LayerNorm", [F.const(a) for a in (x, gamma, beta)],
                                                          {"axis": 1, "epsilon": eps}))
    xd, gd, bd = f64(x, gamma, beta)
    mean = xd.mean(axis=(1, 2), keepdims=True)
    sigma = np.sqrt(((xd - mean) ** 2).mean(axis=(1, 2), keepdims=True) + eps)
    normalized = (xd - mean) / sigma
    # n = 96 terms per mean: the mean is off by at most gamma_n mean|x|, which shifts every
    # normalized value by that over sigma; the variance, rsqrt (vector math) and the three
    # products and sums after it add relative errors of (n + 8) u and rsqrt's accuracy.
    n = 96
    gamma_n = n * U32 / (1 - n * U32)
    mean_shift = gamma_n * np.abs(xd).mean(axis=(1, 2), keepdims=True) / sigma
    relative = 2 * (n + 8) * U32 + RTOL_TRANSCENDENTAL["float32"]
    bound = np.abs(gd) * (relative * np.abs(normalized) + 2 * mean_shift) + U32 * np.abs(bd)
    assert np.all(np.abs(ours - (normalized * gd + bd)) <= bound)


def test_attention_decomposes_into_matmuls_and_a_softmax(test_backend, rng):
    q, kt, v = (random_array(rng, s, "float32", -1, 1) for s in [(2, 5, 8), (2, 8, 7), (2, 7, 6)])
    mask = random_array(rng, (5, 7), "float32", -2, 0)
    scale = 0.35
    ours = lowered_on_test_backend(lambda: mnnpy._core.op(
        "ScaledDotProductAttention", [F.const(a) for a in (q, kt, v, mask)], {"scale": scale}))
    qd, ktd, vd, md = f64(q, kt, v, mask)
    scores = qd @ ktd * scale + md
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    # Each score is off by at most scale gamma_8 (|q| @ |kt|) plus two roundings (scale, mask);
    # a softmax weight then by twice its row's largest score error (its exp and the normalizing
    # sum), exp's accuracy and the T + 2 roundings of the sum and division; the last product adds
    # gamma_T (p @ |v|).
    score_error = scale * product_error_bound(q, kt, U32) + 2 * U32 * np.abs(scores)
    weight_relative = (2 * score_error.max(-1, keepdims=True) + RTOL_TRANSCENDENTAL["float32"] + 9 * U32)
    t = 7
    bound = (weight_relative + t * U32 / (1 - t * U32)) * (p @ np.abs(vd))
    assert np.all(np.abs(ours - p @ vd) <= bound)


@pytest.mark.parametrize("ddof", [0, 1])
def test_variance_decomposes_into_two_passes(test_backend, rng, ddof):
    x = random_array(rng, (5, 40), "float32", -4, 4)
    ours = lowered_on_test_backend(lambda: mp.var(F.const(x), axis=1, ddof=ddof))
    xd = f64(x)[0]
    exact = xd.var(axis=1, ddof=ddof)
    # n = 40: the mean within gamma_n mean|x| (its error enters squared), then n + 3 roundings of
    # the squares, their sum and the division.
    n = 40
    gamma_n = n * U32 / (1 - n * U32)
    bound = 2 * (n + 3) * U32 * exact + n / (n - ddof) * (gamma_n * np.abs(xd).mean(axis=1)) ** 2
    assert np.all(np.abs(ours - exact) <= bound)


# ---------------------------------------------------------------- every op on every backend
def usable_backends():
    mnnpy._core.enable_test_backend(True)
    try:
        return mnnpy.runtime_info()["backends"]
    finally:
        mnnpy._core.enable_test_backend(False)


U32 = 2.0 ** -24  # float32's unit roundoff


def f64(*arrays):
    return [np.asarray(a, np.float64) for a in arrays]


def within_relative(relative):
    """Results within `relative` of the float64 values of the reference (one rounding, or the
    stated accuracy of vector math)."""
    return lambda reference, *arrays: relative * np.abs(reference(*f64(*arrays)))


def within_products(reference, a, b):
    """A product of K terms in float32, in any order: gamma_K (|a| @ |b|) of the exact value."""
    return product_error_bound(a, b, U32)


def backend_op_cases():
    """(name, build from Vars, NumPy reference, input shapes, tolerance): the reference runs on the
    float32 inputs (exact cases: None) or on their float64 values, and the tolerance gives the
    elementwise bound on |ours - reference| from the arithmetic."""
    one_rounding = within_relative(1.0001 * U32)
    vector_math = within_relative(RTOL_TRANSCENDENTAL["float32"])
    return [
        ("add", lambda a, b: a + b, lambda a, b: a + b, [(6, 7), (6, 7)], None),
        ("mul_broadcast", lambda a, b: a * b, lambda a, b: a * b, [(6, 7), (7,)], None),
        ("relu", lambda a: F.relu(a), lambda a: np.maximum(a, 0), [(5, 9)], None),
        # A multiply feeding an add runs as one fused multiply-add: one rounding of the exact value.
        ("mul_add_relu", lambda a, b, c: F.relu(a * b + c), lambda a, b, c: np.maximum(a * b + c, 0),
         [(4, 33), (4, 33), (4, 33)], one_rounding),
        ("matmul", lambda a, b: F.matmul(a, b), lambda a, b: a @ b, [(9, 13), (13, 5)], within_products),
        ("batched_matmul", lambda a, b: F.matmul(a, b), lambda a, b: a @ b, [(3, 4, 6), (3, 6, 2)], within_products),
        ("subtract", lambda a, b: a - b, lambda a, b: a - b, [(8,), (8,)], None),
        ("exp", lambda a: F.exp(a), np.exp, [(3, 11)], vector_math),
        ("transpose", lambda a: F.transpose(a, [1, 0]), lambda a: a.T, [(4, 6)], None),
        ("reduce_sum", lambda a: F.reduce_sum(a, [1]), lambda a: a.sum(axis=1), [(5, 12)],
         lambda reference, a: product_error_bound(a, np.ones(12), U32)),
        ("concat", lambda a, b: F.concat([a, b], 0), lambda a, b: np.concatenate([a, b], 0), [(2, 3), (4, 3)],
         None),
        ("matmul_then_relu", lambda a, b: F.relu(F.matmul(a, b)), lambda a, b: np.maximum(a @ b, 0),
         [(7, 8), (8, 3)], within_products),
        # exp's stated accuracy, then one rounding of the product.
        ("relu_of_exp", lambda a: F.relu(F.exp(a) * a), lambda a: np.maximum(np.exp(a) * a, 0), [(16,)],
         within_relative(RTOL_TRANSCENDENTAL["float32"] + 1.0001 * U32)),
        ("pad_of_matmul", lambda a, b: F.pad(F.matmul(a, b), [[1, 2], [0, 1]]),
         lambda a, b: np.pad(a @ b, [[1, 2], [0, 1]]), [(3, 4), (4, 5)],
         lambda reference, a, b: np.pad(product_error_bound(a, b, U32), [[1, 2], [0, 1]])),
        ("cast_to_int", lambda a: F.cast(a, np.int32) + F.cast(a, np.int32),
         lambda a: a.astype(np.int32) * 2, [(10,)], None),
        ("transpose_3d", lambda a: F.transpose(a, [2, 0, 1]), lambda a: a.transpose(2, 0, 1), [(3, 4, 5)], None),
        ("reversed_strided_slice", lambda a: a[1:, ::-2, 1:4], lambda a: a[1:, ::-2, 1:4], [(3, 7, 5)], None),
        ("broadcast_to", lambda a: F.broadcast_to(a, [4, 3, 6]), lambda a: np.broadcast_to(a, (4, 3, 6)), [(3, 1)],
         None),
        ("split", lambda a: F.split(a, [1, 3, 2], 1)[1], lambda a: a[:, 1:4], [(4, 6)], None),
        ("pad_constant", lambda a: F.pad(a, [[2, 0], [1, 3]], "constant", 1.5),
         lambda a: np.pad(a, [[2, 0], [1, 3]], constant_values=1.5), [(3, 4)], None),
    ]


@pytest.mark.parametrize("backend", usable_backends())
@pytest.mark.parametrize("case", backend_op_cases(), ids=lambda c: c[0])
def test_backend_ops_match_numpy(backend, case, rng):
    name, build, reference, shapes, tolerance = case
    arrays = [random_array(rng, s, "float32", -3, 3) for s in shapes]
    mnnpy._core.enable_test_backend(True)
    try:
        with mnnpy.backend(backend):
            ours = build(*[F.const(a) for a in arrays]).read()
    finally:
        mnnpy._core.enable_test_backend(False)
    if tolerance is None:
        assert_same(ours, reference(*arrays), rtol=0)
        return
    assert ours.dtype == np.float32
    exact = reference(*f64(*arrays))
    bound = tolerance(reference, *arrays)
    excess = np.abs(ours - exact) - bound
    assert excess.max() <= 0, f"{name}: off by {excess.max():.3g} beyond the bound"
