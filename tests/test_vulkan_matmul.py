"""MatMul on the Vulkan backend: the tiled SGEMM shader against float64 NumPy, within the bound
of float32 sums of K products in any order, for odd sizes (partial tiles), K = 0, transposes,
broadcast batch dimensions and vectors, K split into partial sums where the tiles are few, and the
tiles and splits set by the environment; other dtypes stay on the CPU.

The bound gamma_K (|A| @ |B|) (product_error_bound) holds for split sums too. Each element is a
float32 sum of K products x_j: a split of d of them accumulates them by fma, one rounding per
step, so its j-th product meets d - j + 1 roundings (zeros past the split's end add exactly);
the finish pass adds the S partials in order, partial 0 meeting S - 1 roundings, partial s S - s.
So no product meets more than d + S - 1 roundings, d = the split depth; with S = ceil(K / d)
splits, K > (S - 1) d, hence K >= (S - 1) d + 1 = d + S - 1 + (S - 2)(d - 1) >= d + S - 1 for
S >= 2 (and d = K for S = 1). Each product's relative error is then within gamma_K."""
import os
import subprocess
import sys

import numpy as np
import pytest

import mnnpy
import mnnpy.numpy as mp
from mnnpy import expr as F

from helpers import product_error_bound, python_env, random_array


def evaluate_profiled(*vars):
    """The values of `vars`, computed in one plan, and the profile rows of its MatMul steps."""
    mnnpy._core.set_executor_option("profile", True)
    try:
        values = mnnpy.eval(*vars)
    finally:
        mnnpy._core.set_executor_option("profile", False)
    return values, [row for row in mnnpy._core.last_profile() if row["op"] == "MatMul"]


def backends(rows):
    return {row["backend"] for row in rows}


def op(x, transposed):
    return np.swapaxes(x, -1, -2) if transposed else x


def assert_product(ours, a, b):
    """ours == a @ b up to the rounding of float32 sums of K products (float64 reference)."""
    expected = np.asarray(a, np.float64) @ np.asarray(b, np.float64)
    assert ours.dtype == np.float32 and ours.shape == expected.shape
    assert np.all(np.abs(ours - expected) <= product_error_bound(a, b, 2**-24))


def check_on_vulkan(a, b, transpose_a=False, transpose_b=False):
    """a @ b on Vulkan; returns the step's scheme (its tiles)."""
    (ours,), rows = evaluate_profiled(F.matmul(F.const(a), F.const(b), transpose_a, transpose_b))
    assert backends(rows) == {"vulkan"}
    assert_product(ours, op(a, transpose_a), op(b, transpose_b))
    return rows[0]["scheme"]


# Sizes around the 64x64 tile of C and the 16-deep steps of K: single rows, partial tiles, several.
@pytest.mark.parametrize("m, k, n", [(1, 1, 1), (3, 5, 7), (17, 3, 65), (65, 130, 17), (1, 65, 130), (130, 1, 3),
                                     (64, 16, 64), (129, 33, 67)])
def test_odd_sizes(vulkan, rng, m, k, n):
    check_on_vulkan(random_array(rng, (m, k), "float32", -1, 1), random_array(rng, (k, n), "float32", -1, 1))


@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("transpose_b", [False, True])
def test_transposes(vulkan, rng, transpose_a, transpose_b):
    m, k, n = 67, 35, 70
    a = random_array(rng, (k, m) if transpose_a else (m, k), "float32", -1, 1)
    b = random_array(rng, (n, k) if transpose_b else (k, n), "float32", -1, 1)
    check_on_vulkan(a, b, transpose_a, transpose_b)


def test_grids_of_many_workgroups_take_large_tiles(vulkan, rng):
    # 4 x 8 x 8 tiles of 128 x 128
    scheme = check_on_vulkan(random_array(rng, (4, 1024, 3), "float32", -1, 1),
                             random_array(rng, (3, 1000), "float32", -1, 1))
    assert scheme == "sgemm 128x128x8 8x8"
    # 4 x 8 x 4 tiles of 128 x 128 are too few, 4 x 8 x 8 of 128 x 64 are not
    assert check_on_vulkan(random_array(rng, (4, 1024, 3), "float32", -1, 1),
                           random_array(rng, (3, 500), "float32", -1, 1)) == "sgemm 128x64x8 8x8"
    assert check_on_vulkan(random_array(rng, (4, 1024, 3), "float32", -1, 1),
                           random_array(rng, (3, 100), "float32", -1, 1)) == "sgemm 64x64x16 4x4"


# K is split where the 64x64 tiles are too few for 256 workgroups: towards that many, each split
# at least 128 deep and a multiple of the 16-deep steps, at most 16 splits.
@pytest.mark.parametrize("m, k, n, splits", [
    (64, 512, 64, 4),     # one tile: 512 / 128 splits of 128
    (1, 300, 130, 2),     # 2 tiles: splits of 160 and 140
    (33, 2000, 17, 14),   # 15 asked: splits of 144, the last 128
    (130, 256, 3, 2),     # 3 tiles
])
def test_few_tiles_split_k(vulkan, rng, m, k, n, splits):
    a, b = random_array(rng, (m, k), "float32", -1, 1), random_array(rng, (k, n), "float32", -1, 1)
    assert check_on_vulkan(a, b) == f"sgemm 64x64x16 4x4 split-k {splits}"
    # The partials are added in a fixed order: the same bits every run.
    (first,), _ = evaluate_profiled(F.matmul(F.const(a), F.const(b)))
    (second,), _ = evaluate_profiled(F.matmul(F.const(a), F.const(b)))
    np.testing.assert_array_equal(first, second)


@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("transpose_b", [False, True])
def test_split_k_transposed(vulkan, rng, transpose_a, transpose_b):
    m, k, n = 67, 700, 70  # 4 tiles: 5 splits of 144, the last 124
    a = random_array(rng, (k, m) if transpose_a else (m, k), "float32", -1, 1)
    b = random_array(rng, (n, k) if transpose_b else (k, n), "float32", -1, 1)
    assert check_on_vulkan(a, b, transpose_a, transpose_b) == "sgemm 64x64x16 4x4 split-k 5"


@pytest.mark.parametrize("a_shape, b_shape, transpose_a, transpose_b, splits", [
    ((3, 1, 5, 300), (2, 300, 7), False, False, 2),  # 6 products
    ((300, 9), (4, 11, 300), True, True, 2),         # one left-hand matrix for the stack
    ((2, 40, 1000), (1000, 70), False, False, 7),    # 4 tiles: 7 splits of 144, the last 136
])
def test_split_k_of_small_stacks(vulkan, rng, a_shape, b_shape, transpose_a, transpose_b, splits):
    scheme = check_on_vulkan(random_array(rng, a_shape, "float32", -1, 1), random_array(rng, b_shape, "float32", -1, 1),
                             transpose_a, transpose_b)
    assert scheme == f"sgemm 64x64x16 4x4 split-k {splits}"


def test_stacks_of_enough_workgroups_are_not_split(vulkan, rng):
    # 256 products, a workgroup each: enough for large tiles, and no split.
    assert check_on_vulkan(random_array(rng, (256, 1, 512), "float32", -1, 1),
                           random_array(rng, (512, 2), "float32", -1, 1)) == "sgemm 128x128x8 8x8"


def test_k_zero_gives_zeros(vulkan):
    (ours,), rows = evaluate_profiled(F.matmul(F.const(np.ones((5, 0), np.float32)),
                                                   F.const(np.ones((0, 3), np.float32))))
    assert backends(rows) == {"vulkan"}
    np.testing.assert_array_equal(ours, np.zeros((5, 3), np.float32))


@pytest.mark.parametrize("a_shape, b_shape", [((0, 4), (4, 3)), ((2, 0, 4), (4, 3)), ((3, 4), (4, 0))])
def test_empty_results(vulkan, a_shape, b_shape):
    ours = F.matmul(F.const(np.ones(a_shape, np.float32)), F.const(np.ones(b_shape, np.float32))).read()
    assert ours.shape == np.matmul(np.ones(a_shape), np.ones(b_shape)).shape


@pytest.mark.parametrize("a_shape, b_shape, transpose_a, transpose_b", [
    ((2, 1, 5, 7), (3, 7, 4), False, False),
    ((5, 7), (2, 3, 7, 4), False, False),     # one left-hand matrix for the whole stack
    ((4, 5, 7), (7, 3), False, False),        # one right-hand matrix
    ((1, 3, 1, 7, 5), (2, 1, 4, 6, 7), True, True),
    ((2, 2, 2, 2, 2, 3, 2), (2, 1, 2, 1, 2, 2, 3), False, False),  # rank 7: five batch dims
])
def test_broadcast_batches(vulkan, rng, a_shape, b_shape, transpose_a, transpose_b):
    check_on_vulkan(random_array(rng, a_shape, "float32", -1, 1), random_array(rng, b_shape, "float32", -1, 1),
                    transpose_a, transpose_b)


@pytest.mark.parametrize("a_shape, b_shape", [((5,), (5,)), ((5,), (5, 3)), ((4, 5), (5,)), ((2, 3, 5), (5,)),
                                              ((7,), (2, 7, 3))])
def test_vectors(vulkan, rng, a_shape, b_shape):
    a, b = random_array(rng, a_shape, "float32", -1, 1), random_array(rng, b_shape, "float32", -1, 1)
    (ours,), rows = evaluate_profiled(mp.matmul(a, b))
    assert backends(rows) == {"vulkan"}
    assert_product(ours, a, b)


@pytest.mark.parametrize("dtype", ["float64", "int32"])
def test_other_dtypes_stay_on_the_cpu(vulkan, rng, dtype):
    a, b = random_array(rng, (3, 4), dtype, -3, 3), random_array(rng, (4, 2), dtype, -3, 3)
    (ours,), rows = evaluate_profiled(F.matmul(F.const(a), F.const(b)))
    assert backends(rows) == {"cpu"}
    np.testing.assert_allclose(ours, a @ b)


def test_gradients_run_on_vulkan(vulkan, rng):
    a, b = random_array(rng, (2, 9, 5), "float32", -1, 1), random_array(rng, (5, 6), "float32", -1, 1)
    va, vb = F.const(a), F.const(b)
    seed = np.ones((2, 9, 6), np.float32)
    ga, gb = F.grad([F.matmul(va, vb)], [va, vb], output_grads=[F.const(seed)])
    (ga_value, gb_value), rows = evaluate_profiled(ga, gb)
    assert backends(rows) == {"vulkan"}
    assert_product(ga_value, seed, b.T)
    assert_product(gb_value, a.reshape(18, 5).T, seed.reshape(18, 6))


_ENV_SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
import numpy as np, mnnpy
from mnnpy import expr as F
from helpers import product_error_bound
rng = np.random.default_rng(0)
a, b = rng.standard_normal({a_shape}, np.float32), rng.standard_normal({b_shape}, np.float32)
mnnpy._core.set_executor_option("profile", True)
with mnnpy.backend("vulkan"):
    ours = F.matmul(F.const(a), F.const(b)).read()
print(np.all(np.abs(ours - a.astype(np.float64) @ b) <= product_error_bound(a, b, 2**-24)))
print([row["scheme"] for row in mnnpy._core.last_profile() if row["op"] == "MatMul"])
"""


def run_with_environment(a_shape=(37, 29), b_shape=(29, 41), **env):
    """The bound's check and the schemes of a @ b (random normal operands) in a child process with `env`."""
    script = _ENV_SCRIPT.format(tests=os.path.dirname(os.path.abspath(__file__)), a_shape=a_shape, b_shape=b_shape)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=python_env(**env))


@pytest.mark.parametrize("tiles", ["32,16,4,4,4", "128,64,8,8,4", "64,128,16,4,8", "128,128,8,8,8"])
def test_tiles_set_by_the_environment(vulkan, tiles):
    run = run_with_environment(MNNPY_VULKAN_MATMUL_TILES=tiles)
    assert run.returncode == 0, run.stderr
    bm, bn, bk, tm, tn = tiles.split(",")
    assert run.stdout.split("\n")[:2] == ["True", f"['sgemm {bm}x{bn}x{bk} {tm}x{tn}']"]


@pytest.mark.parametrize("a_shape, b_shape, env, scheme", [
    # K = 29: 3 splits asked, of 10 rounded up to the 16-deep steps: 2 (16 and 13).
    ((37, 29), (29, 41), {"MNNPY_VULKAN_MATMUL_SPLITS": "3"}, "sgemm 64x64x16 4x4 split-k 2"),
    # 4-deep steps: 3 splits of 12, 12 and 5.
    ((37, 29), (29, 41), {"MNNPY_VULKAN_MATMUL_SPLITS": "3", "MNNPY_VULKAN_MATMUL_TILES": "32,16,4,4,4"},
     "sgemm 32x16x4 4x4 split-k 3"),
    # K = 5, smaller than the 8 splits asked: one step of K, no split.
    ((9, 5), (5, 6), {"MNNPY_VULKAN_MATMUL_SPLITS": "8"}, "sgemm 64x64x16 4x4"),
    # 1: no split where the policy would take 4.
    ((64, 512), (512, 64), {"MNNPY_VULKAN_MATMUL_SPLITS": "1"}, "sgemm 64x64x16 4x4"),
    # 4100 products times 16 splits: past the grid's 65535 along z, so products loop.
    ((4100, 2, 256), (256, 3), {"MNNPY_VULKAN_MATMUL_SPLITS": "16", "MNNPY_VULKAN_MATMUL_TILES": "16,16,8,4,4"},
     "sgemm 16x16x8 4x4 split-k 16"),
])
def test_splits_set_by_the_environment(vulkan, a_shape, b_shape, env, scheme):
    run = run_with_environment(a_shape, b_shape, **env)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split("\n")[:2] == ["True", f"['{scheme}']"]


@pytest.mark.parametrize("name, value", [("MNNPY_VULKAN_MATMUL_TILES", "64,64,16,3,4"),
                                         ("MNNPY_VULKAN_MATMUL_TILES", "64,64,16"),
                                         ("MNNPY_VULKAN_MATMUL_TILES", "64,64,0,4,4"),
                                         ("MNNPY_VULKAN_MATMUL_SPLITS", "0"), ("MNNPY_VULKAN_MATMUL_SPLITS", "two")])
def test_invalid_settings_are_refused(vulkan, name, value):
    run = run_with_environment(**{name: value})
    assert run.returncode != 0 and name in run.stderr
